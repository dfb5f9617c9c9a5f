"""The benchmark script runs (quick mode) and writes its table; speed targets live in the benchmark, not here."""

import csv
import subprocess
import sys
from pathlib import Path


def test_benchmark_quick_mode_runs(tmp_path):
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_iclp.py"
    res = subprocess.run([sys.executable, str(script), "--quick", "--out-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = list(csv.DictReader(open(tmp_path / "bench_iclp_quick.csv")))
    assert rows and float(rows[0]["baseline_s"]) > 0


def test_fpca_benchmark_quick_mode_runs(tmp_path):
    import json

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_fpca.py"
    res = subprocess.run([sys.executable, str(script), "--quick", "--no-nuts", "--ks", "1,2", "--baseline-scans", "50",
                          "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = json.loads((tmp_path / "bench_fpca_quick.json").read_text())["rows"]
    assert {r["sampler"] for r in rows} >= {"baseline", "exact", "gibbs-chain", "gibbs-short", "gp-base"}
    assert all(r["ess_per_s"] > 0 for r in rows)
