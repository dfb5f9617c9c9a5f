"""Calibration constants for the Gaussian mechanism.

* Classical: ``σ = sqrt(2 log(2/δ)) Δ/ε``, valid for ε <= 1 (Hall et al.
  2013, Corollary 9; Mirshani et al. 2019, Theorem 3.2). Refused for ε > 1.
* Analytic (Balle & Wang 2018, Theorem 8): the smallest σ with
  ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ``; exact for every ε > 0.
  In infinite dimensions the privacy loss of the Gaussian mechanism is the
  scalar one with sensitivity ``Δ = ‖f_D − f_D'‖_C`` (``specs/gaussian-banach.md`` §1.6).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from ..errors import check_delta, check_epsilon, check_positive

CALIBRATIONS = ("classical", "analytic")


def gaussian_delta(epsilon: float, sensitivity: float, sigma: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with noise sd σ and sensitivity Δ.

    ``δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)`` (Balle & Wang 2018,
    Theorem 8), evaluated with ``log_ndtr`` for stability.

    Examples
    --------
    The classical σ for (ε, δ) = (1, 1e-5) spends a far smaller δ than it claims:

    >>> import fdp_ppl as fp
    >>> sigma = fp.classical_sigma(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> f"{fp.gaussian_delta(epsilon=1.0, sensitivity=1.0, sigma=sigma):.2e}"
    '2.43e-08'

    See Also
    --------
    analytic_sigma : the σ at which this δ equals the target.
    """
    eps = float(epsilon)
    r = float(sensitivity) / float(sigma)
    if r == 0:
        return 0.0
    a = r / 2 - eps / r
    b = -r / 2 - eps / r
    return float(np.exp(special.log_ndtr(a)) - np.exp(eps + special.log_ndtr(b)))


def classical_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``σ = sqrt(2 log(2/δ)) Δ/ε`` (Hall et al. 2013, Cor. 9; Mirshani et al. 2019, Thm 3.2).

    Raises
    ------
    ValueError
        ε > 1 (the bound is not valid there; use ``calibration="analytic"``),
        ε <= 0, δ outside (0, 1), Δ < 0.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> round(fp.classical_sigma(epsilon=1.0, delta=1e-5, sensitivity=1.0), 4)   # sqrt(2 log(2/δ)) Δ/ε
    4.9409
    >>> fp.classical_sigma(epsilon=2.0, delta=1e-5, sensitivity=1.0)
    Traceback (most recent call last):
    ...
    ValueError: the classical Gaussian calibration is only valid for epsilon <= 1 (got 2); use calibration='analytic'

    See Also
    --------
    analytic_sigma : the smallest σ, for any ε.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    if eps > 1:
        raise ValueError(f"the classical Gaussian calibration is only valid for epsilon <= 1 (got {eps:g}); "
                         "use calibration='analytic'")
    return float(np.sqrt(2 * np.log(2 / dl)) * sensitivity / eps)


def analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ with ``gaussian_delta(ε, Δ, σ) <= δ`` (Balle & Wang 2018), by root finding.

    Raises
    ------
    ValueError
        ε <= 0, δ outside (0, 1), Δ <= 0.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> sigma = fp.analytic_sigma(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(sigma, 4)                                  # the classical σ is 4.9409
    3.7306
    >>> fp.gaussian_delta(1.0, 1.0, sigma) <= 1e-5       # spends exactly what it claims
    True
    >>> round(fp.analytic_sigma(1.0, 1e-5, sensitivity=0.1) / sigma, 4)   # σ is linear in Δ
    0.1

    See Also
    --------
    GaussianMechanism : calibrates its noise with it (``calibration="analytic"``).
    gaussian_delta, classical_sigma
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    d = check_positive(sensitivity, "sensitivity")

    def f(log_s):
        return gaussian_delta(eps, d, np.exp(log_s)) - dl

    lo, hi = np.log(d) - 10, np.log(d) + 10
    while f(lo) < 0:
        lo -= 10
    while f(hi) > 0:
        hi += 10
    root = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14)
    s = float(np.exp(root))
    # step up until δ(σ) <= δ holds exactly in floating point
    while gaussian_delta(eps, d, s) > dl:
        s *= 1 + 1e-12
    return s


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float, calibration: str = "classical") -> float:
    """σ for a target (ε, δ) with the named calibration ("classical" or "analytic")."""
    if calibration == "classical":
        return classical_sigma(epsilon, delta, sensitivity)
    if calibration == "analytic":
        return analytic_sigma(epsilon, delta, sensitivity)
    raise ValueError(f"unknown calibration {calibration!r}; use one of {CALIBRATIONS}")


__all__ = ["gaussian_delta", "classical_sigma", "analytic_sigma", "gaussian_sigma", "CALIBRATIONS"]
