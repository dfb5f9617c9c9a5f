#!/usr/bin/env python
"""Benchmark: a private mean of curves larger than memory, on a 2-worker dask LocalCluster.

Writes n curves × K points (default 10^7 × 100, 8 GB of float64) to a local
Zarr store chunk by chunk (the workers generate and write their chunks), then
releases their ICLP-QR mean (Matérn 3/2, ρ = 0.1, ICLP ε = 1, one draw) with
the store opened lazily (:func:`fdp_ppl.io.stores.open_curves`) and reduced
chunk by chunk on a ``LocalCluster`` of 2 worker processes (1 thread each,
memory limit 2 GB each). Reported: the time of the release (open, one pass,
noise, tree), the peak resident memory of each worker (target < 2 GB), and
the time per curve relative to the in-memory path (numpy array of 10^6
curves, same summary and release).

Usage::

    python benchmarks/bench_outofcore.py                 # 10^7 curves (needs ~9 GB of disk under --dir)
    python benchmarks/bench_outofcore.py --quick         # 2*10^5 curves, smoke run
    python benchmarks/bench_outofcore.py --n 2e6 --keep  # keep the store for another run
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_results, RSSSampler  # noqa: E402

K = 100
TAU = 1.0
WORKER_MEMORY_TARGET = 2 * 2**30


def _chunk(block_id, chunks, k, seed):
    """Curves of one chunk (deterministic per chunk): smooth signal of random amplitude plus noise."""
    import numpy as np

    m = chunks
    rng = np.random.default_rng([seed, block_id])
    t = np.linspace(0.0, 1.0, k)
    return rng.uniform(0.5, 1.5, (m, 1)) * np.sin(2 * np.pi * t)[None, :] * 1.2 + 0.3 * rng.standard_normal((m, k))


def write_store(path: Path, n: int, chunks: int, client, seed: int = 1) -> float:
    """Write n × K curves to a Zarr store in chunks of ``chunks`` records; returns seconds."""
    import dask.array as dsa
    import numpy as np
    import xarray as xr

    sizes = [min(chunks, n - i) for i in range(0, n, chunks)]
    blocks = [dsa.from_delayed(__import__("dask").delayed(_chunk)(b, m, K, seed), (m, K), dtype=float)
              for b, m in enumerate(sizes)]
    data = dsa.concatenate(blocks, axis=0).rechunk((chunks, K))
    ds = xr.Dataset({"y": (("curve", "t"), data)}, coords={"t": np.linspace(0.0, 1.0, K)})
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", compute=True)
    return time.perf_counter() - t0


def release_pipeline(fp, curves, basis):
    summary = fp.iclp_qr_mean(curves, basis, tau=TAU)
    return fp.release(summary, fp.ICLP(epsilon=1.0))


def in_memory_time(fp, basis, n: int, chunks: int) -> float:
    """Seconds for the same release from n curves in memory (numpy), best of 2."""
    import numpy as np
    import xarray as xr

    x = np.concatenate([_chunk(b, min(chunks, n - i), K, 1) for b, i in enumerate(range(0, n, chunks))])
    da = xr.DataArray(x, dims=("curve", "t"), coords={"t": np.linspace(0.0, 1.0, K)})
    release_pipeline(fp, da, basis)
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        release_pipeline(fp, da, basis)
        best = min(best, time.perf_counter() - t0)
    return best


def run(quick: bool = False, n: int | None = None, chunks: int | None = None, directory: str | None = None,
        keep: bool = False, n_memory: int | None = None) -> dict:
    """Write the store, release its mean on a 2-worker LocalCluster, compare with memory; returns a dict."""
    import fdp_ppl as fp
    from fdp_ppl.io.stores import dask_client, open_curves

    warnings.simplefilter("ignore")
    n = int(n or (200_000 if quick else 10_000_000))
    chunks = int(chunks or (20_000 if quick else 100_000))
    n_memory = int(n_memory or min(n, 1_000_000))
    base = Path(directory or tempfile.gettempdir())
    need = 1.15 * n * K * 8
    free = shutil.disk_usage(base).free
    if free < need:
        raise SystemExit(f"not enough disk under {base}: {free / 2**30:.1f} GB free, {need / 2**30:.1f} GB needed")
    store = base / f"fdp_ppl_bench_{n}x{K}.zarr"
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(K))
    fp.release(fp.iclp_qr_mean(_chunk(0, 100, K, 1), basis, tau=TAU), fp.ICLP(epsilon=1.0))  # warm the sampler
    out = {"n": n, "K": K, "chunks": chunks, "data_gb": n * K * 8 / 2**30, "store": str(store)}
    try:
        with dask_client(n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GB") as client:
            if not (store / "zarr.json").exists() and not (store / ".zgroup").exists():
                out["write_s"] = write_store(store, n, chunks, client)
                print(f"wrote {n:.3g} curves x {K} ({out['data_gb']:.2f} GB) to {store} in {out['write_s']:.1f} s",
                      flush=True)
            pids = list(client.run(os.getpid).values())
            client.run(lambda: __import__("fdp_ppl.summaries.curves"))  # import on the workers, untimed
            with RSSSampler(lambda: pids, interval=0.05) as rss:
                t0 = time.perf_counter()
                tree = release_pipeline(fp, open_curves(store, chunks=chunks), basis)
                out["release_s"] = time.perf_counter() - t0
            assert int(tree.attrs["n"]) == n
            out["worker_peak_rss_gb"] = [v / 2**30 for v in rss.peak.values()]
            # the same size as the in-memory comparison, out of core
            t0 = time.perf_counter()
            release_pipeline(fp, open_curves(store, chunks=chunks).isel(curve=slice(0, n_memory)), basis)
            out["release_at_memory_size_s"] = time.perf_counter() - t0
        out["in_memory_n"] = n_memory
        out["in_memory_s"] = in_memory_time(fp, basis, n_memory, chunks)
        per_curve_ooc = out["release_s"] / n
        per_curve_mem = out["in_memory_s"] / n_memory
        out["ratio_per_curve_vs_memory"] = per_curve_ooc / per_curve_mem
        out["ratio_same_size_vs_memory"] = out["release_at_memory_size_s"] / out["in_memory_s"]
        out["curves_per_s"] = n / out["release_s"]
        out["worker_memory_target_gb"] = WORKER_MEMORY_TARGET / 2**30
        out["met"] = bool(max(out["worker_peak_rss_gb"]) * 2**30 < WORKER_MEMORY_TARGET)
    finally:
        if not keep and store.exists():
            shutil.rmtree(store, ignore_errors=True)
    print(f"out of core: {n:.3g} curves released in {out['release_s']:.1f} s ({out['curves_per_s']:.3g} curves/s) "
          f"on 2 workers; peak worker memory {max(out['worker_peak_rss_gb']):.2f} GB (target < 2 GB); in memory "
          f"{n_memory:.3g} curves {out['in_memory_s']:.2f} s; time per curve out of core / in memory "
          f"{out['ratio_per_curve_vs_memory']:.2f} (same size {out['ratio_same_size_vs_memory']:.2f})", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 2*10^5 curves in chunks of 2*10^4")
    p.add_argument("--n", type=float, default=None, help="number of curves (default 1e7)")
    p.add_argument("--chunks", type=int, default=None, help="records per chunk (default 100000)")
    p.add_argument("--dir", default=None, help="where the store goes (default the temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the store (reused by the next run of the same size)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    res = run(a.quick, int(a.n) if a.n else None, a.chunks, a.dir, a.keep)
    write_results("bench_outofcore", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
