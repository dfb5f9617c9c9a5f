"""The noise law of a mechanism: one object owns every formula about the noise.

A mechanism releases ``ỹ = f_D + ξ`` on the ``J`` retained coefficients of a
summary, where the law of ``ξ`` has a per-coefficient public ``scale``
(Laplace scale ``b_j``, Normal sd ``s_j``, or the dispersion scale of an
elliptical law). The :class:`NoiseLaw` of the mechanism is the single place
that knows

* its PyMC variable (:meth:`NoiseLaw.pymc`, usable with ``observed=`` as the
  exact likelihood of a release) and its forward graph (:meth:`NoiseLaw.rv`,
  compiled by :class:`fdp_ppl.noise.sampling.CompiledSampler`);
* its log-density, written once for numpy and PyTensor (:meth:`NoiseLaw.logp`);
* its variance per coefficient (:meth:`NoiseLaw.variance`) and the privacy
  loss between two centres (:meth:`NoiseLaw.privacy_loss`);
* its Gaussian scale-mixture form ``ξ | M ~ N(0, scale² M)`` that inference
  integrates over (:meth:`NoiseLaw.mixing`, :meth:`NoiseLaw.mixing_draws`) and
  its convolution with Gaussian sampling error (:meth:`NoiseLaw.convolved_logp`);
* its round trip through release attributes (:meth:`NoiseLaw.attrs`,
  :func:`fdp_ppl.noise.laws.law_from_attrs`).

Release, inference, utility (:func:`fdp_ppl.summaries.tuning.noise_energy`), plots and
the command line ask the law; none re-derives it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from ..._backend import NP

#: name of the latent mixing variable(s) that inference adds for the noise
MIXING_VARIABLE = "noise_mixing"

#: elements per block of the elementwise evaluations of :class:`~fdp_ppl.noise.laws.product.Laplace` (numpy, and the
#: compiled kernels' copies of broadcast parameters): arrays of about half a megabyte stay in cache, a third less time
#: than one pass over 2000 draws x 3200 coefficients
BLOCK = 2**16


def check_scale(scale) -> np.ndarray:
    """The public noise scale as a float array, after checking it.

    Parameters
    ----------
    scale : array_like, shape (..., J)
        Per-coefficient scale of a noise law (Laplace ``b_j``, Normal sd
        ``s_j``, elliptical dispersion scale).

    Returns
    -------
    ndarray, shape (..., J)

    Raises
    ------
    InputError
        A 0-d scale (the law needs one scale per coefficient), or any entry
        that is not finite and > 0 (a density with such a scale does not exist).
    """
    from ...errors import InputError

    s = np.asarray(scale, dtype=float)
    if s.ndim == 0:
        raise InputError(f"the noise scale must have one entry per coefficient, shape (J,), got a scalar {scale!r}",
                         "pass e.g. mechanism.calibrate(spec).scale")
    stored = s[tuple(slice(0, 1) if step == 0 else slice(None) for step in s.strides)]   # a broadcast view's values
    if stored.size and not (stored.min() > 0 and np.isfinite(stored.max())):   # NaN fails the first, inf the second
        bad = stored[~(np.isfinite(stored) & (stored > 0))].ravel()[:3]
        raise InputError(f"noise scales must be finite and > 0, got {bad.tolist()}",
                         "pass the public scale from mechanism.calibrate(spec).scale")
    return s


def check_coefficients(*arrays, scale) -> tuple[np.ndarray, ...]:
    """Float arrays of coefficients ``(..., J)`` and a checked ``scale`` (..., J).

    Every array with at least one dimension must end in the ``J`` coefficients
    of ``scale``, and all must broadcast together.

    Returns
    -------
    tuple of ndarray
        The arrays, then the scale.

    Raises
    ------
    InputError
        A bad scale (:func:`check_scale`), or shapes that do not match.
    """
    from ...errors import InputError

    s = check_scale(scale)
    out = tuple(np.asarray(a, dtype=float) for a in arrays)
    J = s.shape[-1]
    shapes = [a.shape for a in out] + [s.shape]
    if any(a.ndim and a.shape[-1] != J for a in out):
        raise InputError(f"coefficient arrays of shapes {shapes[:-1]} do not end in the J = {J} coefficients of the "
                         f"noise scale (shape {s.shape})", "pass arrays of shape (..., J)")
    try:
        np.broadcast_shapes(*shapes)
    except ValueError as err:
        raise InputError(f"coefficient arrays of shapes {shapes} do not broadcast together",
                         "pass arrays of shape (..., J) with matching leading dimensions") from err
    return (*out, s)


def check_scale_graph(logp, scale):
    """Wrap a PyTensor log-density so that a scale that is not finite and > 0
    gives ``-inf`` inside a PyMC model (or raises ``ParameterValueError`` when
    evaluated directly), like PyMC's own ``check_parameters``."""
    import pytensor.tensor as pt
    from pymc.distributions.dist_math import check_parameters

    s = pt.as_tensor_variable(scale)
    return check_parameters(logp, pt.gt(s, 0), pt.isfinite(s), msg="noise scale must be finite and > 0")


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
        ``generator`` seam of :mod:`fdp_ppl.noise.sampling`).
    """

    name: ClassVar[str] = ""
    #: key of the law class in :data:`fdp_ppl.releasing.registry.LAWS` (defaults to :attr:`name`)
    key: ClassVar[str] = ""
    #: every concrete law class, in definition order (filled by ``__init_subclass__``)
    classes: ClassVar[list[type["NoiseLaw"]]] = []
    product: ClassVar[bool] = True
    fp_safe: ClassVar[bool] = False
    source: ClassVar[str] = ""

    def __init_subclass__(cls, abstract: bool = False, **kwargs):
        """Register a concrete law class (``class X(NoiseLaw, abstract=True)``: a shared base, not registered)."""
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        if not cls.__dict__.get("key"):
            cls.key = cls.__dict__.get("name", "") if isinstance(cls.__dict__.get("name"), str) else cls.__name__.lower()
        NoiseLaw.classes.append(cls)

    @classmethod
    def from_name(cls, name: str) -> "NoiseLaw | None":
        """The law whose :attr:`name` is ``name``, or None if this class does not make it.

        Laws without parameters need nothing more; laws with parameters in their
        name (e.g. ``elliptical-t(nu=3)``) override this.
        """
        if isinstance(cls.__dict__.get("name"), str) and name == cls.name:
            return cls()
        return None

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
        scale : array_like, shape (J,) or (..., J)
            Public per-coefficient scale; must be finite and > 0.
        xp : namespace
            :data:`fdp_ppl._backend.NP` (numpy) or ``backend("pt")`` (PyTensor).
        pointwise : bool
            True: one term per coefficient, shape (..., J) (product laws) or
            (..., 1) (joint laws); False: the joint log-density, shape (...).

        Raises
        ------
        InputError
            numpy: a scale that is not finite and > 0, or arrays that do not
            end in the same J. PyTensor: such a scale gives ``-inf`` in a PyMC
            model (``ParameterValueError`` when the graph is evaluated directly).
        """

    def privacy_loss(self, y, centre, centre_prime, scale) -> np.ndarray:
        """Privacy loss ``log p_D(y) − log p_{D'}(y)`` of releases ``y`` (..., J), numpy; shape (...).

        Raises
        ------
        InputError
            A scale that is not finite and > 0, or shapes that do not match.
        """
        y, c, cp, s = check_coefficients(y, centre, centre_prime, scale=scale)
        return np.asarray(self.logp(y, c, s) - self.logp(y, cp, s))

    @abstractmethod
    def variance(self, scale) -> np.ndarray:
        """Variance of each coefficient's noise, shape (J,) (``inf`` where it does not exist).

        Raises
        ------
        InputError
            A scale that is not finite and > 0.
        """

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

    # ------------------------------------------------------------------ one coefficient under a prior
    def marginal_logp(self, y, scale, prior: "NoiseLaw", prior_mean, prior_scale, *, xp=NP):
        """Pointwise log-density of ``y = c + ξ`` with ``c ~ prior(prior_mean, prior_scale)`` and
        ``ξ ~ self(0, scale)`` independent (the marginal likelihood of one released coefficient
        whose centre has a :class:`Normal` or :class:`Laplace` prior), shape (..., J).

        Raises
        ------
        NotImplementedError
            Joint laws, or a prior family without a closed form.
        """
        raise NotImplementedError(f"the {self.name} law has no closed-form marginal under a {prior.name} prior")

    def centre_posterior_draws(self, y, scale, prior: "NoiseLaw", prior_mean, prior_scale, rng) -> np.ndarray:
        """Exact draws of the centre ``c`` given ``y ~ self(c, scale)`` and ``c ~ prior(prior_mean,
        prior_scale)``, independently per element of the broadcast arrays (..., J) (numpy).

        Raises
        ------
        NotImplementedError
            Joint laws, or a prior family without an exact sampler.
        """
        raise NotImplementedError(f"the {self.name} law has no exact posterior under a {prior.name} prior")

    def population_posterior_draws(self, y, scale, centre, prior_sd, sampling_sd, rng) -> tuple:
        """Exact draws of ``(θ, ξ, E)`` given a released ``y = θ + ε + ξ`` (..., J), elementwise: ``θ ~ N(centre,
        prior_sd²)``, a Gaussian sampling error ``ε ~ N(0, sampling_sd²)`` (None: no sampling error, ``ε = 0``),
        the noise ``ξ ~ self(0, scale)`` and ``E`` its mixing variable (:meth:`mixing_conditional_draws`; None when
        the law has none). ``v = θ + ε`` has a ``N(centre, prior_sd² + sampling_sd²)`` prior, so ``v | y`` is
        :meth:`centre_posterior_draws`, ``ξ = y − v`` exactly, ``θ | v`` is conjugate (``ξ`` is independent of
        ``θ`` given ``v``) and ``E | ξ`` :meth:`mixing_conditional_draws`, in that order (a law may fuse the
        steps). The population target of :func:`fdp_ppl.infer` (``θ`` the shrunk coefficients of the population
        mean, ``ε`` the sample mean's error).

        Returns
        -------
        tuple of numpy.ndarray
            ``θ``, ``ξ`` and ``E`` (or None), each of the broadcast shape.

        Raises
        ------
        NotImplementedError
            Laws that are not product laws (the independent laws of :mod:`fdp_ppl.noise.laws.product` draw it).
        """
        raise NotImplementedError(f"the {self.name} law has no per-coefficient population posterior")

    def mixing_conditional_draws(self, noise, scale, rng) -> np.ndarray | None:
        """Exact draws of the mixing variable :data:`MIXING_VARIABLE` of :meth:`mixing` given the
        noise value ``ξ`` (..., J) (numpy); None when the law has no mixing variable.

        Raises
        ------
        NotImplementedError
            Laws whose mixing variable is shared by all coefficients (elliptical laws).
        """
        raise NotImplementedError(f"the {self.name} law has no per-coefficient mixing conditional")

    # ------------------------------------------------------------------ metadata
    def params(self) -> dict[str, Any]:
        """Parameters beyond the scale (e.g. ν of a t law)."""
        return {}

    def attrs(self) -> dict[str, Any]:
        """Release attributes that identify the law (read back by :func:`fdp_ppl.noise.laws.law_from_attrs`)."""
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


__all__ = ["NoiseLaw", "MIXING_VARIABLE", "check_scale", "check_coefficients", "check_scale_graph"]
