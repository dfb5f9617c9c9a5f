"""Membership protection through the release protocol (DESIGN, "What a release protects"; invariants 7 and 10):
an add/remove mean's plan, its release's attributes and the ledger's event agree (the event says "add-remove",
the file says n is private and gives only n_lower); a caller who asks for add/remove gets it or a refusal before
any charge; an add/remove ledger refuses a replace-one release, a replace-one ledger charges an add/remove one
(2 eps, (1 + e^eps) delta) and the file records the conversion."""

import math

import pytest

import fdp_ppl as fp
from fdp_ppl.accounting import FileLedger, PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import InputError
from fdp_ppl.testing.family import check_family

AR = {"neighbouring": "add-remove", "n_lower": 80}


@pytest.fixture(scope="module")
def growth():
    curves = fp.datasets.load_dataset("growth")  # 93 children
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    return curves, basis


@pytest.mark.parametrize("fit, mechanism", [
    (fp.iclp_qr_mean, fp.ICLP(1.0)), (fp.frl_mean, fp.FRL(1.0)), (fp.iclp_ar_mean, fp.ICLP(1.0)),
    (fp.rkhs_mean, fp.GaussianMechanism(1.0, 1e-6)),
], ids=["iclp-qr", "frl", "iclp-ar", "rkhs-gaussian"])
def test_plan_equals_release_and_the_event_is_add_remove(growth, tmp_path, fit, mechanism):
    curves, basis = growth
    summary = fit(curves, basis, tau=200.0, **AR)
    plan, tree = check_family(summary, mechanism, tmp_path=tmp_path)  # the spec's plan = the fit's = the release
    assert plan.event.neighbouring == "add-remove" and plan.event.count == 2
    at = tree.attrs
    assert (at["n"], at["n_lower"], at["n_private"]) == (80, 80, 1)
    assert "add or remove one record" in at["neighbouring"] and at["neighbouring"] in at["guarantee"]
    import numpy as np  # n = 93 is never published: no integer attribute holds it, no text states it

    assert not [k for k, v in at.items() if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v == 93]
    assert not [k for k, v in at.items() if isinstance(v, str) and ("n=93" in v or "93 " in v)]
    # Δ is the replace-one Δ of n = n_lower + 1 (2τ/(n₀ + 1) for 2τ/n), the PSS defaults from n_lower
    params = {k: summary.spec.params[k] for k in ("eta", "psi", "M") if k in summary.spec.params}
    same = type(summary.spec)(basis=basis, tau=200.0, n=81, **params)
    if not isinstance(summary.spec, fp.ICLPARSpec):  # J* moves with nothing here, but keep the check linear
        assert plan.sensitivity == pytest.approx(same.sensitivity(plan.sensitivity_norm).value, rel=1e-12)


def test_asking_for_add_remove_is_served_or_refused_before_any_charge(growth):
    curves, basis = growth
    ledger = PrivacyLedger(PrivacyBudget(5.0))
    public = fp.iclp_qr_mean(curves, basis, tau=200.0)  # replace-one: n = 93 public
    for attempt in (lambda: fp.release(public, fp.ICLP(1.0), ledger=ledger, neighbouring="add-remove"),
                    lambda: fp.plan(public.spec, fp.ICLP(1.0), neighbouring="add-remove")):
        with pytest.raises(InputError, match="membership protection") as err:
            attempt()
        assert "\n" not in str(err.value) and "n_lower" in str(err.value)
    assert ledger.events == []
    members = fp.iclp_qr_mean(curves, basis, tau=200.0, **AR)
    with pytest.raises(InputError, match="neighbouring='replace-one' was asked for"):
        fp.release(members, fp.ICLP(1.0), ledger=ledger, neighbouring="replace-one")
    assert ledger.events == []
    tree = fp.release(members, fp.ICLP(1.0), ledger=ledger, neighbouring="add-remove")
    assert ledger.neighbouring == "add-remove" and tree.attrs["n_private"] == 1
    from fdp_ppl.kde import KDESpec
    from fdp_ppl.kde.grid import CartesianGrid

    kde = KDESpec(grid=CartesianGrid.uniform([(0.0, 1.0)], [21]), n=50)
    with pytest.raises(InputError, match="membership protection"):
        fp.plan(kde, fp.GaussianMechanism(1.0, 1e-6), neighbouring="add-remove")


def test_ledgers_of_each_relation(growth, tmp_path):
    curves, basis = growth
    members = fp.iclp_qr_mean(curves, basis, tau=200.0, **AR)
    public = fp.iclp_qr_mean(curves, basis, tau=200.0)
    plan = fp.plan(members.spec, fp.ICLP(0.5))
    # an add/remove ledger: records the plan's event as is; refuses a replace-one release before the draw
    ar = FileLedger(tmp_path / "ar.sqlite", PrivacyBudget(3.0), neighbouring="add-remove")
    fp.release(members, fp.ICLP(0.5), ledger=ar)
    assert ar.events == [plan.event] and ar.spent.epsilon == pytest.approx(0.5)
    with pytest.raises(InputError, match="protects membership"):
        fp.release(public, fp.ICLP(0.5), ledger=ar)
    assert len(ar.events) == 1
    # a replace-one ledger: an add/remove release charged (2 eps, (1 + e^eps) delta), the file says so
    rep = FileLedger(tmp_path / "rep.sqlite", PrivacyBudget(3.0, 1e-4), neighbouring="replace-one")
    tree = fp.release(members, fp.ICLP(0.5), ledger=rep)
    assert rep.spent.epsilon == pytest.approx(1.0) and tree.attrs["ledger_charged_epsilon"] == pytest.approx(1.0)
    assert "remove then add" in tree.attrs["ledger_charge_rule"]
    assert tree.attrs["budget_spent_epsilon"] == 0.5  # the release's own guarantee is unchanged
    gauss = fp.release(fp.rkhs_mean(curves, basis, tau=200.0, **AR), fp.GaussianMechanism(0.5, 1e-6), ledger=rep)
    assert gauss.attrs["ledger_charged_delta"] == pytest.approx((1 + math.exp(0.5)) * 1e-6, rel=1e-9)
    assert rep.events[-1].neighbouring == "replace-one" and rep.events[-1].epsilon == pytest.approx(1.0)
