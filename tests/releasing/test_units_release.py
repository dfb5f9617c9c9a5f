"""A release's plan states its privacy unit and certification to the ledger; a release for another unit is
refused or charged by group privacy; a δ above 1/n and an ε whose e^ε overflows are refused with one line
before the charge (DESIGN invariants 7, 10 and 11)."""

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import InputError


@pytest.fixture(scope="module")
def dti():
    curves = fp.datasets.load_dataset("dti", missing="impute")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    return curves, basis


def test_plans_stamp_their_unit_and_certification_on_the_event(dti):
    curves, basis = dti
    unit = fp.PrivacyUnit("subject_id", combine="mean")
    per_subject = fp.plan(fp.ICLPQRSpec(basis=basis, tau=2.0, n=142, privacy_unit=unit), fp.ICLP(1.0))
    per_scan = fp.plan(fp.ICLPQRSpec(basis=basis, tau=2.0, n=382), fp.ICLP(1.0))
    assert (per_subject.event.unit, per_subject.event.certified) == ("subject_id", True)
    assert per_scan.event.unit == "record" and per_scan.privacy_unit == "record"


def test_uncertified_mcmc_plans_record_uncertified_events():
    from fdp_ppl.fpca import FPCASpec

    spec = FPCASpec(grid=fp.Grid.uniform(30), m=6, k=2, epsilon=0.5, tau=2.0)
    gibbs = fp.plan(spec, fp.ExponentialMechanism(sampler="gibbs", iterations=50), n=40)
    assert not gibbs.certified and gibbs.event is not None and not gibbs.event.certified
    led = PrivacyLedger(PrivacyBudget(5.0))
    led.spend(gibbs.cost, event=gibbs.event)
    assert led.attrs()["ledger_uncertified_releases"] == 1 and led.attrs()["ledger_guaranteed_epsilon"] == 0.0


def test_dti_per_scan_after_per_subject_is_refused_or_charged_by_group_privacy(dti):
    """Two ε = 1 DTI releases, one per subject and one per scan (at most 8 scans per subject): the ledger refuses
    the second, or charges it 8 when the bound is stated: 9 in all, not 2."""
    curves, basis = dti
    unit = fp.PrivacyUnit("subject_id", combine="mean")
    n_subjects = unit.n_units(curves)
    counts = np.unique(curves["subject_id"].values, return_counts=True)[1]
    assert n_subjects == 142 and counts.max() == 8  # the public bound used below is the data's true maximum
    per_subject = fp.ICLPQRSpec(basis=basis, tau=2.0, n=n_subjects, privacy_unit=unit).fit(curves)
    per_scan = fp.ICLPQRSpec(basis=basis, tau=2.0, n=curves.sizes["curve"]).fit(curves)
    led = PrivacyLedger(PrivacyBudget(10.0))
    fp.release(per_subject, fp.ICLP(1.0), ledger=led)
    with pytest.raises(InputError, match="per record"):
        fp.release(per_scan, fp.ICLP(1.0), ledger=led)
    assert led.spent.epsilon == 1.0
    tree = fp.release(per_scan, fp.ICLP(1.0), ledger=led, records_per_unit=8)
    at = tree.attrs
    assert led.spent.epsilon == pytest.approx(9.0)
    assert at["ledger_charged_epsilon"] == pytest.approx(8.0) and at["ledger_records_per_unit"] == 8
    assert at["ledger_privacy_unit"] == "subject_id" and at["budget_spent_epsilon"] == 1.0
    assert "group privacy" in at["ledger_charge_rule"]


@pytest.fixture(scope="module")
def growth():
    curves = fp.datasets.load_dataset("growth")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    return fp.RKHSSpec(basis=basis, tau=200.0, n=curves.sizes["curve"]).fit(curves)


def test_a_delta_above_one_over_n_needs_allow_large_delta(growth):
    n = growth.spec.n
    led = PrivacyLedger(PrivacyBudget(10.0, 0.9))
    big = fp.GaussianMechanism(1.0, 2.0 / n)
    with pytest.raises(InputError, match=rf"above 1/n = 1/{n}") as err:
        fp.release(growth, big, ledger=led)
    assert "allow_large_delta=True" in err.value.fix and led.events == []  # nothing charged
    fp.release(growth, fp.GaussianMechanism(1.0, 0.5 / n), ledger=led)  # below 1/n: served
    tree = fp.release(growth, big, ledger=led, allow_large_delta=True)
    assert tree.attrs["delta"] == pytest.approx(2.0 / n) and len(led.events) == 2


def test_a_gaussian_release_at_epsilon_1e308_is_one_line_and_charges_nothing(growth):
    led = PrivacyLedger(PrivacyBudget(1e308, 1e-3))
    with pytest.raises(InputError, match="too large") as err:
        fp.release(growth, fp.GaussianMechanism(1e308, 1e-5), ledger=led)
    assert "\n" not in str(err.value) and led.events == []
