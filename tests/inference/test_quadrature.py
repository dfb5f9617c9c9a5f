"""The population target's free sampling scale by quadrature, and exact draws given it (DESIGN: inference is
post-processing of the public release; exact where the model allows, the method and the reason recorded).

What is checked
---------------
* :class:`~fdp_ppl.inference.quadrature.ScaleQuadrature` on a density with a closed form: the mass is captured
  (both ends at least ``DROP`` nats below the maximum), halving the nodes changes the rule by a total variation
  below 1e-3, its mean matches the closed form, and its draws pass a KS test against the exact CDF (which rejects
  a density 10% too wide).
* The closed-form marginal likelihoods of κ against direct computation: the eigendecomposition form of the dense
  Gaussian marginal against ``scipy.stats.multivariate_normal``; the Laplace–Normal–Laplace density against
  numerical convolution.
* The exact rejection sampler of the Laplace-prior population target against the target by quadrature.
* ``fp.infer``'s default on a mean release with every prior hyperparameter fixed: exact draws (model
  ``quadrature``), against a brute-force reference (the posterior mean of κ and of the coefficients by adaptive
  one-dimensional integration over κ with the Gaussian conditional in closed form, margins from the draws' own
  standard errors) and against NUTS on κ (the model used before), KS tests with NUTS's effective sample size.
* What is said: ``inference_reason`` and the free parameters named; no ``InferenceMethodWarning`` for exact draws or
  for NUTS because hyperparameters are free; a warning when every prior hyperparameter is fixed and the draws are
  still not exact.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from scipy import integrate, stats

import fdp_ppl as fp
from fdp_ppl.inference import GPPrior, ICLPPrior, InferenceMethodWarning, InferenceWarning, build_model, infer
from fdp_ppl.inference.conditional import laplace_population_draws, population_proposal
from fdp_ppl.inference.quadrature import (DROP, ScaleQuadrature, gaussian_log_marginal,
                                          laplace_normal_laplace_logp)
from fdp_ppl.noise.laws import Laplace


# --------------------------------------------------------------------------- the quadrature rule
def test_scale_quadrature_captures_the_mass_and_matches_a_closed_form():
    """log κ ~ N(μ, s²) (a log-normal κ), with a narrow and a wide case."""
    rng = np.random.default_rng(0)
    for mu, s in ((-1.3, 0.05), (0.4, 3.0)):
        quad = ScaleQuadrature(lambda x: -0.5 * ((x - mu) / s) ** 2, centre=0.0)
        assert quad.drop >= DROP - 1e-9
        assert quad.tv_half < 1e-3
        assert quad.mean(lambda x: x) == pytest.approx(mu, abs=1e-4 * s)
        assert quad.mean(lambda x: (x - mu) ** 2) == pytest.approx(s**2, rel=1e-3)   # O(h²) interpolation error
        assert quad.mean() == pytest.approx(np.exp(mu + s**2 / 2), rel=2e-3)
        k = quad.draws(20_000, rng)
        assert stats.kstest(np.log(k), stats.norm(mu, s).cdf).pvalue > 1e-3
        assert stats.kstest(np.log(k), stats.norm(mu, 1.1 * s).cdf).pvalue < 1e-6     # the test has power
        finer = ScaleQuadrature(lambda x: -0.5 * ((x - mu) / s) ** 2, centre=0.0, nodes=2049)
        exact = np.exp(mu + s**2 / 2)          # refinement changes little and converges: O(h²)
        assert finer.mean() == pytest.approx(quad.mean(), rel=1e-3)
        assert abs(finer.mean() - exact) <= abs(quad.mean() - exact) / 4 + 1e-12 * exact


def test_gaussian_log_marginal_equals_the_dense_density():
    rng = np.random.default_rng(1)
    J = 6
    B = rng.standard_normal((J, J))
    cov = B @ B.T / J
    noise, base = rng.uniform(0.1, 0.5, J), rng.uniform(0.2, 1.0, J)
    y, mean = rng.standard_normal(J), rng.standard_normal(J)
    f = gaussian_log_marginal(y, mean, cov, noise, base)
    x = np.array([-3.0, 0.0, 1.5])
    direct = [stats.multivariate_normal(mean, cov + np.diag(noise + np.exp(2 * v) * base**2)).logpdf(y) for v in x]
    np.testing.assert_allclose(f(x), direct, rtol=1e-10)


LNL_CASES = [(0.3, 0.5, 0.1, 0.2), (3.0, 1.0, 0.05, 0.1), (0.1, 0.01, 0.3, 1.0), (5.0, 1.0, 2.0, 1.0),
             (0.0, 0.3, 0.01, 0.3)]   # (y, prior scale c, sampling sd g, noise scale b); the last with c = b


def _lnl_target(y, c, g, b):
    """Unnormalised density of V = U + e given y, on a grid, and its log normaliser (trapezoid)."""
    lo, hi = min(y, 0) - 30 * (b + c + g), max(y, 0) + 30 * (b + c + g)
    v = np.union1d(np.linspace(lo, hi, 40_001), [0.0, y])
    log_nl = Laplace().convolved_logp(v[:, None], np.full((v.size, 1), g), np.full((v.size, 1), c))[:, 0]
    f = np.exp(log_nl - np.abs(y - v) / b) / (2 * b)
    cum = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(v))])
    return v, cum / cum[-1], float(np.log(cum[-1]))


@pytest.mark.parametrize("y, c, g, b", LNL_CASES)
def test_laplace_prior_population_target_exact(y, c, g, b):
    v, cdf, log_z = _lnl_target(y, c, g, b)
    assert float(laplace_normal_laplace_logp(y, c, g, b)) == pytest.approx(log_z, abs=2e-4)
    U, V = laplace_population_draws(np.full(20_000, y), b, c, g, np.random.default_rng(2))
    assert stats.kstest(V, lambda x: np.interp(x, v, cdf)).pvalue > 1e-3
    # U | V: the Laplace prior given V = U + e; check the joint through E[U] against quadrature over (U, V)
    u = np.linspace(-30 * (b + c + g) + min(y, 0), 30 * (b + c + g) + max(y, 0), 4001)
    lu = -np.abs(u) / c
    w = np.exp(lu[:, None] - 0.5 * ((v[None, ::10] - u[:, None]) / g) ** 2 - np.abs(y - v[None, ::10]) / b)
    eu = float(np.sum(u[:, None] * w) / np.sum(w))
    assert np.mean(U) == pytest.approx(eu, abs=5 * np.std(U) / np.sqrt(U.size) + 1e-3 * (b + c + g))



def _u_given_v_cdf(u, v, c, g):
    """CDF at ``u`` of ``U | V = v`` for ``U ~ Laplace(0, c)``, ``V = U + e``, ``e ~ N(0, g²)``: two Gaussian pieces,
    ``∝ e^{v/c} N(u; v + g²/c, g²)`` on ``u < 0`` and ``e^{−v/c} N(u; v − g²/c, g²)`` on ``u ≥ 0`` (log space)."""
    from scipy.special import log_ndtr

    lo, hi = v / c + log_ndtr(-(v + g**2 / c) / g), -v / c + log_ndtr((v - g**2 / c) / g)   # the pieces' masses
    log_z = np.logaddexp(lo, hi)
    below = np.exp(v / c + log_ndtr((np.minimum(u, 0) - v - g**2 / c) / g) - log_z)
    above = 1 - np.exp(-v / c + log_ndtr(-(np.maximum(u, 0) - v + g**2 / c) / g) - log_z)
    return np.where(u < 0, below, above)


@pytest.mark.parametrize("y, c, g, b", LNL_CASES)
def test_laplace_prior_population_target_exact_with_any_proposal(y, c, g, b):
    """Any proposal the caller picks (as infer does, from a few representative sampling scales) draws the same law:
    each valid one that accepts at least 5% forced on every element passes the KS test against the target; and the
    U it returns with each V (kept from the proposal's pair for the prior and the tilted proposal, drawn given V
    for the others) has the exact conditional law: its PIT under ``U | V`` is uniform (KS), and not under a prior
    scale 3 times too large."""
    v, cdf, _ = _lnl_target(y, c, g, b)
    rates = population_proposal(y, b, c, g, log_rates=True)
    for choice in [k for k in range(4) if rates[k] > np.log(0.05)]:
        U, V = laplace_population_draws(np.full(5_000, y), b, c, g, np.random.default_rng(3 + choice), choice)
        assert stats.kstest(V, lambda x: np.interp(x, v, cdf)).pvalue > 1e-4, choice
        assert stats.kstest(_u_given_v_cdf(U, V, c, g), "uniform").pvalue > 1e-4, choice
        if c < g:   # the prior, not V, pins U down: a wrong prior scale is seen
            assert stats.kstest(_u_given_v_cdf(U, V, 3 * c, g), "uniform").pvalue < 1e-6, choice
    if c >= b:
        with pytest.raises(ValueError, match="tilted"):
            laplace_population_draws(np.full(3, y), b, c, g, np.random.default_rng(0), 3)

# --------------------------------------------------------------------------- fp.infer's default
@pytest.fixture(scope="module")
def releases():
    g = fp.Grid.uniform(30)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * rng.standard_normal((400, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        laplace = fp.release(fp.iclp_qr_mean(X, basis, tau=1.5), fp.ICLP(1.0), random_seed=1, study=True)
        gauss = fp.release(fp.rkhs_mean(X, basis, tau=1.5), fp.GaussianMechanism(1.0, 0.1), random_seed=1, study=True)
    return laplace, gauss


OWN = GPPrior(lengthscale=0.1, amplitude=0.5, mean=0.0)      # the release's kernel: diagonal
OTHER = GPPrior(lengthscale=0.2, amplitude=0.5, mean=0.0)    # not diagonal in the release's basis


def _quiet_infer(rel, prior, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceMethodWarning)   # exact draws: nothing needs the user's attention
        return infer(rel, prior, progressbar=False, **kw)


@pytest.mark.parametrize("which, prior", [("laplace", OWN), ("gauss", OWN), ("gauss", OTHER),
                                          ("laplace", ICLPPrior(amplitude=0.5, smoothness=2.0)),
                                          ("gauss", ICLPPrior(amplitude=0.5, smoothness=2.0))])
def test_default_is_exact_with_every_prior_hyperparameter_fixed(releases, which, prior):
    rel = releases[0] if which == "laplace" else releases[1]
    post = _quiet_infer(rel, prior, draws=200, chains=2, random_seed=0)
    at = post.attrs
    assert (at["target"], at["inference"], at["inference_model"], at["inference_sampler"]) == (
        "population", "exact", "quadrature", "quadrature")
    assert at["inference_free_parameters"] == "sampling_sd"
    assert "one free parameter, the sampling sd" in at["inference_reason"]
    assert at["inference_quadrature_tv_half"] < 1e-3 and at["inference_quadrature_tail_drop"] >= DROP - 1e-9
    assert "inference_not_exact_because" not in at and "sample_stats" not in post.children
    k = post["posterior"]["sampling_scale"]
    assert k.dims == ("chain", "draw") and np.all(k.values > 0)
    assert np.all(np.isfinite(post["posterior"]["curve"].values))
    again = _quiet_infer(rel, prior, draws=200, chains=2, random_seed=0)
    np.testing.assert_array_equal(post["posterior"]["curve"].values, again["posterior"]["curve"].values)


def _brute_force_gauss(rel, prior, kappa_sd_prior):
    """E[κ | y] and E[θ | y] for Gaussian noise and a diagonal GP prior by adaptive quadrature over κ, with the
    Gaussian marginal and conditional mean of θ given κ in closed form per coefficient."""
    from fdp_ppl.inference.infer import _context, _shrinkage

    ctx = _context(rel, 0)
    y, b = ctx["y"], np.asarray(ctx["scale"], float)
    lam = ctx["pub"]["eigenvalues"]
    s = _shrinkage(ctx["view"])
    n = float(ctx["attrs"]["n"])
    pv = prior.amplitude**2 * lam                                   # prior variance of θ_j (own kernel)
    mean0 = prior.mean * ctx["A"].sum(axis=1)

    def parts(k):
        g2 = s**2 * k**2 * lam / n
        v = s**2 * pv + g2 + b**2
        loglik = float(np.sum(-0.5 * np.log(2 * np.pi * v) - 0.5 * (y - s * mean0) ** 2 / v))
        post_mean = mean0 + s * pv * (y - s * mean0) / v
        return loglik - 0.5 * k**2 / kappa_sd_prior**2, post_mean

    grid = np.linspace(1e-6, 20 * kappa_sd_prior, 4001)
    top = max(parts(k)[0] for k in grid)

    def w(k):
        return np.exp(parts(k)[0] - top)

    z = integrate.quad(w, 0, np.inf, limit=500)[0]
    ek = integrate.quad(lambda k: k * w(k), 0, np.inf, limit=500)[0] / z
    etheta = np.array([integrate.quad(lambda k: parts(k)[1][j] * w(k), 0, np.inf, limit=500)[0] / z
                       for j in range(y.size)])
    return ek, etheta


def test_quadrature_matches_brute_force_integration_over_the_scale(releases):
    _, gauss = releases
    from fdp_ppl.inference.infer import _context

    post = _quiet_infer(gauss, OWN, draws=4000, chains=2, random_seed=7)
    sigma = 2 * _context(gauss, 0)["hint"]["spread"]
    ek, etheta = _brute_force_gauss(gauss, OWN, sigma)
    k = post["posterior"]["sampling_scale"].values.ravel()
    theta = post["posterior"]["coefficients"].values.reshape(-1, etheta.size)
    n = k.size   # independent draws
    assert abs(k.mean() - ek) < 4 * k.std() / np.sqrt(n)
    z = (theta.mean(axis=0) - etheta) / (theta.std(axis=0) / np.sqrt(n))
    assert np.max(np.abs(z)) < 4.5           # 30 coefficients, 4.5 sd each (family-wise about 2e-4)
    assert np.abs(z).mean() < 1.2            # and not all pushed one way: E|Z| = 0.80 for a correct sampler


@pytest.mark.slow
@pytest.mark.parametrize("which, prior", [("laplace", OWN), ("laplace", ICLPPrior(amplitude=0.5, smoothness=2.0))])
def test_quadrature_agrees_with_nuts_on_the_scale(releases, which, prior):
    """Against the models NUTS ran before (κ sampled by NUTS; the GP with the coefficients integrated out in
    closed form, the ICLP on the latent mixing scales): KS tests with NUTS's effective sample size."""
    rel = releases[0]
    exact = _quiet_infer(rel, prior, draws=2000, chains=2, random_seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InferenceWarning)
        nuts = infer(rel, prior, method="marginal" if isinstance(prior, GPPrior) else "mixture", draws=1500,
                     tune=1000, chains=2, random_seed=4, progressbar=False)
    assert nuts.attrs["inference"] == "NUTS"
    for name, f in (("sampling_scale", lambda p: p["sampling_scale"].values),
                    ("curve mean", lambda p: p["curve"].mean("t").values),
                    ("coefficient 0", lambda p: p["coefficients"].isel(basis=0).values)):
        a, b = f(exact["posterior"]), f(nuts["posterior"])
        ess = float(az.ess(b, method="bulk"))
        # KS with the NUTS sample counted at its effective size
        d = stats.ks_2samp(a.ravel(), b.ravel()).statistic
        m, n = a.size, min(b.size, ess)
        assert d < 1.95 * np.sqrt((m + n) / (m * n)), (name, d, ess)   # α ≈ 0.001


# --------------------------------------------------------------------------- what is said
def test_free_hyperparameters_are_named_and_not_warned_about(releases):
    rel, _ = releases
    model = build_model(rel, GPPrior(lengthscale=0.1))
    plan = model._fdp_meta["plan"]
    assert plan.model == "marginal" and not plan.exact and not plan.attention
    assert plan.free == ("amplitude", "mean", "sampling_sd")
    assert plan.because.startswith("the GP prior's amplitude and mean are free")
    assert "lengthscale" not in plan.because
    from fdp_ppl.inference.infer import _say_method

    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceMethodWarning)
        _say_method("auto", plan, model._fdp_meta)        # information, not a warning
    iclp = build_model(rel, ICLPPrior(amplitude=0.5))._fdp_meta["plan"]
    assert iclp.because.startswith("the ICLP prior's smoothness is free") and not iclp.attention


def test_fixed_prior_without_exact_form_warns_naming_the_sampling_sd(releases):
    rel, _ = releases
    plan = build_model(rel, OTHER)._fdp_meta["plan"]      # Laplace noise, prior not diagonal, κ free
    assert plan.model == "whitened" and plan.attention and plan.free == ("sampling_sd",)
    assert "sampling sd of the population mean is free" in plan.reason and "pass sampling_sd" in plan.reason
    with pytest.warns(InferenceMethodWarning, match="sampling sd of the population mean is free"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InferenceWarning)
            infer(rel, OTHER, draws=20, tune=20, chains=1, random_seed=0, progressbar=False)


# --------------------------------------------------------------------------- the README's and the docs' claims
def _read(path):
    from pathlib import Path

    return " ".join((Path(__file__).resolve().parents[2] / path).read_text().split())


def test_readme_and_docs_claims_about_which_path_runs(releases):
    """README: "a hyperparameter left out is learned with NUTS; all fixed give exact draws [...] for the ICLP prior, a
    GP prior with the release's own kernel, or Gaussian noise; a GP prior with another kernel under Laplace noise
    runs an exactly targeted Gibbs sampler with --sampling-sd, NUTS without, and says so in a warning";
    docs/getting_started.md says the same of fp.infer."""
    readme, started = _read("README.md"), _read("docs/getting_started.md")
    assert ("all fixed give exact draws — κ from its one-dimensional marginal posterior by quadrature") in readme
    assert ("for the ICLP prior, a GP prior with the release's own kernel, or Gaussian noise; a GP prior with another "
            "kernel under Laplace noise runs an exactly targeted Gibbs sampler with `--sampling-sd`, NUTS without, "
            "and says so in a warning") in readme
    assert "an `InferenceMethodWarning` only when every prior hyperparameter is fixed and the draws are still not exact" \
        in started
    laplace, gauss = releases
    iclp = ICLPPrior(amplitude=20.0, smoothness=2.0)     # the README's command line example
    for rel in (laplace, gauss):
        for prior in (iclp, OWN):
            plan = build_model(rel, prior)._fdp_meta["plan"]
            assert plan.exact and plan.model == "quadrature" and not plan.attention
    assert build_model(gauss, OTHER)._fdp_meta["plan"].exact
    # left out -> NUTS (information, no warning)
    for prior in (GPPrior(lengthscale=0.1, amplitude=0.5), GPPrior(), ICLPPrior(amplitude=20.0), ICLPPrior()):
        plan = build_model(laplace, prior)._fdp_meta["plan"]
        assert not plan.exact and plan.model in ("marginal", "mixture") and not plan.attention
    gibbs = build_model(laplace, OTHER, sampling_sd=0.3)._fdp_meta["plan"]
    nuts = build_model(laplace, OTHER)._fdp_meta["plan"]
    assert (gibbs.model, gibbs.attention, nuts.model, nuts.attention) == ("gibbs", True, "whitened", True)


# --------------------------------------------------------------------------- exact leave-one-out with κ integrated
def _brute_loo(logjoint_all, logjoint_without, j):
    """log p(y_j | y_-j) = log ∫ p(κ) p(y | κ) dκ − log ∫ p(κ) p(y_-j | κ) dκ by adaptive quadrature over κ."""
    ks = np.linspace(1e-6, 60.0, 601)   # the scan only scales the integrands (any value near their maximum)
    top_a = max(logjoint_all(k) for k in ks)
    top_b = max(logjoint_without(k, j) for k in ks)
    za = integrate.quad(lambda k: np.exp(logjoint_all(k) - top_a), 0, np.inf, limit=500, epsabs=0, epsrel=1e-11)[0]
    zb = integrate.quad(lambda k: np.exp(logjoint_without(k, j) - top_b), 0, np.inf, limit=500, epsabs=0,
                        epsrel=1e-11)[0]
    return (np.log(za) + top_a) - (np.log(zb) + top_b)


def test_quadrature_loo_of_a_dense_gaussian_marginal_equals_brute_force_refits():
    """Gaussian release y ~ N(m, C + diag(noise + κ² base²)), κ ~ HalfNormal(σ): the leave-one-out densities of
    ScaleQuadrature.loo (κ integrated by the rule its draws use, the Gaussian conditional from one shared
    eigendecomposition) against refits on y_-j, κ integrated adaptively with scipy's multivariate normal."""
    from fdp_ppl.inference.quadrature import half_normal_log_density

    rng = np.random.default_rng(3)
    J, sigma = 5, 2.0
    B = rng.standard_normal((J, J))
    cov = B @ B.T / J
    noise, base = rng.uniform(0.1, 0.5, J), rng.uniform(0.2, 1.0, J)
    mean = rng.standard_normal(J)
    y = mean + rng.multivariate_normal(np.zeros(J), cov + np.diag(noise + 1.3**2 * base**2))
    f, terms = gaussian_log_marginal(y, mean, cov, noise, base, loo=True)
    quad = ScaleQuadrature(lambda x: half_normal_log_density(x, sigma) + f(x), centre=np.log(sigma), loo_terms=terms)
    got = quad.loo()

    def logpdf(x, m, c):   # the dense density by its Cholesky factor (scipy's multivariate_normal: 40x slower here)
        L = np.linalg.cholesky(c)
        z = np.linalg.solve(L, x - m)
        return -0.5 * x.size * np.log(2 * np.pi) - np.sum(np.log(np.diag(L))) - 0.5 * z @ z

    def full(k):
        return -0.5 * k**2 / sigma**2 + logpdf(y, mean, cov + np.diag(noise + k**2 * base**2))

    def without(k, j):
        keep = np.arange(J) != j
        c = (cov + np.diag(noise + k**2 * base**2))[np.ix_(keep, keep)]
        return -0.5 * k**2 / sigma**2 + logpdf(y[keep], mean[keep], c)

    want = np.array([_brute_loo(full, without, j) for j in range(J)])
    # a wide κ posterior (J = 5), the hard case for the rule: its error is within its own estimate, and small
    assert np.max(np.abs(got - want)) <= quad.loo_error and quad.loo_error < 1e-3
    np.testing.assert_allclose(got, want, atol=2e-5)
    assert quad.loo_drop > 20
    # not vacuous: the leave-one-out density differs from the marginal p(y_j) and from the in-sample one
    assert np.max(np.abs(got - np.array([without(1.3, j) for j in range(J)]))) > 1e-2


def test_default_exact_path_reports_exact_loo_without_pareto_k(releases):
    """fp.infer's default with every prior hyperparameter fixed (κ by quadrature): the ``loo`` group is exact (no
    importance sampling, no k̂), equal to refits with κ integrated adaptively on the first coefficients."""
    from fdp_ppl.inference import loo
    from fdp_ppl.inference.infer import _scale_quadrature

    laplace, _ = releases
    prior = ICLPPrior(amplitude=0.5, smoothness=2.0)
    post = _quiet_infer(laplace, prior, draws=100, chains=2, random_seed=0)
    assert post.attrs["loo_method"] == "exact" and "loo" in post.children
    elpd = loo(post)
    assert np.all(np.asarray(elpd.pareto_k) == -np.inf)
    quad = _scale_quadrature(build_model(laplace, prior))
    terms = quad.loo_terms
    sigma = np.exp(quad.centre)

    def full(k):
        return -0.5 * k**2 / sigma**2 + float(np.sum(terms(np.array([np.log(k)]))))

    def without(k, j):
        t = terms(np.array([np.log(k)]))[0]
        return -0.5 * k**2 / sigma**2 + float(np.sum(t) - t[j])

    want = [_brute_loo(full, without, j) for j in range(3)]
    np.testing.assert_allclose(post["loo"]["released"].values[:3], want, atol=2e-5)


def test_quadrature_loo_on_many_coefficients_is_thinned_within_its_error_estimate():
    """Above the node × coefficient budget the rule stops at every other node; it then agrees with the rule on all
    nodes within its recorded error estimate (J = 400 independent Normal–Normal coefficients)."""
    from fdp_ppl.inference import quadrature as Q

    rng = np.random.default_rng(4)
    J = 400
    s = rng.uniform(0.5, 2.0, J)
    y = rng.standard_normal(J) * np.sqrt(1 + s**2)

    def terms(x):
        v = 1 + np.exp(2 * np.asarray(x))[:, None] * s**2
        return -0.5 * np.log(2 * np.pi * v) - 0.5 * y**2 / v

    def quad():
        return ScaleQuadrature(lambda x: Q.half_normal_log_density(x, 2.0) + terms(x).sum(1), centre=np.log(2.0),
                               loo_terms=terms)
    thinned = quad()
    got = thinned.loo()
    assert Q.NODES * J > Q._LOO_BUDGET
    full = quad()
    x, lp = full.x, full.logp
    want = Q._spline_loo(x, np.column_stack([lp, lp[:, None] - terms(x)]))
    assert np.max(np.abs(got - want)) <= max(thinned.loo_error, 1e-9)
    assert np.max(np.abs(got - want)) < 1e-4


def test_spline_loo_compiled_equals_numpy_rule(monkeypatch):
    """The compiled rule of the exact LOO (the spline's values made and integrated in one pass) gives the numpy
    rule's values (scipy's spline evaluated, then the log-linear cell masses) to rounding, on nodes of uneven
    spacing and columns far apart in level."""
    from fdp_ppl.inference import quadrature as Q

    if not Q.HAVE_NUMBA:
        pytest.skip("numba missing: the numpy rule is the only one")
    rng = np.random.default_rng(5)
    x = np.unique(rng.uniform(-3.0, 2.0, 97))
    logp = -0.5 * (x[:, None] * rng.uniform(0.5, 3.0, 41)) ** 2 + 50 * rng.standard_normal(41)
    got = Q._spline_loo(x, logp)
    monkeypatch.setattr(Q, "HAVE_NUMBA", False)
    want = Q._spline_loo(x, logp)
    assert got.shape == (40,)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * float(np.max(np.abs(want))))
