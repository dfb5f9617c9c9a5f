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

import numpy as np
import xarray as xr

from ..accounting.budget import PrivacyBudget
from ..accounting.calibration import gaussian_delta, gaussian_sigma
from ..errors import InputError, SeededReleaseWarning
from ..mechanisms.gaussian import GaussianMechanism
from ..sampling import seed_sequence
from ..schema import CONSTANT_DATA, POSTERIOR
from ..spaces.eigenbasis import _sign_convention
from ..summaries.base import Sensitivity

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
        """Quadrature ``∫ f`` over the box; ``values`` shape (..., *shape)."""
        out = np.asarray(values, dtype=float)
        for k in reversed(range(self.d)):
            out = out @ self.weights[k]
        return out


def gaussian_kernel_1d(x, y, h: float) -> np.ndarray:
    """``exp(-(x − y)²/(2h²))``, shape (len(x), len(y)) (unnormalised)."""
    x = np.asarray(x, dtype=float)[:, None]
    y = np.asarray(y, dtype=float)[None, :]
    return np.exp(-0.5 * ((x - y) / h) ** 2)


class ProductEigenbasis:
    """Eigenbasis of a product Gaussian kernel on a :class:`CartesianGrid` (Kronecker of 1-D eigenpairs).

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
        Relative eigenvalue cut-off (no eigenvalue clipping: smaller pairs are dropped).
    """

    def __init__(self, grid: CartesianGrid, bandwidths, rel_tol: float = DEFAULT_REL_TOL):
        self.grid = grid
        self.bandwidths = np.asarray(bandwidths, dtype=float)
        self.rel_tol = float(rel_tol)
        self.axis_values, self.axis_functions = [], []
        for a, w, h in zip(grid.axes, grid.weights, self.bandwidths):
            sw = np.sqrt(w)
            lam, v = np.linalg.eigh(sw[:, None] * gaussian_kernel_1d(a, a, h) * sw[None, :])
            order = np.argsort(lam)[::-1]
            lam, v = lam[order], v[:, order]
            keep = lam > rel_tol * lam[0]
            v = v[:, keep]
            self.axis_values.append(lam[keep])
            self.axis_functions.append(v * _sign_convention(v) / sw[:, None])
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
        """``c_j = ∫ f e_j`` (quadrature); ``values`` (..., *grid.shape) -> (..., J)."""
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
        """``Σ_j c_j e_j`` on the grid; (..., J) -> (..., *grid.shape)."""
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

    def norm_cameron_martin(self, coefficients) -> np.ndarray:
        """``(Σ_j c_j²/λ_j)^{1/2}``, shape (...)."""
        c = np.asarray(coefficients, dtype=float)
        return np.sqrt(np.sum(c ** 2 / self.eigenvalues, axis=-1))


def gaussian_kde_values(points, observations, bandwidths) -> np.ndarray:
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
    """
    obs = np.asarray(observations, dtype=float)
    obs = obs[:, None] if obs.ndim == 1 else obs
    h = np.asarray(bandwidths, dtype=float)
    n, d = obs.shape
    factors = [gaussian_kernel_1d(points[k], obs[:, k], h[k]) for k in range(d)]  # (K_k, n)
    letters = "abcdefgh"[:d]
    expr = ",".join(f"{letters[k]}z" for k in range(d)) + "->" + letters
    return np.einsum(expr, *factors) / (n * (2 * np.pi) ** (d / 2) * np.prod(h))


def bandwidth_rule(n: int, d: int = 1, scale=1.0, constant: float = 1.06) -> np.ndarray:
    """Public bandwidth ``h_k = constant · scale_k · n^{-1/(4+d)}`` (Hall §4.1: ``h ≍ n^{-1/(4+d)}``).

    ``scale`` is a public spread per dimension (never computed from the data
    here; the private IQR rule of Hall §4.1.2 is not implemented yet).
    Returns shape (d,).
    """
    if n < 1 or d < 1:
        raise InputError("n and d must be positive", "pass the public sample size and dimension")
    return constant * np.broadcast_to(np.asarray(scale, dtype=float), (d,)) * float(n) ** (-1.0 / (4 + d))


class KDESpec:
    """Public spec of a Gaussian-kernel KDE on a Cartesian grid.

    Parameters
    ----------
    grid : CartesianGrid
        Public evaluation grid; its box is the public domain (observations
        are clipped to it).
    bandwidth : float or array of shape (d,), or None
        ``h`` (isotropic) or the diagonal of ``H^{1/2}`` (per-axis ``h_k``).
        None: :func:`bandwidth_rule` with the domain width / 4 as public scale.
    n : int
        Public number of observations.
    rel_tol : float
        Eigenvalue cut-off of the noise-kernel eigenbasis.

    Notes
    -----
    Noise kernel: ``K(x, y) = exp(-½ (x − y)ᵀ H^{-1} (x − y))`` (same bandwidth).
    Sensitivity (Cameron–Martin, tight = RKHS bound):
    ``Δ = √2 / (n (2π)^{d/2} |H|^{1/2})`` (Hall et al. 2013, §4.1 and §4.1.1).
    """

    kind = "kde"
    kernel = "gaussian"

    def __init__(self, *, grid: CartesianGrid, bandwidth=None, n: int, rel_tol: float = DEFAULT_REL_TOL):
        if int(n) < 1:
            raise InputError(f"n must be positive (got {n})", "pass the public number of observations")
        self.grid = grid
        self.n = int(n)
        if bandwidth is None:
            bandwidth = bandwidth_rule(self.n, grid.d, np.diff(grid.domain, axis=1)[:, 0] / 4)
        h = np.broadcast_to(np.asarray(bandwidth, dtype=float), (grid.d,)).copy()
        if np.any(h <= 0) or not np.all(np.isfinite(h)):
            raise InputError(f"bandwidths must be positive and finite (got {h})", "pass h > 0")
        self.bandwidths = h
        self.basis = ProductEigenbasis(grid, h, rel_tol)

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

    def sensitivity(self, norm: str = "cameron-martin", bound: str = "tight") -> Sensitivity:
        """``Δ = √2 / (n (2π)^{d/2} Π h_k)`` in the Cameron–Martin norm.

        Raises
        ------
        InputError
            Another norm (FRL / ICLP KDE are not implemented yet).
        """
        if norm != "cameron-martin":
            raise InputError(f"the Gaussian KDE spec has no {norm!r} sensitivity yet",
                             "use norm='cameron-martin' (GaussianMechanism)")
        return Sensitivity(value=float(np.sqrt(2.0) * self.normaliser), norm=norm, bound=bound,
                           assumptions="any observations (clipping not needed for privacy); h fixed a priori",
                           source=KDE_SOURCE)

    def noise_kernel(self, x, y) -> np.ndarray:
        """Noise covariance kernel ``K(x, y)``; ``x`` (m, d), ``y`` (p, d) -> (m, p)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        y = np.atleast_2d(np.asarray(y, dtype=float))
        z = (x[:, None, :] - y[None, :, :]) / self.bandwidths
        return np.exp(-0.5 * np.sum(z ** 2, axis=-1))

    def attrs(self) -> dict:
        out = {
            "summary": "kde",
            "kernel": "gaussian",
            "n": self.n,
            "d": self.d,
            "bandwidth": [float(v) for v in self.bandwidths],
            "h": float(self.bandwidths[0]) if np.allclose(self.bandwidths, self.bandwidths[0]) else "diagonal H",
            "domain": [float(v) for v in self.grid.domain.ravel()],
            "grid_shape": list(self.grid.shape),
            "noise_kernel": "exp(-0.5 (x-y)^T H^-1 (x-y)), H = diag(bandwidth^2)",
            "n_components": self.n_components,
            "eigen_rel_tol": self.basis.rel_tol,
        }
        return out

    def fit(self, observations) -> "KDESummary":
        """Clip ``observations`` (n, d) or (n,) to the public domain and compute the KDE.

        Raises
        ------
        InputError
            Wrong shape, non-finite values or a count different from the public n.
        """
        obs = np.asarray(observations, dtype=float)
        obs = obs[:, None] if obs.ndim == 1 else obs
        if obs.ndim != 2 or obs.shape[1] != self.d:
            raise InputError(f"observations must have shape (n, {self.d}) (got {obs.shape})", "reshape the data")
        if obs.shape[0] != self.n:
            raise InputError(f"the spec says n = {self.n} but {obs.shape[0]} observations were given",
                             "build the spec with the public n")
        if not np.all(np.isfinite(obs)):
            raise InputError("observations must be finite", "drop or impute missing values before release")
        dom = self.grid.domain
        clipped = np.clip(obs, dom[:, 0], dom[:, 1])
        n_clipped = int(np.sum(np.any(clipped != obs, axis=1)))
        values = gaussian_kde_values(self.grid.axes, clipped, self.bandwidths)
        return KDESummary(self, self.basis.coefficients(values), values, n_clipped)


@dataclass(eq=False)
class KDESummary:
    """A fitted KDE: coefficients (J,) in the spec's eigenbasis and the grid values (data holder only)."""

    spec: KDESpec
    coefficients: np.ndarray
    values: np.ndarray
    n_clipped: int

    @property
    def density(self) -> np.ndarray:
        """The estimate projected on the retained eigenpairs (what the release centres on)."""
        return self.spec.basis.reconstruct(self.coefficients)

    def __getattr__(self, name):
        if name == "spec":
            raise AttributeError(name)
        return getattr(self.spec, name)


def cameron_martin_difference(spec: KDESpec, x, x_prime) -> np.ndarray:
    """Discrete Cameron–Martin norm of ``f_D − f_{D'}`` when observation ``x`` is replaced by ``x'``.

    Parameters
    ----------
    x, x_prime : ndarray, shape (m, d)
        Pairs of replaced observations.

    Returns
    -------
    ndarray, shape (m,)
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    xp = np.atleast_2d(np.asarray(x_prime, dtype=float))
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        diff = spec.normaliser * (_bump(spec, x[i]) - _bump(spec, xp[i]))
        out[i] = spec.basis.norm_cameron_martin(spec.basis.coefficients(diff))
    return out


def _bump(spec: KDESpec, centre) -> np.ndarray:
    vals = None
    for k in range(spec.d):
        f = np.exp(-0.5 * ((spec.grid.axes[k] - centre[k]) / spec.bandwidths[k]) ** 2)
        vals = f if vals is None else np.multiply.outer(vals, f)
    return vals


def release_kde(summary: KDESummary, mechanism: GaussianMechanism, *, draws: int = 1, chains: int = 1,
                random_seed=None, ledger=None, label: str = "kde") -> xr.DataTree:
    """Release a fitted KDE with Gaussian-process noise (Hall et al. 2013, Corollary 9, §5 batch).

    Coefficient ``j`` of the release is ``N(c_j, σ² λ_j)`` with
    ``σ = mechanism σ(Δ)`` and ``Δ`` the spec's sensitivity; on the grid the
    noise is ``GP(0, σ² K)`` on the retained eigenpairs.

    Parameters
    ----------
    summary : KDESummary
    mechanism : GaussianMechanism
    draws, chains : int
        Independent releases, arranged (chain, draw). One draw is one
        publication; the ledger is charged ``chains × draws × (ε, δ)`` (basic
        composition) before any draw.
    random_seed : None or int or SeedSequence
        None: fresh OS entropy (real releases). Anything else warns
        :class:`~fdp_ppl.errors.SeededReleaseWarning`.
    ledger : PrivacyLedger or FileLedger, optional
        Charged before sampling.

    Returns
    -------
    xarray.DataTree
        ``posterior/density`` (chain, draw, x) or (chain, draw, x1, x2);
        ``constant_data``: the grid axes (coords), quadrature weights,
        eigenvalues and noise sd per coefficient (never the non-private
        estimate nor the clipping count). Attrs: ε, δ, n, h, kernel,
        sensitivity and its norm, the noise kernel and σ.

    Raises
    ------
    InputError
        A mechanism other than :class:`GaussianMechanism`.
    BudgetExceededError
        From the ledger.
    """
    if not isinstance(mechanism, GaussianMechanism):
        raise InputError("the Gaussian KDE is released with GaussianMechanism",
                         "use fdp_ppl.mechanisms.GaussianMechanism(epsilon, delta)")
    spec = summary.spec
    sens = spec.sensitivity("cameron-martin", "tight")
    sigma = float(gaussian_sigma(mechanism.epsilon, mechanism.delta, sens.value, mechanism.calibration))
    scale = sigma * np.sqrt(spec.eigenvalues)
    k = int(chains) * int(draws)
    if ledger is not None:
        ledger.spend(PrivacyBudget(k * mechanism.epsilon, k * mechanism.delta), label=label)
    if random_seed is not None:
        warnings.warn("seeded KDE release: private only while the seed stays secret", SeededReleaseWarning,
                      stacklevel=2)
    rng = np.random.default_rng(seed_sequence(random_seed))
    coef = summary.coefficients + scale * rng.standard_normal((k, spec.n_components))
    density = spec.basis.reconstruct(coef).reshape((int(chains), int(draws)) + spec.grid.shape)
    dims = spec.grid.dims
    coords = {dim: ax for dim, ax in zip(dims, spec.grid.axes)}
    post = xr.Dataset({"density": (("chain", "draw") + dims, density)},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws), **coords})
    const = xr.Dataset(
        {**{f"weights_{dim}": ((dim,), w) for dim, w in zip(dims, spec.grid.weights)},
         "eigenvalues": (("component",), spec.eigenvalues),
         "noise_scale": (("component",), scale)},
        coords=coords)
    attrs = {
        **spec.attrs(),
        **sens.attrs(),
        "mechanism": "gaussian",
        "noise_law": mechanism.noise_law,
        "calibration": mechanism.calibration,
        "epsilon": float(mechanism.epsilon),
        "delta": float(mechanism.delta),
        "sigma": sigma,
        "noise_covariance": "sigma^2 K(x, y) on the retained eigenpairs",
        "noise_seeded": int(random_seed is not None),
        "noise_generator": "numpy",
        "fp_safe": 0,  # continuous numpy Gaussian draws; no discrete/OpenDP sampler for this path yet
        "releases": k,
        "source": KDE_SOURCE,
    }
    attrs = {key: (str(v) if isinstance(v, (list, tuple)) else v) for key, v in attrs.items()}
    tree = xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: const})
    tree.attrs.update(attrs)
    return tree


def realised_delta(spec: KDESpec, mechanism: GaussianMechanism, x, x_prime) -> float:
    """Exact δ(ε) of the release between neighbours differing by ``x → x'`` (Gaussian privacy-loss distribution)."""
    sens = spec.sensitivity().value
    sigma = gaussian_sigma(mechanism.epsilon, mechanism.delta, sens, mechanism.calibration)
    r = float(np.max(cameron_martin_difference(spec, x, x_prime)))
    return gaussian_delta(mechanism.epsilon, r, sigma)
