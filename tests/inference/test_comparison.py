"""Safe model comparison (fdp_ppl/inference/comparison.py, fp.inference.compare): every posterior names the release
it conditions on, exact leave-one-out equals brute-force refits, az.compare and az.plot_ppc_dist run on every family,
and the predictive check puts every coefficient on its own noise scale. Post-processing: DESIGN "Data flow"
(inference costs no privacy) and invariant 6 (a release holds public content only, so hashing it is safe)."""

from __future__ import annotations

import warnings

import arviz as az
import matplotlib
import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy.stats import laplace, norm

import fdp_ppl as fp
from fdp_ppl.errors import InputError
from fdp_ppl.inference import compare
from fdp_ppl.inference.comparison import (LOO_GROUP, STANDARDISED, gaussian_loo, grid_loo, loo, release_identity)
from fdp_ppl.releasing import schema as S
from tests.helpers import family_curves, labelled_points, readme_growth_release

matplotlib.use("Agg")


def _mean_release(mechanism, seed, K=25, J=8, draws=1):
    curves = family_curves(60, K, seed=0)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.from_points(curves["t"].values), n_components=J)
    summary = fp.ICLPQRSpec(basis=basis, tau=2.0, n=60).fit(curves)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(summary, mechanism, draws=draws, random_seed=seed, study=True)


def _infer(tree, prior, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.infer(tree, prior, random_seed=1, draws=kw.pop("draws", 400), chains=2, **kw)


@pytest.fixture(scope="module")
def laplace_release():
    return _mean_release(fp.ICLP(1.0), seed=3, draws=2)


# ------------------------------------------------------------------------------------------------ identity
def test_release_identity_survives_netcdf_and_tells_releases_and_draws_apart(laplace_release, tmp_path):
    tree = laplace_release
    path = tmp_path / "release.nc"
    tree.to_netcdf(path)
    back = xr.open_datatree(path)
    assert release_identity(back, 0) == release_identity(tree, 0)
    assert release_identity(tree, 0) != release_identity(tree, 1)                 # another publication
    other = _mean_release(fp.ICLP(1.0), seed=4)
    assert release_identity(other, 0) != release_identity(tree, 0)
    post = _infer(tree, fp.inference.ICLPPrior(smoothness=2.0, amplitude=1.0), target="summary", draw=1)
    assert post.attrs["release_id"] == release_identity(back, 1) and len(post.attrs["release_id"]) == 64


def test_compare_refuses_posteriors_of_two_releases_in_one_line(laplace_release):
    prior = fp.inference.ICLPPrior(smoothness=2.0, amplitude=1.0)
    a = _infer(laplace_release, prior, target="summary", draw=0)
    b = _infer(laplace_release, prior, target="summary", draw=1)             # the same file, another draw
    with pytest.raises(InputError) as err:
        compare({"a": a, "b": b})
    assert "one release" in str(err.value).splitlines()[0] and len(str(err.value.args[0]).splitlines()) == 1
    c = _infer(_mean_release(fp.ICLP(1.0), seed=9), prior, target="summary")
    with pytest.raises(InputError, match="conditions on release"):
        compare({"a": a, "c": c})
    legacy = a.copy()
    legacy.attrs = {k: v for k, v in a.attrs.items() if k != "release_id"}
    with pytest.raises(InputError, match="record no release_id"):
        compare({"a": a, "legacy": legacy})


# ------------------------------------------------------------------------------- exact leave-one-out
def test_exact_loo_of_a_gaussian_release_equals_brute_force_refits():
    """A Gaussian release, a GP prior with another kernel than the release's (dense conditional), every
    hyperparameter fixed: log p(y_j | y_-j) from the closed form equals, to 1e-8, refitting the conjugate posterior
    on the J − 1 other coefficients and evaluating its predictive density at y_j."""
    tree = _mean_release(fp.GaussianMechanism(1.0, 1e-3), seed=5)
    prior = fp.inference.GPPrior(nu=2.5, lengthscale=0.3, amplitude=1.5, mean=0.2)
    post = _infer(tree, prior, target="summary", draws=50)
    assert post.attrs["loo_method"] == "exact" and post.attrs["inference"] == "exact"
    view = S.read_release(tree)
    y, b, A = view.released(0), np.asarray(view.noise_scale, dtype=float), view.grid_to_coefficients()
    K = prior.kernel_matrix(view.t, 0.3, xp="np")
    m0, P0 = 0.2 * A.sum(axis=1), 1.5**2 * A @ K @ A.T          # prior of the coefficients
    assert np.max(np.abs(P0 - np.diag(np.diag(P0)))) > 1e-3 * np.max(np.diag(P0))   # really not diagonal
    J = y.size
    brute = np.empty(J)
    for j in range(J):  # refit without coefficient j: precision form, then the predictive of y_j
        keep = np.arange(J) != j
        prec = np.linalg.inv(P0) + np.diag(np.where(keep, 1 / b**2, 0.0))
        cov = np.linalg.inv(prec)
        mean = cov @ (np.linalg.solve(P0, m0) + np.where(keep, y / b**2, 0.0))
        brute[j] = norm.logpdf(y[j], mean[j], np.sqrt(cov[j, j] + b[j] ** 2))
    exact = post[LOO_GROUP]["released"].values
    np.testing.assert_allclose(exact, brute, rtol=0, atol=1e-8)
    # and ArviZ takes it: the table's elpd is their sum, with no importance sampling (no k-hat)
    elpd = loo(post)
    assert elpd.elpd == pytest.approx(brute.sum(), abs=1e-8) and np.all(np.isneginf(elpd.pareto_k))


def test_exact_loo_of_a_laplace_release_equals_the_integrated_predictive(laplace_release):
    """Laplace noise, the ICLP prior (diagonal), fixed hyperparameters: leaving y_j out leaves the other coefficients'
    posterior unchanged, so the refit predictive of y_j is ∫ Laplace(y_j; θ, b_j) prior(θ) dθ (quadrature)."""
    prior = fp.inference.ICLPPrior(smoothness=2.0, amplitude=1.0)
    post = _infer(laplace_release, prior, target="summary", draws=50)
    view = S.read_release(laplace_release)
    y, b = view.released(0), np.asarray(view.noise_scale, dtype=float)
    g = prior.laplace_scale(view.eigenvalues, *prior.hyperparameters({"spread": 1.0, "level": 0.0, "rms": 1.0}))
    width = np.abs(y) + 80 * (b + g)                                   # mass beyond: below e^-80
    brute = [np.log(integrate.quad(lambda th: laplace.pdf(y[j], th, b[j]) * laplace.pdf(th, 0, g[j]), -width[j],
                                   width[j], points=sorted({0.0, float(y[j])}), epsabs=0, epsrel=1e-12,
                                   limit=400)[0])
             for j in range(y.size)]
    np.testing.assert_allclose(post[LOO_GROUP]["released"].values, brute, rtol=0, atol=1e-8)


def test_grid_and_gaussian_loo_equal_refits_on_a_grid_hyperparameter():
    """A hyperparameter on a grid (a density's amplitude): the closed form equals recomputing its posterior without
    y_j and averaging the predictive of y_j over it; the dense Gaussian form equals conditioning by solves."""
    rng = np.random.default_rng(0)
    J, grid = 6, np.logspace(-1, 1, 30)
    y, b, e = rng.normal(0, 2, J), rng.uniform(0.5, 1.5, J), rng.uniform(0.5, 2, J)
    logprior = -np.log1p(grid**2)
    ll = norm.logpdf(y[None], 0, np.sqrt(b[None] ** 2 + (grid[:, None] * e[None]) ** 2))
    brute = []
    for j in range(J):
        keep = np.arange(J) != j
        w = np.exp(logprior + ll[:, keep].sum(1) - np.max(logprior + ll[:, keep].sum(1)))
        brute.append(np.log(np.sum(w / w.sum() * np.exp(ll[:, j]))))
    np.testing.assert_allclose(grid_loo(ll, logprior), brute, rtol=0, atol=1e-10)
    Q = rng.normal(size=(J, J))
    C = Q @ Q.T + np.eye(J)
    mu = rng.normal(size=J)
    dense = [norm.logpdf(y[j], mu[j] + C[j, k] @ np.linalg.solve(C[np.ix_(k, k)], y[k] - mu[k]),
                         np.sqrt(C[j, j] - C[j, k] @ np.linalg.solve(C[np.ix_(k, k)], C[k, j])))
             for j in range(J) for k in [np.flatnonzero(np.arange(J) != j)]]
    np.testing.assert_allclose(gaussian_loo(y, mu, C), dense, rtol=0, atol=1e-10)


def test_markov_machine_loo_equals_dense_conditioning():
    """An OU (Markov) machine release: the tridiagonal precision gives the same leave-one-out densities as dense
    Gaussian conditioning on the OU covariance."""
    from fdp_ppl.inference.machine import MachinePosterior, OUGridPath
    from fdp_ppl.noise.laws import Normal

    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 1, 40))
    path = OUGridPath(x, 0.2)
    y = 1.3 * path.unit_paths(1, rng)[0]
    R, sigma = 2.0, 0.7
    mp = MachinePosterior(None, path, Normal(), y, y.copy(), np.full(x.size, sigma), np.full(x.size, R), R)
    K = np.exp(-np.abs(x[:, None] - x[None]) / 0.2)
    np.testing.assert_allclose(mp.exact_loo(), gaussian_loo(y, np.zeros(x.size), (R**2 + sigma**2) * K),
                               rtol=0, atol=1e-8)


# ---------------------------------------------------------------------------- every family, az.compare, PPC
def _kde_release():
    from fdp_ppl.kde import CartesianGrid, KDESpec

    rng = np.random.default_rng(2)
    spec = KDESpec(grid=CartesianGrid.uniform((0, 1), 30), n=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(spec.fit(rng.beta(2, 5, 300)), fp.GaussianMechanism(1.0, 1e-3), random_seed=3, study=True)


def _machine_release():
    from fdp_ppl.machine import ERMSpec

    X, y = labelled_points(120, 1, seed=4)
    spec = ERMSpec(fp.Matern(rho=0.3, nu=1.5), lam=0.05, n=120, grid_size=40, solver_slack=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(spec.fit(X, y), fp.GaussianMechanism(1.0, 1e-5, "analytic"), random_seed=5, study=True)


def _fpca_release():
    from fdp_ppl.fpca import FPCAFit, FPCASpec

    spec = FPCASpec(grid=fp.Grid.uniform(30), m=2, k=1, epsilon=1.0, tau=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(FPCAFit(spec=spec, gram=50 * np.diag([0.6, 0.1]), n=50), fp.ExponentialMechanism(),
                          draws=12, random_seed=6, study=True)


def _family_results(family):
    """Two inference results of one release per family (two priors), the way a user compares them."""
    if family == "mean":
        tree = _mean_release(fp.ICLP(1.0), seed=3)
        return {"iclp-smooth": _infer(tree, fp.inference.ICLPPrior(smoothness=2.0, amplitude=1.0), target="summary"),
                "iclp-rough": _infer(tree, fp.inference.ICLPPrior(smoothness=1.0, amplitude=1.0), target="summary")}
    if family == "kde":
        tree = _kde_release()
        return {"free": _infer(tree, None), "fixed": _infer(tree, fp.inference.DensityPrior(amplitude=0.3))}
    if family == "machine":
        tree = _machine_release()
        return {"ball": _infer(tree, "rkhs-ball"), "radius": _infer(tree, 0.5)}
    tree = _fpca_release()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {f"dof{d}": fp.infer(tree, fp.inference.ComponentsPrior(dof=d), draws=150, tune=150, chains=2,
                                    random_seed=1) for d in (1, 2)}


@pytest.mark.parametrize("family", ["mean", "kde", "machine", pytest.param("fpca", marks=pytest.mark.slow)])
def test_compare_and_plot_ppc_dist_run_on_every_family(family):
    results = _family_results(family)
    ids = {r.attrs["release_id"] for r in results.values()}
    assert len(ids) == 1
    table = compare(results)
    assert list(table.index) != [] and set(table.index) == set(results)
    assert np.all(np.isfinite(table["elpd"].astype(float)))
    exact = family != "fpca"
    assert set(table.attrs["loo"].values()) == {"exact" if exact else "psis"}
    if exact:  # exact leave-one-out: no importance sampling, so no Pareto k-hat at all
        assert set(table.attrs["pareto_k_above_0.7"].values()) == {0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(az.compare(results)) == len(results)              # ArviZ on the raw trees too
    import matplotlib.pyplot as plt

    for result in results.values():
        assert "log_likelihood" in result.children
        az.plot_ppc_dist(result)                                      # ArviZ defaults, every family
        plt.close("all")


@pytest.mark.parametrize("family", ["mean", "kde", "machine"])
def test_standardised_check_puts_every_coefficient_on_its_noise_scale(family):
    """Raw released coefficients span orders of magnitude, so pooling them makes one spike; standardised by the
    public noise sd, every replicated coefficient has spread sqrt(1 + posterior var / noise var), between 1 and
    about sqrt(2), a little more where a Laplace prior meets Laplace noise (measured 1.00-1.62 here; 800 draws: the
    sd of an sd estimate is below 3%)."""
    result = next(iter(_family_results(family).values()))
    rep = result["posterior_predictive"][STANDARDISED]
    obs = result["observed_data"][STANDARDISED]
    raw = result["posterior_predictive"]["released"]
    sample = [d for d in rep.dims if d not in ("chain", "draw")]
    assert obs.dims == tuple(sample) and obs.attrs["units"] == "noise sd"
    spread = rep.std(("chain", "draw")).values
    assert np.all(spread > 0.9) and np.all(spread < 2.0) and spread.max() / spread.min() < 2
    raw_spread = np.abs(raw.mean(("chain", "draw")).values) + raw.std(("chain", "draw")).values
    assert raw_spread.max() / raw_spread.min() > 3                    # the raw scales do differ
    assert np.all(np.abs(obs.values) < 6)                              # the release itself is not an outlier


def test_loo_refuses_an_improper_prior_and_exact_where_there_is_none():
    tree = _machine_release()
    flat = _infer(tree, "flat")
    with pytest.raises(InputError, match="improper"):
        loo(flat)
    no_exact = flat.copy()
    no_exact.attrs = {**flat.attrs, "loo_method": "psis"}
    with pytest.raises(InputError, match="no exact leave-one-out"):
        loo(no_exact, method="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)                   # ArviZ's k-hat warning: expected here
        assert loo(no_exact).kind == "loo"                            # PSIS, k-hat reported


def test_laplace_sum_density_is_the_convolution():
    """log p(y_j | hyperparameters) under the ICLP prior: N(0, g²) + Laplace(b1) + Laplace(b2) in closed form equals
    the numerical convolution of Laplace(b1) with the Normal–Laplace density, including b1 ≈ b2 and g = 0."""
    from fdp_ppl.inference.comparison import laplace_sum_logp
    from fdp_ppl.noise.laws import Laplace

    for x, g, b1, b2 in [(0.3, 0.5, 1.0, 2.0), (-4.0, 0.1, 0.7, 0.3), (2.0, 0.0, 1.0, 3.0), (1.0, 0.2, 1.0, 1.0 + 1e-7),
                         (10.0, 1.0, 0.5, 0.2)]:
        if g > 0:
            f = lambda u: laplace.pdf(u, 0, b1) * np.exp(Laplace().convolved_logp(np.array([x - u]), np.array([g]),
                                                                                  np.array([b2]))[0])
        else:
            f = lambda u: laplace.pdf(u, 0, b1) * laplace.pdf(x - u, 0, b2)
        value = integrate.quad(f, -60, 60, points=[0.0, x], epsabs=0, epsrel=1e-12, limit=400)[0]
        closed = laplace_sum_logp(np.array([x]), np.array([g]), np.array([b1]), np.array([b2]))[0]
        assert closed == pytest.approx(np.log(value), abs=2e-4 if abs(b1 - b2) < 1e-4 * b2 else 1e-9)


@pytest.mark.slow
def test_readme_python_example_has_no_pareto_k_above_0_7():
    """The README's Python example (growth, ICLP ε = 1, ICLPPrior(smoothness=2), free amplitude and sampling scale,
    NUTS): PSIS-LOO on log p(y_j | hyperparameters) has every k̂ <= 0.7 (measured max 0.41); on the likelihood given
    the coefficients, 2 of 31 exceeded 0.7 (max 0.90)."""
    tree = readme_growth_release(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fp.infer(tree, fp.inference.ICLPPrior(smoothness=2.0), random_seed=2, progressbar=False)
    assert post.attrs["loo_method"].startswith("psis on log p(y_j | hyperparameters)")
    assert float(np.max(loo(post).pareto_k)) <= 0.7


def test_gp_mixture_loo_terms_equal_conditioning_and_integrating_the_own_mixing_scale():
    """Free GP hyperparameters, Laplace noise (latent-scale mixture model): the pointwise term for PSIS is
    log ∫ N(y_j; E[y_j | y_-j], Var[y_j | y_-j] with 2b_j²E in place of y_j's own mixing) Exp(E) dE, computed here by
    explicit partitioned conditioning and quadrature over E, on given draws of the hyperparameters."""
    from fdp_ppl.inference.comparison import _gp_dense_loo_terms
    from fdp_ppl.inference.infer import build_model

    tree = _mean_release(fp.ICLP(1.0), seed=3)
    prior = fp.inference.GPPrior(nu=2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_model(tree, prior, target="summary", method="mixture")
    meta = model._fdp_meta
    y, b = np.asarray(meta["ctx"]["y"]), np.asarray(meta["ctx"]["scale"])
    J, rng = y.size, np.random.default_rng(3)
    post = xr.Dataset({"lengthscale": (("chain", "draw"), [[0.2, 0.35]]),
                       "amplitude": (("chain", "draw"), [[1.0, 0.6]]),
                       "mean_level": (("chain", "draw"), [[0.1, -0.2]]),
                       "noise_mixing": (("chain", "draw", "basis"), rng.exponential(1.0, (1, 2, J)))})
    terms = _gp_dense_loo_terms(meta, post)
    SA, t = np.asarray(meta["ctx"]["A"]), meta["ctx"]["t"]
    for s in range(2):
        rho, a, m = (float(post[v].values[0, s]) for v in ("lengthscale", "amplitude", "mean_level"))
        E = post["noise_mixing"].values[0, s]
        C = a**2 * SA @ prior.kernel_matrix(t, rho, xp="np") @ SA.T + np.diag(2 * b**2 * E)
        mu = m * SA.sum(axis=1)
        for j in (0, J // 2, J - 1):
            k = np.flatnonzero(np.arange(J) != j)
            gain = np.linalg.solve(C[np.ix_(k, k)], C[k, j])
            mean = mu[j] + gain @ (y[k] - mu[k])
            w = C[j, j] - 2 * b[j] ** 2 * E[j] - C[j, k] @ gain
            value = integrate.quad(lambda e: norm.pdf(y[j], mean, np.sqrt(w + 2 * b[j] ** 2 * e)) * np.exp(-e), 0,
                                   np.inf, epsabs=0, epsrel=1e-11, limit=400)[0]
            assert terms[0, s, j] == pytest.approx(np.log(value), abs=1e-7)


def test_a_posterior_without_log_likelihood_is_refused_by_name_and_the_option_by_other_families(laplace_release):
    """fp.infer(..., log_likelihood=False) keeps release_id but no leave-one-out: compare and loo refuse it in one
    line naming the fix (ArviZ itself fails with an AttributeError there); a value that is not a switch and another
    family (a KDE release) are refused before any work."""
    prior = fp.inference.ICLPPrior(smoothness=2.0, amplitude=1.0)
    kept = _infer(laplace_release, prior, target="summary", draws=20)
    bare = _infer(laplace_release, prior, target="summary", draws=20, log_likelihood=False)
    assert not {LOO_GROUP, "log_likelihood", "log_likelihood_integrated"} & set(bare.children)
    with pytest.raises(InputError) as err:
        compare({"kept": kept, "bare": bare})
    message = str(err.value.args[0])
    assert len(message.splitlines()) == 1 and "'bare'" in message and "log_likelihood=False" in message
    assert "fp.infer(..., log_likelihood=True)" in err.value.fix
    with pytest.raises(InputError, match="holds no log-likelihood"):
        loo(bare)
    with pytest.raises(InputError, match="log_likelihood must be None, True or False"):
        _infer(laplace_release, prior, target="summary", draws=20, log_likelihood="no")
    with pytest.raises(InputError) as err:
        fp.infer(_kde_release(), log_likelihood=False)
    assert err.value.message == "inference from a kernel density estimate release takes no log_likelihood"


@pytest.mark.slow   # two NUTS compiles: about 3 s
def test_log_likelihood_false_skips_psis_and_refits_of_free_hyperparameters(laplace_release, monkeypatch):
    """A free amplitude (NUTS on the hyperparameters): the default scores it by PSIS on the integrated
    log-likelihood, refitting where k̂ is high; with log_likelihood=False neither runs (calls counted)."""
    import importlib

    calls = []
    for module, name in (("reloo", "psis_then_refit"), ("comparison", "integrated_loglik")):
        module = importlib.import_module(f"fdp_ppl.inference.{module}")
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    kw = {"target": "summary", "draws": 30, "tune": 30, "progressbar": False}
    post = _infer(laplace_release, fp.inference.ICLPPrior(smoothness=2.0), log_likelihood=False, **kw)
    assert post.attrs["inference"] == "NUTS" and post.attrs["loo_method"] == "none (log_likelihood=False)"
    assert sorted(post.children) == ["constant_data", "observed_data", "posterior", "posterior_predictive",
                                     "sample_stats"] and calls == []
    scored = _infer(laplace_release, fp.inference.ICLPPrior(smoothness=2.0), **kw)
    assert scored.attrs["loo_method"].startswith("psis") and calls == ["integrated_loglik", "psis_then_refit"]
