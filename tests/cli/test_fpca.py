"""``fdp-ppl fpca``: ε-DP principal components from the command line (files, attrs, ledger, one-line errors)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _errors(err: str) -> int:
    """Lines of stderr besides the public record-level warning (growth and dti have an id coordinate)."""
    return sum(1 for line in err.splitlines() if "looks like a person's identifier" not in line)


def _fpca(tmp_path, *extra, name="fpca"):
    out = tmp_path / f"{name}.nc"
    return main(["fpca", *extra, "--out", str(out)]), out


def test_growth_default_exact_release_is_pure_and_fits_a_pure_ledger(tmp_path, capsys):
    """The default (bingham, exact) at k = 1: pure epsilon''-DP, charged (draws x epsilon'', 0) to a pure ledger.
    Old code: default gp-base charged delta' > 0, which a --budget 3 ledger refused."""
    png = tmp_path / "fpca.png"
    ledger = tmp_path / "ledger.sqlite"
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "1", "--m", "5", "--basis", "gaussian", "--rho", "0.1",
                    "--epsilon", "0.5", "--tau", "200", "--draws", "3", "--plot", str(png), "--ledger", str(ledger),
                    "--budget", "3")
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
    assert a["form"] == "bingham" and a["sampler"] == "exact" and a["exact"] == 1
    assert a["budget_spent_epsilon"] == pytest.approx(1.5) and a["draws"] == 3
    assert "eigenvalues" in a["sigma_rule"] and a["basis"].startswith("eigenbasis") and a["noise_seeded"] == 0
    assert "gram" not in str(list(tree["constant_data"].data_vars)) and "acceptance" not in a
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert a["pure"] == 1 and a["delta_guaranteed"] == 0 and a["budget_spent_delta"] == 0
    assert 0.5 < a["epsilon_guaranteed"] <= 0.5 + 1e-9 and a["budget_spent_epsilon"] == 3 * a["epsilon_guaranteed"]
    assert a["certified"] == 1 and a["proposal_budget"] > 1
    assert "guaranteed pure 0.5" in std.out and str(out) in std.out
    assert "curves had" not in std.out + std.err  # the clipped count is the data holder's: never printed
    from fdp_ppl.accounting import PrivacyLedger

    spent = PrivacyLedger.open(ledger).spent
    assert spent.delta == 0 and spent.epsilon == pytest.approx(3 * a["epsilon_guaranteed"], rel=1e-12)


def test_early_ledger_check_gets_the_cost_that_is_charged(tmp_path, capsys, monkeypatch):
    """Old code: open_ledger was checked against (draws x epsilon, 0) while (draws x epsilon', draws x delta') was
    charged."""
    import fdp_ppl.cli.common as common

    seen = []
    real = common.open_ledger

    def spy(a, cost):
        seen.append(cost)
        return real(a, cost)

    monkeypatch.setattr(common, "open_ledger", spy)
    ledger = tmp_path / "ledger.sqlite"
    for name, extra in (("pure", ()), ("approx", ("--delta", "1e-10"))):
        rc, out = _fpca(tmp_path, "--data", "growth", "--k", "1", "--m", "4", "--epsilon", "0.5", "--tau", "200",
                        "--draws", "2", "--ledger", str(ledger), "--budget", "5,1e-6", *extra, name=name)
        assert rc == 0, capsys.readouterr().err
        a = xr.open_datatree(out).attrs
        assert (seen[-1].epsilon, seen[-1].delta) == (a["budget_spent_epsilon"], a["budget_spent_delta"])
    assert seen[0].delta == 0 and 0 < seen[1].delta <= 2e-10 and seen[1].epsilon > 1.0


def test_gp_base_pure_and_delta_variants(tmp_path, capsys):
    """gp-base k = 1 at n x epsilon = 46.5 (growth, epsilon 1): the pure plan needs 2.7e7 proposals, within the default
    cap (its dry run says so; the draw itself takes ~9 s and is left to the slow run); at epsilon 1.3 it needs 5.4e7
    and is refused with a one-line error naming --delta; --delta 1e-10 serves (epsilon', delta') at epsilon 1 with
    9.0e6 (the frame lattice's delta planned inside it)."""
    common = ("--data", "growth", "--k", "1", "--m", "5", "--basis", "gaussian", "--rho", "0.1", "--epsilon", "1",
              "--tau", "200", "--form", "gp-base")
    rc, out = _fpca(tmp_path, *common, "--n", "93", "--grid", "31", "--dry-run", name="pure")
    std = capsys.readouterr()
    assert rc == 0 and not out.is_file(), std.err
    assert "pure 1.00000000004-DP per frame" in std.out and "T = 27029898 proposals per draw" in std.out
    at13 = list(common)
    at13[at13.index("--epsilon") + 1] = "1.3"
    rc, out = _fpca(tmp_path, *at13, name="pure13")
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file() and _errors(err) == 1 and "--delta 1e-10" in err and "needs 5.43e+07 proposals" in err
    rc, out = _fpca(tmp_path, *common, "--delta", "1e-10", name="approx")
    std = capsys.readouterr()
    assert rc == 0, std.err
    a = xr.open_datatree(out).attrs
    assert a["pure"] == 0 and 0 < a["delta_guaranteed"] <= 1e-10 and a["sampler"] == "rejection-from-gp-base"
    # the frame lattice 2^-5 Z holds the default delta: floating-point safe, its delta inside the 1e-10
    assert "guaranteed (1.00000000007, 1e-10)" in std.out and a["fp_safe"] == 1 and a["frame_lattice_bits"] == 5
    assert "lattice 2^-5 Z: floating-point safe" in std.out


def test_fourier_bingham_exact_k1_and_seed(tmp_path, capsys):
    args = ("--data", "dti", "--var", "cca", "--missing", "impute", "--k", "1", "--m", "6", "--form", "bingham",
            "--epsilon", "1", "--tau", "1", "--seed", "5", "--study")
    rc, out = _fpca(tmp_path, *args, name="a")
    rc2, out2 = _fpca(tmp_path, *args, name="b")
    assert rc == rc2 == 0
    a, b = xr.open_datatree(out), xr.open_datatree(out2)
    std = capsys.readouterr()
    from fdp_ppl.cli.common import SEEDED_TEXT

    assert a.attrs["noise_seeded"] == 1 and SEEDED_TEXT in std.out
    assert "seed 5" not in std.out + std.err and "--seed" not in std.out + std.err  # the seed is never printed
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
    """The former default (growth, k = 2, gp-base exact) needs ~1e11 proposals per frame for delta <= 1e-10 and more
    for pure: refused with a one-line error naming the fix, and the ledger is not charged."""
    ledger = tmp_path / "ledger.sqlite"
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "2", "--m", "5", "--basis", "gaussian", "--rho", "0.1",
                    "--epsilon", "0.5", "--tau", "200", "--form", "gp-base", "--ledger", str(ledger), "--budget",
                    "5,1e-6")
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file() and _errors(err) == 1 and "--form bingham --k 1" in err
    assert "neither" in err
    assert not ledger.exists()  # refused before the ledger is even opened (every public check comes first)


def test_ledger_refuses_overspending_and_writes_nothing(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    common = ("--data", "growth", "--k", "1", "--m", "4", "--epsilon", "0.6", "--tau", "200", "--ledger", str(ledger))
    rc, out = _fpca(tmp_path, *common, "--budget", "1", name="one")  # exact releases charge (eps'', 0): pure ledger
    assert rc == 0 and out.is_file()
    capsys.readouterr()
    rc, out = _fpca(tmp_path, *common, name="two")
    err = capsys.readouterr().err
    assert rc == 2 and not out.is_file()
    assert _errors(err) == 1 and "Traceback" not in err and "budget" in err


@pytest.mark.parametrize("extra, message", [
    (("--k", "3", "--m", "2", "--epsilon", "1", "--tau", "1"), "cannot exceed"),
    (("--k", "1", "--m", "40", "--epsilon", "1", "--tau", "1"), "grid points"),
    (("--k", "1", "--m", "4", "--epsilon", "0", "--tau", "1"), "--epsilon"),
    (("--k", "1", "--m", "4", "--epsilon", "nan", "--tau", "1"), "--epsilon"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "-1"), "--tau"),
    (("--k", "2", "--m", "4", "--epsilon", "1", "--tau", "1", "--form", "bingham"), "no exact sampler"),
    (("--k", "2", "--m", "4", "--epsilon", "1", "--tau", "1"), "uncertified MCMC"),  # the default form and sampler
    (("--k", "2", "--m", "4", "--epsilon", "1", "--tau", "1"), "--k 1"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1", "--form", "gp-base", "--sampler", "gibbs"), "Bingham"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1", "--delta", "0"), "--delta"),
    (("--k", "1", "--m", "4", "--epsilon", "1", "--tau", "1", "--delta", "1e-10", "--sampler", "nuts"), "--delta"),
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
    assert rc == 2 and "--missing impute" in err and _errors(err) == 1
    assert "refused after the charge" in err  # whether a value is missing depends on the data


def test_help_lists_fpca():
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "fpca", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--sampler" in res.stdout and "gp-base" in res.stdout
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "--help"], capture_output=True, text=True)
    assert "fpca" in res.stdout


@pytest.mark.slow
def test_gp_base_pure_release_of_the_growth_data_is_served(tmp_path):
    """The paper's Theorem 4.1 form on the shipped growth data at epsilon 1 without --delta (2.66e7 proposals, ~9 s
    CPU on one core): pure, exact, charged (epsilon'', 0)."""
    rc, out = _fpca(tmp_path, "--data", "growth", "--k", "1", "--m", "5", "--basis", "gaussian", "--rho", "0.1",
                    "--epsilon", "1", "--tau", "200", "--form", "gp-base", name="growth")
    assert rc == 0
    a = xr.open_datatree(out).attrs
    assert a["pure"] == 1 and a["delta_guaranteed"] == 0 and a["proposal_budget"] == 26624013
    assert 1.0 < a["epsilon_guaranteed"] < 1.0 + 1e-9 and a["sampler"] == "rejection-from-gp-base"
