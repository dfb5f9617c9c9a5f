"""``fdp-ppl``: the command line, one module per command.

=========== ===================================================================== ============================
command     what it does                                                          module
=========== ===================================================================== ============================
``release`` a private mean curve of a dataset (any mechanism of the registry)      :mod:`fdp_ppl.cli.release`
``plan``    a mean-curve release's plan and accuracy (no data read, no charge)     :mod:`fdp_ppl.cli.plan`
``demo``    the end-to-end example on the bundled Berkeley growth curves           :mod:`fdp_ppl.cli.demo`
``infer``   release file -> posterior file (costs no privacy)                      :mod:`fdp_ppl.cli.infer`
``kde``     a private density (GP, Sobolev, ICLP, FRL, Bernstein)                  :mod:`fdp_ppl.cli.kde`
``machine`` a private kernel machine (Hall et al. 2013, §4); alias ``svm``        :mod:`fdp_ppl.cli.machine`
``fpca``    private principal components (exponential mechanism)                  :mod:`fdp_ppl.cli.fpca`
``ledger``  what a persistent privacy ledger has spent and what remains           :mod:`fdp_ppl.cli.ledger`
``audit``   an empirical privacy-loss audit on adversarial neighbours             :mod:`fdp_ppl.cli.audit`
=========== ===================================================================== ============================

The release families' commands are named in the family registry (``ReleaseEntry.command``,
:data:`fdp_ppl.releasing.families.COMMANDS`): a new family's command is its module here and that name.

Each command module defines ``add_subparser(sub)`` (cheap: no heavy import at module level, so ``fdp-ppl --help``
stays fast) and ``run(args) -> int``. What they share — data and privacy-unit options, output and ledger checks
made before any charge, the atomic writer, the public table, seeds and warnings — lives in
:mod:`fdp_ppl.cli.common`.

Bad input ends with one line ``fdp-ppl: error: ...`` on stderr naming the fix and exit code 2 (argparse's own
usage errors also exit with 2). Library errors (:class:`fdp_ppl.errors.FdpPplError`: message ``; `` fix) are
printed as the library words them, the one check for Python and the command line, with a keyword and its value
(``epsilon=1.0``) named as the flag that sets it (``--epsilon 1.0``, :func:`fdp_ppl.cli.common.in_flags`). Everything a command writes to its output file is public; the public table goes to stdout; what
only the data holder may see (clipped and imputed counts) is never printed: it goes, after the charge, to
``--holder-report PATH`` when asked. Every public check comes before the charge, everything that depends on the
data's values after it (DESIGN invariant 9).

Before any command runs, :func:`main` checks every count a user typed against its public bound
(:data:`fdp_ppl.cli.common.COUNT_LIMITS`, stated in ``--help``) and every output against the one guard
(:func:`fdp_ppl.cli.common.check_outputs`). Ctrl-C and SIGTERM end a command with one line saying whether the
ledger was charged and what was written (:func:`fdp_ppl.cli.common.interrupted_text`), exit code 130 or 143.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sqlite3
import sys
import threading

from ..errors import FdpPplError
from ..releasing.families import ALIASES as FAMILY_ALIASES
from ..releasing.families import BY_NAME
from ..releasing.families import COMMANDS as FAMILY_COMMANDS
from .common import (PROG, RUN, Interrupted, check_counts, check_outputs, count_limit, fail, in_flags,
                     interrupted_text, os_message)

#: the commands, in the order ``fdp-ppl --help`` lists them; each is the module ``fdp_ppl.cli.<name>``: the
#: package's own and, after ``infer``, each release family's (``ReleaseEntry.command``, read from the registry)
COMMANDS = ("release", "plan", "demo", "infer", *(c for c in FAMILY_COMMANDS if c != "release"), "ledger", "audit")
#: former command names, still accepted: name -> command (a family's former names that are no command of their own,
#: read from the registry: ``svm`` -> ``machine``)
ALIASES = {old: BY_NAME[family].command for old, family in FAMILY_ALIASES.items()
           if old not in COMMANDS and BY_NAME[family].command}

#: the subcommand's name and the positional arguments (not flags) among the parsed arguments
_POSITIONAL = ("command", "release", "file")


def build_parser() -> argparse.ArgumentParser:
    """The ``fdp-ppl`` parser: one subparser per :data:`COMMANDS` entry, added by its module."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Differentially private releases of functional data: mean curves, densities, "
                               "kernel machines and principal components, and inference from them.")
    parser.add_argument("--version", action=_VersionAction, help="print the package version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_subparser(sub)
    # every count a user types has a public upper bound, stated in --help and checked before any work
    parser.int_options = {}
    for command, subparser in sub.choices.items():
        ints = [act for act in subparser._actions if act.type is int]
        parser.int_options[command] = tuple(act.dest for act in ints)
        for act in ints:
            limit = count_limit(ALIASES.get(command, command), act.dest)
            if limit is not None and act.help and "at most" not in act.help:
                act.help += f" (at most {limit:,})"
    return parser


def _version() -> str:
    from .._version import __version__

    return __version__


class _VersionAction(argparse.Action):
    """``--version`` anywhere on the line: the version is read only when asked for (``--help`` does not pay
    for :mod:`importlib.metadata`)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{PROG} {_version()}")
        parser.exit()


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
    command = ALIASES.get(args.command, args.command)
    if command == "release" and getattr(args, "dry_run", False):  # the plan command on the same flags
        command = "plan"
    module = importlib.import_module(f"{__name__}.{command}")
    # the command's flags by the library keyword they set (dest; a module's LIBRARY_FLAGS where the names differ)
    flags = {d: "--" + d.replace("_", "-") for d in vars(args) if d not in _POSITIONAL}
    flags.update(getattr(module, "LIBRARY_FLAGS", {}))
    RUN.reset()
    previous = _install_signal_handlers()
    try:
        check_counts(args, command, parser.int_options.get(args.command, ()))  # public bounds, before any work
        check_outputs(args)  # every output of every command through the one guard, before any work
        return module.run(args)
    except (Interrupted, KeyboardInterrupt) as e:  # one line: whether the budget was charged, what was written
        _ignore_signals()
        signum = e.signum if isinstance(e, Interrupted) else int(signal.SIGINT)
        print(interrupted_text(signum), file=sys.stderr, flush=True)
        return 128 + signum
    except FdpPplError as e:  # library and command-line errors: message; fix — keywords named as flags
        return fail(in_flags(e, flags))
    except BrokenPipeError:  # the reader of stdout went away (`fdp-ppl ledger FILE | head -1`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: let that go nowhere
        return 0
    except MemoryError:  # a size no public check foresaw: one line, not a traceback (pre-charge checks refuse the rest)
        return fail("not enough memory for this size; use a smaller grid, fewer draws or records per run, or the "
                    "out-of-core path (--chunks)")
    except FileNotFoundError as e:
        return fail(os_message(e))
    except (ValueError, TypeError, KeyError) as e:
        return fail(e.args[0] if e.args else repr(e))
    except OSError as e:
        return fail(f"cannot read or write a file: {e}")
    except sqlite3.Error as e:
        return fail(f"cannot use the ledger file: {e}; pass a ledger written by --ledger, or a new file name")
    finally:
        _restore_signal_handlers(previous)


#: the signals that end a command with one line (:func:`fdp_ppl.cli.common.interrupted_text`) and exit 128 + signum
_SIGNALS = ("SIGINT", "SIGTERM")


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def _install_signal_handlers() -> dict:
    """SIGINT and SIGTERM raise :class:`~fdp_ppl.cli.common.Interrupted` (so ``finally`` blocks run: temporaries
    are removed, the cluster closed); returns the previous handlers. Only the main thread can install them."""
    previous = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for name in _SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(ValueError, OSError):
                previous[sig] = signal.signal(sig, _raise_interrupted)
    return previous


def _ignore_signals() -> None:
    """While the one line is printed: a second Ctrl-C does not turn it into a traceback."""
    if threading.current_thread() is threading.main_thread():
        for name in _SIGNALS:
            with contextlib.suppress(ValueError, OSError, AttributeError):
                signal.signal(getattr(signal, name), signal.SIG_IGN)


def _restore_signal_handlers(previous: dict) -> None:
    for sig, handler in previous.items():
        with contextlib.suppress(ValueError, OSError, TypeError):
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


__all__ = ["main", "build_parser", "COMMANDS"]
