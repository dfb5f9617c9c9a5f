"""Gaussian KDE released through the Sobolev RKHS: L¹-exponential (Ornstein–Uhlenbeck) noise.

Source: Hall, Rinaldo & Wasserman (2013), §4.2, eq. (9)–(10); constants as
corrected in ``specs/gp-mechanism-hall.md`` §3.4 (the bump-norm steps have
typos, the final bound ``‖φ_{μ,h}‖²_H <= 1/((2π)^{d/2} h^{2d})`` holds).

The estimate is the Gaussian KDE of :class:`~fdp_ppl.kde.KDESpec`; the noise
is a GP with the reproducing kernel of the tensor-product Sobolev space,
``K(x, y) = exp(-Σ_k |x_k − y_k|/h_k)`` (``= exp(-γ‖x − y‖₁)``, ``γ = 1/h``,
for an isotropic h), whose paths are Ornstein–Uhlenbeck-like: continuous,
nowhere differentiable (Hall Fig. 2). Prefer the Gaussian route whenever
possible: its noise is smaller by ``√2 (2π)^{d/4}`` (2.24 at d = 1).

Units: the bounds of §4.2 do not depend on the length of the domain (the
boundary term is at most ``sup φ²`` and the integrals over the domain at most
those over ℝ), so the sensitivity holds on any public box in the data's
units, with h in those units.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..errors import InputError
from ..summaries.base import Sensitivity
from .gaussian import KDESpec

SOBOLEV_SOURCE = "Hall, Rinaldo & Wasserman (2013), Section 4.2, eq. (9)-(10); specs/gp-mechanism-hall.md §3.4"


class SobolevKDESpec(KDESpec):
    """Public spec of a Gaussian KDE released with L¹-exponential GP noise (Hall §4.2).

    Parameters are those of :class:`~fdp_ppl.kde.KDESpec` (grid, bandwidth h
    or per-axis h_k, public n, rel_tol).

    Notes
    -----
    Noise kernel ``K(x, y) = exp(-Σ_k |x_k − y_k|/h_k)``. Sensitivity in the
    RKHS (Cameron–Martin) norm, triangle inequality on two bumps:
    ``Δ = 2 / ((2π)^{d/4} n Π_k h_k)`` (Hall §4.2; for equal h this is
    ``2/((2π)^{d/4} n h^d)``). The grid's discrete Cameron–Martin norm of a
    neighbouring difference is at most the RKHS norm (Hall Prop. 8), so the
    bound is valid on every grid; it is not attained (max ``‖φ‖²h² ≈ 0.21``
    against the bound's 0.40 in 1-D).
    """

    name: ClassVar[str] = "kde-sobolev"
    noise_kernel_kind = "l1-exponential"
    noise_kernel_formula = "exp(-sum_k |x_k - y_k| / h_k) (L1-exponential, gamma = 1/h; Sobolev RKHS)"
    source: ClassVar[str] = SOBOLEV_SOURCE

    def _record_norm_bound(self) -> float:
        return float(self.sensitivity().value * self.n / 2)

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """``Δ = 2 / ((2π)^{d/4} n Π_k h_k)`` in the Cameron–Martin (RKHS) norm of the L¹-exponential kernel.

        Raises
        ------
        InputError
            Another norm.
        """
        norm = norm or self.default_norm
        if norm != "cameron-martin":
            raise InputError(f"the Sobolev KDE spec has no {norm!r} sensitivity",
                             "use norm='cameron-martin' (GaussianMechanism)")
        value = 2.0 / ((2 * np.pi) ** (self.d / 4) * self.n * float(np.prod(self.bandwidths)))
        return Sensitivity(value=float(value), norm=norm, bound=bound,
                           assumptions="observations clipped to the public box; h fixed a priori; RKHS bound "
                                       "||phi_h||^2 <= 1/((2 pi)^{d/2} h^{2d}) (triangle inequality)",
                           source=SOBOLEV_SOURCE)


__all__ = ["SobolevKDESpec", "SOBOLEV_SOURCE"]
