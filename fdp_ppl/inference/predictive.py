"""Replicated releases given the posterior: the ``posterior_predictive`` group of a mean-curve inference result.

A release is ``ỹ = S θ + ξ`` (summary target: ``θ`` the noise-free summary's coefficients, ``S = I``) or
``ỹ = S (X̄) + ξ`` with ``X̄ ~ N(θ, sd²/n)`` (population target: ``θ`` the population mean's coefficients, ``S`` the
summary's public shrinkage, ``sd`` the sampling sd of one record's coefficients), ``ξ`` the mechanism's public noise.
A replicated release draws ``ξ`` afresh from the release's own noise law with its public scales, through the same
compiled sampler the release used (:func:`fdp_ppl.noise.sampling.sampler_for`): the law's forward model exists once.
Comparing replicated and observed releases (``az.plot_ppc``) checks the prior, not the privacy: it costs none.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .. import dims
from ..releasing import schema as S


def replicated_releases(meta: dict, post: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
    """``released`` (chain, draw, basis): one replicated release per posterior draw.

    Parameters
    ----------
    meta : dict
        ``model._fdp_meta`` of :func:`fdp_ppl.inference.infer.build_model` (context, target, shrinkage, sampling sd
        and its per-coefficient base ``sd_j/κ``).
    post : xr.Dataset
        Posterior with ``coefficients`` (chain, draw, basis) and, for the population target with a free sampling
        scale, ``sampling_scale`` (chain, draw).
    rng : numpy.random.Generator

    Returns
    -------
    xr.Dataset
        ``released`` (chain, draw, basis), in the units of the released coefficients.
    """
    from ..noise.sampling import sampler_for

    ctx = meta["ctx"]
    law, scale = ctx["law"], np.asarray(ctx["scale"], dtype=float)
    theta = post[S.COEFFICIENTS].transpose(dims.CHAIN, dims.DRAW, dims.BASIS)
    nc, nd, J = theta.shape
    shrink = np.asarray(meta["shrink"], dtype=float)
    if meta["target"] == "population":   # S (θ + sd/√n z), z ~ N(0, 1), in place over one (chain, draw, J) array
        n = float(ctx["attrs"]["n"])
        values = rng.standard_normal(theta.shape)
        if meta["sampling_sd"] is not None:
            values *= np.broadcast_to(np.asarray(meta["sampling_sd"], dtype=float), (J,)) / np.sqrt(n)
        else:
            values *= post["sampling_scale"].values[..., None]
            values *= np.asarray(meta["sampling_base"], dtype=float) / np.sqrt(n)
        values += theta.values
        values *= shrink
    else:
        values = shrink * theta.values
    noise = sampler_for(law, J).draw(np.zeros(J), np.broadcast_to(scale, (J,)).copy(), nc * nd, random_seed=rng,
                                     study=True)  # around 0: a simulation of the noise, no data
    values += noise.reshape(nc, nd, J)
    return xr.Dataset({S.RELEASED: ((dims.CHAIN, dims.DRAW, dims.BASIS), values)},
                      coords={dims.CHAIN: theta[dims.CHAIN], dims.DRAW: theta[dims.DRAW], dims.BASIS: theta[dims.BASIS]})


__all__ = ["replicated_releases"]
