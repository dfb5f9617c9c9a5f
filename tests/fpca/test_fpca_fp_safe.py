"""Floating-point safety of the exponential mechanism's frames (DESIGN invariant 8; fdp_ppl/noise/snapping.py):
frames released on the public dithered lattice 2^-12 Z (or the finest coarser one a small δ can hold) and mapped to
the nearest orthonormal frame; the (ε', δ') plan adds the lattice's δ to its guarantee and its charge (fp_safe = 1);
the pure plan states why it is not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.fpca import FPCASpec
from fdp_ppl.noise.snapping import FRAME_BITS, frame_bits_for, frame_cost
from fdp_ppl.releasing import schema as S
from tests.helpers import family_curves


@pytest.fixture(scope="module")
def fit():
    curves = family_curves(20, 30, seed=3).values
    return FPCASpec(grid=fp.Grid.uniform(30), m=5, k=1, epsilon=1.0, tau=2.0).fit(curves)


def test_delta_plan_is_floating_point_safe_and_holds_the_lattice_in_its_delta(fit):
    """δ = 1e-7: p* is planned at δ − (1 + e^ε') δ_fp, the lattice's δ is added back, the claim and the charge
    stay within δ. δ = 1e-10 is below twice the 2^-12 lattice's δ (about 4e-9 for a 5 x 1 frame): the plan takes the
    lattice 2^-5 Z (δ 3.1e-11, sd of an entry +2e-4), floating-point safe within δ; a 40 x 3 frame at 1e-10 would
    need more than 2% sd inflation: fp_safe = 0, said."""
    mech = fp.ExponentialMechanism("exact", delta=1e-7)
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(10.0, 1e-5))
    tree = fp.release(fit, mech, draws=4, ledger=ledger)
    a = tree.attrs
    cost = frame_cost(5, 1, a["epsilon_guaranteed"])
    assert a["fp_safe"] == 1 and a["fp_safety"].startswith("floating-point safe")
    assert 0 < cost.delta_added < 1e-8
    assert 0.99 * cost.delta_added < a["delta_guaranteed"] <= 1e-7 * (1 + 1e-12)
    assert ledger.spent.delta == pytest.approx(4 * a["delta_guaranteed"], rel=1e-9)
    small = fp.release(fit, fp.ExponentialMechanism("exact", delta=1e-10), draws=1).attrs
    assert small["fp_safe"] == 1 and small["frame_lattice_bits"] == 5 and 0 < small["delta_guaranteed"] <= 1e-10
    assert small["fp_safety"].startswith("floating-point safe: float values released on the public dithered lattice "
                                         "2^-5 Z")
    assert frame_cost(5, 1, 1.0, 5).sigma_inflation < 3e-4
    assert frame_bits_for(40, 3, 1.0, 1e-10) is None and frame_bits_for(40, 3, 1.0, 1e-9) == 5
    V = tree[S.POSTERIOR][S.FRAME].values[0]
    np.testing.assert_allclose(np.einsum("dmk,dml->dkl", V, V), np.broadcast_to(np.eye(1), (4, 1, 1)), atol=1e-12)


def test_pure_plan_stays_pure_and_says_why_it_is_not_floating_point_safe(fit):
    tree = fp.release(fit, fp.ExponentialMechanism("exact"), draws=2)
    a = tree.attrs
    assert a["fp_safe"] == 0 and a["pure"] == 1 and a["delta_guaranteed"] == 0.0
    assert a["fp_safety"].startswith("NOT floating-point safe as stated: frames are released on the dithered lattice")


def test_frames_follow_the_law_and_lattice_indices_are_reachable_from_any_data(fit):
    """Seeded studies: |first frame entry| of 1500 snapped frames against 1500 unsnapped frames of the same
    sampler (two-sample KS p > 1e-3; the rounding moves an entry by at most 2^-13 and the frame by < 1e-3), and
    the test sees frames of a 1.5 times sharper target (p < 1e-6). Every entry's
    lattice window holds floats 2^40 times finer than the step, from any data: no data-dependent support."""
    from fdp_ppl.fpca.samplers import sample_vector_bingham

    mech = fp.ExponentialMechanism("exact", delta=1e-7)
    tree = fp.release(fit, mech, draws=1500, random_seed=21, study=True)
    V = tree[S.POSTERIOR][S.FRAME].values[0, :, :, 0]
    spec, plan = fit.spec, fp.plan(fit, mech)
    T = plan.attrs["proposal_budget"]
    raw = sample_vector_bingham(spec.bingham_parameter(np.asarray(fit.gram)), 1500, np.random.default_rng(22),
                                proposals=T)
    assert stats.ks_2samp(np.abs(V[:, 0]), np.abs(raw[:, 0])).pvalue > 1e-3
    other = sample_vector_bingham(1.5 * spec.bingham_parameter(np.asarray(fit.gram)), 1500,
                                  np.random.default_rng(23), proposals=T)
    assert stats.ks_2samp(np.abs(V[:, 0]), np.abs(other[:, 0])).pvalue < 1e-6  # power: a 1.5x sharper target
    lo = np.abs(V).max() + 2.0**-FRAME_BITS
    assert np.spacing(lo) <= 2.0**-FRAME_BITS * 2.0**-40
    assert math.isclose(np.linalg.norm(V, axis=1).min(), 1.0, rel_tol=1e-12)


def test_coarse_lattice_frames_follow_the_law(fit):
    """δ = 1e-10 on a 5 x 1 frame: frames on 2^-5 Z (seeded study, 1500 frames) against unsnapped frames of the same
    sampler: two-sample KS on |first entry| p > 1e-3 (the rounding moves an entry by sd 2^-5/√12 = 0.009 before
    the polar map, against a spread of about 0.3); the test rejects frames of a 1.5 times sharper target."""
    from fdp_ppl.fpca.samplers import sample_vector_bingham

    mech = fp.ExponentialMechanism("exact", delta=1e-10)
    tree = fp.release(fit, mech, draws=1500, random_seed=31, study=True)
    assert tree.attrs["frame_lattice_bits"] == 5
    V = tree[S.POSTERIOR][S.FRAME].values[0, :, :, 0]
    T = fp.plan(fit, mech).attrs["proposal_budget"]
    raw = sample_vector_bingham(fit.spec.bingham_parameter(np.asarray(fit.gram)), 1500, np.random.default_rng(32),
                                proposals=T)
    assert stats.ks_2samp(np.abs(V[:, 0]), np.abs(raw[:, 0])).pvalue > 1e-3
    other = sample_vector_bingham(1.5 * fit.spec.bingham_parameter(np.asarray(fit.gram)), 1500,
                                  np.random.default_rng(33), proposals=T)
    assert stats.ks_2samp(np.abs(V[:, 0]), np.abs(other[:, 0])).pvalue < 1e-6  # power: a 1.5x sharper target
    assert math.isclose(np.linalg.norm(V, axis=1).min(), 1.0, rel_tol=1e-12)
