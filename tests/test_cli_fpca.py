"""``fdp-ppl fpca``: ε-DP principal components from the command line (files, attrs, ledger, one-line errors)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fpca(tmp_path, *extra, name="fpca"):
    out = tmp_path / f"{name}.nc"
    return main(["fpca", *extra, "--out", str(out)]), out


def test_growth_gp_base_exact_release(tmp_path, capsys):
    png = tmp_path / "fpca.png"
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "1", "--m", "5", "--basis", "gaussian", "--rho", "0.1",
                    "--epsilon", "0.5", "--tau", "200", "--draws", "3", "--plot", str(png))
    std = capsys.readouterr()
    assert rc == 0, std.err
    tree = xr.open_datatree(out)
    post = tree["posterior"]
    assert post["components"].dims == ("chain", "draw", "component", "t")
    assert post["frame"].dims == ("chain", "draw", "basis", "component")
    assert post["components"].shape == (1, 3, 1, 31)
    assert np.allclose(post["t"].values[[0, -1]], [1.0, 18.0])  # ages in years, the original grid
    F = post["frame"].values[0]
    assert np.allclose(np.einsum("dbk,dbl->dkl", F, F), np.eye(1), atol=1e-10)
    B = tree["constant_data"]["basis_functions"].values
    w = tree["constant_data"]["quadrature_weights"].values
    assert np.allclose(B.T @ (w[:, None] * B), np.eye(5), atol=1e-8)
    # components are the basis functions times the frame
    assert np.allclose(post["components"].values[0, 0], (B @ F[0]).T, atol=1e-12)
    a = tree.attrs
    assert (a["epsilon"], a["tau"], a["n"], a["m"], a["k"]) == (0.5, 200.0, 93, 5, 1)
    assert a["form"] == "gp-base" and a["sampler"] == "rejection-from-gp-base" and a["exact"] == 1
    assert a["budget_spent_epsilon"] == pytest.approx(1.5) and a["draws"] == 3
    assert "eigenvalues" in a["sigma_rule"] and a["basis"].startswith("eigenbasis") and a["noise_seeded"] == 0
    assert "gram" not in str(list(tree["constant_data"].data_vars)) and "acceptance" not in a
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert 0 < a["delta_guaranteed"] <= 1e-10 and a["budget_spent_delta"] == pytest.approx(3 * a["delta_guaranteed"])
    assert a["certified"] == 1 and a["proposal_budget"] > 1
    assert "spent 3 × (0.5, 1e-10) = (1.5, 3e-10)" in std.out and str(out) in std.out
    assert "curves had L2 norm above tau" in std.err and "curves had" not in std.out  # data holder line: stderr only


def test_fourier_bingham_exact_k1_and_seed(tmp_path, capsys):
    args = ("--data", "dti", "--var", "cca", "--missing", "impute", "--k", "1", "--m", "6", "--form", "bingham",
            "--epsilon", "1", "--tau", "1", "--seed", "5")
    rc, out = _fpca(tmp_path, *args, name="a")
    rc2, out2 = _fpca(tmp_path, *args, name="b")
    assert rc == rc2 == 0
    a, b = xr.open_datatree(out), xr.open_datatree(out2)
    assert a.attrs["noise_seeded"] == 1 and "SEEDED" in capsys.readouterr().out
    assert np.array_equal(a["posterior"]["frame"].values, b["posterior"]["frame"].values)
    assert a.attrs["sampler"] == "exact" and a.attrs["exact"] == 1 and "i^-3" in a.attrs["sigma_rule"]
    assert a.attrs["n"] == 382


def test_gibbs_release_is_marked_not_exact(tmp_path, capsys):
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "2", "--m", "5", "--form", "bingham", "--sampler", "gibbs",
                    "--iterations", "20", "--epsilon", "1", "--tau", "200")
    assert rc == 0
    a = xr.open_datatree(out).attrs
    assert a["exact"] == 0 and a["sampler"] == "gibbs" and a["iterations"] == 20
    assert a["certified"] == 0 and a["private"] == 0 and np.isnan(a["delta_guaranteed"])
    assert "uncertified" in a["mechanism"] and "uncertified MCMC" in a["guarantee"]
    std = capsys.readouterr().out
    assert "NO: uncertified MCMC" in std and "UNCERTIFIED MCMC: delta not bounded" in std


@pytest.mark.parametrize("sampler, iterations, floor", [("gibbs", "19", "20"), ("nuts", "99", "100")])
def test_iterations_below_the_public_floor_refused(tmp_path, capsys, sampler, iterations, floor):
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "2", "--m", "4", "--form", "bingham", "--sampler", sampler,
                    "--iterations", iterations, "--epsilon", "1", "--tau", "200")
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file() and err.count("\n") == 1 and f"floor of {floor}" in err


def test_unservable_gp_base_budget_refused_before_the_charge(tmp_path, capsys):
    """The former default (growth, k = 2, gp-base exact) needs ~1e11 proposals per frame for delta <= 1e-10:
    refused with a one-line error naming the fix, and the ledger is not charged."""
    ledger = tmp_path / "ledger.sqlite"
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "2", "--m", "5", "--basis", "gaussian", "--rho", "0.1",
                    "--epsilon", "0.5", "--tau", "200", "--ledger", str(ledger), "--budget", "5,1e-6")
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file() and err.count("\n") == 1 and "form='bingham'" in err
    from fdp_ppl.accounting import PrivacyLedger

    assert PrivacyLedger.open(ledger).spent.epsilon == 0


def test_ledger_refuses_overspending_and_writes_nothing(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    common = ("--data", "growth", "--k", "1", "--m", "4", "--epsilon", "0.6", "--tau", "200", "--ledger", str(ledger))
    rc, out = _fpca(tmp_path, *common, "--budget", "1,1e-6", name="one")  # exact releases charge (eps', delta')
    assert rc == 0 and out.is_file()
    capsys.readouterr()
    rc, out = _fpca(tmp_path, *common, name="two")
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file()
    assert err.count("\n") == 1 and "Traceback" not in err and "budget" in err


@pytest.mark.parametrize("extra, message", [
    (("--k", "3", "--m", "2", "--epsilon", "1", "--tau", "1"), "cannot exceed"),
    (("--k", "1", "--m", "40", "--epsilon", "1", "--tau", "1"), "grid points"),
    (("--k", "1", "--m", "4", "--epsilon", "0", "--tau", "1"), "--epsilon"),
    (("--k", "1", "--m", "4", "--epsilon", "nan", "--tau", "1"), "--epsilon"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "-1"), "--tau"),
    (("--k", "2", "--m", "4", "--epsilon", "1", "--tau", "1", "--form", "bingham"), "no exact sampler"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1", "--sampler", "gibbs"), "Bingham"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1", "--basis", "spline"), "unknown --basis"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1", "--rho", "0.2"), "--rho"),
])
def test_bad_input_one_line(tmp_path, capsys, extra, message):
    rc, out = _fpca(tmp_path, "--data", "growth", *extra)
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file()
    assert err.count("\n") == 1 and err.startswith("fdp-ppl: error:") and message.lower() in err.lower(), err


def test_nan_curves_refused(tmp_path, capsys):
    rc, _ = _fpca(tmp_path, "--data", "dti", "--var", "cca", "--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1")
    err = capsys.readouterr().err
    assert rc == 2 and "--missing impute" in err and err.count("\n") == 1


def test_help_lists_fpca():
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "fpca", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--sampler" in res.stdout and "gp-base" in res.stdout
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "--help"], capture_output=True, text=True)
    assert "fpca" in res.stdout
