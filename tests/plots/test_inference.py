"""plot_inference: posterior mean, credible band, release and truth in original units."""

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import fdp_ppl as fp  # noqa: E402
from fdp_ppl.inference import ICLPPrior, credible_band, infer  # noqa: E402
from fdp_ppl.plots import plot_inference  # noqa: E402


@pytest.fixture(scope="module")
def fitted():
    grid = fp.Grid.from_points(np.linspace(2.0, 10.0, 25))   # original units: [2, 10]
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    rng = np.random.default_rng(5)
    truth = 0.5 * np.sin(2 * np.pi * grid.t)
    curves = truth + 0.2 * rng.standard_normal((200, grid.size))
    summary = fp.iclp_qr_mean(curves, basis, tau=1.0)
    rel = fp.release(summary, fp.ICLP(1.0), random_seed=1, study=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = infer(rel, ICLPPrior(), draws=150, tune=150, chains=1, random_seed=2, progressbar=False, target="summary")
    return rel, post, summary.curve().values


def test_plot_inference_draws_band_release_mean_and_truth(fitted):
    rel, post, truth = fitted
    fig, ax = plot_inference(post, rel, ci_prob=0.8, ci_kind="hdi", truth=truth)
    try:
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "80% pointwise credible band (HDI)" in labels
        assert "posterior mean" in labels and "truth" in labels
        assert any(lbl.startswith("private release") for lbl in labels)
        # x in original units
        lo, hi = ax.get_xlim()
        assert lo == pytest.approx(2.0) and hi == pytest.approx(10.0)
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        band = credible_band(post, ci_prob=0.8, ci_kind="hdi")
        np.testing.assert_allclose(lines["posterior mean"].get_ydata(), band["mean"].values)
        np.testing.assert_allclose(lines["private release"].get_ydata(),
                                   rel["posterior"]["curve"].values[0, 0])
        np.testing.assert_allclose(lines["posterior mean"].get_xdata(), rel["posterior"]["t"].values)
        # the band polygon spans exactly the credible band
        poly = ax.collections[0].get_paths()[0].vertices
        assert poly[:, 1].min() == pytest.approx(float(band["lower"].min()))
        assert poly[:, 1].max() == pytest.approx(float(band["upper"].max()))
        title = ax.get_title()
        assert "ICLP prior" in title and "ε = 1" in title
    finally:
        plt.close(fig)


def test_plot_inference_without_release_on_given_axes(fitted):
    _, post, _ = fitted
    fig0, ax0 = plt.subplots()
    fig, ax = plot_inference(post, ci_prob=0.9, ci_kind="eti", ax=ax0, n_curves=5)
    try:
        assert ax is ax0 and fig is fig0
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "posterior draws" in labels and not any(lbl.startswith("private release") for lbl in labels)
        assert "ε = 1" in ax.get_title()   # release attributes recorded in the posterior
    finally:
        plt.close(fig)


def test_plot_inference_rejects_bad_input(fitted):
    rel, post, _ = fitted
    with pytest.raises(ValueError, match="inference result"):
        plot_inference(rel["constant_data"].to_dataset().pipe(lambda d: __import__("xarray").DataTree(d)),
                       ci_prob=0.9, ci_kind="eti")
    with pytest.raises(ValueError, match="truth"):
        plot_inference(post, rel, ci_prob=0.9, ci_kind="eti", truth=np.zeros(3))
    with pytest.raises(ValueError, match="ci_prob"):
        plot_inference(post, rel, ci_prob=90, ci_kind="eti")
    with pytest.raises(ValueError, match="ci_kind"):
        plot_inference(post, rel, ci_prob=0.9, ci_kind="quantile")
    plt.close("all")
