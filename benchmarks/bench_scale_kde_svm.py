#!/usr/bin/env python
"""Benchmark: KDE and kernel machines at the sizes their users have (issue 28), against scipy / sklearn.

Rows (one BLAS thread, same process, baselines measured next to each row):

* ``kde-gp exact`` / ``kde-gp binned``: :class:`fdp_ppl.kde.KDESpec` (1-D, Gaussian kernel, GP noise)
  built, fitted and released once (unseeded: OpenDP sampler) at n records on K grid points; baseline
  ``scipy.stats.gaussian_kde(x).evaluate(grid)`` with the same bandwidth.
* ``kde-iclp``: :class:`fdp_ppl.kde.ICLPKDESpec` fitted (node counts) at n records; same baseline.
* ``svm exact``: hinge kernel machine (λ = 0.01, Gaussian kernel ρ = 0.2 on [0, 1]², ``approximation="exact"``)
  fitted; baseline ``sklearn.svm.SVC(kernel="rbf", C=1/(2λn))`` fitted on the same data (it also fits an
  intercept: the nearest non-private computation a user would run).
* ``svm nystroem``: the same machine with ``approximation="nystroem"`` (public landmarks); baseline
  ``sklearn.svm.LinearSVC(loss="hinge", fit_intercept=False)`` on the same Nyström features.

Seconds: the better of two calls (imports and compiled kernels warmed up on small sizes first; the second
call runs under tracemalloc, whose peak is the row's peak memory: numpy buffers; the baseline's C allocations are not
traced); baselines: the better of two calls when one takes under 20 s. Growth exponents are ``log(t2/t1)/log(n2/n1)`` between consecutive sizes of a row.

Usage::

    python benchmarks/bench_scale_kde_svm.py            # full sizes (about 3 minutes)
    python benchmarks/bench_scale_kde_svm.py --quick    # smoke sizes (seconds)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import write_results  # noqa: E402

LAM = 0.01
RHO = 0.2


def _best(fn, cheap: float = 20.0) -> float:
    """Seconds of ``fn()``: the better of two calls when the first takes under ``cheap`` seconds."""
    t0 = time.perf_counter()
    fn()
    sec = time.perf_counter() - t0
    if sec < cheap:
        t0 = time.perf_counter()
        fn()
        sec = min(sec, time.perf_counter() - t0)
    return sec


def _peak(fn) -> int:
    """Peak traced bytes of one call (a separate, untimed run: tracemalloc slows Python allocations)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _row(what, size, fn, baseline_name, baseline_fn, memory=True, baseline_seconds=None):
    t0 = time.perf_counter()
    fn()
    sec = time.perf_counter() - t0
    if memory:  # second call: peak memory, and its time when better (the first touch of new memory is slow here)
        t0 = time.perf_counter()
        peak = _peak(fn)
        sec = min(sec, time.perf_counter() - t0)
    else:
        peak = None
    if baseline_seconds is not None:
        bsec = baseline_seconds
    elif baseline_fn is None:
        bsec = None
    else:
        bsec = _best(baseline_fn)
    print(f"  {what} {size}: {sec:.3g} s (baseline {bsec if bsec is None else round(bsec, 3)} s)", file=sys.stderr,
          flush=True)
    return {"what": what, "size": size, "seconds": round(sec, 4), "baseline": baseline_name,
            "baseline_seconds": None if bsec is None else round(bsec, 4),
            "ratio": None if bsec is None else round(sec / bsec, 3),
            "peak_memory_mb": None if peak is None else round(peak / 2**20, 1)}


def kde_rows(sizes, estimators=("exact", "binned"), iclp=True) -> list:
    import numpy as np
    from scipy.stats import gaussian_kde

    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec
    import fdp_ppl as fp
    from fdp_ppl.noise.mechanisms import ICLP, GaussianMechanism

    rows = []
    for n, k in sizes:
        rng = np.random.default_rng(n + k)
        x = np.clip(rng.normal(0.0, 1.0, n), -5, 5)
        grid = CartesianGrid.uniform((-5.0, 5.0), k)
        h = 1.06 * float(n) ** (-0.2)  # public rule (unit scale)
        pts = grid.axes[0]

        def scipy_kde():
            return gaussian_kde(x, bw_method=h / x.std(ddof=1))(pts)

        size = f"n={n:.0e}, K={k}"
        base = _best(scipy_kde)  # measured once per size, next to the rows that use it
        for est in estimators:
            def ours(est=est):
                spec = KDESpec(grid=grid, bandwidth=h, n=n, estimator=est)
                return fp.release(spec.fit(x), GaussianMechanism(1.0, 1e-6))

            rows.append(_row(f"kde-gp {est}", size, ours, "scipy gaussian_kde", scipy_kde, baseline_seconds=base))
        if iclp:
            def ours_iclp():
                spec = ICLPKDESpec(grid=grid, bandwidth=h, n=n)
                return fp.release(spec.fit(x), ICLP(1.0))

            rows.append(_row("kde-iclp", size, ours_iclp, "scipy gaussian_kde", scipy_kde, baseline_seconds=base))
    return rows


def _svm_data(n, seed=1):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, 2))
    y = np.where(X[:, 0] + 0.3 * np.sin(6 * X[:, 1]) + rng.normal(0, 0.2, n) > 0.6, 1.0, -1.0)
    return X, y


def svm_rows(exact_sizes, nystroem_sizes) -> list:
    from fdp_ppl.machine import ERMSpec
    from fdp_ppl.spaces import Gaussian

    try:
        from sklearn.svm import SVC, LinearSVC
    except ImportError:  # the baselines are optional
        SVC = LinearSVC = None
    kernel = Gaussian(RHO, convention="hall")
    rows = []
    for n in exact_sizes:
        X, y = _svm_data(n)
        spec = ERMSpec(kernel, lam=LAM, n=n, domain=[[0, 1], [0, 1]], approximation="exact")
        base = None if SVC is None else (lambda X=X, y=y, n=n: SVC(C=1 / (2 * LAM * n), kernel="rbf",
                                                                   gamma=1 / (2 * RHO**2)).fit(X, y))
        rows.append(_row("svm exact", f"n={n}", lambda: spec.fit(X, y), "sklearn SVC (rbf)", base))
    for n in nystroem_sizes:
        X, y = _svm_data(n)
        spec = ERMSpec(kernel, lam=LAM, n=n, domain=[[0, 1], [0, 1]], approximation="nystroem")
        base = None
        if LinearSVC is not None:
            def base(X=X, y=y, n=n, spec=spec):
                Z = spec.nystroem_map().features(X)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return LinearSVC(C=1 / (2 * LAM * n), loss="hinge", fit_intercept=False, dual=True,
                                     max_iter=2000).fit(Z, y)
        row = _row("svm nystroem", f"n={n}", lambda: spec.fit(X, y), "sklearn LinearSVC on the features", base)
        row["size"] += f", m={len(spec.landmark_points())}, r={spec.nystroem_map().rank}"
        rows.append(row)
    return rows


def rows(quick: bool) -> list:
    """Benchmark rows: what, size, seconds, baseline, baseline seconds, ratio, peak memory (MB)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        kde_rows([(2000, 50)])  # warm-up: imports, OpenDP, the compiled solver's cache
        svm_rows([300], [3000])
        if quick:
            out = kde_rows([(10**5, 200), (10**5, 800)])
            out += svm_rows([1000, 2000], [20_000, 50_000])
        else:
            out = kde_rows([(10**5, 200), (10**6, 200), (10**6, 3200)])
            out += svm_rows([5000, 10000, 20000], [10**5, 10**6])
    return out


def growth(table) -> None:
    """Add ``growth`` (exponent in n) between consecutive rows of the same ``what`` and grid."""
    import re

    last = {}
    for r in table:
        m = re.match(r"n=([0-9.e+]+)(.*?)(, m=.*)?$", r["size"])
        n = float(m.group(1))
        key = (r["what"], m.group(2))
        if key in last and n != last[key][0]:
            r["growth"] = round(math.log(r["seconds"] / last[key][1]) / math.log(n / last[key][0]), 2)
        last[key] = (n, r["seconds"])


def markdown(table) -> str:
    cols = ["what", "size", "seconds", "baseline", "baseline_seconds", "ratio", "growth", "peak_memory_mb"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table:
        lines.append("| " + " | ".join("" if r.get(c) is None else str(r.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    table = rows(args.quick)
    growth(table)
    print(markdown(table))
    write_results("scale_kde_svm", {"rows": table}, quick=args.quick, out=args.out)


if __name__ == "__main__":
    main()
