"""plot_release / plot_eigenbasis / noise_sd."""

import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import fdp_ppl as fp  # noqa: E402
from fdp_ppl.plots import noise_sd, plot_eigenbasis, plot_release  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup():
    grid = fp.Grid.from_points(np.linspace(2.0, 10.0, 40))
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    rng = np.random.default_rng(3)
    t = grid.t
    curves = np.sin(2 * np.pi * t) * 0.5 + 0.2 * rng.standard_normal((60, t.size))
    truth = np.sin(2 * np.pi * t) * 0.5
    return basis, curves, truth


@pytest.fixture(scope="module")
def laplace_tree(setup):
    basis, curves, _ = setup
    return fp.release(fp.iclp_qr_mean(curves, basis, tau=1.0), fp.ICLP(1.0), random_seed=1, study=True)


@pytest.fixture(scope="module")
def normal_tree(setup):
    basis, curves, _ = setup
    return fp.release(fp.iclp_qr_mean(curves, basis, tau=1.0), fp.GaussianMechanism(0.5, 1e-5), random_seed=1, study=True)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _band(ax):
    (band,) = [c for c in ax.collections if c.get_label().startswith("±2 sd")]
    return band


@pytest.mark.parametrize("which", ["laplace_tree", "normal_tree"])
def test_plot_release_band_is_first_draw_pm_2sd(request, which):
    tree = request.getfixturevalue(which)
    fig, ax = plot_release(tree)
    assert fig is ax.figure
    verts = _band(ax).get_paths()[0].vertices
    x = tree["posterior"]["t"].values  # schema 3: the t coordinate is the original grid
    y0 = tree["posterior"]["curve"].values[0, 0]
    sd = noise_sd(tree).values
    # vertices contain the lower and the upper edge; compare the envelope at each grid point
    for k, xv in enumerate(x):
        ys = verts[np.isclose(verts[:, 0], xv), 1]
        assert ys.min() == pytest.approx(y0[k] - 2 * sd[k]) and ys.max() == pytest.approx(y0[k] + 2 * sd[k])
    lines = {line.get_label() for line in ax.get_lines()}
    assert "private release" in lines
    assert "domain [2, 10]" in ax.get_xlabel()
    title = ax.get_title()
    assert "n = 60" in title and "τ = 1" in title
    assert ("(ε, δ) = (0.5, 1e-05)" in title) if which == "normal_tree" else ("ε = 1" in title)
    assert ax.get_legend() is not None


@pytest.mark.parametrize("mechanism", [fp.ICLP(1.0), fp.GaussianMechanism(0.5, 1e-5), fp.FRL(1.0)])
def test_noise_sd_matches_empirical_spread(setup, mechanism):
    """Var_j = 2 b_j² for Laplace, s_j² for Normal: checked against many exact draws."""
    basis, curves, _ = setup
    summ = (fp.frl_mean(curves, basis, tau=1.0) if isinstance(mechanism, fp.FRL)
            else fp.iclp_qr_mean(curves, basis, tau=1.0))
    tree = fp.release(summ, mechanism, draws=4000, random_seed=11, study=True)
    emp = tree["posterior"]["curve"].values[0].std(axis=0)
    sd = noise_sd(tree).values
    np.testing.assert_allclose(emp, sd, rtol=0.08)
    assert noise_sd(tree).dims == ("t",)


def test_plot_release_options(laplace_tree, setup):
    _, _, truth = setup
    fig, ax = plot_release(laplace_tree, band=False, truth=truth, reference=np.zeros(40), reference_label="zero")
    assert not [c for c in ax.collections if c.get_label().startswith("±2 sd")]
    labels = [line.get_label() for line in ax.get_lines()]
    assert "truth" in labels and "zero" in labels
    with pytest.raises(ValueError, match="grid"):
        plot_release(laplace_tree, truth=np.zeros(7))
    # an existing axes is used
    fig2, ax2 = plt.subplots()
    f, a = plot_release(laplace_tree, ax=ax2)
    assert f is fig2 and a is ax2


def test_plot_release_many_draws_and_file_roundtrip(setup, tmp_path):
    basis, curves, _ = setup
    tree = fp.release(fp.iclp_qr_mean(curves, basis, tau=1.0), fp.ICLP(1.0), draws=30, random_seed=2, study=True)
    path = tmp_path / "r.nc"
    tree.to_netcdf(path)
    reopened = xr.open_datatree(path)
    fig, ax = plot_release(reopened, max_draws=5)
    others = [line for line in ax.get_lines() if line.get_color() == "#56B4E9"]
    assert len(others) == 5
    assert "30 draws" in ax.get_title() and "ε spent = 30" in ax.get_title()
    fig.savefig(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 1000


def test_noise_sd_rejects_non_release():
    with pytest.raises(ValueError, match="release"):
        noise_sd(xr.DataTree())
    with pytest.raises(ValueError, match="release"):
        plot_release(xr.DataTree())


def test_plot_eigenbasis(setup):
    basis, _, _ = setup
    fig, (ax0, ax1) = plot_eigenbasis(basis, n=4)
    assert len(ax0.get_lines()) == 4 + 1  # 4 eigenfunctions + the zero line
    assert ax1.get_xscale() == "log" and ax1.get_yscale() == "log"
    np.testing.assert_allclose(ax1.get_lines()[0].get_ydata(), basis.eigenvalues)


def test_core_package_does_not_import_plots_or_matplotlib_pyplot():
    code = ("import sys, fdp_ppl, fdp_ppl.datasets; "
            "print('fdp_ppl.plots' in sys.modules, 'fdp_ppl.cli' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr
    plots, cli, _pyplot = res.stdout.split()
    assert plots == "False" and cli == "False"


def test_plot_privacy_draws_the_ledger_curve_beside_the_summed_guarantee():
    import fdp_ppl as fp
    from fdp_ppl.accounting.calibration import gaussian_delta

    ledger = fp.PrivacyLedger(fp.PrivacyBudget(10.0, 1e-3))
    for event in (fp.PrivacyEvent("laplace", 0.5, 0.0, 2.0, 6),
                  fp.PrivacyEvent("gaussian", 1.0, gaussian_delta(1.0, 1.0, 4.0) * 1.0001, 4.0, 4)):
        ledger.spend(event.basic, "release", event=event)
    fig, ax = fp.plots.plot_privacy(ledger)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("this ledger" in t for t in labels) and any("at most 13% power" in t for t in labels)
    assert any("summed" in t for t in labels) and ax.get_xlim() == (0.0, 1.0)
    import matplotlib.pyplot as plt

    plt.close(fig)
