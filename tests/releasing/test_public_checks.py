"""Every public check before the charge (DESIGN invariants 11 and 12): sizes the machine cannot serve, scales a sampler cannot draw
and budgets no ledger can hold are refused with one line and exit 2, before anything is charged; never a
traceback."""

import time

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.accounting import PrivacyLedger
from fdp_ppl.cli import main
from fdp_ppl.errors import InputError


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "toy.nc"
    xr.Dataset({"y": (("curve", "s"), rng.standard_normal((8, 10)))},
               coords={"s": np.linspace(0, 1, 10)}).to_netcdf(path)
    return path


@pytest.mark.parametrize("mechanism, extra", [("iclp-qr", []), ("frl", []), ("gaussian", ["--delta", "1e-5"]),
                                              ("bernstein", [])])
@pytest.mark.parametrize("bad", [["--tau", "1e308"], ["--draws", "1000000000000"]])
def test_refused_before_the_charge_with_one_line(tmp_path, data, capsys, mechanism, extra, bad):
    led = tmp_path / "led.sqlite"
    argv = ["release", "--data", str(data), "--mechanism", mechanism, "--epsilon", "1e-12", *extra,
            "--out", str(tmp_path / "r.nc"), "--ledger", str(led), "--budget", "1,1e-4"]
    if "--tau" not in bad:
        argv += ["--tau", "1"]
    assert main([*argv, *bad]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and err.startswith("fdp-ppl: error:")
    # refused before the ledger is charged (a count of draws above 1e9: before it is even created)
    assert (not led.exists() or PrivacyLedger.open(led).spent.epsilon == 0) and not (tmp_path / "r.nc").exists()


def test_a_budget_no_ledger_can_hold_is_refused_without_a_traceback(tmp_path, data, capsys):
    led = tmp_path / "led.sqlite"
    assert main(["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "1",
                 "--draws", "1000000000000", "--out", str(tmp_path / "r.nc"), "--ledger", str(led),
                 "--budget", "3,1e-5"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_grid_too_large_for_a_dense_eigenbasis_is_refused_at_once():
    start = time.perf_counter()
    with pytest.raises(InputError, match="dense eigendecomposition.*Kronecker"):
        fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(1_000_000))
    assert time.perf_counter() - start < 30  # refused from the size (trying would take hours); loose for loaded machines


def test_library_release_checks_scales_and_sizes(data):
    curves = xr.open_dataarray(data)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.uniform(10))
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(10.0))
    with pytest.raises(InputError, match="finite"):
        fp.release(fp.ICLPQRSpec(basis=basis, tau=1e308, n=8).fit(curves.values), fp.ICLP(1.0), ledger=ledger)
    with pytest.raises(InputError, match="memory"):
        fp.release(fp.ICLPQRSpec(basis=basis, tau=1.0, n=8).fit(curves.values), fp.ICLP(1e-12), draws=10**9,
                   ledger=ledger)
    with pytest.raises(InputError, match="draws must be a whole number in 1..1e9"):
        fp.release(fp.ICLPQRSpec(basis=basis, tau=1.0, n=8).fit(curves.values), fp.ICLP(1e-12), draws=10**12,
                   ledger=ledger)
    assert ledger.spent.epsilon == 0


def test_a_kernel_machine_too_large_for_memory_is_refused_before_the_charge(tmp_path, capsys, monkeypatch):
    from fdp_ppl import settings

    monkeypatch.setattr(settings, "available_memory", lambda: 10 * 2**20)  # a 10 MiB machine: n = 400 needs 3.7 MiB...
    rng = np.random.default_rng(0)
    n = 800  # ... and n = 800 about 15 MiB
    x = rng.uniform(0, 1, n)
    path = tmp_path / "t.csv"
    path.write_text("a,label\n" + "\n".join(f"{v},{1 if v > 0.5 else -1}" for v in x))
    led = tmp_path / "led.sqlite"
    assert main(["svm", "--data", str(path), "--features", "a", "--label", "label", "--lam", "0.1", "--bandwidth",
                 "0.3", "--mechanism", "iclp", "--epsilon", "1", "--grid-size", "10", "--out", str(tmp_path / "r.nc"),
                 "--ledger", str(led), "--budget", "3"]) == 2
    err = capsys.readouterr().err
    assert "n x n Gram" in err and len(err.strip().splitlines()) == 1
    assert PrivacyLedger.open(led).spent.epsilon == 0
