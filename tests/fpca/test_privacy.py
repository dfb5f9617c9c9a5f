"""DESIGN invariant 9: what an observer of an ε-DP FPCA release sees does not depend on the data beyond the recorded guarantee
(pure ε'' by default, (ε', δ') with ``delta=``).

* the fixed-budget samplers consume exactly the same random numbers (hence the same work) for very different
  datasets, and their fallback probability stays below the recorded bound p* on brute-force adversarial
  datasets (all curves along one eigenvector, one replaced);
* the data-independent acceptance bounds hold (GP base and ACG: proved, each inequality of the ACG proof checked here
  at its worst case, its certificate run in the slow suite, and the adversarial search over the simplex kept);
* a size whose budget cannot be served is refused before the charge, identically for neighbours;
* uncertified MCMC is labelled as such in the attrs and the ledger; PyMC's timing line is silenced.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import pytest
from scipy import special

from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import InputError, SeededReleaseWarning
from fdp_ppl.fpca import FPCASpec, gibbs_matrix_bingham, rejection_from_gp_base, sample_vector_bingham
import fdp_ppl as fp
from fdp_ppl.fpca.fpca import FPCAFit
from fdp_ppl.fpca.fpca_plan import DEFAULT_MAX_PROPOSALS, exact_plan
from fdp_ppl.fpca.samplers import (acg_acceptance_bound, acg_envelope, bingham_log_density_floor, fallback_guarantee,
                                      gp_base_acceptance_bound, base_log_density_floor, proposal_budget,
                                      pure_guarantee, pure_proposal_budget)
from fdp_ppl.spaces import Gaussian, Grid, eigenbasis

SIGMA = np.diag([1.0, 0.5, 0.2, 0.1, 0.05])


def _along(m, n, j, replaced=None):
    """G of n unit curves along e_j; with ``replaced``, the last one along e_replaced instead (a neighbour)."""
    e = np.eye(m)
    G = (n - 1) * np.outer(e[j], e[j])
    last = e[j if replaced is None else replaced]
    return G + np.outer(last, last)


def _state(rng):
    return rng.bit_generator.state["state"]["state"]


# ---------------------------------------------------------------------- data-independent cost
def test_gp_base_consumes_the_same_random_numbers_for_any_data():
    """Old code: the number of proposals was geometric with a data-dependent rate (fails here)."""
    far, near = _along(5, 28, 4), _along(5, 28, 0)  # along the least / most likely base direction
    states = []
    for G in (far, near, np.zeros((5, 5))):
        rng = np.random.default_rng(1)
        rejection_from_gp_base(G, SIGMA, 1, 0.5, 3, rng, proposals=5000)
        states.append(_state(rng))
    assert states[0] == states[1] == states[2]


def test_acg_and_gibbs_consume_the_same_random_numbers_for_any_data():
    """Old code: sample_vector_bingham chose its batch from the data-dependent log M and looped (fails here)."""
    states = []
    for A in (np.zeros((6, 6)), np.diag([300.0, 0, 0, 0, 0, -40.0]), -np.diag(np.arange(1, 7.0) ** 3)):
        rng = np.random.default_rng(2)
        sample_vector_bingham(A, 4, rng, proposals=200)
        gibbs_matrix_bingham(A, 2, 3, rng, chains=2, proposals=200)
        states.append(_state(rng))
    assert states[0] == states[1] == states[2]


def test_release_consumes_the_same_random_numbers_for_neighbours():
    grid = Grid.uniform(20)
    spec = FPCASpec(grid=grid, m=5, k=1, epsilon=0.5, tau=1.0, form="gp-base", sigma=SIGMA)
    T = exact_plan(spec, 10, "exact")["proposals"]
    states = []
    for G in (_along(5, 10, 4), _along(5, 10, 4, replaced=0)):
        rng = np.random.default_rng(3)
        rejection_from_gp_base(G, spec.Sigma, 1, spec.scale, 2, rng, proposals=T)
        states.append(_state(rng))
    assert states[0] == states[1]


# ---------------------------------------------------------------------- acceptance bounds
def test_gp_base_bound_k1_is_the_confluent_hypergeometric_and_holds():
    for t in (0.5, 5.0, 14.0):
        want = math.log(special.hyp1f1(0.5, 2.5, t)) - t
        assert gp_base_acceptance_bound(np.eye(5), 1, t) == pytest.approx(want, abs=1e-5)
    # measured acceptance ≥ bound on adversarial datasets (every eigen-direction, and neighbours)
    n, s = 10, 0.5
    rng = np.random.default_rng(4)
    for k in (1, 2):
        bound = math.exp(gp_base_acceptance_bound(SIGMA, k, s * n))
        for j in range(5):
            for G in (_along(5, n, j), _along(5, n, j, replaced=(j + 1) % 5)):
                _, st = rejection_from_gp_base(G, SIGMA, k, s, 400, rng, max_proposals=10**8, return_stats=True)
                assert st["acceptance"] >= bound


def _acg_rate(p, g):
    """Acceptance rate of the ACG sampler at the simplex point p (identity (1)), by common random numbers g (N, q)."""
    w = np.sum(g * g, axis=1) / (p.size * (g * g @ p))
    return float(np.mean(np.exp(0.5 * p.size * (np.log(w) + 1.0 - w))))


def test_acg_vertex_value_closed_form_and_rate_identities():
    """The closed-form vertex value equals the F-integral it replaces; identities (2) (no b) and (3) (anchor) of
    acg_acceptance_bound agree with quadrature and with the Monte Carlo acceptance of the sampler itself."""
    from scipy import integrate, stats

    from fdp_ppl.fpca.samplers import acg_vertex_acceptance

    for q in (2, 5, 40):
        f = stats.f(q - 1, 1)
        want = integrate.quad(lambda x: math.exp(0.5 * q * (math.log((1 + (q - 1) * x) / q) + 1 - (1 + (q - 1) * x) / q))
                              * f.pdf(x), 0.0, np.inf, limit=500)[0]
        assert math.exp(acg_vertex_acceptance(q)) == pytest.approx(want, rel=1e-8)
        assert acg_acceptance_bound(q) == pytest.approx(acg_vertex_acceptance(q) - math.log(2))
    rng = np.random.default_rng(11)
    q, a1 = 2, math.exp(acg_vertex_acceptance(2))
    for lam2 in (0.3, 2.0, 15.0):
        env = acg_envelope(-np.diag([0.0, lam2]))
        b, p = env["b"], 1.0 / (env["b"] + 2.0 * env["lam"])
        circle = integrate.quad(lambda t: math.exp(-0.5 * (math.cos(t) ** 2 / p[0] + math.sin(t) ** 2 / p[1])),
                                0.0, 2 * math.pi)[0] / (2 * math.pi)
        two = (math.e / q) ** (q / 2) / math.sqrt(np.prod(p)) * circle
        anchor = integrate.quad(lambda y: (1 - y) ** -0.5 * stats.gamma(0.5, scale=1 / lam2).pdf(y), 0.0, 1.0,
                                limit=200)[0]
        three = a1 * math.sqrt(b * math.exp(1 - b) * (1 + b / (2 * lam2))) * anchor
        assert two == pytest.approx(three, rel=1e-9)
        # the weighted chi-square form: (2e/q)^{q/2} Gamma(q/2) times the density of p_1 Z_1^2 + p_2 Z_2^2 at 1
        f_t = integrate.quad(lambda y: stats.chi2(1, scale=p[0]).pdf(y) * stats.chi2(1, scale=p[1]).pdf(1 - y),
                             0.0, 1.0, limit=200)[0]
        assert (2 * math.e / q) ** (q / 2) * math.gamma(q / 2) * f_t == pytest.approx(two, rel=1e-7)
        N = 400_000
        rate = _acg_rate(p, rng.standard_normal((N, q)))
        assert abs(rate - two) <= 5 * 0.5 / math.sqrt(N)  # acceptance indicators have sd <= 1/2


@pytest.mark.parametrize("q", [2, 3, 5, pytest.param(12, marks=pytest.mark.slow)])
def test_acg_bound_holds_under_adversarial_search_over_the_simplex(q):
    """a_min = A_1(q)/2 is proved (acg_proof); the sharper conjecture a >= A_1(q) is not: an adversarial
    Nelder-Mead minimisation of the rate over the simplex of p (from the vertex, edge midpoints, random points;
    common random numbers) never finds a rate below 0.95 A_1(q) = 1.9 a_min (margin: 5 Monte Carlo standard errors)."""
    from scipy import optimize

    rng = np.random.default_rng(5 + q)
    N = 20_000
    g = rng.standard_normal((N, q))
    a_min = math.exp(acg_acceptance_bound(q))

    def rate(z):
        p = np.exp(z - z.max())
        return _acg_rate(p / p.sum(), g)

    starts = [np.r_[0.0, np.full(q - 1, -12.0)], np.r_[0.0, 0.0, np.full(q - 2, -12.0)],
              np.r_[0.0, np.full(q - 1, -3.0)]] + [rng.normal(0, 3, q) for _ in range(4)]
    worst = 1.0
    for z0 in starts:
        res = optimize.minimize(rate, z0, method="Nelder-Mead",
                                options={"maxiter": 150 * q, "xatol": 1e-3, "fatol": 1e-5})
        worst = min(worst, res.fun)
        # the minimiser's rate with fresh numbers: the search did not merely exploit the common random numbers
        p = np.exp(res.x - res.x.max())
        fresh = _acg_rate(p / p.sum(), rng.standard_normal((N, q)))
        assert fresh >= a_min
    se = 0.5 / math.sqrt(N)
    assert worst >= 1.9 * a_min - 5 * se, (q, worst, a_min)
    assert worst <= 2.0 * a_min + 5 * se + 0.02  # the search reaches the vertex value (not vacuous)


# ------------------------------------------------------------- the proof of the ACG bound (fdp_ppl.fpca.acg_proof)
def _density_at_mean(p):
    """f_T(1) for T = sum p_i Z_i^2: closed form (1-2 terms), a convolution with the pair density (3 terms), else
    Fourier inversion of the exact characteristic function (trapezoid to t = 2e4 / max p; relative error < 1e-5
    from 4 terms on, checked below against chi^2_4)."""
    from scipy import integrate

    p = np.sort(np.asarray(p, float))[::-1]
    if p.size == 1:
        return 1.0 / math.sqrt(2.0 * math.pi * math.e * p[0]) * math.exp(0.5 - 0.5 / p[0])
    if p.size == 2:
        return _pair_density(1.0, *p)
    if p.size == 3:  # x = u^2 for the first term: no singularity
        f = lambda u: 2.0 * math.exp(-u * u / (2 * p[0])) / math.sqrt(2 * math.pi * p[0]) * _pair_density(1 - u * u, *p[1:])
        return integrate.quad(f, 0.0, 1.0, limit=200, epsabs=1e-14, epsrel=1e-12)[0]
    c = p.max()
    t = np.r_[np.linspace(0.0, 50.0, 200001), np.geomspace(50.0, 2e4, 20001)[1:]] / c
    z = 1.0 - 2.0j * np.outer(t, p)
    re = np.real(np.exp(np.sum(-0.5 * np.log(z) - 1j * np.outer(t, p), axis=1)))
    return float(np.trapezoid(re, t)) / math.pi


def _nu_rho(p):
    p = np.sort(np.asarray(p, float))[::-1]
    c = p[0]
    return c, float(np.sum(p * p) / c ** 2), float(p[1] / c) if p.size > 1 else 0.0


@pytest.fixture(scope="module")
def proof():
    from fdp_ppl.fpca import acg_proof

    return acg_proof


def test_acg_proof_conditioning_identities_and_pair_density(proof):
    """(G1)/(G2): f_T(1) = E[h(D)]/c and the closed-form density k_rho of Z_1^2 + rho Z_2^2 (against quadrature);
    the cell minorant H of (G2) is below k_rho(1 + rho - d) at both ends of its rho cell."""
    from scipy import integrate

    f1 = lambda x: math.exp(-0.5 * x) / math.sqrt(2 * math.pi * x) if x > 0 else 0.0

    for rho in (0.05, 0.4, 1.0):
        for y in (0.1, 1.0, 3.0):
            conv = integrate.quad(lambda x, y=y, rho=rho: f1(x) * f1((y - x) / rho) / rho, 0.0, y,
                                  limit=200)[0]
            k = math.exp(-0.5 * y) * special.ive(0, 0.25 * y * (1.0 / rho - 1.0)) / (2.0 * math.sqrt(rho))
            assert k == pytest.approx(conv, rel=1e-6)
    ra, rb = 0.5, 0.55
    d = np.linspace(-5, 1 + ra - 1e-6, 2001)
    for rho in (ra, 0.52, rb):
        y = 1 + rho - d
        k = np.exp(-0.5 * y) * special.ive(0, 0.25 * y * (1 / rho - 1)) / (2 * math.sqrt(rho))
        assert np.all(proof._h_pair(d, ra, rb) <= k)
    # (G1) conditioning: T = 0.6 Z1^2 + 0.4 Z2^2, E[h(D)]/c = E[f_1((1 - R)/c)]/c equals the pair density k_rho(1/c)/c
    c, r = 0.6, 0.4
    cond = integrate.quad(lambda x: f1(x / r) / r * f1((1 - x) / c) / c, 0.0, 1.0,
                          limit=200)[0]
    rho, y = r / c, 1 / c
    pair = math.exp(-0.5 * y) * special.ive(0, 0.25 * y * (1 / rho - 1)) / (2 * math.sqrt(rho)) / c
    assert cond == pytest.approx(pair, rel=1e-7)
    # the Fourier inversion used below, against chi^2_4 / 4 (density 4 e^{-2} at 1)
    assert _density_at_mean(np.full(4, 0.25)) == pytest.approx(4 * math.exp(-2.0), rel=1e-5)


def _pair_density(y, a, b):
    """Density of a Z_1^2 + b Z_2^2 (a >= b) at y."""
    rho = b / a
    y = y / a
    return math.exp(-0.5 * y) * special.ive(0, 0.25 * y * (1 / rho - 1)) / (2 * math.sqrt(rho)) / a


def test_acg_proof_fourier_bounds_hold_and_are_attained():
    """(F): (1+4t^2)^{-1/4} e^{-(nu-1)t^2} <= |psi| <= (1+4t^2)^{-1/4}(1+4 rho^2 t^2)^{-(nu-1)/(4 rho^2)} and
    |arg psi| <= A(t), on random weight vectors; the upper bound is attained by equal weights (its worst case)."""
    from fdp_ppl.fpca import acg_proof as P

    rng = np.random.default_rng(3)
    tau = np.linspace(0.0, 6.0, 601)
    for trial in range(40):
        q = int(rng.integers(2, 30))
        p = rng.dirichlet(np.full(q, rng.choice([0.2, 1.0, 5.0])))
        if trial == 0:
            p = np.full(4, 0.25)
        c, nu, rho = _nu_rho(p)
        z = 1.0 - 2.0j * np.outer(tau / c, p)
        logpsi = np.sum(-0.5 * np.log(z) - 1j * np.outer(tau / c, p), axis=1)
        mod, arg = np.exp(logpsi.real), np.abs(logpsi.imag)
        lower = (1 + 4 * tau ** 2) ** -0.25 * np.exp(-(nu - 1) * tau ** 2)
        upper = P._mod_upper(tau, nu, rho)
        assert np.all(lower <= mod * (1 + 1e-12)) and np.all(mod <= upper * (1 + 1e-12))
        assert np.all(arg <= P._phase_bound(tau, nu, rho) * (1 + 1e-12) + 1e-15)
        if trial == 0:  # four equal weights: the modulus bound is exact
            assert np.allclose(mod, upper, rtol=1e-6)
        # the bound on the running max of phi(x)/x^2 is above the true running max
    xs = np.linspace(1e-4, 80, 200001)
    run = np.maximum.accumulate((xs - np.arctan(xs)) / xs ** 2)
    assert np.all(run <= P._u_bound(xs))
    assert P._u_bound(np.array([80.0]))[0] < 0.235  # not vacuous: the true maximum is 0.2299


def test_acg_proof_bounds_are_below_the_true_density(proof):
    """Each bound of the proof, evaluated at a weight vector's own (nu, rho), gives B/c <= f_T(1) (Fourier inversion of
    the exact characteristic function); every quadratic minorant of (G1) is below h on a fine grid; the theorem
    f_T(1) >= f_1(1)/2 holds at these points; a cell that (G1) and (F) alone must cover passes; a_min = A_1(q)/2."""
    from fdp_ppl.fpca.samplers import acg_vertex_acceptance

    single = proof._single_minorants()
    d = np.linspace(-60, 1 - 1e-9, 400001)
    hv = proof._h_single(d)
    for a, b, g in single:
        assert np.all(a - b * d - g * d * d <= hv + 1e-15)
    assert proof._quad_bound(single, 0.0) >= 0.99 * proof.F1  # tight at the vertex (not vacuous)
    cases = [np.r_[0.9, 0.1], np.r_[0.5, 0.3, 0.2], np.r_[0.3, 0.3, 0.2, 0.2], np.full(4, 0.25),
             np.r_[0.4, 0.3, 0.2, 0.1], np.full(10, 0.1), np.r_[0.5, np.full(25, 0.02)]]
    for p in cases:
        c, nu, rho = _nu_rho(p)
        f = _density_at_mean(p)
        assert proof._quad_bound(single, 2 * (nu - 1)) / c <= f
        if nu - 1 > rho * rho:
            assert proof.fourier_bound(nu, nu, rho) / c <= f
        assert f >= proof.R_PROVED * proof.F1
    assert proof.cell_bound(3.6, 3.62, 0.0, 0.02) >= proof.R_PROVED
    for q in (2, 40, 300):
        assert acg_acceptance_bound(q) == pytest.approx(acg_vertex_acceptance(q) + math.log(proof.R_PROVED))
    with pytest.raises(ValueError):
        acg_acceptance_bound(int(proof.NU_MAX) + 1)


@pytest.mark.slow
def test_acg_proof_certificate_covers_every_cell(proof):
    """The whole certificate (about 45 s of CPU): every (nu, rho) cell, nu in [1, 1e6], has a proved bound
    >= R_PROVED f_1(1); the pair minorants of (G2) are below H on a fine grid at the hardest rho cell, and the bound
    on the hardest cells (about four comparable weights) is within 20% of R_PROVED (the grid is not vacuous)."""
    pair = proof._pair_minorants(0.95, 1.0)
    dd = np.linspace(-60, 1.95 - 1e-9, 400001)
    hp = proof._h_pair(dd, 0.95, 1.0)
    for a, b, g in pair:
        assert np.all(a - b * dd - g * dd * dd <= hp + 1e-15)
    assert proof._quad_bound(pair, 2 * (4 - 1 - 1)) / 0.25 <= _density_at_mean(np.full(4, 0.25))
    worst, where = proof.verify()
    assert worst >= proof.R_PROVED, (worst, where)
    assert worst <= 1.2 * proof.R_PROVED


def test_acg_bound_holds_on_random_and_extreme_parameters():
    """The sampler's own acceptance on random and extreme spectra (the envelope as implemented) stays above 1.6 a_min."""
    rng = np.random.default_rng(5)
    for q in (2, 3, 5, 12):
        bound = math.exp(acg_acceptance_bound(q))
        cases = [np.exp(rng.uniform(-3, 9, size=q)) for _ in range(8)] + [np.r_[0.0, np.full(q - 1, 1e6)]]
        for lam in cases:
            lam[0] = 0.0
            env = acg_envelope(-np.diag(lam))
            y = rng.standard_normal((40000, q)) / np.sqrt(env["omega"])
            x2 = (y / np.linalg.norm(y, axis=1, keepdims=True)) ** 2
            acc = np.exp(-(x2 @ env["lam"]) + (q / 2) * np.log(x2 @ env["omega"]) - env["log_m"]).mean()
            assert acc >= bound, (q, lam)
            assert acc >= 1.6 * bound  # the margin of 2 is not eaten by the worst case


def test_fallback_guarantee_formula():
    T, p = proposal_budget(math.log(0.01), 1e-10)
    assert p <= 1e-10 and (1 - 0.01) ** (T - 1) > 1e-10
    eps, dlt = fallback_guarantee(1.0, p)
    assert dlt == p and eps == pytest.approx(1.0 - math.log1p(-p))


# ---------------------------------------------------------------------- failure events across neighbours
@pytest.mark.slow
def test_fallback_rate_stays_below_the_recorded_bound_on_adversarial_datasets():
    """Brute force: n unit curves along each base eigenvector, and each with one curve replaced; a small T so that
    fallbacks are frequent. Every observed fallback rate stays below p* = (1 − a_min)^T (4 standard errors)."""
    n, s, N = 10, 0.5, 3000
    T, p_star = proposal_budget(gp_base_acceptance_bound(SIGMA, 1, s * n), 0.3)
    rng = np.random.default_rng(6)
    rates = {}
    for j in range(5):
        for r in (None, 0, 4):
            G = _along(5, n, j, replaced=r)
            _, st = rejection_from_gp_base(G, SIGMA, 1, s, N, rng, proposals=T, return_stats=True)
            rates[j, r] = st["fallbacks"] / N
    se = math.sqrt(p_star * (1 - p_star) / N)
    assert max(rates.values()) <= p_star + 4 * se
    # neighbours' fallback rates (both below p*): the recorded delta' = p* covers their difference
    assert all(abs(rates[j, None] - rates[j, r]) <= p_star + 4 * se for j in range(5) for r in (0, 4))


def test_issue_neighbour_pair_is_refused_identically_before_the_charge():
    """The neighbouring pair once reported (n = 28, Gaussian eigenbasis rho = 1, m = 5, k = 1, eps = 1): the data-independent budget is
    ~4.4e7 proposals (pure) and ~2.8e7 for delta <= 1e-10 (was ~2e10 before the mixture term of the acceptance bound):
    one frame is served (the default cap is 5e7), two frames (8.8e7) are not, and both neighbours are refused with
    the same message, nothing is charged."""
    grid = Grid.uniform(31)
    eb = eigenbasis(Gaussian(rho=1.0), grid)
    spec = FPCASpec(grid=grid, m=5, k=1, epsilon=1.0, tau=1.0, basis=eb, form="gp-base")
    msgs = []
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-3))
    for G in (_along(5, 28, 4), _along(5, 28, 4, replaced=0)):
        with pytest.raises(InputError, match="form='bingham'") as err:
            fp.release(FPCAFit(spec=spec, gram=G, n=28), fp.ExponentialMechanism(), draws=2, ledger=ledger)
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1] and ledger.spent.epsilon == 0


# ---------------------------------------------------------------------- uncertified MCMC, NUTS
def test_gibbs_k2_is_recorded_and_charged_as_uncertified_mcmc():
    spec = FPCASpec(grid=Grid.uniform(20), m=4, k=2, epsilon=1.0, tau=1.0)
    fit = spec.fit(np.random.default_rng(7).normal(size=(8, 20)) * 0.2)
    ledger = PrivacyLedger(PrivacyBudget(5.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20), draws=2, ledger=ledger)
        with pytest.raises(InputError, match="floor"):
            fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=19), ledger=ledger)
        k1 = fp.release(FPCASpec(grid=Grid.uniform(20), m=4, k=1, epsilon=1.0, tau=1.0).fit(fit_curves()),
                        fp.ExponentialMechanism(sampler="gibbs", iterations=1), random_seed=9, study=True)
    a = tree.attrs
    assert a["certified"] == 0 and a["private"] == 0 and math.isnan(a["delta_guaranteed"])
    assert "uncertified MCMC" in a["guarantee"] and a["mechanism"].endswith("(uncertified MCMC)")
    assert "uncertified MCMC" in ledger.entries[-1][0] and ledger.spent.epsilon == pytest.approx(2.0)
    assert k1.attrs["certified"] == 1 and k1.attrs["pure"] == 1 and k1.attrs["delta_guaranteed"] == 0  # k = 1: exact


def fit_curves():
    return np.random.default_rng(10).normal(size=(8, 20)) * 0.2


def test_nuts_release_is_quiet_uncertified_and_says_how_it_starts(capfd, caplog):
    spec = FPCASpec(grid=Grid.uniform(20), m=3, k=1, epsilon=1.0, tau=1.0)
    fit = spec.fit(fit_curves())
    with pytest.raises(InputError, match="floor"):
        fp.release(fit, fp.ExponentialMechanism(sampler="nuts", iterations=99))
    with warnings.catch_warnings(), caplog.at_level(logging.INFO):
        warnings.simplefilter("ignore")
        tree = fp.release(fit, fp.ExponentialMechanism(sampler="nuts", iterations=100), random_seed=11, study=True)
    out = capfd.readouterr()
    assert "took" not in out.err + out.out + caplog.text  # PyMC's "Sampling ... took X seconds"
    a = tree.attrs
    assert a["certified"] == 0 and a["private"] == 0 and "run time depends on the data" in a["guarantee"]
    assert "L^-1" in a["initialisation"] and "depend on the data" in a["initialisation"]


# ---------------------------------------------------------------------- pure epsilon'' (fallback to the reference law)
def _issue_spec(form="gp-base"):
    grid = Grid.uniform(31)
    return FPCASpec(grid=grid, m=5, k=1, epsilon=1.0, tau=1.0, basis=eigenbasis(Gaussian(rho=1.0), grid), form=form)


def test_gp_base_bound_mixture_term_is_nearly_tight_on_the_issue_pair():
    """ACG(Sigma) = c^k U + (1 - c^k) R with acceptance >= e^{-t} on R: the bound is ~e^{-t} on the issue's design,
    where the first term alone gave 1.07e-9 (750 x below the measured worst case, curves along phi_5)."""
    spec = _issue_spec()
    t = spec.scale * 28
    bound = math.exp(gp_base_acceptance_bound(spec.Sigma, 1, t))
    assert bound >= 0.99 * math.exp(-t)
    rng = np.random.default_rng(12)
    w, U = np.linalg.eigh(spec.Sigma)
    y = rng.standard_normal((400_000, 5))
    x = y / np.linalg.norm(y, axis=1, keepdims=True)  # uniform; ACG(Sigma) by its density w.r.t. the uniform law
    dens = np.prod(w) ** -0.5 * np.einsum("bi,ij,bj->b", x, np.linalg.inv(spec.Sigma), x) ** -2.5
    for j in (0, 4):  # least and most likely base direction
        # acceptance rate for G = 28 u u^T: e^{-t} + E_ACG[h - e^{-t}], h = exp(-t (1 - (x'u)^2)), by importance
        # sampling from the uniform law (the direct Monte Carlo is dominated by rare proposals near u)
        extra = dens * (np.exp(-t * (1 - (x @ U[:, j]) ** 2)) - math.exp(-t))
        rate, se = math.exp(-t) + extra.mean(), extra.std() / math.sqrt(extra.size)
        assert rate + 4 * se >= bound
        if j == 0:
            assert rate <= 1.01 * bound  # the worst case (curves along the least likely direction): tight
    # never below the first term alone (c_Sigma^k E_U[...], what the bound was before), for k = 1, 2
    for k in (1, 2):
        first = k * 0.5 * float(np.sum(np.log(0.05 / np.diag(SIGMA)))) + gp_base_acceptance_bound(np.eye(5), k, 5.0)
        assert gp_base_acceptance_bound(SIGMA, k, 5.0) > first


def test_density_floors_hold_on_adversarial_datasets():
    """f_min <= the target's smallest density w.r.t. the fallback law (Monte Carlo normalisers): Bingham w.r.t. the
    uniform law (exp(-s(n + range Sigma^-1))), GP base w.r.t. nu (exp(-s n))."""
    rng = np.random.default_rng(13)
    m, n, s = 4, 12, 0.5
    sigma = np.diag([1.0, 0.3, 0.1, 0.02])
    e = np.eye(m)
    y = rng.standard_normal((200_000, m))
    x = y / np.linalg.norm(y, axis=1, keepdims=True)                       # uniform on the sphere
    z = y @ np.linalg.cholesky(sigma).T
    q = z / np.linalg.norm(z, axis=1, keepdims=True)                       # the base law nu (k = 1)
    log_fb, log_fg = bingham_log_density_floor(sigma, s, n), base_log_density_floor(s, n)
    for j in range(m):
        for G in (n * np.outer(e[j], e[j]), _along(m, n, j, replaced=(j + 1) % m), np.eye(m) * n / m):
            A = s * (G - np.linalg.inv(sigma))
            lam = np.linalg.eigvalsh(A)
            log_min_b = lam[0] - np.log(np.mean(np.exp(np.einsum("bi,ij,bj->b", x, A, x))))
            assert log_min_b >= log_fb
            log_min_g = s * np.linalg.eigvalsh(G)[0] - np.log(np.mean(np.exp(s * np.einsum("bi,ij,bj->b", q, G, q))))
            assert log_min_g >= log_fg
    # and they are not vacuous: within s * (n + range) of the worst case (all curves along the least-penalised axis)
    assert log_fb > -s * (n + 50 + 1) and log_fg == -s * n


def test_pure_guarantee_holds_exactly_on_the_circle():
    """Exact output densities on S^1 (GP base, m = 2, k = 1): g_D = (1 - p_D) f_D + p_D w.r.t. the fallback law nu,
    with the exact acceptance a_D and p_D = (1 - a_D)^T, for every replace-one pair of n = 20 curves along the axes.
    The worst log ratio stays below eps'' = log((e^eps + p*/f_min)/(1 - p*)) for every T, while at a small T it
    exceeds eps itself: the fallback's effect is real and eps'' covers it."""
    sig = np.diag([1.0, 0.01])
    si = np.linalg.inv(sig)
    th = np.linspace(0, 2 * np.pi, 40_001)[:-1]
    X = np.stack([np.cos(th), np.sin(th)], 1)
    nu = np.sqrt(np.linalg.det(si)) / np.einsum("ti,ij,tj->t", X, si, X)  # ACG density w.r.t. the uniform law
    eps, n = 1.0, 20
    s = eps / 2
    log_a, log_f = gp_base_acceptance_bound(sig, 1, s * n), base_log_density_floor(s, n)

    def law(G, T):
        u = np.einsum("ti,ij,tj->t", X, G, X)
        a = np.mean(nu * np.exp(s * (u - np.linalg.eigvalsh(G)[-1])))
        f = np.exp(s * u) / np.mean(nu * np.exp(s * u))
        assert a >= math.exp(log_a) and f.min() >= math.exp(log_f)
        p = (1 - a) ** T
        return (1 - p) * f + p

    dirs = [np.array([math.cos(a), math.sin(a)]) for a in np.linspace(0, np.pi, 7)]
    worst_small_T = 0.0
    for T in (30, pure_proposal_budget(log_a, log_f, 1e-3)[0]):
        log_p = T * math.log1p(-math.exp(log_a))
        bound = pure_guarantee(eps, log_p, log_f)
        for d0 in dirs:  # n curves along d0, and one of them replaced by d1
            G0 = n * np.outer(d0, d0)
            for d1 in dirs:
                G1 = G0 - np.outer(d0, d0) + np.outer(d1, d1)
                r = float(np.max(np.abs(np.log(law(G0, T) / law(G1, T)))))
                assert r <= bound, (T, r, bound)
                if T == 30:
                    worst_small_T = max(worst_small_T, r)
    assert worst_small_T > eps  # the plain eps would be wrong at T = 30
    assert pure_guarantee(eps, pure_proposal_budget(log_a, log_f, 1e-3)[1], log_f) <= eps + 1e-3


def test_pure_formula_and_budget():
    T, log_p = pure_proposal_budget(math.log(0.2), -50.0, 1e-10)
    assert log_p <= math.log(1e-10) - 50 and (T - 1) * math.log(0.8) > math.log(1e-10) - 50
    e2 = pure_guarantee(1.0, log_p, -50.0)
    assert 1.0 < e2 <= 1.0 + math.log1p(1e-10 * math.exp(-1.0)) - math.log1p(-math.exp(log_p)) + 1e-15
    assert pure_guarantee(1.0, -math.inf, -50.0) == 1.0


def test_fallback_law_is_the_reference_measure():
    """With no acceptance possible the samplers return their fallback: uniform (Bingham), nu (GP base)."""
    rng = np.random.default_rng(14)
    A = np.diag([0.0, -1e4, -1e4, -1e4])  # ACG acceptance ~0 with one proposal ... keep only fallbacks
    x, st = sample_vector_bingham(A, 20_000, rng, proposals=1, return_stats=True)
    fb = st["fallbacks"]
    assert fb > 0
    G = 10 * np.diag([0.0, 0.0, 0.0, 0.0, 1.0])
    out, st = rejection_from_gp_base(G, SIGMA, 1, 50.0, 20_000, rng, proposals=1, return_stats=True)
    assert st["fallbacks"] > 19_000
    # nu's second moments: E[x x^T] of z/|z|, z ~ N(0, SIGMA), against the (almost all fallback) output
    z = rng.standard_normal((200_000, 5)) @ np.sqrt(SIGMA)
    ref = np.mean((z / np.linalg.norm(z, axis=1, keepdims=True)) ** 2, axis=0)
    got = np.mean(out[:, :, 0] ** 2, axis=0)
    assert np.allclose(got, ref, atol=0.02)


def test_bingham_fallback_is_an_exact_draw_of_the_base_law():
    """proposals=0: every draw is the fallback. With ``fallback=A0`` it is the vector Bingham exp(x'A0 x) (the same law
    as the run-until-accepted sampler of A0, whatever the rotation of the target A); without it, the uniform law."""
    rng = np.random.default_rng(21)
    q = rng.standard_normal((4, 4))
    A = 30.0 * (q + q.T)                                   # target: not aligned with A0's axes
    A0 = -np.diag([0.5, 2.0, 8.0, 30.0])                   # -s Sigma^-1
    got = sample_vector_bingham(A, 20_000, rng, proposals=0, fallback=A0)
    ref = sample_vector_bingham(A0, 20_000, np.random.default_rng(22))
    assert np.allclose(np.mean(got ** 2, axis=0), np.mean(ref ** 2, axis=0), atol=0.015)  # sd of a mean <= 0.0035
    assert np.allclose(np.mean(got[:, :2] * got[:, 1:3], axis=0), 0.0, atol=0.015)         # the axes are A0's
    uni = sample_vector_bingham(A, 20_000, rng, proposals=0)
    assert np.allclose(np.mean(uni ** 2, axis=0), 0.25, atol=0.015)
    assert abs(np.mean(got[:, 0] ** 2) - 0.25) > 0.1      # and the two fallbacks differ


def test_base_law_floor_holds_and_the_pure_release_is_exact_on_the_circle():
    """Bingham form, m = 2, Sigma = diag(1, 1e-3) (range of Sigma^-1: 999): the target's density w.r.t. its base law
    exp(-s x'Sigma^-1 x) is >= exp(-s n) for every data set of n = 20 curves (and that floor is nearly reached), the
    ACG acceptance is >= a_min, and the exact output law (1 - p_D) pi_D + p_D F of every replace-one pair is within
    eps'' of its neighbour's at the pure budget, which is 1/8 of the budget the uniform fallback needs."""
    th = np.linspace(0, 2 * np.pi, 40_001)[:-1]
    X = np.stack([np.cos(th), np.sin(th)], 1)
    si = np.diag([1.0, 1e3])
    eps, n = 1.0, 20
    s = eps / 2
    log_a, log_f = acg_acceptance_bound(2), base_log_density_floor(s, n)
    quad = lambda M: np.einsum("ti,ij,tj->t", X, M, X)  # noqa: E731
    base = np.exp(quad(-s * si))
    base /= base.mean()                                  # the base law's density w.r.t. the uniform law
    T = pure_proposal_budget(log_a, log_f, 1e-3)[0]
    assert T * 8 < pure_proposal_budget(log_a, bingham_log_density_floor(np.linalg.inv(si), s, n), 1e-3)[0]
    lowest = []

    def law(G):
        A = s * (G - si)
        env = acg_envelope(A)
        a = math.sqrt(np.prod(env["omega"])) * np.mean(np.exp(-((X @ env["U"]) ** 2) @ env["lam"])) / math.exp(env["log_m"])
        assert a >= math.exp(log_a)
        f = np.exp(quad(A) - quad(A).max())
        f /= f.mean()
        lowest.append(float(np.log(f / base).min()))
        assert lowest[-1] >= log_f
        p = (1 - a) ** T
        return (1 - p) * f + p * base

    bound = pure_guarantee(eps, T * math.log1p(-math.exp(log_a)), log_f)
    dirs = [np.array([math.cos(a), math.sin(a)]) for a in np.linspace(0, np.pi, 7)]
    worst = 0.0
    for d0 in dirs:
        G0 = n * np.outer(d0, d0)
        for d1 in dirs:
            worst = max(worst, float(np.max(np.abs(np.log(law(G0) / law(G0 - np.outer(d0, d0) + np.outer(d1, d1)))))))
    assert worst <= bound <= eps + 1e-3
    assert min(lowest) <= log_f + 1.0                    # the floor is nearly reached (curves along the base's mode)


def test_pure_release_is_the_default_and_fits_a_pure_ledger():
    """Old code: every exact release charged delta' > 0 and a pure ledger (delta = 0) refused it."""
    spec = FPCASpec(grid=Grid.uniform(20), m=4, k=1, epsilon=0.5, tau=1.0)
    fit = spec.fit(fit_curves())
    ledger = PrivacyLedger(PrivacyBudget(3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(fit, fp.ExponentialMechanism(), draws=2, ledger=ledger)
        with pytest.raises(Exception, match="delta"):
            fp.release(fit, fp.ExponentialMechanism(delta=1e-10), ledger=ledger)  # the (eps', delta') variant needs a delta
    a = tree.attrs
    assert a["pure"] == 1 and a["delta_guaranteed"] == 0 and a["budget_spent_delta"] == 0
    assert 0.5 < a["epsilon_guaranteed"] <= 0.5 + 1e-9 and ledger.spent.delta == 0
    assert ledger.spent.epsilon == pytest.approx(2 * a["epsilon_guaranteed"], rel=1e-12)
    plan = exact_plan(spec, 8, "exact")
    assert a["proposal_budget"] == plan["proposals"] and plan["log_p_star"] <= math.log(1e-10) + plan["log_f_min"]
    assert "pure" in a["guarantee"] and "f_min" in a["guarantee"]


def test_growth_sized_gp_base_is_served_pure_and_a_larger_n_names_the_delta_variant():
    # growth-sized GP base (n = 93, m = 5, k = 1, eps = 1): pure needs ~2.7e7 proposals, within the default cap
    grid = Grid.uniform(31)
    spec = FPCASpec(grid=grid, m=5, k=1, epsilon=1.0, tau=1.0, basis=eigenbasis(Gaussian(rho=0.1), grid),
                    form="gp-base")
    growth = fp.plan(spec, fp.ExponentialMechanism(), n=93)
    assert growth.cost.delta == 0 and 2e7 < growth.state[2]["work"] <= DEFAULT_MAX_PROPOSALS
    # n = 120: pure needs ~5.4e7 proposals, (eps', delta') ~1.5e7: the error names delta=
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-3))
    fit = FPCAFit(spec=spec, gram=_along(5, 120, 4), n=120)
    with pytest.raises(InputError, match="delta=1e-10") as err:
        fp.release(fit, fp.ExponentialMechanism(), ledger=ledger)
    assert "\n" not in str(err.value) and ledger.spent.epsilon == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(fit, fp.ExponentialMechanism(delta=1e-10), ledger=ledger)
    assert tree.attrs["pure"] == 0 and 0 < tree.attrs["delta_guaranteed"] <= 1e-10
    # k = 2: neither can be served
    spec2 = FPCASpec(grid=grid, m=5, k=2, epsilon=1.0, tau=1.0, basis=spec.basis, form="gp-base")
    with pytest.raises(InputError, match="neither") as err:
        fp.release(FPCAFit(spec=spec2, gram=_along(5, 120, 4), n=120), fp.ExponentialMechanism(), ledger=ledger)
    assert "form='bingham' with k = 1" in str(err.value)
