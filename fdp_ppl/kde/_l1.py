"""Exact ``max_{a,b} ‖x_a − x_b‖₁`` over the rows of a matrix (the ℓ¹ diameter), compiled with pruning.

Used for the exact ℓ¹ sensitivity of grid-snapped KDE releases (:func:`fdp_ppl.kde.grid.max_pairwise_l1`).
The answer is the exact maximum (to the rounding of one sum of ``J`` terms), never an estimate: a pair is
skipped only when a proven upper bound on its distance, with a margin for rounding, cannot beat a distance
already found.

Bounds (triangle inequality of the ℓ¹ norm):

* pivots ``p``: rows chosen by farthest-point traversal; ``‖x_a − x_b‖₁ <= min_p (D[a,p] + D[b,p])`` with
  ``D[a,p] = ‖x_a − x_p‖₁``; the pivot distances are themselves pair distances, so their maximum starts the
  search as a lower bound (often the answer);
* rows are visited by decreasing distance to the first pivot; once ``2 · D[a,p₀]`` (the bound for any pair
  whose larger member is ``a``) cannot beat the best, no later row can, and the search stops;
* inside one distance, ``partial + Σ_{j >= k} (|x_{a,j}| + |x_{b,j}|)`` bounds the rest (suffix sums, checked
  every 16 coefficients), so a pair is abandoned as soon as it cannot win.

Without Numba the same search runs in numpy blocks (slow, same result).
"""

from __future__ import annotations

import numpy as np

from .._numba import HAVE_NUMBA, njit

#: number of pivots (farthest-point traversal)
N_PIVOTS = 8
#: relative slack on every pruning bound, far above the rounding of a sum of J terms (J·eps ≈ 1e-13 at J = 1000)
SLACK = 1e-9


@njit(cache=True, nogil=True)
def _dist_to(x, p, out):  # pragma: no cover - compiled
    n, J = x.shape
    for a in range(n):
        s = 0.0
        for j in range(J):
            s += abs(x[a, j] - x[p, j])
        out[a] = s


@njit(cache=True, nogil=True)
def _diameter(x, order, D, suffix, best, slack):  # pragma: no cover - compiled
    """Max distance over pairs of rows, visiting rows in ``order`` (decreasing D[:, 0]); ``best``: a lower bound."""
    n, J = x.shape
    P = D.shape[1]
    for ia in range(n):
        a = order[ia]
        if 2.0 * D[a, 0] * (1.0 + slack) <= best:
            break                          # every pair (a, b) with b later in the order has D[b,0] <= D[a,0]
        for ib in range(ia + 1, n):
            b = order[ib]
            ub = D[a, 0] + D[b, 0]
            for p in range(1, P):
                ub = min(ub, D[a, p] + D[b, p])
            if ub * (1.0 + slack) <= best:
                continue
            s = 0.0
            j = 0
            lost = False
            while j < J:
                stop = min(j + 16, J)
                for q in range(j, stop):
                    s += abs(x[a, q] - x[b, q])
                j = stop
                if j < J and (s + suffix[a, j] + suffix[b, j]) * (1.0 + slack) <= best:
                    lost = True
                    break
            if not lost and s > best:
                best = s
    return best


def _diameter_numpy(rows: np.ndarray, block: int) -> float:
    best = 0.0
    for start in range(0, rows.shape[0], block):
        best = max(best, float(np.abs(rows[start:start + block, None, :] - rows[None, :, :]).sum(-1).max()))
    return best


def l1_diameter(rows: np.ndarray, block: int = 64) -> float:
    """``max_{a,b} ‖rows[a] − rows[b]‖₁``, rows shape (P, J) → float (exact; module docstring)."""
    x = np.ascontiguousarray(rows, dtype=float)
    n = x.shape[0]
    if n < 2 or x.shape[1] == 0:
        return 0.0
    if not HAVE_NUMBA:  # pragma: no cover - numba missing
        return _diameter_numpy(x, block)
    P = min(N_PIVOTS, n)
    D = np.empty((n, P))
    med = np.median(x, axis=0)
    p = int(np.argmax(np.abs(x - med).sum(1)))          # farthest from the coordinate-wise median
    for k in range(P):
        _dist_to(x, p, D[:, k])
        p = int(np.argmax(D[:, : k + 1].min(1)))          # farthest-point traversal
    best = float(D.max())                                 # pivot distances are pair distances
    a = np.abs(x)
    suffix = np.zeros((n, x.shape[1] + 1))
    suffix[:, :-1] = np.cumsum(a[:, ::-1], axis=1)[:, ::-1]
    order = np.argsort(-D[:, 0], kind="stable")
    return float(_diameter(x, order, D, suffix, best, SLACK))
