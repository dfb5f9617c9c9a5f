"""Cross-validation (CV) and private cross-validation (PCV) for tuning parameters.

**Neither is privacy-safe**: both look at the confidential curves, so the
chosen (ψ, ρ, η, M) depend on the data and a release tuned this way carries
no formal guarantee for the tuning step (``specs/gaussian-banach.md`` pitfall
7, ``specs/iclp.md`` §2.5). Every call emits a
:class:`~fdp_ppl.errors.PrivacyLeakWarning`; results carry
``attrs["privacy_safe"] = 0``. Privacy-safe selection is :func:`~fdp_ppl.summaries.pss`.

* CV (Mirshani et al. 2019, Section 6): K-fold mean of
  ``‖X_i − f̂_{−k}‖²`` over held-out curves ``i`` in fold ``k``.
* PCV (same section): the same score for the *sanitised* estimate
  ``f̃_{−k} = f̂_{−k} + noise``, averaged over the noise. For independent
  zero-mean coefficient noise the average is exact in closed form,
  ``CV + E‖noise‖² = CV + Σ_j Var(ξ_j) ‖design_j‖²`` (``specs/gaussian-banach.md``
  §4, A7), used here instead of Monte Carlo; ``draws > 0`` gives the Monte
  Carlo version for checking.

Examples
--------
The expected noise energy ``E‖f̃ − f‖²`` of a release needs only the public spec (it falls as 1/ε²):

>>> import fdp_ppl as fp
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
>>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
>>> [round(fp.tuning.noise_energy(fp.ICLP(epsilon=eps), spec), 5) for eps in (0.5, 1.0)]
[0.15139, 0.03785]
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import numpy as np
import xarray as xr

from ..errors import PrivacyLeakWarning


def _folds(n, folds, rng):
    perm = rng.permutation(n)
    return np.array_split(perm, folds)


def noise_energy(mechanism, summary, bound: str = "tight") -> float:
    """``E‖f̃ − f‖²`` of a release (:meth:`fdp_ppl.noise.mechanisms.Mechanism.noise_energy`):
    ``Σ_j Var(ξ_j) ‖design_j‖²_w`` with the law's variance; works on a public spec."""
    return mechanism.noise_energy(summary, bound)


def cv_score(curves, make_summary: Callable, *, mechanism=None, folds: int = 10, random_seed=None,
             draws: int = 0, bound: str = "tight", warn: bool = True) -> float:
    """K-fold (private) cross-validation score of a summary builder.

    Parameters
    ----------
    curves : xr.DataArray (curve, t) or ndarray (n, K)
        For numpy input ``make_summary`` must know the grid.
    make_summary : callable
        ``make_summary(train_curves) -> LinearSummary`` (e.g. a lambda around
        :func:`iclp_qr_mean` with fixed ψ, η, τ and basis).
    mechanism : Mechanism, optional
        Given: PCV (score of the sanitised estimate); None: plain CV.
    folds : int
    random_seed : int, sequence or Generator
        Fold assignment (and Monte Carlo noise when ``draws > 0``).
    draws : int
        0: closed-form expectation over the noise; > 0: Monte Carlo average of
        that many releases per fold (for checking the closed form).

    Returns
    -------
    float
        Mean over folds of the mean held-out squared L² error (units of the
        curves squared).

    Warns
    -----
    PrivacyLeakWarning
        Always (unless ``warn=False``): the score is computed from private data.
    """
    if warn:
        warnings.warn("cross-validation looks at the private curves; parameters chosen by (P)CV are not "
                      "privacy-safe (use pss() for privacy-safe selection)", PrivacyLeakWarning, stacklevel=2)
    rng = np.random.default_rng(random_seed)
    values = curves.values if isinstance(curves, xr.DataArray) else np.asarray(curves, dtype=float)
    n = values.shape[0]
    if not 2 <= int(folds) <= n:
        raise ValueError(f"folds must lie in 2..n={n}")
    scores = []
    for idx in _folds(n, int(folds), rng):
        train = np.setdiff1d(np.arange(n), idx)
        tr = curves.isel({curves.dims[0]: train}) if isinstance(curves, xr.DataArray) else values[train]
        s = make_summary(tr)
        fit = s.design @ s.coefficients
        w = s.grid.weights
        err = float(np.mean(np.sum((values[idx] - fit) ** 2 * w, axis=1)))
        if mechanism is not None:
            if draws > 0:
                _, rel = mechanism.simulate(s, draws, rng, bound, study=True)  # CV is a study (warned above)
                err = float(np.mean([np.mean(np.sum((values[idx] - r) ** 2 * w, axis=1)) for r in rel]))
            else:
                err += noise_energy(mechanism, s, bound)
        scores.append(err)
    return float(np.mean(scores))


def cv_grid(curves, build: Callable, params: dict, *, mechanism=None, folds: int = 10, random_seed=None,
            draws: int = 0, bound: str = "tight") -> xr.DataArray:
    """(P)CV scores over a grid of tuning parameters.

    Parameters
    ----------
    curves : xr.DataArray (curve, t) or ndarray
    build : callable
        ``build(train_curves, **point) -> LinearSummary`` for one parameter point.
    params : dict of str -> sequence
        Parameter grid, e.g. ``{"psi": [1e-4, 1e-3], "rho": [0.05, 0.1]}``.
    mechanism : Mechanism or callable, optional
        A Mechanism (PCV), a callable ``point -> Mechanism``, or None (CV).

    Returns
    -------
    xr.DataArray
        Scores with one dim per parameter; ``attrs`` carry the argmin
        (``best_<name>``), ``criterion`` ("cv"/"pcv") and ``privacy_safe = 0``.

    Warns
    -----
    PrivacyLeakWarning
        Once per call.
    """
    warnings.warn("cross-validation looks at the private curves; parameters chosen by (P)CV are not "
                  "privacy-safe (use pss() for privacy-safe selection)", PrivacyLeakWarning, stacklevel=2)
    if isinstance(random_seed, np.random.Generator):  # same folds at every grid point
        random_seed = int(random_seed.integers(2**63))
    names = list(params)
    shape = [len(params[k]) for k in names]
    out = np.empty(shape)
    for pos in itertools.product(*[range(s) for s in shape]):
        point = {k: params[k][i] for k, i in zip(names, pos)}
        mech = mechanism(point) if callable(mechanism) and not hasattr(mechanism, "calibrate") else mechanism
        out[pos] = cv_score(curves, lambda tr, p=point: build(tr, **p), mechanism=mech, folds=folds,
                            random_seed=random_seed, draws=draws, bound=bound, warn=False)
    da = xr.DataArray(out, dims=names, coords={k: list(v) for k, v in params.items()},
                      name="pcv_score" if mechanism is not None else "cv_score")
    best = np.unravel_index(np.nanargmin(out), out.shape)
    da.attrs = {"criterion": "pcv" if mechanism is not None else "cv", "privacy_safe": 0, "folds": folds,
                **{f"best_{k}": params[k][i] for k, i in zip(names, best)}}
    return da


__all__ = ["cv_score", "cv_grid", "noise_energy"]
