"""``fdp-ppl fpca``: ε-DP principal components by the exponential mechanism (Awan, Kenney, Reimherr &
Slavković 2019).

Loads curves like ``fdp-ppl release`` (a bundled dataset name or a file; the record dim from names;
``--missing``), builds the public :class:`~fdp_ppl.fpca.FPCASpec` (grid from the file's grid, m basis
functions: Fourier on the grid or a kernel's first m eigenfunctions, Σ by a stated public rule), clips
each curve to the public ``--tau`` in L² norm and divides by it (never by the data's largest norm),
charges the ledger ``draws × (ε'', 0)`` (the pure guarantee of the fixed-budget exact samplers; ``draws × (ε', δ')``
with ``--delta``; ``draws × ε`` for uncertified MCMC) and releases ``--draws`` frames with the chosen sampler
(:func:`fdp_ppl.release`). The file holds ``posterior/components`` (chain, draw,
component, t) and ``posterior/frame`` (chain, draw, basis, component); ``constant_data`` the public
basis on the grid, its quadrature weights and Σ; root attrs ε, τ, n, m, k, basis, ``sigma_rule``, form,
sampler, iterations, exact.

This module imports only the standard library and :mod:`fdp_ppl._names` at import time, so ``fdp-ppl --help`` stays fast; the
library is imported when the command runs.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

from .._names import FPCA_FORMS, FPCA_SAMPLERS

NAME = "fpca"
FORMS, SAMPLERS = FPCA_FORMS, FPCA_SAMPLERS


def add_subparser(sub) -> None:
    """Add ``fpca`` to the sub-command parsers of ``fdp-ppl``."""
    from .common import (DEFAULT_RHO, SEED_HELP, add_dry_run_args, add_ledger_args, add_out_of_core_args,
                         add_output_args, add_unit_args)

    p = sub.add_parser(
        NAME, help="release epsilon-DP principal components (exponential mechanism)",
        description="Release an epsilon-DP k-dimensional principal subspace of curves: the exponential mechanism "
                    "(Awan, Kenney, Reimherr & Slavkovic 2019). Curves are "
                    "clipped to the public --tau in L2 norm and divided by it; the objective is the uncentred "
                    "sum_i ||P X_i||^2 with sensitivity 1 (replace one curve).",
        epilog="forms: bingham = the paper's Section 5 density etr(eps/2 V'(X'X - Sigma^-1)V) w.r.t. the uniform law "
               "on frames (depends on the scale of Sigma); gp-base = Theorem 4.1, exp(eps/2 tr(V'X'XV)) w.r.t. the "
               "law of the span of k Gaussian vectors N(0, Sigma) (scale-free). samplers: exact = ACG rejection "
               "(bingham, k = 1) or rejection from the base (gp-base, any k); gibbs = column-wise Gibbs (bingham, "
               "any k; not exact for k > 1); nuts = PyMC NUTS on a Euclidean parametrisation (either form; never "
               "exact). A release that is not exact says so in its attrs (exact = 0, certified = 0: uncertified MCMC). "
               "Exact samplers run a data-independent number of proposals per frame and release a public fallback "
               "(the target's reference law) when none is accepted: pure epsilon''-DP, epsilon'' = epsilon + ~1e-10 "
               "(default), or (epsilon', delta')-DP with delta' <= --delta; a size whose budget the machine cannot "
               "serve is refused before the ledger is charged. The default (bingham, exact) serves k = 1; for k > 1 "
               "the bingham form is served exactly by sequential (k vector-Bingham steps on nested orthogonal "
               "complements, epsilon/k each: pure epsilon-DP by composition, not the joint matrix Bingham law) and "
               "by gibbs and nuts (uncertified MCMC of the joint law); gp-base is refused unless n x epsilon is "
               "small.")
    g = p.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="PATH_OR_NAME",
                   help="bundled dataset name (growth, weather, dti, electricity) or the path of a NetCDF file or "
                        "Zarr store with one 2-D variable of curves (records x grid), or of a CSV / Parquet table "
                        "(wide: one row per record, grid points as column headers, ids in the first column; long: "
                        "columns id, t, value)")
    g.add_argument("--var", default=None, metavar="NAME", help="variable in the file (needed if it holds several)")
    g.add_argument("--data-dir", default=None, metavar="DIR", help="directory of the named datasets")
    g.add_argument("--missing", choices=("error", "impute"), default="error",
                   help="error (default): a record with a NaN/inf value stops the release after the charge (nothing is "
                        "drawn; whether a value is missing depends on the data); impute: set each missing "
                        "point to 0 and keep every record (n stays the number of records)")
    g.add_argument("--record-dim", "--curve-dim", dest="record_dim", default=None, metavar="NAME",
                   help="name of the record dimension (the privacy unit)")
    g.add_argument("--t-dim", default=None, metavar="NAME", help="name of the grid dimension")
    add_unit_args(g)
    add_out_of_core_args(g, "sum the second-moment operator")
    m = p.add_argument_group("mechanism")
    m.add_argument("--k", type=int, required=True, help="number of components released jointly (one frame, one epsilon)")
    m.add_argument("--m", type=int, required=True, help="number of basis functions (k <= m <= grid size)")
    m.add_argument("--basis", default="fourier", metavar="NAME",
                   help="fourier (default; Sigma_ii = i^-3 as in the paper's Section 6.1) or a kernel name "
                        "(matern32, matern12, matern52, exponential, gaussian): its first m eigenfunctions on the "
                        "grid, Sigma = diag of its operator eigenvalues")
    m.add_argument("--rho", type=float, default=None, help=f"kernel length-scale (kernel bases; default {DEFAULT_RHO})")
    m.add_argument("--epsilon", type=float, required=True, help="privacy budget per released frame")
    m.add_argument("--tau", type=float, required=True,
                   help="public bound on the curves' L2 norm (curves are clipped to it and divided by it)")
    m.add_argument("--form", choices=FORMS, default="bingham",
                   help="bingham (default; Section 5, exact and pure epsilon-DP for k = 1) or gp-base (Theorem 4.1, "
                        "exact by rejection for any k, but refused unless n x epsilon is small)")
    m.add_argument("--sampler", choices=SAMPLERS, default="exact",
                   help="exact (default), sequential (bingham, k > 1: k exact vector-Bingham steps with epsilon/k "
                        "each, pure epsilon-DP by composition; a different mechanism from the joint law), gibbs or "
                        "nuts")
    m.add_argument("--split", type=float, nargs="+", default=None, metavar="W",
                   help="--sampler sequential: public fractions of --epsilon per component (k numbers summing to "
                        "1; default epsilon/k each)")
    m.add_argument("--iterations", type=int, default=200,
                   help="Gibbs scans or NUTS tuning steps per released frame (default 200; ignored by exact; at "
                        "least 20 Gibbs scans for k > 1 and 100 NUTS tuning steps)")
    m.add_argument("--delta", type=float, default=None,
                   help="use the (epsilon', delta')-DP variant of the exact samplers, each frame falling back with "
                        "probability <= DELTA (e.g. 1e-10; needs a ledger with a delta budget); default: pure "
                        "epsilon''-DP where the public bounds allow it")
    m.add_argument("--draws", type=int, default=1, help="number of released frames; the ledger is charged draws x epsilon")
    m.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    d = add_dry_run_args(p, "the principal angle at each --eigengap",
                         "the public number of curves (persons x contributions with --privacy-unit); default: the "
                         "record dim's size in a netCDF file's or Zarr store's metadata")
    d.add_argument("--grid", type=int, default=None, metavar="K",
                   help="with --dry-run: K equally spaced grid points on [0, 1] instead of the file's grid (for a "
                        "CSV or Parquet table, whose metadata is not read)")
    d.add_argument("--eigengap", type=float, nargs="+", default=None, metavar="G",
                   help="with --dry-run: stated gaps in (0, 1] between the k-th and the next eigenvalue of the "
                        "tau-scaled curves' second moment (default 0.01 0.03 0.1 0.3)")
    d.add_argument("--samples", type=int, default=None,
                   help="with --dry-run: Monte Carlo frames per eigengap (default 1000; 100 for Gibbs, k > 1)")
    add_output_args(p)
    add_ledger_args(p)


def _check(a):
    import fdp_ppl as fp

    from ..errors import check_epsilon
    from ..releasing.plans import check_draws
    from .common import CLIError, check_ledger_args, check_out, check_unit_args, finite, warn_large_epsilon

    a.unit = check_unit_args(a)
    # the library's checks of epsilon (the spec's), delta and the sampler (the mechanism's) and draws, before the
    # data are read
    check_epsilon(a.epsilon)
    warn_large_epsilon(a.epsilon)
    a.mech = fp.ExponentialMechanism(sampler=a.sampler, iterations=a.iterations, delta=a.delta,
                                     split=getattr(a, "split", None))
    check_draws(a.draws)
    if not (finite(a.tau) and a.tau > 0):
        raise CLIError(f"--tau must be a finite number > 0 (got {a.tau})",
                       "pass a public bound on the curves' L2 norm, e.g. --tau 1")
    if a.k < 1 or a.m < 1:
        raise CLIError(f"--k and --m must be >= 1 (got k = {a.k}, m = {a.m})", "e.g. --k 2 --m 5")
    if a.k > a.m:
        raise CLIError(f"--k {a.k} components cannot exceed --m {a.m} basis functions", "choose k <= m")
    if a.iterations < 1:
        raise CLIError(f"--iterations must be >= 1 (got {a.iterations})", "e.g. --iterations 200")
    from ..fpca.fpca_plan import iteration_floor

    floor = iteration_floor(a.sampler, a.k)
    if a.iterations < floor:
        what = "NUTS tuning steps" if a.sampler == "nuts" else "Gibbs scans (k > 1)"
        raise CLIError(f"--iterations {a.iterations} is below the public floor of {floor} {what}",
                       f"pass --iterations {floor} or more (default 200)")
    from .._names import KERNEL_NAMES
    from .common import DEFAULT_RHO

    if a.basis != "fourier" and a.basis not in KERNEL_NAMES:
        raise CLIError(f"unknown --basis {a.basis!r}", f"choose fourier or a kernel: {', '.join(KERNEL_NAMES)}")
    if a.basis == "fourier" and a.rho is not None:
        raise CLIError("--rho applies to a kernel basis, not to --basis fourier", "drop --rho or pass --basis matern32")
    # the kernel of a kernel basis (the library refuses a bad rho), before the data are read
    a.kernel = None if a.basis == "fourier" else fp.kernel_from_name(a.basis, DEFAULT_RHO if a.rho is None else a.rho)
    if a.delta is not None and (a.sampler == "nuts" or (a.sampler == "gibbs" and a.k > 1)):
        raise CLIError("--delta applies to the exact samplers (and k = 1 Gibbs); NUTS and Gibbs with k > 1 are "
                       "uncertified MCMC, with no delta to state", "drop --delta or pass --sampler exact --k 1")
    if a.form == "bingham" and a.sampler == "exact" and a.k > 1:
        raise CLIError("no exact sampler for --form bingham with k > 1: only --sampler gibbs or nuts, which are "
                       "uncertified MCMC (no certified guarantee)",
                       "pass --sampler sequential (k exact steps with epsilon/k each, pure epsilon-DP; a different "
                       "mechanism), --k 1 (exact, pure epsilon-DP), --sampler gibbs (uncertified MCMC), or --form gp-base "
                       "(exact for any k, but refused unless n x epsilon is small)")
    if a.form == "gp-base" and a.sampler == "gibbs":
        raise CLIError("the Gibbs sampler serves --form bingham only",
                       "pass --sampler exact (rejection from the base measure) or --sampler nuts")
    check_out(a)
    check_ledger_args(a)


def _spec(a, curves):
    from .. import dims

    return _spec_on(a, curves[dims.T].values)


def _spec_on(a, t):
    """The public :class:`~fdp_ppl.fpca.FPCASpec` of the flags on the grid points ``t``."""
    import numpy as np

    from ..fpca import FPCASpec
    from ..spaces import Grid, eigenbasis

    grid = Grid.from_points(np.asarray(t, dtype=float))
    basis = "fourier" if a.kernel is None else eigenbasis(a.kernel, grid)
    return FPCASpec(grid=grid, m=a.m, k=a.k, epsilon=a.epsilon, tau=a.tau, basis=basis, form=a.form,
                    privacy_unit=a.unit)


def run(a) -> int:
    """Run ``fdp-ppl fpca`` with parsed arguments; returns the exit code."""
    from .. import dims
    from .._progress import stage
    from .common import (CLIError, Prepaid, dataset_identity, load_data, open_ledger, plotter, refused_after_charge,
                         release_flags, write_holder_report, write_release)
    from ..errors import SeededReleaseWarning
    import fdp_ppl as fp
    from ..fpca.fpca_plan import release_plan

    import numpy as np

    _check(a)
    if getattr(a, "dry_run", False):
        return _dry_run(a)
    lazy = a.chunks is not None or a.scheduler is not None or str(a.data).rstrip("/").endswith(".zarr")
    if lazy:  # out of core: a lazy store, the Gram summed chunk by chunk on a dask cluster
        if a.unit is not None:
            raise CLIError("--privacy-unit is not available out of core (--chunks, --scheduler, Zarr)",
                           "combine each person's records into one in the store first, or run in memory")
        from ..io.stores import open_curves

        with stage(f"opening {a.data} lazily"):
            curves = open_curves(a.data, a.var, chunks=a.chunks, record_dim=a.record_dim, t_dim=a.t_dim,
                                 missing=a.missing)
        missing_found = False  # out of core: a missing value is refused by the fit, after the charge
    else:
        with stage(f"loading {a.data}"):  # missing points imputed in every case: refused after the charge if not asked
            curves = load_data(a.data, a.var, data_dir=a.data_dir, missing="impute", record_dim=a.record_dim,
                               t_dim=a.t_dim)
        missing_found = a.missing == "error" and int(curves.attrs.get("n_imputed_points", 0)) > 0
    spec = _spec(a, curves)
    from .common import warn_record_level

    if lazy:
        units, n = None, int(curves.sizes[dims.CURVE])  # public: the store's metadata
    elif a.unit is None:
        warn_record_level(curves)
        units, n = None, int(curves.sizes[dims.CURVE])  # public (replace-one adjacency)
    else:  # public under the unit-level relation: units (combine) or k x units (max_contributions)
        units = a.unit.ids(curves)
        n = int(np.unique(units).size) * a.unit.contributions
    # the cost that will be charged (pure epsilon'' or (epsilon', delta')), and every public refusal, before the ledger
    release_plan(spec, n, a.sampler, draws=a.draws, iterations=a.iterations, delta=a.delta, flags=True,
                 split=a.mech.split)  # every public refusal, in the command's words
    public = fp.plan(spec, a.mech, draws=a.draws, n=n, seeded=a.seed is not None, study=a.study)
    ledger = open_ledger(a, public.cost)  # the cost charged (the frame lattice's delta included)
    label = f"fpca {a.form}/{a.sampler} k={a.k} ({a.draws} x epsilon {a.epsilon:g}) -> {a.out}"
    charged = ledger
    if ledger is not None:  # charged before anything that depends on the data's values (DESIGN invariant 9)
        # public, before the prepaid charge
        public.check_delta(getattr(a, "allow_large_delta", False) or getattr(a, "study", False))
        with stage("charging the ledger"):
            charged = Prepaid(ledger, public.cost, label, dataset=dataset_identity(curves), mechanism=public.mechanism,
                              event=public.event, records_per_unit=getattr(a, "records_per_unit", None))
    if missing_found:
        raise refused_after_charge("the data have curves with missing (NaN/inf) values (counts are not shown)",
                                   "pass --missing impute (each missing point set to 0, every record kept), chosen "
                                   "before looking at the data", ledger)
    if lazy:
        from ..io.stores import dask_client

        with stage("fitting the summary chunk by chunk (dask)"), dask_client(a.scheduler):
            fit = spec.fit(curves.transpose(dims.CURVE, dims.T), n=n)
    else:
        with stage("fitting the summary (basis, clipping at tau)"):
            fit = spec.fit(curves.transpose(dims.CURVE, dims.T).values, units=units, n=n)
    bars = a.sampler != "exact" and sys.stderr.isatty()  # the samplers' own progress bars (one live display)
    source = Path(str(a.data)).name + (f" / {a.var}" if a.var else "")
    from ..summaries import curve_labels

    # public descriptions of the data (names and units, never values): the table's tau and the plot's axis
    provenance = {"data_source": source, "missing": a.missing, **curve_labels(curves)}
    with warnings.catch_warnings(), (contextlib.nullcontext() if bars else stage("drawing the release")):
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(fit, a.mech,
                          draws=a.draws, random_seed=a.seed, study=a.study, ledger=charged,
                          dataset=dataset_identity(curves), label=label, progressbar=bars, provenance=provenance,
                          **release_flags(a))
    out = write_release(tree, a.out, a.plot, plotter("plot_fpca"))
    _print_table(tree, out, a, ledger)
    # the clipped count is the data holder's: never printed, only to a file of theirs when asked
    write_holder_report(a, {"command": "fpca", "records": int(fit.n), "clipped": int(fit.n_clipped),
                            "clipped_what": "curves with L2 norm above tau"})
    return 0


def _dry_run(a) -> int:
    """``--dry-run``: the plan of the flags and its accuracy at the stated ``--eigengap`` (n and the grid from
    ``--n`` / ``--grid`` or a file's metadata; no data values read, nothing drawn, charged or written)."""
    import numpy as np

    import fdp_ppl as fp

    from ..releasing.accuracy import accuracy_table
    from .common import CLIError, print_table
    from .plan import metadata

    if a.grid is not None:  # a stated grid: the file is not opened at all
        if a.grid < 2 or a.n is None:
            raise CLIError("--grid K needs K >= 2 and the public --n", "e.g. --grid 101 --n 500")
        t, n = np.linspace(0.0, 1.0, int(a.grid)), int(a.n)
    else:
        t, n = metadata(a, data_required=True)
    plan = fp.plan(_spec_on(a, t), a.mech, draws=a.draws, n=n, seeded=a.seed is not None)
    mcmc_law = a.form == "bingham" and a.k > 1
    acc = plan.accuracy(eigengap=a.eigengap, samples=a.samples or (100 if mcmc_law else 1000))
    rows = ([("n", str(n)), ("grid", f"{len(t)} points")] + plan.table() + accuracy_table(acc)
            + [("eigengap assumed", "spiked second moment: the top k eigenvalues of the tau-scaled curves' second "
                                    "moment exceed the others (equal) by the gap, along the first k basis functions "
                                    "(not checked: the data are private)"),
               ("angle drawn by", acc.attrs["sampler"]),
               ("spent by this plan", "nothing (no data values read, no ledger, no file)")])
    print_table("fpca plan", rows)
    return 0


def _print_table(tree, out, a, ledger) -> None:
    from .common import ledger_text, print_table, seed_text, study_rows, unit_text

    at = tree.attrs
    exact = int(at["exact"])
    certified = int(at.get("certified", exact))
    frames = f"{at['draws']} frame{'s' if at['draws'] > 1 else ''}"
    if certified and int(at.get("pure", 0)):
        eps_row = (f"{at['epsilon']:g} per frame; guaranteed pure {at['epsilon_guaranteed']:.12g}-DP per frame (a "
                   f"data-independent budget of {at['proposal_budget']} proposals; a public fallback with probability "
                   f"<= exp({at['fallback_bound_log']:.4g})); spent {at['draws']} × ({at['epsilon_guaranteed']:.12g}, 0) "
                   f"= ({at['budget_spent_epsilon']:.12g}, 0) ({frames})")
    elif certified:
        eps_row = (f"{at['epsilon']:g} per frame; guaranteed ({at['epsilon_guaranteed']:.12g}, "
                   f"{at['delta_guaranteed']:.3g}) per frame (a data-independent budget of {at['proposal_budget']} "
                   f"proposals; a public fallback with probability <= delta); spent {at['draws']} × "
                   f"({at['epsilon_guaranteed']:g}, {at['delta_guaranteed']:.3g}) = ({at['budget_spent_epsilon']:g}, "
                   f"{at['budget_spent_delta']:.3g}) ({frames})")
    else:
        eps_row = (f"{at['epsilon']:g} per frame; spent {at['draws']} × {at['epsilon']:g} = "
                   f"{at['budget_spent_epsilon']:g} ({at['draws']} frame{'s' if at['draws'] > 1 else ''}); "
                   "UNCERTIFIED MCMC: delta not bounded (the ledger records epsilon only)")
    rows = [
        ("mechanism", f"exponential mechanism, ε-DP FPCA, {at['form']} form (Awan et al. 2019)"),
        ("epsilon", eps_row),
        ("sensitivity", f"{at['sensitivity']:g} (uncentred sum_i ||P X_i||^2, ||X_i|| <= 1)"),
        ("tau", f"{at['tau']:g}" + (f" {at['value_units']}" if at.get("value_units") else "")
                + " (L2 bound on the grid rescaled to [0, 1]; curves clipped to it and divided by it)"),
        ("n", f"{at['n']} curves × {at['grid_size']} grid points"),
        ("privacy unit", unit_text(at)),
        ("basis", f"{at['basis']}, m = {at['m']}"),
        ("Sigma", str(at["sigma_rule"])),
        ("k", f"{at['k']} components (an orthonormal frame: unordered, signs arbitrary)"),
        ("sampler", f"{at['sampler']} ({at['sampler_reference']})"
                    + (f", {at['iterations']} iterations" if at["iterations"] else "")),
        ("exact", "yes: exact draws from the mechanism (except a public fallback with the data-independent "
                  "probability bound above)"
         if exact else
         "NO: uncertified MCMC after a fixed number of steps; the guarantee is (epsilon, (1 + e^epsilon) gamma) with "
         "gamma the chain's unknown distance to the target" + ("; its run time depends on the data"
                                                                if at["sampler"] == "nuts" else "")),
        ("noise seed", seed_text(int(at["noise_seeded"]))), *study_rows(at),
        ("noise generator", (f"float64 sampler, frames on the public dithered lattice 2^-{at['frame_lattice_bits']} Z: "
                             "floating-point safe (its delta is in the guarantee)") if int(at.get("fp_safe", 0)) else
                            "float64 sampler, frames on a public dithered lattice, NOT floating-point safe as stated "
                            "(a pure, uncertified or too-small-delta plan cannot hold the lattice's total-variation "
                            "distance in its delta: the file's fp_safety says which)"),
        ("release", str(out)),
    ]
    rows.append(("ledger", ledger_text(ledger, at)))
    if a.plot:
        rows.append(("plot", str(a.plot)))
    print_table(f"fpca {at.get('data_source', '')}", rows)


__all__ = ["add_subparser", "run"]
