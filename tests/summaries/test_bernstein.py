import numpy as np
import pytest
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.summaries import bernstein_design

TAU_INF = 1.5


def test_bernstein_design_is_a_partition_of_unity_and_reproduces_linear_functions():
    t = np.linspace(0, 1, 50)
    B = bernstein_design(t, 12)
    np.testing.assert_allclose(B.sum(1), 1.0)
    np.testing.assert_allclose(B @ (np.arange(13) / 12), t, atol=1e-12)


def test_lattice_values_are_the_clipped_mean(curves, small_grid):
    s = fp.bernstein_mean(curves, small_grid, tau_inf=TAU_INF, k=10)
    clipped = np.clip(curves, -TAU_INF, TAU_INF).mean(0)
    np.testing.assert_allclose(s.coefficients, np.interp(np.arange(11) / 10, small_grid.t, clipped))
    assert s.n_clipped == int((np.abs(curves) > TAU_INF).any(1).sum()) > 0
    assert s.sensitivity().value == pytest.approx(11 * 2 * TAU_INF / 40)
    with pytest.raises(ValueError, match="l1"):
        s.sensitivity("1,C")


def test_sensitivity_brute_force_and_adversarial(curves, small_grid, rng):
    ref = fp.bernstein_mean(curves, small_grid, tau_inf=TAU_INF, k=10)
    bound = ref.sensitivity().value
    worst = 0.0
    for _ in range(100):
        other = curves.copy()
        other[rng.integers(40)] = rng.standard_normal(small_grid.size) * rng.uniform(0.1, 4)
        worst = max(worst, np.abs(fp.bernstein_mean(other, small_grid, tau_inf=TAU_INF, k=10).coefficients
                                  - ref.coefficients).sum())
    a, b = curves.copy(), curves.copy()
    a[0], b[0] = TAU_INF, -TAU_INF
    sa = fp.bernstein_mean(a, small_grid, tau_inf=TAU_INF, k=10)
    sb = fp.bernstein_mean(b, small_grid, tau_inf=TAU_INF, k=10)
    adv = np.abs(sa.coefficients - sb.coefficients).sum()
    assert worst <= bound * (1 + 1e-12)
    assert adv == pytest.approx(bound)
    mech = fp.Bernstein(1.0)
    cal = mech.calibrate(sa)
    far = sa.coefficients + 1e3 * np.sign(sa.coefficients - sb.coefficients) * cal.scale
    assert mech.privacy_loss(far, sa.coefficients, sb.coefficients, cal.scale) == pytest.approx(1.0)
    y = sa.coefficients + rng.laplace(0, cal.scale, size=(2000, 11))
    assert np.all(np.abs(mech.privacy_loss(y, sa.coefficients, sb.coefficients, cal.scale)) <= 1 + 1e-9)


def test_bernstein_release_draws_and_reconstruction(curves, small_grid):
    s = fp.bernstein_mean(curves, small_grid, tau_inf=TAU_INF, k=20)
    tree = fp.release(s, fp.Bernstein(0.5), draws=2000, random_seed=4, study=True)
    assert tree.attrs["mechanism"] == "bernstein" and tree.attrs["lattice_k"] == 20
    coef = tree["posterior"]["coefficients"].values[0]
    scale = tree["constant_data"]["noise_scale"].values
    np.testing.assert_allclose(scale, 21 * 2 * TAU_INF / 40 / 0.5)
    assert stats.kstest(((coef - s.coefficients) / scale).ravel(), stats.laplace.cdf).pvalue > 1e-3
    np.testing.assert_allclose(tree["posterior"]["curve"].values[0], coef @ bernstein_design(small_grid.t, 20).T)
    with pytest.raises(fp.CompatibilityError):
        fp.Bernstein(1.0).calibrate(fp.frl_mean(curves, fp.eigenbasis(fp.Matern(rho=0.1), small_grid), tau=1.0))
    with pytest.raises(ValueError):
        fp.ICLP(1.0).calibrate(s)
