"""Fault injection (DESIGN invariant 11, faults lose nothing and buy nothing): SIGKILL at random moments of releases that share a ledger. After every kill the
ledger validates (schema, numbers, hash chain), never overspends, and the target either does not exist or opens
as a complete release; the previous file survives. A few kills run by default, the long loop is marked slow."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.accounting import FileLedger, PrivacyBudget, PrivacyLedger
from tests.helpers import child_env



def _data(path: Path) -> Path:
    rng = np.random.default_rng(0)
    xr.Dataset({"y": (("curve", "s"), rng.standard_normal((8, 40)))},
               coords={"s": np.linspace(0, 1, 40)}).to_netcdf(path)
    return path


def _argv(data, out, ledger, draws):
    # unseeded (a seed needs --study, and a study is charged to no ledger): OpenDP's sampler, about 2,000 draws
    # a second under load
    return [sys.executable, "-m", "fdp_ppl", "release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon",
            "0.001", "--tau", "3", "--draws", str(draws), "--out", str(out), "--force", "--ledger", str(ledger)]


def _check_target(out: Path, previous: bytes | None) -> str:
    if not out.exists():
        return "absent"
    data = out.read_bytes()
    if previous is not None and data == previous:
        return "previous"
    tree = xr.open_datatree(out)  # a file at the target always opens: it was renamed into place complete
    assert tree["posterior"]["coefficients"].sizes["draw"] >= 1
    return "new"


def _kill_loop(tmp_path, kills: int, rng) -> dict:
    data = _data(tmp_path / "toy.nc")
    ledger = tmp_path / "led.sqlite"
    PrivacyLedger.open(ledger, PrivacyBudget(1000.0))
    out = tmp_path / "r.nc"
    outcomes = {"absent": 0, "previous": 0, "new": 0}
    # how long one run takes, to spread the kills over loading, charging, drawing and writing
    start = time.monotonic()
    subprocess.run(_argv(data, out, ledger, 1500), env=child_env(), capture_output=True, timeout=600, check=True)
    duration = time.monotonic() - start
    for _ in range(kills):
        previous = out.read_bytes() if out.exists() else None
        proc = subprocess.Popen(_argv(data, out, ledger, 1500), env=child_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(float(rng.uniform(0.2, 1.0)) * duration)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        outcomes[_check_target(out, previous)] += 1
        info = FileLedger(ledger).verify()  # validates the whole file and its chain
        assert info["entries"] >= 1
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())  # temporaries keep the real suffix
    return outcomes


def test_a_few_kills_leave_a_valid_ledger_and_no_broken_file(tmp_path):
    outcomes = _kill_loop(tmp_path, 3, np.random.default_rng(1))
    assert sum(outcomes.values()) == 3


@pytest.mark.slow
def test_many_kills_leave_a_valid_ledger_and_no_broken_file(tmp_path):
    outcomes = _kill_loop(tmp_path, 40, np.random.default_rng(2))
    assert sum(outcomes.values()) == 40


def test_concurrent_releases_killed_at_random_never_overspend(tmp_path):
    """8 concurrent releases on a budget that allows 3, two of them killed at random: at most 3 are charged and
    the ledger validates."""
    data = _data(tmp_path / "toy.nc")
    ledger = tmp_path / "led.sqlite"
    PrivacyLedger.open(ledger, PrivacyBudget(0.003))
    rng = np.random.default_rng(3)
    procs = [subprocess.Popen(_argv(data, tmp_path / f"r{i}.nc", ledger, 1), env=child_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for i in range(8)]
    for victim in rng.choice(8, 2, replace=False):
        time.sleep(float(rng.uniform(0.5, 3.0)))
        procs[victim].send_signal(signal.SIGKILL)
    codes = [p.wait(timeout=300) for p in procs]
    led = FileLedger(ledger)
    led.verify()
    assert len(led.entries) <= 3 and led.spent.epsilon <= 0.003 * (1 + 1e-9)
    written = [i for i in range(8) if (tmp_path / f"r{i}.nc").exists()]
    assert len(written) <= len(led.entries)
    for i in written:
        xr.open_datatree(tmp_path / f"r{i}.nc")
    assert sum(c == 0 for c in codes) == len(written)
