"""The accuracy a plan promises (``ReleasePlan.accuracy``) is the accuracy the real mechanism delivers, and its
inverse round-trips, from public quantities only (DESIGN invariant 11: everything a release will do is known
before the data; a plan reads no data and charges nothing)."""

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.releasing.accuracy import largest_tau, pointwise_sd, smallest_epsilon

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning",
                                        "ignore::fdp_ppl.summaries.curves.TauTooSmallWarning")

RELEASES = 200
CONSTANT = 0.5


def _constant_curves(n, t):
    return xr.DataArray(np.full((n, t.size), CONSTANT), dims=("curve", "t"), coords={"t": t})


@pytest.mark.parametrize("mechanism", [fp.ICLP(4.0), fp.GaussianMechanism(4.0, 1e-6)], ids=["iclp", "gaussian"])
def test_plan_accuracy_matches_a_monte_carlo_of_the_real_mechanism(mechanism):
    grid = fp.Grid.uniform(41)
    spec = fp.ICLPQRSpec(basis=fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid), tau=1.0, n=100)
    level = 0.9
    acc = fp.plan(spec, mechanism, seeded=True).accuracy(level=level, constant=CONSTANT, seed=1)
    assert acc["noise_sd"].dims == ("t",) and acc.attrs["epsilon"] == 4.0

    summary = spec.fit(_constant_curves(100, grid.points))
    fitted = summary.curve().values
    # the noise-free summary of a constant curve is the planned shrinkage, exactly (no noise involved)
    np.testing.assert_allclose(fitted - CONSTANT, acc["constant_bias"].values, atol=1e-10)

    tree = fp.release(summary, mechanism, draws=RELEASES, random_seed=20261127, study=True)  # a study: seeded, no ledger
    curves = tree["posterior"]["curve"].values.reshape(RELEASES, -1)
    noise = curves - fitted
    w = np.asarray(grid.weights)
    rms = np.sqrt(np.mean(np.sum(w * noise**2, axis=1)))
    sup_q = np.quantile(np.abs(noise).max(axis=1), level)
    sd = noise.std(axis=0, ddof=1)
    # 200 releases of >= 40 near-independent coefficients: the RMS and the mean sd ratio have relative errors of
    # about 1-3%, the 0.9 quantile of the sup about 3-4% (sqrt(0.09 / 200) / density); 10% is > 2.5 of those
    assert abs(rms / float(acc["rms_l2_error"]) - 1) < 0.10
    assert abs(np.mean(sd / acc["noise_sd"].values) - 1) < 0.10
    assert abs(sup_q / float(acc["simultaneous_halfwidth"]) - 1) < 0.10
    coverage = np.mean(np.abs(noise).max(axis=1) <= float(acc["simultaneous_halfwidth"]))
    assert abs(coverage - level) < 0.10
    # bias: the mean of 200 releases is the planned biased curve (its noise sd / sqrt(200) is < 10% of the bias)
    mean_err = curves.mean(axis=0) - CONSTANT
    bias = acc["constant_bias"].values
    assert abs(np.sqrt(np.mean(mean_err**2)) / np.sqrt(np.mean(bias**2)) - 1) < 0.10


def test_the_release_and_the_plan_share_one_pointwise_sd_formula():
    grid = fp.Grid.uniform(31)
    spec = fp.ICLPQRSpec(basis=fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid), tau=1.0, n=50)
    summary = spec.fit(_constant_curves(50, grid.points))
    tree = fp.release(summary, fp.ICLP(1.0), random_seed=3, study=True)
    view = fp.releasing.schema.read_release(tree)
    acc = fp.plan(spec, fp.ICLP(1.0), seeded=True).accuracy(samples=200)
    np.testing.assert_allclose(view.noise_sd(), acc["noise_sd"].values, rtol=1e-12)
    np.testing.assert_allclose(pointwise_sd(np.eye(2), [4.0, 9.0]), [2.0, 3.0])


def test_the_inverse_round_trips_and_charges_nothing():
    grid = fp.Grid.uniform(31)
    spec = fp.ICLPQRSpec(basis=fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid), tau=1.0, n=100)
    width, kw = 0.3, {"samples": 500, "seed": 2, "rtol": 1e-3}
    eps = smallest_epsilon(spec, fp.ICLP(1.0), width, **kw)
    at = float(fp.plan(spec, fp.ICLP(eps)).accuracy(samples=500, seed=2)["simultaneous_halfwidth"])
    below = float(fp.plan(spec, fp.ICLP(eps / 1.01)).accuracy(samples=500, seed=2)["simultaneous_halfwidth"])
    assert at <= width < below
    # the noise is linear in tau (the sensitivity is): the largest tau at eps = 1 is width / half-width(tau = 1)
    tau = largest_tau(spec, fp.ICLP(1.0), width, **kw)
    h1 = float(fp.plan(spec, fp.ICLP(1.0)).accuracy(samples=500, seed=2)["simultaneous_halfwidth"])
    assert tau == pytest.approx(width / h1, rel=2e-3)



def _density_spec():
    from fdp_ppl.kde import KDESpec
    from fdp_ppl.spaces import CartesianGrid

    return KDESpec(grid=CartesianGrid.uniform([[-2.0, 2.0]], 41), bandwidth=0.4, n=500)


def _machine_spec():
    from fdp_ppl.machine import ERMSpec

    return ERMSpec(fp.Gaussian.from_bandwidth(0.2), lam=0.1, n=500, domain=[[0, 1]], grid_size=30)


@pytest.mark.parametrize("make", [_density_spec, _machine_spec], ids=["density", "machine"])
def test_the_inverse_round_trips_for_densities_and_machines(make):
    """The smallest ε for half the simultaneous half-width of ε = 1 meets it, and 1% less does not (the plans only)."""
    spec, kw = make(), {"samples": 300, "seed": 2}

    def halfwidth(eps):
        return float(fp.plan(spec, fp.GaussianMechanism(eps, 1e-6)).accuracy(**kw)["simultaneous_halfwidth"])

    width = halfwidth(1.0) / 2
    eps = smallest_epsilon(spec, fp.GaussianMechanism(1.0, 1e-6), width, rtol=1e-3, **kw)
    assert 1.0 < eps and halfwidth(eps) <= width < halfwidth(eps / 1.01)

def test_accuracy_refuses_other_families_and_bad_levels():
    grid = fp.Grid.uniform(21)
    spec = fp.ICLPQRSpec(basis=fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid), tau=1.0, n=50)
    with pytest.raises(fp.errors.InputError, match="level"):
        fp.plan(spec, fp.ICLP(1.0)).accuracy(level=1.0)


def test_density_plan_accuracy_matches_a_monte_carlo_of_the_real_mechanism():
    from fdp_ppl.kde import KDESpec
    from fdp_ppl.spaces import CartesianGrid

    grid = CartesianGrid.uniform([[-2.0, 2.0]], 41)
    spec = KDESpec(grid=grid, bandwidth=0.4, n=500)
    mechanism, level = fp.GaussianMechanism(1.0, 1e-5), 0.9
    acc = fp.plan(spec, mechanism, seeded=True).accuracy(level=level, seed=1)
    assert acc["noise_sd"].dims == ("x",) and "constant_bias" not in acc
    fit = spec.fit(np.random.default_rng(0).normal(size=500).clip(-1.9, 1.9))
    tree = fp.release(fit, mechanism, draws=RELEASES, random_seed=5, study=True)
    noise = tree["posterior"]["density"].values.reshape(RELEASES, -1) - np.asarray(fit.density).reshape(-1)
    w = np.asarray(grid.weights[0])
    # margins as for mean curves: a few % relative error from 200 releases, 10% allowed
    assert abs(np.sqrt(np.mean(np.sum(w * noise**2, axis=1))) / float(acc["rms_l2_error"]) - 1) < 0.10
    assert abs(np.quantile(np.abs(noise).max(axis=1), level) / float(acc["simultaneous_halfwidth"]) - 1) < 0.10


def test_a_monte_carlo_that_does_not_fit_in_memory_is_refused_before_any_draw():
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.uniform(201))
    plan = fp.plan(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100), fp.ICLP(1.0))
    with pytest.raises(fp.InputError, match="Monte Carlo noise draws"):
        plan.accuracy(samples=10**12)  # 8 bytes x 10^12 x 804 per draw: far beyond any machine's share
