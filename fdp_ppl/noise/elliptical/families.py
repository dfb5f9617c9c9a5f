"""Elliptical noise families in ``R^d`` and K-norm mechanisms for general norms.

An elliptical law ``X = μ + σ Σ^{1/2} Y`` has density
``σ^{-d} |Σ|^{-1/2} c_d f(σ^{-2}(x − μ)ᵀ Σ^{-1} (x − μ))`` where ``f`` (the
*density generator*, a function of the squared Mahalanobis distance ``y``)
depends only on the family and on ``d`` (Reimherr & Awan 2019, Section 2 and
Theorem 3; ``specs/elliptical.md`` §2). The standard vector ``Y`` is
``R · U`` with ``U`` uniform on the unit sphere and radius ``R = ‖Y‖₂``
independent of ``U`` with density ``∝ r^{d−1} f(r²)``.

Families whose generator is a **Gaussian scale mixture** ``Y = √W · Z``,
``Z ~ N(0, I_d)`` independent of the mixing variable ``W = V²``:

========================  ======================================  =================================
family                    generator ``f(y)``                      mixing law of ``W``
========================  ======================================  =================================
:class:`MultivariateNormal`  ``exp(−y/2)``                        ``W ≡ 1``
:class:`MultivariateT`       ``(1 + y/ν)^{−(ν+d)/2}``             ``InvGamma(ν/2, scale ν/2)``
:class:`MultivariateLaplace` ``(y/2)^{ν'/2} K_{ν'}(√(2y))``, ν'=(2−d)/2  ``Exp(1)`` [D]
:class:`EllipsoidalKNorm`    ``exp(−√y)``                         ``χ²_{d+1}`` [D]
:class:`PowerExponential`    ``exp(−y^{p/2})``, 0 < p <= 1        positive-stable mixture (not used)
========================  ======================================  =================================

``[D]`` marks identities derived in ``specs/elliptical.md`` (not printed in
the paper); the tests verify them by Kolmogorov–Smirnov tests.

:class:`KNorm` is the Hardt–Talwar K-norm mechanism for a norm given by its
unit ball (ℓ¹, ℓ², ℓ∞): density ``∝ exp(−‖x − μ‖_K / s)``. For the ℓ² ball it
coincides with :class:`EllipsoidalKNorm` with ``Σ = I``; for ℓ¹ and ℓ∞ it is
**not** elliptical (``specs/elliptical.md`` Ex. 4).

Dispersion is not covariance: ``Cov X = σ² E[W] Σ`` (:attr:`EllipticalFamily.mean_mixing`).
Parametrisations: scipy ``multivariate_t(loc=μ, shape=σ²Σ, df=ν)``,
PyMC ``MvStudentT(nu=ν, mu=μ, scale=σ²Σ)``; PyMC ``Gamma(alpha, beta)`` has
``beta`` a *rate*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, special, stats

from ..._backend import NP
from ...errors import check_positive
from .theorem3 import calibrate_sigma, epsilon_from_family

__all__ = ["EllipticalFamily", "MultivariateNormal", "MultivariateT", "MultivariateLaplace", "EllipsoidalKNorm",
           "PowerExponential", "KNorm", "make_family", "uniform_sphere", "uniform_ball", "log_sphere_area"]

_TINY = 1e-300


def _rng(random_seed):
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    return np.random.default_rng(random_seed)


def _check_d(d) -> int:
    if isinstance(d, bool) or int(d) != d or int(d) < 1:
        raise ValueError(f"dimension d must be a positive integer, got {d!r}")
    return int(d)


def log_sphere_area(d: int) -> float:
    """``log |S^{d−1}| = log(2 π^{d/2} / Γ(d/2))``."""
    return math.log(2.0) + 0.5 * d * math.log(math.pi) - special.gammaln(0.5 * d)


def uniform_sphere(n: int, d: int, random_seed=None) -> np.ndarray:
    """``n`` exact uniform draws on the unit sphere ``S^{d−1}`` (normalised Gaussians); shape (n, d)."""
    rng = _rng(random_seed)
    z = rng.standard_normal((int(n), int(d)))
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def uniform_ball(n: int, d: int, ball: str = "l2", random_seed=None) -> np.ndarray:
    """``n`` exact uniform draws in the unit ball of ℓ¹, ℓ² or ℓ∞ in ``R^d``; shape (n, d).

    * ``"linf"``: independent ``U(−1, 1)`` coordinates;
    * ``"l1"``: ``(E_1..E_d)/(E_1+…+E_{d+1})`` with ``E_i ~ Exp(1)`` (a flat
      Dirichlet on the simplex, dropping the slack coordinate) times
      independent random signs;
    * ``"l2"``: uniform direction times ``U^{1/d}``.

    Raises
    ------
    ValueError
        Unknown ball.
    """
    rng = _rng(random_seed)
    n, d = int(n), int(d)
    if ball == "linf":
        return rng.uniform(-1.0, 1.0, (n, d))
    if ball == "l1":
        e = rng.exponential(1.0, (n, d + 1))
        x = e[:, :d] / e.sum(axis=1, keepdims=True)
        return x * rng.choice([-1.0, 1.0], size=(n, d))
    if ball == "l2":
        return uniform_sphere(n, d, rng) * rng.uniform(0.0, 1.0, (n, 1)) ** (1.0 / d)
    raise ValueError(f"unknown ball {ball!r}; use 'l1', 'l2' or 'linf'")


def _whiten(x, loc, sigma, dispersion):
    """Return (whitened residual y (..., d), log-Jacobian log(σ^d |Σ|^{1/2}))."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    r = x - (0.0 if loc is None else np.asarray(loc, dtype=float))
    if dispersion is None:
        return r / sigma, d * math.log(sigma)
    L = np.linalg.cholesky(np.asarray(dispersion, dtype=float))
    from scipy.linalg import solve_triangular

    y = solve_triangular(L, r.reshape(-1, d).T, lower=True).T.reshape(r.shape) / sigma
    return y, d * math.log(sigma) + float(np.sum(np.log(np.diag(L))))


class EllipticalFamily:
    """Base class of elliptical noise laws in ``R^d`` (see module docstring).

    Subclasses define :meth:`log_generator` (``log f(y)``), the normalising
    constant :attr:`log_norm` (``log c_d``), an exact standard sampler
    :meth:`_standard`, the mixing law of ``W = V²`` if the family is a Gaussian
    scale mixture, and a closed-form ε where one exists.

    Parameters
    ----------
    d : int
        Dimension (>= 1). The generator depends on ``d``.
    """

    name = "elliptical"
    #: the families the PyMC fragment covers exactly (see :meth:`pymc_fragment`)
    pymc_expressible = False

    def __init__(self, d: int):
        self.d = _check_d(d)

    # ------------------------------------------------------------------ generator
    def log_generator(self, y, xp=NP):
        """``log f(y)`` for squared Mahalanobis distance ``y >= 0`` (unnormalised); like ``y``.

        ``xp`` is the array namespace (:mod:`fdp_ppl._backend`): numpy by
        default, PyTensor for the log-density of :class:`fdp_ppl.noise.laws.Elliptical`.
        """
        raise NotImplementedError

    @property
    def log_norm(self) -> float:
        """``log c_d`` with ``∫ c_d f(‖y‖²) dy = 1`` over ``R^d``."""
        raise NotImplementedError

    def radial_profile(self, r):
        """Radial log-profile ``h(r) = −log f(r²)`` (Theorem 3 in the form ``ε = sup_{c>=a} h(c) − h(c−a)``)."""
        r = np.asarray(r, dtype=float)
        return -self.log_generator(r * r)

    @property
    def mixing(self):
        """Frozen scipy law of ``W = V²`` (Gaussian scale mixture), or None if not a GSM here:
        :attr:`MixingLaw.dist` of the family's mixing law (one definition of each law of W)."""
        law = self.mixing_law
        return None if law is None else law.dist

    @property
    def mixing_law(self):
        """The :class:`MixingLaw` of ``W`` in dimension :attr:`d`, or None if not a GSM here."""
        if self.name not in ("gaussian", "t", "laplace", "knorm"):
            return None
        return mixing_law(self.name, nu=getattr(self, "nu", None), d=self.d)

    @property
    def mean_mixing(self) -> float:
        """``E[W]``, so that ``Cov X = σ² E[W] Σ`` (inf if the covariance does not exist)."""
        law = self.mixing_law
        return float(law.mean) if law is not None else float("nan")

    # ------------------------------------------------------------------ densities
    def logpdf(self, x, loc=None, sigma: float = 1.0, dispersion=None) -> np.ndarray:
        """Exact log-density of ``μ + σ Σ^{1/2} Y`` at ``x``.

        Parameters
        ----------
        x : array_like, shape (..., d)
        loc : array_like, shape (d,), optional
            Centre μ (default 0).
        sigma : float
            Scalar noise multiplier σ > 0.
        dispersion : array_like, shape (d, d), optional
            Dispersion Σ (symmetric positive definite; default identity).

        Returns
        -------
        ndarray, shape (...)
        """
        sigma = check_positive(sigma, "sigma")
        y, logjac = _whiten(x, loc, sigma, dispersion)
        if y.shape[-1] != self.d:
            raise ValueError(f"x has last dimension {y.shape[-1]}, the family has d={self.d}")
        q = np.sum(y * y, axis=-1)
        return self.log_norm + self.log_generator(q) - logjac

    def radius_logpdf(self, r) -> np.ndarray:
        """Log-density of ``R = ‖Y‖₂`` (whitened radius): ``log|S^{d−1}| + (d−1)log r + log c_d + log f(r²)``."""
        r = np.asarray(r, dtype=float)
        with np.errstate(divide="ignore"):
            return log_sphere_area(self.d) + (self.d - 1) * np.log(r) + self.log_norm + self.log_generator(r * r)

    def radius_cdf(self, r) -> np.ndarray:
        """CDF of ``R`` by quadrature of :meth:`radius_logpdf` (generic; subclasses may override)."""
        r = np.atleast_1d(np.asarray(r, dtype=float))
        f = lambda s: float(np.exp(self.radius_logpdf(s)))  # noqa: E731
        out = np.empty_like(r)
        for i, ri in enumerate(r):
            out[i] = integrate.quad(f, 0.0, ri, limit=200)[0] if ri > 0 else 0.0
        return out

    # ------------------------------------------------------------------ sampling
    def _standard(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def sample(self, n: int = 1, loc=None, sigma: float = 1.0, dispersion=None, random_seed=None) -> np.ndarray:
        """Exact i.i.d. draws of ``μ + σ Σ^{1/2} Y`` (numpy, ancestral; never MCMC).

        Parameters
        ----------
        n : int
        loc : array_like, shape (d,), optional
        sigma : float
        dispersion : array_like, shape (d, d), optional
        random_seed : int, sequence or numpy Generator

        Returns
        -------
        ndarray, shape (n, d)
        """
        sigma = check_positive(sigma, "sigma")
        y = self._standard(int(n), _rng(random_seed))
        if dispersion is not None:
            y = y @ np.linalg.cholesky(np.asarray(dispersion, dtype=float)).T
        out = sigma * y
        return out if loc is None else out + np.asarray(loc, dtype=float)

    # ------------------------------------------------------------------ privacy
    def epsilon_closed_form(self, a: float) -> float | None:
        """Closed-form ε at ``a = Δ/σ`` (None where the family has none)."""
        return None

    def a_closed_form(self, epsilon: float) -> float | None:
        """Closed-form ``a = Δ/σ`` that gives ``epsilon`` (inverse of :meth:`epsilon_closed_form`; None if none)."""
        return None

    def epsilon(self, a: float, method: str = "auto"):
        """ε-DP level of ``T_D + σX`` with Mahalanobis sensitivity Δ, at ``a = Δ/σ``.

        Corrected Theorem 3 (Reimherr & Awan 2019; ``specs/elliptical.md`` §2):
        ``ε(a) = sup_{c >= a} log f((c − a)²) − log f(c²)``.

        Parameters
        ----------
        a : float
            ``Δ/σ`` >= 0.
        method : {"auto", "closed-form", "numeric"}

        Returns
        -------
        EpsilonResult
            ``finite=False`` with a ``reason`` when the family cannot give ε-DP.
        """
        return epsilon_from_family(self, a, method=method)

    def sigma_for_epsilon(self, epsilon: float, sensitivity: float = 1.0) -> float:
        """Smallest σ with ε-DP for Mahalanobis sensitivity Δ (see :func:`~fdp_ppl.noise.elliptical.calibrate_sigma`)."""
        return calibrate_sigma(self, epsilon, sensitivity)

    # ------------------------------------------------------------------ PyMC
    def pymc_fragment(self, name: str, mu, sigma: float, dispersion=None, **kwargs):
        """Add the law of ``μ + σ Σ^{1/2} Y`` to the current ``pm.Model``.

        Exact ancestral form (``pm.draw`` gives exact draws): :class:`MultivariateT`
        (``pm.MvStudentT``, also usable with ``observed=``), :class:`MultivariateNormal`
        (``pm.MvNormal``, also ``observed=``), :class:`MultivariateLaplace`
        (``W ~ Exponential(1)``, scale mixture; forward only) and
        :class:`EllipsoidalKNorm` (``Q ~ ChiSquared(d+1)``, scale mixture;
        forward only). Latent-variable forms cannot take ``observed=``.

        Raises
        ------
        NotImplementedError
            For families without an exact PyMC form (:class:`PowerExponential`).
        """
        raise NotImplementedError(f"{type(self).__name__} has no exact PyMC fragment; use .sample()")

    def _gsm_fragment(self, name, mu, sigma, dispersion, w, **kwargs):
        import pymc as pm
        import pytensor.tensor as pt

        z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=self.d)
        if dispersion is not None:
            z = pt.dot(np.linalg.cholesky(np.asarray(dispersion, dtype=float)), z)
        return pm.Deterministic(name, mu + sigma * pt.sqrt(w) * z, **kwargs)

    def __repr__(self):
        return f"{type(self).__name__}(d={self.d})"


class MultivariateNormal(EllipticalFamily):
    """Gaussian ``N(μ, σ²Σ)``: ``f(y) = exp(−y/2)``, ``W ≡ 1`` (Example 5).

    No ε-DP: the tail ratio ``exp(cΔ − Δ²/2)`` is unbounded (condition (2) fails).
    """

    name = "gaussian"
    pymc_expressible = True

    def log_generator(self, y, xp=NP):
        return -0.5 * (np.asarray(y, dtype=float) if xp is NP else y)

    @property
    def log_norm(self):
        return -0.5 * self.d * math.log(2 * math.pi)

    def radius_cdf(self, r):
        return stats.chi.cdf(np.asarray(r, dtype=float), self.d)

    def _standard(self, n, rng):
        return rng.standard_normal((n, self.d))

    def pymc_fragment(self, name, mu, sigma, dispersion=None, **kwargs):
        import pymc as pm

        cov = sigma**2 * (np.eye(self.d) if dispersion is None else np.asarray(dispersion, dtype=float))
        return pm.MvNormal(name, mu=mu, cov=cov, **kwargs)


class _PointMass:
    """Minimal frozen-law interface for ``W ≡ w0``."""

    def __init__(self, w0):
        self.w0 = float(w0)

    def mean(self):
        return self.w0

    def rvs(self, size=None, random_state=None):
        return np.full(size, self.w0)


class MultivariateT(EllipticalFamily):
    """Multivariate t, ``ν`` degrees of freedom (Example 6).

    ``f(y) = (1 + y/ν)^{−(ν+d)/2}``; ``W = ν/G``, ``G ~ χ²_ν``; scipy
    ``multivariate_t(loc=μ, shape=σ²Σ, df=ν)``. ε-DP for every ν > 0 with
    ``ε = (ν + d) asinh(a / (2√ν))`` [D], ``a = Δ/σ``.

    Parameters
    ----------
    d : int
    nu : float
        Degrees of freedom > 0 (the paper asks ν > 1; the formula holds for ν > 0).
    """

    name = "t"
    pymc_expressible = True

    def __init__(self, d: int, nu: float):
        super().__init__(d)
        self.nu = check_positive(nu, "nu", "pass the degrees of freedom, e.g. nu=3")

    def log_generator(self, y, xp=NP):
        y = np.asarray(y, dtype=float) if xp is NP else y
        return -0.5 * (self.nu + self.d) * xp.log1p(y / self.nu)

    @property
    def log_norm(self):
        nu, d = self.nu, self.d
        return float(special.gammaln(0.5 * (nu + d)) - special.gammaln(0.5 * nu) - 0.5 * d * math.log(nu * math.pi))

    def radius_cdf(self, r):
        r = np.asarray(r, dtype=float)
        return stats.f.cdf(r * r / self.d, self.d, self.nu)

    def _standard(self, n, rng):
        z = rng.standard_normal((n, self.d))
        return z / np.sqrt(rng.chisquare(self.nu, n) / self.nu)[:, None]

    def epsilon_closed_form(self, a):
        return float((self.nu + self.d) * np.arcsinh(a / (2.0 * math.sqrt(self.nu))))

    def a_closed_form(self, epsilon):
        return 2.0 * math.sqrt(self.nu) * math.sinh(epsilon / (self.nu + self.d))

    def pymc_fragment(self, name, mu, sigma, dispersion=None, **kwargs):
        import pymc as pm

        scale = sigma**2 * (np.eye(self.d) if dispersion is None else np.asarray(dispersion, dtype=float))
        return pm.MvStudentT(name, nu=self.nu, mu=mu, scale=scale, **kwargs)

    def __repr__(self):
        return f"MultivariateT(d={self.d}, nu={self.nu:g})"


class MultivariateLaplace(EllipticalFamily):
    """Multivariate (symmetric) Laplace with covariance ``σ²Σ`` (Example 3).

    ``c_d f(y) = 2 (2π)^{−d/2} (y/2)^{ν'/2} K_{ν'}(√(2y))``, ``ν' = (2 − d)/2``;
    ``W ~ Exp(1)`` [D]. ε-DP only for ``d = 1`` (``ε = √2 a``); for ``d >= 2``
    ``f(0) = ∞`` (a pole at the centre) and no σ gives ε-DP.
    """

    name = "laplace"
    pymc_expressible = True

    def log_generator(self, y, xp=NP):
        y = xp.maximum(np.asarray(y, dtype=float) if xp is NP else y, _TINY)
        b = 0.5 * (2 - self.d)
        z = xp.sqrt(2.0 * y)
        return 0.5 * b * xp.log(y / 2.0) + xp.log(xp.kve(b, z)) - z

    @property
    def log_norm(self):
        return math.log(2.0) - 0.5 * self.d * math.log(2 * math.pi)

    def _standard(self, n, rng):
        return np.sqrt(rng.exponential(1.0, n))[:, None] * rng.standard_normal((n, self.d))

    def epsilon_closed_form(self, a):
        return math.sqrt(2.0) * a if self.d == 1 else float("inf")

    def a_closed_form(self, epsilon):
        return epsilon / math.sqrt(2.0) if self.d == 1 else None

    def pymc_fragment(self, name, mu, sigma, dispersion=None, **kwargs):
        import pymc as pm

        w = pm.Exponential(f"{name}_W", lam=1.0)
        return self._gsm_fragment(name, mu, sigma, dispersion, w, **kwargs)


class EllipsoidalKNorm(EllipticalFamily):
    """K-norm mechanism for the ellipsoidal norm ``‖x‖_{Σ^{-1}} = (xᵀΣ^{-1}x)^{1/2}`` (Example 4).

    Density ``∝ exp(−‖x − μ‖_{Σ^{-1}}/σ)``; ``f(y) = exp(−√y)``; radius
    ``R ~ Gamma(d, 1)`` (``‖X − μ‖_{Σ^{-1}} ~ Gamma(d, scale σ)``) times a
    uniform direction; equivalently ``W ~ χ²_{d+1}`` [D]. ``ε = a = Δ/σ``
    exactly. Not a consistent process: its mixing law depends on ``d``.
    """

    name = "knorm"
    pymc_expressible = True

    def log_generator(self, y, xp=NP):
        return -xp.sqrt(np.asarray(y, dtype=float) if xp is NP else y)

    @property
    def log_norm(self):
        d = self.d
        return -float(log_sphere_area(d) + special.gammaln(d))

    def radius_cdf(self, r):
        return stats.gamma.cdf(np.asarray(r, dtype=float), self.d)

    def _standard(self, n, rng):
        return rng.gamma(self.d, 1.0, n)[:, None] * uniform_sphere(n, self.d, rng)

    def epsilon_closed_form(self, a):
        return float(a)

    def a_closed_form(self, epsilon):
        return float(epsilon)

    def pymc_fragment(self, name, mu, sigma, dispersion=None, **kwargs):
        import pymc as pm

        q = pm.ChiSquared(f"{name}_Q", nu=self.d + 1)
        return self._gsm_fragment(name, mu, sigma, dispersion, q, **kwargs)


class PowerExponential(EllipticalFamily):
    """Power-exponential (Kotz-type) family ``f(y) = exp(−y^{p/2})``, ``0 < p <= 1`` [D].

    Radius: ``R^p ~ Gamma(d/p, 1)``; ``ε = a^p`` (concave radial profile,
    ``specs/elliptical.md`` §2, derived). ``p = 1`` is :class:`EllipsoidalKNorm`.
    Included as a test case of the numeric maximisation (no PyMC fragment).
    """

    name = "power-exponential"

    def __init__(self, d: int, p: float):
        super().__init__(d)
        p = check_positive(p, "p")
        if p > 1:
            raise ValueError("power-exponential needs 0 < p <= 1 for epsilon-DP (p > 1 has light tails)")
        self.p = p

    def log_generator(self, y, xp=NP):
        return -(np.asarray(y, dtype=float) if xp is NP else y) ** (0.5 * self.p)

    @property
    def log_norm(self):
        d, p = self.d, self.p
        return -float(log_sphere_area(d) + special.gammaln(d / p) - math.log(p))

    def radius_cdf(self, r):
        return stats.gamma.cdf(np.asarray(r, dtype=float) ** self.p, self.d / self.p)

    def _standard(self, n, rng):
        return (rng.gamma(self.d / self.p, 1.0, n) ** (1.0 / self.p))[:, None] * uniform_sphere(n, self.d, rng)

    def epsilon_closed_form(self, a):
        return float(a) ** self.p

    def a_closed_form(self, epsilon):
        return float(epsilon) ** (1.0 / self.p)

    def __repr__(self):
        return f"PowerExponential(d={self.d}, p={self.p:g})"


_BALLS = ("l1", "l2", "linf")


@dataclass(frozen=True)
class KNorm:
    """K-norm mechanism for a norm given by its unit ball (Hardt & Talwar 2010).

    Density ``exp(−‖x − μ‖_K / s) / (s^d Γ(d+1) vol(K))``; exact sampler
    ``Gamma(d + 1, scale s) × uniform point in K`` (``specs/elliptical.md`` §5b).
    ``ε = Δ_K / s`` with ``Δ_K = sup ‖T_D − T_{D'}‖_K`` (triangle inequality;
    tight at a pair attaining Δ_K). Not elliptical for ℓ¹ and ℓ∞; the ℓ² ball
    is :class:`EllipsoidalKNorm` with ``Σ = I``.

    Parameters
    ----------
    d : int
    ball : {"l1", "l2", "linf"}
    """

    d: int
    ball: str = "l2"

    def __post_init__(self):
        object.__setattr__(self, "d", _check_d(self.d))
        if self.ball not in _BALLS:
            raise ValueError(f"unknown ball {self.ball!r}; use one of {_BALLS}")

    @property
    def name(self):
        return f"knorm-{self.ball}"

    def norm(self, x) -> np.ndarray:
        """``‖x‖_K`` over the last axis."""
        x = np.asarray(x, dtype=float)
        if self.ball == "l1":
            return np.sum(np.abs(x), axis=-1)
        if self.ball == "linf":
            return np.max(np.abs(x), axis=-1)
        return np.sqrt(np.sum(x * x, axis=-1))

    @property
    def log_volume(self) -> float:
        """``log vol(K)``: ℓ¹ ``2^d/d!``, ℓ² ``π^{d/2}/Γ(d/2+1)``, ℓ∞ ``2^d``."""
        d = self.d
        if self.ball == "l1":
            return d * math.log(2.0) - special.gammaln(d + 1)
        if self.ball == "linf":
            return d * math.log(2.0)
        return 0.5 * d * math.log(math.pi) - special.gammaln(0.5 * d + 1)

    def logpdf(self, x, loc=None, s: float = 1.0) -> np.ndarray:
        """Exact log-density at ``x`` (..., d); returns shape (...)."""
        s = check_positive(s, "s")
        x = np.asarray(x, dtype=float)
        r = x if loc is None else x - np.asarray(loc, dtype=float)
        return -self.norm(r) / s - (self.d * math.log(s) + special.gammaln(self.d + 1) + self.log_volume)

    def sample(self, n: int = 1, loc=None, s: float = 1.0, random_seed=None) -> np.ndarray:
        """Exact draws ``μ + Gamma(d+1, s) · U``, ``U`` uniform in the unit ball; shape (n, d)."""
        s = check_positive(s, "s")
        rng = _rng(random_seed)
        out = rng.gamma(self.d + 1, s, int(n))[:, None] * uniform_ball(n, self.d, self.ball, rng)
        return out if loc is None else out + np.asarray(loc, dtype=float)

    def epsilon(self, sensitivity: float, s: float) -> float:
        """``ε = Δ_K / s``."""
        return float(sensitivity) / check_positive(s, "s")

    def scale_for_epsilon(self, epsilon: float, sensitivity: float) -> float:
        """``s = Δ_K / ε``."""
        return float(sensitivity) / check_positive(epsilon, "epsilon")

    def expected_sq_l2(self, s: float = 1.0) -> float:
        """``E‖X − μ‖₂²`` = ``E[R²] E‖U‖₂²`` with ``R ~ Gamma(d+1, s)`` [D]:
        ``E‖U‖²`` is ``2/(d+2)`` per coordinate sum for ℓ¹ (``2d/((d+1)(d+2))``),
        ``d/3`` for ℓ∞ and ``d/(d+2)`` for ℓ²."""
        d = self.d
        er2 = s * s * (d + 1) * (d + 2)
        eu2 = {"l1": 2.0 * d / ((d + 1) * (d + 2)), "linf": d / 3.0, "l2": d / (d + 2.0)}[self.ball]
        return er2 * eu2

    def pymc_fragment(self, name: str, mu, s: float, **kwargs):
        """Exact ancestral PyMC form ``R ~ Gamma(d+1, rate 1/s)`` times a uniform point of K (forward only)."""
        import pymc as pm
        import pytensor.tensor as pt

        R = pm.Gamma(f"{name}_R", alpha=self.d + 1, beta=1.0 / s)
        if self.ball == "linf":
            u = pm.Uniform(f"{name}_U", -1.0, 1.0, shape=self.d)
        elif self.ball == "l1":
            e = pm.Exponential(f"{name}_E", 1.0, shape=self.d + 1)
            sign = 2.0 * pm.Bernoulli(f"{name}_sign", 0.5, shape=self.d) - 1.0
            u = sign * e[: self.d] / pt.sum(e)
        else:
            z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=self.d)
            b = pm.Beta(f"{name}_B", self.d, 1.0)
            u = b * z / pt.sqrt(pt.sum(z**2))
        return pm.Deterministic(name, mu + R * u, **kwargs)


# ====================================================================== mixing laws
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



def make_family(family: str, d: int, nu: float | None = None, p: float | None = None) -> EllipticalFamily:
    """Elliptical family by name: "gaussian", "t" (needs ``nu``), "laplace", "knorm", "power-exponential" (needs ``p``).

    Raises
    ------
    ValueError
        Unknown name or missing parameter.
    """
    if family == "gaussian":
        return MultivariateNormal(d)
    if family == "t":
        if nu is None:
            raise ValueError("family 't' needs nu (degrees of freedom), e.g. nu=3")
        return MultivariateT(d, nu)
    if family == "laplace":
        return MultivariateLaplace(d)
    if family == "knorm":
        return EllipsoidalKNorm(d)
    if family == "power-exponential":
        if p is None:
            raise ValueError("family 'power-exponential' needs p in (0, 1]")
        return PowerExponential(d, p)
    raise ValueError(f"unknown family {family!r}; use 'gaussian', 't', 'laplace', 'knorm' or 'power-exponential'")
