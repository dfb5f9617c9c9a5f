"""The shipped test kit :mod:`fdp_ppl.testing`: every registered noise law passes :func:`check_law`, every
registered summary spec passes :func:`check_spec_sensitivity` in each norm it has a sensitivity in (record- and
person-level neighbours), and planted bugs — a law whose variance, log-density, sampler, privacy loss or stated ε
is wrong, a spec whose sensitivity is halved or forgets a person's k records — are caught, so these tests can
fail. The kit's docstring examples run as doctests.

The loops read :data:`fdp_ppl.releasing.registry.LAWS` and ``SUMMARIES``: a new law or spec is covered without
edits here (a law whose constructor takes parameters adds examples to :data:`EXAMPLES`; a spec whose defaults do
not suit the small dataset adds options to :data:`SPEC_OPTIONS`).
"""

from __future__ import annotations

import dataclasses
import doctest

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import InputError
from fdp_ppl.io.units import PrivacyUnit
from fdp_ppl.noise.laws import Elliptical, Laplace, NoiseLaw
from fdp_ppl.noise.laws.base import check_scale
from fdp_ppl.releasing import registry
from fdp_ppl.summaries import BernsteinSpec, ICLPQRSpec
from fdp_ppl.testing import LawReport, SensitivityReport, check_law, check_spec_sensitivity

J3 = [np.array([0.3, 1.0, 2.5])]

#: constructor parameters of the registered law classes that take any (fast set; more in the slow test)
EXAMPLES = {"elliptical": [{"kind": "t", "nu": nu} for nu in (1.0, 3.0, 30.0)]
            + [{"kind": k} for k in ("laplace", "knorm", "gaussian")]}
SLOW_EXAMPLES = [Elliptical("t", nu=0.5), Elliptical("t", nu=7.5)]


def _laws() -> list[NoiseLaw]:
    out = []
    for name, cls in registry.LAWS.items():
        out += [cls(**kw) for kw in EXAMPLES[name]] if name in EXAMPLES else [cls()]
    return out


LAWS = _laws()


# ====================================================================================== laws
@pytest.mark.parametrize("law", LAWS, ids=[law.name for law in LAWS])
def test_every_registered_law_passes_check_law(law):
    """Product laws at J = 1 and 3 (the default scales), joint laws at J = 3 (J = 1 in the slow test)."""
    report = check_law(law, **({} if law.product else {"scales": J3}), random_seed=1)
    assert isinstance(report, LawReport) and report.law == law.name
    Js = (1, 3) if law.product else (3,)
    for J in Js:  # nothing passes vacuously: each property was checked at each J
        for prop in ("logp numpy = PyTensor = pm.logp", "density integrates to one", "variance = integral of logp",
                     "draws follow logp", "privacy_loss = logp(y, c) - logp(y, c')"):
            assert any(p.startswith(prop) and f"J={J}" in p for p in report.passed), (prop, J, report.passed)
    assert 0.0 < report.min_ks_pvalue <= 1.0 and report.max_logp_error < 1e-8
    stated = law.name in ("laplace", "elliptical-knorm") or law.name.startswith("elliptical-t")
    if stated:  # the supremum of the privacy loss for a unit shift attains the stated ε
        eps, found = report.epsilon[3]
        assert found == pytest.approx(eps, rel=1e-6)
        if law.name in ("laplace", "elliptical-knorm"):
            assert eps == pytest.approx(1.0)
    elif law.name in ("normal", "elliptical-gaussian"):
        assert not report.epsilon and any("states no ε" in s for s in report.skipped)
    if law.name.split("(")[0] in ("laplace", "normal", "elliptical-t", "elliptical-gaussian", "elliptical-knorm"):
        assert any(p.startswith("logp = reference") for p in report.passed)  # scipy or a closed form


@pytest.mark.slow
@pytest.mark.parametrize("law", LAWS + SLOW_EXAMPLES, ids=[law.name for law in LAWS + SLOW_EXAMPLES])
def test_every_law_passes_check_law_at_the_default_scales(law):
    report = check_law(law, random_seed=2, n_draws=10_000)
    assert any("J=1" in p for p in report.passed) and any("J=3" in p for p in report.passed)


def test_every_registered_law_class_is_swept():
    swept = {type(law) for law in LAWS}
    assert set(registry.LAWS.values()) <= swept


@pytest.fixture
def planted():
    """Subclasses of laws with one bug each; removed from NoiseLaw.classes afterwards (the registry of laws is
    read first, so they never enter it)."""
    assert registry.LAWS  # built before the subclasses exist
    before = list(NoiseLaw.classes)

    class VarianceOffBy2(Laplace):
        def variance(self, scale):
            return check_scale(scale) ** 2  # b², not 2b²

    class LogpWrongScale(Laplace):
        def logp(self, y, mu, scale, **kw):
            return super().logp(y, mu, 1.2 * np.asarray(scale), **kw)

    class SamplerWrongScale(Laplace):
        def rv(self, mu, scale, n_draws):
            return super().rv(mu, 1.2 * scale, n_draws)

    class LossSignFlipped(Laplace):
        def privacy_loss(self, y, centre, centre_prime, scale):
            return -super().privacy_loss(y, centre, centre_prime, scale)

    class TVarianceOff(Elliptical):
        def variance(self, scale):
            return 1.1 * super().variance(scale)

    yield {"variance off by 2x": (VarianceOffBy2(), "variance of coordinate 0 .*ratio 0.5000"),
           "logp with the wrong scale": (LogpWrongScale(), "logp against the reference density"),
           "sampler with the wrong scale": (SamplerWrongScale(), "do not follow logp .* Kolmogorov-Smirnov"),
           "privacy loss with the wrong sign": (LossSignFlipped(), "the sign is flipped"),
           "t variance off by 10%": (TVarianceOff("t", nu=30), "variance of coordinate 0 .*ratio 1.0999")}
    NoiseLaw.classes[:] = before


@pytest.mark.parametrize("bug", ["variance off by 2x", "logp with the wrong scale", "sampler with the wrong scale",
                                 "privacy loss with the wrong sign", "t variance off by 10%"])
def test_planted_law_bugs_are_caught(planted, bug):
    law, message = planted[bug]
    with pytest.raises(AssertionError, match=message) as info:
        check_law(law, scales=J3)
    assert "\n" not in str(info.value) and str(info.value).startswith(law.name)


def test_the_sample_variance_check_catches_what_the_integral_cannot():
    """The sample-variance check on its own (in check_law the integral of logp catches a wrong variance first):
    a claimed variance off by 2x is many standard errors from the draws' variance; the true one is not."""
    import fdp_ppl.testing.laws as kit

    law = Laplace()
    marg = kit._Marginals(law, J3[0])
    report = LawReport(law=law.name)
    with pytest.raises(AssertionError, match="variance of coordinate 0 .* standard errors"):
        kit._check_draws(law, J3[0], np.random.default_rng(0), 4000, 1e-4, ("compiled sampler",), marg,
                         0.5 * law.variance(J3[0]), report)
    kit._check_draws(law, J3[0], np.random.default_rng(0), 4000, 1e-4, ("compiled sampler",), marg,
                     law.variance(J3[0]), report)


def test_a_wrong_stated_epsilon_is_caught():
    def laplace_eps(h, s):
        return float(np.sum(np.abs(h) / s))

    with pytest.raises(AssertionError, match="exceeds the stated ε"):
        check_law(Laplace(), scales=J3, samplers=(), epsilon=lambda h, s: 0.9 * laplace_eps(h, s))
    with pytest.raises(AssertionError, match="falls short of the stated ε"):
        check_law(Laplace(), scales=J3, samplers=(), epsilon=lambda h, s: 1.1 * laplace_eps(h, s))
    # the t law's closed form ε = (ν + d) asinh(a / (2√ν)) is what its privacy loss attains
    report = check_law(Elliptical("t", nu=3.0), scales=J3, samplers=())
    eps, found = report.epsilon[3]
    assert eps == pytest.approx(6.0 * np.arcsinh(1.0 / (2.0 * np.sqrt(3.0)))) and found == pytest.approx(eps)


def test_check_law_refuses_bad_arguments():
    with pytest.raises(InputError, match="NoiseLaw"):
        check_law("laplace")
    with pytest.raises(InputError, match="finite values > 0"):
        check_law(Laplace(), scales=[np.array([1.0, -1.0])])
    with pytest.raises(InputError, match="unknown samplers"):
        check_law(Laplace(), samplers=("numpy",))


# ====================================================================================== summary specs
#: options for the small dataset (n = 20, τ = 1, 30-point grid) where a spec's defaults do not fit it
SPEC_OPTIONS = {"iclp-qr": {"eta": 1.5, "psi": 0.05}, "iclp-ar": {"eta": 1.1, "psi": 1e-4}, "frl": {"M": 6},
                "rkhs": {"psi": 0.05}, "bernstein": {"k": 8}}
N = 20


@pytest.fixture(scope="module")
def basis():
    return fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(30))


def _spec(cls, basis, n=N, **kw):
    fields = {f.name for f in dataclasses.fields(cls)}
    public = {"basis": basis} if "basis" in fields else {"lattice_grid": basis.grid}
    return cls(**public, tau=1.0, n=n, **{**SPEC_OPTIONS.get(cls.name, {}), **kw})


def _spec_norms():
    """(spec name, norm) for every registered spec and every norm it has a tight sensitivity in."""
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(30))
    out = []
    for name, cls in registry.SUMMARIES.items():
        spec = _spec(cls, basis)
        for norm in spec.norms:
            try:
                spec.sensitivity(norm, "tight")
            except InputError:
                continue
            out.append(pytest.param(name, norm, id=f"{name}-{norm}"))
    return out


@pytest.mark.parametrize("name,norm", _spec_norms())
def test_every_registered_spec_passes_check_spec_sensitivity(name, norm, basis):
    """No neighbouring pair exceeds the tight Δ; for linear specs the worst pair attains it (within 1e-9), so
    the brute force is strong enough to catch a bound that is too small."""
    spec = _spec(registry.SUMMARIES[name], basis)
    report = check_spec_sensitivity(spec, norm=norm, n_pairs=20, n_search=20, random_seed=3)
    assert isinstance(report, SensitivityReport) and report.norm == norm and report.bound == "tight"
    assert report.sensitivity == spec.sensitivity(norm, "tight").value
    assert report.pairs_tried > 1000
    if spec.linear:
        assert report.max_ratio == pytest.approx(1.0, abs=1e-9), report.worst
    else:  # soft thresholding (ICLP-AR) shrinks the difference, but the search comes close
        assert 0.5 < report.max_ratio <= 1.0 + 1e-9, report
    # the looser paper bound passes too
    assert check_spec_sensitivity(spec, norm=norm, bound="paper", n_pairs=5, n_search=5).max_ratio <= 1.0 + 1e-9


def test_every_registered_spec_has_a_norm():
    names = {p.values[0] for p in _spec_norms()}
    assert names == set(registry.SUMMARIES)


@pytest.mark.parametrize("unit", [PrivacyUnit("person", combine="mean"), PrivacyUnit("person", max_contributions=2),
                                  PrivacyUnit("person", max_contributions=3, order="visit")],
                         ids=["combine", "max2", "max3-ordered"])
@pytest.mark.parametrize("cls", [ICLPQRSpec, BernsteinSpec], ids=["iclp-qr", "bernstein"])
def test_person_level_neighbours_attain_the_unit_sensitivity(unit, cls, basis):
    """All records of one person replaced: the unit-level Δ (k × a record's for max_contributions=k) holds
    and is attained."""
    spec = _spec(cls, basis, n=24, privacy_unit=unit)
    report = check_spec_sensitivity(spec, n_pairs=10, n_search=10, random_seed=4, min_ratio=1 - 1e-9)
    assert report.sensitivity == pytest.approx(unit.contributions * _spec(cls, basis, n=24).sensitivity().value)
    assert "replace one person" in report.neighbouring


@dataclasses.dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class HalvedICLPQR(ICLPQRSpec):
    """Planted bug: the sensitivity is half the true one."""

    def sensitivity(self, norm=None, bound="tight"):
        s = super().sensitivity(norm, bound)
        return dataclasses.replace(s, value=s.value / 2)


@dataclasses.dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class HalvedBernstein(BernsteinSpec):
    def sensitivity(self, norm=None, bound="tight"):
        s = super().sensitivity(norm, bound)
        return dataclasses.replace(s, value=s.value / 2)


@dataclasses.dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RecordLevelICLPQR(ICLPQRSpec):
    """Planted bug: a person-level spec that states the record-level Δ (forgets the k records of a person)."""

    def _unit_sensitivity(self, sens):
        return sens


@pytest.mark.parametrize("norm", ["1,C", "cameron-martin", "l1"])
def test_a_halved_sensitivity_is_caught(norm, basis):
    with pytest.raises(AssertionError, match=r"above the claimed sensitivity .* factor 2\.0000") as info:
        check_spec_sensitivity(_spec(HalvedICLPQR, basis), norm=norm, n_pairs=5, n_search=5)
    assert "\n" not in str(info.value)
    with pytest.raises(AssertionError, match="above the claimed sensitivity"):
        check_spec_sensitivity(_spec(HalvedBernstein, basis), n_pairs=5, n_search=5)


def test_a_person_level_sensitivity_that_forgets_k_is_caught(basis):
    spec = _spec(RecordLevelICLPQR, basis, n=24, privacy_unit=PrivacyUnit("person", max_contributions=2))
    with pytest.raises(AssertionError, match="replace one person .* factor 2"):
        check_spec_sensitivity(spec, n_pairs=5, n_search=5)


def test_a_bound_that_is_not_attained_fails_min_ratio(basis):
    spec = _spec(ICLPQRSpec, basis)
    with pytest.raises(AssertionError, match="is not attained"):
        check_spec_sensitivity(spec, bound="paper", n_pairs=5, n_search=5, min_ratio=0.99)


def test_check_spec_sensitivity_refuses_bad_arguments(basis):
    with pytest.raises(InputError, match="unknown sensitivity norm"):
        check_spec_sensitivity(_spec(ICLPQRSpec, basis), norm="l7")
    with pytest.raises(InputError, match="only has an l1 sensitivity"):
        check_spec_sensitivity(_spec(BernsteinSpec, basis), norm="1,C")
    with pytest.raises(InputError, match="record_norm"):
        check_spec_sensitivity(_spec(ICLPQRSpec, basis), record_norm="l3")
    # a fitted summary is checked through its spec; a custom distance is used as given
    spec = _spec(ICLPQRSpec, basis)
    fitted = spec.fit(np.random.default_rng(0).standard_normal((N, basis.grid.size)))
    r = check_spec_sensitivity(fitted, norm="l1", n_pairs=5, n_search=5,
                               distance=lambda s, h: float(np.sum(np.abs(h))))
    assert r.max_ratio == pytest.approx(1.0, abs=1e-9)


# ====================================================================================== doctests
@pytest.mark.parametrize("module", ["fdp_ppl.testing.laws", "fdp_ppl.testing.sensitivity"])
def test_docstring_examples_run(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result


def test_the_kit_is_reachable_from_the_package():
    assert fp.testing.check_law is check_law and fp.testing.check_spec_sensitivity is check_spec_sensitivity
