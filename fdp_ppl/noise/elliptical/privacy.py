"""Privacy of elliptical perturbations (Reimherr & Awan 2019).

Finite dimensions (pure ε-DP), corrected Theorem 3
    With ``a = Δ/σ`` (Δ in the Mahalanobis / Cameron–Martin norm of the
    dispersion Σ) and the density generator ``f``,
    ``ε(a) = sup_{c >= a} log f((c − a)²) − log f(c²)``.
    The paper prints ``σ^{-2}Δ`` inside ``f``; the proof (σ = 1, then
    "replace Δ with σ^{-1}Δ") and the K-norm example (ε = Δ/σ) need
    ``σ^{-1}Δ`` (``specs/elliptical.md`` §2, erratum). Conditions checked:
    ``f`` nonincreasing, ``f(0) < ∞`` and the tail ratio (2) bounded.
    ``ε(a)`` is nondecreasing in ``a`` [D], so σ for a target ε is a 1-D root.

Infinite dimensions ((ε, δ)-DP), corrected Theorem 5
    An elliptical process is ``σ √W Z`` with ``Z ~ GP(0, C)`` (Theorem 1).
    Conditional on ``W = w`` the noise sd is ``σ√w``, so the corrected bound is
    ``δ = 2 E[(δ'/2)^{W}] = 2 M_W(−L)``, ``L = log(2/δ') = ε²σ²/(2Δ²)``, i.e.
    the moment generating function of ``W = V²``; the printed ``M_V`` is
    anti-conservative. The exact profile, since ``W`` is recoverable from an
    infinite-dimensional output (Theorem 4), is ``δ(ε) = E_W[δ_G(ε; Δ/(σ√W))]``
    with ``δ_G`` the Gaussian profile (Balle & Wang 2018) [D]; in finite ``d``
    it is an upper bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from ...accounting import gaussian_delta
from ...errors import InputError, check_delta, check_epsilon, check_positive
from .families import (EllipsoidalKNorm, EllipticalFamily, MixingLaw, MultivariateLaplace, MultivariateNormal,
                       MultivariateT, mixing_law)
from .theorem3 import EpsilonResult, NoPureDPError, calibrate_sigma, epsilon_from_family, epsilon_from_generator

__all__ = ["EpsilonResult", "NoPureDPError", "epsilon_from_generator", "epsilon_from_family", "privacy_epsilon",
           "calibrate_sigma", "epsilon_theorem3_printed", "MixingLaw", "mixing_law", "delta_exact",
           "delta_theorem5", "sigma_for_delta", "delta_monte_carlo", "delta_monte_carlo_finite",
           "mahalanobis_sensitivity"]

_TINY = 1e-300
#: largest σ/Δ searched by :func:`sigma_for_delta` (beyond it δ is at its numerical floor)
_SIGMA_CEILING = 1e12


def privacy_epsilon(family: EllipticalFamily, sensitivity: float, sigma: float, method: str = "auto") -> EpsilonResult:
    """ε of ``T_D + σX`` with Mahalanobis/Cameron–Martin sensitivity Δ (corrected Theorem 3)."""
    check_positive(sigma, "sigma")
    if sensitivity < 0:
        raise ValueError("sensitivity must be >= 0")
    return epsilon_from_family(family, float(sensitivity) / float(sigma), method)


def epsilon_theorem3_printed(family: EllipticalFamily, sensitivity: float, sigma: float) -> float:
    """Theorem 3 *as printed*: ``sup_{c >= Δ/σ} log f((c − Δ/σ²)²) − log f(c²)`` — **wrong** unless σ = 1.

    Kept only to show the erratum (``specs/elliptical.md`` §2): for the K-norm
    it gives ``Δ/σ²`` while the density ratio attains ``Δ/σ``.
    """
    lo, shift = float(sensitivity) / sigma, float(sensitivity) / sigma**2
    c = lo + np.r_[0.0, np.geomspace(1e-10, 1e6 * max(lo, 1.0), 4001)]
    v = family.log_generator((c - shift) ** 2) - family.log_generator(c * c)
    return float(np.max(v))


def mahalanobis_sensitivity(differences, dispersion=None, basis=None) -> float:
    """``max ‖Σ^{-1/2} h‖₂`` over the rows ``h`` of ``differences`` (n, d).

    With ``basis`` (an :class:`~fdp_ppl.spaces.Eigenbasis`) the rows are
    coefficient differences and the Cameron–Martin norm
    ``Eigenbasis.norm_cameron_martin`` is used (dispersion ``C``). For a
    summary's *global* sensitivity from public quantities use
    ``summary.sensitivity("cameron-martin")``; this helper evaluates given
    neighbouring pairs (e.g. brute force in tests).
    """
    h = np.atleast_2d(np.asarray(differences, dtype=float))
    if basis is not None:
        return float(np.max(basis.norm_cameron_martin(h)))
    if dispersion is None:
        return float(np.max(np.linalg.norm(h, axis=1)))
    L = np.linalg.cholesky(np.asarray(dispersion, dtype=float))
    from scipy.linalg import solve_triangular

    return float(np.max(np.linalg.norm(solve_triangular(L, h.T, lower=True), axis=0)))


# ====================================================================== infinite dimensions
def _law(law) -> MixingLaw:
    if isinstance(law, MixingLaw):
        return law
    if isinstance(law, EllipticalFamily):
        name = {MultivariateNormal: "gaussian", MultivariateT: "t", MultivariateLaplace: "laplace",
                EllipsoidalKNorm: "knorm"}.get(type(law))
        if name is None:
            raise ValueError(f"{law!r} is not a Gaussian scale mixture handled here")
        return MixingLaw(name, nu=getattr(law, "nu", None), d=law.d if name == "knorm" else None)
    raise ValueError("law must be a MixingLaw (e.g. mixing_law('t', nu=3)) or an elliptical family")


def delta_exact(epsilon: float, sensitivity: float, sigma: float, law) -> float:
    """Exact δ(ε) of an elliptical process: ``E_W[gaussian_delta(ε, Δ, σ√W)]`` [D].

    Tight in infinite dimensions (W is a function of the output, Theorem 4);
    an upper bound for a release of finitely many coordinates.

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Δ in the Cameron–Martin norm of the dispersion C.
    sigma : float
    law : MixingLaw or EllipticalFamily

    Returns
    -------
    float
    """
    eps = check_epsilon(epsilon)
    law = _law(law)
    d, s = float(sensitivity), check_positive(sigma, "sigma")
    return law.expect(lambda w: min(max(gaussian_delta(eps, d, s * math.sqrt(w)), 0.0), 1.0))


def delta_theorem5(epsilon: float, sensitivity: float, sigma: float, law, corrected: bool = True) -> float:
    """δ of Theorem 5 for ``σ² = 2 log(2/δ') Δ²/ε²``, i.e. ``L = log(2/δ') = ε²σ²/(2Δ²)``.

    ``corrected=True``: ``δ = 2 M_W(−L)`` (MGF of ``W = V²``, the erratum fix);
    ``corrected=False``: the printed ``2 M_V(−L)`` (anti-conservative; kept
    for the test that shows it).

    Raises
    ------
    ValueError
        ε > 1: the classical Gaussian bound inside the theorem is refused there
        (DESIGN invariant 4); use :func:`delta_exact`.
    """
    eps = check_epsilon(epsilon)
    if eps > 1:
        raise ValueError(f"Theorem 5 uses the classical Gaussian bound, valid here for epsilon <= 1 (got {eps:g}); "
                         "use delta_exact / method='exact'")
    law = _law(law)
    L = (eps * float(sigma) / float(sensitivity)) ** 2 / 2.0
    lm = law.log_mgf_w(L) if corrected else law.log_mgf_v(L)
    return float(min(2.0 * math.exp(lm), 1.0))


def sigma_for_delta(epsilon: float, delta: float, sensitivity: float, law, method: str = "exact") -> float:
    """Smallest σ with ``(ε, δ)``-DP for an elliptical process (Δ in the Cameron–Martin norm).

    Parameters
    ----------
    method : {"exact", "theorem5"}
        "exact": root of :func:`delta_exact` (``brentq`` in log σ), then stepped
        up until ``δ(σ) <= δ``; "theorem5": corrected Theorem 5, solve
        ``2 M_W(−L) = δ`` for L, ``σ = Δ √(2L)/ε`` (ε <= 1 only).

    Raises
    ------
    ValueError
        Bad ε, δ, Δ; unknown method; ε > 1 with "theorem5".
    InputError
        δ below the numerical floor of the exact δ (about 2e-17, the tail
        tolerance of :meth:`MixingLaw.expect`).
    """
    eps, dl = check_epsilon(epsilon), check_delta(delta)
    dsens = check_positive(sensitivity, "sensitivity")
    law = _law(law)
    if method == "theorem5":
        if eps > 1:
            raise ValueError("Theorem 5 (classical Gaussian bound) is refused for epsilon > 1; use method='exact'")
        target = math.log(dl / 2.0)
        if target >= 0:
            return 0.0
        f = lambda ll: law.log_mgf_w(math.exp(ll)) - target  # noqa: E731
        lo, hi = -30.0, 5.0
        while f(hi) > 0:
            hi += 5.0
        L = math.exp(optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14))
        return dsens * math.sqrt(2 * L) / eps
    if method != "exact":
        raise ValueError(f"unknown method {method!r}; use 'exact' or 'theorem5'")

    def g(ls):
        return math.log(max(delta_exact(eps, dsens, math.exp(ls), law), 1e-320)) - math.log(dl)

    floor = delta_exact(eps, dsens, dsens * _SIGMA_CEILING, law)
    if floor > dl:
        raise InputError(f"delta={dl:g} is below what the exact delta of the {law.name} process can resolve "
                         f"(about {floor:.1g}: the numerical integration over W has that tail tolerance)",
                         "use delta >= 1e-15, or method='theorem5' (epsilon <= 1)")
    lo, hi = math.log(dsens) - 3, math.log(dsens) + 3
    while g(lo) < 0:
        lo -= 3
    while g(hi) > 0:
        hi += 3
    s = math.exp(optimize.brentq(g, lo, hi, xtol=1e-10, rtol=1e-10))
    while delta_exact(eps, dsens, s, law) > dl:
        s *= 1 + 1e-9
    return s


def delta_monte_carlo(epsilon: float, sensitivity: float, sigma: float, law, n: int = 200_000,
                      random_seed=None) -> tuple[float, float]:
    """Monte Carlo δ(ε) of the W-revealing (infinite-dimensional) privacy loss.

    Draws ``W``; given W the privacy loss is ``N(η, 2η)``, ``η = Δ²/(2σ²W)``;
    ``δ(ε) = E[(1 − e^{ε − loss})_+]``. Returns (estimate, standard error).
    Independent of :func:`delta_exact` (no Gaussian profile formula).
    """
    rng = np.random.default_rng(random_seed) if not isinstance(random_seed, np.random.Generator) else random_seed
    law = _law(law)
    w = law.rvs(n, rng)
    eta = (float(sensitivity) / float(sigma)) ** 2 / (2.0 * w)
    loss = eta + np.sqrt(2 * eta) * rng.standard_normal(int(n))
    v = -np.expm1(np.minimum(float(epsilon) - loss, 0.0))
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(n))


def delta_monte_carlo_finite(epsilon: float, family: EllipticalFamily, sensitivity: float, sigma: float,
                             n: int = 200_000, random_seed=None) -> tuple[float, float]:
    """Monte Carlo δ(ε) of the ``d``-dimensional mechanism from exact log-density ratios.

    ``x ~ σY`` (centre 0), shift ``Δ e_1``; loss ``= logpdf(x; 0) − logpdf(x; Δe_1)``;
    ``δ = E[(1 − e^{ε − loss})_+]``. Returns (estimate, standard error).
    """
    x = family.sample(n, sigma=sigma, random_seed=random_seed)
    shift = np.zeros(family.d)
    shift[0] = float(sensitivity)
    loss = family.logpdf(x, sigma=sigma) - family.logpdf(x, loc=shift, sigma=sigma)
    v = -np.expm1(np.minimum(float(epsilon) - loss, 0.0))
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(n))
