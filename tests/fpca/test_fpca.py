"""Exponential mechanism with a base measure and ε-DP FPCA (Awan, Kenney, Reimherr & Slavković 2019).

* the exact k = 1 Bingham sampler (Kent et al. 2018) against quadrature on the sphere (m = 2, 3);
* the Gibbs sampler (Hoff 2009) against exact samplers on the same target (two-sample tests on
  rotation/sign-invariant statistics);
* privacy: the normalised log-density ratio under neighbouring datasets never exceeds ε, is nearly
  attained (so a halved sensitivity constant fails), for both the Bingham and the GP-base forms;
* the scale of Σ changes the Bingham form and not the GP-base form (spec §2.3);
* the release tree, seeds, ledger and bad input; Section 6 metrics; Example 3.5 and its CLT.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import BudgetExceededError, InputError, SeededReleaseWarning
from fdp_ppl.fpca import (FPCASpec, gibbs_matrix_bingham, penalised_mean_clt_covariance, penalised_mean_estimate,
                             penalised_mean_gaussian, penalised_mean_model, rejection_from_gp_base,
                             sample_vector_bingham, subspace_distance, variance_ratio)
import fdp_ppl as fp
from fdp_ppl.fpca.samplers import acg_envelope
from fdp_ppl.spaces import Grid


# ---------------------------------------------------------------------- quadrature on spheres
def sphere_grid(m: int, n1: int = 4000, n2: int = 800):
    """Points (N, m) and area weights (N,) of a product quadrature on S^{m-1}, m = 2 or 3.

    m = 3 uses Archimedes' coordinates (u = v_1 uniform in area): dA = du dφ.
    """
    if m == 2:
        th = (np.arange(n1) + 0.5) * 2 * np.pi / n1
        return np.stack([np.cos(th), np.sin(th)], 1), np.full(n1, 2 * np.pi / n1)
    u = -1 + (np.arange(n1) + 0.5) * 2 / n1
    ph = (np.arange(n2) + 0.5) * 2 * np.pi / n2
    U, P = np.meshgrid(u, ph, indexing="ij")
    r = np.sqrt(1 - U ** 2)
    pts = np.stack([U, r * np.cos(P), r * np.sin(P)], -1).reshape(-1, 3)
    return pts, np.full(pts.shape[0], (2 / n1) * (2 * np.pi / n2))


def normalised_logdensity(spec, gram, pts, w):
    """log f_X(v) on the quadrature points for k = 1, normalised by quadrature (w.r.t. surface area)."""
    ld = spec.log_density(pts[:, :, None], gram)
    return ld - logsumexp(ld, b=w)


def small_spec(m, *, eps=1.0, form="bingham", sigma=None, k=1, K=20, cls=FPCASpec):
    return cls(grid=Grid.uniform(K), m=m, k=k, epsilon=eps, tau=1.0, sigma=sigma, form=form)


# ---------------------------------------------------------------------- exact k = 1 sampler
def test_exact_bingham_matches_quadrature_m3():
    rng = np.random.default_rng(1)
    Qr = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    A = Qr @ np.diag([4.0, 1.0, -3.0]) @ Qr.T
    draws, st = sample_vector_bingham(A, 6000, np.random.default_rng(2), return_stats=True)
    assert np.allclose(np.linalg.norm(draws, axis=1), 1)
    assert 0.2 < st["acceptance"] <= 1
    # density of v_1 = u (area element du dφ): integrate φ on a fine grid
    u = np.linspace(-1, 1, 4001)
    ph = np.linspace(0, 2 * np.pi, 801)[:-1]
    U, P = np.meshgrid(u, ph, indexing="ij")
    r = np.sqrt(np.clip(1 - U ** 2, 0, None))
    V = np.stack([U, r * np.cos(P), r * np.sin(P)], -1)
    dens = np.exp(np.einsum("...i,ij,...j->...", V, A, V)).sum(1)
    au = np.abs(u)
    half = u >= 0
    fold = dens[half] + dens[::-1][half]  # density of |v_1| on u >= 0 (the u grid is symmetric)
    cdf_vals = np.concatenate([[0], np.cumsum(0.5 * (fold[1:] + fold[:-1]) * np.diff(au[half]))])
    cdf_vals /= cdf_vals[-1]
    p = stats.kstest(np.abs(draws[:, 0]), lambda x: np.interp(x, au[half], cdf_vals)).pvalue
    assert p > 1e-3
    # and the quadratic form vᵀAv
    q = np.einsum("ni,ij,nj->n", draws, A, draws)
    pts, w = sphere_grid(3, 1500, 600)
    lq = np.einsum("ni,ij,nj->n", pts, A, pts)
    wt = w * np.exp(lq - lq.max())
    order = np.argsort(lq)
    cdf = np.cumsum(wt[order]) / wt.sum()
    assert stats.kstest(q, lambda x: np.interp(x, lq[order], cdf)).pvalue > 1e-3


def test_exact_bingham_matches_quadrature_m2_concentrated():
    A = np.array([[30.0, 5.0], [5.0, -2.0]])
    draws = sample_vector_bingham(A, 5000, np.random.default_rng(3))
    th = np.mod(np.arctan2(draws[:, 1], draws[:, 0]), np.pi)  # sign-invariant angle in [0, π)
    grid = (np.arange(20000) + 0.5) * np.pi / 20000
    v = np.stack([np.cos(grid), np.sin(grid)], 1)
    dens = np.exp(np.einsum("ni,ij,nj->n", v, A, v) - 40)
    cdf = np.cumsum(dens) / dens.sum()
    assert stats.kstest(th, lambda x: np.interp(x, grid, cdf)).pvalue > 1e-3


def test_acg_envelope_uniform_and_bound():
    env = acg_envelope(np.zeros((4, 4)))
    assert env["b"] == pytest.approx(4) and env["log_m"] == pytest.approx(0)
    # M bounds f*/g* (Kent et al. 2018): check on random points for a stiff parameter (Σ⁻¹ up to 6·10⁴)
    A = -np.diag(np.arange(1, 41.0) ** 3)
    env = acg_envelope(A)
    x = np.random.default_rng(0).normal(size=(20000, 40)) / np.sqrt(env["omega"])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x2 = x ** 2
    log_ratio = -(x2 @ env["lam"]) + 20 * np.log(x2 @ env["omega"])
    assert np.all(log_ratio <= env["log_m"] + 1e-9)


# ---------------------------------------------------------------------- Gibbs against exact
def test_gibbs_k2_m3_matches_exact_normal_vector():
    """In R³ a 2-frame is fixed by its normal n: etr(VᵀAV) = e^{tr A} e^{−nᵀAn}, so n ~ Bingham(−A) exactly."""
    rng = np.random.default_rng(4)
    Qr = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    A = Qr @ np.diag([3.0, 0.5, -2.0]) @ Qr.T
    frames, _ = gibbs_matrix_bingham(A, 2, 8, np.random.default_rng(5), chains=1500)
    nrm = sample_vector_bingham(-A, 1500, np.random.default_rng(6))
    P11_gibbs = np.sum(frames[:, 0, :] ** 2, axis=1)
    P11_exact = 1 - nrm[:, 0] ** 2
    assert stats.ks_2samp(P11_gibbs, P11_exact).pvalue > 1e-3
    trA_g = np.einsum("cik,ij,cjk->c", frames, A, frames)
    trA_e = np.trace(A) - np.einsum("ni,ij,nj->n", nrm, A, nrm)
    assert stats.ks_2samp(trA_g, trA_e).pvalue > 1e-3


def _toy_curves(n, K, seed):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, K)
    return (0.5 * rng.normal(size=(n, 1)) * np.sin(2 * np.pi * t) + 0.3 * rng.normal(size=(n, 1)) * np.cos(
        2 * np.pi * t) + 0.2 * rng.normal(size=(n, 1)) + 0.05 * rng.normal(size=(n, K)))


def test_gibbs_matches_gp_base_rejection_with_identity_sigma():
    """With Σ = I both forms are etr(ε/2 VᵀGV) w.r.t. the uniform law:
    Gibbs (Bingham form) against exact rejection (GP-base form)."""
    m, k, n = 4, 2, 12
    curves = _toy_curves(n, 20, 7)
    sb = small_spec(m, k=k, eps=1.0, sigma=np.eye(m))
    sg = dataclasses.replace(sb, form="gp-base")
    fb, fg = sb.fit(curves), sg.fit(curves)
    assert np.allclose(fb.gram, fg.gram)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tb = fp.release(fb, fp.ExponentialMechanism(sampler="gibbs", iterations=20, diagnostics=False), draws=800,
                        random_seed=8, study=True)
        tg = fp.release(fg, fp.ExponentialMechanism(sampler="exact"), draws=800, random_seed=9, study=True)
    assert tb.attrs["exact"] == 0 and tg.attrs["exact"] == 1
    Qh = fb.nonprivate_frame()
    for stat in (lambda Q: subspace_distance(Q, Qh), lambda Q: variance_ratio(Q, fb.gram)):
        a = stat(tb.posterior["frame"].values[0])
        b = stat(tg.posterior["frame"].values[0])
        assert stats.ks_2samp(a, b).pvalue > 1e-3


# ---------------------------------------------------------------------- privacy with normalising constants
def _adversarial_pair(m, n):
    """n − 1 rows at e_2 and the last at e_1 (X) or at e_2 (X'): the extremal replace-one pair."""
    e1, e2 = np.eye(m)[0], np.eye(m)[1]
    G = (n - 1) * np.outer(e2, e2) + np.outer(e1, e1)
    return G, n * np.outer(e2, e2)


def _max_log_ratio(spec, G, G2, pts, w):
    return float(np.max(np.abs(normalised_logdensity(spec, G, pts, w) - normalised_logdensity(spec, G2, pts, w))))


@pytest.mark.parametrize("form", ["bingham", "gp-base"])
@pytest.mark.parametrize("m", [2, 3])
def test_privacy_ratio_never_exceeds_epsilon(form, m):
    eps = 0.8
    sigma = np.diag(np.arange(1, m + 1.0) ** -3.0) * (8.0 if form == "bingham" else 1.0)
    spec = small_spec(m, eps=eps, form=form, sigma=sigma)
    pts, w = sphere_grid(m, 6000 if m == 2 else 1200, 600)
    rng = np.random.default_rng(10)
    worst = 0.0
    for _ in range(6):  # random datasets, one row replaced by an adversarial unit vector
        X = rng.normal(size=(15, m))
        X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None] * rng.uniform(1, 2, size=(15, 1))
        Y = X.copy()
        Y[0] = np.linalg.eigh(X.T @ X)[1][:, 0]  # least-explained direction
        worst = max(worst, _max_log_ratio(spec, X.T @ X, Y.T @ Y, pts, w))
    G, G2 = _adversarial_pair(m, 300)
    extreme = _max_log_ratio(spec, G, G2, pts, w)
    assert worst <= eps + 1e-9
    assert extreme <= eps + 1e-9
    assert extreme > 0.9 * eps  # nearly attained: a halved sensitivity constant would exceed ε


class _HalvedSensitivity(FPCASpec):
    @property
    def sensitivity(self):
        return 0.5


def test_halved_sensitivity_would_break_privacy():
    eps, m = 0.8, 2
    pts, w = sphere_grid(m, 6000)
    G, G2 = _adversarial_pair(m, 300)
    good = small_spec(m, eps=eps, sigma=np.eye(m))
    bad = small_spec(m, eps=eps, sigma=np.eye(m), cls=_HalvedSensitivity)
    assert good.scale == pytest.approx(eps / 2) and bad.scale == pytest.approx(eps)
    r_good = _max_log_ratio(good, G, G2, pts, w)
    r_bad = _max_log_ratio(bad, G, G2, pts, w)
    assert 0.9 * eps < r_good <= eps + 1e-9
    assert r_bad > 1.5 * eps


def test_sigma_scale_changes_bingham_form_not_gp_base():
    m = 3
    pts, w = sphere_grid(m, 1200, 600)
    curves = _toy_curves(40, 20, 11)
    base = np.diag(np.arange(1, m + 1.0) ** -3.0)
    out = {}
    for form in ("bingham", "gp-base"):
        ld = [normalised_logdensity(s, s.fit(curves).gram, pts, w)
              for s in (small_spec(m, form=form, sigma=c * base) for c in (0.01, 1.0, 100.0))]
        out[form] = max(np.max(np.abs(ld[0] - ld[1])), np.max(np.abs(ld[2] - ld[1])))
    assert out["gp-base"] < 1e-8
    assert out["bingham"] > 1.0


def test_sigma_scale_changes_bingham_release_utility():
    """Spec §2.3c in small: the Bingham form's accuracy depends on the scale of Σ (exact k = 1 sampler)."""
    grid = Grid.uniform(50)
    curves = _toy_curves(200, 50, 12)
    res = {}
    for c in (0.01, 100.0):
        spec = FPCASpec(grid=grid, m=10, k=1, epsilon=1.0, tau=1.0, sigma_scale=c)
        fit = spec.fit(curves)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededReleaseWarning)
            # Sigma/100 makes the pure plan's density floor tiny (T ~ 3e5 per draw): the (eps', delta') plan suffices here
            tree = fp.release(fit, fp.ExponentialMechanism(delta=1e-10), draws=300, random_seed=13, study=True)
        res[c] = subspace_distance(tree.posterior["frame"].values[0], fit.nonprivate_frame()).mean()
    # here Σ/100 (strong penalty (ε/2)Σ⁻¹ on rough functions) forces the constant function, the data's
    # first PC is sin(2πt); Σ·100 leaves the data in charge: the scale alone moves the released subspace
    assert abs(res[100.0] - res[0.01]) > 0.3


# ---------------------------------------------------------------------- release tree, seeds, ledger
def test_release_tree_seed_and_ledger():
    grid = Grid.uniform(30)
    spec = FPCASpec(grid=grid, m=6, k=2, epsilon=0.5, tau=2.0)
    curves = 3 * _toy_curves(25, 30, 14)  # some norms exceed τ: clipped, never rescaled by the max
    fit = spec.fit(curves)
    assert fit.n == 25 and fit.n_clipped > 0
    assert np.all(np.linalg.eigvalsh(fit.gram) >= -1e-12) and np.trace(fit.gram) <= 25 + 1e-9
    ledger = PrivacyLedger(PrivacyBudget(2.0))
    with pytest.raises(InputError, match="ledger"):  # a seeded study is never charged to a ledger
        fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20), random_seed=1, study=True,
                   ledger=ledger)
    with pytest.warns(SeededReleaseWarning):
        tree = fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20, diagnostics=True), draws=3,
                          random_seed=1, study=True, dataset="toy")
    assert ledger.spent.epsilon == 0
    post = tree.posterior
    assert post["components"].dims == ("chain", "draw", "component", "t")
    assert post["frame"].dims == ("chain", "draw", "basis", "component")
    assert post["components"].shape == (1, 3, 2, 30)
    F = post["frame"].values[0]
    assert np.allclose(np.einsum("dbk,dbl->dkl", F, F), np.eye(2), atol=1e-10)
    B = tree.constant_data["basis_functions"].values
    assert np.allclose(B.T @ (grid.weights[:, None] * B), np.eye(6), atol=1e-10)
    a = tree.attrs
    assert (a["epsilon"], a["tau"], a["n"], a["m"], a["k"]) == (0.5, 2.0, 25, 6, 2)
    assert a["form"] == "bingham" and a["sampler"] == "gibbs" and a["iterations"] == 20
    assert a["exact"] == 0 and a["fp_safe"] == 0 and a["noise_seeded"] == 1 and a["study"] == "not private"
    assert "i^-3" in a["sigma_rule"] and a["basis"] == "fourier"
    assert a["rhat_invariant"] > 0 and a["ess_invariant"] > 0 and a["diagnostics_private"] == 1  # asked for
    # reproducible with the same seed, fresh without one
    with pytest.warns(SeededReleaseWarning):
        again = fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20), draws=3, random_seed=1, study=True)
    assert np.array_equal(again.posterior["frame"].values, F[None])
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededReleaseWarning)
        fresh = fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20), draws=1, ledger=ledger)
    assert fresh.attrs["noise_seeded"] == 0 and "study" not in fresh.attrs
    # the budget does not fit: refused before drawing
    with pytest.raises(BudgetExceededError):
        fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20), draws=4, ledger=ledger)
    assert ledger.spent.epsilon == pytest.approx(0.5)


def test_release_round_trips_netcdf(tmp_path):
    import xarray as xr

    spec = FPCASpec(grid=Grid.uniform(30), m=6, k=1, epsilon=0.5, tau=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(spec.fit(_toy_curves(10, 30, 31)), fp.ExponentialMechanism(), draws=2, random_seed=3, study=True)
    tree.to_netcdf(tmp_path / "fpca.nc")
    back = xr.open_datatree(tmp_path / "fpca.nc")
    assert back.attrs["sigma_rule"] == tree.attrs["sigma_rule"] and back.attrs["exact"] == 1
    assert np.array_equal(back.posterior["frame"].values, tree.posterior["frame"].values)


def test_exact_release_attrs():
    grid = Grid.uniform(40)
    curves = _toy_curves(60, 40, 15)
    # gp-base k = 2 is served only for small n·epsilon·m (the data-independent budget; larger sizes are refused)
    for form, k, m, n, eps in (("bingham", 1, 8, 60, 1.0), ("gp-base", 2, 4, 12, 0.25)):
        spec = FPCASpec(grid=grid, m=m, k=k, epsilon=eps, tau=1.0, form=form)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededReleaseWarning)
            tree = fp.release(spec.fit(curves[:n]), fp.ExponentialMechanism(), draws=5, random_seed=0, study=True)
        a = tree.attrs
        assert a["exact"] == 1 and a["form"] == form and a["certified"] == 1 and a["private"] == 1
        assert "acceptance" not in a and "fallbacks" not in a  # functions of the private data: not released
        assert tree.posterior["frame"].shape == (1, 5, m, k)
        # pure eps''-DP by default (fallback to the reference law, p* <= 1e-10 f_min)
        assert a["pure"] == 1 and a["delta_guaranteed"] == 0 and eps < a["epsilon_guaranteed"] <= eps + 1e-9
        assert a["budget_spent_delta"] == 0 and a["budget_spent_epsilon"] == pytest.approx(5 * a["epsilon_guaranteed"])
        assert a["proposal_budget"] > 1 and "fallback" in a and "pure" in a["guarantee"] and a["density_floor_log"] < 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededReleaseWarning)
            b = fp.release(spec.fit(curves[:n]), fp.ExponentialMechanism(delta=1e-10), draws=5, random_seed=0, study=True).attrs
        assert b["pure"] == 0 and 0 < b["delta_guaranteed"] <= 1e-10 and b["epsilon_guaranteed"] > eps
        assert b["budget_spent_delta"] == pytest.approx(5 * b["delta_guaranteed"]) and b["delta_target"] == 1e-10
        assert b["proposal_budget"] < a["proposal_budget"] and "DP per frame" in b["guarantee"]


# ---------------------------------------------------------------------- bad input
def test_bad_input():
    grid = Grid.uniform(10)
    with pytest.raises(InputError, match="cannot exceed"):
        FPCASpec(grid=grid, m=3, k=4, epsilon=1.0, tau=1.0)
    with pytest.raises(InputError, match="grid"):
        FPCASpec(grid=grid, m=11, k=1, epsilon=1.0, tau=1.0)
    for eps in (0.0, -1.0, float("nan")):
        with pytest.raises(InputError, match="epsilon"):
            FPCASpec(grid=grid, m=3, k=1, epsilon=eps, tau=1.0)
    with pytest.raises(InputError, match="tau"):
        FPCASpec(grid=grid, m=3, k=1, epsilon=1.0, tau=0.0)
    with pytest.raises(InputError, match="form"):
        FPCASpec(grid=grid, m=3, k=1, epsilon=1.0, tau=1.0, form="uniform")
    spec = FPCASpec(grid=grid, m=3, k=2, epsilon=1.0, tau=1.0)
    bad = np.ones((4, 10))
    bad[1, 3] = np.nan
    with pytest.raises(InputError, match="NaN"):
        spec.fit(bad)
    with pytest.raises(InputError, match="shape"):
        spec.fit(np.ones((4, 9)))
    fit = spec.fit(np.ones((4, 10)))
    with pytest.raises(InputError, match="exact sampler"):
        fp.release(fit, fp.ExponentialMechanism(sampler="exact"))
    with pytest.raises(InputError, match="sampler"):
        fp.release(fit, fp.ExponentialMechanism(sampler="hmc"))
    with pytest.raises(InputError, match="rejection"):
        fp.release(FPCASpec(grid=grid, m=3, k=1, epsilon=1.0, tau=1.0, form="gp-base").fit(np.ones((4, 10))),
                   fp.ExponentialMechanism(sampler="gibbs"))


# ---------------------------------------------------------------------- Section 6 metrics
def test_metrics():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(30, 5)) * np.array([3, 2, 1, 0.5, 0.2])
    G = X.T @ X
    Qh = np.linalg.eigh(G)[1][:, ::-1][:, :2]
    assert subspace_distance(Qh, Qh) == pytest.approx(0, abs=1e-12)
    assert variance_ratio(Qh, G) == pytest.approx(1)
    assert variance_ratio(Qh, G, reading="frobenius") == pytest.approx(1)
    Qo = np.linalg.eigh(G)[1][:, :2]
    assert subspace_distance(Qo, Qh) == pytest.approx(2)
    # ½‖P̃ − P̂‖²_F and the readings' relation for k = 1
    Qr = np.linalg.qr(rng.normal(size=(5, 2)))[0]
    assert subspace_distance(Qr, Qh) == pytest.approx(0.5 * np.sum((Qr @ Qr.T - Qh @ Qh.T) ** 2))
    v = Qr[:, :1]
    assert variance_ratio(v, G, reading="frobenius") == pytest.approx(variance_ratio(v, G) ** 2)
    assert 0 <= variance_ratio(Qr, G) <= 1 and 0 <= variance_ratio(Qr, G, reading="frobenius") <= 1
    # matches the paper's ‖X P̃ Xᵀ‖²_F / ‖X P̂ Xᵀ‖²_F
    P, Ph = Qr @ Qr.T, Qh @ Qh.T
    assert variance_ratio(Qr, G, reading="frobenius") == pytest.approx(
        np.sum((X @ P @ X.T) ** 2) / np.sum((X @ Ph @ X.T) ** 2))


# ---------------------------------------------------------------------- general mechanism, Example 3.5
def _mean_data(n, d, seed):
    rng = np.random.default_rng(seed)
    X = 0.3 + 0.3 * rng.normal(size=(n, d))
    return X / np.maximum(1, np.linalg.norm(X, axis=1))[:, None]


def test_general_mechanism_logp_is_base_plus_scaled_objective():
    d, lam, eps = 3, 0.5, 1.0
    C = np.diag(1.0 / np.arange(1, d + 1) ** 2)
    X = _mean_data(20, d, 17)
    model = penalised_mean_model(X, C, lam, eps, restrict_to_unit_ball=False)
    logp = model.compile_logp()
    mean, cov = penalised_mean_gaussian(X, C, lam, eps)
    pts = [np.zeros(d), 0.1 * np.ones(d), np.array([0.3, -0.2, 0.1])]
    got = np.array([logp({"b": p}) for p in pts])
    want = stats.multivariate_normal(mean, cov).logpdf(np.array(pts))
    assert np.allclose(got - got[0], want - want[0], atol=1e-8)
    # restricted to the unit ball (where Δ = 4 holds)
    ball = penalised_mean_model(X, C, lam, eps).compile_logp()
    assert np.isfinite(ball({"b": pts[1]})) and ball({"b": np.array([1.0, 1.0, 0.0])}) == -np.inf


def test_penalised_mean_clt():
    """Thms 3.2–3.3: n·Cov(b̃ − b̂) → (2Δ/ε)Σ and √n·(E b̃ − b̂) → 0."""
    d, lam, eps = 4, 0.2, 1.0
    C = np.diag(1.0 / np.arange(1, d + 1) ** 2)
    limit = penalised_mean_clt_covariance(C, lam, eps)
    errs, bias = [], []
    for n in (50, 500, 5000):
        X = _mean_data(n, d, 18)
        mean, cov = penalised_mean_gaussian(X, C, lam, eps)
        errs.append(np.max(np.abs(n * cov - limit)) / np.max(np.abs(limit)))
        bias.append(np.sqrt(n) * np.linalg.norm(mean - penalised_mean_estimate(X, C, lam)))
    assert errs[0] > errs[1] > errs[2] and errs[2] < 0.01
    assert bias[0] > bias[1] > bias[2] and bias[2] < 0.05
    # Monte Carlo at n = 5000: √n (b̃ − b̂) has the limit covariance
    X = _mean_data(5000, d, 19)
    mean, cov = penalised_mean_gaussian(X, C, lam, eps)
    z = np.sqrt(5000) * (np.random.default_rng(20).multivariate_normal(mean, cov, 20000)
                         - penalised_mean_estimate(X, C, lam))
    assert np.allclose(np.cov(z.T), limit, rtol=0.05, atol=0.02 * np.max(limit))


@pytest.mark.slow
def test_penalised_mean_nuts_matches_gaussian():
    import pymc as pm

    d, lam, eps = 3, 0.5, 1.0
    C = np.diag(1.0 / np.arange(1, d + 1) ** 2)
    X = _mean_data(30, d, 21)
    mean, cov = penalised_mean_gaussian(X, C, lam, eps)
    with penalised_mean_model(X, C, lam, eps, restrict_to_unit_ball=False):
        idata = pm.sample(1000, tune=500, chains=2, random_seed=22, progressbar=False, compute_convergence_checks=False)
    b = idata.posterior["b"].values.reshape(-1, d)
    assert np.allclose(b.mean(0), mean, atol=4 * np.sqrt(np.diag(cov) / 500))
    assert np.allclose(np.cov(b.T), cov, rtol=0.2, atol=0.05 * np.max(cov))


@pytest.mark.slow
def test_gibbs_k1_m40_matches_exact():
    grid = Grid.uniform(100)
    curves = _toy_curves(500, 100, 23)
    spec = FPCASpec(grid=grid, m=40, k=1, epsilon=1.0, tau=1.0)
    fit = spec.fit(curves)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        # m = 40 Fourier, Sigma_ii = i^-3: the pure plan's density floor exp(-s (n + 64000)) needs ~4.6e5 proposals per
        # draw (one release is served; 1000 are not): this law comparison uses the (eps', delta') plan
        ex = fp.release(fit, fp.ExponentialMechanism(delta=1e-10), draws=1000, random_seed=24, study=True)
        gb = fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=3, delta=1e-10, diagnostics=False),
                        draws=300, random_seed=25, study=True)
    Qh = fit.nonprivate_frame()
    a = subspace_distance(ex.posterior["frame"].values[0], Qh)
    b = subspace_distance(gb.posterior["frame"].values[0], Qh)
    assert stats.ks_2samp(a, b).pvalue > 1e-3


def test_uniform_base_model():
    from fdp_ppl.fpca import UniformBase, exponential_mechanism_model

    base = UniformBase(np.array([-1.0, -1.0]), np.array([1.0, 2.0]))
    model = exponential_mechanism_model(lambda b: -(b[0] - 0.3) ** 2 - b[1] ** 2, epsilon=2.0, sensitivity=0.5,
                                        base=base)
    logp = model.compile_logp(jacobian=False)
    ip = model.initial_point()
    # value of the interval-transformed variable for two points inside the box
    tr = model.rvs_to_transforms[model["b"]]
    pts = [np.array([0.0, 0.0]), np.array([0.5, 1.0])]
    vals = [logp({**ip, model.rvs_to_values[model["b"]].name: tr.forward(p, *model["b"].owner.inputs).eval()})
            for p in pts]
    xi = [-(p[0] - 0.3) ** 2 - p[1] ** 2 for p in pts]
    assert vals[1] - vals[0] == pytest.approx(2.0 / (2 * 0.5) * (xi[1] - xi[0]))


@pytest.mark.parametrize("form", ["bingham", "gp-base"])
def test_nuts_model_matches_exact_k1(form):
    import pymc as pm

    from fdp_ppl.fpca import fpca_pymc_model

    m = 3
    spec = small_spec(m, eps=2.0, form=form, sigma=np.diag([1.0, 0.5, 0.25]))
    fit = spec.fit(_toy_curves(10, 20, 26))
    with fpca_pymc_model(fit):
        idata = pm.sample(1000, tune=1000, chains=2, random_seed=27, progressbar=False,
                          compute_convergence_checks=False)
    P11 = idata.posterior["projection"].values[..., 0, 0].ravel()[::2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        ex = fp.release(fit, fp.ExponentialMechanism(), draws=2000, random_seed=28, study=True)
    assert stats.ks_2samp(P11, ex.posterior["frame"].values[0, :, 0, 0] ** 2).pvalue > 1e-3


def test_kernel_eigenbasis_spec():
    from fdp_ppl.spaces import Gaussian, eigenbasis

    grid = Grid.uniform(31)
    eb = eigenbasis(Gaussian(rho=0.2), grid)
    spec = FPCASpec(grid=grid, m=5, k=1, epsilon=0.1, tau=1.0, basis=eb, form="gp-base")
    assert np.allclose(np.diag(spec.Sigma), eb.eigenvalues[:5]) and "eigenvalues" in spec.sigma_rule
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(spec.fit(_toy_curves(20, 31, 29)), fp.ExponentialMechanism(), draws=2, random_seed=30, study=True)
    assert tree.attrs["basis"].startswith("eigenbasis") and tree.posterior["components"].shape == (1, 2, 1, 31)
    with pytest.raises(InputError, match="eigenfunctions"):
        FPCASpec(grid=grid, m=eb.size + 1, k=1, epsilon=1.0, tau=1.0, basis=eb)


def test_gp_base_rejection_cap_is_data_independent_error():
    from fdp_ppl.fpca import SamplerBudgetError

    G = np.diag([500.0, 0.0, 0.0])  # base mass near e_1 is tiny: the expected number of proposals is huge
    with pytest.raises(SamplerBudgetError, match="proposals"):
        rejection_from_gp_base(G, np.diag([1e-4, 1.0, 1.0]), 1, 0.5, 1, np.random.default_rng(0), max_proposals=1000)
    Q, st = rejection_from_gp_base(np.zeros((3, 3)), np.eye(3), 2, 0.5, 10, np.random.default_rng(0),
                                   return_stats=True)
    assert st["acceptance"] == 1 and np.allclose(np.einsum("dik,dil->dkl", Q, Q), np.eye(2))


@pytest.mark.parametrize("form", ["bingham", "gp-base"])
def test_nuts_potential_is_the_target_density(form):
    """log p(W) of the NUTS model = N(0, 1) log-density of W + log f(V) − log ACG_C(V), with log f the spec's
    log-density w.r.t. the uniform law on frames (so span(Z) has exactly the target law)."""
    from fdp_ppl.fpca import fpca_pymc_model, nuts_parametrisation

    spec = small_spec(5, eps=1.5, form=form, k=2)
    fit = spec.fit(3 * _toy_curves(12, 20, 41))
    model = fpca_pymc_model(fit)
    logp = model.compile_logp()
    L, C_inv = nuts_parametrisation(fit)
    rng = np.random.default_rng(42)
    diffs = []
    for _ in range(6):
        W = rng.standard_normal((5, 2))
        Z = L @ W
        V = np.linalg.qr(Z)[0]
        log_acg = -0.5 * 5 * np.linalg.slogdet(V.T @ C_inv @ V)[1]
        want = spec.log_density(V, fit.gram) - log_acg + stats.norm.logpdf(W).sum()
        diffs.append(float(logp({"W": W})) - want)
    assert np.ptp(diffs) < 1e-9


@pytest.mark.slow  # PyMC's first NUTS compile and 2 chains of 100 tuning steps (the release floor): minutes on 2 cores
def test_nuts_release():
    spec = small_spec(4, eps=2.0, k=2)
    fit = spec.fit(_toy_curves(15, 20, 43))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fp.release(fit, fp.ExponentialMechanism(sampler="nuts", iterations=100), draws=2, random_seed=44, study=True)
    a = tree.attrs
    assert a["sampler"] == "nuts" and a["exact"] == 0 and a["iterations"] == 100 and a["draws"] == 2
    assert a["draws_exact"].startswith("no") and "rhat_invariant" not in a  # diagnostics are private: off by default
    F = tree.posterior["frame"].values[0]
    assert F.shape == (2, 4, 2) and np.allclose(np.einsum("dbk,dbl->dkl", F, F), np.eye(2), atol=1e-10)


def test_fpca_tree_follows_the_schema():
    from fdp_ppl.releasing import schema
    from fdp_ppl.errors import SchemaError

    spec = small_spec(4, k=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(spec.fit(_toy_curves(10, 20, 45)), fp.ExponentialMechanism(), random_seed=46, study=True)
    assert schema.is_fpca_release(tree) and not schema.is_release(tree)
    assert tree.attrs[schema.SCHEMA_ATTR] == schema.SCHEMA_VERSION
    assert set(tree[schema.POSTERIOR].data_vars) == {schema.COMPONENTS, schema.FRAME}
    with pytest.raises(SchemaError, match=r"\(FPCA\) release"):  # not a mean curve; fp.infer has its own path for it
        schema.read_release(tree)


def test_fit_clips_at_the_public_tau_and_never_rescales_by_the_data():
    """Curves of L2 norm τ/2 keep coefficient rows of norm 1/2: the bound is the public τ, not the largest
    norm in the data (dividing by the data's maximum would break Δ = 1 under replace-one)."""
    grid = Grid.uniform(40)
    spec = FPCASpec(grid=grid, m=3, k=1, epsilon=1.0, tau=2.0)
    x = np.ones((5, 40))  # L2 norm 1 on [0, 1] = τ/2: inside the span of the first Fourier function
    c, n_clipped = spec.coefficients(x)
    assert n_clipped == 0 and np.allclose(np.linalg.norm(c, axis=1), 0.5, atol=1e-6)
    c_big, n_big = spec.coefficients(np.vstack([x, 10 * x[:1]]))  # one curve far above τ is clipped to norm 1
    assert n_big == 1 and np.allclose(np.linalg.norm(c_big, axis=1), [0.5] * 5 + [1.0], atol=1e-6)


def test_subnormal_records_never_reach_the_scatter_matrix():
    """A record of amplitude 1e-160 spread over every component would make all m² entries of G = CᵀC subnormal
    (1e-320), and every proposal's tr(QᵀGQ) would take the CPU's subnormal slow path on many CPUs (Andrysco et
    al. 2015). The coefficients are on the public lattice 2^-40 Z (towards zero): the record is 0, norms stay
    <= 1, and G has no subnormal entry (DESIGN invariant 9)."""
    from fdp_ppl.auditing.fpca import fpca_issue_design

    spec, first, _ = fpca_issue_design(0.2, "gp-base")
    phi = np.asarray(spec.basis.eigenfunctions)[:, :5].sum(1)
    tiny = np.zeros_like(first)
    tiny[0] = 1e-160 * phi / spec.grid.norm(phi[None])[0]
    tiny[1, 3] = 5e-324
    raw = (tiny[0] * spec.grid.weights) @ np.asarray(spec.basis.eigenfunctions)[:, :5]
    assert np.all(np.abs(np.outer(raw, raw)) < np.finfo(float).tiny)  # the unprotected Gram: all subnormal
    c, _ = spec.coefficients(tiny)
    assert np.all(c == 0)
    G = spec.fit(tiny).gram
    assert np.all(G == 0)
    c, _ = spec.coefficients(first * 3.0)  # clipped rows: on the lattice, norm <= 1
    assert np.all(c * 2.0**40 == np.trunc(c * 2.0**40))
    assert np.max(np.linalg.norm(c, axis=1)) <= 1.0
    G = spec.fit(first + 1e-170).gram
    small = np.abs(G[G != 0])
    assert small.min() >= 2.0**-132
