"""Privacy ledgers: in memory (:class:`PrivacyLedger`) and in a file (:class:`FileLedger`).

:class:`FileLedger` is a ledger kept in a file, shared by processes and runs.

Each release is charged **before** its draws are made and its file is
written, in one SQLite transaction that takes the database's write lock
(``BEGIN IMMEDIATE``): concurrent runs against one ledger are serialised,
never overspend and never lose an entry. A crash after charging leaves the
budget charged (never refunded). Composition is basic (Dwork & Roth 2014,
Theorem 3.16), as in :class:`~fdp_ppl.accounting.PrivacyLedger`.
"""

from __future__ import annotations

import contextlib
import datetime
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BudgetExceededError, InputError
from .budget import PrivacyBudget, _unchecked

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL,
                                   delta REAL NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
                                    label TEXT, dataset TEXT, mechanism TEXT, epsilon REAL NOT NULL,
                                    delta REAL NOT NULL);
"""
_RTOL = 1e-12


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@dataclass
class PrivacyLedger:
    """Tracks spending against a total budget (basic composition).

    Parameters
    ----------
    total : PrivacyBudget
        The most the data holder will spend on this dataset.

    Examples
    --------
    >>> ledger = PrivacyLedger(PrivacyBudget(2.0))
    >>> ledger.spend(PrivacyBudget(1.0), "mean curve")
    >>> ledger.remaining
    PrivacyBudget(epsilon=1.0, delta=0.0)
    """

    total: PrivacyBudget
    entries: list = field(default_factory=list)

    @property
    def spent(self) -> PrivacyBudget:
        eps = sum(b.epsilon for _, b in self.entries)
        dl = sum(b.delta for _, b in self.entries)
        return _unchecked(eps, dl)

    @property
    def remaining(self) -> PrivacyBudget:
        s = self.spent
        return _unchecked(max(self.total.epsilon - s.epsilon, 0.0), max(self.total.delta - s.delta, 0.0))

    def check(self, cost: PrivacyBudget) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit."""
        after = self.spent + cost
        if not after.fits_in(self.total):
            r = self.remaining
            raise BudgetExceededError(
                f"release needs epsilon={cost.epsilon:g}, delta={cost.delta:g} but only epsilon={r.epsilon:g}, "
                f"delta={r.delta:g} remain of the total (epsilon={self.total.epsilon:g}, delta={self.total.delta:g}); "
                "lower the number of draws or epsilon, or start a new ledger only for new data")

    def spend(self, cost: PrivacyBudget, label: str = "", **details) -> None:
        """Record ``cost`` after :meth:`check`; raises BudgetExceededError if it does not fit.
        ``details`` (dataset, mechanism) are accepted for the file ledger's interface."""
        self.check(cost)
        self.entries.append((label, cost))

    @staticmethod
    def open(path, total: PrivacyBudget | None = None):
        """A ledger persisted in ``path`` (SQLite), shared by processes and runs:
        :class:`FileLedger`. ``total`` is required
        when the file is new and must match the recorded total otherwise."""
        return FileLedger(path, total)

    def attrs(self) -> dict:
        s, r = self.spent, self.remaining
        return {"ledger_total_epsilon": self.total.epsilon, "ledger_total_delta": self.total.delta,
                "ledger_spent_epsilon": s.epsilon, "ledger_spent_delta": s.delta,
                "ledger_remaining_epsilon": r.epsilon, "ledger_remaining_delta": r.delta}


class FileLedger:
    """Spending against a total budget, persisted in an SQLite file (see the module docstring).

    Open with :meth:`fdp_ppl.accounting.PrivacyLedger.open`. Has the interface of
    :class:`~fdp_ppl.accounting.PrivacyLedger` (``check``, ``spend``, ``spent``,
    ``remaining``, ``entries``, ``attrs``), so ``fp.release(..., ledger=...)`` charges it.

    Parameters
    ----------
    path : str or Path
        The ledger file (created if missing).
    total : PrivacyBudget, optional
        Required to create a ledger; when given for an existing ledger it must
        equal the recorded total (a budget is fixed for the life of the data).

    Raises
    ------
    InputError
        A new ledger without a total, or a total that differs from the recorded one.
    """

    def __init__(self, path, total: PrivacyBudget | None = None):
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            raise InputError(f"the ledger path {self.path} is a directory", "pass a file name, e.g. ledger.sqlite")
        if total is None and not self.path.exists():  # refuse before sqlite creates an empty file
            raise InputError(f"the ledger {self.path} is new and has no budget",
                             "pass the total budget (--budget EPSILON[,DELTA] or total=PrivacyBudget(...))")
        with self._session() as con:
            con.executescript(_SCHEMA)
            row = con.execute("SELECT epsilon, delta FROM budget WHERE id = 1").fetchone()
            if row is None:
                if total is None:
                    raise InputError(f"the ledger {self.path} is new and has no budget",
                                     "pass the total budget (--budget EPSILON[,DELTA] or total=PrivacyBudget(...))")
                con.execute("BEGIN IMMEDIATE")
                if con.execute("SELECT 1 FROM budget WHERE id = 1").fetchone() is None:
                    con.execute("INSERT INTO budget VALUES (1, ?, ?, ?)", (total.epsilon, total.delta, _now()))
                con.execute("COMMIT")
                row = con.execute("SELECT epsilon, delta FROM budget WHERE id = 1").fetchone()
            recorded = PrivacyBudget(row[0], row[1])
            if total is not None and (abs(total.epsilon - recorded.epsilon) > _RTOL * recorded.epsilon
                                      or abs(total.delta - recorded.delta) > _RTOL * max(recorded.delta, 1e-300)):
                raise InputError(f"the ledger {self.path} was created with the budget epsilon={recorded.epsilon:g}, "
                                 f"delta={recorded.delta:g}, not epsilon={total.epsilon:g}, delta={total.delta:g}",
                                 "a budget is fixed for the life of the data: omit --budget or pass the recorded one")
        self.total = recorded

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

    # ------------------------------------------------------------------ reading
    @property
    def entries(self) -> list[tuple[str, PrivacyBudget]]:
        """``(label, cost)`` of every charge, oldest first."""
        with self._session() as con:
            rows = con.execute("SELECT label, epsilon, delta FROM entries ORDER BY id").fetchall()
        return [(label or "", _unchecked(e, d)) for label, e, d in rows]

    def records(self) -> list[dict]:
        """Every charge with its time, label, dataset and mechanism."""
        with self._session() as con:
            cur = con.execute("SELECT id, created_at, label, dataset, mechanism, epsilon, delta FROM entries ORDER BY id")
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    @staticmethod
    def _sum(con) -> PrivacyBudget:
        e, d = con.execute("SELECT COALESCE(SUM(epsilon), 0), COALESCE(SUM(delta), 0) FROM entries").fetchone()
        return _unchecked(e, d)

    @property
    def spent(self) -> PrivacyBudget:
        with self._session() as con:
            return self._sum(con)

    @property
    def remaining(self) -> PrivacyBudget:
        s = self.spent
        return _unchecked(max(self.total.epsilon - s.epsilon, 0.0), max(self.total.delta - s.delta, 0.0))

    # ------------------------------------------------------------------ charging
    def _refusal(self, cost, spent) -> BudgetExceededError:
        r = _unchecked(max(self.total.epsilon - spent.epsilon, 0.0), max(self.total.delta - spent.delta, 0.0))
        return BudgetExceededError(
            f"release needs epsilon={cost.epsilon:g}, delta={cost.delta:g} but only epsilon={r.epsilon:g}, "
            f"delta={r.delta:g} remain of the budget in {self.path} (epsilon={self.total.epsilon:g}, "
            f"delta={self.total.delta:g})", "lower the number of draws or epsilon; nothing was released")

    def check(self, cost: PrivacyBudget) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit now."""
        spent = self.spent
        if not (spent + cost).fits_in(self.total):
            raise self._refusal(cost, spent)

    def spend(self, cost: PrivacyBudget, label: str = "", *, dataset: str = "", mechanism: str = "") -> int:
        """Charge ``cost`` atomically (check and record under the write lock).

        Returns
        -------
        int
            The entry's id.

        Raises
        ------
        BudgetExceededError
            ``cost`` does not fit; nothing is recorded.
        """
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            spent = self._sum(con)
            if not (spent + cost).fits_in(self.total):
                con.execute("ROLLBACK")
                raise self._refusal(cost, spent)
            cur = con.execute("INSERT INTO entries (created_at, label, dataset, mechanism, epsilon, delta) "
                              "VALUES (?, ?, ?, ?, ?, ?)", (_now(), label, dataset, mechanism, cost.epsilon,
                                                             cost.delta))
            con.execute("COMMIT")
            return int(cur.lastrowid)
        finally:
            con.close()

    def attrs(self) -> dict:
        s, r = self.spent, self.remaining
        return {"ledger_total_epsilon": self.total.epsilon, "ledger_total_delta": self.total.delta,
                "ledger_spent_epsilon": s.epsilon, "ledger_spent_delta": s.delta,
                "ledger_remaining_epsilon": r.epsilon, "ledger_remaining_delta": r.delta}

    def __repr__(self):
        s = self.spent
        return (f"FileLedger({str(self.path)!r}, total=(epsilon={self.total.epsilon:g}, delta={self.total.delta:g}), "
                f"spent=(epsilon={s.epsilon:g}, delta={s.delta:g}))")


__all__ = ["PrivacyLedger", "FileLedger"]
