"""Evaluation grids with quadrature weights: the discrete Hilbert space.

A :class:`Grid` holds ``K`` ordered points ``t`` in [0, 1] and quadrature
weights ``w`` (summing to 1). The inner product of two functions evaluated on
the grid is ``<a, b>_w = sum_k w_k a_k b_k`` and approximates the L²[0, 1]
inner product. Every norm, clipping bound τ and eigenpair in the package is
measured in this inner product (``specs/iclp.md`` §4.2).

A dataset observed on ``[lower, upper]`` is rescaled to [0, 1] by
``t = (s - lower) / (upper - lower)``; the rescaling is recorded in
``lower`` / ``upper`` so that plots and results can show the original units.

A :class:`CartesianGrid` is the d-dimensional product of 1-D axes in the data's
own units (the grids of the KDE and of the kernel machine), with product
quadrature weights: trapezoid (an integral) or unit (point evaluations).
:func:`trapezoid_weights` is the one trapezoid rule of the package.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

QUADRATURES = ("trapezoid", "uniform")
#: product quadratures of a :class:`CartesianGrid`: trapezoid per axis, or unit weights (point evaluations)
CARTESIAN_QUADRATURES = ("trapezoid", "unit")
#: dimension names of a d-dimensional Cartesian grid (d = 1, 2; ``x1, x2, ...`` above)
CARTESIAN_DIMS = {1: ("x",), 2: ("x1", "x2")}


def trapezoid_weights(t) -> np.ndarray:
    """Composite trapezoid weights of the strictly increasing points ``t`` (K,) -> (K,), unnormalised.

    ``w_0 = (t_1 − t_0)/2``, ``w_k = (t_{k+1} − t_{k−1})/2``, ``w_{K−1} = (t_{K−1} − t_{K−2})/2``, so
    ``Σ_k w_k f(t_k)`` is the trapezoid rule for ``∫_{t_0}^{t_{K−1}} f`` and ``Σ_k w_k = t_{K−1} − t_0``.
    The one trapezoid rule of the package (:class:`Grid` normalises it to sum 1 on [0, 1];
    :class:`CartesianGrid` takes it per axis in data units).
    """
    t = np.asarray(t, dtype=float)
    d = np.diff(t)
    w = np.zeros_like(t)
    w[:-1] += d / 2
    w[1:] += d / 2
    return w


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
        w = trapezoid_weights(t)
        return w / w.sum()
    if quadrature == "uniform":
        return np.full(t.shape, 1.0 / t.size)
    raise ValueError(f"unknown quadrature {quadrature!r}; use one of {QUADRATURES}")


@dataclass(frozen=True, eq=False)
class CartesianGrid:
    """Public Cartesian grid on a box ``Π_k [lo_k, hi_k]`` with product quadrature weights.

    :class:`Grid` is 1-D on [0, 1]; this grid is d-dimensional (d = 1 or 2 tested) in the data's own
    units, so that a density and an integrated squared error are in those units. Points are in C order
    (the last axis fastest), the order of ``values.reshape(-1)`` for values of shape :attr:`shape`.

    Parameters
    ----------
    axes : tuple of ndarray
        One strictly increasing array per dimension, shapes (K_k,).
    quadrature : {"trapezoid", "unit"}
        Per-axis weights: the trapezoid rule (:func:`trapezoid_weights`; a KDE's integrals) or 1 at every
        node (the Euclidean inner product of point evaluations: a kernel machine's grid noise, whose
        eigenpairs are those of the matrix ``K(P, P)`` itself). The product weight of a node is the
        product of its axes' weights.

    Raises
    ------
    InputError
        Empty or non-increasing axes, an unknown quadrature.
    """

    axes: tuple
    quadrature: str = "trapezoid"
    weights: tuple = field(init=False)

    def __post_init__(self):
        axes = tuple(np.asarray(a, dtype=float) for a in self.axes)
        for a in axes:
            if a.ndim != 1 or a.size < 2 or np.any(np.diff(a) <= 0):
                raise InputError("each grid axis must be a strictly increasing 1-D array of >= 2 points",
                                 "use CartesianGrid.uniform(domain, size)")
        if self.quadrature not in CARTESIAN_QUADRATURES:
            raise InputError(f"unknown quadrature {self.quadrature!r}", f"use one of {CARTESIAN_QUADRATURES}")
        object.__setattr__(self, "axes", axes)
        rule = trapezoid_weights if self.quadrature == "trapezoid" else np.ones_like
        object.__setattr__(self, "weights", tuple(rule(a) for a in axes))

    @classmethod
    def uniform(cls, domain, size, quadrature: str = "trapezoid") -> "CartesianGrid":
        """Evenly spaced grid; ``domain`` is ``(lo, hi)`` or a list of them, ``size`` an int or a list."""
        domain = np.atleast_2d(np.asarray(domain, dtype=float))
        sizes = np.broadcast_to(np.asarray(size, dtype=int), (domain.shape[0],))
        return cls(tuple(np.linspace(lo, hi, int(k)) for (lo, hi), k in zip(domain, sizes)), quadrature)

    @property
    def d(self) -> int:
        """Number of dimensions."""
        return len(self.axes)

    @property
    def shape(self) -> tuple:
        """``(K_1, …, K_d)``."""
        return tuple(a.size for a in self.axes)

    @property
    def size(self) -> int:
        """Number of nodes ``Π_k K_k``."""
        return int(np.prod(self.shape))

    @property
    def domain(self) -> np.ndarray:
        """shape (d, 2)."""
        return np.array([[a[0], a[-1]] for a in self.axes])

    @property
    def dims(self) -> tuple:
        """Dimension names: ``("x",)``, ``("x1", "x2")``, then ``x1 … xd``."""
        return CARTESIAN_DIMS.get(self.d, tuple(f"x{k + 1}" for k in range(self.d)))

    @property
    def points(self) -> np.ndarray:
        """Nodes ``(Π_k K_k, d)`` in C order (the last axis fastest)."""
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)

    @property
    def product_weights(self) -> np.ndarray:
        """Weight of every node, shape :attr:`shape` (the outer product of the per-axis weights)."""
        out = self.weights[0]
        for w in self.weights[1:]:
            out = np.multiply.outer(out, w)
        return out

    def integrate(self, values) -> np.ndarray:
        """Quadrature ``∫ f`` over the box; ``values`` shape ``(..., *shape)``."""
        out = np.asarray(values, dtype=float)
        for k in reversed(range(self.d)):
            out = out @ self.weights[k]
        return out


__all__ = ["CARTESIAN_DIMS", "CARTESIAN_QUADRATURES", "CartesianGrid", "Grid", "QUADRATURES", "trapezoid_weights"]
