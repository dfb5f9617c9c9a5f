"""Noise-aware inference for ε-DP principal components (exponential mechanism; Awan, Kenney, Reimherr &
Slavković 2019).

A ``fdp-ppl fpca`` release (kind :data:`fdp_ppl.schema.EXPMECH_FPCA`) of the Bingham form with k = 1 is a
unit vector v (basis coordinates, m entries) drawn from

    p(v | G) = exp(vᵀ A v) / C(A),   A = s (G − Σ⁻¹),   s = ε / (2Δ),

with respect to the uniform law on the sphere S^{m−1} (spec ``expmech-fpca.md`` §2.2; the paper's Sec. 5
density). G = XᵀX is the data's uncentred scatter matrix of clipped, τ-scaled coefficients, Σ the public
base covariance. The normaliser is a hypergeometric function of matrix argument,

    C(A) = E_U[exp(xᵀAx)] = ₁F₁(1/2; m/2; A)

(Kume & Wood 2005, eq. 2; Chikuse 2003, App. A). This module computes log C accurately and its gradient
E[x xᵀ] (Bingham mean of x xᵀ), wraps it as a PyTensor Op, and samples the posterior of G given the
released frames with PyMC.

Normalising constant (:func:`bingham_log_constant`, ``method=``):

* ``"series"`` — exact. With a_i the eigenvalues of A shifted so the smallest is 0 (C(A + cI) = e^c C(A)),
  ``₁F₁(1/2; m/2; a) = Σ_N c_N / (m/2)_N`` where c_N is the z^N coefficient of ``Π_i (1 − a_i z)^{−1/2}``
  (expand each factor's binomial series; the multi-index series of Muirhead 1982, Thm 7.3.3 grouped by
  total degree). Every term is positive, so the sum has no cancellation; its cost grows like
  (largest shifted eigenvalue)², so it is used up to :data:`SERIES_MAX_SPREAD`.
* ``"saddlepoint"`` — the second-order saddlepoint approximation of Kume & Wood (2005, §3, ĉ₃): exact
  tails aside, relative error typically below 1 % (checked against the series in the tests).
* ``"monte-carlo"`` — importance sampling from the ACG envelope of Kent et al. (2018) (tests only).
* ``"auto"`` — series while the spread of the eigenvalues is at most :data:`SERIES_MAX_SPREAD`, else the
  saddlepoint (recorded in the result's attrs).

k > 1 (a matrix Bingham on the Stiefel manifold, ₁F₁(k/2; m/2; A) of a matrix argument with k columns)
and the GP-base form (a normaliser that is not a hypergeometric function) are refused with an
:class:`~fdp_ppl.errors.InputError`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special

from .. import dims
from .. import schema as S
from ..errors import InputError

#: largest spread max(a) − min(a) of the shifted eigenvalues served by the exact series (its cost is quadratic in
#: the spread: about 20 ms at 2000); larger spreads use the saddlepoint approximation
SERIES_MAX_SPREAD = 4000.0
#: the series stops once its terms fall below exp(−TAIL_NATS) times the running sum (and decrease)
TAIL_NATS = 42.0
METHODS = ("auto", "series", "saddlepoint", "monte-carlo")
#: name of the observed frames' dimension (one entry per released frame)
RELEASE_DRAW = "release_draw"
#: name of the dimension of the m eigenvalues of the second-moment operator
EIGEN = "eigen"


# ---------------------------------------------------------------------------- normalising constant, k = 1
def _eigenvalues(A) -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim == 1:
        return A.copy()
    if A.ndim != 2 or A.shape[0] != A.shape[1] or not np.all(np.isfinite(A)):
        raise InputError(f"the Bingham parameter must be a finite square matrix, got shape {A.shape}",
                         "pass a symmetric (m, m) matrix or its eigenvalues")
    return np.linalg.eigvalsh(0.5 * (A + A.T))


def _series(a: np.ndarray, grad: bool):
    """log ₁F₁(1/2; p/2; a) by the positive series (module docstring); with ``grad`` also E[x_i²] (p,).

    ``a`` is shifted internally; returns (log C, E[x²] or None)."""
    a = np.asarray(a, dtype=float)
    p = a.size
    lo = float(a.min())
    ap = a - lo
    M = float(ap.max())
    if p == 1 or M == 0.0:
        return lo, (np.full(p, 1.0 / p) if grad else None)
    if M > SERIES_MAX_SPREAD:
        raise InputError(f"the exact series serves eigenvalue spreads up to {SERIES_MAX_SPREAD:g} (got {M:.4g})",
                         "use method='saddlepoint' (or 'auto')")
    alpha = ap / M  # in [0, 1]
    n_max = int(M + 12.0 * math.sqrt(M) + 60.0)
    # power sums P_k = Σ α_i^k and the exponential recurrence γ_N = (1/N) Σ_k (P_k/2) γ_{N-k}:
    # γ_N = [z^N] Π (1 − α_i z)^{-1/2}, so c_N = M^N γ_N
    powers = np.cumprod(np.broadcast_to(alpha, (n_max, p)), axis=0).sum(axis=1) / 2.0  # P_k/2, k = 1..n_max
    gam = np.empty(n_max + 1)
    gam[0] = 1.0
    log_poch = special.gammaln(p / 2.0 + np.arange(n_max + 1)) - special.gammaln(p / 2.0)
    logM = math.log(M)
    log_terms = np.full(n_max + 1, -np.inf)
    log_terms[0] = 0.0
    run = 0.0  # log of the running sum
    stop = n_max
    for N in range(1, n_max + 1):
        gam[N] = np.dot(powers[:N], gam[N - 1::-1]) / N
        lt = math.log(gam[N]) + N * logM - log_poch[N] if gam[N] > 0 else -np.inf
        log_terms[N] = lt
        run = np.logaddexp(run, lt)
        if N > M and lt < run - TAIL_NATS and lt < log_terms[N - 1]:
            stop = N
            break
    else:  # did not meet the stopping rule within n_max terms
        raise RuntimeError(f"the Bingham series did not converge in {n_max} terms (spread {M:.4g})")
    logC = lo + float(run)
    if not grad:
        return logC, None
    # ∂c_N/∂a_i = ½ M^{N−1} h_{i,N−1},  h_{i,n} = γ_n + α_i h_{i,n−1}
    h = np.empty((stop, p))
    h[0] = gam[0]
    for j in range(1, stop):
        h[j] = gam[j] + alpha * h[j - 1]
    Ns = np.arange(1, stop + 1)
    with np.errstate(divide="ignore"):
        lg = (math.log(0.5) + (Ns - 1)[:, None] * logM + np.log(h) - log_poch[Ns][:, None])
    ex = np.exp(special.logsumexp(lg, axis=0) - run)
    return logC, ex / ex.sum()  # Σ E[x_i²] = 1 (renormalised against rounding)


def _saddle(a: np.ndarray):
    """Saddlepoint quantities: μ_i = ĉ − a_i > 0 with Σ 1/(2μ_i) = 1 (Kume & Wood 2005, eq. 9), via the ACG
    envelope equation of :func:`fdp_ppl.expmech.samplers.acg_envelope` (the same root: μ_i = b/2 + λ_i)."""
    from ..expmech.samplers import acg_envelope

    env = acg_envelope(np.diag(a))
    amax = float(np.max(a))
    chat = amax + env["b"] / 2.0
    return chat, chat - a


def _saddlepoint(a: np.ndarray, order: int = 3, grad: bool = False):
    """Kume & Wood (2005) saddlepoint approximation of log E_U[exp(xᵀAx)] (ĉ₁: order 1, ĉ₂: 2, ĉ₃: 3)."""
    a = np.asarray(a, dtype=float)
    p = a.size
    if p == 1:
        return float(a[0]), (np.ones(1) if grad else None)
    chat, mu = _saddle(a)
    K2 = np.sum(0.5 / mu**2)
    logc = (chat + special.gammaln(p / 2.0) - 0.5 * np.sum(np.log(mu)) - 0.5 * math.log(2 * math.pi * K2))
    if order >= 2:
        K3 = np.sum(1.0 / mu**3)
        K4 = np.sum(3.0 / mu**4)
        T = K4 / (8 * K2**2) - 5 * K3**2 / (24 * K2**3)
        logc += T if order == 3 else math.log1p(T)
    if not grad:
        return float(logc), None
    # E[x_i²] by Kume & Wood's identity ∂C/∂a_i = (1/p) C_{p+2}(a with a_i repeated three times), both by ĉ
    ex = np.array([math.exp(_saddlepoint(np.concatenate([a, [a[i], a[i]]]), order)[0] - logc) / p
                   for i in range(p)])
    return float(logc), ex / ex.sum()


def _monte_carlo(a: np.ndarray, draws: int, rng) -> tuple[float, float]:
    """log E_U[exp(xᵀAx)] by importance sampling, and the standard error of the log (delta method).

    Proposals come from the angular central Gaussian envelope of Kent, Ganeiber & Mardia (2018)
    (:func:`fdp_ppl.expmech.samplers.acg_envelope`, density ``det(Ω)^{1/2} (xᵀΩx)^{−p/2}`` w.r.t. U), so the
    weights stay bounded where plain uniform draws miss the mode (large p or spread)."""
    from ..expmech.samplers import acg_envelope

    a = np.asarray(a, dtype=float)
    p = a.size
    env = acg_envelope(np.diag(a))
    lam, om = env["lam"], env["omega"]  # in the eigenbasis of −diag(a), ascending: a permutation of a
    y = rng.standard_normal((int(draws), p)) / np.sqrt(om)
    x2 = y**2 / np.sum(y**2, axis=1, keepdims=True)
    v = -(x2 @ lam) + env["shift"] * -1.0  # xᵀAx = −(shift + xᵀΛx)
    log_w = v - 0.5 * np.sum(np.log(om)) + 0.5 * p * np.log(x2 @ om)
    top = log_w.max()
    w = np.exp(log_w - top)
    mean = w.mean()
    return float(top + math.log(mean)), float(w.std(ddof=1) / math.sqrt(w.size) / mean)


def bingham_log_constant(A, method: str = "auto", *, grad: bool = False, draws: int = 200_000,
                         random_seed=None):
    """Log normalising constant of the Bingham law on the unit sphere, ``log E_U[exp(xᵀAx)] = log ₁F₁(½; m/2; A)``.

    The constant is w.r.t. the uniform probability law U on S^{m−1} (so A = 0 gives 0), the convention of
    :meth:`fdp_ppl.expmech.FPCASpec.log_density`.

    Parameters
    ----------
    A : ndarray, shape (m, m) or (m,)
        Symmetric parameter, or its eigenvalues (dimensionless).
    method : {"auto", "series", "saddlepoint", "monte-carlo"}
        See the module docstring. ``"auto"``: the exact series up to :data:`SERIES_MAX_SPREAD`, else the
        saddlepoint.
    grad : bool
        Also return ``E[x xᵀ]`` under the Bingham law, shape (m, m) (or (m,), the diagonal in A's eigenbasis,
        when A is given by its eigenvalues): the gradient of log C w.r.t. A.
    draws, random_seed
        Monte Carlo only.

    Returns
    -------
    float or (float, ndarray)
        log C; with ``grad``, (log C, E[x xᵀ]). ``"monte-carlo"`` returns (log C, standard error of log C).

    Raises
    ------
    InputError
        A not a finite square matrix, unknown method, or ``"series"`` beyond its spread.

    References
    ----------
    Kume, A. & Wood, A. T. A. (2005). Saddlepoint approximations for the Bingham and Fisher–Bingham
    normalising constants. Biometrika 92, 465–476.
    """
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}", f"choose one of {METHODS}")
    A_arr = np.asarray(A, dtype=float)
    if A_arr.ndim == 2:
        A_arr = _check_square(A_arr)
        w, Q = np.linalg.eigh(0.5 * (A_arr + A_arr.T))
    else:
        w, Q = _eigenvalues(A_arr), None
    if not np.all(np.isfinite(w)):
        raise InputError("the Bingham parameter has non-finite entries", "pass a finite matrix")
    if method == "monte-carlo":
        return _monte_carlo(w, draws, np.random.default_rng(random_seed))
    if method == "auto":
        method = "series" if np.ptp(w) <= SERIES_MAX_SPREAD else "saddlepoint"
    logc, ex = _series(w, grad) if method == "series" else _saddlepoint(w, 3, grad)
    if not grad:
        return logc
    return logc, (ex if Q is None else (Q * ex) @ Q.T)


def _check_square(A):
    if A.ndim != 2 or A.shape[0] != A.shape[1] or not np.all(np.isfinite(A)):
        raise InputError(f"the Bingham parameter must be a finite square matrix, got shape {A.shape}",
                         "pass a symmetric (m, m) matrix or its eigenvalues")
    return A


def bingham_constant_check(A, *, draws: int = 400_000, random_seed=None) -> dict:
    """log C(A) by every method, for accuracy reports: ``series`` (when served), ``saddlepoint_1/2/3``
    (Kume & Wood's ĉ₁, ĉ₂, ĉ₃), ``monte_carlo`` and its standard error ``monte_carlo_se``."""
    w = _eigenvalues(A)
    out = {}
    if np.ptp(w) <= SERIES_MAX_SPREAD:
        out["series"] = _series(w, False)[0]
    for o in (1, 2, 3):
        out[f"saddlepoint_{o}"] = _saddlepoint(w, o)[0]
    out["monte_carlo"], out["monte_carlo_se"] = _monte_carlo(w, draws, np.random.default_rng(random_seed))
    return out
