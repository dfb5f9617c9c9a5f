"""``fdp-ppl kde``: a private kernel density estimate of a column of scalar (or paired) observations.

Mechanisms: ``gp`` (Gaussian KDE + Gaussian-kernel GP noise, Hall et al. 2013 §4.1), ``sobolev``
(Gaussian KDE + L1-exponential GP noise, Hall §4.2), ``iclp`` (K^eta estimator + ICLP Laplace noise,
Lin & Reimherr 2026 §4.3), ``frl`` and ``bernstein`` (baselines; in 2-D a tensor eigenbasis and a tensor Bernstein
lattice, :mod:`fdp_ppl.kde.baselines`). The data are one column (``--var``)
or two (``--var2``) of a NetCDF or CSV file; observations outside the public ``--domain`` are clipped to it
and counted for the data holder only (stderr). The file holds ``posterior/density`` (chain, draw, x) or
(chain, draw, x1, x2) and ``constant_data`` the grid; root attrs ε, δ, n, h, kernel, sensitivity, noise.

Out of core (``--chunks``, ``--scheduler`` or a ``*.zarr`` store): the column(s) are opened lazily
(:func:`fdp_ppl.io.records.open_records`; ``--var2`` stacked into (n, 2) records on dask), n is the
length of the record dim in the store's metadata, and the public spec's ``fit`` sums the KDE chunk by chunk on a
dask cluster (:func:`fdp_ppl.io.stores.dask_client`) for ``gp``, ``sobolev`` (exact or binned) and ``iclp``;
the release path after the fit is the in-memory one. What needs the records in memory is refused before the
ledger is opened (:func:`_check_lazy`).

This module imports only :mod:`argparse` and :mod:`fdp_ppl._names` (standard library only) at import time.
"""

from __future__ import annotations

import argparse  # noqa: F401  (with fdp_ppl._names, a standard-library leaf, the only imports at import time)

#: the mechanism names (fdp_ppl.kde.options.MECHANISMS's) and the default Bernstein lattice size per dimension
#: (the library's: fdp_ppl.kde.release.kde_spec)
from .._names import KDE_BERNSTEIN_K as BERNSTEIN_K
from .._names import KDE_MECHANISMS as MECHANISMS

NAME = "kde"


def add_subparser(sub) -> None:
    """Add ``kde`` to the sub-command parsers of ``fdp-ppl``."""
    from .common import SEED_HELP, add_ledger_args, add_out_of_core_args, add_output_args, add_unit_args

    p = sub.add_parser(
        NAME, help="release a private kernel density estimate of one or two columns",
        description="Release a differentially private kernel density estimate on a public grid (Hall, Rinaldo & "
                    "Wasserman 2013; Lin & Reimherr 2026). Neighbouring datasets replace one observation; n is public.",
        epilog="out of core (--chunks, --scheduler, or any Zarr store): each of --var, --var2 is a 1-D variable of a "
               "NetCDF file or Zarr store; gp, sobolev (exact or binned) and iclp are fitted chunk by chunk on a dask "
               "cluster and release what the in-memory command releases. --bandwidth-epsilon, --privacy-unit and the "
               "frl and bernstein baselines need the data in memory and are refused out of core before the "
               "ledger is opened.")
    g = p.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="PATH",
                   help="NetCDF (.nc), CSV or Parquet file, or Zarr store (read out of core: gp, sobolev and iclp "
                        "only)")
    g.add_argument("--var", required=True, metavar="NAME", help="variable / column of scalar observations")
    g.add_argument("--var2", default=None, metavar="NAME", help="second column: a 2-D KDE of the pairs")
    g.add_argument("--dry-run", action="store_true",
                   help="print the plan and its accuracy (sup error of the density) and stop: the data are not "
                        "read (pass --n), nothing is drawn, charged or written (every mechanism, public bandwidth)")
    g.add_argument("--n", type=int, default=None, metavar="N", help="with --dry-run: the public number of observations")
    add_unit_args(g)
    add_out_of_core_args(g, "sum the KDE (gp, sobolev, iclp; each column a 1-D variable)")
    m = p.add_argument_group("mechanism")
    m.add_argument("--mechanism", required=True, choices=MECHANISMS,
                   help="gp: (eps, delta), Gaussian-kernel GP noise; sobolev: (eps, delta), L1-exponential (rough) "
                        "GP noise; iclp: eps-DP, K^eta estimator + ICLP noise; frl, bernstein: eps-DP baselines "
                        "(2-D: tensor eigenbasis / tensor Bernstein lattice, records snapped to the grid)")
    m.add_argument("--epsilon", type=float, required=True, help="privacy budget per released draw")
    m.add_argument("--delta", type=float, default=None, help="delta per draw (gp and sobolev only)")
    m.add_argument("--bandwidth", type=float, default=None,
                   help="public bandwidth h in the data's units (default: 1.06 (width/4) n^(-1/(4+d)))")
    m.add_argument("--bandwidth-epsilon", type=float, default=None, metavar="E",
                   help="choose h privately instead: Hall et al. (2013) 4.1.2 rule of thumb with private IQRs, "
                        "spending E more (pure E-DP, charged to the ledger with the release)")
    m.add_argument("--eta", type=float, default=1.25, help="operator power of the ICLP estimator kernel (> 1)")
    m.add_argument("--normalise", action="store_true",
                   help="iclp only: divide the released density by the K^eta estimator's public mass "
                        "(post-processing: no privacy cost)")
    m.add_argument("--frl-m", type=int, default=None, metavar="M",
                   help="number of FRL basis functions (frl only; default: the package's public choice, "
                        "floor(n^(1/3)) or the PSS range's upper end)")
    m.add_argument("--bernstein-k", type=int, default=None, metavar="K",
                   help="Bernstein lattice size k, (k + 1)^d coefficients (bernstein only; default 20 in 1-D, "
                        "10 in 2-D)")
    m.add_argument("--domain", type=float, nargs=2, default=None, metavar=("LO", "HI"), required=True,
                   help="public domain of the observations (both axes for a 2-D KDE); data are clipped to it")
    m.add_argument("--grid-size", type=int, default=None,
                   help="grid points per axis (default 200 in 1-D, 30 in 2-D)")
    m.add_argument("--kde-estimator", choices=("exact", "binned"), default="exact",
                   help="gp and sobolev: exact (default; the sum over records, in chunks of bounded memory) or binned "
                        "(linear binning on a fine public lattice, then smoothing: faster, same sensitivity, error "
                        "bound in the release attrs)")
    m.add_argument("--draws", type=int, default=1, help="number of released draws; each costs (epsilon, delta)")
    m.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    add_output_args(p)
    add_ledger_args(p)


#: the library's keywords of :func:`fdp_ppl.kde.options.check_kde_options` -> this command's flags
KDE_FLAGS = {"mechanism": "--mechanism", "delta": "--delta", "estimator": "--kde-estimator", "domain": "--domain",
             "bandwidth": "--bandwidth", "bandwidth_epsilon": "--bandwidth-epsilon", "grid_size": "--grid-size",
             "M": "--frl-m", "k": "--bernstein-k", "normalise": "--normalise", "eta": "--eta", "combine": "--combine",
             "max_contributions": "--max-contributions", "order": "--unit-order"}


def _check(a):
    """The public checks, before the ledger and the data: the library's (:func:`fdp_ppl.kde.options.check_kde_options`,
    the mechanism's ε and δ, the draws), worded with this command's flags, then the outputs and ledger flags."""
    from ..kde.options import check_kde_options, kde_mechanism
    from ..releasing.plans import check_draws
    from .common import check_ledger_args, check_out, check_unit_args, warn_large_epsilon

    a.unit = check_unit_args(a)
    check_kde_options(a.mechanism, delta=a.delta, estimator=a.kde_estimator, domain=tuple(a.domain),
                      bandwidth=a.bandwidth, bandwidth_epsilon=a.bandwidth_epsilon, grid_size=a.grid_size,
                      d=2 if a.var2 else 1, M=a.frl_m, k=a.bernstein_k, normalise=a.normalise, eta=a.eta,
                      privacy_unit=a.unit, names=KDE_FLAGS)
    a.mech = kde_mechanism(a.mechanism, a.epsilon, a.delta)  # the library's checks of epsilon and delta
    check_draws(a.draws)
    check_out(a)
    check_ledger_args(a)
    warn_large_epsilon(a.epsilon)


def _is_lazy(a) -> bool:
    """Whether the command reads its data out of core: ``--chunks``, ``--scheduler`` or a Zarr store."""
    from ..io.stores import is_store

    return a.chunks is not None or a.scheduler is not None or is_store(a.data)


def _check_lazy(a) -> None:
    """Refuse, from the flags and the path alone (before the ledger is opened), what cannot run out of core.

    Raises
    ------
    CLIError
        ``--bandwidth-epsilon`` (the private IQRs need the records in memory), ``--mechanism frl``/``bernstein``
        (their bumps are records of a mean, built in memory), ``--privacy-unit`` (no unit grouping on dask), a CSV
        or Parquet file (not a chunked store), or ``--chunks`` < 1.
    """
    from .common import CLIError

    flag = "--chunks/--scheduler" if (a.chunks is not None or a.scheduler is not None) else "a Zarr store"
    if a.chunks is not None and a.chunks < 1:
        raise CLIError(f"--chunks must be a number of records >= 1 (got {a.chunks})", "pass e.g. --chunks 100000")
    if a.bandwidth_epsilon is not None:
        raise CLIError(f"--bandwidth-epsilon is not available out of core ({flag}): the private IQRs need the "
                       "records in memory", "pass a public --bandwidth (or the default rule), or run in memory")
    if a.mechanism in ("frl", "bernstein"):
        raise CLIError(f"--mechanism {a.mechanism} is not available out of core ({flag})",
                       "pass --mechanism gp, sobolev or iclp, or run the baseline in memory")
    if a.unit is not None:
        raise CLIError(f"--privacy-unit is not available out of core ({flag})",
                       "combine each person's observations into one in the store first, or run in memory")
    if str(a.data).lower().endswith((".csv", ".parquet", ".pq")):
        raise CLIError(f"{a.data} is a table: out of core ({flag}) reads a Zarr store or a NetCDF file",
                       "convert it (xarray .to_zarr) or drop --chunks/--scheduler")


def _lazy_records(a):
    """The records of ``--var`` (and ``--var2``) as a dask array (n,) or (n, 2), from the store's metadata only.

    Returns
    -------
    obs : dask.array.Array, shape (n,) or (n, 2)
        Lazy: nothing but metadata is read; n (public) is the record dim's length.

    Raises
    ------
    CLIError
        A variable that is not 1-D, or --var and --var2 of different lengths.
    InputError
        From :func:`fdp_ppl.io.records.open_records` (dask/zarr missing, no such path or variable).
    """
    from ..io.records import open_records
    from .common import CLIError

    cols = []
    for name in (a.var, a.var2):
        if name is None:
            continue
        da = open_records(a.data, name, chunks=a.chunks)
        if da.ndim != 1:
            raise CLIError(f"variable {name!r} has dims {tuple(map(str, da.dims))}: out of core each of --var and "
                           "--var2 must be a 1-D variable of observations", "store each column as a 1-D variable")
        cols.append(da.data)
    if len(cols) == 1:
        obs = cols[0]
    else:
        import dask.array as dsa

        if cols[0].shape[0] != cols[1].shape[0]:
            raise CLIError(f"--var and --var2 have {cols[0].shape[0]} and {cols[1].shape[0]} values",
                           "pass paired columns")
        obs = dsa.stack([cols[0], cols[1].rechunk(cols[0].chunks)], axis=1)  # (n, 2), lazy
    if obs.shape[0] < 2:
        raise CLIError(f"{a.var!r} has {obs.shape[0]} observation(s)", "a KDE needs n >= 2 observations")
    return obs


def _column(a, name, *, ids: bool = False):
    """The values of column / variable ``name`` (floats; any values with ``ids``: a privacy unit's column)."""
    import numpy as np

    from .common import CLIError

    path = str(a.data)
    if path.lower().endswith((".parquet", ".pq")):
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except ImportError:
            raise CLIError(f"reading {path} needs pyarrow", "pip install 'fdp-ppl[parquet]'") from None
        except (OSError, ValueError) as err:
            raise CLIError(f"cannot read {path} as Parquet: {err}", "pass a Parquet, CSV or NetCDF file") from None
        if name not in frame.columns:
            raise CLIError(f"column {name!r} is not in {path} (columns: {', '.join(map(str, frame.columns))})",
                           "pass --var with a column name")
        if ids:
            return frame[name].to_numpy()
        # a value that is not a number becomes NaN: refused after the charge (DESIGN invariant 9)
        vals = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
    elif path.lower().endswith(".csv"):
        import csv

        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or name not in rows[0]:
            cols = ", ".join(rows[0]) if rows else "none"
            raise CLIError(f"column {name!r} is not in {path} (columns: {cols})", "pass --var with a column name")
        if ids:
            return np.array([r[name] for r in rows])
        vals = np.array([_number(r[name]) for r in rows])  # not a number: NaN, refused after the charge
    else:
        import xarray as xr

        with xr.open_dataset(path) as ds:
            if name not in ds.variables:
                raise CLIError(f"variable {name!r} is not in {path} (variables: {', '.join(map(str, ds.variables))})",
                               "pass --var with a variable name")
            if ids:
                return np.asarray(ds[name].values).ravel()
            vals = np.asarray(ds[name].values, dtype=float).ravel()
    if vals.size < 2:
        raise CLIError(f"{name!r} has {vals.size} observation(s)", "a KDE needs n >= 2 observations")
    return vals  # NaN or inf: refused after the charge (run), never before


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def run(a) -> int:
    """Run ``fdp-ppl kde`` with parsed arguments; returns the exit code."""
    import warnings

    import numpy as np

    from ..accounting import PrivacyBudget
    from .._progress import stage
    from .common import (CLIError, RefuseAfterCharge, open_ledger, refused_after_charge, release_flags,
                         write_holder_report, write_release)
    from ..errors import SeededReleaseWarning

    _check(a)
    if getattr(a, "dry_run", False):
        return _dry_run(a)
    lazy = _is_lazy(a)
    if lazy:  # every refusal of the out-of-core path comes from the flags and the store's metadata
        _check_lazy(a)
        obs = _lazy_records(a)
    bw_eps = a.bandwidth_epsilon or 0.0
    cost = PrivacyBudget(a.epsilon * a.draws + bw_eps, (a.delta or 0.0) * a.draws)
    ledger = open_ledger(a, cost)
    units = None
    if not lazy:
        obs = _column(a, a.var)
        if a.var2 is not None:
            second = _column(a, a.var2)
            if second.size != obs.size:
                raise CLIError(f"--var and --var2 have {obs.size} and {second.size} values", "pass paired columns")
            obs = np.stack([obs, second], -1)
        if a.unit is not None:
            units = _column(a, a.unit.column, ids=True)
            if units.size != obs.shape[0]:
                raise CLIError(f"--privacy-unit {a.unit.column} and --var have different lengths",
                               "pass a unit column along the observations")
        else:
            _warn_repeated_ids(a)
    problem = None
    if not lazy and not np.all(np.isfinite(obs)):  # refused after every public check and the charge, never before
        problem = ("the observations have missing, non-finite or non-numeric values (counts are not shown)",
                   "drop or impute them by a public rule before the release")
        obs = np.full_like(obs, a.domain[0])  # a public stand-in, never fitted or released
    d = 1 if obs.ndim == 1 else 2
    n = obs.shape[0] if units is None else int(np.unique(units).size)  # lazy: the store's metadata (public)
    lo, hi = a.domain
    n_clipped = None
    if not lazy:  # out of core the fit counts them, chunk by chunk (data holder only, like this count)
        inside = np.all((obs >= lo) & (obs <= hi), axis=-1) if d == 2 else (obs >= lo) & (obs <= hi)
        n_clipped = int(np.sum(~inside))
    from .._names import KDE_GRID_SIZE

    size = a.grid_size or KDE_GRID_SIZE[d]  # the library's default (fdp_ppl.kde.release.kde_spec)
    from ..kde import check_kde_size
    from .common import check_output_space

    # public sizes only (grid, n or the records per chunk, draws): a plan that does not fit in memory is refused
    # before any charge; out of core the records held at once are one chunk's (the chunk size is public)
    held = int(max(obs.chunks[0])) if lazy else obs.shape[0]
    check_kde_size((size,) * d, held, d, estimator=a.kde_estimator if a.mechanism in ("gp", "sobolev")
                   else "exact", draws=a.draws)

    check_output_space(a, 8.0 * a.draws * size**d * 2 + 8.0 * size**d * 8)
    if problem is not None:  # at the charge (in full, at the library's first charge), the run is refused
        if ledger is None:
            raise refused_after_charge(*problem, None)
        ledger = RefuseAfterCharge(ledger, cost, *problem)
    composed = ()
    if bw_eps:  # Hall 4.1.2 with private IQRs, charged to the ledger before its draws
        from ..kde import bandwidth_plan, private_bandwidth
        from ..releasing.plans import as_study

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededReleaseWarning)
            if units is not None:
                raise CLIError("--bandwidth-epsilon is not available with --privacy-unit",
                               "pass a public --bandwidth")
            h = private_bandwidth(np.clip(obs, lo, hi), bw_eps, [(lo, hi)] * d, ledger=ledger, random_seed=a.seed,
                                  study=a.study,
                                  label=f"kde bandwidth (private IQR, epsilon {bw_eps:g}) -> {a.out}")
        a.bandwidth = float(h[0]) if d == 1 else h
        composed = (as_study(bandwidth_plan(bw_eps, d, seeded=a.seed is not None), a.study),)
    label = f"kde {a.mechanism} ({a.draws} x epsilon {a.epsilon:g}) -> {a.out}"
    provenance = kde_provenance(a, bw_eps)
    if lazy:  # the spec's fit of dask records: partial sums per chunk on the cluster, never the records gathered
        from ..io.stores import dask_client

        spec, mech = _grid_spec(a, n, d, size)
        from ..errors import InputError

        try:
            with stage("fitting the KDE chunk by chunk (dask)"), dask_client(a.scheduler):
                fit = spec.fit(obs)
        except InputError as err:  # a missing value found in the chunks: said only after the charge
            if "must be finite" not in str(err):
                raise
            if ledger is not None:
                ledger.spend(cost, label, dataset=str(a.data), mechanism=f"kde-{a.mechanism}")
            raise refused_after_charge("the observations have missing or non-finite values (counts are not shown)",
                                       "drop or impute them by a public rule before the release", ledger) from None
        n_clipped = fit.n_clipped
    with warnings.catch_warnings(), stage("drawing the release"):  # a seeded release is stated below instead
        warnings.simplefilter("ignore", SeededReleaseWarning)
        if lazy:
            import fdp_ppl as fp

            tree = fp.release(fit, mech, draws=a.draws, random_seed=a.seed, study=a.study,
                              ledger=ledger, label=label, dataset=str(a.data), provenance=provenance,
                              composed_with=composed, **release_flags(a))
        elif a.mechanism in ("frl", "bernstein") and d == 1:
            tree = _baseline(a, obs, n, size, ledger, label, units, provenance, composed)
        else:
            tree = _grid_release(a, obs, n, d, size, ledger, label, units, provenance, composed)
    out = write_release(tree, a.out, a.plot, _plot)
    _print_table(tree, out, a, ledger, n, bw_eps)
    # the clipped count is the data holder's: never printed, only to a file of theirs when asked
    write_holder_report(a, {"command": "kde", "records": int(n), "clipped": int(n_clipped),
                            "clipped_what": f"observations outside the domain [{lo:g}, {hi:g}], clipped to it"})
    return 0


def _description(mechanism: str) -> str:
    from ..kde.options import MECHANISMS as NAMED

    return NAMED[mechanism].description


def _print_table(tree, out, a, ledger, n, bw_eps) -> None:
    """The public table of ``fdp-ppl kde`` (the one layout every command prints)."""
    from .common import SEEDED_TEXT, UNSEEDED_TEXT, ledger_text, print_table, study_rows, unit_text

    at = tree.attrs
    h = at["h"] if isinstance(at["h"], str) else format(float(at["h"]), ".4g")
    priv = (f"({at['budget_spent_epsilon']:g}, {at['budget_spent_delta']:g})-DP" if a.delta
            else f"{at['budget_spent_epsilon']:g}-DP")
    rows = [
        ("mechanism", _description(a.mechanism)),
        ("privacy spent", f"{priv} ({a.draws} x epsilon {a.epsilon:g}" + (f", delta {a.delta:g}" if a.delta else "")
         + ")" + (f"; the private bandwidth's epsilon {bw_eps:g} is part of the total {at['budget_spent_epsilon']:g}"
                  if bw_eps else "")),
        ("n", f"{n} observations" + (f" ({at.get('privacy_unit')}s after bounding)" if a.unit is not None else "")),
        ("bandwidth", f"h = {h}" + (" (chosen privately: Hall et al. 2013 Sec. 4.1.2 with private IQRs; its quartile "
                                    + ("draws are not floating-point safe)" if a.seed is not None else
                                       "draws are OpenDP's, on a public lattice: floating-point safe)")
                                    if bw_eps else " (public)")),
        ("sensitivity", f"{at['sensitivity']:.4g} ({at['sensitivity_norm']})"),
        ("noise generator", f"{at['noise_generator']}" + ("" if int(at["fp_safe"]) else " (NOT floating-point safe)")),
        ("noise seed", SEEDED_TEXT if a.seed is not None else UNSEEDED_TEXT), *study_rows(at),
        ("privacy unit", unit_text(at)),
    ]
    if a.mechanism == "iclp":
        rows.append(("mass", "divided by the estimator's public mass (--normalise)" if a.normalise else
                     "not normalised: the K^eta estimator's mass is not 1 (pass --normalise to divide by its "
                     "public mass)"))
    rows += [("release", f"{out} ({a.draws} private density draw(s))"), ("ledger", ledger_text(ledger, at))]
    if a.plot:
        rows.append(("plot", str(a.plot)))
    print_table(f"kde {at.get('data_source', '')}", rows)


def _warn_repeated_ids(a) -> None:
    """The record-level warning of :func:`fdp_ppl.cli.common.warn_record_level` for a table's id-like columns."""
    import numpy as np
    import xarray as xr

    from .common import warn_record_level

    path = str(a.data)
    try:
        if path.lower().endswith(".csv"):
            import pandas as pd

            frame = pd.read_csv(path)
            coords = {c: ("curve", frame[c].to_numpy()) for c in frame.columns if c not in (a.var, a.var2)}
            records = xr.DataArray(np.zeros(len(frame)), dims="curve", coords=coords)
        else:
            with xr.open_dataset(path) as ds:
                v = ds[a.var]
                if v.ndim != 1:
                    return
                records = xr.DataArray(np.zeros(v.size), dims="curve",
                                       coords={c: ("curve", np.asarray(ds[c].values)) for c in ds.variables
                                               if c not in (a.var, a.var2) and ds[c].dims == v.dims})
    except (OSError, ValueError, KeyError):
        return
    warn_record_level(records)


def _dry_run(a) -> int:
    """``--dry-run``: the plan of the flags and its accuracy (no data read, nothing drawn, charged or written)."""
    from ..kde.release import plan_kde
    from ..releasing.accuracy import accuracy_table
    from .common import print_table

    plan = plan_kde(a.mechanism, a.epsilon, a.delta, **_spec_options(a), n=a.n, d=1 if a.var2 is None else 2,
                    bandwidth_epsilon=a.bandwidth_epsilon, draws=a.draws, seeded=a.seed is not None, names=KDE_FLAGS)
    rows = [("n", str(a.n))] + plan.table() + accuracy_table(plan.accuracy())
    print_table("kde plan", rows + [("spent by this plan", "nothing (no data read, no ledger, no file)")])
    return 0


def _spec_options(a) -> dict:
    """The library's keywords of :func:`fdp_ppl.kde.release.kde_spec` from the flags (n and d apart)."""
    return {"domain": tuple(a.domain), "grid_size": a.grid_size, "bandwidth": a.bandwidth, "eta": a.eta,
            "normalise": a.normalise, "M": a.frl_m, "k": a.bernstein_k, "estimator": a.kde_estimator,
            "privacy_unit": a.unit}


def _grid_spec(a, n, d, size):
    """The public KDE spec of the flags on the ``size``^d grid over ``--domain`` (the library's
    :func:`~fdp_ppl.kde.release.kde_spec`, which ``--dry-run`` plans) and its mechanism."""
    from ..kde.release import kde_spec

    return kde_spec(a.mechanism, n=n, d=d, **{**_spec_options(a), "grid_size": size}), a.mech


def kde_provenance(a, bw_eps: float = 0.0) -> dict:
    """The public provenance ``fdp-ppl kde`` records (``fp.release(provenance=...)`` from Python gives the same
    file): the data file and variables, the command's name of the mechanism, its public tuning choices."""
    from pathlib import Path

    d = 2 if a.var2 else 1
    out = {"data_source": Path(str(a.data)).name + f" / {a.var}" + (f", {a.var2}" if a.var2 else ""),
           "kde_mechanism": a.mechanism, "kde_variables": a.var + (f", {a.var2}" if a.var2 else "")}
    if a.mechanism == "frl":
        out["frl_M_source"] = "--frl-m" if a.frl_m is not None else "default floor(n^(1/3))"
    if a.mechanism == "bernstein":
        out["bernstein_k"] = int(a.bernstein_k if a.bernstein_k is not None else BERNSTEIN_K[d])
        out["bernstein_k_source"] = "--bernstein-k" if a.bernstein_k is not None else "default"
    if a.mechanism == "iclp":
        out["kde_normalised"] = int(bool(a.normalise))
    if not bw_eps:
        out["bandwidth_rule"], out["bandwidth_epsilon"] = "public", 0.0
    return out


def _grid_release(a, obs, n, d, size, ledger, label, units=None, provenance=None, composed=()):
    import fdp_ppl as fp

    spec, mech = _grid_spec(a, n, d, size)
    if a.mechanism == "frl":
        provenance = {**provenance, "frl_M": int(spec.n_components)}
    from .common import release_flags

    return fp.release(spec.fit(obs, units=units), mech, draws=a.draws, random_seed=a.seed, study=a.study,
                      ledger=ledger, label=label, dataset=str(a.data), provenance=provenance, composed_with=composed,
                      **release_flags(a))


def _baseline(a, obs, n, size, ledger, label, units=None, provenance=None, composed=()):
    import xarray as xr

    import fdp_ppl as fp

    from ..kde.baselines import bumps_density, kde_bumps
    from ..kde.release import baseline_points

    lo, hi = a.domain
    pts, h = baseline_points(a.domain, n, size, a.bandwidth)  # the points and h of the spec (the plan's too)
    spec, mech = _grid_spec(a, n, 1, size)
    bumps = kde_bumps(obs, pts, h, (lo, hi))
    if units is not None:  # the bumps are the records of the mean: a unit's bumps combined (or its first kept)
        bumps = xr.DataArray(bumps, dims=("curve", "t"), coords={"t": pts, a.unit.column: ("curve", units)})
    if a.mechanism == "frl":
        provenance = {**provenance, "frl_M": int(spec.n_components)}
    from .common import release_flags

    rel = fp.release(spec.fit(bumps), mech, draws=a.draws, random_seed=a.seed, study=a.study,
                     ledger=ledger, label=label, dataset=str(a.data), provenance=provenance, composed_with=composed,
                     **release_flags(a))
    return bumps_density(rel, pts, h, a.mechanism, (lo, hi))


def _plot(tree, path) -> None:
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dens = tree["posterior"]["density"]
    fig, ax = plt.subplots(figsize=(6, 4))
    if dens.ndim == 3:
        x = dens[dens.dims[-1]].values
        for row in dens.values.reshape(-1, dens.shape[-1])[:20]:
            ax.plot(x, row, lw=0.8, alpha=0.6)
        ax.set_xlabel(str(tree.attrs.get("kde_variables", dens.dims[-1])))
        ax.set_ylabel("private density")
    else:
        im = ax.pcolormesh(dens[dens.dims[-1]].values, dens[dens.dims[-2]].values, dens.values[0, 0], shading="auto")
        fig.colorbar(im, ax=ax, label="private density (first draw)")
        names = str(tree.attrs.get("kde_variables", "")).split(", ")
        ax.set_xlabel(names[1] if len(names) == 2 else dens.dims[-1])
        ax.set_ylabel(names[0] if len(names) == 2 else dens.dims[-2])
    at = tree.attrs
    privacy = f"epsilon {float(at.get('epsilon', float('nan'))):g}" + (
        f", delta {float(at['delta']):g}" if float(at.get("delta", 0) or 0) > 0 else "")
    note = "; not normalised (mass != 1)" if at.get("kde_normalised", 1) == 0 else ""
    ax.set_title(f"private KDE: {at.get('kde_mechanism', at.get('mechanism', ''))}, {privacy}, n = {at.get('n')}{note}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(Path(path).expanduser(), dpi=120)
    plt.close(fig)


__all__ = ["add_subparser", "run"]
