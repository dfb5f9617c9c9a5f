#!/usr/bin/env python
"""Benchmark: the default ``fp.infer`` on a mean release (population target, sampling sd learned) at m = 100, 800
and 3200, against the path it replaced, in the same process.

Release: as ``bench_scale_infer.py`` (ICLP(ε = 1) release of the ICLP-QR mean of 200 synthetic curves, Matérn 3/2
ρ = 0.1 eigenbasis, τ = 1; built before the clock starts). Priors with every hyperparameter fixed:

* ``gp``: GP prior with the release's own kernel (amplitude 0.1, level 0.5);
* ``iclp``: the README's ``--prior iclp --smoothness 2 --amplitude 20``.

Rows (2 chains × 1000 draws, one BLAS thread, each call after a short warm-up call):

* ``default`` — ``fp.infer(release, prior)``: the sampling scale κ by quadrature, the rest exactly given it
  (``inference_model == "quadrature"``);
* ``old`` — what the default ran before: NUTS on κ (``method="marginal"``, coefficients integrated out in closed
  form: the GP) or on the latent mixing scales (``method="mixture"``: the ICLP prior), 1000 tuning steps; with its
  divergences and minimum curve ESS. ``--old-sizes`` picks the sizes (default 100 and 800; NUTS at 3200 takes
  minutes);
* ``summary`` — ``target="summary"`` (exact, no κ): the cost floor of the exact path.

Targets (issue "exact, fast inference by default"): default ≤ 0.5 s, ≤ 2 s and ≤ 15 s at m = 100, 800, 3200 (wall
clock). Each timing also reports the process's CPU time: on a shared machine the wall clock grows with the load
(printed before and after), the CPU time much less. The last table has one row per target: the slowest prior's
default time against it, and whether it is met (by the wall clock; in brackets by the CPU time).

Usage::

    python benchmarks/bench_infer_default.py
    python benchmarks/bench_infer_default.py --sizes 100,800 --old-sizes 100 --priors gp
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_info  # noqa: E402
from bench_scale_infer import _release  # noqa: E402

TARGETS = {100: 0.5, 800: 2.0, 3200: 15.0}


def _prior(name):
    from fdp_ppl.inference import GPPrior, ICLPPrior

    return {"gp": GPPrior(nu=1.5, lengthscale=0.1, amplitude=0.1, mean=0.5),
            "iclp": ICLPPrior(amplitude=20.0, smoothness=2.0)}[name]


def _time(rel, prior, **kw):
    import fdp_ppl as fp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp.infer(rel, prior, draws=20, tune=20, chains=1, random_seed=1, progressbar=False, **kw)
        t0, c0 = time.perf_counter(), time.process_time()
        post = fp.infer(rel, prior, draws=1000, chains=2, random_seed=0, progressbar=False, **kw)
        post.attrs["bench_cpu_s"] = time.process_time() - c0
        return time.perf_counter() - t0, post


def rows(sizes, old_sizes, priors):
    import arviz as az
    import numpy as np
    from threadpoolctl import threadpool_limits

    out = []
    with threadpool_limits(1):
        for m in sizes:
            rel = _release(m)
            J = int(rel["posterior"]["coefficients"].sizes["basis"])
            for name in priors:
                prior = _prior(name)
                secs, post = _time(rel, prior)
                row = {"m": m, "J": J, "prior": name, "default_s": secs, "default_cpu_s": post.attrs["bench_cpu_s"],
                       "model": post.attrs["inference_model"],
                       "inference": post.attrs["inference"],
                       "quadrature_tv_half": post.attrs.get("inference_quadrature_tv_half"),
                       "target_s": TARGETS.get(m), "meets_target": secs <= TARGETS.get(m, np.inf)}
                row["summary_s"], _ = _time(rel, prior, target="summary")
                if m in old_sizes:
                    secs_old, old = _time(rel, prior, method="marginal" if name == "gp" else "mixture")
                    ess = az.ess(old["posterior"].to_dataset()[["curve"]], method="bulk")["curve"].values
                    row.update({"old_s": secs_old, "old_model": old.attrs["inference_model"],
                                "old_divergences": int(old.attrs["diagnostic_divergences"]),
                                "old_curve_ess_min": float(np.min(ess)), "speedup": secs_old / secs})
                out.append(row)
                print("  " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                      file=sys.stderr, flush=True)
    return out


def markdown(table) -> str:
    lines = ["| m | J | prior | default s (model) | CPU s | target | summary-target s | old s (model, divergences, min "
             "curve ESS) | speed-up |", "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        old = (f"{r['old_s']:.2f} ({r['old_model']}, {r['old_divergences']}, {r['old_curve_ess_min']:.0f})"
               if "old_s" in r else "—")
        target = f"≤ {r['target_s']:g} s: {'yes' if r['meets_target'] else 'no'}" if r["target_s"] else "—"
        lines.append(f"| {r['m']} | {r['J']} | {r['prior']} | {r['default_s']:.2f} ({r['model']}) | "
                     f"{r['default_cpu_s']:.2f} | {target} | {r['summary_s']:.2f} | {old} | "
                     + (f"{r['speedup']:.0f}×" if "speedup" in r else "—") + " |")
    return "\n".join(lines)


def targets_table(table) -> str:
    """One row per target size: the slowest prior's default wall-clock (and CPU) time against the target, met?"""
    lines = ["| m | target | default s, slowest prior (CPU s) | met (by CPU) |", "|---|---|---|---|"]
    for m, limit in TARGETS.items():
        rs = [r for r in table if r["m"] == m]
        if not rs:
            continue
        wall, cpu = max(r["default_s"] for r in rs), max(r["default_cpu_s"] for r in rs)
        lines.append(f"| {m} | ≤ {limit:g} s | {wall:.2f} ({cpu:.2f}) | {'yes' if wall <= limit else 'no'} "
                     f"({'yes' if cpu <= limit else 'no'}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100,800,3200")
    p.add_argument("--old-sizes", default="100,800")
    p.add_argument("--priors", default="gp,iclp")
    p.add_argument("--out", default=None, help="JSON file (default results/bench_infer_default.json)")
    a = p.parse_args(argv)
    sizes = [int(v) for v in a.sizes.split(",") if v]
    old_sizes = {int(v) for v in a.old_sizes.split(",") if v}
    load_before = os.getloadavg()
    table = rows(sizes, old_sizes, [v for v in a.priors.split(",") if v])
    load_after = os.getloadavg()
    print(markdown(table))
    print()
    print(targets_table(table))
    print(f"load average (1, 5, 15 min): before {', '.join(f'{v:.1f}' for v in load_before)}; after "
          f"{', '.join(f'{v:.1f}' for v in load_after)} on {os.cpu_count()} CPUs")
    out = Path(a.out) if a.out else HERE / "results" / "bench_infer_default.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_info(), "load_average": os.getloadavg(),
                               "load_average_before": load_before, "targets": targets_table(table),
                               "command": " ".join(sys.argv), "rows": table}, indent=2, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
