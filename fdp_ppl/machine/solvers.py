"""Regularised empirical risk minimisation in an RKHS, run for a public number of iterations.

Problem (Hall, Rinaldo & Wasserman 2013, eq. 11; Lin & Reimherr 2026, eq. 13 with the
squared penalty of ``specs/iclp.md`` §2.4)::

    f_D = argmin_{g in H}  P(g) = (1/n) Σ_i ℓ(g(x_i), y_i) + λ ‖g‖²_H .

By the representer theorem ``f_D = Σ_i c_i K(x_i, ·)``, so everything here works on
the n × n Gram matrix ``K = [K(x_i, x_j)]`` (or on features ``Z`` with ``K = Z Zᵀ``) and
returns the coefficients ``c`` (n,). No unpenalised intercept is fitted (it is outside
the sensitivity bound).

No timing channel (DESIGN invariant 9). The number of iterations ``T`` is a function of
public quantities only (the loss, λ, ``κ = √sup K(x, x)``, ``sup_y ℓ(0, y)`` and the
accuracy ``ρ`` the sensitivity pays for: :func:`iteration_count`), every iteration does the
same arithmetic (one product with ``K``, a few vector operations; no early stop, no working
set, no data-dependent branch), values that could become subnormal are set to 0
(:func:`fdp_ppl.io.lattice.flush_tiny`), and nothing can fail. The optimisation error the
``T`` iterations can leave is bounded *a priori*, for every dataset, by ``ρ``
(:func:`error_bound`), and the release adds ``2ρ`` to the sensitivity (the fitted functions
of two neighbouring datasets are each within ``ρ`` of their exact minimisers, whose distance
is at most ``Δ_0``; :mod:`fdp_ppl.machine.machine`). The observed certificate is computed for
the data holder only and never decides anything.

Derivations [D] (exact arithmetic; ``μ = 2λ`` is the strong-convexity modulus of ``P`` in ``H``):

* **Smooth losses** (squared ``ℓ'' = 2``, logistic ``ℓ'' <= 1/4``, Huber hinge ``ℓ'' <= 1/(2h)``; write
  ``β = sup ℓ''``).
  ``∇_H P(g) = Σ_i r_i K(x_i, ·)`` with ``r = ℓ'(Kc, y)/n + 2λc``; the Hessian of ``P`` is
  ``(1/n) Σ_i ℓ''_i K_{x_i} ⊗ K_{x_i} + 2λ I``, of norm at most ``L = 2λ + β λ_max(K)/n <=
  2λ + β κ²``. Nesterov's accelerated gradient method for a μ-strongly convex, L-smooth
  function (Bubeck 2015, *Convex Optimization: Algorithms and Complexity*, §3.7.1 and
  Theorem 3.18), started at ``g_1 = 0``, gives ``P(g_t) − P(f_D) <= (μ + L)/2 ‖f_D‖²_H
  exp(−(t − 1)/√Q)``, ``Q = L/μ``. Strong convexity gives ``‖g − f_D‖²_H <= (2/μ)(P(g) −
  P(f_D))`` and ``λ‖f_D‖²_H <= P(f_D) <= P(0) <= ℓ_0 = sup_y ℓ(0, y)``, so after ``T = t − 1``
  gradient steps ``‖g_T − f_D‖²_H <= (1 + Q) (ℓ_0/λ) exp(−T/√Q)``. ``T`` is the smallest
  integer making this ``<= ρ²`` with the public ``Q = 1 + β κ²/(2λ)``. The iteration uses the
  (data-dependent, fixed-cost) Gershgorin bound ``L' = 2λ + β min(κ², max_i Σ_j |K_ij| / n)``,
  a valid smoothness constant no larger than the public one; the bound is increasing in
  ``Q``, so it only improves.
* **Hinge loss.** The dual in the standard scaling ``½‖g‖² + C Σ hinge = P/(2λ)``,
  ``C = 1/(2λn)``, is ``min_a F(a) = ½ aᵀQa − Σ a`` over ``0 <= a_i <= C``, ``Q = (y yᵀ) ∘
  K``, with ``g(a) = Σ_i a_i y_i K(x_i, ·)`` and ``g(a*) = f_D``. For any feasible ``a``,
  ``F(a) − F(a*) = ∇F(a*)ᵀ(a − a*) + ½ (a − a*)ᵀQ(a − a*) >= ½ ‖g(a) − f_D‖²_H`` (the first
  term is ``>= 0`` at a minimiser over the box). FISTA (Beck & Teboulle 2009, *SIAM J.
  Imaging Sci.* 2(1), Theorem 4.4) with a step ``1/L'``, ``L' >= λ_max(Q)``, started at
  ``a_0 = C/2`` (so ``‖a_0 − a*‖² <= n C²/4``) gives ``F(a_T) − F(a*) <= 2 L' ‖a_0 − a*‖²/(T + 1)²``;
  with ``L' <= n κ²`` (Gershgorin, capped at the public value): ``‖g(a_T) − f_D‖_H <= n κ C/(T + 1)
  = κ/(2λ(T + 1))``. So ``T = ⌈κ/(2λρ)⌉ − 1`` iterations; with ``ρ = s Δ_0/2`` and
  ``Δ_0 = κ/(λn)`` (M = 1) that is ``T = ⌈n/s⌉ − 1``: linear in n, the price of a non-smooth
  loss (first-order methods cannot beat ``1/T`` here).

Rounding: the bounds are for exact arithmetic; the ``T`` fixed steps are each a product with
``K`` and a projection or a convex combination, whose rounding error (relative ``~n 2^-53`` per
step, not amplified by a contraction) is many orders of magnitude below ``ρ`` for every size
:meth:`~fdp_ppl.machine.ERMSpec.check_size` accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._numba import HAVE_NUMBA, njit
from ..errors import InputError
from ..io.lattice import TINY, flush_tiny

LOSSES = ("hinge", "huber", "logistic", "squared")
#: half-width ``h`` of the quadratic piece of the Huber hinge (Chaudhuri, Monteleoni & Sarwate 2011, §3.4.2, whose
#: experiments use h = 0.5): ``ℓ(z) = 0`` for ``z > 1 + h``, ``(1 + h − z)²/(4h)`` for ``|1 − z| <= h``, ``1 − z``
#: below, of the margin ``z = y g``; 1-Lipschitz like the hinge (the same M = 1), smooth with ``ℓ'' <= 1/(2h)``
HUBER_WIDTH = 0.5
#: the compiled dense hinge loop up to this n (above it the BLAS product of NumPy is faster)
DENSE_COMPILED_MAX_N = 100
#: ``sup ℓ''`` of the smooth losses (the curvature constant β of the module docstring)
CURVATURE = {"squared": 2.0, "logistic": 0.25, "huber": 1.0 / (2.0 * HUBER_WIDTH)}


@dataclass(frozen=True)
class Solution:
    """Fitted representer coefficients and their accuracy (data holder only).

    Attributes
    ----------
    coefficients : ndarray, shape (n,)
        ``c`` in ``g = Σ_i c_i K(x_i, ·)``.
    certificate : float
        Observed a-posteriori bound on ``‖g − f_D‖_H`` (duality gap or gradient norm; data
        dependent: never released, never used to decide anything).
    iterations : int
        Iterations run: the public :func:`iteration_count`.
    bound : float
        The a-priori bound :func:`error_bound` on ``‖g − f_D‖_H`` after ``iterations`` (public).
    """

    coefficients: np.ndarray
    certificate: float
    iterations: int
    bound: float = float("nan")


def loss_derivative(loss: str, g, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loss ``ℓ(g, y)``, ``∂ℓ/∂g`` and ``∂²ℓ/∂g²`` elementwise (smooth losses).

    ``squared``: ``(y − g)²``; ``logistic``: ``log(1 + exp(−y g))``; ``huber``: the Huber hinge of the margin
    ``y g`` (:data:`HUBER_WIDTH`) (``y ∈ {±1}`` for the last two).

    Raises
    ------
    InputError
        A loss without second derivative (hinge) or an unknown name.
    """
    g = np.asarray(g, dtype=float)
    if loss == "squared":
        return (y - g) ** 2, 2.0 * (g - y), np.full_like(g, 2.0)
    if loss == "logistic":
        m = y * g
        p = special.expit(-m)  # σ(−y g)
        return np.logaddexp(0.0, -m), -y * p, p * (1.0 - p)
    if loss == "huber":
        h = HUBER_WIDTH
        u = np.clip(1.0 + h - y * g, 0.0, 2.0 * h)  # the quadratic piece's argument, capped where it turns linear
        value = np.where(1.0 + h - y * g > 2.0 * h, 1.0 - y * g, u * u / (4.0 * h))
        inside = (u > 0.0) & (u < 2.0 * h)
        return value, -y * u / (2.0 * h), np.where(inside, 1.0 / (2.0 * h), 0.0)
    raise InputError(f"no smooth derivative for loss {loss!r}", f"use one of {LOSSES}")


def hinge_gap(a, Q, C: float) -> float:
    """Duality gap ``Σ_i [C (1 − (Qa)_i)_+ − a_i (1 − (Qa)_i)]`` of the hinge dual (standard scaling)."""
    m = 1.0 - Q @ a
    return float(np.sum(C * np.maximum(m, 0.0) - a * m))


def _check_public(loss, lam, kappa, rho_target, loss_at_zero):
    if loss not in LOSSES:
        raise InputError(f"unknown loss {loss!r}", f"use one of {LOSSES}")
    for name, v in (("lam", lam), ("kappa", kappa), ("rho_target", rho_target)):
        if not (math.isfinite(float(v)) and float(v) > 0):
            raise InputError(f"{name} must be finite and > 0 (got {v})", "pass the spec's public value")
    if loss != "hinge" and not (math.isfinite(float(loss_at_zero)) and float(loss_at_zero) > 0):
        raise InputError(f"loss_at_zero must be finite and > 0 (got {loss_at_zero})",
                         "pass sup_y loss(0, y): logistic log 2, squared B^2")


def condition_number(loss: str, lam: float, kappa: float) -> float:
    """Public ``Q = L/μ = 1 + β κ²/(2λ)`` of a smooth loss (module docstring)."""
    return 1.0 + CURVATURE[loss] * float(kappa) ** 2 / (2.0 * float(lam))


def error_bound(loss: str, iterations: int, *, lam: float, kappa: float, loss_at_zero: float = 1.0) -> float:
    """A-priori bound on ``‖g_T − f_D‖_H`` after ``T = iterations`` of :func:`solve_erm`, for every dataset.

    Hinge: ``κ/(2λ(T + 1))`` (FISTA on the dual); smooth losses:
    ``√((1 + Q) ℓ_0/λ) exp(−T/(2√Q))`` (accelerated gradient), ``Q`` from :func:`condition_number`,
    ``ℓ_0 = sup_y ℓ(0, y)``. Derivations [D] in the module docstring.

    Examples
    --------
    >>> round(error_bound("hinge", 99, lam=0.1, kappa=1.0), 6)
    0.05
    """
    T = int(iterations)
    if loss == "hinge":
        return float(kappa) / (2.0 * float(lam) * (T + 1))
    Q = condition_number(loss, lam, kappa)
    return float(math.sqrt((1.0 + Q) * float(loss_at_zero) / float(lam)) * math.exp(-T / (2.0 * math.sqrt(Q))))


def iteration_count(loss: str, *, lam: float, kappa: float, rho_target: float, loss_at_zero: float = 1.0) -> int:
    """Public number of iterations after which :func:`error_bound` is ``<= rho_target`` (module docstring).

    Depends on the loss, λ, κ, ``ρ`` and ``ℓ_0`` only: never on the records.

    Returns
    -------
    int
        Hinge: ``max(1, ⌈κ/(2λρ)⌉ − 1)``; smooth losses: ``max(1, ⌈√Q log((1 + Q) ℓ_0/(λ ρ²))⌉)``.

    Raises
    ------
    InputError
        An unknown loss or a non-positive public quantity.

    Examples
    --------
    >>> iteration_count("hinge", lam=0.1, kappa=1.0, rho_target=0.05)
    99
    """
    _check_public(loss, lam, kappa, rho_target, loss_at_zero)
    lam, kappa, rho = float(lam), float(kappa), float(rho_target)
    if loss == "hinge":
        T = max(1, math.ceil(kappa / (2.0 * lam * rho)) - 1)
    else:
        Q = condition_number(loss, lam, kappa)
        T = max(1, math.ceil(math.sqrt(Q) * math.log(max((1.0 + Q) * float(loss_at_zero) / (lam * rho**2), 1.0))))
    # guard against rounding in the closed forms: the bound must hold at the returned count
    while error_bound(loss, T, lam=lam, kappa=kappa, loss_at_zero=loss_at_zero) > rho:
        T += 1
    return int(T)


class _Gram:
    """``K`` (n, n) as an operator: ``K v`` and a fixed-cost upper bound on ``λ_max(K)``."""

    def __init__(self, K):
        self.K = np.ascontiguousarray(K, dtype=float)
        self.n = self.K.shape[0]

    def matvec(self, v):
        return self.K @ v

    def lmax(self) -> float:  # Gershgorin: λ_max(K) <= max_i Σ_j |K_ij|
        return float(np.max(np.sum(np.abs(self.K), axis=1)))


class _Features:
    """``K = Z Zᵀ`` from features ``Z`` (n, r), never formed."""

    def __init__(self, Z):
        self.Z = np.ascontiguousarray(Z, dtype=float)
        self.n = self.Z.shape[0]

    def matvec(self, v):
        return self.Z @ (self.Z.T @ v)

    def lmax(self) -> float:  # λ_max(Z Zᵀ) = λ_max(Zᵀ Z) <= Gershgorin of the r × r matrix
        return float(np.max(np.sum(np.abs(self.Z.T @ self.Z), axis=1)))


@njit(cache=True, nogil=True)
def _fista_dense(K, y, C, L, T, tiny):  # pragma: no cover - compiled
    """:func:`_hinge_fista` on a dense Gram matrix, compiled: the same arithmetic, in loops without branches on
    the data (clipping and flushing are selections), ``T`` iterations of ``n²`` multiply-adds."""
    n = y.size
    x = np.full(n, 0.5 * C)
    z = x.copy()
    yz = np.empty(n)
    new = np.empty(n)
    t = 1.0
    for _ in range(T):
        for j in range(n):
            yz[j] = y[j] * z[j]
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += K[i, j] * yz[j]
            v = z[i] - (y[i] * s - 1.0) / L
            v = min(max(v, 0.0), C)
            new[i] = v if abs(v) >= tiny else 0.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        m = (t - 1.0) / t_new
        for i in range(n):
            v = new[i] + m * (new[i] - x[i])
            z[i] = v if abs(v) >= tiny else 0.0
            x[i] = new[i]
        t = t_new
    return x


def _hinge_fista(op, y, lam, kappa, T):
    """FISTA on the hinge dual for exactly ``T`` iterations (module docstring); returns ``(a, gap)``."""
    n = y.size
    C = 1.0 / (2.0 * lam * n)
    L = min(op.lmax(), n * kappa**2)  # a step no smaller than the public 1/(n κ²)
    L = n * kappa**2 if not L > 0 else L
    if isinstance(op, _Gram) and HAVE_NUMBA and n <= DENSE_COMPILED_MAX_N:
        x = _fista_dense(op.K, np.ascontiguousarray(y), C, L, int(T), TINY * C)
        slack = 1.0 - y * op.matvec(y * x)
        return x, max(float(np.sum(C * np.maximum(slack, 0.0) - x * slack)), 0.0)
    x = np.full(n, 0.5 * C)
    z = x.copy()
    t = 1.0
    for _ in range(T):
        grad = y * op.matvec(y * z) - 1.0  # ∇F(z) = Qz − 1
        new = np.clip(z - grad / L, 0.0, C)
        flush_tiny(new, C, out=new)
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        z = new + ((t - 1.0) / t_new) * (new - x)
        flush_tiny(z, C, out=z)
        x, t = new, t_new
    slack = 1.0 - y * op.matvec(y * x)
    gap = max(float(np.sum(C * np.maximum(slack, 0.0) - x * slack)), 0.0)
    return x, gap


def _gradient_terms(loss, g, y):
    """``∂ℓ/∂g`` at ``g`` (n,) with no subnormal intermediate: the logistic margin is clamped to ±700 (where
    ``σ(−m)`` is ``e^-700 ≈ 1e-304``, still normal, and then flushed to 0; the change is below 1e-121)."""
    if loss == "squared":
        return 2.0 * (g - y)
    if loss == "huber":  # -y min(max((1 + h - y g)/(2h), 0), 1): no intermediate below ulp(1 + h), no branch
        return -y * np.clip((1.0 + HUBER_WIDTH - y * g) / (2.0 * HUBER_WIDTH), 0.0, 1.0)
    p = special.expit(-np.clip(y * g, -700.0, 700.0))
    return -y * flush_tiny(p, out=p)


def _smooth_agd(op, y, lam, kappa, loss, T):
    """Nesterov's accelerated gradient in H for exactly ``T`` steps (module docstring); returns ``(c, ‖∇‖/2λ)``."""
    n = y.size
    beta = CURVATURE[loss]
    L = 2.0 * lam + beta * min(kappa**2, op.lmax() / n)
    Q = L / (2.0 * lam)
    gamma = (math.sqrt(Q) - 1.0) / (math.sqrt(Q) + 1.0)
    x = np.zeros(n)
    prev = np.zeros(n)
    scale = 1.0 / (lam * n)  # public size of the coefficients (|c_i| <= M/(2λn) at the optimum)
    for _ in range(T):
        d1 = _gradient_terms(loss, op.matvec(x), y)
        new = x - (d1 / n + 2.0 * lam * x) / L
        flush_tiny(new, scale, out=new)
        x = (1.0 + gamma) * new - gamma * prev
        flush_tiny(x, scale, out=x)
        prev = new
    d1 = _gradient_terms(loss, op.matvec(prev), y)
    r = d1 / n + 2.0 * lam * prev
    cert = float(np.sqrt(max(r @ op.matvec(r), 0.0))) / (2.0 * lam)
    return prev, cert


#: bytes of feature rows a fused gradient pass takes at a time (one block of ``Z`` stays in cache for ``Z w`` and
#: ``Zᵀ ℓ'``, so each iteration reads ``Z`` once from memory instead of twice)
FUSED_BLOCK_BYTES = 4 * 2**20


def _features_gradient(Z, w, y, loss) -> np.ndarray:
    """``Zᵀ ℓ'(Z w, y)`` (r,) in one pass over the rows of ``Z`` (n, r), by blocks of :data:`FUSED_BLOCK_BYTES`:
    the loss derivative of a record needs only its own margin, so each block's product and transposed product are
    done while the block is in cache. Fixed cost: the same blocks and arithmetic for every dataset."""
    n, r = Z.shape
    step = max(64, FUSED_BLOCK_BYTES // (8 * max(r, 1)))
    out = np.zeros(r)
    for s in range(0, n, step):
        blk = Z[s:s + step]
        out += _gradient_terms(loss, blk @ w, y[s:s + step]) @ blk
    return out


def _smooth_agd_features(Z, y, lam, kappa, loss, T):
    """:func:`_smooth_agd` on ``K = Z Zᵀ`` run on ``w = Zᵀ c`` (r,) instead of ``c`` (n,).

    The same iterates mapped by ``Zᵀ`` (a linear map commuting with every step: ``Zᵀ(x − (ℓ'/n + 2λx)/L) = w −
    (Zᵀℓ'/n + 2λw)/L`` and the momentum combination), so the same a-priori bound on ``‖g_T − f_D‖_H = ‖w_T − w*‖``
    after the same public ``T``; each step is one fused pass over ``Z`` (:func:`_features_gradient`) where the
    representer form takes two. Returns ``(w, certificate)``, the certificate ``‖∇‖/(2λ)`` as there."""
    n = y.size
    beta = CURVATURE[loss]
    L = 2.0 * lam + beta * min(kappa**2, _Features(Z).lmax() / n)
    Q = L / (2.0 * lam)
    gamma = (math.sqrt(Q) - 1.0) / (math.sqrt(Q) + 1.0)
    r = Z.shape[1]
    x = np.zeros(r)
    prev = np.zeros(r)
    scale = kappa / lam  # public size of w = Zᵀ c (|c_i| <= 1/(λn), ‖z_i‖ <= κ)
    for _ in range(T):
        new = x - (_features_gradient(Z, x, y, loss) / n + 2.0 * lam * x) / L
        flush_tiny(new, scale, out=new)
        x = (1.0 + gamma) * new - gamma * prev
        flush_tiny(x, scale, out=x)
        prev = new
    grad = _features_gradient(Z, prev, y, loss) / n + 2.0 * lam * prev
    return prev, float(np.sqrt(grad @ grad)) / (2.0 * lam)


def solve_erm(gram, y, *, loss: str, lam: float, rho_target: float, kappa: float, loss_at_zero: float | None = None,
              features=None, primal: bool = False) -> Solution:
    """Minimise ``(1/n) Σ ℓ(g(x_i), y_i) + λ‖g‖²_H`` over ``g = Σ c_i K(x_i, ·)`` for a public number of iterations.

    Parameters
    ----------
    gram : ndarray, shape (n, n) or None
        ``K(x_i, x_j)`` (positive semi-definite); None with ``features``.
    y : ndarray, shape (n,)
        Labels (±1 for hinge and logistic; real, clipped to ``[−B, B]``, for squared).
    loss : {"hinge", "huber", "logistic", "squared"}
        Hinge: FISTA on the dual box QP; Huber hinge, logistic and squared: Nesterov's accelerated
        gradient in the RKHS (module docstring).
    lam : float
        λ > 0.
    rho_target : float
        Public accuracy ``ρ``: the a-priori bound on ``‖g − f_D‖_H`` the iteration count guarantees.
    kappa : float
        Public ``√sup_x K(x, x)`` (never computed from the records).
    loss_at_zero : float, optional
        Public ``sup_y ℓ(0, y)``: 1 (hinge, Huber hinge), ``log 2`` (logistic, default), ``B²`` (squared,
        required).
    features : ndarray, shape (n, r), optional
        Features with ``K = Z Zᵀ`` (Nyström); the coefficients are then on the records and the
        function is ``w = Zᵀ c`` in feature space.
    primal : bool
        With ``features`` and a smooth loss: iterate on ``w = Zᵀ c`` (r,) and return it as ``coefficients``
        (the same iterates, one pass over ``Z`` per step instead of two; :func:`_smooth_agd_features`).

    Returns
    -------
    Solution
        ``iterations`` = :func:`iteration_count` (public), ``bound`` = :func:`error_bound` at it
        (``<= rho_target``), ``certificate`` observed (data holder only).

    Raises
    ------
    InputError
        Unknown loss, a non-positive public quantity, or a squared loss without ``loss_at_zero``.
        Never for the data's sake: the solver cannot fail.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 6)
    >>> from fdp_ppl.spaces import Gaussian
    >>> K = Gaussian(0.3, convention="hall").gram(x)
    >>> y = np.where(x < 0.5, -1.0, 1.0)
    >>> a = solve_erm(K, y, loss="hinge", lam=0.5, rho_target=0.05, kappa=1.0)
    >>> b = solve_erm(K, -y, loss="hinge", lam=0.5, rho_target=0.05, kappa=1.0)
    >>> a.iterations == b.iterations == 19, a.bound <= 0.05
    (True, True)
    """
    if loss == "squared" and loss_at_zero is None:
        raise InputError("the squared loss needs loss_at_zero = B^2 (labels clipped to [-B, B])",
                         "pass loss_at_zero=label_bound**2")
    l0 = {"hinge": 1.0, "huber": 1.0, "logistic": math.log(2.0)}.get(loss, 0.0) if loss_at_zero is None else float(loss_at_zero)
    T = iteration_count(loss, lam=lam, kappa=kappa, rho_target=rho_target, loss_at_zero=l0)
    y = np.asarray(y, dtype=float).reshape(-1)
    op = _Features(features) if features is not None else _Gram(gram)
    if op.n != y.size:
        raise InputError(f"{op.n} records but {y.size} labels", "pass one label per record")
    lam, kappa = float(lam), float(kappa)
    if loss == "hinge":
        a, gap = _hinge_fista(op, y, lam, kappa, T)
        coef, cert = a * y, float(np.sqrt(2.0 * gap))
    else:
        coef, cert = (_smooth_agd_features(op.Z, y, lam, kappa, loss, T) if primal and features is not None
                      else _smooth_agd(op, y, lam, kappa, loss, T))
    return Solution(coef, cert, T, error_bound(loss, T, lam=lam, kappa=kappa, loss_at_zero=l0))


__all__ = ["CURVATURE", "LOSSES", "Solution", "condition_number", "error_bound", "hinge_gap", "iteration_count",
           "loss_derivative", "solve_erm"]
