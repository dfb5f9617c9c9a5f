import numpy as np
import pytest
import xarray as xr
from scipy import integrate, stats

import fdp_ppl as fp
from fdp_ppl.inference import (GPPrior, ICLPPrior, CustomPrior, credible_band, functionals, infer,
                               normal_laplace_logp, summarize_functionals)
from fdp_ppl.inference.infer import _grid_to_basis


@pytest.fixture(scope="module")
def setting():
    g = fp.Grid.uniform(30)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * rng.standard_normal((400, 30))
    return g, b, X


def test_normal_laplace_logp_matches_numerical_convolution():
    import pytensor

    x = np.array([-3.0, -0.4, 0.0, 0.2, 1.5, 40.0])
    for g, b in [(0.3, 0.2), (0.05, 1.0), (2.0, 0.1)]:
        f = pytensor.function([], normal_laplace_logp(x, g, b), mode="CVM")
        got = f()
        for xi, v in zip(x, got):
            if abs(xi) > 10:  # far tail: compare with the exact Laplace-dominated asymptote
                assert np.isfinite(v)
                continue
            span = 40 * (g + b)
            ref = integrate.quad(lambda u: stats.norm.pdf(xi - u, 0, g) * stats.laplace.pdf(u, 0, b),
                                 min(0.0, xi) - span, max(0.0, xi) + span, points=sorted({0.0, xi}), limit=400)[0]
            assert v == pytest.approx(np.log(ref), abs=1e-6)


def _closed_form(tr, basis, grid, amp, rho):
    y = tr["posterior"]["coefficients"].values[0, 0]
    sc = tr["constant_data"]["noise_scale"].values
    A = _grid_to_basis({"eigenfunctions": basis.eigenfunctions, "quadrature_weights": grid.weights}, grid.t)
    Kf = amp**2 * (fp.Matern(rho=rho, nu=1.5).gram(grid.t) + 1e-6 * np.eye(grid.size))
    P = A @ Kf @ A.T
    C = P + np.diag(sc**2)
    mean = P @ np.linalg.solve(C, y)
    cov = P - P @ np.linalg.solve(C, P)
    return mean, cov


def test_conjugate_case_exact_draws_match_closed_form(setting):
    g, b, X = setting
    s = fp.rkhs_mean(X, b, tau=1.5)
    tr = fp.release(s, fp.GaussianMechanism(1.0, 0.1), random_seed=1, study=True)
    prior = GPPrior(lengthscale=0.2, amplitude=0.5, mean=0.0)
    post = infer(tr, prior, draws=2000, chains=2, random_seed=3, progressbar=False, target="summary")
    assert post.attrs["inference"] == "exact"  # no free parameter: exact Gaussian draws, no MCMC
    mean, cov = _closed_form(tr, b, g, 0.5, 0.2)
    draws = post["posterior"]["coefficients"].values.reshape(-1, b.size)
    se = np.sqrt(np.diag(cov) / draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * se + 1e-12)
    np.testing.assert_allclose(draws.std(0), np.sqrt(np.diag(cov)), rtol=0.08, atol=1e-9)


@pytest.mark.filterwarnings("ignore:MCMC diagnostics failed:fdp_ppl.inference.InferenceWarning")  # R-hat 1.011
def test_conjugate_case_nuts_matches_closed_form(setting):
    """NUTS on an explicit-curve Gaussian prior (user fragment) against the closed form."""
    import pymc as pm
    import pytensor.tensor as pt

    g, b, X = setting
    s = fp.rkhs_mean(X, b, tau=1.5)
    tr = fp.release(s, fp.GaussianMechanism(1.0, 0.1), random_seed=1, study=True)
    L = np.linalg.cholesky(0.25 * (fp.Matern(rho=0.2, nu=1.5).gram(g.t) + 1e-6 * np.eye(g.size)))

    def fragment(t, phi, w):
        z = pm.Normal("z", 0.0, 1.0, dims="t")
        return pm.Deterministic("curve", pt.dot(L, z), dims="t"), None

    post = infer(tr, CustomPrior(fragment), draws=1000, tune=600, random_seed=4, progressbar=False, target="summary")
    mean, cov = _closed_form(tr, b, g, 0.5, 0.2)
    draws = post["posterior"]["coefficients"].values.reshape(-1, b.size)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(draws.mean(0) - mean) < 0.15 * sd + 1e-9)
    np.testing.assert_allclose(draws.std(0)[:8], sd[:8], rtol=0.15)


def _exact_replicate(basis, grid, rng, amp=0.5, rho=0.2):
    """One simulation-based-calibration replicate: truth from the prior, Gaussian release, exact posterior."""
    A = _grid_to_basis({"eigenfunctions": basis.eigenfunctions, "quadrature_weights": grid.weights}, grid.t)
    Kf = amp**2 * (fp.Matern(rho=rho, nu=1.5).gram(grid.t) + 1e-6 * np.eye(grid.size))
    f = np.linalg.cholesky(Kf) @ rng.standard_normal(grid.size)
    return f, A @ f


def test_coverage_and_gain_over_raw_release_conjugate(setting):
    """SBC-style check with exact posteriors: 90% pointwise bands cover the truth ~90%,
    and the posterior mean beats the raw release."""
    g, b, X = setting
    rng = np.random.default_rng(11)
    s = fp.rkhs_mean(X, b, tau=1.5)
    mech = fp.GaussianMechanism(1.0, 0.1)
    base = fp.release(s, mech, random_seed=0, study=True)
    scale = base["constant_data"]["noise_scale"].values
    hits, total, err_post, err_raw = 0, 0, 0.0, 0.0
    prior = GPPrior(lengthscale=0.2, amplitude=0.5, mean=0.0)
    for r in range(40):
        f, theta = _exact_replicate(b, g, rng)
        y = theta + scale * rng.standard_normal(theta.size)
        tr = base.copy(deep=True)
        tr["posterior"]["coefficients"].values[0, 0] = y
        post = infer(tr, prior, draws=400, chains=1, random_seed=r, progressbar=False, target="summary")
        band = credible_band(post, ci_prob=0.9, ci_kind="eti", var="coefficients")
        hits += np.sum((band.lower.values <= theta) & (theta <= band.upper.values))
        total += theta.size
        err_post += np.sum((band["mean"].values - theta) ** 2)
        err_raw += np.sum((y - theta) ** 2)
    lo, hi = stats.binomtest(int(hits), total).proportion_ci(0.99)
    assert lo <= 0.9 <= hi + 0.02, (hits / total, lo, hi)
    assert err_post < err_raw


def test_inference_reads_only_public_content(setting):
    g, b, X = setting
    s = fp.iclp_qr_mean(X, b, tau=1.5)
    tr = fp.release(s, fp.GaussianMechanism(1.0, 0.1), random_seed=1, study=True)
    prior = GPPrior(lengthscale=0.2, amplitude=0.5, mean=0.0)
    a = infer(tr, prior, draws=50, chains=1, random_seed=5, progressbar=False, target="summary")
    poisoned = tr.copy(deep=True)
    poisoned["posterior"]["summary_coefficients"] = ("basis", np.full(b.size, np.nan))
    poisoned["constant_data"]["secret_curve"] = ("t", np.full(g.size, np.nan))
    poisoned.attrs["n_clipped"] = -1
    c = infer(poisoned, prior, draws=50, chains=1, random_seed=5, progressbar=False, target="summary")
    np.testing.assert_array_equal(a["posterior"]["curve"].values, c["posterior"]["curve"].values)


def test_output_groups_bands_and_functionals(setting, tmp_path):
    g, b, X = setting
    s = fp.iclp_qr_mean(X, b, tau=1.5)
    tr = fp.release(s, fp.ICLP(1.0), random_seed=1, study=True)
    path = tmp_path / "r.nc"
    tr.to_netcdf(path)
    post = infer(xr.open_datatree(path), ICLPPrior(), draws=300, tune=300, random_seed=2, progressbar=False, target="summary")
    assert {"posterior", "sample_stats", "observed_data", "log_likelihood"} <= set(post.children)
    assert post["posterior"]["curve"].dims == ("chain", "draw", "t")
    assert post["log_likelihood"]["released"].dims == ("chain", "draw", "basis")
    np.testing.assert_allclose(post["observed_data"]["released"].values, tr["posterior"]["coefficients"].values[0, 0])
    band = credible_band(post, ci_prob=0.9, ci_kind="hdi")
    assert np.all(band.lower <= band.upper) and band.attrs["ci_kind"] == "hdi"
    fun = functionals(post, points=(0.25,))
    summ = summarize_functionals(fun, ci_prob=0.8, ci_kind="eti")
    assert set(summ.data_vars) == {"integral", "max", "argmax", "value_at_0.25"}
    with pytest.raises(ValueError):
        credible_band(post, ci_prob=1.2, ci_kind="eti")
    with pytest.raises(ValueError):
        credible_band(post, ci_prob=0.9, ci_kind="box")
    for k in ("diagnostic_max_rhat", "diagnostic_divergences", "prior", "target", "release_mechanism"):
        assert k in post.attrs


def test_bad_requests(setting):
    g, b, X = setting
    tr = fp.release(fp.iclp_ar_mean(X, b, tau=1.5), fp.ICLP(1.0), random_seed=1, study=True)
    with pytest.raises(ValueError, match="target"):
        infer(tr, "gp", target="everything")
    with pytest.raises(ValueError, match="linear"):
        infer(tr, "gp", target="population")
    with pytest.raises(ValueError, match="prior"):
        infer(tr, "spline", target="summary")
