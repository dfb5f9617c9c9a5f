"""Elliptical perturbations (Reimherr & Awan 2019): samplers, densities, ε, (ε, δ), releases."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

import fdp_ppl as fp
from fdp_ppl.noise import elliptical as el

N = 20_000
KS_P = 1e-3


def _families():
    return [el.MultivariateNormal(3), el.MultivariateT(3, 2.5), el.MultivariateLaplace(3), el.EllipsoidalKNorm(3),
            el.PowerExponential(3, 0.5), el.MultivariateLaplace(1), el.MultivariateT(1, 1.0)]


# ---------------------------------------------------------------- samplers and densities
@pytest.mark.parametrize("fam", _families(), ids=repr)
def test_radius_law_and_direction(fam):
    y = fam.sample(N, random_seed=1)
    r = np.linalg.norm(y, axis=1)
    # radius against its law r^{d-1} f(r^2) (closed-form CDF or quadrature of the exact log-density)
    if type(fam).radius_cdf is el.EllipticalFamily.radius_cdf:
        rs = np.sort(r)
        cdf = np.interp(rs, *(lambda g: (g, fam.radius_cdf(g)))(np.quantile(rs, np.linspace(0, 1, 200))))
        assert stats.kstest(rs, lambda x: np.interp(x, rs, cdf)).pvalue > KS_P
    else:
        assert stats.kstest(r, fam.radius_cdf).pvalue > KS_P
    if fam.d > 1:  # direction uniform on the sphere: u_1^2 ~ Beta(1/2, (d-1)/2), E u = 0
        u = y / r[:, None]
        assert stats.kstest(u[:, 0] ** 2, stats.beta(0.5, (fam.d - 1) / 2).cdf).pvalue > KS_P
        assert np.all(np.abs(u.mean(axis=0)) < 5 / math.sqrt(N))


def test_radius_cdf_generic_quadrature_matches_closed_forms():
    for fam in (el.MultivariateT(4, 3.0), el.EllipsoidalKNorm(4), el.MultivariateNormal(2)):
        r = np.array([0.3, 1.0, 2.5])
        assert np.allclose(el.EllipticalFamily.radius_cdf(fam, r), fam.radius_cdf(r), atol=1e-7)


@pytest.mark.parametrize("fam", [el.MultivariateNormal(2), el.MultivariateT(2, 3.0), el.MultivariateLaplace(2),
                                 el.EllipsoidalKNorm(2), el.PowerExponential(2, 0.7)], ids=repr)
def test_logpdf_integrates_to_one(fam):
    f = lambda r: 2 * math.pi * r * math.exp(fam.logpdf(np.array([r, 0.0])))  # noqa: E731
    total = integrate.quad(f, 0, 1, limit=200)[0] + integrate.quad(f, 1, np.inf, limit=200)[0]
    assert total == pytest.approx(1.0, abs=1e-6)


def test_t_logpdf_matches_scipy_and_moments():
    Sigma = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
    mu, sigma, nu = np.array([1.0, -2.0, 0.5]), 1.7, 5.0
    fam = el.MultivariateT(3, nu)
    x = fam.sample(N, loc=mu, sigma=sigma, dispersion=Sigma, random_seed=2)
    ref = stats.multivariate_t(loc=mu, shape=sigma**2 * Sigma, df=nu)
    assert np.allclose(fam.logpdf(x[:50], loc=mu, sigma=sigma, dispersion=Sigma), ref.logpdf(x[:50]))
    assert np.allclose(np.cov(x.T), sigma**2 * nu / (nu - 2) * Sigma, rtol=0.1, atol=0.15)
    assert np.allclose(x.mean(0), mu, atol=0.1)


def test_gaussian_and_laplace_logpdf_and_covariance():
    Sigma = np.array([[1.0, 0.4], [0.4, 2.0]])
    x = np.random.default_rng(3).normal(size=(20, 2))
    assert np.allclose(el.MultivariateNormal(2).logpdf(x, sigma=2.0, dispersion=Sigma),
                       stats.multivariate_normal(cov=4 * Sigma).logpdf(x))
    lap1 = el.MultivariateLaplace(1)  # covariance sigma^2 Sigma: Laplace scale sigma/sqrt(2)
    assert np.allclose(lap1.logpdf(x[:, :1], sigma=1.5), stats.laplace(scale=1.5 / math.sqrt(2)).logpdf(x[:, 0]))
    y = el.MultivariateLaplace(2).sample(N, sigma=1.0, dispersion=Sigma, random_seed=4)
    assert np.allclose(np.cov(y.T), Sigma, atol=0.08)
    k = el.EllipsoidalKNorm(3).sample(N, random_seed=5)  # Cov = (d+1) sigma^2 Sigma
    assert np.allclose(np.cov(k.T), 4 * np.eye(3), atol=0.25)


@pytest.mark.parametrize("fam", [el.MultivariateLaplace(3), el.EllipsoidalKNorm(3)], ids=repr)
def test_gaussian_scale_mixture_identities(fam):
    """[D] Laplace: W ~ Exp(1); ellipsoidal K-norm: W ~ chi2_{d+1} -- the GSM draw has the family's radius law."""
    rng = np.random.default_rng(6)
    w = fam.mixing.rvs(size=N, random_state=rng)
    r = np.linalg.norm(np.sqrt(w)[:, None] * rng.standard_normal((N, fam.d)), axis=1)
    if isinstance(fam, el.EllipsoidalKNorm):
        assert stats.kstest(r, fam.radius_cdf).pvalue > KS_P
    else:
        assert stats.ks_2samp(r, np.linalg.norm(fam.sample(N, random_seed=7), axis=1)).pvalue > KS_P


@pytest.mark.parametrize("ball", ["l1", "l2", "linf"])
def test_knorm_general_ball_sampler(ball):
    kn = el.KNorm(4, ball)
    u = el.uniform_ball(N, 4, ball, random_seed=8)
    # uniform in the ball: ||U||_K ~ Beta(d, 1); marginal |U_1|: l1 Beta(1, d), linf U(0,1), l2 Beta(1/2,(d+1)/2) of U_1^2
    assert stats.kstest(kn.norm(u), stats.beta(4, 1).cdf).pvalue > KS_P
    marg = {"l1": (np.abs(u[:, 0]), stats.beta(1, 4).cdf), "linf": (np.abs(u[:, 0]), stats.uniform.cdf),
            "l2": (u[:, 0] ** 2, stats.beta(0.5, 2.5).cdf)}[ball]
    assert stats.kstest(*marg).pvalue > KS_P
    x = kn.sample(N, s=0.7, random_seed=9)
    assert stats.kstest(kn.norm(x), stats.gamma(4, scale=0.7).cdf).pvalue > KS_P  # ||X||_K ~ Gamma(d, s)
    assert np.mean(np.sum(x**2, 1)) == pytest.approx(kn.expected_sq_l2(0.7), rel=0.05)
    # density normalised (Monte Carlo importance check against a wide Gaussian)
    g = stats.multivariate_normal(cov=9 * np.eye(4))
    z = g.rvs(200_000, random_state=10)
    assert np.mean(np.exp(kn.logpdf(z, s=0.7) - g.logpdf(z))) == pytest.approx(1.0, rel=0.03)
    # epsilon = Delta_K / s: log-density ratio bounded by it, attained along the shift
    shift = np.array([0.3, -0.2, 0.1, 0.0])
    dk = float(kn.norm(shift))
    lr = kn.logpdf(x, s=0.7) - kn.logpdf(x, loc=shift, s=0.7)
    assert lr.max() <= kn.epsilon(dk, 0.7) + 1e-12
    assert kn.logpdf(-5 * shift, s=0.7) - kn.logpdf(-5 * shift, loc=shift, s=0.7) == pytest.approx(dk / 0.7)


def test_ellipsoidal_knorm_equals_l2_ball_knorm():
    x = np.random.default_rng(11).normal(size=(10, 3))
    assert np.allclose(el.EllipsoidalKNorm(3).logpdf(x, sigma=0.8), el.KNorm(3, "l2").logpdf(x, s=0.8))


def test_seeds_reproduce():
    fam = el.MultivariateT(2, 3.0)
    assert np.array_equal(fam.sample(5, random_seed=3), fam.sample(5, random_seed=3))
    assert not np.array_equal(fam.sample(5, random_seed=3), fam.sample(5, random_seed=4))


# ---------------------------------------------------------------- epsilon (Theorem 3, corrected)
SPEC_TABLE_A = {(1, 1): 0.9624, (1, 100): 48.6024, (3, 5): 2.2785, (10, 10): 3.1492, (100, 1): 5.0479,
                (30, 2): 2.9171}
SPEC_TABLE_B = {(1, 1): 0.9595, (3, 10): 3.7491, (10, 100): 17.3923, (30, 5): 3.1946}


def test_t_closed_form_matches_numeric_and_spec_tables():
    for (nu, d), e in SPEC_TABLE_A.items():
        fam = el.MultivariateT(d, nu)
        assert fam.epsilon(1.0).epsilon == pytest.approx(e, abs=5e-5)
        assert fam.epsilon(1.0, "numeric").epsilon == pytest.approx(fam.epsilon(1.0).epsilon, rel=1e-9)
    for (nu, d), s in SPEC_TABLE_B.items():
        fam = el.MultivariateT(d, nu)
        assert el.calibrate_sigma(fam, 1.0, 1.0) == pytest.approx(s, abs=5e-5)
        assert el.calibrate_sigma(fam, 1.0, 1.0, method="numeric") == pytest.approx(el.calibrate_sigma(fam, 1.0, 1.0),
                                                                                   rel=1e-8)


@pytest.mark.parametrize("fam,expected", [(el.EllipsoidalKNorm(5), lambda a: a),
                                          (el.PowerExponential(3, 0.5), lambda a: a**0.5),
                                          (el.MultivariateLaplace(1), lambda a: math.sqrt(2) * a)], ids=["knorm-d5", "powexp-d3", "laplace-d1"])
def test_closed_forms_numeric(fam, expected):
    for a in (0.1, 0.7, 3.0):
        assert fam.epsilon(a, "numeric").epsilon == pytest.approx(expected(a), rel=1e-7)
        assert fam.epsilon(a).epsilon == pytest.approx(expected(a), rel=1e-12)
    assert el.calibrate_sigma(fam, 0.8, 2.0, method="numeric") == pytest.approx(el.calibrate_sigma(fam, 0.8, 2.0),
                                                                               rel=1e-7)


@pytest.mark.parametrize("fam", [el.MultivariateT(3, 1.5), el.MultivariateT(10, 20.0), el.EllipsoidalKNorm(4),
                                 el.PowerExponential(2, 0.6), el.MultivariateLaplace(1)], ids=repr)
def test_log_density_ratio_never_exceeds_epsilon(fam):
    """Exact log-density ratios over random points, the worst ray and a dense radial grid."""
    Sigma = np.diag(np.linspace(0.5, 2.0, fam.d))
    sigma = 1.3
    h = np.zeros(fam.d)
    h[0] = 0.9 * math.sqrt(Sigma[0, 0])  # Mahalanobis norm 0.9
    delta_m = el.mahalanobis_sensitivity(h, Sigma)
    eps = el.privacy_epsilon(fam, delta_m, sigma)
    assert eps.finite
    x = fam.sample(N, sigma=sigma, dispersion=Sigma, random_seed=12)
    c = np.r_[np.linspace(-50, 50, 20001), np.geomspace(1e-6, 1e5, 2000)]
    ray = c[:, None] * (h / np.linalg.norm(h))[None, :]  # worst direction: the line through both centres
    pts = np.vstack([x, ray, ray + np.random.default_rng(1).normal(0, 1e-3, ray.shape)])
    lr = fam.logpdf(pts, loc=h, sigma=sigma, dispersion=Sigma) - fam.logpdf(pts, sigma=sigma, dispersion=Sigma)
    lr = np.r_[lr, -lr]
    assert lr.max() <= eps.epsilon + 1e-9
    assert lr.max() >= eps.epsilon - 1e-3 * max(eps.epsilon, 1)  # tight (attained on the ray)


def test_theorem3_as_printed_is_wrong():
    """The printed σ^{-2}Δ gives Δ/σ² for the K-norm, but the density ratio attains Δ/σ."""
    fam = el.EllipsoidalKNorm(2)
    sigma, delta_m = 2.0, 1.0
    printed = el.epsilon_theorem3_printed(fam, delta_m, sigma)
    assert printed == pytest.approx(delta_m / sigma**2, rel=1e-6)
    pt_ = np.array([[-10.0, 0.0]])
    ratio = float((fam.logpdf(pt_, sigma=sigma) - fam.logpdf(pt_, loc=[delta_m, 0.0], sigma=sigma))[0])
    assert ratio == pytest.approx(delta_m / sigma, rel=1e-12)
    assert ratio > printed + 0.2
    assert el.privacy_epsilon(fam, delta_m, sigma).epsilon == pytest.approx(ratio)


def test_laplace_d2_and_gaussian_have_no_pure_dp():
    for d in (2, 3):
        res = el.MultivariateLaplace(d).epsilon(0.5)
        assert not res.finite and "pole" in res.reason
        with pytest.raises(el.NoPureDPError, match="pole"):
            el.calibrate_sigma(el.MultivariateLaplace(d), 1.0)
    res = el.MultivariateNormal(3).epsilon(0.5)
    assert not res.finite and "tail" in res.reason
    with pytest.raises(el.NoPureDPError, match="condition \\(2\\)"):
        el.calibrate_sigma(el.MultivariateNormal(1), 1.0)


@pytest.mark.parametrize("d", [2, 3])
def test_laplace_ratio_unbounded_near_centre(d):
    fam = el.MultivariateLaplace(d)
    h = np.zeros(d)
    h[0] = 1.0
    r = np.geomspace(1e-2, 1e-12, 6)
    pts = r[:, None] * np.eye(d)[1][None, :]  # approach the centre 0 off the shift line
    lr = fam.logpdf(pts) - fam.logpdf(pts, loc=h)
    assert np.all(np.diff(lr) > 0) and lr[-1] > lr[0] + (1.0 if d == 2 else 10.0)


def test_non_decreasing_generator_refused():
    with pytest.raises(ValueError, match="nonincreasing"):
        el.epsilon_from_generator(lambda y: y, 1.0)


# ---------------------------------------------------------------- infinite dimensions (Theorem 5, corrected)
SPEC_TABLE_D = {("gaussian", None, 1e-5): (4.941, 3.731), ("t", 30.0, 1e-2): (3.417, 1.915),
                ("t", 3.0, 1e-10): (15.62, 12.20), ("laplace", None, 1e-5): (632.5, 223.6)}


def test_sigma_for_delta_spec_table():
    for (fam, nu, dl), (s5, sx) in SPEC_TABLE_D.items():
        law = el.mixing_law(fam, nu=nu)
        assert el.sigma_for_delta(1.0, dl, 1.0, law, "theorem5") == pytest.approx(s5, rel=2e-3)
        assert el.sigma_for_delta(1.0, dl, 1.0, law, "exact") == pytest.approx(sx, rel=2e-3)


@pytest.mark.parametrize("law", [el.mixing_law("t", nu=3.0), el.mixing_law("laplace"), el.mixing_law("knorm", d=5)],
                         ids=repr)
def test_mgf_of_w_closed_forms(law):
    for L in (0.3, 5.0, 40.0):
        num = law.expect(lambda w: math.exp(-L * w), tail="none")
        assert math.log(num) == pytest.approx(law.log_mgf_w(L), rel=1e-6, abs=1e-9)


def test_theorem5_corrected_vs_monte_carlo_and_printed_is_wrong():
    """At ε = 1, δ' = 1e-10 (spec §3): the printed M_V bound is below the true δ; M_W is above."""
    sigma = math.sqrt(2 * math.log(2 / 1e-10))
    for law, printed_ref in ((el.mixing_law("laplace"), 7.0e-3), (el.mixing_law("t", nu=3.0), 5.2e-7)):
        exact = el.delta_exact(1.0, 1.0, sigma, law)
        corrected = el.delta_theorem5(1.0, 1.0, sigma, law)
        printed = el.delta_theorem5(1.0, 1.0, sigma, law, corrected=False)
        assert printed == pytest.approx(printed_ref, rel=0.02)
        assert printed < exact < corrected
        if law.name == "laplace":
            mc, se = el.delta_monte_carlo(1.0, 1.0, sigma, law, n=400_000, random_seed=13)
            assert abs(mc - exact) < 4 * se
            assert printed < mc - 4 * se  # the printed form is anti-conservative, beyond MC error


def test_delta_exact_matches_monte_carlo_t():
    law = el.mixing_law("t", nu=3.0)
    for eps, sigma in ((0.5, 3.0), (2.0, 1.0)):
        exact = el.delta_exact(eps, 1.0, sigma, law)
        mc, se = el.delta_monte_carlo(eps, 1.0, sigma, law, n=200_000, random_seed=14)
        assert abs(mc - exact) < 4 * se + 1e-12


def test_finite_dim_delta_below_mixture_bound():
    """A d-dimensional t release: the true δ(ε) (exact log-density ratios) <= E_W δ_G; 0 beyond ε_d."""
    fam = el.MultivariateT(3, 3.0)
    law = el.mixing_law("t", nu=3.0)
    sigma = 1.5
    for eps in (0.2, 0.6):
        mc, se = el.delta_monte_carlo_finite(eps, fam, 1.0, sigma, n=100_000, random_seed=15)
        assert mc <= el.delta_exact(eps, 1.0, sigma, law) + 4 * se
    eps_d = fam.epsilon(1.0 / sigma).epsilon
    assert el.delta_monte_carlo_finite(eps_d + 1e-9, fam, 1.0, sigma, n=20_000, random_seed=16)[0] == 0.0


def test_theorem5_refused_above_eps_1():
    with pytest.raises(ValueError, match="refused for epsilon > 1"):
        el.sigma_for_delta(2.0, 1e-5, 1.0, el.mixing_law("laplace"), "theorem5")


# ---------------------------------------------------------------- mechanisms and releases
@pytest.fixture(scope="module")
def summary():
    grid = fp.Grid.uniform(40)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    rng = np.random.default_rng(17)
    curves = np.sin(2 * np.pi * grid.t)[None, :] + 0.3 * rng.normal(size=(50, grid.size))
    return fp.iclp_qr_mean(curves, basis, tau=3.0)


def test_process_mechanism_calibration_and_release(summary):
    m = el.EllipticalProcessMechanism(1.0, 1e-5, "t", nu=5.0)
    cal = m.calibrate(summary)
    sens = summary.sensitivity("cameron-martin")
    assert cal.sensitivity.value == sens.value
    assert cal.sigma == pytest.approx(el.sigma_for_delta(1.0, 1e-5, sens.value, el.mixing_law("t", nu=5.0)))
    assert el.delta_exact(1.0, sens.value, cal.sigma, el.mixing_law("t", nu=5.0)) <= 1e-5
    assert np.allclose(cal.scale, cal.sigma * np.sqrt(summary.eigenvalues))
    tree = fp.release(summary, m, draws=4000, random_seed=18, study=True)
    post, attrs = tree["posterior"], tree.attrs
    assert post["coefficients"].dims == ("chain", "draw", "basis")
    assert post["curve"].dims == ("chain", "draw", "t")
    assert attrs["epsilon"] == 1.0 and attrs["delta"] == 1e-5 and attrs["budget_spent_epsilon"] == 4000.0
    assert attrs["sensitivity_norm"] == "cameron-martin"
    assert "summary_coefficients" not in tree["constant_data"]
    # released coefficients: whitened noise / sqrt(W) is N(0, I); whitened squared norm / J ~ F(J, nu)
    noise = (post["coefficients"].values[0] - summary.coefficients) / cal.scale
    J = summary.n_components
    assert stats.kstest(np.sum(noise**2, axis=1) / J, stats.f(J, 5.0).cdf).pvalue > KS_P
    assert np.mean(np.sum(noise**2, 1)) == pytest.approx(J * 5.0 / 3.0, rel=0.1)
    # expected squared error of the release
    err = np.sum((post["curve"].values[0] - summary.curve().values) ** 2 * summary.grid.weights, axis=1)
    assert err.mean() == pytest.approx(el.expected_sq_error(m, summary), rel=0.15)
    assert np.array_equal(fp.release(summary, m, random_seed=1, study=True)["posterior"]["curve"].values,
                          fp.release(summary, m, random_seed=1, study=True)["posterior"]["curve"].values)


def test_pure_eps_mechanism_on_coefficients(summary):
    J = summary.n_components
    for m in (el.EllipticalMechanism(1.0, "knorm"), el.EllipticalMechanism(1.0, "t", nu=10.0)):
        cal = m.calibrate(summary)
        fam = m._family_d(J)
        assert fam.epsilon(cal.sensitivity.value / cal.sigma).epsilon == pytest.approx(1.0)
        # exact privacy loss of a worst-case neighbouring pair (h along the smallest eigenvalue direction)
        h = np.zeros(J)
        h[-1] = cal.sensitivity.value * math.sqrt(summary.eigenvalues[-1])
        assert summary.basis.norm_cameron_martin(h) == pytest.approx(cal.sensitivity.value)
        c = np.linspace(-200, 200, 40001) * cal.scale[-1]  # whitened radius grid along the worst ray
        y = summary.coefficients + c[:, None] * h[None, :] / np.linalg.norm(h)
        loss = m.privacy_loss(y, summary.coefficients + h, summary.coefficients, cal.scale)
        assert loss.max() <= 1.0 + 1e-9 and loss.max() > 0.95


def test_mechanism_errors():
    with pytest.raises(ValueError, match="no infinite-dimensional"):
        el.EllipticalProcessMechanism(1.0, 1e-5, "knorm")
    with pytest.raises(ValueError, match="nu"):
        el.EllipticalProcessMechanism(1.0, 1e-5, "t")
    with pytest.raises(ValueError, match="epsilon <= 1"):
        el.EllipticalProcessMechanism(2.0, 1e-5, "t", nu=3, calibration="theorem5")
    with pytest.raises(ValueError):
        el.EllipticalProcessMechanism(0.0, 1e-5, "t", nu=3)
    with pytest.raises(ValueError, match="cannot give epsilon-DP|pure"):
        el.EllipticalMechanism(1.0, "laplace")


def test_pymc_fragments_draw_exact_laws():
    import pymc as pm

    d = 3
    with pm.Model():
        xt = el.MultivariateT(d, 4.0).pymc_fragment("xt", np.zeros(d), 1.0)
        xk = el.EllipsoidalKNorm(d).pymc_fragment("xk", np.zeros(d), 1.0)
        xl = el.MultivariateLaplace(d).pymc_fragment("xl", np.zeros(d), 1.0)
        xi = el.KNorm(d, "l1").pymc_fragment("xi", np.zeros(d), 1.0)
    a, b, c, e = pm.draw([xt, xk, xl, xi], draws=4000, random_seed=19)
    assert stats.kstest(np.linalg.norm(a, axis=1), el.MultivariateT(d, 4.0).radius_cdf).pvalue > KS_P
    assert stats.kstest(np.linalg.norm(b, axis=1), el.EllipsoidalKNorm(d).radius_cdf).pvalue > KS_P
    ref = np.linalg.norm(el.MultivariateLaplace(d).sample(4000, random_seed=20), axis=1)
    assert stats.ks_2samp(np.linalg.norm(c, axis=1), ref).pvalue > KS_P
    assert stats.kstest(np.sum(np.abs(e), axis=1), stats.gamma(d).cdf).pvalue > KS_P
    with pytest.raises(NotImplementedError):
        with pm.Model():
            el.PowerExponential(2, 0.5).pymc_fragment("x", np.zeros(2), 1.0)


def test_comparison_tables(summary):
    fin = el.finite_dimensional_comparison([1, 10], epsilon=1.0)
    k = fin[(fin.d == 10) & (fin.mechanism.str.startswith("K-norm (ellipsoidal"))].expected_sq_error.item()
    assert k == pytest.approx(110.0)
    t_best = fin[(fin.d == 10) & (fin.mechanism == "t (nu=d+4)")].expected_sq_error.item()
    assert k < t_best < 1.2 * k
    fun = el.functional_comparison(summary, [1.0], nus=(5.0,))
    row = fun.set_index("mechanism").expected_sq_error
    assert row["ICLP"] == pytest.approx(fp.summaries.noise_energy(fp.ICLP(1.0), summary))
    assert row["t process nu=5 (exact)"] < row["t process nu=5 (Thm 5)"]


def test_fp_release_draws_elliptical_noise_and_noise_energy_counts_the_mixing():
    import fdp_ppl as fp
    from fdp_ppl.summaries import noise_energy

    g = fp.Grid.uniform(40)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    X = 0.3 * np.random.default_rng(0).standard_normal((200, 40))
    s = fp.rkhs_mean(X, b, tau=1.0)
    mech = fp.elliptical.EllipticalProcessMechanism(1.0, 1e-5, family="t", nu=10)
    tree = fp.release(s, mech, draws=4000, random_seed=3, study=True)
    coef = tree["posterior"]["coefficients"].values[0]
    energy = np.mean(np.sum((coef - s.coefficients) ** 2, axis=1))
    assert energy == pytest.approx(noise_energy(mech, s), rel=0.1)
    assert tree.attrs["mixing_mean_W"] == pytest.approx(mech.mean_w(s.n_components))


@pytest.mark.parametrize("name", ["t-process", "laplace-process"])
def test_process_calibration_is_computed_once_and_scales_with_delta(name):
    """σ for the elliptical processes is one root per (law, ε, δ) scaled by Δ (δ depends on Δ/σ only): every scale
    still meets the claimed δ, and a second calibration reuses the root instead of re-integrating."""
    import fdp_ppl as fp
    from fdp_ppl.releasing import registry
    from fdp_ppl.noise.elliptical import process
    from fdp_ppl.noise.elliptical.privacy import delta_exact

    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.uniform(15))
    e = registry.MECHANISMS[name]
    mech = e.mechanism(0.7, 1e-6, **({"nu": 4.0} if "nu" in e.options else {}))
    process._unit_sigma.cache_clear()
    ratios = []
    for tau in (0.003, 1.0, 250.0):
        cal = mech.calibrate(e.spec(basis, tau=tau, n=10))
        assert delta_exact(0.7, cal.sensitivity.value, cal.sigma, mech.law.mixing_law()) <= 1e-6
        ratios.append(cal.sigma / cal.sensitivity.value)
    assert np.ptp(ratios) <= 1e-12 * ratios[0]
    assert process._unit_sigma.cache_info().misses == 1
