"""Mechanisms as noise laws on eigen-coefficients, each usable as a PyMC model fragment.

A mechanism releases ``ỹ_j = f_{D,j} + ξ_j`` for the retained coefficients
``j = 1..J`` of a summary, with independent ``ξ_j`` whose scale comes from the
summary's public sensitivity. The released curve is ``Σ_j ỹ_j φ_j(t)``.

In PyMC the released coefficients are one random variable
``coefficients ~ Law(mu=centre, scale)`` over dim ``basis`` — for a release
``centre`` is the summary (``pm.Data``); for inference it is a latent curve's
coefficients, and the same call gives the exact likelihood of a release.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from .. import dims
from ..accounting import PrivacyBudget
from ..errors import CompatibilityError
from ..summaries import LinearSummary, Sensitivity


def compile_mode():
    """PyTensor mode for the package's compiled functions: the C backend
    ("CVM", ~10× faster to compile than Numba) unless the user chose a mode
    through ``PYTENSOR_FLAGS`` or ``FDP_PPL_PYTENSOR_MODE``."""
    mode = os.environ.get("FDP_PPL_PYTENSOR_MODE")
    if mode:
        return mode
    if "mode" in os.environ.get("PYTENSOR_FLAGS", ""):
        return None
    return "CVM"


@dataclass(frozen=True)
class Calibration:
    """Public noise calibration of a mechanism for one summary.

    Attributes
    ----------
    sensitivity : Sensitivity
    scale : ndarray, shape (J,)
        Per-coefficient noise scale: Laplace scale ``b_j`` or Normal sd.
    sigma : float
        The mechanism's global multiplier (Δ/ε for ICLP and FRL; the
        Gaussian σ for the Gaussian mechanism).
    """

    sensitivity: Sensitivity
    scale: np.ndarray
    sigma: float


class Mechanism(ABC):
    """Base class; see :class:`ICLP`, :class:`FRL`, :class:`GaussianMechanism`."""

    #: short name recorded in releases
    family: str = ""
    #: norm in which the sensitivity must be measured
    norm: str = ""
    #: "laplace" or "normal"
    noise_law: str = ""
    #: paper and theorem
    source: str = ""

    epsilon: float
    delta: float = 0.0

    @property
    def budget(self) -> PrivacyBudget:
        """Budget spent by one release (one draw)."""
        return PrivacyBudget(self.epsilon, self.delta)

    # ---------------------------------------------------------------- calibration
    @abstractmethod
    def calibrate(self, summary: LinearSummary, bound: str = "tight") -> Calibration:
        """Noise scale per retained coefficient from the summary's public sensitivity."""

    def _check_summary(self, summary):
        if not isinstance(summary, LinearSummary):
            raise CompatibilityError("summary must be a LinearSummary, e.g. iclp_qr_mean(curves, basis, tau=1)")

    # ---------------------------------------------------------------- PyMC
    def distribution(self, name: str, mu, scale, **kwargs):
        """The mechanism's law of the released coefficients as a PyMC variable.

        ``Laplace(mu, b=scale)`` or ``Normal(mu, sigma=scale)``. Inside a
        ``pm.Model``; pass ``observed=`` to use it as the exact likelihood of a
        release, ``dims="basis"`` to name the dimension.
        """
        if self.noise_law == "laplace":
            return pm.Laplace(name, mu=mu, b=scale, **kwargs)
        return pm.Normal(name, mu=mu, sigma=scale, **kwargs)

    def add_to_model(self, centre, scale, eigenfunctions, *, prefix: str = ""):
        """Add the mechanism to the current ``pm.Model``.

        Parameters
        ----------
        centre : tensor-like, dims (basis,)
            Coefficients the noise is added to (summary, or a latent variable).
        scale : array_like, dims (basis,)
            Public per-coefficient scale from :meth:`calibrate`.
        eigenfunctions : array_like, dims (t, basis)
            Retained eigenfunctions on the grid.
        prefix : str
            Prefix for variable names.

        Returns
        -------
        coefficients, curve : PyMC variables
            ``coefficients`` (basis) is the released coefficient vector,
            ``curve`` (t) a Deterministic ``Σ_j coefficients_j φ_j(t)``.
        """
        coefficients = self.distribution(f"{prefix}coefficients", mu=centre, scale=scale, dims=dims.BASIS)
        curve = pm.Deterministic(f"{prefix}curve", pt.dot(eigenfunctions, coefficients), dims=dims.T)
        return coefficients, curve

    def model(self, summary: LinearSummary, bound: str = "tight") -> pm.Model:
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
        cal = self.calibrate(summary, bound)
        coords = {dims.BASIS: np.arange(summary.n_components), dims.T: summary.grid.t}
        with pm.Model(coords=coords) as model:
            centre = pm.Data("summary_coefficients", summary.coefficients, dims=dims.BASIS)
            scale = pm.Data("noise_scale", cal.scale, dims=dims.BASIS)
            phi = pm.Data("eigenfunctions", summary.design, dims=(dims.T, dims.BASIS))
            self.add_to_model(centre, scale, phi)
        return model

    # ---------------------------------------------------------------- densities
    def log_density(self, y, centre, scale) -> np.ndarray:
        """Exact log-density of released coefficients ``y`` (..., J) given the
        centre (J,) and scale (J,), summed over ``basis``; numpy."""
        y, centre, scale = (np.asarray(a, dtype=float) for a in (y, centre, scale))
        z = y - centre
        if self.noise_law == "laplace":
            return np.sum(-np.log(2 * scale) - np.abs(z) / scale, axis=-1)
        return np.sum(-0.5 * np.log(2 * np.pi * scale**2) - 0.5 * (z / scale) ** 2, axis=-1)

    def privacy_loss(self, y, centre, centre_prime, scale) -> np.ndarray:
        """Privacy loss ``log p_D(y) − log p_{D'}(y)`` of releases ``y`` (..., J).

        Computed term-wise (never as a difference of two infinite norms,
        ``specs/iclp.md`` pitfall 10).
        """
        y, c, cp, s = (np.asarray(a, dtype=float) for a in (y, centre, centre_prime, scale))
        if self.noise_law == "laplace":
            return np.sum((np.abs(y - cp) - np.abs(y - c)) / s, axis=-1)
        return np.sum(((y - cp) ** 2 - (y - c) ** 2) / (2 * s**2), axis=-1)

    def attrs(self) -> dict:
        return {"mechanism": self.family, "epsilon": self.epsilon, "delta": self.delta,
                "noise_law": self.noise_law, "mechanism_source": self.source}
