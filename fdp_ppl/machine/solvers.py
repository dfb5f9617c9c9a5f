"""Regularised empirical risk minimisation in an RKHS, solved to a certified accuracy.

Problem (Hall, Rinaldo & Wasserman 2013, eq. 11; Lin & Reimherr 2026, eq. 13 with the
squared penalty of ``specs/iclp.md`` §2.4)::

    f_D = argmin_{g in H}  P(g) = (1/n) Σ_i ℓ(g(x_i), y_i) + λ ‖g‖²_H .

By the representer theorem ``f_D = Σ_i c_i K(x_i, ·)``, so everything here works on
the n × n Gram matrix ``K = [K(x_i, x_j)]`` and returns the coefficients ``c`` (n,).
No unpenalised intercept is fitted (it is outside the sensitivity bound).

Certificate. ``P`` is ``2λ``-strongly convex in ``H``, so the fitted ``g`` is within
``ρ`` of the exact minimiser in RKHS norm, with ``ρ`` computed from quantities the
solver has:

* smooth losses (squared, logistic): ``‖g − f_D‖_H <= ‖∇_H P(g)‖_H / (2λ)``, where
  ``∇_H P(g) = Σ_i r_i K(x_i, ·)``, ``r = ℓ'(Kc, y)/n + 2λc`` and ``‖∇‖²_H = rᵀKr``;
* hinge loss: the dual ``max_a Σ a − ½ aᵀQa``, ``0 <= a_i <= C = 1/(2λn)``,
  ``Q = (y yᵀ) ∘ K``, ``c = a ∘ y``; in the standard scaling
  ``½‖g‖² + C Σ hinge = P/(2λ)`` (1-strongly convex) the duality gap
  ``G = Σ_i [C (1 − (Qa)_i)_+ − a_i (1 − (Qa)_i)]`` bounds ``½‖g − f_D‖²_H``,
  so ``ρ = √(2G)``.

The solver runs until ``ρ <= rho_target`` (a public, data-independent target) and
raises otherwise; the release adds ``2·rho_target`` to the sensitivity (the fitted
functions of two neighbouring datasets are each within ``rho_target`` of their exact
minimisers). It never uses the observed, data-dependent ``ρ``.

What the guarantee does not cover: the number of iterations, hence the run time, and
whether the public iteration cap is hit depend on the data. The failure message names
no data-derived number (neither the gap nor ρ reached), and ``fdp-ppl machine`` charges the
ledger before the solver runs, so a failure is never free; but the run time and the
fact of a failure are visible to whoever watches the run (docs: privacy in practice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize, special

from ..errors import InputError

LOSSES = ("hinge", "logistic", "squared")


@dataclass(frozen=True)
class Solution:
    """Fitted representer coefficients and their certificate (data holder only).

    Attributes
    ----------
    coefficients : ndarray, shape (n,)
        ``c`` in ``g = Σ_i c_i K(x_i, ·)``.
    certificate : float
        Certified bound ``ρ`` on ``‖g − f_D‖_H`` (data dependent: never released).
    iterations : int
        Optimiser rounds used.
    """

    coefficients: np.ndarray
    certificate: float
    iterations: int


def loss_derivative(loss: str, g, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loss ``ℓ(g, y)``, ``∂ℓ/∂g`` and ``∂²ℓ/∂g²`` elementwise (smooth losses).

    ``squared``: ``(y − g)²``; ``logistic``: ``log(1 + exp(−y g))`` (``y ∈ {±1}``).

    Raises
    ------
    InputError
        A loss without second derivative (hinge) or an unknown name.
    """
    g = np.asarray(g, dtype=float)
    if loss == "squared":
        return (y - g) ** 2, 2.0 * (g - y), np.full_like(g, 2.0)
    if loss == "logistic":
        m = y * g
        p = special.expit(-m)  # σ(−y g)
        return np.logaddexp(0.0, -m), -y * p, p * (1.0 - p)
    raise InputError(f"no smooth derivative for loss {loss!r}", f"use one of {LOSSES}")


def hinge_gap(a, Q, C: float) -> float:
    """Duality gap ``Σ_i [C (1 − (Qa)_i)_+ − a_i (1 − (Qa)_i)]`` of the hinge dual (standard scaling)."""
    m = 1.0 - Q @ a
    return float(np.sum(C * np.maximum(m, 0.0) - a * m))


def _solve_hinge(K, y, lam, rho_target, max_sweeps, features=None):
    """Hinge dual by compiled coordinate ascent with exact active-set solves (:mod:`fdp_ppl.machine.fast`).

    ``K`` the Gram matrix (n, n), or ``features`` (n, r) with ``K = Z Zᵀ`` (then ``K`` is ignored and the
    coefficients returned are ``a ∘ y``, whose function is ``w = Zᵀ(a ∘ y)`` in feature space).
    """
    from .fast import solve_hinge_dual

    n = y.size
    C = 1.0 / (2.0 * lam * n)
    gap_target = 0.5 * rho_target**2
    a, gap, sweeps = solve_hinge_dual(y, C, gap_target, gram=None if features is not None else K,
                                      features=features, max_sweeps=max_sweeps)
    if gap <= gap_target:
        return Solution(a * y, float(np.sqrt(2.0 * gap)), sweeps)
    raise InputError(f"data holder only: the hinge-loss solver did not reach its public duality-gap target within "
                     f"{max_sweeps} coordinate sweeps (the gap reached is not shown)", "raise lam or solver_slack")


def _smooth_certificate(K, y, c, lam, loss):
    n = y.size
    _, d1, _ = loss_derivative(loss, K @ c, y)
    r = d1 / n + 2.0 * lam * c
    return float(np.sqrt(max(r @ K @ r, 0.0))) / (2.0 * lam), r


def _solve_smooth(K, y, lam, rho_target, loss, max_rounds):
    n = y.size
    if loss == "squared":  # normal equations (K + nλ I) c = y, positive definite
        c = linalg.solve(K + n * lam * np.eye(n), y, assume_a="pos")
        rho, _ = _smooth_certificate(K, y, c, lam, loss)
        if rho <= rho_target:
            return Solution(c, rho, 1)
    else:
        c = np.zeros(n)

    # optimality r(c) = ℓ'(Kc)/n + 2λc = 0: a well-conditioned root problem
    # (Jacobian diag(ℓ''/n) K + 2λ I, eigenvalues >= 2λ), solved by MINPACK
    def fun(c):
        _, d1, _ = loss_derivative(loss, K @ c, y)
        return d1 / n + 2.0 * lam * c

    def jac(c):
        _, _, d2 = loss_derivative(loss, K @ c, y)
        return (d2 / n)[:, None] * K + 2.0 * lam * np.eye(n)

    rho = np.inf
    for it in range(1, max_rounds + 1):
        sol = optimize.root(fun, c, jac=jac, method="hybr", options={"xtol": 1e-15})
        c = sol.x
        rho, _ = _smooth_certificate(K, y, c, lam, loss)
        if rho <= rho_target:
            return Solution(c, rho, it)
    raise InputError(f"data holder only: the {loss}-loss solver did not reach its public accuracy target within "
                     f"{max_rounds} rounds (the accuracy reached is not shown)", "raise lam or solver_slack")


def solve_erm(gram, y, *, loss: str, lam: float, rho_target: float, max_rounds: int = 5) -> Solution:
    """Minimise ``(1/n) Σ ℓ(g(x_i), y_i) + λ‖g‖²_H`` over ``g = Σ c_i K(x_i, ·)`` to accuracy ``rho_target``.

    Parameters
    ----------
    gram : ndarray, shape (n, n)
        ``K(x_i, x_j)`` (positive semi-definite).
    y : ndarray, shape (n,)
        Labels (±1 for hinge and logistic; real for squared).
    loss : {"hinge", "logistic", "squared"}
        Hinge: dual box QP by compiled exact coordinate ascent with exact active-set
        solves (:func:`fdp_ppl.machine.fast.solve_hinge_dual`; one n × n array); logistic: first-order condition by MINPACK
        (``scipy.optimize.root``); squared: the normal equations (``scipy.linalg.solve``).
    lam : float
        λ > 0.
    rho_target : float
        Public bound to reach on the certified ``‖g − f_D‖_H`` (module docstring).

    max_rounds : int
        Smooth losses: MINPACK restarts; hinge: 1000 × max_rounds coordinate sweeps at most.

    Returns
    -------
    Solution

    Raises
    ------
    InputError
        Unknown loss, or the target is not reached after ``max_rounds``.
    """
    K = np.asarray(gram, dtype=float)
    y = np.asarray(y, dtype=float)
    if loss == "hinge":
        return _solve_hinge(K, y, float(lam), float(rho_target), 1000 * max_rounds)
    if loss in ("logistic", "squared"):
        return _solve_smooth(K, y, float(lam), float(rho_target), loss, max_rounds)
    raise InputError(f"unknown loss {loss!r}", f"use one of {LOSSES}")


__all__ = ["LOSSES", "Solution", "hinge_gap", "loss_derivative", "solve_erm"]
