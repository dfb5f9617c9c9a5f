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
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special, stats

from ..accounting import gaussian_delta
from ..errors import check_delta, check_epsilon, check_positive
from .families import (EllipsoidalKNorm, EllipticalFamily, MultivariateLaplace, MultivariateNormal, MultivariateT,
                       PowerExponential, _PointMass)

__all__ = ["EpsilonResult", "NoPureDPError", "epsilon_from_generator", "epsilon_from_family", "privacy_epsilon",
           "calibrate_sigma", "epsilon_theorem3_printed", "MixingLaw", "mixing_law", "delta_exact",
           "delta_theorem5", "sigma_for_delta", "delta_monte_carlo", "delta_monte_carlo_finite",
           "mahalanobis_sensitivity"]

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


def epsilon_from_family(family: EllipticalFamily, a: float, method: str = "auto") -> EpsilonResult:
    """ε at ``a = Δ/σ`` for an :class:`~fdp_ppl.elliptical.EllipticalFamily`.

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


def _a_closed_form(family: EllipticalFamily, eps: float):
    if isinstance(family, MultivariateT):
        return 2.0 * math.sqrt(family.nu) * math.sinh(eps / (family.nu + family.d))
    if isinstance(family, EllipsoidalKNorm):
        return eps
    if isinstance(family, MultivariateLaplace) and family.d == 1:
        return eps / math.sqrt(2.0)
    if isinstance(family, PowerExponential):
        return eps ** (1.0 / family.p)
    return None


def calibrate_sigma(family: EllipticalFamily, epsilon: float, sensitivity: float = 1.0,
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
    a = _a_closed_form(family, eps) if method != "numeric" else None
    if a is None:
        g = lambda la: epsilon_from_generator(family.log_generator, math.exp(la)).epsilon - eps  # noqa: E731
        lo, hi = -5.0, 5.0
        while g(lo) > 0:
            lo -= 5.0
        while g(hi) < 0:
            hi += 5.0
        a = math.exp(optimize.brentq(g, lo, hi, xtol=1e-13, rtol=1e-13))
    return delta_s / a


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
@dataclass(frozen=True)
class MixingLaw:
    """Law of ``W = V²`` of an elliptical process ``σ√W Z`` (Theorem 1).

    Attributes
    ----------
    name : {"gaussian", "t", "laplace", "knorm"}
        "knorm" is the ellipsoidal K-norm in dimension ``d`` (``W ~ χ²_{d+1}``):
        a Gaussian scale mixture in that ``d`` only, not a consistent process
        (no infinite-dimensional version).
    nu : float or None
    d : int or None
    """

    name: str
    nu: float | None = None
    d: int | None = None

    @property
    def dist(self):
        """Frozen scipy law of W (``_PointMass`` for the Gaussian)."""
        if self.name == "gaussian":
            return _PointMass(1.0)
        if self.name == "t":
            return stats.invgamma(0.5 * self.nu, scale=0.5 * self.nu)
        if self.name == "laplace":
            return stats.expon()
        return stats.chi2(self.d + 1)

    @property
    def is_process(self) -> bool:
        return self.name != "knorm"

    @property
    def mean(self) -> float:
        """``E[W]`` (covariance multiplier)."""
        if self.name == "t":
            return self.nu / (self.nu - 2) if self.nu > 2 else float("inf")
        return float(self.dist.mean())

    def rvs(self, n, random_seed=None) -> np.ndarray:
        rng = random_seed if isinstance(random_seed, np.random.Generator) else np.random.default_rng(random_seed)
        if self.name == "gaussian":
            return np.ones(int(n))
        if self.name == "t":
            return self.nu / rng.chisquare(self.nu, int(n))
        if self.name == "laplace":
            return rng.exponential(1.0, int(n))
        return rng.chisquare(self.d + 1, int(n))

    def log_mgf_w(self, L: float) -> float:
        """``log E[exp(−L W)]``, L >= 0 (closed forms [D], ``specs/elliptical.md`` §3)."""
        L = float(L)
        if L == 0:
            return 0.0
        if self.name == "gaussian":
            return -L
        if self.name == "laplace":
            return -math.log1p(L)
        if self.name == "knorm":
            return -0.5 * (self.d + 1) * math.log1p(2 * L)
        nu = self.nu
        z = math.sqrt(2 * nu * L)
        return float(math.log(2) + 0.25 * nu * math.log(nu * L / 2) + math.log(special.kve(nu / 2, z)) - z
                     - special.gammaln(nu / 2))

    def expect(self, g, tail: str = "upper") -> float:
        """``E[g(W)]`` for ``g`` with values in [0, 1], by ``scipy.integrate.quad`` in ``s = log w``
        over unit-width pieces between the ``1e-17`` quantiles. ``tail="upper"``
        adds the mass outside those quantiles times ``sup g = 1`` (conservative)."""
        if self.name == "gaussian":
            return float(g(1.0))
        dist = self.dist
        lo, hi = math.log(dist.ppf(1e-17)), math.log(dist.isf(1e-17))
        edges = np.linspace(lo, hi, int(math.ceil(hi - lo)) + 1)

        def integrand(s):
            w = math.exp(s)
            return g(w) * math.exp(dist.logpdf(w) + s)

        total = 0.0
        for s0, s1 in zip(edges[:-1], edges[1:]):
            total += integrate.quad(integrand, s0, s1, epsabs=0.0, epsrel=1e-10, limit=100)[0]
        if tail == "upper":
            total += 2e-17
        return float(total)

    def log_mgf_v(self, L: float) -> float:
        """``log E[exp(−L V)]``, ``V = √W`` (the printed Theorem 5; numeric, by :meth:`expect`)."""
        if self.name == "gaussian":
            return -float(L)
        return math.log(max(self.expect(lambda w: math.exp(-L * math.sqrt(w)), tail="none"), _TINY))

    def __repr__(self):
        extra = f", nu={self.nu:g}" if self.nu is not None else (f", d={self.d}" if self.d else "")
        return f"MixingLaw({self.name!r}{extra})"


def mixing_law(family: str, nu: float | None = None, d: int | None = None) -> MixingLaw:
    """Mixing law of W by name: "gaussian", "t" (``nu``), "laplace", "knorm" (``d``, finite only).

    Raises
    ------
    ValueError
        Unknown name or missing parameter.
    """
    if family == "t":
        if nu is None:
            raise ValueError("the t process needs nu, e.g. nu=3")
        return MixingLaw("t", nu=check_positive(nu, "nu"))
    if family in ("gaussian", "laplace"):
        return MixingLaw(family)
    if family == "knorm":
        if d is None:
            raise ValueError("the ellipsoidal K-norm is a scale mixture only in a fixed dimension d; pass d")
        return MixingLaw("knorm", d=int(d))
    raise ValueError(f"unknown mixing family {family!r}; use 'gaussian', 't', 'laplace' or 'knorm'")


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
