"""Elliptical noise laws on the retained coefficients (Reimherr & Awan 2019).

``ξ = √W · scale ⊙ z`` with ``z ~ N(0, I_J)`` and **one** mixing variable
``W`` shared by all coefficients: t (``W ~ InvGamma(ν/2, ν/2)``), Laplace
process (``W ~ Exp(1)``), ellipsoidal K-norm in dimension J
(``W ~ χ²_{J+1}``) or Gaussian (``W ≡ 1``). The joint density is the
J-variate elliptical density of the whitened residual
``z = (y − μ)/scale``: ``c_J f(‖z‖²) / Π_j scale_j`` with the family's
generator ``f`` (:mod:`fdp_ppl.noise.elliptical.families`). The families and
mixing laws are imported lazily so that this module does not depend on the
:mod:`fdp_ppl.noise.elliptical` package (which builds mechanisms on top of it).
"""

from __future__ import annotations

import re

import numpy as np

from ..._backend import NP
from ...errors import InputError
from .base import MIXING_VARIABLE, NoiseLaw, check_coefficients, check_scale, check_scale_graph

KINDS = ("t", "laplace", "knorm", "gaussian")
_NAME = re.compile(r"^elliptical-(?P<kind>[a-z]+)(\(nu=(?P<nu>[^)]+)\))?$")


def _static_dim(*arrays) -> int:
    for a in arrays:
        shape = getattr(getattr(a, "type", None), "shape", None)
        if shape is None:
            shape = np.shape(a)
        if len(shape) and shape[-1] is not None:
            return int(shape[-1])
    raise InputError("the number of coefficients J of an elliptical law must be known when the model is built",
                     "pass the public noise scale as a numpy array (or pm.Data with a fixed shape)")


class Elliptical(NoiseLaw):
    """Elliptical law ``√W · scale ⊙ z`` on the J coefficients (one shared W).

    Parameters
    ----------
    kind : {"t", "laplace", "knorm", "gaussian"}
        Mixing law of W: multivariate t with ``nu`` degrees of freedom, the
        Laplace process, the ellipsoidal K-norm (finite J only) or Gaussian.
    nu : float, optional
        Degrees of freedom (> 0) of the t law.

    Raises
    ------
    InputError
        Unknown kind, or ``kind="t"`` without a positive ``nu``.

    Notes
    -----
    ``scale`` is a *dispersion* scale: coefficient ``j`` has variance
    ``E[W] scale_j²``. Source: Reimherr & Awan (2019), Theorems 1, 3, 5
    (corrected, ``specs/elliptical.md``).
    """

    key = "elliptical"
    product = False
    source = "Reimherr & Awan (2019), Theorems 1, 3, 5 (corrected)"

    def __init__(self, kind: str, nu: float | None = None):
        if kind not in KINDS:
            raise InputError(f"unknown elliptical law {kind!r}", f"use one of {KINDS}")
        if kind == "t":
            if nu is None or not np.isfinite(float(nu)) or float(nu) <= 0:
                raise InputError(f"the t law needs degrees of freedom nu > 0, got {nu!r}", "pass e.g. nu=3")
            nu = float(nu)
        elif nu is not None:
            raise InputError(f"nu applies only to the t law, not to {kind!r}", "drop nu")
        self.kind = kind
        self.nu = nu

    @classmethod
    def from_name(cls, name: str):
        m = _NAME.match(name)
        if m and m["kind"] in KINDS:
            return cls(m["kind"], nu=float(m["nu"]) if m["nu"] else None)
        return None

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"elliptical-{self.kind}" + (f"(nu={self.nu:g})" if self.nu is not None else "")

    def params(self):
        return {"kind": self.kind, "nu": self.nu}

    # ------------------------------------------------------------------ families
    def family(self, d: int):
        """The J-variate elliptical family (:mod:`fdp_ppl.noise.elliptical.families`)."""
        from ..elliptical.families import make_family

        return make_family(self.kind, int(d), nu=self.nu)

    def mixing_law(self, d: int | None = None):
        """Law of W (:class:`fdp_ppl.noise.elliptical.privacy.MixingLaw`); ``d`` is needed for the K-norm."""
        from ..elliptical.families import MixingLaw

        return MixingLaw(self.kind, nu=self.nu, d=int(d) if self.kind == "knorm" else None)

    def _w(self, n_components, name=None, size=None):
        import pymc as pm

        kw = {"size": size} if name is None else {}
        make = (lambda cls, *a, **k: cls.dist(*a, **k, **kw)) if name is None else (lambda cls, *a, **k: cls(name, *a, **k))
        if self.kind == "t":
            return make(pm.InverseGamma, alpha=self.nu / 2, beta=self.nu / 2)
        if self.kind == "laplace":
            return make(pm.Exponential, lam=1.0)
        if self.kind == "knorm":
            return make(pm.ChiSquared, nu=n_components + 1)
        return None

    # ------------------------------------------------------------------ PyMC
    def rv(self, mu, scale, n_draws):
        import pymc as pm
        import pytensor.tensor as pt

        J = pt.shape(pt.as_tensor_variable(scale))[-1]
        z = pm.Normal.dist(0.0, 1.0, size=(n_draws, J))
        w = self._w(J, size=(n_draws,))
        return mu + (z * scale if w is None else pt.sqrt(w)[:, None] * scale * z)

    def _dist(self, mu, scale, size):
        import pymc as pm
        import pytensor.tensor as pt
        from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none

        if rv_size_is_none(size):
            size = implicit_size_from_params(mu, scale, ndims_params=[1, 1])
        J = pt.shape(scale)[-1]
        z = pm.Normal.dist(0.0, 1.0, size=pt.concatenate([size, [J]]))
        w = self._w(J, size=size)
        return mu + (z * scale if w is None else pt.sqrt(w)[..., None] * scale * z)

    def pymc(self, name, mu, scale, **kwargs):
        """``pm.CustomDist`` with the exact joint log-density (PyTensor) and the
        scale-mixture forward sampler; accepts ``observed=``."""
        import pymc as pm

        from ..._backend import backend

        xp = backend("pt")
        d = _static_dim(scale)
        return pm.CustomDist(name, mu, scale, dist=self._dist,
                             logp=lambda value, m, s: self.logp(value, m, s, xp=xp, d=d),
                             signature="(j),(j)->(j)", **kwargs)

    # ------------------------------------------------------------------ densities
    def logp(self, y, mu, scale, *, xp=NP, pointwise=False, d: int | None = None):
        """J-variate log-density ``log c_J + log f(‖z‖²) − Σ_j log scale_j``,
        ``z = (y − μ)/scale`` (see :meth:`NoiseLaw.logp`); ``d`` = J when the
        arrays' shapes do not say it (PyTensor)."""
        if xp is NP:
            y, mu, scale = check_coefficients(y, mu, scale=scale)
        d = _static_dim(scale, y, mu) if d is None else int(d)
        fam = self.family(d)
        z = (y - mu) / scale
        q = xp.sum(z * z, axis=-1)
        out = fam.log_norm + fam.log_generator(q, xp) - xp.sum(xp.log(scale), axis=-1)
        out = out[..., None] if pointwise else out
        return out if xp is NP else check_scale_graph(out, scale)

    def variance(self, scale):
        """``E[W] scale_j²`` (``inf`` for a t law with ν <= 2), shape like ``scale``."""
        scale = check_scale(scale)
        return self.mixing_law(scale.shape[-1]).mean * scale**2

    # ------------------------------------------------------------------ scale mixture
    def mixing(self, n_components, dims=None):
        w = self._w(int(n_components), name=MIXING_VARIABLE)
        return 1.0 if w is None else w

    def mixing_draws(self, posterior, n_samples, n_components):
        if self.kind == "gaussian":
            return np.ones((n_samples, n_components))
        w = np.asarray(posterior[MIXING_VARIABLE], dtype=float).reshape(n_samples)
        return np.repeat(w[:, None], n_components, axis=1)

    def describe_scale(self):
        return ("dispersion scale of the elliptical law; coefficient sd = noise_scale * sqrt(E[W]) with one W "
                "shared by all coefficients")


__all__ = ["Elliptical", "KINDS"]
