"""``fdp-ppl ledger FILE``: the total of a persistent privacy ledger, what it has spent by basic and by tight
composition, one row per charge and what remains; ``--verify [RELEASE ...]`` validates the file (layout, numbers,
hash chain) and checks that each release's recorded ledger head is in the chain; ``--create --budget E[,D]
[--privacy-unit UNIT]`` creates an empty ledger with its privacy unit and neighbouring relation recorded in the chain
before any release."""

from __future__ import annotations

import math
from pathlib import Path

from .common import PROG, CLIError, print_table

def add_subparser(sub) -> None:
    lg = sub.add_parser("ledger", help="show what a privacy ledger has spent and what remains",
                        description="Print the total budget of a ledger written by --ledger, what it has spent by "
                                    "basic composition (the sum) and by tight composition (privacy-loss "
                                    "distributions, dp-accounting), one row per charge (time, dataset, mechanism, "
                                    "noise, epsilon, delta, label) and what remains. The file is validated first "
                                    "(schema, numbers, hash chain): an edited or damaged ledger is refused.")
    lg.add_argument("file", metavar="FILE", help="the ledger file")
    lg.add_argument("--verify", nargs="*", default=None, metavar="RELEASE",
                    help="only validate the file and print its entry count and head hash; each RELEASE (a release "
                         "file charged to this ledger, or COUNT:HEAD as its table printed it) must have its recorded "
                         "head in the chain, so a rollback, an edit or an old copy of the ledger made after it is "
                         "found. Without a key file, only such a head kept outside the ledger detects a ledger "
                         "rewritten as a whole")
    lg.add_argument("--key-file", default=None, metavar="KEY",
                    help="the key of a keyed ledger (HMAC-SHA256 chain and head log KEY.heads)")
    lg.add_argument("--plot", default=None, metavar="PNG",
                    help="also draw what the ledger's releases let an attacker do: the trade-off curve (false "
                         "positives against misses of the best test telling two neighbouring datasets apart), "
                         "beside the curve the summed (epsilon, delta) alone would allow")
    lg.add_argument("--force", action="store_true", help="replace an existing --plot file (never the ledger)")
    new = lg.add_argument_group("a new ledger")
    new.add_argument("--create", action="store_true",
                     help="create the ledger FILE (it must not exist) with --budget and, optionally, the privacy unit "
                          "it protects and its neighbouring relation, recorded in its hash chain; nothing is released")
    new.add_argument("--budget", default=None, metavar="E[,D]", help="with --create: the total budget epsilon[,delta]")
    new.add_argument("--privacy-unit", default=None, metavar="UNIT",
                     help="with --create: the unit the ledger protects, 'record' or the column naming a person (e.g. "
                          "subject_id); a release for another unit is then refused, and a per-record release with "
                          "--records-per-unit K is charged by group privacy (K x epsilon). Default: the first "
                          "release's unit")
    new.add_argument("--neighbouring", default=None, metavar="RELATION",
                     help="with --create: 'replace-one' (one unit's records replaced, the number of units public) or "
                          "'add-remove' (one unit added or removed, n private: membership protected; releases made "
                          "with --neighbouring add-remove --n-lower N). An add-remove release on a replace-one "
                          "ledger is charged (2 epsilon, (1 + e^epsilon) delta); a replace-one release on an "
                          "add-remove ledger is refused. Default: the first release's")


def _short_time(iso: str) -> str:
    return str(iso or "")[:19].replace("T", " ")


def _create(a, path: Path) -> None:
    """``--create``: a new, empty ledger with its budget, unit and relation (refused if ``path`` exists)."""
    from ..accounting import PrivacyLedger
    from .common import parse_budget

    if getattr(a, "verify", None) is not None or getattr(a, "plot", None) is not None:
        raise CLIError("--create makes a new, empty ledger: there is nothing to --verify or --plot yet",
                       "drop --verify and --plot")
    if a.budget is None:
        raise CLIError("--create needs the ledger's total budget", "pass --budget EPSILON[,DELTA], e.g. --budget 3")
    budget = parse_budget(a.budget)
    if path.exists() or path.is_symlink():
        raise CLIError(f"{a.file} exists: a ledger is never re-created", "choose a new file name")
    PrivacyLedger.open(path, budget, key_file=getattr(a, "key_file", None), privacy_unit=a.privacy_unit,
                       neighbouring=a.neighbouring)


def run(a) -> int:
    """Print a ledger: total, one row per charge, spent and remaining."""
    from ..accounting import PrivacyLedger
    from ..errors import FdpPplError

    path = Path(a.file).expanduser()
    if getattr(a, "create", False):
        _create(a, path)
    elif any(getattr(a, k, None) is not None for k in ("budget", "privacy_unit", "neighbouring")):
        raise CLIError("--budget, --privacy-unit and --neighbouring apply to --create (a new ledger)",
                       "pass --create for a new ledger; an existing ledger keeps what it was created with")
    if not path.is_file():
        raise CLIError(f"no ledger at {a.file}", "a ledger is created by the first release with --ledger FILE "
                                                   "--budget EPSILON[,DELTA], or by fdp-ppl ledger FILE --create "
                                                   "--budget EPSILON[,DELTA] --privacy-unit UNIT")
    releases = list(getattr(a, "verify", None) or [])
    plot = getattr(a, "plot", None)
    if plot is not None:
        import types

        from .common import check_out

        if getattr(a, "verify", None) is not None:
            raise CLIError("--plot draws the ledger's spending; --verify only checks the file", "drop one of them")
        check_out(types.SimpleNamespace(out=None, plot=plot, force=getattr(a, "force", False), ledger=str(path),
                                        key_file=getattr(a, "key_file", None)))
    ledger = PrivacyLedger.open(path, key_file=getattr(a, "key_file", None))
    if getattr(a, "verify", None) is not None:
        info = ledger.verify(releases=releases)
        keyed = info["chain"] == "hmac-sha256"
        rows = [("valid", "yes: layout, budget row, every entry's numbers and event, and the hash chain check out"),
                ("entries", str(info["entries"])), ("head", info["head"]),
                ("protects", (f"each {info['privacy_unit']}" if info["privacy_unit"] else "the unit of its first "
                              f"release") + (" (add-remove: membership protected, n private)"
                                             if info["neighbouring"] == "add-remove" else
                                             f" ({info['neighbouring'] or 'replace-one'}: the number of units public)")),
                ("chain", f"keyed (HMAC-SHA256); {info['head_log']} charges in the key's head log are in it" if keyed
                 else "unkeyed (SHA-256): anyone who can write the file can rewrite it consistently"),
                ("schema", f"version {info['schema_version']}" + (f" (migrated {_short_time(info['migrated_at'])})"
                                                                  if "migrated_at" in info else ""))]
        rows += [("release", f"{name}: entry {count}, head {head[:16]}… is in the chain")
                 for name, count, head in info["releases"]]
        if not keyed and not releases:
            rows.append(("not checked", ("a rollback or a rewrite of the whole file: pass the latest release files "
                                         "(RELEASE ...), or keep the head above and compare it later")))
        print_table(f"ledger {path}", rows)
        return 0
    records = ledger.records()
    events = ledger.events
    if plot is not None and not events:
        raise CLIError("the ledger has no releases yet: there is no privacy loss to draw", "drop --plot")
    total, spent, rem = ledger.total, ledger.spent, ledger.remaining

    def budget(b):
        return f"epsilon {b.epsilon:g}" + (f", delta {b.delta:g}" if total.delta > 0 or b.delta > 0 else "")

    from ..accounting.events import basic_total, guaranteed

    attrs = ledger.attrs()
    unit = attrs.get("ledger_privacy_unit")
    print(f"{PROG} ledger {path}")
    print(f"  protects   " + (f"each {unit or 'unit of the first release'}: added or removed, n private (membership "
                              "protected)" if ledger.neighbouring == "add-remove" else
                              f"each {unit}: all of one {unit}'s records replaced, the number of {unit}s public "
                              "(presence is not protected)" if unit and unit != "record" else
                              "each record: one record replaced, n public (presence is not protected)" if unit else
                              "set by the first release (its privacy unit)"))
    print(f"  total      {budget(total)}")
    print(f"  spent      {budget(spent)} in {len(records)} release{'s' if len(records) != 1 else ''} (basic "
          "composition: the sum)")
    uncertified = [e for e in events if not e.certified]
    if uncertified:
        u, g = basic_total(uncertified), basic_total(guaranteed(events))
        print(f"  uncertified {budget(u)} in {len(uncertified)} release{'s' if len(uncertified) != 1 else ''} with no "
              f"proved guarantee (MCMC), charged but not guaranteed; guaranteed: {budget(g)}")
    if total.delta > 0:
        tight = ledger.tight_epsilon()
        tight_text = f"epsilon {tight:.4g} at delta {total.delta:g}" if math.isfinite(tight) else \
            f"no finite epsilon at delta {total.delta:g}"
        used = ("mu-GDP, every release Gaussian: decides acceptance" if "ledger_spent_epsilon_tight" in attrs else
                "privacy-loss distributions, dp-accounting; for a sequence fixed in advance, not used to accept")
        print(f"  tight      {tight_text} ({used})")
        rest = f"; epsilon {max(total.epsilon - tight, 0.0):.4g} at delta {total.delta:g} (mu-GDP)" \
            if math.isfinite(tight) and "ledger_spent_epsilon_tight" in attrs else ""
        print(f"  remaining  {budget(rem)} (basic){rest}")
    else:
        print("  tight      = basic (a pure epsilon-DP budget, delta = 0: the sum is the tight total)")
        print(f"  remaining  {budget(rem)}")
    if events:
        from ..accounting.curves import privacy_in_words

        try:
            print(f"  in words   {privacy_in_words(events)} (the trade-off curve of all releases: --plot)")
        except FdpPplError:  # too many draws to compose tightly: the sum above is the statement
            pass
    if plot is not None:  # to a temporary name, renamed into place: an existing --plot survives a failure
        import contextlib
        import os

        from .common import _temporary, save_plot

        target = Path(plot).expanduser()
        tmp = _temporary(target)
        try:
            save_plot("plot_privacy", events, tmp)
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
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
              "N × its per-draw epsilon and delta (basic composition); a per-record release on a per-person ledger "
              "is charged by group privacy (noise column: group K). A release is accepted when the ledger fits its "
              "total by basic composition or, while every release is Gaussian, by the mu-GDP total (the rules "
              "that hold when the ledger decides adaptively).")
    return 0


def _event_text(event) -> str:
    """The ``noise`` column of ``fdp-ppl ledger``: law, noise multiplier (scale / sensitivity) and count."""
    count = f" x {event.count}" if event.count > 1 else ""
    tail = (f", group {event.group}" if event.group > 1 else "") + ("" if event.certified else ", UNCERTIFIED")
    if event.law == "approx":
        return "(eps, delta) only" + count + tail
    return f"{event.law} sigma/Delta {event.noise_multiplier:.4g}{count}{tail}"


__all__ = ["add_subparser", "run"]
