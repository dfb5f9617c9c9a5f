"""Gaussian-kernel KDE released with GP noise (Hall, Rinaldo & Wasserman 2013, §4.1)."""

import numpy as np
import pytest
from scipy import stats

from fdp_ppl.accounting import gaussian_delta
from fdp_ppl.accounting.calibration import gaussian_sigma
from fdp_ppl.accounting.budget import PrivacyBudget
from fdp_ppl.accounting.ledger import PrivacyLedger
from fdp_ppl.errors import BudgetExceededError, SeededReleaseWarning
from fdp_ppl.kde import CartesianGrid, KDESpec, bandwidth_rule, cameron_martin_difference, release_kde
from fdp_ppl.kde.gaussian import realised_delta
from fdp_ppl.mechanisms.gaussian import GaussianMechanism


def spec_1d(size=200, h=0.1, n=100):
    return KDESpec(grid=CartesianGrid.uniform((0.0, 1.0), size), bandwidth=h, n=n)


def spec_2d(h=(0.15, 0.2), n=50):
    return KDESpec(grid=CartesianGrid.uniform([(0.0, 1.0), (0.0, 1.0)], [30, 40]), bandwidth=h, n=n)


def brute_force_max(spec, candidates):
    a = np.repeat(candidates, len(candidates), axis=0)
    b = np.tile(candidates, (len(candidates), 1))
    return cameron_martin_difference(spec, a, b).max()


def test_sensitivity_formula():
    s = spec_1d()
    assert s.sensitivity().value == pytest.approx(np.sqrt(2) / (100 * np.sqrt(2 * np.pi) * 0.1))
    assert s.sensitivity().value == pytest.approx(0.056419, abs=1e-6)  # Hall Fig. 1 (spec §4)
    s2 = spec_2d()
    assert s2.sensitivity().value == pytest.approx(np.sqrt(2) / (50 * 2 * np.pi * 0.15 * 0.2))


def test_sensitivity_brute_force_1d():
    s = spec_1d()
    cand = np.linspace(0, 1, 61)[:, None]  # replace one observation anywhere in the domain
    worst = brute_force_max(s, cand)
    delta = s.sensitivity().value
    assert worst <= delta * (1 + 1e-9)
    assert worst >= delta * (1 - 1e-6)  # the RKHS bound is attained on the grid (far-apart points)
    # off-grid replacements stay below
    off = np.linspace(0.0011, 0.9987, 37)[:, None]
    assert brute_force_max(s, off) <= delta * (1 + 1e-9)


def test_sensitivity_brute_force_2d_isotropic_and_diagonal_H():
    for h in (0.2, (0.15, 0.2)):
        s = spec_2d(h=h)
        xs = np.linspace(0, 1, 6)
        cand = np.array([(u, v) for u in xs for v in xs])
        worst = brute_force_max(s, cand)
        delta = s.sensitivity().value
        assert worst <= delta * (1 + 1e-9)
        assert worst >= delta * (1 - 1e-6)


def test_noise_scale_not_root_two_too_small():
    """With the realised worst-case Δ, σ/√2 would break (ε, δ); σ itself keeps it."""
    s = spec_1d()
    sigma = gaussian_sigma(1.0, 1e-3, s.sensitivity().value, "analytic")
    worst = cameron_martin_difference(s, [[0.0]], [[1.0]])[0]
    assert gaussian_delta(1.0, worst, sigma) <= 1e-3 * (1 + 1e-6)
    assert gaussian_delta(1.0, worst, sigma / np.sqrt(2)) > 2e-3
    # Hall's classical calibration in his Figure 1 setting
    mc = GaussianMechanism(1.0, 0.1, "classical")
    assert realised_delta(s, mc, [[0.0]], [[1.0]]) <= 0.1


def test_privacy_loss_adversarial_neighbours_2d():
    s = spec_2d()
    m = GaussianMechanism(0.5, 1e-5)
    xs = np.linspace(0, 1, 5)
    cand = np.array([(u, v) for u in xs for v in xs])
    a = np.repeat(cand, len(cand), axis=0)
    b = np.tile(cand, (len(cand), 1))
    assert realised_delta(s, m, a, b) <= 1e-5 * (1 + 1e-6)


def test_privacy_loss_monte_carlo_1d():
    """Privacy loss of actual releases on neighbours D, D' (x_n = 0 vs 1): P(L > ε) − e^ε P'(L > ε) ≤ δ."""
    s = spec_1d(size=100)
    m = GaussianMechanism(1.0, 0.05)
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.8, 99)
    fd = s.fit(np.append(base, 0.0))
    fd2 = s.fit(np.append(base, 1.0))
    with pytest.warns(SeededReleaseWarning):
        tree = release_kde(fd, m, draws=4000, random_seed=11)
    with pytest.warns(SeededReleaseWarning):
        tree2 = release_kde(fd2, m, draws=4000, random_seed=12)
    scale = tree["constant_data"]["noise_scale"].values

    def loss(dens):
        c = s.basis.coefficients(dens)
        return (np.sum((c - fd2.coefficients) ** 2 / scale ** 2, -1)
                - np.sum((c - fd.coefficients) ** 2 / scale ** 2, -1)) / 2

    l1 = loss(tree["posterior"]["density"].values[0])
    l2 = loss(tree2["posterior"]["density"].values[0])
    r = np.sqrt(np.sum(((fd.coefficients - fd2.coefficients) / scale) ** 2))
    assert l1.mean() == pytest.approx(r ** 2 / 2, abs=5 * r / np.sqrt(4000))
    emp = np.mean(l1 > 1.0) - np.e * np.mean(l2 > 1.0)
    assert emp <= 0.05 + 0.02
    assert gaussian_delta(1.0, r, 1.0) <= 0.05 * (1 + 1e-6)


def test_empirical_noise_covariance_matches_kernel():
    s = spec_1d(size=40, h=0.15, n=30)
    m = GaussianMechanism(1.0, 1e-3)
    fit = s.fit(np.linspace(0.1, 0.9, 30))
    with pytest.warns(SeededReleaseWarning):
        tree = release_kde(fit, m, draws=20000, random_seed=5)
    noise = tree["posterior"]["density"].values[0] - fit.density
    emp = noise.T @ noise / noise.shape[0]
    sigma = tree.attrs["sigma"]
    x = s.grid.axes[0][:, None]
    target = sigma ** 2 * s.noise_kernel(x, x)
    assert np.linalg.norm(emp - target) / np.linalg.norm(target) < 0.03
    assert np.allclose(np.sqrt(np.diag(emp)), sigma, rtol=0.03)


def test_release_tree_2d_clipping_ledger(tmp_path):
    s = spec_2d()
    obs = np.random.default_rng(0).uniform(-0.2, 1.2, (50, 2))
    fit = s.fit(obs)
    assert fit.n_clipped == int(np.sum(np.any((obs < 0) | (obs > 1), axis=1)))
    ledger = PrivacyLedger(total=PrivacyBudget(1.0, 1e-5))
    m = GaussianMechanism(1.0, 1e-5)
    with pytest.warns(SeededReleaseWarning):
        tree = release_kde(fit, m, draws=2, chains=1, random_seed=0)
    assert tree["posterior"]["density"].dims == ("chain", "draw", "x1", "x2")
    assert tree["posterior"]["density"].shape == (1, 2, 30, 40)
    for key in ("epsilon", "delta", "n", "kernel", "sensitivity", "sensitivity_norm", "noise_covariance", "sigma"):
        assert key in tree.attrs
    assert "n_clipped" not in tree.attrs
    # the estimate is (almost) in the retained span: Kronecker reconstruction is consistent
    assert np.max(np.abs(fit.density - fit.values)) < 1e-6 * np.max(fit.values)
    assert 0.3 < s.grid.integrate(fit.values) <= 1.0  # mass of the clipped KDE inside the box
    tree = release_kde(fit, m, ledger=ledger)  # unseeded: no warning
    assert tree.attrs["noise_seeded"] == 0 and tree.attrs["fp_safe"] == 0
    tree.to_netcdf(tmp_path / "kde.nc")
    with pytest.raises(BudgetExceededError):
        release_kde(fit, m, ledger=ledger)
    assert len(ledger.entries) == 1


def test_bandwidth_rule():
    assert bandwidth_rule(100, 1)[0] == pytest.approx(1.06 * 100 ** (-0.2))
    assert bandwidth_rule(100, 2, scale=[1, 2]) == pytest.approx(1.06 * np.array([1, 2]) * 100 ** (-1 / 6))
    s = KDESpec(grid=CartesianGrid.uniform((0, 1), 50), n=100)
    assert s.bandwidths[0] == pytest.approx(1.06 * 0.25 * 100 ** (-0.2))


def _mixture_sample(rng, n):
    comp = rng.integers(0, 2, n)
    locs = np.array([0.3, 0.7])[comp]
    return stats.truncnorm.rvs((0 - locs) / 0.1, (1 - locs) / 0.1, loc=locs, scale=0.1, random_state=rng)


def _mixture_pdf(x):
    out = 0
    for mu in (0.3, 0.7):
        out = out + 0.5 * stats.truncnorm.pdf(x, (0 - mu) / 0.1, (1 - mu) / 0.1, loc=mu, scale=0.1)
    return out


def test_integrated_squared_error_hall_figure_1():
    """Hall Figure 1 setting: n = 100, h = 0.1, ε = 1, δ = 0.1 (classical), grid of 1000 points on [0, 1]."""
    rng = np.random.default_rng(2013)
    s = spec_1d(size=1000, h=0.1, n=100)
    fit = s.fit(_mixture_sample(rng, 100))
    m = GaussianMechanism(1.0, 0.1, "classical")
    with pytest.warns(SeededReleaseWarning):
        tree = release_kde(fit, m, draws=200, random_seed=7)
    truth = _mixture_pdf(s.grid.axes[0])
    ise_kde = float(s.grid.integrate((fit.values - truth) ** 2))
    ise_rel = s.grid.integrate((tree["posterior"]["density"].values[0] - truth) ** 2)
    noise_energy = float(np.sum(tree["constant_data"]["noise_scale"].values ** 2))
    print(f"\nISE Hall Fig.1: KDE {ise_kde:.4f}, private mean {ise_rel.mean():.4f} "
          f"(median {np.median(ise_rel):.4f}), expected noise energy {noise_energy:.4f}, sigma {tree.attrs['sigma']:.4f}")
    assert tree.attrs["sigma"] == pytest.approx(0.138099, abs=1e-5)  # spec §4
    # sanity bounds: h = 0.1 oversmooths sd-0.1 components (bias dominates); noise adds σ² ∫K(x,x) = σ²
    assert ise_kde < 0.15
    assert noise_energy == pytest.approx(tree.attrs["sigma"] ** 2, rel=1e-3)
    assert ise_rel.mean() == pytest.approx(ise_kde + noise_energy, rel=0.25)
    assert ise_rel.mean() < 0.2


def test_baselines_frl_bernstein_public_bounds_and_ise():
    """FRL / Bernstein KDE baselines (d = 1) through the existing mean-curve specs and ``fp.release``."""
    import fdp_ppl as fp
    from fdp_ppl.kde.baselines import bernstein_kde_spec, frl_kde_spec, kde_bumps
    from fdp_ppl.mechanisms import FRL, Bernstein

    pts = np.linspace(0, 1, 200)
    h = 0.1
    # the public bounds hold for every observation in the domain (brute force)
    bumps = kde_bumps(np.linspace(0, 1, 401), pts, h)
    frl = frl_kde_spec(pts, h, 100)
    assert np.sqrt((bumps ** 2) @ frl.basis.grid.weights).max() <= frl.tau * (1 + 1e-6)
    bern = bernstein_kde_spec(pts, h, 100)
    assert bumps.max() <= bern.tau * (1 + 1e-12)
    rng = np.random.default_rng(2013)
    curves = kde_bumps(_mixture_sample(rng, 100), pts, h)
    truth = _mixture_pdf(pts)
    w = np.gradient(pts)
    w[[0, -1]] /= 2
    out = {}
    for name, spec, mech in (("FRL", frl, FRL(1.0)), ("Bernstein", bern, Bernstein(1.0))):
        with pytest.warns(SeededReleaseWarning):
            tree = fp.release(spec.fit(curves), mech, draws=100, random_seed=3)
        curve = tree["posterior"]["curve"].values[0]
        assert curve.shape == (100, 200)
        out[name] = float(np.mean(((curve - truth) ** 2) @ w))
    print(f"\nISE baselines (n = 100, h = 0.1, eps = 1): FRL {out['FRL']:.4f}, Bernstein {out['Bernstein']:.4f}")
    assert all(np.isfinite(v) for v in out.values())
