"""FRL and Bernstein KDE baselines: d = 1 through the mean-curve specs, d = 2 as grid KDE specs.

A Gaussian-kernel KDE is the mean of the records' kernel bumps,
``f_D = (1/n) Σ_i φ_h(· − x_i)`` with ``φ_h(u) = exp(-u²/(2h²))/(√(2π) h)``.
Each observation becomes one "curve" ``φ_h(· − x_i)`` on the public grid, and
the existing specs release the mean:

* FRL (:class:`~fdp_ppl.summaries.FRLSpec`, i.i.d. Laplace on the first M
  coefficients of the Gaussian-kernel eigenbasis of bandwidth h; Lin &
  Reimherr 2026, Theorem 12.1) with the public L² bound
  ``τ = (2√π h L)^{-1/2}`` (``∫φ_h² = 1/(2√π h)``; the grid measure has mass 1
  on a domain of length L);
* Bernstein (:class:`~fdp_ppl.summaries.BernsteinSpec`; Aldà & Rubinstein
  2017) with the public sup bound ``τ_∞ = 1/(√(2π) h)``.

Both bounds are properties of the kernel, never of the data; the specs clip to
them anyway, so a quadrature norm slightly above τ only shrinks that bump.

On a 2-D (or any) :class:`~fdp_ppl.kde.CartesianGrid` the baselines are KDE
specs released by :func:`fdp_ppl.release` (posterior ``density``
(chain, draw, x1, x2)) with the package's :class:`~fdp_ppl.noise.mechanisms.FRL` and
:class:`~fdp_ppl.noise.mechanisms.Bernstein` mechanisms (Lin & Reimherr 2026, §6.2,
Figure 4; ``specs/iclp.md`` §1.7, §3.3):

* :class:`FRLKDESpec`: the first M coefficients of the tensor (Kronecker)
  eigenbasis of the Gaussian product kernel of bandwidth h (orthonormal in the
  grid's quadrature, :class:`~fdp_ppl.kde.ProductEigenbasis`), i.i.d.
  ``Laplace(0, Δ/ε)``;
* :class:`BernsteinKDESpec`: the KDE on the ``(k + 1)^d`` lattice
  ``lo + (hi − lo) ν/k`` of the box, i.i.d. ``Laplace(0, Δ/ε)`` on the lattice
  values, reconstructed with the tensor Bernstein basis (Aldà & Rubinstein 2017;
  diffpriv's ``DPMechBernstein``).

Like :class:`~fdp_ppl.kde.ICLPKDESpec`, each record is clipped to the box and
snapped to its nearest grid node (a public, record-wise map); one record
contributes ``g_a = φ_H(· − a)/n`` (``φ_H`` the product Gaussian density) for a
node ``a``. Replacing a record moves the released vector by ``v(a) − v(b)``, so
the exact global ℓ¹ sensitivity is ``max_{a, b nodes} ‖v(a) − v(b)‖₁``
(``bound="tight"``, attained). The paper's bounds are also available:
FRL ``2Mτ/n`` (Theorem 12.1, τ = the largest grid L² norm of one bump) and
``2τ√M/n`` (its Cauchy–Schwarz form, ``specs/iclp.md`` §2.2); Bernstein
``(k + 1)^d 2τ_∞/n`` with ``τ_∞ = (2π)^{-d/2}/Π h_k`` the sup of one bump
(diffpriv's calibration, §1.7; ``(k + 1)^d τ_∞/n`` as the bumps are ≥ 0). Every bound is ≥ the
tight one.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..errors import InputError
from ..spaces import Grid, eigenbasis
from ..spaces.kernels import Gaussian, gaussian_bump
from ..summaries import BernsteinSpec, FRLSpec
from ..summaries.base import Sensitivity
from ..summaries.bernstein import bernstein_design
from .gaussian import KDESpec, KDESummary
from .grid import DEFAULT_REL_TOL, CartesianGrid, gaussian_kde_values, max_pairwise_l1

BASELINE_2D_SOURCE = ("Lin & Reimherr (2026), Section 6.2, Figure 4; FRL: Theorem 12.1; Bernstein: Alda & "
                      "Rubinstein (2017) via diffpriv; specs/iclp.md 1.7, 3.3")


def kde_bumps(observations, points, h: float, domain=None) -> np.ndarray:
    """Kernel bumps ``φ_h(t_k − x_i)`` on ``points`` (original units); shape (n, K).

    Observations are clipped to ``domain`` (default: the grid's ends) first.

    Raises
    ------
    InputError
        Non-finite observations or h <= 0.
    """
    x = np.asarray(observations, dtype=float).ravel()
    if not np.all(np.isfinite(x)) or not h > 0:
        raise InputError("observations must be finite and h > 0", "clean the data; pass a public h")
    pts = np.asarray(points, dtype=float)
    lo, hi = (pts[0], pts[-1]) if domain is None else domain
    x = np.clip(x, lo, hi)
    return gaussian_bump(pts[None, :] - x[:, None], h, density=True)


def frl_kde_spec(points, h: float, n: int, M: int | None = None, privacy_unit=None) -> FRLSpec:
    """FRL spec for a 1-D Gaussian KDE on ``points`` (original units, domain = their ends); the bumps of
    :func:`kde_bumps` are its records (a ``privacy_unit`` combines or keeps a unit's bumps)."""
    grid = Grid.from_points(points)
    length = grid.upper - grid.lower
    basis = eigenbasis(Gaussian.from_bandwidth(h / length), grid)  # public: cached per (kernel, grid)
    tau = 1.0 / np.sqrt(2 * np.sqrt(np.pi) * h * length)
    return FRLSpec(basis=basis, tau=float(tau), n=int(n), M=M, privacy_unit=privacy_unit)


def bernstein_kde_spec(points, h: float, n: int, k: int = 20, privacy_unit=None) -> BernsteinSpec:
    """Bernstein spec for a 1-D Gaussian KDE on ``points`` (original units)."""
    return BernsteinSpec(lattice_grid=Grid.from_points(points), tau=float(1.0 / (np.sqrt(2 * np.pi) * h)),
                         n=int(n), k=int(k), privacy_unit=privacy_unit)


# ----------------------------------------------------------------------------- grid (2-D) baselines
class _SnappedGridKDE(KDESpec):
    """Shared part of the grid baselines: records clipped to the box, snapped to nodes, one row per node."""

    noise_kernel_kind = "gaussian"
    default_norm: ClassVar[str] = "l1"
    norms: ClassVar[tuple] = ("l1",)
    source: ClassVar[str] = BASELINE_2D_SOURCE
    _bounds: ClassVar[tuple] = ("tight",)

    def _nodes(self) -> np.ndarray:
        """Every grid node's index, shape (Π K_k, d), C order."""
        return np.stack(np.meshgrid(*[np.arange(k) for k in self.grid.shape], indexing="ij"), -1).reshape(-1, self.d)

    def snap(self, points) -> np.ndarray:
        """Nearest grid-node indices of ``points`` (m, d) (already in the box), shape (m, d)."""
        pts = np.atleast_2d(np.asarray(points, dtype=float))
        return np.stack([np.abs(pts[:, k, None] - a[None, :]).argmin(1) for k, a in enumerate(self.grid.axes)], -1)

    def _snapped(self, observations, units=None) -> tuple[np.ndarray, int]:
        clipped, n_clipped = self._check_observations(observations, units)
        idx = self.snap(clipped)
        return np.stack([a[idx[:, k]] for k, a in enumerate(self.grid.axes)], -1), n_clipped

    def _node_vectors(self) -> np.ndarray:
        """The released vector ``v(a)`` of one record at every node a, shape (Π K_k, J)."""
        raise NotImplementedError

    def _exact_delta(self) -> float:
        if getattr(self, "_delta", None) is None:
            self._delta = max_pairwise_l1(self._node_vectors(), block=32)
        return self._delta

    def record_coefficients(self, x) -> np.ndarray:
        """Released vector (J,) of one record ``x`` (d,) (clipped, snapped)."""
        x = np.clip(np.asarray(x, dtype=float), self.grid.domain[:, 0], self.grid.domain[:, 1])
        node = self.snap(x[None, :])[0]
        return self._node_vectors()[int(np.ravel_multi_index(tuple(node), self.grid.shape))]

    def _sensitivity(self, value, bound, src) -> Sensitivity:
        return Sensitivity(value=float(value), norm="l1", bound=bound,
                           assumptions="records clipped to the public box and snapped to the nearest grid node; "
                                       "h, grid and the truncation fixed a priori",
                           source=f"{self.source}; {src}")

    def noise_covariance_text(self) -> str:
        return "i.i.d. Laplace(0, sensitivity/epsilon) on every released component"


def _truncated_product_basis(grid: CartesianGrid, h, M: int, rel_tol: float):
    import copy

    from .grid import product_eigenbasis

    # the public eigenbasis cached per configuration; a shallow copy is truncated (its shared arrays read-only)
    basis = copy.copy(product_eigenbasis(grid, h, rel_tol, kernel="gaussian"))
    if isinstance(M, bool) or not float(M).is_integer() or not 1 <= int(M) <= basis.size:
        raise InputError(f"M must lie in 1..{basis.size} (retained tensor eigenpairs), got {M!r}",
                         "pass a public M, e.g. floor(n^(1/3))")
    return basis.truncate(int(M))


class FRLKDESpec(_SnappedGridKDE):
    """FRL Gaussian KDE on a Cartesian grid (d = 1 or 2): Laplace on the first M tensor-eigenbasis coefficients.

    Parameters
    ----------
    grid : CartesianGrid
        Public grid; its box is the public domain (records clipped to it and snapped to the nearest node).
    bandwidth : float or array (d,), or None
        Estimator bandwidth ``h`` (data units), also the bandwidth of the Gaussian product kernel whose
        eigenbasis is the FRL basis (as in 1-D); None: :func:`~fdp_ppl.kde.bandwidth_rule`.
    n : int
        Public number of records.
    M : int, optional
        Number of coefficients (public); default ``floor(n^{1/3})``, the upper end of the PSS range, at most the
        retained tensor eigenpairs (as :class:`~fdp_ppl.summaries.FRLSpec`).

    Raises
    ------
    InputError
        M outside ``1..J`` (retained eigenpairs), n < 2, h not finite and > 0.

    Notes
    -----
    Estimate ``f̂ = Σ_{j<=M} <f_D, e_j>_w e_j`` with ``f_D`` the Gaussian KDE (density units, 1/unit^d) of the
    snapped records and ``e_j`` the product eigenfunctions of ``Π_k exp(-(x_k − y_k)²/(2h_k²))`` sorted by
    eigenvalue. Sensitivity bounds (ℓ¹ of the M coefficients): ``"tight"`` exact over node pairs;
    ``"cs"`` ``2τ√M/n``; ``"paper"`` ``2Mτ/n`` (Theorem 12.1).
    """

    name: ClassVar[str] = "kde-frl"
    kernel = "gaussian"
    noise_kernel_formula = "none (FRL basis: eigenfunctions of exp(-0.5 (x-y)^T H^-1 (x-y)))"
    mechanism_families: ClassVar[tuple] = ("frl",)
    _bounds: ClassVar[tuple] = ("tight", "cs", "paper")

    def __init__(self, *, grid: CartesianGrid, bandwidth=None, n: int, M: int | None = None,
                 rel_tol: float = DEFAULT_REL_TOL, privacy_unit=None):
        self._delta = None
        super().__init__(grid=grid, bandwidth=bandwidth, n=n, rel_tol=rel_tol, privacy_unit=privacy_unit)
        default = int(np.floor(self.n ** (1.0 / 3.0) + 1e-9))
        self.M = min(default, self.basis.size) if M is None else M  # the default: at most the retained pairs
        self.basis = _truncated_product_basis(grid, self.bandwidths, self.M, rel_tol)
        self.M = int(self.M)
        object.__setattr__(self, "tau", self._record_l2())

    @property
    def params(self) -> dict:
        return {"M": self.M}

    def _record_l2(self) -> float:
        """τ: the largest grid L² norm of one record's bump ``n g_a`` over nodes a (public)."""
        per_axis = []  # separable: ‖g_a‖² = Π_k ‖g_{a_k}‖², maximised axis by axis
        for k in range(self.d):
            ax, w, h = self.grid.axes[k], self.grid.weights[k], self.bandwidths[k]
            g = gaussian_bump(ax[None, :] - ax[:, None], h, density=True)
            per_axis.append(float(np.max((g ** 2) @ w)))
        return float(np.sqrt(np.prod(per_axis)))

    def _node_vectors(self) -> np.ndarray:
        if getattr(self, "_rows", None) is None:
            vals = np.stack([self.record_values(np.array([a[i] for a, i in zip(self.grid.axes, node)]))
                             for node in self._nodes()])
            self._rows = self.basis.coefficients(vals)
        return self._rows

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """ℓ¹ sensitivity of the M coefficients.

        Parameters
        ----------
        norm : {"l1"}
        bound : {"tight", "cs", "paper"}
            exact over node pairs; ``2τ√M/n``; ``2Mτ/n`` (Theorem 12.1).

        Raises
        ------
        InputError
            Another norm or bound.
        """
        if (norm or "l1") != "l1" or bound not in self._bounds:
            raise InputError(f"the FRL KDE has an l1 sensitivity with bound in {self._bounds} (got {norm!r}, "
                             f"{bound!r})", "use the FRL mechanism")
        if bound == "tight":
            return self._sensitivity(self._exact_delta(), bound, "exact over pairs of grid nodes")
        if bound == "cs":
            return self._sensitivity(2 * self.tau * np.sqrt(self.M) / self.n, bound, "2 tau sqrt(M)/n")
        return self._sensitivity(2 * self.M * self.tau / self.n, bound, "Theorem 12.1, 2 M tau/n")

    def fit(self, observations, units=None) -> KDESummary:
        """Clip, snap and project the Gaussian KDE on the first M coefficients (non-private); ``units`` with a
        privacy unit (:meth:`KDESpec.fit`).

        Raises
        ------
        InputError
            Wrong shape, non-finite values or a count different from the public n.
        """
        pts, n_clipped = self._snapped(observations, units)
        pts, weights = self._unit_select(pts, units)
        values = gaussian_kde_values(self.grid.axes, pts, self.bandwidths, weights)
        coef = self.basis.coefficients(values)
        return KDESummary(self, coef, self.basis.reconstruct(coef), n_clipped)


class TensorBernsteinBasis:
    """Tensor Bernstein basis ``Π_k B_{ν_k,k}((x_k − lo_k)/(hi_k − lo_k))`` on a Cartesian grid.

    ``reconstruct`` maps ``(k + 1)^d`` lattice values (C order over ν) to grid values; ``coefficients`` is the
    lattice evaluation (done by the spec, not a projection).
    """

    def __init__(self, grid: CartesianGrid, k: int):
        self.grid, self.k = grid, int(k)
        dom = grid.domain
        self.lattice = [lo + (hi - lo) * np.arange(self.k + 1) / self.k for lo, hi in dom]
        self.designs = [bernstein_design((ax - lo) / (hi - lo), self.k) for ax, (lo, hi) in zip(grid.axes, dom)]
        self.eigenvalues = np.ones((self.k + 1) ** grid.d)  # no eigenstructure: unit placeholders
        self.rel_tol = 0.0  # no cut-off: every lattice value is released

    @property
    def size(self) -> int:
        return (self.k + 1) ** self.grid.d

    def reconstruct(self, coefficients) -> np.ndarray:
        """``Σ_ν y_ν Π_k B_{ν_k}`` on the grid; ``(..., (k+1)^d) -> (..., *grid.shape)``."""
        c = np.asarray(coefficients, dtype=float)
        d = self.grid.d
        out = c.reshape(c.shape[:-1] + (self.k + 1,) * d)
        for j in range(d):
            axis = out.ndim - d + j
            out = np.moveaxis(np.moveaxis(out, axis, -1) @ self.designs[j].T, -1, axis)
        return out


class BernsteinKDESpec(_SnappedGridKDE, BernsteinSpec):
    """Bernstein Gaussian KDE on a Cartesian grid (d = 1 or 2): Laplace on the ``(k + 1)^d`` lattice values.

    Parameters
    ----------
    grid : CartesianGrid
        Public grid; its box is the public domain, the Bernstein lattice is ``lo + (hi − lo) ν/k``.
    bandwidth : float or array (d,), or None
        ``h`` (data units); None: :func:`~fdp_ppl.kde.bandwidth_rule`.
    n : int
        Public number of records.
    k : int
        Lattice number (``k + 1`` points per axis); the paper's Figure 4 uses 5 and 10.

    Raises
    ------
    InputError
        k < 1, n < 2, h not finite and > 0.

    Notes
    -----
    Released vector: the Gaussian KDE of the snapped records at the lattice points (density units). Sensitivity
    bounds (ℓ¹): ``"tight"`` exact over node pairs; ``"sup"`` and ``"paper"`` from the sup norm
    ``τ_∞ = (2π)^{-d/2}/Π h_k`` of one bump (:meth:`sensitivity`). A subclass of :class:`~fdp_ppl.summaries.BernsteinSpec` so the package's
    :class:`~fdp_ppl.noise.mechanisms.Bernstein` mechanism accepts it.
    """

    name: ClassVar[str] = "kde-bernstein"
    kernel = "gaussian"
    noise_kernel_formula = "none (tensor Bernstein basis on the lattice lo + (hi - lo) nu/k)"
    mechanism_families: ClassVar[tuple] = ("bernstein",)
    _bounds: ClassVar[tuple] = ("tight", "sup", "paper")

    def __init__(self, *, grid: CartesianGrid, bandwidth=None, n: int, k: int = 10, privacy_unit=None):
        if isinstance(k, bool) or not float(k).is_integer() or int(k) < 1:
            raise InputError(f"k (lattice number) must be an integer >= 1, got {k!r}", "pass e.g. k=10")
        self._delta = None
        super().__init__(grid=grid, bandwidth=bandwidth, n=n, rel_tol=DEFAULT_REL_TOL, privacy_unit=privacy_unit)
        object.__setattr__(self, "k", int(k))
        self.basis = TensorBernsteinBasis(grid, int(k))
        object.__setattr__(self, "tau", float(self.n * self.normaliser))  # τ_∞, sup of one bump

    # BernsteinSpec's properties read lattice_grid; the grid spec overrides them
    @property
    def grid(self) -> CartesianGrid:
        return self._grid

    @property
    def n_components(self) -> int:
        return self.basis.size

    @property
    def eigenvalues(self) -> np.ndarray:
        return self.basis.eigenvalues

    @property
    def params(self) -> dict:
        return {"lattice_k": self.k}

    def public_dataset(self):
        out = super().public_dataset().drop_vars("eigenvalues")
        for j, lat in enumerate(self.basis.lattice):
            out[f"lattice_{self.grid.dims[j]}"] = ((f"lattice_{j}",), lat)
        return out

    def basis_attrs(self) -> dict:
        return {"basis": "tensor bernstein", "lattice_k": self.k}

    def lattice_values(self, points, weights=None) -> np.ndarray:
        """Gaussian KDE of ``points`` (m, d) (no clipping, no snapping; ``weights`` as in
        :func:`~fdp_ppl.kde.grid.gaussian_kde_values`) at the lattice, C order; shape ((k+1)^d,)."""
        return gaussian_kde_values(self.basis.lattice, points, self.bandwidths, weights).ravel()

    def _node_vectors(self) -> np.ndarray:
        if getattr(self, "_rows", None) is None:
            per = []
            for ax, lat, h in zip(self.grid.axes, self.basis.lattice, self.bandwidths):
                per.append(gaussian_bump(lat[None, :] - ax[:, None], h))  # (K_k, k+1)
            rows = per[0]
            for f in per[1:]:
                rows = (rows[:, None, :, None] * f[None, :, None, :]).reshape(rows.shape[0] * f.shape[0], -1)
            self._rows = rows * self.normaliser
        return self._rows

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """ℓ¹ sensitivity of the lattice values.

        Parameters
        ----------
        norm : {"l1"}
        bound : {"tight", "sup", "paper"}
            exact over node pairs; ``(k + 1)^d τ_∞/n`` (the bumps are ≥ 0); ``(k + 1)^d 2τ_∞/n`` (diffpriv's
            ``Δ_∞ = 2τ_∞/n``, ``specs/iclp.md`` §1.7, the calibration of the 1-D
            :class:`~fdp_ppl.summaries.BernsteinSpec`).

        Raises
        ------
        InputError
            Another norm or bound.
        """
        if (norm or "l1") != "l1" or bound not in self._bounds:
            raise InputError(f"the Bernstein KDE has an l1 sensitivity with bound in {self._bounds} (got {norm!r}, "
                             f"{bound!r})", "use the Bernstein mechanism")
        if bound == "tight":
            return self._sensitivity(self._exact_delta(), bound, "exact over pairs of grid nodes")
        if bound == "sup":
            return self._sensitivity(self.n_components * self.tau / self.n, bound,
                                     "(k+1)^d tau_inf/n (bumps >= 0, so each lattice value moves <= tau_inf/n)")
        return self._sensitivity(self.n_components * 2 * self.tau / self.n, bound,
                                 "diffpriv DPMechBernstein, (k+1)^d 2 tau_inf/n")

    def fit(self, observations, units=None) -> KDESummary:
        """Clip, snap, evaluate the KDE on the lattice and reconstruct the Bernstein polynomial (non-private);
        ``units`` with a privacy unit (:meth:`KDESpec.fit`).

        Raises
        ------
        InputError
            Wrong shape, non-finite values or a count different from the public n.
        """
        pts, n_clipped = self._snapped(observations, units)
        pts, weights = self._unit_select(pts, units)
        coef = self.lattice_values(pts, weights)
        return KDESummary(self, coef, self.basis.reconstruct(coef), n_clipped)

    def __repr__(self) -> str:
        return f"BernsteinKDESpec(n={self.n}, h={[round(float(v), 4) for v in self.bandwidths]}, grid={self.grid.shape}, k={self.k})"


def bumps_density(release, points, h: float, mechanism: str, domain):
    """A 1-D density release from the release of its kernel bumps as a mean (FRL / Bernstein baselines).

    Post-processing of a public release: the released mean of the bumps ``φ_h(t_k − x_i)`` (Lin & Reimherr
    2026, §4.3: a KDE is the mean of its bumps) is the released density on ``points``; the file keeps the
    mean release's attributes and says it is a density (:func:`~fdp_ppl.releasing.schema.is_kde_release`).

    Parameters
    ----------
    release : xr.DataTree
        ``fp.release`` of :func:`frl_kde_spec` or :func:`bernstein_kde_spec`'s fit of :func:`kde_bumps`.
    points : ndarray (K,)
        The grid of the bumps, in data units (the ``x`` coordinate).
    h : float
        The public bandwidth.
    mechanism : {"frl", "bernstein"}
    domain : (lo, hi)

    Returns
    -------
    xr.DataTree
        ``posterior/density`` (chain, draw, x); ``constant_data/noise_scale`` (component).
    """
    import xarray as xr

    from ..releasing.schema import kde_attrs

    pts = np.asarray(points, dtype=float)
    curve = np.asarray(release["posterior"]["curve"].values)
    post = xr.Dataset({"density": (("chain", "draw", "x"), curve)},
                      coords={"chain": np.arange(curve.shape[0]), "draw": np.arange(curve.shape[1]), "x": pts})
    post.attrs.update(release["posterior"].attrs)
    const = xr.Dataset({"noise_scale": (("component",), release["constant_data"]["noise_scale"].values)},
                       coords={"x": pts})
    tree = xr.DataTree.from_dict({"posterior": post, "constant_data": const})
    tree.attrs.update(release.attrs)
    tree.attrs.update({"h": float(h), "kernel": "gaussian",
                       "estimator": f"Gaussian KDE bumps released as a mean ({mechanism})",
                       "domain": str([float(domain[0]), float(domain[1])])})
    tree.attrs.update(kde_attrs())  # a density, not a mean-curve release (fdp_ppl.releasing.schema.is_kde_release)
    return tree


__all__ = [
    "BASELINE_2D_SOURCE",
    "bumps_density",
    "BernsteinKDESpec",
    "FRLKDESpec",
    "TensorBernsteinBasis",
    "bernstein_kde_spec",
    "frl_kde_spec",
    "kde_bumps",
]
