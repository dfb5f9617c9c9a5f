"""Function spaces: grids with quadrature weights, kernels (and their products over coordinates), eigenbases.

A :class:`Grid` makes curves on K points a discrete Hilbert space; a kernel (:class:`Matern`,
:class:`Exponential`, :class:`Gaussian`) and :func:`eigenbasis` give the eigenvalues λ_j and
eigenfunctions φ_j in which every summary is expanded and every mechanism adds its noise.

One vocabulary for every family: :func:`~fdp_ppl.spaces.grid.trapezoid_weights` (the trapezoid rule),
:class:`Grid` (1-D, [0, 1]) and :class:`CartesianGrid` (d-D, data units), :func:`gaussian_bump` (both Gaussian
conventions), :class:`ProductKernel` / :class:`SumKernel` (``k_1 * k_2``, ``k_1 + k_2``), :class:`Eigenbasis`
(1-D) and :class:`TensorEigenbasis` (Kronecker), all of them :class:`Basis`.

Examples
--------
>>> import fdp_ppl as fp
>>> grid = fp.Grid.uniform(50)
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
>>> basis.eigenvalues.shape, basis.eigenfunctions.shape
((50,), (50, 50))
>>> round(basis.trace(), 4)                  # Σ_j λ_j: a unit-variance kernel has trace 1
1.0
"""

from .basis import Basis
from .eigenbasis import DEFAULT_REL_TOL, Eigenbasis, eigenbasis
from .grid import CartesianGrid, Grid, trapezoid_weights
from .kernels import (KERNEL_NAMES, Exponential, Gaussian, Kernel, Matern, ProductKernel, SumKernel, gaussian_bump,
                      kernel_from_name)
from .tensor import TensorEigenbasis

__all__ = ["Grid", "CartesianGrid", "trapezoid_weights", "Kernel", "Matern", "Exponential", "Gaussian",
           "ProductKernel", "SumKernel", "gaussian_bump", "kernel_from_name", "KERNEL_NAMES", "Eigenbasis",
           "eigenbasis", "DEFAULT_REL_TOL", "TensorEigenbasis", "Basis"]
