"""Missing values as input: the public imputation rule (a record-by-record public map that keeps n).

Used by the loaders (:func:`fdp_ppl.datasets.load_dataset`), the out-of-core stores
(:func:`fdp_ppl.io.stores.open_curves`) and ``--missing impute`` of the command line.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..errors import InputError
from .containers import record_and_grid_dims


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


__all__ = ["MISSING_POLICIES", "IMPUTATION_COUNTS", "missing_rule", "impute_missing"]
