"""The ``fdp-ppl`` command line: happy paths, output files, and one-line errors with exit code 2."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.datasets import data_directory
from fdp_ppl.cli import main
from fdp_ppl.datasets.references import CDC2000_MEDIAN_HEIGHT_CM, GROWTH_DEVIATION_TAU, growth_reference

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = data_directory()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.skipif(not (DATA_DIR / "dti.nc").is_file(), reason=f"data files not found in {DATA_DIR}")


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch):
    monkeypatch.setenv("FDP_PPL_DATA_DIR", str(DATA_DIR))


def _release(tmp_path, *extra, plot=False, name="release"):
    out = tmp_path / f"{name}.nc"
    argv = ["release", *extra, "--out", str(out), "--seed", "7", "--study"]
    if plot:
        argv += ["--plot", str(tmp_path / f"{name}.png")]
    return main(argv), out


# ----------------------------------------------------------------------------- happy paths
def test_release_dti_iclp_qr_roundtrip_plot_and_table(tmp_path, capsys):
    # DESIGN invariant 8: --drop-incomplete made n data-dependent and is gone; missing points are imputed by a public rule
    rc, out = _release(tmp_path, "--data", "dti", "--var", "cca", "--missing", "impute", "--mechanism", "iclp-qr",
                       "--epsilon", "1", "--tau", "1", "--kernel", "matern32", "--rho", "0.1", plot=True)
    assert rc == 0
    std = capsys.readouterr()
    tree = xr.open_datatree(out)
    at = tree.attrs
    assert at["mechanism"] == "iclp" and at["summary"] == "iclp-qr" and at["noise_law"] == "laplace"
    assert at["epsilon"] == 1.0 and at["budget_spent_epsilon"] == 1.0 and at["delta"] == 0.0
    assert at["n"] == 382 and at["tau"] == 1.0 and at["sensitivity_norm"] == "1,C"
    assert at["kernel"] == "matern32" and at["kernel_rho"] == 0.1
    # data-holder-only information never reaches the file
    assert not any("clipped" in k for k in at)
    assert "n_dropped" not in at and not any("imputed" in k for k in at)
    post = tree["posterior"]
    assert post["curve"].shape == (1, 1, 93) and np.all(np.isfinite(post["curve"].values))
    with xr.open_dataset(DATA_DIR / "dti.nc") as ds:
        np.testing.assert_allclose(post["t"].values, ds["cca_location"].values)  # t: original grid (schema 3)
    assert set(tree["constant_data"].data_vars) >= {"eigenvalues", "eigenfunctions", "noise_scale"}
    assert (tmp_path / "release.png").read_bytes()[:8] == PNG_MAGIC
    # the printed table
    for key in ("mechanism", "epsilon", "delta", "sensitivity", "tau", "J components", "noise E‖ξ‖²", str(out)):
        assert key in std.out
    # DESIGN invariant 9: the data holder's counts (clipped, imputed) are never printed (only --holder-report has them)
    assert "of 382" not in std.out + std.err and "data holder only" not in std.out + std.err


@pytest.mark.parametrize("mechanism, extra, family, summary", [
    ("iclp-ar", [], "iclp", "iclp-ar"),
    ("frl", ["--M", "5"], "frl", "frl"),
    ("gaussian", ["--delta", "1e-5"], "gaussian", "iclp-qr"),
    ("rkhs-gaussian", ["--delta", "1e-6", "--calibration", "analytic"], "gaussian", "rkhs"),
])
def test_release_electricity_each_mechanism(tmp_path, capsys, mechanism, extra, family, summary):
    rc, out = _release(tmp_path, "--data", "electricity", "--var", "demand", "--mechanism", mechanism,
                       "--epsilon", "0.5", "--tau", "4000", *extra)
    assert rc == 0, capsys.readouterr().err
    tree = xr.open_datatree(out)
    at = tree.attrs
    assert at["mechanism"] == family and at["summary"] == summary
    assert at["epsilon"] == 0.5 and at["budget_spent_epsilon"] == 0.5 and at["n"] == 508
    assert tree["posterior"]["curve"].sizes["t"] == 48
    if family == "gaussian":
        assert at["noise_law"] == "normal" and at["sensitivity_norm"] == "cameron-martin"
        assert at["delta"] == float(extra[1])
    if mechanism == "frl":
        assert at["M"] == 5 and tree["posterior"].sizes["basis"] == 5
    if mechanism == "rkhs-gaussian":
        assert at["eta"] == 1.0 and at["calibration"] == "analytic"
    assert "MW" in capsys.readouterr().out


def test_draws_spend_draws_times_epsilon_and_plot(tmp_path):
    rc, out = _release(tmp_path, "--data", "electricity", "--mechanism", "gaussian", "--epsilon", "0.4",
                       "--delta", "1e-5", "--tau", "4000", "--draws", "3", plot=True)
    assert rc == 0
    tree = xr.open_datatree(out)
    assert tree.attrs["draws"] == 3
    assert tree.attrs["budget_spent_epsilon"] == pytest.approx(3 * 0.4)
    assert tree.attrs["budget_spent_delta"] == pytest.approx(3e-5)
    assert tree["posterior"].sizes["draw"] == 3
    curves = tree["posterior"]["curve"].values[0]
    assert not np.allclose(curves[0], curves[1])
    assert (tmp_path / "release.png").read_bytes()[:8] == PNG_MAGIC


def test_same_seed_same_release_and_summary_not_in_file(tmp_path):
    import fdp_ppl as fp
    from fdp_ppl.datasets import load_dataset

    args = ("--data", "electricity", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "4000")
    rc1, out1 = _release(tmp_path, *args, name="a")
    rc2, out2 = _release(tmp_path, *args, name="b")
    assert rc1 == rc2 == 0
    c1 = xr.open_datatree(out1)["posterior"]["coefficients"].values
    c2 = xr.open_datatree(out2)["posterior"]["coefficients"].values
    np.testing.assert_array_equal(c1, c2)
    # the non-private summary is nowhere in the file (DESIGN invariant 6)
    curves = load_dataset("electricity")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summ = fp.iclp_qr_mean(curves, basis, tau=4000.0)
    tree = xr.open_datatree(out1)
    for node in tree.subtree:
        for v in node.dataset.data_vars.values():
            flat = np.asarray(v.values, dtype=float).ravel()
            for target in (summ.coefficients, summ.curve().values):
                if flat.size >= target.size:
                    assert not np.allclose(flat[: target.size], target)
    # the noise is there: the release differs from the summary by a sizeable amount
    assert np.linalg.norm(c1[0, 0] - summ.coefficients) > 1.0


def test_release_from_nc_path_with_dims(tmp_path):
    rc, out = _release(tmp_path, "--data", str(DATA_DIR / "electricity_monday.nc"), "--var", "demand",
                       "--curve-dim", "day", "--t-dim", "halfhour", "--mechanism", "iclp-qr", "--epsilon", "1",
                       "--tau", "4000")
    assert rc == 0
    assert xr.open_datatree(out).attrs["n"] == 508


def test_paper_bound_gives_larger_noise(tmp_path):
    base = ("--data", "dti", "--missing", "impute", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "1")
    _, tight = _release(tmp_path, *base, name="tight")
    _, paper = _release(tmp_path, *base, "--bound", "paper", name="paper")
    st, sp = xr.open_datatree(tight).attrs["sensitivity"], xr.open_datatree(paper).attrs["sensitivity"]
    assert sp > 2 * st
    assert xr.open_datatree(paper).attrs["sensitivity_bound"] == "paper"


# ----------------------------------------------------------------------------- demo
def test_demo_in_process(tmp_path, capsys):
    out, png = tmp_path / "demo.nc", tmp_path / "demo.png"
    # a test seeds explicitly (the demo itself draws fresh entropy): the check below is statistical
    assert main(["demo", "--out", str(out), "--plot", str(png), "--seed", "1", "--study"]) == 0
    std = capsys.readouterr()
    text = std.out
    tree = xr.open_datatree(out)
    at = tree.attrs
    assert at["mechanism"] == "iclp" and at["summary"] == "iclp-qr" and at["epsilon"] == 1.0
    assert at["tau"] == GROWTH_DEVIATION_TAU and at["n"] == 93 and at["kernel"] == "matern32"
    assert "CDC 2000" in at["public_offset"]
    ages = tree["posterior"]["t"].values
    ref = tree["constant_data"]["public_offset"].values
    np.testing.assert_allclose(ref, growth_reference(ages))
    # the released curve is the public reference plus the released deviation
    post = tree["posterior"]
    phi = tree["constant_data"]["eigenfunctions"].values
    np.testing.assert_allclose(post["curve"].values[0, 0], ref + phi @ post["coefficients"].values[0, 0])
    assert post["curve"].attrs["units"] == "cm"
    # and it is a usable mean growth curve: within a few cm of the public reference on average
    w = tree["constant_data"]["quadrature_weights"].values
    assert np.sqrt(np.sum(w * (post["curve"].values[0, 0] - ref) ** 2)) < 25
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert "sensitivity" in text and "of 93" not in text + std.err  # DESIGN invariant 9: no clipped count printed


def test_demo_raw_has_much_more_noise(tmp_path, capsys):
    main(["demo", "--out", str(tmp_path / "a.nc")])
    main(["demo", "--raw", "--out", str(tmp_path / "b.nc")])
    a, b = xr.open_datatree(tmp_path / "a.nc"), xr.open_datatree(tmp_path / "b.nc")
    assert b.attrs["tau"] == 200.0 and "public_offset" not in b.attrs
    ratio = b["constant_data"]["noise_scale"].values / a["constant_data"]["noise_scale"].values
    np.testing.assert_allclose(ratio, 200.0 / GROWTH_DEVIATION_TAU)


def test_growth_reference_is_the_cdc_table():
    ages = np.arange(1, 19)
    expected = [np.mean(CDC2000_MEDIAN_HEIGHT_CM[a]) for a in ages]
    np.testing.assert_allclose(growth_reference(ages), expected)
    assert np.all(np.diff(expected) > 0)
    assert growth_reference([1.0])[0] == pytest.approx(74.65) and growth_reference([18.0])[0] == pytest.approx(169.65)
    with pytest.raises(ValueError):
        growth_reference([0.5])


def test_python_m_fdp_ppl_demo_subprocess(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    env["MPLBACKEND"] = "Agg"
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "demo", "--plot", "release.png"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "release.nc").is_file() and (tmp_path / "release.png").is_file()
    assert "sensitivity" in res.stdout and "Traceback" not in res.stderr


# ----------------------------------------------------------------------------- errors
ELEC = ["--data", "electricity", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "4000"]


def _replace(argv, flag, value):
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


BAD = {
    "unknown dataset": (_replace(ELEC, "--data", "nope"), "unknown dataset"),
    "unknown variable": (ELEC + ["--var", "load"], "available: demand"),
    "nan without drop": (_replace(ELEC, "--data", "dti"), "refused after the charge"),
    "epsilon zero": (_replace(ELEC, "--epsilon", "0"), "--epsilon"),
    "epsilon negative": (_replace(ELEC, "--epsilon", "-1"), "--epsilon"),
    "epsilon nan": (_replace(ELEC, "--epsilon", "nan"), "--epsilon"),
    "tau zero": (_replace(ELEC, "--tau", "0"), "tau must be finite and > 0"),
    "tau negative": (_replace(ELEC, "--tau", "-3"), "tau must be finite and > 0"),
    "gaussian without delta": (_replace(ELEC, "--mechanism", "gaussian"), "pass e.g. --delta 1e-5"),
    "delta one": (_replace(ELEC, "--mechanism", "gaussian") + ["--delta", "1"], "--delta"),
    "delta zero": (_replace(ELEC, "--mechanism", "rkhs-gaussian") + ["--delta", "0"], "--delta"),
    "delta with laplace": (ELEC + ["--delta", "1e-5"], "--delta"),
    "classical eps > 1": (_replace(_replace(ELEC, "--mechanism", "gaussian"), "--epsilon", "2")
                          + ["--delta", "1e-5", "--calibration", "classical"], "--calibration analytic"),
    "missing file": (_replace(ELEC, "--data", "/nonexistent/curves.nc"), "not found"),
    "missing data dir": (ELEC + ["--data-dir", "/nonexistent"], "--data-dir"),
    "M too large": (_replace(ELEC, "--mechanism", "frl") + ["--M", "1000"], "M must lie in 1..48"),
    "M with iclp": (ELEC + ["--M", "3"], "--M"),
    "unknown kernel": (ELEC + ["--kernel", "cosine"], "unknown kernel"),
    "rho zero": (ELEC + ["--rho", "0"], "rho must be finite and > 0"),
    "draws zero": (ELEC + ["--draws", "0"], "--draws"),
    "eta too small": (ELEC + ["--eta", "0.5"], "eta"),
    "bad t dim": (ELEC + ["--t-dim", "minute"], "--t-dim"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line_exit_2(tmp_path, capsys, case):
    argv, fix = BAD[case]
    out = tmp_path / "x.nc"
    rc = main(["release", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    # besides the public id warning (decided from the names: dti has a subject_id), one line
    lines = [line for line in err.strip().splitlines() if "looks like a person's identifier" not in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("fdp-ppl: error: ")
    assert "Traceback" not in err
    assert fix in lines[0], lines[0]
    assert not out.exists()


def test_missing_output_directory(tmp_path, capsys):
    rc = main(["release", *ELEC, "--out", str(tmp_path / "no" / "x.nc")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "does not exist" in err


def test_argparse_errors_exit_2(capsys):
    assert main(["release", "--data", "electricity", "--epsilon", "1", "--out", "x.nc"]) == 2  # no --tau etc.
    assert main(["release", *ELEC[:2], "--mechanism", "laplace", "--epsilon", "1", "--tau", "1", "--out", "x"]) == 2
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "usage:" in err
    assert main(["--help"]) == 0


# ----------------------------------------------------------------------------- every registered mechanism
@pytest.mark.parametrize("mechanism, extra, family, law, summary", [
    ("bernstein", ["--tau", "5000"], "bernstein", "laplace", "bernstein"),
    ("t-process", ["--tau", "4000", "--nu", "5", "--delta", "1e-5"], "elliptical-process", "elliptical-t(nu=5)",
     "iclp-qr"),
    ("laplace-process", ["--tau", "4000", "--delta", "1e-5"], "elliptical-process", "elliptical-laplace", "iclp-qr"),
    ("t", ["--tau", "4000", "--nu", "5"], "elliptical", "elliptical-t(nu=5)", "iclp-qr"),
    ("knorm", ["--tau", "4000"], "elliptical", "elliptical-knorm", "iclp-qr"),
])
def test_release_bernstein_and_elliptical_mechanisms(tmp_path, capsys, mechanism, extra, family, law, summary):
    from fdp_ppl.releasing import registry
    from fdp_ppl.releasing.schema import read_release

    rc, out = _release(tmp_path, "--data", "electricity", "--var", "demand", "--mechanism", mechanism,
                       "--epsilon", "1", *extra, plot=True)
    std = capsys.readouterr()
    assert rc == 0, std.err
    tree = xr.open_datatree(out)
    at = tree.attrs
    assert at["mechanism"] == family and at["noise_law"] == law and at["summary"] == summary
    assert at["epsilon"] == 1.0 and at["n"] == 508
    entry = registry.MECHANISMS[mechanism]
    assert entry.summary == summary
    assert at["delta"] == (1e-5 if entry.approximate else 0.0)
    view = read_release(tree)
    assert view.law.name == law
    assert view.curve.sizes["t"] == 48 and np.all(np.isfinite(view.curve.values))
    if mechanism == "bernstein":
        assert at["sensitivity_norm"] == "l1" and at["lattice_k"] == 20 and at["tau"] == 5000.0
        assert view.lattice is not None and view.coefficients.sizes["basis"] == 21
        assert "sup-norm" in std.out and "kernel" not in at
    else:
        assert at["sensitivity_norm"] == "cameron-martin" and at["kernel"] == "matern32"
    if mechanism in ("t-process", "t"):
        assert at["nu"] == 5.0
    if entry.approximate:
        assert at["calibration"] == "exact"
    assert (tmp_path / "release.png").read_bytes()[:8] == PNG_MAGIC
    for key in ("mechanism", "epsilon", "delta", "sensitivity", "tau", "J components", "noise E‖ξ‖²", str(out)):
        assert key in std.out
    # DESIGN invariant 9: stderr holds no data holder's line (no clipped count), only the public shrinkage warning,
    # computed from the spec alone
    assert "MW" in std.out and all(line.startswith("fdp-ppl: warning: the summary shrinks")
                                   for line in std.err.splitlines())


def test_pure_knorm_stays_pure_and_its_lattice_is_refused_by_a_pure_ledger(tmp_path, capsys):
    """The pure K-norm release keeps its pure ε by default, floating-point safe (the exact "lattice" generator): a
    pure ledger (--budget 2) pays it. The dithered lattice (``generator="snapped"``) is (ε, δ_fp)-DP: the same pure
    ledger refuses it before any draw, saying why and what to do; nothing charged."""
    import warnings

    from fdp_ppl.accounting import PrivacyLedger
    from fdp_ppl.errors import BudgetExceededError
    import fdp_ppl as fp
    from fdp_ppl.releasing.registry import MECHANISMS

    led = tmp_path / "pure.sqlite"
    rc = main(["release", "--data", "electricity", "--var", "demand", "--mechanism", "knorm", "--epsilon", "1",
               "--tau", "4000", "--ledger", str(led), "--budget", "2", "--out", str(tmp_path / "k.nc")])
    out = capsys.readouterr().out
    assert rc == 0 and "floating-point safe" in out and "not floating-point safe" not in out.lower()
    spent = PrivacyLedger.open(led).spent
    assert spent.epsilon == pytest.approx(1.0) and spent.delta == 0.0
    grid = fp.Grid.uniform(40)
    summary = fp.iclp_qr_mean(np.ones((30, 1)) * np.sin(3 * grid.t), fp.eigenbasis(fp.Matern(rho=0.2), grid), tau=2.0)
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetExceededError, match="lattice release of this pure"):
            fp.release(summary, MECHANISMS["knorm"].build(1.0, 0.0), generator="snapped", ledger=ledger)
    assert ledger.spent.epsilon == 0.0


def test_bernstein_lattice_size_and_growth(tmp_path, capsys):
    rc, out = _release(tmp_path, "--data", "growth", "--mechanism", "bernstein", "--epsilon", "1", "--tau", "200",
                       "--k", "10")
    assert rc == 0, capsys.readouterr().err
    tree = xr.open_datatree(out)
    assert tree.attrs["lattice_k"] == 10 and tree["posterior"].sizes["basis"] == 11
    assert tree.attrs["sensitivity"] == pytest.approx(11 * 2 * 200 / tree.attrs["n"])


def test_release_help_lists_every_registered_mechanism(capsys):
    from fdp_ppl.releasing import registry

    assert main(["release", "--help"]) == 0
    out = capsys.readouterr().out
    for name in registry.MECHANISMS:
        assert any(line.split()[:1] == [name] for line in out.splitlines()), name
    for flag in ("--nu", "--k", "--calibration", "sup-norm"):
        assert flag in out
    for kernel in registry.KERNELS:
        assert kernel in out


NEW_BAD = {
    "t without nu": (_replace(ELEC, "--mechanism", "t"), "nu"),
    "t-process without delta": (_replace(ELEC, "--mechanism", "t-process") + ["--nu", "5"], "pass e.g. --delta 1e-5"),
    "laplace-process without delta": (_replace(ELEC, "--mechanism", "laplace-process"), "pass e.g. --delta 1e-5"),
    "knorm with delta": (_replace(ELEC, "--mechanism", "knorm") + ["--delta", "1e-5"], "--delta"),
    "nu with iclp": (ELEC + ["--nu", "3"], "--nu"),
    "k with iclp": (ELEC + ["--k", "5"], "--k"),
    "kernel with bernstein": (_replace(ELEC, "--mechanism", "bernstein") + ["--kernel", "matern12"], "--kernel"),
    "calibration with frl": (_replace(ELEC, "--mechanism", "frl") + ["--calibration", "analytic"], "--calibration"),
    "theorem5 eps > 1": (_replace(_replace(ELEC, "--mechanism", "t-process"), "--epsilon", "2")
                         + ["--nu", "5", "--delta", "1e-5", "--calibration", "theorem5"], "--calibration exact"),
    "gaussian calibration for t-process": (_replace(ELEC, "--mechanism", "t-process")
                                           + ["--nu", "5", "--delta", "1e-5", "--calibration", "analytic"],
                                           "calibration"),
    "bernstein k zero": (_replace(ELEC, "--mechanism", "bernstein") + ["--k", "0"], "k"),
}


@pytest.mark.parametrize("case", sorted(NEW_BAD))
def test_bad_mechanism_options_one_line_exit_2(tmp_path, capsys, case):
    argv, fix = NEW_BAD[case]
    out = tmp_path / "x.nc"
    rc = main(["release", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fdp-ppl: error: ") and "Traceback" not in err
    assert fix in lines[0], lines[0]
    assert not out.exists()


def test_library_errors_printed_unchanged(tmp_path, capsys):
    from fdp_ppl import ICLPQRSpec, Grid, Matern, eigenbasis
    from fdp_ppl.errors import FdpPplError

    basis = eigenbasis(Matern(rho=0.1, nu=1.5), Grid.from_points(np.linspace(0, 1, 48)))
    with pytest.raises(FdpPplError) as info:
        ICLPQRSpec(basis=basis, tau=1.0, n=508, eta=0.5)
    rc = main(["release", *ELEC, "--eta", "0.5", "--out", str(tmp_path / "x.nc")])
    assert rc == 2
    assert capsys.readouterr().err.strip() == f"fdp-ppl: error: {' '.join(str(info.value).split())}"
