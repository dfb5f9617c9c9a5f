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

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import xarray as xr

from ..accounting.calibration import gaussian_delta
from ..errors import InputError
from ..noise.mechanisms.gaussian import GaussianMechanism
from ..summaries.base import Sensitivity, SummarySpec, public_n
from ..spaces.kernels import ProductKernel, gaussian_bump
from .grid import (DEFAULT_REL_TOL, CartesianGrid, axis_kernel, bandwidth_rule, gaussian_kde_values, grid_key,
                   product_eigenbasis)

KDE_SOURCE = "Hall, Rinaldo & Wasserman (2013), Section 4.1 (Delta), 4.1.1 (matrix H), Corollary 9"


def _check_kde_unit(unit):
    """A privacy unit a KDE can serve (:func:`fdp_ppl.kde.options.check_kde_unit`, the one check of Python and
    ``fdp-ppl kde``)."""
    from .options import check_kde_unit

    return check_kde_unit(unit)


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

            self.bins = bin_axes(grid.domain, h, self.bin_rel_error, grid.axes)  # refuses above MAX_BINS
        else:
            self.bins = None
        # public: computed once per (grid, h, kernel, rel_tol) and shared by every spec on it (grid.public_cached)
        self.basis = product_eigenbasis(grid, h, rel_tol, kernel=self.noise_kernel_kind,
                                        axis_variance=self.axis_variance)
        self._public_key = (type(self).__name__, grid_key(grid), self.noise_kernel_kind, tuple(h.tolist()),
                            float(rel_tol), float(self.axis_variance), n)
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
        """Noise covariance kernel ``K(x, y)``: the :class:`~fdp_ppl.spaces.kernels.ProductKernel` of
        :func:`~fdp_ppl.kde.grid.axis_kernel` factors; ``x`` (m, d), ``y`` (p, d) -> (m, p)."""
        kernel = ProductKernel(tuple(axis_kernel(self.noise_kernel_kind, h) for h in self.bandwidths),
                               factor_variance=self.axis_variance)
        return kernel.gram(np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float)))

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
    def _check_observations(self, observations, units=None, clip: bool = True) -> tuple[np.ndarray, int]:
        """Checked records (n, d) clipped to the box and the number clipped; ``clip=False``: the records as given
        (for a pass that clamps them itself: binning on a lattice spanning the box, snapping to the grid)."""
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
        bad = InputError("observations must be finite", "drop or impute missing values before release")
        if not clip:  # the finiteness check and the count of records outside the box in one pass
            from ._binning import count_outside

            moved = count_outside(obs, self.grid.domain[:, 0], self.grid.domain[:, 1])
            if moved < 0:
                raise bad
            return obs, moved
        if not np.all(np.isfinite(obs)):
            raise bad
        return self._clip(obs)

    def _clip(self, obs) -> tuple[np.ndarray, int]:
        """Finite records (m, d) clipped to the public box, and the number of records moved."""
        from ._binning import clip_to_box

        dom = self.grid.domain
        return clip_to_box(obs, dom[:, 0], dom[:, 1])

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
            f = gaussian_bump(self.grid.axes[k] - x[k], self.bandwidths[k])
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
        # binned: the lattice spans the box and binning clamps each record to it, the same as clipping (no copy)
        clipped, n_clipped = self._check_observations(observations, units, clip=self.bins is None)
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


def realised_delta(spec: KDESpec, mechanism: GaussianMechanism, x, x_prime) -> float:
    """Exact δ(ε) of the release between neighbours differing by ``x → x'`` (Gaussian privacy-loss distribution).

    The worst pair among the given ones, at the mechanism's own σ (``"pymc"`` calibration).
    """
    sigma = mechanism.calibrate(spec).sigma
    r = float(np.max(cameron_martin_difference(spec, x, x_prime)))
    return gaussian_delta(mechanism.epsilon, r, sigma)
