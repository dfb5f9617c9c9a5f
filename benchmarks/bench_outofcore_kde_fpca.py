#!/usr/bin/env python
"""Benchmark: KDE and FPCA fits of records larger than memory, on a 2-worker dask LocalCluster.

Writes two local Zarr stores chunk by chunk (the workers generate and write
their chunks): n one-dimensional records for the KDE (default 10^7, 80 MB of
float64) and n curves × K = 20 grid points for the FPCA (default 10^7 curves,
1.6 GB of float64; the store takes about as much on disk, noisy values do not
compress). Each is then opened lazily and fitted chunk by chunk on a
``LocalCluster`` of 2 worker processes (1 thread each, memory limit 2 GB each):

* Gaussian KDE (GP noise spec, :class:`fdp_ppl.kde.KDESpec`) on a public grid of
  ``--grid`` nodes (default 128) over [-4, 4], exact estimator (the kernel sum)
  and binned estimator (linear binning, smoothed once);
* ICLP KDE (grid-node counts);
* FPCA (:class:`fdp_ppl.fpca.FPCASpec`, Fourier basis m = 8): the Gram of the
  clipped coefficient rows.

Reported per fit: the time (open, one pass, reduction, the spec's finishing
step), records per second, and the peak resident memory of each worker
(target < 2 GB). The fits are checked against the in-memory fit on the first
2·10^5 records, read out of core in 7 chunks (largest relative difference).

Usage::

    python benchmarks/bench_outofcore_kde_fpca.py           # 10^7 records (needs ~2 GB of disk under --dir)
    python benchmarks/bench_outofcore_kde_fpca.py --quick   # 2*10^5 records, smoke run
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

from _common import RSSSampler, write_results  # noqa: E402

K_FPCA = 20
WORKER_MEMORY_TARGET = 2 * 2**30
CHECK_N = 200_000


def _kde_chunk(block_id, m, seed):
    """Records of one chunk (deterministic per chunk): a two-component normal mixture, some beyond the box."""
    import numpy as np

    rng = np.random.default_rng([seed, block_id])
    return np.where(rng.random(m) < 0.3, rng.normal(-1.5, 0.5, m), rng.normal(1.0, 1.0, m))


def _fpca_chunk(block_id, m, k, seed):
    """Curves of one chunk: two smooth components of random amplitude plus noise."""
    import numpy as np

    rng = np.random.default_rng([seed, block_id])
    t = np.linspace(0.0, 1.0, k)
    a = rng.normal(0.0, [1.0, 0.5], (m, 2))
    return a[:, :1] * np.sin(2 * np.pi * t) + a[:, 1:] * np.cos(2 * np.pi * t) + 0.2 * rng.standard_normal((m, k))


def _write(path: Path, n: int, chunks: int, width: int | None) -> float:
    """Write n records (width None: 1-D) to a Zarr store in chunks; returns seconds."""
    import dask
    import dask.array as dsa
    import xarray as xr

    sizes = [min(chunks, n - i) for i in range(0, n, chunks)]
    if width is None:
        blocks = [dsa.from_delayed(dask.delayed(_kde_chunk)(b, m, 1), (m,), dtype=float) for b, m in enumerate(sizes)]
        ds = xr.Dataset({"x": (("record",), dsa.concatenate(blocks).rechunk(chunks))})
    else:
        blocks = [dsa.from_delayed(dask.delayed(_fpca_chunk)(b, m, width, 2), (m, width), dtype=float)
                  for b, m in enumerate(sizes)]
        ds = xr.Dataset({"y": (("curve", "t"), dsa.concatenate(blocks).rechunk((chunks, width)))})
    t0 = time.perf_counter()
    ds.to_zarr(path, mode="w", compute=True)
    return time.perf_counter() - t0


def _timed(client, fn):
    pids = list(client.run(os.getpid).values())
    with RSSSampler(lambda: pids, interval=0.05) as rss:
        t0 = time.perf_counter()
        res = fn()
        sec = time.perf_counter() - t0
    return res, sec, [v / 2**30 for v in rss.peak.values()]


def _rel(a, b) -> float:
    import numpy as np

    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b))))


def run(quick: bool = False, n: int | None = None, chunks: int | None = None, directory: str | None = None,
        grid: int = 128, keep: bool = False) -> dict:
    import numpy as np

    import fdp_ppl as fp
    from fdp_ppl.io.stores import dask_client, open_curves
    from fdp_ppl.io.records import open_records
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec

    warnings.simplefilter("ignore")
    n = int(n or (200_000 if quick else 10_000_000))
    chunks = int(chunks or (20_000 if quick else 250_000))
    base = Path(directory or tempfile.gettempdir())
    need = 1.15 * n * (K_FPCA + 1) * 8
    free = shutil.disk_usage(base).free
    if free < need:
        raise SystemExit(f"not enough disk under {base}: {free / 2**30:.1f} GB free, {need / 2**30:.1f} GB needed")
    kde_store, fpca_store = base / f"fdp_ppl_bench_kde_{n}.zarr", base / f"fdp_ppl_bench_fpca_{n}x{K_FPCA}.zarr"
    box = CartesianGrid.uniform([[-4.0, 4.0]], grid)
    specs = {"kde_gp_exact": KDESpec(grid=box, bandwidth=0.2, n=n),
             "kde_gp_binned": KDESpec(grid=box, bandwidth=0.2, n=n, estimator="binned"),
             "kde_iclp": ICLPKDESpec(grid=box, bandwidth=0.2, n=n)}
    fspec = FPCASpec(grid=fp.Grid.uniform(K_FPCA), m=8, k=2, epsilon=1.0, tau=2.0)
    out = {"n": n, "chunks": chunks, "kde_grid": grid, "fpca_K": K_FPCA, "fpca_m": fspec.m,
           "kde_data_gb": n * 8 / 2**30, "fpca_data_gb": n * K_FPCA * 8 / 2**30,
           "worker_memory_target_gb": WORKER_MEMORY_TARGET / 2**30}
    try:
        with dask_client(n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GB") as client:
            for path, width in ((kde_store, None), (fpca_store, K_FPCA)):
                if not path.exists():
                    sec = _write(path, n, chunks, width)
                    print(f"wrote {path.name} in {sec:.1f} s", flush=True)
            out["fpca_store_disk_gb"] = sum(f.stat().st_size for f in fpca_store.rglob("*") if f.is_file()) / 2**30
            client.run(lambda: __import__("fdp_ppl.io.records"))  # imports on the workers, untimed
            check_n = min(n, CHECK_N)
            check_chunks = -(-check_n // 7)
            xs_check = open_records(kde_store)[:check_n].values  # the first records, in memory
            ys_check = open_curves(fpca_store, chunks=chunks).isel(curve=slice(0, check_n)).values
            for name, spec in specs.items():
                fit, sec, peak = _timed(client, lambda s=spec: s.fit(open_records(kde_store, chunks=chunks)))
                small = type(spec)(grid=box, bandwidth=0.2, n=min(n, CHECK_N),
                                   **({"estimator": spec.estimator} if name != "kde_iclp" else {}))
                # the check reads the first records out of core in 7 chunks, so the chunk sums are really added
                lazy_small = small.fit(open_records(kde_store, chunks=check_chunks)[: small.n])
                out[name] = {"seconds": sec, "records_per_s": n / sec, "worker_peak_rss_gb": peak,
                             "rel_diff_vs_memory_at_2e5": _rel(lazy_small.values, small.fit(xs_check).values),
                             "n_clipped": int(fit.n_clipped)}
                print(f"{name}: {n:.3g} records in {sec:.1f} s ({n / sec:.3g}/s), peak worker RSS "
                      f"{max(peak):.2f} GB", flush=True)
            fit, sec, peak = _timed(client, lambda: fspec.fit(open_curves(fpca_store, chunks=chunks)))
            small = fspec.fit(open_curves(fpca_store, chunks=check_chunks).isel(curve=slice(0, check_n)))
            out["fpca"] = {"seconds": sec, "records_per_s": n / sec, "worker_peak_rss_gb": peak,
                           "rel_diff_vs_memory_at_2e5": _rel(small.gram, fspec.fit(ys_check).gram),
                           "n_clipped": int(fit.n_clipped), "n": fit.n}
            assert fit.n == n and np.isfinite(fit.gram).all()
            print(f"fpca: {n:.3g} curves x {K_FPCA} in {sec:.1f} s ({n / sec:.3g}/s), peak worker RSS "
                  f"{max(peak):.2f} GB", flush=True)
        peaks = [max(out[k]["worker_peak_rss_gb"]) for k in (*specs, "fpca")]
        out["met"] = bool(max(peaks) * 2**30 < WORKER_MEMORY_TARGET)
    finally:
        if not keep:
            for path in (kde_store, fpca_store):
                shutil.rmtree(path, ignore_errors=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 2*10^5 records in chunks of 2*10^4")
    p.add_argument("--n", type=float, default=None, help="number of records (default 1e7)")
    p.add_argument("--chunks", type=int, default=None, help="records per chunk (default 250000)")
    p.add_argument("--grid", type=int, default=128, help="KDE grid nodes (default 128)")
    p.add_argument("--dir", default=None, help="where the stores go (default the temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the stores (reused by the next run of the same size)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    res = run(a.quick, int(a.n) if a.n else None, a.chunks, a.dir, a.grid, a.keep)
    write_results("bench_outofcore_kde_fpca", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
