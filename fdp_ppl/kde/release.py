"""Release of a fitted KDE (any spec of :mod:`fdp_ppl.kde`) through the package's calibrate–charge–draw path.

Source: Hall, Rinaldo & Wasserman (2013), Corollary 9 (GP noise, batch release
with the squared scale of the errata in ``specs/gp-mechanism-hall.md``); Lin &
Reimherr (2026), Theorem 8 (ICLP noise). Registered for :class:`KDESummary`
in :data:`fdp_ppl.releasing.registry.RELEASES`; callers use :func:`fdp_ppl.release`.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ..errors import InputError, SeededReleaseWarning
from ..releasing.schema import CONSTANT_DATA, POSTERIOR, kde_attrs
from .gaussian import KDESummary


def release_kde(summary: KDESummary, mechanism, *, draws: int = 1, chains: int = 1, random_seed=None,
                ledger=None, label: str = "", dataset: str = "", bound: str = "tight",
                generator: str | None = None) -> xr.DataTree:
    """Release a fitted KDE through the package's release path (calibrate, ledger, sampler).

    The family function :func:`fdp_ppl.release` calls for a :class:`KDESummary` (through
    :data:`fdp_ppl.releasing.registry.RELEASES`); call ``fp.release(summary, mechanism, ...)``.

    The same steps as :func:`fdp_ppl.release`: the mechanism calibrates the
    noise from the spec's public sensitivity (``mechanism.calibrate(spec)``),
    the ledger is charged ``chains × draws × (ε, δ)`` before any draw, and the
    coefficients are drawn by the release generator of
    :mod:`fdp_ppl.noise.sampling`: OpenDP's floating-point-safe sampler when
    unseeded (default), the compiled PyMC sampler when seeded. The noise is
    ``N(c_j, σ² λ_j)`` (GP noise, Hall et al. 2013, Corollary 9, batch
    release ``s² K`` of ``specs/gp-mechanism-hall.md`` errata) or
    ``Laplace(c_j, Δ√λ_j/ε)`` (ICLP, Lin & Reimherr 2026, Theorem 8) on the
    retained eigenpairs of the noise kernel; on the grid it is the process
    restricted to their span, reconstructed through the Kronecker factors.
    Only the density layout differs from :func:`fdp_ppl.release` (a grid in
    d dimensions instead of a curve on [0, 1]).

    Parameters
    ----------
    summary : KDESummary
        From ``spec.fit(observations)`` (KDESpec, SobolevKDESpec, ICLPKDESpec).
    mechanism : GaussianMechanism or ICLP
        GaussianMechanism for KDESpec / SobolevKDESpec; ICLP for ICLPKDESpec.
    draws, chains : int
        Independent releases, arranged (chain, draw). One draw is one publication.
    random_seed : None or int or SeedSequence or Generator
        None: fresh OS entropy (real releases). Anything else warns
        :class:`~fdp_ppl.errors.SeededReleaseWarning` and uses the
        compiled PyMC sampler (not floating-point safe).
    ledger : PrivacyLedger or FileLedger, optional
        Charged before sampling.
    label, dataset : str
        Ledger label and dataset identity.
    bound : str
        Sensitivity bound (the spec's :meth:`sensitivity`).
    generator : {None, "opendp", "pymc"}
        See :func:`fdp_ppl.release`.

    Returns
    -------
    xarray.DataTree
        ``posterior/density`` (chain, draw, x) or (chain, draw, x1, x2) in
        the data's density units (1/unit^d); ``constant_data``: the grid axes
        (coords), quadrature weights, eigenvalues and noise scale per
        coefficient (never the non-private estimate nor the clipping count).
        Attrs: ε, δ, n, h, kernel, sensitivity and its norm, the noise
        kernel, σ, ``noise_generator``, ``fp_safe`` and the budget spent.

    Raises
    ------
    CompatibilityError
        A mechanism that cannot release this spec.
    InputError
        draws or chains < 1; a seed with ``generator="opendp"``.
    BudgetExceededError
        From the ledger (nothing is drawn).
    """
    from ..errors import CompatibilityError
    from ..noise.mechanisms import Mechanism
    from ..noise.sampling import generator_attrs, resolve_generator, sampler_for

    spec = summary.spec
    if not isinstance(mechanism, Mechanism) or mechanism.family not in spec.mechanism_families:
        raise CompatibilityError(f"the {spec.name} summary is released with a {'/'.join(spec.mechanism_families)} "
                                 f"mechanism, got {type(mechanism).__name__}",
                                 "GaussianMechanism(epsilon, delta) for KDESpec / SobolevKDESpec, ICLP(epsilon) for "
                                 "ICLPKDESpec")
    chains, draws = int(chains), int(draws)
    if chains < 1 or draws < 1:
        raise InputError("draws and chains must be >= 1", "pass draws=1 for one release")
    k = chains * draws
    seeded = random_seed is not None
    if seeded:
        warnings.warn("seeded KDE release: anyone who learns the seed can regenerate the noise; private only while "
                      "the seed stays secret", SeededReleaseWarning, stacklevel=3)
    gen = resolve_generator(mechanism.law, generator, random_seed)
    cal = mechanism.calibrate(spec, bound, generator=gen)
    sampler = sampler_for(mechanism.law, spec.n_components, gen)
    from ..releasing.draw import check_public_sizes

    check_public_sizes(cal.scale, k, spec.n_components + int(np.prod(spec.grid.shape)))
    cost = mechanism.budget * k
    if ledger is not None:  # charged before any draw: a failure after this point never refunds
        ledger.spend(cost, label or f"{mechanism.family} KDE release ({spec.name})", dataset=dataset,
                     mechanism=mechanism.family, event=mechanism.privacy_event(cal, k))
    coef = sampler.draw(summary.coefficients, cal.scale, k, random_seed, calibration=cal)
    # release_scale: public post-processing (ICLPKDESpec(normalise=True) divides by its public mass); 1 otherwise
    density = (spec.basis.reconstruct(coef) * spec.release_scale).reshape((chains, draws) + spec.grid.shape)
    dims = spec.grid.dims
    coords = {dim: ax for dim, ax in zip(dims, spec.grid.axes)}
    post = xr.Dataset({"density": (("chain", "draw") + dims, density)},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws), **coords})
    post["density"].attrs["long_name"] = "private density estimate"
    const = spec.public_dataset().assign(noise_scale=(("component",), np.asarray(cal.scale, dtype=float)))
    const["noise_scale"].attrs["description"] = mechanism.law.describe_scale()
    attrs = {
        **spec.attrs(),
        **cal.sensitivity.attrs(),
        **({**spec.privacy_unit.attrs(), "neighbouring": spec.neighbouring()} if spec.privacy_unit is not None
           else {"privacy_unit": "record"}),
        **mechanism.attrs(),
        "epsilon": float(mechanism.epsilon),
        "delta": float(mechanism.delta),
        "sigma": float(cal.sigma),
        "noise_covariance": spec.noise_covariance_text(),
        "noise_seeded": int(seeded),
        "releases": k,
        "budget_spent_epsilon": float(cost.epsilon),
        "budget_spent_delta": float(cost.delta),
        "sampling": "exact forward draws, not MCMC",
        "source": spec.source,
    }
    attrs.update(generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta))
    if ledger is not None and hasattr(ledger, "attrs"):
        attrs.update(ledger.attrs())
    attrs = {key: (str(v) if isinstance(v, (list, tuple, dict)) or v is None else v) for key, v in attrs.items()}
    tree = xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: const})
    tree.attrs.update(attrs)
    tree.attrs.update(kde_attrs())  # the file says it is a density (schema.is_kde_release)
    return tree
