"""Kernel machines beyond n × n: the ERM solved in the span of kernel sections at public landmarks (Nyström).

Sources: Hall, Rinaldo & Wasserman (2013), §4.3 (the sensitivity ``Δ_0 = M κ/(λ n)`` of a regularised
ERM in an RKHS, from Bousquet & Elisseeff 2002); Williams & Seeger (2001) for the Nyström map;
Rubinstein et al. (2012) and Chaudhuri et al. (2011) for private kernel machines on a finite-dimensional
feature space.

Construction
------------
Landmarks ``L = (l_1, …, l_m)`` are public points fixed before any data are seen (a lattice on the
public box, or the release grid). With ``K(L, L) = U diag(μ) Uᵀ`` and the pairs with
``μ_j > rel_tol · μ_max`` kept (r of them), the functions ``ψ_j = μ_j^{-1/2} Σ_l U_{lj} K(·, l_l)`` are
orthonormal in the RKHS ``H`` of K (``⟨ψ_i, ψ_j⟩_H = μ_i^{-1/2} μ_j^{-1/2} u_iᵀ K(L, L) u_j = δ_ij``). Their
span ``H̃`` is a closed subspace of ``H`` with the same norm, and the RKHS of the kernel
``K̃(x, y) = z(x)·z(y)``, ``z(x) = diag(μ)^{-1/2} Uᵀ K(L, x) = (ψ_j(x))_j`` (the projection of
``K(·, x)`` on ``H̃``): for ``g = Σ_j w_j ψ_j``, ``g(x) = w·z(x)`` and ``‖g‖_H = ‖w‖₂``.

The machine is ``f̃_D = argmin_{g ∈ H̃} (1/n) Σ_i ℓ(g(x_i), y_i) + λ‖g‖²_H``, a linear machine on the
features ``z(x_i)`` with penalty ``λ‖w‖²``, solved in r dimensions (memory O(n r), never n × n).

Guarantee (restated for the approximate kernel)
-----------------------------------------------
The bound of Hall §4.3 holds for regularised ERM in any RKHS with ``κ̃² = sup_x K̃(x, x)``:
``‖f̃_D − f̃_{D'}‖_{H̃} <= M κ̃/(λ n)``. Here ``K̃(x, x) = ‖P K(·, x)‖²_H <= K(x, x)``, so ``κ̃ <= κ`` and
the spec's ``Δ_0 = M κ/(λ n)`` bounds the difference in the norm of ``H̃``, which **is** the norm of
``H`` (isometric subspace). The released function is ``f̃_D + σ G`` with ``G ~ GP(0, K)``, the noise of
the exact machine: its Cameron–Martin space is ``H``, so the same Δ (plus the solver slack ``2ρ``,
an a-priori bound in ``H̃`` after a public number of iterations) calibrates the same σ. For ``eta`` specs (ICLP noise) the records are snapped to
grid nodes and the landmarks are the nodes, so ``H̃`` is the span of ``C^η(·, node)``; the norm
inequality ``‖h‖_{1,C} <= ‖h‖_{C^η} √tr(C^{η−1})`` of Theorem 18 (Lin & Reimherr 2026) applies as for
the exact machine. The approximation changes the estimator (the minimiser over ``H̃`` instead of
``H``), never the noise or its calibration.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ..io.lattice import flush_tiny
from .solvers import Solution, solve_erm

#: relative eigenvalue cut-off of K(L, L) (pairs below are dropped: a smaller subspace, same guarantee)
NYSTROEM_REL_TOL = 1e-10
#: feature rows computed per block (bounds the (block × m) kernel slab)
FEATURE_BLOCK = 8192


class NystroemMap:
    """Public feature map ``z(x) = diag(μ)^{-1/2} Uᵀ K(L, x)`` (module docstring).

    Parameters
    ----------
    gram : callable
        ``gram(a, b)`` -> (len(a), len(b)): the spec's reproducing kernel.
    landmarks : ndarray, shape (m, d)
        Public landmarks.
    rel_tol : float
        Eigenvalue cut-off of ``K(L, L)``.
    kappa : float, optional
        ``√sup K(x, x)``: feature rows are scaled down to norm <= κ (``‖z(x)‖ <= κ`` holds in exact
        arithmetic; this keeps it under rounding, a public record-wise map, so the bound ``M κ/(λ n)`` holds
        for the computed features).
    sections : callable, optional
        ``sections(X)`` -> ``gram(X, landmarks)`` (n, m), a faster equal form (e.g. a product kernel on a lattice
        of landmarks); default ``gram(X, landmarks)``.

    Attributes
    ----------
    rank : int
        r, the retained pairs (features).
    projection : ndarray, shape (m, r)
        ``U diag(μ)^{-1/2}``: ``z(x) = projectionᵀ K(L, x)``; ``g = Σ_l (projection w)_l K(·, l_l)``.
    """

    def __init__(self, gram, landmarks, rel_tol: float = NYSTROEM_REL_TOL, kappa: float | None = None,
                 sections=None):
        self.gram = gram
        self.sections = (lambda X: gram(X, self.landmarks)) if sections is None else sections
        self.kappa = kappa
        self.landmarks = np.asarray(landmarks, dtype=float)
        mu, U = linalg.eigh(gram(self.landmarks, self.landmarks))
        keep = mu > rel_tol * mu[-1]
        self.eigenvalues = mu[keep][::-1]
        self.projection = (U[:, keep] / np.sqrt(mu[keep]))[:, ::-1]

    @property
    def rank(self) -> int:
        return int(self.projection.shape[1])

    def features(self, X) -> np.ndarray:
        """``z(x_i)``, shape (n, r), computed in blocks of :data:`FEATURE_BLOCK` rows."""
        X = np.asarray(X, dtype=float)
        out = np.empty((X.shape[0], self.rank))
        for s in range(0, X.shape[0], FEATURE_BLOCK):
            out[s:s + FEATURE_BLOCK] = self.sections(X[s:s + FEATURE_BLOCK]) @ self.projection
        if self.kappa is not None:  # ‖z(x)‖ <= κ holds exactly in theory; enforce it against rounding (record-wise)
            norms = np.sqrt(np.einsum("ij,ij->i", out, out))
            over = norms > self.kappa
            out[over] *= (self.kappa / norms[over])[:, None]
        return flush_tiny(out, 1.0 if self.kappa is None else self.kappa, out=out)  # no subnormal feature

    def representer(self, w) -> np.ndarray:
        """Coefficients (m,) on the landmarks of ``g = Σ_j w_j ψ_j``."""
        return self.projection @ np.asarray(w, dtype=float)


def solve_linear_erm(Z, y, *, loss: str, lam: float, rho_target: float, kappa: float,
                     loss_at_zero: float | None = None) -> tuple:
    """Minimise ``(1/n) Σ ℓ(w·z_i, y_i) + λ‖w‖²`` over ``w ∈ R^r`` for the public number of iterations.

    The solvers of :func:`fdp_ppl.machine.solvers.solve_erm` on ``K = Z Zᵀ`` (never formed): the
    iteration count and its a-priori bound ``‖w − w*‖ <= rho_target`` are the same public functions of
    the loss, λ, κ and ``ρ`` (``‖z_i‖ <= κ``, so every constant there holds); ``w = Zᵀ c``.

    Returns
    -------
    (w, certificate, iterations)
        ``certificate`` observed (data holder only), ``iterations`` public.

    Raises
    ------
    InputError
        Only for public reasons (unknown loss, non-positive constants).
    """
    Z = np.asarray(Z, dtype=float)
    sol = solve_erm(None, y, loss=loss, lam=lam, rho_target=rho_target, kappa=kappa, loss_at_zero=loss_at_zero,
                    features=Z, primal=loss != "hinge")
    w = sol.coefficients if loss != "hinge" else Z.T @ sol.coefficients
    return w, sol.certificate, sol.iterations


def nystroem_solution(nmap: NystroemMap, X, y, *, loss: str, lam: float, rho_target: float, kappa: float,
                      loss_at_zero: float | None = None) -> Solution:
    """Fit on the features of ``X`` and return the representer on the landmarks (``Solution.coefficients`` (m,))."""
    Z = nmap.features(X)
    if loss != "hinge":  # the smooth solver on w = Zᵀ c: the same iterates, one fused pass over Z per step
        sol = solve_erm(None, y, loss=loss, lam=lam, rho_target=rho_target, kappa=kappa, loss_at_zero=loss_at_zero,
                        features=Z, primal=True)
        return Solution(nmap.representer(sol.coefficients), sol.certificate, sol.iterations, sol.bound)
    sol = solve_erm(None, y, loss=loss, lam=lam, rho_target=rho_target, kappa=kappa, loss_at_zero=loss_at_zero,
                    features=Z)
    return Solution(nmap.representer(Z.T @ sol.coefficients), sol.certificate, sol.iterations, sol.bound)


__all__ = ["FEATURE_BLOCK", "NYSTROEM_REL_TOL", "NystroemMap", "nystroem_solution", "solve_linear_erm"]
