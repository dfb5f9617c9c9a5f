"""Population models from private releases (fdp_ppl/inference/population.py, fp.observe): the likelihood of a mean
release given a population mean and covariance equals a brute-force simulation of (clipped sample mean of n curves +
the release's noise); the population posterior covers a known truth; az.compare ranks population models from the
release alone; the share of curves outside τ comes from the model. Post-processing of public content only: DESIGN
"Data flow" (inference costs no privacy) and invariant 6 (a release holds public content only)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import integrate, stats

import fdp_ppl as fp
from fdp_ppl.errors import InputError
from fdp_ppl.inference import population_clipping as PC
from fdp_ppl.inference.comparison import gaussian_loo, release_identity
from fdp_ppl.inference.infer import _shrinkage
from fdp_ppl.inference.population import MOMENT_ERROR_TOLERANCE as PC_TOLERANCE
from fdp_ppl.inference.population import RECORDS as PC_RECORDS
from fdp_ppl.inference.population import (
    PopulationClippingWarning,
    observe,
    outside_tau,
    population_result,
)
from fdp_ppl.noise.elliptical.process import EllipticalMechanism
from fdp_ppl.releasing import schema as S

K = 12


def _grid():
    grid = fp.Grid.uniform(K)
    return grid, np.abs(grid.t[:, None] - grid.t[None, :])


def _matern32(d, amp, ell, xp=np):
    r = np.sqrt(3.0) * d / ell
    return amp**2 * (1 + r) * xp.exp(-r)


def _release(summary_fn, mechanism, n, *, mu, cov, tau, seed=0, **kw):
    grid, _ = _grid()
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    X = np.random.default_rng(seed).multivariate_normal(mu, cov, size=n, method="cholesky")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        return fp.release(summary_fn(X, basis, tau=tau, **kw), mechanism, random_seed=seed + 1, study=True)


def _population():
    grid, d = _grid()
    return 0.5 + np.sin(2 * np.pi * grid.t), _matern32(d, 0.5, 0.3) + 1e-9 * np.eye(K)


# ----------------------------------------------------------------------------------- likelihood vs brute force
@pytest.mark.parametrize("mechanism", [fp.FRL(epsilon=8.0), fp.GaussianMechanism(8.0, 1e-3, "analytic")],
                         ids=["laplace", "normal"])
def test_likelihood_equals_brute_force_sample_mean_plus_noise(mechanism):
    """log p(y | μ, K) of the model equals log E[p_noise(y − S A X̄)] over brute-force simulated samples of n curves
    (the released summary computed by the spec itself on a few of them), within the Monte Carlo error."""
    mu, cov = _population()
    n, tau = 8, 4.0
    tree = _release(fp.frl_mean, mechanism, n, mu=mu, cov=cov, tau=tau, M=3)
    view = S.read_release(tree)
    y, b, law = view.released(0), view.noise_scale, view.law
    SA = _shrinkage(view)[:, None] * view.grid_to_coefficients()
    assert outside_tau(mu, cov, view.weights, tau) < 1e-3        # clipping does not bind: the model is exact here
    rng = np.random.default_rng(7)
    M = 10_000
    L = np.linalg.cholesky(cov)
    curves = mu + np.einsum("kl,mnl->mnk", L, rng.standard_normal((M, n, K)))          # (M, n, K)
    grid, _ = _grid()
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    for m in range(3):   # the brute force's summary is the spec's own
        np.testing.assert_allclose(fp.frl_mean(curves[m], basis, tau=tau, M=3).coefficients,
                                   SA @ curves[m].mean(axis=0), rtol=1e-10, atol=1e-12)
    w = np.exp(law.logp(y[None, :] - curves.mean(axis=1) @ SA.T, np.zeros(3), b))
    brute, se = np.log(w.mean()), w.std() / w.mean() / np.sqrt(M)
    with pm.Model() as model:
        obs = observe(tree, mean=mu, covariance=cov, name="rel")
    logp = model.compile_logp(vars=[model["rel"]], jacobian=False)
    if obs.mixing is None:
        ours, se_ours = float(logp({})), 0.0
    else:   # the model's Laplace noise is a scale mixture: integrate its latent scales out by their prior
        E = rng.exponential(size=(1500, 3))
        v = np.array([float(logp({f"{obs.mixing}_log__": np.log(e)})) for e in E])
        ours, se_ours = np.log(np.mean(np.exp(v))), np.exp(v).std() / np.exp(v).mean() / np.sqrt(E.shape[0])
    assert abs(ours - brute) < 5 * np.hypot(se, se_ours) + 1e-3, (ours, brute, se, se_ours)
    # the bound cannot pass vacuously: forgetting 1/n moves the likelihood far outside it
    wrong = law.logp(y[None, :] - (SA @ mu + np.sqrt(n) * (curves.mean(axis=1) - mu) @ SA.T), np.zeros(3), b)
    assert abs(np.log(np.mean(np.exp(wrong))) - brute) > 20 * np.hypot(se, se_ours) + 1e-2


def test_outside_tau_matches_the_simulated_share_of_clipped_curves():
    grid, _ = _grid()
    mu, cov = _population()
    X = np.random.default_rng(2).multivariate_normal(mu, cov, size=40_000, method="cholesky")
    norms = np.sqrt(np.sum(grid.weights * X**2, axis=1))
    for tau in (0.8, 1.0, 1.3):
        share = float(np.mean(norms > tau))
        ours = outside_tau(mu, cov, grid.weights, tau, samples=40_000)
        assert abs(ours - share) < 5 * np.sqrt(2 * share * (1 - share) / 40_000) + 1e-4, (tau, ours, share)
        assert 0.01 < share < 0.99


# ----------------------------------------------------------------------- result, leave-one-out terms, clipping
def _hand_trace(values: dict, n_chain=1) -> xr.DataTree:
    post = xr.Dataset({k: (("chain", "draw") + tuple(f"{k}_dim_{i}" for i in range(np.ndim(v) - 1)),
                           np.asarray(v).reshape(n_chain, -1, *np.shape(v)[1:])) for k, v in values.items()})
    return xr.DataTree.from_dict({"posterior": post})


def test_laplace_log_likelihood_is_the_exact_leave_one_out_term():
    """log_likelihood/<name> is log p(y_j | y_-j, θ, E_-j): the latent scale E_j integrated out by quadrature agrees,
    and for Normal noise it is the Gaussian leave-one-out term."""
    mu, cov = _population()
    tree = _release(fp.frl_mean, fp.FRL(epsilon=4.0), 30, mu=mu, cov=cov, tau=4.0, M=4)
    view = S.read_release(tree)
    y, b = view.released(0), view.noise_scale
    SA = _shrinkage(view)[:, None] * view.grid_to_coefficients()
    with pm.Model() as model:
        c = pm.Normal("c", 0.0, 1.0)
        obs = observe(tree, mean=c + mu, covariance=cov, name="rel")
    cs, Es = np.array([0.0, 0.3]), np.array([[0.5, 1.2, 2.0, 0.1], [1.0, 0.3, 0.7, 3.0]])
    res = population_result(_hand_trace({"c": cs, obs.mixing: Es}), model)
    ll = res["log_likelihood"]["rel"].values.reshape(2, -1)
    def dens(e, i, j, m, C):   # the integrand over E_j of p(y_j | y_-j, θ, E)
        D = 2 * b**2 * Es[i].copy()
        D[j] = 2 * b[j] ** 2 * e
        Sig = C + np.diag(D)
        keep = np.arange(4) != j
        cm = m[j] + Sig[j, keep] @ np.linalg.solve(Sig[np.ix_(keep, keep)], y[keep] - m[keep])
        cv = Sig[j, j] - Sig[j, keep] @ np.linalg.solve(Sig[np.ix_(keep, keep)], Sig[keep, j])
        return stats.norm.pdf(y[j], cm, np.sqrt(cv)) * np.exp(-e)

    for i in range(2):
        m, C = SA @ (mu + cs[i]), SA @ cov @ SA.T / 30
        for j in range(4):
            want = np.log(integrate.quad(dens, 0, np.inf, args=(i, j, m, C), epsabs=0, epsrel=1e-10, limit=200)[0])
            assert ll[i, j] == pytest.approx(want, rel=1e-6, abs=1e-8)
    assert res.attrs["release_id"] == release_identity(tree, 0) == res.attrs["rel_release_id"]
    assert "scale mixture" in res.attrs["rel_likelihood"] and "central limit theorem" in res.attrs["rel_approximation"]
    assert set(res.children) >= {"posterior", "log_likelihood", "observed_data", "constant_data"}
    np.testing.assert_array_equal(res["observed_data"]["rel"].values, y)

    gauss = _release(fp.frl_mean, fp.GaussianMechanism(4.0, 1e-3, "analytic"), 30, mu=mu, cov=cov, tau=4.0, M=4)
    gview = S.read_release(gauss)
    with pm.Model() as gmodel:
        c = pm.Normal("c", 0.0, 1.0)
        observe(gauss, mean=c + mu, covariance=cov, name="g")
    gres = population_result(_hand_trace({"c": cs}), gmodel)
    for i in range(2):
        want = gaussian_loo(gview.released(0), SA @ (mu + cs[i]),
                            SA @ cov @ SA.T / 30 + np.diag(gview.noise_scale**2))
        np.testing.assert_allclose(gres["log_likelihood"]["g"].values.reshape(2, -1)[i], want, rtol=1e-9)


def test_clipping_that_binds_is_reported_from_the_model_not_the_data():
    """With clipping="ignore" (the closed form) the fitted population's share beyond τ is recorded and warned of."""
    mu, cov = _population()
    tree = _release(fp.frl_mean, fp.FRL(epsilon=1.0), 50, mu=mu, cov=cov, tau=1.2, M=4)
    with pm.Model() as model:
        amp = pm.HalfNormal("amp", 1.0)
        observe(tree, mean=mu, covariance=amp**2 * cov / 0.25, name="rel", clipping="ignore")
    trace = _hand_trace({"amp": np.full(4, 0.5), "rel::noise_mixing": np.ones((4, 4))})
    with pytest.warns(PopulationClippingWarning, match=r"puts \d+\.\d% of curves outside tau = 1.2"):
        res = population_result(trace, model)
    grid, _ = _grid()
    assert res.attrs["rel_outside_tau"] == pytest.approx(outside_tau(mu, cov, grid.weights, 1.2), abs=1e-12)
    small = _hand_trace({"amp": np.full(4, 0.05), "rel::noise_mixing": np.ones((4, 4))})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PopulationClippingWarning)
        assert population_result(small, model).attrs["rel_outside_tau"] < 0.01


# ----------------------------------------------------------------------------------- clipping that binds
def test_clipped_moments_match_brute_force_monte_carlo():
    """The clipped moments on the public points (L² and sup clipping) agree with a brute-force simulation of clipped
    Gaussian curves within its Monte Carlo error plus the points' own (S = 2048); the clipping moves them by far more
    than that margin (not vacuous); as τ → ∞ they are the population's own moments exactly."""
    mu, cov = _population()
    grid, _ = _grid()
    L = np.linalg.cholesky(cov)
    z = PC.normal_points(PC.CLIPPING_POINTS, K)
    X = np.random.default_rng(3).multivariate_normal(mu, cov, size=100_000)
    for norm, tau in (("l2", 1.0), ("sup", 1.2)):
        m, c = PC.clipped_moments(mu, L, z, grid.weights, tau, norm)
        clipped = X - PC.excess(X, grid.weights, tau, norm)
        assert np.mean(np.any(clipped != X, axis=1)) > 0.1                  # clipping binds for > 10 % of curves
        sd = clipped.std(axis=0)
        margin = 5 * sd * np.sqrt(1 / X.shape[0] + 1 / z.shape[0])
        np.testing.assert_array_less(np.abs(m - clipped.mean(axis=0)), margin)
        assert np.max(np.abs(m - mu) / margin) > 2                          # ignoring clipping fails the bound
        np.testing.assert_allclose(c, np.cov(clipped.T), atol=10 * np.max(sd) ** 2 / np.sqrt(z.shape[0]))
        assert np.max(np.abs(c - cov)) > 0.1 * np.max(cov)
        m_inf, c_inf = PC.clipped_moments(mu, L, z, grid.weights, 1e6, norm)
        np.testing.assert_allclose(m_inf, mu, rtol=0, atol=1e-14)
        np.testing.assert_allclose(c_inf, cov, rtol=0, atol=1e-14)


def test_clipping_choice_comes_from_n_tau_and_the_prior():
    """clipping="auto" chooses from public quantities only (the release's n and τ, draws of the model's prior): the
    closed form where no prior draw clips, the clipped-moments likelihood (n > 30) or record augmentation (n ≤ 30)
    where clipping binds."""
    mu, cov = _population()
    grid, _ = _grid()
    kw = {"tau": 1.0, "norm": "l2", "weights": grid.weights, "offset": np.zeros(K)}
    with pm.Model() as model:
        amp = pm.LogNormal("amp", 0.0, 0.2)
    choice, share = PC.clipping_plan(model, pt_const(mu), amp**2 * cov, n=40, **kw)
    assert choice == "moments" and share > PC.BINDING_SHARE
    assert PC.clipping_plan(model, pt_const(mu), amp**2 * cov, n=12, **kw)[0] == "records"
    assert PC.clipping_plan(model, pt_const(mu), amp**2 * cov, n=40, **{**kw, "tau": 50.0}) == ("ignore", 0.0)
    with pytest.raises(InputError, match="clipping must be one of"):
        PC.clipping_plan(model, mu, cov, n=40, clipping="sometimes", **kw)


def pt_const(x):
    import pytensor.tensor as pt

    return pt.as_tensor_variable(x)


@pytest.mark.slow
def test_clipped_likelihood_is_the_unclipped_one_when_clipping_does_not_bind():
    """observe(clipping="moments") on a release whose τ no curve reaches has the closed form's log-density; the
    automatic choice there is the closed form, and with τ binding it is the clipped-moments likelihood (n > 30) or
    record-level augmentation (n ≤ 30), chosen from n, τ and the model's prior only (~7 s CPU: three compiles)."""
    mu, cov = _population()
    wide = _release(fp.frl_mean, fp.GaussianMechanism(2.0, 1e-3, "analytic"), 40, mu=mu, cov=cov, tau=50.0, M=3)
    logps = {}
    for clipping in ("auto", "moments"):
        with pm.Model() as model:
            c = pm.Normal("c", 0.0, 1.0)
            obs = observe(wide, mean=c + mu, covariance=cov, name="rel", clipping=clipping)
        logps[obs.clipping] = model.compile_logp()({"c": 0.3})
    assert set(logps) == {"ignore", "moments"}
    assert logps["moments"] == pytest.approx(logps["ignore"], abs=1e-9)
    tight = _release(fp.frl_mean, fp.FRL(epsilon=1.0), 40, mu=mu, cov=cov, tau=1.0, M=3)
    few = _release(fp.frl_mean, fp.FRL(epsilon=1.0), 12, mu=mu, cov=cov, tau=1.0, M=3)
    choices = {}
    for tree in (tight, few):
        with pm.Model():
            amp = pm.LogNormal("amp", 0.0, 0.2)
            obs = observe(tree, mean=mu, covariance=amp**2 * cov, name="rel")
        choices[obs.n] = (obs.clipping, obs.attrs["clipping_prior_share"])
    assert choices[40][0] == "moments" and choices[12][0] == "records"
    assert choices[40][1] > PC.BINDING_SHARE
    with pm.Model(), pytest.raises(InputError, match="clipping must be one of"):
        observe(tight, mean=mu, covariance=cov, clipping="sometimes")


@pytest.mark.slow
def test_record_augmentation_is_the_release_noise_given_the_clipped_records():
    """clipping="records": the n latent records X_i = μ + L z_i, clipped and averaged, enter the release's own noise
    density (exact); population_result's log_likelihood is that density per coefficient, and the moments'
    likelihood records its quadrature error (~6 s CPU: four compiles)."""
    mu, cov = _population()
    n, tau = 6, 1.0
    tree = _release(fp.frl_mean, fp.FRL(epsilon=1.0), n, mu=mu, cov=cov, tau=tau, M=3)
    view = S.read_release(tree)
    y, b, law = view.released(0), view.noise_scale, view.law
    SA = _shrinkage(view)[:, None] * view.grid_to_coefficients()
    with pm.Model() as model:
        observe(tree, mean=mu, covariance=cov, name="rel", clipping="records")
    z = np.random.default_rng(2).standard_normal((n, K))
    X = mu + z @ np.linalg.cholesky(cov + 1e-10 * np.mean(np.diag(cov)) * np.eye(K)).T
    xbar = (X - PC.excess(X, view.weights, tau, "l2")).mean(axis=0)
    want = law.logp(y, SA @ xbar, b) + stats.norm.logpdf(z).sum()
    assert model.compile_logp()({f"rel::{PC_RECORDS}": z}) == pytest.approx(want, rel=1e-10)
    res = population_result(_hand_trace({f"rel::{PC_RECORDS}": z[None]}), model)
    np.testing.assert_allclose(res["log_likelihood"]["rel"].values.ravel(),
                               law.logp(y, SA @ xbar, b, pointwise=True), rtol=1e-10)
    assert res.attrs["rel_clipping"] == "records" and "augmentation" in res.attrs["rel_likelihood"]
    with pm.Model() as moments:
        amp = pm.LogNormal("amp", 0.0, 0.2)
        observe(tree, mean=mu, covariance=amp**2 * cov, name="rel", clipping="moments")
    res = population_result(_hand_trace({"amp": np.ones(2), "rel::noise_mixing": np.ones((2, 3))}), moments)
    assert res.attrs["rel_clipping"] == "moments" and "2048" in res.attrs["rel_approximation"]
    assert 0 <= res.attrs["rel_clipping_moment_error_mean"] < PC_TOLERANCE


def test_observe_refuses_what_it_does_not_model():
    mu, cov = _population()
    tree = _release(fp.frl_mean, fp.FRL(epsilon=1.0), 20, mu=mu, cov=cov, tau=4.0, M=3)
    with pytest.raises(InputError, match="inside `with pm.Model"):
        observe(tree, mean=mu, covariance=cov)
    with pm.Model():
        with pytest.raises(InputError, match="shape"):
            observe(tree, mean=mu[:5], covariance=cov)
        observe(tree, mean=mu, covariance=cov, name="a")
        with pytest.raises(InputError, match="already has"):
            observe(tree, mean=mu, covariance=cov, name="a")
    with pm.Model() as empty:
        pm.Normal("c")
    with pytest.raises(InputError, match="observes no release"):
        population_result(_hand_trace({"c": np.zeros(2)}), empty)
    elliptical = _release(fp.frl_mean, EllipticalMechanism(1.0, family="t", nu=5.0), 20, mu=mu, cov=cov, tau=4.0, M=3)
    with pm.Model(), pytest.raises(InputError, match="independent coefficients"):
        observe(elliptical, mean=mu, covariance=cov)


def test_n_enters_the_likelihood_as_a_number():
    """DESIGN invariant 12 (cost grows no faster than the work): the likelihood of a release of 10⁵ curves is the same
    graph as that of 100 curves — n scales the sampling covariance, nothing is per record."""
    from pytensor.graph import traversal as gb

    mu, cov = _population()
    sizes = []
    for n in (100, 100_000):
        tree = _release(fp.frl_mean, fp.FRL(epsilon=1.0), n, mu=mu, cov=cov, tau=4.0, M=4)
        with pm.Model() as model:
            amp = pm.HalfNormal("amp", 1.0)
            observe(tree, mean=mu, covariance=amp**2 * cov, name="rel")
        graph = model.logp()
        sizes.append(len(list(gb.ancestors([graph]))))
    assert sizes[0] == sizes[1]


# ------------------------------------------------------------------------------ NUTS: coverage and comparison
N_LARGE = 20_000


@pytest.fixture(scope="module")
def gaussian_release():
    mu, cov = _population()
    return _release(fp.rkhs_mean, fp.GaussianMechanism(1.0, 1e-3), N_LARGE, mu=mu, cov=cov, tau=4.0)


def _fit(tree, kernel, sine=True):
    """NUTS on the mean function's parameters (level, and the sine's amplitude unless ``sine=False``); the
    covariance fixed (a free one refactorises K at every step: the slow SBC test below samples the Laplace noise's
    latent scales, which do)."""
    grid, d = _grid()
    with pm.Model():
        c = pm.Normal("c", 0.0, 2.0, shape=2 if sine else 1)
        mean = c[0] + c[1] * np.sin(2 * np.pi * grid.t) if sine else c[0] + np.zeros(K)
        # clipping="ignore": tau = 4 is far beyond the population's curves (outside_tau < 0.01 is asserted below), but
        # the wide N(0, 2) prior on the level makes clipping="auto" choose the clipped-moments likelihood
        observe(tree, mean=mean, covariance=kernel(d) + 1e-6 * np.eye(K), name="growth", clipping="ignore")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(300, tune=300, chains=2, cores=1, random_seed=3, progressbar=False,
                              compute_convergence_checks=False)
        return population_result(idata)


@pytest.fixture(scope="module")
def matern_fit(gaussian_release):
    return _fit(gaussian_release, lambda d: _matern32(d, 0.5, 0.3))


def test_population_mean_posterior_covers_the_truth(matern_fit):
    """n = 20000 curves from a known GP population; the posterior of the mean function's parameters covers the truth
    (0.5, 1.0) within 4 posterior sd plus the Monte Carlo error of the posterior mean (sd/√ESS)."""
    post = matern_fit["posterior"]["c"]
    ess = az.ess(matern_fit, var_names=["c"])["c"].values
    mean, sd = post.mean(("chain", "draw")).values, post.std(("chain", "draw")).values
    assert np.all(np.abs(mean - [0.5, 1.0]) < 4 * sd * (1 + 1 / np.sqrt(ess))), (mean, sd)
    assert np.all(sd < 0.5)                      # the release is informative, not the N(0, 2) prior coming back
    assert matern_fit.attrs["growth_n"] == N_LARGE and matern_fit.attrs["growth_outside_tau"] < 0.01


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")  # PSIS k-hat note; ranks read
def test_az_compare_ranks_population_covariances_from_the_release(gaussian_release, matern_fit):
    se_fit = _fit(gaussian_release, lambda d: 0.25 * np.exp(-(d**2) / (2 * 0.1**2)))
    assert matern_fit.attrs["release_id"] == se_fit.attrs["release_id"] == release_identity(gaussian_release, 0)
    table = az.compare({"matern32": matern_fit, "squared_exponential": se_fit})
    assert set(table.index) == {"matern32", "squared_exponential"} and np.all(np.isfinite(table["elpd"]))
    assert matern_fit["log_likelihood"]["growth"].dims == ("chain", "draw", "growth_basis")


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")  # PSIS k-hat note; ranks read
def test_az_compare_ranks_the_true_mean_function_first(gaussian_release, matern_fit):
    """A comparison that can fail: the population's mean has a sine term; a model without it is ranked below the true
    one by az.compare from the release alone, by more than the difference's standard error. (One release of 12
    coefficients: the missing sine's misfit sits in the few coefficients that carry it, so the leave-one-out
    difference's standard error is about half the difference (ratios 1.4-2.0 over six seeds, at n = 2000 and 20000
    alike); a 2-standard-error margin is out of reach for a single release of this size.) Through
    fp.inference.compare: the sine-free mean leaves the odd coefficients' log-likelihood constant over the draws up to
    rounding, on which a plain az.compare raises "All tail values are the same" on some CPUs."""
    flat_fit = _fit(gaussian_release, lambda d: _matern32(d, 0.5, 0.3), sine=False)
    table = fp.inference.compare({"with_sine": matern_fit, "without_sine": flat_fit})
    assert table.attrs["loo"] == {"with_sine": "psis", "without_sine": "psis"}
    assert table.index[0] == "with_sine", table
    diff, dse = table.loc["without_sine", "elpd_diff"], table.loc["without_sine", "dse"]
    assert -diff > dse > 0, table      # elpd_diff is the lower model's elpd minus the best one's


# ------------------------------------------------------------------------------------------------ SBC-lite
@pytest.mark.slow
def test_sbc_lite_level_of_the_population_mean():
    """Simulation-based calibration (Talts et al. 2018) of the population mean's level c ~ N(0, 1) from one release
    of the Gaussian mechanism (n = 2000 curves, ε = 1): ranks of the truth among 19 thinned posterior draws are
    uniform over 30 replications (chi-square on 4 bins, p > 0.01)."""
    mu, cov = _population()
    rng = np.random.default_rng(11)
    ranks, L = [], 19
    for r in range(30):
        c0 = rng.normal()
        tree = _release(fp.rkhs_mean, fp.GaussianMechanism(1.0, 1e-3), 2000, mu=mu + c0, cov=cov, tau=4.0,
                        seed=100 + r)
        with pm.Model():
            c = pm.Normal("c", 0.0, 1.0)
            observe(tree, mean=c + mu, covariance=cov, name="rel")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pm.sample(380, tune=300, chains=1, random_seed=r, progressbar=False,
                                  compute_convergence_checks=False)
        draws = idata["posterior"]["c"].values.ravel()[:: 380 // L][:L]
        ranks.append(int(np.sum(draws < c0)))
    counts = np.bincount(np.asarray(ranks) // 5, minlength=4)
    assert stats.chisquare(counts).pvalue > 0.01, counts


# ------------------------------------------------------------- several releases of the same people (joint observation)
def _joint_releases(n=60, tau=8.0, seed=0, epsilon=1.0):
    from fdp_ppl.fpca import FPCASpec

    grid, _ = _grid()
    mu, cov = _population()
    X = np.random.default_rng(seed).multivariate_normal(mu, cov, size=n, method="cholesky")
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    spec = FPCASpec(grid=grid, m=3, k=1, epsilon=epsilon, tau=tau)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean_tree = fp.release(fp.frl_mean(X, basis, tau=tau, M=4), fp.FRL(epsilon=epsilon), random_seed=seed + 1,
                               study=True)
        pca_tree = fp.release(spec.fit(X), fp.ExponentialMechanism(), random_seed=seed + 2, study=True)
    return X, spec, mean_tree, pca_tree


def test_wilson_hilferty_chi2_with_its_potential_is_exactly_chi2():
    """The latent scatter's Bartlett χ² variables: u ~ N(0, 1) mapped by Wilson–Hilferty, with the potential added,
    has exactly the χ²_ν density (change of variables), at small and large ν."""
    import pytensor.tensor as pt

    from fdp_ppl.inference.population_joint import _chi2_by_wilson_hilferty

    u = pt.dvector("u")
    for nu in (12.0, 99.0, 1e5):
        c, pot = _chi2_by_wilson_hilferty(u, np.array([nu]))
        h = np.sqrt(2 / (9 * nu))
        for uu in (-2.5, 0.0, 1.7):
            cv, pv = float(c.eval({u: [uu]})[0]), float(pot.eval({u: [uu]}))
            log_jac = np.log(3 * nu * h * (1 - 2 / (9 * nu) + uu * h) ** 2)
            assert stats.norm.logpdf(uu) + pv - log_jac == pytest.approx(stats.chi2.logpdf(cv, nu), abs=1e-8)


def test_joint_coefficient_map_is_the_components_release_coefficients():
    """Without clipping the latent scatter's coefficients B_w X / τ_c are the FPCA spec's own coefficients, and the
    scatter n c̄ c̄ᵀ + Σ (c_i − c̄)(c_i − c̄)ᵀ is the spec's G (the decomposition the latent statistics use)."""
    from fdp_ppl.inference.population_joint import _components_release

    X, spec, _, pca_tree = _joint_releases()
    comp = _components_release(pca_tree, 0)
    c = X @ comp["coef_map"].T
    np.testing.assert_allclose(c, spec.coefficients(X)[0], atol=1e-9)
    cbar = c.mean(axis=0)
    G = X.shape[0] * np.outer(cbar, cbar) + (c - cbar).T @ (c - cbar)
    np.testing.assert_allclose(G, spec.fit(X).gram, rtol=1e-8, atol=1e-9)


def test_joint_observation_result_has_one_log_likelihood_per_release_conditional_on_the_latents():
    """log_likelihood="conditional" (an option, not the default): each release's density given the latent sample mean
    and scatter, by hand; the default is the integrated terms (next test)."""
    from fdp_ppl.inference.components import FrameLikelihood

    _, _, mean_tree, pca_tree = _joint_releases()
    mu, cov = _population()
    with pm.Model() as model:
        c = pm.Normal("c", 0.0, 1.0)
        obs = fp.observe([mean_tree, pca_tree], mean=c + mu, covariance=cov, name="rel")
    assert obs.variables == {"mean": "rel_mean", "components": "rel_components"}
    assert {v.name for v in model.free_RVs} == {"c", "rel::sample_mean_std", "rel::bartlett_diag_std",
                                                "rel::bartlett_lower"}
    rng = np.random.default_rng(3)
    values = {"c": rng.normal(size=3), "rel::sample_mean_std": rng.normal(size=(3, K)),
              "rel::bartlett_diag_std": rng.normal(size=(3, 3)), "rel::bartlett_lower": rng.normal(size=(3, 3))}
    res = population_result(_hand_trace(values), model, log_likelihood="conditional")
    assert res.attrs["rel_log_likelihood_mode"] == "conditional"
    assert population_result(_hand_trace(values), model).attrs["rel_log_likelihood_mode"] == "integrated"
    with pytest.raises(InputError, match="log_likelihood"):
        population_result(_hand_trace(values), model, log_likelihood="latent")
    assert set(res.children) >= {"posterior", "log_likelihood", "observed_data", "constant_data"}
    assert set(res["log_likelihood"].data_vars) == {"rel_mean", "rel_components"}
    assert res["log_likelihood"]["rel_mean"].dims == ("chain", "draw", "rel_mean_basis")
    assert res["log_likelihood"]["rel_components"].dims == ("chain", "draw", "rel_components_frame")
    assert res.attrs["release_id"] == f"{release_identity(mean_tree, 0)},{release_identity(pca_tree, 0)}"
    assert res.attrs["rel_mean_release_id"] == release_identity(mean_tree, 0)
    assert res.attrs["rel_components_release_id"] == release_identity(pca_tree, 0)
    assert "Wishart" in res.attrs["rel_approximation"] and "series" in res.attrs["rel_components_log_constant"]
    assert res.attrs["rel_mean_outside_tau"] < 0.01 and res.attrs["rel_components_outside_tau"] < 0.01
    # by hand: the latent sample mean and scatter, then each release's likelihood given them
    view = S.read_release(mean_tree)
    SA = _shrinkage(view)[:, None] * view.grid_to_coefficients()
    L = np.linalg.cholesky(cov + 1e-9 * np.mean(np.diag(cov)) * np.eye(K))
    Bc = obs.coef_map
    Lc = np.linalg.cholesky(Bc @ cov @ Bc.T + 1e-9 * np.mean(np.diag(Bc @ cov @ Bc.T)) * np.eye(3))
    nu = 60 - 1 - np.arange(3)
    lik = FrameLikelihood.build(obs.frames, np.linalg.inv(obs.likelihood.sigma_inv),
                                obs.likelihood.scale, 60)
    for i in range(3):
        xbar = mu + values["c"][i] + L @ values["rel::sample_mean_std"][i] / np.sqrt(60)
        want = stats.laplace.logpdf(view.released(0), SA @ xbar, view.noise_scale)
        np.testing.assert_allclose(res["log_likelihood"]["rel_mean"].values[0, i], want, rtol=1e-9)
        cc = nu * (1 - 2 / (9 * nu) + values["rel::bartlett_diag_std"][i] * np.sqrt(2 / (9 * nu))) ** 3
        T = np.diag(np.sqrt(cc))
        T[np.tril_indices(3, -1)] = values["rel::bartlett_lower"][i]
        cbar = Bc @ xbar
        G = 60 * np.outer(cbar, cbar) + Lc @ T @ T.T @ Lc.T
        np.testing.assert_allclose(res["log_likelihood"]["rel_components"].values[0, i], lik.logp(G / 60), rtol=1e-7)
    np.testing.assert_array_equal(res["observed_data"]["rel_components"].values, obs.frames)


def test_joint_integrated_log_likelihood_is_brute_force_monte_carlo_over_the_latent_statistics():
    """The default joint terms integrate the latent statistics out given θ (DESIGN "Data flow": post-processing of
    public content): ``log p(y_j | y_-j, θ)`` in closed form (the Gaussian leave-one-out term of ``N(S A (μ − o),
    S A K Aᵀ S / n + diag s²)``), ``log p(v | y, θ)`` and, with ``log_likelihood="joint"``, ``log p(y_j | y_-j, v,
    θ)`` against an independent estimate ``p(y, v | θ) = E[p(y | x̄) p(v | G)]`` over x̄ ~ N(μ, K/n) and scipy's
    Wishart (margin: 4 combined Monte Carlo standard errors)."""
    from scipy.special import logsumexp

    from fdp_ppl.fpca import FPCASpec

    n, grid = 60, _grid()[0]
    mu, cov = _population()
    X = np.random.default_rng(0).multivariate_normal(mu, cov, size=n, method="cholesky")
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean_tree = fp.release(fp.frl_mean(X, basis, tau=8.0, M=4), fp.GaussianMechanism(1.0, 1e-3), random_seed=1,
                               study=True)
        pca_tree = fp.release(FPCASpec(grid=grid, m=3, k=1, epsilon=1.0, tau=8.0).fit(X),
                              fp.ExponentialMechanism(), random_seed=2, study=True)
    with pm.Model() as model:
        c = pm.Normal("c", 0.0, 1.0)
        obs = fp.observe([mean_tree, pca_tree], mean=c + mu, covariance=cov, name="rel", clipping="ignore")
    values = {"c": np.array([0.0]), "rel::sample_mean_std": np.zeros((1, K)),
              "rel::bartlett_diag_std": np.zeros((1, 3)), "rel::bartlett_lower": np.zeros((1, 3))}
    res = {mode: population_result(_hand_trace(values), model, log_likelihood=mode) for mode in ("integrated", "joint")}
    ll = {mode: {v: r["log_likelihood"][v].values[0, 0] for v in ("rel_mean", "rel_components")}
          for mode, r in res.items()}
    view = S.read_release(mean_tree)
    y, b = view.released(0), view.noise_scale
    SA = _shrinkage(view)[:, None] * view.grid_to_coefficients()
    np.testing.assert_allclose(ll["integrated"]["rel_mean"],
                               gaussian_loo(y, SA @ mu, SA @ cov @ SA.T / n + np.diag(b**2)), rtol=1e-9)
    np.testing.assert_array_equal(ll["integrated"]["rel_components"], ll["joint"]["rel_components"])
    attrs = res["integrated"].attrs
    assert attrs["rel_components_mc_draws"] == 256 and 0 < attrs["rel_components_mc_se"] < 0.1
    assert "p(v | y, theta)" in attrs["rel_log_likelihood"] and "rel_mean_frame_correction" in res["joint"].attrs
    # brute force: x̄ ~ N(μ, K/n) and W ~ Wishart(n − 1, B K Bᵀ) from scipy, weighted by p(y | x̄) (noise ≫ sampling sd)
    draws, Bc = 2000, obs.coef_map
    rng = np.random.default_rng(11)
    xbar = mu + rng.standard_normal((draws, K)) @ np.linalg.cholesky(cov).T / np.sqrt(n)
    W = stats.wishart(df=n - 1, scale=Bc @ cov @ Bc.T).rvs(draws, random_state=rng)
    cbar = xbar @ Bc.T
    G = n * cbar[:, :, None] * cbar[:, None, :] + W
    G *= np.minimum(1.0, n / np.trace(G, axis1=1, axis2=2))[:, None, None]
    lv = obs.likelihood.logp(G / n)[:, 0]
    ly = stats.norm.logpdf(y, xbar @ SA.T, b)                       # (draws, J)

    def log_mean(lw):   # log of a Monte Carlo mean and its delta-method standard error
        w = np.exp(lw - lw.max())
        return logsumexp(lw) - np.log(lw.size), w.std() / (w.mean() * np.sqrt(lw.size))

    joint, se_joint = log_mean(ly.sum(1) + lv)
    marg, se_marg = log_mean(ly.sum(1))
    se = np.hypot(se_joint, se_marg)
    assert ll["integrated"]["rel_components"] == pytest.approx(joint - marg, abs=4 * se + 4 * attrs[
        "rel_components_mc_se"])
    for j in range(y.size):   # log p(y_j | y_-j, v, θ) = log p(y, v | θ) − log p(y_-j, v | θ)
        rest, se_rest = log_mean(ly.sum(1) - ly[:, j] + lv)
        assert ll["joint"]["rel_mean"][j] == pytest.approx(joint - rest, abs=4 * np.hypot(se_joint, se_rest) + 0.02)


@pytest.mark.slow
def test_joint_leave_one_out_terms_on_the_exact_gaussian_analogue():
    """benchmarks/bench_records_loo.py --joint at 20 data sets per ratio (about a CPU minute): on the exact Gaussian
    analogue of a joint observation, for the well-specified model, log_likelihood="joint" is unbiased (|mean elpd
    bias| below 4 standard errors of the mean + 0.1) and the default integrated terms within 1 elpd of the exact one
    (they drop the second release's information about the shared mean), while the conditional terms are optimistic
    by more than 3 at sampling sd = 5 noise sd; the integrated terms' Pareto k exceeds 0.7 in no more data sets than
    the conditional ones'."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_records_loo

    datasets = 20
    out = bench_records_loo.run_joint(datasets)
    for key, res in out.items():
        margin = 4 * res["joint_elpd_bias_sd"] / np.sqrt(datasets) + 0.1
        assert abs(res["joint_elpd_bias_A"]) < margin, key
        assert abs(res["integrated_elpd_bias_A"]) < 1.0 + margin, key
        assert res["integrated_k_above_0.7"] <= res["conditional_k_above_0.7"], key
    assert out["s/b=5"]["conditional_elpd_bias_A"] > 3.0


def test_laplace_mixing_given_the_residual_is_its_exact_conditional():
    """E | r for the Laplace noise's normal scale mixture ξ | E ~ N(0, 2b²E), E ~ Exp(1): the draws' mean of E
    matches ∫ E p(r | E) e^{−E} dE / p(r) (quadrature), within 4 standard errors."""
    from fdp_ppl.inference.population_joint import laplace_mixing_given

    b = np.array([0.7])
    rng = np.random.default_rng(4)
    for r in (0.0, 0.3, 2.5):
        E = laplace_mixing_given(np.full((20_000, 1), r), b, rng)[:, 0] / (2 * b[0] ** 2)
        def dens(e, k, r=r):
            return e**k * stats.norm.pdf(r, 0.0, np.sqrt(2 * b[0] ** 2 * e)) * np.exp(-e)

        want = integrate.quad(dens, 0, np.inf, args=(1,))[0] / integrate.quad(dens, 0, np.inf, args=(0,))[0]
        assert E.mean() == pytest.approx(want, abs=4 * E.std() / np.sqrt(E.size))


def test_joint_observation_refuses_releases_of_different_people():
    _, _, mean_tree, pca_tree = _joint_releases()
    _, _, other_mean, other_pca = _joint_releases(n=40, seed=5)
    mu, cov = _population()
    with pm.Model():
        with pytest.raises(InputError, match="different people"):
            fp.observe([mean_tree, other_pca], mean=mu, covariance=cov)
        with pytest.raises(InputError, match="one mean release per call"):
            fp.observe([mean_tree, other_mean, pca_tree], mean=mu, covariance=cov)
        with pytest.raises(InputError, match="needs a mean release and a principal-components"):
            fp.observe([pca_tree], mean=mu, covariance=cov)


def test_joint_clipped_moments_follow_both_releases_own_clipping():
    """Where clipping binds (here for more than 10 % of curves), each record enters the mean release as
    clip_τ(X − o) and the components release as the FPCA spec's own clipped coefficient row; the joint clipped
    moments on the public points agree with a brute-force simulation of those clipped records within its Monte Carlo
    error plus the points' own, and differ from the unclipped moments by far more (not vacuous)."""
    from fdp_ppl.inference.population_joint import _components_release
    from fdp_ppl.inference.population_parts import _mean_release

    tau = 1.0
    _, spec, mean_tree, pca_tree = _joint_releases(tau=tau)
    grid, _ = _grid()
    mu, cov = _population()
    comp, part = _components_release(pca_tree, 0), _mean_release(mean_tree, 0)
    X = np.random.default_rng(4).multivariate_normal(mu, cov, size=60_000, method="cholesky")
    args = (part["offset"], grid.weights, tau, part["tau_norm"], comp["coef_map"], comp["weights"], comp["tau"])
    a, d = PC.record_statistics(X, *args)
    np.testing.assert_allclose(d, spec.coefficients(X)[0], rtol=0, atol=1e-9)   # the release's own coefficients
    assert np.mean(grid.norm(X) > tau) > 0.10
    z = PC.normal_points(PC.CLIPPING_POINTS, K)
    m_a, m_d, Caa, Cda, Cdd = PC.joint_clipped_moments(mu, np.linalg.cholesky(cov), z, *args)
    u = np.hstack([a, d])
    sd = u.std(axis=0)
    margin = 5 * sd * np.sqrt(1 / X.shape[0] + 1 / z.shape[0])
    np.testing.assert_array_less(np.abs(np.concatenate([m_a, m_d]) - u.mean(axis=0)), margin)
    C = np.block([[Caa, Cda.T], [Cda, Cdd]])
    np.testing.assert_allclose(C, np.cov(u.T), atol=10 * np.max(sd) ** 2 / np.sqrt(z.shape[0]))
    Bc = comp["coef_map"]
    assert np.max(np.abs(m_d - Bc @ mu) / margin[K:]) > 2                       # ignoring clipping fails the bound
    assert np.max(np.abs(Cdd - Bc @ cov @ Bc.T)) > 0.1 * np.max(np.abs(Bc @ cov @ Bc.T))


def test_joint_records_mode_is_the_clipped_mean_and_scatter_of_the_latent_records():
    """clipping="records" (small n): at latent records equal to the confidential curves, the components release's
    log-likelihood is the Bingham term at the FPCA spec's own scatter G of the clipped curves, and the mean release's
    the Laplace term around the design applied to their clipped mean; clipping binds here and is recorded as
    modelled (no warning)."""
    n, tau = 20, 1.0
    X, spec, mean_tree, pca_tree = _joint_releases(n=n, tau=tau)
    grid, _ = _grid()
    mu, cov = _population()
    assert np.mean(grid.norm(X) > tau) > 0.10
    with pm.Model() as model:
        c = pm.Normal("c", 0.0, 1.0)
        obs = fp.observe([mean_tree, pca_tree], mean=c + mu, covariance=cov, name="rel", clipping="records")
    assert {v.name for v in model.free_RVs} == {"c", f"rel::{PC_RECORDS}"}
    L = np.linalg.cholesky(cov + 1e-9 * np.mean(np.diag(cov)) * np.eye(K))
    z = np.linalg.solve(L, (X - mu).T).T
    with warnings.catch_warnings():
        warnings.simplefilter("error", PopulationClippingWarning)
        res = population_result(_hand_trace({"c": np.zeros(1), f"rel::{PC_RECORDS}": z[None]}), model)
    assert res.attrs["rel_clipping"] == "records" and res.attrs["rel_approximation"].startswith("none")
    assert "PSIS-LOO" in res.attrs["rel_log_likelihood"]   # conditional terms: az.compare is warned about
    assert res.attrs["rel_mean_outside_tau"] > 0.10
    np.testing.assert_allclose(res["log_likelihood"]["rel_components"].values[0, 0],
                               obs.likelihood.logp(spec.fit(X).gram / n), rtol=1e-8)
    part = obs.mean_part
    clipped = X - part["offset"] - PC.excess(X - part["offset"], grid.weights, tau, part["tau_norm"])
    want = stats.laplace.logpdf(part["y"], part["design"] @ clipped.mean(axis=0), part["scale"])
    np.testing.assert_allclose(res["log_likelihood"]["rel_mean"].values[0, 0], want, rtol=1e-9)


def test_joint_clipped_moments_likelihood_is_the_unclipped_one_when_nothing_is_clipped():
    """clipping="moments" where τ is far beyond every curve: the latent sample mean and scatter are those of the
    unclipped observation at the same standard-normal values (the conditional part of the coefficient mean is the
    jitter only); where clipping binds, the model adds the conditional latent and records the approximation."""
    import pytensor

    _, _, mean_tree, pca_tree = _joint_releases(tau=50.0)
    mu, cov = _population()
    rng = np.random.default_rng(5)
    point = {"rel::sample_mean_std": rng.normal(size=K), "rel::bartlett_diag_std": rng.normal(size=3),
             "rel::bartlett_lower": rng.normal(size=3)}
    out = {}
    for clipping in ("ignore", "moments"):
        with pm.Model() as model:
            obs = fp.observe([mean_tree, pca_tree], mean=mu, covariance=cov, name="rel", clipping=clipping,
                             clipping_points=256)
        free = {v.name: v for v in model.free_RVs}
        values = {**point, "rel::coefficient_mean_std": np.zeros(3)}
        fn = pytensor.function(list(free.values()), [obs.sample_mean, obs.scatter], on_unused_input="ignore")
        out[clipping] = fn(*[values[k] for k in free])
        assert obs.attrs["clipping"] == clipping
    assert "rel::coefficient_mean_std" in free and "Wishart(n-1, C_dd)" in obs.attrs["approximation"]
    np.testing.assert_allclose(out["moments"][0], out["ignore"][0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(out["moments"][1], out["ignore"][1], rtol=1e-6, atol=1e-9)


def _bench_sbc():
    """benchmarks/bench_sbc_population.py (the SBC study the slow tests run at a smaller size)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_sbc_population

    return bench_sbc_population


@pytest.mark.slow
def test_sbc_of_the_gp_population_parameters_from_one_and_from_joint_releases():
    """Simulation-based calibration (Talts et al. 2018) of a GP population's level, amplitude and lengthscale from
    (a) one FRL mean release and (b) the mean release with an FPCA release of the same curves observed jointly, at
    ε ∈ {0.5, 1, 4} (benchmarks/bench_sbc_population.py): ranks uniform (chi-square, p > 0.01) for every parameter
    where clipping does not bind; in the clipped regime (10 % or more of curves beyond τ, not modelled) the
    p-values are what the approximation costs, recorded and not asserted, but the regime must really clip."""
    B = _bench_sbc()
    res = B.run(30, draws=190, tune=250, thin=10, bins=4, log=lambda s: None)
    for key, r in res.items():
        if r["tau"] == B.TAU_CLIPPED:
            assert r["clipped_share_mean"] >= 0.10, (key, r["clipped_share_mean"])
            continue
        assert r["clipped_share_max"] == 0.0, key
        for p, value in r["pvalues"].items():
            assert value > 0.01, (key, p, value, r["ranks"][p])


@pytest.mark.slow
def test_sbc_of_the_gp_population_parameters_from_a_clipped_mean_release():
    """Simulation-based calibration of (c, amp, rho) from one FRL mean release whose τ clips 10 % or more of the
    curves, at ε ∈ {0.5, 1, 4} (benchmarks/bench_sbc_population.py --clipped): fp.observe's automatic choice is the
    clipped-moments likelihood, its quadrature error at the true parameters is below 0.1 likelihood sd, and the
    ranks are uniform (chi-square, p > 0.01) for every parameter."""
    B = _bench_sbc()
    res = B.run(15, draws=150, tune=150, thin=10, bins=3, settings=("mean",), regimes=B.CLIPPED_REGIMES,
                log=lambda s: None)
    for key, r in res.items():
        assert r["clipped_share_mean"] >= 0.10, (key, r["clipped_share_mean"])
        assert r["clipping"] == ["moments"], (key, r["clipping"])
        assert r["moment_error_max_sd"] < 0.1, (key, r["moment_error_max_sd"])
        for p, value in r["pvalues"].items():
            assert value > 0.01, (key, p, value, r["ranks"][p])


@pytest.mark.slow
def test_sbc_of_the_gp_population_parameters_from_clipped_joint_releases():
    """Simulation-based calibration of (c, amp, rho) from a mean release and an FPCA release of the same curves
    observed jointly, their τ clipping 10 % or more of the curves, at ε ∈ {0.5, 1, 4} (benchmarks/
    bench_sbc_population.py --clipped --settings mean+components): fp.observe's automatic choice is the clipped
    latent statistics ("moments") and the ranks are uniform (chi-square, p > 0.01) for every parameter."""
    B = _bench_sbc()
    res = B.run(8, draws=150, tune=150, thin=10, bins=3, settings=("mean+components",), regimes=B.CLIPPED_REGIMES,
                log=lambda s: None)
    for key, r in res.items():
        assert r["clipped_share_mean"] >= 0.10, (key, r["clipped_share_mean"])
        assert r["clipping"] == ["moments"], (key, r["clipping"])
        for p, value in r["pvalues"].items():
            assert value > 0.01, (key, p, value, r["ranks"][p])
