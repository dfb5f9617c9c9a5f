"""Tests of fdp_ppl.datasets: loaders (embedded, files, .nc paths) and simulation designs."""

import hashlib
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from fdp_ppl import dims
from fdp_ppl.datasets import (DATASETS, data_directory, iclp_mean_function, load_dataset, simulate_iclp,
                              simulate_mirshani)
from fdp_ppl.spaces import Gaussian, Grid, Matern, eigenbasis

SHARED = data_directory()
needs_data = pytest.mark.skipif(not (SHARED / "dti.nc").is_file() or not (SHARED / "electricity_monday.nc").is_file(),
                                reason="shared data directory not available")


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _write_nc(path: Path, *, with_nan=False, two_vars=True):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 8))
    if with_nan:
        x[2, 3] = np.nan
    data = {"y": (("unit", "s"), x)}
    if two_vars:
        data["z"] = (("s", "unit"), rng.normal(size=(8, 6)))
    data["scalar_per_unit"] = (("unit",), np.arange(6.0))
    ds = xr.Dataset(data, coords={"s": np.linspace(10.0, 17.0, 8), "group": ("unit", list("aabbcc"))},
                    attrs={"source": "unit test"})
    ds.to_netcdf(path, engine="scipy")
    return ds


# ---------------------------------------------------------------------- embedded datasets
def test_growth_shape_dims_and_coords():
    da = load_dataset("growth")
    assert da.dims == (dims.CURVE, dims.T)
    assert da.shape == (93, 31)
    np.testing.assert_allclose(da[dims.T].values[[0, -1]], [1.0, 18.0])  # original ages, not rescaled
    assert "sex" in da.coords and da["sex"].dims == (dims.CURVE,)
    assert da.attrs["units"] == "cm" and da.attrs["dataset"] == "growth" and da.attrs["n_dropped"] == 0
    assert np.isfinite(da.values).all() and 60 < float(da.mean()) < 200
    assert load_dataset("growth", "height").shape == (93, 31)
    with pytest.raises(ValueError, match="height"):
        load_dataset("growth", "weight")


@pytest.mark.parametrize("name", ["weather", "canadian_weather"])
def test_weather_both_variables(name):
    temp = load_dataset(name)
    prec = load_dataset(name, "precipitation")
    for da in (temp, prec):
        assert da.dims == (dims.CURVE, dims.T) and da.shape == (35, 365)
        np.testing.assert_allclose(da[dims.T].values[[0, -1]], [1.0, 365.0])
        assert "station" in da.coords
    assert temp.attrs["variable"] == "temperature" and temp.attrs["units"] == "degC"
    assert prec.attrs["variable"] == "precipitation" and prec.attrs["units"] == "mm"
    assert float(temp.min()) < 0 < float(temp.max())  # Canadian winters
    assert float(prec.min()) >= 0
    with pytest.raises(ValueError, match="temperature, precipitation"):
        load_dataset(name, "humidity")


def test_datasets_registry_and_unknown_name():
    for key in ("growth", "weather", "canadian_weather", "dti", "electricity", "electricity_monday"):
        assert key in DATASETS
    with pytest.raises(ValueError, match="unknown dataset 'mortality'.*growth"):
        load_dataset("mortality")


# ---------------------------------------------------------------------- file datasets
@needs_data
def test_dti_cca_nan_raises_then_drop():
    with pytest.raises(ValueError, match="drop_incomplete") as info:
        load_dataset("dti")
    # the message names no count (it comes before any charge); the counts are attributes for the data holder
    assert "6 of 382" not in str(info.value) and "data holder only" in str(info.value)
    assert (info.value.n_incomplete, info.value.n_records) == (6, 382)
    with pytest.warns(UserWarning, match="dropped 6"):
        da = load_dataset("dti", drop_incomplete=True)
    assert da.dims == (dims.CURVE, dims.T) and da.shape == (376, 93)
    assert da.attrs["n_dropped"] == 6 and isinstance(da.attrs["n_dropped"], int)
    assert np.isfinite(da.values).all()
    assert da.attrs["variable"] == "cca" and Path(da.attrs["data_path"]).name == "dti.nc"
    for c in ("sex", "subject_id", "visit"):
        assert c in da.coords and da[c].dims == (dims.CURVE,)
    np.testing.assert_allclose(da[dims.T].values[[0, -1]], [0.0, 1.0])
    assert da[dims.CURVE].size == 376 and da[dims.CURVE].values.max() == 381  # source row index kept
    assert ((da.values >= 0) & (da.values <= 1)).all()  # FA lies in [0, 1]


@needs_data
def test_dti_rcst_and_unknown_variable():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        da = load_dataset("dti", "rcst", drop_incomplete=True)
    assert da.sizes[dims.T] == 55 and da.attrs["n_dropped"] == 382 - da.sizes[dims.CURVE] > 0
    with pytest.raises(ValueError, match="cca, rcst"):
        load_dataset("dti", "fa")


@needs_data
@pytest.mark.parametrize("name", ["electricity", "electricity_monday"])
def test_electricity(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # complete data: no warning
        da = load_dataset(name)
    assert da.dims == (dims.CURVE, dims.T) and da.shape == (508, 48)
    np.testing.assert_allclose(da[dims.T].values, np.arange(1.0, 49.0))
    assert da.attrs["units"] == "MW" and da.attrs["n_dropped"] == 0 and da.attrs["dataset"] == "electricity_monday"
    assert "day" in da.coords and da["day"].dims == (dims.CURVE,)
    # the loaded grid works with the package's grid builder
    g = Grid.from_points(da[dims.T].values)
    assert g.size == 48 and g.lower == 1.0 and g.upper == 48.0


@needs_data
def test_shared_files_never_modified():
    before = {p.name: (_sha(p), p.stat().st_mtime_ns) for p in SHARED.glob("*.nc")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        da = load_dataset("dti", drop_incomplete=True)
        load_dataset("electricity")
    da.values[:] = 0.0  # mutating the result must not reach the file
    after = {p.name: (_sha(p), p.stat().st_mtime_ns) for p in SHARED.glob("*.nc")}
    assert before == after


def test_env_var_respected(tmp_path, monkeypatch):
    _write_nc(tmp_path / "electricity_monday.nc", two_vars=False)
    # the file's only 2-D variable is "y", so the registry's "demand" is missing
    monkeypatch.setenv("FDP_PPL_DATA_DIR", str(tmp_path))
    assert data_directory() == tmp_path
    with pytest.raises(ValueError, match="unknown variable 'demand'.*available: scalar_per_unit, y"):
        load_dataset("electricity")
    xr.Dataset({"demand": (("day", "halfhour"), np.ones((3, 4)))},
               coords={"halfhour": [1.0, 2.0, 3.0, 4.0]}).to_netcdf(tmp_path / "electricity_monday.nc",
                                                                     engine="scipy")
    da = load_dataset("electricity")
    assert da.shape == (3, 4) and Path(da.attrs["data_path"]).parent == tmp_path.resolve()
    # the argument beats the environment variable
    other = tmp_path / "other"
    other.mkdir()
    assert data_directory(other) == other
    with pytest.raises(FileNotFoundError, match="FDP_PPL_DATA_DIR") as info:
        load_dataset("electricity", data_dir=other)
    assert str(other) in str(info.value) and "data_dir" in str(info.value)


def test_missing_file_names_directory_and_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("FDP_PPL_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        load_dataset("dti")
    msg = str(info.value)
    assert str(tmp_path) in msg and "FDP_PPL_DATA_DIR" in msg and "data_dir" in msg and "dti.nc" in msg
    with pytest.raises(FileNotFoundError, match="not found"):
        load_dataset(tmp_path / "nothing.nc")


def test_nc_path_with_var_and_errors(tmp_path):
    path = tmp_path / "toy.nc"
    src = _write_nc(path)
    digest = _sha(path)
    with pytest.raises(ValueError, match="2 2-D variables.*y, z.*var="):
        load_dataset(path)
    with pytest.raises(ValueError, match="unknown variable .w.*scalar_per_unit, y, z"):
        load_dataset(str(path), "w")
    with pytest.raises(ValueError, match="exactly 2 dims"):
        load_dataset(path, "scalar_per_unit")
    # the record dim (the privacy unit) comes from names: "unit" is neither "curve" nor the other dim of "t"
    with pytest.raises(ValueError, match=r"\('unit', 's'\).*record_dim=s or record_dim=unit"):
        load_dataset(path, "y")
    da = load_dataset(path, "y", record_dim="unit")
    assert da.dims == (dims.CURVE, dims.T) and da.shape == (6, 8)
    np.testing.assert_allclose(da.values, src["y"].values)
    np.testing.assert_allclose(da[dims.T].values, np.linspace(10.0, 17.0, 8))  # original grid
    assert list(da["group"].values) == list("aabbcc")
    assert da.attrs["dataset"] == "toy" and da.attrs["variable"] == "y" and da.attrs["n_dropped"] == 0
    assert da.attrs["data_path"] == str(path.resolve())
    # "z" (dims (s, unit)): no name says which dim is the record (never by position) -> refused
    with pytest.raises(ValueError, match=r"\('s', 'unit'\).*record_dim=unit or record_dim=s"):
        load_dataset(path, "z")
    # naming it: curves along "unit", grid along "s" (curve_dim is an alias of record_dim)
    for kw in ({"t_dim": "s"}, {"record_dim": "unit"}, {"curve_dim": "unit"}, {"curve_dim": "unit", "t_dim": "s"}):
        zz = load_dataset(path, "z", **kw)
        assert zz.dims == (dims.CURVE, dims.T) and zz.shape == (6, 8)
        np.testing.assert_allclose(zz.values, src["z"].values.T)
        np.testing.assert_allclose(zz[dims.T].values, np.linspace(10.0, 17.0, 8))
    with pytest.raises(ValueError, match="not a dim"):
        load_dataset(path, "y", t_dim="time")
    assert _sha(path) == digest  # input file never modified


def test_nc_single_variable_and_incomplete(tmp_path):
    path = tmp_path / "one.nc"
    _write_nc(path, with_nan=True, two_vars=False)
    with pytest.raises(ValueError, match="has curves with NaN.*drop_incomplete=True"):
        load_dataset(path, record_dim="unit")  # var not needed: a single 2-D variable
    with pytest.warns(UserWarning, match="dropped 1"):
        da = load_dataset(path, drop_incomplete=True, record_dim="unit")
    assert da.shape == (5, 8) and da.attrs["n_dropped"] == 1
    assert 2 not in da[dims.CURVE].values


def test_data_dir_relative_nc_name(tmp_path):
    _write_nc(tmp_path / "toy.nc")
    da = load_dataset("toy.nc", "y", data_dir=tmp_path, record_dim="unit")
    assert da.shape == (6, 8)


def test_default_data_directory_is_the_package_data(monkeypatch):
    """The real datasets ship with the package; no directory beside the checkout is needed."""
    monkeypatch.delenv("FDP_PPL_DATA_DIR", raising=False)
    import fdp_ppl

    expected = Path(fdp_ppl.__file__).resolve().parent / "datasets" / "data"
    assert data_directory() == expected
    assert {p.name for p in expected.glob("*.nc")} == {"dti.nc", "electricity_monday.nc", "growth.nc"}
    assert (expected / "README.md").is_file() and "GNU General Public License" in (expected / "LICENSE").read_text()
    assert load_dataset("dti", "cca", missing="impute").sizes["curve"] == 382


def test_no_tracked_file_points_outside_the_repository():
    """Nothing in the repository refers to the workplace's folders (a user's checkout has neither)."""
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    patterns = ["..", "/shared"], ["/wor", "k/"]
    for parts in patterns:
        res = subprocess.run(["git", "grep", "-n", "-F", "".join(parts)], cwd=repo, capture_output=True, text=True)
        if res.returncode == 128:
            pytest.skip("not a git checkout")
        assert res.stdout == "", res.stdout


# ---------------------------------------------------------------------- ICLP simulation designs
def _f(t, a, b):
    return math.exp(-0.5 * ((t - a) / b) ** 2) / (b * math.sqrt(2 * math.pi))


def test_iclp_means_against_hand_values():
    g = Grid.uniform(11)  # t = 0, 0.1, ..., 1
    s1, s2, s3 = (iclp_mean_function(d, g) for d in ("S-1", "S2", 3))
    for k, t in enumerate(g.t):
        assert s1[k] == pytest.approx(10 * t * math.exp(-t), rel=1e-12)
        assert s2[k] == pytest.approx(0.3 * _f(t, 0.3, 0.05) + 0.7 * _f(t, 0.8, 0.05), rel=1e-12, abs=1e-300)
        assert s3[k] == pytest.approx(0.2 * (_f(t, 0, .03) + _f(t, .2, .05) + _f(t, .5, .05) - _f(t, .75, .03)
                                             + _f(t, 1, .03)), rel=1e-12, abs=1e-300)
    # a few hand-computed numbers
    assert s1[5] == pytest.approx(5 * math.exp(-0.5)) and s1[5] == pytest.approx(3.032653, abs=1e-6)
    assert s2[3] == pytest.approx(0.3 / (0.05 * math.sqrt(2 * math.pi)), rel=1e-9)  # 2.393654 at t = 0.3
    assert s2[8] == pytest.approx(0.7 / (0.05 * math.sqrt(2 * math.pi)), rel=1e-9)  # 5.585192 at t = 0.8
    assert s3[0] == pytest.approx(2.660151, abs=1e-5)  # sup of S-3 (specs/iclp.md §3.2)
    # L2 norms on [0, 1] from the spec: 2.843, 1.809, 1.098
    fine = Grid.uniform(4001)
    norms = [float(fine.norm(iclp_mean_function(d, fine))) for d in ("S-1", "S-2", "S-3")]
    np.testing.assert_allclose(norms, [2.843, 1.809, 1.098], atol=2e-3)
    with pytest.raises(ValueError, match="S-1, S-2, S-3, S-4"):
        iclp_mean_function("S-5", g)


def test_s4_in_span_of_first_25_eigenfunctions():
    g = Grid.uniform(80)
    basis = eigenbasis(Matern(rho=0.1, nu=1.5), g)
    mu = iclp_mean_function("S-4", g, random_seed=3)
    c = basis.coefficients(mu)
    assert np.abs(c[:25]).max() <= 1.0 and np.abs(c[:25]).max() > 0.5
    np.testing.assert_allclose(c[25:], 0.0, atol=1e-9)
    np.testing.assert_allclose(basis.reconstruct(c[:25]), mu, atol=1e-9)
    np.testing.assert_array_equal(mu, iclp_mean_function("S-4", g, random_seed=3))
    assert not np.allclose(mu, iclp_mean_function("S-4", g, random_seed=4))
    with pytest.raises(ValueError, match="25 eigenfunctions"):
        iclp_mean_function("S-4", Grid.uniform(20))
    with pytest.raises(ValueError, match="different grid"):
        iclp_mean_function("S-4", Grid.uniform(81), basis=basis)


@pytest.mark.parametrize("design", ["S-1", "S-2", "S-3", "S-4"])
@pytest.mark.parametrize("error", ["gp", "t5"])
def test_simulate_iclp_shapes_and_reproducibility(design, error):
    g = Grid.uniform(100)
    ds = simulate_iclp(design, 12, g, error=error, random_seed=7)
    assert ds["curves"].dims == (dims.CURVE, dims.T) and ds["curves"].shape == (12, 100)
    assert ds["mean"].dims == (dims.T,)
    np.testing.assert_array_equal(ds[dims.T].values, g.t)
    assert ds.attrs["design"] == design and ds.attrs["error"] == error and ds.attrs["n"] == 12
    assert np.isfinite(ds["curves"].values).all()
    again = simulate_iclp(design, 12, g, error=error, random_seed=7)
    xr.testing.assert_identical(ds, again)
    other = simulate_iclp(design, 12, g, error=error, random_seed=8)
    assert not np.allclose(ds["curves"].values, other["curves"].values)
    if design != "S-4":
        np.testing.assert_array_equal(ds["mean"].values, iclp_mean_function(design, g))
    else:
        assert ds["mean_coefficients"].shape == (25,)
    # a Generator is accepted and advanced
    rng = np.random.default_rng(1)
    a = simulate_iclp(design, 3, g, error=error, random_seed=rng)
    b = simulate_iclp(design, 3, g, error=error, random_seed=rng)
    assert not np.allclose(a["curves"].values, b["curves"].values)


def test_gp_error_covariance_matches_kernel():
    g = Grid.uniform(30)
    n = 6000
    ds = simulate_iclp("S-1", n, g, random_seed=11)
    e = ds["curves"].values - ds["mean"].values
    emp = e.T @ e / n
    target = Gaussian(rho=0.1, convention="hall").gram(g.t)
    assert np.abs(emp - target).max() < 0.1
    assert np.abs(e.mean(axis=0)).max() < 0.1
    # error_scale is the standard deviation, and a custom kernel is used
    ds2 = simulate_iclp("S-1", n, g, error_kernel=Matern(rho=0.2, nu=2.5), error_scale=2.0, random_seed=12)
    e2 = ds2["curves"].values - ds2["mean"].values
    target2 = 4.0 * Matern(rho=0.2, nu=2.5).gram(g.t)
    assert np.abs(e2.T @ e2 / n - target2).max() < 0.4
    assert ds2.attrs["error_kernel_name"] == "matern52" and ds2.attrs["error_scale"] == 2.0


def test_gp_errors_on_singular_kernel_do_not_fail():
    # a very smooth RBF on a fine grid has a numerically singular Gram matrix (Cholesky would fail)
    g = Grid.uniform(300)
    ds = simulate_iclp("S-2", 5, g, error_kernel=Gaussian(rho=0.5, convention="hall"), random_seed=0)
    assert np.isfinite(ds["curves"].values).all()


def test_t5_errors_are_t5_coefficients_on_the_basis():
    g = Grid.uniform(150)
    basis = eigenbasis(Matern(rho=0.1, nu=1.5), g)
    assert basis.size > 100
    ds = simulate_iclp("S-1", 200, g, error="t5", random_seed=5)
    c = basis.coefficients(ds["curves"].values - ds["mean"].values)
    np.testing.assert_allclose(c[:, 100:], 0.0, atol=1e-8)  # exactly 100 terms (Appendix D.1)
    u = c[:, :100].ravel()
    assert stats.kstest(u, stats.t(df=5).cdf).pvalue > 1e-3
    assert stats.kstest(u, stats.norm(scale=np.sqrt(5 / 3)).cdf).pvalue < 1e-3  # heavier tails than Normal
    # sqrt-eigenvalue variant: coefficients / sqrt(lambda_j) are t5
    ds2 = simulate_iclp("S-1", 200, g, error="t5", t5_scaling="sqrt_eigenvalue", error_scale=0.5,
                        random_seed=5)
    c2 = basis.coefficients(ds2["curves"].values - ds2["mean"].values)[:, :100]
    u2 = (c2 / (0.5 * np.sqrt(basis.eigenvalues[:100]))).ravel()
    assert stats.kstest(u2, stats.t(df=5).cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="100 eigenfunctions"):
        simulate_iclp("S-1", 5, Grid.uniform(60), error="t5")
    assert simulate_iclp("S-1", 5, Grid.uniform(60), error="t5", n_terms=40).attrs["n_terms"] == 40


def test_simulate_iclp_bad_input():
    g = Grid.uniform(50)
    with pytest.raises(ValueError, match="unknown error"):
        simulate_iclp("S-1", 5, g, error="laplace")
    with pytest.raises(ValueError, match="n must be"):
        simulate_iclp("S-1", 0, g)
    with pytest.raises(ValueError, match="error_scale"):
        simulate_iclp("S-1", 5, g, error_scale=-1.0)
    with pytest.raises(TypeError, match="Grid"):
        simulate_iclp("S-1", 5, np.linspace(0, 1, 10))
    assert simulate_iclp("S-1", 2, 40)["curves"].shape == (2, 40)  # int grid -> Grid.uniform


# ---------------------------------------------------------------------- Mirshani et al. (2019), Section 5
def test_mirshani_design():
    ds = simulate_mirshani(random_seed=2)
    assert ds["curves"].shape == (25, 100) and ds["curves"].dims == (dims.CURVE, dims.T)
    g = Grid.uniform(100)
    np.testing.assert_array_equal(ds[dims.T].values, g.t)
    np.testing.assert_allclose(ds["mean"].values, 0.1 * np.sin(np.pi * g.t))
    tau = ds.attrs["tau_a_priori"]
    assert tau == pytest.approx(0.4868, abs=1e-4)
    assert tau == pytest.approx(float(g.norm(0.1 * np.sin(np.pi * g.t))) + 0.4 * math.sqrt(sum(j**-4.0 for j in range(1, 51))))
    norms = g.norm(ds["curves"].values)
    assert (norms <= tau + 1e-12).all() and ds.attrs["tau_data"] == pytest.approx(norms.max())
    # structure of eq. (4): coefficients on v_j are j^{-p/2} U_ij with U in (-0.4, 0.4), zero beyond m
    basis = eigenbasis(Gaussian(rho=0.001, convention="mirshani"), g)
    c = basis.coefficients(ds["curves"].values - ds["mean"].values)
    j = np.arange(1, 51)
    u = c[:, :50] * j**2.0
    np.testing.assert_allclose(u, ds["scores"].values, atol=1e-8)
    assert np.abs(u).max() < 0.4 and np.abs(u).max() > 0.3
    np.testing.assert_allclose(c[:, 50:], 0.0, atol=1e-10)
    xr.testing.assert_identical(ds, simulate_mirshani(random_seed=2))
    assert not np.allclose(ds["curves"].values, simulate_mirshani(random_seed=3)["curves"].values)


def test_mirshani_bound_is_tight_for_extreme_scores():
    # many curves: the a-priori bound holds and is nearly attained
    ds = simulate_mirshani(n=2000, random_seed=4)
    g = Grid.uniform(100)
    norms = g.norm(ds["curves"].values)
    assert norms.max() <= ds.attrs["tau_a_priori"] and norms.max() > 0.9 * ds.attrs["tau_a_priori"]


def test_mirshani_bad_input():
    with pytest.raises(ValueError, match="retains"):
        simulate_mirshani(grid=Grid.uniform(30), m=50)
    with pytest.raises(ValueError, match="n must be"):
        simulate_mirshani(n=0)
    ds = simulate_mirshani(n=3, grid=40, m=10, p=2, random_seed=1)
    assert ds["curves"].shape == (3, 40) and ds["scores"].shape == (3, 10) and ds.attrs["p"] == 2.0



def test_the_missing_values_message_names_the_real_variable_or_none(tmp_path):
    """A table has no variable name: the message leaves it out (it said ``variable 'None'``); a NetCDF file's
    variable is named."""
    nc = tmp_path / "one.nc"
    _write_nc(nc, with_nan=True, two_vars=False)
    table = tmp_path / "table.csv"
    frame = xr.open_dataset(nc)["y"].to_pandas()
    frame.columns = [f"{c:g}" for c in frame.columns]
    frame.rename_axis("id").to_csv(table)
    with pytest.raises(ValueError) as info:
        load_dataset(table)
    assert "None" not in str(info.value) and "'table' has curves with NaN" in str(info.value)
    with pytest.raises(ValueError, match="'one' variable 'y' has curves with NaN"):
        load_dataset(nc, record_dim="unit")
