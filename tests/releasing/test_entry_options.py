"""Every entry point refuses the options a family does not take.

A sweep over every family × every entry point (``fp.infer``, ``fp.audit``, ``fp.release``, ``fp.plan``) × every option the
entry point has: an option the family does not take is refused with an ``InputError`` that names it and lists the
options the family takes — passing its default value explicitly included (``fp.infer``, ``fp.audit``) — before any
work (the family's function, ``build_target`` or the release function is a stub that would record the call); an
option it takes is not refused, and reaches the family's function with the value given.

``fp.release`` is swept with its own checks (``bound``, ``generator``, ``chains``, ``allow_nonprivate``:
``None`` means not given there), ``fp.plan`` with the same and ``n`` (an FPCA spec's) and a name no family takes. ``fp.audit`` is a plain function whatever the import order.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.auditing import core as audit_core
from fdp_ppl.auditing.targets import AUDIT_FAMILIES, AUDIT_OPTIONS, option_keys
from fdp_ppl.errors import InputError
from fdp_ppl.inference.infer import INFERENCE_FAMILIES, OPTIONS, inference_family
from fdp_ppl.releasing.families import RELEASES
from tests.helpers import family_curves

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning")


class _Reached(BaseException):
    """Raised by a stub where the work would start (a BaseException: the audit counts Exceptions as outcomes)."""


# ---------------------------------------------------------------------- tiny fits and releases of every family
@pytest.fixture(scope="module")
def fits():
    from fdp_ppl.machine import ERMSpec
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.kde import CartesianGrid, KDESpec

    curves = family_curves(12, 16, 0)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.from_points(curves["t"].values))
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (12, 1))
    return {
        "mean": (fp.iclp_qr_mean(curves, basis, tau=2.0), fp.ICLP(1.0)),
        "kde": (KDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 30), bandwidth=0.15, n=20).fit(
            rng.uniform(0.2, 0.8, 20)), fp.GaussianMechanism(1.0, 1e-5)),
        "machine": (ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=12, grid_size=16).fit(
            X, np.where(X[:, 0] > 0.5, 1.0, -1.0)), fp.GaussianMechanism(1.0, 1e-5)),
        "fpca": (FPCASpec(grid=fp.Grid.uniform(20), m=3, k=1, epsilon=1.0, tau=1.0).fit(
            family_curves(10, 20, 2).values), fp.ExponentialMechanism()),
    }


@pytest.fixture(scope="module")
def releases(fits):
    return {family: fp.release(fitted, mech, draws=2, random_seed=i, study=True)
            for i, (family, (fitted, mech)) in enumerate(fits.items())}


# ---------------------------------------------------------------------- fp.infer
#: where each family's work starts (patched with a recording stub)
_INFER_WORK = {"mean": ("fdp_ppl.inference.infer", "_infer"),
               "kde": ("fdp_ppl.inference.density", "infer_density"),
               "machine": ("fdp_ppl.inference.machine", "infer_machine_dispatch"),
               "fpca": ("fdp_ppl.inference.components", "infer_components")}
#: a value of each option other than its default (valid for every family that takes it)
_INFER_OTHER = {"prior": None, "target": "population", "draw": 1, "sampling_sd": 0.5, "method": "exact", "draws": 7,
                "tune": 9, "chains": 1, "cores": 2, "target_accept": 0.8, "random_seed": 3, "progressbar": False,
                "nuts_sampler": "numpyro", "posterior_predictive": True, "log_likelihood": False}
#: the documented defaults of fp.infer
_INFER_DEFAULTS = {"prior": "gp", "target": None, "draw": 0, "sampling_sd": None, "method": "auto", "draws": 1000,
                   "tune": 1000, "chains": 2, "cores": 1, "target_accept": 0.9, "random_seed": None,
                   "progressbar": True, "nuts_sampler": "pymc", "posterior_predictive": None, "log_likelihood": None}


def _defaults(function) -> dict:
    return {name: p.default.value for name, p in inspect.signature(function).parameters.items()
            if name not in ("release", "mechanism", "provenance")}  # provenance: every family, not a family option


@pytest.fixture
def infer_calls(monkeypatch):
    """Stubs in place of each family's work: they record the options they receive."""
    import importlib

    calls = {}
    for family, (module, name) in _INFER_WORK.items():
        module = importlib.import_module(module)

        def stub(release, prior="<none>", *, _family=family, **kw):
            calls.setdefault(_family, []).append({"prior": prior, **kw})
            return "reached"

        monkeypatch.setattr(module, name, stub)
    return calls


def test_infer_signature_shows_the_documented_defaults():
    assert _defaults(fp.infer) == _INFER_DEFAULTS
    assert set(_INFER_DEFAULTS) == set(OPTIONS) and list(_INFER_OTHER) == list(OPTIONS)
    assert "draw: 'int' = 0" in str(inspect.signature(fp.infer))
    assert all(_INFER_OTHER[o] != _INFER_DEFAULTS[o] for o in OPTIONS)


def test_every_release_has_its_family(releases):
    assert {inference_family(tree).family for tree in releases.values()} == set(INFERENCE_FAMILIES)
    for family, tree in releases.items():
        assert inference_family(tree).family == family


@pytest.mark.parametrize("family", list(INFERENCE_FAMILIES))
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("value", ["default", "other"])
def test_infer_option_sweep(releases, infer_calls, family, option, value):
    entry = INFERENCE_FAMILIES[family]
    given = _INFER_DEFAULTS[option] if value == "default" else _INFER_OTHER[option]
    if option in entry.options:
        assert fp.infer(releases[family], **{option: given}) == "reached"
        (call,) = infer_calls[family]
        if option in call:  # the value reaches the family's function unchanged
            assert call[option] == given or (option == "target" and family != "mean" and given is None)
        return
    with pytest.raises(InputError) as info:
        fp.infer(releases[family], **{option: given})
    err = info.value
    assert err.message == f"inference from a {entry.label} release takes no {option}"
    assert f"(its options: {', '.join(entry.options)})" in err.fix
    assert not infer_calls, "the refusal came after the work started"


def test_infer_names_every_refused_option_at_once(releases, infer_calls):
    with pytest.raises(InputError, match=r"takes no draw, method, cores, nuts_sampler; drop draw, method, cores, "
                                         r"nuts_sampler \(its options: prior, draws, tune"):
        fp.infer(releases["fpca"], draw=1, method="nuts", cores=7, nuts_sampler="bogus")
    with pytest.raises(InputError, match="kernel-machine release takes no sampling_sd, tune"):
        fp.infer(releases["machine"], sampling_sd=3, tune=5)
    assert not infer_calls


def test_components_refuse_before_any_compile(releases):
    """No stub: the refusal itself, on a real FPCA release (an option that was once silently ignored)."""
    for option, value in (("draw", 1), ("method", "nuts"), ("sampling_sd", 3), ("cores", 7),
                          ("nuts_sampler", "bogus"), ("target", "population")):
        with pytest.raises(InputError, match=f"principal-components \\(FPCA\\) release takes no {option}"):
            fp.infer(releases["fpca"], **{option: value})


def test_family_checks_of_values_still_apply(releases, infer_calls):
    with pytest.raises(InputError, match="kernel density estimate"):
        fp.infer(releases["kde"], method="nuts")
    assert not infer_calls


def test_infer_docstring_table_matches_the_table():
    doc = fp.infer.__doc__
    block = doc[doc.index("    release family"):doc.index("    Parameters")].splitlines()[2:-2]
    rows, label = {}, None
    for line in block:
        if line.startswith("    ====") or not line.strip():
            continue
        if line[4:34].strip():
            label = line[4:34].strip()
        rows[label] = rows.get(label, "") + line[34:]
    names = {"mean curve": "mean", "kernel density estimate": "kde", "kernel machine": "machine",
             "principal components (FPCA)": "fpca"}
    assert set(rows) == set(names)
    for label, family in names.items():
        listed = [o for o in re.findall(r"``(\w+)``", rows[label]) if o in OPTIONS]
        expected = INFERENCE_FAMILIES[family].options
        assert listed == list(expected) or (family == "mean" and "all of them" in rows[label]), (label, listed)


# ---------------------------------------------------------------------- fp.audit
#: a named mechanism of each family (the FPCA NUTS samplers are checked below)
_AUDIT_MECHANISM = {"mean": "iclp-qr", "kde": "iclp", "machine": "iclp", "fpca": "bingham/exact"}
_PAIRS = [(np.zeros(2), np.ones(2), "record 0: 0 vs 1")]


def _audit_other(family):
    """A value of each option other than its default (valid for a family that takes it)."""
    return {"family": family, "epsilon": 1.0, "delta": 0.0, "pairs": _PAIRS, "samples": 40, "confidence": 0.9,
            "random_seed": 1, "tests": 2, "events": ("statistic",), "timing_calls": 10,
            "options": {"fpca": {"n": 10}, "kde": {"eta": 1.5}}.get(family, {"eta": 2.0}), "spec": object(),
            "name": "fn", "train_fraction": 0.4, "progressbar": True}


def _release_fn(dataset, rng):
    raise _Reached


@pytest.fixture
def audit_work(monkeypatch):
    """build_target raises _Reached: a named mechanism's audit got past every check."""
    def stub(*args, **kwargs):
        raise _Reached

    monkeypatch.setattr(audit_core, "build_target", stub)


def _audit_call(family, option, given):
    if family == "callable":  # a release function needs its claim and its pairs
        kwargs = {"epsilon": 1.0, "pairs": _PAIRS, option: given}
        return fp.audit(_release_fn, **kwargs)
    kwargs = {"family": family, option: given}
    return fp.audit(_AUDIT_MECHANISM[family], **kwargs)


def test_audit_signature_shows_the_documented_defaults():
    assert _defaults(fp.audit) == {
        "family": "mean", "epsilon": None, "delta": None, "pairs": None, "samples": None, "confidence": 0.95,
        "random_seed": 0, "tests": 4, "events": ("statistic", "failure", "timing"), "timing_calls": 300,
        "options": None, "spec": None, "name": None, "train_fraction": 0.5, "progressbar": False}
    assert tuple(_defaults(fp.audit)) == AUDIT_OPTIONS


@pytest.mark.parametrize("family", list(AUDIT_FAMILIES))
@pytest.mark.parametrize("option", AUDIT_OPTIONS)
@pytest.mark.parametrize("value", ["default", "other"])
def test_audit_option_sweep(audit_work, family, option, value):
    entry = AUDIT_FAMILIES[family]
    given = _defaults(fp.audit)[option] if value == "default" else _audit_other(family)[option]
    if family == "callable" and option in ("epsilon", "pairs") and given is None:
        given = _audit_other(family)[option]  # required for a callable: its default is refused by value
    if option in entry.takes(_AUDIT_MECHANISM.get(family, "")):
        with pytest.raises(_Reached):
            _audit_call(family, option, given)
        return
    with pytest.raises(InputError) as info:
        _audit_call(family, option, given)
    err = info.value
    assert err.message == f"{entry.label} takes no {option}"
    assert f"(its options: {', '.join(entry.takes())})" in err.fix


@pytest.mark.parametrize("sampler", ["exact", "gibbs", "nuts"])
def test_fpca_nuts_audit_takes_no_timing_calls(audit_work, sampler):
    name = f"bingham/{sampler}"
    if sampler != "nuts":
        with pytest.raises(_Reached):
            fp.audit(name, family="fpca", timing_calls=300)
        return
    with pytest.raises(InputError, match="'bingham/nuts'.* takes no timing_calls") as info:
        fp.audit(name, family="fpca", timing_calls=300)
    takes = info.value.fix.partition("(its options: ")[2]
    assert "timing_calls" not in takes and "spec, train_fraction" in takes
    with pytest.raises(_Reached):
        fp.audit(name, family="fpca")


@pytest.mark.parametrize("family, name, spec, options, refused, takes", [
    ("mean", "iclp-qr", None, {"nu": 3.0}, "nu", "eta, psi"),
    ("release", "iclp-qr", object(), {"eta": 2.0}, "eta", "none"),  # the family's former name is still read
    ("mean", "gaussian", None, {"nu": 3.0, "eta": 2.0}, "nu", "calibration, eta, psi"),
    ("kde", "gp", None, {"eta": 1.5}, "eta", "none"),
    ("kde", "frl", None, {"k": 6}, "k", "M"),
    ("svm", "gp", None, {"eta": 2.0}, "eta", "none"),  # "svm": the kernel machine's former name
    ("fpca", "bingham/exact", None, {"n": 10, "iterations": 5}, "iterations", "n"),
    ("fpca", "gp-base", None, {"iterations": 5}, "iterations", "n"),
])
def test_audit_refuses_options_keys_a_mechanism_ignores(audit_work, family, name, spec, options, refused, takes):
    with pytest.raises(InputError) as info:
        fp.audit(name, family=family, options=options, **({} if spec is None else {"spec": spec}))
    assert info.value.message.endswith(f"takes no option {refused}")
    assert info.value.fix == f"drop {refused} from options (its options: {takes})"


@pytest.mark.parametrize("family, name, options", [
    ("mean", "t-process", {"nu": 3.0, "calibration": "exact", "eta": 2.0}), ("mean", "frl", {"M": 4}),
    ("kde", "iclp", {"eta": 1.5}), ("kde", "bernstein", {"k": 6}), ("machine", "iclp", {"eta": 2.0}),
    ("fpca", "bingham/gibbs", {"n": 10, "iterations": 5}), ("fpca", "gp-base/exact", {"n": 10})])
def test_audit_takes_the_options_keys_a_mechanism_reads(audit_work, family, name, options):
    assert set(options) <= set(option_keys(name, family))
    with pytest.raises(_Reached):
        fp.audit(name, family=family, options=options)


def test_audit_refusals_of_values_still_apply(audit_work):
    with pytest.raises(InputError, match="unknown family"):
        fp.audit("gp", family="nope")
    with pytest.raises(InputError, match="pure epsilon-DP"):
        fp.audit("iclp-qr", delta=1e-5)
    with pytest.raises(InputError, match="needs neighbouring pairs"):
        fp.audit(_release_fn, epsilon=1.0)


def test_cli_audit_refuses_what_the_mechanism_does_not_take(capsys):
    from fdp_ppl.cli import main

    for args in (["audit", "--mechanism", "iclp-qr", "--nu", "3"],
                 ["audit", "--family", "fpca", "--mechanism", "bingham/nuts", "--timing-calls", "5"]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("fdp-ppl: error:") and "drop" in err[0], err


# ---------------------------------------------------------------------- fp.release (its existing checks)
_RELEASE_FAMILY = {"mean": "mean", "kde": "kde", "machine": "machine", "fpca": "fpca"}
_RELEASE_OPTIONS = ("bound", "generator", "chains", "allow_nonprivate")
_RELEASE_VALUES = {"bound": "paper", "generator": "pymc", "chains": 2, "allow_nonprivate": True}


@pytest.fixture
def release_work(monkeypatch):
    """Each family's plan hook raises _Reached (patched where fp.release imports it by name)."""
    import importlib

    def stub(*args, **kwargs):
        raise _Reached(kwargs)

    for entry in RELEASES.values():
        monkeypatch.setattr(importlib.import_module(entry.module), "plan_release", stub)


@pytest.mark.parametrize("family", list(_RELEASE_FAMILY))
@pytest.mark.parametrize("option", _RELEASE_OPTIONS)
def test_release_option_sweep(fits, release_work, family, option):
    fitted, mech = fits[family]
    (entry,) = [e for e in RELEASES.values() if e.family == _RELEASE_FAMILY[family]]
    if option in entry.options:
        with pytest.raises(_Reached) as reached:
            fp.release(fitted, mech, random_seed=0, study=True, **{option: _RELEASE_VALUES[option]})
        assert reached.value.args[0][option] == _RELEASE_VALUES[option]
        return
    with pytest.raises(InputError) as info:
        fp.release(fitted, mech, random_seed=0, study=True, **{option: _RELEASE_VALUES[option]})
    takes = [o for o in entry.options if o in _RELEASE_OPTIONS]
    assert info.value.message == f"a {entry.family} release takes no {option}"
    assert f"(its options: {', '.join(takes) or 'none'})" in info.value.fix


# ---------------------------------------------------------------------- fp.plan (the release's checks, from a spec)
_PLAN_VALUES = {**_RELEASE_VALUES, "n": 10, "shrink": 0.5}  # every family option fp.plan knows, and one it does not


@pytest.mark.parametrize("family", list(_RELEASE_FAMILY))
@pytest.mark.parametrize("option", list(_PLAN_VALUES))
def test_plan_option_sweep(fits, release_work, family, option):
    """fp.plan from a public spec refuses, before the family's plan hook, every option the family does not take
    (an unknown name too), naming the options it takes; an option it takes reaches the hook as given."""
    from fdp_ppl.releasing.families import FAMILY_OPTIONS

    assert set(_PLAN_VALUES) - {"shrink"} == set(FAMILY_OPTIONS)
    fitted, mech = fits[family]
    (entry,) = [e for e in RELEASES.values() if e.family == _RELEASE_FAMILY[family]]
    takes = entry.options + entry.plan_options
    if option in takes:
        with pytest.raises(_Reached) as reached:
            fp.plan(fitted.spec, mech, **{option: _PLAN_VALUES[option]})
        assert reached.value.args[0][option] == _PLAN_VALUES[option]
        return
    with pytest.raises(InputError) as info:
        fp.plan(fitted.spec, mech, **{option: _PLAN_VALUES[option]})
    assert info.value.message == f"a {entry.family} plan takes no {option}"
    assert info.value.fix.endswith(f"(its options: {', '.join(takes) or 'none'})")


# ---------------------------------------------------------------------- fp.audit is a function
def test_audit_is_a_function_after_importing_the_package():
    import fdp_ppl.auditing.core  # noqa: F401

    assert inspect.isfunction(fp.audit) and fp.audit is audit_core.audit
    assert inspect.ismodule(fp.auditing) and fp.auditing.audit is audit_core.audit


def test_audit_is_a_function_in_a_fresh_process():
    """Both import orders, each in its own fresh interpreter (run side by side)."""
    orders = ("import fdp_ppl.auditing.core\nimport fdp_ppl as fp\nf = fp.audit",
              "import fdp_ppl as fp\nf = fp.audit\nimport fdp_ppl.auditing.core\nassert fp.audit is f")
    check = "\nimport inspect, fdp_ppl\nassert inspect.isfunction(f) and inspect.isfunction(fdp_ppl.audit)"
    runs = [subprocess.Popen([sys.executable, "-c", order + check], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for order in orders]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
