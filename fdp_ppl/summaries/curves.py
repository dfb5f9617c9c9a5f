"""Curves as input: validation, grid extraction and clipping to a public bound τ.

Curves are an ``xr.DataArray`` with dims ``(curve, t)`` (other names can be
given) or a numpy array of shape ``(n, K)`` on a known grid. Operations are
written as xarray reductions, so a dask-backed DataArray (curves in chunks,
larger than memory) is reduced lazily and only scalars and length-K vectors
are computed.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError, PrivacyLeakWarning, check_positive
from ..spaces import Grid
from .base import DataDerived


def as_curves(curves, grid: Grid | None = None, *, curve_dim: str | None = None,
              t_dim: str | None = None) -> xr.DataArray:
    """Normalise input curves to a DataArray with dims ``("curve", "t")``
    (:func:`curves_and_grid` without the grid)."""
    return curves_and_grid(curves, grid, curve_dim=curve_dim, t_dim=t_dim)[0]


def curves_and_grid(curves, grid: Grid | None = None, *, curve_dim: str | None = None,
                    t_dim: str | None = None) -> tuple[xr.DataArray, Grid]:
    """Normalise input curves to a DataArray with dims ``("curve", "t")`` and its grid.

    Parameters
    ----------
    curves : xr.DataArray or array_like
        DataArray with two dims (records × grid), or an array of shape (n, K).
    grid : Grid, optional
        Needed for numpy input; for a DataArray the grid is taken from its
        ``t`` coordinate unless given.
    curve_dim, t_dim : str, optional
        Names of the record and grid dims of a DataArray. By default the last
        dim is the grid and the other one indexes curves.

    Returns
    -------
    curves : xr.DataArray
        dims ``("curve", "t")``, ``t`` coordinate on [0, 1]; the input is not
        modified (dask arrays stay lazy).
    grid : Grid

    Raises
    ------
    InputError
        Wrong number of dims, grid size mismatch, fewer than 2 curves.
    """
    if isinstance(curves, xr.DataArray):
        if curves.ndim != 2:
            raise InputError(f"curves must have 2 dims (records, grid), got dims {curves.dims}; "
                             "select one variable/slice first")
        t_dim = t_dim or curves.dims[-1]
        curve_dim = curve_dim or next(d for d in curves.dims if d != t_dim)
        if {curve_dim, t_dim} != set(curves.dims):
            raise InputError(f"curve_dim={curve_dim!r} / t_dim={t_dim!r} do not match dims {curves.dims}")
        da = curves.transpose(curve_dim, t_dim)
        if grid is None:
            pts = da[t_dim].values if t_dim in da.coords else np.arange(da.sizes[t_dim], dtype=float)
            grid = Grid.from_points(pts)
        values = da.data
        out = xr.DataArray(values, dims=(dims.CURVE, dims.T))
    else:
        arr = np.asarray(curves, dtype=float)
        if arr.ndim != 2:
            raise InputError(f"curves must be a 2-D array (n, K), got shape {arr.shape}")
        if grid is None:
            raise InputError("numpy curves need a grid: pass grid=Grid.from_points(points)")
        out = xr.DataArray(arr, dims=(dims.CURVE, dims.T))
    if out.sizes[dims.T] != grid.size:
        raise InputError(f"curves have {out.sizes[dims.T]} grid points but the grid has {grid.size}")
    if out.sizes[dims.CURVE] < 2:
        raise InputError("need at least 2 curves")
    return out.assign_coords({dims.T: grid.t}), grid


def check_finite(curves: xr.DataArray) -> None:
    """Raise if any value is NaN or infinite (one reduction; works with dask).

    Raises
    ------
    InputError
        Naming the fix: impute the missing points with a public rule
        (:func:`impute_missing`, ``load_dataset(..., missing="impute")``,
        ``--missing impute``), which keeps n the number of records.
    """
    bad = int((~np.isfinite(curves)).sum().values)
    if bad:
        n_bad = int((~np.isfinite(curves)).any(dims.T).sum().values)
        raise InputError(f"curves contain {bad} NaN/inf values in {n_bad} curves",
                         "impute them with a public rule (impute_missing(curves), load_dataset(..., "
                         "missing='impute') or --missing impute), which keeps n the number of records; "
                         "drop incomplete curves only for a study, never for a release (n would then "
                         "depend on the data)")


#: values of the ``missing`` option of :func:`~fdp_ppl.datasets.load_dataset` and ``--missing``
MISSING_POLICIES = ("error", "impute")

#: attrs of an imputed DataArray that only the data holder may see (never written to a release)
IMPUTATION_COUNTS = ("n_imputed_curves", "n_imputed_points")


def missing_rule(reference_name: str | None = None) -> str:
    """The public text of the imputation rule of :func:`impute_missing` (a release's ``missing_rule``).

    Parameters
    ----------
    reference_name : str, optional
        Name of the public reference curve the missing points are set to;
        None: the value 0.

    Returns
    -------
    str
    """
    if reference_name:
        return (f"each missing (NaN/inf) point of a record is set to the public reference curve ({reference_name}) "
                "at that point, i.e. to 0 after subtracting it; every record is kept, so n is the number of records "
                "and no public parameter depends on which values are missing")
    return ("each missing (NaN/inf) point of a record is set to 0 (there is no public offset: the record "
            "contributes 0 at that point); every record is kept, so n is the number of records and no public "
            "parameter depends on which values are missing")


def impute_missing(curves, reference=None, *, reference_name: str | None = None, t_dim: str | None = None):
    """Replace the missing points of each record by a public value, keeping every record.

    A record-by-record public map: a record with missing values and its
    complete neighbour stay neighbours (replace one record), the number of
    records n is unchanged, and the spec built afterwards (τ, n, ψ, the
    sensitivity, the noise scales) is the same whatever is missing. Clipping
    to τ happens after imputation, so the sensitivity of every summary holds
    as stated.

    Parameters
    ----------
    curves : xr.DataArray or array_like
        Curves with dims (records, grid) (the grid dim is ``t_dim`` or the
        last dim), or an array of shape (n, K).
    reference : float, array_like of shape (K,), xr.DataArray along the grid, or callable, optional
        The **public** value at each grid point (for example a published
        reference curve in the units of the curves); a callable receives the
        grid points (the DataArray's grid coordinate, or ``0..K-1`` for an
        array) and returns shape (K,). Default 0: for curves from which a
        public offset was subtracted, 0 is that offset; for raw curves the
        record contributes 0 at the missing point. Must not be computed from
        the data.
    reference_name : str, optional
        Name of the reference recorded in the rule (:func:`missing_rule`).
    t_dim : str, optional
        Name of the grid dim of a DataArray (default: the last dim).

    Returns
    -------
    xr.DataArray or ndarray
        Same type, dims and shape as ``curves``, every value finite. A
        DataArray carries ``attrs["missing_rule"]`` (public) and
        ``attrs["n_imputed_curves"]`` / ``attrs["n_imputed_points"]``
        (data-holder only: never written to a release).

    Raises
    ------
    InputError
        A reference of the wrong shape or with non-finite values.

    Notes
    -----
    Without imputation a missing value either stops the release (so whether a
    release exists depends on the data) or, when incomplete records are
    dropped, makes n the number of complete records (so the noise scales of a
    record with a missing value and of its complete neighbour differ). A public
    imputation rule removes both.
    """
    is_da = isinstance(curves, xr.DataArray)
    values = curves if is_da else np.asarray(curves, dtype=float)
    if values.ndim != 2:
        raise InputError(f"curves must have 2 dims (records, grid), got shape {values.shape}")
    if is_da:
        t_dim = t_dim or curves.dims[-1]
        if t_dim not in curves.dims:
            raise InputError(f"t_dim={t_dim!r} is not a dim of the curves {curves.dims}")
        k = curves.sizes[t_dim]
        points = np.asarray(curves[t_dim].values, dtype=float) if t_dim in curves.coords else np.arange(k, dtype=float)
    else:
        k = values.shape[1]
        points = np.arange(k, dtype=float)
    if reference is None:
        ref = np.zeros(k)
    elif callable(reference):
        ref = np.asarray(reference(points), dtype=float)
    else:
        ref = np.asarray(reference.values if isinstance(reference, xr.DataArray) else reference, dtype=float)
    ref = np.broadcast_to(ref, (k,)) if ref.ndim == 0 else ref
    if ref.shape != (k,) or not np.all(np.isfinite(ref)):
        raise InputError(f"the reference must be a finite public value or curve of {k} points, got shape {ref.shape}",
                         "pass a number, an array on the curves' grid, or a function of the grid points")
    rule = missing_rule(reference_name if reference is not None else None)
    if not is_da:
        ok = np.isfinite(values)
        return np.where(ok, values, ref[None, :])
    ref_da = xr.DataArray(ref, dims=(t_dim,))
    ok = np.isfinite(curves)
    out = curves.where(ok, ref_da).transpose(*curves.dims)
    out.attrs = dict(curves.attrs)
    out.attrs["missing_rule"] = rule
    out.attrs["n_imputed_points"] = int((~ok).sum().values)
    out.attrs["n_imputed_curves"] = int((~ok).any(t_dim).sum().values)
    return out


def l2_norms(curves: xr.DataArray, grid: Grid) -> xr.DataArray:
    """Grid L² norm of each curve, ``sqrt(Σ_k w_k X_i(t_k)²)``; dims (curve,)."""
    w = xr.DataArray(grid.weights, dims=(dims.T,))
    return np.sqrt((curves * curves * w).sum(dims.T))


def clip_curves(curves: xr.DataArray, grid: Grid, tau: float) -> tuple[xr.DataArray, xr.DataArray]:
    """Scale each curve to L² norm at most τ: ``X_i ← X_i · min(1, τ/‖X_i‖)``.

    This enforces the boundedness assumption ``‖X_i‖ <= τ`` (Lin & Reimherr
    2026, Assumption 10; Mirshani et al. 2019, Section 4) in the grid norm
    actually used by the sensitivities. τ must be public.

    Returns
    -------
    clipped : xr.DataArray, dims (curve, t)
        Lazy if the input is dask-backed; the input is not modified.
    was_clipped : xr.DataArray of bool, dims (curve,)
    """
    tau = check_positive(tau, "tau", "pass a public bound on the curves' L2 norm, e.g. --tau 1")
    norms = l2_norms(curves, grid)
    factor = np.minimum(1.0, tau / np.maximum(norms, np.finfo(float).tiny))
    return curves * factor, norms > tau


def data_tau(curves, grid: Grid | None = None) -> DataDerived:
    """τ = max_i ‖X_i‖ computed from the data, as Mirshani et al. (2019, Section 5) do.

    This is **not** privacy-safe: it emits a
    :class:`~fdp_ppl.errors.PrivacyLeakWarning` and returns a
    :class:`DataDerived` float so that every sensitivity built on it is
    labelled ``data_dependent``. :func:`fdp_ppl.release` refuses a summary
    built on it unless called with ``allow_nonprivate=True``, and such a
    release records ``private = 0``. Use a public bound for real releases.
    """
    da, grid = curves_and_grid(curves, grid)
    value = float(l2_norms(da, grid).max().values)
    warnings.warn("tau computed from the private data (max curve norm): the release carries no formal "
                  "guarantee; use a public bound", PrivacyLeakWarning, stacklevel=2)
    return DataDerived(value)


def clipped_mean(curves, grid: Grid | None, tau: float, *, check: bool = True):
    """Sample mean of the clipped curves.

    Returns
    -------
    mean : ndarray, shape (K,)
    n : int
    n_clipped : int
    grid : Grid
    """
    da, grid = curves_and_grid(curves, grid)
    if check:
        check_finite(da)
    clipped, was = clip_curves(da, grid, tau)
    mean = np.asarray(clipped.mean(dims.CURVE).values, dtype=float)
    return mean, int(da.sizes[dims.CURVE]), int(was.sum().values), grid


__all__ = ["DataDerived", "data_tau", "as_curves", "curves_and_grid", "check_finite", "l2_norms", "clip_curves",
           "clipped_mean", "impute_missing", "missing_rule", "MISSING_POLICIES", "IMPUTATION_COUNTS"]
