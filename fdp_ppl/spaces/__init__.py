"""Function spaces: grids with quadrature weights, kernels and eigenbases."""

from .eigenbasis import DEFAULT_REL_TOL, Eigenbasis, eigenbasis
from .grid import Grid
from .kernels import KERNEL_NAMES, Exponential, Gaussian, Kernel, Matern, kernel_from_name

__all__ = ["Grid", "Kernel", "Matern", "Exponential", "Gaussian", "kernel_from_name", "KERNEL_NAMES",
           "Eigenbasis", "eigenbasis", "DEFAULT_REL_TOL"]
