"""One Gaussian-process path, released on a grid and then online, query by query.

Hall, Rinaldo & Wasserman (2013), §5 (batch and online release), with the errata of
``specs/gp-mechanism-hall.md`` §5, §9: the batch covariance is ``s² K`` (squared
scale), and an online answer is ``f_D(x) + s ξ(x)`` where ``ξ`` is the unit path
conditioned on the *noise* values released so far (``(released − f_D)/s``).

:class:`GPPath` holds the unit path ``ξ ~ GP(0, K)`` at every point released so
far and extends it by exact Gaussian conditioning. Repeat queries return the cached
value (a second independent draw at the same point would be a second mechanism).

* Generic kernels: an incremental Cholesky factor ``L`` of ``K(P, P) + j I`` over
  the released points ``P``; a new block ``B`` gets ``ξ_B = L_21 z_P + L_22 z_B``
  with ``z_P = L^{-1} ξ_P`` (so ``ξ = L z`` with ``z`` i.i.d. N(0, 1): exactly the
  batch Cholesky sampler). The nugget ``j`` (jitter) is chosen once, on the first
  block, escalating ×10 from ``jitter_start · K(0)`` until the factorisation
  succeeds, and kept for every later query; a later Schur complement that is still
  numerically singular gets extra jitter on its own diagonal. Jitter only *adds*
  independent noise (covariance ⪰ K), so privacy is kept; eigenvalues are never
  clipped (that would remove noise in some directions).
* The exponential (Ornstein–Uhlenbeck) kernel ``exp(−|x − y|/ρ)`` in d = 1 is
  Markov: the conditional law given all released points depends only on the two
  nearest released neighbours (a bridge, or an AR(1) step at the ends), found by
  bisection (:mod:`bisect`) in a sorted list: O(log n) comparisons and O(1)
  arithmetic per query (the list insertion is a memmove), exact, no jitter.
"""

from __future__ import annotations

import bisect

import numpy as np
from scipy import linalg

from ..errors import InputError


def chol_jitter(cov, jitter_start: float = 1e-12, tries: int = 12):
    """Cholesky factor of ``cov + j I`` with the smallest ``j = jitter_start · mean(diag) · 10^k`` that works.

    Returns
    -------
    L : ndarray, shape (m, m)
        Lower triangular.
    j : float
        The jitter added (0 if the plain factorisation succeeded).

    Raises
    ------
    InputError
        Not factorisable after ``tries`` escalations.
    """
    cov = np.asarray(cov, dtype=float)
    try:
        return np.linalg.cholesky(cov), 0.0
    except np.linalg.LinAlgError:
        pass
    j = float(jitter_start) * float(np.mean(np.diag(cov)))
    for _ in range(tries):
        try:
            return np.linalg.cholesky(cov + j * np.eye(len(cov))), j
        except np.linalg.LinAlgError:
            j *= 10.0
    raise InputError("the noise covariance is not positive semi-definite even with jitter",
                     "check the kernel (it must be positive definite)")


def ou_conditional(x: float, left, right, rho: float) -> tuple[float, float]:
    """Mean and variance of the unit OU path ``exp(−|s − t|/ρ)`` at ``x`` given its two nearest neighbours.

    Parameters
    ----------
    x : float
    left, right : (float, float) or None
        ``(point, value)`` of the nearest released point below / above ``x``.
    rho : float
        Length-scale.

    Returns
    -------
    (mean, variance)
        Bridge: ``r_1 = e^{−(x−a)/ρ}``, ``r_2 = e^{−(b−x)/ρ}``,
        mean ``[r_1(1 − r_2²) ξ_a + r_2(1 − r_1²) ξ_b]/(1 − r_1² r_2²)``,
        variance ``(1 − r_1²)(1 − r_2²)/(1 − r_1² r_2²)``; one side only: AR(1),
        mean ``r ξ``, variance ``1 − r²``; none: (0, 1). [D], verified against
        generic conditioning in ``tests/test_erm.py``.
    """
    if left is None and right is None:
        return 0.0, 1.0
    if right is None or left is None:
        p, v = left if right is None else right
        r = np.exp(-abs(x - p) / rho)
        return float(r * v), float(-np.expm1(-2.0 * abs(x - p) / rho))
    (a, va), (b, vb) = left, right
    r1, r2 = np.exp(-(x - a) / rho), np.exp(-(b - x) / rho)
    one_r1, one_r2 = -np.expm1(-2.0 * (x - a) / rho), -np.expm1(-2.0 * (b - x) / rho)
    den = -np.expm1(-2.0 * (b - a) / rho)
    return float((r1 * one_r2 * va + r2 * one_r1 * vb) / den), float(one_r1 * one_r2 / den)


def gaussian_conditional(kernel_fn, points, values, x, jitter: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Generic conditional mean (m,) and covariance (m, m) of a GP at ``x`` (m, d) given ``values`` at ``points``.

    The covariance of the observed values is ``K(P, P) + jitter·I`` (reference implementation for tests).
    """
    P = np.atleast_2d(points)
    x = np.atleast_2d(x)
    C = kernel_fn(P, P) + jitter * np.eye(len(P))
    V = kernel_fn(P, x)
    W = linalg.solve(C, V, assume_a="pos")
    return W.T @ np.asarray(values, dtype=float), kernel_fn(x, x) + jitter * np.eye(len(x)) - V.T @ W


class GPPath:
    """The released unit path ``ξ ~ GP(0, K)``, extended by conditioning (module docstring).

    Parameters
    ----------
    kernel_fn : callable
        ``kernel_fn(A, B)`` -> ``K(A, B)``, shapes (m, d), (p, d) -> (m, p).
    d : int
        Dimension of the points.
    rng : numpy.random.Generator
    ou_rho : float or None
        Length-scale of an exponential kernel in d = 1: use the O(log n) Markov update.
    jitter_start : float
        First relative jitter tried (generic kernels).
    """

    def __init__(self, kernel_fn, d: int, rng, *, ou_rho: float | None = None, jitter_start: float = 1e-12):
        self.kernel_fn, self.d, self.rng = kernel_fn, int(d), rng
        self.ou_rho = ou_rho if (ou_rho is not None and self.d == 1) else None
        self.jitter_start = float(jitter_start)
        self.jitter = None if self.ou_rho is None else 0.0
        self.extra_jitter = 0.0
        self._cache: dict = {}
        self._sorted_x: list[float] = []
        self._sorted_v: list[float] = []
        self._points = np.empty((0, self.d))
        self._xi = np.empty(0)
        self._z = np.empty(0)
        self._L = np.empty((0, 0))

    def released(self) -> tuple[np.ndarray, np.ndarray]:
        """Released points (m, d) and unit-path values (m,), in release order (generic) or sorted (OU)."""
        if self.markov:
            return np.asarray(self._sorted_x)[:, None], np.asarray(self._sorted_v)
        return self._points.copy(), self._xi.copy()

    @property
    def markov(self) -> bool:
        return self.ou_rho is not None

    def __len__(self) -> int:
        return len(self._cache)

    @staticmethod
    def _key(p) -> tuple:
        return tuple(float(v) for v in p)

    def sample(self, x) -> np.ndarray:
        """Values of the path at ``x`` (m, d) or (m,) for d = 1; new points are drawn in order, repeats cached."""
        x = np.asarray(x, dtype=float)
        x = x.reshape(-1, self.d) if x.ndim <= 1 else x
        if x.shape[-1] != self.d or not np.all(np.isfinite(x)):
            raise InputError(f"query points must be finite with {self.d} coordinates (got shape {x.shape})",
                             "pass an array of shape (m, d)")
        new, seen = [], set()
        for p in x:
            k = self._key(p)
            if k not in self._cache and k not in seen:
                seen.add(k)
                new.append(p)
        if new:
            if self.markov:
                for p in new:
                    self._markov_step(float(p[0]))
            else:
                self._block(np.asarray(new))
        return np.array([self._cache[self._key(p)] for p in x])

    def _markov_step(self, x):
        xs, vs = self._sorted_x, self._sorted_v
        i = bisect.bisect_left(xs, x)
        left = (xs[i - 1], vs[i - 1]) if i > 0 else None
        right = (xs[i], vs[i]) if i < len(xs) else None
        mean, var = ou_conditional(x, left, right, self.ou_rho)
        v = float(mean + np.sqrt(max(var, 0.0)) * self.rng.standard_normal())
        xs.insert(i, x)
        vs.insert(i, v)
        self._cache[(x,)] = v

    def _block(self, B):
        K_BB = self.kernel_fn(B, B)
        if self.jitter is None:  # first block: choose the nugget once
            L22, j = chol_jitter(K_BB, self.jitter_start)
            self.jitter = j
            L21 = np.zeros((len(B), 0))
        else:
            K_PB = self.kernel_fn(self._points, B)
            L21 = linalg.solve_triangular(self._L, K_PB, lower=True).T if len(self._points) else np.zeros((len(B), 0))
            S = K_BB + self.jitter * np.eye(len(B)) - L21 @ L21.T
            L22, extra = chol_jitter(0.5 * (S + S.T), max(self.jitter_start, 1e-15))
            self.extra_jitter = max(self.extra_jitter, extra)
        zB = self.rng.standard_normal(len(B))
        xiB = L21 @ self._z + L22 @ zB
        n0 = len(self._points)
        L = np.zeros((n0 + len(B), n0 + len(B)))
        L[:n0, :n0] = self._L
        L[n0:, :n0] = L21
        L[n0:, n0:] = L22
        self._L = L
        self._points = np.vstack([self._points, B])
        self._z = np.concatenate([self._z, zB])
        self._xi = np.concatenate([self._xi, xiB])
        for p, v in zip(B, xiB):
            self._cache[self._key(p)] = float(v)


__all__ = ["GPPath", "chol_jitter", "gaussian_conditional", "ou_conditional"]
