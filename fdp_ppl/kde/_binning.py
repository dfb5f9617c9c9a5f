"""Compiled one-pass linear binning on evenly spaced lattices (d = 1, 2), for :func:`fdp_ppl.kde.accumulate.linear_binning`.

Each record, clamped to the lattice, puts ``1 − f`` and ``f`` of its weight (per axis, multiplied over the
axes) on the corners of its cell, ``u = (x − lo)/δ``, ``i = min(⌊u⌋, M − 2)``, ``f = u − i`` in lattice
coordinates: a convex combination of the cell's corners, as the numpy path. One pass over the records,
no temporaries (the cost of ``np.bincount``).
"""

from __future__ import annotations

import numpy as np

from .._numba import HAVE_NUMBA, njit


@njit(cache=True, nogil=True)
def _cell(x, lo, scale, m):  # pragma: no cover - compiled
    u = (x - lo) * scale
    if u < 0.0 or u != u:
        u = 0.0
    elif u > m - 1:
        u = m - 1.0
    i = int(u)
    if i > m - 2:
        i = m - 2
    return i, u - i


@njit(cache=True, nogil=True)
def _bin1(x, w, lo, scale, m, out):  # pragma: no cover - compiled
    weighted = w.size > 0
    for r in range(x.shape[0]):
        i, f = _cell(x[r], lo, scale, m)
        c = w[r] if weighted else 1.0
        out[i] += c * (1.0 - f)
        out[i + 1] += c * f


@njit(cache=True, nogil=True)
def _bin2(x, w, lo0, s0, m0, lo1, s1, m1, out):  # pragma: no cover - compiled
    weighted = w.size > 0
    for r in range(x.shape[0]):
        i, f = _cell(x[r, 0], lo0, s0, m0)
        j, g = _cell(x[r, 1], lo1, s1, m1)
        c = w[r] if weighted else 1.0
        a = c * (1.0 - f)
        b = c * f
        out[i, j] += a * (1.0 - g)
        out[i, j + 1] += a * g
        out[i + 1, j] += b * (1.0 - g)
        out[i + 1, j + 1] += b * g


def compiled_binning(bins, obs: np.ndarray, weights, out: np.ndarray) -> bool:
    """Add the linear-binning masses of ``obs`` (m, d) to ``out`` (lattice shape) in one compiled pass; False
    (``out`` untouched) when Numba is missing, d > 2, or an axis is not evenly spaced (``_evenly_spaced``)."""
    from .accumulate import _evenly_spaced

    d = obs.shape[1]
    if not HAVE_NUMBA or d > 2 or any(b.size < 2 or not _evenly_spaced(b, b[0], b[-1]) for b in bins):
        return False
    w = np.empty(0) if weights is None else np.ascontiguousarray(weights, dtype=float)
    params = [(float(b[0]), (b.size - 1) / float(b[-1] - b[0]), int(b.size)) for b in bins]
    if d == 1:
        _bin1(np.ascontiguousarray(obs[:, 0]), w, *params[0], out)
    else:
        _bin2(np.ascontiguousarray(obs), w, *params[0], *params[1], out)
    return True
