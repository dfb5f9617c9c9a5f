"""Floating-point safety of the private bandwidth's quartiles (DESIGN invariant 8; fdp_ppl/kde/bandwidth.py).

Smith's exponential mechanism for quantiles picks an interval ``[z_i, z_{i+1}]`` between sorted records and
releases a float64 uniform inside it, ``a + (b − a)·U`` with ``U = m·2⁻⁵³`` (numpy's ``Generator.uniform``). The
floats it can reach depend on the endpoints, which are records: the attack of Mironov (2012) decides, by an exact
bisection over ``m``, whether a released quartile can come from a neighbouring data set at all. On the seeded
(study) path it rules the neighbour out for most releases and the true data never; on the default path (OpenDP's
``make_private_quantile`` on the public candidate lattice) every release is a public lattice point, which every
data set reaches (gap 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from fdp_ppl.kde import private_bandwidth
from fdp_ppl.kde.bandwidth import private_quantile
from fdp_ppl.noise.opendp import private_quantile as opendp_quantile
from fdp_ppl.noise.opendp import quantile_candidates
from tests.noise.test_fp_safe import monotone_reaches

TWO53 = 9007199254740992.0
DOMAIN = (-1.0, 1.0)


def _uniform(a: float, b: float, m: int) -> float:
    """numpy's ``Generator.uniform(a, b)`` for the 53-bit integer ``m`` (checked bit for bit below)."""
    return a + (b - a) * (m / TWO53)


def uniform_reachable(y: float, a: float, b: float) -> bool:
    """Whether ``Generator.uniform(a, b)`` can output ``y`` (the map is monotone in ``m``: an exact bisection)."""
    return monotone_reaches(lambda m: _uniform(a, b, m), 0, 2**53 - 1, y)


def reachable_from(y: float, records) -> bool:
    """Whether Smith's float release can output ``y`` from ``records`` (from some interval between sorted records
    and the domain's ends)."""
    z = np.concatenate([[DOMAIN[0]], np.sort(np.clip(records, *DOMAIN)), [DOMAIN[1]]])
    return any(uniform_reachable(y, float(z[i]), float(z[i + 1])) for i in range(z.size - 1) if z[i] <= y <= z[i + 1])


@pytest.fixture(scope="module")
def neighbours():
    """Eight records whose first-quartile interval ``[-0.4, 0.4]`` (two records below it) is wide and straddles 0,
    where floats are finer than the uniform's step; the neighbour replaces the record -0.4 by the next float up."""
    x = np.array([-0.99, -0.4, 0.4, 0.9, 0.92, 0.95, 0.97, 0.98])
    x2 = x.copy()
    x2[1] = np.nextafter(x[1], 1.0)
    return x, x2


def test_numpy_model_reproduces_the_uniform_bit_for_bit():
    rng, raw = np.random.default_rng(5), np.random.default_rng(5)
    for a, b in ((-0.3, 0.5), (0.1, 0.7), (-1.0, 1.0)):
        assert rng.uniform(a, b) == _uniform(a, b, int(raw.bit_generator.random_raw()) >> 11)


def test_float_quartiles_rule_out_the_neighbour_lattice_quartiles_do_not(neighbours):
    """Before (the seeded path's float draws, 100 first quartiles at ε = 1): the true records explain every
    release, the neighbour's fail for a share of them (gap 0.43 measured on 200; asserted > 0.25, 3.5 binomial sd
    below). After (OpenDP on the public
    lattice): every release is a candidate, which report-noisy-max gives positive probability from any data set
    (gap 0)."""
    x, x2 = neighbours
    R = 100
    rng = np.random.default_rng(11)
    floats = [private_quantile(x, 0.25, 1.0, DOMAIN, rng) for _ in range(R)]
    true_out = np.mean([not reachable_from(y, x) for y in floats])
    nb_out = np.mean([not reachable_from(y, x2) for y in floats])
    assert true_out == 0.0 and nb_out - true_out > 0.25, (true_out, nb_out)

    cand = set(quantile_candidates(DOMAIN).tolist())
    lattice = [opendp_quantile(x, 0.25, 1.0, DOMAIN) for _ in range(R)]
    assert all(y in cand for y in lattice)  # the support is the public lattice for every data set: gap 0


def test_default_bandwidth_is_on_the_lattice_and_the_plan_says_so():
    """A real release (no seed) goes through OpenDP; its plan records fp_safe and generator, the seeded study's
    plan the float path."""
    from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
    from fdp_ppl.kde import bandwidth_plan

    x = np.random.default_rng(0).normal(0.5, 0.1, 300)
    ledger = PrivacyLedger(PrivacyBudget(1.0, 0.0))
    h = private_bandwidth(x, 0.5, (0.0, 1.0), ledger=ledger)
    assert ledger.spent.epsilon == pytest.approx(0.5) and h[0] > 0
    p, s = bandwidth_plan(0.5), bandwidth_plan(0.5, seeded=True)
    assert (p.fp_safe, p.generator, s.fp_safe, s.generator) == (True, "opendp", False, "numpy")
    assert "2^10 + 1 candidates" in p.guarantee


@pytest.mark.parametrize("eps", [0.1, 0.25, 1.0])
def test_lattice_quantile_privacy_map_is_the_stated_epsilon(eps):
    """The OpenDP quantile measurement the bandwidth calls is calibrated to exactly ε for replace-one neighbours
    (symmetric distance 2, n public): its privacy map at 2 is ≤ ε and within 1e-9 of it, so a scale √2 too small
    (map √2·ε) or calibrated at distance 1 (map 2ε) fails here; and the map grows with the distance as ε-DP must."""
    from fdp_ppl.noise.opendp import _quantile_measurement, quantile_candidates

    meas = _quantile_measurement(50, 0.25, eps, tuple(quantile_candidates(DOMAIN).tolist()))
    assert meas.map(2) <= eps and meas.map(2) >= eps * (1 - 1e-9)
    assert meas.map(4) == pytest.approx(2 * eps, rel=1e-9)
