"""How fast ``fdp-ppl --help`` and every subcommand's ``--help`` answer (target < 0.5 s each).

Each command runs as a fresh process (the way a user types it), ``--repeats`` times; the median is reported
next to the median of ``python -c pass`` (the interpreter's own start-up) measured in the same run.

    python benchmarks/bench_cli.py [--repeats 7] [--out results/bench_cli.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_results  # noqa: E402

TARGET_S = 0.5
from fdp_ppl.cli import COMMANDS as _NAMES  # noqa: E402  (the package imports nothing heavy)

COMMANDS = ("--help", *(f"{name} --help" for name in _NAMES))


def _median_time(argv, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(quick: bool = False, repeats: int | None = None) -> dict:
    repeats = repeats or (3 if quick else 7)
    base = _median_time([sys.executable, "-c", "pass"], repeats)
    rows = []
    for cmd in COMMANDS:
        t = _median_time([sys.executable, "-m", "fdp_ppl", *cmd.split()], repeats)
        rows.append({"command": f"fdp-ppl {cmd}", "median_s": t, "interpreter_s": base, "ratio": t / base,
                     "met": t < TARGET_S})
        print(f"  fdp-ppl {cmd:<16} {t:6.3f} s   ({t / base:4.1f}x python -c pass)", flush=True)
    worst = max(r["median_s"] for r in rows)
    print(f"slowest: {worst:.3f} s (target < {TARGET_S} s): {'MET' if worst < TARGET_S else 'NOT MET'}")
    return {"rows": rows, "worst_s": worst, "target_s": TARGET_S, "met": bool(worst < TARGET_S)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="3 repeats")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    res = run(a.quick, None if a.quick else a.repeats)
    write_results("bench_cli", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
