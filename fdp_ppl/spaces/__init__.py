"""Function spaces: grids with quadrature weights, kernels and eigenbases.

A :class:`Grid` makes curves on K points a discrete Hilbert space; a kernel (:class:`Matern`,
:class:`Exponential`, :class:`Gaussian`) and :func:`eigenbasis` give the eigenvalues λ_j and
eigenfunctions φ_j in which every summary is expanded and every mechanism adds its noise.

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

from .eigenbasis import DEFAULT_REL_TOL, Eigenbasis, eigenbasis
from .grid import Grid
from .kernels import KERNEL_NAMES, Exponential, Gaussian, Kernel, Matern, kernel_from_name

__all__ = ["Grid", "Kernel", "Matern", "Exponential", "Gaussian", "kernel_from_name", "KERNEL_NAMES",
           "Eigenbasis", "eigenbasis", "DEFAULT_REL_TOL"]
