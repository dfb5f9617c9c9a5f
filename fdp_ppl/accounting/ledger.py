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
(``PrivacyLedger(total, privacy_unit=...)``; ``PrivacyLedger.open(path, total, privacy_unit=...)`` records it,
with the neighbouring relation, in the file's chain-covered meta fields) or its first charge's (every event
records its unit). A release for another unit is refused, except a record-level release with a stated public
bound k on each person's records (``records_per_unit=k``), which is charged by group privacy and recorded
converted (:func:`~fdp_ppl.accounting.events.for_ledger`). **One relation per ledger** likewise: ``"replace-one"``
(n public) or ``"add-remove"`` (membership protected), stated at creation (``neighbouring=``) or its first
charge's. A replace-one ledger charges an add/remove release by group privacy over its two steps (2ε,
(1 + e^ε) δ); an add/remove ledger refuses a replace-one release, which publishes n
(:func:`~fdp_ppl.accounting.events.for_relation`). **Uncertified releases** (MCMC without a proved guarantee)
are charged at their nominal cost but kept out of the guaranteed total and shown apart (:meth:`attrs`).

:class:`FileLedger` is a ledger kept in an SQLite file, shared by processes and runs. Each release is
charged **before** its draws are made and its file is written, in one transaction that takes the
database's write lock (``BEGIN IMMEDIATE``): concurrent runs against one ledger are serialised, never
overspend and never lose an entry. A crash after charging leaves the budget charged (never refunded).

The file validates itself on every open and before every charge, and refuses with a one-line
:class:`~fdp_ppl.errors.LedgerError` naming the row when anything is off: the layout (tables, columns,
no triggers or views, the SQLite header's application id and version), the budget row (a finite ε > 0 and
δ in [0, 1)), every entry (finite ε > 0, δ in [0, 1), stored as numbers, its event consistent with them),
and a hash chain that covers every recorded field: the first link (*genesis*) hashes the budget row and
every fixed field of the ``meta`` table (schema version, creation time, the chain's kind and key id, the
migrations made), each entry hashes the previous link and all its columns, the event's JSON included, and
the head and count are sealed. A ledger that existed never becomes a fresh one: a new ledger is written
to a temporary file and linked into place complete, so an empty (0-byte) or unreadable file at the path
is refused, never re-created.

**What the chain can and cannot detect** (docs/DESIGN.md, "The ledger's threat model"). Without a key
the chain is plain SHA-256: anyone who can write the file can rewrite it consistently (delete the last
rows and reset the head, raise the budget, edit an event, copy an old file over it) and the file alone
still verifies. Such a rewrite shows only against a head kept outside the file: every release records
the ledger's entry count and head after its charge (``ledger_entries``, ``ledger_head``; also printed on
stdout), and :meth:`FileLedger.verify` with ``releases=`` (``fdp-ppl ledger FILE --verify RELEASE...``)
finds a release whose head is not in the chain. With a key file (``key_file=``, ``--key-file``;
HMAC-SHA256, RFC 2104, kept outside the ledger's directory), the links and the seal are keyed, so an
edit by someone without the key fails on open, and every charge appends its (count, head) to a keyed
*head log* next to the key (``KEY.heads``), so a rollback, a wipe or an old copy is detected without any
release at hand. A file of an earlier layout is checked and migrated once, the migration is recorded in
the chain, and a file that was written by this version and rewritten to an earlier layout (a downgrade)
is refused.

Each charge computes its acceptance (the tight total can take seconds on a long ledger) **outside** the
write lock on a validated snapshot, and then commits under the lock only if the chain's head is still the
snapshot's; otherwise it recomputes on the new snapshot. Concurrent releases that fit are therefore
served, and the lock is held only to validate the chain and append one row.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import hmac
import json
import math
import os
import secrets
import sqlite3
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BudgetExceededError, InputError, LedgerError
from .budget import PrivacyBudget, _unchecked
from .events import (PrivacyEvent, basic_total, check_neighbouring, fits, for_ledger, gdp_epsilon, guaranteed,
                     ledger_relation, ledger_unit, tight_epsilon)

SCHEMA_VERSION = 3
#: ``PRAGMA application_id`` of a ledger this version wrote ("fdpp"): a file that carries it is never read as
#: an earlier layout (a downgrade)
APPLICATION_ID = 0x66647070
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
#: the meta keys that change with each charge (sealed); every other meta key is fixed and part of the genesis
_MUTABLE = ("count", "head", "seal")
#: seconds a run waits for another run's write lock before it gives up (nothing charged)
_TIMEOUT = 60.0
#: times a charge recomputes its acceptance outside the lock when other runs charged meanwhile, before it decides
#: under the lock
_ATTEMPTS = 24
_KEY_BYTES = 32


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
             records_per_unit, unit: str | None, relation: str | None = None) -> PrivacyEvent | None:
    """The event a ledger would record for a charge, converted to its unit (:func:`for_ledger`), for a check.

    Without an event (an early check, before the plan is known) the generic event of ``cost`` for ``unit``
    (the unit is not checked when None); None, i.e. nothing to refuse yet, when the ledger's events are all
    Gaussian and ``cost`` has a δ: a Gaussian charge may fit by the μ-GDP total, decided at the charge."""
    held = ledger_unit(events, declared)
    if event is not None:
        return for_ledger(_event_for(cost, event), held, records_per_unit, ledger_relation(events, relation))
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
        return self._attrs_of(self.events, getattr(self, "privacy_unit_declared", None))  # read (validated) once

    def _attrs_of(self, events, declared: str | None = None) -> dict:
        s = basic_total(events)
        r = _left(self.total, s)
        out = {"ledger_total_epsilon": self.total.epsilon, "ledger_total_delta": self.total.delta,
               "ledger_spent_epsilon": s.epsilon, "ledger_spent_delta": s.delta,
               "ledger_remaining_epsilon": r.epsilon, "ledger_remaining_delta": r.delta}
        unit = ledger_unit(events, declared)
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
    neighbouring : str, optional
        ``"replace-one"`` (one unit's records replaced, n public) or ``"add-remove"`` (membership protected);
        default: its first charge's (:func:`~fdp_ppl.accounting.events.for_relation`: an add/remove release on a
        replace-one ledger is charged 2ε, (1 + e^ε) δ; a replace-one release on an add/remove ledger is refused).

    Raises
    ------
    InputError
        An empty privacy unit; an unknown neighbouring relation.

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
    neighbouring: str | None = None

    def __post_init__(self):
        self.privacy_unit = _check_unit(self.privacy_unit)
        self.neighbouring = None if self.neighbouring is None else check_neighbouring(self.neighbouring)

    @property
    def privacy_unit_declared(self) -> str | None:
        return self.privacy_unit

    def check(self, cost: PrivacyBudget, event: PrivacyEvent | None = None, *,
              records_per_unit: int | None = None, unit: str | None = None) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit, or
        :class:`~fdp_ppl.errors.InputError` if its unit (the event's, or ``unit`` without one) is not the
        ledger's (:func:`~fdp_ppl.accounting.events.for_ledger`)."""
        charged = _charged(cost, event, self.events, self.privacy_unit, records_per_unit, unit, self.neighbouring)
        if charged is not None and not fits([*self.events, charged], self.total):
            raise _refusal("", charged.basic, self.total, self.events)

    def spend(self, cost: PrivacyBudget, label: str = "", *, event: PrivacyEvent | None = None,
              records_per_unit: int | None = None, **details) -> None:
        """Record ``cost`` (and its ``event``, converted to the ledger's unit) after :meth:`check`; raises
        BudgetExceededError if it does not fit. ``details`` (dataset, mechanism) are accepted for the file
        ledger's interface."""
        event = for_ledger(_event_for(cost, event), ledger_unit(self.events, self.privacy_unit), records_per_unit,
                           ledger_relation(self.events, self.neighbouring))
        self.check(event.basic, event)
        self.entries.append((label, event.basic))
        self.events.append(event)
        if self.privacy_unit is None:
            self.privacy_unit = event.unit
        if self.neighbouring is None:
            self.neighbouring = ledger_relation(self.events)

    @staticmethod
    def open(path, total: PrivacyBudget | None = None, *, key_file=None, privacy_unit: str | None = None,
             neighbouring: str | None = None):
        """A ledger persisted in ``path`` (SQLite), shared by processes and runs:
        :class:`FileLedger`. ``total`` is required
        when the file is new and must match the recorded total otherwise; ``key_file`` keys its chain;
        ``privacy_unit`` and ``neighbouring`` are recorded when the file is new and must match otherwise."""
        return FileLedger(path, total, key_file=key_file, privacy_unit=privacy_unit, neighbouring=neighbouring)


def _check_unit(unit) -> str | None:
    """A ledger's stated privacy unit: None (its first charge's) or a non-empty name."""
    if unit is None:
        return None
    if not isinstance(unit, str) or not unit.strip():
        raise InputError(f"a ledger's privacy unit must be 'record' or a column name, got {unit!r}",
                         "pass 'record' or the column naming a person, e.g. privacy_unit='subject_id'")
    return unit.strip()


# ---------------------------------------------------------------------------------------------------- the chain
def _digest_v2(prev: str, row) -> str:
    """An entry's link in a file of schema 2 (unkeyed SHA-256), to check such a file before it is migrated."""
    return hashlib.sha256(json.dumps([prev, *row], separators=(",", ":")).encode()).hexdigest()


def _genesis_v2(eps, delta, created_at) -> str:
    return hashlib.sha256(json.dumps(["fdp-ppl ledger", eps, delta, created_at]).encode()).hexdigest()


class _Hasher:
    """The links of a chain: SHA-256 of canonical JSON, or HMAC-SHA256 of it under the owner's key (RFC 2104)."""

    def __init__(self, key: bytes | None = None):
        self.key = key

    @property
    def name(self) -> str:
        return "sha256" if self.key is None else "hmac-sha256"

    @property
    def key_id(self) -> str:
        """A public fingerprint of the key (names which key a ledger was keyed with; reveals nothing of it)."""
        return "" if self.key is None else hmac.new(self.key, b"fdp-ppl ledger key id", hashlib.sha256).hexdigest()[:16]

    def __call__(self, *parts) -> str:
        data = json.dumps(list(parts), separators=(",", ":")).encode()
        if self.key is None:
            return hashlib.sha256(data).hexdigest()
        return hmac.new(self.key, data, hashlib.sha256).hexdigest()


@functools.lru_cache(maxsize=4096)
def _parse_event(text) -> PrivacyEvent:
    """A recorded event (cached by its JSON: a long ledger repeats a few events; events are immutable)."""
    return PrivacyEvent.from_json(text)


@dataclass
class _State:
    """A validated ledger: its total, entry rows (with the two ``typeof`` columns), their events, the chain
    (``hashes[i]`` is the head after ``i`` entries, ``hashes[0]`` the genesis) and the meta table."""

    total: PrivacyBudget
    rows: list
    events: list
    hashes: list
    meta: dict

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def head(self) -> str:
        return self.hashes[-1]


def _reference_layout() -> dict:
    con = sqlite3.connect(":memory:")
    try:
        for sql in _TABLES.values():
            con.execute(sql)
        return {t: con.execute(f"PRAGMA table_info({t})").fetchall() for t in _TABLES}
    finally:
        con.close()


_LAYOUT = _reference_layout()


def _release_head(release) -> tuple[str, int, str]:
    """``(name, count, head)`` of what a release recorded of its ledger: a release file (path), its root
    attributes (a mapping, or a tree with ``.attrs``), a ``(count, head)`` pair, or the text ``"COUNT:HEAD"``
    as the release table prints it.

    Raises
    ------
    InputError
        The release records no ledger head (made without a ledger, or by an earlier version).
    """
    name = str(release)
    attrs = None
    if isinstance(release, tuple) and len(release) == 2:
        attrs = {"ledger_entries": release[0], "ledger_head": release[1]}
    elif isinstance(release, Mapping):
        attrs = release
    elif hasattr(release, "attrs"):
        attrs, name = release.attrs, "the release"
    elif isinstance(release, str) and ":" in release and not Path(release).expanduser().exists():
        count, _, head = release.partition(":")
        attrs = {"ledger_entries": count, "ledger_head": head}
    else:
        path = Path(release).expanduser()
        if not path.is_file():
            raise InputError(f"no release file at {path}", "pass release files written with --ledger, or COUNT:HEAD")
        import xarray as xr  # only to read root attributes of a release file

        try:
            with xr.open_datatree(path) as tree:
                attrs = dict(tree.attrs)
        except (OSError, ValueError) as err:
            raise InputError(f"{path} is not a release file ({str(err).splitlines()[0] if str(err) else err!r})",
                             "pass release files written with --ledger") from None
    try:
        count, head = int(attrs["ledger_entries"]), str(attrs["ledger_head"])
        if count < 0 or len(head) != 64 or any(c not in "0123456789abcdef" for c in head):
            raise ValueError
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{name} records no ledger head (it was made without a file ledger, or before releases "
                         "recorded one)", "pass release files written with --ledger FILE, or COUNT:HEAD as the "
                         "release table printed it") from None
    return name, count, head


# ---------------------------------------------------------------------------------------------------- the key
def _temporary(target: Path) -> Path:
    """A temporary next to ``target`` (the name every command's temporaries have: a later run removes it)."""
    return target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp{target.suffix}")


def _link_into_place(tmp: Path, target: Path) -> None:
    """Put the complete ``tmp`` at ``target`` unless something is there already (then ``target`` wins)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        return
    except OSError:  # a file system without hard links: rename, unless another run got there first
        if not target.exists():
            os.replace(tmp, target)
        return
    with contextlib.suppress(OSError):
        dfd = os.open(target.resolve().parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _read_key(key_file, ledger: Path, *, create: bool) -> tuple[bytes, Path]:
    """The owner's key for the ledger at ``ledger`` (created, 32 random bytes, mode 600, when ``create``).

    Raises
    ------
    InputError
        The key file is the ledger, lies inside the ledger's directory, is missing (for an existing ledger), a
        directory, readable by others, or shorter than 16 bytes.
    """
    path = Path(key_file).expanduser()
    where, ledger_dir = path.resolve(), ledger.resolve().parent
    if where == ledger.resolve():
        raise InputError(f"the key file {path} is the ledger itself", "keep the key in a file of its own, outside the "
                         "ledger's directory, e.g. --key-file ~/.fdp-ppl/ledger.key")
    if ledger_dir == where.parent or ledger_dir in where.parents:
        raise InputError(f"the key file {path} is inside the ledger's directory {ledger_dir}",
                         "keep the key where those who can write the ledger cannot (they can write its directory: "
                         "SQLite's journal lives there), e.g. --key-file ~/.fdp-ppl/ledger.key")
    if path.is_dir():
        raise InputError(f"the key file {path} is a directory", "pass a file, e.g. --key-file ~/.fdp-ppl/ledger.key")
    if not path.exists():
        if not create:
            raise InputError(f"no key file at {path}", "pass the key file the ledger was created with (a key file "
                                                       "is created only with a new ledger)")
        if not where.parent.is_dir():
            raise InputError(f"the directory of the key file {path} does not exist", "create it (mode 700) first")
        tmp = _temporary(where)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(_KEY_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
            _link_into_place(tmp, where)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    if os.name == "posix" and path.stat().st_mode & 0o077:
        raise InputError(f"the key file {path} can be read or written by others (mode "
                         f"{path.stat().st_mode & 0o777:o})", f"chmod 600 {path}")
    key = path.read_bytes()
    if len(key) < 16:
        raise InputError(f"the key file {path} holds {len(key)} bytes, fewer than 16",
                         "a key file is created with a new ledger (32 random bytes); pass that file")
    return key, where


class _HeadLog:
    """The keyed head log next to a key file (``KEY.heads``): one JSON line per charge ``[ledger path, genesis,
    count, head, mac]``, the mac keyed like the chain. A ledger whose chain does not hold every logged head of
    its path was rolled back, wiped or replaced."""

    def __init__(self, key_path: Path, hasher: _Hasher):
        self.path = key_path.with_name(key_path.name + ".heads")
        self.hasher = hasher

    def records(self, ledger: Path, damaged) -> list[tuple[int, str, int, str]]:
        """``(line, genesis, count, head)`` of every logged charge of the ledger at ``ledger``."""
        where = str(ledger.resolve())
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                path, genesis, count, head, mac = json.loads(line)
                ok = hmac.compare_digest(str(mac), self.hasher("head log", path, genesis, count, head))
            except (ValueError, TypeError):
                ok = False
            if not ok:
                if i == len(text.splitlines()) and not text.endswith("\n"):
                    continue  # a line cut short by a crash while it was appended
                raise damaged(f"line {i} of the key's head log {self.path} is not one this key wrote")
            if path == where:
                out.append((i, genesis, int(count), head))
        return out

    def append(self, ledger: Path, genesis: str, count: int, head: str) -> None:
        where = str(ledger.resolve())
        line = json.dumps([where, genesis, count, head, self.hasher("head log", where, genesis, count, head)])
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------------- the file
class FileLedger(_Totals):
    """Spending against a total budget, persisted in an SQLite file (see the module docstring).

    Open with :meth:`fdp_ppl.accounting.PrivacyLedger.open`. Has the interface of
    :class:`~fdp_ppl.accounting.PrivacyLedger` (``check``, ``spend``, ``spent``,
    ``remaining``, ``tight_epsilon``, ``entries``, ``events``, ``attrs``), so
    ``fp.release(..., ledger=...)`` charges it, and records the ledger's entry count and head after the
    charge in the release (``ledger_entries``, ``ledger_head``), which :meth:`verify` checks later.

    Parameters
    ----------
    path : str or Path
        The ledger file (created if missing; an existing file is never re-created, even when empty).
    total : PrivacyBudget, optional
        Required to create a ledger; when given for an existing ledger it must
        equal the recorded total (a budget is fixed for the life of the data).
    key_file : str or Path, optional
        The owner's key (HMAC-SHA256 chain and head log ``KEY.heads``; module docstring). Created (32 random
        bytes, mode 600) with a new ledger; required, the same file, for every later use of a keyed ledger.
        Must lie outside the ledger's directory.
    privacy_unit : str, optional
        The unit the ledger protects (``"record"`` or a person's column, e.g. ``"subject_id"``). Recorded at
        creation in the chain-covered meta fields, so a release for another unit is refused (or, for a
        record-level release with ``records_per_unit``, charged by group privacy) from the first release on;
        default: its first charge's. For an existing ledger it must be the ledger's unit.
    neighbouring : str, optional
        ``"replace-one"`` or ``"add-remove"``, recorded at creation in the chain-covered meta fields (default: the
        first charge's); for an existing ledger it must be the ledger's (:class:`PrivacyLedger`).

    Raises
    ------
    InputError
        A new ledger without a total, a total, unit or relation that differs from the recorded one, an unknown
        relation, or an unusable key file.
    LedgerError
        The file is not a ledger, is empty, fails its validation (module docstring), was downgraded to an
        earlier layout, was keyed with another key (or is keyed and no key is given), or SQLite cannot use it
        (the message says which: damaged, locked, disk full, not writable). It is never re-budgeted, reset,
        or read with a bad row counted as 0.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import fdp_ppl as fp
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> ledger = fp.PrivacyLedger.open(d / "budget.sqlite", fp.PrivacyBudget(3.0))
    >>> ledger.spend(fp.PrivacyBudget(1.0), "mean curve")
    1
    >>> info = ledger.verify(releases=[(1, ledger.verify()["head"])])
    >>> info["entries"], info["chain"], len(info["releases"])
    (1, 'sha256', 1)
    """

    def __init__(self, path, total: PrivacyBudget | None = None, *, key_file=None, privacy_unit: str | None = None,
                 neighbouring: str | None = None):
        self.path = Path(path).expanduser()
        privacy_unit = _check_unit(privacy_unit)
        neighbouring = None if neighbouring is None else check_neighbouring(neighbouring)
        if self.path.is_dir():
            raise InputError(f"the ledger path {self.path} is a directory", "pass a file name, e.g. ledger.sqlite")
        new = not self.path.exists()
        if total is None and new:  # refuse before anything is created
            raise InputError(f"the ledger {self.path} is new and has no budget",
                             "pass the total budget (--budget EPSILON[,DELTA] or total=PrivacyBudget(...))")
        if new and not self.path.resolve().parent.is_dir():
            raise InputError(f"the directory of the ledger {self.path} does not exist", "create it or choose another path")
        self._hasher, self._log, self._last, self._declared, self._relation = _Hasher(), None, None, None, None
        if key_file is not None:
            key, key_path = _read_key(key_file, self.path, create=new)
            self._hasher, self._log = _Hasher(key), _HeadLog(key_path, _Hasher(key))
        if new:
            stated = {} if privacy_unit is None and neighbouring is None else \
                {"privacy_unit": privacy_unit or "", "neighbouring": neighbouring or ""}
            self._create(total, stated)
        elif self.path.stat().st_size == 0:
            raise LedgerError(f"the ledger {self.path} is an empty file (0 bytes): a ledger is never empty, so it was "
                              "truncated or wiped and what it had spent is lost",
                              "restore it from a copy; only if it never held a ledger, delete the empty file to start "
                              "one (it is never re-created in place)")
        with self._session() as con:
            if self._layout(con) != "current":
                self._migrate(con)
            state = self._load(con)
            recorded = state.total
        if total is not None and (abs(total.epsilon - recorded.epsilon) > _RTOL * recorded.epsilon
                                  or abs(total.delta - recorded.delta) > _RTOL * max(recorded.delta, 1e-300)):
            raise InputError(f"the ledger {self.path} was created with the budget epsilon={recorded.epsilon:g}, "
                             f"delta={recorded.delta:g}, not epsilon={total.epsilon:g}, delta={total.delta:g}",
                             "a budget is fixed for the life of the data: omit --budget or pass the recorded one")
        self.total = recorded
        held = ledger_unit(state.events, self._unit_of(state))
        if privacy_unit is not None and held is not None and privacy_unit != held:
            raise InputError(f"the ledger {self.path} protects each {held}, not each {privacy_unit}: one ledger keeps "
                             "one privacy unit", "omit the privacy unit, or use a ledger of its own for this unit")
        self._declared = privacy_unit  # an existing ledger without a unit yet: this object's charges use it
        relation = ledger_relation(state.events, state.meta.get("neighbouring") or None)
        if neighbouring is not None and relation is not None and neighbouring != relation:
            raise InputError(f"the ledger {self.path} is for the {relation} relation, not {neighbouring}: one ledger "
                             "keeps one neighbouring relation", "omit the relation, or use a ledger of its own for it")
        self._relation = neighbouring

    # ------------------------------------------------------------------ file
    def _connect(self) -> sqlite3.Connection:
        # mode=rw: SQLite never creates the file (a ledger is created only by _create, complete)
        con = sqlite3.connect(self.path.resolve().as_uri() + "?mode=rw", uri=True, timeout=_TIMEOUT,
                              isolation_level=None)
        con.execute(f"PRAGMA busy_timeout = {int(_TIMEOUT * 1000)}")
        return con

    @contextlib.contextmanager
    def _session(self):
        try:
            con = self._connect()
        except sqlite3.Error as err:
            raise self._sqlite_error(err) from None
        try:
            yield con
        except sqlite3.Error as err:
            raise self._sqlite_error(err) from None
        finally:
            con.close()

    def _sqlite_error(self, err: sqlite3.Error, charged: str = "") -> LedgerError:
        """SQLite's error as what it means for the ledger (``charged``: what a charge left, for a charge)."""
        name, text = getattr(err, "sqlite_errorname", "") or "", str(err)
        if name == "SQLITE_FULL" or "disk is full" in text:
            return LedgerError(f"the disk under the ledger {self.path} is full (SQLite: {text}){charged}",
                               "free disk space there and run again")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
            return LedgerError(f"the ledger {self.path} stayed locked by another run for {_TIMEOUT:g} s{charged}",
                               "run again when the other runs on this ledger have finished; on a network file "
                               "system, where SQLite's locks may never clear, keep the ledger on a local disk")
        if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "not a database" in text or "malformed" in text:
            return self._damaged(f"SQLite cannot read it ({text})")
        return LedgerError(f"cannot use the ledger {self.path} (SQLite: {text}){charged}",
                           "check that the file and its directory are writable (SQLite writes a journal next to the "
                           "ledger) and that the file is a ledger")

    def _damaged(self, what: str) -> LedgerError:
        return LedgerError(f"the ledger {self.path} is damaged or was edited: {what}",
                           "restore the file from a copy (its spending cannot be trusted); it is never reset")

    def _meta_fixed(self, created_at: str, migrations: list, stated: Mapping | None = None) -> list[tuple[str, str]]:
        return [("schema_version", str(SCHEMA_VERSION)), ("created_at", str(created_at)),
                ("chain", self._hasher.name), ("key_id", self._hasher.key_id),
                ("migrations", json.dumps(migrations, separators=(",", ":"))), *dict(stated or {}).items()]

    def _genesis(self, con) -> str:
        """The first link: the budget row and every fixed field of the meta table (module docstring)."""
        eps, delta, created = con.execute("SELECT epsilon, delta, created_at FROM budget WHERE id = 1").fetchone()
        fixed = [list(kv) for kv in con.execute("SELECT key, value FROM meta ORDER BY key") if kv[0] not in _MUTABLE]
        return self._hasher("genesis", "fdp-ppl ledger", eps, delta, created, fixed)

    def _seal(self, count: int, head: str) -> str:
        return self._hasher("seal", count, head)

    def _set_head(self, con, count: int, head: str) -> None:
        con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [("count", str(count)), ("head", head), ("seal", self._seal(count, head))])

    @staticmethod
    def _stamp(con) -> None:
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        con.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _create(self, total: PrivacyBudget, stated: Mapping) -> None:
        """Write a new ledger to a temporary file and link it into place complete (another run's wins); ``stated``:
        the privacy unit (``""``: its first charge's) and neighbouring relation stated at creation (meta fields,
        in the genesis)."""
        if self._log is not None and self._log.records(self.path, self._damaged):
            raise LedgerError(f"the key's head log {self._log.path} records charges to a ledger at {self.path}, "
                              "which is gone: it was deleted or moved", "restore it from a copy; to start a new "
                              "ledger on purpose, give it a new file name")
        tmp = _temporary(self.path.resolve())
        try:
            con = sqlite3.connect(tmp, isolation_level=None)
            try:
                self._stamp(con)
                con.execute("BEGIN IMMEDIATE")
                for sql in _TABLES.values():
                    con.execute(sql)
                now = _now()
                con.execute("INSERT INTO budget VALUES (1, ?, ?, ?)", (total.epsilon, total.delta, now))
                con.executemany("INSERT INTO meta VALUES (?, ?)", self._meta_fixed(now, [], stated))
                self._set_head(con, 0, self._genesis(con))
                con.execute("COMMIT")
            finally:
                con.close()
            _link_into_place(tmp, self.path)
        except sqlite3.Error as err:
            raise self._sqlite_error(err) from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _layout(self, con) -> str:
        """``"new"`` (no tables), ``"v1"`` (no events, no chain), ``"v2"`` (an unkeyed chain over the entries
        only), ``"current"``; raises LedgerError for anything else, and for a downgrade."""
        objects = con.execute("SELECT type, name FROM sqlite_master").fetchall()
        tables = {n for t, n in objects if t == "table"} - {"sqlite_sequence"}
        if not tables:
            return "new"
        if not {"budget", "entries"} <= tables:
            missing = ", ".join(sorted({"budget", "entries"} - tables))
            raise self._damaged(f"the table {missing} is missing") if tables & {"budget", "entries", "meta"} else \
                LedgerError(f"{self.path} is not an fdp-ppl ledger (tables: {', '.join(sorted(tables))})",
                            "pass a ledger written by --ledger, or a new file name")
        if tables - {"budget", "entries", "meta"}:
            raise self._damaged(f"it holds the unexpected table(s) {', '.join(sorted(tables - set(_TABLES)))}")
        others = sorted(f"{t} {n}" for t, n in objects if t != "table" and not n.startswith("sqlite_autoindex_"))
        if others:
            raise self._damaged(f"it holds {', '.join(others)} (a trigger or view could change what is recorded)")
        if con.execute("PRAGMA table_info(budget)").fetchall() != _LAYOUT["budget"]:
            raise self._damaged("its budget table has an unexpected layout")
        columns = con.execute("PRAGMA table_info(entries)").fetchall()
        version, stamp = (con.execute(f"PRAGMA {p}").fetchone()[0] for p in ("user_version", "application_id"))
        if [c[1] for c in columns] == _COLUMNS_V1 and "meta" not in tables:
            layout = "v1"
        elif columns == _LAYOUT["entries"] and "meta" in tables and \
                con.execute("PRAGMA table_info(meta)").fetchall() == _LAYOUT["meta"]:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            layout = {"2": "v2", str(SCHEMA_VERSION): "current"}.get(row[0] if row else None)
            if layout is None:
                if row and str(row[0]).isdigit() and int(row[0]) > SCHEMA_VERSION:
                    raise LedgerError(f"the ledger {self.path} has schema version {row[0]}, written by a newer "
                                      "fdp_ppl", "upgrade fdp_ppl to use it")
                raise self._damaged("its meta table holds no known schema version")
        else:
            raise self._damaged("its tables have an unexpected layout")
        if layout != "current" and (stamp == APPLICATION_ID or version >= 3):
            raise LedgerError(f"the ledger {self.path} has the layout of schema {layout[1]} but was written as schema "
                              f"{version} by fdp_ppl: it was downgraded (a migration would forget its chain)",
                              "restore the file from a copy (its spending cannot be trusted); a ledger is migrated "
                              "only once")
        if layout == "current" and (stamp != APPLICATION_ID or version != SCHEMA_VERSION):
            raise self._damaged(f"its SQLite header says schema {version}, application id {stamp:#x}, not schema "
                                f"{SCHEMA_VERSION} of fdp_ppl")
        return layout

    def _migrate(self, con) -> None:
        """Bring a file of an earlier layout to the current one, once, under the write lock, after checking all of
        it; the migration is recorded in the genesis (``migrations``)."""
        con.execute("BEGIN IMMEDIATE")
        try:
            layout = self._layout(con)  # again, under the write lock: another process may have done it
            if layout == "new":
                raise LedgerError(f"{self.path} is not an fdp-ppl ledger (it holds no ledger tables)",
                                  "pass a ledger written by --ledger, or a new file name")
            if layout != "current":
                if self._log is not None and self._log.records(self.path, self._damaged):
                    raise LedgerError(f"the ledger {self.path} has the layout of schema {layout[1]} but the key's "
                                      f"head log {self._log.path} records charges to it: it was downgraded or "
                                      "replaced", "restore the file from a copy (its spending cannot be trusted)")
                self._migrate_rows(con, layout)
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    def _migrate_rows(self, con, layout: str) -> None:
        self._check_budget_row(con)
        now = _now()
        created = con.execute("SELECT created_at FROM budget WHERE id = 1").fetchone()[0]
        if layout == "v1":
            rows = con.execute("SELECT id, typeof(epsilon), epsilon, typeof(delta), delta FROM entries "
                               "ORDER BY id").fetchall()
            for rid, te, eps, td, delta in rows:
                self._check_numbers(rid, te, eps, td, delta)
            con.execute("ALTER TABLE entries ADD COLUMN event TEXT")
            con.execute("ALTER TABLE entries ADD COLUMN hash TEXT")
            con.execute(_TABLES["meta"])
            for rid, _, eps, _, delta in rows:
                event = PrivacyEvent.from_budget(_unchecked(eps, delta)).to_json()
                con.execute("UPDATE entries SET event = ? WHERE id = ?", (event, rid))
            migrations = [{"from": 1, "at": now, "entries": len(rows),
                           "note": "events of the migrated entries are generic (epsilon, delta) events"}]
        else:
            count, head, meta = self._check_v2(con)
            migrations = ([{"from": 1, "at": meta["migrated_at"]}] if "migrated_at" in meta else []) + \
                [{"from": 2, "at": now, "entries": count, "head": head}]
            con.execute("DELETE FROM meta")
        con.executemany("INSERT INTO meta VALUES (?, ?)", self._meta_fixed(created, migrations))
        prev = self._genesis(con)
        full = con.execute(f"SELECT {', '.join(_COLUMNS[:-1])} FROM entries ORDER BY id").fetchall()
        for row in full:
            prev = self._hasher("entry", prev, *row)
            con.execute("UPDATE entries SET hash = ? WHERE id = ?", (prev, row[0]))
        self._set_head(con, len(full), prev)
        self._stamp(con)

    def _check_v2(self, con) -> tuple[int, str, dict]:
        """Validate a file of schema 2 by its own (unkeyed) chain; returns its count, head and meta."""
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        if "head" not in meta or "count" not in meta:
            raise self._damaged("its meta table is incomplete")
        eps_b, delta_b, created = con.execute("SELECT epsilon, delta, created_at FROM budget WHERE id = 1").fetchone()
        prev = _genesis_v2(eps_b, delta_b, created)
        rows = con.execute(f"SELECT {', '.join(_COLUMNS)}, typeof(epsilon), typeof(delta) FROM entries "
                           "ORDER BY id").fetchall()
        for row in rows:
            self._check_row(row)
            prev = _digest_v2(prev, list(row[:8]))
            if row[8] != prev:
                raise self._damaged(f"entry #{row[0]} does not match its hash (edited, inserted or reordered)")
        if str(len(rows)) != meta["count"] or prev != meta["head"]:
            raise self._damaged(f"it holds {len(rows)} entries but recorded {meta['count']}")
        return len(rows), prev, meta

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

    def _check_row(self, row) -> PrivacyEvent:
        """The numbers of an entry row (its columns, then ``typeof`` of ε and δ) and its event."""
        rid, eps, delta = row[0], row[5], row[6]
        self._check_numbers(rid, row[9], eps, row[10], delta)
        try:
            event = _parse_event(row[7])
            _event_for(_unchecked(eps, delta), event)
        except (InputError, BudgetExceededError, TypeError) as err:
            raise self._damaged(f"entry #{rid} has an invalid event ({err.args[0]})") from None
        return event

    def _load(self, con) -> _State:
        """Validate the whole file (module docstring) and return its state, read in one transaction.

        Outside a transaction of the caller's, the reads (budget, meta, entries) run in one read transaction of
        their own, so they see one committed state: in autocommit each SELECT would be its own snapshot, and a
        charge committed by another run between the meta and the entries looked like a damaged ledger ("holds 3
        entries but recorded 2").

        Raises
        ------
        LedgerError
            The first problem found, naming the row.
        """
        if con.in_transaction:
            return self._load_snapshot(con)
        con.execute("BEGIN")  # deferred: a shared lock from the first read to the end, so no commit in between
        try:
            return self._load_snapshot(con)
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")  # read only: nothing to keep

    def _load_snapshot(self, con) -> _State:
        if self._layout(con) != "current":
            raise self._damaged("it has no current hash chain")
        total = self._check_budget_row(con)
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        needed = {"schema_version", "created_at", "chain", "key_id", "migrations", *_MUTABLE}
        if not needed <= set(meta):
            raise self._damaged(f"its meta table misses {', '.join(sorted(needed - set(meta)))}")
        if meta["chain"] != self._hasher.name or meta["key_id"] != self._hasher.key_id:
            raise self._wrong_key(meta)
        if meta.get("neighbouring", "") not in ("", "replace-one", "add-remove"):
            raise self._damaged(f"its neighbouring relation {meta['neighbouring']!r} is unknown")
        prev = self._genesis(con)
        hashes = [prev]
        rows = con.execute(f"SELECT {', '.join(_COLUMNS)}, typeof(epsilon), typeof(delta) FROM entries "
                           "ORDER BY id").fetchall()
        events = []
        for row in rows:
            events.append(self._check_row(row))
            prev = self._hasher("entry", prev, *row[:8])
            if row[8] != prev:
                raise self._damaged(f"entry #{row[0]} does not match its hash (the entry, an earlier one or the budget "
                                    "and meta fields were edited, inserted or reordered)")
            hashes.append(prev)
        if str(len(rows)) != meta["count"] or prev != meta["head"]:
            raise self._damaged(f"it holds {len(rows)} entries but recorded {meta['count']} (entries were deleted or "
                                "added outside the ledger)")
        if not hmac.compare_digest(meta["seal"], self._seal(len(rows), prev)):
            raise self._damaged("its head and count do not match their seal (rolled back or edited"
                                + (" by someone without the key)" if self._hasher.key else ")"))
        state = _State(total, rows, events, hashes, meta)
        if self._log is not None:
            for line, genesis, count, head in self._log.records(self.path, self._damaged):
                if genesis != hashes[0] or count > len(rows) or hashes[count] != head:
                    raise LedgerError(
                        f"the ledger {self.path} was rolled back, replaced or edited: line {line} of the key's head "
                        f"log records entry {count} with head {head[:16]}…, which its chain (of {len(rows)} entries) "
                        "does not hold", "restore it from the latest copy; its spending cannot be trusted")
        return state

    def _wrong_key(self, meta) -> LedgerError:
        if meta["chain"] == "hmac-sha256" and self._hasher.key is None:
            return LedgerError(f"the ledger {self.path} has a keyed chain and no key was given",
                               "pass its key file (key_file=KEY)")
        if meta["chain"] == "sha256" and self._hasher.key is not None:
            return LedgerError(f"the ledger {self.path} has no keyed chain: it was created without a key, or rewritten "
                               "without one", "open it without a key file if it never had one; otherwise restore it "
                               "from a copy (its spending cannot be trusted)")
        if meta["chain"] not in ("sha256", "hmac-sha256"):
            return self._damaged(f"its chain kind {meta['chain']!r} is unknown")
        return LedgerError(f"the ledger {self.path} was keyed with another key (id {meta['key_id']}, this key's "
                           f"{self._hasher.key_id})", "pass the key file it was created with")

    def _state(self) -> _State:
        with self._session() as con:
            return self._load(con)

    # ------------------------------------------------------------------ reading
    @property
    def events(self) -> list[PrivacyEvent]:
        """The :class:`~fdp_ppl.accounting.events.PrivacyEvent` of every charge, oldest first."""
        return self._state().events

    @property
    def entries(self) -> list[tuple[str, PrivacyBudget]]:
        """``(label, cost)`` of every charge, oldest first."""
        return [(row[2] or "", _unchecked(row[5], row[6])) for row in self._state().rows]

    def records(self) -> list[dict]:
        """Every charge with its time, label, dataset, mechanism, (ε, δ), event (JSON) and hash."""
        return [dict(zip(_COLUMNS, row[:9])) for row in self._state().rows]

    def attrs(self) -> dict:
        """The ledger's state after this object's last charge (or now, before any) as release attributes: the
        totals of :meth:`PrivacyLedger.attrs` plus ``ledger_entries`` and ``ledger_head`` (the count and head hash
        right after the charge, which :meth:`verify` checks) and ``ledger_chain`` (``sha256`` or ``hmac-sha256``).

        Raises
        ------
        LedgerError
            The file fails its validation, or the entry of the last charge is no longer in the chain.
        """
        state = self._state()
        count = state.count
        if self._last is not None:
            count, head = self._last
            if count > state.count or state.hashes[count] != head:
                raise self._damaged(f"the entry just charged (#{count}) is no longer in its chain")
        return {**self._attrs_of(state.events[:count], self._unit_of(state)), "ledger_entries": count,
                "ledger_head": state.hashes[count], "ledger_chain": self._hasher.name}

    def verify(self, releases=()) -> dict:
        """Validate the file (module docstring) and check that each release's ledger head is in its chain.

        Parameters
        ----------
        releases : iterable, optional
            Releases charged to this ledger: release files (paths), their root attributes (mappings or trees),
            ``(count, head)`` pairs or ``"COUNT:HEAD"`` texts. The latest ones detect a rollback, an edit or an
            old copy made after them even without a key.

        Returns
        -------
        dict
            ``entries`` (count), ``head`` (hash of the last link), ``schema_version``, ``chain`` (``"sha256"``
            or ``"hmac-sha256"``), ``migrations`` (list of dicts) and, for a migrated file, ``migrated_at``;
            ``privacy_unit`` (stated at creation, else the first charge's; None before either) and
            ``neighbouring`` (``"replace-one"`` or ``"add-remove"``: stated at creation, else the first charge's;
            None before either);
            ``releases``: ``(name, count, head)`` of each release checked; ``head_log``: the number of
            logged charges checked (keyed ledgers).

        Raises
        ------
        LedgerError
            The first problem found; for a release, one line naming it and the head it recorded.
        InputError
            A release that records no ledger head.
        """
        heads = [_release_head(r) for r in releases]
        with self._session() as con:
            state = self._load(con)
            logged = len(self._log.records(self.path, self._damaged)) if self._log is not None else None
        for name, count, head in heads:
            if count > state.count:
                raise LedgerError(f"{name} was charged as entry {count} of the ledger {self.path}, which now holds "
                                  f"{state.count}: the ledger was rolled back or replaced after it",
                                  "restore the ledger from a copy that holds that charge; its spending cannot be "
                                  "trusted")
            if state.hashes[count] != head:
                raise LedgerError(f"{name} recorded the head {head[:16]}… at entry {count}, which is not in the chain "
                                  f"of {self.path}: the ledger was edited, rolled back or replaced after it (or the "
                                  "release was charged to another ledger)", "restore the ledger from a copy that "
                                  "holds that charge; its spending cannot be trusted")
        migrations = json.loads(state.meta["migrations"])
        return {"entries": state.count, "head": state.head, "schema_version": int(state.meta["schema_version"]),
                "chain": state.meta["chain"], "migrations": migrations,
                "privacy_unit": ledger_unit(state.events, state.meta.get("privacy_unit") or None),
                "neighbouring": self._relation_held(state),
                **({"migrated_at": migrations[-1]["at"]} if migrations else {}),
                "releases": heads, **({"head_log": logged} if logged is not None else {})}

    # ------------------------------------------------------------------ charging
    def _unit_of(self, state: _State) -> str | None:
        """The unit stated for the ledger: recorded at its creation, else this object's (None: none stated)."""
        return state.meta.get("privacy_unit") or self._declared

    @property
    def privacy_unit_declared(self) -> str | None:
        """The unit stated at creation (recorded in the file), or given to this object; None if neither."""
        return self._unit_of(self._state())

    @property
    def privacy_unit(self) -> str | None:
        """The unit this ledger protects: the one stated at creation, else its first charge's (None before any)."""
        state = self._state()
        return ledger_unit(state.events, self._unit_of(state))

    def _relation_held(self, state: _State) -> str | None:
        """The ledger's relation: stated at creation, else this object's, else its first charge's (None: none)."""
        return ledger_relation(state.events, state.meta.get("neighbouring") or self._relation)

    @property
    def neighbouring(self) -> str | None:
        """The neighbouring relation of every charge (``"replace-one"``: n public; ``"add-remove"``: membership
        protected): the one stated at creation, else the first charge's (None before either)."""
        return self._relation_held(self._state())

    def check(self, cost: PrivacyBudget, event: PrivacyEvent | None = None, *,
              records_per_unit: int | None = None, unit: str | None = None) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit now, or
        :class:`~fdp_ppl.errors.InputError` if its unit (the event's, or ``unit`` without one) is not the
        ledger's."""
        state = self._state()
        events = state.events
        charged = _charged(cost, event, events, self._unit_of(state), records_per_unit, unit,
                           state.meta.get("neighbouring") or self._relation)
        if charged is not None and not fits([*events, charged], self.total):
            raise _refusal(f" in {self.path}", charged.basic, self.total, events)

    def spend(self, cost: PrivacyBudget, label: str = "", *, dataset: str = "", mechanism: str = "",
              event: PrivacyEvent | None = None, records_per_unit: int | None = None) -> int:
        """Charge ``cost`` atomically: decide on a validated snapshot outside the write lock, then, under the lock,
        validate the file again and record the entry if its head is still the snapshot's (module docstring). The
        event is first converted to the ledger's privacy unit (:func:`~fdp_ppl.accounting.events.for_ledger`).

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
            The file fails its validation, stays locked, or its disk is full; the message says whether anything
            was recorded.
        """
        event = _event_for(cost, event)
        for attempt in range(_ATTEMPTS + 1):
            under_lock = attempt == _ATTEMPTS  # many runs charging at once: decide under the lock, once
            snapshot = None if under_lock else self._state()
            if snapshot is not None:  # outside the lock
                charged = for_ledger(event, ledger_unit(snapshot.events, self._unit_of(snapshot)),
                                     records_per_unit, self._relation_held(snapshot))  # one unit, one relation
                if not fits([*snapshot.events, charged], self.total):
                    raise _refusal(f" in {self.path}", charged.basic, self.total, snapshot.events)
            rid = self._append(snapshot, event, records_per_unit, [label, dataset, mechanism])
            if rid is not None:
                return rid
        raise AssertionError("unreachable")  # pragma: no cover

    def _append(self, snapshot: _State | None, event, records_per_unit, details) -> int | None:
        """Under the write lock: the new entry's id, or None when another run charged since ``snapshot``."""
        try:
            con = self._connect()
        except sqlite3.Error as err:
            raise self._sqlite_error(err, "; nothing was charged") from None
        state = digest = None
        try:
            con.execute("BEGIN IMMEDIATE")
            state = self._load(con)
            if snapshot is not None and (state.count, state.head) != (snapshot.count, snapshot.head):
                con.execute("ROLLBACK")
                return None
            event = for_ledger(event, ledger_unit(state.events, self._unit_of(state)), records_per_unit,
                               self._relation_held(state))  # one unit, one relation per ledger
            cost = event.basic
            if snapshot is None and not fits([*state.events, event], self.total):
                raise _refusal(f" in {self.path}", cost, self.total, state.events)
            rid = int(con.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM entries").fetchone()[0])
            row = [rid, _now(), *details, float(cost.epsilon), float(cost.delta), event.to_json()]
            digest = self._hasher("entry", state.head, *row)
            con.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*row, digest))
            self._set_head(con, state.count + 1, digest)
            con.execute("COMMIT")
        except BaseException as err:
            with contextlib.suppress(sqlite3.Error):  # SQLite has already rolled back after a full disk
                if con.in_transaction:
                    con.execute("ROLLBACK")
            if isinstance(err, sqlite3.Error):
                raise self._sqlite_error(err, self._charged_text(digest)) from None
            raise
        finally:
            con.close()
        self._last = (state.count + 1, digest)
        if self._log is not None:
            try:
                self._log.append(self.path, state.hashes[0], state.count + 1, digest)
            except OSError as err:  # the charge stands; only the witness of it is missing
                warnings.warn(f"the charge was recorded in {self.path} but not in the key's head log "
                              f"{self._log.path} ({err.strerror or err}): a rollback of this entry alone would go "
                              "unnoticed without a release", RuntimeWarning, stacklevel=3)
        return rid

    def _charged_text(self, digest: str | None) -> str:
        """Whether a charge that failed with a SQLite error was recorded, read back from the file."""
        if digest is None:
            return "; nothing was charged"
        try:
            with contextlib.closing(self._connect()) as con:
                head = con.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()[0]
        except (sqlite3.Error, TypeError):
            return f"; whether it was charged is unknown: run fdp-ppl ledger {self.path}"
        return "; it was charged" if head == digest else "; nothing was charged"

    def __repr__(self):
        s = self.spent
        return (f"FileLedger({str(self.path)!r}, total=(epsilon={self.total.epsilon:g}, delta={self.total.delta:g}), "
                f"spent=(epsilon={s.epsilon:g}, delta={s.delta:g}))")


__all__ = ["PrivacyLedger", "FileLedger", "SCHEMA_VERSION"]
