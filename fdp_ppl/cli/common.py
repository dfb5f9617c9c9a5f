"""What the ``fdp-ppl`` commands share: errors, data and privacy-unit options, output and ledger checks made before
any charge, the atomic writer, the public table, seeds and warnings.

Privacy notes
-------------
* **Before the charge.** Every check here depends on public inputs only (flags, paths, sizes) and runs before the
  data are read or the ledger charged: a refused run costs nothing and says nothing about the data.
* **Noise entropy.** Without ``--seed`` the noise comes from fresh OS entropy (``noise_seeded = 0``). A seeded
  release can be regenerated and subtracted by anyone who learns or guesses the seed, so any ``--seed`` needs
  ``--study``: the file and the table then say ``study: not private``, and a study takes no ``--ledger`` (it is not
  private spending); the seed is never printed.
* **Budget across runs.** ``--ledger FILE --budget E[,D]`` charges every release to a persistent ledger (SQLite,
  shared by concurrent runs) before any noise is drawn or file written; a release that does not fit is refused and
  writes nothing.
* **Files.** :func:`write_release` writes every output to a temporary name, flushes it and renames it into place
  only once all are complete: a kill or a full disk leaves no half-written file, and the next write in that
  directory removes what a killed run left (:func:`remove_orphans`). Every output of every command passes one
  guard (:func:`check_outputs`): never an input or a ledger, an existing file only with ``--force``.
* **Sizes and signals.** Every count a user types has a public bound (:data:`COUNT_LIMITS`); an interrupted run
  says in one line whether its ledger was charged (:data:`RUN`, :func:`interrupted_text`).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from pathlib import Path

from .._progress import stage
from ..errors import FdpPplError

PROG = "fdp-ppl"


class _Lazy:
    """A module imported on first attribute access: ``fdp-ppl --version`` needs no mechanism, so the
    registry (and PyMC, which the mechanisms import) load only when a command uses them."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


registry = _Lazy("fdp_ppl.releasing.registry")


np = _Lazy("numpy")  # numpy alone takes about 0.2 s to import: --help and --version do without it


DEFAULT_KERNEL = "matern32"


DEFAULT_RHO = 0.1


#: ``load_dataset``'s keyword arguments are the flags of the same name; its messages name the
#: keyword, the command line names the flag (applied to errors of the data-loading step only)
_LOAD_FLAGS = (
    ("pass data_dir=... to load_dataset", "pass --data-dir DIR"),
    ("data_dir=...", "--data-dir DIR"),
    ("choose one with var=...", "choose one with --var NAME"),
    ("record_dim=", "--record-dim "),
    ("curve_dim=", "--record-dim "),
    ("t_dim=", "--t-dim "),
)


class CLIError(FdpPplError, ValueError):
    """Bad command-line input: a message and the fix, both in terms of flags."""


def one_line(msg) -> str:
    return " ".join(str(msg).split())


def fail(msg) -> int:
    print(f"{PROG}: error: {one_line(msg)}", file=sys.stderr)
    return 2


#: a library keyword with its value in a message or fix: ``epsilon=1.0``, ``calibration='analytic'``
_KEYWORD = r"(?<![\w.<>!=-])([A-Za-z_][A-Za-z0-9_]*)=(?!=)('[^']*'|\"[^\"]*\"|[^\s,;)]+)"


def in_flags(err, flags: dict) -> str:
    """A library error (message; fix) with the keywords of its fix in the command's flags: ``pass e.g.
    epsilon=1.0`` becomes ``pass e.g. --epsilon 1.0`` and ``use calibration='analytic'`` becomes ``use
    --calibration analytic``, for the keywords in ``flags`` (keyword -> flag). The message is unchanged (it may
    describe something else by the same name: a ledger's ``delta=0``). The one translation every command uses
    (:func:`fdp_ppl.cli.main` applies it to every :class:`~fdp_ppl.errors.FdpPplError`), so a check made by the
    library reads the same from Python and from the command line, with the flag to change named.
    """
    import re

    def flag(match):
        name, value = match.group(1), match.group(2)
        if name not in flags:
            return match.group(0)
        value = value[1:-1] if value[:1] in "'\"" and value[-1:] == value[:1] else value
        return flags[name] if value == "True" else f"{flags[name]} {value}"  # a switch: the flag alone

    fix = getattr(err, "fix", "")
    if not (fix and flags):
        return str(err)
    return f"{err.message}; {re.sub(_KEYWORD, flag, fix)}"


def os_message(err: OSError) -> str:
    msg = err.args[-1] if err.args else str(err)
    fname = getattr(err, "filename", None)
    return f"{msg}: {fname}" if fname and str(fname) not in str(msg) else str(msg)


def add_output_args(p, default_out=None):
    p.add_argument("--out", default=default_out, required=default_out is None, metavar="PATH",
                   help="netCDF file for the release (xarray DataTree)" + (f"; default {default_out}" if default_out else ""))
    p.add_argument("--plot", default=None, metavar="PNG", help="also write a PNG of the release")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--holder-report", default=None, metavar="PATH",
                   help="a file of the data holder's own (JSON) for the counts computed from the data (records "
                        "clipped, points imputed): written after the charge and only when asked; they are never "
                        "printed, so stdout and stderr hold nothing computed from the data's values")
    p.add_argument("--study", action="store_true",
                   help="this run is a reproducible study, not a real release: needed by --seed; the file and the "
                        "table say 'study: not private', and no --ledger is charged (a study is not private spending)")


SEED_HELP = ("seed the noise (tests and reproducible studies only, needs --study): anyone who learns or guesses the "
             "seed can regenerate the noise and subtract it, so a seeded release is not private; the seed is never "
             "printed; default: fresh OS entropy")


#: the ``noise seed`` row of every command's table (the seed itself is never printed)
SEEDED_TEXT = "seeded (not private if the seed is known or guessable)"


UNSEEDED_TEXT = "fresh OS entropy (not seeded)"


def seed_text(seeded) -> str:
    """The ``noise seed`` row of every command's table: whether the noise was seeded, never the seed."""
    return SEEDED_TEXT if seeded else UNSEEDED_TEXT


def study_rows(attrs) -> list:
    """The ``study`` row of every command's table for a study release (root ``attrs`` with ``study``); else none."""
    return [("study", f"{attrs['study']} (--study: a reproducible study, not a release; charged to no ledger)")] \
        if "study" in attrs else []


def add_unit_args(g) -> None:
    """``--privacy-unit``, ``--combine``, ``--max-contributions``, ``--unit-order`` (:mod:`fdp_ppl.io.units`)."""
    g.add_argument("--privacy-unit", default=None, metavar="COLUMN",
                   help="coordinate (or the table's id column) naming the person a record belongs to: the guarantee "
                        "is then per person: replacing all of one person's records by any others changes the "
                        "release's law by at most (epsilon, delta), with the number of persons n public (it is "
                        "counted from the data and released); whether a person is in the data at all (presence) is "
                        "not protected (mean curves offer --neighbouring add-remove --n-lower N for that); needs "
                        "--combine mean or --max-contributions K")
    g.add_argument("--combine", choices=("mean",), default=None,
                   help="with --privacy-unit: average each person's records into one before clipping (every person "
                        "weighs the same)")
    g.add_argument("--max-contributions", type=int, default=None, metavar="K",
                   help="with --privacy-unit: keep each person's first K records (file order, or --unit-order), pad "
                        "to K with the public centre; the sensitivity is K times a record's")
    g.add_argument("--unit-order", default=None, metavar="COORD",
                   help="with --max-contributions: the per-record coordinate whose order decides which records are "
                        "kept (e.g. visit); default: the order of the file")


def check_unit_args(a):
    """The :class:`~fdp_ppl.io.units.PrivacyUnit` of the flags (None without ``--privacy-unit``).

    Raises
    ------
    CLIError
        A rule without a unit, a unit without a rule, both rules, K < 1.
    """
    unit, combine, k, order = (getattr(a, x, None) for x in ("privacy_unit", "combine", "max_contributions",
                                                                "unit_order"))
    if unit is None:
        if combine is not None or k is not None or order is not None:
            raise CLIError("--combine, --max-contributions and --unit-order apply to a --privacy-unit",
                           "pass --privacy-unit COLUMN too (e.g. --privacy-unit subject_id --combine mean)")
        return None
    if (combine is None) == (k is None):
        raise CLIError("--privacy-unit needs exactly one contribution rule",
                       "pass --combine mean (one averaged record per person) or --max-contributions K")
    if k is not None and k < 1:
        raise CLIError(f"--max-contributions must be >= 1 (got {k})", "e.g. --max-contributions 1")
    if order is not None and k is None:
        raise CLIError("--unit-order applies to --max-contributions", "drop --unit-order")
    from ..io.units import PrivacyUnit

    return PrivacyUnit(unit, max_contributions=k, combine=combine, order=order)


#: above this per-draw epsilon the command line warns that the release offers little privacy (a public threshold)
LARGE_EPSILON = 10.0


def warn_large_epsilon(epsilon: float) -> None:
    """One stderr line when ε exceeds :data:`LARGE_EPSILON` (public: it depends on the flags only)."""
    if epsilon > LARGE_EPSILON:
        print(f"{PROG}: warning: epsilon = {epsilon:g} offers little privacy (e^epsilon = {math.exp(min(epsilon, 700)):.3g}"
              f"{'+' if epsilon > 700 else ''}: an observer's odds about any person can change by that factor)",
              file=sys.stderr)


def warn_record_level(records) -> None:
    """One stderr line when a coordinate's name says it identifies a person and no ``--privacy-unit`` was given.

    Decided from the names alone (:func:`fdp_ppl.io.units.id_like_coordinates`; values and dtypes are never read),
    so it is public and the same for every neighbouring dataset: it may be printed before the charge.
    """
    from ..io.units import id_like_coordinates

    names = id_like_coordinates(records)
    if names:
        print(f"{PROG}: warning: {names[0]!r} looks like a person's identifier (judged by its name; its values are "
              f"not read): if {names[0]!r} repeats across records, this guarantee is per record, not per person; "
              f"pass --privacy-unit {names[0]} with --combine mean or --max-contributions K", file=sys.stderr)


def add_out_of_core_args(g, what: str = "reduce it") -> None:
    """``--chunks`` and ``--scheduler``: read a store lazily and ``what`` chunk by chunk on a dask cluster."""
    g.add_argument("--chunks", type=int, default=None, metavar="N",
                   help=f"read the data lazily, N records per chunk, and {what} chunk by chunk on a dask cluster "
                        "(data larger than memory; a Zarr store is always read this way; needs "
                        "pip install 'fdp-ppl[dask]'); n is the length of the record dim in the file's metadata")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a dask.distributed scheduler (tcp://host:8786) for --chunks; default: a local "
                        "cluster of 2 worker processes")


def add_dry_run_args(p, shows: str, n_help: str):
    """The ``plan`` group of a release command: ``--dry-run`` (the plan and its accuracy, ``shows``) and ``--n``
    (``n_help``); returns the group for the command's own planning flags."""
    g = p.add_argument_group("plan")
    g.add_argument("--dry-run", action="store_true",
                   help=f"print the plan and its accuracy ({shows}) and stop: the data values are not read, nothing "
                        "is drawn, charged or written")
    g.add_argument("--n", type=int, default=None, metavar="N", help=f"with --dry-run: {n_help}")
    return g


def add_ledger_args(p):
    g = p.add_argument_group("privacy budget")
    g.add_argument("--ledger", default=None, metavar="FILE",
                   help="persistent privacy ledger (SQLite; created if missing, shared by concurrent runs): the "
                        "release is charged draws × (epsilon, delta) before any noise is drawn or file written, and "
                        "refused, writing nothing, if it does not fit the budget")
    g.add_argument("--budget", default=None, metavar="E[,D]",
                   help="total budget epsilon[,delta] of a new --ledger (needed only when the file is new; if given "
                        "for an existing ledger it must equal the recorded total)")
    g.add_argument("--key-file", default=None, metavar="KEY",
                   help="key of a keyed --ledger (HMAC-SHA256 chain; created with a new ledger, kept outside its "
                        "directory): edits, rollbacks and old copies of the ledger are then refused on open")
    g.add_argument("--records-per-unit", type=int, default=None, metavar="K",
                   help="a public bound K on the records of one person: a per-record release charged to a ledger "
                        "that protects persons (its first release was made with --privacy-unit) is then charged by "
                        "group privacy, K x epsilon (and K e^((K-1) epsilon) delta); without it such a release is "
                        "refused (one privacy unit per ledger)")
    g.add_argument("--allow-large-delta", action="store_true",
                   help="release with a delta per draw above 1/n (above 0.1 where n is not public): refused "
                        "otherwise, since such a guarantee allows publishing a person's record outright")


def finite(x) -> bool:
    return x is not None and math.isfinite(x)


def _same_file(a, b) -> bool:
    """Whether two paths name the same file (resolved, or the same inode when both exist)."""
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    if pa.resolve() == pb.resolve():
        return True
    try:
        return pa.exists() and pb.exists() and pa.samefile(pb)
    except OSError:
        return False


#: the parsed arguments (dests) that name a file a command writes, and any dest ending in ``_out`` (a further
#: output, e.g. a file for the data holder): every command's outputs, guarded by :func:`check_outputs` (called
#: for every command by :func:`fdp_ppl.cli.main`)
OUTPUT_DESTS = ("out", "plot", "holder_report")
#: the parsed arguments that name a file a command reads (``data`` also under ``--data-dir``; ``offset`` when it
#: names a file; ``release`` is infer's input, ``file`` the ledger command's): never replaced, even with ``--force``
INPUT_DESTS = ("data", "release", "offset", "ledger", "file")
#: the first bytes of every SQLite file, a privacy ledger included (https://www.sqlite.org/fileformat.html)
_SQLITE_MAGIC = b"SQLite format 3\x00"


FORCE_HELP = ("replace an existing --out / --plot file (the old file stays intact until the new one is completely "
              "written; the input data and a ledger are never replaced)")


def _input_paths(a) -> list[tuple[str, Path]]:
    """The files a command reads (``--data``, also under ``--data-dir``, an ``--offset`` file, infer's release
    file) and its ledger, each with its flag: never an output."""
    paths = []
    for dest in INPUT_DESTS:
        value = getattr(a, dest, None)
        if value is None or not isinstance(value, (str, os.PathLike)):
            continue
        flag = {"release": "the release file", "file": "the ledger"}.get(dest, "--" + dest.replace("_", "-"))
        paths.append((flag, Path(os.fspath(value)).expanduser()))
        if dest == "data" and getattr(a, "data_dir", None):
            paths += [(flag, Path(a.data_dir).expanduser() / f"{value}{ext}") for ext in ("", ".nc")]
    if getattr(a, "key_file", None):  # the ledger's key and its head log
        paths += [("the ledger's key file", Path(a.key_file).expanduser()),
                  ("the ledger's key file", Path(f"{a.key_file}.heads").expanduser())]
    return paths


def _is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an existing SQLite file (a privacy ledger is one): never replaced by an output."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def check_outputs(a) -> None:
    """The one guard of every output path of every command, before any data is read or budget charged.

    Every argument of :data:`OUTPUT_DESTS` (or ending in ``_out``) that is given must lie in an existing, writable
    directory, not be a directory, differ from the other outputs, from every input (:data:`INPUT_DESTS`) and from
    the ledger, never be a SQLite file (any privacy ledger, whether or not this run uses it), and not exist unless
    ``--force``. An input or a ledger is refused even with ``--force``.

    Raises
    ------
    CLIError
        One of the above (nothing is read, drawn, charged or written).
    """
    dests = [*OUTPUT_DESTS, *sorted(d for d in vars(a) if d.endswith("_out") and d not in OUTPUT_DESTS)]
    outputs = [("--" + d.replace("_", "-"), getattr(a, d)) for d in dests if getattr(a, d, None) is not None]
    inputs = _input_paths(a)
    for flag, path in outputs:
        p = Path(os.fspath(path)).expanduser()
        if not p.resolve().parent.is_dir():
            raise CLIError(f"the directory of {flag} {path} does not exist", "create it or choose another path")
        if not os.access(p.resolve().parent, os.W_OK | os.X_OK):
            raise CLIError(f"the directory of {flag} {path} is not writable", "choose another path")
        if p.is_dir():
            raise CLIError(f"{flag} {path} is a directory", "pass a file name")
        for src_flag, src in inputs:
            if _same_file(p, src):
                what = "the ledger" if src_flag in ("--ledger", "the ledger") else "the input data"
                raise CLIError(f"{flag} {path} is {what}: writing it would destroy it",
                               f"choose another {flag} path (--force never replaces an input or a ledger)")
        if _is_sqlite(p):
            raise CLIError(f"{flag} {path} is a SQLite file (a privacy ledger?): writing it would destroy it",
                           f"choose another {flag} path (--force never replaces a ledger)")
        if p.exists() and not getattr(a, "force", False):
            raise CLIError(f"{flag} {path} already exists", "choose another path, or pass --force to replace it")
    for i, (flag, path) in enumerate(outputs):
        for other_flag, other in outputs[i + 1:]:
            if _same_file(path, other):
                raise CLIError(f"{flag} and {other_flag} name the same file", "pass two different paths")


def check_out(a) -> None:
    """Public checks of a release command's outputs and seed, before any data is read or budget charged.

    The outputs pass :func:`check_outputs` (again: :func:`fdp_ppl.cli.main` checks them first; the checks are
    cheap and idempotent); any ``--seed`` needs ``--study`` (whatever its size: a seed found or leaked gives the
    non-private summary back), and ``--study`` takes no ``--ledger``.

    Raises
    ------
    CLIError
        One of the above (nothing is read, drawn or charged).
    """
    check_outputs(a)
    seed = getattr(a, "seed", None)
    if seed is not None:
        if seed < 0:
            raise CLIError("--seed must be a non-negative integer", "omit --seed for a real release (fresh OS entropy)")
        if not getattr(a, "study", False):
            raise CLIError("--seed makes the noise reproducible by anyone who learns or guesses the seed, which then "
                           "gives the non-private summary back",
                           "omit --seed for a real release (fresh OS entropy), or pass --study for a reproducible "
                           "study that is not a release")
    if getattr(a, "study", False) and getattr(a, "ledger", None):
        raise CLIError("--study is not private and is never charged to a --ledger as private spending",
                       "drop --ledger for a study, or drop --study and --seed for a real release")


def parse_budget(text: str):
    """``E`` or ``E,D`` -> :class:`~fdp_ppl.accounting.PrivacyBudget`.

    Raises
    ------
    CLIError
        Not two numbers, or ε <= 0, δ outside [0, 1).
    """
    from ..accounting import PrivacyBudget

    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        eps = float(parts[0])
        delta = float(parts[1]) if len(parts) == 2 else 0.0
        if not (finite(eps) and eps > 0 and finite(delta) and 0 <= delta < 1):
            raise ValueError
        return PrivacyBudget(eps, delta)
    except ValueError:
        raise CLIError(f"--budget must be EPSILON or EPSILON,DELTA with epsilon > 0 and 0 <= delta < 1 "
                       f"(got {text!r})", "e.g. --budget 2 or --budget 2,1e-5") from None


def check_ledger_args(a) -> None:
    """``--budget`` needs ``--ledger``; the ledger's directory must exist; ``a.budget`` becomes a PrivacyBudget."""
    if a.budget is not None and a.ledger is None:
        raise CLIError("--budget applies to a ledger", "pass --ledger FILE too (or drop --budget)")
    if getattr(a, "key_file", None) is not None and a.ledger is None:
        raise CLIError("--key-file applies to a ledger", "pass --ledger FILE too (or drop --key-file)")
    k = getattr(a, "records_per_unit", None)
    if k is not None and (a.ledger is None or k < 1):
        raise CLIError("--records-per-unit needs --ledger and K >= 1" + (f" (got {k})" if k < 1 else ""),
                       "pass --ledger FILE with --records-per-unit K (a public bound on each person's records)")
    if a.ledger is None:
        return
    a.budget = parse_budget(a.budget) if a.budget is not None and not hasattr(a.budget, "epsilon") else a.budget
    path = Path(a.ledger).expanduser()
    if path.is_dir():
        raise CLIError(f"--ledger {a.ledger} is a directory", "pass a file name, e.g. --ledger ledger.sqlite")
    if not path.resolve().parent.is_dir():
        raise CLIError(f"the directory of --ledger {a.ledger} does not exist", "create it or choose another path")
    if a.budget is None and not path.is_file():
        raise CLIError(f"the ledger {a.ledger} does not exist yet and needs a total budget",
                       "pass --budget EPSILON[,DELTA] the first time")


def open_ledger(a, cost):
    """The :class:`~fdp_ppl.accounting.FileLedger` of ``--ledger`` (None without it), checked to fit ``cost``.

    The check here only refuses early, before the data are read; the charge
    itself is made by :func:`fdp_ppl.release` under the ledger's write lock.

    Raises
    ------
    BudgetExceededError
        ``cost`` does not fit what remains.
    InputError
        A ``--budget`` that differs from the recorded total.
    """
    if a.ledger is None:
        return None
    from ..accounting import PrivacyLedger

    ledger = PrivacyLedger.open(Path(a.ledger).expanduser(), a.budget, key_file=getattr(a, "key_file", None))
    unit = getattr(a, "unit", None)  # one privacy unit per ledger: refused here, before the data are read
    ledger.check(cost, unit="record" if unit is None else unit.column,
                 records_per_unit=getattr(a, "records_per_unit", None))
    return track_charges(ledger)


def release_flags(a) -> dict:
    """The ``fp.release`` keywords of ``--records-per-unit`` and ``--allow-large-delta``."""
    return {"records_per_unit": getattr(a, "records_per_unit", None),
            "allow_large_delta": bool(getattr(a, "allow_large_delta", False))}


class Prepaid:
    """A ledger charged by the command line *before* a data-dependent step whose failure or message would
    otherwise come free (an iterative solver that may not converge): the library's own ``spend`` is then checked
    against what was prepaid and records nothing more. Everything else is the wrapped ledger's.

    Raises
    ------
    BudgetExceededError
        At construction, when ``cost`` does not fit (nothing is charged); from ``spend``, when the library asks
        for more than was prepaid.
    """

    def __init__(self, ledger, cost, label: str = "", dataset: str = "", mechanism: str = "", event=None,
                 records_per_unit=None):
        unit = {} if records_per_unit is None else {"records_per_unit": records_per_unit}
        ledger.spend(cost, label, dataset=dataset, mechanism=mechanism, event=event, **unit)
        self._ledger, self._left = ledger, cost

    def check(self, cost) -> None:
        from ..errors import BudgetExceededError

        if not cost.fits_in(self._left):
            raise BudgetExceededError(f"the release asks for epsilon={cost.epsilon:g}, delta={cost.delta:g} but only "
                                      f"epsilon={self._left.epsilon:g}, delta={self._left.delta:g} were prepaid")

    def spend(self, cost, label: str = "", **details) -> None:
        from ..accounting.budget import _unchecked

        self.check(cost)
        self._left = _unchecked(max(self._left.epsilon - cost.epsilon, 0.0), max(self._left.delta - cost.delta, 0.0))

    def __getattr__(self, name):
        return getattr(self._ledger, name)


class _Run:
    """What this run has done that an interruption or a failed write must report: the ledger it was given, the
    charges made to it (and whether one was under way) and the files published. Reset by :func:`fdp_ppl.cli.main`
    for every command; set only by :func:`track_charges` and :func:`write_release`."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.ledger: str | None = None
        self.charges: list = []
        self.charging = False
        self.written: list[str] = []


#: the state of the current command (one command runs per process; :func:`fdp_ppl.cli.main` resets it)
RUN = _Run()


class _Tracked:
    """A ledger whose ``spend`` records in :data:`RUN` that a charge is under way and, once it returned, that it
    was made (a charge is one SQLite transaction: made or not). Everything else is the wrapped ledger's."""

    def __init__(self, ledger):
        self._ledger = ledger
        RUN.ledger = str(getattr(ledger, "path", "") or "the ledger")

    def spend(self, cost, *args, **kwargs):
        RUN.charging = True
        try:
            result = self._ledger.spend(cost, *args, **kwargs)
        except Exception:  # refused (does not fit, locked, damaged): nothing was charged
            RUN.charging = False
            raise
        RUN.charging = False
        RUN.charges.append(cost)
        return result

    def __getattr__(self, name):
        return getattr(self._ledger, name)


def track_charges(ledger):
    """``ledger`` with its charges recorded in :data:`RUN` (None stays None): what an interrupted or failed run
    reports (:func:`charged_text`)."""
    return None if ledger is None else _Tracked(ledger)


def charged_text() -> str:
    """Whether this run charged its ledger, in words: ``nothing was charged``, ``the ledger L was charged epsilon
    E`` or, when the interruption came during the charge, that it may have been."""
    if RUN.charging:
        return (f"the ledger {RUN.ledger} may have been charged (the interruption came during the charge): see "
                f"{PROG} ledger {RUN.ledger}")
    if RUN.charges:
        eps = sum(float(c.epsilon) for c in RUN.charges)
        delta = sum(float(getattr(c, "delta", 0.0)) for c in RUN.charges)
        return (f"the ledger {RUN.ledger} was charged epsilon {eps:g}" + (f", delta {delta:g}" if delta else "")
                + " for this release (a charge is never refunded)")
    if RUN.ledger:
        return f"nothing was charged to the ledger {RUN.ledger}"
    return "nothing was charged (and no --ledger records spending across runs)"


class Interrupted(BaseException):
    """SIGINT (Ctrl-C) or SIGTERM, raised by the handler :func:`fdp_ppl.cli.main` installs. Not a
    ``KeyboardInterrupt``: PyMC's samplers swallow that one and return the draws made so far, which a release
    must never publish."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = int(signum)


def interrupted_text(signum: int) -> str:
    """The one line an interrupted command prints: which signal, whether the ledger was charged and what was
    written."""
    import signal

    what = {int(signal.SIGINT): "interrupted (Ctrl-C)", int(signal.SIGTERM): "terminated (SIGTERM)"}.get(
        int(signum), f"stopped by signal {signum}")
    written = (f"; written: {', '.join(RUN.written)}" if RUN.written else
               "; nothing was written (any previous file is intact)")
    return f"{PROG}: {what}: {charged_text()}{written}"


#: the public upper bound of every count a user types (argparse ``type=int`` options, by dest; a command's own
#: entry first): checked by :func:`check_counts` before any work, stated in ``--help``. Each keeps one run's memory
#: or time bounded on one machine; the library's own size checks (memory, proposals) may refuse less.
COUNT_LIMITS = {
    "draws": 10**9,              # released draws: the library's own bound (fdp_ppl.releasing.plans.check_draws)
    "chunks": 10**8,             # records per chunk: one chunk of 10^8 records x 8 bytes per grid point in memory
    "max_contributions": 10**4,  # records kept per person: the sensitivity is K times a record's
    "records_per_unit": 10**4,
    "n": 10**12,                 # fdp-ppl plan: the public number of records (a number in the plan, no memory)
    "n_lower": 10**12,           # fdp-ppl release --n-lower: a public lower bound on n (a number, no memory)
    "grid": 10**6,               # fdp-ppl plan: points of a uniform grid (the plan's eigenbasis is grid x grid)
    "M": 10**4,                  # FRL components
    "k": 10**4,                  # release: lattice size; fpca: components (k <= m)
    "m": 10**4,                  # fpca basis functions: m x m matrices
    "frl_m": 10**4,
    "bernstein_k": 10**4,
    "grid_size": 10**6,          # grid points per axis (a KDE's or machine's grid; their memory checks come next)
    "landmarks": 1024,           # = fdp_ppl.machine.machine.MAX_LANDMARKS
    "iterations": 10**7,         # fpca Gibbs scans or NUTS steps (exact: 5e7 proposals at most, fpca_plan)
    "release_draw": 10**9 - 1,   # an index into a release's draws (at most 1e9 of them)
    "tune": 10**6,               # NUTS tuning steps per chain
    "chains": 64,                # chains (each its own process or sampler state)
    "samples": 10**7,            # audit releases per side and pair, held in memory at once
    "tests": 10**3,              # audit events counted (the Bonferroni factor)
    "timing_calls": 10**5,       # audit single timed release calls per side
}
#: a command's own bounds where its option of the same name counts something else
COMMAND_COUNT_LIMITS = {"infer": {"draws": 10**6}}  # posterior draws per chain (x chains held in memory)
#: integer options that count nothing (an identifier, not a size): no upper bound
UNBOUNDED_INTS = ("seed", "mc_seed")


def count_limit(command: str, dest: str):
    """The public upper bound of the count ``dest`` of ``command`` (None for :data:`UNBOUNDED_INTS`)."""
    if dest in UNBOUNDED_INTS:
        return None
    return COMMAND_COUNT_LIMITS.get(command, {}).get(dest, COUNT_LIMITS.get(dest))


def check_counts(a, command: str, dests) -> None:
    """Refuse, before any work, a count above its public bound (:data:`COUNT_LIMITS`).

    Parameters
    ----------
    a : argparse.Namespace
    command : str
        The command's name.
    dests : iterable of str
        Its integer options (the parser's ``type=int`` actions).

    Raises
    ------
    CLIError
        A count above its bound, with the bound named (nothing is read, drawn or charged).
    """
    for dest in dests:
        value, limit = getattr(a, dest, None), count_limit(command, dest)
        if value is None or limit is None or isinstance(value, list):
            continue
        if value > limit:
            flag = "--" + dest.replace("_", "-")
            raise CLIError(f"{flag} {value} is above the limit of {limit:,} for {PROG} {command} (a public bound on "
                           "one run's memory and time)", f"pass at most {flag} {limit}")


class RefuseAfterCharge:
    """The ledger of a run whose data must be refused (a missing value): every public check has passed, so the
    library's first charge is made in full (``cost``, the whole run's, on the wrapped ledger when there is one) and
    then the refusal is raised, before anything is fitted or drawn (DESIGN invariant 9).

    Raises
    ------
    CLIError
        From ``spend``, always (:func:`refused_after_charge`); BudgetExceededError when ``cost`` does not fit.
    """

    def __init__(self, ledger, cost, message: str, fix: str):
        self._ledger, self._cost, self._message, self._fix = ledger, cost, message, fix

    def check(self, cost) -> None:
        if self._ledger is not None:
            self._ledger.check(self._cost)

    def spend(self, cost, label: str = "", **details) -> None:
        if self._ledger is not None:
            if cost != self._cost:  # a part of the run (a private bandwidth): the whole cost, as a plain charge
                details = {k: v for k, v in details.items() if k != "event"}
            self._ledger.spend(self._cost, label, **details)
        raise refused_after_charge(self._message, self._fix, self._ledger)


def refused_after_charge(message: str, fix: str, ledger) -> CLIError:
    """The error of a data-dependent refusal, made only after every public check and the charge (DESIGN invariant
    9): it says the budget was charged (or that no ledger was given) and nothing was drawn or written."""
    charged = ("the --ledger was charged for it" if ledger is not None else
               "no --ledger was given, so nothing records it")
    return CLIError(f"data holder only: {message}; refused after the charge ({charged}; nothing was drawn or written)",
                    fix)


def write_holder_report(a, counts: dict) -> None:
    """Write the data holder's counts to ``--holder-report`` (JSON, atomically), after the charge; nothing without
    the flag. Never printed: stdout, stderr and the release hold nothing computed from the data's values.

    Raises
    ------
    CLIError
        The file cannot be written (the release itself is already written).
    """
    import json

    path = getattr(a, "holder_report", None)
    if path is None:
        return
    target = Path(path).expanduser()
    tmp = _temporary(target)
    body = {"data holder only": "counts computed from the private data: do not publish", **counts}
    try:
        tmp.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n")
        os.replace(tmp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise CLIError(f"could not write --holder-report {path}: {os_message(err)} (the release was written)",
                       "free disk space or choose another path") from None


def dataset_identity(curves) -> str:
    """Dataset name, variable and file of loaded curves: the ledger's record of what was spent on."""
    at = curves.attrs
    ident = f"{at.get('dataset', 'data')}/{at.get('variable') or curves.name or ''}".rstrip("/")
    return ident + (f" ({at['data_path']})" if at.get("data_path") else "")


def load_data(name, var=None, **kw):
    """``load_dataset`` with its messages in terms of the flags of the same name.

    Raises
    ------
    CLIError
        The data cannot be loaded (missing file or directory, unknown
        variable, NaN curves with --missing error ...).
    """
    from ..datasets import load_dataset
    from ..datasets.loaders import MissingValuesError

    try:
        return load_dataset(name, var, **kw)
    except MissingValuesError as err:
        what = f"{err.dataset!r}" + (f" variable {err.variable!r}" if err.variable else "")
        raise CLIError(f"data holder only: {what} has curves with NaN/inf values "
                       "(counts are not shown: nothing was charged yet)",
                       "pass --missing impute to set each missing point to 0 and keep every record (n stays the "
                       "number of records; --drop-incomplete was removed: it made n depend on the data)") from err
    except (ValueError, FileNotFoundError) as err:
        text = os_message(err) if isinstance(err, OSError) else str(err)
        for old, new in _LOAD_FLAGS:
            text = text.replace(old, new)
        raise CLIError(text) from err


def check_output_space(a, nbytes: float) -> None:
    """Public check before the charge: the directory of ``--out`` (and ``--plot``) has room for about ``nbytes``
    (the release's public size) plus a margin for the plot and the file's metadata.

    Raises
    ------
    CLIError
        Not enough free space: nothing is charged or drawn.
    """
    import shutil

    need = float(nbytes) + 4 * 2**20 + (2 * 2**20 if getattr(a, "plot", None) else 0)
    parent = Path(a.out).expanduser().resolve().parent
    try:
        free = shutil.disk_usage(parent).free
    except OSError:
        return
    if need > free:
        raise CLIError(f"the release needs about {need / 2**20:.3g} MiB but {parent} has {free / 2**20:.3g} MiB free",
                       "free disk space, choose another --out, or release fewer --draws")


#: the name of every temporary the atomic writer makes: ``.<target name>.<pid>-<12 hex>.tmp<target suffix>``
_TEMP_NAME = r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{12}\.tmp(?P<suffix>(\.[^./]*)?)$"


def _temporary(target: Path) -> Path:
    """A new, unused temporary name in ``target``'s directory that keeps its suffix (matplotlib reads the format
    from it): ``.<name>.<pid>-<random>.tmp<suffix>``; the pid lets a later run remove what a killed one left."""
    import secrets

    return target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp{target.suffix}")


def _claim(path: Path) -> int:
    """Create ``path`` (which must not exist) and hold an exclusive advisory lock on it until the returned
    descriptor is closed: a run still writing its temporary is seen as alive by :func:`remove_orphans` even
    across pid namespaces (a container sharing the directory), where its pid means nothing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (ImportError, OSError):
        pass  # no advisory locks here: the pid alone tells (same host)
    return fd


def _abandoned(path: Path, pid: int) -> bool:
    """Whether the temporary ``path`` of the writer ``pid`` was left by a run that is gone: its pid is no live
    process of this host *and* nobody holds its lock (:func:`_claim`)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)  # raises when no such process
        return False
    except ProcessLookupError:
        pass
    except OSError:  # alive (another user's) or unknown: keep it
        return False
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while a live writer holds it
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_orphans(directory) -> list[Path]:
    """Remove the temporaries that runs killed while writing left in ``directory``, whatever file they were
    writing: only files named like the atomic writer's own (:data:`_TEMP_NAME`), only when their writer is gone
    (:func:`_abandoned`); a live concurrent writer's temporary is kept. Returns what was removed.

    Called by :func:`write_release` for every directory it writes to, so the next run in a directory removes
    what a killed run left there (a SIGKILL runs no cleanup: 48–411 MB each in the fault tests).
    """
    import re

    pattern = re.compile(_TEMP_NAME)
    removed = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for path in entries:
        match = pattern.match(path.name)
        if match is None or not match.group("name").endswith(match.group("suffix")):
            continue
        try:
            if not path.is_file() or path.is_symlink():
                continue
        except OSError:
            continue
        if _abandoned(path, int(match.group("pid"))):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _netcdf_bytes(tree):
    """``tree`` serialised as netCDF in memory, never by HDF5 onto the disk (HDF5 writing onto a device that
    fills mid-write crashes the process: exit 139 after the error line, measured on a full tmpfs). The dask
    scheduler is the synchronous one for the serialisation, so that inside a ``dask.distributed`` client
    (``--chunks``) xarray takes a local lock instead of a distributed one (which the scheduler does not know:
    two ``distributed`` ERROR tracebacks on every out-of-core release)."""
    if "dask" in sys.modules:
        import dask

        with dask.config.set(scheduler="synchronous"):
            return tree.to_netcdf()
    return tree.to_netcdf()


def write_release(tree, out, plot=None, draw_plot=None, *, charged: bool = True) -> Path:
    """Write ``tree`` to ``out`` (netCDF) and, when ``plot`` is given, ``draw_plot(tree, path)``; returns ``out``.

    Atomic: each file is written to a temporary name in its target directory (held under an advisory lock),
    flushed to disk (fsync) and renamed into place (``os.replace``) only once every output is complete, so a
    failure, a full disk or a kill leaves no half-written file and any previous file intact; the outputs are
    published together. The netCDF file is serialised in memory and written with plain file I/O
    (:func:`_netcdf_bytes`). Temporaries that killed runs left in the target directories are removed first
    (:func:`remove_orphans`). ``charged=False`` for outputs that cost no privacy (inference, audits): the
    failure message says so instead of naming a spent budget.

    Raises
    ------
    CLIError
        A file cannot be written (the temporary files are removed; nothing is published).
    """
    out = Path(out).expanduser()
    targets = [out] + ([Path(plot).expanduser()] if plot else [])
    for d in {t.resolve().parent for t in targets}:
        remove_orphans(d)
    temps, fds = [], []
    try:
        for t in targets:
            temps.append(_temporary(t))
            fds.append(_claim(temps[-1]))
        with stage(f"writing {out}"):
            payload = _netcdf_bytes(tree)
            view = memoryview(payload)
            while view:  # plain writes: a full disk raises OSError (ENOSPC) here, nothing else
                view = view[os.write(fds[0], view):]
            os.fsync(fds[0])
        if plot:
            with stage(f"plotting {plot}"):
                draw_plot(tree, temps[1])
                _fsync(temps[1])
        for tmp, target in zip(temps, targets):
            os.replace(tmp, target)
        RUN.written += [str(t) for t in targets]
        for d in {t.resolve().parent for t in targets}:
            with contextlib.suppress(OSError):
                _fsync(d)
    except BaseException as err:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(err, (OSError, RuntimeError, ValueError)):
            reason = (err.strerror or os_message(err)) if isinstance(err, OSError) else one_line(err)
            after = (charged_text() if charged else
                     "and nothing was charged (it costs no privacy): run it again")
            raise CLIError(f"could not write {out}" + (f" and {plot}" if plot else "") + f": {reason}; nothing was "
                           f"written (any previous file is intact), {after}",
                           "free disk space or choose another path") from None
        raise
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
    return out


def print_table(title: str, rows) -> None:
    """The public table every command prints: ``fdp-ppl <title>`` then one aligned ``name  value`` row each."""
    w = max(len(k) for k, _ in rows)
    print(f"{PROG} {title}".rstrip())
    for k, v in rows:
        print(f"  {k:<{w}}  {v}")


def save_plot(plot_name: str, tree, path, **kwargs) -> None:
    """Draw ``fdp_ppl.plots.<plot_name>(tree, **kwargs)`` off-screen and save it as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .. import plots

    fig, _ = getattr(plots, plot_name)(tree, **kwargs)
    fig.savefig(Path(path).expanduser(), dpi=150)
    plt.close(fig)


def plotter(plot_name: str, **kwargs):
    """A ``draw_plot(tree, path)`` for :func:`write_release` that saves ``fdp_ppl.plots.<plot_name>(tree, **kwargs)``."""
    return lambda tree, path: save_plot(plot_name, tree, path, **kwargs)


def unit_text(attrs) -> str:
    """The ``privacy unit`` row of every command's table, from a release's public attrs."""
    unit = attrs.get("privacy_unit", "record")
    if int(attrs.get("n_private", 0) or 0):
        return (("one record" if unit == "record" else f"one {unit} ({attrs.get('contribution_rule', '')})")
                + f"; add/remove: membership protected, n private (public lower bound n_lower = "
                  f"{attrs.get('n_lower')})")
    if unit == "record":
        return ("one record (a person with several records is protected only at their number times epsilon); "
                "replace-one record, n public: presence in the data is not protected")
    return (f"one {unit}: {attrs.get('contribution_rule', '')}; replace-one {unit} (all its records), n public: "
            "presence in the data is not protected")


def ledger_text(ledger, attrs) -> str:
    """The ``ledger`` row of every command's table: what this release was charged (root ``attrs``: ``draws``,
    ``epsilon``, ``delta``, ``budget_spent_epsilon``, ``budget_spent_delta``), what the ledger has spent of its
    total and what remains; or that nothing is recorded across runs."""
    if ledger is None:
        return ("none: this spending is not recorded across runs (pass --ledger FILE --budget EPSILON[,DELTA] to "
                "keep the total and refuse overspending)")
    draws, eps, delta = int(attrs.get("draws", 1)), float(attrs["epsilon"]), float(attrs.get("delta", 0.0))
    spent, total, rem = ledger.spent, ledger.total, ledger.remaining
    with_delta = total.delta > 0 or delta > 0
    extra = float(attrs.get("bandwidth_epsilon", 0.0) or 0.0)
    group = ""
    if "ledger_charged_epsilon" in attrs:  # a per-record release on a per-person ledger: group privacy
        group = (f", charged to the ledger as epsilon {float(attrs['ledger_charged_epsilon']):g}"
                 + (f", delta {float(attrs['ledger_charged_delta']):.3g}" if delta > 0 else "")
                 + f" by {attrs.get('ledger_charge_rule', 'group privacy')}")
    unit = attrs.get("ledger_privacy_unit")
    uncertified = ""
    if int(attrs.get("ledger_uncertified_releases", 0) or 0):
        uncertified = (f"; of which {int(attrs['ledger_uncertified_releases'])} uncertified release(s), epsilon "
                       f"{float(attrs['ledger_uncertified_epsilon']):g} with no proved guarantee (guaranteed: epsilon "
                       f"{float(attrs['ledger_guaranteed_epsilon']):g})")
    return (f"{ledger.path}" + (f" (protects each {unit})" if unit and unit != "record" else "")
            + f": charged {draws} × epsilon {eps:g}"
            + (f" + {extra:g} (private bandwidth)" if extra else "")
            + f" = {float(attrs['budget_spent_epsilon']):g}"
            + (f", delta {float(attrs.get('budget_spent_delta', 0.0)):g}" if delta > 0 else "") + group
            + f"; spent epsilon {spent.epsilon:g} of {total.epsilon:g}"
            + (f", delta {spent.delta:g} of {total.delta:g}" if with_delta else "") + uncertified
            + f"; remaining epsilon {rem.epsilon:g}" + (f", delta {rem.delta:g}" if with_delta else "")
            + (f"; head after the charge {attrs['ledger_entries']}:{attrs['ledger_head']} (keep it: fdp-ppl ledger "
               "--verify checks it)" if "ledger_head" in attrs else ""))


__all__ = ["CLIError", "in_flags", "Prepaid", "RefuseAfterCharge", "refused_after_charge", "write_holder_report",
           "check_outputs", "check_counts", "remove_orphans", "Interrupted", "interrupted_text", "charged_text",
           "track_charges", "COUNT_LIMITS", "write_release", "print_table", "save_plot", "plotter",
           "check_output_space", "check_out", "open_ledger", "release_flags", "load_data", "seed_text", "study_rows",
           "unit_text", "ledger_text", "warn_large_epsilon",
           "warn_record_level", "add_unit_args", "add_output_args", "add_ledger_args", "add_out_of_core_args",
           "add_dry_run_args"]
