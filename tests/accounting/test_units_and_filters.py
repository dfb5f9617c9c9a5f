"""One privacy unit per ledger (group privacy with a stated bound on records per person), acceptance only by
composition rules that hold for a ledger deciding adaptively, uncertified releases kept apart (DESIGN
invariant 10)."""

import json
import math

import pytest

from fdp_ppl.accounting import FileLedger, PrivacyBudget, PrivacyEvent, PrivacyLedger, analytic_sigma, gaussian_delta
from fdp_ppl.accounting.events import fits, for_ledger, gdp_epsilon, tight_epsilon
from fdp_ppl.errors import BudgetExceededError, InputError


def _lap(eps=1.0, count=1, **kw):
    return PrivacyEvent("laplace", eps, 0.0, 1.0 / eps, count, **kw)


def _gauss(eps, delta, count=1, **kw):
    return PrivacyEvent("gaussian", eps, delta, analytic_sigma(eps, delta, 1.0), count, **kw)


# ----------------------------------------------------------------------------- group privacy
def test_group_privacy_multiplies_epsilon_and_uses_the_group_delta():
    k = 8
    lap = _lap(1.0).for_group(k, "subject_id")
    assert (lap.epsilon, lap.delta, lap.unit, lap.group) == (8.0, 0.0, "subject_id", 8)
    assert lap.noise_multiplier == pytest.approx(1.0 / 8)  # a shift of k sensitivities: the same Laplace PLD
    approx = PrivacyEvent("approx", 0.5, 1e-6).for_group(3, "subject_id")
    assert approx.epsilon == pytest.approx(1.5)
    assert approx.delta == pytest.approx(3 * math.exp(2 * 0.5) * 1e-6, rel=1e-12)  # k e^{(k-1)eps} delta
    g = _gauss(0.5, 1e-6).for_group(4, "subject_id")
    # k mu-GDP (noise multiplier / k); its exact delta at k eps is within the group formula's
    assert g.noise_multiplier == pytest.approx(analytic_sigma(0.5, 1e-6, 1.0) / 4)
    assert gaussian_delta(g.epsilon, 1.0, g.noise_multiplier) <= g.delta
    assert g.delta == pytest.approx(4 * math.exp(3 * 0.5) * 1e-6)


def test_group_privacy_refuses_a_vacuous_delta_and_person_events():
    with pytest.raises(InputError, match="no guarantee"):
        PrivacyEvent("approx", 1.0, 1e-3).for_group(8, "subject_id")  # 8 e^7 1e-3 = 8.8 >= 1
    with pytest.raises(InputError, match="only a record-level event"):
        _lap(unit="subject_id").for_group(2, "subject_id")
    with pytest.raises(InputError):
        _lap().for_group(0, "subject_id")


# ----------------------------------------------------------------------------- one unit per ledger
def test_in_memory_ledger_keeps_its_unit():
    led = PrivacyLedger(PrivacyBudget(10.0))
    per_subject = _lap(unit="subject_id")
    led.spend(per_subject.basic, "per subject", event=per_subject)
    assert led.privacy_unit == "subject_id" and led.attrs()["ledger_privacy_unit"] == "subject_id"
    with pytest.raises(InputError, match="protects each subject_id, but this release is per record") as err:
        led.spend(PrivacyBudget(1.0), "per scan", event=_lap())
    assert "records_per_unit=K" in err.value.fix
    assert led.spent.epsilon == 1.0  # nothing charged by the refusal
    led.spend(PrivacyBudget(1.0), "per scan", event=_lap(), records_per_unit=8)
    assert led.spent.epsilon == pytest.approx(9.0) and led.events[-1].group == 8  # the DTI example: 1 + 8
    with pytest.raises(InputError, match="per household"):
        led.spend(PrivacyBudget(1.0), event=_lap(unit="household"))
    declared = PrivacyLedger(PrivacyBudget(10.0), privacy_unit="subject_id")  # a unit stated at creation
    with pytest.raises(InputError, match="per record"):
        declared.check(PrivacyBudget(1.0), _lap())


def test_person_release_on_a_record_ledger_and_a_bound_without_a_unit_are_refused():
    led = PrivacyLedger(PrivacyBudget(10.0))
    led.spend(PrivacyBudget(1.0), event=_lap())
    assert led.privacy_unit == "record"
    with pytest.raises(InputError, match="protects each record, but this release is per subject_id"):
        led.spend(PrivacyBudget(1.0), event=_lap(unit="subject_id"))
    fresh = PrivacyLedger(PrivacyBudget(10.0))
    with pytest.raises(InputError, match="no release yet"):
        fresh.spend(PrivacyBudget(1.0), event=_lap(), records_per_unit=8)
    assert fresh.events == []


def test_file_ledger_unit_is_its_first_charge_and_survives_reopening(tmp_path):
    path = tmp_path / "l.sqlite"
    led = FileLedger(path, PrivacyBudget(2.0))
    led.spend(PrivacyBudget(1.0), "per subject", event=_lap(unit="subject_id"))
    again = FileLedger(path)
    assert again.privacy_unit == "subject_id"
    with pytest.raises(InputError, match="one ledger keeps one privacy unit"):
        again.spend(PrivacyBudget(1.0), "per scan", event=_lap())
    with pytest.raises(InputError, match="per record"):  # the early check refuses it too
        again.check(PrivacyBudget(1.0), unit="record")
    with pytest.raises(BudgetExceededError, match="needs epsilon=8"):  # converted, then over the budget of 2
        again.spend(PrivacyBudget(1.0), "per scan", event=_lap(), records_per_unit=8)
    assert again.spent.epsilon == 1.0 and len(again.records()) == 1
    big = FileLedger(tmp_path / "big.sqlite", PrivacyBudget(10.0))
    big.spend(PrivacyBudget(1.0), "per subject", event=_lap(unit="subject_id"))
    big.spend(PrivacyBudget(1.0), "per scan", event=_lap(), records_per_unit=8)
    rec = big.records()[-1]
    assert rec["epsilon"] == 8.0 and json.loads(rec["event"])["group"] == 8  # the stored event is the converted one
    assert big.spent.epsilon == pytest.approx(9.0)



def test_file_ledger_created_with_its_unit_refuses_or_converts_from_the_first_release(tmp_path):
    """A unit stated at creation is in the chain-covered meta fields: it holds before any release, survives
    reopening, and an edit of it breaks the chain."""
    import sqlite3

    from fdp_ppl.errors import LedgerError

    path = tmp_path / "subjects.sqlite"
    led = FileLedger(path, PrivacyBudget(10.0), privacy_unit="subject_id")
    assert led.privacy_unit == "subject_id" and led.events == []
    assert led.attrs()["ledger_privacy_unit"] == "subject_id"
    with pytest.raises(InputError, match="protects each subject_id, but this release is per record"):
        led.check(PrivacyBudget(1.0), unit="record")  # the early check, before any data are read
    with pytest.raises(InputError, match="protects each subject_id, but this release is per record"):
        led.spend(PrivacyBudget(1.0), "per scan", event=_lap())
    assert led.records() == []  # nothing charged by the refusals
    led.spend(PrivacyBudget(1.0), "per scan", event=_lap(), records_per_unit=8)  # the first release, converted
    assert led.spent.epsilon == pytest.approx(8.0) and led.events[0].group == 8
    again = FileLedger(path)
    assert again.privacy_unit == "subject_id"
    info = again.verify()
    assert info["privacy_unit"] == "subject_id" and info["neighbouring"] == "replace-one"
    with pytest.raises(InputError, match="protects each subject_id, not each record"):
        FileLedger(path, privacy_unit="record")
    assert FileLedger(path, privacy_unit="subject_id").spent.epsilon == pytest.approx(8.0)
    # a record-level ledger stated at creation refuses a per-person release
    rec = FileLedger(tmp_path / "records.sqlite", PrivacyBudget(10.0), privacy_unit="record")
    with pytest.raises(InputError, match="protects each record, but this release is per subject_id"):
        rec.spend(PrivacyBudget(1.0), event=_lap(unit="subject_id"))
    # the unit is covered by the chain: rewriting it (to escape the group conversion) is refused on open
    with sqlite3.connect(path) as con:
        con.execute("UPDATE meta SET value = 'record' WHERE key = 'privacy_unit'")
    con.close()
    with pytest.raises(LedgerError, match="does not match its hash"):
        FileLedger(path)


def test_neighbouring_relations_known_and_spelled_once(tmp_path):
    """The two relations (DESIGN, "What a release protects"): replace-one and add-remove, any spelling of
    add/remove recorded as "add-remove"; anything else refused in one line, nothing created."""
    with pytest.raises(InputError, match="unknown neighbouring relation") as err:
        FileLedger(tmp_path / "x.sqlite", PrivacyBudget(1.0), neighbouring="swap")
    assert "\n" not in str(err.value) and not (tmp_path / "x.sqlite").exists()
    assert FileLedger(tmp_path / "ok.sqlite", PrivacyBudget(1.0), neighbouring="replace-one").neighbouring == \
        "replace-one"
    assert FileLedger(tmp_path / "ar.sqlite", PrivacyBudget(1.0), neighbouring="add/remove").neighbouring == \
        "add-remove"
    assert PrivacyLedger(PrivacyBudget(1.0)).neighbouring is None  # its first charge's
    assert PrivacyLedger(PrivacyBudget(1.0), neighbouring="unbounded").neighbouring == "add-remove"
    assert _lap(neighbouring="add/remove").neighbouring == "add-remove"
    # the relations the families record in words stay accepted (and are replace-one, "padded" included)
    per_person = "replace one subject_id (2 records after bounding: at most 2 kept, padded); the number of units public"
    for words in ("replace-one record; n public", per_person, "replace one labelled record (x, y); n public"):
        assert _lap(neighbouring=words).neighbouring == words
        assert for_ledger(_lap(neighbouring=words), None, relation="replace-one").basic.epsilon == 1.0


def test_add_remove_converts_to_replace_one_by_two_steps_and_never_back(tmp_path):
    """Replace-one is remove then add: an add/remove (eps, delta) release is (2 eps, (1 + e^eps) delta) under
    replace-one (group privacy, k = 2), charged so on a replace-one ledger; a replace-one release publishes n
    and has no add/remove guarantee, so an add/remove ledger refuses it (one line, nothing charged)."""
    ar = _lap(0.5, neighbouring="add-remove")
    conv = ar.for_replace_one()
    assert (conv.epsilon, conv.delta, conv.neighbouring) == (1.0, 0.0, "replace-one")
    assert conv.noise_multiplier == pytest.approx(ar.noise_multiplier / 2)  # twice the shift
    g = _gauss(0.5, 1e-6, neighbouring="add-remove").for_replace_one()
    assert g.delta == pytest.approx((1 + math.exp(0.5)) * 1e-6, rel=1e-12)
    assert gaussian_delta(g.epsilon, 1.0, g.noise_multiplier) <= g.delta  # the exact Gaussian is within it
    with pytest.raises(InputError, match="no guarantee"):
        PrivacyEvent("approx", 5.0, 0.01, neighbouring="add-remove").for_replace_one()
    assert _lap().for_replace_one() == _lap()
    # a replace-one file ledger (stated at creation) charges 2 eps, and says so in its events
    rep = FileLedger(tmp_path / "rep.sqlite", PrivacyBudget(3.0), neighbouring="replace-one")
    rep.spend(PrivacyBudget(1.0), "membership", event=_lap(1.0, neighbouring="add-remove"))
    assert rep.spent.epsilon == pytest.approx(2.0) and rep.events[0].neighbouring == "replace-one"
    with pytest.raises(BudgetExceededError):
        rep.spend(PrivacyBudget(1.0), event=_lap(1.0, neighbouring="add-remove"))  # 2 + 2 > 3
    # an add/remove ledger refuses replace-one releases, before and at the charge; the relation survives reopening
    path = tmp_path / "ar.sqlite"
    led = FileLedger(path, PrivacyBudget(3.0), neighbouring="add-remove")
    for attempt in (lambda: led.check(PrivacyBudget(1.0), _lap()), lambda: led.spend(PrivacyBudget(1.0), event=_lap())):
        with pytest.raises(InputError, match="protects membership") as err:
            attempt()
        assert "\n" not in str(err.value)
    assert led.records() == []
    led.spend(PrivacyBudget(1.0), event=_lap(1.0, neighbouring="add-remove"))
    again = FileLedger(path)
    assert again.neighbouring == "add-remove" and again.verify()["neighbouring"] == "add-remove"
    assert again.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(InputError, match="for the add-remove relation, not replace-one"):
        FileLedger(path, neighbouring="replace-one")
    # a ledger without a stated relation takes its first charge's, and holds to it
    mem = PrivacyLedger(PrivacyBudget(5.0))
    mem.spend(PrivacyBudget(1.0), event=_lap(1.0, neighbouring="add-remove"))
    assert mem.neighbouring == "add-remove" and mem.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(InputError, match="protects membership"):
        mem.spend(PrivacyBudget(1.0), event=_lap())
    # the relation is in the chain: rewriting it (to escape the refusal) is refused on open
    import sqlite3

    from fdp_ppl.errors import LedgerError

    with sqlite3.connect(path) as con:
        con.execute("UPDATE meta SET value = 'replace-one' WHERE key = 'neighbouring'")
    con.close()
    with pytest.raises(LedgerError, match="does not match its hash"):
        FileLedger(path)


def test_events_recorded_before_units_read_as_record_level_and_keep_their_json():
    old = '{"count":1,"delta":0.0,"epsilon":1.0,"law":"laplace","neighbouring":"replace-one","noise_multiplier":1.0}'
    e = PrivacyEvent.from_json(old)
    assert (e.unit, e.group, e.certified) == ("record", 1, True)
    assert e.to_json() == old  # the same bytes: a chain over old entries still verifies
    person = _lap(unit="subject_id", certified=False)
    assert PrivacyEvent.from_json(person.to_json()) == person and '"unit":"subject_id"' in person.to_json()


# ----------------------------------------------------------------------------- adaptive acceptance
def test_laplace_events_are_accepted_by_basic_composition_only():
    """The PLD total of 60 Laplace releases at eps 0.5 is below 30 at delta 1e-6 (no filter theorem covers it
    for a ledger that stops adaptively), so a (30, 1e-6) budget takes 60 of them and not the 61st."""
    lap = PrivacyEvent("laplace", 0.5, 0.0, 2.0)
    total = PrivacyBudget(30.0, 1e-6)
    assert tight_epsilon([lap] * 61, 1e-6) < 30.0  # the non-adaptive total would have accepted the 61st
    assert fits([lap] * 60, total) and not fits([lap] * 61, total)
    led = PrivacyLedger(total)
    for _ in range(60):
        led.spend(lap.basic, event=lap)
    with pytest.raises(BudgetExceededError):
        led.spend(lap.basic, event=lap)


def test_gaussian_events_are_accepted_by_the_mu_gdp_filter_and_mixed_ones_by_basic():
    g = _gauss(0.5, 1e-5)
    total = PrivacyBudget(2.0, 1e-4)
    assert gdp_epsilon([g] * 10, 1e-4) == pytest.approx(tight_epsilon([g] * 10, 1e-4), abs=5e-3)  # 1.50
    assert fits([g] * 10, total)  # basic: 5 > 2
    assert not fits([g] * 10 + [_lap(0.1)], total)  # one Laplace event: basic composition decides
    assert fits([g] * 3 + [_lap(0.1)], total)  # 1.6 by the sum
    uncertified = PrivacyEvent("gaussian", 0.5, 1e-5, g.noise_multiplier, certified=False)
    assert not fits([g] * 9 + [uncertified], total)


def test_uncertified_releases_are_charged_but_kept_out_of_the_guaranteed_total():
    led = PrivacyLedger(PrivacyBudget(3.0))
    led.spend(PrivacyBudget(1.0), event=_lap())
    mcmc = PrivacyEvent("approx", 1.0, 0.0, certified=False)
    led.spend(mcmc.basic, "gibbs k=2", event=mcmc)
    at = led.attrs()
    assert at["ledger_spent_epsilon"] == 2.0  # charged at its nominal cost
    assert at["ledger_guaranteed_epsilon"] == 1.0 and at["ledger_uncertified_epsilon"] == 1.0
    assert at["ledger_uncertified_releases"] == 1
    with pytest.raises(BudgetExceededError):
        led.spend(PrivacyBudget(1.5), event=_lap(1.5))
    clean = PrivacyLedger(PrivacyBudget(3.0))
    clean.spend(PrivacyBudget(1.0), event=_lap())
    assert "ledger_uncertified_releases" not in clean.attrs()


def test_for_ledger_without_a_bound_names_the_fix():
    with pytest.raises(InputError) as err:
        for_ledger(_lap(), "subject_id")
    assert "\n" not in str(err.value) and "group privacy" in err.value.fix
