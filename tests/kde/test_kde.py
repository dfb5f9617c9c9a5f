"""Gaussian-kernel KDE released with GP noise (Hall, Rinaldo & Wasserman 2013, §4.1)."""

import numpy as np
import pytest
from scipy import stats

from fdp_ppl.accounting import gaussian_delta
from fdp_ppl.accounting.calibration import gaussian_sigma
from fdp_ppl.accounting.budget import PrivacyBudget
from fdp_ppl.accounting.ledger import PrivacyLedger
from fdp_ppl.errors import BudgetExceededError, CompatibilityError, InputError, SeededReleaseWarning
from fdp_ppl.kde import CartesianGrid, KDESpec, bandwidth_rule, cameron_martin_difference
import fdp_ppl as fp
from fdp_ppl.kde.gaussian import realised_delta
from fdp_ppl.noise.mechanisms.gaussian import GaussianMechanism


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
        tree = fp.release(fd, m, draws=4000, random_seed=11, study=True)
    with pytest.warns(SeededReleaseWarning):
        tree2 = fp.release(fd2, m, draws=4000, random_seed=12, study=True)
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
        tree = fp.release(fit, m, draws=20000, random_seed=5, study=True)
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
        tree = fp.release(fit, m, draws=2, chains=1, random_seed=0, study=True)
    assert tree["posterior"]["density"].dims == ("chain", "draw", "x1", "x2")
    assert tree["posterior"]["density"].shape == (1, 2, 30, 40)
    for key in ("epsilon", "delta", "n", "kernel", "sensitivity", "sensitivity_norm", "noise_covariance", "sigma"):
        assert key in tree.attrs
    assert "n_clipped" not in tree.attrs
    # the estimate is (almost) in the retained span: Kronecker reconstruction is consistent
    assert np.max(np.abs(fit.density - fit.values)) < 1e-6 * np.max(fit.values)
    assert 0.3 < s.grid.integrate(fit.values) <= 1.0  # mass of the clipped KDE inside the box
    tree = fp.release(fit, m, ledger=ledger)  # unseeded: no warning
    # unseeded: OpenDP's floating-point-safe sampler (was numpy, fp_safe = 0, before the release went through
    # mechanism.calibrate / sampler_for like fp.release)
    assert tree.attrs["noise_seeded"] == 0 and tree.attrs["fp_safe"] == 1
    assert tree.attrs["noise_generator"] == "opendp"
    tree.to_netcdf(tmp_path / "kde.nc")
    with pytest.raises(BudgetExceededError):
        fp.release(fit, m, ledger=ledger)
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
        tree = fp.release(fit, m, draws=200, random_seed=7, study=True)
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
    from fdp_ppl.noise.mechanisms import FRL, Bernstein

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
            tree = fp.release(spec.fit(curves), mech, draws=100, random_seed=3, study=True)
        curve = tree["posterior"]["curve"].values[0]
        assert curve.shape == (100, 200)
        out[name] = float(np.mean(((curve - truth) ** 2) @ w))
    print(f"\nISE baselines (n = 100, h = 0.1, eps = 1): FRL {out['FRL']:.4f}, Bernstein {out['Bernstein']:.4f}")
    assert all(np.isfinite(v) for v in out.values())


# ----------------------------------------------------------------------------- Sobolev route (Hall §4.2)
from fdp_ppl.kde import ICLPKDESpec, SobolevKDESpec, one_c_difference, private_bandwidth  # noqa: E402
from fdp_ppl.noise.mechanisms import ICLP  # noqa: E402


def test_sobolev_sensitivity_formula_and_brute_force():
    s = SobolevKDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 100), bandwidth=0.1, n=100)
    delta = s.sensitivity().value
    assert delta == pytest.approx(2 / ((2 * np.pi) ** 0.25 * 100 * 0.1))
    cand = np.linspace(0, 1, 41)[:, None]
    worst = brute_force_max(s, cand)
    ratio = worst / delta
    print(f"\nSobolev 1-D brute force / bound = {ratio:.3f}")
    assert worst <= delta  # RKHS bound never exceeded by the grid Cameron-Martin norm
    assert 0.4 < ratio < 0.75  # max ||phi||^2 h^2 ~ 0.21 against the bound's 0.40 (specs §3.4)
    # 2-D, diagonal H: product of 1-D bounds; data outside the box are clipped first
    s2 = SobolevKDESpec(grid=CartesianGrid.uniform([(0.0, 1.0), (0.0, 2.0)], [20, 24]), bandwidth=(0.15, 0.3), n=50)
    assert s2.sensitivity().value == pytest.approx(2 / (np.sqrt(2 * np.pi) * 50 * 0.15 * 0.3))
    xs = np.array([(u, v) for u in np.linspace(-0.2, 1.2, 5) for v in np.linspace(0, 2, 5)])
    assert brute_force_max(s2, xs) <= s2.sensitivity().value
    # the noise is the L1-exponential kernel, not the Gaussian one
    x = np.array([[0.0, 0.0], [0.3, 0.5]])
    assert s2.noise_kernel(x, x)[0, 1] == pytest.approx(np.exp(-0.3 / 0.15 - 0.5 / 0.3))


def test_sobolev_release_noise_covariance_is_ou_and_privacy():
    s = SobolevKDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 40), bandwidth=0.15, n=30)
    m = GaussianMechanism(1.0, 1e-3)
    fit = s.fit(np.linspace(0.1, 0.9, 30))
    with pytest.warns(SeededReleaseWarning):
        tree = fp.release(fit, m, draws=20000, random_seed=5, study=True)
    noise = tree["posterior"]["density"].values[0] - fit.density
    emp = noise.T @ noise / noise.shape[0]
    x = s.grid.axes[0][:, None]
    target = tree.attrs["sigma"] ** 2 * s.noise_kernel(x, x)
    assert np.linalg.norm(emp - target) / np.linalg.norm(target) < 0.03
    assert tree.attrs["kernel"] == "gaussian" and "L1-exponential" in tree.attrs["noise_kernel"]
    # rough paths: increments scale like sqrt(step) (OU), not like step (Gaussian-kernel noise)
    inc = np.mean(np.diff(noise, axis=1) ** 2)
    assert inc == pytest.approx(tree.attrs["sigma"] ** 2 * 2 * (1 - np.exp(-s.grid.axes[0][1] / 0.15)), rel=0.05)
    # (eps, delta) on adversarial neighbours: exact Gaussian privacy-loss profile
    cand = np.linspace(0, 1, 21)[:, None]
    a, b = np.repeat(cand, 21, 0), np.tile(cand, (21, 1))
    assert realised_delta(s, m, a, b) <= 1e-3 * (1 + 1e-9)


# ----------------------------------------------------------------------------- ICLP-QR KDE (Lin & Reimherr §4.3)
def iclp_spec_1d(eta=1.25):
    return ICLPKDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 100), bandwidth=0.1, n=100, eta=eta)


def test_iclp_kde_sensitivity_exact_on_grid():
    s = iclp_spec_1d()
    nodes = s.grid.axes[0][:, None]
    a, b = np.repeat(nodes, 100, 0), np.tile(nodes, (100, 1))
    delta = s.sensitivity().value
    worst = one_c_difference(s, a, b).max()
    assert worst == pytest.approx(delta, rel=1e-12)  # exact: attained by a pair of nodes
    # off-grid records are snapped to nodes: never above
    off = np.random.default_rng(0).uniform(-0.1, 1.1, (300, 1))
    assert one_c_difference(s, off, off[::-1]).max() <= delta * (1 + 1e-12)
    cs = s.sensitivity(bound="grid-cs").value
    corrected = s.sensitivity(bound="corrected").value
    print(f"\nICLP KDE 1-D: exact {delta:.4f} <= grid-CS {cs:.4f} <= 2 sqrt(M_K) {corrected:.4f}; "
          f"printed 2 M_K {s.printed_bound():.4f}")
    assert delta <= cs * (1 + 1e-9) <= corrected * (1 + 1e-9)
    assert s.printed_bound() < delta  # the erratum: the printed 2 M_K under-states the sensitivity here
    with pytest.raises(InputError):
        s.sensitivity(bound="paper")
    with pytest.raises(InputError):
        ICLPKDESpec(grid=s.grid, bandwidth=0.1, n=100, eta=1.0)
    # eta = 1 limit of the estimator is the Gaussian KDE of the snapped records
    s1 = ICLPKDESpec(grid=s.grid, bandwidth=0.1, n=100, eta=1.0 + 1e-12)
    obs = s.grid.axes[0][np.random.default_rng(1).integers(0, 100, 100)]
    kde = KDESpec(grid=s.grid, bandwidth=0.1, n=100).fit(obs)
    assert np.max(np.abs(s1.fit(obs).values - kde.values)) < 1e-6 * kde.values.max()


def test_iclp_kde_privacy_loss_within_epsilon_and_release():
    s = iclp_spec_1d()
    m = ICLP(1.0)
    rng = np.random.default_rng(4)
    base = rng.uniform(0.2, 0.8, 99)
    fd, fd2 = s.fit(np.append(base, 0.0)), s.fit(np.append(base, 1.0))
    with pytest.warns(SeededReleaseWarning):
        tree = fp.release(fd, m, draws=3000, random_seed=2, study=True)
    b = tree["constant_data"]["noise_scale"].values
    assert b == pytest.approx(s.sensitivity().value * np.sqrt(s.eigenvalues) / 1.0)
    c = s.basis.coefficients(tree["posterior"]["density"].values[0])
    loss = m.privacy_loss(c, fd.coefficients, fd2.coefficients, b)
    bound = np.sum(np.abs(fd.coefficients - fd2.coefficients) / b)
    print(f"\nICLP KDE realised privacy loss: max {loss.max():.4f} (bound {bound:.4f}, eps 1)")
    assert np.all(loss <= bound + 1e-9) and bound <= 1.0 + 1e-9
    assert bound > 0.5  # an adversarial pair uses a good part of epsilon (the test can fail)
    # worst pair over all grid nodes uses exactly epsilon
    nodes = s.grid.axes[0][:, None]
    worst = one_c_difference(s, np.repeat(nodes, 100, 0), np.tile(nodes, (100, 1))).max()
    assert worst / s.sensitivity().value * m.epsilon == pytest.approx(1.0)
    assert tree.attrs["sensitivity_norm"] == "1,C" and tree.attrs["eta"] == 1.25
    # unseeded: OpenDP Laplace, ledger charged before drawing
    ledger = PrivacyLedger(total=PrivacyBudget(1.5, 0.0))
    t2 = fp.release(fd, m, ledger=ledger)
    assert t2.attrs["fp_safe"] == 1 and t2.attrs["noise_generator"] == "opendp"
    with pytest.raises(BudgetExceededError):
        fp.release(fd, m, ledger=ledger)
    with pytest.raises(CompatibilityError, match="iclp mechanism"):
        fp.release(fd, GaussianMechanism(1.0, 1e-5))


def test_iclp_kde_2d_kronecker():
    s = ICLPKDESpec(grid=CartesianGrid.uniform([(-5.0, 5.0), (-5.0, 5.0)], [15, 16]), bandwidth=1.5, n=60, eta=1.05)
    xs = np.array([(u, v) for u in s.grid.axes[0][::2] for v in s.grid.axes[1][::3]])
    a, b = np.repeat(xs, len(xs), 0), np.tile(xs, (len(xs), 1))
    assert one_c_difference(s, a, b).max() <= s.sensitivity().value * (1 + 1e-12)
    fit = s.fit(np.random.default_rng(0).normal(0, 2, (60, 2)))
    with pytest.warns(SeededReleaseWarning):
        tree = fp.release(fit, ICLP(2.0), draws=3, random_seed=1, study=True)
    assert tree["posterior"]["density"].dims == ("chain", "draw", "x1", "x2")
    assert tree["posterior"]["density"].shape == (1, 3, 15, 16)


def test_private_bandwidth_charges_ledger_and_is_sensible():
    rng = np.random.default_rng(0)
    x = rng.normal(0.5, 0.1, 2000)
    ledger = PrivacyLedger(total=PrivacyBudget(1.0, 0.0))
    with pytest.raises(InputError, match="ledger"):  # a seeded study is never charged to a ledger
        private_bandwidth(x, 0.5, (0.0, 1.0), ledger=ledger, random_seed=3, study=True)
    h = private_bandwidth(x, 0.5, (0.0, 1.0), ledger=ledger)
    iqr = np.subtract(*np.percentile(x, [75, 25]))
    target = (4 / (2 * 2000)) ** 0.2 * iqr / 1.34
    assert h[0] == pytest.approx(target, rel=0.15)
    assert ledger.spent.epsilon == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError):
        private_bandwidth(x, 0.6, (0.0, 1.0), ledger=ledger)


# ----------------------------------------------------------------------------- 2-D FRL / Bernstein baselines
def _baselines_2d(n=40):
    from fdp_ppl.kde.baselines import BernsteinKDESpec, FRLKDESpec

    g = CartesianGrid.uniform([(-5.0, 5.0), (-5.0, 5.0)], 16)
    return (FRLKDESpec(grid=g, bandwidth=1.2, n=n, M=6), BernsteinKDESpec(grid=g, bandwidth=1.2, n=n, k=5))


def test_baselines_2d_sensitivity_brute_force():
    """Replace one record (fit two neighbouring data sets) over a grid of off-node pairs: the change never
    exceeds the exact bound, the exact bound is attained by node pairs and lies below the paper's bounds."""
    rng = np.random.default_rng(5)
    ax = np.linspace(-5.0, 5.0, 9)
    cand = np.stack(np.meshgrid(ax, ax, indexing="ij"), -1).reshape(-1, 2) + rng.uniform(-0.2, 0.2, (81, 2))
    base = rng.uniform(-5, 5, size=(40, 2))
    for spec in _baselines_2d():
        tight = spec.sensitivity().value
        v = np.stack([spec.record_coefficients(p) for p in cand])
        worst = np.abs(v[:, None, :] - v[None, :, :]).sum(-1).max()
        # the record map agrees with the fit: a neighbouring pair of data sets moves the vector by v(a) - v(b)
        d1, d2 = base.copy(), base.copy()
        d1[0], d2[0] = cand[0], cand[-1]
        diff = np.abs(spec.fit(d1).coefficients - spec.fit(d2).coefficients).sum()
        assert diff == pytest.approx(np.abs(v[0] - v[-1]).sum(), rel=1e-9)
        nodes = spec._node_vectors()
        corners = nodes[[0, -1]]
        print(f"\n{spec.name} 2-D: brute force / exact = {worst / tight:.3f}; "
              + ", ".join(f"{b} / exact = {spec.sensitivity(bound=b).value / tight:.2f}" for b in spec._bounds[1:]))
        assert worst <= tight * (1 + 1e-12)
        assert worst >= 0.9 * tight  # nearly attained off the nodes
        assert np.abs(corners[0] - corners[1]).sum() <= tight * (1 + 1e-12)
        for b in spec._bounds[1:]:
            assert spec.sensitivity(bound=b).value >= tight
    frl, bern = _baselines_2d()
    # FRL: the paper's 2 M tau / n and 2 tau sqrt(M) / n, tau the largest grid L2 norm of one bump
    assert frl.sensitivity(bound="paper").value == pytest.approx(2 * 6 * frl.tau / 40)
    assert frl.sensitivity(bound="cs").value == pytest.approx(2 * np.sqrt(6) * frl.tau / 40)
    assert frl.tau == pytest.approx(1 / (2 * np.sqrt(np.pi) * 1.2), rel=0.02)  # int phi_h^2 = (2 sqrt(pi) h)^-2 in 2-D
    # Bernstein: diffpriv's (k + 1)^2 2 tau_inf / n with tau_inf = 1 / (2 pi h^2)
    assert bern.sensitivity(bound="paper").value == pytest.approx(36 * 2 / (2 * np.pi * 1.2 ** 2) / 40)
    with pytest.raises(InputError):
        frl.sensitivity(bound="nope")
    with pytest.raises(InputError):
        type(frl)(grid=frl.grid, bandwidth=1.2, n=40, M=10 ** 6)


def test_baselines_2d_privacy_loss_and_release():
    from fdp_ppl.noise.mechanisms import FRL, Bernstein

    rng = np.random.default_rng(8)
    obs = rng.uniform(-5, 5, size=(40, 2))
    for spec, mech in zip(_baselines_2d(), (FRL(1.0), Bernstein(1.0))):
        nodes = spec._node_vectors()
        l1 = np.abs(nodes[:, None, :] - nodes[None, :, :]).sum(-1)
        a, b = np.unravel_index(l1.argmax(), l1.shape)
        pa = np.array([ax[i] for ax, i in zip(spec.grid.axes, np.unravel_index(a, spec.grid.shape))])
        pb = np.array([ax[i] for ax, i in zip(spec.grid.axes, np.unravel_index(b, spec.grid.shape))])
        d1, d2 = obs.copy(), obs.copy()
        d1[0], d2[0] = pa, pb
        c1, c2 = spec.fit(d1).coefficients, spec.fit(d2).coefficients
        scale = mech.calibrate(spec).scale
        with pytest.warns(SeededReleaseWarning):
            tree = fp.release(spec.fit(d1), mech, draws=200, random_seed=3, study=True)
        dens = tree["posterior"]["density"]
        assert dens.dims == ("chain", "draw", "x1", "x2") and dens.shape == (1, 200, 16, 16)
        assert tree.attrs["mechanism"] == mech.family and tree.attrs["sensitivity_norm"] == "l1"
        y = c1 + rng.laplace(0.0, scale, size=(4000, c1.size))
        loss = mech.privacy_loss(y, c1, c2, scale)
        far = c1 + 1e3 * np.sign(c1 - c2) * scale  # beyond both centres on every coordinate: the loss is attained
        assert np.max(np.abs(loss)) <= 1.0 + 1e-9
        assert mech.privacy_loss(far, c1, c2, scale) == pytest.approx(1.0, rel=1e-6)
        # unseeded: OpenDP draws the noise
        tree = fp.release(spec.fit(obs), mech)
        assert tree.attrs["noise_generator"] == "opendp"
    with pytest.raises(CompatibilityError):
        fp.release(_baselines_2d()[1].fit(obs), FRL(1.0))


def test_iclp_kde_2d_uses_the_product_exponential_kernel_with_exact_grid_sensitivity():
    """2-D ICLP KDE: the L¹ (Laplace-density product) kernel of the paper's Figure 4 by default, the Gaussian on
    request; the exact grid sensitivity is attained by a pair of nodes and bounds every neighbour."""
    import numpy as np

    from fdp_ppl.errors import InputError
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec
    from fdp_ppl.kde.iclp import one_c_difference

    grid = CartesianGrid.uniform([[-1, 1], [-1, 1]], (9, 8))
    spec = ICLPKDESpec(grid=grid, bandwidth=0.4, n=20, eta=1.1)
    gauss = ICLPKDESpec(grid=grid, bandwidth=0.4, n=20, eta=1.1, kernel="gaussian")
    assert spec.kernel_name == "exponential" and spec.basis.kernel == "l1-exponential"
    assert gauss.kernel_name == "gaussian"
    assert ICLPKDESpec(grid=CartesianGrid.uniform([[0, 1]], 20), n=20).kernel_name == "gaussian"
    # the noise covariance is prod_k exp(-|x_k - y_k|/h)/2 on the grid (quadrature-weighted eigenpairs)
    nodes = np.stack(np.meshgrid(*grid.axes, indexing="ij"), -1).reshape(-1, 2)
    K = np.prod(0.5 * np.exp(-np.abs(nodes[:, None, :] - nodes[None, :, :]) / 0.4), axis=-1)
    idx = np.stack(np.meshgrid(*[np.arange(k) for k in grid.shape], indexing="ij"), -1).reshape(-1, 2)
    E = spec.basis.functions_at(idx)
    assert np.allclose((E * spec.eigenvalues) @ E.T, K, atol=1e-8 * K.max())
    delta = spec.sensitivity().value
    rng = np.random.default_rng(1)
    d = one_c_difference(spec, rng.uniform(-1, 1, (200, 2)), rng.uniform(-1, 1, (200, 2)))
    assert d.max() <= delta * (1 + 1e-9)
    corners = one_c_difference(spec, nodes, nodes[::-1])
    assert corners.max() <= delta * (1 + 1e-9)
    assert delta <= spec.sensitivity(bound="corrected").value * (1 + 1e-9)
    assert spec.attrs()["iclp_kernel"] == "exponential" or "exponential" in str(spec.attrs())
    with pytest.raises(InputError):
        ICLPKDESpec(grid=grid, bandwidth=0.4, n=20, kernel="epanechnikov")


def test_iclp_kde_normalise_divides_by_the_public_mass_at_no_privacy_cost():
    """``normalise=True``: estimate and release divided by the public mass (post-processing); the coefficients,
    sensitivity and noise scale are those of the default (unnormalised) spec, which stays the default."""
    grid = CartesianGrid.uniform((0.0, 1.0), 100)
    raw = ICLPKDESpec(grid=grid, bandwidth=0.077, n=100, eta=1.25)
    norm = ICLPKDESpec(grid=grid, bandwidth=0.077, n=100, eta=1.25, normalise=True)
    assert raw.normalise is False and raw.release_scale == 1.0
    mass = norm.public_mass()
    assert mass == pytest.approx(raw.public_mass()) and 0.3 < mass < 0.8  # K_H^eta loses mass (Theorem 16)
    # privacy: same sensitivity (every bound), same coefficients
    for bound in ("tight", "grid-cs", "corrected"):
        assert norm.sensitivity(bound=bound).value == raw.sensitivity(bound=bound).value
    obs = np.random.default_rng(5).uniform(0.2, 0.8, 100)
    f_raw, f_norm = raw.fit(obs), norm.fit(obs)
    assert np.array_equal(f_raw.coefficients, f_norm.coefficients)
    # every record at the centre of the box: the normalised estimate integrates to one
    centre = norm.fit(np.full(100, 0.5))
    assert float(grid.integrate(centre.density)) == pytest.approx(1.0, rel=1e-9)
    assert float(grid.integrate(raw.fit(np.full(100, 0.5)).density)) == pytest.approx(mass, rel=1e-9)
    with pytest.warns(SeededReleaseWarning):
        t_raw = fp.release(f_raw, ICLP(1.0), draws=4, random_seed=11, study=True)
    with pytest.warns(SeededReleaseWarning):
        t_norm = fp.release(f_norm, ICLP(1.0), draws=4, random_seed=11, study=True)
    d_raw, d_norm = t_raw["posterior"]["density"].values, t_norm["posterior"]["density"].values
    # the normalised release integrates to the raw one's integral over the public mass, draw by draw
    i_raw = np.array([grid.integrate(v) for v in d_raw[0]])
    i_norm = np.array([grid.integrate(v) for v in d_norm[0]])
    assert i_norm == pytest.approx(i_raw / mass, rel=1e-9)
    assert d_norm == pytest.approx(d_raw / mass, rel=1e-9, abs=1e-12)
    assert np.array_equal(t_norm["constant_data"]["noise_scale"].values, t_raw["constant_data"]["noise_scale"].values)
    assert t_norm.attrs["sensitivity"] == t_raw.attrs["sensitivity"]
    assert t_norm.attrs["budget_spent_epsilon"] == t_raw.attrs["budget_spent_epsilon"] == 4.0
    assert t_norm.attrs["normalise"] == 1 and t_raw.attrs["normalise"] == 0
    assert t_norm.attrs["public_mass"] == pytest.approx(mass)
