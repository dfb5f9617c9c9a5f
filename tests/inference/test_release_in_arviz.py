"""What a user does after a release: the public offset survives inference,
ArviZ takes releases and inference results unchanged, units travel with the Python path."""

import subprocess
import sys
import warnings

import arviz as az
import matplotlib
import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.datasets import growth_reference, load_dataset
from fdp_ppl.inference import ICLPPrior, InferenceWarning
from fdp_ppl.plots import plot_inference

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def growth_release():
    curves = load_dataset("growth")
    reference = growth_reference(curves["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summary = fp.ICLPQRSpec(basis=basis, tau=40.0, n=93).fit(curves, offset=reference, offset_source="CDC 2000")
    return fp.release(summary, fp.ICLP(1.0), draws=3, random_seed=4, study=True), reference


@pytest.fixture(scope="module")
def growth_posterior(growth_release):
    tree, _ = growth_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.infer(tree, ICLPPrior(smoothness=2.0), draws=150, tune=150, chains=2, random_seed=1,
                        progressbar=False, target="summary")


def test_python_release_carries_units_offset_and_original_grid(growth_release):
    tree, reference = growth_release
    post = tree["posterior"]
    assert post["curve"].attrs["units"] == "cm" and post["t"].attrs["units"] == "years"
    np.testing.assert_allclose(post["t"].values[[0, -1]], [1.0, 18.0])          # original ages as coordinate
    np.testing.assert_allclose(tree["constant_data"]["t_unit"].values[[0, -1]], [0.0, 1.0])
    np.testing.assert_allclose(tree["constant_data"]["public_offset"].values, reference)
    # heights, not deviations: the released curve is the reference plus the released deviation
    phi = tree["constant_data"]["eigenfunctions"].values
    np.testing.assert_allclose(post["curve"].values[0], post["coefficients"].values[0] @ phi.T + reference)
    assert 60 < float(post["curve"].mean()) < 200 and "CDC 2000" in tree.attrs["public_offset"]


def test_inference_puts_the_public_offset_back(growth_release, growth_posterior):
    tree, reference = growth_release
    mean = growth_posterior["posterior"]["curve"].mean(("chain", "draw")).values
    released = tree["posterior"]["curve"].values[0, 0]
    assert released.min() - 20 < mean.min() and mean.max() < released.max() + 20   # heights in cm, like the release
    assert np.all(np.abs(mean - reference) < 30)
    assert growth_posterior.attrs["public_offset_added"] == 1
    assert growth_posterior["posterior"]["curve"].attrs["units"] == "cm"
    fig, ax = plot_inference(growth_posterior, tree, ci_prob=0.9, ci_kind="eti")
    lo, hi = ax.get_ylim()
    assert lo > 0 and hi > 100        # the band is drawn on the height axis, not around 0


def test_arviz_takes_releases_and_inference_results(growth_release, growth_posterior):
    tree, _ = growth_release
    for t in (tree, growth_posterior):
        table = az.summary(t)
        assert "curve[1.0]" in table.index and "curve[18.0]" in table.index   # rows labelled by the original ages
        az.plot_forest(t, var_names=["curve"])
        az.plot_trace(t, var_names=["coefficients"])
    assert np.all(np.isfinite(az.summary(growth_posterior, var_names=["curve"])["mean"].to_numpy(dtype=float)))


def test_demo_release_then_infer_from_the_file(tmp_path):
    out = tmp_path / "release.nc"
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "demo", "--out", str(out)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    tree = xr.open_datatree(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InferenceWarning)
        post = fp.infer(tree, ICLPPrior(smoothness=2.0), draws=100, tune=100, chains=1, random_seed=3,
                        progressbar=False, target="summary")
    released = tree["posterior"]["curve"].values.ravel()
    mean = post["posterior"]["curve"].mean(("chain", "draw")).values
    assert released.min() - 20 < mean.min() and mean.max() < released.max() + 20


def test_arviz_defaults_work_on_every_tree(growth_release, growth_posterior):
    """az.summary and az.plot_forest take the whole tree; the per-variable plots (plot_trace, plot_dist,
    plot_trace_dist) take fdp_ppl.plots.arviz_view(tree), which keeps the leading components and a few grid
    points: the whole growth release asks for 62 panels, more than ArviZ's limit of 40."""
    import matplotlib.pyplot as plt

    from fdp_ppl.plots import arviz_view

    tree, _ = growth_release
    with pytest.raises(ValueError, match="max_subplots"):  # what the view is for
        az.plot_trace(tree)
    for t in (tree, growth_posterior):
        assert az.summary(t).shape[0] == sum(v.size // (t["posterior"].sizes["chain"] * t["posterior"].sizes["draw"])
                                             for v in t["posterior"].data_vars.values())
        az.plot_forest(t)
        view = arviz_view(t, components=3, points=5)
        assert view["posterior"].sizes["basis"] == 3 and view["posterior"].sizes["t"] == 5
        np.testing.assert_array_equal(view["posterior"]["t"].values[[0, -1]], t["posterior"]["t"].values[[0, -1]])
        assert set(view.children) == set(t.children) and view.attrs == t.attrs
        for plot in (az.plot_trace, az.plot_dist, az.plot_trace_dist):
            plot(view)
        plt.close("all")
    with pytest.raises(ValueError):
        arviz_view(tree, points=0)
