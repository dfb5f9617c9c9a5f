"""The public Cartesian grid of a KDE, the product kernels on it and their Kronecker eigenbasis.

Source: Hall, Rinaldo & Wasserman (2013), §4.1 (Gaussian kernel, bandwidth
``h ≍ n^{-1/(4+d)}``), §4.1.1 (diagonal bandwidth matrix) and §4.2, eq. 10
(L¹-exponential kernel).

The numerics shared by every KDE spec of :mod:`fdp_ppl.kde`: the grid and its
product trapezoid weights (:class:`~fdp_ppl.spaces.grid.CartesianGrid`, defined in
:mod:`fdp_ppl.spaces` and re-exported here), the 1-D kernel factors
(:func:`axis_kernel`), the retained eigenpairs of their product acting axis by
axis (:class:`ProductEigenbasis`, the KDE's form of
:class:`~fdp_ppl.spaces.tensor.TensorEigenbasis`), the exact KDE values on the grid
(:func:`gaussian_kde_values`) and the public bandwidth rule. No privacy here:
the specs (:mod:`fdp_ppl.kde.gaussian`, :mod:`~fdp_ppl.kde.sobolev`,
:mod:`~fdp_ppl.kde.iclp`) own the sensitivities.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

from ..errors import InputError
from ..releasing.draw import register_public_cache
from ..spaces.grid import CartesianGrid
from ..spaces.kernels import Exponential, Gaussian, ProductKernel, gaussian_bump
from ..spaces.tensor import TensorEigenbasis

DEFAULT_REL_TOL = 1e-12


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
    """``exp(-(x − y)²/(2h²))``, shape (len(x), len(y)) (unnormalised; :func:`~fdp_ppl.spaces.kernels.gaussian_bump`)."""
    return gaussian_bump(np.subtract.outer(np.asarray(x, dtype=float), np.asarray(y, dtype=float)), h)


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
    if kind == "gaussian":
        return Gaussian.from_bandwidth(float(h))
    if kind == "l1-exponential":
        return Exponential(rho=float(h))
    raise InputError(f"unknown product-kernel factor {kind!r}", f"use one of {AXIS_KERNELS}")


class ProductEigenbasis(TensorEigenbasis):
    """Eigenbasis of a product kernel (Gaussian or L¹-exponential) on a :class:`CartesianGrid` (Kronecker of 1-D eigenpairs).

    The KDE's :class:`~fdp_ppl.spaces.tensor.TensorEigenbasis`: the kernel ``Π_k s · axis_kernel(kernel, h_k)``
    on the grid's trapezoid weights. For each axis ``k``: ``W_k^{1/2} K_k W_k^{1/2} = V_k diag(λ_k) V_kᵀ`` and
    ``e_{k,i} = W_k^{-1/2} v_{k,i}`` (sign fixed). The d-dimensional eigenpairs are
    ``(Π_k λ_{k,i_k}, ⊗_k e_{k,i_k})``; those with eigenvalue above ``rel_tol × max`` are retained, sorted by
    decreasing eigenvalue (ties in the ``"legacy"`` order of the KDE releases).

    Parameters
    ----------
    grid : CartesianGrid
    bandwidths : sequence of float, shape (d,)
        Kernel bandwidths ``h_k`` (diagonal of ``H^{1/2}``).
    rel_tol : float
        Relative eigenvalue cut-off (no eigenvalue clipping: smaller pairs are
        dropped from the estimate and the noise alike, DESIGN invariant 2).
    kernel : {"gaussian", "l1-exponential"}
        1-D factor (:func:`axis_kernel`), kept as ``.kernel`` (the
        :class:`~fdp_ppl.spaces.kernels.ProductKernel` is ``.product_kernel``).
    axis_variance : float
        Each 1-D factor is multiplied by it (``1/√(2π)`` makes the Gaussian
        factor the standard normal density, the ICLP KDE kernel).

    Attributes
    ----------
    axis_values, axis_functions : list of ndarray
        Kept factor eigenvalues (times ``axis_variance``) and eigenfunctions, as
        :attr:`~fdp_ppl.spaces.tensor.TensorEigenbasis.factor_eigenvalues` / ``factor_functions``.
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
        self.bandwidths = np.asarray(bandwidths, dtype=float)
        self.axis_variance = float(axis_variance)
        product = ProductKernel(tuple(axis_kernel(kernel, h) for h in self.bandwidths),
                                factor_variance=self.axis_variance)
        super().__init__(product, grid, rel_tol, ties="legacy")
        self.kernel = kernel
        self.axis_values, self.axis_functions, self.axis_methods = (self.factor_eigenvalues, self.factor_functions,
                                                                    self.methods)


#: public pieces of KDE specs kept across releases (eigenbases, exact sensitivities, masses): at most this many
PUBLIC_CACHE_SIZE = 16
_PUBLIC: OrderedDict = OrderedDict()
_PUBLIC_LOCK = threading.Lock()


def grid_key(grid: CartesianGrid) -> tuple:
    """A hashable key of a grid's public content (quadrature, axis sizes and a digest of their points)."""
    return (grid.quadrature,) + tuple((a.size, hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())
                                      for a in grid.axes)


def public_cached(key: tuple, build):
    """``build()`` computed once per public ``key`` and kept in a bounded cache (:data:`PUBLIC_CACHE_SIZE` entries,
    least recently used dropped first).

    The key must be made of public configuration only (grid, bandwidths, kernel, tolerances, the public n),
    never of data: what is kept is public, so a second spec on the same configuration reuses it.
    """
    with _PUBLIC_LOCK:
        if key in _PUBLIC:
            _PUBLIC.move_to_end(key)
            return _PUBLIC[key]
    value = build()
    with _PUBLIC_LOCK:
        _PUBLIC[key] = value
        while len(_PUBLIC) > PUBLIC_CACHE_SIZE:
            _PUBLIC.popitem(last=False)
    return value


@register_public_cache
def clear_public_cache() -> None:
    """Empty the cache of :func:`public_cached` (timing studies measure cold and warm releases); also done by
    :func:`fdp_ppl.releasing.draw.clear_public_cache`, which forgets every public cache."""
    with _PUBLIC_LOCK:
        _PUBLIC.clear()


def product_eigenbasis(grid: CartesianGrid, bandwidths, rel_tol: float = DEFAULT_REL_TOL, kernel: str = "gaussian",
                       axis_variance: float = 1.0) -> ProductEigenbasis:
    """:class:`ProductEigenbasis` computed once per public configuration (:func:`public_cached`; its arrays are
    made read-only, as it is shared between specs).

    Examples
    --------
    >>> grid = CartesianGrid.uniform((0.0, 1.0), 64)
    >>> product_eigenbasis(grid, [0.1]) is product_eigenbasis(CartesianGrid.uniform((0.0, 1.0), 64), [0.1])
    True
    """
    h = tuple(float(v) for v in np.atleast_1d(np.asarray(bandwidths, dtype=float)))
    key = ("eigenbasis", grid_key(grid), str(kernel), h, float(rel_tol), float(axis_variance))

    def build():
        basis = ProductEigenbasis(grid, h, rel_tol, kernel=kernel, axis_variance=axis_variance)
        _freeze(vars(basis))
        return basis

    return public_cached(key, build)


def _freeze(value) -> None:
    """Make the numpy arrays in ``value`` (nested lists, tuples, dicts) read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, (list, tuple)):
        for v in value:
            _freeze(v)
    elif isinstance(value, dict):
        for v in value.values():
            _freeze(v)


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
