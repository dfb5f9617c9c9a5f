"""Mechanisms: a noise law calibrated to a summary's public sensitivity.

A mechanism releases ``ỹ_j = f_{D,j} + ξ_j`` for the retained coefficients
``j = 1..J`` of a summary; the law of ``ξ`` is the mechanism's
:class:`~fdp_ppl.noise.laws.NoiseLaw` (``mechanism.law``) and its per-coefficient
scale comes from the summary's public sensitivity (:meth:`Mechanism.calibrate`,
which takes a public :class:`~fdp_ppl.summaries.SummarySpec` or a fitted
summary, so budgets can be planned before the data are seen). The released
curve is ``Σ_j ỹ_j φ_j(t)``.

In PyMC the released coefficients are one random variable
``coefficients ~ Law(mu=centre, scale)`` over dim ``basis`` — for a release
``centre`` is the summary; for inference it is a latent curve's
coefficients, and the same call gives the exact likelihood of a release.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ... import dims
from ...accounting import PrivacyBudget
from ...errors import CompatibilityError, InputError
from ..laws import NoiseLaw
from ...settings import compile_mode
from ...summaries import LinearSummary, Sensitivity, SummarySpec, as_spec


@dataclass(frozen=True)
class Calibration:
    """Public noise calibration of a mechanism for one summary.

    Attributes
    ----------
    sensitivity : Sensitivity
    scale : ndarray, shape (J,)
        Per-coefficient noise scale (the law's ``scale``: Laplace ``b_j``,
        Normal sd, elliptical dispersion scale).
    sigma : float
        The mechanism's global multiplier (Δ/ε for ICLP and FRL; the
        Gaussian σ for the Gaussian mechanism).
    generator : str
        The release generator the calibration is for (:mod:`fdp_ppl.noise.sampling`).
    sigma_source : {"mechanism", "opendp", ...}
        Which σ was used: the mechanism's own calibration, or the larger σ that
        the generator's privacy map needs to guarantee the claimed (ε, δ)
        (e.g. OpenDP's zCDP → approximate-DP conversion for Gaussian noise).
    """

    sensitivity: Sensitivity
    scale: np.ndarray
    sigma: float
    generator: str = "pymc"
    sigma_source: str = "mechanism"


class Mechanism(ABC):
    """Base class; see :class:`ICLP`, :class:`FRL`, :class:`GaussianMechanism`,
    :class:`~fdp_ppl.noise.elliptical.EllipticalMechanism`.

    Subclasses set :attr:`law` (a :class:`~fdp_ppl.noise.laws.NoiseLaw`), the
    sensitivity :attr:`norm`, :attr:`family` and :attr:`source`, and implement
    :meth:`_sigma` (the multiplier from Δ) and, if not ``σ√λ_j``,
    :meth:`_scale`.

    Examples
    --------
    Every mechanism has a noise law, a sensitivity norm and the same public calibration:

    >>> import fdp_ppl as fp
    >>> mechanisms = [fp.ICLP(epsilon=1.0), fp.GaussianMechanism(epsilon=1.0, delta=1e-5)]
    >>> [(m.family, m.norm, m.noise_law) for m in mechanisms]
    [('iclp', '1,C', 'laplace'), ('gaussian', 'cameron-martin', 'normal')]
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
    >>> round(fp.ICLP(epsilon=1.0).noise_energy(spec), 4)           # E‖f̃ − f‖², before any data
    0.0378

    See Also
    --------
    ICLP, FRL, Bernstein, GaussianMechanism : the concrete mechanisms.
    """

    #: short name recorded in releases
    family: ClassVar[str] = ""
    #: norm in which the sensitivity must be measured
    norm: ClassVar[str] = ""
    #: paper and theorem
    source: ClassVar[str] = ""
    #: the noise law (class-level for fixed laws; set per instance otherwise)
    law: NoiseLaw

    epsilon: float
    delta: float = 0.0

    @property
    def noise_law(self) -> str:
        """Name of the noise law, as recorded in releases (``law.name``)."""
        return self.law.name

    @property
    def budget(self) -> PrivacyBudget:
        """Budget spent by one release (one draw)."""
        return PrivacyBudget(self.epsilon, self.delta)

    # ---------------------------------------------------------------- calibration
    def privacy_event(self, calibration: Calibration, count: int = 1):
        """The ledger event of ``count`` draws calibrated by ``calibration``: the noise law with its
        multiplier σ/Δ (Laplace, Normal), else a generic (ε, δ) event
        (:meth:`fdp_ppl.accounting.PrivacyEvent.for_noise`)."""
        from ...accounting.events import PrivacyEvent

        return PrivacyEvent.for_noise(self.law.name, self.epsilon, self.delta, calibration.sigma,
                                      calibration.sensitivity.value, count)

    def _check_spec(self, spec: SummarySpec) -> None:
        """Raise :class:`CompatibilityError` if the mechanism cannot release this summary."""

    @abstractmethod
    def _sigma(self, sensitivity: float, spec: SummarySpec) -> float:
        """The global multiplier σ for sensitivity Δ."""

    def _scale(self, sigma: float, spec: SummarySpec) -> np.ndarray:
        return sigma * np.sqrt(spec.eigenvalues)

    def calibrate(self, summary: SummarySpec | LinearSummary, bound: str = "tight", *,
                  generator: str = "pymc") -> Calibration:
        """Noise scale per retained coefficient from the public sensitivity.

        Parameters
        ----------
        summary : SummarySpec or LinearSummary
            A public spec (no data needed) or a fitted summary.
        bound : {"tight", "paper", "closed-form"}
            Which sensitivity bound (:meth:`~fdp_ppl.summaries.SummarySpec.sensitivity`).
        generator : str
            Release generator (:func:`fdp_ppl.noise.sampling.generators`). ``"pymc"``:
            the mechanism's own σ. ``"opendp"``: ``max(σ_mechanism, σ_opendp)``
            with ``σ_opendp`` the smallest σ for which the lattice sampler
            guarantees the claimed (ε, δ) (Gaussian: the exact lattice
            profile, a short root search; Laplace: σ up to OpenDP's upward
            rounding); ``sigma_source`` records which one was used.

        Returns
        -------
        Calibration
            ``scale`` has shape (J,).

        Raises
        ------
        CompatibilityError
            A summary the mechanism cannot release, or a generator that cannot
            sample the mechanism's law (``"opendp"`` with an elliptical law).
        InputError
            An unknown generator.
        """
        spec = as_spec(summary)
        self._check_spec(spec)
        sens = spec.sensitivity(self.norm, bound)
        if not (np.isfinite(sens.value) and sens.value > 0):
            raise InputError(f"the sensitivity is not a finite positive number (got {sens.value:g}): tau or the "
                             "kernel's constants overflow", "pass a smaller public tau, in the data's units")
        sigma = float(self._sigma(sens.value, spec))
        if not (np.isfinite(sigma) and sigma > 0):
            raise InputError("the noise scale is not a finite positive number (it overflows)",
                             "pass a smaller public tau or a larger epsilon")
        source = "mechanism"
        if generator != "pymc":
            from ..sampling import generator_sigma

            needed = generator_sigma(generator, self.law, sens, self.epsilon, self.delta, spec.n_components, sigma)
            if needed > sigma:
                sigma, source = needed, generator
        return Calibration(sensitivity=sens, scale=np.asarray(self._scale(sigma, spec), dtype=float), sigma=sigma,
                           generator=generator, sigma_source=source)

    def noise_energy(self, summary: SummarySpec | LinearSummary, bound: str = "tight", *,
                     generator: str = "pymc") -> float:
        """``E‖f̃ − f‖²`` of one release (grid L² norm): ``Σ_j Var(ξ_j) ‖design_j‖²_w``
        with the law's variance; for an eigenbasis ``‖φ_j‖_w = 1``. ``generator="opendp"``
        uses the σ of the floating-point-safe path (larger for some Gaussian calibrations)."""
        spec = as_spec(summary)
        var = self.law.variance(self.calibrate(spec, bound, generator=generator).scale)
        col = np.sum(spec.design**2 * spec.grid.weights[:, None], axis=0)
        return float(np.sum(var * col))

    def simulate(self, summary: LinearSummary, draws: int = 1, random_seed=None, bound: str = "tight", *,
                 study: bool = False):
        """Draws of this mechanism's releases of ``summary`` for simulation studies: no ledger, no file.

        The exact law of :func:`fdp_ppl.release` (:func:`fdp_ppl.noise.sampling.draw_releases`, compiled PyMC
        sampler, seedable); a publication goes through :func:`fdp_ppl.release`. Used by the cross-validation of
        :mod:`fdp_ppl.summaries.tuning`, which receives a mechanism and so never imports the noise stage.
        ``summary`` may come from real records, so a ``random_seed`` needs ``study=True``
        (:func:`fdp_ppl.noise.sampling.check_study`, the rule of :func:`fdp_ppl.release`).

        Returns
        -------
        coefficients : ndarray, shape (draws, J)
            Released coefficients (units of the summary's coefficients).
        curves : ndarray, shape (draws, K)
            Released curves on the summary's grid (units of the curves).

        Raises
        ------
        CompatibilityError, InputError
            From :meth:`calibrate` (a summary this mechanism does not serve, an unknown ``bound``) and from the
            sampler (``draws`` < 1); a ``random_seed`` without ``study=True`` (before anything is drawn).
        """
        from ..sampling import check_study, draw_releases

        check_study(random_seed, study)
        return draw_releases(self, summary, self.calibrate(summary, bound).scale, draws, random_seed, study=study)

    # ---------------------------------------------------------------- PyMC
    def distribution(self, name: str, mu, scale, **kwargs):
        """The law of the released coefficients as a PyMC variable (``law.pymc``).

        Inside a ``pm.Model``; pass ``observed=`` to use it as the exact
        likelihood of a release, ``dims="basis"`` to name the dimension.
        """
        return self.law.pymc(name, mu, scale, **kwargs)

    def add_to_model(self, centre, scale, eigenfunctions, *, prefix: str = ""):
        """Add the mechanism to the current ``pm.Model``.

        Parameters
        ----------
        centre : tensor-like, dims (basis,)
            Coefficients the noise is added to (summary, or a latent variable).
        scale : array_like, dims (basis,)
            Public per-coefficient scale from :meth:`calibrate`.
        eigenfunctions : array_like, dims (t, basis)
            Retained eigenfunctions (or design) on the grid.
        prefix : str
            Prefix for variable names.

        Returns
        -------
        coefficients, curve : PyMC variables
            ``coefficients`` (basis) is the released coefficient vector,
            ``curve`` (t) a Deterministic ``Σ_j coefficients_j φ_j(t)``.
        """
        import pymc as pm
        import pytensor.tensor as pt

        coefficients = self.distribution(f"{prefix}coefficients", mu=centre, scale=scale, dims=dims.BASIS)
        curve = pm.Deterministic(f"{prefix}curve", pt.dot(eigenfunctions, coefficients), dims=dims.T)
        return coefficients, curve

    def model(self, summary: LinearSummary, bound: str = "tight"):
        """A ``pm.Model`` whose forward draws are releases of ``summary``.

        The summary enters as ``pm.Data("summary_coefficients")`` and is
        therefore **non-private**: do not turn this model's prior predictive
        into a published object (``pm.sample_prior_predictive`` copies data into
        ``constant_data``); use :func:`fdp_ppl.release`, which returns only
        released quantities.

        Returns
        -------
        pm.Model
            coords ``basis`` (0..J−1) and ``t`` (grid on [0, 1]); variables
            ``coefficients`` (basis) and ``curve`` (t).
        """
        import pymc as pm

        cal = self.calibrate(summary, bound)
        coords = {dims.BASIS: np.arange(summary.n_components), dims.T: summary.grid.t}
        with pm.Model(coords=coords) as model:
            centre = pm.Data("summary_coefficients", summary.coefficients, dims=dims.BASIS)
            phi = pm.Data("eigenfunctions", summary.design, dims=(dims.T, dims.BASIS))
            self.add_to_model(centre, cal.scale, phi)
        return model

    # ---------------------------------------------------------------- densities
    def log_density(self, y, centre, scale) -> np.ndarray:
        """Exact log-density of released coefficients ``y`` (..., J) given the
        centre (J,) and scale (J,), summed over ``basis``; numpy (``law.logp``)."""
        y, centre, scale = (np.asarray(a, dtype=float) for a in (y, centre, scale))
        return np.asarray(self.law.logp(y, centre, scale))

    def privacy_loss(self, y, centre, centre_prime, scale) -> np.ndarray:
        """Privacy loss ``log p_D(y) − log p_{D'}(y)`` of releases ``y`` (..., J) (``law.privacy_loss``)."""
        return self.law.privacy_loss(y, centre, centre_prime, scale)

    def attrs(self) -> dict:
        out = {"mechanism": self.family, "epsilon": self.epsilon, "delta": self.delta,
               "mechanism_source": self.source}
        out.update(self.law.attrs())
        out["noise_scale_meaning"] = self.law.describe_scale()
        return out

    def release_attrs(self, spec: SummarySpec) -> dict:
        """Extra release metadata that depends on the summary (none by default)."""
        return {}


def _require(spec, cls, message: str, fix: str) -> None:
    if not isinstance(spec, cls):
        raise CompatibilityError(message, fix)


__all__ = ["Mechanism", "Calibration", "compile_mode"]
