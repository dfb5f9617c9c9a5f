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

:func:`fdp_ppl.release` releases a summary with these mechanisms (exact draws, the mean-curve layout).
"""

from __future__ import annotations

import functools


import numpy as np

from ...accounting import analytic_sigma
from ...errors import CompatibilityError, InputError, check_delta, check_epsilon
from ..laws import Elliptical
from ..mechanisms import Mechanism
from ...summaries import EigenSpec, LinearSummary
from .privacy import calibrate_sigma, sigma_for_delta

__all__ = ["EllipticalProcessMechanism", "EllipticalMechanism", "expected_sq_error"]

_SOURCE = "Reimherr & Awan (2019), Theorems 1, 3, 5 (corrected: Delta/sigma in Thm 3, MGF of V^2 in Thm 5)"



@functools.lru_cache(maxsize=256)
def _unit_sigma(kind: str, nu, epsilon: float, delta: float, calibration: str) -> float:
    """σ of :func:`~fdp_ppl.noise.elliptical.privacy.sigma_for_delta` for Δ = 1 (cached)."""
    return sigma_for_delta(epsilon, delta, 1.0, Elliptical(kind, nu=nu).mixing_law(), calibration)

class _EllipticalBase(Mechanism):
    """Common part of the elliptical mechanisms: the law is :class:`fdp_ppl.noise.laws.Elliptical`."""

    norm = "cameron-martin"
    kind: str
    nu: float | None

    def _check_spec(self, spec):
        if not isinstance(spec, EigenSpec):
            raise CompatibilityError(f"elliptical mechanisms need a summary in a kernel's eigenbasis, got {spec.name!r}",
                                     "use iclp_qr_mean / rkhs_mean / frl_mean")

    def _family_d(self, d: int):
        return self.law.family(d)

    def sample_w(self, n: int, d: int, rng) -> np.ndarray:
        """Exact draws of the mixing variable W, shape (n,) (numpy; for studies)."""
        return self.law.mixing_law(d).rvs(n, rng)

    def mean_w(self, d: int) -> float:
        """``E[W]`` (the covariance multiplier)."""
        return float(self.law.mixing_law(d).mean)

    def release_attrs(self, spec) -> dict:
        """Extra release metadata: the mean of the mixing variable."""
        return {"mixing_mean_W": self.mean_w(spec.n_components)}

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
        ε > 0 of one release of the whole process (the same σ serves every number of retained coefficients).
    delta : float
        δ in (0, 1): the bound on ``E_W[δ_G(ε; Δ/(σ√W))]`` (``"exact"``) or the value of
        ``2 M_W(−ε²σ²/(2Δ²))`` (``"theorem5"``) that fixes σ.
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
            raise InputError("the ellipsoidal K-norm has no infinite-dimensional (process) version: its mixing law "
                             "chi2_{d+1} depends on d; use EllipticalMechanism(epsilon, family='knorm')")
        if family not in ("t", "laplace", "gaussian"):
            raise InputError(f"unknown family {family!r}; use 't', 'laplace' or 'gaussian'")
        if family == "t" and nu is None:
            raise InputError("the t process needs nu (degrees of freedom), e.g. nu=3")
        if calibration not in ("exact", "theorem5"):
            raise InputError(f"unknown calibration {calibration!r}; use 'exact' or 'theorem5'")
        if calibration == "theorem5" and self.epsilon > 1:
            raise InputError(f"calibration='theorem5' uses the classical Gaussian bound, valid only for epsilon <= 1 "
                             f"(got {self.epsilon:g})", "use calibration='exact' or a smaller epsilon")
        self.kind = family
        self.nu = float(nu) if nu is not None else None
        self.calibration = calibration
        self.law = Elliptical(family, nu=self.nu)
        self.source = _SOURCE

    def _sigma(self, sensitivity, spec):
        """σ for (ε, δ) with Δ the Cameron–Martin sensitivity; the scale ``σ √λ_j``
        is a *dispersion* scale (coefficient sd ``scale_j √E[W]``)."""
        if self.kind == "gaussian" and self.calibration == "exact":
            return analytic_sigma(self.epsilon, self.delta, sensitivity)
        # δ(σ) depends on Δ/σ only: the root for Δ = 1 (a numerical integral per step, 0.4 s) is computed once
        # per (law, ε, δ, calibration) and scaled; the 1e-12 keeps the scaled σ on the safe side of rounding
        return float(sensitivity) * _unit_sigma(self.kind, self.nu, self.epsilon, self.delta, self.calibration) \
            * (1.0 + 1e-12)

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
            raise InputError(f"pure epsilon-DP elliptical families are 't' and 'knorm', got {family!r} "
                             "(Gaussian and multivariate Laplace in d >= 2 cannot give epsilon-DP)")
        if family == "t" and nu is None:
            raise InputError("family 't' needs nu, e.g. nu=3")
        self.kind = family
        self.nu = float(nu) if nu is not None else None
        self.law = Elliptical(family, nu=self.nu)
        self.source = _SOURCE

    def _sigma(self, sensitivity, spec):
        """σ from corrected Theorem 3 in ``d = J``; the scale ``σ √λ_j`` is a dispersion scale."""
        return calibrate_sigma(self._family_d(spec.n_components), self.epsilon, sensitivity)

    def __repr__(self):
        nu = f", nu={self.nu:g}" if self.nu is not None else ""
        return f"EllipticalMechanism(epsilon={self.epsilon:g}, family={self.kind!r}{nu})"


def expected_sq_error(mechanism, summary: LinearSummary, bound: str = "tight") -> float:
    """``E‖f̃ − f_D‖²`` (squared L², grid inner product) of one release:
    :meth:`fdp_ppl.noise.mechanisms.Mechanism.noise_energy` (elliptical laws:
    ``E[W] Σ_j scale_j² ‖φ_j‖²_w``)."""
    return mechanism.noise_energy(summary, bound)
