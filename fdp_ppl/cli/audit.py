"""``fdp-ppl audit``: an empirical lower bound on a mechanism's effective ε (see ``docs/audit.md``).

Exit codes: 0 when the audit is consistent with the claim (ε_lb ≤ ε), 1 when it finds a violation
(ε_lb > ε at the stated confidence), 2 on bad input (one line ``fdp-ppl: error: ...``). The audit
builds synthetic neighbouring datasets: it reads no data, charges no ledger and costs no budget.

This module imports only :mod:`argparse` at import time.
"""

from __future__ import annotations

import argparse  # noqa: F401  (the only import at module import time)

NAME = "audit"


def add_subparser(sub) -> None:
    """Add ``audit`` to the sub-command parsers of ``fdp-ppl``."""
    from ..releasing.families import FAMILIES  # the family registry (a standard-library leaf module)

    p = sub.add_parser(
        NAME, help="empirical privacy audit: a lower bound on a mechanism's effective epsilon",
        description="Search adversarial neighbouring datasets (replace one record), draw many releases from each "
                    "side and report a Clopper-Pearson LOWER bound on the effective epsilon next to the claimed "
                    "one (DP-Sniper style: events chosen on one half, counted on the other; failure and timing "
                    "events included). A bound above the claim refutes it; a bound below proves nothing. "
                    "White-box test too: the noise law fitted from the same releases and the epsilon it implies, "
                    "with its standard error (mean, kde and machine families). "
                    "Synthetic data only: no data is read and no budget is spent. Exit code 0: consistent with "
                    "the claim; 1: violation found; 2: bad input.")
    audited = [e for e in FAMILIES if e.audit]
    p.add_argument("--mechanism", required=True, metavar="NAME", help=mechanism_help(audited))
    p.add_argument("--family", choices=[e.family for e in audited] + [old for e in audited for old in e.legacy_names],
                   default=audited[0].family, help=family_help(audited))
    p.add_argument("--epsilon", type=float, default=1.0, help="claimed epsilon (default 1)")
    p.add_argument("--delta", type=float, default=None,
                   help="claimed delta of an (epsilon, delta) mechanism (default 1e-5); refused by pure ones")
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help="releases per side of each neighbouring pair (default 20000; 1000 when each release "
                        "needs its own call)")
    p.add_argument("--confidence", type=float, default=0.95, help="simultaneous confidence (default 0.95)")
    p.add_argument("--tests", type=int, default=4,
                   help="events counted on the held-out half (the Bonferroni factor; default 4)")
    p.add_argument("--timing-calls", type=int, default=None, metavar="N",
                   help="single timed release calls per side for the failure and timing events (default 300; "
                        "mechanisms that release one draw per call, the fpca NUTS samplers, time every call and "
                        "take no --timing-calls)")
    p.add_argument("--no-timing", action="store_true", help="do not use timing events")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the audit (default 0; an audit is a study on synthetic data, so seeding is fine)")
    p.add_argument("--nu", type=float, default=None, help="degrees of freedom of the t laws (default 5)")
    p.add_argument("--out", default=None, metavar="PATH", help="write the audit (xarray Dataset) as netCDF")
    from .common import FORCE_HELP

    p.add_argument("--force", action="store_true", help=FORCE_HELP)


def mechanism_help(entries) -> str:
    """``--mechanism``'s help: each audited family's mechanism names, read from its registry line
    (``ReleaseEntry.mechanism_names``: the names :func:`fdp_ppl.auditing.targets.mechanisms_of` gives)."""
    return "; ".join(f"{e.family}: {', '.join(e.names())}" for e in entries)


def family_help(entries) -> str:
    """``--family``'s help: the audited families in registry order, each with its command and former names."""
    def one(e):
        notes = [f"fdp-ppl {e.command}"] if e.command else []
        notes += [f"former name {old!r}" for old in e.legacy_names]
        return e.family + (f" ({', '.join(notes)})" if notes else "")

    return f"which release family's mechanisms (default {entries[0].family}): " + ", ".join(map(one, entries))


def _check(a):
    from ..releasing.families import ALIASES

    a.family = ALIASES.get(a.family, a.family)
    from .common import CLIError

    # epsilon, delta, confidence, samples, tests and timing calls are checked by fp.audit, before any work, in the
    # library's words (its keywords named as this command's flags)
    from ..auditing.targets import audit_hook, mechanisms_of, option_keys

    names = mechanisms_of(a.family)
    name = audit_hook(a.family).canonical(a.mechanism)
    if name not in names:
        raise CLIError(f"unknown --mechanism {a.mechanism!r} for --family {a.family}",
                       f"choose one of {', '.join(names)}")
    if a.nu is not None and "nu" not in (option_keys(name, a.family) or ()):
        with_nu = [m for m in mechanisms_of("mean") if "nu" in option_keys(m, "mean")]
        raise CLIError(f"--nu applies to {', '.join(with_nu)} only (got --mechanism {a.mechanism})", "drop --nu")
    from .common import check_outputs

    check_outputs(a)  # the one output guard: never an existing file without --force, never a ledger
    return name


def run(a) -> int:
    """Run ``fdp-ppl audit`` with parsed arguments; returns the exit code (0 consistent, 1 violation)."""
    from pathlib import Path

    from .common import print_table

    name = _check(a)
    from ..auditing import VERDICT_VIOLATION, audit

    kinds = ("statistic", "failure") if a.no_timing else ("statistic", "failure", "timing")
    extra = {}  # options not every mechanism takes: passed only when given (the audit refuses the others)
    if a.timing_calls is not None:
        extra["timing_calls"] = a.timing_calls
    if a.nu is not None:
        extra["options"] = {"nu": a.nu}
    ds = audit(name, family=a.family, epsilon=a.epsilon, delta=a.delta, samples=a.samples,
               confidence=a.confidence, random_seed=a.seed, tests=a.tests, events=kinds, progressbar=True, **extra)
    at = ds.attrs
    if a.out is not None:  # the package's atomic writer (temporary name, fsync, rename); an audit charges nothing
        import xarray as xr

        from .common import write_release

        write_release(xr.DataTree(ds), a.out, charged=False)
    rows = [
        ("mechanism", f"{at['mechanism']} (family {at['family']})"),
        ("epsilon claimed", f"{at['epsilon_claimed']:.6g}" + (f", delta {at['delta']:.3g}" if at["delta"] > 0
                                                              else " (pure epsilon-DP)")),
        ("epsilon lower bound", f"{at['epsilon_lower_bound']:.4g} (at {at['confidence']:g} simultaneous "
                                f"confidence, Clopper-Pearson, Bonferroni over {at['n_tests']} events x 2 bounds)"),
        ("event", at["best_event"]),
        ("pair", at["best_pair"]),
        ("white-box epsilon", at["whitebox"]),
        ("white-box fit", at["whitebox_fit"] + ("" if at["sensitivity_reached"] != at["sensitivity_reached"] else
                                                f"; the pairs reach {at['sensitivity_reached']:.3f} of the "
                                                f"claimed sensitivity {at['sensitivity_claimed']:.4g}")),
        ("N", f"{at['samples']} releases per side and pair ({at['n_pairs']} pairs; half choose the events, half "
              f"count them); {at['timing_calls']} timed single calls per side"),
        ("spec", at["spec"]),
        ("skipped", at["skipped"]),
        ("privacy cost", "none: synthetic neighbouring datasets, no data read, no ledger charged"),
        ("run time", f"{at['run_time_s']:.1f} s"),
        ("seed", f"{a.seed} (seeds the audit's synthetic releases: a study, not a release)"),
    ]
    if a.out is not None:
        rows.append(("audit", str(Path(a.out))))
    rows.append(("verdict", at["verdict"] + ("" if at["verdict"] == VERDICT_VIOLATION else
                                             " (a lower bound can only refute a claim, never prove it)")))
    print_table(f"audit --mechanism {a.mechanism} --family {a.family}", rows)
    return 1 if at["verdict"] == VERDICT_VIOLATION else 0


__all__ = ["add_subparser", "run"]
