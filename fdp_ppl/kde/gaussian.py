"""Gaussian-kernel density estimate released with Gaussian-process noise.

Source: Hall, Rinaldo & Wasserman (2013), §4.1 and §4.1.1 (Corollary 9, §5
batch release with the squared scale of the errata in
``specs/gp-mechanism-hall.md``).

Design
------
The KDE on a public grid is a summary spec. The noise kernel is the
unnormalised Gaussian kernel of the same bandwidth,
``K(x, y) = exp(-½ Σ_k (x_k − y_k)²/h_k²)``, a product kernel, so on a
Cartesian grid its eigenpairs (of the quadrature-weighted operator
``W^{1/2} K W^{1/2}``) are Kronecker products of 1-D eigenpairs
(:class:`ProductEigenbasis`). The estimate and the noise live on the same
retained eigenpairs: the release is the package's Gaussian mechanism,
coefficient ``j`` ~ ``N(c_j, σ² λ_j)``, which on the grid is
``N(f_D, σ² K)`` restricted to the retained span — Hall's batch release.

Sensitivity: the discrete Cameron–Martin norm of a neighbouring difference,
``(Σ_{j retained} (c_j − c'_j)²/λ_j)^{1/2}``, is at most the grid
Mahalanobis norm ``‖K^{-1/2}(f_D − f_{D'})‖`` (all eigenpairs), which is at
most the RKHS norm (Hall Prop. 8), which is at most
``Δ = √2 / (n (2π)^{d/2} Π_k h_k)`` (Hall §4.1, §4.1.1). Equality is
approached when the replaced observations sit on grid points far apart, so
the RKHS constant is the (tight) sensitivity used.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import xarray as xr

from ..accounting.calibration import gaussian_delta
from ..errors import InputError, SeededReleaseWarning
from ..noise.mechanisms.gaussian import GaussianMechanism
from ..releasing.schema import CONSTANT_DATA, POSTERIOR, kde_attrs
from ..spaces.eigenbasis import _sign_convention, retained_eigenpairs
from ..summaries.base import Sensitivity, SummarySpec, public_n

DEFAULT_REL_TOL = 1e-12
KDE_SOURCE = "Hall, Rinaldo & Wasserman (2013), Section 4.1 (Delta), 4.1.1 (matrix H), Corollary 9"
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


def _check_kde_unit(unit):
    """A privacy unit a KDE can serve: ``combine="mean"`` (each unit's bumps averaged: a convex combination of
    bumps, so the record-level sensitivity holds with n = the number of units) or ``max_contributions=1``.

    Raises
    ------
    InputError
        Not a PrivacyUnit, or ``max_contributions`` > 1 (padding would need a public bump).
    """
    if unit is None:
        return None
    from ..io.units import PrivacyUnit

    if not isinstance(unit, PrivacyUnit):
        raise InputError("privacy_unit must be an fdp_ppl.io.units.PrivacyUnit", "e.g. PrivacyUnit('id', combine='mean')")
    if unit.contributions != 1:
        raise InputError("a KDE takes combine='mean' or max_contributions=1 per unit (k > 1 records would need "
                         "padding bumps at a public point)", "pass combine='mean' (each unit's bumps averaged)")
    return unit


class KDESpec(SummarySpec):
    """Public spec of a Gaussian-kernel KDE on a Cartesian grid, released with GP noise (no data).

    A :class:`~fdp_ppl.summaries.SummarySpec`: :meth:`sensitivity`,
    :attr:`eigenvalues`, :attr:`n_components` and :meth:`attrs` come from
    public quantities only, so ``mechanism.calibrate(spec)`` plans the noise
    before the data are seen (the same path as mean releases).

    Parameters
    ----------
    grid : CartesianGrid
        Public evaluation grid; its box is the public domain (observations
        are clipped to it).
    bandwidth : float or array of shape (d,), or None
        ``h`` (isotropic) or the diagonal of ``H^{1/2}`` (per-axis ``h_k``), in
        the data's units. None: :func:`bandwidth_rule` with the domain width / 4
        as public scale.
    n : int
        Public number of observations (>= 2).
    rel_tol : float
        Eigenvalue cut-off of the noise-kernel eigenbasis.
    estimator : {"exact", "binned"}
        How the estimate on the grid is computed (public; recorded in the release attrs as ``kde_estimator``).
        ``"exact"`` (default): the kernel sum, accumulated over chunks of records (memory
        ``O(chunk × Σ K_k)``, :func:`fdp_ppl.kde.accumulate.kde_values_chunked`). ``"binned"``: multilinear
        binning on a fine public lattice, then kernel smoothing (``O(n + grid × bins)``,
        :func:`fdp_ppl.kde.accumulate.binned_kde_values`), within ``bin_rel_error × f_max`` of the exact
        estimate at every grid point. Both have the same sensitivity, hence the same noise: a binned record
        is a convex combination of kernel sections at bin centres (proof in
        :mod:`fdp_ppl.kde.accumulate`).
    bin_rel_error : float
        Accuracy of the binned lattice relative to the peak of one bump (public; default 1e-3).

    Attributes
    ----------
    tau : float
        Public bound on one record's contribution in the sensitivity norm
        (here the RKHS norm of one kernel bump, ``n × normaliser``).

    Raises
    ------
    InputError
        n < 2, h not finite and > 0.

    Notes
    -----
    Noise kernel: ``K(x, y) = exp(-½ (x − y)ᵀ H^{-1} (x − y))`` (same bandwidth).
    Sensitivity (Cameron–Martin, tight = RKHS bound):
    ``Δ = √2 / (n (2π)^{d/2} |H|^{1/2})`` (Hall et al. 2013, §4.1 and §4.1.1).
    """

    kind = "kde"
    name: ClassVar[str] = "kde"
    kernel = "gaussian"
    noise_kernel_kind = "gaussian"
    noise_kernel_formula = "exp(-0.5 (x-y)^T H^-1 (x-y)), H = diag(bandwidth^2)"
    default_norm: ClassVar[str] = "cameron-martin"
    norms: ClassVar[tuple] = ("cameron-martin",)
    source: ClassVar[str] = KDE_SOURCE
    #: mechanism families that can release this spec
    mechanism_families: ClassVar[tuple] = ("gaussian",)
    axis_variance = 1.0

    def __init__(self, *, grid: CartesianGrid, bandwidth=None, n: int, rel_tol: float = DEFAULT_REL_TOL,
                 privacy_unit=None, estimator: str = "exact", bin_rel_error: float | None = None):
        from .accumulate import BINNED_REL_ERROR, KDE_ESTIMATORS

        if estimator not in KDE_ESTIMATORS:
            raise InputError(f"unknown KDE estimator {estimator!r}", f"use one of {KDE_ESTIMATORS}")
        self.estimator = estimator
        self.bin_rel_error = float(BINNED_REL_ERROR if bin_rel_error is None else bin_rel_error)
        n = public_n(n)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "privacy_unit", _check_kde_unit(privacy_unit))
        self._grid = grid
        if bandwidth is None:
            bandwidth = bandwidth_rule(n, grid.d, np.diff(grid.domain, axis=1)[:, 0] / 4)
        h = np.broadcast_to(np.asarray(bandwidth, dtype=float), (grid.d,)).copy()
        if np.any(~np.isfinite(h)) or np.any(h <= 0):
            raise InputError(f"bandwidths must be positive and finite (got {h})", "pass h > 0")
        self.bandwidths = h
        if estimator == "binned":
            from .accumulate import bin_axes

            self.bins = bin_axes(grid.domain, h, self.bin_rel_error)  # refuses a lattice above MAX_BINS
        else:
            self.bins = None
        self.basis = ProductEigenbasis(grid, h, rel_tol, kernel=self.noise_kernel_kind,
                                       axis_variance=self.axis_variance)
        object.__setattr__(self, "tau", float(self._record_norm_bound()))

    def _record_norm_bound(self) -> float:
        return float(self.n * self.normaliser)

    @property
    def grid(self) -> CartesianGrid:
        """The public Cartesian grid."""
        return self._grid

    @property
    def d(self) -> int:
        return self.grid.d

    @property
    def eigenvalues(self) -> np.ndarray:
        return self.basis.eigenvalues

    @property
    def n_components(self) -> int:
        return self.basis.size

    @property
    def normaliser(self) -> float:
        """``1/(n (2π)^{d/2} Π h_k)``: the weight of one observation's kernel bump."""
        return 1.0 / (self.n * (2 * np.pi) ** (self.d / 2) * np.prod(self.bandwidths))

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """``Δ = √2 / (n (2π)^{d/2} Π h_k)`` in the Cameron–Martin norm (Hall et al. 2013, §4.1, §4.1.1).

        Raises
        ------
        InputError
            Another norm.
        """
        norm = norm or self.default_norm
        if norm != "cameron-martin":
            raise InputError(f"the Gaussian KDE spec has no {norm!r} sensitivity",
                             "use norm='cameron-martin' (GaussianMechanism), or ICLPKDESpec for the ICLP")
        return Sensitivity(value=float(np.sqrt(2.0) * self.normaliser), norm=norm, bound=bound,
                           assumptions="any observations (clipping not needed for privacy); h fixed a priori",
                           source=KDE_SOURCE)

    def noise_kernel(self, x, y) -> np.ndarray:
        """Noise covariance kernel ``K(x, y)`` (product of :func:`axis_kernel`); ``x`` (m, d), ``y`` (p, d) -> (m, p)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        y = np.atleast_2d(np.asarray(y, dtype=float))
        out = 1.0
        for k in range(self.d):
            out = out * self.axis_variance * axis_kernel(self.noise_kernel_kind, self.bandwidths[k]).gram(
                x[:, k], y[:, k])
        return out

    @property
    def params(self) -> dict:
        return {}

    #: factor applied to the estimate and to every release after the noise (public post-processing; 1: none)
    release_scale = 1.0

    def noise_covariance_text(self) -> str:
        """The noise law on the grid, in words (release attrs)."""
        return "sigma^2 K(x, y) on the retained eigenpairs (K = noise_kernel, sigma = attrs sigma)"

    def basis_attrs(self) -> dict:
        return {"noise_kernel": self.noise_kernel_formula, "n_components": self.n_components,
                "eigen_rel_tol": self.basis.rel_tol}

    def public_dataset(self) -> xr.Dataset:
        """Public grid weights and eigenvalues (``constant_data`` of a release)."""
        dims = self.grid.dims
        coords = {dim: ax for dim, ax in zip(dims, self.grid.axes)}
        return xr.Dataset({**{f"weights_{dim}": ((dim,), w) for dim, w in zip(dims, self.grid.weights)},
                           "eigenvalues": (("component",), self.eigenvalues)}, coords=coords)

    def attrs(self) -> dict:
        out = {
            "summary": self.name,
            "kernel": self.kernel,
            "n": self.n,
            "d": self.d,
            "bandwidth": [float(v) for v in self.bandwidths],
            "h": float(self.bandwidths[0]) if np.allclose(self.bandwidths, self.bandwidths[0]) else "diagonal H",
            "domain": [float(v) for v in self.grid.domain.ravel()],
            "grid_shape": list(self.grid.shape),
            "noise_kernel": self.noise_kernel_formula,
            "n_components": self.n_components,
            "eigen_rel_tol": self.basis.rel_tol,
            "tau": float(self.tau),
            "summary_source": self.source,
            **self.estimator_attrs(),
        }
        out.update(self.params)
        return out

    def estimator_attrs(self) -> dict:
        """``kde_estimator`` and, when binned, the public lattice size and error bound (release attrs)."""
        if self.bins is None:
            return {"kde_estimator": self.estimator}
        from .accumulate import binned_error_bound

        return {"kde_estimator": self.estimator, "kde_bins": [int(b.size) for b in self.bins],
                "kde_binned_error_bound": binned_error_bound(self.bins, self.bandwidths)}

    def check_size(self, draws: int = 1, n_records: int | None = None) -> None:
        """Refuse, from public sizes only and before any charge, a fit and release that do not fit in memory
        (:func:`fdp_ppl.kde.accumulate.check_kde_size`).

        Parameters
        ----------
        draws : int
            Releases drawn at once.
        n_records : int, optional
            Records passed to :meth:`fit` (default the public n; more with a privacy unit).

        Raises
        ------
        InputError
            Not enough memory, with what to do instead.
        """
        from .accumulate import check_kde_size

        check_kde_size(self.grid.shape, self.n if n_records is None else int(n_records), self.d,
                       estimator=self.estimator, draws=draws)

    # ------------------------------------------------------------------ data
    def _check_observations(self, observations, units=None) -> tuple[np.ndarray, int]:
        obs = np.asarray(observations, dtype=float)
        obs = obs[:, None] if obs.ndim == 1 else obs
        if obs.ndim != 2 or obs.shape[1] != self.d:
            raise InputError(f"observations must have shape (n, {self.d}) (got {obs.shape})", "reshape the data")
        if self.privacy_unit is not None:
            if units is None or len(units) != obs.shape[0]:
                raise InputError("a privacy unit needs the unit of every observation",
                                 "pass units= (one id per observation)")
        elif units is not None:
            raise InputError("units= needs a privacy_unit in the spec", "build the spec with privacy_unit=...")
        if self.privacy_unit is None and obs.shape[0] != self.n:
            raise InputError(f"the spec says n = {self.n} but {obs.shape[0]} observations were given",
                             "build the spec with the public n")
        if not np.all(np.isfinite(obs)):
            raise InputError("observations must be finite", "drop or impute missing values before release")
        return self._clip(obs)

    def _clip(self, obs) -> tuple[np.ndarray, int]:
        """Finite records (m, d) clipped to the public box, and the number of records moved."""
        dom = self.grid.domain
        clipped = np.clip(obs, dom[:, 0], dom[:, 1])
        return clipped, int(np.sum(np.any(clipped != obs, axis=1)))

    # ------------------------------------------------------------------ out of core
    @property
    def _sums_shape(self) -> tuple:
        return tuple(b.size for b in self.bins) if self.bins is not None else tuple(self.grid.shape)

    def chunk_sums(self, block) -> np.ndarray:
        """One chunk's share of :meth:`fit`, flat (data holder only): finite records (m, d) clipped to the box,
        then the kernel sum ``Σ_i exp(-½ Σ_k (t_k − x_ik)²/h_k²) / ((2π)^{d/2} Π h_k)`` on the grid (exact) or
        the linear-binning masses (binned); the last entry is the number of records clipped."""
        from .accumulate import kde_values_chunked, linear_binning

        clipped, n_clipped = self._clip(np.asarray(block, dtype=float))
        if self.bins is not None:
            part = linear_binning(self.bins, clipped)
        else:  # weights of 1: the sum divided by (2π)^{d/2} Π h only; n is applied once in _from_sums
            part = kde_values_chunked(self.grid.axes, clipped, self.bandwidths, np.ones(clipped.shape[0]))
        return np.append(part.ravel(), n_clipped)

    def _from_sums(self, part, n_clipped: int) -> KDESummary:
        """The summary from :meth:`chunk_sums` added over all chunks (grid- or lattice-shaped ``part``)."""
        if self.bins is not None:
            from .accumulate import smooth_bin_masses

            values = smooth_bin_masses(self.grid.axes, part, self.bandwidths, self.bins, n=self.n)
        else:
            values = part / self.n
        return KDESummary(self, self.basis.coefficients(values), values, n_clipped)

    def _fit_lazy(self, observations, units) -> KDESummary:
        """:meth:`fit` of records in a dask array (or dask-backed DataArray), records first: :meth:`chunk_sums`
        of every chunk added on dask (:func:`fdp_ppl.io.records.reduce_records`), never the records
        gathered. n (public) is the array's length. No privacy unit out of core."""
        from ..io.records import reduce_records

        if self.privacy_unit is not None or units is not None:
            raise InputError("a KDE with a privacy unit (units=) is not fitted out of core",
                             "load the records and their units in memory, or drop the privacy unit")
        shape = self._sums_shape
        size = int(np.prod(shape))
        total, _, bad = reduce_records(observations, self.d, "observations", self.chunk_sums, size + 1, n=self.n)
        if bad:
            raise InputError("observations must be finite",  # no count: it depends on the data
                             "drop or impute missing values before release")
        return self._from_sums(total[:size].reshape(shape), int(total[size]))

    def record_values(self, x) -> np.ndarray:
        """One record's contribution to the estimate on the grid, ``normaliser × bump(x)``; ``x`` (d,).

        Binned estimator: ``normaliser × Σ_l a_l(x) bump(b_l)`` over the ``2^d`` corners of its bin cell.
        """
        if self.bins is not None:
            from .accumulate import record_bin_weights

            corners, wts = record_bin_weights(self.bins, x)
            return sum(wt * self._bump(c) for c, wt in zip(corners, wts))
        return self._bump(x)

    def _bump(self, x) -> np.ndarray:
        """``normaliser × exp(-½ Σ_k (t_k − x_k)²/h_k²)`` on the grid; ``x`` (d,)."""
        vals = None
        for k in range(self.d):
            f = np.exp(-0.5 * ((self.grid.axes[k] - x[k]) / self.bandwidths[k]) ** 2)
            vals = f if vals is None else np.multiply.outer(vals, f)
        return self.normaliser * vals

    def record_coefficients(self, x) -> np.ndarray:
        """Coefficients (J,) of one record's contribution."""
        return self.basis.coefficients(self.record_values(np.asarray(x, dtype=float)))

    def fit(self, observations, units=None) -> "KDESummary":
        """Clip ``observations`` (n, d) or (n,) to the public domain and compute the KDE (non-private).

        ``units`` (n,): the unit of each observation, required with a ``privacy_unit`` (each unit's bumps are
        then averaged, or its first observation kept, and n is the number of units).

        Raises
        ------
        InputError
            Wrong shape, non-finite values or a count different from the public n.
        """
        from ..io.records import is_lazy

        if is_lazy(observations):  # records out of core: reduced chunk by chunk on dask
            return self._fit_lazy(observations, units)
        self.check_size(n_records=np.shape(observations)[0] if np.ndim(observations) else None)
        clipped, n_clipped = self._check_observations(observations, units)
        clipped, weights = self._unit_select(clipped, units)
        if self.bins is not None:
            from .accumulate import binned_kde_values

            values = binned_kde_values(self.grid.axes, clipped, self.bandwidths, weights, bins=self.bins)
        else:
            values = gaussian_kde_values(self.grid.axes, clipped, self.bandwidths, weights)
        return KDESummary(self, self.basis.coefficients(values), values, n_clipped)

    def _unit_select(self, clipped, units):
        """Observations kept and their weights (None: 1/n each) under the spec's privacy unit."""
        if self.privacy_unit is None:
            return clipped, None
        keep, weights = self.privacy_unit.weights(units, self.n)
        return clipped[keep], weights

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n={self.n}, h={[round(float(v), 4) for v in self.bandwidths]}, "
                f"grid={self.grid.shape}, J={self.n_components})")


@dataclass(eq=False)
class KDESummary:
    """A fitted KDE: coefficients (J,) in the spec's eigenbasis and the grid values (data holder only).

    Never part of a release; ``n_clipped`` (observations outside the public
    domain) is for the data holder only.
    """

    spec: KDESpec
    coefficients: np.ndarray
    values: np.ndarray
    n_clipped: int

    @property
    def density(self) -> np.ndarray:
        """The estimate projected on the retained eigenpairs (what the release centres on), times the spec's
        public ``release_scale`` (1 unless the spec normalises its mass)."""
        return self.spec.basis.reconstruct(self.coefficients) * self.spec.release_scale

    def __getattr__(self, name):
        if name.startswith("__") or name in ("spec", "coefficients", "values", "n_clipped"):
            raise AttributeError(name)
        return getattr(self.spec, name)

    def __repr__(self) -> str:
        return f"KDESummary({self.spec!r}; non-private coefficients hidden)"


def cameron_martin_difference(spec: KDESpec, x, x_prime) -> np.ndarray:
    """Discrete Cameron–Martin norm of ``f_D − f_{D'}`` when observation ``x`` is replaced by ``x'``.

    ``(Σ_{j retained} (c_j − c'_j)²/λ_j)^{1/2}``, which equals the grid
    Mahalanobis norm ``‖K^{-1/2}(f_D − f_{D'})‖`` when every eigenpair is
    retained (Hall et al. 2013, Prop. 3 and 8).

    Parameters
    ----------
    spec : KDESpec or SobolevKDESpec
    x, x_prime : ndarray, shape (m, d)
        Pairs of replaced observations.

    Returns
    -------
    ndarray, shape (m,)
    """
    return _pair_norms(spec, x, x_prime, spec.basis.norm_cameron_martin)


def _pair_norms(spec, x, x_prime, norm) -> np.ndarray:
    x = np.atleast_2d(np.asarray(x, dtype=float))
    xp = np.atleast_2d(np.asarray(x_prime, dtype=float))
    cache: dict = {}

    def coef(point):
        key = tuple(point)
        if key not in cache:
            cache[key] = spec.record_coefficients(point)
        return cache[key]

    return np.array([float(norm(coef(a) - coef(b))) for a, b in zip(x, xp)])


def release_kde(summary: KDESummary, mechanism, *, draws: int = 1, chains: int = 1, random_seed=None,
                ledger=None, label: str = "", dataset: str = "", bound: str = "tight",
                generator: str | None = None) -> xr.DataTree:
    """Release a fitted KDE through the package's release path (calibrate, ledger, sampler).

    The family function :func:`fdp_ppl.release` calls for a :class:`KDESummary` (through
    :data:`fdp_ppl.releasing.registry.RELEASES`); call ``fp.release(summary, mechanism, ...)``.

    The same steps as :func:`fdp_ppl.release`: the mechanism calibrates the
    noise from the spec's public sensitivity (``mechanism.calibrate(spec)``),
    the ledger is charged ``chains × draws × (ε, δ)`` before any draw, and the
    coefficients are drawn by the release generator of
    :mod:`fdp_ppl.noise.sampling`: OpenDP's floating-point-safe sampler when
    unseeded (default), the compiled PyMC sampler when seeded. The noise is
    ``N(c_j, σ² λ_j)`` (GP noise, Hall et al. 2013, Corollary 9, batch
    release ``s² K`` of ``specs/gp-mechanism-hall.md`` errata) or
    ``Laplace(c_j, Δ√λ_j/ε)`` (ICLP, Lin & Reimherr 2026, Theorem 8) on the
    retained eigenpairs of the noise kernel; on the grid it is the process
    restricted to their span, reconstructed through the Kronecker factors.
    Only the density layout differs from :func:`fdp_ppl.release` (a grid in
    d dimensions instead of a curve on [0, 1]).

    Parameters
    ----------
    summary : KDESummary
        From ``spec.fit(observations)`` (KDESpec, SobolevKDESpec, ICLPKDESpec).
    mechanism : GaussianMechanism or ICLP
        GaussianMechanism for KDESpec / SobolevKDESpec; ICLP for ICLPKDESpec.
    draws, chains : int
        Independent releases, arranged (chain, draw). One draw is one publication.
    random_seed : None or int or SeedSequence or Generator
        None: fresh OS entropy (real releases). Anything else warns
        :class:`~fdp_ppl.errors.SeededReleaseWarning` and uses the
        compiled PyMC sampler (not floating-point safe).
    ledger : PrivacyLedger or FileLedger, optional
        Charged before sampling.
    label, dataset : str
        Ledger label and dataset identity.
    bound : str
        Sensitivity bound (the spec's :meth:`sensitivity`).
    generator : {None, "opendp", "pymc"}
        See :func:`fdp_ppl.release`.

    Returns
    -------
    xarray.DataTree
        ``posterior/density`` (chain, draw, x) or (chain, draw, x1, x2) in
        the data's density units (1/unit^d); ``constant_data``: the grid axes
        (coords), quadrature weights, eigenvalues and noise scale per
        coefficient (never the non-private estimate nor the clipping count).
        Attrs: ε, δ, n, h, kernel, sensitivity and its norm, the noise
        kernel, σ, ``noise_generator``, ``fp_safe`` and the budget spent.

    Raises
    ------
    CompatibilityError
        A mechanism that cannot release this spec.
    InputError
        draws or chains < 1; a seed with ``generator="opendp"``.
    BudgetExceededError
        From the ledger (nothing is drawn).
    """
    from ..errors import CompatibilityError
    from ..noise.mechanisms import Mechanism
    from ..noise.sampling import generator_attrs, resolve_generator, sampler_for

    spec = summary.spec
    if not isinstance(mechanism, Mechanism) or mechanism.family not in spec.mechanism_families:
        raise CompatibilityError(f"the {spec.name} summary is released with a {'/'.join(spec.mechanism_families)} "
                                 f"mechanism, got {type(mechanism).__name__}",
                                 "GaussianMechanism(epsilon, delta) for KDESpec / SobolevKDESpec, ICLP(epsilon) for "
                                 "ICLPKDESpec")
    chains, draws = int(chains), int(draws)
    if chains < 1 or draws < 1:
        raise InputError("draws and chains must be >= 1", "pass draws=1 for one release")
    k = chains * draws
    seeded = random_seed is not None
    if seeded:
        warnings.warn("seeded KDE release: anyone who learns the seed can regenerate the noise; private only while "
                      "the seed stays secret", SeededReleaseWarning, stacklevel=2)
    gen = resolve_generator(mechanism.law, generator, random_seed)
    cal = mechanism.calibrate(spec, bound, generator=gen)
    sampler = sampler_for(mechanism.law, spec.n_components, gen)
    from ..releasing.draw import check_public_sizes

    check_public_sizes(cal.scale, k, spec.n_components + int(np.prod(spec.grid.shape)))
    cost = mechanism.budget * k
    if ledger is not None:  # charged before any draw: a failure after this point never refunds
        ledger.spend(cost, label or f"{mechanism.family} KDE release ({spec.name})", dataset=dataset,
                     mechanism=mechanism.family, event=mechanism.privacy_event(cal, k))
    coef = sampler.draw(summary.coefficients, cal.scale, k, random_seed, calibration=cal)
    # release_scale: public post-processing (ICLPKDESpec(normalise=True) divides by its public mass); 1 otherwise
    density = (spec.basis.reconstruct(coef) * spec.release_scale).reshape((chains, draws) + spec.grid.shape)
    dims = spec.grid.dims
    coords = {dim: ax for dim, ax in zip(dims, spec.grid.axes)}
    post = xr.Dataset({"density": (("chain", "draw") + dims, density)},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws), **coords})
    post["density"].attrs["long_name"] = "private density estimate"
    const = spec.public_dataset().assign(noise_scale=(("component",), np.asarray(cal.scale, dtype=float)))
    const["noise_scale"].attrs["description"] = mechanism.law.describe_scale()
    attrs = {
        **spec.attrs(),
        **cal.sensitivity.attrs(),
        **({**spec.privacy_unit.attrs(), "neighbouring": spec.neighbouring()} if spec.privacy_unit is not None
           else {"privacy_unit": "record"}),
        **mechanism.attrs(),
        "epsilon": float(mechanism.epsilon),
        "delta": float(mechanism.delta),
        "sigma": float(cal.sigma),
        "noise_covariance": spec.noise_covariance_text(),
        "noise_seeded": int(seeded),
        "releases": k,
        "budget_spent_epsilon": float(cost.epsilon),
        "budget_spent_delta": float(cost.delta),
        "sampling": "exact forward draws, not MCMC",
        "source": spec.source,
    }
    attrs.update(generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta))
    if ledger is not None and hasattr(ledger, "attrs"):
        attrs.update(ledger.attrs())
    attrs = {key: (str(v) if isinstance(v, (list, tuple, dict)) or v is None else v) for key, v in attrs.items()}
    tree = xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: const})
    tree.attrs.update(attrs)
    tree.attrs.update(kde_attrs())  # the file says it is a density (schema.is_kde_release)
    return tree


def realised_delta(spec: KDESpec, mechanism: GaussianMechanism, x, x_prime) -> float:
    """Exact δ(ε) of the release between neighbours differing by ``x → x'`` (Gaussian privacy-loss distribution).

    The worst pair among the given ones, at the mechanism's own σ (``"pymc"`` calibration).
    """
    sigma = mechanism.calibrate(spec).sigma
    r = float(np.max(cameron_martin_difference(spec, x, x_prime)))
    return gaussian_delta(mechanism.epsilon, r, sigma)
