"""The exponential mechanism with respect to a base measure, as a PyMC model (Awan et al. 2019, §3).

Prop. 3.1 (McSherry–Talwar with a general base measure ν): if
``|ξ_X(b) − ξ_X'(b)| ≤ Δ`` for all adjacent X, X' and ν-almost all b, and
``∫ exp(ε/(2Δ) ξ_X) dν < ∞``, then the law with density
``f_X(b) ∝ exp(ε/(2Δ) · ξ_X(b))`` with respect to ν is ε-DP.

:func:`exponential_mechanism_model` builds that law as a PyMC model: the base
measure is a PyMC variable (a Gaussian process over basis coefficients,
:class:`GaussianProcessBase`, or the uniform law on a box, :class:`UniformBase`)
and ``(ε/(2Δ))·ξ_X(b)`` is added with ``pm.Potential``. Its joint log-density is
``log ν(b) + ε/(2Δ) ξ_X(b)`` up to a constant.

Example 3.5 (penalised mean in a Hilbert space with a GP base N(0, C)):
``−ξ_X(b) = Σ_i ‖X_i − b‖² + nλ‖b‖²_C``, ``‖b‖²_C = bᵀC⁻¹b``, ``‖X_i‖ ≤ 1``,
``‖b‖ ≤ 1`` ⇒ Δ ≤ 4. :func:`penalised_mean_model` builds it and
:func:`penalised_mean_gaussian` gives its exact Gaussian law when the ball
restriction is dropped; :func:`penalised_mean_clt_covariance` gives the Theorem
3.2/3.3 limit ``(2Δ/ε)Σ`` with ``Σ = (−ξ''/n)⁻¹ = (2I + 2λC⁻¹)⁻¹``.

Caveat (Thm 3.2 "pitfall"): the mechanism's noise is of order n^{-1/2}, the
order of the statistical error, so its accuracy never catches up with the
non-private estimator as n grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InputError, check_epsilon, check_positive


@dataclass(frozen=True)
class GaussianProcessBase:
    """Base measure N(0, C) over d basis coefficients (a GP in coefficient form).

    Parameters
    ----------
    cov : ndarray, shape (d, d)
        Public covariance C, symmetric positive definite.
    """

    cov: np.ndarray

    def variable(self, name: str):
        import pymc as pm

        C = np.asarray(self.cov, dtype=float)
        if C.ndim != 2 or C.shape[0] != C.shape[1] or not np.all(np.isfinite(C)):
            raise InputError("cov must be a finite square matrix", "pass a public (d, d) covariance")
        return pm.MvNormal(name, mu=np.zeros(C.shape[0]), cov=C)

    def logp(self, b) -> np.ndarray:
        """Log-density of N(0, C) at b, shape (..., d) -> (...)."""
        from scipy import stats

        return stats.multivariate_normal(np.zeros(len(self.cov)), self.cov).logpdf(b)


@dataclass(frozen=True)
class UniformBase:
    """Base measure: uniform on the box ``[lower, upper]`` (compact, finite ν).

    Parameters
    ----------
    lower, upper : ndarray, shape (d,)
    """

    lower: np.ndarray
    upper: np.ndarray

    def variable(self, name: str):
        import pymc as pm

        lo, hi = np.asarray(self.lower, float), np.asarray(self.upper, float)
        if lo.shape != hi.shape or lo.ndim != 1 or np.any(hi <= lo):
            raise InputError("need 1-D lower < upper of equal shape", "pass the public box")
        return pm.Uniform(name, lower=lo, upper=hi)

    def logp(self, b) -> np.ndarray:
        b = np.asarray(b, float)
        lo, hi = np.asarray(self.lower, float), np.asarray(self.upper, float)
        inside = np.all((b >= lo) & (b <= hi), axis=-1)
        return np.where(inside, -np.sum(np.log(hi - lo)), -np.inf)


def exponential_mechanism_model(objective: Callable, *, epsilon: float, sensitivity: float, base,
                                name: str = "b", model=None):
    """PyMC model of the exponential mechanism ``∝ exp(ε/(2Δ) ξ_X(b))`` w.r.t. ``base`` (Prop. 3.1).

    Parameters
    ----------
    objective : callable
        ``objective(b) -> scalar`` written with pytensor operations; ξ_X(b), the
        utility (larger is better), with the data baked in (data holder only).
    epsilon : float
        > 0.
    sensitivity : float
        Δ > 0 with ``|ξ_X(b) − ξ_X'(b)| ≤ Δ`` for adjacent X, X' and ν-a.e. b.
    base : GaussianProcessBase or UniformBase
        Public base measure ν.
    name : str
        Name of the released variable.
    model : pm.Model, optional
        Add to an existing model instead of creating one.

    Returns
    -------
    pm.Model
        With the variable ``name`` (the base measure), a potential ``"expmech"``
        = ε/(2Δ)·ξ_X(b), and a deterministic ``"objective"`` = ξ_X(b).

    Raises
    ------
    InputError
        ε ≤ 0 or Δ ≤ 0.
    """
    import pymc as pm

    eps = check_epsilon(epsilon)
    delta = check_positive(sensitivity, "sensitivity")
    model = pm.Model() if model is None else model
    with model:
        b = base.variable(name)
        xi = objective(b)
        pm.Deterministic("objective", xi)
        pm.Potential("expmech", eps / (2.0 * delta) * xi)
    return model


# ---------------------------------------------------------------------- Example 3.5
PENALISED_MEAN_SENSITIVITY = 4.0


def _check_mean_inputs(coefs, C, lam):
    X = np.asarray(coefs, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise InputError("coefs must be a finite (n, d) array", "pass one row of coefficients per curve")
    if np.any(np.linalg.norm(X, axis=1) > 1 + 1e-12):
        raise InputError("every coefficient row must have norm <= 1", "clip the curves to a public bound first")
    C = np.asarray(C, dtype=float)
    if C.shape != (X.shape[1], X.shape[1]):
        raise InputError(f"C must have shape ({X.shape[1]}, {X.shape[1]})", "pass the base covariance")
    return X, C, check_positive(lam, "lam")


def penalised_mean_objective(coefs, C, lam):
    """ξ_X(b) = −Σ_i ‖X_i − b‖² − nλ bᵀC⁻¹b of Example 3.5, as a pytensor function of b (d,)."""
    import pytensor.tensor as pt

    X, C, lam = _check_mean_inputs(coefs, C, lam)
    n = X.shape[0]
    Ci = np.linalg.inv(C)

    def xi(b):
        return -pt.sum((X - b[None, :]) ** 2) - n * lam * pt.dot(b, pt.dot(Ci, b))

    return xi


def penalised_mean_model(coefs, C, lam: float, epsilon: float, *, restrict_to_unit_ball: bool = True):
    """Example 3.5: private penalised mean with the GP base N(0, C), Δ = 4.

    Parameters
    ----------
    coefs : ndarray, shape (n, d)
        Coefficient rows with ‖X_i‖ ≤ 1 (data holder only).
    C : ndarray, shape (d, d)
        Public base covariance (trace class in the limit).
    lam : float
        Penalty λ > 0.
    epsilon : float
    restrict_to_unit_ball : bool
        Add ``−inf`` outside ‖b‖ ≤ 1, where Δ = 4 holds (the paper "only
        considers ‖b‖ ≤ 1"); without it the sensitivity is unbounded.

    Returns
    -------
    pm.Model
    """
    import pymc as pm
    import pytensor.tensor as pt

    xi = penalised_mean_objective(coefs, C, lam)
    model = exponential_mechanism_model(xi, epsilon=epsilon, sensitivity=PENALISED_MEAN_SENSITIVITY,
                                        base=GaussianProcessBase(np.asarray(C, float)))
    if restrict_to_unit_ball:
        with model:
            b = model["b"]
            pm.Potential("unit_ball", pt.switch(pt.le(pt.sum(b ** 2), 1.0), 0.0, -np.inf))
    return model


def penalised_mean_gaussian(coefs, C, lam: float, epsilon: float,
                            sensitivity: float = PENALISED_MEAN_SENSITIVITY):
    """Exact law of Example 3.5's mechanism without the ball restriction: a Gaussian.

    Density ∝ exp(−½bᵀC⁻¹b) · exp(−ε/(2Δ)(Σ‖X_i − b‖² + nλbᵀC⁻¹b)), so the
    precision is ``C⁻¹ + (ε/Δ)(nI + nλC⁻¹)`` and the mean ``(ε/Δ) Prec⁻¹ Σ_i X_i``.

    Returns
    -------
    mean : ndarray, shape (d,)
    cov : ndarray, shape (d, d)
    """
    X, C, lam = _check_mean_inputs(coefs, C, lam)
    n, d = X.shape
    s = check_epsilon(epsilon) / check_positive(sensitivity, "sensitivity")
    Ci = np.linalg.inv(C)
    prec = Ci + s * (n * np.eye(d) + n * lam * Ci)
    cov = np.linalg.inv(prec)
    return cov @ (s * X.sum(axis=0)), cov


def penalised_mean_draws(coefs, C, lam: float, epsilon: float, size: int, rng: np.random.Generator, *,
                         restrict_to_unit_ball: bool = True, max_proposals: int = 10_000_000) -> np.ndarray:
    """Exact draws of Example 3.5's mechanism (the law of :func:`penalised_mean_model`), without MCMC.

    Without the ball restriction the law is the Gaussian of
    :func:`penalised_mean_gaussian`; with it, that Gaussian truncated to
    ‖b‖ ≤ 1, drawn exactly by rejection from the Gaussian.

    Parameters
    ----------
    coefs : ndarray, shape (n, d)
        Coefficient rows with ‖X_i‖ ≤ 1 (data holder only).
    C, lam, epsilon
        As for :func:`penalised_mean_model`.
    size : int
    rng : numpy.random.Generator
    restrict_to_unit_ball : bool
    max_proposals : int
        Data-independent cap on Gaussian proposals.

    Returns
    -------
    ndarray, shape (size, d)

    Raises
    ------
    SamplerBudgetError
        More than ``max_proposals`` proposals were needed.
    """
    from .samplers import SamplerBudgetError

    mean, cov = penalised_mean_gaussian(coefs, C, lam, epsilon)
    L = np.linalg.cholesky(cov)
    out, got, proposed = np.empty((int(size), mean.size)), 0, 0
    while got < size:
        batch = max(64, 2 * (int(size) - got))
        b = mean + rng.standard_normal((batch, mean.size)) @ L.T
        proposed += batch
        if restrict_to_unit_ball:
            b = b[np.sum(b * b, axis=1) <= 1.0]
        take = b[: int(size) - got]
        out[got: got + take.shape[0]] = take
        got += take.shape[0]
        if got < size and proposed >= max_proposals:
            raise SamplerBudgetError(f"more than {max_proposals} proposals for the unit-ball restriction",
                                     "raise max_proposals")
    return out


def penalised_mean_estimate(coefs, C, lam: float) -> np.ndarray:
    """Non-private maximiser b̂ = (I + λC⁻¹)⁻¹ X̄ of Example 3.5's ξ_X, shape (d,)."""
    X, C, lam = _check_mean_inputs(coefs, C, lam)
    return np.linalg.solve(np.eye(C.shape[0]) + lam * np.linalg.inv(C), X.mean(axis=0))


def penalised_mean_clt_covariance(C, lam: float, epsilon: float,
                                  sensitivity: float = PENALISED_MEAN_SENSITIVITY) -> np.ndarray:
    """Limit covariance (2Δ/ε)Σ of √n(b̃ − b̂) (Thms 3.2–3.3),
    Σ = (−ξ''/n)⁻¹ = (2I + 2λC⁻¹)⁻¹; shape (d, d)."""
    C = np.asarray(C, float)
    Sig = np.linalg.inv(2 * np.eye(C.shape[0]) + 2 * lam * np.linalg.inv(C))
    return 2 * check_positive(sensitivity, "sensitivity") / check_epsilon(epsilon) * Sig
