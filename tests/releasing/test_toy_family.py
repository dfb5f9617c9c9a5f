"""Adding a family is its own folder plus one registry line (DESIGN: one registry, one protocol): the toy family
of ``tests/releasing/toy_family`` (a clipped scalar mean with Laplace noise, a plan hook and a draw hook, one
``register_family(ReleaseEntry(...))`` line) is planned, released, charged, recorded, inferred, refused and checked
by the shipped test kit with no other file edited."""

import importlib
import sys

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import CompatibilityError, InputError
from fdp_ppl.releasing import families

TABLES = ("ALIASES", "BY_NAME", "KINDS", "RELEASES", "PLANS")
TUPLES = ("FAMILIES", "NAMES", "COMMANDS")


@pytest.fixture(scope="module")
def toy():
    """The toy package imported (which registers it); the registry as it was afterwards (the other tests see the
    built-in families only)."""
    infer_module = importlib.import_module("fdp_ppl.inference.infer")  # (fdp_ppl.inference.infer is the function)
    saved = {name: dict(getattr(families, name)) for name in TABLES}
    saved.update({name: getattr(families, name) for name in TUPLES})
    inference = dict(infer_module.INFERENCE_FAMILIES)
    package = importlib.import_module("tests.releasing.toy_family")
    try:
        yield importlib.import_module("tests.releasing.toy_family.release")
    finally:
        for name in TABLES:
            getattr(families, name).clear()
            getattr(families, name).update(saved[name])
        for name in TUPLES:
            setattr(families, name, saved[name])
        infer_module.INFERENCE_FAMILIES.clear()
        infer_module.INFERENCE_FAMILIES.update(inference)
        sys.modules.pop(package.__name__, None)
        sys.modules.pop(f"{package.__name__}.release", None)


def _fit(toy, n=50):
    spec = toy.ScalarMeanSpec(0.0, 1.0, n)
    return spec, spec.fit(np.random.default_rng(1).uniform(-0.2, 1.2, n))


def test_the_toy_family_is_registered_by_one_line(toy):
    entry = families.BY_NAME["toy"]
    assert families.NAMES[-1] == "toy" and families.FAMILIES[-1] is entry and families.KINDS["toy_release"] == "toy"
    with pytest.raises(ValueError, match="registered already"):
        families.register_family(entry)


def test_plan_release_and_ledger_follow_the_toy_plan(toy, tmp_path):
    from fdp_ppl.releasing.schema import release_family
    from fdp_ppl.testing import check_family

    spec, fit = _fit(toy)
    plan = fp.plan(spec, toy.ScalarLaplace(0.5), draws=3)
    assert (plan.family, plan.sensitivity, plan.cost.epsilon, dict(plan.output)) == ("toy", 1 / 50, 1.5,
                                                                                     {"chain": 1, "draw": 3})
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(2.0, 0.0))
    tree = fp.release(fit, toy.ScalarLaplace(0.5), draws=3, ledger=ledger)
    assert ledger.spent.epsilon == pytest.approx(1.5) and ledger.events[-1] == plan.event
    assert release_family(tree) == "toy" and tree.attrs["fdp_ppl_kind"] == "toy_release"
    for key in ("release_family", "epsilon", "budget_spent_epsilon", "guarantee", "n", "lo", "hi", "fdp_ppl_version"):
        assert key in tree.attrs, key
    assert tree["posterior"]["mean"].dims == ("chain", "draw") and tree["posterior"]["mean"].attrs["units"] == \
        "data units"
    check_family(fit, toy.ScalarLaplace(1.0), draws=2, tmp_path=tmp_path)
    check_family(fit, toy.ScalarLaplace(1.0), draws=2, random_seed=3)


def test_the_protocol_s_refusals_name_the_toy_family(toy):
    spec, fit = _fit(toy)
    with pytest.raises(CompatibilityError, match=r"^a toy release is not made with ICLP") as err:
        fp.release(fit, fp.ICLP(1.0))
    assert err.value.fix == "use ScalarLaplace(epsilon)"
    with pytest.raises(InputError, match=r"^a toy release takes no chains") as err:
        fp.release(fit, toy.ScalarLaplace(1.0), chains=2)
    assert "its options: none" in err.value.fix
    tree = fp.release(fit, toy.ScalarLaplace(1.0), random_seed=0, study=True)
    with pytest.raises(InputError, match=r"^inference from a toy scalar-mean release takes no draws") as err:
        fp.infer(tree, draws=10)
    assert "prior, random_seed" in err.value.fix
    post = fp.infer(tree, random_seed=1)
    assert post["posterior"]["mean"].shape == (1, 200)
    with pytest.raises(InputError, match=r"^unknown family 'toy'") as err:
        fp.audit("scalar-laplace", family="toy")
    assert "mean" in err.value.fix
