"""Releases that stay private in practice, on the command line and in Python: missing values imputed by a
public rule (n public, the same public parameters for a record with a NaN and its complete neighbour), no
``--drop-incomplete``, a data-derived τ only with an explicit non-private flag, and unseeded demo releases."""

import json
import warnings

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.cli import main
from fdp_ppl.datasets import load_dataset
from fdp_ppl.errors import InputError, PrivacyLeakWarning, SeededReleaseWarning
from fdp_ppl.io.missing import IMPUTATION_COUNTS, impute_missing

K = 8


def _values(n: int = 6) -> np.ndarray:
    rng = np.random.default_rng(3)
    return np.cos(np.linspace(0, 2, K))[None, :] + 0.2 * rng.standard_normal((n, K))


def _write(path, values):
    path.parent.mkdir(parents=True, exist_ok=True)
    # the record dim is named "curve" (a file whose dims do not say which is the record is refused)
    xr.Dataset({"y": (("curve", "s"), values)}, coords={"s": np.linspace(0.0, 1.0, K)}).to_netcdf(path)
    return path


@pytest.fixture
def neighbours(tmp_path):
    """Two files named toy.nc that differ in one record: complete in one, with two NaN points in the other."""
    complete = _values()
    incomplete = complete.copy()
    incomplete[2, [1, 5]] = np.nan
    return _write(tmp_path / "a" / "toy.nc", incomplete), _write(tmp_path / "b" / "toy.nc", complete)


ARGS = ["--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "3"]


# ----------------------------------------------------------------------------- missing values
@pytest.mark.parametrize("mechanism", [["--mechanism", "iclp-qr"], ["--mechanism", "gaussian", "--delta", "1e-5"],
                                       ["--mechanism", "frl"]])
def test_missing_impute_gives_neighbours_identical_public_parameters(tmp_path, capsys, neighbours, mechanism):
    trees, errs = [], []
    for i, path in enumerate(neighbours):
        out = tmp_path / f"r{i}.nc"
        argv = ["release", "--data", str(path), *ARGS, "--out", str(out), "--missing", "impute",
                "--holder-report", str(tmp_path / f"h{i}.json")]
        argv[argv.index("--mechanism"): argv.index("--mechanism") + 2] = mechanism
        assert main(argv) == 0
        std = capsys.readouterr()
        errs.append(std.err)
        assert "missing points" not in std.out + std.err  # counts go to the data holder's report only
        trees.append(xr.open_datatree(out))
    a, b = trees
    skip = {"created_at"}
    assert {k: v for k, v in a.attrs.items() if k not in skip} == {k: v for k, v in b.attrs.items() if k not in skip}
    assert a.attrs["n"] == 6 and a.attrs["missing"] == "impute" and a.attrs["private"] == 1
    assert "set to 0" in a.attrs["missing_rule"] and "n is the number of records" in a.attrs["missing_rule"]
    xr.testing.assert_identical(a["constant_data"].to_dataset(), b["constant_data"].to_dataset())
    # the number of imputed points or records is for the data holder only
    for tree in trees:
        for node in tree.subtree:
            assert not any("imput" in k and k != "missing_rule" for k in node.attrs)
            assert not any(c in node.attrs for c in (*IMPUTATION_COUNTS, "n_dropped"))
            assert not any("imput" in str(v) for v in node.dataset.data_vars)
    assert errs[0] == errs[1]  # neighbours: the same stderr
    reports = [json.loads((tmp_path / f"h{i}.json").read_text()) for i in range(2)]
    assert (reports[0]["imputed_points"], reports[0]["imputed_curves"]) == (2, 1)
    assert (reports[1]["imputed_points"], reports[1]["imputed_curves"]) == (0, 0)


def test_missing_impute_with_a_public_offset_imputes_the_offset(tmp_path, capsys, neighbours):
    """With --offset c, a missing point becomes c (a zero deviation), not 0 (a deviation of -c): the release equals
    the one of the file with those points set to c, drawn with the same seed."""
    incomplete, _ = neighbours
    filled = incomplete.parent / "filled.nc"
    values = xr.open_dataset(incomplete)["y"].values.copy()
    values[np.isnan(values)] = 1.5
    _write(filled, values)
    outs = []
    for i, (path, missing) in enumerate(((incomplete, "impute"), (filled, "error"))):
        out = tmp_path / f"o{i}.nc"
        assert main(["release", "--data", str(path), *ARGS, "--offset", "1.5", "--missing", missing, "--seed",
                     str(2**40), "--study", "--out", str(out)]) == 0, capsys.readouterr().err
        outs.append(xr.open_datatree(out))
    err = capsys.readouterr()
    assert "set to the public offset" in err.out and "--offset" not in err.err
    assert "public --offset" in outs[0].attrs["missing_rule"]
    np.testing.assert_allclose(outs[0]["posterior"]["curve"].values, outs[1]["posterior"]["curve"].values,
                               rtol=1e-12, atol=1e-12)


def test_missing_error_is_the_default_and_drop_incomplete_is_gone(tmp_path, capsys, neighbours):
    out, ledger = tmp_path / "x.nc", tmp_path / "led.sqlite"
    # refused after every public check and after the charge (DESIGN invariant 9): the ledger pays for the refusal
    assert main(["release", "--data", str(neighbours[0]), *ARGS, "--out", str(out), "--ledger", str(ledger),
                 "--budget", "10"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "missing (NaN/inf) values" in err and "--missing impute" in err
    assert "data holder only" in err and "refused after the charge" in err and "1 of 6" not in err
    assert fp.PrivacyLedger.open(ledger).spent.epsilon == pytest.approx(1.0) and not out.exists()
    # it names no count: 1 bad record or 5 give the same text
    worse = _values()
    worse[:5, 0] = np.nan
    _write(neighbours[0], worse)
    assert main(["release", "--data", str(neighbours[0]), *ARGS, "--out", str(out), "--ledger", str(ledger)]) == 2
    assert capsys.readouterr().err == err and fp.PrivacyLedger.open(ledger).spent.epsilon == pytest.approx(2.0)
    assert main(["release", "--data", str(neighbours[0]), *ARGS, "--out", str(out), "--drop-incomplete"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--drop-incomplete was removed" in err and "public n" in err
    assert not out.exists()
    assert main(["release", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--missing {error,impute}" in help_text and "There is no --drop-incomplete" in help_text


def test_impute_missing_in_python(tmp_path):
    values = _values()
    values[0, 3] = np.nan
    values[4, [0, 7]] = np.inf
    path = _write(tmp_path / "toy.nc", values)
    da = load_dataset(path, missing="impute")
    assert da.shape == (6, K) and np.isfinite(da.values).all()
    assert da.values[0, 3] == 0 and da.values[4, 0] == 0 and da.attrs["n_dropped"] == 0
    assert da.attrs["n_imputed_curves"] == 2 and da.attrs["n_imputed_points"] == 3
    np.testing.assert_array_equal(da.values[1], values[1])
    # a public reference curve on the original grid (number, array or function of the grid points)
    ref = load_dataset(path, missing="impute", reference=lambda s: 10 + s, reference_name="ten plus s")
    assert ref.values[0, 3] == pytest.approx(10 + 3 / 7) and "ten plus s" in ref.attrs["missing_rule"]
    arr = impute_missing(values, np.full(K, 2.0))
    assert isinstance(arr, np.ndarray) and arr[4, 7] == 2.0 and arr[1, 1] == values[1, 1]
    with pytest.raises(InputError, match="reference"):
        impute_missing(values, np.ones(K + 1))
    with pytest.raises(ValueError, match="contradict"):
        load_dataset(path, missing="impute", drop_incomplete=True)
    with pytest.raises(ValueError, match="unknown missing"):
        load_dataset(path, missing="drop")
    # the spec is public: the same for the data with NaN (imputed) and for the complete neighbour
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(da["t"].values))
    s1 = fp.iclp_qr_mean(da, basis, tau=3.0)
    s2 = fp.iclp_qr_mean(load_dataset(_write(tmp_path / "c" / "toy.nc", _values())), basis, tau=3.0)
    assert s1.spec.attrs() == s2.spec.attrs() and s1.sensitivity().value == s2.sensitivity().value


# ----------------------------------------------------------------------------- data-derived tau
def test_data_tau_needs_allow_nonprivate_and_says_private_0():
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(K))
    curves = _values()
    with pytest.warns(PrivacyLeakWarning):
        tau = fp.data_tau(curves, basis.grid)
    summary = fp.iclp_qr_mean(curves, basis, tau=tau)
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(5.0))
    with pytest.raises(InputError, match="allow_nonprivate=True"):
        fp.release(summary, fp.ICLP(1.0), ledger=ledger)
    assert ledger.entries == []  # refused before anything was charged or drawn
    tree = fp.release(summary, fp.ICLP(1.0), allow_nonprivate=True)
    assert tree.attrs["private"] == 0 and tree.attrs["sensitivity_data_dependent"] == 1
    public = fp.release(fp.iclp_qr_mean(curves, basis, tau=3.0), fp.ICLP(1.0), allow_nonprivate=True)
    assert public.attrs["private"] == 1  # the flag allows; only a data-derived τ makes a release non-private


# ----------------------------------------------------------------------------- demo seeds
def test_demo_is_unseeded_by_default_and_says_so(tmp_path, capsys):
    ledger = str(tmp_path / "ledger.sqlite")
    assert main(["demo", "--out", str(tmp_path / "a.nc"), "--ledger", ledger, "--budget", "2"]) == 0
    text_a = capsys.readouterr().out
    assert main(["demo", "--out", str(tmp_path / "b.nc"), "--ledger", ledger]) == 0
    capsys.readouterr()
    assert main(["demo", "--out", str(tmp_path / "d.nc"), "--ledger", ledger]) == 2  # the budget of 2 is spent
    assert "only epsilon=0, delta=0 remain" in capsys.readouterr().err and not (tmp_path / "d.nc").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededReleaseWarning)  # stated in the table, not as a Python warning
        assert main(["demo", "--out", str(tmp_path / "c.nc"), "--seed", "5", "--study"]) == 0
    text_c = capsys.readouterr().out
    a, b, c = (xr.open_datatree(tmp_path / f"{x}.nc") for x in "abc")
    assert a.attrs["noise_seeded"] == 0 and c.attrs["noise_seeded"] == 1
    assert a.attrs["private"] == 1 and a.attrs["missing"] == "error"
    assert not np.allclose(a["posterior"]["coefficients"].values, b["posterior"]["coefficients"].values)
    assert "fresh OS entropy (not seeded)" in text_a and "spent epsilon 1 of 2; remaining epsilon 1" in text_a
    assert "seeded (not private if the seed is known or guessable)" in text_c
    assert "--seed" not in text_c and " 5" not in text_c.split("noise seed", 1)[1].splitlines()[0]
