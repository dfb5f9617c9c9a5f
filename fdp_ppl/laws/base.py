"""The noise law of a mechanism: one object owns every formula about the noise.

A mechanism releases ``ỹ = f_D + ξ`` on the ``J`` retained coefficients of a
summary, where the law of ``ξ`` has a per-coefficient public ``scale``
(Laplace scale ``b_j``, Normal sd ``s_j``, or the dispersion scale of an
elliptical law). The :class:`NoiseLaw` of the mechanism is the single place
that knows

* its PyMC variable (:meth:`NoiseLaw.pymc`, usable with ``observed=`` as the
  exact likelihood of a release) and its forward graph (:meth:`NoiseLaw.rv`,
  compiled by :class:`fdp_ppl.sampling.CompiledSampler`);
* its log-density, written once for numpy and PyTensor (:meth:`NoiseLaw.logp`);
* its variance per coefficient (:meth:`NoiseLaw.variance`) and the privacy
  loss between two centres (:meth:`NoiseLaw.privacy_loss`);
* its Gaussian scale-mixture form ``ξ | M ~ N(0, scale² M)`` that inference
  integrates over (:meth:`NoiseLaw.mixing`, :meth:`NoiseLaw.mixing_draws`) and
  its convolution with Gaussian sampling error (:meth:`NoiseLaw.convolved_logp`);
* its round trip through release attributes (:meth:`NoiseLaw.attrs`,
  :func:`fdp_ppl.laws.law_from_attrs`).

Release, inference, utility (:func:`fdp_ppl.tuning.noise_energy`), plots and
the command line ask the law; none re-derives it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from .._backend import NP

#: name of the latent mixing variable(s) that inference adds for the noise
MIXING_VARIABLE = "noise_mixing"


class NoiseLaw(ABC):
    """Law of the noise on the released coefficients (see the module docstring).

    Attributes
    ----------
    name : str
        Recorded in a release as ``attrs["noise_law"]``.
    product : bool
        True when the coefficients' noises are independent (the log-density is
        a sum over ``basis``); False for elliptical laws (one shared mixing
        variable).
    fp_safe : bool
        Whether the law has a floating-point-safe release sampler (the
        ``generator`` seam of :mod:`fdp_ppl.sampling`).
    """

    name: ClassVar[str] = ""
    product: ClassVar[bool] = True
    fp_safe: ClassVar[bool] = False
    source: ClassVar[str] = ""

    # ------------------------------------------------------------------ PyMC
    @abstractmethod
    def rv(self, mu, scale, n_draws):
        """Forward graph of ``n_draws`` i.i.d. released coefficient vectors,
        shape ``(n_draws, J)`` (PyMC ``.dist`` variables, no model needed)."""

    @abstractmethod
    def pymc(self, name: str, mu, scale, **kwargs):
        """The law as a variable of the current ``pm.Model``: ``name ~ Law(mu, scale)``.

        Accepts ``observed=`` (the exact likelihood of a release) and
        ``dims=``/``shape=`` like any PyMC distribution.
        """

    # ------------------------------------------------------------------ densities
    @abstractmethod
    def logp(self, y, mu, scale, *, xp=NP, pointwise: bool = False):
        """Exact log-density of released coefficients ``y`` (..., J).

        Parameters
        ----------
        y, mu : array_like or tensor, shape (..., J)
        scale : array_like, shape (J,)
            Public per-coefficient scale; must be > 0.
        xp : namespace
            :data:`fdp_ppl._backend.NP` (numpy) or ``backend("pt")`` (PyTensor).
        pointwise : bool
            True: one term per coefficient, shape (..., J) (product laws) or
            (..., 1) (joint laws); False: the joint log-density, shape (...).
        """

    def privacy_loss(self, y, centre, centre_prime, scale) -> np.ndarray:
        """Privacy loss ``log p_D(y) − log p_{D'}(y)`` of releases ``y`` (..., J), numpy."""
        y, c, cp, s = (np.asarray(a, dtype=float) for a in (y, centre, centre_prime, scale))
        return np.asarray(self.logp(y, c, s) - self.logp(y, cp, s))

    @abstractmethod
    def variance(self, scale) -> np.ndarray:
        """Variance of each coefficient's noise, shape (J,) (``inf`` where it does not exist)."""

    # ------------------------------------------------------------------ scale mixture
    @abstractmethod
    def mixing(self, n_components: int, dims: str | None = None):
        """Add the latent mixing variable(s) ``M`` to the current ``pm.Model`` and
        return the variance multiplier, so that ``ξ | M ~ N(0, scale² M)``
        exactly (a constant 1 for Normal noise)."""

    @abstractmethod
    def mixing_draws(self, posterior: dict[str, np.ndarray], n_samples: int, n_components: int) -> np.ndarray:
        """The variance multiplier ``M`` per posterior sample, shape (n_samples, J),
        from the flattened posterior draws of :meth:`mixing`'s variables."""

    def convolved_logp(self, x, g, scale, *, xp=NP):
        """Pointwise log-density of ``N(0, g²) + ξ_j`` at ``x`` (..., J).

        Raises
        ------
        NotImplementedError
            For laws without a closed form (elliptical laws).
        """
        raise NotImplementedError(f"the {self.name} law has no closed-form convolution with Gaussian sampling error; "
                                  "use target='summary' or a GP / ICLP prior")

    # ------------------------------------------------------------------ metadata
    def params(self) -> dict[str, Any]:
        """Parameters beyond the scale (e.g. ν of a t law)."""
        return {}

    def attrs(self) -> dict[str, Any]:
        """Release attributes that identify the law (read back by :func:`fdp_ppl.laws.law_from_attrs`)."""
        return {"noise_law": self.name}

    def describe_scale(self) -> str:
        """What ``constant_data/noise_scale`` means for this law."""
        return "per-coefficient noise scale"

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({p})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.params() == other.params()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.params().items()))))


__all__ = ["NoiseLaw", "MIXING_VARIABLE"]
