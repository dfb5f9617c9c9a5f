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
* FPCA (:class:`~fdp_ppl.fpca.FPCASpec`): the chunk's Gram ``CᵀC`` of its
  clipped coefficient rows (:meth:`~fdp_ppl.fpca.FPCASpec.coefficients`)
  (Awan et al. 2019, §4).

Clipping is per record, inside each chunk, exactly as in memory; the counts of
clipped and of non-finite records travel back with the partial sums (NaN/inf are
found in the same pass and stop the fit, as in memory). The number of records n,
public, is the length of the record axis in the array's shape (a store's
metadata), never a count of records read. With a ``dask.distributed`` client
open (:func:`fdp_ppl.io.stores.dask_client`) the chunks are reduced on its
workers; without one, by dask's threads in this process.

The specs own their partial sums (``KDESpec.chunk_sums``,
``ICLPKDESpec.chunk_sums``, ``FPCASpec.chunk_gram``) and how the total becomes
the summary; this module only reduces them (:func:`reduce_records`), so it
imports neither package. The specs' ``fit`` methods take this path when given a
dask array or a dask-backed ``xarray.DataArray`` (:func:`is_lazy`); a privacy
unit (``units=``) is not supported out of core.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from ..errors import InputError


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


def reduce_records(records, width: int | None, what: str, part, size: int, *,
                   n: int | None = None) -> tuple[np.ndarray, int, int]:
    """Sum ``part(chunk)`` over the record chunks of a dask array, on dask (the workers of an open client).

    Parameters
    ----------
    records : dask.array.Array or xarray.DataArray (dask-backed), shape (n, width) or (n,)
        Records along the first axis (a DataArray with a ``curve`` dim is put records first).
    width : int or None
        Values per record (1-D records count as width 1); None: any.
    what : str
        Name of the records in error messages.
    part : callable
        ``part(chunk) -> ndarray (size,)`` for a finite float chunk (m, width); called on the workers, so it
        must pickle (a module-level function or a bound method of a public spec).
    size : int
        Length of ``part``'s output.
    n : int, optional
        The public n; checked against the array's length before anything is read.

    Returns
    -------
    total : ndarray, shape (size,)
        Sum over the chunks of ``part``.
    n : int
        Number of records: the array's length (the store's metadata), never a count of records read.
    n_bad : int
        Records holding NaN/inf (set to 0 before ``part``; the caller refuses them).

    Raises
    ------
    InputError
        Wrong shape; a length different from ``n``.
    """
    import dask

    if type(records).__module__.split(".")[0] == "xarray" and "curve" in records.dims:
        records = records.transpose("curve", ...)
    data = _records(records, width, what)
    if n is not None and int(n) != int(data.shape[0]):
        raise InputError(f"the {what} hold n = {data.shape[0]} records but the public n is {int(n)}",
                         "n is public: use the number of records (the length of the record dim)")
    out = data.map_blocks(_block, part, size, dtype=float, chunks=((1,) * data.numblocks[0], (size + 1,)))
    (total,) = dask.compute(out.sum(axis=0))
    total = np.asarray(total, dtype=float)
    return total[:size], int(data.shape[0]), int(total[size])


def _block(block, part, size):
    block = np.asarray(block, dtype=float)
    ok = np.isfinite(block)
    bad = 0
    if not ok.all():
        bad = int(np.count_nonzero(~ok.all(axis=1)))
        block = np.where(ok, block, 0.0)
    res = np.zeros(size) if block.shape[0] == 0 else np.asarray(part(block), dtype=float).reshape(size)
    return np.concatenate([res, [bad]])[None, :]


def open_records(path, var: str | None = None, *, chunks: int | None = None, record_dim: str | None = None):
    """Open the records of a KDE (a 1-D variable, or 2-D records × d) in a Zarr store or NetCDF file lazily.

    Parameters
    ----------
    path : str or os.PathLike
    var : str, optional
        Needed when the store holds several 1-D/2-D variables.
    chunks : int, optional
        Records per chunk (default the store's, else :data:`fdp_ppl.io.stores.DEFAULT_CHUNKS`).
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

    from .stores import DEFAULT_CHUNKS, _require, is_store

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


__all__ = ["is_lazy", "open_records", "reduce_records"]
