"""ε-DP Laplace mechanisms on eigen-coefficients: ICLP and FRL."""

from __future__ import annotations

import numpy as np

from ...errors import CompatibilityError, check_epsilon
from ..laws import Laplace
from ...summaries import BernsteinSpec, EigenSpec
from .base import Mechanism


class ICLP(Mechanism):
    """Independent Component Laplace Process mechanism (ε-DP).

    Releases ``ỹ_j = f_{D,j} + ξ_j``, ``ξ_j ~ Laplace(0, b_j)`` independent,
    with ``b_j = Δ √λ_j / ε`` and ``Δ = sup_{D~D'} ‖f_D − f_{D'}‖_{1,C}``
    (Lin & Reimherr 2026, Theorem 8 and Algorithm 1). The theorem's statement
    with unit-variance Laplace components gives only √2·ε; this is the
    calibration of the paper's proofs, which gives ε (DESIGN invariant 3,
    ``specs/iclp.md`` §1.5). Privacy loss at ``y``:
    ``Σ_j (|y_j − f_{D',j}| − |y_j − f_{D,j}|)/b_j <= ε‖f_D − f_{D'}‖_{1,C}/Δ <= ε``.

    Parameters
    ----------
    epsilon : float
        > 0.

    Raises
    ------
    ValueError
        ε <= 0 or not finite.

    Examples
    --------
    The noise is planned from the public spec, before the curves are seen:

    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
    >>> cal = fp.ICLP(epsilon=1.0).calibrate(spec)
    >>> cal.sensitivity.norm, round(cal.sensitivity.value, 4)      # Δ in ‖·‖_{1,C}
    ('1,C', 0.1376)
    >>> [round(float(b), 4) for b in cal.scale[:3]]                 # b_j = Δ √λ_j / ε
    [0.0645, 0.0601, 0.0538]
    >>> fp.ICLP(epsilon=1.0).budget
    PrivacyBudget(epsilon=1.0, delta=0.0)

    See Also
    --------
    iclp_qr_mean, iclp_ar_mean : the summaries it releases.
    fdp_ppl.release : one release with this mechanism.
    """

    family = "iclp"
    norm = "1,C"
    law = Laplace()
    source = "Lin & Reimherr (2026), Theorem 8, Algorithm 1"

    def __init__(self, epsilon: float):
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0

    def _check_spec(self, spec):
        # EigenSpec, or another spec whose coefficients are in its noise kernel's eigenbasis (ICLP KDE)
        if not (isinstance(spec, EigenSpec) or getattr(spec, "eigenbasis_summary", False)):
            raise CompatibilityError(f"ICLP needs a summary in a kernel's eigenbasis, got {spec.name!r}",
                                     "use iclp_qr_mean / iclp_ar_mean, or the Bernstein mechanism for bernstein_mean")

    def _sigma(self, sensitivity, spec):
        """``Δ_{1,C}/ε``; the scale is ``b_j = Δ_{1,C} √λ_j / ε`` (shape (J,))."""
        return sensitivity / self.epsilon

    def __repr__(self):
        return f"ICLP(epsilon={self.epsilon:g})"


class FRL(Mechanism):
    """Finite-dimensional representation-wise Laplace mechanism (ε-DP).

    I.i.d. ``Laplace(0, Δ/ε)`` on the summary's J retained coefficients, with
    ``Δ`` the ℓ¹ sensitivity of the coefficient vector (Lin & Reimherr 2026,
    Section 6, Theorem 12.1; the Laplace mechanism of Dwork et al. 2006).

    Parameters
    ----------
    epsilon : float
        > 0.

    Raises
    ------
    ValueError
        ε <= 0 or not finite.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.FRLSpec(basis=basis, tau=1.0, n=100)             # M = 4 components
    >>> cal = fp.FRL(epsilon=1.0).calibrate(spec)
    >>> cal.sensitivity.norm, cal.scale                            # one Laplace scale Δ_ℓ¹/ε for all
    ('l1', array([0.04, 0.04, 0.04, 0.04]))

    See Also
    --------
    FRLSpec, frl_mean : the summary it releases.
    """

    family = "frl"
    norm = "l1"
    law = Laplace()
    source = "Lin & Reimherr (2026), Theorem 12.1 (FRL)"

    def __init__(self, epsilon: float):
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0

    def _sigma(self, sensitivity, spec):
        """``Δ_{ℓ¹}/ε``, the same scale for every retained coefficient."""
        return sensitivity / self.epsilon

    def _scale(self, sigma, spec):
        return np.full(spec.n_components, sigma)

    def __repr__(self):
        return f"FRL(epsilon={self.epsilon:g})"


class Bernstein(FRL):
    """Bernstein mechanism (ε-DP; Aldà & Rubinstein 2017).

    I.i.d. ``Laplace(0, Δ/ε)`` on the ``k + 1`` lattice values of a
    :func:`~fdp_ppl.summaries.bernstein_mean` summary, ``Δ = (k + 1) 2τ_∞/n``;
    the released curve is the Bernstein polynomial of the noisy values.

    Parameters
    ----------
    epsilon : float
        > 0.

    Raises
    ------
    ValueError
        ε <= 0 or not finite.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> spec = fp.BernsteinSpec(lattice_grid=fp.Grid.uniform(50), tau=2.0, n=100, k=20)
    >>> cal = fp.Bernstein(epsilon=1.0).calibrate(spec)
    >>> cal.scale.shape, round(float(cal.scale[0]), 4)             # Δ = (k + 1) 2τ_∞/n on 21 values
    ((21,), 0.84)

    See Also
    --------
    BernsteinSpec, bernstein_mean : the summary it releases.
    """

    family = "bernstein"
    source = "Aldà & Rubinstein (2017), Bernstein mechanism; Lin & Reimherr (2026), Section 6.1"

    def _check_spec(self, spec):
        if not isinstance(spec, BernsteinSpec):
            raise CompatibilityError("the Bernstein mechanism needs a Bernstein lattice summary",
                                     "use bernstein_mean(curves, grid, tau_inf=..., k=...) or BernsteinSpec")

    def __repr__(self):
        return f"Bernstein(epsilon={self.epsilon:g})"
