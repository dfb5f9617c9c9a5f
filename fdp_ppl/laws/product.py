"""Independent noise per coefficient: Laplace (ε-DP mechanisms) and Normal (Gaussian mechanisms)."""

from __future__ import annotations

import numpy as np

from .. import dims as D
from .._backend import NP, log_erfcx
from .base import MIXING_VARIABLE, NoiseLaw, check_coefficients, check_scale, check_scale_graph


def _j(mu, scale):
    import pytensor.tensor as pt

    return pt.shape(pt.as_tensor_variable(scale))[-1]


class Laplace(NoiseLaw):
    """Independent ``Laplace(0, b_j)`` noise, density ``exp(−|x|/b_j)/(2b_j)``
    (``scipy.stats.laplace(scale=b)``, ``pm.Laplace(mu, b)``); variance ``2b_j²``.

    Scale mixture: ``ξ_j | E_j ~ N(0, 2b_j² E_j)`` with ``E_j ~ Exp(1)``
    (Andrews & Mallows 1974; ``specs/iclp.md`` §4.3). Used by ICLP
    (Lin & Reimherr 2026, Theorem 8), FRL and Bernstein.
    """

    name = "laplace"
    product = True
    #: OpenDP samples it exactly on a lattice (:class:`fdp_ppl.sampling_opendp.OpenDPSampler`)
    fp_safe = True
    source = "Laplace mechanism (Dwork et al. 2006); ICLP: Lin & Reimherr (2026), Theorem 8"

    def rv(self, mu, scale, n_draws):
        import pymc as pm

        return pm.Laplace.dist(mu=mu, b=scale, size=(n_draws, _j(mu, scale)))

    def pymc(self, name, mu, scale, **kwargs):
        import pymc as pm

        return pm.Laplace(name, mu=mu, b=scale, **kwargs)

    def logp(self, y, mu, scale, *, xp=NP, pointwise=False):
        """``Σ_j −log(2b_j) − |y_j − μ_j|/b_j`` (see :meth:`NoiseLaw.logp`)."""
        if xp is NP:
            y, mu, scale = check_coefficients(y, mu, scale=scale)
        z = y - mu
        out = -xp.log(2 * scale) - xp.abs(z) / scale
        out = out if pointwise else xp.sum(out, axis=-1)
        return out if xp is NP else check_scale_graph(out, scale)

    def privacy_loss(self, y, centre, centre_prime, scale):
        """``Σ_j (|y_j − c'_j| − |y_j − c_j|)/b_j``, computed term-wise (never as
        a difference of two large sums, ``specs/iclp.md`` pitfall 10)."""
        y, c, cp, s = check_coefficients(y, centre, centre_prime, scale=scale)
        return np.sum((np.abs(y - cp) - np.abs(y - c)) / s, axis=-1)

    def variance(self, scale):
        """``2b_j²``, shape like ``scale``."""
        return 2.0 * check_scale(scale) ** 2

    def mixing(self, n_components, dims=D.BASIS):
        import pymc as pm

        return 2.0 * pm.Exponential(MIXING_VARIABLE, 1.0, dims=dims, shape=None if dims else (n_components,))

    def mixing_draws(self, posterior, n_samples, n_components):
        e = posterior.get(MIXING_VARIABLE)
        if e is None:
            raise KeyError(f"the posterior has no {MIXING_VARIABLE!r} draws of the Laplace scale mixture")
        return 2.0 * np.asarray(e, dtype=float).reshape(n_samples, n_components)

    def convolved_logp(self, x, g, scale, *, xp=NP):
        """Normal–Laplace: ``−log(4b) − x²/(2g²) + log[erfcx(z₁) + erfcx(z₂)]``,
        ``z_{1,2} = (g²/b ∓ x)/(g√2)`` (``specs/iclp.md`` §4.3), stable log-erfcx."""
        if xp is NP:
            x, g, scale = check_coefficients(x, g, scale=scale)
        b = scale
        z1 = (g**2 / b - x) / (g * np.sqrt(2.0))
        z2 = (g**2 / b + x) / (g * np.sqrt(2.0))
        return -xp.log(4 * b) - x**2 / (2 * g**2) + xp.logaddexp(log_erfcx(z1, xp), log_erfcx(z2, xp))

    def describe_scale(self):
        return "Laplace scale b_j of each coefficient's noise (variance 2 b_j^2)"


class Normal(NoiseLaw):
    """Independent ``N(0, s_j²)`` noise (``scipy.stats.norm(scale=s)``, ``pm.Normal(mu, sigma)``).

    The Gaussian mechanism in a Hilbert space (Mirshani et al. 2019,
    Theorems 3.2–3.3; Hall et al. 2013, Corollary 9): ``s_j = σ√λ_j``.
    """

    name = "normal"
    product = True
    #: OpenDP samples it exactly on a lattice (:class:`fdp_ppl.sampling_opendp.OpenDPSampler`)
    fp_safe = True
    source = "Gaussian mechanism: Mirshani et al. (2019), Theorems 3.2-3.3; Hall et al. (2013), Corollary 9"

    def rv(self, mu, scale, n_draws):
        import pymc as pm

        return pm.Normal.dist(mu=mu, sigma=scale, size=(n_draws, _j(mu, scale)))

    def pymc(self, name, mu, scale, **kwargs):
        import pymc as pm

        return pm.Normal(name, mu=mu, sigma=scale, **kwargs)

    def logp(self, y, mu, scale, *, xp=NP, pointwise=False):
        """``Σ_j −½log(2π) − log s_j − (y_j − μ_j)²/(2s_j²)`` (see :meth:`NoiseLaw.logp`)."""
        if xp is NP:
            y, mu, scale = check_coefficients(y, mu, scale=scale)
        z = (y - mu) / scale
        out = -0.5 * np.log(2 * np.pi) - xp.log(scale) - 0.5 * z**2
        out = out if pointwise else xp.sum(out, axis=-1)
        return out if xp is NP else check_scale_graph(out, scale)

    def privacy_loss(self, y, centre, centre_prime, scale):
        """``Σ_j ((y_j − c'_j)² − (y_j − c_j)²)/(2s_j²)``, term-wise."""
        y, c, cp, s = check_coefficients(y, centre, centre_prime, scale=scale)
        return np.sum(((y - cp) ** 2 - (y - c) ** 2) / (2 * s**2), axis=-1)

    def variance(self, scale):
        """``s_j²``, shape like ``scale``."""
        return check_scale(scale) ** 2

    def mixing(self, n_components, dims=D.BASIS):
        return 1.0

    def mixing_draws(self, posterior, n_samples, n_components):
        return np.ones((n_samples, n_components))

    def convolved_logp(self, x, g, scale, *, xp=NP):
        """``N(0, g² + s²)`` at ``x``."""
        if xp is NP:
            x, g, scale = check_coefficients(x, g, scale=scale)
        v = g**2 + scale**2
        return -0.5 * xp.log(2 * np.pi * v) - x**2 / (2 * v)

    def describe_scale(self):
        return "standard deviation s_j of each coefficient's Normal noise"


__all__ = ["Laplace", "Normal"]
