"""The normalising constant of the matrix Bingham law on the Stiefel manifold (k > 1) and of the sequential
(deflation) Bingham law, for the likelihood of a k > 1 ε-DP FPCA release (:mod:`fdp_ppl.inference.components`).

A released m × k frame V of the matrix Bingham law has density ``etr(VᵀAV)/C_k(A)`` w.r.t. the uniform (Haar)
probability law U on the Stiefel manifold V_{k,m}, with

    C_k(A) = E_U[etr(VᵀAV)] = ₁F₁(k/2; m/2; A)

(Chikuse 2003, §2.3). It depends on A through its eigenvalues a_1 ≥ … ≥ a_m only. :func:`stiefel_log_constant`
offers:

* ``"nested"`` — an approximation built from exact vector Bingham constants [D]. With
  c(b_1, …, b_q) = ₁F₁(½; q/2; diag(b)) the k = 1 constant (exact positive series,
  :mod:`fdp_ppl.inference.bingham`),

      log C_k(A) ≈ Σ_{j≤k} a_j + Σ_{i=1}^{k} log c(a_i, …, a_m) − Σ_{i=1}^{k} log c(a_i, …, a_k).

  The first sum of constants is the sequential (deflation) construction at the mode (column i a vector Bingham
  on the complement of the top i − 1 eigenvectors); the second removes what that construction charges for
  rotations inside the top-k span, which leave etr(VᵀAV) unchanged. It is exact for k = 1, for k = m and for
  A = cI, and agrees with the Laplace approximation on the Grassmannian (Σ_{j≤k} a_j + log Γ_k(m/2)/Γ_k(k/2)
  − ½ Σ_{j≤k<l} log(a_j − a_l)) when the eigen-gaps are large. Measured error of log C (nats) against the exact
  complement identity (k = m − 1) and the importance-sampling estimate below: within ±0.01 on the mechanism's
  parameters A = s(nS − Σ⁻¹) (Fourier Σ_ii = i⁻³, S from the default prior, n = 30–500, ε = 1) at m = 3–6,
  k = 2 (Monte Carlo standard errors 0.002–0.008), ±0.03 at m = 8 and within the noise (0.03–0.06) at k = 3,
  m = 6–10; up to 0.07 at small spreads with unequal gaps (a = (3, 1, 0, −1) or (2, 1, ½, 0): 0.07, 0.07;
  (3, 1, 0): 0.04), and 0.33 at k = 3, m = 6 with all ``|a_i|`` below about 1.5 (the nested construction is not
  exact at first order in A: it suits the spread-out spectra of the mechanism, s(n + range Σ⁻¹) in the tens,
  not a small ε·n with a flat Σ)
  (:data:`NESTED_TOLERANCE`; tests/inference/test_stiefel.py, benchmarks/bench_sbc_fpca.py). Its gradient is the
  exact derivative of the approximation (sum of the vector constants' gradients, the exact series'
  E[x xᵀ]), so NUTS samples the approximated posterior consistently; it is continuous where eigenvalues cross.
  Kume, Preston & Wood's (2013) saddlepoint for Stiefel manifolds was tried first: with the symmetric tilt the
  identity-weighted Bingham forces (Θ = θI), its error grew to tens of nats at spreads of 10–50 (the tilted Gram
  matrix is close to rank one there), so it is not offered.
* ``"zonal"`` — exact to :data:`ZONAL_TOLERANCE` (1e-9 nats) at small spreads, with its gradient: the series
  ``₁F₁(k/2; m/2; X) = Σ_κ (k/2)_κ/(m/2)_κ · C_κ(X)/|κ|!`` over partitions κ (Muirhead 1982, Def. 7.3.1), zonal
  polynomials C_κ from Jack polynomials J_κ^{(2)} by Stanley's branching recursion over variables
  (Koev & Edelman 2006: ``J_κ(x_1..x_r) = Σ_μ J_μ(x_1..x_{r−1}) x_r^{|κ/μ|} β_κμ`` over horizontal strips κ/μ;
  forward-mode derivative through it). (k/2)_κ = 0 when κ has more than k parts, so only those are summed. The
  truncation degree comes from a stated bound (:func:`zonal_degree`: the error of log C is at most
  ``e^{(m+k)ρ} P(Poisson(mρ) > N)``, ρ half the spread of A's eigenvalues), capped at :data:`ZONAL_MAX_DEGREE`
  (36): it reaches spreads of 3.75 at m = 4, 3 at m = 5, 2.5 at m = 6 (k = 2 or 3), 1.5 at m = 10 — the regime where ``"nested"``
  is poor (flat Σ, small ε·n), not the mechanism's default Fourier Σ (spread ≥ s(m³ − 1)). Checked against the
  vector series (k = 1), the complement identity (k = m − 1) and e^{tr A} (k = m) to 1e-15 in value and
  gradient, and against brute-force Monte Carlo at m = 6, k = 3 (tests/inference/test_stiefel.py). A sampler
  uses it for the whole run when the release's public spread bound s(n + range Σ⁻¹) admits it
  (:meth:`~fdp_ppl.inference.frame_laws.MatrixBingham.constant_method`).
* ``"complement"`` — exact for k ≥ m − 1: VVᵀ = I − WWᵀ with W the uniformly distributed complement frame
  (m × (m − k)), so ``C_k(A) = e^{tr A} C_{m−k}(−A)``: k = m gives e^{tr A}; k = m − 1 the vector Bingham
  series.
* ``"monte-carlo"`` — importance sampling from the matrix angular central Gaussian law (Chikuse 2003, §2.4.2:
  V = Y(YᵀY)^{−1/2}, Y with i.i.d. N(0, Ω⁻¹) columns, density ``|Ω|^{k/2} |VᵀΩV|^{−m/2}`` w.r.t. U), with
  Ω = I + 2(a_1 I − A) as in Kent, Ganeiber & Mardia's (2018) k = 1 envelope (b = 1): heavier-tailed than the
  target, so the weights stay tame. Returns the standard error of log C (delta method) with it. For checks and
  benchmarks; random, so never inside a sampler.
* ``"uniform-monte-carlo"`` — plain Monte Carlo over Haar frames (brute force; small spreads only).

The sequential law itself — the release law of a deflation mechanism, one vector Bingham per step on nested
orthogonal complements — has the exact normaliser ``Π_i c_i(V)`` (each a vector Bingham ₁F₁(½; (m−i+1)/2; ·),
exact series or saddlepoint as for k = 1): :func:`sequential_log_constant`.

References
----------
Chikuse, Y. (2003). Statistics on Special Manifolds. Springer.
Kume, A. & Wood, A. T. A. (2005). Saddlepoint approximations for the Bingham and Fisher–Bingham normalising
constants. Biometrika 92, 465–476.
Kume, A., Preston, S. P. & Wood, A. T. A. (2013). Saddlepoint approximations for the normalizing constant of
Fisher–Bingham distributions on products of spheres and Stiefel manifolds. Biometrika 100, 971–984.
Butler, R. W. (2007). Saddlepoint Approximations with Applications. Cambridge University Press.
Koev, P. & Edelman, A. (2006). The efficient evaluation of the hypergeometric function of a matrix argument.
Math. Comp. 75, 833–846.
Muirhead, R. J. (1982). Aspects of Multivariate Statistical Theory. Wiley.
Stanley, R. P. (1989). Some combinatorial properties of Jack symmetric functions. Adv. Math. 77, 76–115.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
from ..errors import InputError
from ..fpca.samplers import _complement
from ..fpca.bingham import SERIES_MAX_SPREAD, _check_square, bingham_log_constant

METHODS = ("auto", "zonal", "nested", "complement", "monte-carlo", "uniform-monte-carlo")
#: documented bound on the error of the ``"nested"`` approximation of log C on the mechanism's parameters (nats;
#: module docstring): the tests hold it to this against Monte Carlo, with the Monte Carlo margin added
NESTED_TOLERANCE = 0.1


# ---------------------------------------------------------------------------- nested approximation
def _vector_method(b: np.ndarray, method: str) -> str:
    return ("series" if np.ptp(b) <= SERIES_MAX_SPREAD else "saddlepoint") if method == "auto" else method


def _nested(a: np.ndarray, k: int, grad: bool = False, vector_method: str = "auto"):
    """log C_k for eigenvalues ``a`` sorted descending by the nested approximation; with ``grad`` also its
    derivative w.r.t. a (m,) (sums to k)."""
    m = a.size
    logc = float(np.sum(a[:k]))
    g = np.zeros(m)
    g[:k] = 1.0
    for lo, hi, sign in [(i, m, 1.0) for i in range(k)] + [(i, k, -1.0) for i in range(k)]:
        b = a[lo:hi]
        method = _vector_method(b, vector_method)
        if grad:
            lc, ex = bingham_log_constant(b, method, grad=True)
            g[lo:hi] += sign * ex
        else:
            lc = bingham_log_constant(b, method)
        logc += sign * lc
    return logc, (g if grad else None)


# ---------------------------------------------------------------------------- exact zonal-polynomial series
#: Jack parameter of the zonal polynomials of real symmetric matrices
_ALPHA = 2.0
#: the zonal series is truncated where its stated bound on the error of log C is below this (nats)
ZONAL_TOLERANCE = 1e-9
#: highest total degree the zonal series runs to (its tables are built once per (k, m, degree), ~1 s at k = 3,
#: degree 30); spreads that need more use ``"nested"``
ZONAL_MAX_DEGREE = 36


def _conjugate(kappa: tuple, width: int) -> list:
    return [sum(1 for p in kappa if p >= j) for j in range(1, width + 1)]


def _jack_beta(kappa: tuple, mu: tuple) -> float:
    """Stanley's (1989) branching coefficient β_κμ of the Jack polynomial J_κ^{(α)} (Koev & Edelman 2006, eq. (4))
    for a horizontal strip κ/μ, α = 2."""
    a = _ALPHA
    width = kappa[0] if kappa else 0
    kc, mc = _conjugate(kappa, width), _conjugate(mu, width)
    out = 1.0
    for nu, conj, sign in ((kappa, kc, 1), (mu, mc, -1)):
        for i, ni in enumerate(nu, 1):
            for j in range(1, ni + 1):
                h = (conj[j - 1] - i + a * (ni - j + 1)) if kc[j - 1] == mc[j - 1] else \
                    (conj[j - 1] - i + 1 + a * (ni - j))
                out = out * h if sign > 0 else out / h
    return out


@lru_cache(maxsize=32)
def _zonal_tables(k: int, m: int, degree: int):
    """Partitions κ with ≤ k parts and ``|κ| ≤ degree``, the horizontal strips κ/μ between them (rows, cols, β,
    ``|κ/μ|``), and ``log[(k/2)_κ/(m/2)_κ · α^{|κ|}/j_κ]`` (the coefficient of J_κ in ₁F₁(k/2; m/2; ·))."""
    parts = []

    def grow(prefix, largest, size):
        parts.append(tuple(prefix))
        if len(prefix) < k:
            for p in range(1, min(largest, degree - size) + 1):
                grow(prefix + [p], p, size + p)

    grow([], degree, 0)
    index = {p: n for n, p in enumerate(parts)}
    rows, cols, betas, degs = [], [], [], []
    for r, kap in enumerate(parts):
        kk = list(kap) + [0] * (k + 1 - len(kap))
        for mu in itertools.product(*[range(kk[i + 1], kk[i] + 1) for i in range(k)]):
            mu_t = tuple(x for x in mu if x > 0)
            rows.append(r)
            cols.append(index[mu_t])
            betas.append(_jack_beta(kap, mu_t))
            degs.append(sum(kap) - sum(mu_t))
    logw = np.zeros(len(parts))
    for r, kap in enumerate(parts):
        kc = _conjugate(kap, kap[0] if kap else 0)
        for i, ki in enumerate(kap, 1):
            for j in range(1, ki + 1):
                logw[r] += (math.log(k / 2 - (i - 1) / _ALPHA + j - 1) - math.log(m / 2 - (i - 1) / _ALPHA + j - 1)
                            + math.log(_ALPHA) - math.log(kc[j - 1] - i + _ALPHA * (ki - j + 1))
                            - math.log(kc[j - 1] - i + 1 + _ALPHA * (ki - j)))
    lengths = np.array([len(p) for p in parts])
    return np.array(rows), np.array(cols), np.array(betas), np.array(degs), lengths, np.exp(logw)


def zonal_degree(spread: float, m: int, k: int, tolerance: float = ZONAL_TOLERANCE):
    """The truncation degree N of the zonal series for eigenvalues of ``spread`` (max − min), or None beyond
    :data:`ZONAL_MAX_DEGREE`.

    Bound [D]: with the eigenvalues centred at their midrange (C_k(A + cI) = e^{kc} C_k(A)), ``|x_i| ≤ ρ`` = spread/2.
    Every term is ``(k/2)_κ/(m/2)_κ · C_κ(X)/|κ|!`` with 0 ≤ (k/2)_κ/(m/2)_κ ≤ 1 (κ with ≤ k parts; more parts
    give 0), ``|C_κ(X)| ≤ C_κ(ρI)`` (zonal polynomials have non-negative monomial coefficients) and
    ``Σ_{|κ|=n} C_κ(ρI) = (mρ)^n``: the terms of degree > N sum to at most e^{mρ} P(Poisson(mρ) > N). The series is
    ≥ e^{−kρ} (Jensen: C_k(X) ≥ exp(E tr VᵀXV) = exp(k tr X/m)), so the error of log C is at most
    ``e^{(m+k)ρ} P(Poisson(mρ) > N)`` (when that is < ½), which N makes ≤ ``tolerance``."""
    from scipy import stats

    rho = 0.5 * float(spread)
    if rho == 0.0:
        return 0
    for N in range(ZONAL_MAX_DEGREE + 1):
        if (m + k) * rho + float(stats.poisson.logsf(N, m * rho)) <= math.log(tolerance):
            return N
    return None


def _zonal(a: np.ndarray, k: int, grad: bool = False, degree: int | None = None):
    """log ₁F₁(k/2; m/2; diag(a)) by the truncated zonal-polynomial series (module docstring), and with ``grad``
    its derivative w.r.t. a (forward mode through the Jack recursion over variables)."""
    m = a.size
    mid = 0.5 * float(a.max() + a.min())
    x = a - mid
    N = zonal_degree(float(np.ptp(a)), m, k) if degree is None else int(degree)
    if N is None:
        raise InputError(f"the zonal series serves spreads whose bound needs degree <= {ZONAL_MAX_DEGREE} "
                         f"(spread {np.ptp(a):.3g} at m = {m}, k = {k})", "use method='nested' (or 'auto')")
    rows, cols, betas, degs, lengths, w = _zonal_tables(k, m, N)
    P = lengths.size
    J = np.zeros(P)
    J[0] = 1.0  # J_∅ = 1; J_κ(x_1..x_r) = Σ_μ J_μ(x_1..x_{r−1}) x_r^{|κ/μ|} β_κμ (Koev & Edelman 2006)
    dJ = np.zeros((m, P)) if grad else None
    for r in range(m):
        xr = x[r]
        pw = betas * xr ** degs
        Jn = np.bincount(rows, weights=J[cols] * pw, minlength=P)
        if grad:
            dn = np.stack([np.bincount(rows, weights=dJ[s, cols] * pw, minlength=P) for s in range(m)])
            with np.errstate(divide="ignore", invalid="ignore"):
                dpw = np.where(degs > 0, betas * degs * xr ** np.maximum(degs - 1, 0), 0.0)
            dn[r] += np.bincount(rows, weights=J[cols] * dpw, minlength=P)
            dn[:, lengths > r + 1] = 0.0
            dJ = dn
        Jn[lengths > r + 1] = 0.0
        J = Jn
    total = float(w @ J)
    logc = k * mid + math.log(total)
    if not grad:
        return logc, None
    g = (dJ @ w) / total
    return logc, g + (k - g.sum()) / m  # Σ g = k exactly (the shift); rounding spread evenly


# ---------------------------------------------------------------------------- Monte Carlo checks
def _macg_is(A: np.ndarray, k: int, draws: int, rng):
    """Importance sampling from the matrix angular central Gaussian law (module docstring): (log C, se of log C)."""
    a, U = np.linalg.eigh(A)
    a, U = a[::-1], U[:, ::-1]
    m = a.size
    om = 1.0 + 2.0 * (a[0] - a)
    out = []
    for start in range(0, int(draws), 50_000):
        b = min(50_000, int(draws) - start)
        V = np.linalg.qr(rng.standard_normal((b, m, k)) / np.sqrt(om)[None, :, None])[0]
        quad = np.einsum("bik,i,bik->b", V, a, V)
        M = np.einsum("bik,i,bil->bkl", V, om, V)
        out.append(quad - 0.5 * k * np.sum(np.log(om)) + 0.5 * m * np.linalg.slogdet(M)[1])
    return _log_mean_exp(np.concatenate(out))


def _uniform_mc(A: np.ndarray, k: int, draws: int, rng):
    """Plain Monte Carlo over Haar frames (QR of Gaussian matrices): (log C, standard error of log C)."""
    m = A.shape[0]
    out = []
    for start in range(0, int(draws), 100_000):
        b = min(100_000, int(draws) - start)
        Q = np.linalg.qr(rng.standard_normal((b, m, k)))[0]
        out.append(np.einsum("bik,ij,bjk->b", Q, A, Q))
    return _log_mean_exp(np.concatenate(out))


def _log_mean_exp(logw: np.ndarray) -> tuple[float, float]:
    top = float(np.max(logw))
    w = np.exp(logw - top)
    mean = float(w.mean())
    return top + math.log(mean), float(w.std(ddof=1) / math.sqrt(w.size) / mean)


# ---------------------------------------------------------------------------- public functions
def stiefel_log_constant(A, k: int, method: str = "auto", *, grad: bool = False, vector_method: str = "auto",
                         draws: int = 200_000, random_seed=None):
    """Log normalising constant of the matrix Bingham law on m × k frames,
    ``log E_U[etr(VᵀAV)] = log ₁F₁(k/2; m/2; A)``, U the Haar probability law on the Stiefel manifold.

    Parameters
    ----------
    A : ndarray, shape (m, m)
        Symmetric parameter (dimensionless).
    k : int
        Columns of the frame, 1 ≤ k ≤ m.
    method : {"auto", "zonal", "nested", "complement", "monte-carlo", "uniform-monte-carlo"}
        See the module docstring. ``"auto"``: k = 1 as :func:`~fdp_ppl.inference.bingham.bingham_log_constant`
        (exact series, or the saddlepoint beyond its spread); k ≥ m − 1 the exact complement identity; otherwise
        the zonal series where its bound reaches A's spread, else the nested approximation.
    grad : bool
        Also return the gradient w.r.t. A, ``E[VVᵀ]`` under the (approximated) law, shape (m, m), trace k.
        Not for the Monte Carlo methods.
    vector_method : {"auto", "series", "saddlepoint"}
        How the vector Bingham constants inside ``"nested"`` and ``"complement"`` are computed (``"auto"``: the
        exact series up to :data:`~fdp_ppl.inference.bingham.SERIES_MAX_SPREAD`); a sampler fixes it for its run.
    draws, random_seed
        Monte Carlo only.

    Returns
    -------
    float or (float, ndarray)
        log C; with ``grad``, (log C, gradient). The Monte Carlo methods return (log C, standard error of log C).

    Raises
    ------
    InputError
        A not finite and square, k outside [1, m], an unknown method, ``"complement"`` with k < m − 1,
        ``"zonal"`` beyond the spread its bound reaches, or grad
        with Monte Carlo.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.diag([10.0, 1.0, 0.0])
    >>> exact = stiefel_log_constant(A, 2, "complement")        # k = m - 1: exact
    >>> bool(abs(stiefel_log_constant(A, 2, "nested") - exact) < 0.02)
    True
    """
    A = _check_square(np.asarray(A, dtype=float))
    m = A.shape[0]
    k = int(k)
    if not 1 <= k <= m:
        raise InputError(f"k = {k} columns need 1 <= k <= m = {m}", "pass the frame's number of columns")
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}", f"choose one of {METHODS}")
    A = 0.5 * (A + A.T)
    if method in ("monte-carlo", "uniform-monte-carlo"):
        if grad:
            raise InputError("the Monte Carlo estimates have no gradient", "use method='nested' or 'auto'")
        rng = np.random.default_rng(random_seed)
        return _macg_is(A, k, draws, rng) if method == "monte-carlo" else _uniform_mc(A, k, draws, rng)
    if method == "auto":
        if k == 1:
            return bingham_log_constant(A, vector_method, grad=grad)
        spread = float(np.ptp(np.linalg.eigvalsh(A)))
        method = "complement" if k >= m - 1 else ("zonal" if zonal_degree(spread, m, k) is not None else "nested")
    if method == "zonal":
        w, Q = np.linalg.eigh(A)
        logc, g = _zonal(w, k, grad)
        return (logc, (Q * g) @ Q.T) if grad else logc
    if method == "complement":
        if k < m - 1:
            raise InputError(f"the complement identity is exact for k >= m - 1 only (k = {k}, m = {m})",
                             "use method='nested' (or 'auto')")
        trA = float(np.trace(A))
        if k == m:
            return (trA, np.eye(m)) if grad else trA
        vm = _vector_method(np.linalg.eigvalsh(A), vector_method)
        if not grad:
            return trA + bingham_log_constant(-A, vm)
        lc, ex = bingham_log_constant(-A, vm, grad=True)
        return trA + lc, np.eye(m) - ex
    w, Q = np.linalg.eigh(A)
    logc, g = _nested(w[::-1], k, grad, vector_method)
    if not grad:
        return logc
    return logc, (Q[:, ::-1] * g) @ Q[:, ::-1].T


def sequential_log_constant(frame, A, weights=None, method: str = "auto", *, grad: bool = False):
    """Log normaliser of the sequential (deflation) Bingham law at a frame: ``Σ_i log c_i``,
    ``c_i = ₁F₁(½; (m−i+1)/2; w_i P_iᵀAP_i)`` with P_i an orthonormal basis of the complement of the frame's
    first i − 1 columns (exact series or saddlepoint, :func:`~fdp_ppl.inference.bingham.bingham_log_constant`).

    The density of the frame is ``Π_i exp(w_i v_iᵀAv_i)/c_i`` w.r.t. the Haar law on frames (each column uniform on
    its complement sphere), so the log-likelihood is ``Σ_i w_i v_iᵀAv_i`` minus this.

    Parameters
    ----------
    frame : ndarray, shape (m, k)
        Orthonormal frame, columns in the order drawn.
    A : ndarray, shape (m, m)
    weights : ndarray, shape (k,), optional
        w_i, the step's scale over the reference scale (default all 1).
    method : {"auto", "series", "saddlepoint"}
    grad : bool
        Also the gradient w.r.t. A: ``Σ_i w_i P_i E[uuᵀ] P_iᵀ`` (m, m).

    Returns
    -------
    float or (float, ndarray)
    """
    V = np.asarray(frame, dtype=float)
    A = np.asarray(A, dtype=float)
    m, k = V.shape
    w = np.ones(k) if weights is None else np.asarray(weights, dtype=float)
    total, gmat = 0.0, np.zeros((m, m))
    for i in range(k):
        P = _complement(V[:, :i])
        Ai = w[i] * (P.T @ A @ P)
        if grad:
            lc, ex = bingham_log_constant(Ai, method, grad=True)
            gmat += w[i] * (P @ ex @ P.T)
        else:
            lc = bingham_log_constant(Ai, method)
        total += lc
    return (total, gmat) if grad else total


# ---------------------------------------------------------------------------- PyTensor Ops
_OPS: dict = {}


def _ops():
    if _OPS:
        return _OPS
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class StiefelLogConstant(Op):
        """``log C_k(A)`` of :func:`stiefel_log_constant` as a PyTensor Op (output 0) with its gradient (output 1)."""

        __props__ = ("k", "method", "vector_method")

        def __init__(self, k: int, method: str, vector_method: str):
            self.k, self.method, self.vector_method = int(k), method, vector_method

        def make_node(self, A):
            A = pt.as_tensor_variable(A)
            return Apply(self, [A], [pt.dscalar(), pt.dmatrix()])

        def perform(self, node, inputs, outputs):
            logc, g = stiefel_log_constant(inputs[0], self.k, self.method, grad=True,
                                           vector_method=self.vector_method)
            outputs[0][0] = np.asarray(logc, dtype=float)
            outputs[1][0] = np.asarray(g, dtype=float)

        def pullback(self, inputs, outputs, cotangents):
            return [cotangents[0] * outputs[1]]

    class SequentialLogConstant(Op):
        """``Σ_f`` :func:`sequential_log_constant` of the frames (F, m, k) with step weights (k,), as a function of
        A (output 0), with its gradient (output 1). Frames and weights are inputs (public data, no gradient)."""

        __props__ = ("method",)

        def __init__(self, method: str):
            self.method = method

        def make_node(self, A, frames, weights):
            A, frames, weights = (pt.as_tensor_variable(x) for x in (A, frames, weights))
            return Apply(self, [A, frames, weights], [pt.dscalar(), pt.dmatrix()])

        def perform(self, node, inputs, outputs):
            A, frames, weights = inputs
            tot, g = 0.0, np.zeros_like(A)
            for V in frames:
                lc, gi = sequential_log_constant(V, A, weights, self.method, grad=True)
                tot += lc
                g += gi
            outputs[0][0] = np.asarray(tot, dtype=float)
            outputs[1][0] = g

        def pullback(self, inputs, outputs, cotangents):
            from pytensor.gradient import grad_undefined

            return [cotangents[0] * outputs[1], grad_undefined(self, 1, inputs[1]),
                    grad_undefined(self, 2, inputs[2])]

    _OPS.update(stiefel=StiefelLogConstant, sequential=SequentialLogConstant)
    return _OPS


def stiefel_log_constant_op(k: int, method: str, vector_method: str = "series"):
    """PyTensor Op: A (m, m) ↦ (log C_k(A), E[VVᵀ]) by ``method`` ("zonal", "nested" or "complement"; k = 1 with
    "series" or "saddlepoint":
    :func:`~fdp_ppl.inference.bingham.bingham_log_constant_op`)."""
    if int(k) == 1 and method in ("series", "saddlepoint"):
        from .bingham import bingham_log_constant_op

        return bingham_log_constant_op(method)
    return _ops()["stiefel"](k, method, vector_method)


def sequential_log_constant_op(method: str):
    """PyTensor Op: (A (m, m), frames (F, m, k), weights (k,)) ↦ (Σ_f log normaliser, gradient w.r.t. A) of the
    sequential Bingham law (:func:`sequential_log_constant`); ``method`` "series" or "saddlepoint"."""
    return _ops()["sequential"](method)


__all__ = ["stiefel_log_constant", "sequential_log_constant", "stiefel_log_constant_op", "sequential_log_constant_op",
           "zonal_degree", "NESTED_TOLERANCE", "ZONAL_TOLERANCE", "ZONAL_MAX_DEGREE", "METHODS"]
