"""Priors over the underlying curve for noise-aware inference from a release.

A prior adds variables to the current ``pm.Model`` and returns the curve on
the grid (dims ``t``) and/or its coefficients in the release's basis (dims
``basis``). Three families:

* :class:`GPPrior` — Gaussian-process prior on the curve, ``f = m + a·GP(0,
  Matérn(ρ))``, whose Karhunen–Loève coefficients in the release's basis are
  ``A f``; hyperpriors on length-scale ρ and amplitude a (or fixed values),
  optional constant mean m. The curve is integrated out analytically during
  sampling and drawn exactly afterwards (:func:`~fdp_ppl.inference.build_model`).
* :class:`ICLPPrior` — the ICLP as a prior on the coefficients in the
  release's own eigenbasis: ``θ_j ~ Laplace(0, a √(λ_j/2))`` written as the
  exact Normal scale mixture ``θ_j | V_j ~ N(0, a² λ_j V_j)``, ``V_j ~ Exp(1)``
  (``specs/iclp.md`` §4.3 P2), which gives NUTS a smooth geometry.
* :class:`CustomPrior` — a user function that adds its own variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from .._backend import backend
from ..noise.laws import Laplace, Normal
from ..settings import GP_JITTER
from ..spaces import Matern
from ..spaces.kernels import matern_half_integer



@dataclass(frozen=True)
class GPPrior:
    """Gaussian-process prior on the curve, Matérn covariance.

    Parameters
    ----------
    nu : {0.5, 1.5, 2.5}
        Matérn smoothness.
    lengthscale : float or None
        Fixed ρ (on the [0, 1] scale), or None for a ``LogNormal(log 0.2, 1)``
        hyperprior (90% between 0.04 and 1.0).
    amplitude : float or None
        Fixed marginal sd a, or None for a ``HalfNormal(amplitude_scale)`` hyperprior.
    amplitude_scale : float or None
        Scale of the amplitude hyperprior (units of the curves); None: twice
        the spread of the released curve about its level (a public quantity).
    mean : float or None
        Prior mean level m: None gives a ``Normal(mean_loc, mean_scale)``
        constant; a float fixes it.
    mean_loc, mean_scale : float or None
        Location and scale of the constant-mean prior (units of the curves);
        None: the released curve's level and twice its spread.
    jitter : float
        Added to the kernel diagonal (relative) for a stable Cholesky.

    Notes
    -----
    With a Laplace (ICLP, FRL) release and a free amplitude, the posterior can
    be bimodal when only a few low-order coefficients carry signal: a large
    released coefficient is explained either by the curve or by a Laplace-noise
    outlier, and one release cannot tell them apart well. In a check (n = 400,
    50-point grid, ε = 1) the posterior mean was then worse than the raw
    release, while fixed public values of ``amplitude``/``lengthscale`` or the
    :class:`ICLPPrior` with learned smoothness improved on it. Give the
    amplitude public, informative values where you have them.
    """

    nu: float = 1.5
    lengthscale: float | None = None
    amplitude: float | None = None
    amplitude_scale: float | None = None
    mean: float | None = None
    mean_loc: float | None = None
    mean_scale: float | None = None
    jitter: float = GP_JITTER
    name: str = "gp"

    def hyperparameters(self, hint):
        """Add the hyperpriors (or constants) to the current model: (ρ, a, m)."""
        hint = hint or {"level": 0.0, "spread": 1.0}
        amp_scale = self.amplitude_scale if self.amplitude_scale is not None else 2 * hint["spread"]
        loc = self.mean_loc if self.mean_loc is not None else hint["level"]
        mscale = self.mean_scale if self.mean_scale is not None else 2 * hint["spread"]
        rho = (pm.LogNormal("lengthscale", mu=np.log(0.2), sigma=1.0) if self.lengthscale is None
               else self.lengthscale)
        amp = pm.HalfNormal("amplitude", sigma=amp_scale) if self.amplitude is None else self.amplitude
        m = pm.Normal("mean_level", loc, mscale) if self.mean is None else self.mean
        return rho, amp, m

    #: the law of a coefficient's prior in a basis where the prior is diagonal
    law = Normal()

    def kernel_matrix(self, t, rho, xp="pt"):
        """Matérn correlation on the grid (+ relative jitter), pytensor or numpy."""
        d = np.abs(t[:, None] - t[None, :])
        if xp == "np":
            return Matern(rho=float(rho), nu=self.nu)(d) + self.jitter * np.eye(t.size)
        return matern_half_integer(pt.as_tensor_variable(d), rho, self.nu, backend("pt")) + self.jitter * np.eye(t.size)

    def kernel_matrices(self, t, rhos) -> np.ndarray:
        """:meth:`kernel_matrix` (numpy) for several length-scales at once.

        Parameters
        ----------
        t : ndarray, shape (K,)
        rhos : array_like, shape (R,)

        Returns
        -------
        ndarray, shape (R, K, K)
        """
        rhos = np.atleast_1d(np.asarray(rhos, dtype=float))
        d = np.abs(t[:, None] - t[None, :])
        if self.nu in (0.5, 1.5, 2.5):
            out = matern_half_integer(d[None], rhos[:, None, None], self.nu)
        else:
            out = np.stack([Matern(rho=float(r), nu=self.nu)(d) for r in rhos])
        return out + self.jitter * np.eye(t.size)

    def coefficient_covariance(self, A, t, rho) -> np.ndarray:
        """Prior covariance ``A K_ρ Aᵀ`` (J, J) of the release's coefficients ``θ = A f`` for unit
        amplitude at a fixed length-scale ``ρ`` (``A`` (J, K): grid → coefficients)."""
        return A @ self.kernel_matrix(t, rho, xp="np") @ A.T

    def describe(self) -> dict:
        return {"prior": self.name, "prior_nu": self.nu, "prior_lengthscale": str(self.lengthscale),
                "prior_amplitude": str(self.amplitude)}


@dataclass(frozen=True)
class ICLPPrior:
    """ICLP prior with covariance ``C^s`` on the release's eigen-coefficients:
    ``θ_j ~ Laplace(0, a √(r_j/2))``, ``r_j = (λ_j/λ_1)^s``.

    Written as ``θ_j | V_j ~ N(0, a² r_j V_j)`` with ``V_j ~ Exp(1)``: marginally
    ``Laplace(0, a √(r_j/2))`` (variance ``a² r_j``). The smoothness ``s``
    matters: with ``s = 1`` the prior decays exactly like the ICLP noise
    itself, so it cannot tell a smooth signal from noise and shrinks hard;
    ``s > 1`` (the RKHS of ``C^s``, as in the ICLP-QR penalty) favours
    smoother curves. By default ``s = 1 + HalfNormal(2)``.

    Parameters
    ----------
    amplitude : float or None
        a, or None for a ``HalfNormal(amplitude_scale)`` hyperprior.
    amplitude_scale : float or None
        None: twice the L² norm of the released curve (public).
    smoothness : float or None
        Fixed power ``s >= 1``, or None for ``s = 1 + HalfNormal(2)``.
    """

    amplitude: float | None = None
    amplitude_scale: float | None = None
    smoothness: float | None = None
    name: str = "iclp"

    #: the law of a coefficient's prior (diagonal in the release's eigenbasis)
    law = Laplace()

    def hyperparameters(self, hint):
        """Add the hyperpriors (or constants) to the current model: amplitude ``a`` and power ``s``."""
        amp_scale = self.amplitude_scale if self.amplitude_scale is not None else 2 * (hint or {"rms": 1.0})["rms"]
        amp = pm.HalfNormal("amplitude", sigma=amp_scale) if self.amplitude is None else self.amplitude
        power = 1.0 + pm.HalfNormal("smoothness_excess", sigma=2.0) if self.smoothness is None else self.smoothness
        return amp, power

    @staticmethod
    def ratio(eigenvalues, power):
        """``r_j = (λ_j/λ_1)^s``, shape ``(..., J)`` for ``power`` of shape ``(..., 1)`` or scalar
        (numpy or PyTensor)."""
        eigenvalues = np.asarray(eigenvalues, dtype=float)
        return (eigenvalues / eigenvalues[0]) ** power

    def laplace_scale(self, eigenvalues, amplitude, power):
        """Laplace scale ``a √(r_j/2)`` of ``θ_j`` (variance ``a² r_j``), numpy or PyTensor."""
        return amplitude * (self.ratio(eigenvalues, power) / 2.0) ** 0.5

    def describe(self) -> dict:
        return {"prior": self.name, "prior_amplitude": str(self.amplitude), "prior_smoothness": str(self.smoothness)}


@dataclass(frozen=True)
class CustomPrior:
    """A user-supplied PyMC fragment.

    Parameters
    ----------
    fn : callable
        ``fn(t, eigenfunctions, weights) -> (curve or None, coefficients or None)``
        called inside the model; ``curve`` has dims ``t`` (grid values),
        ``coefficients`` dims ``basis`` (release basis). Exactly one may be None.
    name : str
    """

    fn: Callable
    name: str = "custom"

    def add(self, t, phi, weights, eigenvalues=None, hint=None):
        return self.fn(t, phi, weights)

    def describe(self) -> dict:
        return {"prior": self.name}


def resolve_prior(prior):
    """Accept a prior object or one of the names "gp", "iclp"."""
    if isinstance(prior, (GPPrior, ICLPPrior, CustomPrior)):
        return prior
    if prior == "gp":
        return GPPrior()
    if prior == "iclp":
        return ICLPPrior()
    if callable(prior):
        return CustomPrior(prior)
    raise ValueError(f"unknown prior {prior!r}; use 'gp', 'iclp', GPPrior(...), ICLPPrior(...) or a callable")


__all__ = ["GPPrior", "ICLPPrior", "CustomPrior", "resolve_prior"]
