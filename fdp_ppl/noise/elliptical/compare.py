"""Expected squared error of elliptical, Gaussian and Laplace releases (comparison tables).

Finite dimension (:func:`finite_dimensional_comparison`): whitened coordinates
(``Σ = I_d``), unit Mahalanobis sensitivity ``Δ = 1``; the noise energy
``E‖noise‖₂²`` at the same ε (pure ε families) or (ε, δ) (Gaussian). The
independent-Laplace (ICLP-type) row uses the worst case ``Δ_1 = √d Δ_2`` of
an ℓ² sensitivity ball, the ℓ∞ K-norm ``Δ_∞ = Δ_2``.

Functional (:func:`functional_comparison`): one summary, ``E‖f̃ − f_D‖²`` of
ICLP (ε), Gaussian (analytic (ε, δ)), t and Laplace processes ((ε, δ), exact and
Theorem 5 calibrations) and the finite-J pure-ε t / K-norm mechanisms.
"""

from __future__ import annotations

import math

import pandas as pd

from ...accounting import analytic_sigma
from .families import KNorm, MultivariateT
from .privacy import calibrate_sigma

__all__ = ["finite_dimensional_comparison", "functional_comparison"]


def finite_dimensional_comparison(ds, epsilon: float = 1.0, delta: float = 1e-5, nus=(3.0, 10.0)) -> pd.DataFrame:
    """Noise energy ``E‖X‖₂²`` and σ per family, in ``R^d`` with ``Σ = I``, ``Δ₂ = 1``.

    Rows: d × mechanism; columns ``d, mechanism, privacy, sigma, expected_sq_error``.
    t rows include ``ν = d + 4`` (minimiser of ``(ν+d)²/(ν−2)``, the large-ε
    optimum [D]).
    """
    rows = []
    for d in ds:
        d = int(d)
        s = 1.0 / epsilon
        rows.append((d, "K-norm (ellipsoidal, l2)", "eps", s, s * s * d * (d + 1)))
        for nu in list(nus) + [d + 4.0]:
            fam = MultivariateT(d, nu)
            sig = calibrate_sigma(fam, epsilon, 1.0)
            label = f"t (nu={nu:g})" if nu in nus else "t (nu=d+4)"
            rows.append((d, label, "eps", sig, sig * sig * d * fam.mean_mixing))
        rows.append((d, "K-norm (l_inf ball)", "eps", s, KNorm(d, "linf").expected_sq_l2(s)))
        b = math.sqrt(d) / epsilon
        rows.append((d, "independent Laplace (ICLP-type, l1)", "eps", b, 2 * d * b * b))
        sg = analytic_sigma(epsilon, delta, 1.0)
        rows.append((d, f"Gaussian (analytic, delta={delta:g})", "eps,delta", sg, sg * sg * d))
    return pd.DataFrame(rows, columns=["d", "mechanism", "privacy", "sigma", "expected_sq_error"])


def functional_comparison(summary, epsilons, delta: float = 1e-5, nus=(3.0, 10.0), include_theorem5: bool = True,
                          bound: str = "tight") -> pd.DataFrame:
    """``E‖f̃ − f_D‖²`` for one summary over ε.

    Columns ``epsilon, mechanism, privacy, sigma, expected_sq_error``.
    """
    from ..mechanisms import ICLP, GaussianMechanism
    from .process import EllipticalMechanism, EllipticalProcessMechanism, expected_sq_error

    rows = []
    for eps in epsilons:
        eps = float(eps)
        mechs = [("ICLP", "eps", ICLP(eps)),
                 ("Gaussian (analytic)", "eps,delta", GaussianMechanism(eps, delta, "analytic"))]
        for nu in nus:
            mechs.append((f"t process nu={nu:g} (exact)", "eps,delta",
                          EllipticalProcessMechanism(eps, delta, "t", nu=nu)))
            if include_theorem5 and eps <= 1:
                mechs.append((f"t process nu={nu:g} (Thm 5)", "eps,delta",
                              EllipticalProcessMechanism(eps, delta, "t", nu=nu, calibration="theorem5")))
        mechs.append(("Laplace process (exact)", "eps,delta", EllipticalProcessMechanism(eps, delta, "laplace")))
        mechs.append(("K-norm on J coefficients", "eps", EllipticalMechanism(eps, "knorm")))
        mechs.append((f"t on J coefficients nu={nus[-1]:g}", "eps", EllipticalMechanism(eps, "t", nu=nus[-1])))
        for name, priv, m in mechs:
            cal = m.calibrate(summary, bound)
            rows.append((eps, name, priv, cal.sigma, expected_sq_error(m, summary, bound)))
    return pd.DataFrame(rows, columns=["epsilon", "mechanism", "privacy", "sigma", "expected_sq_error"])
