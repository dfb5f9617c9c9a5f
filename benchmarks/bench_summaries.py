#!/usr/bin/env python
"""Benchmark: every summary against a fused numpy pass (time and peak memory).

The reference is the cheapest computation of a clipped mean in numpy: the
grid norms of all curves in one ``einsum``, the clip factors
``min(1, τ/‖X_i‖)`` and one matrix-vector product ``f @ X / n``, then the
projection on the eigenbasis (no finiteness check, no chunking). Every
summary of the package (``sample_mean``, ``frl_mean``, ``iclp_qr_mean``,
``rkhs_mean``, ``iclp_ar_mean``, ``bernstein_mean``) is timed on the same
curves (n × K, in memory, as a numpy array and as an ``xr.DataArray``) and
reported as a ratio to the fused pass (target ≤ 2), and its peak memory
(data plus the peak of what the call allocates, measured with tracemalloc in
a separate call) as a multiple of the data's size (target ≤ 1.5).

Usage::

    python benchmarks/bench_summaries.py            # n = 10^5 and 10^6 curves x 100 points
    python benchmarks/bench_summaries.py --quick    # n = 10^5
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_results, paired_times, peak_traced_bytes  # noqa: E402

K = 100
TAU = 1.0
SUMMARIES = ("sample_mean", "frl_mean", "iclp_qr_mean", "rkhs_mean", "iclp_ar_mean", "bernstein_mean")
TARGET_TIME = 2.0
TARGET_MEMORY = 1.5


def make_curves(n: int, k: int = K, seed: int = 1):
    """n smooth-plus-noise curves on k points, about half with grid norm above τ = 1 (float64, C order)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, k)
    x = np.empty((n, k))
    step = 100_000
    for i in range(0, n, step):
        m = min(step, n - i)
        amp = rng.uniform(0.5, 1.5, (m, 1))
        x[i:i + m] = amp * np.sin(2 * np.pi * t)[None, :] * 1.2 + 0.3 * rng.standard_normal((m, k))
    return x


def fused_numpy(x, w, tau, A):
    """Clipped-mean coefficients in one fused numpy pass (the reference)."""
    import numpy as np

    sq = np.einsum("ij,ij,j->i", x, x, w)
    f = np.minimum(1.0, tau / np.sqrt(sq))
    return A @ ((f @ x) / x.shape[0])


def summary_call(fp, name, basis, grid):
    if name == "bernstein_mean":
        return lambda data: fp.bernstein_mean(data, grid, tau_inf=2.0 * TAU) if not hasattr(data, "dims") \
            else fp.bernstein_mean(data, tau_inf=2.0 * TAU)
    fn = getattr(fp, name)
    return lambda data: fn(data, basis, tau=TAU)


def bench_n(fp, n: int, repeats: int) -> list[dict]:
    import numpy as np
    import xarray as xr

    x = make_curves(n)
    grid = fp.Grid.uniform(K)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    A = (basis.eigenfunctions * grid.weights[:, None]).T
    da = xr.DataArray(x, dims=("curve", "t"), coords={"t": grid.t})
    data_bytes = x.nbytes
    ref = lambda: fused_numpy(x, grid.weights, TAU, A)  # noqa: E731
    ref()
    ref_mem = (data_bytes + peak_traced_bytes(ref)) / data_bytes
    rows = []
    # check the reference and the package agree (sample mean = unshrunk coefficients)
    got = fp.sample_mean(x, basis, tau=TAU).coefficients
    assert np.allclose(got, ref(), rtol=1e-10, atol=1e-12), "fused numpy and sample_mean disagree"
    for name in SUMMARIES:
        call = summary_call(fp, name, basis, grid)
        for kind, data in (("numpy", x), ("DataArray", da)):
            call(data)  # warm
            t = paired_times({"ref": ref, "ours": lambda: call(data)}, repeats)
            peak = peak_traced_bytes(lambda: call(data))
            row = {"summary": name, "input": kind, "n": n, "K": K, "data_mb": data_bytes / 2**20,
                   "fused_numpy_s": t["ref"], "ours_s": t["ours"], "time_ratio": t["ours"] / t["ref"],
                   "fused_numpy_memory_ratio": ref_mem, "memory_ratio": (data_bytes + peak) / data_bytes,
                   "curves_per_s": n / t["ours"]}
            rows.append(row)
            print(f"n={n:>8} {name:>15} {kind:>9}: {t['ours'] * 1e3:8.1f} ms  fused numpy {t['ref'] * 1e3:7.1f} ms"
                  f"  ratio {row['time_ratio']:5.2f}  peak memory {row['memory_ratio']:4.2f}x data", flush=True)
    return rows


def run(quick: bool = False, sizes=None, repeats: int | None = None) -> dict:
    """Run the benchmark; returns {"rows": [...], "worst_time_ratio", "worst_memory_ratio", "met"}."""
    import fdp_ppl as fp

    sizes = sizes or ((100_000,) if quick else (100_000, 1_000_000))
    repeats = repeats or (2 if quick else 3)
    warnings.simplefilter("ignore")
    rows = []
    for n in sizes:
        rows.extend(bench_n(fp, n, repeats))
    worst_t = max(r["time_ratio"] for r in rows)
    worst_m = max(r["memory_ratio"] for r in rows)
    return {"rows": rows, "worst_time_ratio": worst_t, "worst_memory_ratio": worst_m,
            "target_time_ratio": TARGET_TIME, "target_memory_ratio": TARGET_MEMORY,
            "met": bool(worst_t <= TARGET_TIME and worst_m <= TARGET_MEMORY)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: n = 10^5")
    p.add_argument("--sizes", default=None, help="comma-separated numbers of curves (default 1e5,1e6)")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--out", default=None, help="JSON file (default results/bench_summaries[_quick].json)")
    a = p.parse_args(argv)
    sizes = tuple(int(float(s)) for s in a.sizes.split(",")) if a.sizes else None
    res = run(a.quick, sizes, a.repeats)
    print(f"worst time ratio {res['worst_time_ratio']:.2f} (target <= {TARGET_TIME}), worst peak memory "
          f"{res['worst_memory_ratio']:.2f}x data (target <= {TARGET_MEMORY}): {'MET' if res['met'] else 'NOT MET'}")
    write_results("bench_summaries", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
