"""The public Cartesian grid of a KDE, the product kernels on it and their Kronecker eigenbasis.

Source: Hall, Rinaldo & Wasserman (2013), §4.1 (Gaussian kernel, bandwidth
``h ≍ n^{-1/(4+d)}``), §4.1.1 (diagonal bandwidth matrix) and §4.2, eq. 10
(L¹-exponential kernel).

The numerics shared by every KDE spec of :mod:`fdp_ppl.kde`: the grid and its
product trapezoid weights (:class:`CartesianGrid`), the 1-D kernel factors
(:func:`axis_kernel`), the retained eigenpairs of their product acting axis by
axis (:class:`ProductEigenbasis`), the exact KDE values on the grid
(:func:`gaussian_kde_values`) and the public bandwidth rule. No privacy here:
the specs (:mod:`fdp_ppl.kde.gaussian`, :mod:`~fdp_ppl.kde.sobolev`,
:mod:`~fdp_ppl.kde.iclp`) own the sensitivities.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..spaces.eigenbasis import _sign_convention, retained_eigenpairs

DEFAULT_REL_TOL = 1e-12
DIMS = {1: ("x",), 2: ("x1", "x2")}


def _trapezoid(t: np.ndarray) -> np.ndarray:
    d = np.diff(t)
    w = np.zeros_like(t)
    w[:-1] += d / 2
    w[1:] += d / 2
    return w


@dataclass(frozen=True, eq=False)
class CartesianGrid:
    """Public Cartesian grid on a box ``Π_k [lo_k, hi_k]`` with product trapezoid weights.

    The package's :class:`fdp_ppl.spaces.Grid` is 1-D on [0, 1]; this grid
    is d-dimensional (d = 1 or 2 tested) in the data's own units, so that
    the density and the integrated squared error are in those units.

    Parameters
    ----------
    axes : tuple of ndarray
        One strictly increasing array per dimension, shapes (K_k,).

    Raises
    ------
    InputError
        Empty or non-increasing axes.
    """

    axes: tuple
    weights: tuple = field(init=False)

    def __post_init__(self):
        axes = tuple(np.asarray(a, dtype=float) for a in self.axes)
        for a in axes:
            if a.ndim != 1 or a.size < 2 or np.any(np.diff(a) <= 0):
                raise InputError("each grid axis must be a strictly increasing 1-D array of >= 2 points",
                                 "use CartesianGrid.uniform(domain, size)")
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "weights", tuple(_trapezoid(a) for a in axes))

    @classmethod
    def uniform(cls, domain, size) -> "CartesianGrid":
        """Evenly spaced grid; ``domain`` is ``(lo, hi)`` or a list of them, ``size`` an int or a list."""
        domain = np.atleast_2d(np.asarray(domain, dtype=float))
        sizes = np.broadcast_to(np.asarray(size, dtype=int), (domain.shape[0],))
        return cls(tuple(np.linspace(lo, hi, int(k)) for (lo, hi), k in zip(domain, sizes)))

    @property
    def d(self) -> int:
        return len(self.axes)

    @property
    def shape(self) -> tuple:
        return tuple(a.size for a in self.axes)

    @property
    def domain(self) -> np.ndarray:
        """shape (d, 2)."""
        return np.array([[a[0], a[-1]] for a in self.axes])

    @property
    def dims(self) -> tuple:
        return DIMS.get(self.d, tuple(f"x{k + 1}" for k in range(self.d)))

    def integrate(self, values) -> np.ndarray:
        """Quadrature ``∫ f`` over the box; ``values`` shape ``(..., *shape)``."""
        out = np.asarray(values, dtype=float)
        for k in reversed(range(self.d)):
            out = out @ self.weights[k]
        return out


def max_pairwise_l1(rows: np.ndarray, block: int = 64) -> float:
    """``max_{a,b} ‖rows[a] − rows[b]‖₁`` over all pairs of rows, shape (P, J) → float (exact).

    The exact ℓ¹ sensitivity of a release whose records are snapped to grid nodes: ``rows[a]`` is what one
    record at node ``a`` contributes (replace-one: the worst pair of nodes). A compiled search that skips a
    pair only when a proven triangle-inequality bound cannot beat a distance already found
    (:func:`fdp_ppl.kde._l1.l1_diameter`); ``block`` rows at a time in numpy without Numba.
    """
    from ._l1 import l1_diameter

    return l1_diameter(rows, block)


def gaussian_kernel_1d(x, y, h: float) -> np.ndarray:
    """``exp(-(x − y)²/(2h²))``, shape (len(x), len(y)) (unnormalised)."""
    x = np.asarray(x, dtype=float)[:, None]
    y = np.asarray(y, dtype=float)[None, :]
    return np.exp(-0.5 * ((x - y) / h) ** 2)


#: 1-D factors of the product noise kernels on a Cartesian grid (the package's kernel classes)
AXIS_KERNELS = ("gaussian", "l1-exponential")


def axis_kernel(kind: str, h: float):
    """The 1-D factor of a product kernel, a :mod:`fdp_ppl.spaces.kernels` object with ``.gram``.

    ``"gaussian"``: ``exp(-(x − y)²/(2h²))`` (:class:`~fdp_ppl.spaces.kernels.Gaussian`, Hall convention);
    ``"l1-exponential"``: ``exp(-|x − y|/h)`` (:class:`~fdp_ppl.spaces.kernels.Exponential`, ρ = h = 1/γ);
    their products over the axes are ``exp(-½ Σ_k (x_k − y_k)²/h_k²)`` and
    ``exp(-Σ_k |x_k − y_k|/h_k)`` (= ``exp(-γ‖x − y‖₁)`` for equal h; Hall et al. 2013, §4.1 and §4.2, eq. 10).

    Raises
    ------
    InputError
        Unknown kind.
    """
    from ..spaces.kernels import Exponential, Gaussian

    if kind == "gaussian":
        return Gaussian(rho=float(h), convention="hall")
    if kind == "l1-exponential":
        return Exponential(rho=float(h))
    raise InputError(f"unknown product-kernel factor {kind!r}", f"use one of {AXIS_KERNELS}")


class ProductEigenbasis:
    """Eigenbasis of a product kernel (Gaussian or L¹-exponential) on a :class:`CartesianGrid` (Kronecker of 1-D eigenpairs).

    For each axis ``k``: ``W_k^{1/2} K_k W_k^{1/2} = V_k diag(λ_k) V_kᵀ`` and
    ``e_{k,i} = W_k^{-1/2} v_{k,i}``. The d-dimensional eigenpairs are
    ``(Π_k λ_{k,i_k}, ⊗_k e_{k,i_k})``; those with eigenvalue above
    ``rel_tol × max`` are retained, sorted by decreasing eigenvalue.

    Parameters
    ----------
    grid : CartesianGrid
    bandwidths : sequence of float, shape (d,)
        Kernel bandwidths ``h_k`` (diagonal of ``H^{1/2}``).
    rel_tol : float
        Relative eigenvalue cut-off (no eigenvalue clipping: smaller pairs are
        dropped from the estimate and the noise alike, DESIGN invariant 2).
    kernel : {"gaussian", "l1-exponential"}
        1-D factor (:func:`axis_kernel`).
    axis_variance : float
        Each 1-D factor is multiplied by it (``1/√(2π)`` makes the Gaussian
        factor the standard normal density, the ICLP KDE kernel).

    Attributes
    ----------
    axis_methods : list of str
        How each axis's retained pairs were computed (:func:`fdp_ppl.spaces.eigenbasis.retained_eigenpairs`:
        ``"dense"``, ``"lanczos-fft"`` or ``"lanczos-dense"``).

    Raises
    ------
    InputError
        Not enough memory for an axis's eigenpairs (the solver's check, before any large allocation).

    Notes
    -----
    Nothing of size (Π K_k)² is formed: the eigenpairs, the coefficients and
    the reconstruction act axis by axis (Kronecker structure), so noise on a
    2-D grid is drawn through the 1-D factors. Per axis only the retained
    pairs are computed, by the package's eigen-solver (Lanczos with FFT
    products on a uniform axis where few are retained, as for the Gaussian
    factor on a fine grid; else the dense decomposition).
    """

    def __init__(self, grid: CartesianGrid, bandwidths, rel_tol: float = DEFAULT_REL_TOL, kernel: str = "gaussian",
                 axis_variance: float = 1.0):
        self.grid = grid
        self.bandwidths = np.asarray(bandwidths, dtype=float)
        self.rel_tol = float(rel_tol)
        self.kernel = kernel
        self.axis_variance = float(axis_variance)
        self.axis_values, self.axis_functions, self.axis_methods = [], [], []
        for a, w, h in zip(grid.axes, grid.weights, self.bandwidths):
            # only the retained pairs of each 1-D factor (Lanczos with FFT products on a uniform axis, else dense;
            # the package's one eigen-solver). The factor times axis_variance has the same eigenvectors and
            # eigenvalues times axis_variance, and the cut-off is relative, so the same pairs are kept.
            lam, v, _, how = retained_eigenpairs(axis_kernel(kernel, h), a, w, rel_tol)
            sw = np.sqrt(w)
            self.axis_values.append(self.axis_variance * lam)
            self.axis_functions.append(v * _sign_convention(v) / sw[:, None])
            self.axis_methods.append(how)
        lam = self.axis_values[0]
        for extra in self.axis_values[1:]:
            lam = np.multiply.outer(lam, extra)
        flat = lam.ravel()
        order = np.argsort(flat)[::-1]
        order = order[flat[order] > rel_tol * flat[order[0]]]
        self.index = order  # into the flattened Kronecker index
        self.eigenvalues = flat[order]
        self._lam_shape = lam.shape

    @property
    def size(self) -> int:
        return int(self.eigenvalues.size)

    def coefficients(self, values) -> np.ndarray:
        """``c_j = ∫ f e_j`` (quadrature); ``values`` ``(..., *grid.shape) -> (..., J)``."""
        out = np.asarray(values, dtype=float)
        d = self.grid.d
        for k in range(d):
            # contract axis -d+k... keep order: move the grid axis k to the end and contract
            axis = out.ndim - d + k
            out = np.moveaxis(out, axis, -1)
            out = (out * self.grid.weights[k]) @ self.axis_functions[k]
            out = np.moveaxis(out, -1, axis)
        lead = out.shape[: out.ndim - d]
        return out.reshape(lead + (-1,))[..., self.index]

    def reconstruct(self, coefficients) -> np.ndarray:
        """``Σ_j c_j e_j`` on the grid; ``(..., J) -> (..., *grid.shape)``."""
        c = np.asarray(coefficients, dtype=float)
        lead = c.shape[:-1]
        full = np.zeros(lead + (int(np.prod(self._lam_shape)),))
        full[..., self.index] = c
        out = full.reshape(lead + self._lam_shape)
        d = self.grid.d
        for k in range(d):
            axis = out.ndim - d + k
            out = np.moveaxis(out, axis, -1)
            out = out @ self.axis_functions[k].T
            out = np.moveaxis(out, -1, axis)
        return out

    def node_sums(self, counts) -> np.ndarray:
        """``Σ_nodes counts(node) e_j(node)`` (no quadrature weights); ``counts`` ``(*grid.shape) -> (J,)``.

        The coefficients of a sum of point evaluations at grid nodes, axis by axis (never (nodes × J)).
        """
        out = np.asarray(counts, dtype=float)
        for k in range(self.grid.d):
            out = np.moveaxis(np.tensordot(out, self.axis_functions[k], axes=([k], [0])), -1, k)
        return out.reshape(-1)[self.index]

    def functions_at(self, indices) -> np.ndarray:
        """Retained eigenfunctions at grid nodes; ``indices`` (m, d) integer node indices -> (m, J)."""
        idx = np.atleast_2d(np.asarray(indices, dtype=int))
        rows = self.axis_functions[0][idx[:, 0]]
        for k in range(1, self.grid.d):
            f = self.axis_functions[k][idx[:, k]]
            rows = (rows[:, :, None] * f[:, None, :]).reshape(idx.shape[0], -1)
        return rows[:, self.index]

    def norm_cameron_martin(self, coefficients) -> np.ndarray:
        """``(Σ_j c_j²/λ_j)^{1/2}``, shape (...)."""
        c = np.asarray(coefficients, dtype=float)
        return np.sqrt(np.sum(c ** 2 / self.eigenvalues, axis=-1))


def gaussian_kde_values(points, observations, bandwidths, weights=None) -> np.ndarray:
    """Gaussian KDE with diagonal bandwidth matrix ``H = diag(h²)`` at ``points``.

    ``f_D(x) = 1/(n (2π)^{d/2} Π_k h_k) Σ_i exp(-½ Σ_k (x_k − x_{ik})²/h_k²)``
    (Hall et al. 2013, §4.1.1).

    Parameters
    ----------
    points : tuple of ndarray
        Grid axes, one (K_k,) array per dimension; the result is on their
        Cartesian product, shape (K_1, ..., K_d).
    observations : ndarray, shape (n, d) or (n,)
    bandwidths : ndarray, shape (d,)
    weights : ndarray, shape (n,), optional
        Weights of the observations summing to 1 (default 1/n each): a privacy unit's records share
        one record's weight (:meth:`KDESpec.unit_weights`).

    Notes
    -----
    Accumulated over chunks of records (:func:`fdp_ppl.kde.accumulate.kde_values_chunked`): memory
    ``O(chunk × Σ_k K_k)``, never ``O(n × Σ_k K_k)``; equal to the one-shot sum up to rounding.
    """
    from .accumulate import kde_values_chunked

    return kde_values_chunked(points, observations, bandwidths, weights)


def bandwidth_rule(n: int, d: int = 1, scale=1.0, constant: float = 1.06) -> np.ndarray:
    """Public bandwidth ``h_k = constant · scale_k · n^{-1/(4+d)}`` (Hall §4.1: ``h ≍ n^{-1/(4+d)}``).

    ``scale`` is a public spread per dimension (never computed from the data
    here; the private IQR rule of Hall §4.1.2 is not implemented yet).
    Returns shape (d,).
    """
    if n < 1 or d < 1:
        raise InputError("n and d must be positive", "pass the public sample size and dimension")
    return constant * np.broadcast_to(np.asarray(scale, dtype=float), (d,)) * float(n) ** (-1.0 / (4 + d))
