"""Fast tests of the Lin & Reimherr (2026) Table 1 / Table 2 reproductions
(``studies.timing`` and ``studies.real_data``)."""

import warnings

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.errors import PrivacyLeakWarning
from studies import real_data as rd
from studies import real_data_diagnostics as rdd
from studies import timing


def _data_available():
    try:
        from fdp_ppl.datasets.loaders import data_directory

        d = data_directory()
        return (d / "dti.nc").is_file() and (d / "electricity_monday.nc").is_file()
    except Exception:
        return False


needs_data = pytest.mark.skipif(not _data_available(), reason="shared data files (dti.nc, electricity_monday.nc) absent")


# ----------------------------------------------------------------------------- paper constants
def test_paper_table2_constants():
    assert set(rd.PAPER_TABLE2) == {"electricity", "dti"}
    for ds, by_k in rd.PAPER_TABLE2.items():
        assert set(by_k) == {"C1.5", "C2.5"}
        for cols in by_k.values():
            assert set(cols) == set(rd.MECHANISMS)
            for vals, ses in cols.values():
                assert len(vals) == len(ses) == len(rd.PAPER_EPSILONS[ds]) == 6
                assert all(v > 0 for v in vals) and all(s > 0 for s in ses)
    # spot checks against the paper, and the "40.3801" erratum
    assert rd.paper_value("electricity", "C1.5", "frl", 0.125) == (0.2828, 0.1981)
    assert rd.paper_value("dti", "C2.5", "iclp-qr", 2.0) == (4.7453, 4.0892)
    assert rd.paper_value("dti", "C1.5", "frl", 7.0)[0] == pytest.approx(0.3801)
    assert ("dti", "C1.5", "frl", 7.0) in rd.PAPER_TABLE2_ERRATA
    assert np.isnan(rd.paper_value("dti", "C1.5", "frl", 0.3)[0])
    assert "Table 2" in rd.PAPER_TABLE2_SOURCE


def test_paper_table1_constants():
    assert len(timing.PAPER_TABLE1) == 12
    assert timing.PAPER_TABLE1[("exponential", 500)] == (29.98454, 20.90210)
    assert timing.PAPER_TABLE1[("matern52", 100)] == (0.551222, 0.271477)
    for (k, K), (iclp, gp) in timing.PAPER_TABLE1.items():
        assert k in timing.KERNELS and K in timing.GRID_SIZES and iclp > gp > 0  # paper: GP faster


def test_column_readings_are_permutations():
    for mapping in rd.COLUMN_READINGS.values():
        assert sorted(mapping) == sorted(rd.MECHANISMS) and sorted(mapping.values()) == sorted(rd.MECHANISMS)
    cyc = rd.COLUMN_READINGS["cyclic"]
    assert cyc["bernstein"] == "iclp-ar" and cyc["iclp-qr"] == "bernstein" and cyc["iclp-ar"] == "iclp-qr"
    tidy = rd.paper_table("cyclic")
    assert len(tidy) == 2 * 2 * 4 * 6
    row = tidy[(tidy.dataset == "electricity") & (tidy.kernel == "C1.5") & (tidy.mechanism == "bernstein")
               & (tidy.epsilon_label == 4.0)]
    assert float(row.value.iloc[0]) == 0.0793  # printed under ICLP-AR


def test_paper_numbers_decay_like_a_doubling_epsilon_grid():
    r = rdd.paper_difference_ratios()
    assert len(r) == 16
    dti = r[r.dataset == "dti"]
    # floor-free ratios: ~4 for a doubling grid; 2.86 expected for labels 2, 3, 4 read literally
    assert dti.median_ratio.between(3.5, 4.5).all()
    assert dti.expected_if_printed_eps.iloc[0][0] == pytest.approx(2.86, abs=0.01)
    k = rdd.paper_floor_kernel_dependence()
    ar = k[k.printed_column == "iclp-ar"].relative_difference
    others = k[k.printed_column.isin(["iclp-qr", "bernstein"])].relative_difference
    assert ar.max() < 0.005 < others.min()  # only the printed ICLP-AR column is kernel-free


# ----------------------------------------------------------------------------- transforms
def test_standardise_curves_unit_norm_and_per_record(rng):
    x = rng.normal(size=(6, 25)) * 3 + 10
    x[2] = 4.0  # constant curve
    da = xr.DataArray(x, dims=("curve", "t"), coords={"t": np.linspace(0, 1, 25)})
    before = da.copy()
    for w in (None, fp.Grid.uniform(25).weights):
        z = rd.standardise_curves(da, w)
        ww = np.full(25, 1 / 25) if w is None else w
        norms = np.sqrt((z.values**2) @ ww)
        assert np.allclose(np.delete(norms, 2), 1.0) and np.allclose(z.values[2], 0.0)
        assert np.allclose(z.values @ ww, 0.0)
    xr.testing.assert_identical(da, before)  # input untouched
    # per-record map: replacing one record changes only its own row
    da2 = da.copy(data=x.copy())
    da2[0] = rng.normal(size=25)
    z1, z2 = rd.standardise_curves(da), rd.standardise_curves(da2)
    assert np.allclose(z1.values[1:], z2.values[1:]) and not np.allclose(z1.values[0], z2.values[0])


def test_dti_subjects_counts():
    da = xr.DataArray(np.zeros((6, 3)), dims=("curve", "t"),
                      coords={"subject_id": ("curve", [1, 1, 1, 2, 3, 3])})
    info = rd.dti_subjects(da)
    assert info == {"n_scans": 6, "n_subjects": 3, "max_scans_per_subject": 3,
                    "scans_per_subject_histogram": {1: 1, 2: 1, 3: 1}}


# ----------------------------------------------------------------------------- exact vs Monte Carlo
@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(5)
    grid = fp.Grid.uniform(30)
    t = grid.t
    x = np.sin(2 * np.pi * t) * 0.4 + 0.2 * rng.standard_normal((25, 30))
    da = xr.DataArray(x, dims=("curve", "t"), coords={"t": t})
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    return da, grid, basis, x.mean(axis=0)


@pytest.mark.parametrize("name", ["frl", "iclp-qr", "bernstein"])
def test_exact_expectation_matches_monte_carlo(tiny, name):
    da, grid, basis, xbar = tiny
    summary, mech = {
        "frl": (fp.frl_mean(da, basis, tau=1.0, M=4), fp.FRL),
        "iclp-qr": (fp.iclp_qr_mean(da, basis, tau=1.0), fp.ICLP),
        "bernstein": (fp.bernstein_mean(da, grid, tau_inf=1.5, k=8), fp.Bernstein),
    }[name]
    eps = np.array([0.5, 2.0, 8.0])
    mc = rd.mc_errors(summary, mech, xbar, eps, bound="tight", replicates=3, draws=3000, random_seed=11)
    for i, e in enumerate(eps):
        bias2, noise = rd.exact_error(summary, mech(e), xbar, "tight")
        assert bias2 > 0 and noise > 0
        z = (mc["mean"][i] - (bias2 + noise)) / mc["se"][i]
        assert abs(z) < 4.5, (name, e, z)
        # leaving out either term is detectably wrong
        assert abs(mc["mean"][i] - noise) > 4.5 * mc["se"][i] or abs(mc["mean"][i] - bias2) > 4.5 * mc["se"][i]
    assert np.allclose(mc["se_replicate"], mc["se"] * np.sqrt(3))
    again = rd.mc_errors(summary, mech, xbar, eps, bound="tight", replicates=3, draws=3000, random_seed=11)
    assert np.array_equal(again["mean"], mc["mean"])  # reproducible


def test_noise_energy_scales_as_inverse_epsilon_squared(tiny):
    da, grid, basis, xbar = tiny
    s = fp.iclp_qr_mean(da, basis, tau=1.0)
    _, n1 = rd.exact_error(s, fp.ICLP(1.0), xbar, "paper")
    _, n4 = rd.exact_error(s, fp.ICLP(4.0), xbar, "paper")
    assert n1 == pytest.approx(16 * n4)
    # ICLP: E||xi||^2 = 2 Delta^2 sum(lambda) / eps^2 (specs/iclp.md §1.5)
    delta = s.sensitivity("1,C", "paper").value
    assert n1 == pytest.approx(2 * delta**2 * s.eigenvalues.sum())


# ----------------------------------------------------------------------------- real data
@needs_data
def test_table2_small_run_columns_and_paper_agreement():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = rd.table2(settings=(rd.PAPER_READING,), datasets=("electricity",), kernels=("C1.5",),
                       epsilon_labels={"electricity": (1.0, 4.0)}, replicates=1, draws=300)
    need = {"setting", "dataset", "kernel", "mechanism", "bound", "epsilon_reading", "epsilon_label", "epsilon",
            "n", "tau", "tau_inf", "M", "eta", "psi", "J", "sensitivity", "bias2", "noise_energy", "exact",
            "mc_mean", "mc_se", "mc_z", "rmse_physical", "data_dependent", "paper_printed", "paper_cyclic",
            "paper_qr-bernstein-swap", "paper_se_e3_printed", "rel_diff_cyclic"}
    assert need <= set(df.columns)
    assert len(df) == 4 * 2 * 2  # mechanisms x bounds x eps
    assert np.allclose(df.exact, df.bias2 + df.noise_energy)
    prim = df[df.bound == "paper"]
    assert prim.mc_mean.notna().all() and df[df.bound == "tight"].mc_mean.isna().all()
    r = prim.set_index(["mechanism", "epsilon"])
    # FRL (M = 4, standardised curves) and Bernstein (printed in the ICLP-AR column) reproduce the paper
    assert abs(r.loc[("frl", 4.0), "rel_diff_cyclic"]) < 0.02
    assert abs(r.loc[("bernstein", 4.0), "rel_diff_cyclic"]) < 0.02
    assert abs(r.loc[("bernstein", 4.0), "rel_diff_printed"]) > 0.5  # as printed it does not
    assert r.loc[("frl", 1.0), "M"] == 4 and r.loc[("frl", 1.0), "n"] == 508
    assert bool(r.loc[("bernstein", 1.0), "data_dependent"]) and not r.loc[("frl", 1.0), "data_dependent"]


@needs_data
def test_prepare_settings():
    with pytest.warns(PrivacyLeakWarning):
        p = rd.prepare("dti", rd.PAPER_READING)
    assert p.info["n"] == 376 and p.info["n_dropped"] == 6 and p.info["max_scans_per_subject"] == 7
    assert np.allclose(p.grid.norm(p.curves.values), 1.0)  # tau = 1 by construction
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        q = rd.prepare("electricity", rd.PUBLIC)  # no data-derived quantity
    assert q.divisor == rd.ELECTRICITY_BOUND_MW and q.tau_inf == 1.0
    assert q.curves.values.max() <= 1.0 and q.curves.values.min() >= 0.0


@needs_data
def test_frl_floor_identifies_standardisation_and_m4():
    ident = rdd.frl_floor_identification(Ms=(3, 4, 5))
    ident["err"] = np.abs(np.log(ident.ratio))
    worst = ident.groupby(["normalisation", "M"]).err.max()
    assert worst.idxmin() == ("per-curve standardised", 4)
    assert worst.min() < 0.02


# ----------------------------------------------------------------------------- timing
def test_literal_algorithms_have_the_kernel_covariance():
    grid = fp.Grid.uniform(8)
    kernel = fp.Matern(rho=0.3, nu=1.5)
    rng = np.random.default_rng(3)
    f = np.linspace(-1, 1, 8)
    delta, eps = 0.7, 1.0
    sigma = np.sqrt(2) * delta / eps
    iclp = timing.literal_iclp(kernel, grid, f, delta, eps, 20000, rng)
    gp = timing.literal_gp(kernel, grid, f, 0.5, 20000, rng, timing.gp_jitter(kernel, grid))
    g = kernel.gram(grid.t)
    # Algorithm 1: Z_k ~ sqrt(lambda_k/2) Lap(1) has variance lambda_k, so Cov(noise curve) = sigma^2 G
    # (coefficient Laplace scale sigma sqrt(lambda_k/2) = Delta sqrt(lambda_k)/eps, the canonical calibration)
    assert np.allclose(np.cov(iclp.T), sigma**2 * g, atol=0.05 * sigma**2)
    assert np.allclose(np.cov(gp.T), 0.25 * g, atol=0.02)
    assert np.allclose(iclp.mean(0), f, atol=0.05) and np.allclose(gp.mean(0), f, atol=0.03)


def test_time_table1_tiny():
    df = timing.time_table1(kernels=("exponential", "matern52"), grid_sizes=(16,), draws=2, repeats=1, n_curves=10)
    assert len(df) == 4 and set(df.process) == {"iclp", "gp"}
    for col in ("literal_s", "ours_cold_s", "ours_warm_s", "literal_over_warm", "literal_over_cold",
                "literal_per100_s", "ours_warm_per100_s", "paper_s", "same_law_check", "J"):
        assert col in df
    assert (df[["literal_s", "ours_cold_s", "ours_warm_s", "literal_over_warm"]] > 0).all().all()
    assert df.same_law_check.all() and df.paper_s.isna().all()
    assert df.attrs["first_call_s"] > 0
    wide = timing.compare_with_paper(df)
    assert {"paper_iclp_over_gp", "literal_iclp_over_gp"} <= set(wide.columns)
    ds = timing.to_xarray(df)
    assert set(ds.dims) == {"kernel", "K", "process"}
    with pytest.raises(ValueError, match="unknown kernel"):
        timing.time_table1(kernels=("cosine",), grid_sizes=(12,), draws=1, repeats=1)
