"""A ledger cannot be rolled back or edited silently (DESIGN invariant 11 and "The ledger's threat model"):
every release records the ledger's entry count and head after its charge, and ``verify`` against the latest
release finds each attack below even when the attacker rewrote the unkeyed chain consistently; with a key file
the same attacks, made without the key, are refused on open with no release at hand. The file is never
re-created in place, a downgrade is refused, and SQLite faults (full disk, a held lock) say what they are.
Concurrent charges on a long ledger decide outside the write lock and are all served when they fit."""

import json
import multiprocessing
import os
import shutil
import sqlite3
import time

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.accounting import FileLedger, PrivacyBudget, PrivacyEvent, PrivacyLedger, analytic_sigma, tight_epsilon
from fdp_ppl.accounting import ledger as ledger_module
from fdp_ppl.accounting.ledger import _MUTABLE, _digest_v2, _genesis_v2, _Hasher
from fdp_ppl.cli import main
from fdp_ppl.errors import InputError, LedgerError


def _rewrite_chain(path, hasher=None) -> None:
    """What an editor does after changing rows: recompute every link, the count, the head and the seal with the
    public algorithm (unkeyed SHA-256, or a key of their own), so that the file alone verifies."""
    h = hasher or _Hasher()
    con = sqlite3.connect(path)
    eps, delta, created = con.execute("SELECT epsilon, delta, created_at FROM budget").fetchone()
    fixed = [list(kv) for kv in con.execute("SELECT key, value FROM meta ORDER BY key") if kv[0] not in _MUTABLE]
    prev = h("genesis", "fdp-ppl ledger", eps, delta, created, fixed)
    rows = con.execute("SELECT id, created_at, label, dataset, mechanism, epsilon, delta, event FROM entries "
                       "ORDER BY id").fetchall()
    for row in rows:
        prev = h("entry", prev, *row)
        con.execute("UPDATE entries SET hash = ? WHERE id = ?", (prev, row[0]))
    for key, value in (("count", str(len(rows))), ("head", prev), ("seal", h("seal", len(rows), prev))):
        con.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    con.commit()
    con.close()


def _sql(path, *statements) -> None:
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def summary():
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(10))
    curves = np.random.default_rng(1).standard_normal((5, 10)) * 0.2
    return fp.iclp_qr_mean(curves, basis, tau=1.0)


def _history(tmp_path, summary, keyed: bool, write: bool = True):
    """A ledger of budget 3 with three releases (ε 0.5, 0.3, 0.2), their files, and a copy taken after two."""
    (tmp_path / "data").mkdir()
    key = None
    if keyed:
        (tmp_path / "keys").mkdir(mode=0o700)
        key = tmp_path / "keys" / "ledger.key"
    path = tmp_path / "data" / "ledger.sqlite"
    led = PrivacyLedger.open(path, PrivacyBudget(3.0), key_file=key)
    releases, old = [], None
    for i, eps in enumerate((0.5, 0.3, 0.2), 1):
        tree = fp.release(summary, fp.ICLP(eps), ledger=led, dataset="toy", label=f"r{i}")
        out = tmp_path / "data" / f"r{i}.nc"
        if write:
            tree.to_netcdf(out)
        releases.append(out)
        assert tree.attrs["ledger_entries"] == i and tree.attrs["ledger_head"] == led.verify()["head"]
        if i == 2:
            old = path.read_bytes()
    return path, key, releases, old


@pytest.fixture(scope="module")
def unkeyed(tmp_path_factory, summary):
    """One unkeyed history with release files, copied by each test (an unkeyed chain does not name its path)."""
    root = tmp_path_factory.mktemp("history")
    return root, _history(root, summary, keyed=False)


def _copy(unkeyed, tmp_path):
    root, (path, _, releases, old) = unkeyed
    shutil.copytree(root / "data", tmp_path / "data")
    return tmp_path / "data" / path.name, [tmp_path / "data" / r.name for r in releases], old


def _rollback_three_statements(path, old):  # the three statements, plus the seal (a fourth, hashed)
    _sql(path, "DELETE FROM entries WHERE id > 1",
         "UPDATE meta SET value = (SELECT hash FROM entries WHERE id = 1) WHERE key = 'head'",
         "UPDATE meta SET value = '1' WHERE key = 'count'")
    _rewrite_chain(path)


def _row_edit(path, old):
    _sql(path, "UPDATE entries SET epsilon = 0.01, event = '{\"count\":1,\"delta\":0.0,\"epsilon\":0.01,\"law\":"
               "\"approx\",\"neighbouring\":\"replace-one\",\"noise_multiplier\":null}' WHERE id = 1")
    _rewrite_chain(path)


def _event_only_edit(path, old):  # Laplace noise multiplier 2 -> 1e6: the epsilon column is left alone
    event = json.loads(sqlite3.connect(path).execute("SELECT event FROM entries WHERE id = 1").fetchone()[0])
    assert event["law"] == "laplace" and event["noise_multiplier"] == pytest.approx(2.0)
    event["noise_multiplier"] = 1e6
    _sql(path, f"UPDATE entries SET event = '{json.dumps(event, sort_keys=True, separators=(',', ':'))}' WHERE id = 1")
    _rewrite_chain(path)


def _swap(path, old):
    con = sqlite3.connect(path)
    cols = "created_at, label, dataset, mechanism, epsilon, delta, event"
    a, b = (con.execute(f"SELECT {cols} FROM entries WHERE id = ?", (i,)).fetchone() for i in (1, 3))
    for rid, row in ((1, b), (3, a)):
        con.execute("UPDATE entries SET created_at = ?, label = ?, dataset = ?, mechanism = ?, epsilon = ?, "
                    "delta = ?, event = ? WHERE id = ?", (*row, rid))
    con.commit()
    con.close()
    _rewrite_chain(path)


def _budget_raise(path, old):
    _sql(path, "UPDATE budget SET epsilon = 100")
    _rewrite_chain(path)


def _downgrade(path, old):  # rewritten to the first layout, header reset too, the last charge dropped
    _sql(path, "DELETE FROM entries WHERE id = 3", "DROP TABLE meta", "ALTER TABLE entries DROP COLUMN hash",
         "ALTER TABLE entries DROP COLUMN event", "PRAGMA user_version = 0", "PRAGMA application_id = 0")


def _old_copy(path, old):
    path.write_bytes(old)


def _wipe(path, old):  # deleted; the next run with --budget starts a fresh ledger
    path.unlink()
    PrivacyLedger.open(path, PrivacyBudget(3.0))


ATTACKS = {"rollback by three statements": _rollback_three_statements, "row edit with recomputed chain": _row_edit,
           "event-only edit": _event_only_edit, "swap": _swap, "budget raise": _budget_raise,
           "downgrade to the first layout": _downgrade, "old copy over the live file": _old_copy, "wipe": _wipe}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_unkeyed_attacks_show_against_the_last_release(tmp_path, unkeyed, capsys, attack):
    path, releases, old = _copy(unkeyed, tmp_path)
    assert main(["ledger", str(path), "--verify", *map(str, releases)]) == 0
    capsys.readouterr()
    ATTACKS[attack](path, old)
    PrivacyLedger.open(path).verify()  # the honest limit: an unkeyed file rewritten consistently verifies alone
    assert main(["ledger", str(path), "--verify", str(releases[-1])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"fdp-ppl: error: {releases[-1]} ") and "Traceback" not in err
    assert "rolled back" in err and "restore the ledger from a copy" in err
    with pytest.raises(LedgerError, match=r"r3\.nc"):
        FileLedger(path).verify(releases=[releases[-1]])


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_keyed_attacks_without_the_key_are_refused_on_open(tmp_path, summary, capsys, attack):
    path, key, _, old = _history(tmp_path, summary, keyed=True, write=False)  # no release at hand
    ATTACKS[attack](path, old)
    with pytest.raises(LedgerError):
        PrivacyLedger.open(path, key_file=key)  # no release at hand
    assert main(["ledger", str(path), "--key-file", str(key), "--verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_the_literal_three_statements_fail_on_open_even_unkeyed(tmp_path, unkeyed):
    path, _, _ = _copy(unkeyed, tmp_path)
    _sql(path, "DELETE FROM entries WHERE id > 1",
         "UPDATE meta SET value = (SELECT hash FROM entries WHERE id = 1) WHERE key = 'head'",
         "UPDATE meta SET value = '1' WHERE key = 'count'")
    with pytest.raises(LedgerError, match="do not match their seal"):
        PrivacyLedger.open(path)


def test_verify_accepts_every_release_of_an_intact_history(tmp_path, unkeyed, capsys):
    path, releases, _ = _copy(unkeyed, tmp_path)
    info = FileLedger(path).verify(releases=releases)
    assert [count for _, count, _ in info["releases"]] == [1, 2, 3] and info["chain"] == "sha256"
    FileLedger(path).spend(PrivacyBudget(0.1), "later")  # releases made before later charges still verify
    head3 = xr_attrs(releases[-1])["ledger_head"]
    assert main(["ledger", str(path), "--verify", str(releases[0]), f"3:{head3}"]) == 0
    out = capsys.readouterr().out
    assert "entry 1, head" in out and "entry 3, head" in out and "is in the chain" in out
    assert main(["ledger", str(path), "--verify"]) == 0
    assert "not checked" in capsys.readouterr().out  # without a key or a release, the limit is stated
    with pytest.raises(InputError, match="records no ledger head"):
        FileLedger(path).verify(releases=[{"epsilon": 1.0}])


def xr_attrs(path):
    import xarray as xr

    with xr.open_datatree(path) as tree:
        return dict(tree.attrs)


def test_the_release_records_the_head_of_its_own_charge(tmp_path, summary):
    path = tmp_path / "l.sqlite"
    mine, other = FileLedger(path, PrivacyBudget(3.0)), FileLedger(path)
    tree = fp.release(summary, fp.ICLP(0.5), ledger=mine)
    other.spend(PrivacyBudget(0.25), "another run")  # charged after mine, before my record is read again
    assert mine.attrs()["ledger_entries"] == 1 and mine.attrs()["ledger_spent_epsilon"] == pytest.approx(0.5)
    assert tree.attrs["ledger_head"] == mine.attrs()["ledger_head"] != mine.verify()["head"]


# ----------------------------------------------------------------------------- the key file
def test_key_file_rules(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "keys").mkdir(mode=0o700)
    path, key = tmp_path / "data" / "l.sqlite", tmp_path / "keys" / "k"
    with pytest.raises(InputError, match="is the ledger itself"):
        FileLedger(path, PrivacyBudget(1.0), key_file=path)
    for inside in (tmp_path / "data" / "k", tmp_path / "data" / "sub" / "k"):  # its writers can rename those
        with pytest.raises(InputError, match="inside the ledger's directory"):
            FileLedger(path, PrivacyBudget(1.0), key_file=inside)
    assert not path.exists()
    led = FileLedger(path, PrivacyBudget(1.0), key_file=key)
    assert key.stat().st_size == 32 and key.stat().st_mode & 0o777 == 0o600
    led.spend(PrivacyBudget(0.1), "x")
    assert led.verify()["chain"] == "hmac-sha256" and led.verify()["head_log"] == 1
    with pytest.raises(LedgerError, match="keyed chain and no key was given"):
        FileLedger(path)
    other = tmp_path / "keys" / "other"
    other.write_bytes(os.urandom(32))
    other.chmod(0o600)
    with pytest.raises(LedgerError, match="keyed with another key"):
        FileLedger(path, key_file=other)
    with pytest.raises(InputError, match="no key file"):
        FileLedger(path, key_file=tmp_path / "keys" / "missing")
    key.chmod(0o644)
    with pytest.raises(InputError, match="chmod 600"):
        FileLedger(path, key_file=key)
    key.chmod(0o600)
    plain = tmp_path / "data" / "plain.sqlite"
    FileLedger(plain, PrivacyBudget(1.0))
    with pytest.raises(LedgerError, match="has no keyed chain"):
        FileLedger(plain, key_file=key)
    # an editor with a key of their own re-keys the file consistently: the owner's key refuses it
    _rewrite_chain(path, _Hasher(other.read_bytes()))
    with pytest.raises(LedgerError):
        FileLedger(path, key_file=key)


def test_the_key_head_log_refuses_a_ledger_recreated_in_place(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "keys").mkdir(mode=0o700)
    path, key = tmp_path / "data" / "l.sqlite", tmp_path / "keys" / "k"
    FileLedger(path, PrivacyBudget(1.0), key_file=key).spend(PrivacyBudget(0.5))
    path.unlink()
    with pytest.raises(LedgerError, match="head log .* which is gone"):
        FileLedger(path, PrivacyBudget(1.0), key_file=key)
    assert not path.exists()


# ----------------------------------------------------------------------------- layouts
def _v2_file(path, rows=(("2026-11-02T00:00:00+00:00", "a", "toy", "iclp", 0.5, 0.0),)):
    """A ledger as schema 2 wrote it (unkeyed chain over the entries only)."""
    con = sqlite3.connect(path)
    for sql in ledger_module._TABLES.values():
        con.execute(sql)
    created = "2026-11-01T00:00:00+00:00"
    con.execute("INSERT INTO budget VALUES (1, 3.0, 0.0, ?)", (created,))
    prev = _genesis_v2(3.0, 0.0, created)
    for i, r in enumerate(rows, 1):
        event = PrivacyEvent.from_budget(PrivacyBudget(r[4], r[5])).to_json()
        row = [i, *r, event]
        prev = _digest_v2(prev, row)
        con.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*row, prev))
    con.executemany("INSERT INTO meta VALUES (?, ?)", [("schema_version", "2"), ("created_at", created),
                                                       ("count", str(len(rows))), ("head", prev)])
    con.commit()
    con.close()
    return prev


def test_a_schema_2_ledger_is_migrated_once_and_the_migration_is_in_the_chain(tmp_path):
    path = tmp_path / "v2.sqlite"
    old_head = _v2_file(path)
    info = FileLedger(path).verify()
    assert info["schema_version"] == 3 and info["migrations"][-1]["from"] == 2
    assert info["migrations"][-1]["head"] == old_head and info["entries"] == 1
    before = path.read_bytes()
    assert FileLedger(path).verify() == info and path.read_bytes() == before  # once
    _sql(path, "UPDATE meta SET value = '[]' WHERE key = 'migrations'")  # the record of it is chained
    with pytest.raises(LedgerError, match="does not match its hash"):
        FileLedger(path)


@pytest.mark.parametrize("to", ["schema 1", "schema 2"])
def test_a_downgraded_ledger_is_refused(tmp_path, to):
    path = tmp_path / "l.sqlite"
    led = FileLedger(path, PrivacyBudget(3.0))
    led.spend(PrivacyBudget(0.5))
    if to == "schema 1":
        _sql(path, "DROP TABLE meta", "ALTER TABLE entries DROP COLUMN hash", "ALTER TABLE entries DROP COLUMN event")
    else:  # a valid schema-2 chain written over it
        con = sqlite3.connect(path)
        eps, delta, created = con.execute("SELECT epsilon, delta, created_at FROM budget").fetchone()
        prev = _genesis_v2(eps, delta, created)
        for row in con.execute("SELECT id, created_at, label, dataset, mechanism, epsilon, delta, event FROM entries"):
            prev = _digest_v2(prev, list(row))
            con.execute("UPDATE entries SET hash = ? WHERE id = ?", (prev, row[0]))
        con.execute("DELETE FROM meta")
        con.executemany("INSERT INTO meta VALUES (?, ?)", [("schema_version", "2"), ("created_at", created),
                                                           ("count", "1"), ("head", prev)])
        con.commit()
        con.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="downgraded"):
        FileLedger(path)
    assert path.read_bytes() == before


def test_triggers_and_extra_tables_are_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    FileLedger(path, PrivacyBudget(3.0))
    _sql(path, "CREATE TRIGGER t AFTER INSERT ON entries BEGIN DELETE FROM entries WHERE id = NEW.id; END")
    with pytest.raises(LedgerError, match="trigger t"):
        FileLedger(path)


# ----------------------------------------------------------------------------- faults
@pytest.mark.parametrize("cut", [0, 100, 4096])
def test_a_truncated_ledger_is_refused_not_made_fresh(tmp_path, capsys, cut):
    path = tmp_path / "l.sqlite"
    led = FileLedger(path, PrivacyBudget(3.0))
    for i in range(40):
        led.spend(PrivacyBudget(0.01), "x" * 200)
    with open(path, "r+b") as fh:
        fh.truncate(cut)
    with pytest.raises(LedgerError, match="restore it from a copy|restore the file from a copy"):
        FileLedger(path, PrivacyBudget(3.0))
    assert path.stat().st_size == cut  # never re-created in place
    data = tmp_path / "toy.nc"
    import xarray as xr

    xr.Dataset({"y": (("curve", "s"), np.random.default_rng(0).standard_normal((6, 8)) * 0.1)},
               coords={"s": np.linspace(0, 1, 8)}).to_netcdf(data)
    code = main(["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", "0.3", "--tau", "3",
                 "--out", str(tmp_path / "r.nc"), "--ledger", str(path), "--budget", "3"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "restore" in err and not (tmp_path / "r.nc").exists()


def _full_disk(monkeypatch):
    """SQLite's own SQLITE_FULL: the connection may not grow the file beyond its current pages."""
    real = FileLedger._connect

    def connect(self):
        con = real(self)
        con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchone()[0]}")
        return con

    monkeypatch.setattr(FileLedger, "_connect", connect)


def test_a_full_disk_under_the_ledger_says_so(tmp_path, monkeypatch, summary):
    path = tmp_path / "l.sqlite"
    led = FileLedger(path, PrivacyBudget(100.0))
    _full_disk(monkeypatch)
    with pytest.raises(LedgerError) as err:
        for _ in range(20):  # each entry needs a new page
            led.spend(PrivacyBudget(0.01), "x" * 3000)
    text = str(err.value)
    assert "disk under the ledger" in text and "is full" in text and "nothing was charged" in text
    assert "cannot rollback" not in text and "free disk space" in text
    monkeypatch.undo()
    n = len(FileLedger(path).entries)
    assert FileLedger(path).verify()["entries"] == n  # the file is intact and holds what was charged


def test_a_real_full_disk_under_the_ledger_says_so(tmp_path):
    """A real 64 KiB tmpfs (root only) holding the ledger, filled by another file."""
    import subprocess

    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)],
                                           capture_output=True, check=False).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        led = FileLedger(small / "l.sqlite", PrivacyBudget(100.0))
        with pytest.raises(OSError), open(small / "fill", "wb") as fh:
            while True:
                fh.write(b"\0" * 1024)
                fh.flush()
        with pytest.raises(LedgerError, match=r"disk under the ledger .* is full \(SQLite: database or disk is full\); "
                                              r"nothing was charged; free disk space there"):
            led.spend(PrivacyBudget(0.01), "x" * 3000)
        (small / "fill").unlink()
        assert FileLedger(small / "l.sqlite").entries == []
        led.spend(PrivacyBudget(0.01), "after")  # space freed: charging works again
    finally:
        subprocess.run(["umount", str(small)], capture_output=True, check=False)


def test_a_held_lock_says_so_with_the_right_fix(tmp_path, monkeypatch):
    path = tmp_path / "l.sqlite"
    FileLedger(path, PrivacyBudget(1.0))
    monkeypatch.setattr(ledger_module, "_TIMEOUT", 0.3)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LedgerError, match=r"stayed locked by another run for 0.3 s; nothing was charged; run "
                                              r"again when the other runs on this ledger have finished"):
            FileLedger(path).spend(PrivacyBudget(0.1))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert FileLedger(path).entries == []


# ----------------------------------------------------------------------------- concurrency on a long ledger
def _long_ledger(path, n, event, total):
    FileLedger(path, total)
    con = sqlite3.connect(path)
    b = event.basic
    con.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                    [(i, "2026-11-01T00:00:00+00:00", f"r{i}", "toy", "gaussian", b.epsilon, b.delta, event.to_json())
                     for i in range(1, n + 1)])
    con.commit()
    con.close()
    _rewrite_chain(path)  # the honest chain of those entries
    assert FileLedger(path).verify()["entries"] == n


def _spend(path, event, barrier, results):
    led = FileLedger(path)
    barrier.wait()
    start = time.monotonic()
    try:
        led.spend(event.basic, f"pid {os.getpid()}", event=event)
        results.put(("served", time.monotonic() - start))
    except Exception as err:  # noqa: BLE001 - reported to the test
        results.put((f"{type(err).__name__}: {err}", time.monotonic() - start))


def _concurrent(tmp_path, n, eps, runs=6):
    """``runs`` concurrent charges on a ledger of ``n`` equal Gaussian entries whose budget fits exactly
    ``n + runs`` of them by the tight total and far fewer by the sum."""
    event = PrivacyEvent("gaussian", eps, 1e-9, analytic_sigma(eps, 1e-9, 1.0))
    delta = 1e-5
    limit = tight_epsilon([event] * (n + runs), delta) * (1 + 1e-9)
    assert (n + runs) * eps > 10 * limit  # basic composition would refuse them all: the tight total decides
    path = tmp_path / "long.sqlite"
    _long_ledger(path, n, event, PrivacyBudget(limit, delta))
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(runs), ctx.Queue()
    procs = [ctx.Process(target=_spend, args=(path, event, barrier, results)) for _ in range(runs)]
    start = time.monotonic()
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join(60)
    wall = time.monotonic() - start
    assert [o for o, _ in outcomes] == ["served"] * runs, outcomes
    led = FileLedger(path)
    assert led.verify()["entries"] == n + runs and led.tight_epsilon() <= limit
    print(f"{runs} concurrent charges on {n} entries: all served in {wall:.1f} s wall "
          f"(slowest {max(t for _, t in outcomes):.1f} s)")


def test_six_concurrent_charges_on_a_long_ledger_are_all_served(tmp_path):
    _concurrent(tmp_path, 2000, 0.05)


@pytest.mark.slow
def test_six_concurrent_charges_on_a_ten_thousand_entry_ledger_are_all_served(tmp_path):
    _concurrent(tmp_path, 10_000, 0.5)
