"""Every registered mechanism is first-class: release → plots → inference → plots, through the same seams."""

import warnings

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.inference import GPPrior, ICLPPrior, InferenceWarning
from fdp_ppl.plots import noise_sd, plot_inference, plot_release
from fdp_ppl.releasing.registry import MECHANISMS
from fdp_ppl.releasing.schema import KIND_ATTR, read_release

OPTIONS = {"t-process": {"nu": 5.0}, "t": {"nu": 5.0}}


@pytest.fixture(scope="module")
def data():
    grid = fp.Grid.uniform(40)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    rng = np.random.default_rng(11)
    curves = 0.5 * np.sin(2 * np.pi * grid.t) + 0.3 * rng.standard_normal((200, grid.size))
    return grid, basis, curves


def _release(name, data, tmp_path, draws=1):
    grid, basis, curves = data
    entry = MECHANISMS[name]
    mech = entry.mechanism(1.0, 1e-5 if entry.approximate else None, **OPTIONS.get(name, {}))
    spec = entry.spec(grid if entry.summary == "bernstein" else basis, tau=2.0, n=curves.shape[0])
    tree = fp.release(spec.fit(curves), mech, draws=draws, random_seed=3, study=True)
    path = tmp_path / f"{name}.nc"
    tree.to_netcdf(path)
    return xr.open_datatree(path), mech, spec


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_release_plot_infer_plot(name, data, tmp_path):
    tree, mech, spec = _release(name, data, tmp_path)
    view = read_release(tree)
    assert view.law == mech.law and tree.attrs["noise_law"] == mech.noise_law
    # the public noise band uses the law's variance
    expected = np.sqrt(np.sum(spec.design**2 * mech.law.variance(mech.calibrate(spec).scale), axis=1))
    np.testing.assert_allclose(noise_sd(tree).values, expected, rtol=1e-12)
    fig, ax = plot_release(tree)
    assert ax.get_title()
    prior = GPPrior(lengthscale=0.2, amplitude=0.5, mean=0.0) if spec.name == "bernstein" else ICLPPrior(smoothness=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InferenceWarning)
        post = fp.infer(tree, prior, draws=60, tune=60, chains=1, random_seed=1, progressbar=False, target="summary")
    assert post.attrs[KIND_ATTR] == "inference"
    assert post.attrs["release_noise_law"] == mech.noise_law
    curve = post["posterior"]["curve"]
    assert curve.sizes["t"] == data[0].size and np.all(np.isfinite(curve.values))
    np.testing.assert_allclose(post["observed_data"]["released"].values, view.released(0))
    # the log-likelihood is the law's: per coefficient for independent laws, one term for elliptical laws
    ll = post["log_likelihood"]["released"]
    assert ll.sizes.get("basis", 1) == (spec.n_components if mech.law.product else 1)
    fig2, ax2 = plot_inference(post, tree, ci_prob=0.9, ci_kind="eti")
    assert "Posterior" in ax2.get_title()
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.mark.parametrize("name", ["t-process", "knorm"])
def test_elliptical_likelihood_is_the_law(name, data, tmp_path):
    """The explicit-curve model's likelihood of an elliptical release is the law's joint density."""
    tree, mech, spec = _release(name, data, tmp_path)
    view = read_release(tree)
    y = view.released(0)
    theta = np.zeros_like(y)

    def flat_prior(t, phi, w):
        import pymc as pm

        return None, pm.Flat("theta", dims="basis")

    model = fp.inference.build_model(tree, flat_prior, target="summary")
    logp = model.compile_logp(vars=[model["released"]], sum=True)
    value = float(logp({"theta": theta}))
    assert value == pytest.approx(float(mech.law.logp(y, theta, view.noise_scale)), rel=1e-10)
