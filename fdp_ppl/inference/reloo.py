"""Leave-one-out of a mean-curve posterior sampled on its hyperparameters alone (model ``"marginal"``): PSIS where it
is reliable, exact refits where it is not.

With free hyperparameters ψ and a prior diagonal in the release's basis, the released coefficients are independent
given ψ, so ``p(y_j | y_{-j}) = ∫ p(y_j | ψ) p(ψ | y_{-j}) dψ``. PSIS-LOO (:func:`fdp_ppl.inference.loo`) estimates
it from the posterior draws with weights ``1/p(y_j | ψ)`` (the coefficient integrated out in closed form). Where a
single coefficient carries most of what the release says about a hyperparameter (the leading coefficient about
the amplitude), ``p(ψ | y_{-j})`` is much wider than ``p(ψ | y)`` and the weights' Pareto k̂ exceeds
:data:`~fdp_ppl.inference.comparison.GOOD_K`. For those coefficients only, the model is refitted without ``y_j``
(ψ sampled with the term ``log p(y_j | ψ)`` taken out of the joint density: by slice sampling with one compiled
log-density for all refits, :func:`slice_refit`, where the hyperparameters are scalars; else by the same NUTS) and ``p(y_j | y_{-j})`` is
the plain Monte Carlo mean of ``p(y_j | ψ)`` over the refit's draws — no importance sampling (Vehtari, Gelman &
Gabry 2017, §2.1: "refit for the problematic cases"). Each refit samples a handful of hyperparameters, seconds
each. The latent-scale model of a GP prior under Laplace noise (collapsed Gibbs) is refitted the same way by its own
sampler without ``y_j`` (``refit=``, :func:`fdp_ppl.inference.collapsed.refit_terms`). Refits run only where k̂
exceeds the threshold: a result whose PSIS is reliable pays nothing.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from .. import dims

#: most coefficients refitted per result; beyond it their PSIS values and k̂ are kept (reported, not hidden)
MAX_REFITS = 8


def psis_then_refit(model, post: xr.Dataset, integrated: xr.DataArray, observed: xr.Dataset, *, sample=None,
                    threshold: float | None = None, max_refits: int = MAX_REFITS, refit=None) -> dict:
    """Pointwise leave-one-out of a ``"marginal"`` model: PSIS on ``integrated`` (``log p(y_j | ψ)``, (chain, draw,
    basis)), exact refits where k̂ > ``GOOD_K`` (at most :data:`MAX_REFITS`, largest k̂ first).

    Parameters
    ----------
    model : pm.Model
        The model of :func:`~fdp_ppl.inference.infer.build_model` (hyperparameters free, coefficients integrated
        out; one observed variable, the released coefficients).
    post : xr.Dataset
        Its posterior (hyperparameter draws included).
    integrated : xr.DataArray
        ``log p(y_j | ψ)`` per draw (:func:`~fdp_ppl.inference.comparison.integrated_loglik`).
    observed : xr.Dataset
        ``observed_data`` of the result (``released``).
    sample : callable
        ``sample(model, seed) -> DataTree``: the NUTS run of :func:`~fdp_ppl.inference.infer` (same draws, tune,
        chains, target_accept) on another model.
    refit : callable, optional
        ``refit(j) -> ndarray`` (draws,): ``log p(y_j | y_{-j}, ψ)`` over draws of the posterior given ``y_{-j}``, for
        a model sampled otherwise than by NUTS (:func:`fdp_ppl.inference.collapsed.refit_terms`); replaces
        ``sample``. Either way it runs only where k̂ exceeds the threshold.
    threshold : float, optional
        Refit where k̂ exceeds it (default ``GOOD_K``).
    max_refits : int
        Most refits (largest k̂ first).

    Returns
    -------
    dict
        ``elpd`` (J,) leave-one-out log predictive densities, ``pareto_k`` (J,) PSIS k̂ (−inf for refitted
        coefficients: not importance sampled), ``psis_k`` (J,) the k̂ before refits, ``refitted`` the indices,
        ``mc_se`` (index → Monte Carlo standard error of a refitted value).
    """
    import pymc as pm
    from pymc.model.fgraph import clone_model

    from .comparison import GOOD_K, INTEGRATED_GROUP, _psis, integrated_loglik

    tree = xr.DataTree.from_dict({"posterior": post, INTEGRATED_GROUP: xr.Dataset({"released": integrated}),
                                  "observed_data": observed[["released"]]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = _psis(tree)
    elpd, k = np.asarray(first.elpd_i, dtype=float).copy(), np.asarray(first.pareto_k, dtype=float)
    final_k = k.copy()
    threshold = GOOD_K if threshold is None else threshold
    bad = [int(j) for j in np.argsort(-k, kind="stable") if k[j] > threshold][:max_refits]
    names = [rv.name for rv in model.free_RVs]
    mc_se = {}
    from arviz_stats import ess
    for j in bad:
        v = refit(j) if refit is not None else None
        if v is not None:
            v = np.asarray(v, dtype=float)
        else:
            loo_model = clone_model(model)
            with loo_model:   # p(ψ | y_{-j}) ∝ p(ψ, y) / p(y_j | ψ)
                pm.Potential("leave_out", -loo_model.logp(vars=[loo_model.observed_RVs[0]], sum=False)[0][j])
            draws = sample(loo_model, 7919 * (j + 1))["posterior"].to_dataset()
            col = integrated_loglik(model, draws[names])
            if col is None:
                continue
            v = col.values[..., j]
        elpd[j] = float(logsumexp(v) - np.log(v.size))
        final_k[j] = -np.inf
        p = np.exp(v - v.max())          # Monte Carlo se of the log of the mean, by the delta method and the ESS
        mc_se[j] = float(np.std(p) / np.mean(p) / np.sqrt(max(float(ess(p[None] if p.ndim == 1 else p)), 1.0)))
    return {"elpd": elpd, "pareto_k": final_k, "psis_k": k, "refitted": [j for j in bad if final_k[j] == -np.inf],
            "mc_se": mc_se}


def slice_refit(model, post: xr.Dataset, draws: int, tune: int, chains: int, seed: int):
    """``refit(j)`` for :func:`psis_then_refit` on a ``"marginal"`` model whose free hyperparameters are scalars on
    the log scale or unconstrained: univariate slice sampling (Neal 2003) of ``p(ψ | y_{-j})`` with the model's
    log-density **compiled once** for every refit (``log p(ψ, y) − log p(y_j | ψ)``), each chain started from the
    full posterior's last draw and tuned ``min(tune, 200)`` iterations — instead of a NUTS compile and adaptation
    per refit. None where a free variable is not such a scalar (then NUTS refits)."""
    from pytensor import function

    from ..settings import compile_mode
    from .collapsed import REFIT_TUNE, slice_update
    from .comparison import integrated_loglik

    values = [model.rvs_to_values[rv] for rv in model.free_RVs]
    names = [rv.name for rv in model.free_RVs]
    logs = []
    for rv, v in zip(model.free_RVs, values):
        if rv.ndim != 0 or rv.name not in post:
            return None
        if v.name.endswith("_log__"):
            logs.append(True)
        elif model.rvs_to_transforms.get(rv) is None:
            logs.append(False)
        else:
            return None
    obs = model.observed_RVs[0]
    fn = function(values, [model.logp(jacobian=True), model.logp(vars=[obs], sum=False)[0]],
                  mode=compile_mode(), on_unused_input="ignore")
    last = post.isel({dims.DRAW: -1})

    def refit(j):
        rng = np.random.default_rng(seed + 7919 * (j + 1))

        def logf(x):
            total, terms = fn(*x)
            return float(total - terms[j]) if np.isfinite(total) else -np.inf

        out = np.empty((chains, draws, len(names)))
        for c in range(chains):
            x = [float(np.log(last[n].values[c])) if lg else float(last[n].values[c]) for n, lg in zip(names, logs)]
            current, width = logf(x), [1.0] * len(names)
            for i in range(min(tune, REFIT_TUNE) + draws):
                for k in range(len(names)):
                    x, current = slice_update(logf, x, k, current, width[k], rng)
                if i >= min(tune, REFIT_TUNE):
                    out[c, i - min(tune, REFIT_TUNE)] = x
        vals = {n: ((dims.CHAIN, dims.DRAW), np.exp(out[..., k]) if lg else out[..., k])
                for k, (n, lg) in enumerate(zip(names, logs))}
        return integrated_loglik(model, xr.Dataset(vals)).values[..., j]

    return refit


def refit_attrs(out: dict) -> dict:
    """Root attrs recording how the leave-one-out values were computed."""
    from .comparison import GOOD_K

    ref = out["refitted"]
    return {"loo_method": "psis on log p(y_j | hyperparameters)" + (
                f"; exact refits without y_j where k > {GOOD_K:g} (coefficients {', '.join(map(str, ref))})"
                if ref else ""),
            "loo_psis_max_k": float(np.max(out["psis_k"])), "loo_refits": len(ref)}


def loo_group(out: dict, basis) -> xr.Dataset:
    """The result's ``loo`` group: the values and the k̂ that remain (dim basis)."""
    from .comparison import loo_dataset

    ds = loo_dataset(out["elpd"], dims.BASIS, basis, method="psis with exact refits")
    return ds.assign(pareto_k=((dims.BASIS,), out["pareto_k"]))


__all__ = ["MAX_REFITS", "loo_group", "psis_then_refit", "refit_attrs", "slice_refit"]
