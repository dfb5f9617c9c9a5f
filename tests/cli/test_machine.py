"""``fdp-ppl svm``: the private kernel-machine command line."""

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.cli import main


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    x1, x2 = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    x1[0] = 5.0  # outside the public domain: clipped, reported on stderr only
    y = np.where(x1 > x2, 1, -1)
    path = tmp_path / "svm.csv"
    rows = ["a,b,label"] + [f"{u},{v},{w}" for u, v, w in zip(x1, x2, y)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _run(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def test_svm_gp_two_features_end_to_end(tmp_path, table, capsys):
    out = tmp_path / "svm.nc"
    code, stdout, err = _run(capsys, "svm", "--data", table, "--features", "a,b", "--label", "label", "--lam", 0.05,
                             "--kernel", "gaussian", "--bandwidth", 0.3, "--mechanism", "gp", "--epsilon", 1,
                             "--delta", 1e-5, "--grid-size", 12, "--draws", 2, "--out", out,
                             "--ledger", tmp_path / "l.sqlite", "--budget", "5,1e-4")
    assert code == 0, err
    tree = xr.open_datatree(out)
    dec = tree["posterior"]["decision"]
    assert dec.dims == ("chain", "draw", "x1", "x2") and dec.shape == (1, 2, 12, 12)
    assert tree.attrs["budget_spent_epsilon"] == pytest.approx(2.0)
    assert tree.attrs["sensitivity"] == pytest.approx(1.01 / (0.05 * 40))
    assert "1 of 40" not in err and "clipped" not in err  # the count is the data holder's: never printed
    assert "clipped" not in str(tree.attrs)
    last = stdout.strip().splitlines()[-1]
    assert str(out) in last and "spent epsilon 2" in last
    # the ledger refuses a release that does not fit, before drawing or writing anything (the charges are Gaussian
    # events, so 4 more draws fit by the mu-GDP total; 40 do not)
    out2 = tmp_path / "again.nc"
    code, _, err = _run(capsys, "svm", "--data", table, "--features", "a,b", "--label", "label", "--lam", 0.05,
                        "--bandwidth", 0.3, "--epsilon", 1, "--delta", 1e-5, "--draws", 40, "--out", out2,
                        "--ledger", tmp_path / "l.sqlite")
    assert code == 2 and not out2.exists() and len(err.strip().splitlines()) == 1


def test_svm_iclp_one_feature_with_plot(tmp_path, table, capsys):
    out, png = tmp_path / "svm1.nc", tmp_path / "svm1.png"
    code, stdout, err = _run(capsys, "svm", "--data", table, "--features", "a", "--label", "label", "--lam", 0.1,
                             "--kernel", "matern32", "--bandwidth", 0.2, "--mechanism", "iclp", "--epsilon", 2,
                             "--grid-size", 50, "--seed", 1, "--study", "--out", out, "--plot", png, "--loss", "logistic")
    assert code == 0, err
    tree = xr.open_datatree(out)
    assert tree["posterior"]["decision"].dims == ("chain", "draw", "x")
    assert tree.attrs["mechanism"] == "iclp" and tree.attrs["delta"] == 0.0
    assert png.stat().st_size > 0
    assert "spent epsilon 2" in stdout.strip().splitlines()[-1]


def test_machine_huber_hinge_release_records_its_loss(tmp_path, table, capsys):
    out = tmp_path / "huber.nc"
    code, _, err = _run(capsys, "machine", "--data", table, "--features", "a", "--label", "label", "--lam", 0.1,
                        "--bandwidth", 0.2, "--epsilon", 1, "--delta", 1e-5, "--grid-size", 20, "--seed", 1, "--study",
                        "--out", out, "--loss", "huber")
    assert code == 0, err
    tree = xr.open_datatree(out)
    assert tree.attrs["loss"] == "huber" and tree.attrs["summary"] == "kernel-machine-huber"
    assert "accelerated" in tree.attrs["solver"]


@pytest.mark.parametrize("extra, needle", [
    (["--mechanism", "gp"], "--delta"),
    (["--delta", "1e-5", "--epsilon", "2", "--calibration", "classical"], "classical"),
    (["--mechanism", "iclp", "--delta", "1e-5"], "no --delta"),
    (["--delta", "1e-5", "--label", "nope"], "no column"),
    (["--delta", "1e-5", "--lam", "-1"], "--lam"),
    (["--delta", "1e-5", "--domain", "1:0"], "--domain"),
])
def test_svm_errors_are_one_line_exit_2(tmp_path, table, capsys, extra, needle):
    base = {"--data": table, "--features": "a,b", "--label": "label", "--lam": 0.1, "--bandwidth": 0.3,
            "--epsilon": 1, "--out": tmp_path / "x.nc"}
    for i in range(0, len(extra), 2):
        base[extra[i]] = extra[i + 1]
    argv = ["svm"] + [str(v) for kv in base.items() for v in kv]
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert not (tmp_path / "x.nc").exists()


def test_svm_labels_must_be_pm1(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("a,label\n0.1,0\n0.5,1\n0.9,1\n")
    code, _, err = _run(capsys, "svm", "--data", path, "--features", "a", "--label", "label", "--lam", 0.1,
                        "--bandwidth", 0.3, "--epsilon", 1, "--delta", 1e-5, "--out", tmp_path / "o.nc")
    assert code == 2 and "-1 and +1" in err and "refused after the charge" in err  # the labels are data


def test_cli_erm_imports_only_argparse():
    from pathlib import Path

    import fdp_ppl.cli.machine as mod

    src = Path(mod.__file__).read_text().split('"""', 2)[2]
    top = [line for line in src.splitlines() if line.startswith(("import ", "from "))]
    assert top and all(any(m in line for m in ("argparse", "sys", "warnings", "pathlib", "__future__"))
                       for line in top)


def test_svm_nystroem_on_public_landmarks(tmp_path, table, capsys):
    """--approximation nystroem: the same RKHS's subspace on public landmarks; recorded and stated in the table."""
    out = tmp_path / "ny.nc"
    code, stdout, err = _run(capsys, "svm", "--data", table, "--features", "a", "--label", "label", "--lam", 0.05,
                             "--kernel", "gaussian", "--bandwidth", 0.3, "--mechanism", "gp", "--epsilon", 1,
                             "--delta", 1e-5, "--grid-size", 30, "--approximation", "nystroem", "--landmarks", 8,
                             "--seed", 3, "--study", "--out", out)
    assert code == 0, err
    at = xr.open_datatree(out).attrs
    assert at["kernel_approximation"] == "nystroem" and int(at["nystroem_landmarks"]) == 8
    assert "Nystroem on 8 public landmarks" in stdout
    from fdp_ppl.machine import ERMSpec

    assert ERMSpec.from_attrs(at).method == "nystroem"
    code, _, err = _run(capsys, "svm", "--data", table, "--features", "a", "--label", "label", "--lam", 0.05,
                        "--bandwidth", 0.3, "--epsilon", 1, "--delta", 1e-5, "--approximation", "exact",
                        "--landmarks", 8, "--out", tmp_path / "x.nc")
    assert code == 2 and "--landmarks" in err and len(err.strip().splitlines()) == 1
