"""``fdp-ppl release``: a private mean curve of a dataset with any mechanism of :data:`fdp_ppl.releasing.registry.MECHANISMS`.

Load curves (a bundled dataset name, a netCDF / Zarr / CSV / Parquet path), fit a public summary spec clipped at a
public τ, release it, write the release (``xarray.DataTree`` as netCDF, layout :mod:`fdp_ppl.releasing.schema`) and optionally
a PNG, and print a table of the public parameters. The mechanism choices, which flags each mechanism takes (δ,
``--nu``, ``--calibration``, ``--eta``/``--psi``, ``--M``, ``--k``), the kernels and the labels all come from
:mod:`fdp_ppl.releasing.registry`; the summary is ``entry.spec(basis_or_grid, tau=, n=, **options).fit(curves)`` and the
mechanism ``entry.mechanism(epsilon, delta, **options)``.

Privacy notes
-------------
* **Privacy unit.** n is the size of the record dimension, which comes from names (``--record-dim NAME``, else the
  dim named ``curve``, else the other dim of the grid dim ``--t-dim`` or ``t``), never from position; with
  ``--privacy-unit`` the guarantee is per person (:mod:`fdp_ppl.io.units`).
* **Order.** Every public check (flags, paths, the ledger's budget, the spec and the plan: sizes, memory, disk
  space) runs first; then the ledger is charged; only then is anything that depends on the data's values looked at
  (the missing-value refusal, the fit, clipping). The record-level warning is decided from the coordinates' names
  alone. So neighbouring files give the same output up to the charge (DESIGN invariant 9).
* **Missing values.** ``--missing error`` (default) refuses a file with a missing (NaN/inf) value *after the
  charge*: whether a value is missing depends on the data, so no check before the charge can see it, and a refusal
  that cost nothing could be repeated to probe the data for free. The refusal itself is not covered by ε (its exit
  status says some record had a missing value): a data holder for whom that must not be known chooses
  ``--missing impute``, which sets each missing point to 0 (or to the public ``--offset``) like a clipping to a
  public value and keeps every record, so every public parameter is the same for a record with a missing value
  and for its complete neighbour, and the release is ε-DP as it stands. There is no ``--drop-incomplete``: the
  count of complete curves would become n (and ψ, the sensitivity and the noise scales with it).
* **Data holder only.** The number of curves clipped at τ and of imputed points go only to ``--holder-report PATH``
  when asked, never to stdout, stderr or the file.
* **Public centre.** ``--offset`` (or the demo's growth reference) is fixed in advance from public sources, not
  from the data; subtracting it before clipping and adding it back to the release is post-processing.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path

from .. import dims
from .._names import BERNSTEIN_DEFAULT_K
from .._progress import stage
from ..errors import SeededReleaseWarning
from .common import (DEFAULT_KERNEL, DEFAULT_RHO, PROG, SEED_HELP, CLIError, Prepaid, add_ledger_args,
                     add_out_of_core_args, add_output_args, add_unit_args, check_ledger_args, check_out,
                     check_output_space, check_unit_args, dataset_identity, ledger_text, load_data, np, open_ledger,
                     print_table, refused_after_charge, registry, release_flags, seed_text, study_rows, unit_text,
                     warn_large_epsilon, warn_record_level, write_holder_report, write_release)

#: ``--calibration`` values (which ones a mechanism knows, and for which ε, is the library's business)
_CALIBRATIONS = ("classical", "analytic", "exact", "theorem5")


#: registry option name -> flag
_FLAGS = {"nu": "--nu", "calibration": "--calibration", "eta": "--eta", "psi": "--psi", "M": "--M", "k": "--k"}


def _users(option: str) -> list[str]:
    """Mechanisms whose registry entry takes ``option`` (a mechanism or a summary option)."""
    return [name for name, e in registry.MECHANISMS.items() if option in (*e.options, *e.summary_options)]


#: the library's keywords in :meth:`~fdp_ppl.releasing.registry.MechanismEntry.check_options` -> the flags
_NAMES = {**_FLAGS, "mechanism": "--mechanism", "delta": "--delta", "kernel": "--kernel", "rho": "--rho"}


def _uses_eigenbasis(entry: registry.MechanismEntry) -> bool:
    return entry.uses_kernel


def _mechanism_epilog() -> str:
    w = max(len(n) for n in registry.MECHANISMS)
    lines = ["mechanisms (--mechanism):"]
    for name, e in registry.MECHANISMS.items():
        dp = "(eps, delta)-DP" if e.approximate else "eps-DP"
        flags = " ".join(_FLAGS[o] for o in (*e.options, *e.summary_options))
        lines.append(f"  {name:<{w}}  {dp:<15} {e.description}" + (f" [{flags}]" if flags else ""))
    return "\n".join(lines)


def add_subparser(sub) -> None:
    r = sub.add_parser("release", help="release a private mean curve of a dataset",
                       description="Release a differentially private mean curve.", epilog=_mechanism_epilog(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_release_args(r)
    r.add_argument("--dry-run", action="store_true",
                   help="print the plan and its accuracy (fdp-ppl plan) and stop: nothing is read but the data's "
                        "metadata, nothing drawn, charged or written")
    add_output_args(r)
    add_ledger_args(r)


def add_release_args(r, *, data_required: bool = True) -> None:
    """The data, mechanism and summary flags of ``release`` (``plan`` takes the same, ``--data`` optional)."""
    g = r.add_argument_group("data")
    g.add_argument("--data", required=data_required, metavar="PATH_OR_NAME",
                   help="bundled dataset name (growth, weather, dti, electricity) or the path of a NetCDF file or "
                        "Zarr store with one 2-D variable of curves (records x grid), or of a CSV / Parquet table "
                        "(wide: one row per record, grid points as column headers, ids in the first column; long: "
                        "columns id, t, value)")
    g.add_argument("--var", default=None, help="variable to use (e.g. cca for dti, demand for electricity)")
    g.add_argument("--data-dir", default=None, metavar="DIR",
                   help="directory with the data files (default: $FDP_PPL_DATA_DIR or the datasets shipped with the package)")
    g.add_argument("--missing", choices=("error", "impute"), default="error",
                   help="missing (NaN/inf) values: error (default) refuses the release after the charge (whether a "
                        "value is missing depends on the data: the refusal costs the budget, nothing is drawn); "
                        "impute sets each "
                        "missing point to 0 (the record contributes 0 there), or to the --offset if one is given "
                        "(a zero deviation), and keeps every record, so n stays the "
                        "number of records and no public parameter depends on which values are missing (the rule "
                        "is written to the release as missing_rule; the counts only to --holder-report). Choose it "
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
    g.add_argument("--units", default=None, metavar="UNITS",
                   help="units of the curves' values (e.g. cm), written to the release's units attr (a CSV or "
                        "Parquet table has no place for them; for a NetCDF file this replaces the variable's units)")
    g.add_argument("--t-units", default=None, metavar="UNITS",
                   help="units of the grid points (e.g. years), written to the release's t_units attr")
    add_unit_args(g)
    add_out_of_core_args(g)
    m = r.add_argument_group("mechanism")
    m.add_argument("--mechanism", required=True, choices=tuple(registry.MECHANISMS),
                   help="the mechanism (listed below); " + ", ".join(n for n, e in registry.MECHANISMS.items()
                                                                      if e.approximate) + " are (ε, δ)-DP")
    m.add_argument("--epsilon", required=True, type=float, help="privacy parameter ε > 0 per draw")
    m.add_argument("--delta", type=float, default=None,
                   help="δ in (0, 1); required by the (ε, δ) mechanisms, refused by the others")
    m.add_argument("--nu", type=float, default=None,
                   help=f"degrees of freedom ν > 0 of the t law ({', '.join(_users('nu'))}; required there)")
    m.add_argument("--calibration", choices=_CALIBRATIONS, default=None,
                   help="noise calibration: analytic (default, exact for any ε) or classical (the papers', ε <= 1) for "
                        "gaussian and rkhs-gaussian; "
                        "exact (default) or theorem5 (ε <= 1) for t-process and laplace-process")
    m.add_argument("--bound", choices=("tight", "paper"), default="tight",
                   help="sensitivity bound calibrating the noise (default tight)")
    m.add_argument("--draws", type=int, default=1,
                   help="number of independent releases; N draws spend N × ε (default 1)")
    m.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    s = r.add_argument_group("summary")
    s.add_argument("--tau", required=True, type=float,
                   help="public bound on each curve's L² norm on the rescaled domain [0, 1]; curves are clipped to "
                        "it. For --mechanism bernstein: the sup-norm bound τ_∞ on |X(t)| (curves are clipped "
                        "pointwise to [-τ_∞, τ_∞])")
    s.add_argument("--kernel", default=None, metavar="NAME",
                   help=f"noise kernel, one of {', '.join(registry.KERNELS)} (gaussian = gaussian-mirshani: "
                        "exp(-d²/ρ), Mirshani et al.'s convention; gaussian-hall: exp(-d²/(2ρ²)), Hall et al.'s, "
                        f"the meaning of fdp-ppl machine --kernel gaussian); default {DEFAULT_KERNEL}; not for bernstein")
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
    s.add_argument("--neighbouring", choices=("replace-one", "add-remove"), default="replace-one",
                   help="replace-one (default): one record (or person) replaced, n counted and published; add-remove: "
                        "one added or removed, n private (membership protected), with --n-lower; the mean divides by "
                        "max(n, N) (data below N are shrunk, never refused); mean curves except bernstein")
    s.add_argument("--n-lower", type=int, default=None, metavar="N",
                   help="with --neighbouring add-remove: a public lower bound N >= 2 on the number of records "
                        "(persons with --privacy-unit --combine mean); the sensitivity is that of 2 tau/(N + 1) and "
                        "psi, M default from N; at most 1,000,000,000,000")


def _check_args(a):
    """The public checks of ``fdp-ppl release`` (:func:`public_mechanism`), then its outputs and ledger flags."""
    mechanism = public_mechanism(a)
    check_out(a)
    check_ledger_args(a)
    return mechanism


def public_mechanism(a):
    """Check the flags and build the mechanism and the noise kernel (before any data is read; also what
    ``fdp-ppl plan`` checks).

    What the library checks (ε, δ, the calibration, ν, the kernel and ρ, τ, draws) it checks here, by building the
    mechanism and the kernel and by the spec's and the plan's own checks of τ and draws: one wording from Python and
    from the command line. Only the flags' own rules are the command's.

    Returns
    -------
    Mechanism
        ``entry.mechanism(epsilon, delta, **options)``.

    Raises
    ------
    CLIError
        A flag that does not apply to the mechanism, or a removed flag.
    FdpPplError
        The library refuses a parameter (printed with its keyword as the flag).
    """
    from ..releasing.plans import check_draws

    entry = registry.MECHANISMS[a.mechanism]
    if getattr(a, "drop_incomplete", False):
        raise CLIError("--drop-incomplete was removed: the count of complete curves became the public n, so a record "
                       "with a missing value and its complete neighbour got different n, psi, sensitivity and noise "
                       "scales", "pass --missing impute (each missing point set to 0, every record kept)")
    entry.check_options(delta=a.delta, kernel=a.kernel, rho=a.rho, names=_NAMES,
                        **{opt: getattr(a, opt, None) for opt in _FLAGS})
    mechanism = entry.mechanism(a.epsilon, a.delta, **{o: getattr(a, o) for o in entry.options})
    if _uses_eigenbasis(entry):
        _noise_kernel(a)
    entry.spec_class.check_tau(a.tau)
    check_draws(a.draws)
    a.unit = check_unit_args(a)
    warn_large_epsilon(a.epsilon)
    return mechanism


def _noise_kernel(a):
    """The noise kernel of ``--kernel`` and ``--rho`` (the library refuses an unknown name or a bad ρ)."""
    import fdp_ppl as fp

    return fp.kernel_from_name(a.kernel or DEFAULT_KERNEL, DEFAULT_RHO if a.rho is None else a.rho)


def _labelled(curves, labels: dict):
    """A copy of ``curves`` whose attrs carry the public names and units of ``labels``
    (``{"t": {"long_name", "units"}, "value": {...}}``); the library carries them to the release."""
    t, v = labels.get("t", {}), labels.get("value", {})
    return curves.assign_attrs({k: val for k, val in (("t_name", t.get("long_name")), ("t_units", t.get("units")),
                                                      ("long_name", v.get("long_name")), ("units", v.get("units")))
                                if val})


def _summary_spec(entry, curves, a):
    """``entry.spec(basis_or_grid, tau=, n=, **summary options)``: the public side (basis or lattice grid from the
    file's grid, τ, n the number of curves or units, options), before anything is charged; its fit
    (``spec.fit(curves, offset=)``, non-private) comes after the charge."""
    unit = getattr(a, "unit", None)
    if getattr(a, "neighbouring", "replace-one") == "add-remove":  # n private: never counted into the spec
        return public_spec(entry, a, curves[dims.T].values, None)
    n = int(curves.sizes[dims.CURVE]) if unit is None else unit.n_units(curves) * unit.contributions
    return public_spec(entry, a, curves[dims.T].values, n)


def public_spec(entry, a, t, n: int | None):
    """``entry.spec(basis_or_grid, tau=, n=, **summary options)`` on the grid points ``t``: the public side of a
    release (also what ``fdp-ppl plan`` plans); with ``--neighbouring add-remove`` n is not passed, ``--n-lower``
    is."""
    import fdp_ppl as fp

    grid = fp.Grid.from_points(np.asarray(t, dtype=float))
    public = grid
    if _uses_eigenbasis(entry):
        public = fp.eigenbasis(_noise_kernel(a), grid)
    relation = {"neighbouring": a.neighbouring, "n_lower": a.n_lower} if getattr(a, "neighbouring", None) == \
        "add-remove" or getattr(a, "n_lower", None) is not None else {}
    return entry.spec(public, tau=a.tau, n=None if relation else int(n), privacy_unit=getattr(a, "unit", None),
                      **relation, **{o: getattr(a, o) for o in entry.summary_options})


#: ``missing_rule`` of a release made with ``--missing error`` (nothing imputed, nothing dropped)
_NO_MISSING_RULE = "none: a record with a missing (NaN/inf) value stops the release before any noise is drawn"


def release_curves(curves, mech, a, *, source: str, ledger=None, labels: dict | None = None, offset=None,
         offset_source: str = "", show_nonprivate: bool = False, missing_found: bool = False) -> int:
    """Public spec and plan -> ledger charge -> data-dependent checks -> fit -> release -> files -> table. Returns
    the exit code.

    Every public check (the spec, the plan's sizes and memory, the disk space) comes before the charge and nothing
    before it depends on the data's values (the record-level warning reads only the coordinates' names); the
    ledger (if any) is charged before the fit, so a refusal after it (``missing_found``: a missing value with
    ``--missing error``) costs the budget, and a crash later leaves the budget charged.
    """
    import fdp_ppl as fp

    curves = _labelled(curves, labels or {})
    curves = _labelled(curves, {"value": {"units": getattr(a, "units", None)}, "t": {"units": getattr(a, "t_units", None)}})
    entry = registry.MECHANISMS[a.mechanism]
    if getattr(a, "unit", None) is None:
        warn_record_level(curves)  # from the names only: public
    spec = _summary_spec(entry, curves, a)
    missing = getattr(a, "missing", "error")
    J, K = int(spec.n_components), int(spec.grid.size)
    check_output_space(a, 8.0 * (a.draws * (J + K) + 2 * J * K + 8 * K))
    plan = fp.plan(spec, mech, draws=a.draws, seeded=a.seed is not None, study=a.study, bound=a.bound)
    cost = f"{a.draws} draw{'s' if a.draws > 1 else ''} x epsilon {a.epsilon:g}" + (
        f", delta {a.delta:g}" if a.delta else "")
    label, dataset = f"{a.mechanism} ({cost}) -> {a.out}", dataset_identity(curves)
    charged = ledger
    # public, before the prepaid charge
    plan.check_delta(getattr(a, "allow_large_delta", False) or getattr(a, "study", False))
    if ledger is not None:  # charged before anything that depends on the data's values
        from ..errors import BudgetExceededError
        from ..releasing.draw import lattice_refusal

        with stage("charging the ledger"):
            try:
                charged = Prepaid(ledger, plan.cost, label, dataset=dataset, mechanism=plan.mechanism,
                                  event=plan.event, records_per_unit=getattr(a, "records_per_unit", None))
            except BudgetExceededError as err:
                raise lattice_refusal(plan, err) from err
    if missing_found:
        raise refused_after_charge("the data have curves with missing (NaN/inf) values (counts are not shown)",
                                   "pass --missing impute (each missing point set to 0, or to the public --offset, "
                                   "every record kept), chosen before looking at the data", ledger)
    with warnings.catch_warnings():  # the clipped share goes to --holder-report only
        from ..summaries.curves import TauTooSmallWarning

        warnings.simplefilter("ignore", TauTooSmallWarning)
        with stage("fitting the summary (basis, clipping at tau)"):
            summary = spec.fit(curves, offset=offset, offset_source=offset_source)
    with warnings.catch_warnings(), stage("drawing the release"):  # a seeded release is stated in the table
        warnings.simplefilter("ignore", SeededReleaseWarning)
        tree = fp.release(summary, mech, draws=a.draws, random_seed=a.seed, study=a.study,
                          bound=a.bound, ledger=charged, dataset=dataset, label=label,
                          provenance=release_provenance(source, missing, curves), **release_flags(a))
    nonprivate = summary.curve().values if show_nonprivate else None
    out = write_release(tree, a.out, a.plot, lambda t, path: _write_plot(
        t, path, offset=offset, offset_source=offset_source, nonprivate=nonprivate))
    _print_table(tree, summary, out, a.plot, seed=a.seed, ledger=ledger)
    warn_shrinkage(summary.spec, offset is not None)  # public: from the spec; with the table, after the release
    write_holder_report(a, _holder_counts(summary, curves, missing, offset, sup=tree.attrs.get("tau_norm") == "sup"))
    return 0


def release_provenance(source: str, missing: str, curves) -> dict:
    """The public provenance ``fdp-ppl release`` records (pass the same to ``fp.release(provenance=...)`` for the
    same file from Python): the data file, the missing-value rule."""
    rule = curves.attrs.get("missing_rule", _NO_MISSING_RULE) if missing == "impute" else _NO_MISSING_RULE
    return {"data_source": source, "missing": missing, "missing_rule": rule}


def _write_plot(tree, path, *, offset=None, offset_source="", nonprivate=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plots import plot_release

    ref_label = "public reference" + (" (CDC 2000 median)" if "CDC 2000" in offset_source else "")
    fig, ax = plot_release(tree, reference=offset, reference_label=ref_label,
                           truth=nonprivate, truth_label="non-private estimate (data holder only)")
    fig.savefig(Path(path).expanduser(), dpi=150)
    plt.close(fig)


#: display of the sensitivity norms recorded in releases
_NORMS = {"1,C": "‖·‖_{1,C}", "cameron-martin": "Cameron–Martin ‖·‖_C", "l1": "ℓ¹ of coefficients"}


def _print_table(tree, summary, out, plot, *, seed=None, ledger=None):
    from ..releasing.schema import read_release

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
        ("n", (f"private (add/remove), public lower bound n_lower = {meta.n}" if tree.attrs.get("n_private") else
               f"{meta.n} curves") + f" × {int(at['grid_size'])} grid points"
              + (f" after bounding each {tree.attrs['privacy_unit']}'s contribution"
                 if tree.attrs.get("privacy_unit", "record") != "record" else "")),
        ("privacy unit", unit_text(tree.attrs)),
        basis_row,
        ("J components", f"{int(at['n_components'])}"),
        ("shrinkage", _shrinkage_text(summary.spec, "public_offset" in at)),
        ("noise E‖ξ‖²", f"{energy:.4g}" + (f" {units}²" if units else "") + f"  (rms ‖ξ‖ = {math.sqrt(energy):.3g}{u})"),
        ("noise seed", seed_text(int(meta.extra.get("noise_seeded", seed is not None)))), *study_rows(tree.attrs),
        ("noise generator", (("float sampler on a public dithered lattice, floating-point safe"
                              if meta.extra.get("noise_generator") == "snapped" else
                              "OpenDP lattice sampler, floating-point safe") if int(meta.extra.get("fp_safe", 0))
                             else "compiled float64 sampler, NOT floating-point safe")
         + f"; guaranteed epsilon {float(meta.extra.get('epsilon_guaranteed', meta.epsilon)):.6g}"
         + (f", delta {float(meta.extra.get('delta_guaranteed', meta.delta)):.3g}"
            if max(meta.delta, float(meta.extra.get("delta_guaranteed", 0.0))) > 0 else "")),
        ("missing", "imputed by a public rule (--missing impute): a missing point is set to "
         + ("the public offset (a zero deviation)" if "public_offset" in at else "0")
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


def _holder_counts(summary, curves, missing: str, offset, *, sup: bool = False) -> dict:
    """The data holder's counts for ``--holder-report`` (never printed, never in the file): how many curves were
    clipped (and a warning when more than half were: τ far too small) and, with ``--missing impute``, how many
    points were imputed."""
    from ..summaries.curves import CLIPPED_SHARE_WARNING, clipped_warning_text

    bound = "sup norm" if sup else "L2 norm"
    n, n_clipped = int(summary.n), int(summary.n_clipped)
    out = {"command": "release", "records": n, "clipped": n_clipped,
           "clipped_what": ("curves" if summary.spec.privacy_unit is None else
                            "records after bounding each unit's contribution") + f" with {bound} above tau"}
    if n_clipped > CLIPPED_SHARE_WARNING * n:
        out["warning"] = clipped_warning_text(n_clipped, n, float(summary.tau), norm=bound)
    if missing == "impute":
        out.update(imputed_points=int(curves.attrs.get("n_imputed_points", 0)),
                   imputed_curves=int(curves.attrs.get("n_imputed_curves", 0)),
                   imputed_to="the public --offset" if offset is not None else "0")
    return out


def run(a) -> int:
    mech = _check_args(a)
    ledger = open_ledger(a, mech.budget * a.draws)
    if getattr(a, "chunks", None) is not None or getattr(a, "scheduler", None) or str(a.data).endswith(".zarr"):
        if a.unit is not None:
            raise CLIError("--privacy-unit is not available out of core (--chunks, --scheduler, Zarr)",
                           "combine each person's records into one (their mean) in the store first, or release in "
                           "memory")
        return _run_out_of_core(a, mech, ledger, release_curves)
    # with a public centre, a missing point is imputed by the centre (a zero deviation), not by 0
    centre = {} if a.offset is None or a.missing != "impute" else {
        "reference": lambda t: _offset_on(a, np.asarray(t, dtype=float))[0], "reference_name": "the public --offset"}
    with stage(f"loading {a.data}"):  # missing points imputed in every case: refused after the charge if not asked
        curves = load_data(a.data, a.var, data_dir=a.data_dir, missing="impute", record_dim=a.record_dim,
                           t_dim=a.t_dim, **centre)
    missing_found = a.missing == "error" and int(curves.attrs.get("n_imputed_points", 0)) > 0
    name = Path(str(a.data)).name
    source = f"{name}" + (f" / {a.var}" if a.var else "")
    offset, offset_source = _offset(a, curves)
    return release_curves(curves, mech, a, source=source, ledger=ledger, offset=offset, offset_source=offset_source,
                          missing_found=missing_found)


def _offset(a, curves):
    """``--offset VALUE|FILE`` as a public curve on the curves' grid (K,) and its description; (None, "") without.

    Raises
    ------
    CLIError
        Neither a number nor a readable file with one curve on the grid.
    """
    if getattr(a, "offset", None) is None:
        return None, ""
    return _offset_on(a, np.asarray(curves[dims.T].values, dtype=float))


def _offset_on(a, t):
    """``--offset VALUE|FILE`` on the grid points ``t`` (K,): the public curve and its description.

    Raises
    ------
    CLIError
        Neither a number nor a readable file with one curve on the grid.
    """
    text = a.offset
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


def _run_out_of_core(a, mechanism, ledger, run) -> int:
    """``fdp-ppl release`` on a lazy store: open it (:func:`fdp_ppl.io.stores.open_curves`), start or reach the
    cluster (:func:`fdp_ppl.io.stores.dask_client`) and run the command's pipeline ``run(curves, mechanism, a, ...)``
    inside it."""
    from ..io.stores import dask_client, open_curves

    path = Path(os.fspath(a.data)).expanduser()
    if not path.exists() and getattr(a, "data_dir", None):
        path = Path(a.data_dir).expanduser() / path
    curves = open_curves(path, a.var, chunks=a.chunks, record_dim=a.record_dim, t_dim=a.t_dim, missing=a.missing)
    source = f"{path.name}" + (f" / {a.var}" if a.var else "")
    with dask_client(a.scheduler):
        return run(curves, mechanism, a, source=source, ledger=ledger)


__all__ = ["add_subparser", "run", "release_curves"]
