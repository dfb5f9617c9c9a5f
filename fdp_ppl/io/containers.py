"""Curves in the containers users hold, converted to one form: an ``xr.DataArray`` with dims ``(curve, t)``.

One converter (:func:`to_curves`) serves the Python API (every summary accepts what it accepts) and the
command line (:func:`read_curves_file` for CSV and Parquet files):

* ``xr.DataArray`` with two dims: the record dim is chosen by name (:func:`record_and_grid_dims`), never by
  position;
* a numpy array (n, K) whose rows are records, with the grid points ``t`` (K,);
* a **wide** ``pandas.DataFrame``: one row per record, one column per grid point, the column labels being the
  grid points (numbers, or strings that read as numbers); the index is kept as the record labels;
* a **long** ``pandas.DataFrame`` with one row per (record, grid point) and three columns: record id, grid
  point, value (named by ``id_col``, ``t_col``, ``value_col``; by default ``id``/``curve``/``subject``,
  ``t``/``time``/``age``/``x`` and ``value``/``y``);
* a ``skfda.FDataGrid`` with one-dimensional domain and codomain (optional extra ``fdp-ppl[skfda]``).

No interpolation is done: every record must be observed on the same grid; irregular or mismatched grids, a
non-numeric column, a single curve or an empty table are refused with a one-line
:class:`~fdp_ppl.errors.InputError` that says what was expected. (Interpolating onto a public grid is a public
rule the user applies before; a grid derived from the records would be a data-dependent public parameter.)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError

#: default column names of a long table, tried in order
ID_COLUMNS = ("id", "curve", "subject", "record")
T_COLUMNS = ("t", "time", "age", "x", "argvals")
VALUE_COLUMNS = ("value", "y", "values")

_EXPECTED = ("expected curves as an xr.DataArray (records x grid), a numeric array (n, K) with t=grid points, a "
             "wide table (one row per record, one column per grid point) or a long table (id, t, value)")


def record_and_grid_dims(dim_names, *, record_dim: str | None = None, t_dim: str | None = None,
                         curve_dim: str | None = None, what: str = "the curves", coords=None) -> tuple[str, str]:
    """Which of two dims indexes the records and which is the grid, from their names.

    The record dim is the privacy unit (n is its size), so it is never taken
    from position. In order: an explicit ``record_dim`` (``curve_dim`` is an
    alias); else the other dim of an explicit ``t_dim``; else the dim named
    ``"curve"``; else the other dim of a dim named ``"t"``; otherwise a
    refusal.

    Parameters
    ----------
    dim_names : sequence of str
        The two dims (e.g. ``DataArray.dims``), in any order.
    record_dim, curve_dim : str, optional
        Name of the record dim (``curve_dim`` is the older name; both may be
        given only if equal).
    t_dim : str, optional
        Name of the grid dim.
    what : str
        What the dims belong to, for messages (e.g. ``"variable 'y' in a.nc"``).
    coords : mapping, optional
        The variable's coordinates (e.g. ``DataArray.coords``); with them, a ``record_dim`` given alone that
        carries the coordinate while the other dim has none (the grid dim named as the record dim: the grid
        would become 1..K) is refused.

    Returns
    -------
    (record_dim, grid_dim) : tuple of str

    Raises
    ------
    InputError
        Not exactly two dims; a given name that is not one of them; record
        and grid dims equal; or no name tells which dim is which (the message
        names both dims and the fix: ``record_dim=NAME``); with ``coords``, a
        ``record_dim`` (without ``t_dim``) that carries the only coordinate.
    """
    names = tuple(str(d) for d in dim_names)
    if len(names) != 2:
        raise InputError(f"{what} must have 2 dims (records, grid), got dims {names}",
                         "select one variable/slice first")
    if record_dim is not None and curve_dim is not None and record_dim != curve_dim:
        raise InputError(f"record_dim={record_dim!r} and curve_dim={curve_dim!r} (its alias) differ",
                         "pass only record_dim")
    rec = record_dim if record_dim is not None else curve_dim
    for label, d in (("record_dim", rec), ("t_dim", t_dim)):
        if d is not None and d not in names:
            raise InputError(f"{label}={d!r} is not a dim of {what}; its dims are {names}")

    def other(d):
        return names[1] if d == names[0] else names[0]

    if rec is None:
        if t_dim is not None:
            rec = other(t_dim)
        elif dims.CURVE in names:
            rec = dims.CURVE
        elif dims.T in names:
            rec = other(dims.T)
        else:
            a, b = names
            raise InputError(f"cannot tell which dim of {what} {names} indexes the records (the privacy unit: n is "
                             f"its size)", f"pass record_dim={b} or record_dim={a} (the other dim is the grid), or "
                             f"name the record dim '{dims.CURVE}'")
    grid_dim = t_dim if t_dim is not None else other(rec)
    if rec == grid_dim:
        raise InputError(f"the record dim and the grid dim must differ, both are {rec!r}")
    given = record_dim if record_dim is not None else curve_dim
    if given is not None and t_dim is None and coords is not None and rec in coords and grid_dim not in coords:
        raise InputError(f"record_dim={rec!r} names the grid dim of {what}: {rec!r} carries the coordinate and "
                         f"{grid_dim!r} has none", f"pass record_dim={grid_dim} (or, if {rec!r} really indexes the "
                         f"records, also t_dim={grid_dim})")
    return rec, grid_dim



def _is_pandas(obj, kind: str) -> bool:
    return type(obj).__module__.split(".")[0] == "pandas" and type(obj).__name__ == kind


def _is_fdatagrid(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "skfda" and type(obj).__name__ == "FDataGrid"


def _finish(values: np.ndarray, t, labels=None, *, name=None, attrs=None, label_name=None) -> xr.DataArray:
    values = np.asarray(values, dtype=float)
    t = np.asarray(t, dtype=float)
    if values.ndim != 2 or values.shape[0] == 0 or values.shape[1] == 0:
        raise InputError(f"the table is empty (shape {values.shape}): {_EXPECTED}")
    if values.shape[0] < 2:
        raise InputError(f"a single curve was given: {_EXPECTED} with at least 2 records")
    if t.shape != (values.shape[1],):
        raise InputError(f"{values.shape[1]} values per curve but {t.size} grid points", "pass t with one point per column")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise InputError("the grid points must be finite and strictly increasing",
                         "sort the columns by their grid point; no repeated grid points")
    coords = {dims.T: t}
    if labels is not None:  # the table's id column; its header is kept (a privacy unit may name it)
        coords["record_label"] = (dims.CURVE, np.asarray(labels),
                                  {"long_name": str(label_name)} if label_name is not None else {})
    return xr.DataArray(values, dims=(dims.CURVE, dims.T), coords=coords, name=name, attrs=dict(attrs or {}))


def _numeric_labels(columns, index_name=None) -> np.ndarray:
    bad = []
    out = []
    for c in columns:
        try:
            out.append(float(c))
        except (TypeError, ValueError):
            bad.append(c)
    if bad:
        _missing_long_column([index_name, *columns])
        raise InputError(f"column labels {bad[:3]} are not grid points: a wide table needs one numeric column label per "
                         "grid point", "put the record ids in the index (or pass a long table with id, t, value)")
    t = np.asarray(out, dtype=float)
    _, first, counts = np.unique(t, return_index=True, return_counts=True)
    if np.any(counts > 1):
        same = [str(c) for c, v in zip(columns, t) if v == t[first[np.argmax(counts > 1)]]]
        raise InputError(f"grid point {same[0]!r} is a column label more than once (columns {', '.join(same)})",
                         "give each grid point one column")
    return t


def _missing_long_column(names) -> None:
    """Refuse, naming the missing column, a table that holds some of a long table's columns but not all."""
    names = [str(c) for c in names if c is not None]
    roles = (("record id", ID_COLUMNS, "id"), ("grid point t", T_COLUMNS, "t"), ("value", VALUE_COLUMNS, "value"))
    found = [any(c in names for c in cands) for _, cands, _ in roles]
    if len(names) == 3 and sum(found) == 2:
        role, cands, flag = roles[found.index(False)]
        other = [c for c in names if not any(c in cands2 for _, cands2, _ in roles)]
        raise InputError(f"a long table (columns {', '.join(names)}) with no {role} column (tried {', '.join(cands)})",
                         f"rename column {other[0]!r} to {cands[0]!r} (in Python: {flag}_col={other[0]!r})" if other
                         else f"add a {role} column")


def _numeric_values(frame, what: str) -> np.ndarray:
    import pandas as pd

    nonnum = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if nonnum:
        raise InputError(f"non-numeric {what} {[str(c) for c in nonnum[:3]]}: curve values must be numbers",
                         "drop or convert those columns (missing values as NaN)")
    return frame.to_numpy(dtype=float)


def _pick(columns, given, candidates, role: str) -> str:
    if given is not None:
        if given not in columns:
            raise InputError(f"no column {given!r} for the {role}; the table has {list(columns)[:6]}")
        return given
    for c in candidates:
        if c in columns:
            return c
    raise InputError(f"cannot tell which column holds the {role} (tried {', '.join(candidates)})",
                     f"name it: {role.split()[-1]}_col=... (or --{role.split()[-1]}-col on the command line)")


def _looks_long(frame) -> bool:
    cols = list(frame.columns)
    return len(cols) == 3 and any(c in cols for c in T_COLUMNS) and any(c in cols for c in VALUE_COLUMNS)


def from_long(frame, *, id_col: str | None = None, t_col: str | None = None, value_col: str | None = None,
              name=None) -> xr.DataArray:
    """A long table (one row per record and grid point) → curves (curve, t).

    Raises
    ------
    InputError
        Columns not found; a non-numeric grid or value column; records observed on different grids
        (irregular or mismatched); a (record, grid point) pair given twice; fewer than 2 records.
    """
    import pandas as pd

    cols = frame.columns
    idc = _pick(cols, id_col, ID_COLUMNS, "record id")
    tc = _pick(cols, t_col, T_COLUMNS, "grid point t")
    vc = _pick(cols, value_col, VALUE_COLUMNS, "value")
    if len(frame) == 0:
        raise InputError(f"the table is empty: {_EXPECTED}")
    for c, role in ((tc, "grid"), (vc, "value")):
        if not pd.api.types.is_numeric_dtype(frame[c]):
            raise InputError(f"the {role} column {c!r} is not numeric", "convert it to numbers (missing values as NaN)")
    if frame.duplicated([idc, tc]).any():
        raise InputError("a (record, grid point) pair appears more than once in the long table",
                         "keep one value per record and grid point")
    wide = frame.pivot(index=idc, columns=tc, values=vc)
    counts = frame.groupby(idc, sort=False)[tc].count()
    if wide.isna().to_numpy().sum() > frame[vc].isna().sum():
        short = counts[counts < wide.shape[1]]
        raise InputError(f"irregular grids: {len(short)} of {len(counts)} records are not observed at all "
                         f"{wide.shape[1]} grid points (e.g. record {short.index[0]!r} at {int(short.iloc[0])})",
                         "give every record the same grid (interpolating onto a public grid is a rule you apply "
                         "first, with its points fixed in advance)")
    wide = wide.reindex(pd.unique(frame[idc])).sort_index(axis=1)  # records in order of first appearance
    return _finish(wide.to_numpy(dtype=float), wide.columns.to_numpy(dtype=float), wide.index.to_numpy(), name=name,
                   label_name=idc)


def from_wide(frame, *, name=None) -> xr.DataArray:
    """A wide table (rows = records, columns = grid points labelled by their value) → curves (curve, t).

    Raises
    ------
    InputError
        Non-numeric column labels or values; fewer than 2 rows; an empty table.
    """
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise InputError(f"the table is empty (shape {frame.shape}): {_EXPECTED}")
    t = _numeric_labels(frame.columns, frame.index.name)
    values = _numeric_values(frame, "columns")
    order = np.argsort(t, kind="stable")
    return _finish(values[:, order], t[order], frame.index.to_numpy(), name=name, label_name=frame.index.name)


def to_curves(obj, t=None, *, record_dim: str | None = None, t_dim: str | None = None, id_col: str | None = None,
              t_col: str | None = None, value_col: str | None = None, layout: str = "auto") -> xr.DataArray:
    """Any supported container of curves → ``xr.DataArray`` with dims ``("curve", "t")`` on the original grid.

    Parameters
    ----------
    obj : xr.DataArray, ndarray (n, K), pandas.DataFrame (wide or long) or skfda.FDataGrid
    t : array_like (K,), optional
        Grid points of a numpy array (required for it; ignored otherwise).
    record_dim, t_dim : str, optional
        Dim names of a DataArray (the record dim is never chosen by position).
    id_col, t_col, value_col : str, optional
        Columns of a long table.
    layout : {"auto", "wide", "long"}
        How to read a DataFrame. ``"auto"``: long if it has exactly three columns named like an id, a grid
        point and a value (or any of ``id_col``/``t_col``/``value_col`` is given), else wide.

    Returns
    -------
    xr.DataArray
        dims ``("curve", "t")``, ``t`` in the container's units; the input is not modified (a DataArray is
        transposed lazily, a dask-backed one stays lazy).

    Raises
    ------
    InputError
        An unsupported container, or what :func:`from_wide` / :func:`from_long` refuse; a numpy array without
        ``t``; a FDataGrid with more than one domain or codomain dimension.
    """
    if isinstance(obj, xr.DataArray):
        rec, tn = record_and_grid_dims(obj.dims, record_dim=record_dim, t_dim=t_dim, coords=obj.coords)
        da = obj.transpose(rec, tn)
        pts = da[tn].values if tn in da.coords else np.arange(da.sizes[tn], dtype=float)
        return xr.DataArray(da.data, dims=(dims.CURVE, dims.T), coords={dims.T: np.asarray(pts, dtype=float)},
                            name=obj.name, attrs=dict(obj.attrs))
    if _is_pandas(obj, "DataFrame"):
        if layout not in ("auto", "wide", "long"):
            raise InputError(f"unknown layout {layout!r}", "use 'auto', 'wide' or 'long'")
        long = layout == "long" or (layout == "auto" and (any(c is not None for c in (id_col, t_col, value_col))
                                                            or _looks_long(obj)))
        return from_long(obj, id_col=id_col, t_col=t_col, value_col=value_col) if long else from_wide(obj)
    if _is_pandas(obj, "Series"):
        raise InputError(f"a single pandas Series is one curve or one column: {_EXPECTED}")
    if _is_fdatagrid(obj):
        try:
            grid_points = obj.grid_points
            data = np.asarray(obj.data_matrix, dtype=float)
        except AttributeError:
            raise InputError("this FDataGrid has no grid_points / data_matrix: expected a scikit-fda FDataGrid",
                             "pip install 'fdp-ppl[skfda]'") from None
        if len(grid_points) != 1 or data.ndim != 3 or data.shape[2] != 1:
            raise InputError("only FDataGrid objects with a one-dimensional domain and codomain are curves",
                             "select one output dimension: fd.coordinates[0]")
        return _finish(data[..., 0], grid_points[0], None, name=getattr(obj, "dataset_name", None))
    if isinstance(obj, xr.Dataset):
        raise InputError(f"curves must be one variable, got an xr.Dataset with {list(obj.data_vars)}",
                         "pass ds['name'], a DataArray with dims (records, grid)")
    try:
        arr = np.asarray(obj, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{type(obj).__module__}.{type(obj).__qualname__} is not a container of curves: {_EXPECTED}") \
            from None
    if arr.ndim != 2:
        raise InputError(f"a numeric array of curves must be 2-D (n, K), got shape {arr.shape}: one record per row")
    if t is None:
        raise InputError("a numeric array of curves needs its grid points", "pass t=grid_points (one per column)")
    return _finish(arr, t, None)


def read_curves_file(path, var: str | None = None, *, id_col: str | None = None, t_col: str | None = None,
                     value_col: str | None = None, layout: str = "auto") -> xr.DataArray:
    """Curves from a CSV or Parquet file (wide or long table; see :func:`to_curves`).

    A wide CSV has a header row of grid points; a first column whose header is not a number (e.g. ``id``)
    holds the record ids. ``var`` is unused (a table holds one variable) and refused if given.

    Raises
    ------
    InputError
        Not a ``.csv`` / ``.parquet`` file, an empty file, or what :func:`to_curves` refuses.
    FileNotFoundError
        The file is missing.
    """
    import pandas as pd

    p = Path(os.fspath(path)).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"file {os.fspath(path)!r} not found (looked at {p.resolve()})")
    if var is not None:
        raise InputError(f"a table holds one variable; --var/var={var!r} applies to NetCDF and Zarr files",
                         "drop it")
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            frame = _read_csv(p)
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(p)
        else:
            raise InputError(f"{p.name}: unknown table format {suffix!r}", "use .csv or .parquet")
    except pd.errors.EmptyDataError:
        raise InputError(f"{p.name} is empty: {_EXPECTED}") from None
    except ImportError as err:
        raise InputError(f"reading {p.name} needs {err.name or 'pyarrow'}", "pip install pyarrow") from None
    long = layout == "long" or (layout == "auto" and (any(c is not None for c in (id_col, t_col, value_col))
                                                        or _looks_long(frame)))
    if not long and frame.shape[1] > 0:
        first = frame.columns[0]
        try:
            float(first)
        except (TypeError, ValueError):
            frame = frame.set_index(first)
    da = to_curves(frame, id_col=id_col, t_col=t_col, value_col=value_col, layout="long" if long else "wide")
    da.attrs.update(dataset=p.stem, data_path=str(p.resolve()), source=f"table {p.name}")
    return da


#: field separators a CSV file may use (found from its first lines: :class:`csv.Sniffer`)
CSV_SEPARATORS = ",;\t|"


def _read_csv(p: Path):
    """A CSV table, its separator found from its first lines, refused if its header repeats a column.

    Only the header and the first lines' layout are looked at before the table is read: both are public schema.
    pandas would rename a repeated header ``12`` to ``12.1`` (a different grid point), so repeated labels are
    found in the raw header. A semicolon file whose numbers have decimal commas is read with ``decimal=","``.
    """
    import csv

    import pandas as pd

    with open(p, newline="", encoding="utf-8-sig", errors="replace") as f:
        sample = "".join(line for _, line in zip(range(20), f))
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=CSV_SEPARATORS).delimiter
    except csv.Error:
        sep = ","
    lines = sample.splitlines()
    header = next(csv.reader(lines[:1], delimiter=sep), [])
    if len(header) == 1 and lines:
        used = [c for c in CSV_SEPARATORS if c != sep and c in lines[0]]
        if used:
            raise InputError(f"{p.name}: one column found; is the separator {used[0]!r}?",
                             "write the file with commas between the columns")
    labels = [h.strip() for h in header]
    seen = set()
    for label in labels:
        if label in seen:
            raise InputError(f"{p.name}: column {label!r} appears more than once in the header",
                             "give each grid point one column")
        seen.add(label)
    decimal = "," if sep == ";" and "," in sample and "." not in sample else "."
    frame = pd.read_csv(p, sep=sep, decimal=decimal)
    if decimal == ",":  # grid points in the header with decimal commas too
        frame.columns = [str(c).replace(",", ".") for c in frame.columns]
    return frame


TABLE_SUFFIXES = (".csv", ".parquet", ".pq")

__all__ = ["record_and_grid_dims", "to_curves", "from_wide", "from_long", "read_curves_file", "TABLE_SUFFIXES"]
