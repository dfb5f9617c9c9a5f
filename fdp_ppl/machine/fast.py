"""Compiled dual coordinate ascent and an active-set finish for the hinge-loss kernel machine.

The problem is the hinge dual of :mod:`fdp_ppl.machine.solvers` (standard scaling)::

    max_a  Σ_i a_i − ½ aᵀQa,   0 <= a_i <= C = 1/(2λn),   Q = (y yᵀ) ∘ K,

with ``K`` either the dense Gram matrix (exact kernel) or ``Z Zᵀ`` for a feature matrix ``Z`` (n, r)
(Nyström features, :mod:`fdp_ppl.machine.nystroem`; then ``w = Σ_i a_i y_i z_i`` is kept instead of ``Qa``).
Exact coordinate maximisation (Hsieh et al. 2008, the dual coordinate descent of LIBLINEAR) runs in a
Numba-compiled loop; ``Q`` is never formed (``Q_ij = y_i y_j K_ij`` on the fly), so the dense path holds
one n × n array. Between full sweeps the ascent is shrunk to a working set (the free variables
``0 < a_i < C`` and those whose gradient is near zero; LIBLINEAR's shrinking), where many cheap sweeps
finish the slow, ill-conditioned tail (near-duplicate records); the next full sweep and the duality gap
check every variable again. The certificate is the duality gap of
:func:`fdp_ppl.machine.solvers.hinge_gap`, computed term by term (each term ``>= 0`` and zero at the
optimum, so it stays accurate at large n).

Without Numba the sweeps fall back to a Python loop (slow, same result).
"""

from __future__ import annotations

import numpy as np

from .._numba import njit  # the loops below are plain Python without Numba

#: sweeps between two exact active-set solves
SWEEPS_PER_ROUND = 10
#: variables at a bound whose gradient is this close to zero join the shrunk working set
WORKING_SET_TOL = 1e-2
#: most sweeps over the shrunk working set between two rounds of full sweeps
SUBSET_SWEEPS = 20000
#: a round over the working set costs at most this many full sweeps' worth of coordinate steps
SUBSET_BUDGET = 10
#: full sweeps in every round after the first (which has SWEEPS_PER_ROUND)
LATER_SWEEPS = 3


@njit(cache=True, nogil=True)
def _cd_dense_subset(K, y, a, g, C, sweeps, idx, pg_tol):  # pragma: no cover - compiled
    """Sweeps over the working set ``idx`` only; ``g`` is kept up to date on ``idx`` (refresh it after)."""
    m = idx.size
    for _ in range(sweeps):
        worst = 0.0
        for p in range(m):
            i = idx[p]
            gi = g[i]
            ai = a[i]
            if (ai <= 0.0 and gi >= 0.0) or (ai >= C and gi <= 0.0):
                continue
            pg = abs(gi) if (ai > 0.0 and ai < C) else (-gi if ai <= 0.0 else gi)
            if pg > worst:
                worst = pg
            new = ai - gi / K[i, i]
            if new < 0.0:
                new = 0.0
            elif new > C:
                new = C
            dlt = new - ai
            if dlt != 0.0:
                a[i] = new
                f = dlt * y[i]
                for q in range(m):
                    j = idx[q]
                    g[j] += y[j] * f * K[i, j]
        if worst <= pg_tol:
            break


@njit(cache=True, nogil=True)
def _cd_linear_subset(Z, y, a, w, C, sweeps, idx, qd, pg_tol):  # pragma: no cover - compiled
    """Feature sweeps over the working set ``idx`` only (``w`` stays exact for all records)."""
    r = Z.shape[1]
    m = idx.size
    for _ in range(sweeps):
        worst = 0.0
        for p in range(m):
            i = idx[p]
            if qd[i] <= 0.0:
                continue
            s = 0.0
            for k in range(r):
                s += Z[i, k] * w[k]
            gi = y[i] * s - 1.0
            ai = a[i]
            if (ai <= 0.0 and gi >= 0.0) or (ai >= C and gi <= 0.0):
                continue
            pg = abs(gi) if (ai > 0.0 and ai < C) else (-gi if ai <= 0.0 else gi)
            if pg > worst:
                worst = pg
            new = ai - gi / qd[i]
            if new < 0.0:
                new = 0.0
            elif new > C:
                new = C
            dlt = new - ai
            if dlt != 0.0:
                a[i] = new
                f = dlt * y[i]
                for k in range(r):
                    w[k] += f * Z[i, k]
        if worst <= pg_tol:
            break


def gap_terms(a, margin_gap, C: float) -> float:
    """``Σ_i [C (1 − m_i)_+ − a_i (1 − m_i)]`` from ``1 − m = −g`` (term by term, each >= 0 up to rounding)."""
    m = margin_gap
    return float(np.sum(C * np.maximum(m, 0.0) - a * m))


class _Dense:
    def __init__(self, K, y):
        self.K, self.y = K, y

    def slack(self, a):  # 1 − Qa
        return 1.0 - self.y * (self.K @ (self.y * a))

    def sweep(self, a, C, sweeps, order):
        g = -self.slack(a)
        _cd_dense_subset(self.K, self.y, a, g, C, sweeps, order, 0.0)  # every record

    def sweep_subset(self, a, C, sweeps, idx, pg_tol):
        g = -self.slack(a)
        _cd_dense_subset(self.K, self.y, a, g, C, sweeps, idx, pg_tol)

    def block(self, rows, cols):
        return (self.y[rows, None] * self.y[None, cols]) * self.K[np.ix_(rows, cols)]

    def diag(self):
        return np.diag(self.K).copy()


class _Features:
    def __init__(self, Z, y):
        self.Z, self.y = Z, y
        self.qd = np.einsum("ij,ij->i", Z, Z)

    def w(self, a):
        return self.Z.T @ (a * self.y)

    def slack(self, a):
        return 1.0 - self.y * (self.Z @ self.w(a))

    def sweep(self, a, C, sweeps, order):
        w = self.w(a)
        _cd_linear_subset(self.Z, self.y, a, w, C, sweeps, order, self.qd, 0.0)  # a full sweep

    def sweep_subset(self, a, C, sweeps, idx, pg_tol):
        w = self.w(a)
        _cd_linear_subset(self.Z, self.y, a, w, C, sweeps, idx, self.qd, pg_tol)

    def block(self, rows, cols):
        zr = self.Z[rows] * self.y[rows, None]
        zc = self.Z[cols] * self.y[cols, None]
        return zr @ zc.T

    def diag(self):
        return self.qd


def solve_hinge_dual(y, C: float, gap_target: float, *, gram=None, features=None, max_sweeps: int = 5000):
    """Maximise the hinge dual to a duality gap ``<= gap_target``; ``gram`` (n, n) or ``features`` (n, r).

    Returns
    -------
    (a, gap, sweeps) : (ndarray (n,), float, int)
        Dual variables, the certified gap reached and the sweeps used; ``gap > gap_target`` when
        ``max_sweeps`` ran out (the caller refuses).
    """
    y = np.ascontiguousarray(y, dtype=float)
    op = _Dense(np.ascontiguousarray(gram, dtype=float), y) if features is None else \
        _Features(np.ascontiguousarray(features, dtype=float), y)
    n = y.size
    order = np.random.default_rng(n).permutation(n)  # public, data-independent order
    a = np.zeros(n)
    sweeps, gap = 0, np.inf
    best = (a.copy(), np.inf)
    while sweeps < max_sweeps:
        full = SWEEPS_PER_ROUND if sweeps == 0 else LATER_SWEEPS
        op.sweep(a, C, full, order)
        sweeps += full
        gap = max(gap_terms(a, op.slack(a), C), 0.0)
        if gap < best[1]:
            best = (a.copy(), gap)
        if gap <= gap_target:
            break
        # shrinking: many cheap sweeps over the working set (free variables and those near their switch)
        g = -op.slack(a)
        work = np.flatnonzero(((a > 0.0) & (a < C)) | (np.abs(g) <= WORKING_SET_TOL))
        if work.size:
            # a round over the working set costs at most SUBSET_BUDGET full sweeps' worth of coordinate steps
            sub = int(min(SUBSET_SWEEPS, max(10, SUBSET_BUDGET * n // work.size)))
            op.sweep_subset(a, C, sub, work[np.argsort(order.argsort()[work])], 1e-15)
            gap = max(gap_terms(a, op.slack(a), C), 0.0)
            if gap < best[1]:
                best = (a.copy(), gap)
            if gap <= gap_target:
                break
    return best[0], best[1], sweeps


__all__ = ["LATER_SWEEPS", "SUBSET_BUDGET", "SUBSET_SWEEPS", "SWEEPS_PER_ROUND", "WORKING_SET_TOL", "gap_terms", "solve_hinge_dual"]
