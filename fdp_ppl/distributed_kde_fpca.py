"""KDE and FPCA fits from records larger than memory: dask arrays reduced chunk by chunk.

Both fits are sums over records, so each chunk of records gives a partial sum on
a dask worker and only those small arrays travel back:

* Gaussian KDE (:class:`~fdp_ppl.kde.KDESpec`, Sobolev too), exact estimator:
  the sum of kernel sections at the public grid nodes
  (:func:`~fdp_ppl.kde.accumulate.kde_values_chunked` on the chunk), shape of
  the grid; binned estimator: the chunk's linear-binning masses
  (:func:`~fdp_ppl.kde.accumulate.linear_binning`), smoothed once at the end
  (:func:`~fdp_ppl.kde.accumulate.smooth_bin_masses`) (Hall, Rinaldo &
  Wasserman 2013, §4.1.1).
* ICLP KDE (:class:`~fdp_ppl.kde.ICLPKDESpec`): the chunk's grid-node counts
  (:meth:`~fdp_ppl.kde.ICLPKDESpec.snap`), turned into the estimate once by
  :meth:`~fdp_ppl.kde.ICLPKDESpec.fit_counts`.
* FPCA (:class:`~fdp_ppl.expmech.FPCASpec`): the chunk's Gram ``CᵀC`` of its
  clipped coefficient rows (:meth:`~fdp_ppl.expmech.FPCASpec.coefficients`)
  (Awan et al. 2019, §4).

Clipping is per record, inside each chunk, exactly as in memory; the counts of
clipped and of non-finite records travel back with the partial sums (NaN/inf are
found in the same pass and stop the fit, as in memory). The number of records n,
public, is the length of the record axis in the array's shape (a store's
metadata), never a count of records read. With a ``dask.distributed`` client
open (:func:`fdp_ppl.distributed.dask_client`) the chunks are reduced on its
workers; without one, by dask's threads in this process.

The specs' ``fit`` methods call :func:`fit_lazy` when given a dask array or a
dask-backed ``xarray.DataArray``; a privacy unit (``units=``) is not supported
out of core.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from .errors import InputError


def is_lazy(x) -> bool:
    """True for a dask array or an ``xarray.DataArray`` backed by one."""
    data = getattr(x, "data", x) if type(x).__module__.split(".")[0] == "xarray" else x
    return type(data).__module__.split(".")[0] == "dask"


def _records(x, width: int | None, what: str):
    """The dask array (n, width) of ``x`` (1-D records become (n, 1)), one chunk across the columns."""
    data = getattr(x, "data", x) if type(x).__module__.split(".")[0] == "xarray" else x
    if data.ndim == 1 and width in (1, None):
        data = data[:, None]
    if data.ndim != 2 or (width is not None and data.shape[1] != width):
        raise InputError(f"{what} must have shape (n, {width}) (got {tuple(data.shape)})", "reshape the data")
    if data.numblocks[1] > 1:
        data = data.rechunk({1: -1})
    return data.astype(float) if data.dtype != float else data


def _reduce(data, block_fn, size: int, *args):
    """Sum over the record chunks of ``block_fn(block, *args)`` (each a flat float vector of length ``size``)."""
    import dask

    parts = data.map_blocks(lambda b, *a: block_fn(b, *a)[None, :], *args, dtype=float,
                            chunks=((1,) * data.numblocks[0], (size,)))
    (total,) = dask.compute(parts.sum(axis=0))
    return np.asarray(total, dtype=float)


def _clean(block):
    """Block as float, its non-finite values set to 0, and the number of records holding one."""
    block = np.asarray(block, dtype=float)
    ok = np.isfinite(block)
    if ok.all():
        return block, 0
    bad_rows = int(np.count_nonzero(~ok.all(axis=1)))
    return np.where(ok, block, 0.0), bad_rows


def _kde_block(block, lo, hi, axes, h, bins, iclp_shape, iclp_spec):
    from .kde.accumulate import kde_values_chunked, linear_binning

    block, bad = _clean(block)
    clipped = np.clip(block, lo, hi)
    n_clipped = int(np.count_nonzero(np.any(clipped != block, axis=1)))
    if iclp_shape is not None:
        idx = iclp_spec.snap(clipped)
        part = np.bincount(np.ravel_multi_index(tuple(idx.T), iclp_shape),
                           minlength=int(np.prod(iclp_shape))).astype(float)
    elif bins is not None:
        part = linear_binning(bins, clipped).ravel()
    elif clipped.shape[0]:
        # weights of 1: the kernel sum divided by (2π)^{d/2} Π h only (n applied once at the end)
        part = kde_values_chunked(axes, clipped, h, np.ones(clipped.shape[0])).ravel()
    else:
        part = np.zeros(int(np.prod([a.size for a in axes])))
    return np.concatenate([part, [n_clipped, bad]])


def fit_kde_lazy(spec, observations):
    """:meth:`fdp_ppl.kde.KDESpec.fit` of records held in a dask array, reduced chunk by chunk.

    Parameters
    ----------
    spec : KDESpec, SobolevKDESpec or ICLPKDESpec
        Public spec; ``spec.n`` must equal the number of records (the array's shape).
    observations : dask.array.Array or xarray.DataArray (dask-backed), shape (n, d) or (n,)
        Records along the first axis, chunked along it.

    Returns
    -------
    KDESummary
        Equal to the in-memory fit up to floating-point rounding (the additions are grouped by chunk).

    Raises
    ------
    InputError
        Wrong shape, n different from the spec's, a privacy unit in the spec, or NaN/inf records (found in
        the same pass).
    """
    from .kde.accumulate import smooth_bin_masses
    from .kde.iclp import ICLPKDESpec
    from .kde.gaussian import KDESummary

    if spec.privacy_unit is not None:
        raise InputError("a KDE with a privacy unit is not fitted out of core",
                         "load the records and their units in memory, or drop the privacy unit")
    data = _records(observations, spec.d, "observations")
    n = int(data.shape[0])
    if n != spec.n:
        raise InputError(f"the spec says n = {spec.n} but the store holds {n} observations",
                         "build the spec with the public n (the length of the record dim)")
    dom = spec.grid.domain
    iclp = isinstance(spec, ICLPKDESpec)
    if iclp:
        shape = tuple(spec.grid.shape)
    elif spec.bins is not None:
        shape = tuple(b.size for b in spec.bins)
    else:
        shape = tuple(spec.grid.shape)
    size = int(np.prod(shape))
    total = _reduce(data, _kde_block, size + 2, dom[:, 0], dom[:, 1], spec.grid.axes, spec.bandwidths,
                    None if iclp else spec.bins, shape if iclp else None, spec if iclp else None)
    part, n_clipped, bad = total[:size].reshape(shape), int(total[size]), int(total[size + 1])
    if bad:
        raise InputError(f"observations must be finite ({bad} records hold NaN/inf)",
                         "drop or impute missing values before release")
    if iclp:
        return spec.fit_counts(part, n_clipped)
    if spec.bins is not None:
        values = smooth_bin_masses(spec.grid.axes, part, spec.bandwidths, spec.bins, n=n)
    else:
        values = part / n
    return KDESummary(spec, spec.basis.coefficients(values), values, n_clipped)


def _fpca_block(block, spec):
    block, bad = _clean(block)
    if block.shape[0] == 0:
        return np.zeros(spec.m * spec.m + 2)
    c, n_clipped = spec.coefficients(block)
    return np.concatenate([(c.T @ c).ravel(), [n_clipped, bad]])


def fit_fpca_lazy(spec, curves, n: int | None = None):
    """:meth:`fdp_ppl.expmech.FPCASpec.fit` of curves held in a dask array: the Gram ``G = Σ_i c_i c_iᵀ`` of
    the clipped coefficient rows, summed chunk by chunk.

    Parameters
    ----------
    spec : FPCASpec
    curves : dask.array.Array or xarray.DataArray (dask-backed), shape (n, K)
        Curves on ``spec.grid`` along the first axis, chunked along it (dims ``("curve", "t")`` for a
        DataArray).
    n : int, optional
        The public n the release is for; checked against the array's shape.

    Returns
    -------
    FPCAFit
        ``gram`` (m, m) equal to the in-memory fit up to floating-point rounding.

    Raises
    ------
    InputError
        Wrong shape, a privacy unit in the spec, an n that does not match, NaN/inf curves.
    """
    from .expmech.fpca import FPCAFit

    if spec.privacy_unit is not None:
        raise InputError("an FPCA with a privacy unit is not fitted out of core",
                         "load the curves and their units in memory, or drop the privacy unit")
    if type(curves).__module__.split(".")[0] == "xarray" and "curve" in curves.dims:
        curves = curves.transpose("curve", ...)
    data = _records(curves, spec.grid.size, "curves")
    n_public = int(data.shape[0])
    if n_public < 1:
        raise InputError(f"curves must have shape (n, {spec.grid.size}), got {tuple(data.shape)}",
                         "pass one row per curve evaluated on spec.grid")
    if n is not None and int(n) != n_public:
        raise InputError(f"the data give n = {n_public} but the release is planned for the public n = {n}",
                         "n is public: pass the number of records (or units) the release is for")
    m = spec.m
    total = _reduce(data, _fpca_block, m * m + 2, spec)
    if int(total[-1]):
        raise InputError(f"curves contain NaN or infinite values ({int(total[-1])} curves)",
                         "remove or impute them before the release")
    gram = total[: m * m].reshape(m, m)
    return FPCAFit(spec=spec, gram=0.5 * (gram + gram.T), n=n_public, n_clipped=int(total[-2]))


def open_records(path, var: str | None = None, *, chunks: int | None = None, record_dim: str | None = None):
    """Open the records of a KDE (a 1-D variable, or 2-D records × d) in a Zarr store or NetCDF file lazily.

    Parameters
    ----------
    path : str or os.PathLike
    var : str, optional
        Needed when the store holds several 1-D/2-D variables.
    chunks : int, optional
        Records per chunk (default the store's, else :data:`fdp_ppl.distributed.DEFAULT_CHUNKS`).
    record_dim : str, optional
        The record dim of a 2-D variable (default its first dim).

    Returns
    -------
    xr.DataArray
        dask-backed, records first; n (public) is its length, from the metadata. Nothing is read but metadata.

    Raises
    ------
    InputError
        dask/zarr missing, no such path, no suitable variable or several without ``var``.
    """
    import xarray as xr

    from .distributed import DEFAULT_CHUNKS, _require, is_store

    _require("dask.array")
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise InputError(f"no store or file at {p}", "pass the path of a Zarr store (directory) or a NetCDF file")
    if chunks is not None and (isinstance(chunks, bool) or int(chunks) < 1):
        raise InputError(f"chunks must be a number of records >= 1, got {chunks!r}")
    if is_store(p):
        _require("zarr")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
            ds = xr.open_zarr(p, chunks={}, consolidated=None)
    else:
        ds = xr.open_dataset(p, chunks={})
    cands = sorted(str(k) for k, v in ds.data_vars.items() if v.ndim in (1, 2))
    if var is None:
        if len(cands) != 1:
            raise InputError(f"{p.name} holds {len(cands)} 1-D/2-D variables ({', '.join(cands) or 'none'})",
                             "choose one with var=...")
        var = cands[0]
    if var not in ds.data_vars:
        raise InputError(f"unknown variable {var!r} in {p.name}; candidates: {', '.join(cands) or 'none'}")
    da = ds[var]
    if da.ndim == 2 and record_dim is not None:
        da = da.transpose(record_dim, ...)
    rec = da.dims[0]
    size = int(chunks) if chunks is not None else None
    if size is None and (not hasattr(da.data, "numblocks") or
                         (da.data.numblocks[0] == 1 and da.shape[0] > DEFAULT_CHUNKS)):
        size = DEFAULT_CHUNKS
    if size is not None:
        da = da.chunk({rec: size})
    da.attrs.update(data_path=str(p.resolve()), variable=var, record_dim=str(rec))
    return da


__all__ = ["fit_fpca_lazy", "fit_kde_lazy", "is_lazy", "open_records"]
