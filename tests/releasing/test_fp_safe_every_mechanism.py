"""Every mechanism's default path is floating-point safe (DESIGN invariant 8), one case per mechanism.

(a) The plan of each mechanism the command line and ``fp.release`` offer, on its default path (unseeded, default
    options): ``fp_safe`` is True and its generator is OpenDP's exact discrete sampler, the dithered lattice
    (:mod:`fdp_ppl.noise.snapping`) or, for the pure K-norm and the pure multivariate t, the exact pure lattice
    sampler (:mod:`fdp_ppl.noise.lattice`, δ = 0); the density's private bandwidth draws its quartiles on a public
    lattice. The t's dithered lattice stays available (``generator="snapped"``, safe at δ < 1e-8).
(b) The attack of Mironov (2012) (the exact numpy model of ``tests/noise/test_fp_safe.py``) on each Laplace
    mechanism of the mean family: the float sampler's releases rule a neighbour out for some coefficients and the
    true data never; the default (OpenDP) releases are reachable from both by exact lattice arithmetic (gap 0).
    The elliptical laws' lattice path has its own per-mechanism test (``tests/noise/test_snapping.py``), the
    bandwidth's in ``tests/kde/test_bandwidth_fp_safe.py``.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.releasing import schema as S
from fdp_ppl.releasing.registry import MECHANISMS
from tests.noise.test_fp_safe import lattice_reachable_factory, unreachable_share

SAFE_GENERATORS = ("opendp", "snapped", "lattice")


@pytest.fixture(scope="module")
def data():
    g = fp.Grid.uniform(30)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), g)
    x = np.clip(0.3 * np.random.default_rng(3).standard_normal((120, 30)) + np.sin(2 * np.pi * g.t), -2.0, 2.0)
    x2 = x.copy()
    x2[0] = x[1]  # the neighbour replaces one curve
    return g, basis, x, x2


def _summary(name, data, x=None):
    g, basis, x0, _ = data
    x = x0 if x is None else x
    if name == "bernstein":
        return fp.bernstein_mean(x, g, tau_inf=3.0)
    fit = {"iclp-qr": fp.iclp_qr_mean, "iclp-ar": fp.iclp_ar_mean, "rkhs": fp.rkhs_mean, "frl": fp.frl_mean}[name]
    return fit(x, basis, tau=2.0)


def _mechanism(name):
    e = MECHANISMS[name]
    kw = dict(e.option_defaults)
    if "nu" in inspect.signature(e.build).parameters:  # as in tests/noise/test_snapping.py (its σ root is cached)
        kw["nu"] = 4.0 if name == "t-process" else 5.0
    return e.build(1.0, 1e-5 if e.approximate else 0.0, **kw)


#: the (ε, δ) elliptical processes' exact-profile σ roots take 6-8 s cold: slow here (their default path is tested per
#: mechanism, lattice attack included, in tests/noise/test_snapping.py)
_HEAVY = ("t-process", "laplace-process")


#: the pure elliptical mechanisms: their default is the exact pure "lattice" generator (no δ); every pure
#: elliptical mechanism has one, so none is left on the float sampler
_PURE_LATTICE = ("knorm", "t")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _HEAVY else n for n in MECHANISMS])
def test_every_mean_mechanism_default_plan_is_floating_point_safe(name, data):
    spec = _summary(MECHANISMS[name].summary, data).spec
    plan = fp.plan(spec, _mechanism(name))
    assert plan.fp_safe is True and plan.generator in SAFE_GENERATORS, (plan.fp_safe, plan.generator)
    if name in _PURE_LATTICE:  # pure and safe: no δ, the claimed ε kept
        assert plan.generator == "lattice" and plan.cost.delta == 0.0
        assert plan.attrs["delta_guaranteed"] == 0.0 and plan.attrs["epsilon_guaranteed"] <= plan.cost.epsilon
    if name == "t":  # the dithered lattice stays available, at a small δ
        snapped = fp.plan(spec, _mechanism(name), generator="snapped")
        assert snapped.fp_safe is True and 0 < snapped.cost.delta < 1e-8, (snapped.fp_safe, snapped.cost)
    seeded = fp.plan(spec, _mechanism(name), seeded=True)
    assert seeded.fp_safe is False  # the seeded study's float sampler says so


def _kde_cases():
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec

    grid = CartesianGrid.uniform((0.0, 1.0), 40)
    return {"gp": (KDESpec(grid=grid, bandwidth=0.15, n=40), fp.GaussianMechanism(0.5, 1e-5)),
            "sobolev": (SobolevKDESpec(grid=grid, bandwidth=0.15, n=40), fp.GaussianMechanism(0.5, 1e-5)),
            "iclp": (ICLPKDESpec(grid=grid, bandwidth=0.15, n=40), fp.ICLP(0.5))}


@pytest.mark.parametrize("name", ["gp", "sobolev", "iclp"])
def test_every_density_mechanism_default_plan_is_floating_point_safe(name):
    spec, mech = _kde_cases()[name]
    plan = fp.plan(spec, mech)
    assert plan.fp_safe is True and plan.generator in SAFE_GENERATORS


def test_machine_and_bandwidth_default_plans_are_floating_point_safe():
    from fdp_ppl.kde import bandwidth_plan
    from fdp_ppl.machine import ERMSpec

    for spec, mech in ((ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=12, grid_size=20),
                        fp.GaussianMechanism(1.0, 1e-5)),
                       (ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=12, grid_size=20, eta=2.0),
                        fp.ICLP(1.0))):
        plan = fp.plan(spec, mech)
        assert plan.fp_safe is True and plan.generator == "opendp"
    assert bandwidth_plan(0.5).fp_safe is True


@pytest.mark.parametrize("name", ["iclp-qr", "iclp-ar", "frl", "bernstein"])
def test_laplace_mechanism_attack_finds_a_gap_on_floats_and_none_on_the_default_path(name, data):
    """One float release (the compiled sampler) and one default release of each Laplace mechanism: the float one
    is explained by the true data and not, for some coefficients, by the neighbour's; the default one is
    reachable from both (exact rational arithmetic on OpenDP's lattice)."""
    s = _summary(MECHANISMS[name].summary, data)
    nb = _summary(MECHANISMS[name].summary, data, x=data[3])
    assert np.any(nb.coefficients != s.coefficients)
    mech = _mechanism(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        floats = fp.release(s, mech, draws=3, generator="pymc", random_seed=5, study=True)
    safe = fp.release(s, mech, draws=3)
    assert (floats.attrs["fp_safe"], safe.attrs["fp_safe"], safe.attrs["noise_generator"]) == (0, 1, "opendp")
    b = floats[S.CONSTANT_DATA][S.NOISE_SCALE].values
    ys = floats[S.POSTERIOR][S.COEFFICIENTS].values[0]
    assert all(unreachable_share(y, s.coefficients, b) == 0.0 for y in ys)
    gap = np.mean([unreachable_share(y, nb.coefficients, b) for y in ys])
    assert gap > 0.1, gap  # measured: iclp-qr 0.70 (J = 30), iclp-ar 0.17 (J = 6), frl 0.75, bernstein 0.57 (1 draw)
    reach = lattice_reachable_factory(safe.attrs["noise_multiplier"])
    b = safe[S.CONSTANT_DATA][S.NOISE_SCALE].values
    for y in safe[S.POSTERIOR][S.COEFFICIENTS].values[0]:
        assert unreachable_share(y, s.coefficients, b, reach) == 0.0 == unreachable_share(y, nb.coefficients, b, reach)
