"""Function spaces: grids with quadrature weights, kernels (and their products over coordinates), eigenbases.

One vocabulary for every family: :func:`~fdp_ppl.spaces.grid.trapezoid_weights` (the trapezoid rule),
:class:`Grid` (1-D, [0, 1]) and :class:`CartesianGrid` (d-D, data units), :func:`gaussian_bump` (both Gaussian
conventions), :class:`ProductKernel` / :class:`SumKernel` (``k_1 * k_2``, ``k_1 + k_2``), :class:`Eigenbasis`
(1-D) and :class:`TensorEigenbasis` (Kronecker), all of them :class:`Basis`.
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
