"""Real functional datasets as ``xr.DataArray`` with dims ``("curve", "t")``.

Two kinds of source:

* **embedded** datasets shipped offline by the ``fdars`` package (imported
  lazily): Berkeley growth heights and Canadian weather;
* **file** datasets, NetCDF files shipped with the package
  (``fdp_ppl/datasets/data``, provenance and licence in its README) or in a
  data directory of the user's: DTI tract profiles and Adelaide Monday
  electricity demand; any path to a NetCDF file works too (other formats such as CSV are refused with
  a message saying what is expected).

The record dimension of a file (the privacy unit: n is its size) comes from
names, never from position: ``record_dim=`` (``--record-dim``), else the dim
named ``curve``, else the other dim of the grid dim (``t_dim=`` or a dim
named ``t``); otherwise the load is refused and the message names both dims.
The bundled files declare theirs (``scan`` for DTI, ``day`` for electricity).

The ``t`` coordinate of the result holds the *original* grid points (ages in
years, half-hours, tract locations ...); rescaling to [0, 1] happens later in
:meth:`fdp_ppl.spaces.Grid.from_points`. Per-curve coordinates (sex, subject
id, visit, station ...) are kept along ``curve``. The ``curve`` coordinate is
the 0-based row index in the source, so rows dropped as incomplete stay
traceable.

Missing values (NaN/inf) stop the load by default (``missing="error"``).
``missing="impute"`` keeps every record and sets each missing point to a
public value (:func:`fdp_ppl.io.missing.impute_missing`), so n stays the
number of records and every public parameter of a release is the same for a
record with a missing value and its complete neighbour. ``drop_incomplete``
is for studies that reproduce a paper only: n then counts the complete
records, which depends on the data, so a release built on it is not private.

The data directory is resolved in this order: the ``data_dir`` argument, the
environment variable ``FDP_PPL_DATA_DIR``, the package's own data folder.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError
from ..settings import DATA_DIR_ENV
from ..io.containers import record_and_grid_dims
from ..io.missing import MISSING_POLICIES, impute_missing

ENV_VAR = DATA_DIR_ENV

#: Accepted dataset names (aliases included) and a short description of each.
DATASETS: dict[str, str] = {
    "growth": "Berkeley Growth Study: heights (cm) of 39 boys and 54 girls at 31 ages, 1-18 years; "
              "93 curves x 31 ages (embedded, from fdars).",
    "canadian_weather": "Canadian weather: daily mean temperature (degC, default) or precipitation (mm) "
                        "at 35 stations; 35 curves x 365 days (embedded, from fdars).",
    "weather": "alias of 'canadian_weather'.",
    "dti": "Diffusion tensor imaging fractional anisotropy tract profiles (dimensionless, in [0, 1]): "
           "'cca' (corpus callosum, 382 scans x 93 locations, 6 scans incomplete, default) or 'rcst' "
           "(right corticospinal tract, 382 x 55); several scans per subject (file dti.nc).",
    "electricity_monday": "Adelaide half-hourly electricity demand (MW) on Mondays, 7 July 1997 - 31 March "
                          "2007; 508 days x 48 half-hours (file electricity_monday.nc).",
    "electricity": "alias of 'electricity_monday'.",
}

_ALIASES = {"weather": "canadian_weather", "electricity": "electricity_monday"}

# file datasets: file name, default variable, allowed variables, units, record dim (the privacy unit), units of t
_FILES = {
    "dti": dict(file="dti.nc", default="cca", variables=("cca", "rcst"), record_dim="scan",
                units="fractional anisotropy (dimensionless, in [0, 1])", t_units="tract location (0-1)"),
    "electricity_monday": dict(file="electricity_monday.nc", default="demand", variables=("demand",),
                               record_dim="day", units="MW", t_units="half-hour of the day (1-48)"),
}

#: first bytes of the NetCDF formats xarray reads here: classic / 64-bit offset / CDF-5, and NetCDF-4 (HDF5)
_NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")

#: what a data file must be, and how to make one (the messages that refuse a file)
_EXPECTED_FILE = ("expected a NetCDF file (.nc) or Zarr store (.zarr) with one 2-D variable of curves, records x grid, "
                  "e.g. y(curve, t) with the grid points as the t coordinate, or a CSV / Parquet table (wide: one row "
                  "per record, grid points as column headers; long: columns id, t, value)")
_CONVERT = "convert with xarray: xr.DataArray(values, dims=('curve', 't'), coords={'t': points}).to_netcdf('curves.nc')"


# ---------------------------------------------------------------------- data directory
#: the real datasets shipped with the package (see ``fdp_ppl/datasets/data/README.md`` for provenance and licence)
PACKAGE_DATA = Path(__file__).resolve().parent / "data"


def data_directory(data_dir=None) -> Path:
    """Directory that holds the file datasets.

    Resolution order: ``data_dir`` if given; else the environment variable
    ``FDP_PPL_DATA_DIR`` if set and non-empty; else the datasets shipped with
    the package (:data:`PACKAGE_DATA`: DTI, electricity demand, Berkeley growth).

    Parameters
    ----------
    data_dir : str or os.PathLike, optional

    Returns
    -------
    pathlib.Path
        The directory (not checked for existence when given explicitly or
        through the environment; :func:`load_dataset` reports a missing file).
    """
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    return PACKAGE_DATA


def _missing_file_error(path: Path, data_dir) -> FileNotFoundError:
    if data_dir is not None:
        how = "the data_dir argument"
    elif os.environ.get(ENV_VAR, "").strip():
        how = f"the environment variable {ENV_VAR}"
    else:
        how = f"the package's data folder {PACKAGE_DATA}"
    return FileNotFoundError(
        f"data file {path.name!r} not found in {path.parent} (directory taken from {how}); "
        f"pass data_dir=... to load_dataset or set the environment variable {ENV_VAR} to the directory "
        f"that holds {path.name}")


# ---------------------------------------------------------------------- public loader
class MissingValuesError(InputError):
    """Curves with missing (NaN/inf) values and ``missing="error"``.

    Attributes
    ----------
    dataset, variable : str
    n_incomplete, n_records : int
        Data-holder information (for the message; never part of a release).
    """

    def __init__(self, message: str, fix: str = "", *, dataset: str = "", variable: str = "",
                 n_incomplete: int = 0, n_records: int = 0):
        super().__init__(message, fix)
        self.dataset, self.variable = dataset, variable
        self.n_incomplete, self.n_records = int(n_incomplete), int(n_records)


def load_dataset(name_or_path, var: str | None = None, *, data_dir=None, missing: str = "error", reference=None,
                 reference_name: str | None = None, drop_incomplete: bool = False, record_dim: str | None = None,
                 t_dim: str | None = None, curve_dim: str | None = None) -> xr.DataArray:
    """Load a real functional dataset as curves on their original grid.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A name from :data:`DATASETS` (``"growth"``, ``"weather"`` /
        ``"canadian_weather"``, ``"dti"``, ``"electricity"`` /
        ``"electricity_monday"``; case-insensitive) or a path to a NetCDF
        file (``.nc``), a Zarr store (``.zarr``, read into memory; for
        curves larger than memory see :mod:`fdp_ppl.io.stores`) or a CSV /
        Parquet table (:func:`fdp_ppl.io.containers.read_curves_file`: wide or
        long; other formats are refused with a message saying what is
        expected).
    var : str, optional
        Variable to load. ``growth``: ``"height"`` (the only one; may be
        omitted). ``weather``: ``"temperature"`` (default, degC) or
        ``"precipitation"`` (mm). ``dti``: ``"cca"`` (default) or ``"rcst"``.
        ``electricity``: ``"demand"`` (MW). For a ``.nc`` path it is required
        when the file holds more than one 2-D variable.
    data_dir : str or os.PathLike, optional
        Directory of the file datasets; see :func:`data_directory`.
    missing : {"error", "impute"}
        What to do with missing (NaN/inf) values. ``"error"`` (default):
        raise :class:`MissingValuesError`. ``"impute"``: keep every record
        and set each missing point to the public ``reference`` (default 0)
        with :func:`~fdp_ppl.io.missing.impute_missing`; n stays the
        number of records. The rule is ``attrs["missing_rule"]`` (public);
        the counts ``attrs["n_imputed_curves"]`` and
        ``attrs["n_imputed_points"]`` are for the data holder only.
    reference : float, array_like (K,) or callable, optional
        Public value of a missing point with ``missing="impute"``, in the
        units of the curves and on their original grid; a callable receives
        the original grid points. Default 0 (the record contributes 0 there).
    reference_name : str, optional
        Name of ``reference`` for the rule's text.
    drop_incomplete : bool
        Drop curves containing NaN or inf (with a :class:`UserWarning` giving
        the count) instead of raising. For studies only: n then counts the
        complete curves, which depends on the data (a record with a missing
        value and its complete neighbour give different n, ψ, sensitivity
        and noise scales), so a release built on it is not private; use
        ``missing="impute"`` for releases.
    record_dim : str, optional
        Name of the record dim in a file: the privacy unit (n is its size).
        Default: the other dim of ``t_dim`` if given, else the dim named
        ``curve``, else the other dim of a dim named ``t``; a variable whose
        dims say neither is refused (never read by position). The bundled
        files declare theirs (``scan``, ``day``).
    t_dim : str, optional
        Name of the grid dim in a file (default: the other dim).
    curve_dim : str, optional
        Alias of ``record_dim`` (kept for older code).

    Returns
    -------
    xr.DataArray
        dims exactly ``("curve", "t")``, shape (n, K). Coordinates: ``t`` the
        original grid points (e.g. ages 1-18, half-hours 1-48, DTI locations
        0-1); ``curve`` the 0-based row index in the source; every other
        per-curve coordinate of the source (``sex``, ``subject_id``,
        ``visit``, ``station``, the file's original curve label such as
        ``day`` ...). attrs: ``dataset``, ``variable``, ``units`` (when
        known), ``source``, ``n_dropped`` (int), ``t_name`` (original name of
        the grid), and ``data_path`` for files. Values are in memory; the
        source file is opened read-only and only the chosen variable is read.

    Raises
    ------
    ValueError
        Unknown dataset name or variable (the message lists the available
        ones); a ``.nc`` file with several 2-D variables and no ``var``; a
        variable that is not 2-D; ``record_dim`` / ``t_dim`` not among the
        variable's dims, or a record dim not named (an
        :class:`~fdp_ppl.errors.InputError`, whose message names both dims
        and ``record_dim=``); a file that is empty or not NetCDF (CSV ...);
        no complete curve left with ``drop_incomplete``; an unknown
        ``missing`` or ``missing="impute"`` with ``drop_incomplete=True``.
    MissingValuesError
        Curves with NaN/inf and ``missing="error"`` (a ValueError; the
        message names ``missing="impute"`` and ``drop_incomplete=True``).
    FileNotFoundError
        The data file is missing; the message names the directory searched
        and the fix (``data_dir=...`` or ``FDP_PPL_DATA_DIR``).
    ImportError
        ``fdars`` is not installed (embedded datasets only).

    Notes
    -----
    DTI rows are scans (visits), several per subject: record-level privacy of
    scans is not person-level privacy (Lin & Reimherr 2026, Section 7.1;
    ``specs/iclp.md`` §3.4). Mirshani et al. (2019, Section 6) use the same
    DTI ``cca`` data; the ICLP paper (Table 2) uses ``cca`` and electricity.

    Examples
    --------
    >>> curves = load_dataset("growth")                  # doctest: +SKIP
    >>> grid = Grid.from_points(curves["t"].values)      # doctest: +SKIP
    """
    if isinstance(name_or_path, (str, os.PathLike)):
        raw = os.fspath(name_or_path)
    else:
        raise TypeError(f"name_or_path must be a dataset name or a path to a NetCDF file, got "
                        f"{type(name_or_path).__name__}; curves already in memory (an xr.DataArray (curve, t) or an "
                        "array (n, K) with a Grid) go to a summary directly, e.g. iclp_qr_mean(curves, basis, tau=...)")
    if record_dim is not None and curve_dim is not None and record_dim != curve_dim:
        raise InputError(f"record_dim={record_dim!r} and curve_dim={curve_dim!r} (its alias) differ",
                         "pass only record_dim")
    record_dim = record_dim if record_dim is not None else curve_dim
    key = raw.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if missing not in MISSING_POLICIES:
        raise InputError(f"unknown missing={missing!r}", f"use one of {', '.join(map(repr, MISSING_POLICIES))}")
    if missing == "impute" and drop_incomplete:
        raise InputError("missing='impute' and drop_incomplete=True contradict each other",
                         "pass one of them (missing='impute' for a release)")
    if missing == "error" and (reference is not None or reference_name is not None):
        raise InputError("reference applies only with missing='impute'", "pass missing='impute' or drop reference")
    policy = dict(missing=missing, reference=reference, reference_name=reference_name,
                  drop_incomplete=drop_incomplete)

    if key in ("growth", "canadian_weather"):
        if record_dim is not None or t_dim is not None:
            raise ValueError(f"record_dim / t_dim apply to NetCDF files only, not to the embedded {key!r} dataset")
        da = _load_growth(var) if key == "growth" else _load_weather(var)
        return _finish(da, **policy)

    if key in _FILES:
        spec = _FILES[key]
        path = data_directory(data_dir) / spec["file"]
        if not path.is_file():
            raise _missing_file_error(path, data_dir)
        v = spec["default"] if var is None else var
        if v not in spec["variables"]:
            raise ValueError(f"unknown variable {v!r} for dataset {key!r}; available: {', '.join(spec['variables'])}")
        if record_dim is None and t_dim is None:
            record_dim = spec["record_dim"]
        da = _load_nc(path, v, record_dim=record_dim, t_dim=t_dim)
        da.attrs.update(dataset=key, units=spec["units"], t_units=spec["t_units"])
        return _finish(da, **policy)

    from ..io.containers import TABLE_SUFFIXES, read_curves_file
    from ..io.stores import is_store

    if Path(raw).suffix.lower() in TABLE_SUFFIXES:
        if record_dim is not None or t_dim is not None:
            raise InputError("record_dim / t_dim name the dims of NetCDF and Zarr files; a table has one row per "
                             "record", "drop them")
        da = read_curves_file(_resolve(raw, data_dir, "table"), var)
        return _finish(da, **policy)
    if is_store(Path(raw).expanduser()):
        path = _resolve(raw, data_dir, "Zarr store", directory=True)
        da = _load_nc(path, var, record_dim=record_dim, t_dim=t_dim, zarr=True)
        da.attrs.setdefault("dataset", path.stem)
        return _finish(da, **policy)
    if raw.lower().endswith(".nc") or Path(raw).expanduser().is_file():
        path = Path(raw).expanduser()
        if not path.is_absolute() and not path.is_file() and (data_dir is not None or os.environ.get(ENV_VAR)):
            path = data_directory(data_dir) / path
        if not path.is_file():
            raise FileNotFoundError(
                f"NetCDF file {raw!r} not found (looked at {path.resolve()}); pass an existing path, or a file "
                f"name together with data_dir=... or the environment variable {ENV_VAR}")
        _check_netcdf(path)
        da = _load_nc(path, var, record_dim=record_dim, t_dim=t_dim)
        da.attrs.setdefault("dataset", path.stem)
        return _finish(da, **policy)

    names = ", ".join(sorted(DATASETS))
    raise ValueError(f"unknown dataset {raw!r}; use one of {names}, or a path to a NetCDF (.nc) file")


def _resolve(raw: str, data_dir, what: str, *, directory: bool = False) -> Path:
    """An existing path: as given, or under the data directory when one is set."""
    path = Path(raw).expanduser()
    exists = path.is_dir() if directory else path.is_file()
    if not exists and not path.is_absolute() and (data_dir is not None or os.environ.get(ENV_VAR)):
        path = data_directory(data_dir) / path
        exists = path.is_dir() if directory else path.is_file()
    if not exists:
        raise FileNotFoundError(f"{what} {raw!r} not found (looked at {path.resolve()}); pass an existing path, or a "
                                f"name together with data_dir=... or the environment variable {ENV_VAR}")
    return path


# ---------------------------------------------------------------------- embedded (fdars)
def _fdars():
    try:
        from fdars import datasets
    except ImportError as err:  # pragma: no cover - fdars is a dependency
        raise ImportError("the embedded datasets need the 'fdars' package: pip install fdars") from err
    return datasets


def _meta_columns(meta) -> dict[str, np.ndarray]:
    if meta is None:
        return {}
    if hasattr(meta, "columns"):  # pandas DataFrame
        return {str(c): np.asarray(meta[c]) for c in meta.columns}
    return {str(k): np.asarray(v) for k, v in dict(meta).items()}


def _embedded(values, t, meta, *, rename=None) -> xr.DataArray:
    values = np.asarray(values, dtype=float)
    coords = {dims.CURVE: np.arange(values.shape[0]), dims.T: np.asarray(t, dtype=float)}
    for col, vals in _meta_columns(meta).items():
        if vals.shape == (values.shape[0],):
            if vals.dtype.kind == "O":
                vals = vals.astype(str)
            coords[(rename or {}).get(col, col)] = (dims.CURVE, vals)
    return xr.DataArray(values, dims=(dims.CURVE, dims.T), coords=coords)


def _load_growth(var) -> xr.DataArray:
    if var not in (None, "height"):
        raise ValueError(f"unknown variable {var!r} for dataset 'growth'; available: height")
    age, x, meta = _fdars().load_growth(return_fdata=False)
    da = _embedded(x, age, meta, rename={"id": "child_id"})
    da.name = "height"
    da.attrs.update(dataset="growth", variable="height", units="cm", t_name="age", t_units="years",
                    source="fdars.datasets.load_growth: Berkeley Growth Study (Tuddenham & Snyder 1954), "
                           "as in R package fda (Ramsay & Silverman)")
    return da


def _load_weather(var) -> xr.DataArray:
    v = "temperature" if var is None else str(var).lower()
    if v not in ("temperature", "precipitation"):
        raise ValueError(f"unknown variable {var!r} for dataset 'canadian_weather'; "
                         "available: temperature, precipitation")
    day, x, meta = _fdars().load_canadian_weather(variable=v, return_fdata=False)
    da = _embedded(x, day, meta)
    da.name = v
    da.attrs.update(dataset="canadian_weather", variable=v, units="degC" if v == "temperature" else "mm",
                    t_name="day", t_units="day of year (1-365)",
                    source="fdars.datasets.load_canadian_weather: daily means at 35 Canadian stations, "
                           "as in R package fda (Ramsay & Silverman)")
    return da


# ---------------------------------------------------------------------- NetCDF files
def _check_netcdf(path: Path) -> None:
    """Refuse, with what is expected, a file that is empty or not NetCDF (read-only: its first bytes).

    Raises
    ------
    InputError
        An empty file, or a file whose first bytes are not a NetCDF signature
        (a CSV, a spreadsheet ...).
    """
    with open(path, "rb") as f:
        head = f.read(8)
    if not head:
        raise InputError(f"{path.name} is empty: {_EXPECTED_FILE}")
    if not head.startswith(_NETCDF_MAGIC):
        kind = f" ({path.suffix.lstrip('.').upper()} is not read yet)" if path.suffix else ""
        raise InputError(f"{path.name} is not a NetCDF file{kind}: {_EXPECTED_FILE}", _CONVERT)


def _open_zarr(path: Path) -> xr.Dataset:
    try:
        import zarr  # noqa: F401
    except ImportError:
        raise InputError(f"reading the Zarr store {path.name} needs the package 'zarr'",
                         "pip install 'fdp-ppl[dask]'") from None
    return xr.open_zarr(path, chunks=None)


def _load_nc(path: Path, var, *, record_dim, t_dim, zarr: bool = False) -> xr.DataArray:
    """Read one 2-D variable from a NetCDF file or a Zarr store (read-only) and name its dims ``(curve, t)``.

    The record dim comes from names (:func:`~fdp_ppl.summaries.curves.record_and_grid_dims`).
    """
    try:
        ds = _open_zarr(path) if zarr else xr.open_dataset(path)
    except ValueError:  # xarray's "no IO backend": a file that is not NetCDF after all
        raise InputError(f"{path.name} cannot be read as NetCDF: {_EXPECTED_FILE}", _CONVERT) from None
    with ds:
        two_d = sorted(str(k) for k, v in ds.data_vars.items() if v.ndim == 2)
        if var is None:
            if not two_d:
                found = ", ".join(f"{k}({', '.join(str(d) for d in v.dims)})" for k, v in ds.data_vars.items())
                raise InputError(f"{path.name} holds no 2-D variable (its variables: {found or 'none'}): "
                                 f"{_EXPECTED_FILE}")
            if len(two_d) != 1:
                raise ValueError(f"{path.name} holds {len(two_d)} 2-D variables ({', '.join(two_d)}); "
                                 "choose one with var=...")
            var = two_d[0]
        if var not in ds.data_vars:
            raise ValueError(f"unknown variable {var!r} in {path.name}; available: "
                             f"{', '.join(sorted(str(k) for k in ds.data_vars))}")
        src = ds[var]
        if src.ndim != 2:
            raise ValueError(f"variable {var!r} in {path.name} has dims {src.dims}; curves need exactly 2 dims "
                             f"(records, grid); 2-D variables: {', '.join(two_d) or 'none'}")
        curve_dim, t_dim = record_and_grid_dims(src.dims, record_dim=record_dim, t_dim=t_dim,
                                                what=f"variable {var!r} in {path.name}", coords=src.coords)
        src = src.transpose(curve_dim, t_dim).load()
        file_attrs = {k: ds.attrs[k] for k in ("title", "source", "license", "note") if k in ds.attrs}

    n, k = src.shape
    t = src[t_dim].values if t_dim in src.coords else np.arange(1, k + 1, dtype=float)
    coords = {dims.CURVE: np.arange(n), dims.T: np.asarray(t, dtype=float)}
    for name, c in src.coords.items():
        name = str(name)
        if name == t_dim or c.dims != (curve_dim,):
            continue
        vals = c.values.astype(str) if c.dtype.kind == "O" else c.values
        coords[name] = (dims.CURVE, vals)  # includes the curve dim's own label (e.g. ``day``)
    da = xr.DataArray(np.asarray(src.values, dtype=float), dims=(dims.CURVE, dims.T), coords=coords, name=var)
    da.attrs.update({k: v for k, v in src.attrs.items() if isinstance(v, (str, int, float, np.number))})
    if "title" in file_attrs:
        da.attrs["title"] = str(file_attrs["title"])
    for k in ("license", "note"):
        if k in file_attrs:
            da.attrs[k] = str(file_attrs[k])
    da.attrs.update(variable=var, source=str(file_attrs.get("source", path.name)),
                    data_path=str(path.resolve()), t_name=t_dim, curve_name=curve_dim)
    return da


# ---------------------------------------------------------------------- missing values
def _finish(da: xr.DataArray, *, missing: str = "error", reference=None, reference_name=None,
            drop_incomplete: bool = False) -> xr.DataArray:
    complete = np.isfinite(da.values).all(axis=1)
    n_bad = int((~complete).sum())
    name = da.attrs.get("dataset", "dataset")
    variable = da.attrs.get("variable") or da.name  # a table has no variable name: then it is left out
    what = f"{name!r}" + (f" variable {str(variable)!r}" if variable else "")
    da.attrs["n_dropped"] = 0
    if missing == "impute":
        out = impute_missing(da, reference, reference_name=reference_name, t_dim=dims.T)
        out.name = da.name
        return out
    if n_bad and not drop_incomplete:
        raise MissingValuesError(
            f"data holder only: {what} has curves with NaN/inf values (the counts are in the "
            "error's n_incomplete and n_records, never in its message)",
            "pass missing='impute' to set the missing points to a public value and keep every record (n stays the "
            "number of records), or, for a study only, drop_incomplete=True to drop them (n then depends on the "
            "data: not private)",
            dataset=str(name), variable=str(variable or ""), n_incomplete=n_bad, n_records=da.sizes[dims.CURVE])
    if n_bad:
        if n_bad == da.sizes[dims.CURVE]:
            raise ValueError(f"{name!r}: every curve contains NaN/inf values; nothing is left to analyse")
        warnings.warn(f"{what}: dropped {n_bad} incomplete curves "
                      f"(NaN/inf); {int(complete.sum())} curves remain (n now depends on the data: for a study "
                      "only; use missing='impute' for a release)", UserWarning, stacklevel=3)
        da = da.isel({dims.CURVE: np.flatnonzero(complete)})
    da.attrs["n_dropped"] = n_bad
    return da


__all__ = ["load_dataset", "data_directory", "DATASETS", "ENV_VAR", "MissingValuesError", "PACKAGE_DATA"]
