"""Curves larger than memory: lazy stores (Zarr, NetCDF) reduced on ``dask.distributed``.

A store holds one 2-D variable, records × grid. :func:`open_curves` opens it
lazily through xarray + dask, chunked along the records; every summary then
reads it once, chunk by chunk (:func:`fdp_ppl.summaries.curves.clip_pass`):
each chunk gives its clipped sum and counts, and only those length-K vectors
travel back. With a :func:`dask_client` open (a ``LocalCluster`` by default,
or the scheduler at an address) the chunks are reduced on its workers; without
one, by dask's threads in this process.

The number of records n, which is public under the replace-one relation, is
the length of the record dim **in the store's metadata** (the array's
shape), never a count of the records read or of those that survive a filter.

Needs the optional dependencies ``dask``, ``distributed`` and ``zarr``:
``pip install fdp-ppl[dask]``.

Examples
--------
>>> from fdp_ppl.io.stores import dask_client, open_curves     # doctest: +SKIP
>>> with dask_client():                                            # doctest: +SKIP
...     curves = open_curves("big.zarr", chunks=100_000)
...     summary = fp.iclp_qr_mean(curves, basis, tau=1.0)
...     tree = fp.release(summary, fp.ICLP(epsilon=1.0))

Command line: ``fdp-ppl release --data big.zarr --chunks 100000 [--scheduler ADDRESS] ...``.

KDE and FPCA fits read a store the same way: their specs' ``fit`` take a
dask-backed array (:mod:`fdp_ppl.io.records`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError

#: records per chunk when none is given and the store has no chunks of its own
DEFAULT_CHUNKS = 100_000

_INSTALL = "install the optional dependencies: pip install 'fdp-ppl[dask]' (dask, distributed, zarr)"


def _require(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"out-of-core curves need the package {module.split('.')[0]!r}", _INSTALL) from None


def is_store(path) -> bool:
    """True for a path that :func:`open_curves` reads lazily: a Zarr store (``*.zarr`` or a directory with
    Zarr metadata)."""
    p = Path(os.fspath(path)).expanduser()
    if p.suffix.lower() == ".zarr":
        return True
    return p.is_dir() and any((p / m).exists() for m in ("zarr.json", ".zgroup", ".zarray", ".zmetadata"))


def open_curves(path, var: str | None = None, *, chunks: int | None = None, record_dim: str | None = None,
                t_dim: str | None = None, missing: str = "error") -> xr.DataArray:
    """Open curves in a Zarr store or a NetCDF file lazily, chunked along the records.

    Parameters
    ----------
    path : str or os.PathLike
        A Zarr store (directory, ``*.zarr``) or a NetCDF file (``*.nc``).
    var : str, optional
        The variable; needed when the store holds more than one 2-D variable.
    chunks : int, optional
        Records per chunk. Default: the store's own chunks along the records
        (Zarr), else :data:`DEFAULT_CHUNKS`. The grid is never split.
    record_dim, t_dim : str, optional
        Names of the record dim (the privacy unit) and of the grid dim, as in
        :func:`~fdp_ppl.summaries.curves.record_and_grid_dims`.
    missing : {"error", "impute"}
        ``"error"``: NaN/inf values stop the summary (found in the same pass,
        nothing is read twice). ``"impute"``: each missing point is set to 0,
        lazily (the public rule of
        :func:`~fdp_ppl.io.missing.impute_missing`; the counts of imputed
        points are not computed, so as not to read the store twice).

    Returns
    -------
    xr.DataArray
        dims ``("curve", "t")``, dask-backed, chunks ``(chunks, K)``; ``t`` the
        store's grid coordinate (or ``1..K``); attrs ``dataset``, ``variable``,
        ``data_path``, ``t_name``, ``curve_name``, ``n_dropped = 0``, the
        variable's own string/number attrs (``units``, ``long_name`` ...) and
        ``chunks_records``. Nothing is read but metadata.

    Raises
    ------
    InputError
        dask/zarr missing; no such store; no 2-D variable, several without
        ``var``, an unknown ``var``; record dim not given by name; chunks < 1;
        an unknown ``missing``.
    """
    from ..io.containers import record_and_grid_dims
    from ..io.missing import MISSING_POLICIES, missing_rule

    _require("dask.array")
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise InputError(f"no store or file at {p}", "pass the path of a Zarr store (directory) or a NetCDF file")
    if missing not in MISSING_POLICIES:
        raise InputError(f"unknown missing={missing!r}", f"use one of {', '.join(map(repr, MISSING_POLICIES))}")
    if chunks is not None and (isinstance(chunks, bool) or int(chunks) < 1):
        raise InputError(f"chunks must be a number of records >= 1, got {chunks!r}")
    if is_store(p):
        _require("zarr")
        with warnings.catch_warnings():  # zarr 3 warns that consolidated metadata is not in its specification
            warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
            ds = xr.open_zarr(p, chunks={}, consolidated=None)
    else:
        ds = xr.open_dataset(p, chunks={})
    two_d = sorted(str(k) for k, v in ds.data_vars.items() if v.ndim == 2)
    if var is None:
        if len(two_d) != 1:
            raise InputError(f"{p.name} holds {len(two_d)} 2-D variables ({', '.join(two_d) or 'none'})",
                             "choose one with var=... (--var)")
        var = two_d[0]
    if var not in ds.data_vars:
        raise InputError(f"unknown variable {var!r} in {p.name}; 2-D variables: {', '.join(two_d) or 'none'}")
    src = ds[var]
    rec, grid_dim = record_and_grid_dims(src.dims, record_dim=record_dim, t_dim=t_dim,
                                         what=f"variable {var!r} in {p.name}", coords=src.coords)
    src = src.transpose(rec, grid_dim)
    data = src.data
    if not hasattr(data, "rechunk"):  # a backend that did not give a dask array
        import dask.array as dsa

        data = dsa.from_array(data, chunks=(DEFAULT_CHUNKS, -1))
    if chunks is None and data.numblocks[0] == 1 and data.shape[0] > DEFAULT_CHUNKS:
        chunks = DEFAULT_CHUNKS
    data = data.rechunk({0: int(chunks) if chunks is not None else data.chunks[0], 1: -1})
    n, k = data.shape
    t = np.asarray(src[grid_dim].values, dtype=float) if grid_dim in src.coords else np.arange(1, k + 1, dtype=float)
    da = xr.DataArray(data, dims=(dims.CURVE, dims.T), coords={dims.T: t}, name=var)
    da.attrs.update({a: v for a, v in src.attrs.items() if isinstance(v, (str, int, float, np.number))})
    da.attrs.update(dataset=p.stem, variable=var, data_path=str(p.resolve()), t_name=grid_dim, curve_name=rec,
                    n_dropped=0, chunks_records=int(data.chunks[0][0]))
    if missing == "impute":
        attrs = dict(da.attrs)
        da = da.where(np.isfinite(da), 0.0)
        da.attrs = {**attrs, "missing_rule": missing_rule(None)}
    return da


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, *, n_workers: int = 2, threads_per_worker: int = 1,
                processes: bool = True, memory_limit: str | float | None = "auto", **cluster_kw):
    """A ``dask.distributed`` client for the duration of a ``with`` block.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); None starts a
        ``LocalCluster`` on this machine, closed at the end of the block.
    n_workers, threads_per_worker, processes, memory_limit
        The ``LocalCluster``'s (ignored with ``scheduler``); ``processes=False``
        runs the workers as threads of this process (quicker to start).
    **cluster_kw
        More ``LocalCluster`` options.

    Yields
    ------
    distributed.Client
        The default client while the block runs: ``dask.compute`` (and so every
        summary of a dask-backed DataArray) runs on its workers.

    Raises
    ------
    InputError
        ``distributed`` is not installed; the scheduler cannot be reached.
    """
    distributed = _require("distributed")
    with _errors_only():
        if scheduler:
            try:
                client = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as err:
                raise InputError(f"cannot reach the dask scheduler at {scheduler}: {err}",
                                 "start one (dask scheduler) or omit --scheduler for a local cluster") from None
            with client:
                yield client
            return
        with _workers_ignore_ctrl_c(), warnings.catch_warnings():
            # the scheduler's HTTP server (no dashboard) moves to a free port when 8787 is taken: not the user's concern
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
            cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                               processes=processes, memory_limit=memory_limit,
                                               dashboard_address=None, **cluster_kw)
        with cluster, distributed.Client(cluster) as client:  # the client closes first, then the cluster
            yield client


@contextlib.contextmanager
def _workers_ignore_ctrl_c():
    """SIGINT ignored while the local cluster starts its worker processes, which inherit that disposition (a
    Python process keeps an ignored SIGINT): a Ctrl-C at the terminal reaches the whole process group, and the
    workers then printed two ``KeyboardInterrupt`` tracebacks each while this process, which owns them, closes
    them and reports the interruption in one line. A Ctrl-C during the cluster's start is lost (press it again)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _errors_only():
    """Only ``distributed``'s errors reach stderr while a client or cluster of :func:`dask_client` runs and
    closes: its INFO and WARNING lines (a worker still alive 4 s into the shutdown on a loaded machine, killed)
    are the cluster's housekeeping, not the command's output. The worker processes get the same level through
    dask's configuration (``logging.distributed``)."""
    import logging

    import dask

    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with dask.config.set({"logging.distributed": "error"}):
            yield
    finally:
        logger.setLevel(level)


__all__ = ["open_curves", "dask_client", "is_store", "DEFAULT_CHUNKS"]
