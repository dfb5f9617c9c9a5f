"""Curves as input: validation, grid extraction and clipping to a public bound τ.

Curves are an ``xr.DataArray`` with two dims, records × grid, or a numpy
array of shape ``(n, K)`` on a known grid (rows are records). Which dim of a
DataArray indexes the records (the privacy unit: n is its size) comes from
names, never from position (:func:`record_and_grid_dims`). Operations are
written as xarray reductions, so a dask-backed DataArray (curves in chunks,
larger than memory) is reduced lazily and only scalars and length-K vectors
are computed.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError, PrivacyLeakWarning, check_positive
from ..spaces import Grid

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: share of clipped curves above which :func:`warn_if_mostly_clipped` warns (more than half)
CLIPPED_SHARE_WARNING = 0.5


class DataDerived(float):
    """A float computed from private data (e.g. τ = max_i ‖X_i‖).

    Specs built with such a value label their sensitivity
    ``data_dependent=True``; releases record it. Created by
    :func:`fdp_ppl.summaries.data_tau`.
    """


class TauTooSmallWarning(UserWarning):
    """More than half of the curves had a norm above τ and were clipped.

    τ then looks far too small relative to the data: the clipped curves, and
    so the summary, reflect τ more than the data. The warning is for the
    data holder only (the count is never written to a release), and τ must
    stay public: choose it from public knowledge of the measurement range,
    not from this count.
    """


def warn_if_mostly_clipped(n_clipped: int, n: int, tau: float, *, norm: str = "L2 norm") -> bool:
    """Warn the data holder (:class:`TauTooSmallWarning`) when more than half of the curves were clipped.

    Parameters
    ----------
    n_clipped, n : int
        Curves clipped at τ and number of curves (data-holder information).
    tau : float
        The public bound.
    norm : str
        The norm τ bounds (``"L2 norm"`` or ``"sup norm"``), for the message.

    Returns
    -------
    bool
        Whether the warning was emitted (``n_clipped > CLIPPED_SHARE_WARNING * n``).
    """
    if n <= 0 or n_clipped <= CLIPPED_SHARE_WARNING * n:
        return False
    warnings.warn(clipped_warning_text(n_clipped, n, tau, norm=norm), TauTooSmallWarning,
                  skip_file_prefixes=(_PACKAGE_DIR,))
    return True


def clipped_warning_text(n_clipped: int, n: int, tau: float, *, norm: str = "L2 norm") -> str:
    """The text of :class:`TauTooSmallWarning` (one line; data holder only)."""
    return (f"{n_clipped} of {n} curves exceeded tau = {float(tau):g} in {norm} and were clipped: tau looks far "
            "too small relative to the data (the summary then reflects tau more than the data); choose a larger "
            "public bound from what is known of the measurement range, not from this count. Data holder only: "
            "this count is not written to the release")


def record_and_grid_dims(dim_names, *, record_dim: str | None = None, t_dim: str | None = None,
                         curve_dim: str | None = None, what: str = "the curves") -> tuple[str, str]:
    """Which of two dims indexes the records and which is the grid, from their names.

    The record dim is the privacy unit (n is its size), so it is never taken
    from position. In order: an explicit ``record_dim`` (``curve_dim`` is an
    alias); else the other dim of an explicit ``t_dim``; else the dim named
    ``"curve"``; else the other dim of a dim named ``"t"``; otherwise a
    refusal.

    Parameters
    ----------
    dim_names : sequence of str
        The two dims (e.g. ``DataArray.dims``), in any order.
    record_dim, curve_dim : str, optional
        Name of the record dim (``curve_dim`` is the older name; both may be
        given only if equal).
    t_dim : str, optional
        Name of the grid dim.
    what : str
        What the dims belong to, for messages (e.g. ``"variable 'y' in a.nc"``).

    Returns
    -------
    (record_dim, grid_dim) : tuple of str

    Raises
    ------
    InputError
        Not exactly two dims; a given name that is not one of them; record
        and grid dims equal; or no name tells which dim is which (the message
        names both dims and the fix: ``record_dim=NAME``).
    """
    names = tuple(str(d) for d in dim_names)
    if len(names) != 2:
        raise InputError(f"{what} must have 2 dims (records, grid), got dims {names}",
                         "select one variable/slice first")
    if record_dim is not None and curve_dim is not None and record_dim != curve_dim:
        raise InputError(f"record_dim={record_dim!r} and curve_dim={curve_dim!r} (its alias) differ",
                         "pass only record_dim")
    rec = record_dim if record_dim is not None else curve_dim
    for label, d in (("record_dim", rec), ("t_dim", t_dim)):
        if d is not None and d not in names:
            raise InputError(f"{label}={d!r} is not a dim of {what}; its dims are {names}")

    def other(d):
        return names[1] if d == names[0] else names[0]

    if rec is None:
        if t_dim is not None:
            rec = other(t_dim)
        elif dims.CURVE in names:
            rec = dims.CURVE
        elif dims.T in names:
            rec = other(dims.T)
        else:
            a, b = names
            raise InputError(f"cannot tell which dim of {what} {names} indexes the records (the privacy unit: n is "
                             f"its size)", f"pass record_dim={b} or record_dim={a} (the other dim is the grid), or "
                             f"name the record dim '{dims.CURVE}'")
    grid_dim = t_dim if t_dim is not None else other(rec)
    if rec == grid_dim:
        raise InputError(f"the record dim and the grid dim must differ, both are {rec!r}")
    return rec, grid_dim


def _not_curves(curves) -> InputError:
    """The error for an object that is not a DataArray or a numeric array."""
    kind = type(curves)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if kind.__module__.split(".")[0] == "skfda":
        return InputError(f"scikit-fda objects ({kind.__qualname__}) are not read directly; curves must be an "
                          "xr.DataArray with dims (curve, t) or a numeric array of shape (n, K)",
                          "pass fd.data_matrix[..., 0] with grid=Grid.from_points(fd.grid_points[0]), or "
                          "xr.DataArray(fd.data_matrix[..., 0], dims=('curve', 't'), "
                          "coords={'t': fd.grid_points[0]})")
    if isinstance(curves, xr.Dataset):
        return InputError(f"curves must be one variable, got an xr.Dataset with {list(curves.data_vars)}",
                          "pass ds['name'], a DataArray with dims (records, grid)")
    return InputError(f"curves must be an xr.DataArray with dims (curve, t) or a numeric array of shape (n, K), "
                      f"got {name}")


def as_record_array(curves) -> np.ndarray:
    """A numeric array of shape (n, K) whose rows are records (not a DataArray).

    Raises
    ------
    InputError
        A scikit-fda object, an ``xr.Dataset``, anything numpy cannot read as
        numbers, or not 2-D.
    """
    if isinstance(curves, xr.Dataset) or type(curves).__module__.split(".")[0] == "skfda":
        raise _not_curves(curves)
    try:
        arr = np.asarray(curves, dtype=float)
    except (TypeError, ValueError):
        raise _not_curves(curves) from None
    if arr.ndim != 2:
        raise InputError(f"curves must be a 2-D array (n, K) with one record per row, got shape {arr.shape}")
    return arr


def as_curves(curves, grid: Grid | None = None, *, record_dim: str | None = None, t_dim: str | None = None,
              curve_dim: str | None = None) -> xr.DataArray:
    """Normalise input curves to a DataArray with dims ``("curve", "t")``
    (:func:`curves_and_grid` without the grid)."""
    return curves_and_grid(curves, grid, record_dim=record_dim, t_dim=t_dim, curve_dim=curve_dim)[0]


def curves_and_grid(curves, grid: Grid | None = None, *, record_dim: str | None = None, t_dim: str | None = None,
                    curve_dim: str | None = None) -> tuple[xr.DataArray, Grid]:
    """Normalise input curves to a DataArray with dims ``("curve", "t")`` and its grid.

    Parameters
    ----------
    curves : xr.DataArray or array_like
        DataArray with two dims (records × grid, in either order), or an
        array of shape (n, K) whose **rows are records** (positional: an
        array has no names).
    grid : Grid, optional
        Needed for numpy input; for a DataArray the grid is taken from its
        grid coordinate unless given.
    record_dim : str, optional
        Name of the record dim of a DataArray (the privacy unit; n is its
        size). Default: the other dim of ``t_dim`` if given, else the dim
        named ``"curve"``, else the other dim of a dim named ``"t"``; a
        DataArray whose dims say neither is refused
        (:func:`record_and_grid_dims`), never read by position.
    t_dim : str, optional
        Name of the grid dim of a DataArray (default: the dim that is not the
        record dim).
    curve_dim : str, optional
        Alias of ``record_dim`` (kept for older code).

    Returns
    -------
    curves : xr.DataArray
        dims ``("curve", "t")``, ``t`` coordinate on [0, 1]; the input is not
        modified (dask arrays stay lazy).
    grid : Grid

    Raises
    ------
    InputError
        Not a DataArray or numeric array (e.g. a scikit-fda ``FDataGrid``,
        an ``xr.Dataset``); wrong number of dims; record dim not given by
        name; grid size mismatch; fewer than 2 curves.
    """
    if isinstance(curves, xr.DataArray):
        rec, t_name = record_and_grid_dims(curves.dims, record_dim=record_dim, t_dim=t_dim, curve_dim=curve_dim)
        da = curves.transpose(rec, t_name)
        if grid is None:
            pts = da[t_name].values if t_name in da.coords else np.arange(da.sizes[t_name], dtype=float)
            grid = Grid.from_points(pts)
        out = xr.DataArray(da.data, dims=(dims.CURVE, dims.T))
    else:
        arr = as_record_array(curves)
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


def impute_missing(curves, reference=None, *, reference_name: str | None = None, t_dim: str | None = None,
                   record_dim: str | None = None):
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
        Curves with dims records × grid (which is which comes from names, as
        in :func:`curves_and_grid`), or an array of shape (n, K) whose rows
        are records.
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
    t_dim, record_dim : str, optional
        Names of the grid and record dims of a DataArray (see
        :func:`record_and_grid_dims`).

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
        A reference of the wrong shape or with non-finite values; a DataArray
        whose record dim is not given by name.

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
        _, t_dim = record_and_grid_dims(curves.dims, record_dim=record_dim, t_dim=t_dim)
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

    Warns :class:`TauTooSmallWarning` (data holder only) when more than half
    of the curves were clipped.

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
    n, n_clipped = int(da.sizes[dims.CURVE]), int(was.sum().values)
    warn_if_mostly_clipped(n_clipped, n, tau)
    return mean, n, n_clipped, grid


__all__ = ["DataDerived", "data_tau", "as_curves", "curves_and_grid", "record_and_grid_dims", "check_finite",
           "l2_norms", "clip_curves", "clipped_mean", "impute_missing", "missing_rule", "MISSING_POLICIES",
           "IMPUTATION_COUNTS", "TauTooSmallWarning", "warn_if_mostly_clipped", "clipped_warning_text",
           "CLIPPED_SHARE_WARNING"]
