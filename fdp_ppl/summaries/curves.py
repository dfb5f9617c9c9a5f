"""Curves as input: validation, grid extraction and clipping to a public bound τ.

Curves are an ``xr.DataArray`` with two dims, records × grid, or a numpy
array of shape ``(n, K)`` on a known grid (rows are records). Which dim of a
DataArray indexes the records (the privacy unit: n is its size) comes from
names, never from position (:func:`record_and_grid_dims`).

Every summary reads the curves **once** (:func:`clip_pass`): block by block
along the records (:data:`CHUNK_BYTES` at a time in memory, or one dask
chunk at a time), each block gives its grid norms (one compiled loop that also
flushes tiny values to 0, summing each row in ``einsum``'s order; ``einsum`` for
other layouts), clip factors, the finiteness check (read off the norms: a NaN or inf value makes
its norm non-finite) and its share of the clipped sum (one matrix-vector
product); the blocks' sums are added. No temporary of the data's size is
made, so the peak memory stays close to the data's, and a dask-backed
DataArray (curves in chunks, larger than memory, or on a ``dask.distributed``
cluster) is reduced lazily: only length-K vectors and counts are computed.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError, PrivacyLeakWarning, check_positive
from ..io.lattice import TINY, flush_tiny
from ..io.containers import record_and_grid_dims, to_curves  # noqa: F401  (re-exported: the one rule for dims)
from ..spaces import Grid

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: share of clipped curves above which :func:`warn_if_mostly_clipped` warns (more than half)
CLIPPED_SHARE_WARNING = 0.5


class DataDerived(float):
    """A float computed from private data (e.g. τ = max_i ‖X_i‖).

    Specs built with such a value label their sensitivity
    ``data_dependent=True``; releases record it. Created by
    :func:`fdp_ppl.summaries.data_tau`.
    """


class TauTooSmallWarning(UserWarning):
    """More than half of the curves had a norm above τ and were clipped.

    τ then looks far too small relative to the data: the clipped curves, and
    so the summary, reflect τ more than the data. The warning is for the
    data holder only (the count is never written to a release), and τ must
    stay public: choose it from public knowledge of the measurement range,
    not from this count.
    """


def warn_if_mostly_clipped(n_clipped: int, n: int, tau: float, *, norm: str = "L2 norm") -> bool:
    """Warn the data holder (:class:`TauTooSmallWarning`) when more than half of the curves were clipped.

    Parameters
    ----------
    n_clipped, n : int
        Curves clipped at τ and number of curves (data-holder information).
    tau : float
        The public bound.
    norm : str
        The norm τ bounds (``"L2 norm"`` or ``"sup norm"``), for the message.

    Returns
    -------
    bool
        Whether the warning was emitted (``n_clipped > CLIPPED_SHARE_WARNING * n``).
    """
    if n <= 0 or n_clipped <= CLIPPED_SHARE_WARNING * n:
        return False
    warnings.warn(clipped_warning_text(n_clipped, n, tau, norm=norm), TauTooSmallWarning,
                  skip_file_prefixes=(_PACKAGE_DIR,))
    return True


def clipped_warning_text(n_clipped: int, n: int, tau: float, *, norm: str = "L2 norm") -> str:
    """The text of :class:`TauTooSmallWarning` (one line; data holder only)."""
    return (f"{n_clipped} of {n} curves exceeded tau = {float(tau):g} in {norm} and were clipped: tau looks far "
            "too small relative to the data (the summary then reflects tau more than the data); choose a larger "
            "public bound from what is known of the measurement range, not from this count. Data holder only: "
            "this count is not written to the release")


def _not_curves(curves) -> InputError:
    """The error for an object that is not a DataArray or a numeric array."""
    kind = type(curves)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if kind.__module__.split(".")[0] == "skfda":
        return InputError(f"scikit-fda {kind.__qualname__} objects other than FDataGrid are not curves on a grid",
                          "convert to an FDataGrid (fd.to_grid(points)) or pass an xr.DataArray (curve, t)")
    if isinstance(curves, xr.Dataset):
        return InputError(f"curves must be one variable, got an xr.Dataset with {list(curves.data_vars)}",
                          "pass ds['name'], a DataArray with dims (records, grid)")
    return InputError(f"curves must be an xr.DataArray with dims (curve, t) or a numeric array of shape (n, K), "
                      f"got {name}")


def _is_table_or_fdata(obj) -> bool:
    kind = type(obj)
    return (kind.__module__.split(".")[0] == "pandas" and kind.__name__ == "DataFrame") or (
        kind.__module__.split(".")[0] == "skfda" and kind.__name__ == "FDataGrid")


def as_record_array(curves) -> np.ndarray:
    """A numeric array of shape (n, K) whose rows are records (not a DataArray).

    Raises
    ------
    InputError
        A scikit-fda object, an ``xr.Dataset``, anything numpy cannot read as
        numbers, or not 2-D.
    """
    if _is_table_or_fdata(curves):  # one converter for tables and FDataGrid (fdp_ppl.io.containers)
        return np.asarray(to_curves(curves).values)
    if isinstance(curves, xr.Dataset) or type(curves).__module__.split(".")[0] == "skfda":
        raise _not_curves(curves)
    try:
        arr = np.asarray(curves, dtype=float)
    except (TypeError, ValueError):
        raise _not_curves(curves) from None
    if arr.ndim != 2:
        raise InputError(f"curves must be a 2-D array (n, K) with one record per row, got shape {arr.shape}")
    return arr


def as_curves(curves, grid: Grid | None = None, *, record_dim: str | None = None, t_dim: str | None = None,
              curve_dim: str | None = None) -> xr.DataArray:
    """Normalise input curves to a DataArray with dims ``("curve", "t")``
    (:func:`curves_and_grid` without the grid)."""
    return curves_and_grid(curves, grid, record_dim=record_dim, t_dim=t_dim, curve_dim=curve_dim)[0]


def curves_and_grid(curves, grid: Grid | None = None, *, record_dim: str | None = None, t_dim: str | None = None,
                    curve_dim: str | None = None) -> tuple[xr.DataArray, Grid]:
    """Normalise input curves to a DataArray with dims ``("curve", "t")`` and its grid.

    Parameters
    ----------
    curves : xr.DataArray or array_like
        DataArray with two dims (records × grid, in either order), or an
        array of shape (n, K) whose **rows are records** (positional: an
        array has no names).
    grid : Grid, optional
        Needed for numpy input; for a DataArray the grid is taken from its
        grid coordinate unless given.
    record_dim : str, optional
        Name of the record dim of a DataArray (the privacy unit; n is its
        size). Default: the other dim of ``t_dim`` if given, else the dim
        named ``"curve"``, else the other dim of a dim named ``"t"``; a
        DataArray whose dims say neither is refused
        (:func:`record_and_grid_dims`), never read by position.
    t_dim : str, optional
        Name of the grid dim of a DataArray (default: the dim that is not the
        record dim).
    curve_dim : str, optional
        Alias of ``record_dim`` (kept for older code).

    Returns
    -------
    curves : xr.DataArray
        dims ``("curve", "t")``, ``t`` coordinate on [0, 1]; the input is not
        modified (dask arrays stay lazy).
    grid : Grid

    Raises
    ------
    InputError
        Not a DataArray or numeric array (e.g. a scikit-fda ``FDataGrid``,
        an ``xr.Dataset``); wrong number of dims; record dim not given by
        name; grid size mismatch; fewer than 2 curves.
    """
    if _is_table_or_fdata(curves):  # a pandas table or a scikit-fda FDataGrid: one converter (fdp_ppl.io.containers)
        curves = to_curves(curves)
    if isinstance(curves, xr.DataArray):
        rec, t_name = record_and_grid_dims(curves.dims, record_dim=record_dim, t_dim=t_dim, curve_dim=curve_dim)
        da = curves.transpose(rec, t_name)
        if grid is None:
            pts = da[t_name].values if t_name in da.coords else np.arange(da.sizes[t_name], dtype=float)
            grid = Grid.from_points(pts)
        data = da.data
        _check_shape(data.shape, grid)
    else:
        data, grid = _record_array_and_grid(curves, grid)
    # the coordinate in the constructor (assign_coords would align: ~1 ms of every release at n = 10^4, K = 100)
    return xr.DataArray(data, dims=(dims.CURVE, dims.T), coords={dims.T: grid.t}), grid


def _record_array_and_grid(curves, grid: Grid | None) -> tuple[np.ndarray, Grid]:
    """The numpy branch of :func:`curves_and_grid` without the DataArray: ``(array (n, K), grid)``, the same
    checks and messages (a summary of numpy curves reads the array itself)."""
    arr = as_record_array(curves)
    if grid is None:
        raise InputError("numpy curves need a grid: pass grid=Grid.from_points(points)")
    _check_shape(arr.shape, grid)
    return arr, grid


def _check_shape(shape, grid: Grid) -> None:
    if shape[1] != grid.size:
        raise InputError(f"curves have {shape[1]} grid points but the grid has {grid.size}")
    if shape[0] < 2:
        raise InputError("need at least 2 curves")


def check_finite(curves: xr.DataArray) -> None:
    """Raise if any value is NaN or infinite (one pass, block by block; lazy reductions for dask).

    Raises
    ------
    InputError
        Naming the fix: impute the missing points with a public rule
        (:func:`fdp_ppl.io.missing.impute_missing`, ``load_dataset(..., missing="impute")``,
        ``--missing impute``), which keeps n the number of records.
    """
    if _is_dask(curves.data):
        (bad,) = _compute((~np.isfinite(curves)).any().data)
    else:
        bad = False
        x = curves.transpose(..., dims.T).values if dims.T in curves.dims else np.asarray(curves.values)
        for block in _row_blocks(x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)):
            # a row sum is non-finite if the row holds NaN/inf (or if finite values overflow: then look exactly);
            # every block is read, so the time of a refusal does not tell where the first bad record sits
            rows = ~np.isfinite(np.sum(block, axis=1))
            if rows.any() and not np.isfinite(block[rows]).all():
                bad = True
    _raise_if_nonfinite(bool(bad))


def _raise_if_nonfinite(bad: bool) -> None:
    if bad:
        # no count in the text: error text is published with a command's output, and how many values are missing
        # is a fact about the data (the holder can count them with np.isnan)
        raise InputError("curves contain NaN/inf values",
                         "impute them with a public rule (fdp_ppl.io.missing.impute_missing(curves), load_dataset(..., "
                         "missing='impute') or --missing impute), which keeps n the number of records; "
                         "drop incomplete curves only for a study, never for a release (n would then "
                         "depend on the data)")


#: bytes of curves an in-memory summary processes at once (a block of rows along the records): small enough
#: for the cache, so the norms, the clip factors and the clipped sum read each block from the cache
CHUNK_BYTES = 1 << 21


def _is_dask(data) -> bool:
    return type(data).__module__.split(".")[0] == "dask"


def _compute(*arrays):
    """Compute dask arrays together (on the active ``dask.distributed`` client, if any)."""
    import dask

    return dask.compute(*arrays)


def _row_blocks(x: np.ndarray):
    """Consecutive blocks of rows of ``x`` of about :data:`CHUNK_BYTES` each (views, no copies)."""
    n, k = x.shape
    step = max(1, int(CHUNK_BYTES) // (8 * max(k, 1)))
    for i in range(0, n, step):
        yield x[i:i + step]


#: what :func:`_block_stats` returns after the K sums: clipped records, NaN/inf values, largest norm
_N_STATS = 3


def _block_stats(x, norm: str, tau: float, weights, offset) -> np.ndarray:
    """One block of records ``x`` (m, K) → ``[Σ_i clipped X_i (K), n_clipped, n_bad_values, max_norm]``.

    ``norm="l2"``: ``X_i · min(1, τ/‖X_i‖_w)`` (grid L² norm with quadrature
    ``weights``); ``norm="sup"``: pointwise clipping to ``[−τ, τ]``; a public
    ``offset`` (K,) is subtracted first. Rows are processed in blocks of
    :data:`CHUNK_BYTES`; nothing of the block's size is kept.
    """
    x = np.asarray(x)
    k = x.shape[1]
    out = np.zeros(k + _N_STATS)
    out[k + 2] = -np.inf
    step = max(1, int(CHUNK_BYTES) // (8 * max(k, 1)))
    rows = min(step, x.shape[0])
    # the flushed block and the rows' squared norms (reused: a fresh 2 MB array a block costs its page faults)
    # and, for sup, |c| and ones
    scratch = (np.empty((rows, k)), np.empty(rows)) + ((np.empty((rows, k)), np.ones(rows)) if norm == "sup" else ())
    if weights is not None:
        weights = np.ascontiguousarray(weights, dtype=float)
    kernel = _compiled_flush_and_square() if norm == "l2" else None
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf rows are counted and refused by the caller
        for c in _row_blocks(x):
            _add_block(out, np.asarray(c, dtype=float), norm, tau, weights, offset, scratch, kernel)
    _PASSES[0] += 1
    return out


#: clipping passes made in this process, and the compiled loop once made (False: none, use NumPy)
_PASSES = [0]
_COMPILED: dict = {}


def _compiled_flush_and_square():
    """The compiled :func:`_flush_and_square` for this pass, or None (NumPy's flush and ``einsum``: the same bits).

    Loading Numba and the compiled loop costs 1-3 s once a process, more than the loop saves on one pass over
    less than a few GB (a one-release command line); so a process's first pass uses NumPy unless Numba is
    already loaded, and its later passes (repeated releases, what the loop is for) use the loop. The choice
    depends on the process, never on the data.
    """
    kernel = _COMPILED.get("flush_and_square")
    if kernel is None and (_PASSES[0] > 0 or "numba" in sys.modules):
        from .._numba import HAVE_NUMBA, njit

        kernel = _COMPILED["flush_and_square"] = njit(cache=True, nogil=True)(_flush_and_square) if HAVE_NUMBA else False
    return kernel or None


def _add_block(out, c, norm, tau, weights, offset, scratch, kernel=None) -> None:
    """Add one cache-sized block of records ``c`` to the statistics ``out`` (see :func:`_block_stats`)."""
    k = c.shape[1]
    fresh = offset is not None
    dest = None
    if fresh:
        c = c - offset
    # values below tau * 2^-400 become 0 (a selection, no arithmetic on them): no product below enters the
    # subnormal slow path (DESIGN invariant 9; fdp_ppl.io.lattice); a public record-by-record map, norms never grow.
    # A C-ordered block is flushed in one compiled pass into the scratch block (or in place when it is our own
    # copy), with its rows' squared norms for L2; any other layout keeps NumPy's (a new array in the block's
    # layout: the same bits as ever)
    if c.flags.c_contiguous and kernel is not None:  # (L2 only)
        dest, sq = (c if fresh else scratch[0][: c.shape[0]]), scratch[1][: c.shape[0]]
        kernel(c, TINY * tau, weights, dest, sq)
        c = dest
    elif c.flags.c_contiguous:
        c = flush_tiny(c, tau, out=c if fresh else scratch[0][: c.shape[0]])
    else:
        c = flush_tiny(c, tau)
    if norm == "l2":
        if c is not dest:
            sq = np.einsum("ij,ij,j->i", c, c, weights)
        norms = np.sqrt(sq)
        ok = np.isfinite(sq)
        clipped = norms > tau
        factor = np.minimum(1.0, tau / np.maximum(norms, np.finfo(float).tiny))
        out[:k] += factor @ c
        top = norms
    else:
        b, ones = scratch[2][: c.shape[0]], scratch[3][: c.shape[0]]
        top = np.max(np.abs(c, out=b), axis=1)  # sup norm of each row; NaN propagates, inf shows
        ok = np.isfinite(top)
        clipped = top > tau
        out[:k] += ones @ np.clip(c, -tau, tau, out=b)
    if top.size:
        out[k + 2] = max(out[k + 2], float(np.fmax.reduce(top)))
    out[k] += np.count_nonzero(clipped)
    if not ok.all():  # NaN/inf values (or, for L2, finite values whose squares overflow): count exactly
        out[k + 1] += np.count_nonzero(~np.isfinite(c[~ok]))


def _flush_and_square(x, threshold, w, out, sq):  # pragma: no cover - compiled (_compiled_flush_and_square)
    """``out = x`` with ``|x| < threshold`` set to 0 (:func:`~fdp_ppl.io.lattice.flush_tiny`) and
    ``sq[i] = Σ_j out[i, j]² w_j``, for a C-ordered block ``x`` (m, K) (``out`` may be ``x``).

    Each row's sum is accumulated in order j = 0..K−1 as ``acc += (v v) w_j``: the order, and so the bits, of
    ``np.einsum("ij,ij,j->i")`` (a sequential sum, bound by the latency of its additions); eight rows are summed
    side by side (independent chains: 1.5x faster than flush + einsum at K = 100, 1.5x at K = 3200), each after
    its flush, so that the squares read the flushed rows from the cache. The flush is a compare and a blend (no
    branch on the data, no arithmetic on a value below the threshold: DESIGN invariant 9).
    """
    n, k = x.shape
    i = 0
    while i + 8 <= n:
        for r in range(8):
            xr = x[i + r]
            orow = out[i + r]
            for j in range(k):
                v = xr[j]
                orow[j] = 0.0 if abs(v) < threshold else v
        r0, r1, r2, r3 = out[i], out[i + 1], out[i + 2], out[i + 3]
        r4, r5, r6, r7 = out[i + 4], out[i + 5], out[i + 6], out[i + 7]
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
        for j in range(k):
            wj = w[j]
            a0 += r0[j] * r0[j] * wj
            a1 += r1[j] * r1[j] * wj
            a2 += r2[j] * r2[j] * wj
            a3 += r3[j] * r3[j] * wj
            a4 += r4[j] * r4[j] * wj
            a5 += r5[j] * r5[j] * wj
            a6 += r6[j] * r6[j] * wj
            a7 += r7[j] * r7[j] * wj
        sq[i], sq[i + 1], sq[i + 2], sq[i + 3] = a0, a1, a2, a3
        sq[i + 4], sq[i + 5], sq[i + 6], sq[i + 7] = a4, a5, a6, a7
        i += 8
    while i < n:
        xr = x[i]
        orow = out[i]
        a = 0.0
        for j in range(k):
            v = xr[j]
            v = 0.0 if abs(v) < threshold else v
            orow[j] = v
            a += v * v * w[j]
        sq[i] = a
        i += 1


def _dask_block_stats(block, norm, tau, weights, offset):
    return _block_stats(block, norm, tau, weights, offset)[None, :]


class ClipPass:
    """What one pass over the curves gives (:func:`clip_pass`).

    Attributes
    ----------
    total : ndarray, shape (K,)
        Sum over records of the clipped curves.
    n : int
        Number of records: the size of the record dim (from the array's
        shape, or a store's metadata), never a count of records read.
    n_clipped : int
        Records clipped at τ (data holder only).
    max_norm : float
        Largest norm of a record (L² or sup; data holder only).
    """

    __slots__ = ("total", "n", "n_clipped", "max_norm")

    def __init__(self, total, n, n_clipped, max_norm):
        self.total, self.n, self.n_clipped, self.max_norm = total, int(n), int(n_clipped), float(max_norm)

    @property
    def mean(self) -> np.ndarray:
        """Mean of the clipped curves, ``total / n``, shape (K,)."""
        return self.total / self.n


def clip_pass(curves: xr.DataArray, grid: Grid | None, tau: float, *, norm: str = "l2", offset=None,
              check: bool = True) -> ClipPass:
    """Clip every record to τ and sum them, reading the curves once.

    Parameters
    ----------
    curves : xr.DataArray, dims ``("curve", "t")``
        numpy- or dask-backed (:func:`curves_and_grid` gives this form). A
        dask-backed array is reduced chunk by chunk along the records (chunks
        along ``t`` are merged first) with ``dask.compute``, which runs on the
        active ``dask.distributed`` client if there is one.
    grid : Grid
        Quadrature weights of the L² norm (unused for ``norm="sup"``).
    tau : float
        Public bound (L² norm on the grid, or sup norm).
    norm : {"l2", "sup"}
        ``"l2"``: ``X_i · min(1, τ/‖X_i‖)`` (Lin & Reimherr 2026,
        Assumption 10); ``"sup"``: pointwise clipping to ``[−τ, τ]``
        (Bernstein).
    offset : array_like, shape (K,), optional
        Public curve subtracted from every record before clipping (block by
        block: no copy of the data).
    check : bool
        Raise :class:`~fdp_ppl.errors.InputError` on NaN/inf values (the same
        message as :func:`check_finite`; read off the same pass).

    Returns
    -------
    ClipPass
    """
    return _clip_pass_data(curves.transpose(dims.CURVE, dims.T).data, grid, tau, norm, offset, check)


def _clip_pass_data(data, grid: Grid | None, tau: float, norm: str, offset, check: bool) -> ClipPass:
    """:func:`clip_pass` of the records × grid array ``data`` (numpy or dask)."""
    tau = check_positive(tau, "tau", "pass a public bound on the curves' norm, e.g. --tau 1")
    if norm not in ("l2", "sup"):
        raise InputError(f"unknown norm {norm!r}", "use 'l2' or 'sup'")
    n, k = data.shape
    weights = np.asarray(grid.weights, dtype=float) if norm == "l2" else None
    off = None if offset is None else np.asarray(offset, dtype=float).reshape(k)
    if _is_dask(data):
        if data.numblocks[1] > 1:
            data = data.rechunk({1: -1})
        stats = data.map_blocks(_dask_block_stats, norm, tau, weights, off, dtype=float,
                                chunks=((1,) * data.numblocks[0], (k + _N_STATS,)))
        (blocks,) = _compute(stats)
        blocks = np.asarray(blocks)
        s = blocks.sum(axis=0)
        s[k + 2] = np.fmax.reduce(blocks[:, k + 2]) if blocks.shape[0] else -np.inf
    else:
        s = _block_stats(np.asarray(data), norm, tau, weights, off)
    if check:
        _raise_if_nonfinite(s[k + 1] > 0)
    return ClipPass(s[:k], n, int(s[k]), s[k + 2])


def _norms_block(x, weights):
    x = np.asarray(x)
    out = np.empty(x.shape[0])
    i = 0
    for c in _row_blocks(x):
        c = np.asarray(c, dtype=float)
        out[i:i + c.shape[0]] = np.sqrt(np.einsum("ij,ij,j->i", c, c, weights))
        i += c.shape[0]
    return out


def l2_norms(curves: xr.DataArray, grid: Grid) -> xr.DataArray:
    """Grid L² norm of each curve, ``sqrt(Σ_k w_k X_i(t_k)²)``; dims (curve,).

    Computed block by block (no temporary of the data's size); lazy for a
    dask-backed input.
    """
    w = np.asarray(grid.weights, dtype=float)
    da = curves.transpose(dims.CURVE, dims.T)
    data = da.data
    if _is_dask(data):
        if data.numblocks[1] > 1:
            data = data.rechunk({1: -1})
        out = data.map_blocks(_norms_block, w, drop_axis=1, dtype=float)
    else:
        out = _norms_block(np.asarray(data), w)
    return xr.DataArray(out, dims=(dims.CURVE,), coords={c: v for c, v in da.coords.items()
                                                         if v.dims == (dims.CURVE,)})


def clip_curves(curves: xr.DataArray, grid: Grid, tau: float) -> tuple[xr.DataArray, xr.DataArray]:
    """Scale each curve to L² norm at most τ: ``X_i ← X_i · min(1, τ/‖X_i‖)``.

    This enforces the boundedness assumption ``‖X_i‖ <= τ`` (Lin & Reimherr
    2026, Assumption 10; Mirshani et al. 2019, Section 4) in the grid norm
    actually used by the sensitivities. τ must be public. The summaries do
    not call it (they clip and sum in one pass, :func:`clip_pass`); it is for
    looking at the clipped curves.

    Returns
    -------
    clipped : xr.DataArray, dims (curve, t)
        Lazy if the input is dask-backed; the input is not modified.
    was_clipped : xr.DataArray of bool, dims (curve,)
    """
    tau = check_positive(tau, "tau", "pass a public bound on the curves' L2 norm, e.g. --tau 1")
    norms = l2_norms(curves, grid)
    factor = np.minimum(1.0, tau / np.maximum(norms, np.finfo(float).tiny))
    return curves * factor, norms > tau


def data_tau(curves, grid: Grid | None = None) -> DataDerived:
    """τ = max_i ‖X_i‖ computed from the data, as Mirshani et al. (2019, Section 5) do.

    This is **not** privacy-safe: it emits a
    :class:`~fdp_ppl.errors.PrivacyLeakWarning` and returns a
    :class:`DataDerived` float so that every sensitivity built on it is
    labelled ``data_dependent``. :func:`fdp_ppl.release` refuses a summary
    built on it unless called with ``allow_nonprivate=True``, and such a
    release records ``private = 0``. Use a public bound for real releases.

    Examples
    --------
    >>> import warnings
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     tau = fp.data_tau(curves)                            # the largest curve norm
    >>> round(tau, 2), caught[0].category.__name__
    (153.23, 'PrivacyLeakWarning')
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> fp.ICLPQRSpec(basis=basis, tau=tau, n=93).sensitivity().data_dependent
    True

    See Also
    --------
    pss : privacy-safe tuning from public (n, β) only.
    """
    da, grid = curves_and_grid(curves, grid)
    value = float(l2_norms(da, grid).max().values)
    warnings.warn("tau computed from the private data (max curve norm): the release carries no formal "
                  "guarantee; use a public bound", PrivacyLeakWarning, stacklevel=2)
    return DataDerived(value)


def clipped_mean(curves, grid: Grid | None, tau: float, *, check: bool = True, offset=None):
    """Sample mean of the clipped curves, in one pass over the data (:func:`clip_pass`).

    Warns :class:`TauTooSmallWarning` (data holder only) when more than half
    of the curves were clipped.

    Parameters
    ----------
    curves : xr.DataArray or array_like
        As for :func:`curves_and_grid`; a dask-backed DataArray stays lazy
        and is reduced chunk by chunk.
    grid : Grid or None
    tau : float
        Public L² bound.
    check : bool
        Refuse NaN/inf values.
    offset : array_like, shape (K,), optional
        Public curve subtracted from every record before clipping.

    Returns
    -------
    mean : ndarray, shape (K,)
    n : int
    n_clipped : int
    grid : Grid
    """
    if isinstance(curves, xr.DataArray) or _is_table_or_fdata(curves):
        da, grid = curves_and_grid(curves, grid)
        res = clip_pass(da, grid, tau, offset=offset, check=check)
    else:  # an array is read as it is: no DataArray around it (0.2-0.4 ms of a release)
        data, grid = _record_array_and_grid(curves, grid)
        res = _clip_pass_data(data, grid, tau, "l2", offset, check)
    warn_if_mostly_clipped(res.n_clipped, res.n, tau)
    return res.mean, res.n, res.n_clipped, grid


__all__ = ["DataDerived", "data_tau", "as_curves", "curves_and_grid", "record_and_grid_dims", "check_finite",
           "l2_norms", "clip_curves", "clipped_mean", "clip_pass", "ClipPass", "CHUNK_BYTES",
           "TauTooSmallWarning", "warn_if_mostly_clipped", "clipped_warning_text",
           "CLIPPED_SHARE_WARNING"]
