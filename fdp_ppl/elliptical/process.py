"""Elliptical mechanisms on eigen-coefficients and their exact releases.

:class:`EllipticalProcessMechanism` (ε, δ)
    Releases ``f̃ = f_D + σ √W Z``, ``Z ~ GP(0, C)``: on the retained
    coefficients ``ỹ_j = f_{D,j} + σ √W √λ_j z_j`` with **one** ``W`` shared by
    all coefficients (t process: ``W ~ InvGamma(ν/2, ν/2)``; Laplace process:
    ``W ~ Exp(1)``; Gaussian: ``W ≡ 1``). σ is calibrated to the Cameron–Martin
    sensitivity by the exact mixture profile or by corrected Theorem 5
    (Reimherr & Awan 2019, Theorems 1, 4, 5; ``specs/elliptical.md`` §3).

:class:`EllipticalMechanism` (pure ε, finite J)
    The same law restricted to the ``J`` retained coefficients (a ``J``-variate
    elliptical law with dispersion ``σ² diag(λ)``), calibrated by corrected
    Theorem 3 with ``d = J`` (Corollary 1): t or ellipsoidal K-norm. Valid
    because the released curve is a function of the J coefficients only
    (DESIGN invariant 2); ε grows with J for the t family.

:func:`release_elliptical` draws exact releases with numpy and returns the
layout of :func:`fdp_ppl.release`.
"""

from __future__ import annotations


import numpy as np
import pytensor.tensor as pt
import xarray as xr

from .. import dims
from ..accounting import PrivacyLedger, analytic_sigma
from ..errors import CompatibilityError, check_delta, check_epsilon
from ..mechanisms import Calibration, Mechanism
from ..summaries import LinearSummary
from .families import EllipsoidalKNorm, MultivariateLaplace, MultivariateNormal, MultivariateT
from .privacy import calibrate_sigma, mixing_law, sigma_for_delta

__all__ = ["EllipticalProcessMechanism", "EllipticalMechanism", "release_elliptical", "draw_elliptical",
           "expected_sq_error"]

_SOURCE = "Reimherr & Awan (2019), Theorems 1, 3, 5 (corrected: Delta/sigma in Thm 3, MGF of V^2 in Thm 5)"


class _EllipticalBase(Mechanism):
    norm = "cameron-martin"

    def _family_d(self, d: int):
        if self.kind == "t":
            return MultivariateT(d, self.nu)
        if self.kind == "laplace":
            return MultivariateLaplace(d)
        if self.kind == "gaussian":
            return MultivariateNormal(d)
        return EllipsoidalKNorm(d)

    def sample_w(self, n: int, d: int, rng) -> np.ndarray:
        """Exact draws of the mixing variable W, shape (n,)."""
        if self.kind == "knorm":
            return rng.chisquare(d + 1, n)
        return mixing_law(self.kind, nu=self.nu).rvs(n, rng)

    def draw_coefficients(self, summary, scale, draws: int, random_seed=None) -> np.ndarray:
        """Exact released coefficients, shape (draws, J); used by :func:`fdp_ppl.release`."""
        return draw_elliptical(self, summary, scale, draws, random_seed)[0]

    def release_attrs(self, summary) -> dict:
        """Extra release metadata: what ``noise_scale`` means for a scale mixture."""
        return {"noise_scale_meaning": "dispersion scale sigma*sqrt(lambda_j); coefficient sd = "
                                       "noise_scale*sqrt(E[W])", "mixing_mean_W": self.mean_w(summary.n_components),
                "sampling_detail": "numpy scale mixture sqrt(W) * Normal"}

    def mean_w(self, d: int) -> float:
        """``E[W]`` (the covariance multiplier)."""
        return float(d + 1) if self.kind == "knorm" else mixing_law(self.kind, nu=self.nu).mean

    # ---------------------------------------------------------------- PyMC
    def distribution(self, name, mu, scale, **kwargs):
        raise NotImplementedError("elliptical noise is not a product law; use add_to_model (scale mixture)")

    def add_to_model(self, centre, scale, eigenfunctions, *, prefix: str = ""):
        """Exact scale-mixture fragment: ``W`` (t: ``InverseGamma(ν/2, ν/2)``;
        Laplace: ``Exponential(1)``; K-norm: ``ChiSquared(J+1)``; Gaussian: 1),
        ``z ~ Normal(0, 1)`` (basis), ``coefficients = centre + √W · scale · z``
        (Deterministic) and ``curve``. Forward draws are exact; as a likelihood
        use :meth:`log_density` (latent forms cannot take ``observed=``)."""
        import pymc as pm

        z = pm.Normal(f"{prefix}z", 0.0, 1.0, dims=dims.BASIS)
        if self.kind == "t":
            w = pm.InverseGamma(f"{prefix}W", alpha=self.nu / 2, beta=self.nu / 2)
        elif self.kind == "laplace":
            w = pm.Exponential(f"{prefix}W", lam=1.0)
        elif self.kind == "knorm":
            w = pm.ChiSquared(f"{prefix}W", nu=pt.shape(z)[0] + 1)
        else:
            w = 1.0
        coefficients = pm.Deterministic(f"{prefix}coefficients", centre + pt.sqrt(w) * scale * z, dims=dims.BASIS)
        curve = pm.Deterministic(f"{prefix}curve", pt.dot(eigenfunctions, coefficients), dims=dims.T)
        return coefficients, curve

    # ---------------------------------------------------------------- densities
    def log_density(self, y, centre, scale):
        """Exact joint log-density of released coefficients ``y`` (..., J): the J-variate
        elliptical law with centre (J,) and dispersion ``diag(scale²)``."""
        y, centre, scale = (np.asarray(a, dtype=float) for a in (y, centre, scale))
        fam = self._family_d(y.shape[-1])
        z = (y - centre) / scale
        return fam.logpdf(z) - np.sum(np.log(scale))

    def privacy_loss(self, y, centre, centre_prime, scale):
        """``log p_D(y) − log p_{D'}(y)`` from exact joint log-densities."""
        return self.log_density(y, centre, scale) - self.log_density(y, centre_prime, scale)

    def attrs(self):
        out = super().attrs()
        out.update({"elliptical_family": self.kind, "nu": self.nu if self.nu is not None else "none"})
        return out


class EllipticalProcessMechanism(_EllipticalBase):
    """Elliptical-process mechanism ((ε, δ)-DP; Reimherr & Awan 2019, Theorem 5 corrected).

    Releases ``f_D + σ √W Z`` with ``Z ~ GP(0, C)`` the eigenbasis's Gaussian
    process: coefficient ``j`` gets ``σ √W √λ_j z_j`` with a single ``W`` for
    all ``j``. No σ gives pure ε-DP in infinite dimensions (Theorem 4).

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    family : {"t", "laplace", "gaussian"}
        Mixing law of ``W``: t process (``InvGamma(ν/2, scale ν/2)``), Laplace
        process (``Exp(1)``), Gaussian (``W ≡ 1``). The ellipsoidal K-norm is
        not a consistent process (its mixing law depends on the dimension):
        use :class:`EllipticalMechanism`.
    nu : float, optional
        Degrees of freedom of the t process (> 0; > 2 for a finite covariance).
    calibration : {"exact", "theorem5"}
        "exact": smallest σ with ``E_W[δ_G(ε; Δ/(σ√W))] <= δ`` (tight in
        infinite dimensions); "theorem5": corrected Theorem 5,
        ``2 M_W(−ε²σ²/(2Δ²)) = δ`` (ε <= 1 only).

    Raises
    ------
    ValueError
        Bad ε, δ, family, ν or calibration.
    """

    family = "elliptical-process"

    def __init__(self, epsilon: float, delta: float, family: str = "t", nu: float | None = None,
                 calibration: str = "exact"):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        if family == "knorm":
            raise ValueError("the ellipsoidal K-norm has no infinite-dimensional (process) version: its mixing law "
                             "chi2_{d+1} depends on d; use EllipticalMechanism(epsilon, family='knorm')")
        if family not in ("t", "laplace", "gaussian"):
            raise ValueError(f"unknown family {family!r}; use 't', 'laplace' or 'gaussian'")
        if family == "t" and nu is None:
            raise ValueError("the t process needs nu (degrees of freedom), e.g. nu=3")
        if calibration not in ("exact", "theorem5"):
            raise ValueError(f"unknown calibration {calibration!r}; use 'exact' or 'theorem5'")
        if calibration == "theorem5" and self.epsilon > 1:
            raise ValueError("calibration='theorem5' uses the classical Gaussian bound (epsilon <= 1); use 'exact'")
        self.kind = family
        self.nu = float(nu) if nu is not None else None
        self.calibration = calibration
        self.noise_law = f"elliptical-{family}" + (f"(nu={self.nu:g})" if self.nu is not None else "")
        self.source = _SOURCE

    def calibrate(self, summary: LinearSummary, bound: str = "tight") -> Calibration:
        """Per-coefficient dispersion scale ``σ √λ_j`` (shape (J,)) with σ for (ε, δ).

        Δ is ``summary.sensitivity("cameron-martin", bound)``. ``Calibration.scale``
        is a *dispersion* scale: the coefficient sd is ``scale_j √E[W]``.
        """
        self._check_summary(summary)
        sens = summary.sensitivity(self.norm, bound)
        if self.kind == "gaussian" and self.calibration == "exact":
            sigma = analytic_sigma(self.epsilon, self.delta, sens.value)
        else:
            sigma = sigma_for_delta(self.epsilon, self.delta, sens.value, mixing_law(self.kind, nu=self.nu),
                                    self.calibration)
        return Calibration(sensitivity=sens, scale=sigma * np.sqrt(summary.eigenvalues), sigma=sigma)

    def attrs(self):
        out = super().attrs()
        out["calibration"] = self.calibration
        return out

    def __repr__(self):
        nu = f", nu={self.nu:g}" if self.nu is not None else ""
        return (f"EllipticalProcessMechanism(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"family={self.kind!r}{nu}, calibration={self.calibration!r})")


class EllipticalMechanism(_EllipticalBase):
    """Pure ε-DP elliptical noise on the J retained coefficients (Theorem 3 corrected, Corollary 1).

    The J coefficients get a J-variate elliptical law with dispersion
    ``σ² diag(λ_1..λ_J)``; Δ is the Cameron–Martin sensitivity; σ solves
    ``ε_J(Δ/σ) = ε`` (t: ``σ = Δ/(2√ν sinh(ε/(ν+J)))``; K-norm: ``σ = Δ/ε``).

    Parameters
    ----------
    epsilon : float
    family : {"t", "knorm"}
    nu : float, optional
        Required for "t".

    Raises
    ------
    ValueError
        Bad ε, family or ν.
    """

    family = "elliptical"

    def __init__(self, epsilon: float, family: str = "knorm", nu: float | None = None):
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0
        if family not in ("t", "knorm"):
            raise ValueError(f"pure epsilon-DP elliptical families are 't' and 'knorm', got {family!r} "
                             "(Gaussian and multivariate Laplace in d >= 2 cannot give epsilon-DP)")
        if family == "t" and nu is None:
            raise ValueError("family 't' needs nu, e.g. nu=3")
        self.kind = family
        self.nu = float(nu) if nu is not None else None
        self.noise_law = f"elliptical-{family}" + (f"(nu={self.nu:g})" if self.nu is not None else "")
        self.source = _SOURCE

    def calibrate(self, summary: LinearSummary, bound: str = "tight") -> Calibration:
        """``σ √λ_j`` (dispersion scale, shape (J,)) with σ from corrected Theorem 3 in ``d = J``."""
        self._check_summary(summary)
        sens = summary.sensitivity(self.norm, bound)
        sigma = calibrate_sigma(self._family_d(summary.n_components), self.epsilon, sens.value)
        return Calibration(sensitivity=sens, scale=sigma * np.sqrt(summary.eigenvalues), sigma=sigma)

    def __repr__(self):
        nu = f", nu={self.nu:g}" if self.nu is not None else ""
        return f"EllipticalMechanism(epsilon={self.epsilon:g}, family={self.kind!r}{nu})"


def draw_elliptical(mechanism: _EllipticalBase, summary: LinearSummary, scale, draws: int = 1,
                    random_seed=None) -> tuple[np.ndarray, np.ndarray]:
    """Exact i.i.d. releases ``f_D + √W · scale · z`` (numpy).

    Returns
    -------
    coefficients : ndarray, shape (draws, J)
    curves : ndarray, shape (draws, K)
    """
    rng = random_seed if isinstance(random_seed, np.random.Generator) else np.random.default_rng(random_seed)
    J = summary.n_components
    w = mechanism.sample_w(int(draws), J, rng)
    z = rng.standard_normal((int(draws), J))
    coef = summary.coefficients[None, :] + np.sqrt(w)[:, None] * np.asarray(scale)[None, :] * z
    return coef, coef @ summary.design.T


def release_elliptical(summary: LinearSummary, mechanism: _EllipticalBase, *, draws: int = 1, random_seed=None,
                       ledger: PrivacyLedger | None = None, bound: str = "tight", label: str = "") -> xr.DataTree:
    """Release a summary with elliptical noise: exact forward draws (numpy), as ``xr.DataTree``.

    Same layout as :func:`fdp_ppl.release`: ``posterior`` with ``coefficients``
    (chain, draw, basis) and ``curve`` (chain, draw, t); ``constant_data`` with
    eigenvalues, eigenfunctions, quadrature weights and ``noise_scale``
    (dispersion scale ``σ√λ_j``); root attrs with ε, δ, sensitivity (CM norm),
    budget spent, the family, ν and the calibration. The non-private summary is
    never included.

    Raises
    ------
    CompatibilityError
        Wrong summary or mechanism type.
    BudgetExceededError
        The ledger cannot pay ``draws × (ε, δ)``.
    ValueError
        draws < 1.
    """
    from ..release import release

    if not isinstance(mechanism, _EllipticalBase):
        raise CompatibilityError("mechanism must be EllipticalProcessMechanism or EllipticalMechanism")
    return release(summary, mechanism, draws=draws, random_seed=random_seed, ledger=ledger, bound=bound,
                   label=label)


def expected_sq_error(mechanism, summary: LinearSummary, bound: str = "tight") -> float:
    """``E‖f̃ − f_D‖²`` (squared L², grid inner product) of one release.

    Elliptical: ``E[W] Σ_j scale_j² ‖φ_j‖²_w``; ICLP / FRL / Gaussian fall back
    to :func:`fdp_ppl.summaries.noise_energy`.
    """
    from ..summaries import noise_energy

    if not isinstance(mechanism, _EllipticalBase):
        return noise_energy(mechanism, summary, bound)
    scale = mechanism.calibrate(summary, bound).scale
    col = np.sum(summary.design**2 * summary.grid.weights[:, None], axis=0)
    return float(mechanism.mean_w(summary.n_components) * np.sum(scale**2 * col))
