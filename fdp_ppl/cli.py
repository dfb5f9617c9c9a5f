"""``fdp-ppl`` command line: private releases of mean curves from files or bundled data.

Commands
--------
``fdp-ppl release``
    Load curves (a bundled dataset name or a netCDF path), fit a public
    summary spec clipped at a public τ, release it with one mechanism of
    :data:`fdp_ppl.registry.MECHANISMS`, write the release
    (``xarray.DataTree`` as netCDF, layout :mod:`fdp_ppl.schema`) and
    optionally a PNG, and print a table of the public parameters.
``fdp-ppl demo``
    The end-to-end example on the bundled Berkeley growth curves.
``fdp-ppl ledger FILE``
    The total, every charge and what remains of a persistent privacy ledger.

The mechanism choices, which flags each mechanism takes (δ, ``--nu``,
``--calibration``, ``--eta``/``--psi``, ``--M``, ``--k``), the kernels and the
labels all come from :mod:`fdp_ppl.registry`; the summary is
``entry.spec(basis_or_grid, tau=, n=, **options).fit(curves)`` and the
mechanism ``entry.mechanism(epsilon, delta, **options)``.

Bad input ends with one line ``fdp-ppl: error: ...`` on stderr naming the fix
and exit code 2 (argparse's own usage errors also exit with 2). Library errors
(:class:`fdp_ppl.errors.FdpPplError`: message ``; `` fix) are printed
unchanged; the command line adds its own checks only where a flag is meant.

Privacy notes
-------------
Everything written to the output file is public: released draws, the public
basis and noise scales, and the parameters. The public table goes to stdout.
The number of curves clipped at τ (with a warning when more than half were:
τ is then far too small for the data) and the number of imputed points are
printed for the data holder only, on stderr, and never written to the file.
A public reference curve subtracted before clipping (the demo's growth
reference) is fixed in advance from published growth charts, not computed
from the data, and adding it back to the release is post-processing.

* **Privacy unit.** n is the size of the record dimension, which comes from
  names (``--record-dim NAME``, else the dim named ``curve``, else the other
  dim of the grid dim ``--t-dim`` or ``t``), never from position: a file
  whose dims say neither is refused.

* **Noise entropy.** Without ``--seed`` the noise comes from fresh OS entropy
  (``noise_seeded = 0``). A seeded release (``noise_seeded = 1``) can be
  regenerated and subtracted by anyone who learns the seed: it is private only
  while the seed stays secret.
* **Missing values.** n is the number of records and is public.
  ``--missing error`` (default) stops before anything is drawn;
  ``--missing impute`` sets each missing point to 0 (the record contributes 0
  there) and keeps every record, so every public parameter is the same for a
  record with a missing value and for its complete neighbour. The rule is the
  release's ``missing_rule``. There is no ``--drop-incomplete``: the count of
  complete curves would become n (and ψ, the sensitivity and the noise scales
  with it), a count that depends on the data; and requiring a public n to pad
  or truncate to would only be a cruder imputation (whole records instead of
  points).
* **Budget across runs.** ``--ledger FILE --budget E[,D]`` charges every
  release to a persistent ledger (SQLite, shared by concurrent runs) before
  any noise is drawn or file written; a release that does not fit is refused
  and writes nothing. ``--draws N`` is charged N × (ε, δ).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sqlite3
import sys
import warnings
from pathlib import Path


from . import dims
from ._names import BERNSTEIN_DEFAULT_K
from ._progress import stage
from .datasets.references import (CDC2000_MEDIAN_HEIGHT_CM, GROWTH_DEVIATION_TAU, GROWTH_RAW_TAU,
                                  GROWTH_REFERENCE_SOURCE, growth_reference)
from .errors import FdpPplError, SeededReleaseWarning

PROG = "fdp-ppl"


class _Lazy:
    """A module imported on first attribute access: ``fdp-ppl --version`` needs no mechanism, so the
    registry (and PyMC, which the mechanisms import) load only when a command uses them."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


registry = _Lazy("fdp_ppl.registry")
np = _Lazy("numpy")  # numpy alone takes about 0.2 s to import: --help and --version do without it


def __getattr__(name):  # MECHANISMS: command-line names of the mechanisms (``--mechanism``), from the registry
    if name == "MECHANISMS":
        return tuple(registry.MECHANISMS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

DEFAULT_KERNEL = "matern32"
DEFAULT_RHO = 0.1

#: ``--calibration`` values (which ones a mechanism knows is the library's business) and, for the
#: calibrations valid only for ε <= 1 (classical Gaussian bound), the one to use above 1
_CALIBRATIONS = {"classical": "analytic", "analytic": None, "exact": None, "theorem5": "exact"}

#: registry option name -> flag
_FLAGS = {"nu": "--nu", "calibration": "--calibration", "eta": "--eta", "psi": "--psi", "M": "--M", "k": "--k"}

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


# --------------------------------------------------------------------------- errors
class CLIError(FdpPplError, ValueError):
    """Bad command-line input: a message and the fix, both in terms of flags."""


def _one_line(msg) -> str:
    return " ".join(str(msg).split())


def _fail(msg) -> int:
    print(f"{PROG}: error: {_one_line(msg)}", file=sys.stderr)
    return 2


def _os_message(err: OSError) -> str:
    msg = err.args[-1] if err.args else str(err)
    fname = getattr(err, "filename", None)
    return f"{msg}: {fname}" if fname and str(fname) not in str(msg) else str(msg)


# --------------------------------------------------------------------------- registry helpers
def _users(option: str) -> list[str]:
    """Mechanisms whose registry entry takes ``option`` (a mechanism or a summary option)."""
    return [name for name, e in registry.MECHANISMS.items() if option in (*e.options, *e.summary_options)]


def _option_default(entry: registry.MechanismEntry, option: str):
    """Default of a mechanism option of a registry entry."""
    return entry.option_defaults.get(option)


def _uses_eigenbasis(entry: registry.MechanismEntry) -> bool:
    from .summaries import EigenSpec

    return issubclass(entry.spec_class, EigenSpec)


def _mechanism_epilog() -> str:
    w = max(len(n) for n in registry.MECHANISMS)
    lines = ["mechanisms (--mechanism):"]
    for name, e in registry.MECHANISMS.items():
        dp = "(eps, delta)-DP" if e.approximate else "eps-DP"
        flags = " ".join(_FLAGS[o] for o in (*e.options, *e.summary_options))
        lines.append(f"  {name:<{w}}  {dp:<15} {e.description}" + (f" [{flags}]" if flags else ""))
    return "\n".join(lines)


# --------------------------------------------------------------------------- parser
def _add_output_args(p, default_out=None):
    p.add_argument("--out", default=default_out, required=default_out is None, metavar="PATH",
                   help="netCDF file for the release (xarray DataTree)" + (f"; default {default_out}" if default_out else ""))
    p.add_argument("--plot", default=None, metavar="PNG", help="also write a PNG of the release")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out / --plot file (the old file stays intact until the new one is "
                        "completely written; the input data and the ledger are never replaced)")
    p.add_argument("--study", action="store_true",
                   help="this run is a reproducible study, not a real release: allows a --seed below 2^32 (which "
                        "anyone can find by search from the file alone)")


#: the smallest --seed accepted for a release written to a file without --study: seeds below 2^32 are found by
#: exhaustive search from the released file alone (seeds 0..19,999 took 4 s)
MIN_RELEASE_SEED = 2**32

_SEED_HELP = ("seed the noise (tests and reproducible studies only): anyone who learns or guesses the seed can "
              "regenerate the noise and subtract it, so a seeded release is private only while the seed stays "
              "secret and unguessable; seeds below 2^32 need --study; the seed is never printed; default: fresh OS "
              "entropy")

#: the ``noise seed`` row of every command's table (the seed itself is never printed)
SEEDED_TEXT = "seeded (not private if the seed is known or guessable)"
UNSEEDED_TEXT = "fresh OS entropy (not seeded)"


def seed_text(seeded) -> str:
    """The ``noise seed`` row of every command's table: whether the noise was seeded, never the seed."""
    return SEEDED_TEXT if seeded else UNSEEDED_TEXT


def add_unit_args(g) -> None:
    """``--privacy-unit``, ``--combine``, ``--max-contributions``, ``--unit-order`` (:mod:`fdp_ppl.units`)."""
    g.add_argument("--privacy-unit", default=None, metavar="COLUMN",
                   help="coordinate (or the table's id column) naming the person a record belongs to: the guarantee "
                        "is then per person, and n is the number of persons; needs --combine mean or "
                        "--max-contributions K")
    g.add_argument("--combine", choices=("mean",), default=None,
                   help="with --privacy-unit: average each person's records into one before clipping (every person "
                        "weighs the same)")
    g.add_argument("--max-contributions", type=int, default=None, metavar="K",
                   help="with --privacy-unit: keep each person's first K records (file order, or --unit-order), pad "
                        "to K with the public centre; the sensitivity is K times a record's")
    g.add_argument("--unit-order", default=None, metavar="COORD",
                   help="with --max-contributions: the per-record coordinate whose order decides which records are "
                        "kept (e.g. visit); default: the order of the file")


def _check_unit_args(a):
    """The :class:`~fdp_ppl.units.PrivacyUnit` of the flags (None without ``--privacy-unit``).

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
    from .units import PrivacyUnit

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
    """One stderr line, no counts, when an id-like coordinate repeats and no ``--privacy-unit`` was given."""
    from .units import repeated_id_coordinates

    names = repeated_id_coordinates(records)
    if names:
        print(f"{PROG}: warning: data holder only: {names[0]!r} repeats across records, so this guarantee is per "
              f"record, not per person; pass --privacy-unit {names[0]} with --combine mean or --max-contributions K",
              file=sys.stderr)


def _add_ledger_args(p):
    g = p.add_argument_group("privacy budget")
    g.add_argument("--ledger", default=None, metavar="FILE",
                   help="persistent privacy ledger (SQLite; created if missing, shared by concurrent runs): the "
                        "release is charged draws × (epsilon, delta) before any noise is drawn or file written, and "
                        "refused, writing nothing, if it does not fit the budget")
    g.add_argument("--budget", default=None, metavar="E[,D]",
                   help="total budget epsilon[,delta] of a new --ledger (needed only when the file is new; if given "
                        "for an existing ledger it must equal the recorded total)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Differentially private releases of functional data (mean curves).")
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}",
                        help="print the package version and exit")
    names = ["release", "demo", "ledger", *(n for n, _ in _SUBCOMMANDS)]
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(names) + "}")
    sub.required = True

    r = sub.add_parser("release", help="release a private mean curve of a dataset",
                       description="Release a differentially private mean curve.", epilog=_mechanism_epilog(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    g = r.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="PATH_OR_NAME",
                   help="bundled dataset name (growth, weather, dti, electricity) or the path of a NetCDF file or "
                        "Zarr store with one 2-D variable of curves (records x grid), or of a CSV / Parquet table "
                        "(wide: one row per record, grid points as column headers, ids in the first column; long: "
                        "columns id, t, value)")
    g.add_argument("--var", default=None, help="variable to use (e.g. cca for dti, demand for electricity)")
    g.add_argument("--data-dir", default=None, metavar="DIR",
                   help="directory with the data files (default: $FDP_PPL_DATA_DIR or the datasets shipped with the package)")
    g.add_argument("--missing", choices=("error", "impute"), default="error",
                   help="missing (NaN/inf) values: error (default) stops before anything is drawn; impute sets each "
                        "missing point to 0 (the record contributes 0 there) and keeps every record, so n stays the "
                        "number of records and no public parameter depends on which values are missing (the rule "
                        "is written to the release as missing_rule; the counts only to the terminal). Choose it "
                        "before looking at the data. There is no --drop-incomplete: it made the count of complete "
                        "curves the public n, so a record with a missing value and its complete neighbour got "
                        "different n, psi, sensitivity and noise scales; padding or truncating to a declared n would "
                        "only be a cruder imputation")
    g.add_argument("--drop-incomplete", action="store_true", help=argparse.SUPPRESS)  # removed: explained if used
    g.add_argument("--record-dim", "--curve-dim", dest="record_dim", default=None, metavar="NAME",
                   help="name of the record dimension of the variable in the file: the privacy unit, n is its size "
                        "(default: the dim named curve, else the other dim of the grid dim; a file whose dims say "
                        "neither is refused, never read by position; --curve-dim is an alias)")
    g.add_argument("--t-dim", default=None, metavar="NAME",
                   help="name of the grid dimension of the variable in the file (default: the other dim)")
    add_unit_args(g)
    g.add_argument("--chunks", type=int, default=None, metavar="N",
                   help="read the data lazily, N records per chunk, and reduce it chunk by chunk on a dask cluster "
                        "(curves larger than memory; a Zarr store is always read this way; needs "
                        "pip install 'fdp-ppl[dask]'); n is the length of the record dim in the file's metadata")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a dask.distributed scheduler (tcp://host:8786) for --chunks; default: a local "
                        "cluster of 2 worker processes")
    m = r.add_argument_group("mechanism")
    m.add_argument("--mechanism", required=True, choices=tuple(registry.MECHANISMS),
                   help="the mechanism (listed below); " + ", ".join(n for n, e in registry.MECHANISMS.items()
                                                                      if e.approximate) + " are (ε, δ)-DP")
    m.add_argument("--epsilon", required=True, type=float, help="privacy parameter ε > 0 per draw")
    m.add_argument("--delta", type=float, default=None,
                   help="δ in (0, 1); required by the (ε, δ) mechanisms, refused by the others")
    m.add_argument("--nu", type=float, default=None,
                   help=f"degrees of freedom ν > 0 of the t law ({', '.join(_users('nu'))}; required there)")
    m.add_argument("--calibration", choices=tuple(_CALIBRATIONS), default=None,
                   help="noise calibration: analytic (default, exact for any ε) or classical (the papers', ε <= 1) for "
                        "gaussian and rkhs-gaussian; "
                        "exact (default) or theorem5 (ε <= 1) for t-process and laplace-process")
    m.add_argument("--bound", choices=("tight", "paper"), default="tight",
                   help="sensitivity bound calibrating the noise (default tight)")
    m.add_argument("--draws", type=int, default=1,
                   help="number of independent releases; N draws spend N × ε (default 1)")
    m.add_argument("--seed", type=int, default=None, help=_SEED_HELP)
    s = r.add_argument_group("summary")
    s.add_argument("--tau", required=True, type=float,
                   help="public bound on each curve's L² norm on the rescaled domain [0, 1]; curves are clipped to "
                        "it. For --mechanism bernstein: the sup-norm bound τ_∞ on |X(t)| (curves are clipped "
                        "pointwise to [-τ_∞, τ_∞])")
    s.add_argument("--kernel", default=None, metavar="NAME",
                   help=f"noise kernel, one of {', '.join(registry.KERNELS)} (gaussian: exp(-d²/ρ), gaussian-hall: "
                        f"exp(-d²/(2ρ²))); default {DEFAULT_KERNEL}; not for bernstein")
    s.add_argument("--rho", type=float, default=None,
                   help=f"kernel length scale on [0, 1] (default {DEFAULT_RHO:g}); not for bernstein")
    s.add_argument("--offset", default=None, metavar="VALUE|FILE",
                   help="a PUBLIC centre subtracted from every curve before clipping and added back to the release "
                        "(the summaries shrink toward it, not toward 0): a number in the data's units, or a file "
                        "with one public curve on the data's grid (NetCDF: one 1-D variable; CSV: columns t, value). "
                        "Never compute it from these data (e.g. a published reference chart or a known typical "
                        "value)")
    s.add_argument("--eta", type=float, default=None, help="penalty power η (default: privacy-safe selection)")
    s.add_argument("--psi", type=float, default=None, help="penalty weight ψ (default 1/n)")
    s.add_argument("--M", type=int, default=None, help="number of components for frl (default floor(n^(1/3)))")
    s.add_argument("--k", type=int, default=None,
                   help=f"Bernstein lattice size k (k + 1 lattice points) for bernstein "
                        f"(default {BERNSTEIN_DEFAULT_K})")
    _add_output_args(r)
    _add_ledger_args(r)

    d = sub.add_parser("demo", help="private mean growth curve of the Berkeley growth study",
                       description="ICLP-QR release (ε = 1, Matérn 3/2, ρ = 0.1) of the mean height curve of "
                                   "the 93 Berkeley growth-study children, around a public growth reference.")
    _add_output_args(d, default_out="release.nc")
    d.add_argument("--seed", type=int, default=None, help=_SEED_HELP)
    d.add_argument("--raw", action="store_true",
                   help=f"no public reference: clip raw heights at tau = {GROWTH_RAW_TAU:g} cm (much noisier)")
    d.add_argument("--show-nonprivate", action="store_true",
                   help="draw the non-private estimate in the PNG (data holder only: do not publish that PNG)")
    d.add_argument("--data-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)
    _add_ledger_args(d)

    lg = sub.add_parser("ledger", help="show what a privacy ledger has spent and what remains",
                        description="Print the total budget of a ledger written by --ledger, what it has spent by "
                                    "basic composition (the sum) and by tight composition (privacy-loss "
                                    "distributions, dp-accounting), one row per charge (time, dataset, mechanism, "
                                    "noise, epsilon, delta, label) and what remains. The file is validated first "
                                    "(schema, numbers, hash chain): an edited or damaged ledger is refused.")
    lg.add_argument("file", metavar="FILE", help="the ledger file")
    lg.add_argument("--verify", action="store_true",
                    help="only validate the file and print its entry count and head hash (keep them: a copy of the "
                         "head detects a ledger rewritten as a whole)")
    _add_extra_subparsers(sub)
    return parser


# --------------------------------------------------------------------------- validation
def _finite(x) -> bool:
    return x is not None and math.isfinite(x)


def _check_args(a):
    """Check the flags and build the mechanism (before any data is read).

    Returns
    -------
    Mechanism
        ``entry.mechanism(epsilon, delta, **options)``.

    Raises
    ------
    CLIError
        A flag out of range or one that does not apply to the mechanism.
    FdpPplError
        The library refuses the mechanism's parameters (printed unchanged).
    """
    entry = registry.MECHANISMS[a.mechanism]
    if getattr(a, "drop_incomplete", False):
        raise CLIError("--drop-incomplete was removed: the count of complete curves became the public n, so a record "
                       "with a missing value and its complete neighbour got different n, psi, sensitivity and noise "
                       "scales", "pass --missing impute (each missing point set to 0, every record kept)")
    if not (_finite(a.epsilon) and a.epsilon > 0):
        raise CLIError(f"--epsilon must be a finite number > 0 (got {a.epsilon})", "pass e.g. --epsilon 1")
    if not (_finite(a.tau) and a.tau > 0):
        what = "sup-norm bound on |X(t)|" if not _uses_eigenbasis(entry) else "bound on the curves' L2 norm"
        raise CLIError(f"--tau must be a finite number > 0 (got {a.tau})",
                       f"pass a public {what}, e.g. --tau 1 for curves with values in [-1, 1]")
    if a.rho is not None and not (_finite(a.rho) and a.rho > 0):
        raise CLIError(f"--rho must be > 0 (got {a.rho})", "e.g. --rho 0.1")
    if a.draws < 1:
        raise CLIError(f"--draws must be >= 1 (got {a.draws})")
    if entry.approximate:
        if a.delta is None:
            raise CLIError(f"--mechanism {a.mechanism} is (epsilon, delta)-DP and needs --delta", "e.g. --delta 1e-5")
        if not (_finite(a.delta) and 0 < a.delta < 1):
            raise CLIError(f"--delta must lie strictly between 0 and 1 (got {a.delta})", "pass e.g. --delta 1e-5")
    elif a.delta is not None:
        approx = ", ".join(n for n, e in registry.MECHANISMS.items() if e.approximate)
        raise CLIError(f"--mechanism {a.mechanism} is pure epsilon-DP and takes no --delta",
                       f"drop --delta or use an (epsilon, delta) mechanism ({approx})")
    accepted = (*entry.options, *entry.summary_options)
    for opt, flag in _FLAGS.items():
        if getattr(a, opt, None) is not None and opt not in accepted:
            raise CLIError(f"{flag} applies only to --mechanism {', '.join(_users(opt))}, not to {a.mechanism}",
                           f"drop {flag}")
    if not _uses_eigenbasis(entry) and (a.kernel is not None or a.rho is not None):
        raise CLIError(f"--kernel/--rho do not apply to --mechanism {a.mechanism} (a polynomial basis on a lattice, "
                       "no kernel)", "drop them; --k sets the lattice size")
    if a.kernel is not None and a.kernel not in registry.KERNELS:
        raise CLIError(f"unknown kernel {a.kernel!r}", f"choose --kernel from {', '.join(registry.KERNELS)}")
    if "calibration" in entry.options:
        cal = a.calibration or _option_default(entry, "calibration")
        alternative = _CALIBRATIONS.get(cal)
        if alternative and a.epsilon > 1:
            raise CLIError(f"the {cal} calibration of --mechanism {a.mechanism} is valid only for epsilon <= 1 "
                           f"(got {a.epsilon:g})", f"pass --calibration {alternative} or a smaller --epsilon")
    a.unit = _check_unit_args(a)
    _check_out(a)
    _check_ledger_args(a)
    warn_large_epsilon(a.epsilon)
    return entry.mechanism(a.epsilon, a.delta, **{o: getattr(a, o) for o in entry.options})


def _same_file(a, b) -> bool:
    """Whether two paths name the same file (resolved, or the same inode when both exist)."""
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    if pa.resolve() == pb.resolve():
        return True
    try:
        return pa.exists() and pb.exists() and pa.samefile(pb)
    except OSError:
        return False


def _input_paths(a) -> list[Path]:
    """The files a command reads (``--data``, also under ``--data-dir``) and its ledger: never an output."""
    paths = []
    data = getattr(a, "data", None)
    if data is not None:
        paths.append(Path(str(data)).expanduser())
        data_dir = getattr(a, "data_dir", None)
        if data_dir:
            paths += [Path(data_dir).expanduser() / f"{data}{ext}" for ext in ("", ".nc")]
    if getattr(a, "ledger", None):
        paths.append(Path(a.ledger).expanduser())
    return paths


def _check_out(a) -> None:
    """Public checks of the outputs, before any data is read or budget charged.

    ``--out`` and ``--plot`` must lie in existing directories, differ from each other, from the input data and
    from the ledger, and not exist unless ``--force``; a ``--seed`` below :data:`MIN_RELEASE_SEED` needs
    ``--study`` (the file is written either way, and a small seed is found from it by search).

    Raises
    ------
    CLIError
        One of the above (nothing is read, drawn or charged).
    """
    outputs = [(flag, path) for flag, path in (("--out", a.out), ("--plot", getattr(a, "plot", None)))
               if path is not None]
    for flag, path in outputs:
        p = Path(path).expanduser()
        if not p.resolve().parent.is_dir():
            raise CLIError(f"the directory of {flag} {path} does not exist", "create it or choose another path")
        if not os.access(p.resolve().parent, os.W_OK | os.X_OK):
            raise CLIError(f"the directory of {flag} {path} is not writable", "choose another path")
        if p.is_dir():
            raise CLIError(f"{flag} {path} is a directory", "pass a file name")
        for src in _input_paths(a):
            if _same_file(p, src):
                what = "the ledger" if getattr(a, "ledger", None) and _same_file(src, a.ledger) else "the input data"
                raise CLIError(f"{flag} {path} is {what}: writing it would destroy it",
                               f"choose another {flag} path")
        if p.exists() and not getattr(a, "force", False):
            raise CLIError(f"{flag} {path} already exists", f"choose another path, or pass --force to replace it")
    if len(outputs) == 2 and _same_file(outputs[0][1], outputs[1][1]):
        raise CLIError("--out and --plot name the same file", "pass two different paths")
    seed = getattr(a, "seed", None)
    if seed is not None:
        if seed < 0:
            raise CLIError("--seed must be a non-negative integer", "omit --seed for a real release (fresh OS entropy)")
        if seed < MIN_RELEASE_SEED and not getattr(a, "study", False):
            raise CLIError("--seed is below 2^32: a seed that small is found by exhaustive search from the released "
                           "file alone, which then gives the non-private summary back",
                           "omit --seed for a real release (fresh OS entropy), or pass --study for a reproducible "
                           "study that is not a release")


def _parse_budget(text: str):
    """``E`` or ``E,D`` -> :class:`~fdp_ppl.accounting.PrivacyBudget`.

    Raises
    ------
    CLIError
        Not two numbers, or ε <= 0, δ outside [0, 1).
    """
    from .accounting import PrivacyBudget

    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        eps = float(parts[0])
        delta = float(parts[1]) if len(parts) == 2 else 0.0
        if not (_finite(eps) and eps > 0 and _finite(delta) and 0 <= delta < 1):
            raise ValueError
        return PrivacyBudget(eps, delta)
    except ValueError:
        raise CLIError(f"--budget must be EPSILON or EPSILON,DELTA with epsilon > 0 and 0 <= delta < 1 "
                       f"(got {text!r})", "e.g. --budget 2 or --budget 2,1e-5") from None


def _check_ledger_args(a) -> None:
    """``--budget`` needs ``--ledger``; the ledger's directory must exist; ``a.budget`` becomes a PrivacyBudget."""
    if a.budget is not None and a.ledger is None:
        raise CLIError("--budget applies to a ledger", "pass --ledger FILE too (or drop --budget)")
    if a.ledger is None:
        return
    a.budget = _parse_budget(a.budget) if a.budget is not None and not hasattr(a.budget, "epsilon") else a.budget
    path = Path(a.ledger).expanduser()
    if path.is_dir():
        raise CLIError(f"--ledger {a.ledger} is a directory", "pass a file name, e.g. --ledger ledger.sqlite")
    if not path.resolve().parent.is_dir():
        raise CLIError(f"the directory of --ledger {a.ledger} does not exist", "create it or choose another path")
    if a.budget is None and not path.is_file():
        raise CLIError(f"the ledger {a.ledger} does not exist yet and needs a total budget",
                       "pass --budget EPSILON[,DELTA] the first time")


def _open_ledger(a, cost):
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
    from .accounting import PrivacyLedger

    ledger = PrivacyLedger.open(Path(a.ledger).expanduser(), a.budget)
    ledger.check(cost)
    return ledger


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

    def __init__(self, ledger, cost, label: str = "", dataset: str = "", mechanism: str = ""):
        ledger.spend(cost, label, dataset=dataset, mechanism=mechanism)
        self._ledger, self._left = ledger, cost

    def check(self, cost) -> None:
        from .errors import BudgetExceededError

        if not cost.fits_in(self._left):
            raise BudgetExceededError(f"the release asks for epsilon={cost.epsilon:g}, delta={cost.delta:g} but only "
                                      f"epsilon={self._left.epsilon:g}, delta={self._left.delta:g} were prepaid")

    def spend(self, cost, label: str = "", **details) -> None:
        from .accounting.budget import _unchecked

        self.check(cost)
        self._left = _unchecked(max(self._left.epsilon - cost.epsilon, 0.0), max(self._left.delta - cost.delta, 0.0))

    def __getattr__(self, name):
        return getattr(self._ledger, name)


def _dataset_identity(curves) -> str:
    """Dataset name, variable and file of loaded curves: the ledger's record of what was spent on."""
    at = curves.attrs
    ident = f"{at.get('dataset', 'data')}/{at.get('variable') or curves.name or ''}".rstrip("/")
    return ident + (f" ({at['data_path']})" if at.get("data_path") else "")


def _load(name, var=None, **kw):
    """``load_dataset`` with its messages in terms of the flags of the same name.

    Raises
    ------
    CLIError
        The data cannot be loaded (missing file or directory, unknown
        variable, NaN curves with --missing error ...).
    """
    from .datasets import load_dataset
    from .datasets.loaders import MissingValuesError

    try:
        return load_dataset(name, var, **kw)
    except MissingValuesError as err:
        raise CLIError(f"data holder only: {err.dataset!r} variable {err.variable!r} has curves with NaN/inf values "
                       "(counts are not shown: nothing was charged yet)",
                       "pass --missing impute to set each missing point to 0 and keep every record (n stays the "
                       "number of records; --drop-incomplete was removed: it made n depend on the data)") from err
    except (ValueError, FileNotFoundError) as err:
        text = _os_message(err) if isinstance(err, OSError) else str(err)
        for old, new in _LOAD_FLAGS:
            text = text.replace(old, new)
        raise CLIError(text) from err


# --------------------------------------------------------------------------- core
def _labelled(curves, labels: dict):
    """A copy of ``curves`` whose attrs carry the public names and units of ``labels``
    (``{"t": {"long_name", "units"}, "value": {...}}``); the library carries them to the release."""
    out = curves.copy(deep=False)
    out.attrs = dict(curves.attrs)
    t, v = labels.get("t", {}), labels.get("value", {})
    out.attrs.update({k: val for k, val in (("t_name", t.get("long_name")), ("t_units", t.get("units")),
                                             ("long_name", v.get("long_name")), ("units", v.get("units"))) if val})
    return out


def _fit_summary(entry, curves, a, offset=None, offset_source: str = ""):
    """``entry.spec(basis_or_grid, tau=, n=, **summary options).fit(curves, offset=)`` (non-private).

    The public side (basis or lattice grid, τ, n, options) is built first; n is
    the number of curves; a public offset is subtracted before clipping and
    added back to the release by the library.
    """
    import fdp_ppl as fp

    grid = fp.Grid.from_points(np.asarray(curves[dims.T].values, dtype=float))
    public = grid
    if _uses_eigenbasis(entry):
        public = fp.eigenbasis(fp.kernel_from_name(a.kernel or DEFAULT_KERNEL, DEFAULT_RHO if a.rho is None else a.rho), grid)
        if a.M is not None and not 1 <= a.M <= public.size:
            raise CLIError(f"--M must lie in 1..{public.size} (the eigenpairs retained for this kernel and grid), "
                           f"got {a.M}", "pass a smaller --M or omit it for floor(n^(1/3))")
    unit = getattr(a, "unit", None)
    n = int(curves.sizes[dims.CURVE]) if unit is None else unit.n_units(curves) * unit.contributions
    spec = entry.spec(public, tau=a.tau, n=n, privacy_unit=unit, **{o: getattr(a, o) for o in entry.summary_options})
    return spec.fit(curves, offset=offset, offset_source=offset_source)


#: ``missing_rule`` of a release made with ``--missing error`` (nothing imputed, nothing dropped)
_NO_MISSING_RULE = "none: a record with a missing (NaN/inf) value stops the release before any noise is drawn"


def _run(curves, mech, a, *, source: str, ledger=None, labels: dict | None = None, offset=None,
         offset_source: str = "", show_nonprivate: bool = False) -> int:
    """Summary -> ledger charge -> release -> files -> table. Returns the exit code.

    The ledger (if any) is charged by :func:`fdp_ppl.release` before any noise
    is drawn, so a refused release writes nothing and a crash later leaves the
    budget charged.
    """
    import fdp_ppl as fp

    curves = _labelled(curves, labels or {})
    entry = registry.MECHANISMS[a.mechanism]
    if getattr(a, "unit", None) is None:
        warn_record_level(curves)
    with warnings.catch_warnings():  # stated on stderr below, with the other data-holder lines
        from .summaries.curves import TauTooSmallWarning

        warnings.simplefilter("ignore", TauTooSmallWarning)
        with stage("fitting the summary (basis, clipping at tau)"):
            summary = _fit_summary(entry, curves, a, offset, offset_source)
    missing = getattr(a, "missing", "error")
    spec = summary.spec
    J, K = int(spec.n_components), int(spec.grid.size)
    check_output_space(a, 8.0 * (a.draws * (J + K) + 2 * J * K + 8 * K))
    cost = f"{a.draws} draw{'s' if a.draws > 1 else ''} x epsilon {a.epsilon:g}" + (
        f", delta {a.delta:g}" if a.delta else "")
    with warnings.catch_warnings(), stage("drawing the release"):  # a seeded release is stated in the table
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(summary, mech, draws=a.draws, random_seed=a.seed, bound=a.bound, ledger=ledger,
                          dataset=_dataset_identity(curves), label=f"{a.mechanism} ({cost}) -> {a.out}")
    tree.attrs["data_source"] = source
    tree.attrs["missing"] = missing
    tree.attrs["missing_rule"] = curves.attrs.get("missing_rule", _NO_MISSING_RULE) if missing == "impute" \
        else _NO_MISSING_RULE
    nonprivate = summary.curve().values if show_nonprivate else None
    out = write_release(tree, a.out, a.plot, lambda t, path: _write_plot(
        t, path, offset=offset, offset_source=offset_source, nonprivate=nonprivate))
    _print_table(tree, summary, out, a.plot, seed=a.seed, ledger=ledger)
    warn_shrinkage(summary.spec, offset is not None)  # public: from the spec; with the table, after the release
    _print_data_holder(summary, sup=tree.attrs.get("tau_norm") == "sup")
    if missing == "impute":
        print(f"data holder only (not written to the file): {int(curves.attrs.get('n_imputed_points', 0))} missing "
              f"points in {int(curves.attrs.get('n_imputed_curves', 0))} of {int(curves.sizes[dims.CURVE])} curves "
              "were set to 0 "
              "(--missing impute)", file=sys.stderr)
    return 0


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


def _temporary(target: Path) -> Path:
    """A new, unused temporary name in ``target``'s directory that keeps its suffix (matplotlib reads the format
    from it): ``.<name>.<pid>-<random>.tmp<suffix>``; the pid lets a later run remove what a killed one left."""
    import secrets

    return target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp{target.suffix}")


def _remove_orphans(target: Path) -> list[Path]:
    """Remove the temporaries of ``target`` left by runs that were killed while writing it (their process is gone);
    a temporary of a run still alive is kept. Returns what was removed."""
    import re

    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(\d+)-[0-9a-f]+\.tmp{re.escape(target.suffix)}$")
    removed = []
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return removed
    for path in entries:
        match = pattern.match(path.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)  # raises when no such process
            continue
        except ProcessLookupError:
            pass
        except (PermissionError, OSError):
            continue  # alive (another user's) or unknown: keep it
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def _fsync(path: Path) -> None:
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_release(tree, out, plot=None, draw_plot=None, *, charged: bool = True) -> Path:
    """Write ``tree`` to ``out`` (netCDF) and, when ``plot`` is given, ``draw_plot(tree, path)``; returns ``out``.

    Atomic: each file is written to a temporary name in its target directory, flushed to disk (fsync) and
    renamed into place (``os.replace``) only once every output is complete, so a failure, a full disk or a
    kill leaves no half-written file and any previous file intact; the outputs are published together.
    ``charged=False`` for outputs that cost no privacy (inference, audits): the failure message says so
    instead of naming a spent budget.

    Raises
    ------
    CLIError
        A file cannot be written (the temporary files are removed; nothing is published).
    """
    import os

    out = Path(out).expanduser()
    targets = [out] + ([Path(plot).expanduser()] if plot else [])
    for t in targets:
        _remove_orphans(t)
    temps = [_temporary(t) for t in targets]
    try:
        with stage(f"writing {out}"):
            # serialised in memory first and written with plain file I/O: HDF5 writing straight onto a full
            # device crashes the process (segfault) instead of raising
            try:
                payload = tree.to_netcdf()
            except RuntimeError:  # inside a dask.distributed client xarray wants a distributed lock for memory
                payload = None
            if payload is None:
                tree.to_netcdf(temps[0])  # the free space was checked before the charge
                _fsync(temps[0])
            else:
                with open(temps[0], "wb") as fh:
                    fh.write(payload)
                    fh.flush()
                    os.fsync(fh.fileno())
        if plot:
            with stage(f"plotting {plot}"):
                draw_plot(tree, temps[1])
                _fsync(temps[1])
        for tmp, target in zip(temps, targets):
            os.replace(tmp, target)
        for d in {t.resolve().parent for t in targets}:
            with contextlib.suppress(OSError):
                _fsync(d)
    except BaseException as err:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(err, (OSError, RuntimeError, ValueError)):
            reason = _os_message(err) if isinstance(err, OSError) else _one_line(err)
            after = ("but the release was drawn and any --ledger was charged for it" if charged else
                     "and nothing was charged (it costs no privacy): run it again")
            raise CLIError(f"could not write {out}" + (f" and {plot}" if plot else "") + f": {reason}; nothing was "
                           f"written (any previous file is intact), {after}",
                           "free disk space or choose another path") from None
        raise
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

    from . import plots

    fig, _ = getattr(plots, plot_name)(tree, **kwargs)
    fig.savefig(Path(path).expanduser(), dpi=150)
    plt.close(fig)


def _write_plot(tree, path, *, offset=None, offset_source="", nonprivate=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plots import plot_release

    ref_label = "public reference" + (" (CDC 2000 median)" if "CDC 2000" in offset_source else "")
    fig, ax = plot_release(tree, reference=offset, reference_label=ref_label,
                           truth=nonprivate, truth_label="non-private estimate (data holder only)")
    fig.savefig(Path(path).expanduser(), dpi=150)
    plt.close(fig)


#: display of the sensitivity norms recorded in releases
_NORMS = {"1,C": "‖·‖_{1,C}", "cameron-martin": "Cameron–Martin ‖·‖_C", "l1": "ℓ¹ of coefficients"}


def _print_table(tree, summary, out, plot, *, seed=None, ledger=None):
    from .schema import read_release

    view = read_release(tree)
    meta = view.metadata
    at = meta.public()
    # E‖ξ‖² on the grid (L², quadrature weights) from the release's public noise scale and its law
    energy = float(np.sum(view.weights * view.noise_sd() ** 2))
    units = at.get("value_units")
    if units and (" " in str(units) or len(str(units)) > 12):
        units = None  # long descriptive units stay in the file and the plot labels
    u = f" {units}" if units else ""
    sup = meta.extra.get("tau_norm") == "sup"
    calibration = f"; {at['calibration']} calibration" if at.get("calibration") not in (None, "none") else ""
    tuning = ", ".join(f"{k}={summary.params[k]:.4g}" for k in ("eta", "psi", "M", "J_star") if k in summary.params)
    if view.lattice is not None:
        k = int(view.lattice.size) - 1
        basis_row = ("basis", f"Bernstein polynomials of degree k = {k} on {k + 1} lattice points")
    else:
        basis_row = ("kernel", f"{at['kernel']}, rho = {float(at['kernel_rho']):g}" + (f"; {tuning}" if tuning else ""))
    norm = _NORMS.get(meta.sensitivity_norm, meta.sensitivity_norm)
    if view.lattice is not None and meta.sensitivity_norm == "l1":
        norm = "ℓ¹ of the lattice values"
    tau_note = " (sup-norm bound τ_∞ on |X(t)|)" if sup else ""
    if "public_offset" in at:
        tau_note += " (deviation from the public reference)"
    rows = [
        ("mechanism", f"{registry.label(meta.mechanism)} ({registry.label(meta.noise_law, 'law')} noise) on the "
                      f"{registry.label(meta.summary, 'summary')}{calibration}"),
        ("epsilon", f"{meta.epsilon:g} per draw; spent {meta.draws} × {meta.epsilon:g} = "
                    f"{meta.budget_spent_epsilon:g} ({meta.draws} draw{'s' if meta.draws > 1 else ''})"),
        ("delta", f"{meta.delta:g}" + (f" per draw; spent {meta.budget_spent_delta:g}" if meta.delta > 0
                                        else " (pure ε-DP)")),
        ("sensitivity", f"{meta.sensitivity:.4g} in {norm} "
                        f"({at['sensitivity_bound']} bound)"),
        ("tau", f"{meta.tau:g}{u}{tau_note}"),
        ("n", f"{meta.n} curves × {int(at['grid_size'])} grid points"
              + (f" after bounding each {tree.attrs['privacy_unit']}'s contribution"
                 if tree.attrs.get("privacy_unit", "record") != "record" else "")),
        ("privacy unit", unit_text(tree.attrs)),
        basis_row,
        ("J components", f"{int(at['n_components'])}"),
        ("shrinkage", _shrinkage_text(summary.spec, "public_offset" in at)),
        ("noise E‖ξ‖²", f"{energy:.4g}" + (f" {units}²" if units else "") + f"  (rms ‖ξ‖ = {math.sqrt(energy):.3g}{u})"),
        ("noise seed", seed_text(int(meta.extra.get("noise_seeded", seed is not None)))),
        ("noise generator", ("OpenDP lattice sampler, floating-point safe" if int(meta.extra.get("fp_safe", 0))
                             else "compiled float64 sampler, NOT floating-point safe")
         + f"; guaranteed epsilon {float(meta.extra.get('epsilon_guaranteed', meta.epsilon)):.6g}"
         + (f", delta {float(meta.extra.get('delta_guaranteed', meta.delta)):.3g}" if meta.delta > 0 else "")),
        ("missing", "imputed by a public rule (--missing impute): a missing point is set to 0"
         if meta.extra.get("missing") == "impute" else "none allowed (--missing error)"),
        ("release", str(out)),
    ]
    rows.append(("ledger", ledger_text(ledger, tree.attrs)))
    if plot:
        rows.append(("plot", str(plot)))
    print_table(str(at.get("data_source", "")), rows)


def _shrinkage_text(spec, centred: bool) -> str:
    """The ``shrinkage`` row: what share of a constant curve the noise-free summary keeps (public)."""
    g = spec.constant_gain()
    if g is None:
        return "not linear in the mean (soft thresholds): no single factor"
    toward = "the public offset" if centred else "0"
    return (f"the summary keeps {100 * float(np.min(g)):.0f}%–{100 * float(np.max(g)):.0f}% of a constant "
            f"{'deviation' if centred else 'curve'} (mean {100 * float(np.mean(g)):.0f}%): it shrinks toward {toward}")


def warn_shrinkage(spec, centred: bool) -> None:
    """One stderr line when the summary keeps less than 90% of a constant curve somewhere and no public centre was
    given (public: from the spec only)."""
    g = spec.constant_gain()
    if g is not None and not centred and float(np.min(g)) < 0.9:
        print(f"{PROG}: warning: the summary shrinks toward 0 (a constant curve keeps down to {100 * float(np.min(g)):.0f}% "
              "of its value): pass --offset with a public centre (a reference curve or a known typical value) so that "
              "it shrinks deviations instead", file=sys.stderr)


def unit_text(attrs) -> str:
    """The ``privacy unit`` row of every command's table, from a release's public attrs."""
    unit = attrs.get("privacy_unit", "record")
    if unit == "record":
        return "one record (a person with several records is protected only at their number times epsilon)"
    return f"one {unit}: {attrs.get('contribution_rule', '')}"


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
    return (f"{ledger.path}: charged {draws} × epsilon {eps:g}" + (f" + {extra:g} (private bandwidth)" if extra else "")
            + f" = {float(attrs['budget_spent_epsilon']):g}"
            + (f", delta {float(attrs.get('budget_spent_delta', 0.0)):g}" if delta > 0 else "")
            + f"; spent epsilon {spent.epsilon:g} of {total.epsilon:g}"
            + (f", delta {spent.delta:g} of {total.delta:g}" if with_delta else "")
            + f"; remaining epsilon {rem.epsilon:g}" + (f", delta {rem.delta:g}" if with_delta else ""))


def _print_data_holder(summary, *, sup: bool = False) -> None:
    """The data holder's lines, on stderr (the public table is on stdout): how many curves were clipped,
    and a warning when more than half were (τ far too small). Never written to the file."""
    from .summaries.curves import CLIPPED_SHARE_WARNING, clipped_warning_text

    bound = "sup norm" if sup else "L2 norm"
    n, n_clipped = int(summary.n), int(summary.n_clipped)
    what = "curves" if summary.spec.privacy_unit is None else "records after bounding each unit's contribution"
    print(f"data holder only (not written to the file): {n_clipped} of {n} {what} had {bound} above tau and were "
          "clipped", file=sys.stderr)
    if n_clipped > CLIPPED_SHARE_WARNING * n:
        print(f"{PROG}: warning: {clipped_warning_text(n_clipped, n, float(summary.tau), norm=bound)}",
              file=sys.stderr)


# --------------------------------------------------------------------------- commands
def _cmd_release(a) -> int:
    mech = _check_args(a)
    ledger = _open_ledger(a, mech.budget * a.draws)
    if getattr(a, "chunks", None) is not None or getattr(a, "scheduler", None) or str(a.data).endswith(".zarr"):
        if a.unit is not None:
            raise CLIError("--privacy-unit is not available out of core (--chunks, --scheduler, Zarr)",
                           "combine each person's records into one (their mean) in the store first, or release in "
                           "memory")
        from .distributed import run_release_cli  # out of core: lazy store, dask cluster

        return run_release_cli(a, mech, ledger, _run)
    with stage(f"loading {a.data}"):
        curves = _load(a.data, a.var, data_dir=a.data_dir, missing=a.missing, record_dim=a.record_dim,
                       t_dim=a.t_dim)
    name = Path(str(a.data)).name
    source = f"{name}" + (f" / {a.var}" if a.var else "")
    offset, offset_source = _offset(a, curves)
    return _run(curves, mech, a, source=source, ledger=ledger, offset=offset, offset_source=offset_source)


def _offset(a, curves):
    """``--offset VALUE|FILE`` as a public curve on the curves' grid (K,) and its description; (None, "") without.

    Raises
    ------
    CLIError
        Neither a number nor a readable file with one curve on the grid.
    """
    text = getattr(a, "offset", None)
    if text is None:
        return None, ""
    t = np.asarray(curves[dims.T].values, dtype=float)
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None:
        if not math.isfinite(value):
            raise CLIError(f"--offset must be finite (got {text})", "pass a public number in the data's units")
        return np.full(t.size, value), f"--offset {value:g} (a public constant)"
    path = Path(text).expanduser()
    if not path.is_file():
        raise CLIError(f"--offset {text} is neither a number nor a file", "pass a number or a file with one curve")
    if path.suffix.lower() == ".csv":
        import pandas as pd

        frame = pd.read_csv(path)
        if not {"t", "value"} <= set(frame.columns):
            raise CLIError(f"--offset {path.name} needs the columns t and value", "write one row per grid point")
        grid_t, values = frame["t"].to_numpy(dtype=float), frame["value"].to_numpy(dtype=float)
    else:
        import xarray as xr

        with xr.open_dataset(path) as ds:
            one_d = [v for v in ds.data_vars if ds[v].ndim == 1]
            if len(one_d) != 1:
                raise CLIError(f"--offset {path.name} must hold exactly one 1-D variable (has {len(one_d)})",
                               "write the public curve alone")
            da = ds[one_d[0]]
            values = np.asarray(da.values, dtype=float)
            grid_t = np.asarray(da[da.dims[0]].values, dtype=float)
    if values.shape != t.shape or not np.allclose(grid_t, t) or not np.all(np.isfinite(values)):
        raise CLIError(f"--offset {path.name} must give one finite value at each of the data's {t.size} grid points",
                       "evaluate the public curve on the data's grid")
    return values, f"--offset {path.name} (a public curve)"


def _cmd_demo(a) -> int:
    _check_out(a)
    _check_ledger_args(a)
    ns = argparse.Namespace(mechanism="iclp-qr", epsilon=1.0, delta=None, nu=None, calibration=None, bound="tight",
                            draws=1, seed=a.seed, kernel=DEFAULT_KERNEL, rho=DEFAULT_RHO, eta=None, psi=None, M=None,
                            k=None, out=a.out, plot=a.plot, tau=GROWTH_RAW_TAU if a.raw else GROWTH_DEVIATION_TAU)
    mech = registry.MECHANISMS[ns.mechanism].mechanism(ns.epsilon)
    ledger = _open_ledger(a, mech.budget)
    with stage("loading growth"):
        curves = _load("growth", data_dir=a.data_dir)
    ages = np.asarray(curves[dims.T].values, dtype=float)
    labels = {"t": {"long_name": "age", "units": "years"}, "value": {"long_name": "mean height", "units": "cm"}}
    if a.raw:
        offset, src = None, ""
        print(f"demo: Berkeley growth heights, ICLP-QR, epsilon = 1, raw heights clipped at the public "
              f"tau = {GROWTH_RAW_TAU:g} cm")
    else:
        offset, src = growth_reference(ages), GROWTH_REFERENCE_SOURCE
        print("demo: Berkeley growth heights, ICLP-QR, epsilon = 1; deviations from the public CDC 2000 median "
              f"height clipped at the public tau = {GROWTH_DEVIATION_TAU:g} cm (run with --raw for tau = "
              f"{GROWTH_RAW_TAU:g} cm on raw heights: about 5x more noise)")
    return _run(curves, mech, ns, source="growth (Berkeley growth study, fdars)", ledger=ledger, labels=labels,
                offset=offset, offset_source=src, show_nonprivate=a.show_nonprivate)


def _short_time(iso: str) -> str:
    return str(iso or "")[:19].replace("T", " ")


def _cmd_ledger(a) -> int:
    """Print a ledger: total, one row per charge, spent and remaining."""
    from .accounting import PrivacyLedger

    path = Path(a.file).expanduser()
    if not path.is_file():
        raise CLIError(f"no ledger at {a.file}", "a ledger is created by the first release with --ledger FILE "
                                                   "--budget EPSILON[,DELTA]")
    ledger = PrivacyLedger.open(path)
    if getattr(a, "verify", False):
        info = ledger.verify()
        print_table(f"ledger {path}", [
            ("valid", "yes: schema, budget row, every entry's numbers and event, and the hash chain check out"),
            ("entries", str(info["entries"])), ("head", info["head"]),
            ("schema", f"version {info['schema_version']}" + (f" (migrated {_short_time(info['migrated_at'])})"
                                                              if "migrated_at" in info else ""))])
        return 0
    records = ledger.records()
    events = ledger.events
    total, spent, rem = ledger.total, ledger.spent, ledger.remaining

    def budget(b):
        return f"epsilon {b.epsilon:g}" + (f", delta {b.delta:g}" if total.delta > 0 or b.delta > 0 else "")

    print(f"{PROG} ledger {path}")
    print(f"  total      {budget(total)}")
    print(f"  spent      {budget(spent)} in {len(records)} release{'s' if len(records) != 1 else ''} (basic "
          "composition: the sum)")
    if total.delta > 0:
        tight = ledger.tight_epsilon()
        tight_text = f"epsilon {tight:.4g} at delta {total.delta:g}" if math.isfinite(tight) else \
            f"no finite epsilon at delta {total.delta:g}"
        print(f"  tight      {tight_text} (privacy-loss distributions of the releases, dp-accounting)")
        rest = f"; epsilon {max(total.epsilon - tight, 0.0):.4g} at delta {total.delta:g} (tight)" \
            if math.isfinite(tight) else ""
        print(f"  remaining  {budget(rem)} (basic){rest}")
    else:
        print("  tight      = basic (a pure epsilon-DP budget, delta = 0: the sum is the tight total)")
        print(f"  remaining  {budget(rem)}")
    if records:
        head = ("#", "time (UTC)", "dataset", "mechanism", "noise", "epsilon", "delta", "label")
        rows = [(str(i), _short_time(r["created_at"]), r["dataset"] or "", r["mechanism"] or "", _event_text(e),
                 f"{r['epsilon']:g}", f"{r['delta']:g}", r["label"] or "")
                for i, (r, e) in enumerate(zip(records, events), 1)]
        widths = [max(len(x) for x in col) for col in zip(head, *rows)]
        print()
        for row in (head, *rows):
            print("  " + "  ".join(v.ljust(w) for v, w in zip(row[:-1], widths[:-1])) + "  " + row[-1])
        print("\nepsilon and delta are what each release was charged: a release of N draws (--draws N) is charged "
              "N × its per-draw epsilon and delta (basic composition). A release is accepted when the ledger fits "
              "its total by basic or by tight composition.")
    return 0


def _event_text(event) -> str:
    """The ``noise`` column of ``fdp-ppl ledger``: law, noise multiplier (scale / sensitivity) and count."""
    count = f" x {event.count}" if event.count > 1 else ""
    if event.law == "approx":
        return "(eps, delta) only" + count
    return f"{event.law} sigma/Delta {event.noise_multiplier:.4g}{count}"


#: further subcommands, each in its own module: ``(name, module)``; the module defines
#: ``add_subparser(sub)`` (cheap: no heavy imports at module level) and ``run(args) -> int``
_SUBCOMMANDS: list[tuple[str, str]] = [("fpca", "fdp_ppl.cli_fpca"), ("kde", "fdp_ppl.cli_kde"), ("svm", "fdp_ppl.cli_erm"),
                                       ("audit", "fdp_ppl.cli_audit"), ("infer", "fdp_ppl.cli_infer")]


def _add_extra_subparsers(sub) -> None:
    import importlib

    for _, mod in _SUBCOMMANDS:
        importlib.import_module(mod).add_subparser(sub)


def _version() -> str:
    from ._version import __version__

    return __version__


def main(argv=None) -> int:
    """Entry point of ``fdp-ppl`` and ``python -m fdp_ppl``; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--version"]:  # before the parser, which lists the registry's mechanisms
        print(f"{PROG} {_version()}")
        return 0
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse usage errors (exit 2) and --help (exit 0)
        return int(e.code) if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        if args.command == "release":
            return _cmd_release(args)
        if args.command == "ledger":
            return _cmd_ledger(args)
        for name, mod in _SUBCOMMANDS:
            if args.command == name:
                import importlib

                return importlib.import_module(mod).run(args)
        return _cmd_demo(args)
    except FdpPplError as e:  # library and command-line errors: message; fix — printed unchanged
        return _fail(e)
    except BrokenPipeError:  # the reader of stdout went away (`fdp-ppl ledger FILE | head -1`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: let that go nowhere
        return 0
    except FileNotFoundError as e:
        return _fail(_os_message(e))
    except (ValueError, TypeError, KeyError) as e:
        return _fail(e.args[0] if e.args else repr(e))
    except OSError as e:
        return _fail(f"cannot read or write a file: {e}")
    except sqlite3.Error as e:
        return _fail(f"cannot use the ledger file: {e}; pass a ledger written by --ledger, or a new file name")


__all__ = ["main", "build_parser", "growth_reference", "CDC2000_MEDIAN_HEIGHT_CM"]
