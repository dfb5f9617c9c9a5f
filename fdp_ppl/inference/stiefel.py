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
"""

from __future__ import annotations

import math

import numpy as np
from ..errors import InputError
from ..fpca.samplers import _complement
from ..fpca.bingham import SERIES_MAX_SPREAD, _check_square, bingham_log_constant

METHODS = ("auto", "nested", "complement", "monte-carlo", "uniform-monte-carlo")
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
    method : {"auto", "nested", "complement", "monte-carlo", "uniform-monte-carlo"}
        See the module docstring. ``"auto"``: k = 1 as :func:`~fdp_ppl.inference.bingham.bingham_log_constant`
        (exact series, or the saddlepoint beyond its spread); k ≥ m − 1 the exact complement identity; otherwise
        the nested approximation.
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
        A not finite and square, k outside [1, m], an unknown method, ``"complement"`` with k < m − 1, or grad
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
        method = "complement" if k >= m - 1 else "nested"
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
    """PyTensor Op: A (m, m) ↦ (log C_k(A), E[VVᵀ]) by ``method`` ("nested" or "complement"; k = 1 with
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
           "NESTED_TOLERANCE", "METHODS"]
