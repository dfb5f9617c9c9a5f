"""The ledger composes mechanism events tightly (dp-accounting privacy-loss distributions) and validates itself:
numbers, events, a hash chain; tampered, truncated and foreign files are refused, never reset (DESIGN invariants 10 and 11)."""

import sqlite3

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.accounting import FileLedger, PrivacyBudget, PrivacyEvent, PrivacyLedger, analytic_sigma, tight_epsilon
from fdp_ppl.cli import main
from fdp_ppl.errors import BudgetExceededError, InputError, LedgerError


def _gauss(eps, delta, count=1):
    return PrivacyEvent("gaussian", eps, delta, analytic_sigma(eps, delta, 1.0), count)


# ----------------------------------------------------------------------------- tight composition
@pytest.mark.parametrize("event, k, delta, basic, expected", [
    (_gauss(0.5, 1e-5), 10, 1e-4, 5.0, 1.50),
    (_gauss(0.5, 1e-7), 100, 1e-5, 50.0, 4.95),
    (PrivacyEvent("laplace", 0.5, 0.0, 2.0), 100, 1e-6, 50.0, 30.5),
])
def test_tight_totals_reproduce_the_issue_numbers_against_dp_accounting(event, k, delta, basic, expected):
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    events = [event] * k
    got = tight_epsilon(events, delta)
    assert got == pytest.approx(expected, abs=0.02)
    assert sum(e.basic.epsilon for e in events) == pytest.approx(basic)
    # the same total from dp-accounting's own accountant (its event classes, its composition). Its noise
    # multiplier is relative to the sensitivity of its relation; ours (σ/Δ) is relative to the replace-one
    # sensitivity Δ already, so the shift is one unit: its add/remove relation, whose pair is exactly that shift
    acc = pld_privacy_accountant.PLDAccountant(pld_privacy_accountant.NeighborRel.ADD_OR_REMOVE_ONE)
    dpe = dp_event.LaplaceDpEvent(event.noise_multiplier) if event.law == "laplace" else \
        dp_event.GaussianDpEvent(event.noise_multiplier)
    acc.compose(dpe, k)
    assert got == pytest.approx(acc.get_epsilon(delta), rel=2e-3)


def test_mixed_events_and_identical_events_merge():
    lap = PrivacyEvent("laplace", 1.0, 0.0, 1.0)
    gauss = _gauss(1.0, 1e-5)
    separate = tight_epsilon([lap, lap, gauss, gauss], 1e-5)
    merged = tight_epsilon([PrivacyEvent("laplace", 1.0, 0.0, 1.0, 2), _gauss(1.0, 1e-5, 2)], 1e-5)
    assert separate == pytest.approx(merged, rel=1e-6)
    assert tight_epsilon([], 1e-5) == 0.0
    assert tight_epsilon([lap], 0.0) == pytest.approx(1.0, abs=1e-3)  # one Laplace release: exactly ε at δ = 0


def test_event_claims_are_checked():
    PrivacyEvent("laplace", 2.0, 0.0, 1.0)  # Laplace with b = Δ is 1-DP, hence 2-DP: a looser claim is true
    with pytest.raises(InputError, match="is 1-DP, not 0.5-DP"):
        PrivacyEvent("laplace", 0.5, 0.0, 1.0)
    with pytest.raises(InputError, match="not"):
        PrivacyEvent("gaussian", 1.0, 1e-5, 0.5 * analytic_sigma(1.0, 1e-5, 1.0))
    for bad in (dict(law="x", epsilon=1.0), dict(law="approx", epsilon=-1.0), dict(law="approx", epsilon=1.0,
                                                                                       delta=1.0),
                dict(law="approx", epsilon=1.0, count=0), dict(law="gaussian", epsilon=1.0, delta=1e-5)):
        with pytest.raises(InputError):
            PrivacyEvent(**bad)
    e = _gauss(0.5, 1e-5, 3)
    assert PrivacyEvent.from_json(e.to_json()) == e


def test_budget_check_uses_the_tight_total(tmp_path):
    led = PrivacyLedger.open(tmp_path / "l.sqlite", PrivacyBudget(2.0, 1e-4))
    event = _gauss(0.5, 1e-5)
    for i in range(10):  # basic composition would refuse the 5th (5 × 0.5 > 2); the tight total is 1.50
        led.spend(event.basic, f"r{i}", event=event)
    assert led.spent.epsilon == pytest.approx(5.0)
    assert led.tight_epsilon() == pytest.approx(1.50, abs=0.01)
    with pytest.raises(BudgetExceededError, match="fits by neither"):
        for i in range(40):
            led.spend(event.basic, "more", event=event)
    assert led.tight_epsilon() <= 2.0 * (1 + 1e-9)
    # events without a law compose only as generic (eps, delta) guarantees: refused as basic composition would
    generic = PrivacyLedger.open(tmp_path / "g.sqlite", PrivacyBudget(2.0, 1e-4))
    for _ in range(4):
        generic.spend(PrivacyBudget(0.5, 1e-5))
    with pytest.raises(BudgetExceededError):
        generic.spend(PrivacyBudget(0.5, 1e-5))


def test_gaussian_releases_record_their_noise_and_fit_more_releases(tmp_path):
    grid = fp.Grid.uniform(20)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    rng = np.random.default_rng(0)
    summary = fp.RKHSSpec(basis=basis, tau=1.0, n=30).fit(0.3 * rng.standard_normal((30, 20)))
    led = PrivacyLedger.open(tmp_path / "l.sqlite", PrivacyBudget(2.0, 1e-4))
    for _ in range(6):  # 6 × 0.5 = 3 > 2 by the sum; fits by the privacy-loss distribution
        fp.release(summary, fp.GaussianMechanism(0.5, 1e-5), ledger=led)
    events = led.events
    assert all(e.law == "gaussian" and e.noise_multiplier >= analytic_sigma(0.5, 1e-5, 1.0) * (1 - 1e-9)
               for e in events)
    assert led.spent.epsilon == pytest.approx(3.0) and led.tight_epsilon() < 2.0


def test_ledger_command_shows_basic_and_tight(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    led = PrivacyLedger.open(path, PrivacyBudget(2.0, 1e-4))
    event = _gauss(0.5, 1e-5, 2)
    for _ in range(3):
        led.spend(event.basic, "g", event=event)
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "spent      epsilon 3, delta 6e-05 in 3 releases (basic composition: the sum)" in out
    tight = led.tight_epsilon()
    assert f"tight      epsilon {tight:.4g} at delta 0.0001" in out
    assert "gaussian sigma/Delta" in out and " x 2" in out


# ----------------------------------------------------------------------------- integrity
def _filled(tmp_path, name="l.sqlite"):
    path = tmp_path / name
    led = PrivacyLedger.open(path, PrivacyBudget(3.0))
    for i in range(3):
        led.spend(PrivacyBudget(0.5), f"release {i}", dataset="toy", mechanism="iclp")
    return path


TAMPERING = {
    "negative epsilon": "UPDATE entries SET epsilon = -5 WHERE id = 2",
    "minus infinity": "UPDATE entries SET epsilon = -9e999 WHERE id = 2",
    "text nan": "UPDATE entries SET epsilon = 'nan' WHERE id = 2",
    "smaller epsilon": "UPDATE entries SET epsilon = 0.1 WHERE id = 2",
    "edited label": "UPDATE entries SET label = 'something else' WHERE id = 1",
    "inserted row": "INSERT INTO entries (created_at, label, dataset, mechanism, epsilon, delta, event, hash) "
                    "VALUES ('2026', 'x', '', '', -5, 0, NULL, NULL)",
    "deleted last row": "DELETE FROM entries WHERE id = 3",
    "deleted middle row": "DELETE FROM entries WHERE id = 2",
    "deleted every row": "DELETE FROM entries",
    "budget raised": "UPDATE budget SET epsilon = 100",
    "budget row deleted": "DELETE FROM budget",
    "entries dropped": "DROP TABLE entries",
    "meta dropped": "DROP TABLE meta",
    "event edited": "UPDATE entries SET event = '{\"law\":\"approx\",\"epsilon\":0.1}' WHERE id = 1",
}


@pytest.mark.parametrize("what", list(TAMPERING))
def test_tampered_ledgers_are_refused_naming_the_problem(tmp_path, capsys, what):
    path = _filled(tmp_path)
    con = sqlite3.connect(path)
    con.execute(TAMPERING[what])
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError):
        PrivacyLedger.open(path)
    with pytest.raises((LedgerError, InputError)):  # never re-budgeted, even when a budget is passed
        PrivacyLedger.open(path, PrivacyBudget(100.0)).spend(PrivacyBudget(0.1))
    assert main(["ledger", str(path)]) == 2
    assert main(["ledger", str(path), "--verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("fdp-ppl: error: ") == 2 and "Traceback" not in err
    assert path.read_bytes() == before  # nothing written: no reset, no charge


def test_verify_prints_the_head_and_spending_continues(tmp_path, capsys):
    path = _filled(tmp_path)
    assert main(["ledger", str(path), "--verify"]) == 0
    out = capsys.readouterr().out
    head = FileLedger(path).verify()["head"]
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.strip()}
    assert rows["head"] == [head] and rows["entries"] == ["3"] and rows["valid"][0] == "yes:"
    FileLedger(path).spend(PrivacyBudget(0.5), "next")
    assert FileLedger(path).verify()["head"] != head and FileLedger(path).verify()["entries"] == 4


def test_foreign_and_empty_files(tmp_path):
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="not an fdp-ppl ledger"):
        PrivacyLedger.open(other, PrivacyBudget(1.0))
    empty = tmp_path / "empty.sqlite"
    empty.touch()  # a ledger is never empty: a 0-byte file was truncated or wiped, never a fresh ledger
    with pytest.raises(LedgerError, match="empty file .* restore it from a copy"):
        PrivacyLedger.open(empty, PrivacyBudget(1.0))
    assert empty.stat().st_size == 0


V1 = """
CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL, delta REAL NOT NULL,
                     created_at TEXT NOT NULL);
CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, label TEXT, dataset TEXT,
                      mechanism TEXT, epsilon REAL NOT NULL, delta REAL NOT NULL);
INSERT INTO budget VALUES (1, 2.0, 1e-5, '2026-11-01T00:00:00+00:00');
INSERT INTO entries (created_at, label, dataset, mechanism, epsilon, delta)
    VALUES ('2026-11-02T00:00:00+00:00', 'old release', 'dti/cca', 'iclp', 0.5, 0.0);
INSERT INTO entries (created_at, label, dataset, mechanism, epsilon, delta)
    VALUES ('2026-11-03T00:00:00+00:00', 'old gaussian', 'dti/cca', 'gaussian', 0.5, 1e-6);
"""


def test_a_ledger_of_the_first_layout_is_migrated_once(tmp_path):
    path = tmp_path / "v1.sqlite"
    con = sqlite3.connect(path)
    con.executescript(V1)
    con.close()
    led = PrivacyLedger.open(path)
    assert led.total == PrivacyBudget(2.0, 1e-5)
    assert [label for label, _ in led.entries] == ["old release", "old gaussian"]
    assert led.spent.epsilon == pytest.approx(1.0) and led.spent.delta == pytest.approx(1e-6)
    assert all(e.law == "approx" for e in led.events)
    info = led.verify()
    assert info["entries"] == 2 and "migrated_at" in info
    led.spend(PrivacyBudget(0.5), "new")
    assert FileLedger(path).verify()["migrated_at"] == info["migrated_at"]  # once


def test_a_bad_ledger_of_the_first_layout_is_not_migrated(tmp_path):
    path = tmp_path / "v1.sqlite"
    con = sqlite3.connect(path)
    con.executescript(V1 + "UPDATE entries SET epsilon = -5 WHERE id = 1;")
    con.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="entry #1"):
        PrivacyLedger.open(path)
    assert path.read_bytes() == before
