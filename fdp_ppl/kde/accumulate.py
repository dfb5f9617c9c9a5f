"""Gaussian KDE on a public grid in bounded memory: chunked exact sums and a binned estimator.

Source of the estimator: Hall, Rinaldo & Wasserman (2013), §4.1 and §4.1.1;
binned estimators: Wand (1994), "Fast computation of multivariate kernel
estimators" (linear binning), as in KDEpy's ``FFTKDE``.

Two ways to compute ``f_D(t) = Σ_i w_i Π_k φ_k(t_k − x_{ik})`` with
``φ_k(u) = exp(-u²/(2h_k²)) / ((2π)^{1/2} h_k)`` on a Cartesian grid:

* :func:`kde_values_chunked` (``estimator="exact"``): the same sum, accumulated
  over chunks of records; memory ``O(chunk × Σ_k K_k)`` instead of
  ``O(n × Σ_k K_k)``; the chunk comes from a public memory budget
  (:func:`kde_chunk_size`). Equal to the dense sum up to floating-point
  rounding (the order of the additions differs).
* :func:`binned_kde_values` (``estimator="binned"``): each record is spread
  over the ``2^d`` corners of its cell of a fine public bin lattice by linear
  (multilinear) binning, then the bin masses are smoothed with the kernel:
  ``O(n)`` (one ``np.bincount`` pass per corner, chunked) plus, on a lattice
  that refines an evenly spaced grid (the default), one FFT per axis
  (``O(Π_k M_k · Σ_k log M_k)``), else ``O(Π_k K_k · Σ_k M_k)``.

Sensitivity of the binned estimator (the released law is unchanged)
-------------------------------------------------------------------
With bin centres ``b_l`` (a public lattice inside the public box) and
multilinear weights ``a_l(x) >= 0``, ``Σ_l a_l(x) = 1`` (at most ``2^d`` of
them non-zero), one record contributes
``g_x = c Σ_l a_l(x) K(·, b_l)`` with ``c = 1/(n (2π)^{d/2} Π_k h_k)`` and
``K(x, y) = exp(-½ Σ_k (x_k − y_k)²/h_k²)``: a convex combination of kernel
sections at bin centres, where the exact estimator has ``c K(·, x)``.

*Gaussian (RKHS of K) noise, Hall §4.1.* With ``G_lm = K(b_l, b_m)``:
``‖g_x − g_{x'}‖²_H = c² (aᵀGa + a'ᵀGa' − 2 aᵀGa')``. Every entry of ``G``
lies in (0, 1] (``K(b, b) = 1`` and the Gaussian kernel is positive), so
``aᵀGa <= (Σ a_l)² = 1``, likewise for ``a'``, and ``aᵀGa' >= 0``. Hence
``‖g_x − g_{x'}‖_H <= √2 c``: the sensitivity ``Δ = √2 c`` of the exact
estimator holds for the binned one, for every pair of records.

*Sobolev (L¹-exponential) noise, Hall §4.2.* The bound there is the triangle
inequality ``‖g_x − g_{x'}‖ <= ‖g_x‖ + ‖g_{x'}‖`` with
``‖c φ(· − μ)‖ <= B`` for every centre ``μ`` in the box; by the triangle
inequality again ``‖g_x‖ <= Σ_l a_l(x) ‖c φ(· − b_l)‖ <= B`` (bin centres lie
in the box), so ``Δ = 2B`` holds unchanged.

Accuracy (public, data independent): the binned contribution of a record is
the multilinear interpolant in ``x`` of ``u ↦ Π_k φ_k(t_k − u_k)`` on its bin
cell, so ``|f_binned(t) − f_D(t)| <= f_max Σ_k δ_k²/(8 h_k²)`` at every grid
point, with ``δ_k`` the bin spacing and ``f_max = 1/((2π)^{d/2} Π h_k)`` the
peak of one bump (``sup|∂²φ/φ(0)| = 1/h²``; tensor interpolation adds the
per-axis errors). :func:`binned_error_bound` returns it; the default lattice
(:func:`bin_axes`) makes it ``<= BINNED_REL_ERROR × f_max``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..spaces.kernels import gaussian_bump
from ._binning import _evenly_spaced, compiled_binning

#: memory one chunk of the exact KDE sum may use (bytes); the public default of ``memory_budget``
KDE_CHUNK_BYTES = 64 * 2**20
#: relative accuracy of the default binned lattice: ``|f_binned − f| <= BINNED_REL_ERROR × f_max``
BINNED_REL_ERROR = 1e-3
#: estimators of the Gaussian KDE on a grid
KDE_ESTIMATORS = ("exact", "binned")
#: the largest bin lattice per axis (a public cap: the smoothing step is (K_k × M_k))
MAX_BINS = 20000
_TEMPORARIES = 2  # arrays of one chunk alive at once per axis (the factor and one product)


def kde_chunk_size(grid_shape, memory_budget: float | None = None) -> int:
    """Records per chunk of the exact KDE sum from the public grid shape and a public memory budget.

    Parameters
    ----------
    grid_shape : tuple of int
        ``(K_1, ..., K_d)``.
    memory_budget : float, optional
        Bytes one chunk may use (default :data:`KDE_CHUNK_BYTES`).

    Returns
    -------
    int
        ``>= 1``; the chunk's arrays take about ``8 · chunk · Σ_k K_k · 2`` bytes.
    """
    budget = float(KDE_CHUNK_BYTES if memory_budget is None else memory_budget)
    per_record = 8.0 * _TEMPORARIES * float(sum(int(k) for k in grid_shape))
    return max(1, int(budget // per_record))


def _axis_factor(x, axis, h):
    """``exp(-½((x_i − t_k)/h)²)``, shape (m, K) (:func:`~fdp_ppl.spaces.kernels.gaussian_bump`, in place)."""
    d = x[:, None] - axis[None, :]
    return gaussian_bump(d, h, out=d)


def kde_values_chunked(points, observations, bandwidths, weights=None, *, chunk: int | None = None,
                       memory_budget: float | None = None) -> np.ndarray:
    """Gaussian KDE on a Cartesian grid, summed over chunks of records (exact to rounding).

    ``f_D(t) = 1/(n (2π)^{d/2} Π_k h_k) Σ_i exp(-½ Σ_k (t_k − x_{ik})²/h_k²)``
    (Hall et al. 2013, §4.1.1), or ``Σ_i w_i (…)`` with weights.

    Parameters
    ----------
    points : tuple of ndarray
        Grid axes, one (K_k,) array per dimension.
    observations : ndarray, shape (n, d) or (n,)
    bandwidths : ndarray, shape (d,)
    weights : ndarray, shape (n,), optional
        Weights summing to 1 (default ``1/n`` each).
    chunk : int, optional
        Records per chunk (default :func:`kde_chunk_size` of ``memory_budget``).
    memory_budget : float, optional
        Bytes per chunk (public).

    Returns
    -------
    ndarray, shape (K_1, ..., K_d)
        Density in 1/unit^d. Peak memory ``O(chunk Σ_k K_k + Π_k K_k)``.
    """
    obs = np.asarray(observations, dtype=float)
    obs = obs[:, None] if obs.ndim == 1 else obs
    h = np.asarray(bandwidths, dtype=float)
    axes = [np.asarray(a, dtype=float) for a in points]
    n, d = obs.shape
    shape = tuple(a.size for a in axes)
    chunk = kde_chunk_size(shape, memory_budget) if chunk is None else max(1, int(chunk))
    w = None if weights is None else np.asarray(weights, dtype=float)
    letters = "abcdefgh"[:d]
    expr = ",".join(f"z{letters[k]}" for k in range(d)) + "->" + letters
    acc = np.zeros(shape)
    for start in range(0, n, chunk):
        block = obs[start:start + chunk]
        factors = [_axis_factor(block[:, k], axes[k], h[k]) for k in range(d)]
        if w is not None:
            factors[0] *= w[start:start + chunk, None]
        if d == 1:
            acc += factors[0].sum(0)
        elif d == 2:
            acc += factors[0].T @ factors[1]
        else:
            acc += np.einsum(expr, *factors)
    norm = (2 * np.pi) ** (d / 2) * np.prod(h) * (n if w is None else 1.0)
    return acc / norm


def bin_axes(domain, bandwidths, rel_error: float = BINNED_REL_ERROR, grid_axes=None) -> tuple:
    """Default public bin lattice: per axis ``M_k`` equally spaced centres spanning ``[lo_k, hi_k]`` with spacing
    ``δ_k <= h_k √(8 rel_error / d)``, so :func:`binned_error_bound` is ``<= rel_error × f_max``.

    With ``grid_axes`` (the public evaluation grid), an axis that is evenly spaced over ``[lo_k, hi_k]`` gets the
    lattice that refines it, spacing ``Δt_k / r_k`` with ``r_k = ⌈Δt_k / δ_k⌉`` (every grid point is a bin centre,
    ``M_k = r_k (K_k − 1) + 1``), so the smoothing is a convolution done by FFT (:func:`smooth_bin_masses`); the
    spacing is still ``<= δ_k``, so the same error bound holds. Otherwise (or above :data:`MAX_BINS`) the
    lattice of ``M_k`` centres.

    Raises
    ------
    InputError
        ``rel_error`` not in (0, 1), or more than :data:`MAX_BINS` bins on an axis (a bandwidth too small for
        the box: use the exact estimator).
    """
    rel_error = float(rel_error)
    if not 0 < rel_error < 1:
        raise InputError(f"rel_error must lie in (0, 1) (got {rel_error})", "e.g. rel_error=1e-3")
    dom = np.atleast_2d(np.asarray(domain, dtype=float))
    h = np.broadcast_to(np.asarray(bandwidths, dtype=float), (dom.shape[0],))
    d = dom.shape[0]
    out = []
    for k, ((lo, hi), hk) in enumerate(zip(dom, h)):
        step = hk * np.sqrt(8.0 * rel_error / d)
        m = int(np.ceil((hi - lo) / step)) + 1
        if grid_axes is not None and _evenly_spaced(grid_axes[k], lo, hi):
            size = np.asarray(grid_axes[k]).size
            aligned = int(np.ceil((hi - lo) / (size - 1) / step)) * (size - 1) + 1
            if aligned <= MAX_BINS:
                out.append(np.linspace(lo, hi, aligned))
                continue
        if m > MAX_BINS:
            raise InputError(f"the binned KDE needs {m} bins on an axis (bandwidth {hk:g} on a box of width "
                             f"{hi - lo:g}), above {MAX_BINS}", "use estimator='exact' (chunked) or a larger rel_error")
        out.append(np.linspace(lo, hi, max(m, 2)))
    return tuple(out)


def _refinement(axis, bins) -> int:
    """``r`` when the lattice ``bins`` refines the evenly spaced ``axis`` (``bins[::r] == axis`` to rounding, both
    evenly spaced over the same ends; :func:`bin_axes` with ``grid_axes``), else 0."""
    a, b = np.asarray(axis, dtype=float), np.asarray(bins, dtype=float)
    if a.size < 2 or (b.size - 1) % (a.size - 1) or not _evenly_spaced(b, a[0], a[-1]):
        return 0
    r = (b.size - 1) // (a.size - 1)
    return r if _evenly_spaced(a, b[0], b[-1]) else 0


def binned_error_bound(bins, bandwidths) -> float:
    """Public bound on ``max_t |f_binned(t) − f_D(t)|``: ``f_max Σ_k δ_k²/(8 h_k²)`` (module docstring), in
    1/unit^d; ``bins`` the lattice axes (equally spaced: δ_k their largest spacing)."""
    h = np.asarray(bandwidths, dtype=float)
    fmax = 1.0 / ((2 * np.pi) ** (h.size / 2) * np.prod(h))
    return float(fmax * sum(float(np.max(np.diff(b))) ** 2 / (8.0 * hk**2) for b, hk in zip(bins, h)))


#: records binned at a time by :func:`linear_binning` (bounds its temporaries: about 40 bytes per record per axis)
BIN_CHUNK = 2**20


def _cells(b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``clip(searchsorted(b, x, "right") − 1, 0, M − 2)`` for ``x`` already clipped to ``[b_0, b_{M−1}]``.

    On an evenly spaced lattice the cell is found by arithmetic and corrected by one comparison each way
    (the same cell as the search: ``b_i <= x < b_{i+1}``, the last cell closed), ``O(n)`` instead of
    ``O(n log M)``; otherwise the search."""
    m = b.size
    if m > 2 and _evenly_spaced(b, b[0], b[-1]):
        i = ((x - b[0]) * ((m - 1) / (b[-1] - b[0]))).astype(np.int64)
        np.clip(i, 0, m - 2, out=i)
        i -= x < b[i]
        np.clip(i, 0, m - 2, out=i)
        i += (x >= b[np.minimum(i + 1, m - 1)]) & (i < m - 2)
        return i
    return np.clip(np.searchsorted(b, x, side="right") - 1, 0, m - 2)


def linear_binning(bins, observations, weights=None, *, chunk: int | None = None) -> np.ndarray:
    """Multilinear bin masses of records on a lattice: record ``x`` puts ``Π_k`` (1 − fraction) / fraction on
    the ``2^d`` corners of its cell (a convex combination; records outside the lattice are clamped to it).

    In d <= 2 on an evenly spaced lattice (the default, :func:`bin_axes`), one compiled pass over the records
    (:mod:`fdp_ppl.kde._binning`, the cost of ``np.bincount``; the cell found by arithmetic, rounding aside the
    same masses); otherwise one ``np.bincount`` per corner over chunks of :data:`BIN_CHUNK` records
    (``O(chunk)`` memory beyond the masses).

    Parameters
    ----------
    bins : tuple of ndarray
        Strictly increasing lattice axes (M_k,).
    observations : ndarray, shape (n, d)
    weights : ndarray, shape (n,), optional
        Record weights (default 1 each).
    chunk : int, optional
        Records per pass (default :data:`BIN_CHUNK`).

    Returns
    -------
    ndarray, shape (M_1, ..., M_d)
        Masses; they sum to ``Σ w_i`` (n without weights).
    """
    obs = np.asarray(observations, dtype=float)
    obs = obs[:, None] if obs.ndim == 1 else obs
    n, d = obs.shape
    shape = tuple(b.size for b in bins)
    size = int(np.prod(shape))
    w = None if weights is None else np.asarray(weights, dtype=float)
    step = BIN_CHUNK if chunk is None else max(1, int(chunk))
    bins = tuple(np.asarray(b, dtype=float) for b in bins)
    out = np.zeros(size)
    if compiled_binning(bins, obs, w, out.reshape(shape)):  # one compiled pass (d <= 2, evenly spaced lattice)
        return out.reshape(shape)
    for start in range(0, n, step):
        block = obs[start:start + step]
        lo_idx, frac = [], []
        for k, b in enumerate(bins):
            x = np.clip(block[:, k], b[0], b[-1])
            i = _cells(b, x)
            lo_idx.append(i)
            frac.append((x - b[i]) / (b[i + 1] - b[i]))
        base = None if w is None else w[start:start + step]
        for corner in range(2**d):
            flat = np.zeros(block.shape[0], dtype=np.int64) if d > 1 else None
            mass = base
            for k in range(d):
                up = (corner >> k) & 1
                part = frac[k] if up else 1.0 - frac[k]
                mass = part if mass is None else mass * part
                flat = (lo_idx[k] + up) if d == 1 else flat * shape[k] + lo_idx[k] + up
            out += np.bincount(flat, weights=mass, minlength=size)
    return out.reshape(shape)


def record_bin_weights(bins, x) -> tuple[np.ndarray, np.ndarray]:
    """One record's non-zero bin weights: ``(corner points (2^d, d), weights (2^d,))`` (convex combination)."""
    x = np.asarray(x, dtype=float).reshape(-1)
    pts, wts = [], []
    d = x.size
    for corner in range(2**d):
        p, wt = [], 1.0
        for k, b in enumerate(bins):
            xk = float(np.clip(x[k], b[0], b[-1]))
            i = int(np.clip(np.searchsorted(b, xk, side="right") - 1, 0, b.size - 2))
            f = (xk - b[i]) / (b[i + 1] - b[i])
            up = (corner >> k) & 1
            p.append(b[i + up])
            wt *= f if up else 1.0 - f
        pts.append(p)
        wts.append(wt)
    return np.array(pts), np.array(wts)


def binned_kde_values(points, observations, bandwidths, weights=None, *, bins=None,
                      rel_error: float = BINNED_REL_ERROR, domain=None) -> np.ndarray:
    """Binned Gaussian KDE on a Cartesian grid: multilinear binning on a public lattice, then kernel smoothing.

    ``f(t) = 1/(n (2π)^{d/2} Π_k h_k) Σ_l m_l exp(-½ Σ_k (t_k − b_{lk})²/h_k²)`` with ``m`` the bin masses of
    :func:`linear_binning`; the smoothing acts axis by axis (``(K_k × M_k)`` kernel factors). Within
    :func:`binned_error_bound` of the exact KDE; same sensitivity (module docstring).

    Parameters
    ----------
    points : tuple of ndarray
        Grid axes (K_k,).
    observations : ndarray, shape (n, d) or (n,)
    bandwidths : ndarray, shape (d,)
    weights : ndarray, shape (n,), optional
        Weights summing to 1 (default ``1/n``).
    bins : tuple of ndarray, optional
        Public lattice (default :func:`bin_axes` of ``domain``, ``bandwidths`` and ``rel_error``).
    domain : array_like (d, 2), optional
        Public box (default: the grid's ends).

    Returns
    -------
    ndarray, shape (K_1, ..., K_d)
    """
    obs = np.asarray(observations, dtype=float)
    obs = obs[:, None] if obs.ndim == 1 else obs
    h = np.asarray(bandwidths, dtype=float)
    axes = [np.asarray(a, dtype=float) for a in points]
    n = obs.shape[0]
    if bins is None:
        dom = np.array([[a[0], a[-1]] for a in axes]) if domain is None else domain
        bins = bin_axes(dom, h, rel_error, grid_axes=axes)
    mass = linear_binning(bins, obs, weights)
    return smooth_bin_masses(axes, mass, h, bins, n=n if weights is None else 1.0)


def smooth_bin_masses(points, mass, bandwidths, bins, n: float = 1.0) -> np.ndarray:
    """The smoothing step of :func:`binned_kde_values`: bin masses (M_1, ..., M_d) (:func:`linear_binning`,
    summed over any number of record chunks) to the binned KDE on the grid (K_1, ..., K_d), divided by
    ``n (2π)^{d/2} Π_k h_k`` (``n = 1`` for masses of weights summing to 1).

    Axis by axis: where the lattice refines the grid axis (:func:`bin_axes` with ``grid_axes``) the sum
    ``Σ_l m_l exp(-½((t_i − b_l)/h)²)`` is a discrete convolution, done by one real FFT of length about
    ``2 M_k`` (``O(M_k log M_k)``, equal to the direct sum to rounding); otherwise the (K_k × M_k) kernel factor.
    """
    h = np.asarray(bandwidths, dtype=float)
    out = np.asarray(mass, dtype=float)
    for k in range(h.size):
        axis, b = np.asarray(points[k], dtype=float), np.asarray(bins[k], dtype=float)
        r = _refinement(axis, b)
        if r:
            out = _fft_smooth(out, k, b, h[k], r)
        else:
            factor = _axis_factor(axis, b, h[k])  # (K_k, M_k)
            out = np.moveaxis(np.tensordot(factor, out, axes=([1], [k])), 0, k)
    norm = (2 * np.pi) ** (h.size / 2) * np.prod(h) * float(n)
    return out / norm


def _fft_smooth(mass: np.ndarray, axis: int, bins: np.ndarray, h: float, r: int) -> np.ndarray:
    """``s_i = Σ_l m_l exp(-½((i r − l) δ / h)²)`` along ``axis`` (bins evenly spaced by δ; the grid every r-th
    bin), by a real FFT of the zero-padded masses and the kernel at lags ``−(M − 1) .. M − 1``."""
    from scipy import fft as sfft

    m = bins.size
    delta = (bins[-1] - bins[0]) / (m - 1)
    lags = np.arange(-(m - 1), m) * delta
    kern = gaussian_bump(lags, h)
    length = sfft.next_fast_len(3 * m - 2, real=True)
    moved = np.moveaxis(mass, axis, -1)
    conv = sfft.irfft(sfft.rfft(moved, length, axis=-1) * sfft.rfft(kern, length), length, axis=-1)
    return np.moveaxis(conv[..., m - 1:2 * m - 1:r], -1, axis)


def kde_memory(grid_shape, n: int, d: int, *, estimator: str = "exact", memory_budget: float | None = None,
               draws: int = 1, n_components: int | None = None) -> float:
    """Bytes a KDE fit and release plan to hold beyond the caller's records, from public sizes only.

    The clipped copy of the records (``2 · 8 n d``), the eigenbasis factors (``4 · 8 K_k²`` per axis while the
    axis is decomposed), one chunk of the exact sum (:func:`kde_chunk_size`) or the binned lattice's kernel
    factors, and ``draws`` grid releases (``3 · 8 · draws · (Π K_k + J)``).
    """
    shape = tuple(int(k) for k in grid_shape)
    m = float(np.prod(shape))
    total = 2 * 8.0 * n * d + max(4 * 8.0 * k * k for k in shape) + 3 * 8.0 * m
    if estimator == "binned":
        total += 8.0 * sum(k * min(MAX_BINS, 4 * k + 64) for k in shape) + 8.0 * n * 3
    else:
        chunk = min(kde_chunk_size(shape, memory_budget), max(int(n), 1))
        total += 8.0 * _TEMPORARIES * chunk * sum(shape)
    j = m if n_components is None else float(n_components)
    return float(total + 3 * 8.0 * draws * (m + j))


def check_kde_size(grid_shape, n: int, d: int | None = None, *, estimator: str = "exact",
                   memory_budget: float | None = None, draws: int = 1) -> None:
    """Refuse, before any charge, a KDE whose public sizes do not fit in this machine's memory.

    Parameters
    ----------
    grid_shape : tuple of int
        Public grid ``(K_1, ..., K_d)``.
    n : int
        Public number of records.
    d : int, optional
        Dimension (default ``len(grid_shape)``).
    estimator : {"exact", "binned"}
    memory_budget : float, optional
        Bytes per chunk of the exact sum.
    draws : int
        Releases drawn at once.

    Raises
    ------
    InputError
        Unknown estimator, or the plan (:func:`kde_memory`) above the share of available memory
        (:func:`fdp_ppl.settings.check_memory`); the hint names a smaller chunk, fewer grid points or draws,
        and the dask path for records that do not fit.
    """
    from ..settings import check_memory

    if estimator not in KDE_ESTIMATORS:
        raise InputError(f"unknown KDE estimator {estimator!r}", f"use one of {KDE_ESTIMATORS}")
    shape = tuple(int(k) for k in grid_shape)
    d = len(shape) if d is None else int(d)
    need = kde_memory(shape, int(n), d, estimator=estimator, memory_budget=memory_budget, draws=draws)
    check_memory(need, f"a {estimator} KDE of n = {n} records on a {'x'.join(map(str, shape))} grid "
                       f"({draws} draw(s))",
                 "use fewer grid points per axis, fewer draws at a time, memory_budget= for a smaller chunk, or "
                 "read the records out of core (dask) when they alone do not fit")


__all__ = ["BIN_CHUNK", "BINNED_REL_ERROR", "KDE_CHUNK_BYTES", "KDE_ESTIMATORS", "MAX_BINS", "bin_axes", "binned_error_bound",
           "binned_kde_values", "check_kde_size", "kde_chunk_size", "kde_memory", "kde_values_chunked",
           "linear_binning", "record_bin_weights", "smooth_bin_masses"]
