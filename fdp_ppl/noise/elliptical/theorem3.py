"""Corrected Theorem 3 of Reimherr & Awan (2019): ε of an elliptical perturbation
by a one-dimensional maximisation, and the σ that gives a target ε.

Works on any object with ``log_generator(y)`` and ``epsilon_closed_form(a)`` /
``a_closed_form(ε)`` (the families of :mod:`fdp_ppl.noise.elliptical.families`,
which import this module; it imports none of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ...errors import check_epsilon, check_positive

_TINY = 1e-300


class NoPureDPError(ValueError):
    """The noise family cannot give ε-DP for any σ (pole at the centre or light tails)."""


@dataclass(frozen=True)
class EpsilonResult:
    """ε of an elliptical perturbation at ``a = Δ/σ``.

    Attributes
    ----------
    epsilon : float
        ``inf`` when no ε-DP.
    finite : bool
    reason : str
        Why ε is infinite (empty when finite).
    a : float
        ``Δ/σ``.
    argmax : float
        Whitened radius ``c*`` attaining the supremum (nan if closed form / infinite).
    method : str
        "closed-form" or "numeric".
    """

    epsilon: float
    finite: bool
    reason: str = ""
    a: float = float("nan")
    argmax: float = float("nan")
    method: str = "numeric"

    def __float__(self):
        return float(self.epsilon)


def _pole_check(lf) -> str:
    y0 = 10.0 ** -np.arange(2, 300, 10, dtype=float)
    l0 = np.array([lf(y) for y in y0])
    if not np.all(np.isfinite(l0)) or l0[-1] - l0[-2] > 1e-3:
        return ("f(0) = inf: the density has a pole at the centre, so the density ratio is unbounded near it "
                "(Theorem 3 needs f(0) < inf)")
    return ""


def epsilon_from_generator(log_f, a: float, *, t_hi_rel: float = 1e6, n_grid: int = 4001,
                           tail_tol: float = 1e-7) -> EpsilonResult:
    """ε by the one-dimensional maximisation of corrected Theorem 3.

    ``ε(a) = sup_{c >= a} [log f((c − a)²) − log f(c²)]`` over a log-spaced grid
    ``c = a + t``, ``t ∈ [1e-10 a, t_hi_rel · max(a, 1)]``, refined by bounded
    Brent search around the best grid point (``specs/elliptical.md`` §5a; huge
    ``c`` is avoided because ``h(c) − h(c − a)`` cancels catastrophically).

    Parameters
    ----------
    log_f : callable
        ``log f(y)`` of the squared Mahalanobis distance (scalar → scalar;
        normalising constant irrelevant).
    a : float
        ``Δ/σ >= 0``.

    Returns
    -------
    EpsilonResult
        ``finite=False`` with a reason when ``f(0) = ∞`` or the tail ratio (2)
        is unbounded.

    Raises
    ------
    ValueError
        ``a < 0`` or ``f`` increasing somewhere (not a valid generator).
    """
    a = float(a)
    if not np.isfinite(a) or a < 0:
        raise ValueError(f"a = Delta/sigma must be finite and >= 0, got {a!r}")
    if a == 0:
        return EpsilonResult(0.0, True, a=a, argmax=0.0)

    def lf(y):
        return float(log_f(max(float(y), _TINY)))

    yy = np.geomspace(1e-8, 1e8, 161)
    ly = np.array([lf(y) for y in yy])
    if np.any(np.diff(ly) > 1e-9 * (1 + np.abs(ly[1:]))):
        raise ValueError("the density generator f must be nonincreasing (Theorem 3)")
    reason = _pole_check(lf)
    if reason:
        return EpsilonResult(float("inf"), False, reason, a=a)

    def phi(c):
        return lf((c - a) ** 2) - lf(c * c)

    t = np.r_[0.0, np.geomspace(1e-10 * a, t_hi_rel * max(a, 1.0), n_grid)]
    v = np.array([phi(a + ti) for ti in t])
    if not np.all(np.isfinite(v)):
        return EpsilonResult(float("inf"), False, "the density ratio is not finite", a=a)
    if v[-1] - v[-50] > tail_tol:
        return EpsilonResult(float("inf"), False,
                             "the tail ratio f((c-a)^2)/f(c^2) is unbounded as c -> inf (condition (2) fails: "
                             "tails lighter than exponential)", a=a)
    i = int(np.argmax(v))
    best, cstar = float(v[i]), a + t[i]
    if 0 < i < len(t) - 1:
        r = optimize.minimize_scalar(lambda s: -phi(a + s), bounds=(t[i - 1], t[i + 1]), method="bounded",
                                     options={"xatol": 1e-14})
        if -r.fun > best:
            best, cstar = float(-r.fun), a + float(r.x)
    return EpsilonResult(max(best, 0.0), True, a=a, argmax=cstar)


def epsilon_from_family(family, a: float, method: str = "auto") -> EpsilonResult:
    """ε at ``a = Δ/σ`` for an :class:`~fdp_ppl.noise.elliptical.EllipticalFamily`.

    ``method="auto"`` uses the closed form where one exists (t, K-norm,
    Laplace d = 1, power-exponential) and the numeric maximisation otherwise;
    infinite results always carry the reason from the numeric checks.
    """
    if method not in ("auto", "closed-form", "numeric"):
        raise ValueError(f"unknown method {method!r}; use 'auto', 'closed-form' or 'numeric'")
    a = float(a)
    if method == "numeric":
        return epsilon_from_generator(family.log_generator, a)
    cf = family.epsilon_closed_form(a) if a > 0 else 0.0
    if cf is None:
        if method == "closed-form":
            raise ValueError(f"{family!r} has no closed-form epsilon; use method='numeric'")
        return epsilon_from_generator(family.log_generator, a)
    if not np.isfinite(cf):
        res = epsilon_from_generator(family.log_generator, a)
        return EpsilonResult(float("inf"), False, res.reason or "closed form is infinite", a=a, method="closed-form")
    return EpsilonResult(float(cf), True, a=a, method="closed-form")


def calibrate_sigma(family, epsilon: float, sensitivity: float = 1.0,
                    method: str = "auto") -> float:
    """Smallest σ such that ``T_D + σX`` is ε-DP for Mahalanobis sensitivity Δ.

    Closed forms: t ``σ = Δ/(2√ν sinh(ε/(ν+d)))`` [D]; K-norm ``Δ/ε``; Laplace
    (d = 1) ``√2Δ/ε``; power-exponential ``Δ/ε^{1/p}``. Otherwise (or with
    ``method="numeric"``) ``ε(a) = target`` is solved for ``a = Δ/σ`` by
    ``scipy.optimize.brentq`` (``ε(a)`` is nondecreasing).

    Raises
    ------
    NoPureDPError
        The family cannot give ε-DP (Gaussian; Laplace in d >= 2), with the reason.
    ValueError
        ε <= 0 or Δ <= 0.
    """
    eps = check_epsilon(epsilon)
    delta_s = check_positive(sensitivity, "sensitivity")
    probe = epsilon_from_generator(family.log_generator, 1.0)
    if not probe.finite:
        raise NoPureDPError(f"{family!r} cannot give epsilon-DP for any sigma: {probe.reason}. "
                            "Use an (epsilon, delta) calibration or a t / K-norm family")
    a = family.a_closed_form(eps) if method != "numeric" else None
    if a is None:
        g = lambda la: epsilon_from_generator(family.log_generator, math.exp(la)).epsilon - eps  # noqa: E731
        lo, hi = -5.0, 5.0
        while g(lo) > 0:
            lo -= 5.0
        while g(hi) < 0:
            hi += 5.0
        a = math.exp(optimize.brentq(g, lo, hi, xtol=1e-13, rtol=1e-13))
    return delta_s / a



__all__ = ["NoPureDPError", "EpsilonResult", "epsilon_from_generator", "epsilon_from_family", "calibrate_sigma"]
