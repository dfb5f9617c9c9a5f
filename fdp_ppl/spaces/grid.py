"""Evaluation grids with quadrature weights: the discrete Hilbert space.

A :class:`Grid` holds ``K`` ordered points ``t`` in [0, 1] and quadrature
weights ``w`` (summing to 1). The inner product of two functions evaluated on
the grid is ``<a, b>_w = sum_k w_k a_k b_k`` and approximates the L²[0, 1]
inner product. Every norm, clipping bound τ and eigenpair in the package is
measured in this inner product (``specs/iclp.md`` §4.2).

A dataset observed on ``[lower, upper]`` is rescaled to [0, 1] by
``t = (s - lower) / (upper - lower)``; the rescaling is recorded in
``lower`` / ``upper`` so that plots and results can show the original units.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

QUADRATURES = ("trapezoid", "uniform")


@dataclass(frozen=True, eq=False)
class Grid:
    """Ordered grid on [0, 1] with quadrature weights.

    Use :meth:`from_points` or :meth:`uniform` rather than the constructor.

    Parameters
    ----------
    t : ndarray, shape (K,)
        Strictly increasing points in [0, 1].
    weights : ndarray, shape (K,)
        Positive quadrature weights summing to 1.
    quadrature : {"trapezoid", "uniform"}
        How the weights were built (recorded in release metadata).
    lower, upper : float
        The original domain ``[lower, upper]`` that was rescaled to [0, 1].

    Examples
    --------
    Four ages in years become points of [0, 1] with trapezoidal weights summing to 1:

    >>> import fdp_ppl as fp
    >>> grid = fp.Grid.from_points([1.0, 1.5, 2.0, 3.0])
    >>> grid.t, grid.weights
    (array([0.  , 0.25, 0.5 , 1.  ]), array([0.125, 0.25 , 0.375, 0.25 ]))
    >>> grid.points                       # back in years
    array([1. , 1.5, 2. , 3. ])
    >>> float(grid.norm([2.0, 2.0, 2.0, 2.0]))   # L² norm of a constant curve
    2.0

    See Also
    --------
    eigenbasis : the kernel's eigenpairs on this grid.
    """

    t: np.ndarray
    weights: np.ndarray
    quadrature: str = "trapezoid"
    lower: float = 0.0
    upper: float = 1.0
    _key: str = field(init=False, repr=False)

    def __post_init__(self):
        t = np.asarray(self.t, dtype=float)
        w = np.asarray(self.weights, dtype=float)
        if t.ndim != 1 or t.size < 2:
            raise ValueError("a grid needs a 1-D array of at least 2 points")
        if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
            raise ValueError("grid points must be finite and strictly increasing")
        if w.shape != t.shape or np.any(w <= 0) or not np.all(np.isfinite(w)):
            raise ValueError("quadrature weights must be positive and match the grid")
        t.setflags(write=False)
        w.setflags(write=False)
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "weights", w)
        h = hashlib.sha1(t.tobytes() + w.tobytes() + f"{self.lower},{self.upper}".encode())
        object.__setattr__(self, "_key", h.hexdigest())

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_points(cls, points, quadrature: str = "trapezoid") -> "Grid":
        """Build a grid from points in original units, rescaling them to [0, 1].

        Parameters
        ----------
        points : array_like, shape (K,)
            Strictly increasing evaluation points (any units, e.g. years of age).
        quadrature : {"trapezoid", "uniform"}
            ``"trapezoid"``: composite trapezoidal rule on [0, 1] (non-uniform
            grids allowed). ``"uniform"``: ``w_k = 1/K``.

        Raises
        ------
        ValueError
            Fewer than 2 points, non-increasing or non-finite points, unknown
            quadrature.
        """
        s = np.asarray(points, dtype=float)
        if s.ndim != 1 or s.size < 2:
            raise ValueError("a grid needs a 1-D array of at least 2 points")
        if not np.all(np.isfinite(s)) or np.any(np.diff(s) <= 0):
            raise ValueError("grid points must be finite and strictly increasing; sort the curves' grid first")
        lower, upper = float(s[0]), float(s[-1])
        t = (s - lower) / (upper - lower)
        return cls(t=t, weights=_weights(t, quadrature), quadrature=quadrature, lower=lower, upper=upper)

    @classmethod
    def uniform(cls, n_points: int, quadrature: str = "trapezoid") -> "Grid":
        """Equally spaced grid of ``n_points`` points on [0, 1], endpoints included."""
        if int(n_points) < 2:
            raise ValueError("n_points must be at least 2")
        t = np.linspace(0.0, 1.0, int(n_points))
        return cls(t=t, weights=_weights(t, quadrature), quadrature=quadrature)

    # ------------------------------------------------------------------ helpers
    @property
    def size(self) -> int:
        """Number of grid points K."""
        return self.t.size

    @property
    def key(self) -> str:
        """Hash of points, weights and domain; used to cache eigenbases."""
        return self._key

    @property
    def points(self) -> np.ndarray:
        """Grid points in the original units, shape (K,)."""
        return self.lower + self.t * (self.upper - self.lower)

    def inner(self, a, b) -> np.ndarray:
        """Weighted inner product along the last axis, ``sum_k w_k a_k b_k``."""
        return np.sum(np.asarray(a) * np.asarray(b) * self.weights, axis=-1)

    def norm(self, x) -> np.ndarray:
        """L² norm along the last axis, ``sqrt(sum_k w_k x_k²)``."""
        x = np.asarray(x)
        return np.sqrt(np.sum(x * x * self.weights, axis=-1))

    def attrs(self) -> dict:
        """Metadata recorded in release objects."""
        return {"quadrature": self.quadrature, "domain_lower": self.lower, "domain_upper": self.upper,
                "grid_size": self.size}

    def __eq__(self, other):
        return isinstance(other, Grid) and other.key == self.key

    def __hash__(self):
        return hash(self.key)


def _weights(t: np.ndarray, quadrature: str) -> np.ndarray:
    if quadrature == "trapezoid":
        d = np.diff(t)
        w = np.zeros_like(t)
        w[:-1] += d / 2
        w[1:] += d / 2
        return w / w.sum()
    if quadrature == "uniform":
        return np.full(t.shape, 1.0 / t.size)
    raise ValueError(f"unknown quadrature {quadrature!r}; use one of {QUADRATURES}")


__all__ = ["Grid", "QUADRATURES"]
