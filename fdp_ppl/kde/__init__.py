"""Private kernel density estimation (Hall, Rinaldo & Wasserman 2013, §4.1).

A Gaussian-kernel KDE on a public Cartesian grid in d = 1 or 2 is a public
summary spec (:class:`KDESpec`); it is released with the package's Gaussian
mechanism on the eigenbasis of the noise kernel on the grid
(:func:`release_kde`).
"""

from .gaussian import (
    CartesianGrid,
    KDESpec,
    KDESummary,
    ProductEigenbasis,
    bandwidth_rule,
    cameron_martin_difference,
    gaussian_kde_values,
    realised_delta,
    release_kde,
)

__all__ = [
    "CartesianGrid",
    "KDESpec",
    "KDESummary",
    "ProductEigenbasis",
    "bandwidth_rule",
    "cameron_martin_difference",
    "gaussian_kde_values",
    "release_kde",
    "realised_delta",
]
