"""The sequential exponential mechanism for k > 1 principal components (fdp_ppl.fpca.sequential; DESIGN invariant 9).

* the exact normaliser's two formulas (:mod:`fdp_ppl.fpca.bingham`) against each other and closed forms;
* the frame law: exact fixed-budget draws (m = 4, k = 2) against the sequential target density — expectations of
  test functions and a binned chi-square — computed independently (importance sampling from Haar frames with the
  step normalisers by Archimedes' quadrature on S²);
* privacy: the normalised log-density ratio of neighbours never exceeds Σ ε_i (white box), and the black-box audit's
  ε lower bound stays below the release's claim;
* the plan: per-step budgets, pure guarantee, plan equals release (check_family), refusals before the charge.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

import fdp_ppl as fp
from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import BudgetExceededError, InputError, SeededReleaseWarning
from fdp_ppl.fpca import FPCASpec
from fdp_ppl.fpca.fpca_plan import exact_plan
from fdp_ppl.fpca.samplers import acg_acceptance_bound, pure_proposal_budget, random_frame
from fdp_ppl.fpca.sequential import (bingham_log_normaliser, sample_sequential_bingham, sequential_logpdf,
                                     sequential_plan, step_epsilons)
from fdp_ppl.spaces import Grid

#: the small case of the frame-law test: m = 4, k = 2, Σ = I (Σ⁻¹ shifts every step by a constant), ε = 2
SMALL_G = np.diag([12.0, 8.0, 2.0, 0.0]) + 1.5 * (np.outer([1, 0, 1, 0], [0, 1, 0, 1]) + np.outer([0, 1, 0, 1], [1, 0, 1, 0]))
SMALL_EPS = (1.2, 0.8)


def _s2_log_normaliser(A3):
    """log E_U[exp(xᵀAx)] on S² by Archimedes (x along A's top eigenvector uniform in [−1, 1]) and the circle's
    Bessel closed form: 400-point Gauss–Legendre, vectorised over a stack (N, 3, 3)."""
    a = np.linalg.eigvalsh(A3)  # (N, 3) ascending
    t, w = np.polynomial.legendre.leggauss(400)
    t, w = 0.5 * (t + 1.0), 0.5 * w  # [0, 1]
    r2 = 1.0 - t**2
    d = 0.5 * (a[:, 1] - a[:, 0])[:, None] * r2
    log_f = a[:, 2:3] * t**2 + 0.5 * (a[:, 0] + a[:, 1])[:, None] * r2 + np.log(special.ive(0, d)) + d
    top = log_f.max(axis=1, keepdims=True)
    return top[:, 0] + np.log(np.exp(log_f - top) @ w)


def _reference_weights(frames, G, eps):
    """Normalised density of Haar frames (N, 4, 2) under the sequential law, independently of the module."""
    B = G - np.eye(4)
    s = np.asarray(eps) / 2.0
    v1, v2 = frames[:, :, 0], frames[:, :, 1]
    log_c1 = bingham_log_normaliser(s[0] * B)  # one constant (checked against the series below)
    P = np.linalg.qr(v1[:, :, None], mode="complete")[0][:, :, 1:]  # (N, 4, 3): complements of v1
    log_c2 = _s2_log_normaliser(s[1] * np.einsum("nia,ij,njb->nab", P, B, P))
    logp = s[0] * np.einsum("ni,ij,nj->n", v1, B, v1) - log_c1 + s[1] * np.einsum("ni,ij,nj->n", v2, B, v2) - log_c2
    return np.exp(logp)


def _features(V):
    """Sign-free test functions of frames (N, m, 2): squared loadings of both columns on e_1 and e_2, and products
    of two loadings of one column."""
    return np.stack([V[:, 0, 0] ** 2, V[:, 1, 0] ** 2, V[:, 0, 1] ** 2, V[:, 1, 1] ** 2,
                     V[:, 0, 0] * V[:, 2, 0], V[:, 1, 1] * V[:, 3, 1]], axis=1)


# ---------------------------------------------------------------------- normaliser
def test_normaliser_matches_the_exact_series_and_closed_forms():
    """The two exact formulas of the one normaliser (fpca/bingham.py) agree: the Fourier inversion against the
    positive series at spreads up to the series' reach, both against closed forms; beyond the series' reach the
    exact normaliser is the inversion; inference uses the same function."""
    from fdp_ppl.fpca import bingham as FB
    from fdp_ppl.inference import bingham as IB

    assert IB.bingham_log_constant is FB.bingham_log_constant and bingham_log_normaliser is FB.bingham_log_normaliser
    rng = np.random.default_rng(0)
    for q in (3, 4, 12, 40):
        for scale in (0.05, 1.0, 30.0, 3000.0 / q):  # spreads up to ~the series' reach (4000)
            X = rng.standard_normal((q, q))
            A = scale * (X + X.T) / 2
            series = FB.bingham_log_constant(A, method="series")
            assert FB.bingham_log_constant(A, method="inversion") == pytest.approx(series, abs=1e-8)
            assert bingham_log_normaliser(A) == series
    A3 = np.diag([-5.0, 1.0, 4.0])
    a = np.array([-3.0, 2.0])  # circle: e^{(a1+a2)/2} I_0((a2 - a1)/2)
    for method in ("series", "inversion"):
        assert FB.bingham_log_constant(A3, method) == pytest.approx(_s2_log_normaliser(A3[None])[0], abs=1e-10)
        assert FB.bingham_log_constant(np.diag(a), method) == pytest.approx(-0.5 + math.log(special.iv(0, 2.5)),
                                                                            abs=1e-12)
    assert bingham_log_normaliser(np.diag([7.0])) == 7.0
    far = np.diag([0.0, -1000.0, -2500.0, -5000.0])   # beyond the series' reach: the inversion, and no gradient
    assert bingham_log_normaliser(far) == FB.bingham_log_constant(far, "inversion")
    with pytest.raises(InputError, match="gradient"):
        FB.bingham_log_constant(far, "exact", grad=True)


def test_step_epsilons_and_split_checks():
    assert step_epsilons(1.0, 3).tolist() == pytest.approx([1 / 3] * 3)
    assert step_epsilons(2.0, 2, (0.75, 0.25)).tolist() == [1.5, 0.5]
    for bad in ((0.5,), (0.7, 0.7), (1.2, -0.2)):
        with pytest.raises(InputError):
            step_epsilons(1.0, 2, bad)
    with pytest.raises(InputError, match="sequential"):
        fp.ExponentialMechanism(sampler="exact", split=(0.5, 0.5))


# ---------------------------------------------------------------------- frame law
def _haar(M, m, k, rng):
    """M Haar-distributed m×k frames (batched QR of Gaussian matrices, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((M, m, k)))
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


@pytest.mark.parametrize("budget", ["fixed", pytest.param("loop", marks=pytest.mark.slow)])
def test_frame_law_matches_the_sequential_density(budget):
    """m = 4, k = 2: 2500 exact frames (the release's fixed budget, and the run-until-accepted loop) against
    importance-sampling expectations of sign-free test functions from 40 000 Haar frames weighted by the normalised
    sequential density. Margins: 4.5 combined standard errors (sample sd/√N and the IS delta-method error); a
    binned chi-square of v2's loading on e_2 (5 bins, p > 1e-3). Not vacuous: the uniform law and the sequential
    law with the steps' budgets swapped are each rejected by the same margins."""
    rng = np.random.default_rng(11)
    N, M = 2500, 40_000
    T = sequential_plan(np.eye(4), 22, SMALL_EPS)["proposals_steps"] if budget == "fixed" else None
    draws = sample_sequential_bingham(SMALL_G, np.eye(4), SMALL_EPS, N, rng, proposals=T)
    assert np.allclose(np.swapaxes(draws, 1, 2) @ draws, np.eye(2), atol=1e-12)
    haar = _haar(M, 4, 2, rng)
    w = _reference_weights(haar, SMALL_G, SMALL_EPS)
    assert abs(w.mean() - 1.0) < 5 * w.std() / math.sqrt(M)  # a normalised density: its Haar mean is 1
    f_ref = _features(haar)
    ref = (w[:, None] * f_ref).mean(0) / w.mean()
    ref_se = np.sqrt(((w[:, None] * (f_ref - ref)) ** 2).mean(0) / M) / w.mean()

    def z(sample):
        f = _features(sample)
        return (f.mean(0) - ref) / np.sqrt(f.var(0, ddof=1) / len(f) + ref_se**2)

    assert np.all(np.abs(z(draws)) < 4.5), z(draws)
    edges = np.quantile(f_ref[:, 3], [0.2, 0.4, 0.6, 0.8])  # bins of v2[1]^2, probabilities by IS
    idx_ref, idx = np.digitize(f_ref[:, 3], edges), np.digitize(_features(draws)[:, 3], edges)
    probs = np.array([w[idx_ref == b].sum() for b in range(5)]) / w.sum()
    counts = np.bincount(idx, minlength=5)
    assert stats.chisquare(counts, N * probs).pvalue > 1e-3
    # power: the uniform law, and the sequential law with the budgets swapped, are far outside the margins
    assert np.max(np.abs(z(haar[:N]))) > 10
    swapped = sample_sequential_bingham(SMALL_G, np.eye(4), SMALL_EPS[::-1], N, rng)
    assert np.max(np.abs(z(swapped))) > 4.5


def test_logpdf_is_a_density_on_the_nested_spheres():
    """sequential_logpdf integrates to 1 against Haar frames (whose first column is uniform and second uniform
    on its complement: the product reference measure) and equals the independent reference density."""
    rng = np.random.default_rng(3)
    haar = np.stack([random_frame(4, 2, rng) for _ in range(300)])
    mine = sequential_logpdf(haar, SMALL_G, np.eye(4), SMALL_EPS)
    assert np.allclose(np.exp(mine), _reference_weights(haar, SMALL_G, SMALL_EPS), rtol=1e-8)
    # invariance to signs of each column, not to the order of the columns
    flipped = haar * np.array([-1.0, 1.0])
    assert np.allclose(sequential_logpdf(flipped, SMALL_G, np.eye(4), SMALL_EPS), mine)
    assert not np.allclose(sequential_logpdf(haar[:, :, ::-1], SMALL_G, np.eye(4), SMALL_EPS), mine)
    assert sequential_logpdf(haar, SMALL_G, np.eye(4), SMALL_EPS, normalised=False).shape == (300,)


# ---------------------------------------------------------------------- privacy
def test_neighbour_log_density_ratio_is_bounded_by_the_sum_of_step_budgets():
    """White box: for neighbours (one record replaced; rows of norm ≤ 1), |log p_D(V) − log p_D'(V)| ≤ Σ ε_i at
    every frame (sensitivity 1 per step: a projection is a contraction), and reaches a sizeable part of it (not
    vacuous: the bound is attained only in the limit of concentrated laws)."""
    rng = np.random.default_rng(5)
    m, n, eps = 4, 10, (0.6, 0.4)
    e = np.eye(m)
    worst = 0.0
    for trial in range(6):
        X = rng.standard_normal((n, m))
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * (1.0 if trial % 2 else 2.0)
        X2 = X.copy()
        X2[0] = e[trial % m]
        X[0] = e[(trial + 1) % m]
        G, G2 = X.T @ X, X2.T @ X2
        frames = np.concatenate([np.stack([random_frame(m, 2, rng) for _ in range(150)]),
                                 sample_sequential_bingham(G, np.eye(m), eps, 50, rng)])
        diff = sequential_logpdf(frames, G, np.eye(m), eps) - sequential_logpdf(frames, G2, np.eye(m), eps)
        assert np.max(np.abs(diff)) <= sum(eps) + 1e-9
        worst = max(worst, float(np.max(np.abs(diff))))
    assert worst > 0.3 * sum(eps)


@pytest.mark.slow
def test_black_box_epsilon_lower_bound_stays_below_the_claim():
    """The audit (fdp_ppl.auditing) on adversarial pairs (curves along φ_1 vs one replaced by φ_3, etc.), m = 3,
    k = 2, ε = 1, 4000 frames per side: the lower bound never exceeds the release's claimed ε''."""
    spec = FPCASpec(grid=Grid.uniform(12), m=3, k=2, epsilon=1.0, tau=1.0, sigma=np.eye(3))
    B = spec.basis_values.T
    pairs = [(B[[0]], B[[2]], "phi_1 vs phi_3"), (np.repeat(B[[0]], 3, 0), np.vstack([B[[0, 0]], B[[1]]]),
                                                    "3 x phi_1 vs one replaced by phi_2")]
    ds = fp.audit("bingham/sequential", family="fpca", spec=spec, pairs=pairs, samples=4000, tests=2, random_seed=8)
    assert 0 <= ds.attrs["epsilon_lower_bound"] <= 1.0 + 1e-6
    assert ds.attrs["epsilon_claimed"] == pytest.approx(1.0, abs=1e-6)


# ---------------------------------------------------------------------- plan and release
def _spec(k=2, epsilon=1.0, m=6):
    return FPCASpec(grid=Grid.uniform(max(24, 2 * m + 21)), m=m, k=k, epsilon=epsilon, tau=1.0)


def _curves(spec, n=30, seed=0):
    rng = np.random.default_rng(seed)
    B = spec.basis_values
    return (rng.standard_normal((n, 3)) * [0.5, 0.3, 0.1]) @ B[:, :3].T


def test_plan_states_per_step_budgets_and_a_pure_certified_guarantee():
    spec = _spec(k=3, m=40, epsilon=1.0)
    pl = fp.plan(spec, fp.ExponentialMechanism(sampler="sequential"), n=500)
    a = pl.attrs
    assert pl.certified and a["pure"] == 1 and a["exact"] == 1 and pl.delta == 0
    assert a["epsilon_steps"].tolist() == pytest.approx([1 / 3] * 3)
    steps = exact_plan(spec, 500, "sequential")
    assert a["proposal_budget_steps"].tolist() == steps["proposals_steps"] == [1509, 1489, 1469]
    # p*_i <= eta f_min,i with f_min,i = exp(-s_i n): the floor w.r.t. the step's base law holds no range of
    # Sigma^-1 (w.r.t. the uniform law, 64,000 on this design, the budgets were 152,753 + 150,746 + 148,712)
    for i, t in enumerate(steps["proposals_steps"]):
        assert t == pure_proposal_budget(acg_acceptance_bound(40 - i), -500 / 6, 1e-10)[0]  # log f_min = -s_i n
    assert a["proposal_budget"] == sum(steps["proposals_steps"])
    eg = a["epsilon_guaranteed"]
    assert 1.0 < eg <= 1.0 + 1e-9 and eg == pytest.approx(sum(a["epsilon_guaranteed_steps"])) and pl.cost.epsilon == eg
    assert "sequential" in pl.mechanism and "uncertified" not in pl.label and "matrix Bingham" in a["law"]
    split = fp.plan(spec, fp.ExponentialMechanism(sampler="sequential", split=(0.5, 0.3, 0.2)), n=500)
    assert split.attrs["epsilon_steps"].tolist() == pytest.approx([0.5, 0.3, 0.2])
    dl = fp.plan(spec, fp.ExponentialMechanism(sampler="sequential", delta=1e-10), n=500)
    assert 0 < dl.delta <= 1e-10 and dl.attrs["pure"] == 0


def test_plan_equals_release_and_the_file_keeps_it(tmp_path):
    from fdp_ppl.testing.family import check_family

    spec = _spec()
    fit = spec.fit(_curves(spec))
    _, tree = check_family(fit, fp.ExponentialMechanism(sampler="sequential"), draws=2, tmp_path=tmp_path,
                           plan_options={"n": 30})
    V = tree["posterior"]["frame"].values[0]
    assert V.shape == (2, 6, 2) and np.allclose(np.swapaxes(V, 1, 2) @ V, np.eye(2), atol=1e-3)


def test_release_is_charged_its_pure_guarantee_and_refused_before_the_charge():
    spec = _spec()
    fit = spec.fit(_curves(spec))
    ledger = PrivacyLedger(PrivacyBudget(2.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(fit, fp.ExponentialMechanism(sampler="sequential"), draws=2, ledger=ledger)
    a = tree.attrs
    assert a["certified"] == 1 and a["private"] == 1 and a["budget_spent_delta"] == 0
    assert ledger.spent.epsilon == pytest.approx(2 * a["epsilon_guaranteed"], rel=1e-12) and ledger.spent.delta == 0
    spent = ledger.spent.epsilon
    with pytest.raises(BudgetExceededError):  # 2 x ~1 > the 0.5 left: refused before any draw
        fp.release(fit, fp.ExponentialMechanism(sampler="sequential"), draws=2, ledger=ledger)
    with pytest.raises(InputError, match="max_proposals"):  # the budget does not fit: refused before the charge
        fp.release(fit, fp.ExponentialMechanism(sampler="sequential", max_proposals=100), ledger=ledger)
    assert ledger.spent.epsilon == spent
    with pytest.raises(InputError, match="sampler='sequential'"):  # the joint law's refusal names the path
        fp.plan(spec, fp.ExponentialMechanism(sampler="exact"), n=30)
    with pytest.raises(InputError, match="Bingham form only"):
        fp.plan(FPCASpec(grid=Grid.uniform(24), m=6, k=2, epsilon=1.0, tau=1.0, form="gp-base"),
                fp.ExponentialMechanism(sampler="sequential"), n=30)


def test_sequential_consumes_the_same_random_numbers_for_neighbours():
    spec = _spec()
    T = exact_plan(spec, 10, "sequential")["proposals_steps"]
    e = np.eye(6)
    states = []
    for G in (9 * np.outer(e[5], e[5]) + np.outer(e[0], e[0]), 10 * np.outer(e[5], e[5]), np.zeros((6, 6))):
        rng = np.random.default_rng(4)
        sample_sequential_bingham(G, spec.Sigma, step_epsilons(1.0, 2), 2, rng, proposals=T)
        states.append(rng.bit_generator.state["state"]["state"])
    assert states[0] == states[1] == states[2]


def test_cli_sequential_release(tmp_path):
    from fdp_ppl.cli import main

    spec = _spec()
    import xarray as xr

    curves = xr.DataArray(_curves(spec), dims=("curve", "t"), coords={"t": spec.grid.points}, name="y")
    path = tmp_path / "c.nc"
    curves.to_netcdf(path)
    out = tmp_path / "r.nc"
    rc = main(["fpca", "--data", str(path), "--k", "2", "--m", "6", "--epsilon", "1", "--tau", "1",
               "--sampler", "sequential", "--split", "0.7", "0.3", "--out", str(out), "--seed", "1", "--study"])
    assert rc == 0
    tree = xr.open_datatree(out)
    assert tree.attrs["sampler"] == "sequential" and list(tree.attrs["epsilon_steps"]) == pytest.approx([0.7, 0.3])
