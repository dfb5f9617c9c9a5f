"""Noise-aware inference for ε-DP principal components (exponential mechanism; Awan, Kenney, Reimherr &
Slavković 2019).

A ``fdp-ppl fpca`` release (kind :data:`fdp_ppl.releasing.schema.EXPMECH_FPCA`) of the Bingham form with k = 1 is a
unit vector v (basis coordinates, m entries) drawn from

    p(v | G) = exp(vᵀ A v) / C(A),   A = s (G − Σ⁻¹),   s = ε / (2Δ),

with respect to the uniform law on the sphere S^{m−1} (spec ``expmech-fpca.md`` §2.2; the paper's Sec. 5
density). G = XᵀX is the data's uncentred scatter matrix of clipped, τ-scaled coefficients, Σ the public
base covariance. The normaliser is a hypergeometric function of matrix argument,

    C(A) = E_U[exp(xᵀAx)] = ₁F₁(1/2; m/2; A)

(Kume & Wood 2005; Chikuse 2003). This module computes log C accurately and its gradient
E[x xᵀ] (Bingham mean of x xᵀ), wraps it as a PyTensor Op, and samples the posterior of G given the
released frames with PyMC.

Normalising constant (:func:`bingham_log_constant`, ``method=``):

* ``"series"`` — exact. With a_i the eigenvalues of A shifted so the smallest is 0 (C(A + cI) = e^c C(A)),
  ``₁F₁(1/2; m/2; a) = Σ_N c_N / (m/2)_N`` where c_N is the z^N coefficient of ``Π_i (1 − a_i z)^{−1/2}``
  (expand each factor's binomial series and group the multi-index series by total degree; derived here [D]
  and checked against the Bessel closed form at m = 2 and a one-dimensional integral at m = 3 to 1e-13,
  tests/test_inference_components.py). Every term is positive, so the sum has no cancellation; its cost grows like
  (largest shifted eigenvalue)², so it is used up to :data:`SERIES_MAX_SPREAD`.
* ``"saddlepoint"`` — the second-order saddlepoint approximation ĉ₃ of Kume & Wood (2005): log C within
  0.013–0.045 of the series on the mechanism's parameters at m = 2–40 (benchmarks/bench_sbc_fpca.py), i.e. a
  relative error of 1–5 % in C that varies slowly with A.
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
from ..releasing import schema as S
from ..errors import InputError

#: largest spread max(a) − min(a) of the shifted eigenvalues served by the exact series (its cost is quadratic in
#: the spread: about 20 ms at 2000); larger spreads use the saddlepoint approximation
SERIES_MAX_SPREAD = 4000.0
#: the series stops once its terms fall below exp(−TAIL_NATS) times the running sum (and decrease)
TAIL_NATS = 42.0
#: default cap on the prior's degrees of freedom d (:class:`ComponentsPrior`)
DEFAULT_MAX_DOF = 6
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


def _series(a: np.ndarray, grad: bool, max_spread: float = SERIES_MAX_SPREAD):
    """log ₁F₁(1/2; p/2; a) by the positive series (module docstring); with ``grad`` also E[x_i²] (p,).

    ``a`` is shifted internally; returns (log C, E[x²] or None)."""
    a = np.asarray(a, dtype=float)
    p = a.size
    lo = float(a.min())
    ap = a - lo
    M = float(ap.max())
    if p == 1 or M == 0.0:
        return lo, (np.full(p, 1.0 / p) if grad else None)
    if M > max_spread:
        raise InputError(f"the exact series serves eigenvalue spreads up to {max_spread:g} (got {M:.4g})",
                         "use method='saddlepoint' (or 'auto')")
    alpha = ap / M  # in [0, 1]
    n_max = int(M + 10.0 * math.sqrt(M) + 45.0)
    gam = _gamma_coefficients(alpha, n_max)  # γ_N = [z^N] Π (1 − α_i z)^{-1/2}, so c_N = M^N γ_N
    Ns = np.arange(n_max + 1)
    log_poch = special.gammaln(p / 2.0 + Ns) - special.gammaln(p / 2.0)
    logM = math.log(M)
    with np.errstate(divide="ignore"):
        log_terms = np.log(gam) + Ns * logM - log_poch
    run = float(_lse(log_terms))
    # the terms decrease beyond N ≈ M (ratio → M/N); the last must be negligible
    if not (log_terms[-1] < run - TAIL_NATS and log_terms[-1] <= log_terms[-2]):
        raise RuntimeError(f"the Bingham series did not converge in {n_max} terms (spread {M:.4g})")
    logC = lo + run
    if not grad:
        return logC, None
    # ∂c_N/∂a_i = ½ M^{N−1} h_{i,N−1},  h_{i,n} = Σ_{k≤n} γ_k α_i^{n−k} (a first-order recursive filter)
    if n_max * p <= 20_000:  # p compiled convolutions of γ with the geometric sequences α_i^j
        j = np.arange(n_max)
        with np.errstate(under="ignore"):
            h = np.stack([np.convolve(gam[:-1], ai**j)[:n_max] for ai in alpha], axis=1)
    else:
        from scipy import signal

        h = np.stack([signal.lfilter([1.0], [1.0, -ai], gam[:-1]) for ai in alpha], axis=1)  # (n_max, p)
    Np = Ns[1:]
    with np.errstate(divide="ignore"):
        lg = (math.log(0.5) + (Np - 1)[:, None] * logM + np.log(h) - log_poch[Np][:, None])
    ex = np.exp(_lse(lg, axis=0) - run)
    return logC, ex / ex.sum()  # Σ E[x_i²] = 1 (renormalised against rounding)


def _lse(x, axis=None):
    """log Σ exp(x) (numpy; scipy's logsumexp costs more than the series itself at small sizes)."""
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(x - top), axis=axis))


def _gamma_coefficients(alpha: np.ndarray, n_max: int) -> np.ndarray:
    """Coefficients γ_0..γ_{n_max} of ``Π_i (1 − α_i z)^{−1/2}`` (α_i ∈ [0, 1]); all positive, no cancellation.

    Small problems multiply the p binomial series ``(½)_n α_i^n / n!`` by direct convolution (compiled); large
    ones use the exponential recurrence ``γ_N = (1/N) Σ_k (P_k/2) γ_{N−k}``, P_k = Σ_i α_i^k."""
    p = alpha.size
    Ns = np.arange(1, n_max + 1)
    if (p - 1) * n_max <= 6000:
        ratio = (Ns - 0.5) / Ns
        gam = np.ones(1)
        for ai in alpha:
            f = np.concatenate([[1.0], np.cumprod(ai * ratio)])
            gam = np.convolve(gam, f)[: n_max + 1]
        return gam
    powers = np.cumprod(np.broadcast_to(alpha, (n_max, p)), axis=0).sum(axis=1) / 2.0  # P_k/2, k = 1..n_max
    gam = np.empty(n_max + 1)
    gam[0] = 1.0
    for N in range(1, n_max + 1):
        gam[N] = np.dot(powers[:N], gam[N - 1::-1]) / N
    return gam


def _saddle(a: np.ndarray):
    """Saddlepoint quantities: μ_i = ĉ − a_i > 0 with Σ 1/(2μ_i) = 1 (Kume & Wood 2005), via the ACG
    envelope equation of :func:`fdp_ppl.expmech.samplers.acg_envelope` (the same root: μ_i = b/2 + λ_i)."""
    from ..expmech.samplers import acg_envelope

    env = acg_envelope(np.diag(a))
    amax = float(np.max(a))
    chat = amax + env["b"] / 2.0
    return chat, chat - a


def _saddle_log(chat, mu, p, order, extra_mu=None):
    """log ĉ from the saddle ĉ and μ = ĉ − a (..., p) (Kume & Wood 2005; ``extra_mu`` (...): a value
    repeated twice more, for the augmented constants of the gradient, p counting them)."""
    def ksum(power, coef):
        out = np.sum(coef / mu**power, axis=-1)
        return out if extra_mu is None else out + 2 * coef / extra_mu**power

    slog = np.sum(np.log(mu), axis=-1) + (0.0 if extra_mu is None else 2 * np.log(extra_mu))
    K2 = ksum(2, 0.5)
    logc = chat + special.gammaln(p / 2.0) - 0.5 * slog - 0.5 * np.log(2 * math.pi * K2)
    if order >= 2:
        K3, K4 = ksum(3, 1.0), ksum(4, 3.0)
        T = K4 / (8 * K2**2) - 5 * K3**2 / (24 * K2**3)
        logc = logc + (T if order == 3 else np.log1p(T))
    return logc


def _saddlepoint(a: np.ndarray, order: int = 3, grad: bool = False):
    """Kume & Wood (2005) saddlepoint approximation of log E_U[exp(xᵀAx)] (ĉ₁: order 1, ĉ₂: 2, ĉ₃: 3)."""
    a = np.asarray(a, dtype=float)
    p = a.size
    if p == 1:
        return float(a[0]), (np.ones(1) if grad else None)
    chat, mu = _saddle(a)
    logc = float(_saddle_log(chat, mu, p, order))
    if not grad:
        return logc, None
    # E[x_i²] = (1/p) C_{p+2}(a with a_i repeated twice more)/C_p(a) [D]: (x_1², …, x_p²) is Dirichlet(½, …, ½) and
    # x_i² times its density is the Dirichlet with 3/2 in place i, the law on S^{p+1} with three coordinates
    # pooled; each augmented constant by the same approximation; its saddle solves Σ_j 1/(2(c − a_j)) + 1/(c − a_i) = 1, found for all i
    # at once by Newton's method from the left (the function is convex and decreasing in c: monotone convergence)
    c = np.full(p, chat)
    for _ in range(100):
        d = c[:, None] - a[None, :]
        di = c - a
        h = np.sum(0.5 / d, axis=1) + 1.0 / di - 1.0
        dh = -np.sum(0.5 / d**2, axis=1) - 1.0 / di**2
        step = h / dh
        c = c - step
        if np.all(np.abs(step) <= 1e-13 * np.maximum(1.0, np.abs(c))):
            break
    aug = _saddle_log(c, c[:, None] - a[None, :], p + 2, order, extra_mu=c - a)
    ex = np.exp(aug - logc) / p
    return logc, ex / ex.sum()


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


def bingham_constant_check(A, *, draws: int = 400_000, random_seed=None, max_spread: float = 1e5) -> dict:
    """log C(A) by every method, for accuracy reports: ``series`` (exact; up to ``max_spread``, beyond
    :data:`SERIES_MAX_SPREAD` it takes seconds), ``saddlepoint_1/2/3`` (Kume & Wood's ĉ₁, ĉ₂, ĉ₃), ``monte_carlo``
    and its standard error ``monte_carlo_se``."""
    w = _eigenvalues(A)
    out = {}
    if np.ptp(w) <= max_spread:
        out["series"] = _series(w, False, max_spread)[0]
    for o in (1, 2, 3):
        out[f"saddlepoint_{o}"] = _saddlepoint(w, o)[0]
    out["monte_carlo"], out["monte_carlo_se"] = _monte_carlo(w, draws, np.random.default_rng(random_seed))
    return out


# ---------------------------------------------------------------------------- PyTensor Op
def _log_constant_op():
    """The Op class, built on first use (PyTensor is imported lazily)."""
    global _OP_CLASS
    if _OP_CLASS is not None:
        return _OP_CLASS
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class BinghamLogConstant(Op):
        """``log C(A)`` of :func:`bingham_log_constant` (k = 1) as a PyTensor Op; second output ``E[x xᵀ]``, the
        gradient, so one evaluation serves the value and the gradient (NUTS)."""

        __props__ = ("method",)

        def __init__(self, method: str = "series"):
            if method not in ("series", "saddlepoint"):
                raise InputError(f"the log-constant Op takes method 'series' or 'saddlepoint', got {method!r}",
                                 "pick one for the whole run (a switch inside a sampler would make logp jump)")
            self.method = method

        def make_node(self, A):
            A = pt.as_tensor_variable(A)
            return Apply(self, [A], [pt.dscalar(), pt.dmatrix()])

        def perform(self, node, inputs, outputs):
            logc, ex = bingham_log_constant(inputs[0], self.method, grad=True)
            outputs[0][0] = np.asarray(logc, dtype=float)
            outputs[1][0] = np.asarray(ex, dtype=float)

        def pullback(self, inputs, outputs, cotangents):
            return [cotangents[0] * outputs[1]]  # d log C / dA = E[x xᵀ], the second output

    _OP_CLASS = BinghamLogConstant
    return _OP_CLASS


_OP_CLASS = None


def bingham_log_constant_op(method: str = "series"):
    """A PyTensor Op computing ``log C(A)`` (output 0) and its gradient ``E[x xᵀ]`` (output 1) for a symmetric
    (m, m) matrix A; differentiable once (enough for NUTS). ``method``: ``"series"`` (exact) or ``"saddlepoint"``."""
    return _log_constant_op()(method)


# ---------------------------------------------------------------------------- prior over G
@dataclass(frozen=True)
class ComponentsPrior:
    """Prior over the data's uncentred second-moment operator S = G/n (basis coordinates, m × m).

    ``S = r · W / tr W`` with ``W = Y Yᵀ``, Y an m × d matrix of i.i.d. N(0, 1) entries (so W ~ Wishart(d, I)),
    and ``r = tr S ~ Beta(trace_alpha, trace_beta)``.

    Why this prior. The mechanism clips every record to norm ≤ 1 (τ-scaled), so G = XᵀX is positive
    semi-definite with ``tr G ≤ n`` (n public), and every such matrix is a possible G: the prior's support is
    exactly the set the release can come from. W / tr W is independent of tr W and invariant under rotations
    (the law of Y is), so no direction of the release's basis is favoured: what the posterior says about the
    eigenfunctions comes from the released frame alone. r, the mean squared norm of the scaled records, is
    public-scale (it lies in [0, 1] by the clipping); its Beta prior says how close to τ the curves' norms are
    believed to be. The degrees of freedom d set how spiked the spectrum is a priori: d = 1 is a rank-one
    operator, large d approaches r/m · I (no principal direction); the default d = m gives a spread of
    explained-variance ratios (capped at 6 for large m: the parameter count is m·d). An inverse-Wishart is not
    used because it cannot respect tr S ≤ 1.

    Parameters
    ----------
    trace_alpha, trace_beta : float
        Beta prior of r = tr(G)/n (> 0; default 1, 1: uniform on [0, 1]).
    dof : int, optional
        d ≥ 1 (default: min(m, :data:`DEFAULT_MAX_DOF`); S has rank ≤ d, so d < m restricts the operator to d
        non-zero eigenvalues, which keeps NUTS's dimension m·d + 1 manageable at m = 40).

    Raises
    ------
    InputError
        Non-positive Beta parameters or d < 1.
    """

    trace_alpha: float = 1.0
    trace_beta: float = 1.0
    dof: int | None = None

    def __post_init__(self):
        for name in ("trace_alpha", "trace_beta"):
            v = float(getattr(self, name))
            if not (np.isfinite(v) and v > 0):
                raise InputError(f"{name} must be a finite number > 0 (got {getattr(self, name)!r})",
                                 "e.g. ComponentsPrior(trace_alpha=1, trace_beta=1)")
        if self.dof is not None and int(self.dof) < 1:
            raise InputError(f"dof must be >= 1 (got {self.dof!r})", "e.g. ComponentsPrior(dof=3), or None for m")

    def degrees(self, m: int) -> int:
        """d: ``dof``, or min(m, :data:`DEFAULT_MAX_DOF`) when None."""
        return int(min(m, DEFAULT_MAX_DOF) if self.dof is None else self.dof)

    def draw(self, m: int, size: int, rng) -> np.ndarray:
        """``size`` draws of S, shape (size, m, m) (for simulation-based calibration and prior checks)."""
        d = self.degrees(m)
        r = rng.beta(self.trace_alpha, self.trace_beta, size=size)
        Y = rng.standard_normal((size, m, d))
        W = Y @ np.swapaxes(Y, -1, -2)
        return r[:, None, None] * W / np.trace(W, axis1=-2, axis2=-1)[:, None, None]

    def describe(self, m: int) -> dict:
        return {"prior": "components", "prior_description":
                f"S = G/n = r W / tr W, W ~ Wishart({self.degrees(m)}, I_{m}) (rotation-invariant), "
                f"r ~ Beta({self.trace_alpha:g}, {self.trace_beta:g}) (tr G <= n from the clipping)",
                "prior_dof": self.degrees(m), "prior_trace_alpha": float(self.trace_alpha),
                "prior_trace_beta": float(self.trace_beta)}


def _resolve_prior(prior) -> ComponentsPrior:
    if prior is None or (isinstance(prior, str) and prior in ("default", "components", "gp")):
        return ComponentsPrior()
    if isinstance(prior, ComponentsPrior):
        return prior
    if isinstance(prior, dict):
        return ComponentsPrior(**prior)
    raise InputError(f"unknown prior {prior!r} for principal components",
                     "pass None, 'default', a dict of ComponentsPrior fields or a ComponentsPrior")


# ---------------------------------------------------------------------------- the release's likelihood
@dataclass(frozen=True)
class FrameLikelihood:
    """The public likelihood of released k = 1 frames: ``p(v | G) = exp(vᵀAv)/C(A)``, ``A = s(G − Σ⁻¹)``.

    Attributes
    ----------
    frames : ndarray, shape (F, m)
        The released unit vectors (each frame one independent observation).
    sigma_inv : ndarray, shape (m, m)
        Σ⁻¹, the public base precision.
    scale : float
        s = ε/(2Δ) (:attr:`fdp_ppl.expmech.FPCASpec.scale`, from the release's ε and Δ).
    n : int
        Public number of records (units): tr G ≤ n.
    method : {"series", "saddlepoint"}
        How log C is computed, fixed for the run from the public bound on the spread of A's eigenvalues,
        ``s (n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹))`` (the same bound as
        :func:`fdp_ppl.expmech.samplers.bingham_log_density_floor`).
    """

    frames: np.ndarray
    sigma_inv: np.ndarray
    scale: float
    n: int
    method: str

    @classmethod
    def build(cls, frames, sigma, scale, n, method="auto") -> "FrameLikelihood":
        frames = np.asarray(frames, dtype=float)
        if frames.ndim == 1:
            frames = frames[None]
        sigma = np.asarray(sigma, dtype=float)
        m = sigma.shape[0]
        if frames.ndim != 2 or frames.shape[1] != m or not np.all(np.isfinite(frames)):
            raise InputError(f"frames must have shape (F, {m}) and be finite, got {frames.shape}",
                             "pass the released unit vectors in basis coordinates")
        if not np.allclose(np.linalg.norm(frames, axis=1), 1.0, atol=1e-6):
            raise InputError("released frames must be unit vectors", "pass the release's posterior 'frame'")
        sigma_inv = np.linalg.inv(0.5 * (sigma + sigma.T))
        w = np.linalg.eigvalsh(sigma_inv)
        spread = float(scale) * (int(n) + w[-1] - w[0])
        if method == "auto":
            method = "series" if spread <= SERIES_MAX_SPREAD else "saddlepoint"
        if method not in ("series", "saddlepoint"):
            raise InputError(f"unknown log_constant {method!r}", "choose 'auto', 'series' or 'saddlepoint'")
        if method == "series" and spread > SERIES_MAX_SPREAD:
            raise InputError(f"the exact series serves spreads up to {SERIES_MAX_SPREAD:g}; this release allows "
                             f"{spread:.4g}", "pass log_constant='saddlepoint' (or 'auto')")
        return cls(frames=frames, sigma_inv=sigma_inv, scale=float(scale), n=int(n), method=method)

    def parameter(self, second_moment) -> np.ndarray:
        """A = s(n S − Σ⁻¹) for S = G/n, shape (..., m, m)."""
        return self.scale * (self.n * np.asarray(second_moment, dtype=float) - self.sigma_inv)

    def logp(self, second_moment) -> np.ndarray:
        """Log-likelihood of each frame, shape (..., F), for S of shape (..., m, m) (numpy)."""
        S_ = np.asarray(second_moment, dtype=float)
        A = self.parameter(S_)
        flat = A.reshape(-1, *A.shape[-2:])
        logc = np.array([bingham_log_constant(a, self.method) for a in flat]).reshape(A.shape[:-2])
        quad = np.einsum("fi,...ij,fj->...f", self.frames, A, self.frames)
        return quad - logc[..., None]


def _likelihood_scale(attrs) -> float:
    """s = ε/(2Δ) of the release (the factor :attr:`fdp_ppl.expmech.FPCASpec.scale` used to draw it)."""
    return float(attrs["epsilon"]) / (2.0 * float(attrs.get("sensitivity", 1.0)))


# ---------------------------------------------------------------------------- the model
def components_model(likelihood: FrameLikelihood, prior: ComponentsPrior | None = None):
    """PyMC model of S = G/n given released k = 1 frames.

    Free variables: ``trace`` r = tr S (Beta prior) and the Bartlett factors of W ~ Wishart(d, I): W = LLᵀ with
    L m × d lower-trapezoidal, ``bartlett_diag`` L_ii² ~ χ²_{d−i} (0-based i < min(m, d)) and ``bartlett_lower``
    the entries below the diagonal, N(0, 1) (the Bartlett decomposition, Muirhead 1982, Thm 3.2.14; for d < m
    the LQ factor of an m × d Gaussian matrix). ``S = r W / tr W``. Unlike W = YYᵀ with Gaussian Y, this has no
    rotational redundancy Y → YO, whose curved orbits made NUTS take ~100 leapfrog steps per draw once many
    frames concentrate the posterior (the scale of W stays a nuisance the likelihood does not see). The
    potential ``release`` is ``Σ_f v_fᵀ A v_f − F log C(A)``, A = s(nS − Σ⁻¹), with log C and its gradient from
    :func:`bingham_log_constant_op`. The release enters through ``pm.Data`` (``scatter`` = Σ_f v_f v_fᵀ,
    ``n_frames``, ``scale``, ``n``, ``sigma_inv``), so one compiled model serves many releases of the same m
    (:func:`_set_release`).

    Returns
    -------
    pm.Model
    """
    import pymc as pm
    import pytensor.tensor as pt

    prior = prior or ComponentsPrior()
    m = likelihood.sigma_inv.shape[0]
    d = prior.degrees(m)
    op = bingham_log_constant_op(likelihood.method)
    with pm.Model(coords={dims.BASIS: np.arange(m), "factor": np.arange(d)}) as model:
        scatter = pm.Data("scatter", np.zeros((m, m)))
        n_frames = pm.Data("n_frames", 1.0)
        scale = pm.Data("scale", 1.0)
        n = pm.Data("n", 1.0)
        sigma_inv = pm.Data("sigma_inv", np.eye(m))
        r = pm.Beta("trace", float(prior.trace_alpha), float(prior.trace_beta))
        di, (ri, ci) = _bartlett_indices(m, d)
        c = pm.ChiSquared("bartlett_diag", nu=d - np.arange(di.size, dtype=float))
        z = pm.Normal("bartlett_lower", 0.0, 1.0, shape=ri.size)
        L = pt.set_subtensor(pt.zeros((m, d))[di, di], pt.sqrt(c))
        L = pt.set_subtensor(L[ri, ci], z)
        T = pt.sum(L**2)
        Sm = r * pt.dot(L, L.T) / T
        A = scale * (n * Sm - sigma_inv)
        logc, _ = op(A)
        pm.Potential("release", pt.sum(A * scatter) - n_frames * logc)  # Σ_f v_fᵀAv_f = tr(A Σ_f v_f v_fᵀ)
    _set_release(model, likelihood)
    return model


def _set_release(model, likelihood: FrameLikelihood) -> None:
    import pymc as pm

    V = likelihood.frames
    pm.set_data({"scatter": V.T @ V, "n_frames": float(V.shape[0]), "scale": likelihood.scale,
                 "n": float(likelihood.n), "sigma_inv": likelihood.sigma_inv}, model=model)


#: compiled (model, NUTS step) per (m, d, prior, log-constant method, target_accept, mode): compiling takes seconds,
#: sampling a small posterior less than one
_COMPILED: dict = {}
#: largest number of free variables for which NUTS adapts a dense mass matrix (else diagonal)
DENSE_MAX = 60


def _compiled(likelihood: FrameLikelihood, prior: ComponentsPrior, target_accept: float, mode):
    import pymc as pm

    m = likelihood.sigma_inv.shape[0]
    key = (m, prior.degrees(m), prior.trace_alpha, prior.trace_beta, likelihood.method, float(target_accept), mode)
    if key not in _COMPILED:
        if len(_COMPILED) >= 8:
            _COMPILED.pop(next(iter(_COMPILED)))
        model = components_model(likelihood, prior)
        from pymc.step_methods.hmc.quadpotential import QuadPotentialFullAdapt

        size = 1 + min(m, prior.degrees(m)) + _bartlett_indices(m, prior.degrees(m))[1][0].size
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(BLAS|experimental).*")
            # a dense mass matrix: with many frames the posterior is concentrated along directions of Y that are
            # not axis-aligned (a diagonal mass matrix then needs ~100 leapfrog steps per draw)
            potential = QuadPotentialFullAdapt(size, np.zeros(size), np.eye(size), 10) if size <= DENSE_MAX else None
            step = pm.NUTS(model=model, target_accept=float(target_accept), potential=potential,
                           **({"compile_kwargs": {"mode": mode}} if mode is not None else {}))
        _COMPILED[key] = (model, step)
    model, step = _COMPILED[key]
    _set_release(model, likelihood)
    return model, step


def initial_values(m: int, d: int, chains: int, rng) -> list[dict]:
    """Data-independent NUTS starting points of :func:`components_model`: prior draws of the Bartlett factors and a
    trace in (0.2, 0.8)."""
    di, (ri, _) = _bartlett_indices(m, d)
    return [{"trace": float(rng.uniform(0.2, 0.8)), "bartlett_diag": rng.chisquare(d - np.arange(di.size)),
             "bartlett_lower": rng.standard_normal(ri.size)} for _ in range(chains)]


def _bartlett_indices(m: int, d: int):
    """Diagonal positions (min(m, d),) and strictly-lower positions (rows, cols) of an m × d lower-trapezoidal L."""
    rows, cols = np.tril_indices(m, -1, d)
    return np.arange(min(m, d)), (rows, cols)


def _second_moment(trace, diag, lower, m: int, d: int) -> np.ndarray:
    """S = r LLᵀ/tr(LLᵀ) from draws of the Bartlett factors (:func:`components_model`), shape (..., m, m)."""
    di, (ri, ci) = _bartlett_indices(m, d)
    L = np.zeros(trace.shape + (m, d))
    L[..., di, di] = np.sqrt(diag)
    L[..., ri, ci] = lower
    W = L @ np.swapaxes(L, -1, -2)
    return trace[..., None, None] * W / np.trace(W, axis1=-2, axis2=-1)[..., None, None]


def _reference(frames: np.ndarray) -> np.ndarray:
    """A public sign reference: the top eigenvector of Σ_f v_f v_fᵀ of the released frames (sign: largest |entry|
    positive). Aligning to the release is post-processing of public data."""
    w, U = np.linalg.eigh(frames.T @ frames)
    u = U[:, -1]
    return u * np.sign(u[np.argmax(np.abs(u))])


def summarise_second_moment(Sdraws, reference, basis_values) -> dict:
    """Eigen-summaries of draws of S (..., m, m): descending ``eigenvalues`` (..., m), ``explained`` λ₁/tr S,
    ``top`` eigenvector (..., m) with sign fixed by ``reference`` (uᵀref ≥ 0), ``function`` (..., K) on the grid."""
    w, U = np.linalg.eigh(Sdraws)
    w = w[..., ::-1]
    u = U[..., :, -1]
    sgn = np.where(u @ reference < 0, -1.0, 1.0)
    u = u * sgn[..., None]
    tr = np.sum(w, axis=-1)
    return {"eigenvalues": w, "explained": w[..., 0] / np.where(tr > 0, tr, 1.0), "top": u,
            "function": u @ np.asarray(basis_values).T}


# ---------------------------------------------------------------------------- entry point
def _read_fpca(release):
    if not S.is_fpca_release(release):
        raise InputError("infer_components takes an epsilon-DP FPCA release (fdp-ppl fpca)",
                         "pass the file written by fdp-ppl fpca or fdp_ppl.release")
    at = dict(release.attrs)
    k = int(at.get("k", 1))
    if k != 1:
        raise InputError(f"inference for FPCA releases serves k = 1 frames only (got k = {k}): the matrix Bingham "
                         "normaliser for k > 1 is not implemented", "release with --k 1 (one component per frame)")
    if at.get("form", "bingham") != "bingham":
        raise InputError(f"inference for FPCA releases serves the bingham form only (got {at.get('form')!r})",
                         "release with --form bingham (the default)")
    post = release[S.POSTERIOR]
    fr = np.asarray(post[S.FRAME].values, dtype=float)  # (chain, draw, basis, component)
    frames = fr[..., 0].reshape(-1, fr.shape[-2])
    const = release[S.CONSTANT_DATA]
    sigma = np.asarray(const[S.SIGMA].values, dtype=float)
    B = np.asarray(const[S.BASIS_FUNCTIONS].values, dtype=float)
    t = np.asarray(post[dims.T].values, dtype=float)
    return at, frames, sigma, B, t


def infer_components(release: xr.DataTree, prior=None, *, draws: int = 1000, tune: int = 1000, chains: int = 2,
                     target_accept: float = 0.9, random_seed=None, progressbar: bool = False,
                     log_constant: str = "auto", posterior_predictive: bool = True) -> xr.DataTree:
    """Posterior of the data's second-moment operator, its top eigenfunction and explained-variance ratio, given an
    ε-DP FPCA release (Bingham form, k = 1).

    Every released frame (chain × draw of the release) is an independent observation with density
    ``exp(vᵀAv)/C(A)``, ``A = s(G − Σ⁻¹)``, ``s = ε/(2Δ)`` (Awan et al. 2019, Sec. 5; spec ``expmech-fpca.md``
    §2.2) w.r.t. the uniform law on the sphere; log C is exact (positive series) or the Kume–Wood saddlepoint
    (:class:`FrameLikelihood`). The prior over G = n S is :class:`ComponentsPrior`. Sampled with PyMC NUTS.
    The public fallback of the exact sampler (probability ≤ ``exp(fallback_bound_log)``, about 1e-40 or less)
    is ignored.

    Parameters
    ----------
    release : xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.EXPMECH_FPCA`, form ``bingham``, k = 1. Only public content is read.
    prior : None, "default", dict or ComponentsPrior
    draws, tune, chains, target_accept
        NUTS settings (``pm.sample``).
    random_seed : int, sequence, Generator or None
        Seeds NUTS, its starting points and the replicated frames.
    progressbar : bool
    log_constant : {"auto", "series", "saddlepoint"}
        "auto": the exact series when the public bound on the spread of A's eigenvalues allows it
        (:data:`SERIES_MAX_SPREAD`), else the saddlepoint; fixed for the run.
    posterior_predictive : bool
        Draw one replicated frame per posterior draw (exact Bingham sampler,
        :func:`fdp_ppl.expmech.sample_vector_bingham`).

    Returns
    -------
    xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.INFERENCE`. ``posterior``: ``second_moment`` (chain, draw, basis, basis_aux)
        = G/n, ``eigenvalues`` (chain, draw, eigen) descending, ``explained_variance_ratio`` (chain, draw),
        ``top_eigenvector`` (chain, draw, basis) and ``top_eigenfunction`` (chain, draw, t) with the sign that
        agrees with the released frames, ``trace`` (chain, draw) = tr(G)/n. ``posterior_predictive``: ``frame``
        (chain, draw, basis, component) and ``components`` (chain, draw, component, t). ``observed_data``: the
        released ``frame`` (release_draw, basis, component) and ``components``. ``constant_data``: basis
        functions, quadrature weights, Σ, and the scalars ``scale`` (s) and ``n``. ``sample_stats`` from NUTS.
        ``attrs``: the release's public attributes (``release_*``), the prior, ``log_constant`` and diagnostics.

    Warns
    -----
    InferenceWarning
        R-hat above 1.01, ESS below 100 per chain, or divergences (on rotation-invariant summaries).

    Raises
    ------
    InputError
        Not an FPCA release, k > 1, the gp-base form, or a bad prior.
    """
    import pymc as pm

    from ..settings import MAX_RHAT, MIN_ESS_PER_CHAIN, compile_mode
    from .diagnostics import InferenceWarning, diagnostics

    at, frames, sigma, B, t = _read_fpca(release)
    prior = _resolve_prior(prior)
    lik = FrameLikelihood.build(frames, sigma, _likelihood_scale(at), int(at["n"]), log_constant)
    m = sigma.shape[0]
    rng = np.random.default_rng(random_seed)
    mode = compile_mode()
    model, step = _compiled(lik, prior, target_accept, mode)
    d = prior.degrees(m)
    di, (ri, _) = _bartlett_indices(m, d)
    inits = initial_values(m, d, chains, rng)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(BLAS|divergen|rhat|effective sample).*")
        idata = pm.sample(model=model, step=step, draws=draws, tune=tune, chains=chains, cores=1, initvals=inits,
                          random_seed=int(rng.integers(2**31 - 1)), progressbar=progressbar, quiet=True,
                          compute_convergence_checks=False,
                          **({"compile_kwargs": {"mode": mode}} if mode is not None else {}))
    post_raw = idata[S.POSTERIOR]
    tr_ = np.asarray(post_raw["trace"].values)
    Sd = _second_moment(tr_, np.asarray(post_raw["bartlett_diag"].values),
                        np.asarray(post_raw["bartlett_lower"].values), m, d)
    ref = _reference(frames)
    summ = summarise_second_moment(Sd, ref, B)
    cd = {dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)}
    tcoord = {dims.T: t}
    post = xr.Dataset(
        {"second_moment": ((dims.CHAIN, dims.DRAW, dims.BASIS, dims.BASIS_AUX), Sd),
         "eigenvalues": ((dims.CHAIN, dims.DRAW, EIGEN), summ["eigenvalues"]),
         "explained_variance_ratio": ((dims.CHAIN, dims.DRAW), summ["explained"]),
         "top_eigenvector": ((dims.CHAIN, dims.DRAW, dims.BASIS), summ["top"]),
         "top_eigenfunction": ((dims.CHAIN, dims.DRAW, dims.T), summ["function"]),
         "trace": ((dims.CHAIN, dims.DRAW), tr_)},
        coords={**cd, dims.BASIS: np.arange(m), dims.BASIS_AUX: np.arange(m), EIGEN: np.arange(m), **tcoord})
    post["second_moment"].attrs["description"] = "G/n: uncentred second moment of the clipped, tau-scaled records"
    post["top_eigenfunction"].attrs["description"] = ("top eigenfunction of G on the release's grid, sign agreeing "
                                                      "with the released frames")
    post["explained_variance_ratio"].attrs["description"] = "lambda_1(G) / tr(G)"
    groups = {S.POSTERIOR: post}
    obs_comp = frames @ B.T
    groups[S.OBSERVED_DATA] = xr.Dataset(
        {S.FRAME: ((RELEASE_DRAW, dims.BASIS, dims.COMPONENT), frames[:, :, None]),
         S.COMPONENTS: ((RELEASE_DRAW, dims.COMPONENT, dims.T), obs_comp[:, None, :])},
        coords={RELEASE_DRAW: np.arange(frames.shape[0]), dims.BASIS: np.arange(m), dims.COMPONENT: [0], **tcoord})
    if posterior_predictive:
        from ..expmech.samplers import sample_vector_bingham

        A = lik.parameter(Sd).reshape(-1, m, m)
        rep = np.stack([sample_vector_bingham(a, 1, rng)[0] for a in A]).reshape(chains, draws, m)
        groups["posterior_predictive"] = xr.Dataset(
            {S.FRAME: ((dims.CHAIN, dims.DRAW, dims.BASIS, dims.COMPONENT), rep[..., None]),
             S.COMPONENTS: ((dims.CHAIN, dims.DRAW, dims.COMPONENT, dims.T), (rep @ B.T)[:, :, None, :])},
            coords={**cd, dims.BASIS: np.arange(m), dims.COMPONENT: [0], **tcoord})
    const = release[S.CONSTANT_DATA].to_dataset()
    const = const.assign(scale=lik.scale, n=lik.n)
    groups[S.CONSTANT_DATA] = const
    if "sample_stats" in idata.children:
        groups["sample_stats"] = idata["sample_stats"].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    diag = diagnostics(tree, ["trace", "explained_variance_ratio", "eigenvalues"])
    attrs = {f"release_{k}": v for k, v in at.items() if k in S.PUBLIC_ATTRS or k in ("m", "k", "form", "basis",
                                                                                         "sigma_rule", "sampler",
                                                                                         "exact", "certified")}
    attrs.update(prior.describe(m))
    attrs.update({"target": "second moment operator G/n (uncentred) of the clipped, tau-scaled records",
                  "inference": "NUTS", "inference_model": "components", "inference_sampler": "pymc",
                  "log_constant": lik.method, "release_frames": int(frames.shape[0]),
                  "inference_description": "k = 1 Bingham likelihood exp(v'Av)/C(A), A = s(G - Sigma^-1), "
                                           f"s = {lik.scale:g}, log C by the {lik.method} "
                                           "(Kume & Wood 2005 for the saddlepoint)",
                  "privacy_cost": "none (post-processing of a release)"})
    attrs.update({f"diagnostic_{k}": v for k, v in diag.items()})
    tree.attrs.update({k: (str(v) if v is None else v) for k, v in attrs.items()})
    tree.attrs.update(S.inference_attrs())
    if not int(at.get("exact", 1)):
        warnings.warn("the release was drawn by uncertified MCMC: the likelihood assumes exact draws from the "
                      "mechanism", InferenceWarning, stacklevel=2)
    problems = []
    if diag["max_rhat"] > MAX_RHAT:
        problems.append(f"R-hat up to {diag['max_rhat']:.3f}")
    if min(diag["min_ess_bulk"], diag["min_ess_tail"]) < MIN_ESS_PER_CHAIN * chains:
        problems.append(f"ESS down to {min(diag['min_ess_bulk'], diag['min_ess_tail']):.0f}")
    if diag["divergences"]:
        problems.append(f"{diag['divergences']} divergences")
    if problems:
        warnings.warn("MCMC diagnostics failed (" + ", ".join(problems) + "): run longer (draws/tune) or raise "
                      "target_accept", InferenceWarning, stacklevel=2)
    return tree


# ---------------------------------------------------------------------------- simulation-based calibration
#: scalar summaries ranked by :func:`sbc_ranks`
SBC_SUMMARIES = ("explained_variance_ratio", "trace", "top_eigenvalue", "alignment", "frame_loglik")


def _sbc_summaries(Sm: np.ndarray, reference: np.ndarray, likelihood: FrameLikelihood) -> np.ndarray:
    """(..., 5) summaries: λ₁/tr S, tr S, λ₁, (u₁ᵀref)² (the top direction against a fixed public vector) and the
    log-likelihood of the released frame (a function of S and the data; its ranks are uniform too, and it is the
    summary most sensitive to a wrong likelihood scale)."""
    w, U = np.linalg.eigh(Sm)
    tr = np.sum(w, axis=-1)
    return np.stack([w[..., -1] / tr, tr, w[..., -1], (U[..., :, -1] @ reference) ** 2,
                     likelihood.logp(Sm).sum(axis=-1)], axis=-1)


def sbc_ranks(spec, n: int, replicates: int, *, prior=None, frames: int = 1, draws: int = 200, tune: int = 300,
              chains: int = 2, thin: int = 2, random_seed=None, scale_factor: float = 1.0, progress=None) -> dict:
    """Simulation-based calibration (Talts et al. 2018) of :func:`infer_components` for k = 1.

    Each replicate draws S from the prior, G = nS, ``frames`` frames (one release of ``frames`` draws) from the
    mechanism with the package's exact sampler
    (:func:`fdp_ppl.release` on an :class:`~fdp_ppl.expmech.FPCAFit` holding G), fits the posterior
    with :func:`infer_components`, and ranks the true value of each of :data:`SBC_SUMMARIES` among the thinned
    posterior draws. Uniform ranks for every summary are what a correct likelihood and sampler give.

    Parameters
    ----------
    spec : fdp_ppl.expmech.FPCASpec
        Bingham form, k = 1.
    n : int
        Public number of records.
    replicates : int
    prior : ComponentsPrior, optional
    frames : int
        Released frames per replicate (independent observations; more frames make the posterior sharper and the
        calibration check more sensitive to a wrong likelihood).
    draws, tune, chains, thin
        NUTS settings per fit; ranks use every ``thin``-th draw (L = chains·draws/thin draws, ranks 0..L).
    random_seed : int or None
    scale_factor : float
        Multiplies s in the simulated mechanism only (1: calibrated; e.g. √2 shows what a wrong scale does).
    progress : callable, optional
        Called with the replicate index after each fit.

    Returns
    -------
    dict
        ``ranks`` (replicates, 5) ints in [0, L], ``L``, ``summaries`` (the names), ``seconds`` per fit,
        ``divergences`` per fit.
    """
    import time

    from ..errors import SeededReleaseWarning
    from ..expmech import FPCAFit, FPCASpec
    import fdp_ppl as fp

    prior = _resolve_prior(prior)
    rng = np.random.default_rng(random_seed)
    m = spec.m
    ref = np.zeros(m)
    ref[0] = 1.0  # a fixed public direction (the first basis function)
    sim_spec = spec if scale_factor == 1.0 else FPCASpec(grid=spec.grid, m=m, k=1, epsilon=spec.epsilon * scale_factor,
                                                        tau=spec.tau, basis=spec.basis, sigma=spec.Sigma, form=spec.form)
    ranks, secs, divs = [], [], []
    for r in range(int(replicates)):
        S_true = prior.draw(m, 1, rng)[0]
        fit = FPCAFit(spec=sim_spec, gram=n * S_true, n=int(n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededReleaseWarning)
            tree = fp.release(fit, fp.ExponentialMechanism(), draws=int(frames),
                              random_seed=int(rng.integers(2**31 - 1)))
        if scale_factor != 1.0:  # the fit reads the nominal epsilon
            tree.attrs["epsilon"] = spec.epsilon
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = infer_components(tree, prior, draws=draws, tune=tune, chains=chains,
                                    random_seed=int(rng.integers(2**31 - 1)), posterior_predictive=False)
        secs.append(time.perf_counter() - t0)
        divs.append(int(post.attrs.get("diagnostic_divergences", 0)))
        Sd = np.asarray(post[S.POSTERIOR]["second_moment"].values)[:, ::thin].reshape(-1, m, m)
        at, released, sigma, _, _ = _read_fpca(tree)
        lik = FrameLikelihood.build(released, sigma, _likelihood_scale(at), int(n))
        truth = _sbc_summaries(S_true, ref, lik)
        ranks.append(np.sum(_sbc_summaries(Sd, ref, lik) < truth, axis=0))
        if progress is not None:
            progress(r)
    L = chains * len(range(0, draws, thin))
    return {"ranks": np.asarray(ranks), "L": L, "summaries": SBC_SUMMARIES, "seconds": np.asarray(secs),
            "divergences": np.asarray(divs)}


def rank_uniformity(ranks: np.ndarray, L: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Chi-square test that SBC ranks in [0, L] are uniform, per column: (statistics, p-values).

    Ranks are grouped into ``bins`` equal-width bins of the L + 1 possible values (L + 1 divisible by ``bins``
    keeps the cells equiprobable; otherwise the expected counts are computed exactly)."""
    from scipy import stats

    ranks = np.atleast_2d(np.asarray(ranks))
    if ranks.shape[0] == 1 and ranks.ndim == 2 and ranks.shape[1] > 1 and ranks.size == ranks.shape[1]:
        ranks = ranks.T
    edges = np.linspace(0, L + 1, bins + 1)
    values = np.arange(L + 1)
    expected = np.histogram(values, edges)[0] / (L + 1)
    stat, pval = [], []
    for col in ranks.T:
        counts = np.histogram(col, edges)[0]
        e = expected * col.size
        st = float(np.sum((counts - e) ** 2 / e))
        stat.append(st)
        pval.append(float(stats.chi2.sf(st, bins - 1)))
    return np.asarray(stat), np.asarray(pval)


__all__ = ["bingham_log_constant", "bingham_log_constant_op", "bingham_constant_check", "ComponentsPrior",
           "FrameLikelihood", "components_model", "infer_components", "summarise_second_moment", "METHODS",
           "SERIES_MAX_SPREAD", "initial_values", "sbc_ranks", "rank_uniformity", "SBC_SUMMARIES"]
