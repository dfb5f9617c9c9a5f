"""What every basis of the package offers: a small protocol, and the norms shared by the retained-pair bases.

A basis holds retained eigenpairs ``(λ_j, φ_j)`` of a kernel on a grid, in one inner product
``<a, b>_w = Σ_k w_k a_k b_k`` (quadrature weights ``w``, or 1 at every node for point evaluations):

* :class:`fdp_ppl.spaces.Eigenbasis` — a 1-D :class:`~fdp_ppl.spaces.Grid`, trapezoid or uniform weights;
* :class:`fdp_ppl.spaces.tensor.TensorEigenbasis` — a product kernel on a Cartesian grid (Kronecker of 1-D
  eigenpairs; the KDE's trapezoid weights, or the kernel machine's unit weights);
* :class:`fdp_ppl.machine.GridEigenbasis` — the dense eigenpairs of a matrix ``K(P, P)`` (unit weights).

Each satisfies :class:`Basis` (``isinstance(basis, Basis)``): a release's noise is ``scale_j ζ_j`` on
``coefficients(values)``, and ``reconstruct`` maps coefficients back to the grid.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Basis(Protocol):
    """Retained eigenpairs on a grid (structural: any object with these members is one).

    Attributes
    ----------
    eigenvalues : ndarray, shape (J,)
        Retained ``λ_j``, decreasing.
    size : int
        ``J``.
    weights : ndarray
        Quadrature weights of the inner product the coefficients are taken in, the shape of one function's
        values on the grid (all 1: the Euclidean product of point evaluations).

    Methods
    -------
    coefficients(values)
        ``c_j = <values, φ_j>_w``; a function's values on the grid ``(..., *grid) -> (..., J)``.
    reconstruct(coefficients)
        ``Σ_j c_j φ_j`` on the grid; ``(..., J) -> (..., *grid)``.
    """

    eigenvalues: np.ndarray

    @property
    def size(self) -> int: ...

    @property
    def weights(self) -> np.ndarray: ...

    def coefficients(self, values) -> np.ndarray: ...

    def reconstruct(self, coefficients) -> np.ndarray: ...


class RetainedPairs:
    """Members shared by the bases of retained pairs out of ``n_points`` (subclasses set ``eigenvalues``,
    ``n_points`` and ``coefficients``)."""

    eigenvalues: np.ndarray
    n_points: int

    @property
    def size(self) -> int:
        """Number r of retained eigenpairs."""
        return int(self.eigenvalues.size)

    @property
    def complete(self) -> bool:
        """True when every eigenpair is retained (the projection is the identity)."""
        return self.size == self.n_points

    def norm_cameron_martin(self, coefficients) -> np.ndarray:
        """``(Σ_j c_j²/λ_j)^{1/2}`` of coefficients (..., r) -> (...,) (Mirshani et al. 2019, eq. 1)."""
        c = np.asarray(coefficients, dtype=float)
        return np.sqrt(np.sum(c**2 / self.eigenvalues, axis=-1))

    def whitened_norm(self, values) -> np.ndarray:
        """``(Σ_{j retained} <v, φ_j>²/λ_j)^{1/2}`` of grid values -> (...,): the Cameron–Martin norm of their
        projection (for unit weights, ``vᵀ U_r Λ_r⁻¹ U_rᵀ v``, Hall et al. 2013, §4.3)."""
        return self.norm_cameron_martin(self.coefficients(values))


__all__ = ["Basis", "RetainedPairs"]
