"""The normalising constant of the Bingham law on the unit sphere, ``log E_U[exp(xᵀAx)] = log ₁F₁(½; m/2; A)``,
and its gradient: the one numeric implementation, beside the law's sampler and its other constants
(:mod:`fdp_ppl.fpca.samplers`), used by the sequential mechanism's law (:mod:`fdp_ppl.fpca.sequential`) and by
inference (:mod:`fdp_ppl.inference.bingham` wraps it as a PyTensor Op; :mod:`fdp_ppl.inference.stiefel` builds the
matrix Bingham constants from it).

The density of a released frame is ``exp(vᵀAv)/C(A)`` w.r.t. the uniform law on S^{m−1}; the normaliser is a
hypergeometric function of matrix argument,

    C(A) = E_U[exp(xᵀAx)] = ₁F₁(1/2; m/2; A)

(Kume & Wood 2005; Chikuse 2003). This module computes log C accurately and its gradient E[x xᵀ] (Bingham mean
of x xᵀ).

Normalising constant (:func:`bingham_log_constant`, ``method=``):

* ``"series"`` — exact. With a_i the eigenvalues of A shifted so the smallest is 0 (C(A + cI) = e^c C(A)),
  ``₁F₁(1/2; m/2; a) = Σ_N c_N / (m/2)_N`` where c_N is the z^N coefficient of ``Π_i (1 − a_i z)^{−1/2}``
  (expand each factor's binomial series and group the multi-index series by total degree; derived here [D]
  and checked against the Bessel closed form at m = 2 and a one-dimensional integral at m = 3 to 1e-13,
  tests/inference/test_components.py). Every term is positive, so the sum has no cancellation; its cost grows like
  (largest shifted eigenvalue)², so it is used up to :data:`SERIES_MAX_SPREAD`. With its gradient.
* ``"inversion"`` — exact at any spread, no gradient: the density at its mean of a weighted χ² by Fourier
  inversion (m ≥ 4), closed forms at m ≤ 3 (:func:`_inversion`). Agrees with the series to ~1e-9 at m = 3–40
  (tests/fpca/test_sequential.py).
* ``"exact"`` — the series up to :data:`SERIES_MAX_SPREAD`, the inversion beyond (no gradient beyond):
  :func:`bingham_log_normaliser`.
* ``"saddlepoint"`` — the second-order saddlepoint approximation ĉ₃ of Kume & Wood (2005): log C within
  0.013–0.045 of the series on the mechanism's parameters at m = 2–40 (benchmarks/bench_sbc_fpca.py), i.e. a
  relative error of 1–5 % in C that varies slowly with A. With its gradient.
* ``"monte-carlo"`` — importance sampling from the ACG envelope of Kent et al. (2018) (tests only).
* ``"auto"`` — series while the spread of the eigenvalues is at most :data:`SERIES_MAX_SPREAD`, else the
  saddlepoint (a method with a gradient at every spread, for samplers; recorded in the result's attrs).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from ..errors import InputError
from .samplers import acg_envelope

#: largest spread max(a) − min(a) of the shifted eigenvalues served by the exact series (its cost is quadratic in
#: the spread: about 20 ms at 2000); larger spreads use the saddlepoint approximation
SERIES_MAX_SPREAD = 4000.0
#: the series stops once its terms fall below exp(−TAIL_NATS) times the running sum (and decrease)
TAIL_NATS = 42.0
#: geometric sequences α^n (α < 1) in the series' convolutions are cut where they fall below this: the dropped
#: entries change a coefficient γ_N (≥ 1/(2√(N+1))) by at most TINY·(N+1)^{p/2+1}, below 1e-200 relatively for
#: p ≤ 100 and N ≤ 10⁴ (far below rounding), and they would be subnormal numbers, whose arithmetic costs 5–10×
#: (a convolution at spread 500 took 1.5 ms instead of 0.25 ms)
TINY = 1e-300
METHODS = ("auto", "exact", "series", "inversion", "saddlepoint", "monte-carlo")


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
        h = np.stack([np.convolve(gam[:-1], _powers(ai, n_max))[:n_max] for ai in alpha], axis=1)
    else:
        from scipy import signal

        h = np.stack([signal.lfilter([1.0], [1.0, -ai], gam[:-1]) for ai in alpha], axis=1)  # (n_max, p)
    Np = Ns[1:]
    with np.errstate(divide="ignore"):
        lg = (math.log(0.5) + (Np - 1)[:, None] * logM + np.log(h) - log_poch[Np][:, None])
    ex = np.exp(_lse(lg, axis=0) - run)
    return logC, ex / ex.sum()  # Σ E[x_i²] = 1 (renormalised against rounding)


def _kept(alpha: float, n: int) -> int:
    """How many of ``α^j``, j = 0..n−1 (α ∈ [0, 1]), are kept: those down to :data:`TINY` (no subnormal numbers)."""
    if alpha <= 0.0:
        return 1
    return n if alpha >= 1.0 else min(n, int(math.log(TINY) / math.log(alpha)) + 1)


def _powers(alpha: float, n: int) -> np.ndarray:
    """``α^j`` for j = 0..n−1 (α ∈ [0, 1]), cut where it falls below :data:`TINY`."""
    return alpha ** np.arange(_kept(alpha, n))


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
            # (½)_n α^n / n! ≤ α^n: cut with α^n below TINY (subnormal numbers; see TINY)
            f = np.concatenate([[1.0], np.cumprod(ai * ratio[: _kept(ai, n_max + 1) - 1])])
            gam = np.convolve(gam, f)[: n_max + 1]
        # α = 1 (the largest) is never cut, so gam has its full length
        return gam if gam.size == n_max + 1 else np.pad(gam, (0, n_max + 1 - gam.size))
    powers = np.cumprod(np.broadcast_to(alpha, (n_max, p)), axis=0).sum(axis=1) / 2.0  # P_k/2, k = 1..n_max
    gam = np.empty(n_max + 1)
    gam[0] = 1.0
    for N in range(1, n_max + 1):
        gam[N] = np.dot(powers[:N], gam[N - 1::-1]) / N
    return gam


def _saddle(a: np.ndarray):
    """Saddlepoint quantities: μ_i = ĉ − a_i > 0 with Σ 1/(2μ_i) = 1 (Kume & Wood 2005), via the ACG
    envelope equation of :func:`fdp_ppl.fpca.samplers.acg_envelope` (the same root: μ_i = b/2 + λ_i)."""
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
    (:func:`fdp_ppl.fpca.samplers.acg_envelope`, density ``det(Ω)^{1/2} (xᵀΩx)^{−p/2}`` w.r.t. U), so the
    weights stay bounded where plain uniform draws miss the mode (large p or spread)."""
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


def _inversion(a: np.ndarray) -> float:
    """Exact log E_U[exp(xᵀAx)] on S^{q−1} from the eigenvalues ``a`` (q,) of A, at any spread (no gradient).

    With −A's eigenvalues shifted to λ_i ≥ 0 (smallest 0; shift c = −λ_max(A)) and b the root of
    ``Σ_i 1/(b + 2λ_i) = 1`` (:func:`~fdp_ppl.fpca.samplers.acg_envelope`), p_i = 1/(b + 2λ_i) sums to 1 and

        E_U[exp(xᵀAx)] = e^{λ_max(A) + b/2} Γ(q/2) Π_i (2p_i)^{1/2} f_T(1),   T = Σ_i p_i Z_i²,

    Z_i i.i.d. N(0, 1) (the identity (3) of :func:`~fdp_ppl.fpca.samplers.acg_acceptance_bound`; Kume & Wood
    2005 write the normaliser as the density of a weighted χ² at 1). E T = 1: f_T is evaluated at its mean, where
    it is of order one (≥ ~(2πe)^{−1/2}/2), so the Fourier inversion
    ``f_T(1) = π⁻¹ ∫_0^∞ |φ(s)| cos(θ(s) − s) ds``, ``|φ(s)| = Π(1 + 4p_i²s²)^{−1/4}``, ``θ(s) = ½ Σ arctan(2p_is)``,
    has no cancellation; it is computed by QUADPACK's Fourier-integral rule (QAWF) in two parts (q ≥ 4, ~30 ms
    per call). q = 1: A; q = 2: the Bessel closed form ``e^{(a_1+a_2)/2} I_0((a_1−a_2)/2)``; q = 3: Archimedes
    (the coordinate along the top eigenvector is uniform on [−1, 1]) and the circle's closed form,
    ``∫_0^1 exp(a_3t² + (1−t²)(a_1+a_2)/2) I_0((1−t²)(a_2−a_1)/2) dt`` by adaptive quadrature (~1 ms).
    """
    a = np.sort(np.asarray(a, dtype=float))
    q = a.size
    if q == 1:
        return float(a[0])
    top = float(a[-1])
    if q == 2:
        d = 0.5 * float(a[1] - a[0])
        return 0.5 * float(a[0] + a[1]) + math.log(float(special.ive(0, d))) + d
    if q == 3:
        lo, mid = float(a[0]) - top, float(a[1]) - top  # ≤ 0: the integrand is ≤ 1

        def archimedes(t):
            r2 = 1.0 - t * t
            d = 0.5 * (mid - lo) * r2
            return math.exp(0.5 * (lo + mid) * r2 + d) * float(special.ive(0, d))

        brk = [p for p in (1.0 - 1.0 / math.sqrt(1.0 - lo), 1.0 - 1.0 / (1.0 - lo)) if 0.0 < p < 1.0]
        val, _ = integrate.quad(archimedes, 0.0, 1.0, points=brk or None, limit=200, epsabs=0.0, epsrel=1e-13)
        return top + math.log(val)
    env = acg_envelope(np.diag(a))
    b = float(env["b"])
    p = 1.0 / (b + 2.0 * env["lam"])
    if np.all(env["lam"] == 0.0):
        return top

    def mod_arg(s):
        return math.exp(-0.25 * float(np.sum(np.log1p(4.0 * p * p * s * s)))), 0.5 * float(np.sum(np.arctan(2.0 * p * s)))

    def re_part(s):
        r, t = mod_arg(s)
        return r * math.cos(t)

    def im_part(s):
        r, t = mod_arg(s)
        return r * math.sin(t)

    c, _ = integrate.quad(re_part, 0.0, np.inf, weight="cos", wvar=1.0, limlst=200)
    s_, _ = integrate.quad(im_part, 0.0, np.inf, weight="sin", wvar=1.0, limlst=200)
    f_t = (c + s_) / math.pi
    return top + 0.5 * b + float(special.gammaln(0.5 * q)) + 0.5 * float(np.sum(np.log(2.0 * p))) + math.log(f_t)


def bingham_log_normaliser(A) -> float:
    """Exact ``log E_U[exp(xᵀAx)]`` (= log ₁F₁(½; q/2; A)) on S^{q−1}, U the uniform probability law, at any
    spread: the positive series up to :data:`SERIES_MAX_SPREAD`, the Fourier inversion of :func:`_inversion`
    beyond (:func:`bingham_log_constant` with ``method="exact"``).

    Parameters
    ----------
    A : ndarray, shape (q, q)
        Symmetric (dimensionless).

    Returns
    -------
    float

    Raises
    ------
    InputError
        A not a finite square matrix.

    Examples
    --------
    >>> import numpy as np
    >>> round(bingham_log_normaliser(np.zeros((3, 3))), 12), round(bingham_log_normaliser(2.0 * np.eye(4)), 12)
    (0.0, 2.0)
    """
    return float(bingham_log_constant(A, "exact"))


def bingham_log_constant(A, method: str = "auto", *, grad: bool = False, draws: int = 200_000,
                         random_seed=None):
    """Log normalising constant of the Bingham law on the unit sphere, ``log E_U[exp(xᵀAx)] = log ₁F₁(½; m/2; A)``.

    The constant is w.r.t. the uniform probability law U on S^{m−1} (so A = 0 gives 0), the convention of
    :meth:`fdp_ppl.fpca.FPCASpec.log_density`.

    Parameters
    ----------
    A : ndarray, shape (m, m) or (m,)
        Symmetric parameter, or its eigenvalues (dimensionless).
    method : {"auto", "exact", "series", "inversion", "saddlepoint", "monte-carlo"}
        See the module docstring. ``"auto"``: the exact series up to :data:`SERIES_MAX_SPREAD`, else the
        saddlepoint; ``"exact"``: the series, else the inversion.
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
        A not a finite square matrix, unknown method, ``"series"`` beyond its spread, or a gradient asked of
        ``"inversion"`` (or of ``"exact"`` beyond the series' spread).

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
    if method in ("auto", "exact"):
        method = "series" if np.ptp(w) <= SERIES_MAX_SPREAD else ("saddlepoint" if method == "auto" else "inversion")
    if method == "inversion":
        if grad:
            raise InputError("the inversion formula has no gradient", "use method='series' or 'saddlepoint'")
        return _inversion(w)
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


__all__ = ["bingham_log_constant", "bingham_log_normaliser", "bingham_constant_check", "METHODS",
           "SERIES_MAX_SPREAD"]
