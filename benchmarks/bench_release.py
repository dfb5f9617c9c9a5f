#!/usr/bin/env python
"""Benchmark: the overhead of ``fp.release`` over its raw sampler.

``fp.release`` checks its inputs, calibrates the noise, draws from the
compiled sampler of :mod:`fdp_ppl.noise.sampling` and builds the release tree
(:func:`fdp_ppl.releasing.schema.release_tree`). The raw sampler is the same compiled
sampler called directly with the same centre, scales and number of draws.
Both are timed back to back in the same process (minimum over repeats) on
the DTI ``cca`` ICLP-QR summary (K = 93, Matérn 3/2, ρ = 0.1, ICLP ε = 1),
with the seedable ``"pymc"`` generator (the OpenDP generator costs about
10 ms per draw, which would hide any overhead), at 100 and 10,000 draws.
Target: ``release / sampler ≤ 1.5``.

Usage::

    python benchmarks/bench_release.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_results, paired_times  # noqa: E402

DRAWS = (1, 100, 10_000)
TARGET = 1.5


def run(quick: bool = False, repeats: int | None = None) -> dict:
    """Time ``fp.release`` and its raw sampler; returns {"rows": [...], "worst_ratio", "met"}."""
    import numpy as np

    import fdp_ppl as fp
    from fdp_ppl.datasets import load_dataset
    from fdp_ppl.noise.sampling import sampler_for

    warnings.simplefilter("ignore")
    repeats = repeats or (5 if quick else 15)
    curves = load_dataset("dti", "cca", missing="impute")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summary = fp.iclp_qr_mean(curves, basis, tau=1.0)
    mech = fp.ICLP(epsilon=1.0)
    cal = mech.calibrate(summary.spec, "tight", generator="pymc")
    sampler = sampler_for(mech.law, summary.n_components, "pymc")
    rows = []
    for draws in DRAWS:
        def raw(draws=draws):
            return sampler.draw(summary.coefficients, cal.scale, draws, 7, study=True)

        def rel(draws=draws):
            return fp.release(summary, mech, draws=draws, random_seed=7, study=True, generator="pymc")

        # the release holds the sampler's draws exactly
        np.testing.assert_array_equal(rel()["posterior"]["coefficients"].values[0], raw())
        t = paired_times({"sampler": raw, "release": rel}, repeats)
        row = {"draws": draws, "K": curves.sizes["t"], "J": summary.n_components, "sampler_s": t["sampler"],
               "release_s": t["release"], "ratio": t["release"] / t["sampler"],
               "overhead_ms": 1e3 * (t["release"] - t["sampler"])}
        rows.append(row)
        print(f"draws={draws:>6}: raw sampler {t['sampler'] * 1e3:8.2f} ms  fp.release {t['release'] * 1e3:8.2f} ms"
              f"  ratio {row['ratio']:5.2f}  overhead {row['overhead_ms']:6.2f} ms", flush=True)
    target_rows = [r for r in rows if r["draws"] in (100, 10_000)]
    worst = max(r["ratio"] for r in target_rows)
    return {"rows": rows, "worst_ratio": worst, "target_ratio": TARGET, "target_draws": [100, 10_000],
            "met": bool(worst <= TARGET)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    res = run(a.quick, a.repeats)
    print(f"worst release/sampler ratio at 100 and 10,000 draws: {res['worst_ratio']:.2f} (target <= {TARGET}): "
          f"{'MET' if res['met'] else 'NOT MET'}")
    write_results("bench_release", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
