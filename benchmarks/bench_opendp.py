#!/usr/bin/env python
"""Benchmark: the floating-point-safe OpenDP release path against the compiled PyMC sampler.

Issue 10 makes OpenDP's lattice samplers (:class:`fdp_ppl.noise.sampling.OpenDPSampler`) the default
generator of unseeded releases; this measures what that costs. For 1000 draws at K = 500 grid
points (Matérn 3/2, ρ = 0.1, J = 500 retained components):

* ``iclp``: ICLP(ε = 1) on the ICLP-QR mean (Laplace noise, ``make_laplace``);
* ``gaussian``: GaussianMechanism(ε = 1, δ = 0.01) on the RKHS mean (Normal noise, ``make_gaussian``
  whose zCDP map is converted to (ε, δ)).

Each is timed two ways, back to back in the same process, so the ratio is not thrown off by a shared,
loaded machine:

* ``release``: ``fdp_ppl.release(summary, mechanism, draws=1000)`` (default generator: ``"opendp"``)
  against the same call with ``generator="pymc"`` (compiled sampler, warm); both unseeded, both
  including the calibration, the curves ``coefficients @ design.T`` and the DataTree;
* ``sampler``: ``sampler.draw`` alone for the two generators (the noise only);
* ``release-1-draw``: one publication, ``fp.release(summary, mechanism)`` (median of 10 calls per repeat).

Timings are medians over ``--repeats`` (``time.perf_counter``), the two generators alternating within
each repeat; BLAS runs single-threaded. The JSON (``results/bench_opendp.json``, or
``bench_opendp_quick.json`` with ``--quick``) holds the rows, the per-draw cost, the ratio
``opendp / pymc`` and machine information.

Usage::

    python benchmarks/bench_opendp.py            # K = 500, 1000 draws, 3 repeats (about 2 minutes)
    python benchmarks/bench_opendp.py --quick    # smoke run: K = 100, 50 draws, 1 repeat
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grid", type=int, default=500, help="K grid points (default 500)")
    p.add_argument("--draws", type=int, default=1000, help="draws per release (default 1000)")
    p.add_argument("--repeats", type=int, default=3, help="repeats per cell (medians; default 3)")
    p.add_argument("--n-curves", type=int, default=200, help="curves summarised (default 200)")
    p.add_argument("--out-dir", type=Path, default=HERE / "results", help="where the JSON goes")
    p.add_argument("--quick", action="store_true", help="smoke run: K = 100, 50 draws, 1 repeat")
    args = p.parse_args(argv)
    if args.quick:
        args.grid, args.draws, args.repeats = 100, 50, 1
    return args


def setup_environment():
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.path.insert(0, str(ROOT))


def make_curves(t, n, seed=0):
    """The paper's simulation S-1 mean ``10 t exp(-t)`` plus random sine terms, (n, K) (values do not affect timing)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    freq = np.arange(1, 6)
    amp = rng.normal(scale=0.3 / freq, size=(n, freq.size))
    return 10 * t * np.exp(-t) + amp @ np.sin(np.pi * freq[:, None] * t[None, :])


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def machine_info():
    import numpy as np
    import opendp
    import pymc
    import pytensor

    import fdp_ppl as fp

    info = {"python": platform.python_version(), "numpy": np.__version__, "pymc": pymc.__version__,
            "pytensor": pytensor.__version__, "opendp": getattr(opendp, "__version__", "unknown"),
            "fdp_ppl": fp.__version__, "cpu_count": os.cpu_count(), "machine": platform.machine(),
            "pytensor_flags": os.environ.get("PYTENSOR_FLAGS", "")}
    try:
        from importlib.metadata import version

        info["opendp"] = version("opendp")
    except Exception:  # pragma: no cover
        pass
    if hasattr(os, "getloadavg"):
        info["load_average_start"] = list(os.getloadavg())
    return info


def run(args):

    import fdp_ppl as fp
    from fdp_ppl.noise.sampling import sampler_for

    warnings.filterwarnings("ignore", category=UserWarning)
    info = machine_info()
    grid = fp.Grid.uniform(args.grid)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    x = make_curves(grid.t, args.n_curves)
    cells = {
        "iclp": (fp.iclp_qr_mean(x, basis, tau=5.0), fp.ICLP(1.0)),
        "gaussian": (fp.rkhs_mean(x, basis, tau=5.0), fp.GaussianMechanism(1.0, 0.01)),
    }
    rows = []
    for name, (summary, mech) in cells.items():
        J = summary.n_components
        cal = {g: mech.calibrate(summary.spec, generator=g) for g in ("opendp", "pymc")}
        samplers = {g: sampler_for(mech.law, J, g) for g in ("opendp", "pymc")}
        # warm both paths (compilation, OpenDP library load, σ search)
        for g in ("opendp", "pymc"):
            fp.release(summary, mech, draws=2, generator=g)
        times = {(kind, g): [] for kind in ("release", "sampler", "release-1-draw") for g in ("opendp", "pymc")}
        for _ in range(args.repeats):
            for g in ("opendp", "pymc"):
                times["release", g].append(timed(lambda: fp.release(summary, mech, draws=args.draws, generator=g)))
                times["sampler", g].append(timed(lambda: samplers[g].draw(summary.coefficients, cal[g].scale,
                                                                          args.draws, calibration=cal[g])))
        # one publication = one draw: the fixed costs of a release dominate the pymc path
        for _ in range(args.repeats):
            for g in ("opendp", "pymc"):
                times["release-1-draw", g].append(
                    statistics.median(timed(lambda: fp.release(summary, mech, generator=g)) for _ in range(10)))
        tree = fp.release(summary, mech, draws=1)
        for kind in ("release", "sampler", "release-1-draw"):
            od, pm_ = (statistics.median(times[kind, g]) for g in ("opendp", "pymc"))
            paired = statistics.median(a / b for a, b in zip(times[kind, "opendp"], times[kind, "pymc"]))
            n = 1 if kind == "release-1-draw" else args.draws
            rows.append({"mechanism": name, "what": kind, "K": args.grid, "J": J, "draws": n,
                         "opendp_s": od, "pymc_s": pm_, "ratio_opendp_over_pymc": od / pm_,
                         "ratio_paired_median": paired, "opendp_ms_per_draw": 1e3 * od / n,
                         "pymc_ms_per_draw": 1e3 * pm_ / n,
                         "opendp_times_s": times[kind, "opendp"], "pymc_times_s": times[kind, "pymc"],
                         "epsilon_guaranteed": tree.attrs["epsilon_guaranteed"],
                         "delta_guaranteed": tree.attrs["delta_guaranteed"],
                         "sigma_opendp": cal["opendp"].sigma, "sigma_pymc": cal["pymc"].sigma})
    if hasattr(os, "getloadavg"):
        info["load_average_end"] = list(os.getloadavg())
    return {"created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(), "machine": info,
            "settings": {"K": args.grid, "draws": args.draws, "repeats": args.repeats, "n_curves": args.n_curves,
                         "kernel": "Matern(rho=0.1, nu=1.5)", "quick": args.quick}, "rows": rows}


def main(argv=None) -> int:
    args = parse_args(argv)
    setup_environment()
    out = run(args)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / ("bench_opendp_quick.json" if args.quick else "bench_opendp.json")
    path.write_text(json.dumps(out, indent=2))
    print(f"{'mechanism':<9} {'what':<14} {'K':>4} {'J':>4} {'draws':>6} {'opendp s':>9} {'pymc s':>8} "
          f"{'opendp/pymc':>11} {'ms/draw opendp':>14}")
    for r in out["rows"]:
        print(f"{r['mechanism']:<9} {r['what']:<14} {r['K']:>4} {r['J']:>4} {r['draws']:>6} {r['opendp_s']:>9.3f} "
              f"{r['pymc_s']:>8.4f} {r['ratio_opendp_over_pymc']:>10.1f}x {r['opendp_ms_per_draw']:>14.2f}")
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
