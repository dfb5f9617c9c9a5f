"""``fdp-ppl kde`` (fdp_ppl/cli/kde.py)."""

import json
import numpy as np
import pytest
import xarray as xr

from fdp_ppl.cli import main


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    x = np.append(rng.uniform(0.1, 0.9, 58), [-0.5, 1.7])  # two outside the domain
    y = rng.uniform(0, 1, 60)
    path = tmp_path / "obs.csv"
    path.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in zip(x, y)) + "\n")
    return path


@pytest.mark.parametrize("mech,extra", [("gp", ["--delta", "1e-5"]), ("sobolev", ["--delta", "1e-5"]),
                                        ("iclp", []), ("frl", []), ("bernstein", [])])
def test_kde_cli_1d(tmp_path, csv_file, capsys, mech, extra):
    out = tmp_path / f"{mech}.nc"
    code = main(["kde", "--data", str(csv_file), "--var", "x", "--mechanism", mech, "--epsilon", "1", *extra,
                 "--domain", "0", "1", "--grid-size", "50", "--draws", "2", "--seed", "1", "--study", "--out", str(out),
                 "--holder-report", str(tmp_path / "holder.json")])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert str(out) in cap.out and "privacy spent" in cap.out
    assert "2 of 60" not in cap.out + cap.err  # the clipped count: only in the data holder's report
    holder = json.loads((tmp_path / "holder.json").read_text())
    assert (holder["clipped"], holder["records"]) == (2, 60)
    tree = xr.open_datatree(out)
    dens = tree["posterior"]["density"]
    assert dens.dims == ("chain", "draw", "x") and dens.shape == (1, 2, 50)
    assert tree.attrs["epsilon"] == 1 and tree.attrs["n"] == 60
    for key in ("sensitivity", "sensitivity_norm", "h", "kernel", "noise_generator", "fp_safe"):
        assert key in tree.attrs
    assert "n_clipped" not in tree.attrs


def test_kde_cli_2d_ledger_and_plot(tmp_path, csv_file, capsys):
    out, png, led = tmp_path / "k2.nc", tmp_path / "k2.png", tmp_path / "led.sqlite"
    args = ["kde", "--data", str(csv_file), "--var", "x", "--var2", "y", "--mechanism", "iclp", "--epsilon", "0.5",
            "--eta", "1.05", "--domain", "0", "1", "--grid-size", "12", "--ledger", str(led), "--budget", "0.8",
            "--out", str(out), "--plot", str(png)]
    assert main(args) == 0
    assert xr.open_datatree(out)["posterior"]["density"].dims == ("chain", "draw", "x1", "x2")
    assert png.exists()
    capsys.readouterr()
    assert main(args) == 2  # the ledger refuses a second release
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("mech", ["frl", "bernstein"])
def test_kde_cli_2d_baselines(tmp_path, csv_file, capsys, mech):
    out = tmp_path / f"{mech}2.nc"
    code = main(["kde", "--data", str(csv_file), "--var", "x", "--var2", "y", "--mechanism", mech, "--epsilon", "1",
                 "--domain", "0", "1", "--grid-size", "14", "--draws", "2", "--out", str(out)])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    tree = xr.open_datatree(out)
    dens = tree["posterior"]["density"]
    assert dens.dims == ("chain", "draw", "x1", "x2") and dens.shape == (1, 2, 14, 14)
    assert tree.attrs["mechanism"] == mech and tree.attrs["sensitivity_norm"] == "l1"
    assert tree.attrs["noise_generator"] == "opendp" and tree.attrs["n"] == 60


@pytest.mark.parametrize("args,msg", [
    (["--mechanism", "gp", "--epsilon", "1"], "--delta"),
    (["--mechanism", "iclp", "--epsilon", "1", "--delta", "0.1"], "no --delta"),
    (["--mechanism", "iclp", "--epsilon", "-1"], "--epsilon"),
    (["--mechanism", "bernstein", "--epsilon", "1", "--var2", "y", "--delta", "0.1"], "no --delta"),
    (["--mechanism", "iclp", "--epsilon", "1", "--var", "nope"], "nope"),
    (["--mechanism", "frl", "--epsilon", "1", "--normalise"], "--normalise"),
])
def test_kde_cli_bad_input(tmp_path, csv_file, capsys, args, msg):
    base = ["kde", "--data", str(csv_file), "--domain", "0", "1", "--out", str(tmp_path / "o.nc")]
    if "--var" not in args:
        base += ["--var", "x"]
    assert main(base + args) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1


def test_kde_cli_module_imports_only_argparse():
    """At import: argparse and the names of fdp_ppl._names (a standard-library leaf), nothing heavy."""
    import ast
    import inspect

    import fdp_ppl.cli.kde as mod

    tree = ast.parse(inspect.getsource(mod))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    modules = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    modules |= {("." * n.level) + (n.module or "") for n in top if isinstance(n, ast.ImportFrom)}
    assert modules <= {"__future__", "argparse", ".._names"}


def test_kde_cli_private_bandwidth_is_charged(tmp_path, csv_file, capsys):
    led = tmp_path / "led.sqlite"
    out = tmp_path / "pb.nc"
    args = ["kde", "--data", str(csv_file), "--var", "x", "--mechanism", "iclp", "--epsilon", "0.5",
            "--bandwidth-epsilon", "0.25", "--domain", "0", "1", "--grid-size", "40", "--ledger", str(led),
            "--budget", "1", "--out", str(out)]
    assert main(args) == 0
    cap = capsys.readouterr()
    tree = xr.open_datatree(out)
    assert tree.attrs["bandwidth_epsilon"] == 0.25 and tree.attrs["bandwidth_rule"].startswith("private")
    assert 0.005 < float(tree.attrs["h"]) < 1 and "of the total 0.75" in cap.out
    # the file states what the whole release spent, bandwidth included, and that its quartile draws (OpenDP, on a
    # public lattice) are floating-point safe as the density noise is
    assert tree.attrs["budget_spent_epsilon"] == pytest.approx(0.75)
    # the release records the composition of two plans: the bandwidth (part 0) and the density (part 1)
    assert tree.attrs["fp_safe"] == 1 and tree.attrs["part0_fp_safe"] == 1 and tree.attrs["part1_fp_safe"] == 1
    assert tree.attrs["part0_epsilon"] == 0.25 and tree.attrs["part1_epsilon"] == 0.5
    assert "numpy" not in tree.attrs["noise_generator"] and "NOT floating-point safe" not in cap.out
    assert "floating-point safe)" in cap.out
    assert "+ 0.25 (private bandwidth) = 0.75" in cap.out
    from fdp_ppl.accounting import PrivacyLedger

    assert PrivacyLedger.open(led).spent.epsilon == pytest.approx(0.75)
    assert main([*args, "--force"]) == 2  # 0.75 more does not fit in what remains (0.25): refused before any draw
    assert "remain" in capsys.readouterr().err
    assert main([*args[:-2], "--bandwidth", "0.1", "--out", str(tmp_path / "x.nc")]) == 2
    assert "exclude each other" in capsys.readouterr().err


@pytest.mark.parametrize("var2", [False, True])
def test_kde_cli_frl_m_and_bernstein_k(tmp_path, csv_file, capsys, var2):
    """--frl-m and --bernstein-k: defaults as before (floor(n^(1/3)); k = 20 in 1-D, 10 in 2-D), recorded in attrs."""
    import xarray as xr

    base = ["kde", "--data", str(csv_file), "--var", "x", *(["--var2", "y"] if var2 else []), "--epsilon", "1",
            "--domain", "-4", "4", "--grid-size", "20", "--seed", "1", "--study"]
    out = tmp_path / "a.nc"
    assert main([*base, "--mechanism", "frl", "--out", str(out)]) == 0
    default = xr.open_datatree(out)
    assert default.attrs["frl_M_source"].startswith("default")
    out2 = tmp_path / "b.nc"
    assert main([*base, "--mechanism", "frl", "--frl-m", "3", "--out", str(out2)]) == 0
    t = xr.open_datatree(out2)
    assert t.attrs["frl_M"] == 3 and t.attrs["frl_M_source"] == "--frl-m"
    assert t["constant_data"]["noise_scale"].size < default["constant_data"]["noise_scale"].size \
        or int(default.attrs["frl_M"]) <= 3
    out3 = tmp_path / "c.nc"
    assert main([*base, "--mechanism", "bernstein", "--out", str(out3)]) == 0
    assert xr.open_datatree(out3).attrs["bernstein_k"] == (10 if var2 else 20)
    out4 = tmp_path / "d.nc"
    assert main([*base, "--mechanism", "bernstein", "--bernstein-k", "4", "--out", str(out4)]) == 0
    t4 = xr.open_datatree(out4)
    assert t4.attrs["bernstein_k"] == 4 and t4["constant_data"]["noise_scale"].size == 5 ** (2 if var2 else 1)


@pytest.mark.parametrize("args, msg", [
    (["--mechanism", "frl", "--frl-m", "0"], "--frl-m must be"),
    (["--mechanism", "frl", "--frl-m", "-2"], "--frl-m must be"),
    (["--mechanism", "bernstein", "--bernstein-k", "0"], "--bernstein-k must be"),
    (["--mechanism", "iclp", "--bernstein-k", "5"], "applies to --mechanism bernstein only"),
    (["--mechanism", "bernstein", "--frl-m", "5"], "applies to --mechanism frl only"),
])
def test_kde_cli_frl_m_bernstein_k_errors(tmp_path, csv_file, capsys, args, msg):
    base = ["kde", "--data", str(csv_file), "--var", "x", "--epsilon", "1", "--domain", "-4", "4",
            "--out", str(tmp_path / "e.nc")]
    assert main(base + args) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1


def test_kde_cli_normalise_divides_by_the_public_mass(tmp_path, csv_file, capsys):
    """--normalise: the same noise law and budget, the density divided by the estimator's public mass."""
    base = ["kde", "--data", str(csv_file), "--var", "x", "--mechanism", "iclp", "--epsilon", "1", "--domain", "0",
            "1", "--grid-size", "50", "--seed", "3", "--study"]
    assert main([*base, "--out", str(tmp_path / "raw.nc")]) == 0
    assert main([*base, "--normalise", "--out", str(tmp_path / "norm.nc")]) == 0
    capsys.readouterr()
    raw, norm = (xr.open_datatree(tmp_path / f) for f in ("raw.nc", "norm.nc"))
    assert (raw.attrs["normalise"], norm.attrs["normalise"]) == (0, 1)
    mass = float(norm.attrs["public_mass"])
    assert 0 < mass < 1
    np.testing.assert_allclose(norm["posterior"]["density"].values, raw["posterior"]["density"].values / mass,
                               rtol=1e-12)
    for key in ("sensitivity", "epsilon", "budget_spent_epsilon"):
        assert norm.attrs[key] == raw.attrs[key]


def test_kde_cli_binned_estimator(tmp_path, csv_file, capsys):
    out = tmp_path / "binned.nc"
    assert main(["kde", "--data", str(csv_file), "--var", "x", "--mechanism", "gp", "--epsilon", "1", "--delta",
                 "1e-5", "--domain", "0", "1", "--grid-size", "50", "--kde-estimator", "binned", "--seed", "1",
                 "--study", "--out", str(out)]) == 0, capsys.readouterr().err
    assert xr.open_datatree(out).attrs["kde_estimator"] == "binned"
    capsys.readouterr()
    assert main(["kde", "--data", str(csv_file), "--var", "x", "--mechanism", "iclp", "--epsilon", "1", "--domain",
                 "0", "1", "--kde-estimator", "binned", "--out", str(tmp_path / "x.nc")]) == 2
    assert "--kde-estimator binned applies to --mechanism gp and sobolev" in capsys.readouterr().err


def test_kde_command_checks_are_the_library_checks():
    """The command's public checks before the data are the library's (fdp_ppl.kde.options.check_kde_options),
    named with its flags; its --mechanism choices are the library's names."""
    from fdp_ppl.cli import kde as cli_kde
    from fdp_ppl.errors import InputError
    from fdp_ppl.kde.options import MECHANISMS, check_kde_options

    assert cli_kde.MECHANISMS == tuple(MECHANISMS)
    with pytest.raises(InputError, match=r"^M applies to mechanism frl only \(got iclp\)") as err:
        check_kde_options("iclp", M=5)
    assert err.value.fix == "drop M"
    with pytest.raises(InputError, match="--frl-m applies to --mechanism frl only"):
        check_kde_options("iclp", M=5, names=cli_kde.KDE_FLAGS)
    with pytest.raises(InputError, match="pure epsilon-DP and takes no delta"):
        check_kde_options("bernstein", delta=1e-5)
