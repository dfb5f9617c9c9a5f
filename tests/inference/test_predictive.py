"""``posterior_predictive`` of a mean-curve inference result: replicated releases drawn from the release's own noise
law with its public scales (:mod:`fdp_ppl.inference.predictive`)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.inference import GPPrior
from fdp_ppl.releasing.schema import read_release


@pytest.fixture(scope="module")
def releases():
    g = fp.Grid.uniform(30)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * rng.standard_normal((400, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        laplace = fp.release(fp.iclp_qr_mean(X, b, tau=1.5), fp.ICLP(1.0), random_seed=1, study=True)
        gauss = fp.release(fp.rkhs_mean(X, b, tau=1.5), fp.GaussianMechanism(1.0, 0.1), random_seed=1, study=True)
    return {"laplace": laplace, "gauss": gauss}


PRIOR = GPPrior(lengthscale=0.1, amplitude=0.5, mean=0.0)


@pytest.mark.parametrize("law", ["laplace", "gauss"])
def test_replicated_noise_has_the_release_noise_variance(releases, law):
    """pp − θ is the replicated noise: its variance per coefficient is the law's variance at the public scale
    (2b² for Laplace, σ² for Gaussian) — a scale off by √2 doubles it and fails."""
    tree = releases[law]
    post = fp.infer(tree, PRIOR, draws=2000, random_seed=3, progressbar=False, target="summary")
    pp = post["posterior_predictive"]["released"]
    assert pp.dims == ("chain", "draw", "basis") and pp.shape == (2, 2000, post["posterior"].sizes["basis"])
    resid = (pp - post["posterior"]["coefficients"]).values.reshape(-1, pp.shape[-1])
    view = read_release(tree)
    want = view.law.variance(view.noise_scale)  # per released coefficient, from the release's own law
    ratio = resid.var(axis=0) / want
    # 4000 draws: the variance of a Laplace sample variance is 5σ⁴/N -> relative sd ~ 3.5%; pooled over J far less
    assert np.median(ratio) == pytest.approx(1.0, abs=0.05)
    assert np.all((ratio > 0.75) & (ratio < 1.3))


def test_population_target_adds_the_sampling_error_and_shrinks(releases):
    tree = releases["laplace"]
    sd = 0.3
    post = fp.infer(tree, PRIOR, target="population", sampling_sd=sd, draws=2000, random_seed=4, progressbar=False)
    from fdp_ppl.inference.infer import _shrinkage

    shrink = _shrinkage(read_release(tree))
    pp = post["posterior_predictive"]["released"].values.reshape(-1, tree["posterior"].sizes["basis"])
    theta = post["posterior"]["coefficients"].values.reshape(pp.shape)
    resid = pp - shrink * theta
    n = float(tree.attrs["n"])
    view = read_release(tree)
    want = view.law.variance(view.noise_scale) + (shrink * sd) ** 2 / n
    assert np.median(resid.var(axis=0) / want) == pytest.approx(1.0, abs=0.06)


def test_arviz_reads_the_predictive_group(releases):
    post = fp.infer(releases["gauss"], PRIOR, draws=200, random_seed=5, progressbar=False, target="summary")
    assert {"posterior", "posterior_predictive", "observed_data", "constant_data"} <= set(post.children)
    az.summary(post, group="posterior_predictive")


# --------------------------------------------------------------------------- the default target
def test_default_target_is_the_population_mean_where_the_release_allows_it(releases):
    """The analyst's "mean curve" is the population mean: the default undoes the summary's public shrinkage
    (benchmarks/bench_coverage_target.py: the summary target's bands missed the population mean)."""
    from fdp_ppl.inference.infer import default_target

    for tree in releases.values():
        assert default_target(read_release(tree)) == "population"
    post = fp.infer(releases["laplace"], PRIOR, sampling_sd=0.3, draws=100, random_seed=1, progressbar=False)
    assert post.attrs["target"] == "population" and post.attrs["target_choice"].startswith("default")
    assert "population mean" in post["posterior"]["curve"].attrs["description"]
    given = fp.infer(releases["laplace"], PRIOR, target="summary", draws=100, random_seed=1, progressbar=False)
    assert given.attrs["target"] == "summary" and given.attrs["target_choice"] == "given"


def test_default_target_falls_back_to_the_summary_for_shared_noise():
    """Elliptical noise shares one radius across coefficients: no population likelihood, the summary is the default."""
    from fdp_ppl.inference.infer import default_target

    g = fp.Grid.uniform(20)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    X = 0.3 * np.random.default_rng(2).standard_normal((100, 20))
    entry = fp.registry.MECHANISMS["laplace-process"]
    mech = entry.mechanism(1.0, 0.1)
    assert not mech.law.product
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fp.release(entry.spec(b, tau=1.0, n=100).fit(X), mech, random_seed=1, study=True)
    assert default_target(read_release(tree)) == "summary"


@pytest.mark.parametrize("target", ["summary", "population"])
def test_skipping_the_outputs_leaves_the_posterior_bits_unchanged(releases, target, monkeypatch):
    """posterior_predictive=False and log_likelihood=False (as PyMC's separate calls): the same posterior bits at the
    same seed, the extras drawn after it, none of them computed (each patched to fail), and the defaults as before.
    The population target draws κ by quadrature first: its bits are checked too."""
    import importlib

    C, I, P = (importlib.import_module(f"fdp_ppl.inference.{m}") for m in ("comparison", "infer", "predictive"))

    tree = releases["laplace"]
    kw = {"target": target, "draws": 30, "random_seed": 5, "progressbar": False}
    full = fp.infer(tree, PRIOR, **kw)
    given = fp.infer(tree, PRIOR, posterior_predictive=True, log_likelihood=True, **kw)
    assert sorted(given.children) == sorted(full.children) and {"posterior_predictive", "log_likelihood", "loo"} \
        <= set(full.children) and C.STANDARDISED in full["observed_data"]

    def fail(*args, **kwargs):
        raise AssertionError("computed although not asked for")

    for module, name in ((P, "replicated_releases"), (C, "standardised"), (I, "_pointwise_loglik"),
                         (C, "mean_exact_loo"), (C, "integrated_loglik")):
        monkeypatch.setattr(module, name, fail)
    bare = fp.infer(tree, PRIOR, posterior_predictive=False, log_likelihood=False, **kw)
    assert sorted(bare.children) == ["constant_data", "observed_data", "posterior"]
    assert list(bare["observed_data"].data_vars) == ["released"]
    a, b = full["posterior"].to_dataset(), bare["posterior"].to_dataset()
    assert list(a.data_vars) == list(b.data_vars) and all(np.array_equal(a[v].values, b[v].values) for v in a)
    assert bare.attrs["release_id"] == full.attrs["release_id"]
    assert bare.attrs["log_likelihood"] == "not computed (log_likelihood=False)"
    assert bare.attrs["loo_method"] == "none (log_likelihood=False)"
    monkeypatch.undo()
    only_ll = fp.infer(tree, PRIOR, posterior_predictive=False, **kw)   # each switch alone
    assert "posterior_predictive" not in only_ll.children and "loo" in only_ll.children
    only_pp = fp.infer(tree, PRIOR, log_likelihood=False, **kw)
    assert "posterior_predictive" in only_pp.children and "log_likelihood" not in only_pp.children
    assert np.array_equal(only_pp["posterior_predictive"]["released"].values,
                          full["posterior_predictive"]["released"].values)
