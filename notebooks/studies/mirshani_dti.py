"""Mirshani, Reimherr & Slavković (2019): the Section 6 DTI application (Figures 2–3, Tables 1–2).

Computations behind the DTI half of ``notebooks/04_mirshani_gaussian_mechanism.ipynb``
(``specs/gaussian-banach.md`` §2–§5); the setting, kernels, mechanism and the RKHS summary are
:mod:`studies.mirshani`'s.

**Section 6 (DTI, Figures 2–3, Tables 1–2).** Corpus-callosum FA profiles,
``τ = 1`` (public: FA ∈ [0, 1] and the quadrature weights sum to 1), kernels
``C_1`` Gaussian, ``C_3`` Matérn 3/2 and ``C_4`` exponential,
``(ε, δ) = (1, 0.1)``. CV: 10-fold CV over ρ ∈ [0.01, 2] at fixed
ψ ∈ {1e-4, 1e-3, 0.01, 0.03}. PCV: the CV score of the sanitised estimate,
in closed form (exact expectation over the noise: ``CV + σ² Σ_j λ_j``, spec A7)
instead of the paper's 1000 Monte-Carlo draws, over (ψ, ρ) jointly with the
paper's ranges. **Neither CV nor PCV is privacy-safe** (spec pitfall 7):
every selection is labelled ``privacy_safe = 0``.

The paper's Tables 1 and 2 (optimal ψ, ρ) and its supplement are not in the
source text; nothing here can be compared with their numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from fdp_ppl import dims
from fdp_ppl.errors import PrivacyLeakWarning
from fdp_ppl.noise.mechanisms import GaussianMechanism
from fdp_ppl.releasing.draw import release
from fdp_ppl.releasing.schema import read_release
from fdp_ppl.spaces import Grid, eigenbasis
from fdp_ppl.summaries.tuning import cv_grid

from .mirshani import (KERNEL_NAMES, KERNELS, PAPER, _seeds, _track, classical_sigma_closed_form, make_kernel,
                       mechanism, rkhs_summary)

DTI_TAU = 1.0
DTI_PAPER_N = 382
DTI_GRID_SIZE = 93
CV_PSI = (1e-4, 1e-3, 1e-2, 0.03)
CV_RHO_RANGE = (0.01, 2.0)
PCV_PSI_RANGE = (1e-4, 0.1)
PCV_RHO_RANGES = {"gaussian": (0.01, 0.1), "matern32": (0.05, 0.5), "exponential": (0.2, 1.0)}
#: spec §3.5: σ for τ = 1, N = 382 (the paper's count), (ε, δ) = (1, 0.1).
SPEC_DTI_SIGMA = {1e-4: 0.641, 1e-3: 0.203, 1e-2: 0.0641, 0.03: 0.0370, 0.1: 0.0203}

NOT_PRIVACY_SAFE = ("chosen by (P)CV on the confidential curves: the tuning step is not covered by the "
                    "(epsilon, delta) guarantee (specs/gaussian-banach.md pitfall 7)")
PRIVACY_UNIT = ("one scan (row); neighbouring = replace one scan, n public. DTI has several scans per subject "
                "(up to 8 in the file), so subject-level privacy needs group privacy (see group_privacy_epsilon)")


def load_dti(var: str = "cca", *, nan_policy: str = "drop", quadrature: str = "uniform", data_dir=None) -> xr.DataArray:
    """DTI tract profiles on a grid rescaled to [0, 1].

    Parameters
    ----------
    var : {"cca", "rcst"}
    nan_policy : {"drop", "interpolate"}
        ``"drop"``: drop incomplete scans (6 of 382 for ``cca``; N = 376).
        ``"interpolate"``: fill each scan's NaN by linear interpolation within
        that scan (constant at the ends), a per-record map that keeps
        N = 382, the paper's count. The paper does not say what it did.
    quadrature : {"uniform", "trapezoid"}
        Grid weights (both sum to 1, so τ = 1 bounds every FA profile).
    data_dir : path, optional
        See :func:`fdp_ppl.datasets.data_directory`.

    Returns
    -------
    xr.DataArray
        dims (curve, t), ``t`` on [0, 1]; coords ``subject_id``, ``visit`` …;
        attrs ``grid`` (the :class:`Grid`), ``n_dropped``, ``n_interpolated``,
        ``nan_policy``, ``privacy_unit``, ``max_scans_per_subject``.

    Raises
    ------
    ValueError
        Unknown ``nan_policy``.
    FileNotFoundError
        ``dti.nc`` not found.
    """
    from fdp_ppl.datasets import load_dataset

    if nan_policy == "drop":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the dropped count is recorded in attrs
            da = load_dataset("dti", var, data_dir=data_dir, drop_incomplete=True)
        n_interp = 0
    elif nan_policy == "interpolate":
        from fdp_ppl.datasets import data_directory

        path = data_directory(data_dir) / "dti.nc"
        if not path.is_file():
            raise FileNotFoundError(f"dti.nc not found in {path.parent}; pass data_dir=... or set FDP_PPL_DATA_DIR")
        with xr.open_dataset(path) as f:
            raw = f[var].load()
        curve_dim, t_dim = raw.dims
        vals = np.array(raw.values, dtype=float)
        bad = ~np.isfinite(vals)
        n_interp = int(bad.any(axis=1).sum())
        pts = np.asarray(raw[t_dim].values, dtype=float)
        for i in np.flatnonzero(bad.any(axis=1)):
            ok = ~bad[i]
            vals[i, bad[i]] = np.interp(pts[bad[i]], pts[ok], vals[i, ok])
        da = xr.DataArray(vals, dims=(dims.CURVE, dims.T),
                          coords={dims.CURVE: np.arange(vals.shape[0]), dims.T: pts,
                                  **{k: (dims.CURVE, raw[k].values) for k in raw.coords
                                     if raw[k].dims == (curve_dim,)}},
                          attrs=dict(raw.attrs))
        da.attrs.update(dataset="dti", variable=var, n_dropped=0)
    else:
        raise ValueError(f"unknown nan_policy {nan_policy!r}; use 'drop' or 'interpolate'")
    grid = Grid.from_points(da[dims.T].values, quadrature=quadrature)
    da = da.assign_coords({dims.T: grid.t})
    n_scans = int(np.max(np.unique(da["subject_id"].values, return_counts=True)[1])) if "subject_id" in da.coords else 1
    da.attrs.update(grid=grid, nan_policy=nan_policy, n_interpolated=n_interp, privacy_unit=PRIVACY_UNIT,
                    max_scans_per_subject=n_scans, quadrature=quadrature)
    return da


def _grid_of(curves: xr.DataArray) -> Grid:
    g = curves.attrs.get("grid")
    return g if isinstance(g, Grid) else Grid.from_points(curves[dims.T].values, quadrature="uniform")


def _builder(kernel: str, grid: Grid, tau: float):
    def build(train, psi, rho):
        return rkhs_summary(train, eigenbasis(make_kernel(kernel, rho), grid), tau=tau, psi=psi)

    return build


def dti_cv(curves: xr.DataArray, *, kernels=KERNEL_NAMES, psis=CV_PSI, rhos=None, folds: int = 10,
           tau: float = DTI_TAU, random_seed=None, progressbar: bool = False) -> dict[str, xr.DataArray]:
    """Section 6 CV: 10-fold CV score of the (non-private) RKHS mean over (ψ, ρ) per kernel.

    The paper fixes ψ ∈ {1e-4, 1e-3, 0.01, 0.03} and picks ρ ∈ [0.01, 2] by
    minimum CV; scores for all (ψ, ρ) are returned so both that choice and
    the paper's remark "the minimum score is always obtained at the minimum
    φ" can be checked (:func:`choices_table`). **Not privacy-safe.**

    Parameters
    ----------
    curves : xr.DataArray (curve, t)
        From :func:`load_dti`.
    kernels : sequence of {"gaussian", "matern32", "exponential"}
    psis : sequence of float
    rhos : sequence of float, optional
        Default 30 log-spaced values in [0.01, 2].
    folds : int
    tau : float
        Public clipping bound (1 for FA).
    random_seed :
        Fold assignment, identical for every kernel and (ψ, ρ).
    progressbar : bool

    Returns
    -------
    dict of str -> xr.DataArray
        kernel -> scores (psi, rho), mean held-out squared L² error (FA²);
        attrs ``criterion="cv"``, ``privacy_safe=0``, ``best_psi``, ``best_rho``.

    Warns
    -----
    PrivacyLeakWarning
        Once.
    """
    rhos = np.geomspace(*CV_RHO_RANGE, 30) if rhos is None else rhos
    return _grid_search(curves, kernels, {k: psis for k in kernels}, {k: rhos for k in kernels}, folds=folds,
                        tau=tau, mech=None, bound="closed-form", random_seed=random_seed, progressbar=progressbar)


def dti_pcv(curves: xr.DataArray, *, kernels=KERNEL_NAMES, psis=None, rho_ranges=None, n_psi: int = 16,
            n_rho: int = 12, folds: int = 10, tau: float = DTI_TAU, mech: GaussianMechanism | None = None,
            bound: str = "closed-form", random_seed=None, progressbar: bool = False) -> dict[str, xr.DataArray]:
    """Section 6 PCV: expected CV score of the sanitised RKHS mean over (ψ, ρ) per kernel.

    The expectation over the noise is exact (``CV + E‖σZ‖²``, with σ of each
    training fold's estimator, n = training size) instead of the paper's 1000
    Monte-Carlo draws. With ``bound="closed-form"`` (the paper's Theorem 4.2
    σ) the noise term does not depend on ρ (spec §4, PCV remark). **Not
    privacy-safe.**

    Parameters
    ----------
    curves : xr.DataArray (curve, t)
    kernels : sequence of str
    psis : sequence of float, optional
        Default ``n_psi`` log-spaced values in [1e-4, 0.1].
    rho_ranges : dict, optional
        kernel -> (low, high); default the paper's ranges
        (:data:`PCV_RHO_RANGES`), ``n_rho`` log-spaced values each.
    folds : int
    tau : float
    mech : GaussianMechanism, optional
        Default ε = 1, δ = 0.1, classical.
    bound : {"closed-form", "tight"}
    random_seed, progressbar :

    Returns
    -------
    dict of str -> xr.DataArray
        kernel -> scores (psi, rho); attrs ``criterion="pcv"``,
        ``privacy_safe=0``, ``best_psi``, ``best_rho``, ``bound``.
    """
    psis = np.geomspace(*PCV_PSI_RANGE, n_psi) if psis is None else psis
    ranges = {**PCV_RHO_RANGES, **(rho_ranges or {})}
    rho_grids = {k: np.geomspace(*ranges[k], n_rho) for k in kernels}
    return _grid_search(curves, kernels, {k: psis for k in kernels}, rho_grids, folds=folds, tau=tau,
                        mech=mech or mechanism(), bound=bound, random_seed=random_seed, progressbar=progressbar)


def _grid_search(curves, kernels, psis, rhos, *, folds, tau, mech, bound, random_seed, progressbar):
    grid = _grid_of(curves)
    values = np.asarray(curves.values, dtype=float)
    (fold_seed,) = _seeds(random_seed, 1)
    out = {}
    warnings.warn("(P)CV looks at the confidential curves: parameters chosen this way are not privacy-safe",
                  PrivacyLeakWarning, stacklevel=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for k in _track(list(kernels), progressbar, "(P)CV over kernels"):
            if k not in KERNELS:
                raise ValueError(f"unknown kernel {k!r}; use one of {KERNEL_NAMES}")
            da = cv_grid(values, _builder(k, grid, tau),
                         {"psi": [float(x) for x in psis[k]], "rho": [float(x) for x in rhos[k]]},
                         mechanism=mech, folds=folds, random_seed=fold_seed, bound=bound)
            da.attrs.update(kernel=k, paper_label=KERNELS[k][0], kernel_description=KERNELS[k][1],
                            tau=float(tau), n=int(values.shape[0]), bound=bound if mech is not None else "none",
                            privacy_safe=0, note=NOT_PRIVACY_SAFE)
            if mech is not None:
                da.attrs.update(epsilon=mech.epsilon, delta=mech.delta, calibration=mech.calibration)
            out[k] = da
    return out


def scores_frame(scores: dict[str, xr.DataArray]) -> pd.DataFrame:
    """Long table (kernel, psi, rho, score, criterion, privacy_safe) of (P)CV scores."""
    frames = []
    for k, da in scores.items():
        df = da.rename("score").to_dataframe().reset_index()
        df.insert(0, "kernel", k)
        df["criterion"] = da.attrs.get("criterion")
        df["bound"] = da.attrs.get("bound")
        df["privacy_safe"] = 0
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _at_edge(value, axis) -> bool:
    axis = np.asarray(axis, dtype=float)
    return bool(np.isclose(value, axis.min()) or np.isclose(value, axis.max()))


def choices_table(cv: dict | None = None, pcv: dict | None = None, *, n: int | None = None, tau: float = DTI_TAU,
                  mech: GaussianMechanism | None = None, pcv_label: str = "PCV") -> pd.DataFrame:
    """Chosen (ψ, ρ) per kernel: CV's ρ at each fixed ψ, CV's joint minimum, and PCV's joint minimum.

    Every row is labelled ``privacy_safe = 0``. ``sigma`` / ``noise_energy``
    are the classical σ (closed-form Δ, Theorem 4.2) and ``σ² tr C`` for the
    full data (n records) at the chosen ψ; ``rho_at_edge`` flags a choice on
    the boundary of the searched range.

    Returns
    -------
    pandas.DataFrame
        columns ``kernel``, ``label`` (C1/C3/C4), ``method`` ("CV (psi fixed)",
        "CV (joint)", "PCV"), ``psi``, ``rho``, ``score``, ``rho_at_edge``,
        ``psi_at_edge``, ``min_at_smallest_psi`` (CV joint rows), ``sigma``,
        ``noise_energy``, ``expected_private_error`` (the PCV criterion of the
        choice, i.e. the expected held-out error of the sanitised estimate: for
        CV rows ``score + mean_k σ(n_train_k)²``, tr C = 1 up to dropped
        eigenpairs; for PCV rows the score), ``privacy_safe``.
    """
    mech = mech or mechanism()
    rows = []

    def noise(psi, n_):
        if n_ is None:
            return np.nan
        return classical_sigma_closed_form(tau, n_, psi, mech.epsilon, mech.delta)

    for k, da in (cv or {}).items():
        n_ = n or da.attrs.get("n")
        for psi in da["psi"].values:
            row = da.sel(psi=psi)
            i = int(np.nanargmin(row.values))
            rows.append({"kernel": k, "label": KERNELS[k][0], "method": "CV (psi fixed)", "psi": float(psi),
                         "rho": float(row["rho"].values[i]), "score": float(row.values[i]),
                         "rho_at_edge": _at_edge(row["rho"].values[i], row["rho"].values), "psi_at_edge": False})
        best = np.unravel_index(np.nanargmin(da.values), da.shape)
        rows.append({"kernel": k, "label": KERNELS[k][0], "method": "CV (joint)",
                     "psi": float(da["psi"].values[best[0]]), "rho": float(da["rho"].values[best[1]]),
                     "score": float(da.values[best]), "rho_at_edge": _at_edge(da["rho"].values[best[1]], da["rho"]),
                     "psi_at_edge": _at_edge(da["psi"].values[best[0]], da["psi"]),
                     "min_at_smallest_psi": bool(best[0] == int(np.argmin(da["psi"].values)))})
    for k, da in (pcv or {}).items():
        best = np.unravel_index(np.nanargmin(da.values), da.shape)
        rows.append({"kernel": k, "label": KERNELS[k][0], "method": pcv_label,
                     "psi": float(da["psi"].values[best[0]]), "rho": float(da["rho"].values[best[1]]),
                     "score": float(da.values[best]), "rho_at_edge": _at_edge(da["rho"].values[best[1]], da["rho"]),
                     "psi_at_edge": _at_edge(da["psi"].values[best[0]], da["psi"])})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    ns = {k: (n or da.attrs.get("n")) for k, da in {**(cv or {}), **(pcv or {})}.items()}
    df["sigma"] = [noise(p, ns.get(k)) for k, p in zip(df["kernel"], df["psi"])]
    df["noise_energy"] = df["sigma"] ** 2  # tr C = 1 (unit-variance kernels, all eigenpairs but ~0)
    folds = {k: int(da.attrs.get("folds", 10)) for k, da in (cv or {}).items()}

    def private_error(row):
        if not str(row["method"]).startswith("CV"):
            return row["score"]
        n_ = ns.get(row["kernel"])
        n_train = [n_ - len(f) for f in np.array_split(np.arange(n_), folds[row["kernel"]])]
        return row["score"] + float(np.mean([classical_sigma_closed_form(tau, m_, row["psi"], mech.epsilon,
                                                                         mech.delta) ** 2 for m_ in n_train]))

    df["expected_private_error"] = df.apply(private_error, axis=1)
    df["privacy_safe"] = 0
    return df


def dti_releases(curves: xr.DataArray, table: pd.DataFrame, *, tau: float = DTI_TAU,
                 mech: GaussianMechanism | None = None, bound: str = "closed-form", random_seed=None,
                 progressbar: bool = False) -> xr.Dataset:
    """One exact release of the RKHS mean for every row (kernel, method, ψ, ρ) of ``table``.

    Parameters
    ----------
    curves : xr.DataArray (curve, t)
    table : pandas.DataFrame
        From :func:`choices_table` (columns kernel, method, psi, rho).
    tau, mech, bound :
        As for the tuning; the paper calibrates with the closed form.
    random_seed :
        One independent seed per row.

    Returns
    -------
    xr.Dataset
        dims (choice, t): ``smoothed`` (non-private μ̂; never published),
        ``private`` (the release), and per choice ``kernel``, ``method``,
        ``psi``, ``rho``, ``sigma``, ``noise_energy``, ``n_components``,
        ``privacy_safe`` (0: tuned on the data); ``sample_mean`` (t) the raw
        mean of the scans for reference. attrs: privacy unit, NaN policy, n, τ, ε, δ.
    """
    mech = mech or mechanism()
    grid = _grid_of(curves)
    values = np.asarray(curves.values, dtype=float)
    seeds = _seeds(random_seed, len(table))
    sm, pr, meta = [], [], []
    for (_, row), seed in _track(list(zip(table.iterrows(), seeds)), progressbar, "DTI releases", len(table)):
        basis = eigenbasis(make_kernel(row["kernel"], float(row["rho"])), grid)
        s = rkhs_summary(values, basis, tau=tau, psi=float(row["psi"]))
        tree = release(s, mech, random_seed=seed, study=True, bound=bound)
        sm.append(s.design @ s.coefficients)
        pr.append(read_release(tree).curve.values[0, 0])
        meta.append({"kernel": row["kernel"], "method": row["method"], "psi": float(row["psi"]),
                     "rho": float(row["rho"]), "sigma": mech.calibrate(s.spec, bound).sigma,
                     "noise_energy": mech.noise_energy(s.spec, bound), "n_components": s.n_components})
    idx = np.arange(len(meta))
    ds = xr.Dataset({"smoothed": (("choice", dims.T), np.array(sm).reshape(len(meta), grid.size)),
                     "private": (("choice", dims.T), np.array(pr).reshape(len(meta), grid.size)),
                     "sample_mean": ((dims.T,), values.mean(axis=0))},
                    coords={"choice": idx, dims.T: grid.t})
    for key in ("kernel", "method", "psi", "rho", "sigma", "noise_energy", "n_components"):
        ds[key] = ("choice", [m_[key] for m_ in meta])
    ds["privacy_safe"] = ("choice", np.zeros(len(meta), dtype=int))
    ds["smoothed"].attrs["description"] = "non-private RKHS mean (eq. 2); never released"
    ds["private"].attrs["description"] = "one exact Gaussian-mechanism release"
    ds.attrs = {"paper": f"{PAPER}, Section 6, Figures 2-3", "n": int(values.shape[0]), "tau": float(tau),
                "epsilon": mech.epsilon, "delta": mech.delta, "calibration": mech.calibration, "bound": bound,
                "privacy_unit": PRIVACY_UNIT, "nan_policy": str(curves.attrs.get("nan_policy", "")),
                "tuning_note": NOT_PRIVACY_SAFE}
    return ds


__all__ = [
    "DTI_TAU", "DTI_PAPER_N", "DTI_GRID_SIZE", "CV_PSI", "CV_RHO_RANGE", "PCV_PSI_RANGE", "PCV_RHO_RANGES",
    "SPEC_DTI_SIGMA",
    "load_dti", "dti_cv", "dti_pcv", "scores_frame", "choices_table", "dti_releases",
]
