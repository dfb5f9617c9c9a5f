#!/usr/bin/env python
"""Benchmark: every family against its strongest peer, one table (the README's "Against the strongest peer").

Runs, in this process, ``bench_peers.py`` (private densities against KDEpy's ``FFTKDE`` and the bincount + FFT
floor) and ``bench_peers_families.py`` (mean curves against a fused numpy pass, principal components against
randomized ``PCA``, kernel machines against ``Nystroem`` + ``LinearSVC`` / ``LogisticRegression``, exact inference
against a hand-written PyMC model sampled by nutpie), and prints one table (:func:`_common.peer_table`): family,
size, ours, peer, ratio, growth exponents in n, peak memory, accuracy where the peers approximate, target, met.
The machine's load average is recorded beside it (seconds on a shared machine move with it; ratios less).

Usage::

    python benchmarks/bench_peers_all.py --quick --readme   # small sizes (a few minutes); rewrite the README table
    python benchmarks/bench_peers_all.py --readme           # the sizes of the issue (an hour on a busy 2-core VM)
    python benchmarks/bench_peers_all.py --only density,mean

``--readme`` replaces the text between ``<!-- peers-table:start -->`` and ``<!-- peers-table:end -->`` in
README.md (``make bench-peers`` runs the quick mode with it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import ROOT, machine_info, peer_table, write_results  # noqa: E402

PARTS = ("density", "mean", "pca", "svm", "infer")
START, END = "<!-- peers-table:start -->", "<!-- peers-table:end -->"


def run(quick: bool, only=PARTS, repeats: int = 3) -> dict:
    """The rows of every part asked for, in the order of :data:`PARTS`, and the load before and after."""
    rows, t0 = [], time.perf_counter()
    load_before = list(os.getloadavg())
    parts = {}
    if "density" in only:
        import bench_peers

        res = bench_peers.run(quick=quick, repeats=repeats)
        parts["density"] = res
        rows += bench_peers.peer_rows(res)
    families = tuple(f for f in PARTS[1:] if f in only)
    if families:
        import bench_peers_families

        res = bench_peers_families.run(quick, families, repeats)
        parts["families"] = res
        rows += res["rows"]
    return {"rows": rows, "table": peer_table(rows), "quick": quick, "repeats": repeats, "parts": parts,
            "load_average_before": load_before, "load_average_after": list(os.getloadavg()),
            "seconds": time.perf_counter() - t0}


def readme_block(res: dict) -> str:
    """The README's table with the command and the machine's state."""
    info = res.get("machine") or machine_info()
    before = ", ".join(f"{v:.1f}" for v in res["load_average_before"])
    after = ", ".join(f"{v:.1f}" for v in res["load_average_after"])
    mode = "--quick " if res["quick"] else ""
    return "\n".join([
        START,
        f"`python benchmarks/bench_peers_all.py {mode}--readme` ({'quick sizes' if res['quick'] else 'full sizes'}; "
        f"{info['date_utc'][:10]}, {info.get('cpu_count')} vCPUs, one BLAS thread, load average {before} before "
        f"and {after} after, {res['seconds'] / 60:.0f} min). Seconds are medians of the two sides run back to back; "
        + "exact inference compares curve-ESS per second (higher is better) on the same posterior, nutpie's compile off "
        "the clock (reported in the JSON). Growth: least-squares exponent of the "
        "seconds in n over the sizes of a row's configuration. Targets apply from the sizes the issue names "
        "(densities and kernel machines n ≥ 10^6 / 10^5, components n ≥ 10^4); — : not at this size.",
        "",
        res["table"],
        END,
    ])


def write_readme(block: str, path: Path | None = None) -> Path:
    """Replace the marked block of README.md with ``block``."""
    path = path or ROOT / "README.md"
    text = path.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{path} has no {START} ... {END} block")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + block + tail)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one repeat of the densities (a few minutes)")
    p.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts of {', '.join(PARTS)}")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--readme", action="store_true", help="rewrite the README's peers table")
    p.add_argument("--out", default=None, help="JSON path (default results/bench_peers_all[_quick].json)")
    p.add_argument("--from-json", default=None, help="print (and with --readme write) the table of an earlier run's "
                                                    "JSON instead of running")
    a = p.parse_args(argv)
    if a.from_json:
        import json

        block = readme_block(json.loads(Path(a.from_json).read_text()))
        print(block)
        if a.readme:
            print(f"wrote {write_readme(block)}")
        return 0
    only = tuple(a.only.split(","))
    unknown = sorted(set(only) - set(PARTS))
    if unknown:
        p.error(f"unknown parts {unknown}: choose from {', '.join(PARTS)}")
    res = run(a.quick, only, a.repeats)
    block = readme_block(res)
    print(block)
    write_results("bench_peers_all", {k: v for k, v in res.items() if k != "parts"} | {"parts": res["parts"]},
                  quick=a.quick, out=a.out)
    if a.readme:
        print(f"wrote {write_readme(block)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
