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

:class:`InnovationPath` answers with the same factors but draws no float noise: each new block's whitened
innovation goes to an exact sampler (OpenDP's lattice Gaussian for an unseeded online release) and the answer is
mapped back from it (the online oracle's floating-point-safe path).
"""

from __future__ import annotations

import bisect

import numpy as np
from scipy import linalg

from ..errors import InputError
from ..spaces.basis import RetainedPairs
from ..spaces.grid import CartesianGrid
from ..spaces.tensor import MAX_DENSE_ENTRIES, TensorEigenbasis


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


def ou_step(gap, rho: float):
    """The AR(1) step of the unit OU path ``exp(−|s − t|/ρ)`` across ``gap`` (array-friendly).

    Returns
    -------
    (r, v)
        ``r = e^{−gap/ρ}`` (the coefficient on the value one gap away) and ``v = 1 − r² = −expm1(−2 gap/ρ)`` (the
        innovation's variance, computed without cancellation).

    Examples
    --------
    >>> r, v = ou_step(0.5, 0.5)
    >>> round(float(r), 6), round(float(v + r * r), 12)
    (0.367879, 1.0)
    """
    gap = np.asarray(gap, dtype=float)
    return np.exp(-gap / rho), -np.expm1(-2.0 * gap / rho)


class OUInnovations:
    """The unit OU noise on a sorted 1-D grid in its AR(1) innovations: the whitened coordinates of a Markov release.

    ``ξ(P) ~ N(0, K(P, P))``, ``K(s, t) = exp(−|s − t|/ρ)``, is ``ξ_0 = e_0``, ``ξ_i = r_i ξ_{i−1} + e_i`` with
    independent innovations ``e_i ~ N(0, v_i)``, ``v_0 = 1`` and ``(r_i, v_i)`` the :func:`ou_step` across
    ``t_i − t_{i−1}``. :meth:`coefficients` maps grid values g to ``c = (g_0, g_i − r_i g_{i−1})`` and
    :meth:`reconstruct` inverts it, so ``reconstruct(coefficients(f) + σ √v ζ) = f + σ ξ`` exactly: the law of the
    dense eigenbasis release (:class:`GridEigenbasis`) at any grid size, without its m × m eigendecomposition.

    Sensitivity in the whitened coordinates ``a_i = c_i/√v_i`` [D]: ``K⁻¹ = Lᵀ V⁻¹ L`` with L the unit lower
    bidiagonal map g ↦ c (the AR(1) factorisation, exact), so ``Σ a_i² = gᵀ K(P, P)⁻¹ g ≤ ‖g‖²_H`` for g in the
    RKHS (Hall, Rinaldo & Wasserman 2013, Prop. 8): the whitened ℓ² sensitivity is at most the RKHS bound, as for
    the eigenbasis, with nothing truncated.

    Parameters
    ----------
    points : array_like, shape (m,)
        Strictly increasing grid.
    rho : float
        Length-scale ρ > 0.

    Attributes
    ----------
    r : ndarray, shape (m − 1,)
    eigenvalues : ndarray, shape (m,)
        The innovation variances ``v_i`` (the variances of the whitened coordinates' scale, named as the
        eigenbases' so the release calibration is shared).
    size, n_points : int
        m.

    Raises
    ------
    InputError
        A grid that is not strictly increasing, or ρ ≤ 0.

    Examples
    --------
    >>> ar = OUInnovations(np.linspace(0, 1, 5), 0.3)
    >>> g = np.sin(np.arange(5.0))
    >>> bool(np.allclose(ar.reconstruct(ar.coefficients(g)), g))
    True
    >>> K = np.exp(-np.abs(ar.points[:, None] - ar.points[None, :]) / 0.3)
    >>> a = ar.coefficients(g) / np.sqrt(ar.eigenvalues)
    >>> bool(np.isclose(a @ a, g @ np.linalg.solve(K, g)))
    True
    """

    structure = "markov"
    rel_tol = 0.0
    dropped_trace = 0.0
    complete = True

    def __init__(self, points, rho: float):
        t = np.asarray(points, dtype=float).reshape(-1)
        if t.size < 1 or not np.all(np.diff(t) > 0) or not (float(rho) > 0):
            raise InputError("the OU innovations need a strictly increasing grid and rho > 0",
                             "pass the sorted grid points of a one-dimensional spec")
        self.points = t
        self.r, v = ou_step(np.diff(t), float(rho))
        self.eigenvalues = np.concatenate([[1.0], v])
        self.size = self.n_points = int(t.size)

    def coefficients(self, values) -> np.ndarray:
        """Innovations ``(g_0, g_i − r_i g_{i−1})`` of grid values (..., m) -> (..., m)."""
        g = np.asarray(values, dtype=float)
        out = g.copy()
        out[..., 1:] -= self.r * g[..., :-1]
        return out

    def reconstruct(self, coefficients) -> np.ndarray:
        """Grid values of innovations (..., m) -> (..., m): the AR(1) recursion (post-processing)."""
        c = np.asarray(coefficients, dtype=float)
        out = np.empty_like(c)
        out[..., 0] = c[..., 0]
        for i in range(1, self.size):
            out[..., i] = self.r[i - 1] * out[..., i - 1] + c[..., i]
        return out


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
        generic conditioning in ``tests/machine/test_machine.py``.
    """
    if left is None and right is None:
        return 0.0, 1.0
    if right is None or left is None:
        p, v = left if right is None else right
        r, var = ou_step(abs(x - p), rho)
        return float(r * v), float(var)
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
        self.min_jitter = 0.0  # a floor on the nugget (InnovationPath: ANSWER_VAR_FLOOR · K(x, x))
        self.jitter = None if self.ou_rho is None else 0.0
        self.extra_jitter = 0.0
        self._cache: dict = {}
        self._sorted_x: list[float] = []
        self._sorted_v: list[float] = []
        self._points = np.empty((0, self.d))
        self._xi = np.empty(0)
        self._z = np.empty(0)
        self._L = np.empty((0, 0))
        self._prefix = None  # (grid points (m, d), retained eigenbasis) of a coefficient release

    def condition_on_coefficients(self, points, basis: "GridEigenbasis", zeta) -> np.ndarray:
        """Start the path from a released block of whitened eigen-coefficients on a grid.

        The grid release of :func:`fdp_ppl.release` of an ERM fit publishes the linear
        functionals ``o_j = u_jᵀ ξ(P) = √λ_j ζ_j`` (``j`` retained, ``ζ_j`` i.i.d.
        N(0, 1)); they are exactly that law for ``ξ ~ GP(0, K)``. Later queries are
        drawn from the GP conditional given these functionals (and every later query),
        so the whole oracle stays one set of linear functionals of one GP path (Hall
        et al. 2013, Prop. 8). The grid points themselves are cached with the released
        unit values ``Σ_j √λ_j ζ_j u_j``. Markov (OU) paths need point values: when
        every eigenpair is retained those are exact and seed the bisection lists;
        otherwise the path falls back to generic conditioning.

        Parameters
        ----------
        points : ndarray, shape (m, d)
            The grid ``P`` the basis was computed on.
        basis : GridEigenbasis or KroneckerEigenbasis
            Retained eigenpairs of ``K(P, P)``.
        zeta : ndarray, shape (r,)
            Whitened unit noise of the released coefficients.

        Returns
        -------
        ndarray, shape (m,)
            The unit path's released grid values.

        Raises
        ------
        InputError
            A path that has already released values, or shapes that do not match.
        """
        if len(self._cache):
            raise InputError("the path has already released values", "condition on the grid before any query")
        P = np.asarray(points, dtype=float).reshape(-1, self.d)
        zeta = np.asarray(zeta, dtype=float).reshape(-1)
        if P.shape[0] != basis.n_points or zeta.size != basis.size:
            raise InputError("grid, basis and coefficients do not match", "pass the basis of K(points, points)")
        sq = np.sqrt(basis.eigenvalues)
        xi = basis.reconstruct(sq * zeta)
        if self.markov and basis.complete:
            order = np.argsort(P[:, 0], kind="stable")
            self._sorted_x = [float(P[i, 0]) for i in order]
            self._sorted_v = [float(xi[i]) for i in order]
        else:
            self.ou_rho = None
            self.jitter = self.min_jitter
            self._prefix = (P, basis)
            self._L = np.diag(sq)
            self._z = zeta.copy()
        for p, v in zip(P, xi):
            self._cache[self._key(p)] = float(v)
        return xi

    def _cross(self, B) -> np.ndarray:
        """Covariance of every released quantity (prefix functionals, then points) with ``ξ(B)``."""
        parts = []
        if self._prefix is not None:
            P, basis = self._prefix  # U_rᵀ K(P, B) through the basis (dense or Kronecker), shape (r, |B|)
            parts.append(basis.coefficients(self.kernel_fn(P, B).T).T)
        if len(self._points):
            parts.append(self.kernel_fn(self._points, B))
        return np.vstack(parts) if parts else np.zeros((0, len(B)))

    def released(self) -> tuple[np.ndarray, np.ndarray]:
        """Released points (m, d) and unit-path values (m,), in release order (generic) or sorted (OU)."""
        if self.markov:
            return np.asarray(self._sorted_x)[:, None], np.asarray(self._sorted_v)
        return self._points.copy(), self._xi.copy()

    @property
    def markov(self) -> bool:
        """True when new points are drawn by the OU Markov update (``ou_rho`` set)."""
        return self.ou_rho is not None

    def __len__(self) -> int:
        return len(self._cache)

    @staticmethod
    def _key(p) -> tuple:
        return tuple(float(v) for v in p)

    def sample(self, x) -> np.ndarray:
        """Values of the path at ``x`` (m, d) or (m,) for d = 1; new points are drawn in order, repeats cached.

        Raises
        ------
        InputError
            Points that are not finite or have the wrong number of coordinates.
        """
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

    def _factors(self, B):
        """``(L21, L22)`` of a new block ``B``: ``ξ_B = L21 z_P + L22 z_B`` (the nugget is chosen on the first block)."""
        K_BB = self.kernel_fn(B, B)
        if self.jitter is None:  # first block: choose the nugget once
            L22, j = chol_jitter(K_BB + self.min_jitter * np.eye(len(B)), self.jitter_start)
            self.jitter = j + self.min_jitter
            return np.zeros((len(B), 0)), L22
        K_PB = self._cross(B)
        L21 = linalg.solve_triangular(self._L, K_PB, lower=True).T if len(self._L) else np.zeros((len(B), 0))
        S = K_BB + self.jitter * np.eye(len(B)) - L21 @ L21.T
        L22, extra = chol_jitter(0.5 * (S + S.T), max(self.jitter_start, 1e-15))
        self.extra_jitter = max(self.extra_jitter, extra)
        return L21, L22

    def _extend(self, B, L21, L22, zB, values) -> None:
        """Append block ``B`` with its factors, whitened unit noise ``zB`` and the values to cache for it."""
        xiB = L21 @ self._z + L22 @ zB
        n0 = len(self._L)
        L = np.zeros((n0 + len(B), n0 + len(B)))
        L[:n0, :n0] = self._L
        L[n0:, :n0] = L21
        L[n0:, n0:] = L22
        self._L = L
        self._points = np.vstack([self._points, B])
        self._z = np.concatenate([self._z, zB])
        self._xi = np.concatenate([self._xi, xiB])
        for p, v in zip(B, xiB if values is None else values):
            self._cache[self._key(p)] = float(v)

    def _block(self, B):
        L21, L22 = self._factors(B)
        self._extend(B, L21, L22, self.rng.standard_normal(len(B)), None)


#: smallest conditional variance of an exactly released answer, relative to ``K(x, x)``: :class:`InnovationPath`
#: adds it as a nugget (generic kernels) or refuses a point closer to an answered one (OU), so the float error of
#: an answer's whitened centre is amplified by at most ``ANSWER_VAR_FLOOR^(-1/2) = 10^5``
ANSWER_VAR_FLOOR = 1e-10


class InnovationPath(GPPath):
    """A GP path ``f_D + σ ξ`` answered exactly, block by block, through its whitened innovations.

    :class:`GPPath` draws the unit path ``ξ`` in float64 and adds it to ``f_D``. Here the noise of every answer is
    an exact draw: a new block ``B`` has ``ξ_B = L21 z_P + L22 z_B`` (:class:`GPPath`'s factors), so its released
    values are ``y_B = L21 w + L22 w_B`` with ``w`` the released whitened innovations so far (public) and

    ``w_B = draw(c_B)``,  ``c_B = L22⁻¹ (f_D(B) − L21 a)``,

    ``a`` the whitened innovations of ``f_D`` itself (private) and ``draw`` an exact Gaussian of scale σ around its
    argument (OpenDP's lattice Gaussian, :class:`fdp_ppl.noise.opendp.OpenDPSampler`). In exact arithmetic ``w_B``
    has the law of the GP conditional's innovation, so the answers have the law of :class:`GPPath`'s; and
    ``Σ ‖c − c'‖²`` over every answered block is the Mahalanobis norm of ``f_D − f_D'`` over all answered
    functionals (the chain rule of the Cholesky factorisation), at most the RKHS sensitivity whatever points are
    asked and in whatever order (Hall, Rinaldo & Wasserman 2013, Prop. 8). Privacy of the whole oracle:
    :class:`fdp_ppl.machine.OnlineRelease`. The OU kernel in d = 1 uses the Markov bridge of its two nearest
    answered neighbours (:func:`ou_conditional`) with the same innovation form.

    Every answer's conditional variance is at least :data:`ANSWER_VAR_FLOOR` ``· K(x, x)``: generic kernels carry it
    as a nugget on every answered point (added noise: the covariance stays ⪰ K); the OU path, whose Markov
    property a nugget would break, refuses a point whose bridge variance is below it (closer than about
    ``5·10⁻¹¹ ρ`` to an answered point).

    Parameters
    ----------
    kernel_fn : callable
        ``K(A, B)``, shapes (m, d), (p, d) -> (m, p).
    d : int
    decision : callable
        ``f_D`` at points (m, d) -> (m,) (the non-private function; never returned).
    draw : callable
        Whitened centre (J,) -> released whitened innovations (J,): the exact sampler of scale σ.
    ou_rho : float or None
        Length-scale of an exponential kernel in d = 1 (Markov update).

    Examples
    --------
    >>> import numpy as np
    >>> k = lambda A, B: np.exp(-np.abs(np.subtract.outer(A[:, 0], B[:, 0])))   # the OU kernel, rho = 1
    >>> path = InnovationPath(k, 1, lambda x: np.zeros(len(x)), lambda c: c + 0.5)
    >>> path.sample([0.0, 1.0]).round(3).tolist()      # draw adds 0.5 to every innovation: y = L (0.5, 0.5)
    [0.5, 0.649]
    """

    def __init__(self, kernel_fn, d: int, decision, draw, *, ou_rho: float | None = None):
        super().__init__(kernel_fn, d, None, ou_rho=ou_rho)
        self.decision, self.draw = decision, draw
        self._a = np.empty(0)
        self._sorted_f: list[float] = []

    def _k0(self, p) -> float:
        p = np.asarray(p, dtype=float).reshape(1, self.d)
        return float(self.kernel_fn(p, p)[0, 0])

    def condition_on_release(self, points, basis, coefficients, centre) -> np.ndarray:
        """Start from a released grid block: eigen-coefficients ``coefficients = centre + σ √λ ζ`` (r,).

        ``centre`` (r,) are the non-private coefficients ``u_jᵀ f_D(P)``. Returns the released grid values (m,).

        Raises
        ------
        InputError
            A path that has already answered, or shapes that do not match.
        """
        if len(self._cache):
            raise InputError("the path has already released values", "condition on the grid before any query")
        P = np.asarray(points, dtype=float).reshape(-1, self.d)
        coefficients = np.asarray(coefficients, dtype=float).reshape(-1)
        centre = np.asarray(centre, dtype=float).reshape(-1)
        if P.shape[0] != basis.n_points or coefficients.size != basis.size or centre.size != basis.size:
            raise InputError("grid, basis and coefficients do not match", "pass the basis of K(points, points)")
        sq = np.sqrt(basis.eigenvalues)
        y = basis.reconstruct(coefficients)
        if self.markov and basis.complete:  # the grid values are the path's: Markov bridges from them
            order = np.argsort(P[:, 0], kind="stable")
            f = basis.reconstruct(centre)
            self._sorted_x = [float(P[i, 0]) for i in order]
            self._sorted_v = [float(y[i]) for i in order]
            self._sorted_f = [float(f[i]) for i in order]
        else:
            self.ou_rho = None
            self.min_jitter = ANSWER_VAR_FLOOR * self._k0(P[0])
            self.jitter = self.min_jitter
            self._prefix = (P, basis)
            self._L = np.diag(sq)
            self._z, self._a = coefficients / sq, centre / sq
        for p, v in zip(P, y):
            self._cache[self._key(p)] = float(v)
        return y

    def _markov_step(self, x):
        xs, ys, fs = self._sorted_x, self._sorted_v, self._sorted_f
        i = bisect.bisect_left(xs, x)
        nb = [(xs[j], ys[j], fs[j]) if 0 <= j < len(xs) else None for j in (i - 1, i)]
        mean_y, var = ou_conditional(x, *[None if t is None else t[:2] for t in nb], self.ou_rho)
        if var < ANSWER_VAR_FLOOR:
            raise InputError(f"the point {x!r} is too close to an answered point for an exact answer (conditional "
                             f"variance {var:.3g} < {ANSWER_VAR_FLOOR:g})", "query the answered point itself")
        mean_f, _ = ou_conditional(x, *[None if t is None else (t[0], t[2]) for t in nb], self.ou_rho)
        fx = float(self.decision(np.array([[x]]))[0])
        sd = float(np.sqrt(var))
        y = float(mean_y + sd * float(self.draw(np.array([(fx - mean_f) / sd]))[0]))
        xs.insert(i, x)
        ys.insert(i, y)
        fs.insert(i, fx)
        self._cache[(x,)] = y

    def _block(self, B):
        if self.jitter is None:
            self.min_jitter = ANSWER_VAR_FLOOR * self._k0(B[0])
        L21, L22 = self._factors(B)
        c = linalg.solve_triangular(L22, np.asarray(self.decision(B), dtype=float) - L21 @ self._a, lower=True)
        w = np.asarray(self.draw(c), dtype=float).reshape(-1)
        self._a = np.concatenate([self._a, c])
        self._extend(B, L21, L22, w, None)  # here _z holds the released w, so _xi holds the answers


class GridEigenbasis(RetainedPairs):
    """Retained eigenpairs of the noise kernel matrix ``K(P, P)`` on a release grid ``P``.

    Convention: the noise of a grid release is the vector ``ξ(P) ~ N(0, K(P, P))`` of
    point evaluations, so the eigenpairs are those of the matrix ``K(P, P) = U Λ Uᵀ``
    with orthonormal columns ``u_j`` in the *Euclidean* inner product of grid values (no
    quadrature weights: a point evaluation is not an integral). Eigenpairs with
    ``λ_j <= rel_tol · λ_max`` (numerically zero, or negative round-off) are dropped from
    the estimate and from the noise alike (DESIGN.md, invariant 2).

    Sensitivity in the whitened coordinates ``a_j = u_jᵀ v / √λ_j`` [D] (Hall, Rinaldo &
    Wasserman 2013, §4.3 and Prop. 8): for ``v = g(P)`` with ``g`` in the RKHS of ``K``,
    ``Σ_{j retained} a_j² <= Σ_{all j} a_j² = vᵀ K(P, P)⁻¹ v <= ‖g‖²_H``: dropping
    eigenpairs is a coordinate projection (a contraction), and ``vᵀ K⁻¹ v`` is the squared
    RKHS norm of the minimum-norm interpolant of ``g`` on ``P``. So the ℓ² sensitivity of
    the whitened coefficients is at most the RKHS bound ``Δ = M √(sup K(x, x))/(λ n)``.

    Parameters
    ----------
    gram : array_like, shape (m, m)
        ``K(P, P)`` (symmetric positive semi-definite).
    rel_tol : float
        Relative eigenvalue cut-off (default :data:`EIGEN_REL_TOL`).

    Attributes
    ----------
    eigenvalues : ndarray, shape (r,)
        Retained ``λ_j``, decreasing.
    vectors : ndarray, shape (m, r)
        Retained ``u_j`` (orthonormal columns).
    dropped_trace : float
        ``Σ`` of the dropped eigenvalues (clipped at 0): the noise variance the
        truncation removes together with the estimate's components there.

    Raises
    ------
    InputError
        A non-square or non-finite matrix, or no eigenvalue above the cut-off.
    """

    def __init__(self, gram, rel_tol: float | None = None):
        K = np.asarray(gram, dtype=float)
        if K.ndim != 2 or K.shape[0] != K.shape[1] or not np.all(np.isfinite(K)):
            raise InputError(f"the kernel matrix must be square and finite (got shape {K.shape})",
                             "check the kernel and the grid")
        self.rel_tol = float(EIGEN_REL_TOL if rel_tol is None else rel_tol)
        lam, U = linalg.eigh(0.5 * (K + K.T))
        lam, U = lam[::-1], U[:, ::-1]
        keep = lam > self.rel_tol * max(float(lam[0]), 0.0)
        if not np.any(keep):
            raise InputError("the kernel matrix has no positive eigenvalue", "check the kernel (positive definite)")
        self.eigenvalues = lam[keep].copy()
        self.vectors = np.ascontiguousarray(U[:, keep])
        self.dropped_trace = float(np.sum(np.clip(lam[~keep], 0.0, None)))
        self.n_points = int(K.shape[0])

    @property
    def weights(self) -> np.ndarray:
        """Unit weights (m,): the Euclidean inner product of point evaluations."""
        return np.ones(self.n_points)

    def coefficients(self, values) -> np.ndarray:
        """``c_j = u_jᵀ v`` of grid values (..., m) -> (..., r)."""
        return np.asarray(values, dtype=float) @ self.vectors

    def reconstruct(self, coefficients) -> np.ndarray:
        """Grid values ``Σ_j c_j u_j`` of coefficients (..., r) -> (..., m)."""
        return np.asarray(coefficients, dtype=float) @ self.vectors.T

    def covariance(self) -> np.ndarray:
        """``U_r Λ_r U_rᵀ`` (m, m): the kernel restricted to the retained eigenpairs."""
        return (self.vectors * self.eigenvalues) @ self.vectors.T

    #: how the eigenpairs were computed (release attr ``noise_structure``)
    structure = "dense"


#: default relative eigenvalue cut-off of :class:`GridEigenbasis`
EIGEN_REL_TOL = 1e-10


class KroneckerEigenbasis(TensorEigenbasis):
    """Retained eigenpairs of a product kernel matrix ``K(P, P) = K_1 ⊗ … ⊗ K_d`` on a Cartesian grid.

    The kernel machine's :class:`~fdp_ppl.spaces.tensor.TensorEigenbasis`: unit weights (point evaluations),
    built from the formed 1-D Gram matrices by one dense ``eigh`` each, LAPACK's signs, ties in increasing
    multi-index order, and grid values flattened to ``(..., m)`` (C order) as :class:`GridEigenbasis` takes them
    (``coefficients`` ``c_j = u_jᵀ v`` (..., m) -> (..., r), ``reconstruct`` back, factor by factor).

    For a product kernel ``K(x, y) = Π_k k_k(x_k, y_k)`` and a Cartesian grid
    ``P = A_1 × … × A_d`` in C order (the last axis fastest), ``K(P, P)`` is the
    Kronecker product of the 1-D factors ``K_k = k_k(A_k, A_k) = V_k M_k V_kᵀ``. Its
    eigenpairs are the products ``λ_{i_1…i_d} = Π_k μ_{k, i_k}`` with eigenvectors
    ``v_{1, i_1} ⊗ … ⊗ v_{d, i_d}`` (orthonormal in the Euclidean inner product of grid
    values, the convention of :class:`GridEigenbasis`). The same relative cut-off is
    applied to the products: a pair is retained iff ``λ > rel_tol · λ_max`` with
    ``λ_max = Π_k μ_{k, max}``; a product with a non-positive factor eigenvalue is
    dropped (never clipped up). Factor eigenpairs with ``μ_{k,i} <= rel_tol · μ_{k,max}``
    can enter no retained product and are discarded first.

    The ``m × m`` matrix (``m = Π_k G_k``) is never formed: cost ``O(m Σ_k r_k)`` per vector
    (``r_k`` kept factor pairs), memory ``O(m + Σ_k G_k²)``.

    Privacy: the release law (GP noise ``σ √λ_j ζ_j`` on ``c_j = u_jᵀ f_D(P)``, Hall,
    Rinaldo & Wasserman 2013, §4.3 and Prop. 8) and the whitened-sensitivity argument are
    those of :class:`GridEigenbasis`: this class computes the same eigenpairs (up to
    rotations inside degenerate eigenspaces, which leave the projector and the noise
    law unchanged) with a different algorithm.

    Parameters
    ----------
    factors : sequence of array_like, each shape (G_k, G_k)
        The 1-D Gram matrices ``K_k`` (symmetric positive semi-definite), in grid-axis order.
    rel_tol : float
        Relative eigenvalue cut-off (default :data:`EIGEN_REL_TOL`).

    Attributes
    ----------
    eigenvalues : ndarray, shape (r,)
        Retained products ``λ_j``, decreasing.
    index : ndarray of int, shape (r,)
        Flat (C-order) positions of the retained multi-indices in the product of the
        kept factor eigenpairs, shape ``(r_1, …, r_d)``.
    multi_index : ndarray of int, shape (r, d)
        The retained factor-eigenpair indices ``(i_1, …, i_d)``.
    factor_eigenvalues, factor_vectors : list of ndarray
        Kept factor eigenpairs ``μ_k`` (r_k,) and ``V_k`` (G_k, r_k), decreasing.
    shape : tuple of int
        Grid shape ``(G_1, …, G_d)``.
    n_points : int
        ``m = Π_k G_k``.
    dropped_trace : float
        ``Σ`` of the dropped (positive) product eigenvalues: ``Π_k tr(K_k)⁺ − Σ_j λ_j``
        computed over all products.

    Raises
    ------
    InputError
        A factor that is not square and finite, or with no positive eigenvalue.
    """

    def __init__(self, factors, rel_tol: float | None = None):
        grams = []
        for K in factors:
            K = np.asarray(K, dtype=float)
            if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] < 2 or not np.all(np.isfinite(K)):
                raise InputError(f"each kernel factor must be square (at least 2 x 2) and finite (got shape "
                                 f"{K.shape})", "check the kernel and the grid")
            grams.append(0.5 * (K + K.T))
        if not grams:
            raise InputError("a Kronecker basis needs at least one factor", "pass the 1-D Gram matrices")
        grid = CartesianGrid(tuple(np.arange(float(K.shape[0])) for K in grams), quadrature="unit")
        super().__init__(None, grid, EIGEN_REL_TOL if rel_tol is None else rel_tol, method="dense",
                         sign_convention=False, grams=grams, flat=True)


__all__ = ["ANSWER_VAR_FLOOR", "EIGEN_REL_TOL", "MAX_DENSE_ENTRIES", "GPPath", "InnovationPath", "GridEigenbasis", "KroneckerEigenbasis", "OUInnovations",
           "chol_jitter", "gaussian_conditional", "ou_conditional", "ou_step"]
