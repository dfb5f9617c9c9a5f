"""(ε, δ) Gaussian-process mechanism on eigen-coefficients."""

from __future__ import annotations


from ...accounting import CALIBRATIONS, gaussian_sigma
from ...errors import InputError, check_delta, check_epsilon
from ..laws import Normal
from .base import Mechanism


class GaussianMechanism(Mechanism):
    """Gaussian-process mechanism in a Hilbert space ((ε, δ)-DP).

    Releases ``f_D + σZ`` with ``Z ~ GP(0, C)``, i.e. independent
    ``N(0, σ² λ_j)`` noise on the coefficients, where ``σ`` is calibrated to the
    Cameron–Martin sensitivity ``Δ = sup ‖f_D − f_{D'}‖_C`` (Mirshani et al.
    2019, Theorems 3.2–3.3; Hall et al. 2013, Corollary 9).

    Parameters
    ----------
    epsilon : float
        ε > 0 of one release (one draw); the ledger is charged ``(ε, δ)`` per draw.
    delta : float
        δ in (0, 1) of one release: with ε, the target of the σ calibration at the spec's
        Cameron–Martin Δ (the Gaussian privacy profile for ``"analytic"``, ``log(2/δ)`` for ``"classical"``).
    calibration : {"analytic", "classical"}
        ``"analytic"`` (default): the exact smallest σ (Balle & Wang 2018), any
        ε: it spends what it claims (at ε = 0.5, δ = 1e-3 the classical σ is
        1.7× larger than needed, with an actual δ near 2e-6);
        ``"classical"``: ``σ = sqrt(2 log(2/δ)) Δ/ε`` of the papers (Hall et al.
        2013, Corollary 9; Mirshani et al. 2019, Theorem 3.2), refused for ε > 1;
        kept for their reproductions.

    Raises
    ------
    ValueError
        ε <= 0, δ outside (0, 1), unknown calibration, or ε > 1 with the
        classical calibration.

    Notes
    -----
    On the floating-point-safe release path (``calibrate(spec, bound,
    generator="opendp")``, the default of an unseeded :func:`fdp_ppl.release`)
    the noise is OpenDP's discrete Gaussian on the lattice 2⁻¹⁰⁷⁴ℤ, whose
    privacy is the exact lattice profile
    (:func:`fdp_ppl.noise.opendp.lattice_gaussian_delta`: the continuous
    profile plus a lattice error below 1e-300), so σ becomes
    ``max(σ_calibration, σ_lattice)`` with ``σ_lattice`` the analytic σ to
    within 1e-9 (``Calibration.sigma_source`` says which). OpenDP's own
    zCDP → approximate-DP conversion is looser (it gives the analytic σ for
    (ε = 1, δ = 10⁻⁵, Δ = 1) only ε = 1.092, and calibrating by it cost
    7–14% more noise); it is not used.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.RKHSSpec(basis=basis, tau=1.0, n=100)
    >>> cal = fp.GaussianMechanism(epsilon=1.0, delta=1e-5).calibrate(spec)
    >>> cal.sensitivity.norm, round(cal.sensitivity.value, 4)       # Cameron–Martin Δ
    ('cameron-martin', 0.0999)
    >>> round(cal.sigma, 4)                                         # analytic σ(ε, δ, Δ); sd_j = σ √λ_j
    0.3728
    >>> classical = fp.GaussianMechanism(epsilon=1.0, delta=1e-5, calibration="classical")
    >>> round(classical.calibrate(spec).sigma, 4)                   # the papers' σ: 32% more noise
    0.4937

    See Also
    --------
    RKHSSpec, rkhs_mean : the summary of Mirshani et al. (2019).
    analytic_sigma, classical_sigma : the two calibrations.
    """

    family = "gaussian"
    norm = "cameron-martin"
    law = Normal()
    source = "Mirshani et al. (2019), Theorems 3.2-3.3; Hall et al. (2013), Corollary 9"

    def __init__(self, epsilon: float, delta: float, calibration: str = "analytic"):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        if calibration not in CALIBRATIONS:
            raise InputError(f"unknown calibration {calibration!r}", f"use one of {CALIBRATIONS}")
        if calibration == "classical" and self.epsilon > 1:
            raise InputError(f"the classical Gaussian calibration needs epsilon <= 1 (got {self.epsilon:g})",
                             "use calibration='analytic'")
        self.calibration = calibration

    def _sigma(self, sensitivity, spec):
        """σ for (ε, δ); the Normal sd of coefficient j is ``σ √λ_j`` (shape (J,))."""
        return gaussian_sigma(self.epsilon, self.delta, sensitivity, self.calibration)

    def attrs(self):
        out = super().attrs()
        out["calibration"] = self.calibration
        return out

    def __repr__(self):
        return f"GaussianMechanism(epsilon={self.epsilon:g}, delta={self.delta:g}, calibration={self.calibration!r})"
