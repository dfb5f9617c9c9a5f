"""plot_inference: posterior mean, credible band, release and truth in original units."""

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import arviz as az  # noqa: E402
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


def _machine_and_kde(tmp_path):
    """A 2-feature kernel-machine release and a density release (the command line), and their posteriors."""
    import xarray as xr

    from fdp_ppl.cli import main

    rng = np.random.default_rng(4)
    x1, x2 = rng.uniform(0, 1, 80), rng.uniform(0, 1, 80)
    (tmp_path / "svm.csv").write_text("height,weight,y\n" + "\n".join(
        f"{a},{b},{1 if a + b > 1 else -1}" for a, b in zip(x1, x2)) + "\n")
    (tmp_path / "obs.csv").write_text("age\n" + "\n".join(f"{v}" for v in rng.uniform(0, 1, 40)) + "\n")
    seed = ["--seed", str(2**40), "--study"]
    assert main(["svm", "--data", str(tmp_path / "svm.csv"), "--features", "height,weight", "--label", "y",
                 "--domain", "0:1,0:1", "--mechanism", "gp", "--bandwidth", "0.3", "--lam", "0.05", "--epsilon", "1",
                 "--delta", "1e-5", "--grid-size", "12", *seed, "--out", str(tmp_path / "svm.nc")]) == 0
    assert main(["kde", "--data", str(tmp_path / "obs.csv"), "--var", "age", "--mechanism", "iclp", "--epsilon", "1",
                 "--domain", "0", "1", "--grid-size", "20", *seed, "--out", str(tmp_path / "kde.nc")]) == 0
    out = {}
    for name in ("svm", "kde"):
        rel = xr.open_datatree(tmp_path / f"{name}.nc").load()
        out[name] = rel, infer(rel, draws=100, chains=2, random_seed=3)
    return out


def test_density_and_machine_posteriors_are_plotted_with_bands_and_feature_axes(tmp_path):
    """plot_inference on a density or kernel-machine posterior: the default band (ArviZ's ``stats.ci_prob``) (a shaded band in 1-D, the region
    where it contains 0 hatched for a 2-D machine) and axes named by the release's features, not x1 / x2."""
    from matplotlib.collections import PolyCollection

    from fdp_ppl.plots import plot_decision

    results = _machine_and_kde(tmp_path)
    rel, post = results["svm"]
    fig, ax = plot_inference(post, rel)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("height", "weight")
    ci = az.rcParams["stats.ci_prob"]
    assert any(f"{ci:.0%} pointwise credible band (ETI) contains 0" in t.get_text()
               for t in ax.get_legend().get_texts())
    assert ["//"] in [list(getattr(c, "hatches", None) or []) for c in ax.collections]  # where the band holds 0
    plt.close(fig)
    fig, ax = plot_decision(rel)  # the release's own plot names its axes too
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("height", "weight")
    plt.close(fig)
    rel, post = results["kde"]
    fig, ax = plot_inference(post, rel)
    assert ax.get_xlabel() == "age" and ax.get_ylabel() == "density"
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    band = credible_band(post, var="population" if "population" in post["posterior"].data_vars else "kde")
    assert len(bands) == 1 and band.attrs["ci_prob"] == az.rcParams["stats.ci_prob"]
    verts = bands[0].get_paths()[0].vertices
    np.testing.assert_allclose(verts[:, 1].max(), float(band["upper"].max()), rtol=1e-12)
    np.testing.assert_allclose(verts[:, 1].min(), float(band["lower"].min()), rtol=1e-12)
    plt.close(fig)
