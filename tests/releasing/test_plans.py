"""``fp.plan`` for every family and every mechanism the command line offers, from public quantities only, and the
release then charging and recording exactly that plan (DESIGN invariant 11: every public check, and everything
charged, is known before the data). One table: mean (every ``fdp-ppl release --mechanism``), densities (every
``fdp-ppl kde --mechanism``), kernel machines (``fdp-ppl svm --mechanism gp|iclp``) and principal components
(``fdp-ppl fpca --sampler exact|gibbs|nuts``)."""

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.releasing import registry
from fdp_ppl.testing.family import check_family
from tests.helpers import family_curves

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning",
                                        "ignore::fdp_ppl.summaries.curves.TauTooSmallWarning")


@pytest.fixture(scope="module")
def curves():
    return family_curves(24, 21)


@pytest.mark.parametrize("name", sorted(registry.MECHANISMS))
def test_every_mean_mechanism_plans_without_data_and_releases_its_plan(name, curves, tmp_path):
    entry = registry.MECHANISMS[name]
    grid = fp.Grid.from_points(curves["t"].values)
    public = grid if entry.summary == "bernstein" else fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    spec = entry.spec(public, tau=2.0, n=curves.sizes["curve"])
    mech = entry.mechanism(1.0, 1e-5 if entry.approximate else None, **({"nu": 5.0} if "nu" in entry.options else {}))
    plan = fp.plan(spec, mech, draws=2, seeded=True)  # no curves anywhere
    assert plan.family == "mean" and plan.cost.epsilon == pytest.approx(2.0)
    assert plan.noise_scale.size == spec.n_components and dict(plan.output)["t"] == curves.sizes["t"]
    got, tree = check_family(spec.fit(curves), mech, draws=2, random_seed=1, tmp_path=tmp_path)
    assert got.event == plan.event and dict(got.attrs) == {**dict(plan.attrs)}
    assert tree.attrs["mechanism"] == plan.mechanism


def _kde_cases():
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec
    from fdp_ppl.kde.baselines import BernsteinKDESpec, FRLKDESpec

    g1, g2 = CartesianGrid.uniform((0.0, 1.0), 40), CartesianGrid.uniform([(0.0, 1.0)] * 2, 12)
    return {"gp": (KDESpec(grid=g1, bandwidth=0.1, n=30), fp.GaussianMechanism(1.0, 1e-5)),
            "sobolev": (SobolevKDESpec(grid=g1, bandwidth=0.1, n=30), fp.GaussianMechanism(1.0, 1e-5)),
            "iclp": (ICLPKDESpec(grid=g1, bandwidth=0.1, n=30), fp.ICLP(1.0)),
            "frl-2d": (FRLKDESpec(grid=g2, bandwidth=0.2, n=30), fp.FRL(1.0)),
            "bernstein-2d": (BernsteinKDESpec(grid=g2, bandwidth=0.2, n=30, k=4), fp.Bernstein(1.0))}


@pytest.mark.parametrize("name", ["gp", "sobolev", "iclp", "frl-2d", "bernstein-2d"])
def test_every_density_mechanism_plans_without_data_and_releases_its_plan(name, tmp_path):
    spec, mech = _kde_cases()[name]
    plan = fp.plan(spec, mech, chains=2)
    assert plan.family == "kde" and plan.output["chain"] == 2
    x = np.random.default_rng(2).uniform(0.1, 0.9, (30, spec.grid.d) if spec.grid.d > 1 else 30)
    check_family(spec.fit(x), mech, draws=1, chains=2, random_seed=3, tmp_path=tmp_path)


@pytest.mark.parametrize("mechanism", ["gp", "iclp"])
def test_kernel_machine_plans_without_data_and_releases_its_plan(mechanism, tmp_path):
    from fdp_ppl.machine import ERMSpec

    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, (16, 1))
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    if mechanism == "gp":
        spec, mech = ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=16, grid_size=20), fp.GaussianMechanism(
            1.0, 1e-5)
    else:
        spec, mech = ERMSpec(fp.Matern(0.2, nu=1.5), lam=1.0, n=16, grid_size=20, eta=2.0), fp.ICLP(1.0)
    plan = fp.plan(spec, mech)
    assert plan.family == "machine" and plan.noise_scale.size > 0
    check_family(spec.fit(X, y), mech, draws=2, random_seed=5, tmp_path=tmp_path)


def _fpca_cases():
    from fdp_ppl._names import FPCA_MECHANISMS

    return [pytest.param(name, marks=pytest.mark.slow) if name.endswith("/nuts") else name
            for name in FPCA_MECHANISMS]


@pytest.mark.parametrize("name", _fpca_cases())
def test_principal_components_plan_without_data_and_release_their_plan(name, curves, tmp_path):
    """Every FORM/SAMPLER of ``fdp-ppl fpca`` (the NUTS samplers, which compile a PyMC model, in the slow run): the plan
    from the public spec alone is what the release charges and records."""
    from fdp_ppl.fpca import FPCASpec

    form, sampler = name.split("/")
    k = 2 if sampler in ("sequential", "gibbs") else 1
    spec = FPCASpec(grid=fp.Grid.uniform(curves.sizes["t"]), m=4, k=k, epsilon=1.0, tau=2.0, form=form)
    mech = fp.ExponentialMechanism(sampler, iterations=100 if sampler == "nuts" else 20)
    plan = fp.plan(spec, mech, n=curves.sizes["curve"])
    assert plan.family == "fpca"
    assert plan.certified == (sampler in ("exact", "sequential"))
    if plan.certified:
        assert plan.attrs["proposal_budget"] > 0
    check_family(spec.fit(curves.values), mech, draws=2, random_seed=6, tmp_path=tmp_path,
                 plan_options={"n": curves.sizes["curve"]})


def test_uncertified_mcmc_plan_says_so():
    from fdp_ppl.fpca import FPCASpec

    spec = FPCASpec(grid=fp.Grid.uniform(21), m=4, k=2, epsilon=1.0, tau=2.0)
    plan = fp.plan(spec, fp.ExponentialMechanism("gibbs", iterations=20), n=24)
    assert not plan.certified and "uncertified" in plan.guarantee and plan.attrs["certified"] == 0
    assert "uncertified" in plan.label
