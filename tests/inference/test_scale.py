"""Inference without cliffs (DESIGN invariant 12): exact posteriors at any grid size, exactly targeted Gibbs otherwise.

What is checked
---------------
* A GP prior with the release's own kernel is diagonal by construction (the release's eigenvalues), at grid
  sizes past the old fixed-tolerance cliff (m ~ 300): exact draws, no warning, the attrs say so; a kernel that
  differs in the fourth digit is not taken for it.
* The split Gibbs sampler (:mod:`fdp_ppl.inference.gibbs`) targets the posterior exactly: with Gaussian noise
  its draws match the closed-form conjugate posterior (means within 4.5 MC standard errors from the chain's
  ESS, sds within the ESS-based tolerance), and a posterior 20% too wide is rejected by the same check; with
  Laplace noise (non-diagonal prior) it agrees with NUTS on the whitened model (two-sample KS + variance tests
  with each side's ESS).
* ``method="auto"`` never switches silently: a non-exact plan for a fully specified prior warns
  (``InferenceMethodWarning``), NUTS because hyperparameters are free does not, and the result's attrs record the
  method asked for, the one used and why.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.inference import GPPrior, InferenceMethodWarning, InferenceWarning, build_model, functionals, infer
from fdp_ppl.inference.gibbs import SplitGibbs
from fdp_ppl.noise.laws import Normal


def _release(m, mechanism, seed=1, n=300):
    g = fp.Grid.uniform(m)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * rng.standard_normal((n, m))
    summary = fp.iclp_qr_mean(X, b, tau=1.5) if mechanism == "iclp" else fp.rkhs_mean(X, b, tau=1.5)
    mech = fp.ICLP(1.0) if mechanism == "iclp" else fp.GaussianMechanism(1.0, 0.1)
    return fp.release(summary, mech, random_seed=seed, study=True)


@pytest.fixture(scope="module")
def small():
    return _release(30, "iclp"), _release(30, "gauss")


OWN = GPPrior(lengthscale=0.1, amplitude=0.5, mean=0.0)        # the release's kernel (Matérn 3/2, ρ = 0.1)
OTHER = GPPrior(lengthscale=0.2, amplitude=0.5, mean=0.0)      # not diagonal in the release's basis


def _plan(tree, prior, **kw):
    return build_model(tree, prior, **kw)._fdp_meta["plan"]


def test_own_kernel_is_exact_past_the_old_cliff():
    rel = _release(400, "iclp", n=50)
    plan = _plan(rel, OWN, target="summary")
    assert (plan.model, plan.exact, plan.own_kernel, plan.kl) == ("marginal", True, True, 0.0)
    np.testing.assert_array_equal(plan.prior_var, rel["constant_data"]["eigenvalues"].values)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceMethodWarning)
        post = infer(rel, OWN, draws=50, chains=2, random_seed=0, progressbar=False, target="summary")
    assert post.attrs["inference"] == "exact" and post.attrs["inference_model"] == "marginal"
    assert post.attrs["inference_method_requested"] == "auto" and "by construction" in post.attrs[
        "inference_prior_diagonal"]
    # J = K: the curve is Φθ exactly
    phi = rel["constant_data"]["eigenfunctions"].values
    np.testing.assert_allclose(post["posterior"]["curve"].values, post["posterior"]["coefficients"].values @ phi.T)
    near = _plan(rel, GPPrior(lengthscale=0.1001, amplitude=0.5, mean=0.0), target="summary")
    assert not near.own_kernel and near.model == "gibbs"
    assert not _plan(rel, GPPrior(nu=2.5, lengthscale=0.1, amplitude=0.5, mean=0.0), target="summary").own_kernel


def test_auto_warns_and_records_a_changed_method(small):
    rel, _ = small
    with pytest.warns(InferenceMethodWarning, match="no exact posterior because the prior's coefficient covariance"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InferenceWarning)
            post = infer(rel, OTHER, draws=40, tune=10, chains=2, random_seed=0, progressbar=False, target="summary")
    at = post.attrs
    assert (at["inference"], at["inference_model"], at["inference_sampler"]) == ("Gibbs", "gibbs", "gibbs")
    assert at["inference_method_requested"] == "auto" and "not diagonal" in at["inference_not_exact_because"]
    assert "Gibbs sampler" in at["inference_description"]
    assert set(post["posterior"].data_vars) == {"curve", "coefficients", "noise_mixing"}
    # asked for explicitly: no warning; free hyperparameters: NUTS, recorded (attrs, the command line's table),
    # not warned about (it is what leaving them out asks for)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceMethodWarning)
        warnings.simplefilter("ignore", InferenceWarning)
        infer(rel, OTHER, method="gibbs", draws=20, tune=5, chains=1, random_seed=0, progressbar=False, target="summary")
    from fdp_ppl.inference.infer import _say_method

    model = build_model(rel, GPPrior(lengthscale=0.1), target="summary")
    plan = model._fdp_meta["plan"]
    assert plan.model == "marginal" and not plan.exact and not plan.attention
    assert plan.reason.startswith("the GP prior's amplitude and mean are free")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceMethodWarning)
        _say_method("auto", plan, model._fdp_meta)


def _ess(x):
    """Bulk ESS of draws (chains, draws)."""
    return float(az.ess(np.asarray(x)[None] if np.ndim(x) == 1 else np.asarray(x), method="bulk"))


def test_gibbs_matches_conjugate_posterior(small):
    """Gaussian noise, non-diagonal prior: forced Gibbs against the closed-form posterior."""
    _, gauss = small
    exact = infer(gauss, OTHER, draws=4000, chains=1, random_seed=3, progressbar=False, target="summary")
    assert exact.attrs["inference"] == "exact"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InferenceWarning)
        gibbs = infer(gauss, OTHER, method="gibbs", draws=2000, tune=200, chains=2, random_seed=4,
                      progressbar=False, target="summary")
    assert gibbs.attrs["inference"] == "Gibbs"

    def check(post, widen=1.0):
        bad = []
        for var, sel in (("coefficients", {"basis": slice(0, 6)}), ("curve", {"t": slice(0, 30, 5)})):
            g = post["posterior"][var].isel(sel).values                                  # (chain, draw, k)
            g = g.mean((0, 1)) + widen * (g - g.mean((0, 1)))
            e = exact["posterior"][var].isel(sel).values.reshape(-1, g.shape[-1])
            for k in range(g.shape[-1]):
                ess = _ess(g[..., k])
                se = np.sqrt(e[:, k].var() / ess + e[:, k].var() / e.shape[0])
                z = abs(g[..., k].mean() - e[:, k].mean()) / se
                log_ratio = abs(np.log(g[..., k].std() / e[:, k].std()))
                if z > 4.5 or log_ratio > 4.5 * np.sqrt(0.5 / ess + 0.5 / e.shape[0]):
                    bad.append((var, k, round(float(z), 2), round(float(log_ratio), 3), round(ess)))
        return bad

    assert check(gibbs) == []
    assert check(gibbs, widen=1.2) != []        # the check sees a posterior 20% too wide


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{"target": "summary"}, {"target": "population", "sampling_sd": 0.3}],
                         ids=["summary", "population"])
def test_gibbs_agrees_with_nuts_laplace(small, kw):
    """Laplace noise, non-diagonal prior: Gibbs against NUTS on the whitened model (~20 s; the fast variant is
    :func:`test_gibbs_matches_conjugate_posterior`)."""
    rel, _ = small
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (InferenceWarning, InferenceMethodWarning))
        gibbs = infer(rel, OTHER, draws=3000, tune=300, chains=2, random_seed=5, progressbar=False, **kw)
        nuts = infer(rel, OTHER, method="whitened", draws=1000, tune=600, chains=2, random_seed=6,
                     progressbar=False, **kw)
    assert (gibbs.attrs["inference_model"], nuts.attrs["inference"]) == ("gibbs", "NUTS")

    def cols(post):
        fun = functionals(post, points=(0.5,))
        out = {k: fun[k] for k in ("integral", "max", "value_at_0.5")}
        out.update({f"coef{j}": post["posterior"]["coefficients"].isel(basis=j) for j in range(4)})
        return {k: (v.values.ravel(), float(az.ess(v.to_dataset(name="x"), method="bulk")["x"])) for k, v in out.items()}

    a, b = cols(gibbs), cols(nuts)
    level = 1e-3 / (2 * len(a))
    bad = []
    for k in a:
        (x, ex), (z, ez) = a[k], b[k]
        n1, n2 = min(x.size, ex), min(z.size, ez)
        p_ks = stats.kstwo.sf(stats.ks_2samp(x, z).statistic, round(n1 * n2 / (n1 + n2)))
        se = np.sqrt((stats.kurtosis(x, fisher=False) - 1) / n1 + (stats.kurtosis(z, fisher=False) - 1) / n2)
        p_var = 2 * stats.norm.sf(abs(np.log(np.var(x) / np.var(z))) / se)
        if min(p_ks, p_var) < level:
            bad.append((k, p_ks, p_var, n1, n2))
    assert bad == []


def test_split_gibbs_invariant_law_gaussian_closed_form():
    """The sampler alone, 3 coefficients: with Normal noise its long-run mean and covariance are the
    conjugate posterior's (a strongly correlated prior, so that the auxiliary step matters)."""
    rng = np.random.default_rng(7)
    cov = np.array([[1.0, 0.8, 0.5], [0.8, 1.0, 0.7], [0.5, 0.7, 1.0]])
    mean = np.array([0.2, -0.1, 0.0])
    y, s = np.array([1.0, 0.5, -0.5]), np.array([0.5, 1.0, 2.0])
    g = SplitGibbs(mean, cov, Normal(), y, s)
    assert 0 < g.delta < 1 and 0 < g.worst_rate < 1
    chains = g.run(3000, 200, 4, rng)                                   # (4, 3000, 3)
    draws = chains.reshape(-1, 3)
    Q = np.linalg.inv(cov) + np.diag(1 / s**2)
    post_cov = np.linalg.inv(Q)
    post_mean = post_cov @ (np.linalg.solve(cov, mean) + y / s**2)
    ess = np.array([_ess(chains[..., k]) for k in range(3)])
    sd = np.sqrt(np.diag(post_cov))
    assert np.all(np.abs(draws.mean(0) - post_mean) < 4.5 * sd / np.sqrt(ess))
    assert np.all(np.abs(np.log(draws.std(0) / sd)) < 4.5 * np.sqrt(1.0 / ess))
    corr = np.corrcoef(draws.T)
    np.testing.assert_allclose(corr, post_cov / sd[:, None] / sd[None, :], atol=4.5 / np.sqrt(ess.min()))
    # the same check rejects a sampler whose split ignored the prior's correlation
    wrong = SplitGibbs(mean, np.diag(np.diag(cov)), Normal(), y, s).run(3000, 200, 4, rng).reshape(-1, 3)
    assert not np.all(np.abs(wrong.mean(0) - post_mean) < 4.5 * sd / np.sqrt(ess))
