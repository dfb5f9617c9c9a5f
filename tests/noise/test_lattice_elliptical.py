"""The exact, floating-point-safe, pure ε-DP K-norm release on a public lattice (:mod:`fdp_ppl.noise.lattice`).

(1) the sampler's law is exactly ``P_h(z) ∝ exp(−h‖z‖)`` (chi-square against the enumerated pmf of a coarse lattice,
    with the discrete Laplace tail exercised); (2) the Bernoulli factory is exact and never decides from a float;
(3) privacy by enumeration (pmf ratios of neighbouring centres within ``exp(ε')``, attained, and exceeded at a σ
    √2 too small; released values on the public lattice); (4) the release path (``generator="lattice"``).

The Gaussian proposals are OpenDP's, which cannot be seeded, so the goodness-of-fit tests are unseeded: each
rejects a correct sampler with probability exactly α = 1e-4 (a chi-square p-value is uniform under the null; the
chi-square approximation holds with every cell's expected count >= 5), so 1 run in 10,000 fails by chance. Their
power is checked on the same draws against a law 10% off in h. The Bernoulli and discrete Laplace tests use a
seeded bit source (the factory takes one) and are deterministic.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.errors import CompatibilityError, InputError
from fdp_ppl.noise.lattice import (LATTICE_BITS, KNormLattice, LatticeSampler, TLattice, bernoulli,
                                   discrete_gaussian, discrete_laplace, interval_bounds, knorm_epsilon, lattice_index,
                                   t_epsilon)
from fdp_ppl.releasing import schema as S

ALPHA = 1e-4
H = 0.5  # coarse lattice: the pmf is enumerable


def _box(M: int, J: int = 2) -> np.ndarray:
    g = np.arange(-M, M + 1)
    return np.stack(np.meshgrid(*([g] * J), indexing="ij"), axis=-1).reshape(-1, J)


def _outside_bound(h: float, M: int) -> float:
    """Σ over ``‖z‖_∞ > M`` of ``exp(−h‖z‖₂)`` in ℤ²: ``8k`` points at ``‖z‖_∞ = k`` and ``‖z‖₂ >= k``."""
    k = np.arange(M + 1, 100 * M)
    return float(np.sum(8 * k * np.exp(-h * k))) + 1e-300


def _chi2_cells(draws: np.ndarray, h: float, M: int = 90, log_pmf=None, outside=None):
    """Observed and expected counts under ``P_h`` (J = 2; the K-norm's, or ``log_pmf(pts)`` with ``outside`` the
    mass beyond the box relative to the box's): lattice points with expected count >= 5 are cells of their own, the
    rest are grouped by ‖z‖² in runs of expected count >= 5, the box's outside in the last run."""
    pts = _box(M)
    if log_pmf is None:
        logw = -h * np.sqrt(np.sum(pts.astype(float) ** 2, axis=1))
        w = np.exp(logw)
        out = _outside_bound(h, M)
        assert out / w.sum() < 1e-12  # the enumerated box holds all but a negligible mass
        outside = 0.0
    else:
        w = np.exp(log_pmf(pts))
    p = w / (w.sum() * (1.0 + outside))
    n = len(draws)
    big = n * p >= 5
    draws = np.asarray(draws, dtype=np.int64)
    inside = np.all(np.abs(draws) <= M, axis=1)  # _box's row-major order: index (z0 + M)(2M + 1) + z1 + M
    idx = np.where(inside, (draws[:, 0] + M) * (2 * M + 1) + draws[:, 1] + M, -1)
    if log_pmf is None:
        assert np.all(idx >= 0) or np.mean(idx < 0) < 1e-3
    counts = np.bincount(idx[idx >= 0], minlength=len(pts)).astype(float)
    obs, exp = list(counts[big]), list(n * p[big])
    small = np.flatnonzero(~big)
    order = small[np.argsort(np.sum(pts[small] ** 2, axis=1), kind="stable")]
    run_o, run_e = 0.0, 0.0
    for j in order:
        run_o += counts[j]
        run_e += n * p[j]
        if run_e >= 5:
            obs.append(run_o)
            exp.append(run_e)
            run_o = run_e = 0.0
    obs[-1] += run_o + np.sum(idx < 0)
    exp[-1] += run_e + n * (1.0 - p.sum())
    return np.array(obs), np.array(exp)


def _gof(draws, h, **kw):
    obs, exp = _chi2_cells(draws, h, **kw)
    exp *= obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


@pytest.fixture(scope="module")
def coarse():
    """J = 2, h = 0.5, the tail starting where its cost is half the target's: all three components drawn often."""
    d = KNormLattice(2, step=H, tail_bits=1)
    assert d.verify() and len(d.weights) >= 3
    return d


# ====================================================================================== (1) the exact law
def _check_law(design, n, off):
    counts = []
    draws = np.array(design.sample(n, counts=counts), dtype=np.int64)
    assert draws.shape == (n, 2)
    p_true = _gof(draws, H)
    assert p_true > ALPHA, p_true
    assert _gof(draws, off * H) < ALPHA  # the same draws reject a law off in h by the factor off: power
    # the components actually used: some draws from the tail bin, some from each Gaussian bin
    sq = np.sum(draws**2, axis=1)
    used = {design.component(int(v)) for v in sq}
    assert used == set(range(len(design.weights)))
    # the number of rounds is geometric with mean 1/acceptance (within 5 sd)
    k = np.array(counts)
    assert abs(k.mean() * design.acceptance - 1.0) < 5 * math.sqrt((1 - design.acceptance)) / math.sqrt(n) * 1.2
    return p_true


def test_lattice_knorm_law_is_exact(coarse):
    """1200 draws (about 1.2 s): chi-square against the enumerated pmf of P_h, J = 2, h = 0.5; power against a
    law 30% off in h."""
    _check_law(coarse, 1200, 1.3)


@pytest.mark.slow
def test_lattice_knorm_law_is_exact_many_draws(coarse):
    """30,000 draws (about 30 s): the same test, with power against a law 5% off in h."""
    _check_law(coarse, 30000, 1.05)


def test_discrete_laplace_law_seeded():
    """The tail's exact discrete Laplace (β = 3 and β = 5), 6000 seeded draws each, against its pmf."""
    for beta, seed in ((3, 1), (5, 2)):
        rb = random.Random(seed).getrandbits
        z = np.array([discrete_laplace(beta, rb) for _ in range(6000)])
        vals = np.arange(-40, 41)
        p = np.exp(-np.abs(vals) / beta)
        p /= p.sum()
        obs = np.array([np.sum(z == v) for v in vals], dtype=float)
        keep = 6000 * p >= 5
        o = np.r_[obs[keep], obs[~keep].sum() + np.sum(np.abs(z) > 40)]
        e = np.r_[6000 * p[keep], 6000 * p[~keep].sum()]
        assert stats.chisquare(o, e * o.sum() / e.sum()).pvalue > ALPHA
        assert np.sum(z == 0) > 0 and np.all(np.abs(z) < 200)


# ====================================================================================== (2) the Bernoulli factory
def _fixed_bits(u: int, nbits: int):
    """A bit source that reveals the binary expansion ``U = u 2^-nbits`` (64 bits a call), then zeros."""
    state = {"left": nbits}

    def randbits(k):
        take = min(k, state["left"])
        state["left"] -= take
        chunk = (u >> state["left"]) & ((1 << take) - 1) if take else 0
        return chunk << (k - take)

    return randbits


@pytest.mark.parametrize("kind", ["rational", "irrational", "small"])
def test_bernoulli_frequencies(kind):
    """Seeded bits, 8000 draws: the frequency is within 4.5 binomial sd of p."""
    if kind == "rational":
        p, bounds = 1 / 3, (lambda prec: (Fraction(1, 3), Fraction(1, 3)))
    elif kind == "irrational":
        p, bounds = math.exp(-1) / math.pi, interval_bounds(lambda iv: iv.exp(-1) / iv.pi)
    else:
        p, bounds = math.exp(-6), interval_bounds(lambda iv: iv.exp(-6))
    rb = random.Random(7).getrandbits
    n = 8000
    k = sum(bernoulli(bounds, rb) for _ in range(n))
    assert abs(k - n * p) < 4.5 * math.sqrt(n * p * (1 - p)), (k, n * p)


@pytest.mark.parametrize("x", [40, 700, 5000])
def test_bernoulli_decides_by_the_exact_p_not_its_float(x):
    """p = e^-x (4e-18, 1e-304 and 0 as a float): a uniform U within 2^-(bits) of p, on the side where float(p)
    would give the other answer, is decided by the exact p; U just below p gives True, just above False."""
    from mpmath import mp

    nbits = 64 * (x // 40 + 3)
    with mp.workprec(nbits + 64):
        pv = mp.exp(-x)
        below = int(mp.floor(pv * 2**nbits))  # U = below 2^-nbits < p
    bounds = interval_bounds(lambda iv: iv.exp(-iv.mpf(x)))
    assert bernoulli(bounds, _fixed_bits(below, nbits)) is True
    assert bernoulli(bounds, _fixed_bits(below + 1, nbits)) is False
    pf = Fraction(math.exp(-x))  # the float's exact value
    u_lo, u_hi = Fraction(below, 2**nbits), Fraction(below + 1, 2**nbits)
    assert (pf <= u_lo) or (pf >= u_hi)  # one of the two U's is on the float's wrong side


def test_bernoulli_refuses_float_bounds():
    with pytest.raises(TypeError, match="exact rational"):
        bernoulli(lambda prec: (0.25, 0.25))


# ====================================================================================== (3) privacy by enumeration
def _max_log_ratio(u, u2, h, M=60):
    """``max_k log P(K=k | u) − log P(K=k | u')`` over a box of lattice points around both centres (J = 2): the
    release's pmf is ``P_h(k − k̂)``, ``k̂`` from the sampler's own rounding, ``P_h`` its (tested) law."""
    one = np.ones(2)
    k1, k2 = np.array(lattice_index(u, one, h)), np.array(lattice_index(u2, one, h))
    ks = _box(M) + k1
    l1 = -h * np.linalg.norm(ks - k1, axis=1)
    l2 = -h * np.linalg.norm(ks - k2, axis=1)
    return float(np.max(l1 - l2))


def test_pmf_ratios_of_neighbours_within_epsilon_prime():
    """Whitened neighbours at distance a = 0.7 (random and adversarial rounding): every pmf ratio <= exp(ε'),
    ε' = a + h√J (Theorem 1); the sup is above a (the rounding's cost is real); at a √2 larger distance (σ √2 too
    small) the ratio exceeds ε'."""
    rng = np.random.default_rng(11)
    a = 0.7
    eps = knorm_epsilon(a, 2, H)
    worst = 0.0
    pairs = []
    for _ in range(200):
        u = rng.uniform(-3, 3, 2)
        d = rng.standard_normal(2)
        pairs.append((u, u + a * d / np.linalg.norm(d)))
    # adversarial: the two centres round in opposite directions on both coordinates
    d = np.array([1.0, 1.0]) / math.sqrt(2)
    u = np.array([0.5 * H - 1e-9, 0.5 * H - 1e-9]) - 0.0
    for t in np.linspace(0, 1, 21):
        base = u - t * a * d
        pairs.append((base, base + a * d))
    for u1, u2 in pairs:
        r = _max_log_ratio(u1, u2, H)
        assert r <= eps + 1e-12, (u1, u2, r, eps)
        worst = max(worst, r)
    assert worst > a + 0.1  # the rounding costs up to h√J = 0.71 on top of a
    bigger = max(_max_log_ratio(u1, u1 + math.sqrt(2) * (u2 - u1), H) for u1, u2 in pairs)
    assert bigger > eps


def test_released_values_lie_on_the_public_lattice():
    """A release is ``scale_j h K_j`` with integer K: the centre is rounded to the lattice (unrounded, the index
    would carry the centre's fractional part, a different support for a neighbour)."""
    J = 5
    law = fp.laws.Elliptical("knorm")
    sampler = LatticeSampler(law, J)
    rng = np.random.default_rng(5)
    centre, scale = rng.normal(0, 3, J), rng.uniform(0.5, 2, J)
    x = sampler.draw(centre, scale, 4)
    t = x / scale / 2.0**-LATTICE_BITS
    assert np.max(np.abs(t - np.rint(t))) < 2.0**-8
    # the rounding is exact on the given floats: ties to even, error <= h/2
    k = lattice_index(centre, scale, 2.0**-LATTICE_BITS)
    assert all(abs(Fraction(c) / Fraction(s) - kk * Fraction(2.0**-LATTICE_BITS)) <= Fraction(2.0**-LATTICE_BITS) / 2
               for c, s, kk in zip(centre, scale, k))
    with pytest.raises(InputError, match="cannot be seeded"):
        sampler.draw(centre, scale, 1, random_seed=1, study=True)


@pytest.mark.parametrize("J", [10, 30, 100])
def test_generator_design_is_proved_and_efficient(J):
    """The generator's lattice (h = 2^-32): every acceptance probability proved <= 1, acceptance >= 0.4."""
    d = KNormLattice(J)
    assert d.verify() and d.acceptance > 0.4


# ====================================================================================== (4) the release path
@pytest.fixture(scope="module")
def knorm_summary():
    g = fp.Grid.uniform(30)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), g)
    x = 0.3 * np.random.default_rng(3).standard_normal((120, 30)) + np.sin(2 * np.pi * g.t)
    return fp.rkhs_mean(x, basis, tau=2.0)


def test_knorm_release_with_the_lattice_generator_is_pure_and_safe(knorm_summary):
    from fdp_ppl.noise.elliptical import EllipticalMechanism

    s = knorm_summary
    J = s.n_components
    mech = EllipticalMechanism(1.0, family="knorm")
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(5.0))  # a pure ledger accepts it
    tree = fp.release(s, mech, draws=3, ledger=ledger, generator="lattice")
    a = tree.attrs
    assert (a["noise_generator"], a["fp_safe"], a["noise_seeded"]) == ("lattice", 1, 0)
    assert a["delta_guaranteed"] == 0.0 and a["epsilon_guaranteed"] <= mech.epsilon
    assert a["epsilon_guaranteed"] > mech.epsilon - 1e-9
    assert ledger.spent.epsilon == pytest.approx(3.0) and ledger.spent.delta == 0.0
    base = mech.calibrate(s.spec)
    cost = 2.0**-LATTICE_BITS * math.sqrt(J)
    assert base.sigma < a["noise_multiplier"] <= base.sigma * (1 + 2 * cost / mech.epsilon)
    assert a["noise_sigma_source"] == "lattice" and "h sqrt(J)" in a["privacy_guarantee"]
    # the released coefficients are on the public lattice of the recorded scales
    scale = tree[S.CONSTANT_DATA][S.NOISE_SCALE].values
    y = tree[S.POSTERIOR][S.COEFFICIENTS].values[0]
    t = y / scale / 2.0**-LATTICE_BITS
    assert np.max(np.abs(t - np.rint(t))) < 2.0**-8
    # the default of an unseeded pure K-norm release; seeded studies keep the float sampler; the lattice cannot
    # be seeded; the Laplace process and Gaussian laws have no lattice sampler
    plan = fp.plan(s, mech)
    assert (plan.generator, plan.fp_safe) == ("lattice", True)
    assert plan.attrs["epsilon_guaranteed"] <= mech.epsilon and plan.cost.delta == 0.0
    seeded = fp.release(s, mech, random_seed=1, study=True).attrs
    assert (seeded["noise_generator"], seeded["fp_safe"]) == ("pymc", 0)
    with pytest.raises(InputError, match="cannot be seeded"):
        fp.release(s, mech, random_seed=1, study=True, generator="lattice")
    for kind in ("laplace", "gaussian"):
        with pytest.raises(CompatibilityError):
            LatticeSampler(fp.laws.Elliptical(kind), J)


def test_acceptance_probability_matches_its_definition_and_is_at_most_one(coarse):
    """On every lattice point of a box (J = 2, h = 0.5), the interval log p_i(z) the sampler decides with equals
    ``log κ − h‖z‖ − log w_i − log q_i(z)`` with the proposal pmf normalised by direct summation (not by the
    Poisson bound the sampler uses), and is <= 0; the bound is nearly attained in every component (κ is tight)."""
    from mpmath import iv

    d = coarse
    J, h = d.n_components, d.step
    n = np.arange(-400, 401)
    top = np.full(len(d.weights), -np.inf)
    for z in _box(25):
        z = tuple(int(v) for v in z)
        N, s1 = sum(v * v for v in z), sum(abs(v) for v in z)
        i = d.component(N)
        old = iv.prec
        iv.prec = 80
        try:
            lp = d.log_accept(i, z)(iv)
        finally:
            iv.prec = old
        mid = 0.5 * (float(lp.a) + float(lp.b))
        if i < len(d.scales):
            s = d.scales[i]
            log_q = -N / (2 * s * s) - J * math.log(np.sum(np.exp(-(n**2) / (2 * s * s))))
        else:
            log_q = -s1 / d.beta - J * math.log(np.sum(np.exp(-np.abs(n) / d.beta)))
        want = d.log_kappa - h * math.sqrt(N) - math.log(d.weights[i] / 2**64) - log_q
        assert abs(mid - want) < 1e-9, (z, i, mid, want)
        assert float(lp.b) <= 0.0
        top[i] = max(top[i], mid)
    assert np.all(top > -1.0), top  # every component's acceptance comes close to 1 somewhere in its bin


# ====================================================================================== (5) the multivariate t
NU = 2.0  # J = 2: P(r > R) = (1 + R²/ν)^{-ν/2}, so a box of half-width 200 (R = 100) misses 2e-4 of the mass
M_T = 200


def _t_log_pmf(h, nu):
    return lambda pts: -(nu + 2) / 2 * np.log1p(h * h * np.sum(pts.astype(float) ** 2, axis=1) / nu)


def _t_outside(h, nu, M=M_T):
    """Mass beyond the box relative to the box's: the continuous law's ``P(r > h(M + 1/2))`` (the square holds the
    disc; the lattice sum and the integral differ by O(M^-2) of this, 1e-8 here)."""
    out = (1.0 + (h * (M + 0.5)) ** 2 / nu) ** (-nu / 2)
    return out / (1.0 - out)


def _t_gof(draws, h, nu):
    return _gof(draws, h, M=M_T, log_pmf=_t_log_pmf(h, nu), outside=_t_outside(h, nu))


@pytest.fixture(scope="module")
def coarse_t():
    """J = 2, ν = 2, h = 0.5, the tail shells from radius 4 (about 11% of the draws come from them)."""
    d = TLattice(2, NU, step=H, tail_start=4.0)
    assert d.verify() and len(d.weights) >= 4
    return d


def _t_exact_acceptance(d):
    """``κ Z_h`` with ``Z_h`` enumerated on the box plus its outside (the mean number of rounds is its inverse)."""
    w = np.exp(_t_log_pmf(d.step, d.nu)(_box(M_T)))
    return math.exp(d.log_kappa) * w.sum() * (1.0 + _t_outside(d.step, d.nu))


def _check_t_law(d, n, off):
    counts = []
    draws = np.array(d.sample(n, counts=counts), dtype=np.int64)
    assert draws.shape == (n, 2)
    p_true = _t_gof(draws, H, NU)
    assert p_true > ALPHA, p_true
    mean = n * _t_outside(H, NU)  # the box misses a mass: as many draws beyond it as a Poisson count allows
    assert np.sum(np.any(np.abs(draws) > M_T, axis=1)) <= mean + 5 * math.sqrt(mean) + 3
    assert _t_gof(draws, off * H, NU) < ALPHA  # power: a step off by the factor off
    assert _t_gof(draws, H, 2.0 * NU) < ALPHA  # power: twice the degrees of freedom
    sq = np.sum(draws**2, axis=1)
    tail = np.mean(sq >= d.edges[-1])
    assert tail > 0.03  # the tail shells are drawn (P = 0.11)
    acc = _t_exact_acceptance(d)
    k = np.array(counts)
    assert abs(k.mean() * acc - 1.0) < 5 * math.sqrt(1 - acc) / math.sqrt(n) * 1.2, (k.mean(), 1 / acc)


def test_lattice_t_law_is_exact(coarse_t):
    """1000 draws (about 1.5 s): chi-square against the enumerated pmf of the lattice t (J = 2, ν = 2, h = 0.5);
    power against a step 30% off and against ν doubled; the mean number of rounds is 1/(κ Z_h)."""
    _check_t_law(coarse_t, 1000, 1.3)


@pytest.mark.slow
def test_lattice_t_law_is_exact_many_draws(coarse_t):
    """20,000 draws (about 20 s): the same test, with power against a step 10% off (5% off is not rejected at
    α = 1e-4 by 20,000 draws: p = 0.006 in one run)."""
    _check_t_law(coarse_t, 20000, 1.1)


def test_discrete_gaussian_law_seeded():
    """The far shells' exact discrete Gaussian (σ = 1 and σ = 2.5), 3000 seeded draws each, against its pmf."""
    for sigma, seed in ((1.0, 3), (2.5, 4)):
        rb = random.Random(seed).getrandbits
        z = np.array([discrete_gaussian(sigma, rb) for _ in range(3000)])
        vals = np.arange(-20, 21)
        p = np.exp(-(vals**2) / (2 * sigma**2))
        p /= p.sum()
        obs = np.array([np.sum(z == v) for v in vals], dtype=float)
        keep = 3000 * p >= 5
        o = np.r_[obs[keep], obs[~keep].sum()]
        e = np.r_[3000 * p[keep], 3000 * p[~keep].sum()]
        assert stats.chisquare(o, e * o.sum() / e.sum()).pvalue > ALPHA
        assert np.all(np.abs(z) <= 20)
        # power: the same draws reject a σ 20% off
        q = np.exp(-(vals**2) / (2 * (1.2 * sigma) ** 2))
        q /= q.sum()
        e2 = np.r_[3000 * q[keep], 3000 * q[~keep].sum()]
        assert stats.chisquare(o, e2 * o.sum() / e2.sum()).pvalue < ALPHA


def test_t_acceptance_probability_matches_its_definition_and_is_at_most_one(coarse_t):
    """On every lattice point of a box (J = 2, ν = 2, h = 0.5), Gaussian bins and tail shells, the interval
    log p(z) the sampler decides with equals ``log κ + log g(z) − log(mixture weight of z's proposal) − log q(z)``,
    the proposal pmf normalised by direct summation, and is <= 0; κ is tight (some p is near 1)."""
    from fractions import Fraction as F

    from mpmath import iv

    d = coarse_t
    J, h, nu = 2, d.step, d.nu
    n = np.arange(-4000, 4001)
    rho = float(d.ratio) ** (-nu)
    best = -np.inf
    seen_tail = set()
    for z in _box(40)[::7]:
        z = tuple(int(v) for v in z)
        N = sum(v * v for v in z)
        i = d.component(N)
        log_g = -(nu + J) / 2 * math.log1p(h * h * N / nu)
        old = iv.prec
        iv.prec = 80
        try:
            if i < len(d.scales):
                s, mix = d.scales[i], math.log(d.weights[i] / 2**64)
                lp = d.log_accept(i, z)(iv)
            else:
                L = 0
                while N >= d.edges[-1] * d.ratio ** (2 * L + 2):
                    L += 1
                assert F(d.edges[-1]) * d.ratio ** (2 * L) <= N
                seen_tail.add(L)
                s = d.shell_sigma(L)
                mix = math.log(d.weights[-1] / 2**64) + math.log1p(-rho) + L * math.log(rho)
                lp = d.log_accept_tail(L, s, N)(iv)
        finally:
            iv.prec = old
        log_q = -N / (2 * s * s) - J * math.log(np.sum(np.exp(-(n**2) / (2 * s * s))))
        want = d.log_kappa + log_g - mix - log_q
        mid = 0.5 * (float(lp.a) + float(lp.b))
        assert abs(mid - want) < 1e-9, (z, i, mid, want)
        assert float(lp.b) <= 0.0
        best = max(best, mid)
    assert len(seen_tail) >= 3 and best > -0.5, (seen_tail, best)


def _t_max_log_ratio(u, u2, h, nu, M=60):
    """``max_k log P(K=k | u) − log P(K=k | u')`` over a box around both centres (J = 2, the sampler's rounding)."""
    one = np.ones(2)
    k1, k2 = np.array(lattice_index(u, one, h)), np.array(lattice_index(u2, one, h))
    ks = _box(M) + k1
    lg = _t_log_pmf(h, nu)
    return float(np.max(lg(ks - k1) - lg(ks - k2)))


def test_t_pmf_ratios_of_neighbours_within_epsilon_prime():
    """Whitened neighbours at distance a = 1.5 (random and adversarial rounding): every pmf ratio of the lattice t
    <= exp(ε'), ε' = (ν + J) asinh((a + h√J)/(2√ν)) (Theorem 3); the sup exceeds the continuous ε_t(a) (the
    rounding's cost is real); at a √2 larger distance (σ √2 too small) the ratio exceeds ε'."""
    from fdp_ppl.noise.elliptical.families import MultivariateT

    rng = np.random.default_rng(12)
    a, nu = 1.5, 3.0
    eps = t_epsilon(a, 2, nu, H)
    pairs = []
    for _ in range(150):
        u = rng.uniform(-3, 3, 2)
        d = rng.standard_normal(2)
        pairs.append((u, u + a * d / np.linalg.norm(d)))
    d = np.array([1.0, 1.0]) / math.sqrt(2)
    u = np.array([0.5 * H - 1e-9, 0.5 * H - 1e-9])
    for t in np.linspace(0, 1, 21):
        base = u - t * a * d
        pairs.append((base, base + a * d))
    worst = max(_t_max_log_ratio(u1, u2, H, nu) for u1, u2 in pairs)
    assert worst <= eps + 1e-12, (worst, eps)
    assert worst > MultivariateT(2, nu).epsilon_closed_form(a) + 0.1
    bigger = max(_t_max_log_ratio(u1, u1 + math.sqrt(2) * (u2 - u1), H, nu) for u1, u2 in pairs)
    assert bigger > eps


@pytest.mark.parametrize("J", [10, 30, 100])
def test_t_generator_design_is_proved_and_efficient(J):
    """The generator's lattice t (h = 2^-32, ν = 5 and ν = 1): every acceptance probability proved <= 1,
    acceptance >= 0.4."""
    for nu in (5.0, 1.0):
        d = TLattice(J, nu)
        assert d.verify() and d.acceptance > 0.4, d


def test_t_release_with_the_lattice_generator_is_pure_and_safe(knorm_summary):
    """The default of an unseeded pure t release: "lattice", floating-point safe, pure (δ = 0), ε' <= ε with σ
    raised by at most twice h√J/a_ε; released values on the public lattice; seeded studies keep the float
    sampler."""
    from fdp_ppl.noise.elliptical import EllipticalMechanism

    s = knorm_summary
    J = s.n_components
    mech = EllipticalMechanism(1.0, family="t", nu=5.0)
    plan = fp.plan(s, mech)
    assert (plan.generator, plan.fp_safe) == ("lattice", True) and plan.cost.delta == 0.0
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(5.0))
    tree = fp.release(s, mech, draws=3, ledger=ledger)
    a = tree.attrs
    assert (a["noise_generator"], a["fp_safe"], a["noise_seeded"]) == ("lattice", 1, 0)
    assert a["delta_guaranteed"] == 0.0 and mech.epsilon - 1e-9 < a["epsilon_guaranteed"] <= mech.epsilon
    assert ledger.spent.epsilon == pytest.approx(3.0) and ledger.spent.delta == 0.0
    base = mech.calibrate(s.spec)
    a_eps = fp.laws.Elliptical("t", nu=5.0).family(J).a_closed_form(mech.epsilon)
    cost = 2.0**-LATTICE_BITS * math.sqrt(J)
    assert base.sigma < a["noise_multiplier"] <= base.sigma * (1 + 2 * cost / a_eps)
    assert a["noise_sigma_source"] == "lattice" and "asinh" in a["privacy_guarantee"]
    assert "multivariate t" in a["fp_safety"] and "sigma raised" in a["fp_safety"]
    scale = tree[S.CONSTANT_DATA][S.NOISE_SCALE].values
    y = tree[S.POSTERIOR][S.COEFFICIENTS].values[0]
    t = y / scale / 2.0**-LATTICE_BITS
    assert np.max(np.abs(t - np.rint(t))) < 2.0**-8
    seeded = fp.release(s, mech, random_seed=1, study=True).attrs
    assert (seeded["noise_generator"], seeded["fp_safe"]) == ("pymc", 0)
    with pytest.raises(InputError, match="too small"):
        LatticeSampler.calibrate_sigma(fp.laws.Elliptical("t", nu=5.0), 1.0, 1e-9, 0.0, J, 1.0)


def test_t_whose_design_does_not_fit_falls_back_and_is_refused_when_asked_for():
    """ν = 0.01 needs proposals beyond 64-bit integers at J = 30: the default of a pure release is then the float
    sampler (it says it is not floating-point safe), and asking for the lattice is one CompatibilityError."""
    from fdp_ppl.noise.laws.elliptical import Elliptical
    from fdp_ppl.noise.sampling import resolve_generator

    tiny, fine = Elliptical("t", nu=0.01), Elliptical("t", nu=5.0)
    assert LatticeSampler.supports(tiny) and not LatticeSampler.supports(tiny, 30)
    assert resolve_generator(tiny, pure=True, n_components=30) == "pymc"
    assert resolve_generator(fine, pure=True, n_components=30) == "lattice"
    with pytest.raises(CompatibilityError, match="generator='pymc'"):
        LatticeSampler(tiny, 30)
