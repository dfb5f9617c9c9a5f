"""``fdp-ppl plan``: the plan of a mean-curve release and the accuracy it will have, at no privacy cost.

Takes the public flags of ``fdp-ppl release`` (the same parser pieces: mechanism, ε, δ, τ, kernel, ...) and prints
:meth:`fdp_ppl.ReleasePlan.table` and :meth:`fdp_ppl.ReleasePlan.accuracy` (RMS L² error, pointwise and
simultaneous noise half-widths, the bias of a constant curve). ``--width W`` adds the smallest ε that meets a
simultaneous half-width ``W`` (:func:`fdp_ppl.releasing.accuracy.smallest_epsilon`) and the largest τ that meets
it at the given ε. ``fdp-ppl release --dry-run`` runs the same (:func:`show_plan`).

Privacy notes
-------------
* **No data values are read.** n comes from ``--n`` or from a netCDF file's metadata (the size of its record
  dimension; the grid is its public coordinate), opened lazily: the variable's values are never loaded.
* **Nothing is charged, drawn or written**: there is no ledger, no output file; the Monte Carlo of the quantiles
  draws the public noise law with a fixed seed (``--mc-seed``), the noise of no release.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from .common import CLIError, print_table, registry


def add_subparser(sub) -> None:
    from .release import _mechanism_epilog, add_release_args

    r = sub.add_parser("plan", help="the plan of a mean-curve release and its accuracy (no data read, no charge)",
                       description="Plan a private mean-curve release: its noise, cost and accuracy, from public "
                                   "flags only (the release's own flags; n from --n or a file's metadata).",
                       epilog=_mechanism_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_release_args(r, data_required=False)
    add_plan_args(r)
    # release's output and ledger flags do not exist here: nothing is written or charged
    r.set_defaults(out=None, plot=None, force=False, study=True, ledger=None, budget=None, key_file=None)


def add_plan_args(r) -> None:
    p = r.add_argument_group("plan")
    p.add_argument("--n", type=int, default=None, metavar="N",
                   help="public number of records (persons with --privacy-unit); default: the size of the record "
                        "dim of --data's metadata")
    p.add_argument("--grid", type=int, default=None, metavar="K",
                   help="without --data: K equally spaced grid points on [0, 1] (default 101)")
    p.add_argument("--level", type=float, default=0.95, help="coverage of the noise half-widths (default 0.95)")
    p.add_argument("--constant", type=float, default=None, metavar="C",
                   help="the constant curve whose shrinkage bias is shown (default: tau)")
    p.add_argument("--width", type=float, default=None, metavar="W",
                   help="also the smallest epsilon (and the largest tau) whose simultaneous half-width is at most W")
    p.add_argument("--samples", type=int, default=4000, help="Monte Carlo draws of the public noise law (default 4000)")
    p.add_argument("--mc-seed", type=int, default=0, help="seed of that Monte Carlo (public; default 0)")


def metadata(a, data_required: bool = False) -> tuple:
    """``(grid points, n)`` from public metadata only: ``--grid`` / ``--n``, or a netCDF file opened lazily."""
    import numpy as np

    for name in ("n", "grid"):  # release --dry-run has neither flag
        setattr(a, name, getattr(a, name, None))
    if a.data is None:
        if a.n is None and getattr(a, "n_lower", None) is not None:  # add/remove: n private, n_lower public
            a.n = a.n_lower
        if a.n is None:
            raise CLIError("a plan needs n", "pass --n N (or --data FILE.nc to read it from the file's metadata)")
        k = 101 if a.grid is None else int(a.grid)
        if k < 2:
            raise CLIError(f"--grid must be at least 2, got {k}", "e.g. --grid 101")
        return np.linspace(0.0, 1.0, k), int(a.n)
    if a.grid is not None:
        raise CLIError("--grid applies without --data (the file's grid is used)", "drop --grid")
    from ..datasets.loaders import _ALIASES, _FILES, data_directory

    path, var_name, record_dim = Path(str(a.data)).expanduser(), a.var, a.record_dim
    key = _ALIASES.get(str(a.data).lower(), str(a.data).lower())
    if key in _FILES:  # a bundled file dataset: its netCDF file, default variable and record dim
        entry = _FILES[key]
        path, var_name = data_directory(a.data_dir) / entry["file"], a.var or entry["default"]
        record_dim = record_dim or (entry["record_dim"] if a.t_dim is None else None)
    if not (path.is_file() and path.suffix in (".nc", ".nc4", ".h5")) and not str(path).endswith(".zarr"):
        if a.n is None:
            raise CLIError(f"the metadata of {a.data} cannot be read without its values (a plan reads a netCDF "
                           "file's or Zarr store's metadata only)",
                           "pass --n N and --grid K" + ("" if data_required else " instead of --data"))
        raise CLIError(f"--data {a.data}: a plan reads only a netCDF file's or Zarr store's metadata",
                       "drop --data and pass --grid K")
    import xarray as xr

    from ..io.containers import record_and_grid_dims

    opener = xr.open_zarr if str(path).endswith(".zarr") else xr.open_dataset
    with opener(path) as ds:  # lazy: coordinates and sizes only, the variable's values are never loaded
        names = [var_name] if var_name else [v for v in ds.data_vars if ds[v].ndim == 2]
        if len(names) != 1 or names[0] not in ds.data_vars:
            raise CLIError(f"{a.data} has {len(names)} two-dimensional variables", "name one with --var")
        var = ds[names[0]]
        rec, tdim = record_and_grid_dims(var.dims, record_dim=record_dim, t_dim=a.t_dim,
                                         what=f"variable {names[0]!r} in {a.data}", coords=var.coords)
        t = np.asarray(var[tdim].values, dtype=float) if tdim in var.coords else np.linspace(0, 1, var.sizes[tdim])
        n = int(var.sizes[rec])
    if a.n is not None and getattr(a, "unit", None) is None and int(a.n) != n:
        raise CLIError(f"--n {a.n} differs from the {n} records of {a.data}", "drop --n")
    if getattr(a, "unit", None) is not None:
        if a.n is None:
            raise CLIError("with --privacy-unit a plan needs the public number of persons",
                           "pass --n N (persons x contributions)")
        n = int(a.n)
    return t, n


def show_plan(a) -> int:
    """Print the plan and its accuracy for the flags ``a`` (no data values read, nothing drawn or charged)."""
    import fdp_ppl as fp

    from ..releasing.accuracy import accuracy_table, largest_tau, smallest_epsilon
    from .release import public_mechanism, public_spec

    entry = registry.MECHANISMS[a.mechanism]
    mechanism = public_mechanism(a)
    t, n = metadata(a)
    spec = public_spec(entry, a, t, n)
    plan = fp.plan(spec, mechanism, draws=a.draws, bound=a.bound, seeded=a.seed is not None)
    level = getattr(a, "level", 0.95)
    constant = float(a.tau) if getattr(a, "constant", None) is None else float(a.constant)
    samples, seed = getattr(a, "samples", 4000), getattr(a, "mc_seed", 0)
    acc = plan.accuracy(level=level, constant=constant, samples=samples, seed=seed)
    rows = [("n", str(n)), ("grid", f"{len(t)} points")] + plan.table() + accuracy_table(acc)
    width = getattr(a, "width", None)
    if width is not None:
        opts = {"draws": a.draws, "bound": a.bound, "seeded": a.seed is not None}
        try:
            eps = f"{smallest_epsilon(spec, mechanism, width, level=level, samples=samples, seed=seed, **opts):.4g}"
        except InputError as e:
            eps = f"none ({e.args[0]})"
        try:
            tau = f"{largest_tau(spec, mechanism, width, level=level, samples=samples, seed=seed, **opts):.4g}"
        except InputError as e:
            tau = f"none ({e.args[0]})"
        rows += [(f"smallest epsilon for half-width {width:g}", eps),
                 (f"largest tau for half-width {width:g}", f"{tau} (at epsilon {a.epsilon:g})")]
    rows.append(("spent by this plan", "nothing (no data values read, no ledger, no file)"))
    print_table("plan", rows)
    return 0


def run(a) -> int:
    return show_plan(a)


__all__ = ["add_subparser", "metadata", "run", "show_plan"]
