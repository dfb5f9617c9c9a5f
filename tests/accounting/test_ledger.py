"""The persistent privacy ledger (``PrivacyLedger.open`` -> ``FileLedger``) in Python and on the command line:
sequential refusal, concurrent processes that never overspend or lose an entry, a process killed after
charging that leaves the budget charged, and ``fdp-ppl ledger FILE``."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.accounting import FileLedger, PrivacyBudget, PrivacyLedger
from fdp_ppl.cli import main
from fdp_ppl.errors import BudgetExceededError, InputError, LedgerError
from tests.helpers import child_env



def _toy_nc(path: Path, n: int = 6, k: int = 8) -> Path:
    rng = np.random.default_rng(0)
    values = np.sin(np.linspace(0, 3, k))[None, :] + 0.1 * rng.standard_normal((n, k))
    # the record dim is named "curve" (a file whose dims do not say which is the record is refused)
    xr.Dataset({"y": (("curve", "s"), values)}, coords={"s": np.linspace(0.0, 1.0, k)}).to_netcdf(path)
    return path


def _release_argv(data: Path, out: Path, ledger: Path, epsilon: str = "0.3", *extra) -> list[str]:
    return ["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", epsilon, "--tau", "3",
            "--out", str(out), "--ledger", str(ledger), *extra]


# ----------------------------------------------------------------------------- Python
def test_sequential_refusal_persists_across_openings(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with pytest.raises(InputError, match="no budget"):
        PrivacyLedger.open(path)  # a new ledger needs a total ...
    assert not path.exists()  # ... and nothing is created without one
    led = PrivacyLedger.open(path, PrivacyBudget(1.0))
    assert isinstance(led, FileLedger)
    for i in range(3):
        led.spend(PrivacyBudget(0.3), f"release {i}", dataset="toy/y", mechanism="iclp")
    with pytest.raises(BudgetExceededError, match="only epsilon=0.1"):
        led.spend(PrivacyBudget(0.3), "one too many")
    again = PrivacyLedger.open(path)  # another process or run sees the same spending
    assert again.spent.epsilon == pytest.approx(0.9) and again.remaining.epsilon == pytest.approx(0.1)
    assert [label for label, _ in again.entries] == ["release 0", "release 1", "release 2"]
    assert again.records()[0]["dataset"] == "toy/y" and again.records()[0]["mechanism"] == "iclp"
    again.spend(PrivacyBudget(0.1), "the rest fits")
    with pytest.raises(InputError, match="fixed for the life of the data"):
        PrivacyLedger.open(path, PrivacyBudget(2.0))


def test_release_refused_by_file_ledger_draws_nothing(tmp_path):
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(10))
    curves = np.random.default_rng(1).standard_normal((5, 10)) * 0.2
    summary = fp.iclp_qr_mean(curves, basis, tau=1.0)
    led = PrivacyLedger.open(tmp_path / "l.sqlite", PrivacyBudget(1.0))
    tree = fp.release(summary, fp.ICLP(0.6), ledger=led, dataset="toy")
    assert tree.attrs["ledger_spent_epsilon"] == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        fp.release(summary, fp.ICLP(0.3), draws=2, ledger=led, dataset="toy")
    assert len(led.entries) == 1 and led.spent.epsilon == pytest.approx(0.6)


def _spend_once(path, barrier, results):
    led = FileLedger(path)
    barrier.wait()
    try:
        led.spend(PrivacyBudget(0.3), f"pid {os.getpid()}")
        results.put(True)
    except BudgetExceededError:
        results.put(False)


def test_concurrent_python_processes_never_overspend(tmp_path):
    path = tmp_path / "ledger.sqlite"
    PrivacyLedger.open(path, PrivacyBudget(1.0))
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_spend_once, args=(path, barrier, results)) for _ in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    accepted = [results.get(timeout=5) for _ in procs]
    assert sum(accepted) == 3
    led = PrivacyLedger.open(path)
    assert len(led.entries) == 3 and led.spent.epsilon == pytest.approx(0.9)


def _spend_many(path, n):
    led = FileLedger(path)
    for i in range(n):
        led.spend(PrivacyBudget(1e-4), f"pid {os.getpid()} #{i}")


def _read_many(path, n, results):
    led, damaged = FileLedger(path), 0
    for _ in range(n):
        try:
            led.events
        except LedgerError:
            damaged += 1
    results.put(damaged)


def test_reads_during_concurrent_charges_see_one_committed_state(tmp_path):
    """Every validation reads budget, meta and entries in one transaction: a charge committed by another run
    between two reads is never taken for an edited ledger (in autocommit, 3 writers and 3 readers saw 'holds 85
    entries but recorded 84' within seconds, and a charging run failed on it)."""
    path = tmp_path / "ledger.sqlite"
    PrivacyLedger.open(path, PrivacyBudget(100.0))
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = ([ctx.Process(target=_spend_many, args=(path, 40)) for _ in range(3)]
             + [ctx.Process(target=_read_many, args=(path, 100, results)) for _ in range(3)])
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert [results.get(timeout=5) for _ in range(3)] == [0, 0, 0]
    assert len(PrivacyLedger.open(path).entries) == 120


# ----------------------------------------------------------------------------- command line
def test_four_concurrent_cli_releases_exactly_three_accepted(tmp_path):
    data = _toy_nc(tmp_path / "toy.nc")
    ledger = tmp_path / "ledger.sqlite"  # new: all four race to create it with the same budget
    procs = [subprocess.Popen([sys.executable, "-m", "fdp_ppl",
                               *_release_argv(data, tmp_path / f"r{i}.nc", ledger, "0.3", "--budget", "1")],
                              cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(rc for rc, _, _ in results)
    assert codes == [0, 0, 0, 2], results
    refused = [err for rc, _, err in results if rc == 2][0]
    assert refused.strip().count("\n") == 0 and refused.startswith("fdp-ppl: error: release needs epsilon=0.3")
    assert "Traceback" not in "".join(err for _, _, err in results)
    assert sum((tmp_path / f"r{i}.nc").is_file() for i in range(4)) == 3  # the refused run wrote nothing
    led = PrivacyLedger.open(ledger)
    assert len(led.records()) == 3 and led.spent.epsilon == pytest.approx(0.9)
    assert all(r["dataset"].startswith("toy/y (") and r["mechanism"] == "iclp" for r in led.records())


KILLED_AFTER_CHARGE = """
import sys, time
from fdp_ppl.accounting import FileLedger
from fdp_ppl.cli import main

_spend = FileLedger.spend

def spend_then_hang(self, *args, **kwargs):  # charged and committed; the process dies before drawing or writing
    entry = _spend(self, *args, **kwargs)
    print("CHARGED", flush=True)
    time.sleep(120)
    return entry

FileLedger.spend = spend_then_hang
sys.exit(main(sys.argv[1:]))
"""


def test_killed_process_leaves_the_budget_charged(tmp_path):
    data = _toy_nc(tmp_path / "toy.nc")
    ledger, out = tmp_path / "ledger.sqlite", tmp_path / "killed.nc"
    script = tmp_path / "killed_release.py"
    script.write_text(textwrap.dedent(KILLED_AFTER_CHARGE))
    proc = subprocess.Popen([sys.executable, str(script), *_release_argv(data, out, ledger, "0.3", "--budget", "1")],
                            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        line = ""
        while "CHARGED" not in line and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
        assert "CHARGED" in line, proc.stderr.read() if proc.poll() is not None else "timed out"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert not out.exists()
    led = PrivacyLedger.open(ledger)
    assert len(led.entries) == 1 and led.spent.epsilon == pytest.approx(0.3)  # never refunded
    # what remains (0.7) does not pay for 0.8
    rc = main(_release_argv(data, tmp_path / "next.nc", ledger, "0.8"))
    assert rc == 2 and not (tmp_path / "next.nc").exists()


def test_ledger_command_prints_total_entries_and_remaining(tmp_path, capsys):
    data = _toy_nc(tmp_path / "toy.nc")
    ledger = tmp_path / "ledger.sqlite"
    assert main(_release_argv(data, tmp_path / "a.nc", ledger, "0.2", "--budget", "1,1e-5", "--draws", "2")) == 0
    table = capsys.readouterr().out
    assert "spent 2 × 0.2 = 0.4" in table
    assert f"{ledger}: charged 2 × epsilon 0.2 = 0.4; spent epsilon 0.4 of 1" in table
    assert main(["release", "--data", str(data), "--mechanism", "gaussian", "--epsilon", "0.1", "--delta", "1e-6",
                 "--tau", "3", "--out", str(tmp_path / "b.nc"), "--ledger", str(ledger)]) == 0
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"fdp-ppl ledger {ledger}"
    assert "total      epsilon 1, delta 1e-05" in out
    assert "spent      epsilon 0.5, delta 1e-06 in 2 releases" in out
    assert "remaining  epsilon 0.5, delta 9e-06" in out
    header = next(line for line in lines if "time (UTC)" in line).split()
    assert header[:2] == ["#", "time"] and {"dataset", "mechanism", "epsilon", "delta", "label"} <= set(header)
    rows = [line.split() for line in lines if line.strip().startswith(("1 ", "2 "))]
    assert len(rows) == 2
    assert rows[0][3].startswith("toy/y") and "iclp" in rows[0] and "0.4" in rows[0]
    assert "gaussian" in rows[1] and "1e-06" in rows[1]
    assert "iclp-qr (2 draws x epsilon 0.2)" in out and "N × its per-draw epsilon" in out
    assert "in words   an attacker telling apart two datasets that differ in one person's record" in out
    png = tmp_path / "privacy.png"
    assert main(["ledger", str(ledger), "--plot", str(png)]) == 0 and png.stat().st_size > 10_000
    assert not list(tmp_path.glob(".privacy.png.*"))  # written to a temporary name and renamed into place
    capsys.readouterr()
    before = ledger.read_bytes()
    assert main(["ledger", str(ledger), "--plot", str(ledger), "--force"]) == 2  # never the ledger itself
    assert "is the ledger" in capsys.readouterr().err and ledger.read_bytes() == before
    assert main(["ledger", str(ledger), "--plot", str(png)]) == 2  # an existing file needs --force


@pytest.mark.parametrize("argv, fix", [
    (["--budget", "1"], "--ledger FILE"),
    (["--ledger", "{tmp}/new.sqlite"], "--budget"),
    (["--ledger", "{tmp}/new.sqlite", "--budget", "0"], "--budget"),
    (["--ledger", "{tmp}/new.sqlite", "--budget", "1,2"], "--budget"),
    (["--ledger", "{tmp}/no/dir.sqlite", "--budget", "1"], "does not exist"),
    (["--ledger", "{tmp}", "--budget", "1"], "directory"),
])
def test_ledger_flag_errors_one_line_exit_2(tmp_path, capsys, argv, fix):
    data = _toy_nc(tmp_path / "toy.nc")
    out = tmp_path / "x.nc"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    rc = main(["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "3",
               "--out", str(out), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and fix in err, err
    assert not out.exists() and not (tmp_path / "new.sqlite").exists()


def test_ledger_command_errors(tmp_path, capsys):
    assert main(["ledger", str(tmp_path / "none.sqlite")]) == 2
    (tmp_path / "junk.sqlite").write_text("not a database")
    assert main(["ledger", str(tmp_path / "junk.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.count("fdp-ppl: error: ") == 2 and "Traceback" not in err
    assert not (tmp_path / "none.sqlite").exists()
