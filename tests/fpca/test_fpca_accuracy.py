"""A principal-components plan promises the principal angle its real releases deliver at a stated eigengap (DESIGN,
data flow: a family's accuracy hook computes from the public plan alone, no data read, nothing charged)."""

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.fpca import FPCASpec

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning")

RELEASES = 400


def _spiked_curves(spec, n, gap, spike_records=10, other=0.8):
    """Curves whose scatter matrix is exactly n (c I + gap e_1 e_1ᵀ) in the spec's basis."""
    m = spec.m
    C = np.zeros((n, m))
    C[:spike_records, 0] = np.sqrt(gap * n / spike_records)
    for i in range(spike_records, n):  # (n - spike_records) / m records along each basis function
        C[i, (i - spike_records) % m] = other * (-1) ** i
    return C @ spec.basis_values.T


def test_planned_angle_matches_a_monte_carlo_of_the_real_mechanism():
    n, gap = 100, 0.05
    spec = FPCASpec(grid=fp.Grid.uniform(51), m=5, k=1, epsilon=1.0, tau=1.0)
    fit = spec.fit(_spiked_curves(spec, n, gap))
    G = fit.gram / n
    assert np.allclose(G - np.diag(np.diag(G)), 0, atol=1e-9) and G[0, 0] - G[1, 1] == pytest.approx(gap)
    mechanism = fp.ExponentialMechanism()
    tree = fp.release(fit, mechanism, draws=RELEASES, random_seed=3, study=True)
    frames = tree["posterior"]["frame"].values.reshape(RELEASES, spec.m)
    angles = np.degrees(np.arccos(np.abs(frames[:, 0])))
    acc = fp.plan(spec, mechanism, n=n).accuracy(eigengap=[gap, 0.3], samples=2000, seed=1)
    # the angle's sd is ~13 degrees around ~21: 400 releases give the mean a relative error of ~3%
    assert abs(angles.mean() / float(acc["expected_angle"][0]) - 1) < 0.10
    assert abs(np.quantile(angles, 0.95) / float(acc["angle_quantile"][0]) - 1) < 0.10
    assert float(acc["expected_angle"][1]) < float(acc["expected_angle"][0])  # a larger gap, a smaller angle


def test_angle_plans_refuse_bad_gaps_and_serve_every_form():
    spec = FPCASpec(grid=fp.Grid.uniform(31), m=4, k=1, epsilon=0.5, tau=1.0, form="gp-base")
    plan = fp.plan(spec, fp.ExponentialMechanism(), n=20)
    acc = plan.accuracy(eigengap=0.5, samples=200)
    assert acc["expected_angle"].dims == ("eigengap",) and 0 < float(acc["expected_angle"][0]) < 90
    with pytest.raises(fp.InputError, match="eigengap"):
        plan.accuracy(eigengap=1.5)
    two = FPCASpec(grid=fp.Grid.uniform(31), m=4, k=2, epsilon=1.0, tau=1.0)
    acc2 = fp.plan(two, fp.ExponentialMechanism(sampler="gibbs", iterations=20), n=100).accuracy(
        eigengap=0.3, samples=100)
    assert 0 <= float(acc2["expected_subspace_distance"][0]) <= 2
