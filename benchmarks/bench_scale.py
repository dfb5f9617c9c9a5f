"""Every family at its users' sizes: one table against the scale targets, from the two scaling benchmarks.

* ``bench_scale_infer.py``: ``fp.infer`` on ICLP-QR releases with m grid points (GP prior with the release's own
  kernel: exact; another kernel: the exactly targeted Gibbs sampler), and eigenbases of 800 / 3200 points against
  the dense ``eigh`` in the same process;
* ``bench_scale_kde_svm.py``: GP / ICLP KDE against scipy ``gaussian_kde`` and kernel machines against sklearn
  (``SVC``; ``LinearSVC`` on the same Nyström features), same process, one BLAS thread, with peak memory.

Usage::

    python benchmarks/bench_scale.py                 # print the table from the stored results (results/*.json)
    python benchmarks/bench_scale.py --run [--quick] # run both benchmarks first (full: about 15 min on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (what, size) -> the issue's target, checked against the stored row
TARGETS = [
    ("infer own kernel (exact)", 800, "within 2 s", lambda r: r["seconds"] <= 2.0),
    ("infer own kernel (exact)", 3200, "within 60 s", lambda r: r["seconds"] <= 60.0),
    ("eigenbasis gaussian-hall", 3200, "under 0.5 s", lambda r: r["seconds"] <= 0.5),
    ("eigenbasis matern32:100", 3200, "under 0.5 s (100 pairs kept)", lambda r: r["seconds"] <= 0.5),
    ("eigenbasis matern32", 3200, "under 0.5 s (all 3200 pairs kept)", lambda r: r["seconds"] <= 0.5),
    ("kde-gp exact", "n=1e+06, K=200", "<= 2x scipy", lambda r: r["ratio"] <= 2.0),
    ("kde-gp exact", "n=1e+06, K=3200", "<= 3x scipy, < 4 GB",
     lambda r: r["ratio"] <= 3.0 and r["peak_memory_mb"] < 4096),
    ("svm exact", "n=20000", "<= 3x sklearn SVC", lambda r: r["ratio"] <= 3.0),
    ("svm nystroem", "n=1000000", "< 8 GB", lambda r: r["peak_memory_mb"] < 8192),
]


def load() -> list[dict]:
    """Rows of both benchmarks' stored results."""
    rows = []
    for name in ("bench_scale_infer.json", "scale_kde_svm.json"):
        path = HERE / "results" / name
        if path.exists():
            rows += json.loads(path.read_text())["rows"]
    return rows


def _match(row, what, size) -> bool:
    return row["what"] == what and (row["size"] == size or str(row["size"]).startswith(f"{size},")
                                    or str(row["size"]) == str(size))


def table(rows: list[dict]) -> str:
    lines = ["| what | size | seconds | baseline | ratio | peak MB | target | met |", "|---|---|---|---|---|---|---|---|"]
    for what, size, text, ok in TARGETS:
        row = next((r for r in rows if _match(r, what, size)), None)
        if row is None:
            lines.append(f"| {what} | {size} | — | — | — | — | {text} | not measured |")
            continue
        base = row.get("baseline") or ("dense eigh" if what.startswith("eigenbasis") else "—")
        ratio = "—" if row.get("ratio") is None else f"{row['ratio']:.3g}"
        mem = "—" if row.get("peak_memory_mb") is None else f"{row['peak_memory_mb']:.0f}"
        lines.append(f"| {what} | {row['size']} | {row['seconds']:.3g} | {base} | {ratio} | {mem} | {text} | "
                     f"{'yes' if ok(row) else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="store_true", help="run both benchmarks first (writes results/)")
    p.add_argument("--quick", action="store_true", help="with --run: the quick sizes")
    a = p.parse_args(argv)
    if a.run:
        for script in ("bench_scale_infer.py", "bench_scale_kde_svm.py"):
            subprocess.run([sys.executable, str(HERE / script), *(["--quick"] if a.quick else [])], check=True)
    print(table(load()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
