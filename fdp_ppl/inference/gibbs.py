"""Exactly targeted Gibbs sampler for a Gaussian prior that is not diagonal in the release's basis.

Setting (fixed hyperparameters): coefficients ``θ ~ N(μ₀, Σ)`` (J), released
``y_j = s_j θ_j + e_j + ξ_j`` with independent noise ``ξ_j`` of a product law
(Laplace, Normal), shrinkage ``s_j`` and optional Gaussian sampling error
``e_j ~ N(0, g_j²)`` (population target). Where ``Σ`` is diagonal the posterior
factorises and :func:`fdp_ppl.infer` draws it exactly; otherwise this module
draws it by a two-block Gibbs sampler whose stationary law is the posterior
exactly (no approximation of prior or likelihood):

* **split of the prior.** ``Σ = (Σ − D) + D`` with ``D = δ·diag(Σ)`` and
  ``δ = λ_min(R)``, ``R`` the correlation matrix of ``Σ`` (so ``Σ − D ⪰ 0``):
  ``α ~ N(μ₀, Σ − D)``, ``θ | α ~ N(α, D)`` has the prior ``N(μ₀, Σ)`` as its
  marginal (a Gaussian auxiliary variable).
* **θ | α, y** factorises over coefficients: each is a one-dimensional
  posterior with a Normal prior ``N(α_j, D_j)`` and the release's own noise law,
  drawn exactly by :meth:`fdp_ppl.noise.laws.NoiseLaw.centre_posterior_draws` (for
  Laplace noise, a mixture of two truncated normals: the Laplace likelihood
  needs no latent scale at all).
* **α | θ** is Gaussian with a covariance that does not change between
  iterations: with ``R = V S Vᵀ`` (one symmetric eigendecomposition, ``J³``),
  ``α = μ₀ + d^{½} V c``, ``c = (δ/S)·√(S − δ)·z + (1 − δ/S)·w``,
  ``w = Vᵀ(d^{−½}(θ − μ₀) − √δ z′)``, ``z, z′ ~ N(0, I)`` (Matheron's rule).
  Two ``J × J`` matrix products per iteration, all chains at once.

For a Gaussian analogue of the likelihood the autocorrelation of direction
``V_k`` is at most ``1 − δ/S_k`` (the prior dominates) and falls as the
release becomes informative. The few directions where it is poor (``S_k >
4δ``, at most :data:`MAX_LINE_DIRECTIONS`; a smooth prior in a rougher
release's basis typically has one or two) are also moved by an exact
univariate slice-sampling step along ``θ + t d^{½} V_k`` on the marginal
posterior of ``θ`` (Neal 2003, stepping out with a random split of the step
budget, then shrinkage): each such step leaves the posterior invariant, and
costs a few ``O(J)`` log-density evaluations. :func:`fdp_ppl.infer` reports
R-hat and ESS as for NUTS. This is the "split" (auxiliary-variable) Gibbs of e.g.
Marnissi et al. (2018), with the likelihood's exact one-dimensional
conditionals instead of a second augmentation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..noise.laws import Normal
from ..noise.laws.base import NoiseLaw

#: most directions moved by the slice-sampling step per iteration
MAX_LINE_DIRECTIONS = 4
#: a direction gets the slice-sampling step when ``S_k`` exceeds this multiple of ``δ``
LINE_RATIO = 4.0
#: stepping-out budget of the slice-sampling step (Neal 2003, Fig. 3)
_MAX_STEPS = 64


@dataclass
class SplitGibbs:
    """Two-block Gibbs sampler for ``θ ~ N(μ₀, Σ)``, ``y = s θ + e + ξ`` (see the module docstring).

    Parameters
    ----------
    mean : ndarray, shape (J,)
        Prior mean ``μ₀`` of the coefficients.
    cov : ndarray, shape (J, J)
        Prior covariance ``Σ`` (symmetric positive definite).
    law : NoiseLaw
        The release's product noise law (``centre_posterior_draws`` with a Normal prior).
    y, scale : ndarray, shape (J,)
        Released coefficients and the public noise scale.
    shrink : ndarray, shape (J,), optional
        Shrinkage ``s_j`` (ones for the summary target).
    sampling_var : ndarray, shape (J,), optional
        Variance ``g_j²`` of the Gaussian sampling error (zeros for the summary target).
    """

    mean: np.ndarray
    cov: np.ndarray
    law: NoiseLaw
    y: np.ndarray
    scale: np.ndarray
    shrink: np.ndarray | None = None
    sampling_var: np.ndarray | None = None

    def __post_init__(self):
        J = self.y.size
        self.shrink = np.ones(J) if self.shrink is None else np.broadcast_to(np.asarray(self.shrink, float), (J,))
        self.sampling_var = (np.zeros(J) if self.sampling_var is None
                             else np.broadcast_to(np.asarray(self.sampling_var, float), (J,)))
        cov = (self.cov + self.cov.T) / 2
        d = np.diag(cov).copy()
        if not np.all(d > 0):
            raise ValueError("the prior covariance needs a positive diagonal")
        sd = np.sqrt(d)
        S, V = np.linalg.eigh(cov / sd[:, None] / sd[None, :])       # R = V S Vᵀ, the one factorisation
        if S[0] <= 0:
            raise ValueError("the prior covariance is not positive definite")
        self.delta = float(S[0])
        self.sd, self.S, self.V = sd, S, V
        self.D = self.delta * d                                        # the diagonal part split off
        self.root = np.sqrt(np.clip(S - self.delta, 0.0, None))        # √(S − δ)
        self.keep = self.delta / S                                     # δ/S
        self.samp_sd = np.sqrt(self.sampling_var)
        slow = np.nonzero(S > LINE_RATIO * self.delta)[0][::-1][:MAX_LINE_DIRECTIONS]
        self.lines = slow                                              # indices into S (largest first)
        self._u = (sd[:, None] * V[:, slow]).T                          # (L, J): θ moves along θ + t u_k
        noise_var = self.law.variance(self.scale) + self.sampling_var
        a = self.shrink * self._u
        self._width = 1.0 / np.sqrt(1.0 / S[slow] + np.sum(a**2 / noise_var, axis=1))   # posterior sd along u_k

    def _loglik(self, theta):
        """``log p(y | θ)`` per row of ``theta`` (n, J), by the law (convolved with the sampling error)."""
        mu = self.shrink * theta
        if np.any(self.sampling_var > 0):
            return np.sum(self.law.convolved_logp(self.y - mu, self.samp_sd, self.scale), axis=-1)
        return self.law.logp(self.y, mu, self.scale)

    def _line_moves(self, theta, rng):
        """One exact slice-sampling step along each slow direction (marginal posterior of θ)."""
        n = theta.shape[0]
        for k, u, w in zip(self.lines, self._u, self._width):
            # prior along the line: −½ t²/S_k − t p, p = V_kᵀ d^{-½}(θ − μ₀)/S_k
            p = (((theta - self.mean) / self.sd) @ self.V[:, k]) / self.S[k]
            prec = 1.0 / self.S[k]

            def f(t, theta=theta, u=u, p=p, prec=prec):
                return -t * p - 0.5 * prec * t * t + self._loglik(theta + t[:, None] * u)

            zero = np.zeros(n)
            level = f(zero) - rng.exponential(size=n)                  # the slice {t: f(t) > level}
            lo = -w * rng.random(n)
            hi = lo + w
            steps_lo = np.floor(_MAX_STEPS * rng.random(n)).astype(int)
            steps_hi = _MAX_STEPS - 1 - steps_lo
            go_lo, go_hi = steps_lo > 0, steps_hi > 0
            for i in range(_MAX_STEPS):                                # both ends step out together
                if not (go_lo.any() or go_hi.any()):
                    break
                both = f(np.concatenate([lo, hi]), theta=np.concatenate([theta, theta]), p=np.tile(p, 2))
                go_lo &= both[:n] > level
                go_hi &= both[n:] > level
                lo = np.where(go_lo, lo - w, lo)
                hi = np.where(go_hi, hi + w, hi)
                go_lo &= i + 1 < steps_lo
                go_hi &= i + 1 < steps_hi
            t = zero.copy()
            todo = np.ones(n, dtype=bool)
            while todo.any():                                          # shrinkage: ends (t = 0 is in the slice)
                cand = lo + (hi - lo) * rng.random(n)
                ok = todo & (f(cand) > level)
                t = np.where(ok, cand, t)
                todo &= ~ok
                lo = np.where(todo & (cand < 0), cand, lo)
                hi = np.where(todo & (cand >= 0), cand, hi)
            theta = theta + t[:, None] * u
        return theta

    @property
    def worst_rate(self) -> float:
        """``1 − δ/S_max``: the autocorrelation bound of the slowest direction when the prior dominates."""
        return float(1.0 - self.delta / self.S[-1])

    def _theta_given_alpha(self, alpha, rng):
        s, g2 = self.shrink, self.sampling_var
        centre = s * alpha
        u_sd = np.sqrt(s**2 * self.D + g2)
        u = self.law.centre_posterior_draws(self.y, self.scale, Normal(), centre, u_sd, rng)   # s θ + e | y
        if np.any(g2 > 0):   # s θ | u: Normal prior N(s α, s² D), Gaussian sampling error g²
            pos = g2 > 0
            su = u.copy()
            su[:, pos] = Normal().centre_posterior_draws(u[:, pos], self.samp_sd[pos], Normal(), centre[:, pos],
                                                         (s * np.sqrt(self.D))[pos], rng)
            u = su
        return u / s

    def _alpha_given_theta(self, theta, rng):
        n, J = theta.shape
        w = ((theta - self.mean) / self.sd - np.sqrt(self.delta) * rng.standard_normal((n, J))) @ self.V
        c = self.keep * self.root * rng.standard_normal((n, J)) + (1.0 - self.keep) * w
        return self.mean + self.sd * (c @ self.V.T)

    def prior_alpha(self, n, rng):
        """``n`` draws of ``α ~ N(μ₀, Σ − D)`` (dispersed starting points), shape (n, J)."""
        z = rng.standard_normal((n, self.mean.size))
        return self.mean + self.sd * ((self.root * z) @ self.V.T)

    def run(self, draws: int, tune: int, chains: int, rng: np.random.Generator) -> np.ndarray:
        """Coefficient draws ``θ``, shape (chains, draws, J), after ``tune`` discarded iterations; each chain
        starts from a prior draw of ``α``."""
        alpha = self.prior_alpha(chains, rng)
        out = np.empty((chains, draws, self.mean.size))
        for it in range(tune + draws):
            theta = self._theta_given_alpha(alpha, rng)
            if self.lines.size:
                theta = self._line_moves(theta, rng)
            alpha = self._alpha_given_theta(theta, rng)
            if it >= tune:
                out[:, it - tune] = theta
        return out


__all__ = ["SplitGibbs"]
