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
    ValueError
        Naming the fix: drop incomplete curves (e.g. ``load_dataset(...,
        drop_incomplete=True)``) or impute with a public rule.
    """
    bad = int((~np.isfinite(curves)).sum().values)
    if bad:
        n_bad = int((~np.isfinite(curves)).any(dims.T).sum().values)
        raise InputError(f"curves contain {bad} NaN/inf values in {n_bad} curves; drop incomplete curves "
                         "(drop_incomplete=True / --drop-incomplete) or impute them first")


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
    labelled ``data_dependent``. Use a public bound for real releases.
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


__all__ = ["DataDerived", "data_tau", "as_curves", "curves_and_grid", "check_finite", "l2_norms", "clip_curves", "clipped_mean"]
