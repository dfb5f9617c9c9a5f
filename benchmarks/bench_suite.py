#!/usr/bin/env python
"""One benchmark suite: every speed and scale figure of the package in one JSON.

Parts (each also runs alone, see its script):

* ``iclp``       100 ICLP releases against the paper's Algorithm 1 (``bench_iclp.py``, run as a subprocess:
  it sets BLAS threads for its whole process);
* ``inference``  curve-ESS per second of ``fp.infer``'s exact / marginal posteriors against the old dense NUTS
  model on DTI (``bench_inference.py``);
* ``summaries``  every summary against a fused numpy pass, time and peak memory (``bench_summaries.py``);
* ``release``    ``fp.release`` against its raw sampler at 100 and 10,000 draws (``bench_release.py``);
* ``cli``        ``fdp-ppl --help`` and every subcommand's ``--help`` as fresh processes (``bench_cli.py``);
* ``peers``      private densities against KDEpy's ``FFTKDE`` and the bincount + FFT floor (``bench_peers.py``);
* ``outofcore``  the mean of 10^7 curves × 100 points from a Zarr store on a 2-worker dask LocalCluster
  (``bench_outofcore.py``; ``--quick``: 2·10^5 curves).

Writes ``results/bench_suite.json`` (``bench_suite_quick.json`` with ``--quick``) with machine info and every
part's rows, and prints one table of ratios against their targets.

Usage::

    python benchmarks/bench_suite.py              # full (make bench); the out-of-core part writes ~8 GB
    python benchmarks/bench_suite.py --quick      # smoke sizes (CI)
    python benchmarks/bench_suite.py --only summaries,release
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_info  # noqa: E402

PARTS = ("iclp", "inference", "summaries", "release", "outofcore", "cli", "peers")


def run_iclp(quick: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, str(HERE / "bench_iclp.py"), "--out-dir", tmp] + (["--quick"] if quick else [])
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        stem = "bench_iclp_quick" if quick else "bench_iclp"
        data = json.loads((Path(tmp) / f"{stem}.json").read_text())
    if not quick:  # keep the standalone results too
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "bench_iclp.json").write_text(json.dumps(data, indent=2, default=str))
    iclp = [r for r in data["rows"] if r["mechanism"] == "iclp"]
    worst_k = max(r["K"] for r in iclp)
    ratios = [r["ratio_baseline_over_warm"] for r in iclp if r["K"] == worst_k]
    return {"rows": data["rows"], "target": data.get("target", {}), "K": worst_k, "worst_ratio": min(ratios)}


def run_inference(quick: bool) -> dict:
    try:
        mod = importlib.import_module("bench_inference")
    except ImportError:
        return {"skipped": "benchmarks/bench_inference.py is not present"}
    return mod.run(quick=quick)


def run_part(name: str, quick: bool) -> dict:
    if name == "iclp":
        return run_iclp(quick)
    if name == "inference":
        return run_inference(quick)
    mod = importlib.import_module({"summaries": "bench_summaries", "release": "bench_release",
                                   "outofcore": "bench_outofcore", "cli": "bench_cli", "peers": "bench_peers"}[name])
    return mod.run(quick=quick)


def _inference_lines(res: dict) -> list[tuple]:
    """Ratio lines from bench_inference's dict, whatever its exact layout: every key holding 'ratio'."""
    lines = []

    def walk(d, prefix=""):
        if isinstance(d, dict):
            for k, v in d.items():
                if isinstance(v, (int, float)) and "ratio" in str(k).lower():
                    lines.append((f"inference {prefix}{k}", f"{v:.2f}", "", ""))
                elif isinstance(v, dict):
                    walk(v, f"{prefix}{k} ")
    walk(res)
    return lines


def summary_lines(results: dict) -> list[tuple]:
    """(what, value, target, verdict) rows of the printed table."""
    rows = []
    r = results.get("iclp")
    if r and "worst_ratio" in r:
        rows.append((f"ICLP: Algorithm 1 / ours warm, 100 releases, K={r['K']} (worst kernel)",
                     f"{r['worst_ratio']:.0f}x", ">= 100x" if r["K"] >= 500 else "",
                     ("MET" if r["worst_ratio"] >= 100 else "NOT MET") if r["K"] >= 500 else ""))
    r = results.get("inference")
    if r and "skipped" not in r and "error" not in r:
        if "met" in r and "ratios" in r:   # bench_inference.run: curve-ESS/s of fp.infer against the old model
            for config, target in r.get("targets", {}).items():
                if config in r["ratios"]:
                    rows.append((f"inference DTI, GP prior, {config} hyperparameters: curve-ESS/s, default / old",
                                 f"{r['ratios'][config]['ratio_c_over_a']:.1f}x", f">= {target:g}x",
                                 "MET" if r["met"][config] else "NOT MET"))
        else:
            rows.extend(_inference_lines(r))
    r = results.get("summaries")
    if r and "rows" in r:
        big = max(x["n"] for x in r["rows"])
        for x in r["rows"]:
            if x["n"] == big and x["input"] == "numpy":
                rows.append((f"summary {x['summary']} n={x['n']:.0e}: time / fused numpy | peak memory / data",
                             f"{x['time_ratio']:.2f} | {x['memory_ratio']:.2f}", "<= 2 | <= 1.5",
                             "MET" if x["time_ratio"] <= 2 and x["memory_ratio"] <= 1.5 else "NOT MET"))
        rows.append(("summaries, all sizes and inputs: worst time ratio | worst memory ratio",
                     f"{r['worst_time_ratio']:.2f} | {r['worst_memory_ratio']:.2f}", "<= 2 | <= 1.5",
                     "MET" if r["met"] else "NOT MET"))
    r = results.get("release")
    if r and "rows" in r:
        for x in r["rows"]:
            target = x["draws"] in (100, 10_000)
            rows.append((f"fp.release / raw sampler, {x['draws']} draws", f"{x['ratio']:.2f}",
                         "<= 1.5" if target else "", ("MET" if x["ratio"] <= 1.5 else "NOT MET") if target else ""))
    r = results.get("outofcore")
    if r and "release_s" in r:
        rows.append((f"out of core: {r['n']:.0e} curves x {r['K']} on 2 workers, seconds", f"{r['release_s']:.1f}",
                     "", ""))
        rows.append(("out of core: peak memory per worker (GB)", f"{max(r['worker_peak_rss_gb']):.2f}", "< 2",
                     "MET" if r["met"] else "NOT MET"))
        rows.append((f"out of core time per curve / in memory at {r['in_memory_n']:.0e}",
                     f"{r['ratio_per_curve_vs_memory']:.2f}", "", ""))
    r = results.get("cli")
    if r and "worst_s" in r:
        rows.append(("fdp-ppl --help and every subcommand's --help: slowest, seconds", f"{r['worst_s']:.2f}",
                     "< 0.5", "MET" if r["met"] else "NOT MET"))
    r = results.get("peers")
    if r and "targets" in r:  # bench_peers.run: densities against FFTKDE and the floor
        for t in r["targets"]:
            rows.append((f"density {t['what']}", "-" if t["value"] is None else f"{t['value']:.2f}", t["target"],
                         "-" if t["met"] is None else ("MET" if t["met"] else "NOT MET")))
    for name, res in results.items():
        if isinstance(res, dict) and ("error" in res or "skipped" in res):
            rows.append((f"{name}", "-", "", res.get("skipped") or "ERROR: " + res["error"].splitlines()[-1]))
    return rows


def print_table(rows):
    w = max(len(r[0]) for r in rows) if rows else 10
    print("\n" + "what".ljust(w) + "  value          target          verdict")
    for what, value, target, verdict in rows:
        print(f"{what.ljust(w)}  {value:<14} {target:<15} {verdict}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke sizes for CI")
    p.add_argument("--only", default=None, help=f"comma-separated parts among {', '.join(PARTS)}")
    p.add_argument("--out", default=None, help="JSON file (default results/bench_suite[_quick].json)")
    a = p.parse_args(argv)
    parts = [x.strip() for x in a.only.split(",")] if a.only else list(PARTS)
    unknown = set(parts) - set(PARTS)
    if unknown:
        p.error(f"unknown parts {sorted(unknown)}; choose among {PARTS}")
    results, times = {}, {}
    for name in parts:
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        try:
            results[name] = run_part(name, a.quick)
        except Exception:  # noqa: BLE001 - one failing part must not lose the others
            results[name] = {"error": traceback.format_exc()}
            print(results[name]["error"], file=sys.stderr)
        times[name] = time.perf_counter() - t0
    rows = summary_lines(results)
    print_table(rows)
    out = Path(a.out) if a.out else HERE / "results" / f"bench_suite{'_quick' if a.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"machine": machine_info(), "quick": a.quick, "seconds_per_part": times,
           "table": [dict(zip(("what", "value", "target", "verdict"), r)) for r in rows], "parts": results}
    out.write_text(json.dumps(doc, indent=2, default=str))
    print(f"\nwrote {out}")
    return 1 if any("error" in r for r in results.values() if isinstance(r, dict)) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
