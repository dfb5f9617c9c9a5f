"""Eigenpairs of a product kernel on a Cartesian grid, from the 1-D factors (Kronecker structure).

For a product kernel ``K(x, y) = Π_k s k_k(x_k, y_k)`` (:class:`~fdp_ppl.spaces.kernels.ProductKernel`) on a
Cartesian grid ``P = A_1 × … × A_d`` (:class:`~fdp_ppl.spaces.grid.CartesianGrid`, C order) with product
quadrature weights ``W = W_1 ⊗ … ⊗ W_d``, the operator ``W^{½} K(P, P) W^{½}`` is the Kronecker product of
the 1-D operators ``W_k^{½} s K_k W_k^{½} = U_k diag(μ_k) U_kᵀ``. Its eigenpairs are the products
``λ = Π_k μ_{k, i_k}`` with eigenvectors ``⊗_k u_{k, i_k}`` and eigenfunctions ``φ = W^{-½} u = ⊗_k φ_{k, i_k}``
(orthonormal in ``<a, b>_w``; DESIGN.md convention). With unit weights (a kernel machine's grid noise of point
evaluations) these are the eigenpairs of the matrix ``K(P, P)`` itself (Hall, Rinaldo & Wasserman 2013, §4.3).

Cut-off (DESIGN invariant 2: pairs are dropped from the estimate and the noise alike, never clipped): a product
is retained iff ``λ > rel_tol · λ_max``, ``λ_max = Π_k μ_{k, max}``; a factor pair with
``μ_{k,i} <= rel_tol · μ_{k,max}`` can enter no retained product, so each axis computes only its own retained
pairs, by the package's one eigen-solver (:func:`fdp_ppl.spaces.eigenbasis.retained_eigenpairs`: Lanczos with
FFT products on a uniform axis where few are retained, else dense).

Nothing of size ``m × m`` (``m = Π_k G_k``) is formed: coefficients and reconstructions act axis by axis, cost
``O(m Σ_k r_k)`` per function.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .basis import RetainedPairs
from .eigenbasis import DEFAULT_REL_TOL, _sign_convention, retained_eigenpairs
from .grid import CartesianGrid
from .kernels import ProductKernel

#: largest ``m · r`` (grid points × retained pairs) a tensor basis materialises as a dense matrix
MAX_DENSE_ENTRIES = 50_000_000
#: orders of equal eigenvalues (:class:`TensorEigenbasis` ``ties``)
TIE_ORDERS = ("stable", "legacy")


def _khatri_rao(mats, multi_index, r: int) -> np.ndarray:
    """Column-wise Kronecker product (C order) of ``mats[k][:, multi_index[:, k]]``: shape (Π G_k, r)."""
    out = mats[0][:, multi_index[:, 0]]
    for k, M in enumerate(mats[1:], start=1):
        out = (out[:, None, :] * M[:, multi_index[:, k]][None, :, :]).reshape(-1, r)
    return np.ascontiguousarray(out)


class TensorEigenbasis(RetainedPairs):
    """Retained eigenpairs of a product kernel on a Cartesian grid (module docstring).

    Parameters
    ----------
    kernel : ProductKernel or None
        One 1-D factor per grid axis, times its ``factor_variance``; None with ``grams``.
    grid : CartesianGrid
        The grid and its product quadrature weights (trapezoid: a KDE's ``L²`` operator; unit: the matrix
        ``K(P, P)``).
    rel_tol : float
        Relative eigenvalue cut-off on the products.
    method : {"auto", "dense", "lanczos"}
        The 1-D solver's path (:func:`~fdp_ppl.spaces.eigenbasis.retained_eigenpairs`); ``"dense"``: one
        ``eigh`` of each factor.
    sign_convention : bool
        Fix each factor eigenvector's sign so its largest entry is positive (the first of near-equal ones;
        ``Eigenbasis``' rule, machine independent). False leaves LAPACK's signs (the kernel machine's
        releases were drawn with them).
    ties : {"stable", "legacy"}
        Order of products with equal eigenvalues (a square grid with equal bandwidths has many): ``"stable"``
        keeps them in increasing flat multi-index order; ``"legacy"`` reverses NumPy's default ``argsort``
        (the KDE's order since its first release, kept so that its seeded releases do not change; it is
        the sort implementation's and may differ between machines). Eigenvalues, noise scales and the
        retained span do not depend on it; which noise draw meets which eigenvector in a tie does.
    grams : sequence of ndarray, optional
        The 1-D Gram matrices ``(G_k, G_k)`` when already formed (symmetric); used in place of the kernel's.
    flat : bool
        Grid values are flattened to ``(..., m)`` (C order) in :meth:`coefficients`, :meth:`reconstruct` and
        :attr:`weights`, as :class:`fdp_ppl.machine.GridEigenbasis` takes them; else ``(..., *grid.shape)``.

    Attributes
    ----------
    product_kernel : ProductKernel or None
        The ``kernel`` given.
    eigenvalues : ndarray, shape (r,)
        Retained products ``λ_j``, decreasing.
    index : ndarray of int, shape (r,)
        Flat (C-order) positions of the retained multi-indices among the kept factor pairs
        (shape :attr:`kept_shape`).
    factor_eigenvalues : list of ndarray
        Kept factor eigenvalues ``s μ_k`` (r_k,), decreasing.
    factor_vectors, factor_functions : list of ndarray
        Kept factor eigenvectors ``u_k`` (Euclidean-orthonormal) and eigenfunctions ``φ_k = W_k^{-½} u_k``,
        each (G_k, r_k).
    methods : list of str
        How each axis's pairs were computed (``"dense"``, ``"dense-mirror"``, ``"lanczos-fft"``, ...).
    shape, kept_shape : tuple of int
        Grid shape ``(G_1, …, G_d)`` and kept factor pairs ``(r_1, …, r_d)``.
    n_points : int
        ``m = Π_k G_k``.
    dropped_trace : float
        ``Π_k tr⁺_k − Σ_j λ_j``: the noise variance (integrated) the truncation removes together with the
        estimate's components there (``tr⁺_k`` = sum of the positive factor eigenvalues, retained or not).

    Raises
    ------
    InputError
        A factor with no positive eigenvalue, a Gram factor that is not square and finite or does not
        match its axis, a kernel with a number of factors other than the grid's dimension, not enough
        memory for an axis (the solver's check, before any large allocation).
    ValueError
        Unknown ``ties``.
    """

    structure = "kronecker"

    def __init__(self, kernel: ProductKernel | None, grid: CartesianGrid, rel_tol: float = DEFAULT_REL_TOL, *,
                 method: str = "auto", sign_convention: bool = True, ties: str = "stable", grams=None,
                 flat: bool = False):
        if ties not in TIE_ORDERS:
            raise ValueError(f"ties must be one of {TIE_ORDERS}, got {ties!r}")
        if grams is None and (not isinstance(kernel, ProductKernel) or kernel.d != grid.d):
            raise InputError(f"a tensor eigenbasis on a {grid.d}-D grid needs a ProductKernel of {grid.d} factors",
                             "pass e.g. Gaussian(0.1) * Gaussian(0.2), one factor per axis")
        if grams is not None and len(grams) != grid.d:
            raise InputError(f"{len(grams)} Gram factors for a {grid.d}-D grid", "pass one (G_k, G_k) matrix per axis")
        self.product_kernel, self.grid, self.rel_tol, self.flat = kernel, grid, float(rel_tol), bool(flat)
        scale = 1.0 if kernel is None else kernel.factor_variance
        self.factor_eigenvalues, self.factor_vectors, self.factor_functions, self.methods = [], [], [], []
        traces = []
        for k, (a, w) in enumerate(zip(grid.axes, grid.weights)):
            gram = None if grams is None else grams[k]
            if gram is not None and np.shape(gram) != (a.size, a.size):
                raise InputError(f"Gram factor {k} has shape {np.shape(gram)}, its axis {a.size} points",
                                 "pass the (G_k, G_k) matrix of each axis")
            # the factor times s has the same eigenvectors and eigenvalues times s, and the cut-off is relative,
            # so the same pairs are kept
            lam, u, _, how, trace = retained_eigenpairs(None if kernel is None else kernel.factors[k], a, w,
                                                        self.rel_tol, method=method, gram=gram, positive_trace=True)
            if not (lam.size and lam[0] > 0):
                raise InputError("a kernel factor has no positive eigenvalue", "check the kernel (positive definite)")
            if sign_convention:
                u = u * _sign_convention(u)
            self.factor_eigenvalues.append(scale * lam)
            self.factor_vectors.append(u)
            self.factor_functions.append(u / np.sqrt(w)[:, None])
            self.methods.append(how)
            traces.append(scale * trace)
        self.shape = grid.shape
        self.n_points = grid.size
        lam = self.factor_eigenvalues[0]
        for extra in self.factor_eigenvalues[1:]:
            lam = np.multiply.outer(lam, extra)
        self.kept_shape = tuple(int(v.size) for v in self.factor_eigenvalues)
        flat = np.asarray(lam).ravel()
        cut = self.rel_tol * flat.max()        # λ_max = Π_k μ_{k, max}
        if ties == "stable":
            sel = np.flatnonzero(flat > cut)
            order = sel[np.argsort(-flat[sel], kind="stable")]
        else:
            order = np.argsort(flat)[::-1]
            order = order[flat[order] > cut]
        self.index = order
        self.eigenvalues = flat[order]
        self._total = float(np.prod(traces))
        self.dropped_trace = max(self._total - float(np.sum(self.eigenvalues)), 0.0)

    # ------------------------------------------------------------------ structure
    @property
    def multi_index(self) -> np.ndarray:
        """The retained factor-pair indices ``(i_1, …, i_d)``, shape (r, d)."""
        return np.stack(np.unravel_index(self.index, self.kept_shape), axis=-1)

    @property
    def weights(self) -> np.ndarray:
        """Product quadrature weights (:attr:`CartesianGrid.product_weights`), grid shape or flat (m,)."""
        w = self.grid.product_weights
        return w.reshape(-1) if self.flat else w

    def truncate(self, n_components: int) -> "TensorEigenbasis":
        """Keep the leading ``n_components`` pairs (in place; the others join :attr:`dropped_trace`); returns self.

        Raises
        ------
        InputError
            ``n_components`` outside ``1..size``.
        """
        if isinstance(n_components, bool) or not float(n_components).is_integer() \
                or not 1 <= int(n_components) <= self.size:
            raise InputError(f"n_components must lie in 1..{self.size} (retained tensor eigenpairs), got "
                             f"{n_components!r}", "pass a public count")
        self.index, self.eigenvalues = self.index[: int(n_components)], self.eigenvalues[: int(n_components)]
        self.dropped_trace = max(self._total - float(np.sum(self.eigenvalues)), 0.0)
        return self

    # ------------------------------------------------------------------ the Basis protocol, axis by axis
    def coefficients(self, values) -> np.ndarray:
        """``c_j = <f, φ_j>_w`` (quadrature; ``u_jᵀ v`` for unit weights); ``values`` ``(..., *grid.shape)``
        (``(..., m)`` if :attr:`flat`) -> ``(..., r)``.

        Raises
        ------
        InputError
            Values that do not end in the grid's shape (in ``m`` if flat).
        """
        out = np.asarray(values, dtype=float)
        d = self.grid.d
        if self.flat and out.shape[-1:] == (self.n_points,):
            out = out.reshape(out.shape[:-1] + self.shape)
        elif self.flat or out.shape[out.ndim - d:] != self.shape:
            want = f"last dimension {self.n_points}" if self.flat else f"shape ending in {self.shape}"
            raise InputError(f"grid values must have {want} (got shape {out.shape})",
                             "pass values on the basis' grid, C order")
        for k in range(d):  # move grid axis k to the end, contract it with w_k φ_k, move it back
            axis = out.ndim - d + k
            out = np.moveaxis(out, axis, -1)
            out = (out * self.grid.weights[k]) @ self.factor_functions[k]
            out = np.moveaxis(out, -1, axis)
        lead = out.shape[: out.ndim - d]
        return out.reshape(lead + (-1,))[..., self.index]

    def reconstruct(self, coefficients) -> np.ndarray:
        """``Σ_j c_j φ_j`` on the grid; ``(..., r) -> (..., *grid.shape)`` (``(..., m)`` if :attr:`flat`).

        Raises
        ------
        InputError
            Coefficients whose last dimension is not ``r``.
        """
        c = np.asarray(coefficients, dtype=float)
        if c.shape[-1:] != (self.size,):
            raise InputError(f"coefficients must have last dimension {self.size} (got shape {c.shape})",
                             "pass one coefficient per retained eigenpair")
        lead = c.shape[:-1]
        full = np.zeros(lead + (int(np.prod(self.kept_shape)),))
        full[..., self.index] = c
        out = full.reshape(lead + self.kept_shape)
        d = self.grid.d
        for k in range(d):
            axis = out.ndim - d + k
            out = np.moveaxis(out, axis, -1)
            out = out @ self.factor_functions[k].T
            out = np.moveaxis(out, -1, axis)
        return out.reshape(lead + (self.n_points,)) if self.flat else out

    def node_sums(self, counts) -> np.ndarray:
        """``Σ_nodes counts(node) φ_j(node)`` (no quadrature weights); ``counts`` ``(*grid.shape) -> (r,)``.

        The coefficients of a sum of point evaluations at grid nodes, axis by axis (never (nodes × r)).
        """
        out = np.asarray(counts, dtype=float)
        for k in range(self.grid.d):
            out = np.moveaxis(np.tensordot(out, self.factor_functions[k], axes=([k], [0])), -1, k)
        return out.reshape(-1)[self.index]

    def functions_at(self, indices) -> np.ndarray:
        """Retained eigenfunctions at grid nodes; ``indices`` (p, d) integer node indices -> (p, r)."""
        idx = np.atleast_2d(np.asarray(indices, dtype=int))
        rows = self.factor_functions[0][idx[:, 0]]
        for k in range(1, self.grid.d):
            f = self.factor_functions[k][idx[:, k]]
            rows = (rows[:, :, None] * f[:, None, :]).reshape(idx.shape[0], -1)
        return rows[:, self.index]

    # ------------------------------------------------------------------ dense forms (small grids only)
    def _check_dense(self, entries: int, what: str):
        if entries > MAX_DENSE_ENTRIES:
            raise InputError(f"materialising {what} exceeds {MAX_DENSE_ENTRIES} entries",
                             "use coefficients/reconstruct (factor-wise)")

    def _dense(self, factors, what: str) -> np.ndarray:
        self._check_dense(self.n_points * self.size, f"{self.n_points} x {self.size} {what}")
        return _khatri_rao(factors, self.multi_index, self.size)

    @property
    def vectors(self) -> np.ndarray:
        """Retained ``u_j = W^{½} φ_j`` (Euclidean-orthonormal) as a dense (m, r) matrix, C order; raises
        InputError for ``m · r`` above :data:`MAX_DENSE_ENTRIES`."""
        return self._dense(self.factor_vectors, "eigenvectors")

    @property
    def functions(self) -> np.ndarray:
        """Retained ``φ_j`` at the nodes as a dense (m, r) matrix, C order (``vectors`` for unit weights); raises
        InputError for ``m · r`` above :data:`MAX_DENSE_ENTRIES`."""
        return self._dense(self.factor_functions, "eigenfunctions")

    def covariance(self) -> np.ndarray:
        """``Σ_j λ_j φ_j(P) φ_j(P)ᵀ`` (m, m): the kernel ``K(P, P)`` restricted to the retained eigenpairs.

        Raises
        ------
        InputError
            ``m²`` above :data:`MAX_DENSE_ENTRIES`.
        """
        self._check_dense(self.n_points**2, f"a {self.n_points}^2 covariance")
        phi = self.functions
        return (phi * self.eigenvalues) @ phi.T


__all__ = ["MAX_DENSE_ENTRIES", "TIE_ORDERS", "TensorEigenbasis"]
