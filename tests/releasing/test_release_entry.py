"""One release protocol for every family: ``fp.plan`` (public, no data) and ``fp.release`` (plan, charge, draw,
record) dispatch through ``fdp_ppl.releasing.families.FAMILIES``.

Each family's release follows its plan (``fdp_ppl.testing.family.check_family``); a wrong mechanism or an option
the family does not take is refused before the ledger is charged.
"""

import re

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import CompatibilityError, InputError, SchemaError
from tests.helpers import family_curves

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning")

#: attrs that record when a tree was made (differ between two calls by construction)
_CLOCK = {"created_at"}


@pytest.fixture(scope="module")
def mean_summary():
    curves = family_curves(30, 25)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.from_points(curves["t"].values))
    return fp.iclp_qr_mean(curves, basis, tau=2.0)


@pytest.fixture(scope="module")
def kde_fit():
    from fdp_ppl.kde import CartesianGrid, KDESpec

    x = np.random.default_rng(1).uniform(0.2, 0.8, 40)
    return KDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 50), bandwidth=0.15, n=40).fit(x)


@pytest.fixture(scope="module")
def erm_fit():
    from fdp_ppl.machine import ERMSpec

    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, (12, 1))
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    return ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=12, grid_size=20).fit(X, y)


@pytest.fixture(scope="module")
def fpca_fit():
    from fdp_ppl.fpca import FPCASpec

    curves = family_curves(20, 30, seed=3).values
    return FPCASpec(grid=fp.Grid.uniform(30), m=5, k=1, epsilon=1.0, tau=2.0).fit(curves)


# ---------------------------------------------------------------------- the plan is what the release does
def _cases(mean_summary, kde_fit, erm_fit, fpca_fit):
    """(name, fitted, mechanism, family options, options only the spec's plan needs): every family and law."""
    from fdp_ppl.noise.elliptical.process import EllipticalMechanism

    return [("mean-iclp", mean_summary, fp.ICLP(1.0), {"bound": "paper"}, {}),
            ("mean-gaussian", mean_summary, fp.GaussianMechanism(1.0, 1e-6), {}, {}),
            ("mean-frl", mean_summary, fp.FRL(1.0), {}, {}),
            ("mean-t", mean_summary, EllipticalMechanism(1.0, family="t", nu=5.0), {}, {}),
            ("kde-gp", kde_fit, fp.GaussianMechanism(0.5, 1e-5), {"chains": 2, "generator": "pymc"}, {}),
            ("machine-gp", erm_fit, fp.GaussianMechanism(1.0, 1e-5), {"chains": 2}, {}),
            ("fpca-exact", fpca_fit, fp.ExponentialMechanism("exact", delta=1e-10), {}, {"n": 20}),
            ("fpca-pure", fpca_fit, fp.ExponentialMechanism("exact"), {}, {"n": 20})]


def test_every_family_follows_its_public_plan(tmp_path, mean_summary, kde_fit, erm_fit, fpca_fit):
    """One table, every family (DESIGN invariant 11: everything charged is known before the data): the plan made
    from the public spec alone equals the fit's; the ledger is charged exactly ``plan.cost`` with ``plan.event``;
    the release records ``plan.attrs`` unchanged, has the planned dims, and reads back from netCDF the same."""
    from fdp_ppl.testing.family import check_family

    rows = []
    for name, fitted, mech, options, plan_options in _cases(mean_summary, kde_fit, erm_fit, fpca_fit):
        plan, tree = check_family(fitted, mech, draws=2, tmp_path=tmp_path, plan_options=plan_options, **options)
        rows.append((name, plan.family, plan.cost.epsilon, plan.fp_safe))
        assert tree.attrs["release_family"] == plan.family
    assert {r[1] for r in rows} == {"mean", "kde", "machine", "fpca"}


def test_plan_reads_no_data_and_is_frozen(mean_summary):
    """fp.plan takes the public spec (no records anywhere in it) and returns an immutable plan."""
    import dataclasses

    plan = fp.plan(mean_summary.spec, fp.ICLP(1.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.draws = 5
    with pytest.raises(ValueError):
        plan.noise_scale[0] = 0.0
    with pytest.raises(TypeError):
        plan.attrs["epsilon"] = 9.0
    of_fit = fp.plan(mean_summary, fp.ICLP(1.0))  # a fit is read for its public spec only
    assert not any(isinstance(x, np.ndarray) and np.array_equal(x, mean_summary.coefficients)
                   for x in vars(of_fit).values())


def test_a_planted_plan_mismatch_is_caught(mean_summary, monkeypatch):
    """The protocol records plan.attrs over whatever a draw hook wrote, and check_family fails on a draw hook that
    releases more than planned (so the kit can fail)."""
    import dataclasses

    from fdp_ppl.releasing import draw
    from fdp_ppl.testing.family import check_family

    original = draw.draw_release

    def lying(summary, plan, **kw):
        tree = original(summary, plan, **kw)
        tree.attrs["sensitivity"] = tree.attrs["sensitivity"] / 2
        return tree

    monkeypatch.setattr(draw, "draw_release", lying)
    plan, tree = check_family(mean_summary, fp.ICLP(1.0))
    assert tree.attrs["sensitivity"] == plan.sensitivity

    def one_more(summary, plan, **kw):
        return original(summary, dataclasses.replace(plan, draws=plan.draws + 1), **kw)

    monkeypatch.setattr(draw, "draw_release", one_more)
    with pytest.raises(AssertionError, match="curve has dims .* planned"):
        check_family(mean_summary, fp.ICLP(1.0))

    def relabelled(summary, plan, **kw):
        tree = original(summary, plan, **kw)
        tree["posterior"] = tree["posterior"].to_dataset().assign_coords(t=tree["posterior"]["t"].values * 2)
        return tree

    monkeypatch.setattr(draw, "draw_release", relabelled)
    with pytest.raises(AssertionError, match="coordinate t differs"):
        check_family(mean_summary, fp.ICLP(1.0))


def test_composed_plan_sums_costs_and_keeps_both_parts(mean_summary):
    spec = mean_summary.spec
    first, second = fp.plan(spec, fp.ICLP(0.25)), fp.plan(spec, fp.GaussianMechanism(1.0, 1e-6), draws=2)
    both = first.then(second)
    assert both.cost.epsilon == pytest.approx(0.25 + 2.0) and both.cost.delta == pytest.approx(2e-6)
    assert both.parts == (first, second) and both.fp_safe == (first.fp_safe and second.fp_safe)
    assert both.attrs["budget_spent_epsilon"] == pytest.approx(2.25)
    assert both.attrs["part0_epsilon"] == 0.25 and both.attrs["part1_mechanism"] == "gaussian"


def test_plan_refuses_what_release_refuses(mean_summary, fpca_fit):
    with pytest.raises(InputError, match="chains"):
        fp.plan(mean_summary.spec, fp.ICLP(1.0), chains=2)
    with pytest.raises(CompatibilityError):
        fp.plan(mean_summary.spec, fp.ExponentialMechanism())
    with pytest.raises(InputError, match="number of curves"):
        fp.plan(fpca_fit.spec, fp.ExponentialMechanism())
    with pytest.raises(CompatibilityError, match="plan"):
        fp.plan(np.zeros(3), fp.ICLP(1.0))
    with pytest.raises(InputError, match="draws"):
        fp.plan(mean_summary.spec, fp.ICLP(1.0), draws=0)


def test_ledger_label_and_dataset_reach_each_family(tmp_path, mean_summary, kde_fit, erm_fit, fpca_fit):
    cases = {"mean": (mean_summary, fp.ICLP(1.0)), "kde": (kde_fit, fp.GaussianMechanism(0.5, 1e-5)),
             "machine": (erm_fit, fp.GaussianMechanism(1.0, 1e-6)), "fpca": (fpca_fit, fp.ExponentialMechanism())}
    for family, (fitted, mech) in cases.items():
        ledger = PrivacyLedger.open(tmp_path / f"{family}.sqlite", PrivacyBudget(10.0, 1e-3))
        fp.release(fitted, mech, ledger=ledger, label=f"lab-{family}", dataset=f"toy-{family}")
        (row,) = ledger.records()
        assert row["label"] == f"lab-{family}" and row["dataset"] == f"toy-{family}", family
        assert ledger.spent.epsilon > 0


# ---------------------------------------------------------------------- seeds only for studies (DESIGN invariant 8)
class _Untouchable:
    """A fitted object that fails the test if anything reads it."""

    def __getattr__(self, name):
        raise AssertionError(f"the release read {name} before refusing the seed")


@pytest.mark.parametrize("seed", [0, 2**32 - 1, 4294967300, 2**62, np.random.default_rng(0)])
def test_any_seed_without_study_is_refused_before_anything_is_read(seed, mean_summary):
    ledger = PrivacyLedger(PrivacyBudget(10.0))
    for fitted in (_Untouchable(), mean_summary):
        with pytest.raises(InputError, match="study=True") as info:
            fp.release(fitted, fp.ICLP(1.0), random_seed=seed, ledger=ledger)
        assert info.value.fix and "\n" not in str(info.value) and str(seed) not in str(info.value)
    assert ledger.spent.epsilon == 0.0 and not ledger.entries


def test_a_study_is_marked_not_private_and_charged_to_no_ledger(mean_summary, kde_fit):
    from fdp_ppl.kde import bandwidth_plan, private_bandwidth
    from fdp_ppl.releasing.plans import STUDY

    ledger = PrivacyLedger(PrivacyBudget(10.0))
    with pytest.raises(InputError, match="ledger"):
        fp.release(_Untouchable(), fp.ICLP(1.0), random_seed=4294967300, study=True, ledger=ledger)
    with pytest.raises(InputError, match="ledger"):  # a study without a seed is still a study
        fp.release(mean_summary, fp.ICLP(1.0), study=True, ledger=ledger)
    with pytest.raises(InputError, match="study=True"):
        private_bandwidth(np.linspace(0, 1, 20), 0.5, (0.0, 1.0), random_seed=1)
    with pytest.raises(InputError, match="ledger"):
        private_bandwidth(np.linspace(0, 1, 20), 0.5, (0.0, 1.0), random_seed=1, study=True, ledger=ledger)
    assert ledger.spent.epsilon == 0.0 and not ledger.entries
    seeded = fp.release(mean_summary, fp.ICLP(1.0), random_seed=4294967300, study=True)
    assert seeded.attrs["study"] == STUDY == "not private" and seeded.attrs["noise_seeded"] == 1
    again = fp.release(mean_summary, fp.ICLP(1.0), random_seed=4294967300, study=True)
    assert np.array_equal(seeded["posterior"]["coefficients"].values, again["posterior"]["coefficients"].values)
    unseeded = fp.release(mean_summary, fp.ICLP(1.0), study=True)
    assert unseeded.attrs["study"] == STUDY and unseeded.attrs["noise_seeded"] == 0
    real = fp.release(mean_summary, fp.ICLP(1.0), ledger=ledger)
    assert "study" not in real.attrs and real.attrs["fp_safe"] == 1 and ledger.spent.epsilon == 1.0
    # the public plan says the same: a seeded plan is a study, and a composition with a study part is one
    assert fp.plan(mean_summary.spec, fp.ICLP(1.0), seeded=True).attrs["study"] == STUDY
    assert "study" not in fp.plan(mean_summary.spec, fp.ICLP(1.0)).attrs
    assert ("study", STUDY) in fp.plan(mean_summary.spec, fp.ICLP(1.0), study=True).table()
    both = bandwidth_plan(0.5, 1, seeded=True).then(fp.plan(kde_fit.spec, fp.GaussianMechanism(0.5, 1e-5)))
    assert both.study and both.attrs["study"] == STUDY


# ---------------------------------------------------------------------- the FPCA mechanism: ε stays in the spec
def test_exponential_mechanism_carries_no_epsilon(fpca_fit):
    mech = fp.ExponentialMechanism("exact")
    assert not hasattr(mech, "epsilon")
    with pytest.raises(InputError, match="FPCASpec"):
        fp.ExponentialMechanism(epsilon=1.0)
    with pytest.raises(InputError, match="sampler"):
        fp.ExponentialMechanism("metropolis")
    with pytest.raises(InputError, match="delta"):
        fp.ExponentialMechanism(delta=1.5)
    # the charged ε is the spec's guarantee: doubling the spec's ε raises the charge, the mechanism is unchanged
    from fdp_ppl.fpca import FPCASpec

    spec2 = FPCASpec(grid=fp.Grid.uniform(30), m=5, k=1, epsilon=2.0, tau=2.0)
    fit2 = spec2.fit(family_curves(20, 30, seed=3).values)
    spent = []
    for fitted in (fpca_fit, fit2):
        ledger = PrivacyLedger(PrivacyBudget(10.0))
        tree = fp.release(fitted, mech, ledger=ledger)
        spent.append(ledger.spent.epsilon)
        assert tree.attrs["epsilon"] == fitted.spec.epsilon
    assert spent[0] >= 1.0 and spent[1] >= 2.0 and spent[1] > spent[0]


# ---------------------------------------------------------------------- refusals cost nothing
@pytest.mark.parametrize("case", ["kde+exp", "erm+frl", "fpca+iclp", "mean+exp", "kde+iclp", "not-fitted"])
def test_wrong_mechanism_refused_before_charge(case, mean_summary, kde_fit, erm_fit, fpca_fit):
    fitted, mech = {"kde+exp": (kde_fit, fp.ExponentialMechanism()), "erm+frl": (erm_fit, fp.FRL(1.0)),
                    "fpca+iclp": (fpca_fit, fp.ICLP(1.0)), "mean+exp": (mean_summary, fp.ExponentialMechanism()),
                    "kde+iclp": (kde_fit, fp.ICLP(1.0)), "not-fitted": (np.zeros(3), fp.ICLP(1.0))}[case]
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-3))
    with pytest.raises((CompatibilityError, InputError)) as info:
        fp.release(fitted, mech, ledger=ledger)
    assert info.value.fix and "\n" not in str(info.value)
    assert ledger.spent.epsilon == 0.0 and ledger.spent.delta == 0.0


@pytest.mark.parametrize("case", [("erm", "bound", "paper"), ("erm", "generator", "pymc"), ("fpca", "chains", 2),
                                  ("mean", "chains", 2), ("kde", "allow_nonprivate", True),
                                  ("fpca", "bound", "tight"), ("erm", "allow_nonprivate", True)])
def test_unsupported_option_refused_before_charge(case, mean_summary, kde_fit, erm_fit, fpca_fit):
    family, option, value = case
    fitted, mech = {"mean": (mean_summary, fp.ICLP(1.0)), "kde": (kde_fit, fp.GaussianMechanism(0.5, 1e-5)),
                    "erm": (erm_fit, fp.GaussianMechanism(1.0, 1e-5)),
                    "fpca": (fpca_fit, fp.ExponentialMechanism())}[family]
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-3))
    with pytest.raises(InputError, match=option) as info:
        fp.release(fitted, mech, ledger=ledger, **{option: value})
    assert info.value.fix and "\n" not in str(info.value)
    assert ledger.spent.epsilon == 0.0 and ledger.spent.delta == 0.0


def test_family_hooks_are_not_exported():
    """The registered hooks are what fp.plan and fp.release call, not a second public path."""
    import importlib

    from fdp_ppl.releasing.families import FAMILIES

    for entry in FAMILIES:
        for hook in ("plan", "draw"):
            fn = entry.resolve(hook)
            assert callable(fn)
            package = importlib.import_module(entry.module.rsplit(".", 1)[0])
            assert fn.__name__ not in getattr(package, "__all__", ()) or package.__name__ == "fdp_ppl.releasing"
            assert fn.__name__ not in fp.__all__
    assert "ExponentialMechanism" in fp.__all__ and "plan" in fp.__all__ and "ReleasePlan" in fp.__all__
    assert fp.ExponentialMechanism is importlib.import_module("fdp_ppl.fpca").ExponentialMechanism


def test_releasing_does_not_import_the_families():
    """The families import fdp_ppl.releasing.draw, never the reverse: the registry resolves them on first use."""
    import subprocess
    import sys

    code = ("import sys, fdp_ppl.releasing.draw, fdp_ppl.releasing.registry; "
            "print(sorted(m for m in ('fdp_ppl.kde', 'fdp_ppl.machine', 'fdp_ppl.fpca') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_seeded_release_warns_at_the_callers_line(mean_summary, kde_fit, erm_fit, fpca_fit):
    """The seed warning of every family names the line that called fp.release (this file), not the dispatcher."""
    import warnings

    from fdp_ppl.errors import SeededReleaseWarning

    cases = [(mean_summary, fp.ICLP(1.0)), (kde_fit, fp.GaussianMechanism(1.0, 1e-3)),
             (erm_fit, fp.GaussianMechanism(1.0, 1e-3)), (fpca_fit, fp.ExponentialMechanism("exact", delta=1e-10))]
    for fitted, mech in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fp.release(fitted, mech, random_seed=1, study=True)
        seeded = [w for w in caught if issubclass(w.category, SeededReleaseWarning)]
        assert seeded and {w.filename for w in seeded} == {__file__}, (type(fitted).__name__,
                                                                        [w.filename for w in seeded])


# ---------------------------------------------------------------------- one name per family, everywhere
def test_one_name_per_family_everywhere():
    """Each release family has one spelling through the plan, the file kind, the folder, the command, the audit and
    the inference tables (the former spellings are read, never written)."""
    import importlib

    from fdp_ppl.auditing.targets import FAMILIES as AUDITED
    from fdp_ppl.cli import ALIASES, COMMANDS
    from fdp_ppl.inference.infer import INFERENCE_FAMILIES
    from fdp_ppl.releasing import schema
    from fdp_ppl.releasing.families import FAMILIES

    names = [e.family for e in FAMILIES]
    assert sorted(names) == ["fpca", "kde", "machine", "mean"]
    assert set(INFERENCE_FAMILIES) == set(names) and set(AUDITED) == set(names)
    for e in FAMILIES:
        assert e.kind == f"{e.family}_release" and schema.release_family_of_kind(e.kind) == e.family
        assert all(schema.release_family_of_kind(k) == e.family for k in e.legacy_kinds)
        if e.family != "mean":  # the mean family lives in summaries/ and releasing/ (its command: release)
            assert e.module == f"fdp_ppl.{e.family}.release" and e.folder == f"fdp_ppl.{e.family}"
            assert e.command == e.family and e.family in COMMANDS
            importlib.import_module(f"fdp_ppl.{e.family}")
    assert set(ALIASES.values()) <= set(COMMANDS)


def test_each_family_has_its_own_hook_modules():
    """A family's parts in the stages above it are modules of its own, never a shared table: no two registry lines
    name the same hooks' module, inference hook's module, audit hook's module or command module (so adding a family
    adds files and edits none of another family's)."""
    from fdp_ppl.releasing.families import FAMILIES

    def module(qualified: str) -> str:
        return qualified.rpartition(".")[0]

    for kind, of in (("hooks", lambda e: e.module), ("inference", lambda e: module(e.inference)),
                     ("audit", lambda e: module(e.audit)), ("command", lambda e: e.command)):
        named = [of(e) for e in FAMILIES if of(e)]
        assert len(named) == len(set(named)), f"two families share their {kind} module: {sorted(named)}"
    assert {module(e.audit) for e in FAMILIES} == {f"fdp_ppl.auditing.{e.family}" for e in FAMILIES}


#: the file outside a family's folder that a new family edits: its registry line (the import contract's families'
#: layer ``*`` finds the folder by itself)
FILES_A_FAMILY_EDITS = ("fdp_ppl/releasing/families.py",)


def test_every_family_is_served_from_its_registry_line_alone():
    """Adding a family is its folder and one registry line (the import contract puts the folder on the families'
    layer by itself, checked by tests/project/test_architecture.py): every stage finds what it needs of every family from the registry's
    strings alone — the plan and draw hooks, the inference hook, the audit hook, the command module, the file kind
    and its reader, ``fp.<folder>`` and the family's public names. No table outside the folder is edited
    (:data:`FILES_A_FAMILY_EDITS`), so this test loops over the registry and needs no edit either."""
    import importlib

    from fdp_ppl.auditing.targets import AUDIT_FAMILIES, DEFAULT_SPECS, AuditHook, mechanisms_of
    from fdp_ppl.cli import COMMANDS, build_parser
    from fdp_ppl.inference.infer import INFERENCE_FAMILIES
    from fdp_ppl.releasing import schema
    from fdp_ppl.releasing.families import FAMILIES, KINDS, PLANS, RELEASES

    import ast
    from pathlib import Path

    root = Path(fp.__file__).parent.parent
    assert all((root / f).exists() for f in FILES_A_FAMILY_EDITS)
    pyproject = (root / "pyproject.toml").read_text()
    assert not [e.folder for e in FAMILIES if e.folder != "fdp_ppl.releasing" and e.folder in pyproject]
    # the files a family once edited to be reachable (fp.<folder>, its command) name no family in their code
    # (docstrings aside); former names are read from the registry's legacy names
    legacy = {old for e in FAMILIES for old in e.legacy_names}
    for path in ("fdp_ppl/__init__.py", "fdp_ppl/cli/__init__.py"):
        tree = ast.parse((root / path).read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef,
                ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr)}
        named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs
                 and n.value in {e.family for e in FAMILIES if e.family != "mean"} - legacy}
        assert not named, f"{path} names the families {sorted(named)}: read them from the registry"
    commands = build_parser()._subparsers._group_actions[0].choices
    for e in FAMILIES:
        assert callable(e.resolve("plan")) and callable(e.resolve("draw")), e.family
        assert all(RELEASES[c] is e for c in e.fitted) and all(PLANS[c] is e for c in e.specs)
        assert INFERENCE_FAMILIES[e.family].hook == e.inference
        if e.inference:
            assert callable(e.load("inference")), e.family
        hook = e.load("audit")
        assert isinstance(hook, AuditHook) and hook.names() == mechanisms_of(e.family) and hook.names()
        assert DEFAULT_SPECS[e.family] == hook.default_spec and e.family in AUDIT_FAMILIES
        assert e.command in COMMANDS and e.command in commands, e.family
        module = importlib.import_module(f"fdp_ppl.cli.{e.command}")
        assert callable(module.add_subparser) and callable(module.run)
        folder = e.folder.partition(".")[2]
        assert getattr(fp, folder).__name__ == e.folder and folder in fp.__all__
        for name in e.public:
            assert getattr(fp, name) is getattr(importlib.import_module(e.folder), name) and name in fp.__all__
        attrs = schema.family_attrs(e.family)
        assert attrs[schema.KIND_ATTR] == e.kind and KINDS[e.kind] == e.family
        tree = xr.DataTree(xr.Dataset(attrs={**attrs, "noise_law": "laplace"}))
        assert schema.release_family(tree) == e.family and schema.is_family_release(tree, e.family)
        if e.family != "mean":  # the mean reader refuses it, naming the family in its words
            with pytest.raises(SchemaError, match=f"{re.escape(e.label)} release, not a mean-curve release"):
                schema.ReleaseMetadata.from_attrs(tree.attrs)


def test_inference_and_audit_tables_are_read_from_the_registry():
    """The inference and audit dispatch tables have the registry's families as keys, in its order, and its former
    names as aliases (fp.audit and the command line); every family's inference hook resolves and takes exactly
    the options its table names, and every family has an audit builder: adding a family is its folder, one
    registry line and its inference and audit hooks."""
    import importlib
    import inspect

    from fdp_ppl.auditing import targets
    from fdp_ppl.cli import build_parser
    from fdp_ppl.inference.infer import INFERENCE_FAMILIES, MEAN_OPTIONS, OPTIONS
    from fdp_ppl.releasing.families import ALIASES, FAMILIES, NAMES

    assert NAMES == tuple(e.family for e in FAMILIES) and NAMES[0] == "mean"
    assert tuple(INFERENCE_FAMILIES) == NAMES == targets.FAMILIES
    assert tuple(k for k in targets.AUDIT_FAMILIES if k != "callable") == NAMES
    assert targets.FAMILY_ALIASES == ALIASES
    assert ALIASES == {"release": "mean", "svm": "machine"}
    for e in FAMILIES:
        inf = INFERENCE_FAMILIES[e.family]
        assert inf.label == e.label and e.label and set(inf.options) <= set(OPTIONS)
        assert targets.AUDIT_FAMILIES[e.family].label == f"an audit of a {e.label} mechanism"
        if not e.inference:  # infer's own model takes every option
            assert inf.options == MEAN_OPTIONS == OPTIONS
            continue
        module, _, name = e.inference.rpartition(".")
        params = inspect.signature(getattr(importlib.import_module(module), name)).parameters
        assert list(params)[:2] == ["release", "prior"] and set(inf.options) - {"prior"} <= set(params), e.family
    parser = build_parser()
    audit = next(a for a in parser._subparsers._group_actions[0].choices["audit"]._actions
                 if a.dest == "family")
    assert tuple(audit.choices) == NAMES + tuple(ALIASES)


@pytest.mark.parametrize("kind, family", [("release", "mean"), ("erm_release", "machine"),
                                          ("expmech_fpca", "fpca"), ("kde_release", "kde")])
def test_files_of_the_former_kinds_are_still_read(kind, family, mean_summary, kde_fit, erm_fit, fpca_fit):
    from fdp_ppl.releasing import schema

    fitted, mech = {"mean": (mean_summary, fp.ICLP(1.0)), "kde": (kde_fit, fp.GaussianMechanism(0.5, 1e-5)),
                    "machine": (erm_fit, fp.GaussianMechanism(1.0, 1e-5)),
                    "fpca": (fpca_fit, fp.ExponentialMechanism())}[family]
    tree = fp.release(fitted, mech, random_seed=0, study=True)
    assert schema.release_family(tree) == family and tree.attrs[schema.KIND_ATTR] == f"{family}_release"
    tree.attrs[schema.KIND_ATTR] = kind  # a file written before the family had its one name
    assert schema.release_family(tree) == family
    from fdp_ppl.inference.infer import inference_family

    assert inference_family(tree).family == family


def test_public_work_is_cached_per_public_configuration_not_per_spec():
    """A second release on the same public configuration (a new spec: ``iclp_qr_mean`` builds one per call)
    reuses the cached calibration and release template and draws from the same law (same seed, same draws);
    another public configuration or other data share nothing computed from data (invariant 8: every public
    parameter is independent of the records)."""
    from fdp_ppl.releasing import draw

    curves = family_curves(12, 16, 3)
    other = family_curves(12, 16, 4)  # other records, same public configuration
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.from_points(curves["t"].values))
    first = fp.iclp_qr_mean(curves, basis, tau=2.0)
    second = fp.iclp_qr_mean(other, basis, tau=2.0)
    assert first.spec is not second.spec and first.spec.public_key() == second.spec.public_key()
    a = fp.release(first, fp.ICLP(1.0), random_seed=5, study=True, generator="pymc")
    b = fp.release(second, fp.ICLP(1.0), random_seed=5, study=True, generator="pymc")
    def parts(spec):  # the public parts of the spec's plan (calibration, sampler, metadata, accuracy inputs)
        (plan,) = [v for k, v in draw._PUBLIC[spec].items() if k[0] == "plan"]
        assert plan.state[0]() is spec  # each plan is bound to its own spec (the draw hook checks it)
        return plan.state[1:]

    parts_a, parts_b = parts(first.spec), parts(second.spec)
    assert all(x is y for x, y in zip(parts_a, parts_b))  # one calibration, sampler and attrs for the configuration
    (tmpl_a,), (tmpl_b,) = draw._TEMPLATES[first.spec].values(), draw._TEMPLATES[second.spec].values()
    assert tmpl_a is tmpl_b  # one template: the public basis is not rebuilt into a new dataset
    # the same law: equal public scales, and the same seed draws the same noise around each summary
    np.testing.assert_array_equal(a["constant_data"]["noise_scale"].values, b["constant_data"]["noise_scale"].values)
    noise_a = a["posterior"]["coefficients"].values[0] - first.coefficients
    noise_b = b["posterior"]["coefficients"].values[0] - second.coefficients
    np.testing.assert_allclose(noise_a, noise_b, rtol=0, atol=1e-12)
    assert not np.allclose(first.coefficients, second.coefficients)  # not vacuous: the summaries differ
    # the public basis is shared, not copied into each release (82 MB at K = 3200), as read-only views: neither
    # release can change the other's basis nor the template's
    phi_a, phi_b = a["constant_data"]["eigenfunctions"].values, b["constant_data"]["eigenfunctions"].values
    assert phi_a is not phi_b and np.shares_memory(phi_a, phi_b)
    for arrays in (a["constant_data"], b["constant_data"]):
        for var in arrays.data_vars.values():
            assert not var.values.flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                var.values[...] = 0.0
    np.testing.assert_array_equal(phi_a, basis.eigenfunctions[:, :phi_a.shape[1]])
    # another public configuration (tau) is calibrated on its own
    third = fp.iclp_qr_mean(curves, basis, tau=3.0)
    fp.release(third, fp.ICLP(1.0), random_seed=5, study=True, generator="pymc")
    parts_c = parts(third.spec)
    assert parts_c[0] is not parts_a[0] and parts_c[0].sensitivity.value == pytest.approx(1.5 * parts_a[0].sensitivity.value)


def test_a_cached_plan_does_not_keep_its_spec_alive():
    """Plans are cached per public spec (weakly held): a released summary's spec is freed with it (no leak across
    the thousands of specs of a simulation study)."""
    import gc
    import weakref

    from fdp_ppl.releasing import draw
    from tests.helpers import family_curves

    curves = family_curves(12, 16, 3)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summary = fp.iclp_qr_mean(curves, basis, tau=2.0)
    ref = weakref.ref(summary.spec)
    fp.release(summary, fp.ICLP(1.0), random_seed=0, study=True)
    assert summary.spec in draw._PUBLIC
    del summary
    gc.collect()
    assert ref() is None
