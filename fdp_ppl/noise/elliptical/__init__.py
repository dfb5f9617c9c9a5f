"""Elliptical perturbations for differential privacy (Reimherr & Awan, NeurIPS 2019).

* :mod:`.families` — elliptical laws in ``R^d`` (Gaussian, multivariate t,
  multivariate Laplace, ellipsoidal K-norm, power-exponential) and the K-norm
  mechanism for ℓ¹ / ℓ² / ℓ∞ balls: exact samplers, exact log-densities,
  PyMC fragments.
* :mod:`.privacy` — ε by the one-dimensional maximisation of corrected
  Theorem 3, σ calibration, (ε, δ) of elliptical processes (corrected Theorem 5
  and the exact mixture profile), Monte Carlo privacy-loss checks.
* :mod:`.process` — mechanisms on eigen-coefficients and exact releases.
* :mod:`.compare` — expected squared error tables.

Errata implemented (``specs/elliptical.md``): Δ/σ (not Δ/σ²) inside ``f`` in
Theorem 3 / Corollary 1; the MGF of ``W = V²`` (not of ``V``) in Theorem 5.

Examples
--------
Pure ε-DP elliptical noise on the J coefficients, calibrated to the Cameron–Martin sensitivity:

>>> import fdp_ppl as fp
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
>>> spec = fp.RKHSSpec(basis=basis, tau=1.0, n=100)                  # Δ = 0.0999
>>> knorm = fp.elliptical.EllipticalMechanism(epsilon=1.0, family="knorm")
>>> round(knorm.calibrate(spec).sigma, 4)                             # K-norm: σ = Δ/ε
0.0999
>>> t3 = fp.elliptical.EllipticalMechanism(epsilon=1.0, family="t", nu=3)
>>> round(t3.calibrate(spec).sigma, 4)                                # t: Δ/(2√ν sinh(ε/(ν+J)))
1.5288
"""

from .compare import finite_dimensional_comparison, functional_comparison
from .families import (EllipsoidalKNorm, EllipticalFamily, KNorm, MultivariateLaplace, MultivariateNormal,
                       MultivariateT, PowerExponential, make_family, uniform_ball, uniform_sphere)
from .privacy import (EpsilonResult, MixingLaw, NoPureDPError, calibrate_sigma, delta_exact, delta_monte_carlo,
                      delta_monte_carlo_finite, delta_theorem5, epsilon_from_family, epsilon_from_generator,
                      epsilon_theorem3_printed, mahalanobis_sensitivity, mixing_law, privacy_epsilon, sigma_for_delta)
from .process import (EllipticalMechanism, EllipticalProcessMechanism, expected_sq_error)

__all__ = [
    "EllipticalFamily", "MultivariateNormal", "MultivariateT", "MultivariateLaplace", "EllipsoidalKNorm",
    "PowerExponential", "KNorm", "make_family", "uniform_ball", "uniform_sphere",
    "EpsilonResult", "NoPureDPError", "epsilon_from_generator", "epsilon_from_family", "privacy_epsilon",
    "calibrate_sigma", "epsilon_theorem3_printed", "mahalanobis_sensitivity",
    "MixingLaw", "mixing_law", "delta_exact", "delta_theorem5", "sigma_for_delta", "delta_monte_carlo",
    "delta_monte_carlo_finite",
    "EllipticalProcessMechanism", "EllipticalMechanism",
    "expected_sq_error", "finite_dimensional_comparison", "functional_comparison",
]
