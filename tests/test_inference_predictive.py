"""``posterior_predictive`` of a mean-curve inference result: replicated releases drawn from the release's own noise
law with its public scales (:mod:`fdp_ppl.inference.predictive`)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.inference import GPPrior
from fdp_ppl.schema import read_release


@pytest.fixture(scope="module")
def releases():
    g = fp.Grid.uniform(30)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * g.t) + 0.3 * rng.standard_normal((400, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        laplace = fp.release(fp.iclp_qr_mean(X, b, tau=1.5), fp.ICLP(1.0), random_seed=1)
        gauss = fp.release(fp.rkhs_mean(X, b, tau=1.5), fp.GaussianMechanism(1.0, 0.1), random_seed=1)
    return {"laplace": laplace, "gauss": gauss}


PRIOR = GPPrior(lengthscale=0.1, amplitude=0.5, mean=0.0)


@pytest.mark.parametrize("law", ["laplace", "gauss"])
def test_replicated_noise_has_the_release_noise_variance(releases, law):
    """pp − θ is the replicated noise: its variance per coefficient is the law's variance at the public scale
    (2b² for Laplace, σ² for Gaussian) — a scale off by √2 doubles it and fails."""
    tree = releases[law]
    post = fp.infer(tree, PRIOR, draws=2000, random_seed=3, progressbar=False)
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
    post = fp.infer(releases["gauss"], PRIOR, draws=200, random_seed=5, progressbar=False)
    assert {"posterior", "posterior_predictive", "observed_data", "constant_data"} <= set(post.children)
    az.summary(post, group="posterior_predictive")
