"""Curves in any container users hold give the same release: one converter, one-line refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.cli import main
from fdp_ppl.io.containers import read_curves_file, to_curves
from fdp_ppl.datasets import load_dataset
from fdp_ppl.errors import InputError

ARGS = ("--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "40", "--seed", "11", "--study")


@pytest.fixture(scope="module")
def growth():
    da = load_dataset("growth")
    return da - 100.0  # a fixed public shift (heights around 0 cm), the same for every container


def _wide(da):
    return pd.DataFrame(da.values, index=[f"child{i}" for i in range(da.sizes["curve"])], columns=da["t"].values)


def _long(da):
    w = _wide(da)
    w.index.name = "id"
    return w.reset_index().melt(id_vars="id", var_name="t", value_name="value").astype({"t": float})


def _containers(da):
    skfda = pytest.importorskip("skfda")
    t = da["t"].values
    return {
        "dataarray": da,
        "dataarray (t, subject)": da.rename(curve="subject").transpose("t", "subject"),
        "numpy + t": to_curves(da.values, t=t),
        "wide DataFrame": _wide(da),
        "long DataFrame": _long(da).sample(frac=1.0, random_state=3),  # row order does not matter
        "FDataGrid": skfda.FDataGrid(da.values, t),
    }


def _release(curves, basis):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = fp.iclp_qr_mean(curves, basis, tau=40.0, **({"record_dim": "subject"}
                                                               if isinstance(curves, xr.DataArray) and
                                                               "subject" in curves.dims else {}))
        return fp.release(summary, fp.ICLP(1.0), random_seed=7, study=True, generator="pymc")


def test_every_container_gives_the_same_release(growth):
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(growth["t"].values))
    ref = _release(growth, basis)["posterior"]["coefficients"].values
    for name, obj in _containers(growth).items():
        got = _release(obj, basis)["posterior"]["coefficients"].values
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12, err_msg=name)
    # and every container converts to the same curves on the same grid
    for name, obj in {**_containers(growth), "long DataFrame": _long(growth)}.items():
        da = to_curves(obj, record_dim="subject" if name == "dataarray (t, subject)" else None)
        assert da.dims == ("curve", "t"), name
        np.testing.assert_array_equal(da["t"].values, growth["t"].values, err_msg=name)
        np.testing.assert_array_equal(da.values, growth.values, err_msg=name)


@pytest.mark.parametrize("suffix", [".nc", ".csv", "-long.csv", ".parquet", ".zarr"])
def test_every_file_format_gives_the_same_cli_release(tmp_path, growth, suffix, capsys):
    path = tmp_path / f"growth{suffix}"
    if suffix == ".nc":
        growth.rename("height").to_dataset().to_netcdf(path)
    elif suffix == ".csv":
        w = _wide(growth)
        w.index.name = "id"
        w.to_csv(path)
    elif suffix == "-long.csv":
        _long(growth).to_csv(path, index=False)
    elif suffix == ".parquet":
        w = _wide(growth)
        w.columns = [str(c) for c in w.columns]
        w.to_parquet(path)
    else:
        pytest.importorskip("zarr")
        growth.rename("height").to_dataset().to_zarr(path)
    out = tmp_path / "r.nc"
    rc = main(["release", "--data", str(path), *ARGS, "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    ref = tmp_path / "ref.nc"
    growth.rename("height").to_dataset().to_netcdf(tmp_path / "ref_in.nc")
    assert main(["release", "--data", str(tmp_path / "ref_in.nc"), *ARGS, "--out", str(ref)]) == 0
    a = xr.open_datatree(out)["posterior"]["coefficients"].values
    b = xr.open_datatree(ref)["posterior"]["coefficients"].values
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def _bad_tables():
    t = [0.0, 0.5, 1.0]
    irregular = pd.DataFrame({"id": [1, 1, 1, 2, 2], "t": [0.0, 0.5, 1.0, 0.0, 1.0], "value": [1.0, 2, 3, 4, 5]})
    mismatched = pd.DataFrame({"id": [1, 1, 2, 2], "t": [0.0, 1.0, 0.0, 0.9], "value": [1.0, 2, 3, 4]})
    return {
        "irregular grids": (irregular, "irregular grids"),
        "mismatched grids": (mismatched, "irregular grids"),
        "non-numeric column": (pd.DataFrame({0.0: [1.0, 2.0], 0.5: ["a", "b"]}), "non-numeric"),
        "non-numeric labels": (pd.DataFrame({"a": [1.0, 2.0], "b": [1.0, 2.0]}), "not grid points"),
        "single curve": (pd.DataFrame([[1.0, 2.0, 3.0]], columns=t), "single curve"),
        "empty table": (pd.DataFrame(), "empty"),
        "duplicate pairs": (pd.DataFrame({"id": [1, 1, 2, 2], "t": [0.0, 0.0, 0.0, 1.0], "value": [1.0, 2, 3, 4]}),
                            "more than once"),
        "1-D array": (np.arange(4.0), "2-D"),
        "array without grid": (np.ones((3, 4)), "grid points"),
    }


@pytest.mark.parametrize("case", list(_bad_tables()))
def test_bad_containers_give_one_line(case):
    obj, message = _bad_tables()[case]
    with pytest.raises(InputError) as info:
        to_curves(obj)
    text = str(info.value)
    assert message in text and "\n" not in text


@pytest.mark.parametrize("content, message", [
    (b"id,t,value\n1,0,1\n1,1,2\n2,0,3\n", "irregular grids"),
    (b"id,0,1\na,x,2\nb,3,4\n", "non-numeric"),
    (b"id,0,1\na,1,2\n", "single curve"),
])
def test_bad_csv_files_exit_2_with_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    assert main(["release", "--data", str(path), *ARGS, "--out", str(tmp_path / "r.nc")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    with pytest.raises(InputError, match=message):
        read_curves_file(path)


def test_inputs_are_not_modified(growth):
    w = _wide(growth)
    before = w.copy()
    to_curves(w)
    pd.testing.assert_frame_equal(w, before)


def test_a_long_table_with_a_misnamed_column_says_which_is_missing(tmp_path):
    frame = _long(load_dataset("growth")).rename(columns={"value": "valeu"})
    frame.to_csv(tmp_path / "long.csv", index=False)
    for call in (lambda: read_curves_file(tmp_path / "long.csv"), lambda: to_curves(frame)):
        with pytest.raises(InputError) as info:
            call()
        text = str(info.value)
        assert "no value column" in text and "'valeu'" in text and "\n" not in text
    with pytest.raises(InputError, match="no grid point t column"):
        to_curves(frame.rename(columns={"t": "tt", "valeu": "value"}))


def _wide_csv(path, sep=",", header=None, decimal="."):
    rng = np.random.default_rng(5)
    header = header or ["id", "0", "0.25", "0.5", "0.75", "1"]
    rows = [sep.join([f"r{i}"] + [f"{v:.6f}".replace(".", decimal) for v in rng.normal(size=len(header) - 1)])
            for i in range(8)]
    path.write_text(sep.join(h.replace(".", decimal) for h in header) + "\n" + "\n".join(rows) + "\n")
    return path


def test_a_repeated_grid_column_is_refused_before_any_charge(tmp_path, capsys):
    """A header holding one grid point twice is public schema: refused in one line naming the column, before the
    ledger is charged (pandas alone would rename the second '12' to '12.1' and release on another grid)."""
    path = _wide_csv(tmp_path / "dup.csv", header=["id", "0", "12", "12", "30"])
    ledger = tmp_path / "ledger.sqlite"
    argv = ["release", "--data", str(path), "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5",
            "--tau", "5", "--out", str(tmp_path / "r.nc"), "--ledger", str(ledger), "--budget", "5,1e-3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'12'" in err and "more than once" in err
    assert not (tmp_path / "r.nc").exists()
    assert not ledger.exists() or fp.PrivacyLedger.open(ledger).spent.epsilon == 0.0
    with pytest.raises(InputError, match="'12'"):  # the same labels in a DataFrame ('12' and '12.0')
        to_curves(pd.DataFrame(np.ones((3, 3)), columns=["12", "12.0", "13"]))


@pytest.mark.parametrize("sep, decimal", [(";", "."), (";", ","), ("\t", "."), ("|", ".")])
def test_the_csv_separator_is_found_from_the_file(tmp_path, sep, decimal):
    comma = read_curves_file(_wide_csv(tmp_path / "comma.csv"))
    other = read_curves_file(_wide_csv(tmp_path / "other.csv", sep=sep, decimal=decimal))
    assert other.shape == comma.shape == (8, 5)
    np.testing.assert_array_equal(other["t"].values, comma["t"].values)
    np.testing.assert_allclose(other.values, comma.values, rtol=0, atol=0)


def test_the_grid_dim_given_as_the_record_dim_is_refused(tmp_path, capsys):
    """The record dim is the privacy unit: a --record-dim that carries the grid coordinate while the other dim has
    none is the grid dim (releasing anyway put the records on the grid 1..K); refused before any charge."""
    rng = np.random.default_rng(2)
    da = xr.DataArray(rng.normal(size=(30, 12)), dims=("subject", "age"), coords={"age": np.linspace(1, 18, 12)},
                      name="y")
    da.to_dataset().to_netcdf(tmp_path / "sa.nc")
    argv = ["release", "--data", str(tmp_path / "sa.nc"), *ARGS, "--out", str(tmp_path / "r.nc")]
    assert main([*argv, "--record-dim", "age"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--record-dim 'age' names the grid dim" in err and "--record-dim subject" in err
    assert not (tmp_path / "r.nc").exists()
    with pytest.raises(InputError, match="names the grid dim"):
        to_curves(da, record_dim="age")
    assert to_curves(da, record_dim="subject").shape == (30, 12)
    assert to_curves(da, record_dim="age", t_dim="subject").shape == (12, 30)  # both named: as asked


def test_units_of_a_csv_table_come_from_flags(tmp_path):
    """A table has no place for units: --units and --t-units end in the release's attrs and its curve's."""
    path = _wide_csv(tmp_path / "w.csv")
    out = tmp_path / "r.nc"
    assert main(["release", "--data", str(path), *ARGS, "--out", str(out), "--units", "cm", "--t-units",
                 "years"]) == 0
    with xr.open_datatree(out) as tree:
        assert tree.attrs["value_units"] == "cm" and tree.attrs["t_units"] == "years"
        assert tree["posterior"]["curve"].attrs["units"] == "cm" and tree["posterior"]["t"].attrs["units"] == "years"
