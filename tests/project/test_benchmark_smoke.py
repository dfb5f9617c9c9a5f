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


def test_timing_benchmark_quick_mode_runs_and_its_bound_detects_a_shift(tmp_path):
    """bench_timing runs and writes both pairs; its held-out bound is near 0 for one distribution and large for
    two well-separated ones (so a pass on the real pairs is not vacuous; DESIGN invariant 9)."""
    import importlib.util
    import json

    import numpy as np

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_timing.py"
    res = subprocess.run([sys.executable, str(script), "--runs", "6", "--noise-draws", "20",
                          "--out", str(tmp_path / "t.json")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads((tmp_path / "t.json").read_text())
    assert out["svm"]["runs_per_side"] == [6, 6] and len(out["noise"]) == 4
    sys.path.insert(0, str(script.parent))
    try:
        spec = importlib.util.spec_from_file_location("bench_timing", script)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(script.parent))
    rng = np.random.default_rng(0)
    same = mod.timing_epsilon(rng.exponential(1.0, 600), rng.exponential(1.0, 600), 0.0)
    apart = mod.timing_epsilon(rng.normal(1.0, 0.1, 600), rng.normal(2.0, 0.1, 600), 0.0)
    assert same["epsilon_lb"] < 0.5 and apart["epsilon_lb"] > 3.0


def test_peers_benchmark_quick_mode_runs(tmp_path):
    """bench_peers runs (with or without KDEpy, the bench extra) and writes its rows, growth and target lines."""
    import json

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_peers.py"
    res = subprocess.run([sys.executable, str(script), "--quick", "--sizes", "1000,3000,10000,30000",
                          "--out", str(tmp_path / "p.json")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads((tmp_path / "p.json").read_text())
    assert len(out["rows"]) == 4 and all(r["gp_s"] > 0 and r["floor_s"] > 0 for r in out["rows"])
    assert out["growth"][0]["gp_exponent"] is not None and out["targets"]


def test_peers_table_is_one_printer_and_rewrites_only_the_readme_block(tmp_path):
    """Every peers benchmark prints through one table (benchmarks/_common.peer_table): the target applies or not,
    met follows the direction (seconds: lower; ESS/s: higher), growth exponents are fitted over a group's sizes;
    bench_peers_all --readme replaces only the marked block (and refuses a README without one)."""
    import importlib.util

    import pytest

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("bench_peers_all", bench / "bench_peers_all.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        from _common import growth_exponents, peer_row, peer_table
    finally:
        sys.path.remove(str(bench))
    rows = [peer_row("mean", f"n={n}", 2e-6 * n, "fused", 1e-6 * n, bound=1.3, n=n, group="g") for n in (10, 100, 1000)]
    rows.append(peer_row("infer", "m=100", 30.0, "nutpie", 2.0, op=">=", bound=10.0, unit="ESS/s"))
    rows.append(peer_row("svm", "n=10", 1.0, "LinearSVC", 1.0, bound=2.0, applies=False))
    growth_exponents(rows)
    assert [r["met"] for r in rows] == [False, False, False, True, None]
    assert rows[0]["growth_ours"] == pytest.approx(1.0) and rows[0]["growth_peer"] == pytest.approx(1.0)
    table = peer_table(rows).splitlines()
    assert len(table) == 2 + len(rows) and "| 30 ESS/s |" in table[5] and table[6].endswith("| — | — |")
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{mod.START}\nold table\n{mod.END}\nafter\n")
    mod.write_readme(f"{mod.START}\nnew table\n{mod.END}", readme)
    assert readme.read_text() == f"before\n{mod.START}\nnew table\n{mod.END}\nafter\n"
    readme.write_text("no block\n")
    with pytest.raises(SystemExit):
        mod.write_readme("x", readme)
