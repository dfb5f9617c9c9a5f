"""A kernel machine's plan promises the sign agreement its real releases deliver (DESIGN, data flow: a family's
accuracy hook computes from the public plan alone, no data read, nothing charged)."""

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.machine import ERMSpec

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning")

RELEASES = 1000


def _data(n):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, 1))
    y = np.where(rng.uniform(size=n) < 0.5 + 0.4 * np.sin(2 * np.pi * X[:, 0]), 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("mechanism,eta", [(fp.GaussianMechanism(0.5, 1e-6), None), (fp.ICLP(0.3), 2.0)],
                         ids=["gp", "iclp"])
def test_planned_sign_agreement_matches_a_monte_carlo_of_the_real_mechanism(mechanism, eta):
    n = 200
    spec = ERMSpec(fp.Gaussian.from_bandwidth(0.15), lam=0.05, n=n, domain=[[0, 1]], grid_size=40, eta=eta)
    fit = spec.fit(*_data(n))
    f = fit.decision(spec.points)
    tree = fp.release(fit, mechanism, draws=RELEASES, random_seed=7, study=True)
    released = tree["posterior"]["decision"].values.reshape(RELEASES, -1)
    disagree_mc = np.mean(np.sign(released) != np.sign(f), axis=0)
    # the plan at the stated margin |f(x)| of each grid point (here known: the test holds the fit)
    acc = fp.plan(spec, mechanism).accuracy(margin=np.abs(f), seed=1)
    disagree_plan = 1.0 - np.diag(acc["sign_agreement"].values)
    # ~15% of signs flip on average over 40 points; 1000 releases give the mean a relative error of ~2-3%
    assert 0.05 < disagree_plan.mean() < 0.5
    assert abs(disagree_mc.mean() / disagree_plan.mean() - 1) < 0.10
    # the noise bands of the same plan: the sd of the released values around the (projected) fit
    sd = released.std(axis=0, ddof=1)
    assert abs(np.mean(sd / acc["noise_sd"].values) - 1) < 0.10


def test_sign_agreement_grows_with_the_margin_and_is_capped_by_the_public_bound():
    spec = ERMSpec(fp.Gaussian.from_bandwidth(0.2), lam=0.1, n=500, domain=[[0, 1]], grid_size=30)
    acc = fp.plan(spec, fp.GaussianMechanism(0.5, 1e-6)).accuracy(samples=1000)
    agree, kept = acc["mean_sign_agreement"].values, acc["all_signs_kept"].values
    assert np.all(np.diff(agree) >= 0) and np.all(np.diff(kept) >= 0) and np.all(kept <= agree)
    assert acc["margin"].max() <= acc.attrs["decision_bound"]
    # the margin at which every sign is kept with probability `level` is the simultaneous half-width
    at = fp.plan(spec, fp.GaussianMechanism(0.5, 1e-6)).accuracy(
        margin=float(acc["simultaneous_halfwidth"]), samples=1000)
    assert float(at["all_signs_kept"][0]) == pytest.approx(acc.attrs["level"], abs=0.01)
    with pytest.raises(fp.InputError, match="margins"):
        fp.plan(spec, fp.GaussianMechanism(0.5, 1e-6)).accuracy(margin=0.0)
