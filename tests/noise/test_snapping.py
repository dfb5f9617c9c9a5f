"""Floating-point-safe release by dithered lattice rounding (DESIGN invariant 8; fdp_ppl/noise/snapping.py).

(a) The construction: public power-of-two steps, an exact split of the centre, the rounding error is the uniform
    dither independent of the noise (Schuchman), δ_fp and the sd inflation as documented.
(b) The attack of Mironov (2012) in the exact numpy model of noise/test_fp_safe.py, run on the same Laplace
    noise through the compiled float sampler (it rules the neighbour out) and through the snapped generator:
    every released lattice index is reachable from both centres (no gap), and the float model rules both out
    equally.
(c) Every elliptical mechanism's default path: ``snapped``, ``fp_safe = 1``; its lattice indices are reachable
    from the true and the neighbouring centre alike; the law of the snapped draws matches the float sampler's
    (two-sample KS of the whitened squared norm, and a check that the test sees a 5% scale error); the
    rounding's cost is in the guarantee and in the ledger.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.noise.elliptical import EllipticalMechanism, EllipticalProcessMechanism
from fdp_ppl.noise.elliptical.privacy import delta_exact
from fdp_ppl.noise.laws import Laplace
from fdp_ppl.noise.sampling import sampler_for
from fdp_ppl.noise.snapping import (
    SnappedSampler,
    lattice_step,
    snap,
    snap_cost,
    snapping_delta,
    standard_moments,
)
from fdp_ppl.releasing import schema as S
from tests.noise.test_fp_safe import _numpy_laplace, numpy_reachable, unreachable_share


# ====================================================================================== (a) the construction
def test_lattice_steps_are_powers_of_two_between_s_over_64_and_s_over_32():
    s = np.exp(np.random.default_rng(0).uniform(-30, 30, 500))
    h = lattice_step(s)
    m, _ = np.frexp(h)
    assert np.all(m == 0.5)
    assert np.all(s / 64 < h) and np.all(h <= s / 32)
    with pytest.raises(fp.errors.InputError):
        snap(np.zeros(2), np.zeros((1, 2)), np.array([0.3, 0.25]))


def test_rounding_error_is_the_uniform_dither_independent_of_the_noise():
    """``released − (c + n)`` is Uniform(−η/2, η/2) and uncorrelated with n (centres far from 0: the split is
    exact); the KS test sees the error of rounding without a dither (a shift by η/4)."""
    rng = np.random.default_rng(1)
    J, N = 8, 5000
    c = rng.normal(scale=1e4, size=J)
    s = np.exp(rng.uniform(-3, 3, J))
    n = rng.laplace(size=(N, J)) * s
    h = lattice_step(s)
    e = (snap(c, n, h, random_seed=2) - c - n) / h
    assert np.all(np.abs(e) <= 0.5 + 1e-6)
    u = stats.uniform(-0.5, 1.0).cdf
    assert stats.kstest(e.ravel(), u).pvalue > 1e-3
    assert stats.kstest(e.ravel() + 0.25, u).pvalue < 1e-6  # power: a quarter-step bias is seen
    for j in range(J):
        assert abs(np.corrcoef(e[:, j], n[:, j])[0, 1]) < 5 / math.sqrt(N)


def test_snapping_delta_and_inflation_as_documented():
    """``δ_fp`` per coordinate is about 7e-12 E|z| at the worst step ratio (s/η -> 64), and the sd of unit-variance
    noise grows by less than 4.1e-5 (η <= s/32: η²/12 <= s²/12288)."""
    one = snapping_delta(np.array([64.0]))
    assert 6e-12 < one < 8e-12
    c = snap_cost(np.ones(100), np.ones(100), np.ones(100), epsilon=1.0)
    assert c.sigma_inflation == pytest.approx(math.sqrt(1 + 1 / (32**2 * 12)) - 1)
    assert c.delta_added == pytest.approx((1 + math.e) * c.delta_fp)


# ====================================================================================== (b) the attack
def lattice_reachable(v: float, c: float, b: float) -> bool:
    """Whether the snapped release ``v`` can come from centre ``c`` when the float noise is numpy's Laplace(0, b):
    some 53-bit ``m`` gives noise in the window ``[lo, lo + η)`` that rounds to the released index (both branches
    of numpy's map are monotone in ``m``: a bisection per branch)."""
    h = float(lattice_step(np.array([b]))[0])
    k = math.floor(v / h)
    u = v - k * h
    a = math.floor(c / h)
    r = c - a * h
    lo = (k - a - 0.5) * h - r + u
    hi = lo + h
    for m_lo, m_hi in ((1, 2**52 - 1), (2**52, 2**53 - 1)):
        if _numpy_laplace(0.0, b, m_hi) < lo or _numpy_laplace(0.0, b, m_lo) >= hi:
            continue
        A, Z = m_lo, m_hi
        while A < Z:
            mid = (A + Z) // 2
            if _numpy_laplace(0.0, b, mid) >= lo:
                Z = mid
            else:
                A = mid + 1
        if _numpy_laplace(0.0, b, A) < hi:
            return True
    return False


@pytest.fixture(scope="module")
def laplace_setting():
    """J = 40 coefficients with scales in [0.1, 1] and centres well inside the noise (as on the DTI setting of
    noise/test_fp_safe.py, where the float grid of the output is the noise's); the neighbour's centre moves by a
    fraction of a scale (as one replaced record does)."""
    rng = np.random.default_rng(7)
    J = 40
    b = np.exp(rng.uniform(np.log(0.1), np.log(1.0), J))
    c = rng.normal(scale=0.05, size=J)
    c2 = c + 0.3 * b * rng.choice([-1.0, 1.0], J)
    return c, c2, b


def test_numpy_laplace_attack_finds_the_gap_on_floats_and_none_after_snapping(laplace_setting):
    """Before: compiled float64 Laplace noise, the true centre explains every coefficient, the neighbour is ruled
    out for most (gap 0.7-0.9). After (the same law through the snapped generator): the lattice index is
    reachable from both centres for every coefficient (gap 0), and the float model rules both out alike."""
    c, c2, b = laplace_setting
    J, R = len(c), 3
    floats = sampler_for(Laplace(), J, "pymc").draw(c, b, R)
    before = [(unreachable_share(y, c, b), unreachable_share(y, c2, b)) for y in floats]
    gap_before = np.mean([nb - t for t, nb in before])
    assert all(t == 0.0 for t, _ in before) and gap_before > 0.5, before

    snapped = SnappedSampler(Laplace(), J).draw(c, b, R)
    lat = [(unreachable_share(y, c, b, lattice_reachable), unreachable_share(y, c2, b, lattice_reachable))
           for y in snapped]
    assert all(t == 0.0 and nb == 0.0 for t, nb in lat), lat  # gap 0
    flt = np.array([(unreachable_share(y, c, b), unreachable_share(y, c2, b)) for y in snapped])
    assert np.all(flt[:, 0] > 0.5)  # the float model no longer explains the releases ...
    assert abs(flt[:, 0].mean() - flt[:, 1].mean()) < 0.6 / math.sqrt(R)  # ... nor tells c from c'
    assert numpy_reachable(floats[0, 0], c[0], b[0])  # the model is the sampler's (sanity)


# ====================================================================================== (c) every mechanism
MECHANISMS = {
    "t-process": lambda: EllipticalProcessMechanism(1.0, 1e-5, family="t", nu=4.0),
    "laplace-process": lambda: EllipticalProcessMechanism(1.0, 1e-5, family="laplace"),
    "knorm": lambda: EllipticalMechanism(1.0, family="knorm"),
    "t": lambda: EllipticalMechanism(1.0, family="t", nu=5.0),
}


@pytest.fixture(scope="module")
def ell_summary():
    g = fp.Grid.uniform(30)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), g)
    x = 0.3 * np.random.default_rng(3).standard_normal((120, 30)) + np.sin(2 * np.pi * g.t)
    return fp.rkhs_mean(x, basis, tau=2.0)


def _lattice_unreachable(y, centre, scale) -> float:
    """Share of coordinates whose lattice index cannot come from ``centre``: the window ``[lo, lo + η)`` of the
    noise that gives the index must hold a value of the float noise, which is dense there (float spacing of the
    window at most ``η/2^40``); unreachable only beyond the range a float64 noise draw can take (|noise| > 1e300)."""
    h = lattice_step(scale)
    k = np.floor(y / h)
    lo = (k - np.floor(centre / h) - 0.5) * h - (centre - np.floor(centre / h) * h) + (y - k * h)
    dense = np.spacing(np.abs(lo) + h) <= h * 2.0**-40
    return float(np.mean(~(dense & (np.abs(lo) < 1e300))))


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_elliptical_lattice_path_has_no_gap_and_its_cost_charged(name, ell_summary):
    mech = MECHANISMS[name]()
    s = ell_summary
    J = s.n_components
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(10.0, 1e-3))
    if mech.delta == 0:  # a pure mechanism stays pure by default (K-norm and t: the exact 'lattice' generator,
        # fp_safe 1); the dithered lattice on request
        default = fp.plan(s, mech)
        assert (default.fp_safe, default.generator) == (True, "lattice")
        tree = fp.release(s, mech, draws=3, ledger=ledger, generator="snapped")
    else:
        tree = fp.release(s, mech, draws=3, ledger=ledger)
    a = tree.attrs
    assert (a["noise_generator"], a["fp_safe"], a["noise_seeded"]) == ("snapped", 1, 0)
    scale = tree[S.CONSTANT_DATA][S.NOISE_SCALE].values
    cost = SnappedSampler(mech.law, J).cost(scale, mech.epsilon)
    assert 0 < cost.delta_added < 1e-7 and cost.sigma_inflation < 1e-4  # far below 2% in sd
    if mech.delta == 0:  # pure ε: the rounding's δ is stated and charged
        assert a["epsilon_guaranteed"] == mech.epsilon
        assert a["delta_guaranteed"] == pytest.approx(cost.delta_added, rel=1e-12)
        assert ledger.spent.delta == pytest.approx(3 * cost.delta_added, rel=1e-9)
        assert ledger.spent.epsilon == pytest.approx(3 * mech.epsilon)
    else:  # (ε, δ): σ raised so that the exact mechanism is (ε, δ − added)-DP; the claim is kept
        assert (a["epsilon_guaranteed"], a["delta_guaranteed"]) == (mech.epsilon, mech.delta)
        float_cal = mech.calibrate(s.spec)
        sigma = a["noise_multiplier"]
        assert float_cal.sigma <= sigma <= float_cal.sigma * 1.001
        law = mech.law.mixing_law(J)
        assert delta_exact(mech.epsilon, float_cal.sensitivity.value, sigma, law) <= mech.delta - cost.delta_added
        assert ledger.spent.delta == pytest.approx(3 * mech.delta)
    # the attack: every released index is reachable from the true centre and from a neighbour's
    y = tree[S.POSTERIOR][S.COEFFICIENTS].values[0]
    nb = s.coefficients + 0.5 * scale * np.sign(np.sin(np.arange(J) + 1.0))
    gaps = [_lattice_unreachable(r, nb, scale) - _lattice_unreachable(r, s.coefficients, scale) for r in y]
    assert gaps == [0.0] * len(y)
    assert all(_lattice_unreachable(r, s.coefficients, scale) == 0.0 for r in y)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_snapped_draws_follow_the_law(name, ell_summary):
    """Whitened squared norms of 3000 snapped draws against 3000 float draws (two-sample KS, p > 1e-3; its
    distance at n = m = 3000 has sd about 0.013 and the rounding moves it by < 1e-4); the same test rejects float
    draws whose scale is 10% larger (KS distance 0.06 at 5% for the t process, whose shared W dominates), so it is
    not vacuous."""
    mech = MECHANISMS[name]()
    s = ell_summary
    J = s.n_components
    cal = mech.calibrate(s.spec, generator="snapped")
    snapped = SnappedSampler(mech.law, J).draw(s.coefficients, cal.scale, 3000)
    ref = sampler_for(mech.law, J, "pymc").draw(s.coefficients, cal.scale, 3000, random_seed=11, study=True)
    wide = sampler_for(mech.law, J, "pymc").draw(s.coefficients, 1.10 * cal.scale, 3000, random_seed=12, study=True)

    def q(y):
        return np.sum(((y - s.coefficients) / cal.scale) ** 2, axis=1)

    assert stats.ks_2samp(q(snapped), q(ref)).pvalue > 1e-3
    assert stats.ks_2samp(q(wide), q(ref)).pvalue < 1e-6
    m1, sd = standard_moments(mech.law, J)
    z = (snapped - s.coefficients) / cal.scale
    assert abs(np.mean(np.abs(z)) - m1) < 6 * (sd if np.isfinite(sd) else 3 * m1) / math.sqrt(z.size / J)
