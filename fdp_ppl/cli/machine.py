"""``fdp-ppl machine``: a private kernel machine (kernel SVM, Huber-hinge SVM, logistic or ridge) released as a decision function.

Reads a labelled table (CSV with a header, or a netCDF file of 1-D variables along one record dim),
clips the features to the public ``--domain`` box (the count goes to stderr only, never to the file),
builds the public :class:`~fdp_ppl.machine.ERMSpec` (kernel, λ, n, loss, grid), fits the machine with no
intercept to a fixed solver accuracy, charges the ledger ``draws × (ε, δ)`` and releases the decision
function on the grid (:func:`fdp_ppl.release`): Gaussian-process noise with the machine's kernel
(Hall, Rinaldo & Wasserman 2013, §4.3) or ICLP noise on the kernel's eigenbasis (Lin & Reimherr 2026,
Theorem 18). Predicted labels are the sign of the released function.

This module imports only :mod:`argparse` at import time.
"""

from __future__ import annotations

import warnings
from pathlib import Path

NAME = "machine"
#: the command's former name, still accepted
ALIASES = ("svm",)
#: :data:`fdp_ppl.machine.LOSSES` (spelled out: the command imports the package lazily; a test keeps them equal)
LOSSES = ("hinge", "huber", "logistic", "squared")
#: ``gaussian`` is Hall's ``exp(-d²/(2h²))`` here (``fdp-ppl release --kernel gaussian`` is Mirshani's ``exp(-d²/ρ)``):
#: ``gaussian-hall`` and ``gaussian-mirshani`` name each convention the same way in both commands
KERNELS = ("gaussian", "gaussian-hall", "gaussian-mirshani", "exponential", "matern12", "matern32", "matern52")


def add_subparser(sub) -> None:
    """Add ``machine`` (alias ``svm``, its former name) to the sub-command parsers of ``fdp-ppl``."""
    from .common import SEED_HELP, add_dry_run_args, add_ledger_args, add_output_args, add_unit_args

    p = sub.add_parser(
        NAME, aliases=list(ALIASES), help="release a private kernel machine's decision function (SVM, logistic, "
                                          "ridge; alias svm)",
        description="Fit a regularised kernel machine (1/n) sum loss(g(x_i), y_i) + lam ||g||_H^2 without intercept "
                    "and release its decision function on a grid with Gaussian-process noise (Hall, Rinaldo & "
                    "Wasserman 2013, Section 4.3: Delta = M sqrt(sup K(x,x))/(lam n)) or ICLP noise (Lin & Reimherr "
                    "2026, Theorem 18). Replace-one-record neighbours, n public. Predicted labels: the sign of the "
                    "released function.",
        epilog="kernels (--kernel, bandwidth h = --bandwidth, on the Euclidean distance of the features): gaussian "
               "= gaussian-hall exp(-d^2/(2h^2)) (Hall et al.'s convention; note that fdp-ppl release --kernel "
               "gaussian is Mirshani's exp(-d^2/rho)), gaussian-mirshani exp(-d^2/h) (Mirshani et al.'s: "
               "--bandwidth is their rho, in squared feature units; rho = 2h^2 gives the Hall kernel), exponential "
               "exp(-d/h) (Ornstein-Uhlenbeck), matern12/32/52 (standard Matern, length-scale h). The solver runs "
               "a public number of iterations (hinge: n/slack) that reaches a fixed accuracy for any data, and Delta "
               "is inflated by --solver-slack (default 1 percent) to pay for it.")
    g = p.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="PATH", help="CSV file with a header row, or a netCDF file")
    g.add_argument("--features", required=True, metavar="NAME[,NAME]", help="one or two feature columns")
    g.add_argument("--label", required=True, metavar="NAME", help="label column: -1/+1 (hinge, logistic) or real "
                                                                  "(squared, clipped to +-1)")
    g.add_argument("--domain", default=None, metavar="LO:HI[,LO:HI]",
                   help="public box of the features (clipped to it; also the grid's box); default 0:1 per feature")
    add_unit_args(g)
    m = p.add_argument_group("mechanism")
    m.add_argument("--loss", choices=LOSSES, default="hinge", help="hinge (SVM, default), huber (the hinge with a "
                   "smoothed corner: its solver's iteration count does not grow with n, so it serves n >= 10^5), "
                   "logistic or squared")
    m.add_argument("--lam", type=float, required=True, help="penalty lambda > 0 (public)")
    m.add_argument("--kernel", choices=KERNELS, default="gaussian",
                   help="kernel (default gaussian: exp(-d^2/(2h^2)), Hall's convention, = gaussian-hall; "
                        "gaussian-mirshani: exp(-d^2/h), Mirshani's)")
    m.add_argument("--bandwidth", type=float, required=True, help="kernel bandwidth h > 0 in feature units")
    m.add_argument("--mechanism", choices=("gp", "iclp"), default="gp",
                   help="gp: Gaussian-process noise, (epsilon, delta)-DP (default); iclp: ICLP noise, epsilon-DP, "
                        "one feature")
    m.add_argument("--epsilon", type=float, required=True, help="privacy budget per released function")
    m.add_argument("--delta", type=float, default=None, help="delta of --mechanism gp (required there)")
    m.add_argument("--calibration", choices=("analytic", "classical"), default="analytic",
                   help="Gaussian calibration: analytic (default, any epsilon) or classical (the paper's, epsilon <= 1)")
    m.add_argument("--eta", type=float, default=2.0, help="iclp: the machine's space is the RKHS of C^eta (> 1; "
                                                          "default 2)")
    m.add_argument("--grid-size", type=int, default=None, help="grid points per feature (default 100 for one "
                                                               "feature, 40 for two)")
    m.add_argument("--solver-slack", type=float, default=0.01, help="relative inflation of Delta paying for the "
                                                                    "solver's a-priori accuracy (default 0.01; the "
                                                                    "hinge solver runs n/slack iterations)")
    m.add_argument("--approximation", choices=("auto", "exact", "nystroem"), default="auto",
                   help="how the machine is solved: exact (n x n Gram), nystroem (the span of the kernel at public "
                        "landmarks, an isometric subspace of the same RKHS: same sensitivity and noise, n x r "
                        "features) or auto (default: exact up to 25000 records, Nystroem above; decided from the "
                        "public n)")
    m.add_argument("--landmarks", type=int, default=None, metavar="N",
                   help="nystroem: landmarks per feature, an evenly spaced lattice on the public --domain (default: "
                        "the release grid, halved until small enough)")
    m.add_argument("--draws", type=int, default=1, help="number of released functions; charged draws x budget")
    m.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    d = add_dry_run_args(p, "noise bands, sign agreement at --margin",
                         "the public number of records (persons with --privacy-unit); default: the length of --label "
                         "in a netCDF file's metadata")
    d.add_argument("--margin", type=float, nargs="+", default=None, metavar="GAMMA",
                   help="with --dry-run: stated margins |f(x)| of the non-private decision function at which the sign "
                        "agreement is shown (default 0.1 0.25 0.5 1, capped at the public bound on |f|)")
    add_output_args(p)
    add_ledger_args(p)


def _parse_domain(text, d):
    from .common import CLIError

    if text is None:
        return [[0.0, 1.0]] * d
    try:
        parts = [[float(v) for v in item.split(":")] for item in text.split(",")]
        if any(len(q) != 2 or not q[0] < q[1] for q in parts):
            raise ValueError
    except ValueError:
        raise CLIError(f"--domain must be LO:HI[,LO:HI] with LO < HI (got {text!r})", "e.g. --domain 0:1,0:1") from None
    if len(parts) == 1:
        parts = parts * d
    if len(parts) != d:
        raise CLIError(f"--domain has {len(parts)} intervals for {d} features", "give one LO:HI per feature")
    return parts


def _check(a):
    from ..noise.mechanisms import ICLP, GaussianMechanism
    from ..releasing.plans import check_draws
    from .common import CLIError, check_ledger_args, check_out, check_unit_args, finite, warn_large_epsilon

    a.unit = check_unit_args(a)
    if a.unit is not None and (a.unit.max_contributions != 1 or a.unit.order is not None):
        raise CLIError("a kernel machine takes --max-contributions 1 per person (it is not linear in its records: "
                       "they cannot be combined)", "pass --privacy-unit COLUMN --max-contributions 1")
    if a.landmarks is not None and (a.landmarks < 1 or a.approximation == "exact"):
        raise CLIError("--landmarks takes a count >= 1 and applies to the Nystroem approximation",
                       "pass --approximation nystroem (or auto) with --landmarks N >= 1, or drop --landmarks")
    a.feature_names = [f.strip() for f in a.features.split(",") if f.strip()]
    if len(a.feature_names) not in (1, 2):
        raise CLIError(f"--features takes one or two column names (got {a.features!r})", "e.g. --features x1,x2")
    if a.mechanism == "iclp":
        if a.delta is not None:
            raise CLIError("--mechanism iclp is pure epsilon-DP and takes no --delta", "drop --delta")
        if len(a.feature_names) != 1:
            raise CLIError("--mechanism iclp releases a machine on one feature", "use --mechanism gp for two")
    # the library's checks of epsilon, delta, the calibration and draws, before the ledger and the data
    a.mech = GaussianMechanism(a.epsilon, a.delta, a.calibration) if a.mechanism == "gp" else ICLP(a.epsilon)
    check_draws(a.draws)
    # what the spec checks once n is known (after the table is read), checked here before it is read
    for flag, v in (("--lam", a.lam), ("--bandwidth", a.bandwidth)):
        if not (finite(v) and v > 0):
            raise CLIError(f"{flag} must be a finite number > 0 (got {v})", f"pass e.g. {flag} 1")
    if a.mechanism == "iclp" and not (finite(a.eta) and a.eta > 1):
        raise CLIError(f"--eta must be > 1 (got {a.eta})", "e.g. --eta 2")
    if a.grid_size is not None and a.grid_size < 2:
        raise CLIError(f"--grid-size must be >= 2 (got {a.grid_size})", "e.g. --grid-size 50")
    if not (finite(a.solver_slack) and 0 < a.solver_slack < 1):
        raise CLIError(f"--solver-slack must lie in (0, 1) (got {a.solver_slack})", "e.g. --solver-slack 0.01")
    a.domain_box = _parse_domain(a.domain, len(a.feature_names))
    check_out(a)
    check_ledger_args(a)
    warn_large_epsilon(a.epsilon)


def _load_table(a):
    """Features (n, d) and labels (n,) from a CSV or netCDF file, and the refusal that depends on their values
    (``(message, fix)`` or None: a missing, non-finite or non-numeric value, a label not ±1), which
    :func:`run` raises only after the charge (DESIGN invariant 9): until then the values are never looked at."""
    import numpy as np

    from .common import CLIError

    path = Path(a.data).expanduser()
    if not path.is_file():
        raise CLIError(f"--data {a.data} does not exist", "pass the path of a .csv or .nc file")
    cols = [*a.feature_names, a.label]
    a.unit_ids = None
    if path.suffix.lower() in (".nc", ".nc4", ".netcdf", ".h5"):
        import xarray as xr

        with xr.open_dataset(path) as ds:
            missing = [c for c in cols if c not in ds.variables]
            if missing:
                raise CLIError(f"{path.name} has no variable {missing[0]!r}",
                               f"choose from {', '.join(map(str, ds.data_vars))}")
            arrays = [np.asarray(ds[c].values, dtype=float).reshape(-1) for c in cols]
            if a.unit is not None:
                if a.unit.column not in ds.variables:
                    raise CLIError(f"{path.name} has no variable {a.unit.column!r} for --privacy-unit",
                                   f"choose from {', '.join(map(str, ds.variables))}")
                a.unit_ids = np.asarray(ds[a.unit.column].values).reshape(-1)
            else:
                _warn_ids({c: np.asarray(ds[c].values).reshape(-1) for c in ds.variables if c not in cols
                           and ds[c].size == arrays[0].size})
    else:
        import pandas as pd

        try:
            df = pd.read_csv(path)
        except Exception as err:
            raise CLIError(f"cannot read {path.name} as CSV: {err}", "pass a CSV file with a header row") from err
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise CLIError(f"{path.name} has no column {missing[0]!r}", f"choose from {', '.join(map(str, df.columns))}")
        # a value that is not a number becomes NaN and is refused after the charge (never named: it is data)
        arrays = [pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float) for c in cols]
        if a.unit is not None:
            if a.unit.column not in df.columns:
                raise CLIError(f"{path.name} has no column {a.unit.column!r} for --privacy-unit",
                               f"choose from {', '.join(map(str, df.columns))}")
            a.unit_ids = df[a.unit.column].to_numpy()
        else:
            _warn_ids({c: df[c].to_numpy() for c in df.columns if c not in cols})
    if len({v.size for v in arrays}) != 1:
        raise CLIError("the feature and label variables have different lengths", "pass variables along one record dim")
    X = np.stack(arrays[:-1], axis=-1)
    y = arrays[-1]
    if y.size < 2:  # the number of rows is public
        raise CLIError("the table needs at least 2 records", "pass more data")
    problem = None
    if not np.all(np.isfinite(X)) or not np.all(np.isfinite(y)):
        problem = ("some records have a missing, non-finite or non-numeric value (counts are not shown)",
                   "drop or impute them by a public rule before the release (n is the number of records)")
    elif a.loss != "squared" and not np.all(np.isin(y, (-1.0, 1.0))):
        problem = (f"--label {a.label} has values other than -1 and +1, needed by --loss {a.loss}",
                   "recode the labels to -1/+1")
    if problem is not None:  # public stand-ins, never fitted: the run is refused after the charge
        X, y = np.zeros_like(X), np.ones_like(y)
    return X, y, problem


def _warn_ids(columns: dict) -> None:
    """The record-level warning of :func:`fdp_ppl.cli.common.warn_record_level` for a table's other columns."""
    import numpy as np
    import xarray as xr

    from .common import warn_record_level

    if columns:
        size = len(next(iter(columns.values())))
        warn_record_level(xr.DataArray(np.zeros(size), dims="curve",
                                       coords={c: ("curve", v) for c, v in columns.items()}))


def _kernel(a):
    from ..spaces import Exponential, Gaussian, Matern

    h = a.bandwidth
    if a.kernel in ("gaussian", "gaussian-hall"):
        return Gaussian.from_bandwidth(h)
    if a.kernel == "gaussian-mirshani":
        return Gaussian(h, convention="mirshani")
    if a.kernel == "exponential":
        return Exponential(h)
    return Matern(h, nu={"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}[a.kernel])


def run(a) -> int:
    """Run ``fdp-ppl machine`` with parsed arguments; returns the exit code."""
    from ..accounting import PrivacyBudget
    from .._progress import stage
    from .common import (Prepaid, open_ledger, plotter, refused_after_charge, release_flags, write_holder_report,
                         write_release)
    import fdp_ppl as fp
    from ..errors import SeededReleaseWarning

    _check(a)
    if getattr(a, "dry_run", False):
        return _dry_run(a)
    delta = a.delta if a.mechanism == "gp" else 0.0
    cost = PrivacyBudget(a.epsilon * a.draws, delta * a.draws)
    ledger = open_ledger(a, cost)
    X, y, problem = _load_table(a)
    import numpy as np

    n = y.size if a.unit is None else int(np.unique(a.unit_ids).size)
    spec = _spec(a, n)
    mech = a.mech
    from .common import check_output_space

    check_output_space(a, 8.0 * a.draws * int(np.prod(spec.grid_size)) * 2 + 8.0 * int(np.prod(spec.grid_size)) * 8)
    spec.check_size()  # n x n memory: refused before the ledger is charged
    label = f"machine {a.loss}/{a.mechanism} ({a.draws} x epsilon {a.epsilon:g}) -> {a.out}"
    plan = fp.plan(spec, mech, draws=a.draws)
    # public, before the prepaid charge
    plan.check_delta(getattr(a, "allow_large_delta", False) or getattr(a, "study", False))
    if ledger is not None:  # the solver's outcome depends on the data: charged before it runs, never after
        ledger = Prepaid(ledger, cost, label, dataset=Path(str(a.data)).name, mechanism=f"machine-{a.mechanism}",
                         event=plan.event, records_per_unit=getattr(a, "records_per_unit", None))
    if problem is not None:  # depends on the values: only after every public check and the charge
        raise refused_after_charge(*problem, ledger)
    with stage(f"solving the {a.loss} kernel machine"):
        fit = spec.fit(X, y, units=a.unit_ids)
    with warnings.catch_warnings(), stage("drawing the release"):  # a seeded release is stated in the table
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(fit, mech, draws=a.draws, random_seed=a.seed, study=a.study,
                          ledger=ledger, label=label,
                          provenance={"data_source": Path(str(a.data)).name, "features": ",".join(a.feature_names),
                                      "label": a.label}, **release_flags(a))
    out = write_release(tree, a.out, a.plot, plotter("plot_decision"))
    _print_table(tree, out, a, ledger)
    # the clipped count is the data holder's: never printed, only to a file of theirs when asked
    write_holder_report(a, {"command": "svm", "records": int(fit.spec.n), "clipped": int(fit.n_clipped),
                            "clipped_what": "records with a feature outside --domain, clipped to it"})
    return 0


def _spec(a, n: int):
    """The public :class:`~fdp_ppl.machine.ERMSpec` of the flags for ``n`` records (or persons)."""
    from ..machine import ERMSpec

    d = len(a.feature_names)
    return ERMSpec(_kernel(a), lam=a.lam, n=n, loss=a.loss, domain=a.domain_box,
                   grid_size=a.grid_size or (100 if d == 1 else 40), eta=a.eta if a.mechanism == "iclp" else None,
                   solver_slack=a.solver_slack, privacy_unit=a.unit, approximation=a.approximation,
                   landmarks=a.landmarks)


def _public_n(a) -> int:
    """n from ``--n`` or from a netCDF file's metadata (the length of ``--label``; its values are never loaded)."""
    from .common import CLIError

    path = Path(a.data).expanduser()
    if path.suffix.lower() not in (".nc", ".nc4", ".netcdf", ".h5") or a.unit is not None:
        if a.n is None:
            raise CLIError("--dry-run needs the public n (it reads only a netCDF file's metadata, and persons are "
                           "counted from their ids)", "pass --n N")
        n = int(a.n)
    else:
        if not path.is_file():
            raise CLIError(f"--data {a.data} does not exist", "pass the path of a .nc file, or --n N")
        import xarray as xr

        with xr.open_dataset(path) as ds:  # lazy: sizes only
            if a.label not in ds.variables:
                raise CLIError(f"{path.name} has no variable {a.label!r}", f"choose from {', '.join(map(str, ds.data_vars))}")
            n = int(ds[a.label].size)
        if a.n is not None and int(a.n) != n:
            raise CLIError(f"--n {a.n} differs from the {n} records of {path.name}", "drop --n")
    if n < 2:
        raise CLIError(f"a kernel machine needs n >= 2 (got {n})", "pass the public number of records")
    return n


def _dry_run(a) -> int:
    """``--dry-run``: the plan of the flags and its accuracy (no data values read, nothing drawn, charged or
    written): :meth:`fdp_ppl.ReleasePlan.accuracy` with the stated ``--margin``."""
    import fdp_ppl as fp

    from ..releasing.accuracy import accuracy_table
    from .common import print_table

    n = _public_n(a)
    plan = fp.plan(_spec(a, n), a.mech, draws=a.draws, seeded=a.seed is not None)
    acc = plan.accuracy(margin=a.margin)
    rows = ([("n", str(n))] + plan.table() + accuracy_table(acc)
            + [("margin assumed", f"|f(x)| >= margin (not checked: the fit is private); no fit has |f| above "
                                  f"{acc.attrs['decision_bound']:.4g}"),
               ("spent by this plan", "nothing (no data values read, no ledger, no file)")])
    print_table("machine plan", rows)
    return 0


def _print_table(tree, out, a, ledger) -> None:
    from .common import ledger_text, print_table, seed_text, study_rows, unit_text

    at = tree.attrs
    gp = a.mechanism == "gp"
    privacy = (f"({at['epsilon']:g}, {at['delta']:g})-DP per function, {at['calibration']} calibration" if gp
               else f"{at['epsilon']:g}-DP per function (ICLP)")
    rows = [
        ("mechanism", "Gaussian-process noise, Hall et al. (2013) Section 4.3" if gp
         else "ICLP noise on the kernel eigenbasis, Lin & Reimherr (2026) Theorem 18"),
        ("privacy", privacy),
        ("spent", (f"epsilon {at['budget_spent_epsilon']:g}, delta {at['budget_spent_delta']:g} "
                  f"({a.draws} release{'s' if a.draws > 1 else ''}, basic composition)")),
        ("machine", f"{a.loss} loss, lambda {a.lam:g}, no intercept, n = {at['n']}"),
        ("kernel", f"{a.kernel}, bandwidth {a.bandwidth:g}; " + (
            f"Nystroem on {int(at['nystroem_landmarks'])} public landmarks (same RKHS, same sensitivity)"
            if at.get("kernel_approximation") == "nystroem" else "exact (n x n Gram)")),
        ("privacy unit", unit_text(at)),
        ("sensitivity", (f"{at['sensitivity']:.4g} in the {at['sensitivity_norm']} norm (M = "
                        f"{at['admissibility_M']:.3g}, solver slack {a.solver_slack:g})")),
        ("noise", f"scale {at['noise_scale']:.4g}; {at['noise_kernel']}"),
        ("noise seed", seed_text(int(at["noise_seeded"]))), *study_rows(at),
        ("noise generator", f"{at.get('noise_generator', '?')} (fp_safe = {at.get('fp_safe', 0)}): "
                            f"{str(at.get('fp_safe_reason', '')).split(': ', 1)[-1]}"),
        ("not covered", "the solver's run time (its number of sweeps depends on the data): do not publish it "
                        "(fdp-ppl audit finds it)"),
        ("release", (f"{out} (posterior/decision on a {'x'.join(map(str, tree['posterior']['decision'].shape[2:]))} "
                    "grid; predicted label = sign)")),
    ]
    rows.append(("ledger", ledger_text(ledger, at)))
    if a.plot:
        rows.append(("plot", str(a.plot)))
    print_table(f"machine {at.get('data_source', '')}", rows)
    print(f"wrote {out}" + (f" and {a.plot}" if a.plot else "") + f"; spent epsilon {at['budget_spent_epsilon']:g}, "
          f"delta {at['budget_spent_delta']:g}")


__all__ = ["add_subparser", "run"]
