"""The default audit on planted bugs and on correct mechanisms: detections, false positives, run time.

For each planted bug of :data:`fdp_ppl.testing.plants.BUGS` (FRL scale ÷ 1.5, ICLP-AR scale ÷ 1.5, Gaussian σ ÷ 1.3
at δ = 1e-5, t process with the wrong mixing law, KDE density noise ÷ 2) the default ``fp.audit`` (N = 20,000 per
side, every event kind) runs with ``--seeds`` seeds; then the same mechanisms, correct, run ``--correct`` times in
all (seeds spread over the five). Printed: per run the black-box lower bound, the white-box estimate ± se, the
verdicts and the run time; then the table (caught k/seeds per bug, false positives in the correct runs).

    .venv/bin/python benchmarks/bench_audit.py                  # 3 seeds per bug, 25 correct runs (~20 min)
    .venv/bin/python benchmarks/bench_audit.py --quick          # 1 seed, 5 correct runs, N = 4000

Writes ``results/bench_audit[_quick].json``. Exits 0 whatever the outcome (the table says it).
"""

from __future__ import annotations

import argparse
import time
import warnings

import _common  # noqa: F401  (puts this checkout first on sys.path)
from _common import write_results


def one(bug, seed, samples, planted_name=None):
    import fdp_ppl as fp
    from fdp_ppl.testing.plants import planted

    kw = {"family": bug.family, "random_seed": seed}
    if bug.delta is not None:
        kw["delta"] = bug.delta
    if samples is not None:
        kw["samples"] = samples
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if planted_name:
            with planted(planted_name):
                ds = fp.audit(bug.mechanism, **kw)
        else:
            ds = fp.audit(bug.mechanism, **kw)
    at = ds.attrs
    return {"bug": planted_name or "none", "mechanism": bug.mechanism, "family": bug.family, "seed": seed,
            "true_epsilon": bug.true_epsilon if planted_name else 1.0,
            "epsilon_lower_bound": at["epsilon_lower_bound"], "epsilon_whitebox": at["epsilon_whitebox"],
            "epsilon_whitebox_se": at["epsilon_whitebox_se"], "epsilon_whitebox_lower": at["epsilon_whitebox_lower"],
            "sensitivity_reached": at["sensitivity_reached"],
            "blackbox_flag": at["verdict_blackbox"].startswith("VIOLATION"), "whitebox_flag": bool(at["whitebox_flagged"]),
            "flagged": at["verdict"].startswith("VIOLATION"), "run_time_s": time.perf_counter() - t0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--correct", type=int, default=25)
    p.add_argument("--correct-from", type=int, default=0,
                   help="index of the first correct run (to split the correct runs over processes)")
    p.add_argument("--samples", type=int, default=None, help="releases per side (default: the audit's, 20000)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.quick:
        a.seeds, a.correct, a.samples = 1, 5, a.samples or 4000
    from fdp_ppl.testing.plants import BUGS

    rows = []
    fmt = ("{bug:17s} {mechanism:10s} seed {seed:3d}  eps_lb {epsilon_lower_bound:6.3f}  white-box "
           "{epsilon_whitebox:6.3f} +- {epsilon_whitebox_se:.3f} (true {true_epsilon:.3f}; pairs reach "
           "{sensitivity_reached:.2f} of Delta)  black-box {blackbox_flag!s:5s} white-box {whitebox_flag!s:5s} "
           "{run_time_s:5.1f} s")
    for name, bug in BUGS.items():
        for seed in range(a.seeds):
            rows.append(one(bug, 100 + seed, a.samples, name))
            print(fmt.format(**rows[-1]), flush=True)
    bugs = list(BUGS.values())
    for i in range(a.correct_from, a.correct):
        bug = bugs[i % len(bugs)]
        rows.append(one(bug, 200 + i, a.samples))
        print(fmt.format(**rows[-1]), flush=True)
    print()
    print(f"{'planted bug':17s} {'true eps':>8s} {'caught (default audit)':>24s} {'black-box alone':>16s} "
          f"{'white-box estimate':>20s} {'run time':>9s}")
    table = []
    for name, bug in BUGS.items():
        rs = [r for r in rows if r["bug"] == name]
        if not rs:
            continue
        caught, bb = sum(r["flagged"] for r in rs), sum(r["blackbox_flag"] for r in rs)
        est = ", ".join(f"{r['epsilon_whitebox']:.3f}" for r in rs)
        t = max(r["run_time_s"] for r in rs)
        table.append({"bug": name, "true_epsilon": bug.true_epsilon, "caught": caught, "blackbox_caught": bb,
                      "runs": len(rs), "whitebox_estimates": est, "max_run_time_s": t})
        print(f"{name:17s} {bug.true_epsilon:8.3f} {f'{caught}/{len(rs)}':>24s} {f'{bb}/{len(rs)}':>16s} "
              f"{est:>20s} {t:8.1f}s")
    ok = [r for r in rows if r["bug"] == "none"]
    fp_ = sum(r["flagged"] for r in ok)
    print(f"correct mechanisms: {fp_} false positives in {len(ok)} runs (white-box estimates "
          f"{min((r['epsilon_whitebox'] for r in ok), default=float('nan')):.3f} to "
          f"{max((r['epsilon_whitebox'] for r in ok), default=float('nan')):.3f}; run time up to "
          f"{max((r['run_time_s'] for r in ok), default=0.0):.1f} s)")
    write_results("bench_audit", {"rows": rows, "table": table, "false_positives": fp_, "correct_runs": len(ok)},
                  quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
