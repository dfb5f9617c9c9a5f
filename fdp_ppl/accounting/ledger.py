"""Privacy ledgers: in memory (:class:`PrivacyLedger`) and in a file (:class:`FileLedger`).

Both record each charge as a :class:`~fdp_ppl.accounting.events.PrivacyEvent` (noise law, noise
scale in sensitivity units, count, neighbouring relation) next to its (ε, δ), and keep two totals:

* **basic**: the sum of (ε, δ) (Dwork & Roth 2014, Theorem 3.16);
* **tight**: ε at the budget's δ of the composition of the events' privacy-loss distributions
  (dp-accounting; :func:`~fdp_ppl.accounting.events.tight_epsilon`).

A charge is accepted when the ledger with it fits the total budget by basic composition or, while every
charge is Gaussian, by the μ-GDP total (the two rules with a privacy-filter theorem for a ledger that stops
adaptively: :func:`~fdp_ppl.accounting.events.fits`). The tight total of other events is shown, not used.

**One privacy unit per ledger.** A ledger protects one unit: the one it was created with
(``PrivacyLedger(total, privacy_unit=...)``) or its first charge's (every event records its unit). A release
for another unit is refused, except a record-level release with a stated public bound k on each person's
records (``records_per_unit=k``), which is charged by group privacy and recorded converted
(:func:`~fdp_ppl.accounting.events.for_ledger`). **Uncertified releases** (MCMC without a proved guarantee)
are charged at their nominal cost but kept out of the guaranteed total and shown apart (:meth:`attrs`).

:class:`FileLedger` is a ledger kept in an SQLite file, shared by processes and runs. Each release is
charged **before** its draws are made and its file is written, in one transaction that takes the
database's write lock (``BEGIN IMMEDIATE``): concurrent runs against one ledger are serialised, never
overspend and never lose an entry. A crash after charging leaves the budget charged (never refunded).

The file validates itself on every open and before every charge, and refuses with a one-line
:class:`~fdp_ppl.errors.LedgerError` naming the row when anything is off: the schema, the budget row
(a finite ε > 0 and δ in [0, 1)), every entry (finite ε > 0, δ in [0, 1), stored as numbers, its event
consistent with them), and a hash chain — each entry stores the SHA-256 of its content and of the
previous entry, the first one of the budget row, and the head and count are kept apart — so an edited,
inserted or deleted entry is detected. This protects against mistakes, careless edits and damage; it
cannot protect against an owner who rewrites the whole file consistently (keep a copy of the head
hash, ``fdp-ppl ledger --verify`` prints it). A file from an earlier version (no events, no chain) is
checked and migrated once, and the migration is recorded.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BudgetExceededError, InputError, LedgerError
from .budget import PrivacyBudget, _unchecked
from .events import PrivacyEvent, basic_total, fits, for_ledger, gdp_epsilon, guaranteed, ledger_unit, tight_epsilon

SCHEMA_VERSION = 2
_TABLES = {
    "budget": ("CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL, "
               "delta REAL NOT NULL, created_at TEXT NOT NULL)"),
    "entries": ("CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, label TEXT, "
                "dataset TEXT, mechanism TEXT, epsilon REAL NOT NULL, delta REAL NOT NULL, event TEXT, hash TEXT)"),
    "meta": "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
}
_COLUMNS_V1 = ["id", "created_at", "label", "dataset", "mechanism", "epsilon", "delta"]
_COLUMNS = [*_COLUMNS_V1, "event", "hash"]
_RTOL = 1e-12


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _event_for(cost: PrivacyBudget, event: PrivacyEvent | None) -> PrivacyEvent:
    """The event of a charge: ``event`` (checked against ``cost``) or a generic (ε, δ) event of ``cost``."""
    if event is None:
        try:
            return PrivacyEvent.from_budget(cost)
        except InputError as err:
            raise BudgetExceededError(f"a charge of epsilon={cost.epsilon:g}, delta={cost.delta:g} is not a "
                                      "valid privacy guarantee", "lower the number of draws or delta") from err
    basic = event.basic
    if not (math.isclose(basic.epsilon, cost.epsilon, rel_tol=1e-9)
            and math.isclose(basic.delta, cost.delta, rel_tol=1e-9, abs_tol=1e-300)):
        raise InputError(f"the charge (epsilon={cost.epsilon:g}, delta={cost.delta:g}) differs from its event's "
                         f"(epsilon={basic.epsilon:g}, delta={basic.delta:g})", "pass the event's basic cost")
    return event


def _charged(cost: PrivacyBudget, event: PrivacyEvent | None, events: list, declared: str | None,
             records_per_unit, unit: str | None) -> PrivacyEvent | None:
    """The event a ledger would record for a charge, converted to its unit (:func:`for_ledger`), for a check.

    Without an event (an early check, before the plan is known) the generic event of ``cost`` for ``unit``
    (the unit is not checked when None); None, i.e. nothing to refuse yet, when the ledger's events are all
    Gaussian and ``cost`` has a δ: a Gaussian charge may fit by the μ-GDP total, decided at the charge."""
    held = ledger_unit(events, declared)
    if event is not None:
        return for_ledger(_event_for(cost, event), held, records_per_unit)
    generic = _event_for(cost, None)
    if unit is not None:
        generic = for_ledger(generic.with_unit(unit), held, records_per_unit)
    if cost.delta > 0 and all(e.law == "gaussian" and e.certified for e in events):
        return None
    return generic


def _left(total: PrivacyBudget, spent: PrivacyBudget) -> PrivacyBudget:
    """What basic composition leaves of ``total`` after ``spent`` (never below 0)."""
    return _unchecked(max(total.epsilon - spent.epsilon, 0.0), max(total.delta - spent.delta, 0.0))


def _refusal(where: str, cost: PrivacyBudget, total: PrivacyBudget, events: list) -> BudgetExceededError:
    if cost.delta > 0 and total.delta == 0:
        return BudgetExceededError(
            f"the release is (epsilon, delta)-DP with delta={cost.delta:g} but the budget{where} has delta=0 (pure "
            "epsilon-DP): no delta can be spent from it", "use a pure epsilon-DP mechanism, or a ledger created with "
            "a delta budget (--budget EPSILON,DELTA); nothing was released")
    r = _left(total, basic_total(events))
    gaussian = total.delta > 0 and events and all(e.law == "gaussian" and e.certified for e in events)
    tight = gdp_epsilon(events, total.delta) if gaussian else math.inf
    tight_text = (f"; by mu-GDP composition the ledger has spent epsilon={tight:.4g} at delta={total.delta:g}"
                  if math.isfinite(tight) and events else "")
    return BudgetExceededError(
        f"release needs epsilon={cost.epsilon:g}, delta={cost.delta:g} but only epsilon={r.epsilon:g}, "
        f"delta={r.delta:g} remain of the budget{where} (epsilon={total.epsilon:g}, delta={total.delta:g}) by basic "
        f"composition{tight_text}, and it fits by neither", "lower the number of draws or epsilon; nothing was released")


class _Totals:
    """The read-only totals both ledgers share (``total``, ``events`` and ``entries`` come from the ledger)."""

    @property
    def spent(self) -> PrivacyBudget:
        """Basic composition of every charge: (Σ ε, Σ δ)."""
        return basic_total(self.events)

    @property
    def remaining(self) -> PrivacyBudget:
        """What basic composition leaves of the total."""
        return _left(self.total, self.spent)

    def tight_epsilon(self, delta: float | None = None) -> float:
        """ε of the composition of every charge at ``delta`` (default: the budget's δ) from their privacy-loss
        distributions (:func:`~fdp_ppl.accounting.events.tight_epsilon`); ``inf`` at δ = 0 unless the ledger is
        empty (basic composition is the tight total of pure ε-DP charges at δ = 0). When every charge is a
        certified Gaussian one, the exact μ-GDP total (:func:`~fdp_ppl.accounting.events.gdp_epsilon`), which
        is what acceptance uses; otherwise the PLD total, which holds for the sequence as made but is not used
        to accept (module docstring)."""
        events = self.events
        delta = self.total.delta if delta is None else delta
        if events and all(e.law == "gaussian" and e.certified for e in events):
            return gdp_epsilon(events, delta)
        return tight_epsilon(events, delta)

    def attrs(self) -> dict:
        """The ledger's state for a release file: total, spent (basic, every charge), remaining, its privacy unit;
        ``ledger_spent_epsilon_tight`` (the μ-GDP total at the budget's δ) when every certified charge is
        Gaussian; and, when there are uncertified charges, their count and nominal sum and the guaranteed
        (certified) basic total apart."""
        events = self.events  # read (and, for a file, validated) once
        s = basic_total(events)
        r = _left(self.total, s)
        out = {"ledger_total_epsilon": self.total.epsilon, "ledger_total_delta": self.total.delta,
               "ledger_spent_epsilon": s.epsilon, "ledger_spent_delta": s.delta,
               "ledger_remaining_epsilon": r.epsilon, "ledger_remaining_delta": r.delta}
        unit = ledger_unit(events, getattr(self, "declared_unit", None))
        if unit is not None:
            out["ledger_privacy_unit"] = unit
        certified = guaranteed(events)
        if self.total.delta > 0 and certified and all(e.law == "gaussian" for e in certified):
            tight = gdp_epsilon(certified, self.total.delta)
            if math.isfinite(tight):
                out["ledger_spent_epsilon_tight"] = min(tight, s.epsilon)
        if len(certified) < len(events):
            g, u = basic_total(certified), basic_total([e for e in events if not e.certified])
            out.update({"ledger_guaranteed_epsilon": g.epsilon, "ledger_guaranteed_delta": g.delta,
                        "ledger_uncertified_releases": len(events) - len(certified),
                        "ledger_uncertified_epsilon": u.epsilon, "ledger_uncertified_delta": u.delta})
        return out


@dataclass
class PrivacyLedger(_Totals):
    """Tracks spending against a total budget (basic and tight composition; module docstring).

    Parameters
    ----------
    total : PrivacyBudget
        The most the data holder will spend on this dataset.
    privacy_unit : str, optional
        The unit the ledger protects (``"record"`` or a person's column, e.g. ``"subject_id"``); default: its
        first charge's.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> ledger = fp.PrivacyLedger(fp.PrivacyBudget(2.0))
    >>> ledger.spend(fp.PrivacyBudget(1.0), "mean curve")
    >>> ledger.remaining
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> ledger.spend(fp.PrivacyBudget(1.5), "second curve")
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.BudgetExceededError: release needs epsilon=1.5, delta=0 but only epsilon=1, delta=0 remain ...

    A per-subject ledger charges a per-scan release by group privacy, given a public bound on scans per subject:

    >>> subjects = fp.PrivacyLedger(fp.PrivacyBudget(10.0), privacy_unit="subject_id")
    >>> subjects.spend(fp.PrivacyBudget(1.0), "per scan", event=fp.PrivacyEvent("laplace", 1.0, 0.0, 1.0),
    ...                records_per_unit=8)
    >>> subjects.spent
    PrivacyBudget(epsilon=8.0, delta=0.0)

    See Also
    --------
    PrivacyLedger.open : the same ledger in an SQLite file, shared by runs.
    PrivacyEvent : what each charge records, for tight composition.
    """

    total: PrivacyBudget
    entries: list = field(default_factory=list)
    events: list = field(default_factory=list)
    privacy_unit: str | None = None

    @property
    def declared_unit(self) -> str | None:
        return self.privacy_unit

    def check(self, cost: PrivacyBudget, event: PrivacyEvent | None = None, *,
              records_per_unit: int | None = None, unit: str | None = None) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit, or
        :class:`~fdp_ppl.errors.InputError` if its unit (the event's, or ``unit`` without one) is not the
        ledger's (:func:`~fdp_ppl.accounting.events.for_ledger`)."""
        charged = _charged(cost, event, self.events, self.privacy_unit, records_per_unit, unit)
        if charged is not None and not fits([*self.events, charged], self.total):
            raise _refusal("", charged.basic, self.total, self.events)

    def spend(self, cost: PrivacyBudget, label: str = "", *, event: PrivacyEvent | None = None,
              records_per_unit: int | None = None, **details) -> None:
        """Record ``cost`` (and its ``event``, converted to the ledger's unit) after :meth:`check`; raises
        BudgetExceededError if it does not fit. ``details`` (dataset, mechanism) are accepted for the file
        ledger's interface."""
        event = for_ledger(_event_for(cost, event), ledger_unit(self.events, self.privacy_unit), records_per_unit)
        self.check(event.basic, event)
        self.entries.append((label, event.basic))
        self.events.append(event)
        if self.privacy_unit is None:
            self.privacy_unit = event.unit

    @staticmethod
    def open(path, total: PrivacyBudget | None = None):
        """A ledger persisted in ``path`` (SQLite), shared by processes and runs:
        :class:`FileLedger`. ``total`` is required
        when the file is new and must match the recorded total otherwise."""
        return FileLedger(path, total)


def _digest(prev: str, row) -> str:
    """SHA-256 of the previous hash and an entry's content (its columns before ``hash``)."""
    return hashlib.sha256(json.dumps([prev, *row], separators=(",", ":")).encode()).hexdigest()


def _genesis(eps, delta, created_at) -> str:
    return hashlib.sha256(json.dumps(["fdp-ppl ledger", eps, delta, created_at]).encode()).hexdigest()


class FileLedger(_Totals):
    """Spending against a total budget, persisted in an SQLite file (see the module docstring).

    Open with :meth:`fdp_ppl.accounting.PrivacyLedger.open`. Has the interface of
    :class:`~fdp_ppl.accounting.PrivacyLedger` (``check``, ``spend``, ``spent``,
    ``remaining``, ``tight_epsilon``, ``entries``, ``events``, ``attrs``), so
    ``fp.release(..., ledger=...)`` charges it.

    Parameters
    ----------
    path : str or Path
        The ledger file (created if missing or empty).
    total : PrivacyBudget, optional
        Required to create a ledger; when given for an existing ledger it must
        equal the recorded total (a budget is fixed for the life of the data).

    Raises
    ------
    InputError
        A new ledger without a total, or a total that differs from the recorded one.
    LedgerError
        The file is not a ledger, or it fails its validation (module docstring): it is never
        re-budgeted, reset, or read with a bad row counted as 0.
    """

    def __init__(self, path, total: PrivacyBudget | None = None):
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            raise InputError(f"the ledger path {self.path} is a directory", "pass a file name, e.g. ledger.sqlite")
        existed = self.path.exists() and self.path.stat().st_size > 0
        if total is None and not existed:  # refuse before sqlite creates an empty file
            raise InputError(f"the ledger {self.path} is new and has no budget",
                             "pass the total budget (--budget EPSILON[,DELTA] or total=PrivacyBudget(...))")
        with self._session() as con:
            if self._layout(con) != "current":
                self._create_or_migrate(con, total, existed)
            recorded, _ = self._load(con)
        if total is not None and (abs(total.epsilon - recorded.epsilon) > _RTOL * recorded.epsilon
                                  or abs(total.delta - recorded.delta) > _RTOL * max(recorded.delta, 1e-300)):
            raise InputError(f"the ledger {self.path} was created with the budget epsilon={recorded.epsilon:g}, "
                             f"delta={recorded.delta:g}, not epsilon={total.epsilon:g}, delta={total.delta:g}",
                             "a budget is fixed for the life of the data: omit --budget or pass the recorded one")
        self.total = recorded

    # ------------------------------------------------------------------ file
    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        con.execute("PRAGMA busy_timeout = 60000")
        return con

    @contextlib.contextmanager
    def _session(self):
        con = self._connect()
        try:
            yield con
        finally:
            con.close()

    def _damaged(self, what: str) -> LedgerError:
        return LedgerError(f"the ledger {self.path} is damaged or was edited: {what}",
                           "restore the file from a copy (its spending cannot be trusted); it is never reset")

    @staticmethod
    def _tables(con) -> set:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _layout(self, con) -> str:
        """``"new"`` (no tables), ``"v1"`` (budget and entries without events or chain), ``"current"``."""
        tables = self._tables(con) - {"sqlite_sequence"}
        if not tables:
            return "new"
        if not {"budget", "entries"} <= tables:
            missing = ", ".join(sorted({"budget", "entries"} - tables))
            raise self._damaged(f"the table {missing} is missing") if tables & {"budget", "entries", "meta"} else \
                LedgerError(f"{self.path} is not an fdp-ppl ledger (tables: {', '.join(sorted(tables))})",
                            "pass a ledger written by --ledger, or a new file name")
        columns = [r[1] for r in con.execute("PRAGMA table_info(entries)")]
        if columns == _COLUMNS_V1 and "meta" not in tables:
            return "v1"
        if columns != _COLUMNS or "meta" not in tables:
            raise self._damaged("its entries table has an unexpected layout")
        return "current"

    def _create_or_migrate(self, con, total, existed: bool) -> None:
        con.execute("BEGIN IMMEDIATE")
        try:
            layout = self._layout(con)  # again, under the write lock: another process may have done it
            if layout == "new":
                if existed:
                    raise LedgerError(f"{self.path} is not an fdp-ppl ledger (it holds no ledger tables)",
                                      "pass a ledger written by --ledger, or a new file name")
                if total is None:
                    raise InputError(f"the ledger {self.path} is new and has no budget",
                                     "pass the total budget (--budget EPSILON[,DELTA] or total=PrivacyBudget(...))")
                for sql in _TABLES.values():
                    con.execute(sql)
                now = _now()
                con.execute("INSERT INTO budget VALUES (1, ?, ?, ?)", (total.epsilon, total.delta, now))
                con.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("schema_version", str(SCHEMA_VERSION)), ("created_at", now), ("count", "0"),
                    ("head", _genesis(total.epsilon, total.delta, now))])
            elif layout == "v1":
                self._migrate(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _migrate(self, con) -> None:
        """Add events and the hash chain to a file of the first layout, once, after checking its rows."""
        self._check_budget_row(con)
        rows = con.execute("SELECT id, typeof(epsilon), epsilon, typeof(delta), delta FROM entries "
                           "ORDER BY id").fetchall()
        for rid, te, eps, td, delta in rows:
            self._check_numbers(rid, te, eps, td, delta)
        con.execute("ALTER TABLE entries ADD COLUMN event TEXT")
        con.execute("ALTER TABLE entries ADD COLUMN hash TEXT")
        con.execute(_TABLES["meta"])
        eps_b, delta_b, created = con.execute("SELECT epsilon, delta, created_at FROM budget WHERE id = 1").fetchone()
        prev = _genesis(eps_b, delta_b, created)
        full = con.execute(f"SELECT {', '.join(_COLUMNS_V1)} FROM entries ORDER BY id").fetchall()
        for row in full:
            event = PrivacyEvent.from_budget(_unchecked(row[5], row[6])).to_json()
            prev = _digest(prev, [*row, event])
            con.execute("UPDATE entries SET event = ?, hash = ? WHERE id = ?", (event, prev, row[0]))
        con.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("schema_version", str(SCHEMA_VERSION)), ("created_at", str(created)), ("count", str(len(full))),
            ("head", prev), ("migrated_at", _now()),
            ("migrated_from", "schema 1 (no events, no hash chain); events of the migrated entries are generic "
                              "(epsilon, delta) events")])

    def _check_budget_row(self, con) -> PrivacyBudget:
        row = con.execute("SELECT typeof(epsilon), epsilon, typeof(delta), delta, created_at FROM budget "
                          "WHERE id = 1").fetchone()
        if row is None:
            raise self._damaged("the budget row is missing")
        te, eps, td, delta, _ = row
        ok = (te in ("real", "integer") and td in ("real", "integer") and math.isfinite(eps) and eps > 0
              and math.isfinite(delta) and 0 <= delta < 1)
        if not ok:
            raise self._damaged(f"the budget row holds epsilon={eps!r}, delta={delta!r} (need epsilon > 0, delta in "
                                "[0, 1))")
        if con.execute("SELECT COUNT(*) FROM budget").fetchone()[0] != 1:
            raise self._damaged("the budget table has more than one row")
        return PrivacyBudget(float(eps), float(delta))

    def _check_numbers(self, rid, te, eps, td, delta) -> None:
        if te not in ("real", "integer") or td not in ("real", "integer"):
            raise self._damaged(f"entry #{rid} stores epsilon or delta as {te if te not in ('real', 'integer') else td}"
                                ", not a number")
        if not (math.isfinite(eps) and eps > 0 and math.isfinite(delta) and 0 <= delta < 1):
            raise self._damaged(f"entry #{rid} has epsilon={eps!r}, delta={delta!r} (need a finite epsilon > 0 and "
                                "delta in [0, 1))")

    def _load(self, con) -> tuple[PrivacyBudget, list]:
        """Validate the whole file (module docstring) and return the total and the entries' rows.

        Raises
        ------
        LedgerError
            The first problem found, naming the row.
        """
        if self._layout(con) != "current":
            raise self._damaged("it has no hash chain")
        total = self._check_budget_row(con)
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema_version") != str(SCHEMA_VERSION) or "head" not in meta or "count" not in meta:
            raise self._damaged("its meta table is incomplete")
        eps_b, delta_b, created = con.execute("SELECT epsilon, delta, created_at FROM budget WHERE id = 1").fetchone()
        prev = _genesis(eps_b, delta_b, created)
        rows = con.execute(f"SELECT {', '.join(_COLUMNS)}, typeof(epsilon), typeof(delta) FROM entries "
                           "ORDER BY id").fetchall()
        out = []
        for row in rows:
            rid, eps, delta, event_text, stored = row[0], row[5], row[6], row[7], row[8]
            self._check_numbers(rid, row[9], eps, row[10], delta)
            try:
                event = PrivacyEvent.from_json(event_text)
                _event_for(_unchecked(eps, delta), event)
            except (InputError, BudgetExceededError) as err:
                raise self._damaged(f"entry #{rid} has an invalid event ({err.args[0]})") from None
            prev = _digest(prev, list(row[:8]))
            if stored != prev:
                raise self._damaged(f"entry #{rid} does not match its hash (edited, inserted or reordered)")
            out.append((row, event))
        if str(len(rows)) != meta["count"] or prev != meta["head"]:
            raise self._damaged(f"it holds {len(rows)} entries but recorded {meta['count']} (entries were deleted or "
                                "added outside the ledger)")
        return total, out

    # ------------------------------------------------------------------ reading
    def _rows(self) -> list:
        with self._session() as con:
            return self._load(con)[1]

    @property
    def events(self) -> list[PrivacyEvent]:
        """The :class:`~fdp_ppl.accounting.events.PrivacyEvent` of every charge, oldest first."""
        return [event for _, event in self._rows()]

    @property
    def entries(self) -> list[tuple[str, PrivacyBudget]]:
        """``(label, cost)`` of every charge, oldest first."""
        return [(row[2] or "", _unchecked(row[5], row[6])) for row, _ in self._rows()]

    def records(self) -> list[dict]:
        """Every charge with its time, label, dataset, mechanism, (ε, δ), event (JSON) and hash."""
        return [dict(zip(_COLUMNS, row[:9])) for row, _ in self._rows()]

    def verify(self) -> dict:
        """Validate the file (module docstring) and return what a copy should be compared with.

        Returns
        -------
        dict
            ``entries`` (count), ``head`` (hash of the last entry), ``schema_version`` and, for a
            migrated file, ``migrated_at``.

        Raises
        ------
        LedgerError
            The first problem found.
        """
        with self._session() as con:
            _, rows = self._load(con)
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        return {"entries": len(rows), "head": meta["head"], "schema_version": int(meta["schema_version"]),
                **({"migrated_at": meta["migrated_at"]} if "migrated_at" in meta else {})}

    # ------------------------------------------------------------------ charging
    @property
    def privacy_unit(self) -> str | None:
        """The unit this ledger protects: its first charge's (None before any charge)."""
        return ledger_unit(self.events)

    def check(self, cost: PrivacyBudget, event: PrivacyEvent | None = None, *,
              records_per_unit: int | None = None, unit: str | None = None) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit now, or
        :class:`~fdp_ppl.errors.InputError` if its unit (the event's, or ``unit`` without one) is not the
        ledger's."""
        events = self.events
        charged = _charged(cost, event, events, None, records_per_unit, unit)
        if charged is not None and not fits([*events, charged], self.total):
            raise _refusal(f" in {self.path}", charged.basic, self.total, events)

    def spend(self, cost: PrivacyBudget, label: str = "", *, dataset: str = "", mechanism: str = "",
              event: PrivacyEvent | None = None, records_per_unit: int | None = None) -> int:
        """Charge ``cost`` atomically: validate the file, check the budget and record the entry, all under the
        write lock.

        Parameters
        ----------
        cost : PrivacyBudget
            What the charge costs by basic composition.
        label, dataset, mechanism : str
            What the entry says.
        event : PrivacyEvent, optional
            The charge's noise law and scale (its basic cost must equal ``cost``); default a generic
            (ε, δ) event of ``cost``.
        records_per_unit : int, optional
            A public bound on each person's records: a record-level event on a ledger of a person unit is then
            charged (and recorded) by group privacy.

        Returns
        -------
        int
            The entry's id.

        Raises
        ------
        BudgetExceededError
            ``cost`` does not fit (:func:`~fdp_ppl.accounting.events.fits`); nothing is recorded.
        InputError
            The event's privacy unit is not the ledger's (:func:`~fdp_ppl.accounting.events.for_ledger`).
        LedgerError
            The file fails its validation; nothing is recorded.
        """
        event = _event_for(cost, event)
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                _, rows = self._load(con)
                events = [e for _, e in rows]
                event = for_ledger(event, ledger_unit(events), records_per_unit)  # one unit per ledger
                cost = event.basic
                if not fits([*events, event], self.total):
                    raise _refusal(f" in {self.path}", cost, self.total, events)
                prev = con.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()[0]
                rid = int(con.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM entries").fetchone()[0])
                row = [rid, _now(), label, dataset, mechanism, float(cost.epsilon), float(cost.delta), event.to_json()]
                digest = _digest(prev, row)
                con.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*row, digest))
                con.execute("UPDATE meta SET value = ? WHERE key = 'head'", (digest,))
                con.execute("UPDATE meta SET value = ? WHERE key = 'count'", (str(len(rows) + 1),))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            return rid
        finally:
            con.close()

    def __repr__(self):
        s = self.spent
        return (f"FileLedger({str(self.path)!r}, total=(epsilon={self.total.epsilon:g}, delta={self.total.delta:g}), "
                f"spent=(epsilon={s.epsilon:g}, delta={s.delta:g}))")


__all__ = ["PrivacyLedger", "FileLedger", "SCHEMA_VERSION"]
