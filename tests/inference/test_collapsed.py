"""The collapsed Gibbs sampler of a GP prior with free hyperparameters under Laplace noise
(:mod:`fdp_ppl.inference.collapsed`): its density is the latent-scale model's, its draws target the posterior
(DESIGN: inference is exact or exactly targeted, and says which), and ``fp.infer`` chooses it, says so and reports
no divergences."""

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.inference import GPPrior
from fdp_ppl.inference.collapsed import CollapsedGPGibbs
from fdp_ppl.inference.infer import build_model
from fdp_ppl.noise.laws import Laplace, Normal
from tests.helpers import readme_growth_release


@pytest.fixture(scope="module")
def release():
    g = fp.Grid.uniform(16)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * rng.standard_normal((200, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(fp.iclp_qr_mean(X, basis, tau=1.5), fp.ICLP(1.0), random_seed=1, study=True)


def test_collapsed_density_is_the_gaussian_marginal_given_the_latent_scales(release):
    """log p(y | ρ, a, κ, E) with the coefficients and the Normal mean level integrated out, against scipy's
    multivariate normal on the covariance written out here, hyperpriors added: equal up to one constant."""
    model = build_model(release, GPPrior())
    meta = model._fdp_meta
    sampler = CollapsedGPGibbs(meta)
    ctx, s = meta["ctx"], np.asarray(meta["shrink"])
    y, b, A, t = ctx["y"], np.asarray(ctx["scale"]), np.asarray(ctx["A"]), ctx["t"]
    J, n = y.size, float(ctx["attrs"]["n"])
    spread, level = ctx["hint"]["spread"], ctx["hint"]["level"]
    SA = s[:, None] * A
    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(4):
        rho, a, k = rng.uniform(0.05, 0.8), rng.uniform(0.1, 2.0), rng.uniform(0.1, 3.0)
        E = rng.exponential(size=J)
        g2 = (k * s * np.asarray(meta["sampling_base"]) / np.sqrt(n)) ** 2
        cov = (a**2 * SA @ GPPrior().kernel_matrix(t, rho, xp="np") @ SA.T + np.diag(g2 + 2 * b**2 * E)
               + (2 * spread) ** 2 * np.outer(SA.sum(1), SA.sum(1)))
        want = (stats.multivariate_normal(level * SA.sum(1), cov).logpdf(y)
                + stats.lognorm(1.0, scale=0.2).logpdf(rho) + np.log(rho)
                + stats.halfnorm(scale=2 * spread).logpdf(a) + np.log(a)
                + stats.halfnorm(scale=2 * spread).logpdf(k) + np.log(k))
        got = sampler.log_density({"lengthscale": np.log(rho), "amplitude": np.log(a), "sampling_scale": np.log(k)}, E)
        diffs.append(want - got)
    assert np.ptp(diffs) < 1e-8 and abs(diffs[0]) > 1.0   # one constant (the dropped normalisers), not zero


def test_collapsed_gibbs_draws_the_amplitudes_exact_posterior(release):
    """GP prior with the release's own kernel (diagonal), level fixed, amplitude free, summary target: p(a | y) is
    one-dimensional with a closed-form likelihood (Normal ⊛ Laplace per coefficient), integrated here on a grid. The
    sampler never uses that form (it samples the latent scales), so its draws agree only if it targets the posterior.
    Margins: 4 Monte Carlo standard errors from the draws' own effective sample size."""
    import arviz as az

    prior = GPPrior(lengthscale=0.1, mean=0.0)
    model = build_model(release, prior, target="summary", method="mixture")   # the model; sampled below
    meta = model._fdp_meta
    lam = np.asarray(meta["ctx"]["pub"]["eigenvalues"])
    y, b = meta["ctx"]["y"], np.asarray(meta["ctx"]["scale"])
    sampler = CollapsedGPGibbs(meta)
    out = sampler.run(1500, 150, 1, np.random.default_rng(5))["amplitude"]
    grid = np.linspace(1e-4, 6 * sampler.amp_scale, 4001)
    logp = stats.halfnorm(scale=sampler.amp_scale).logpdf(grid) + np.sum(Laplace().marginal_logp(
        np.broadcast_to(y, (grid.size, y.size)), b, Normal(), 0.0, grid[:, None] * np.sqrt(lam)), axis=1)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = float(np.sum(w * grid))
    sd = float(np.sqrt(np.sum(w * (grid - mean) ** 2)))
    q = grid[np.searchsorted(np.cumsum(w), [0.1, 0.9])]
    ess = float(az.ess(xr.Dataset({"a": (("chain", "draw"), out)}))["a"])
    assert ess > 200
    se = sd / np.sqrt(ess)
    assert abs(out.mean() - mean) < 4 * se
    assert abs(np.quantile(out, 0.1) - q[0]) < 6 * se and abs(np.quantile(out, 0.9) - q[1]) < 6 * se
    # not vacuous: the release moved the amplitude far from its prior, by many margins
    assert abs(mean - sampler.amp_scale * np.sqrt(2 / np.pi)) > 10 * se


def test_default_gp_prior_under_laplace_noise_runs_collapsed_gibbs_without_divergences(release):
    """fp.infer(tree) (the default GP prior, every hyperparameter free, Laplace noise): the latent-scale model sampled
    by collapsed Gibbs, recorded in attrs and in the reason; no divergences; R-hat and ESS reported."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fp.infer(release, draws=60, tune=40, chains=2, random_seed=3, progressbar=False)
    a = post.attrs
    assert (a["inference"], a["inference_model"], a["inference_sampler"]) == ("Gibbs", "mixture", "gibbs")
    assert a["inference_description"].startswith("collapsed Gibbs") and "no divergences" in a["inference_description"]
    assert a["inference_reason"].startswith("the GP prior's lengthscale, amplitude and mean are free")
    assert a["diagnostic_divergences"] == 0 and np.isfinite(a["diagnostic_max_rhat"])
    assert a["inference_free_parameters"] == "lengthscale, amplitude, mean, sampling_sd"
    assert post["posterior"]["curve"].shape == (2, 60, 16)
    assert "inference_target_accept" not in a      # no NUTS


def test_refit_without_y_j_gives_the_exact_leave_one_out_density(release):
    """The refit of reloo for this sampler (run without y_j, then average p(y_j | y_-j, hyperparameters, E_-j)):
    with the release's own kernel and only the amplitude free, log p(y_j | y_-j) = log ∫ p(y_j | a) p(a | y_-j) da,
    both factors in closed form, integrated here on a grid. Margin: 4 Monte Carlo standard errors (the draws' ESS).
    The coefficient checked is the one whose leave-one-out density differs most from its in-sample one."""
    import arviz as az

    from fdp_ppl.inference.collapsed import refit_terms

    model = build_model(release, GPPrior(lengthscale=0.1, mean=0.0), target="summary", method="mixture")
    meta = model._fdp_meta
    lam = np.asarray(meta["ctx"]["pub"]["eigenvalues"])
    y, b = meta["ctx"]["y"], np.asarray(meta["ctx"]["scale"])
    scale = CollapsedGPGibbs(meta).amp_scale
    grid = np.linspace(1e-4, 6 * scale, 4001)
    terms = Laplace().marginal_logp(np.broadcast_to(y, (grid.size, y.size)), b, Normal(), 0.0,
                                    grid[:, None] * np.sqrt(lam))                       # log p(y_j | a), (grid, J)
    logpost = stats.halfnorm(scale=scale).logpdf(grid)[:, None] + terms.sum(axis=1, keepdims=True) - terms

    def predictive(logw):   # log ∫ p(y_j | a) w_j(a) da / ∫ w_j(a) da, per j
        w = np.exp(logw - logw.max(axis=0))
        return np.log(np.sum(w * np.exp(terms), axis=0) / np.sum(w, axis=0))

    loo_exact, in_sample = predictive(logpost), predictive(logpost + terms)
    j = int(np.argmax(in_sample - loo_exact))
    v = refit_terms(model, j, 800, 100, 1, np.random.default_rng(2))
    got = float(np.log(np.mean(np.exp(v))))
    p = np.exp(v - v.max()).reshape(1, -1)
    ess = float(az.ess(xr.Dataset({"p": (("chain", "draw"), p)}))["p"])
    se = float(np.std(p) / np.mean(p) / np.sqrt(ess))
    assert abs(got - loo_exact[j]) < 4 * se
    assert in_sample[j] - loo_exact[j] > 4 * se     # not vacuous: leaving y_j out changes its predictive density


@pytest.fixture(scope="module")
def gaussian_release():
    g = fp.Grid.uniform(16)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * np.random.default_rng(0).standard_normal((200, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(fp.rkhs_mean(X, basis, tau=1.5), fp.GaussianMechanism(1.0, 0.1), random_seed=1, study=True)


def _read(path):
    from pathlib import Path

    return " ".join((Path(__file__).resolve().parents[2] / path).read_text().split())


def test_readme_and_docs_claims_about_free_hyperparameters(release, gaussian_release):
    """README: "a hyperparameter left out is learned by MCMC — a free length-scale under Laplace noise by a collapsed
    Gibbs sampler (no divergences), otherwise NUTS"; docs/getting_started.md says the same of fp.infer, and that a
    coefficient whose k̂ exceeds 0.7 is refitted by the same sampler. The plans fp.infer runs for each case."""
    readme, started = _read("README.md"), _read("docs/getting_started.md")
    assert ("a hyperparameter left out is learned by MCMC — a free length-scale under Laplace noise by a collapsed "
            "Gibbs sampler (no divergences), otherwise NUTS") in readme
    assert ("MCMC when hyperparameters are left free — a collapsed Gibbs sampler for a GP prior with a free "
            "length-scale under Laplace noise") in started and "NUTS otherwise" in started
    assert "refitted by the same sampler without y_j" in started
    collapsed = [GPPrior(), GPPrior(amplitude=0.5), GPPrior(amplitude=0.5, mean=0.0)]
    for prior in collapsed:
        for target in ("population", "summary"):
            plan = build_model(release, prior, target=target)._fdp_meta["plan"]
            assert (plan.model, plan.sampler, plan.attention) == ("mixture", "collapsed_gibbs", False)
            assert "sampled by collapsed Gibbs" in plan.because
    nuts = [(release, GPPrior(lengthscale=0.1)), (release, fp.inference.ICLPPrior()),
            (release, fp.inference.ICLPPrior(smoothness=2.0)), (gaussian_release, GPPrior())]
    for rel, prior in nuts:   # the README's other free-hyperparameter examples: NUTS on the hyperparameters alone
        plan = build_model(rel, prior)._fdp_meta["plan"]
        assert (plan.model, plan.sampler, plan.exact) == ("marginal", "nuts", False)
    forced = build_model(release, GPPrior(), method="nuts")._fdp_meta["plan"]     # the independent check stays NUTS
    assert (forced.model, forced.sampler) == ("mixture", "nuts")


@pytest.mark.slow
def test_readme_default_gp_example_has_no_divergences_and_no_pareto_k_above_0_7():
    """The README's growth release (ICLP ε = 1) with fp.infer's default (GP prior, every hyperparameter free, the
    population mean with its sampling scale): collapsed Gibbs, 0 divergences, R-hat ≤ 1.01 and every k̂ ≤ 0.7 after
    the refits (measured: max 0.36 after 3 refits, 0.64 after 1 on another release seed; PSIS before them 1.01)."""
    tree = readme_growth_release(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fp.infer(tree, random_seed=2, progressbar=False)
    a = post.attrs
    assert (a["inference"], a["inference_model"]) == ("Gibbs", "mixture")
    assert a["diagnostic_divergences"] == 0 and a["diagnostic_max_rhat"] <= 1.01
    assert float(np.max(fp.inference.loo(post).pareto_k)) <= 0.7


@pytest.mark.slow
def test_slice_refits_of_a_marginal_model_give_the_exact_leave_one_out_density(release):
    """reloo's refits of a model sampled on its hyperparameters alone (``"marginal"``), by slice sampling with one
    compiled log-density (:func:`fdp_ppl.inference.reloo.slice_refit`), forced on two coefficients: the ICLP prior's
    amplitude the one free hyperparameter (summary target), so log p(y_j | y_-j) is exact by quadrature over it
    (:func:`~fdp_ppl.inference.comparison.grid_loo`). Margin: four Monte Carlo standard errors of each refit."""
    from fdp_ppl.inference import ICLPPrior
    from fdp_ppl.inference.comparison import INTEGRATED_GROUP, grid_loo
    from fdp_ppl.inference.reloo import psis_then_refit, slice_refit

    prior = ICLPPrior(smoothness=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fp.infer(release, prior, target="summary", draws=300, tune=300, chains=2, random_seed=4,
                        progressbar=False)
    model = build_model(release, prior, target="summary")
    assert [rv.name for rv in model.free_RVs] == ["amplitude"]
    refit = slice_refit(model, post["posterior"].to_dataset(), 1500, 100, 2, 7)
    out = psis_then_refit(model, post["posterior"].to_dataset(), post[INTEGRATED_GROUP]["released"],
                          post["observed_data"].to_dataset(), refit=refit, threshold=-np.inf, max_refits=2)
    assert len(out["refitted"]) == 2
    ctx = model._fdp_meta["ctx"]
    y, b, lam, hint = ctx["y"], ctx["scale"], ctx["pub"]["eigenvalues"], ctx["hint"]
    log_a = np.linspace(np.log(1e-6), np.log(50 * hint["rms"]), 20_001)
    c = np.exp(log_a)[:, None] * np.sqrt((lam / lam[0]) ** 2 / 2)
    loglik = Laplace().marginal_logp(np.broadcast_to(y, c.shape), np.broadcast_to(b, c.shape), Laplace(), 0.0, c)
    exact = grid_loo(loglik, stats.halfnorm.logpdf(np.exp(log_a), scale=2 * hint["rms"]) + log_a)
    for j in out["refitted"]:
        assert 0 < out["mc_se"][j] < 0.1
        assert out["elpd"][j] == pytest.approx(exact[j], abs=4 * out["mc_se"][j] + 1e-4), (j, out["mc_se"][j])
