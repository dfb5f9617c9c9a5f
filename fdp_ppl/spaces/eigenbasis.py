"""Eigenbasis of a kernel's integral operator on a grid (Karhunen–Loève basis).

On a grid with quadrature weights ``w`` (``W = diag(w)``) and Gram matrix
``G = [k(t_a, t_b)]``, the integral operator ``(C f)(s) = ∫ k(s, t) f(t) dt``
is represented by the symmetric matrix ``W^{1/2} G W^{1/2} = U Λ Uᵀ``. Its
eigenvalues ``λ_j`` are the operator eigenvalues (``Σ_j λ_j = tr C = 1`` for a
unit-variance kernel) and ``φ_j = W^{-1/2} u_j`` are orthonormal in
``<a, b>_w = Σ_k w_k a_k b_k`` (``specs/iclp.md`` §4.2). Every theorem of the
papers then holds exactly in this finite-dimensional Hilbert space.

Eigenpairs with ``λ_j <= rel_tol · λ_1`` are dropped, from estimates and noise
alike (DESIGN invariant 2): they carry numerical noise, and ``1/√λ_j`` would
explode in the norms.

Only the retained eigenpairs are computed (:func:`retained_eigenpairs`): where
few are retained (fast eigenvalue decay, e.g. a Gaussian kernel, or a smooth
Matérn kernel on a fine grid) by Lanczos iteration (ARPACK) to machine
precision, with an exact FFT (circulant-embedding) product for a stationary
kernel on a uniform grid, whose Gram matrix is Toeplitz, so that no ``m × m``
matrix is formed (and, the grid and its weights being mirror-symmetric, on the
even and odd halves separately: the operator commutes with the reflection); otherwise (many retained pairs, where Lanczos would cost more
than the ``O(m³)`` decomposition) by the dense symmetric eigendecomposition. Both are the same
eigenpairs to rounding (``tests/spaces/test_eigenbasis_scale.py``).

Norms of a function ``h`` with coefficients ``h_j = <h, φ_j>_w``
(Lin & Reimherr 2026, Section 3; Mirshani et al. 2019, eq. 1):

* ``‖h‖_C = (Σ_j h_j² / λ_j)^{1/2}`` — Cameron–Martin norm;
* ``‖h‖_{C^s} = (Σ_j h_j² / λ_j^s)^{1/2}`` — norm of the RKHS of ``C^s``;
* ``‖h‖_{1,C} = Σ_j |h_j| / √λ_j`` — the ICLP sensitivity norm;
* ``‖h‖_{1,C^s} = Σ_j |h_j| / λ_j^{s/2}``.
"""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr
from scipy import linalg

from .. import dims
from .grid import Grid
from .kernels import Kernel

DEFAULT_REL_TOL = 1e-12


def _sign_convention(u: np.ndarray) -> np.ndarray:
    """Signs (J,) that make the largest-magnitude entry of each column of ``u`` (K, J) positive.

    Entries within a relative 1e-9 of a column's largest magnitude count as
    tied and the first of them along the grid decides: on a symmetric grid the
    two peaks of an odd eigenfunction agree to rounding, and ``argmax`` alone
    would pick one by the last bits of the BLAS (different signs on different
    machines).
    """
    a = np.abs(u)
    top = a.max(axis=0)
    idx = np.argmax(a >= top * (1.0 - 1e-9), axis=0)
    s = np.sign(u[idx, np.arange(u.shape[1])])
    return np.where(s == 0, 1.0, s)


#: Lanczos is used while the retained count stays below this share of the grid (dense above it)
LANCZOS_MAX_SHARE = 0.125
#: Lanczos is not worth it below this grid size
LANCZOS_MIN_SIZE = 400


def _uniform_step(t: np.ndarray) -> float | None:
    """The spacing of ``t`` if it is uniform to 1e-12 (relative), else None."""
    if t.size < 3:
        return None
    d = np.diff(t)
    h = (t[-1] - t[0]) / (t.size - 1)
    tol = 1e-12 * h + 8 * np.finfo(float).eps * float(np.max(np.abs(t)))   # rounding of the grid values
    return float(h) if h > 0 and np.all(np.abs(d - h) <= tol) else None


def _toeplitz_matmat(kernel: Kernel, t: np.ndarray, sw: np.ndarray):
    """``x ↦ W^{½} G W^{½} x`` for a stationary kernel on a uniform grid (``G`` Toeplitz) by FFT of its
    circulant embedding of size ``2m``: exact to rounding, ``O(m log m)`` per vector, ``O(m)`` memory."""
    from scipy import fft

    m = t.size
    c = kernel(np.abs(t - t[0]))                                   # first column of G
    circ = np.concatenate([c, [0.0], c[:0:-1]])                    # 2m-periodic symmetric embedding
    n = circ.size
    spec = fft.rfft(circ)

    def matmat(x):
        x = np.asarray(x, dtype=float)
        vec = x.ndim == 1
        x2 = (sw[:, None] * x.reshape(m, -1))
        y = fft.irfft(spec[:, None] * fft.rfft(x2, n=n, axis=0), n=n, axis=0)[:m]
        y = sw[:, None] * y
        return y[:, 0] if vec else y

    return matmat


def _mirror_parts(mat, m: int):
    """Even and odd halves of a reflection-symmetric operator ``mat`` (m × m): for each, ``(matmat, size, embed)``
    with ``embed`` the orthonormal map (size → m) onto mirror-even / mirror-odd vectors."""
    mid, odd = m // 2, m % 2
    r = np.sqrt(0.5)

    def embed(sign):
        def f(y):
            y = y.reshape(y.shape[0], -1)
            out = np.empty((m, y.shape[1]))
            out[:mid] = r * y[:mid]
            out[m - mid:] = sign * r * y[:mid][::-1]
            if odd:
                out[mid] = y[mid] if sign > 0 else 0.0
            return out
        return f

    def restrict(sign, z):
        top = r * (z[:mid] + sign * z[m - mid:][::-1])
        return np.vstack([top, z[mid:mid + 1]]) if (odd and sign > 0) else top

    def part(sign):
        emb = embed(sign)

        def matmat(y):
            vec = np.ndim(y) == 1
            out = restrict(sign, mat(emb(np.asarray(y, dtype=float))))
            return out[:, 0] if vec else out
        return matmat, mid + (odd if sign > 0 else 0), emb

    return [part(1.0), part(-1.0)]


def _lanczos_parts(parts, m: int, k: int, k_max: int, cap: int, rel_tol: float):
    """ARPACK (``tol=0``) on each invariant part until its smallest pair found is below ``rel_tol`` times its
    largest (or ``cap`` pairs); eigenpairs of the whole operator, descending, or None (no convergence, or more
    than ``k_max`` pairs needed: the caller decomposes densely). The next ``k`` follows a log-linear extrapolation
    of the decay found (at least ``k + max(16, k/4)``, at most ``8k``): a fast decay is not overshot by doubling."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    lams, us = [], []
    for matmat, size, embed in parts:
        op = LinearOperator((size, size), matvec=matmat, matmat=matmat, dtype=float)
        # a fixed generic start vector: the same pairs every run, and not symmetric about the grid's centre
        # (a symmetric start is orthogonal to every odd eigenfunction of a symmetric grid)
        v0 = np.random.default_rng(0).standard_normal(size)
        kk_max = min(-(-k_max * size // m), size - 2)       # the parts share k_max in proportion to their size
        kk = max(1, min(k * size // m if len(parts) > 1 else k, kk_max))
        while True:
            try:
                lam, u = eigsh(op, k=kk, which="LA", v0=v0, tol=0)
            except ArpackNoConvergence:
                return None
            order = np.argsort(lam)[::-1]
            lam, u = lam[order], u[:, order]
            if lam[-1] <= rel_tol * lam[0] or kk >= min(cap, size):
                break
            if kk >= kk_max:
                return None
            nxt = 2 * kk
            lo = lam[kk // 2]
            if lam[-1] > 0 and lo > lam[-1]:   # log-linear extrapolation of the decay to rel_tol · λ_1
                slope = (np.log(lam[-1]) - np.log(lo)) / (kk - 1 - kk // 2)
                need = kk - 1 + (np.log(rel_tol * lam[0]) - np.log(lam[-1])) / slope
                nxt = min(max(kk + max(16, kk // 4), int(np.ceil(1.1 * need)) + 8), 8 * kk)
            kk = min(nxt, kk_max)
        lams.append(lam)
        us.append(embed(u))
    lam = np.concatenate(lams)
    order = np.argsort(lam, kind="stable")[::-1]
    return lam[order], np.hstack(us)[:, order]


def _mirror_symmetric(a: np.ndarray) -> bool:
    """``a[i, j] == a[m-1-i, m-1-j]`` to rounding: a stationary kernel on a uniform grid with mirror-symmetric
    quadrature weights. Rounding of the grid points leaves about 2e-13 of the largest entry at m = 3200; the
    tolerance ``m · 2⁻⁵² · max|a|`` is the backward error of ``eigh`` itself, so the split's pairs (those of
    ``(a + R a R)/2``) are as close to ``a``'s as one decomposition's are."""
    return bool(np.allclose(a, a[::-1, ::-1], rtol=0.0, atol=a.shape[0] * np.finfo(float).eps * float(np.abs(a).max())))


def _mirror_eigh(a: np.ndarray):
    """All eigenpairs of a mirror-symmetric matrix (:func:`_mirror_symmetric`) from two half-size ``eigh``: the
    reflection commutes with ``a``, so each eigenvector is even or odd and, in the orthonormal bases of
    :func:`_mirror_parts`, ``a`` is block diagonal with blocks ``A11 ± A13 R`` (``R`` the reversal; the centre of an
    odd grid joins the even block with coupling ``√2 a[:, mid]``). About 4x less work than one ``eigh`` of ``a``;
    the pairs are those of ``a`` to rounding. Descending; (lam (m,), u (m, m))."""
    m = a.shape[0]
    mid, odd = m // 2, m % 2
    a11, a13r = a[:mid, :mid], a[:mid, m - mid:][:, ::-1]
    even, oddb = a11 + a13r, a11 - a13r
    if odd:
        c = np.sqrt(2.0) * a[:mid, mid]
        even = np.block([[even, c[:, None]], [c[None, :], np.array([[a[mid, mid]]])]])
    (_, _, embed_even), (_, _, embed_odd) = _mirror_parts(None, m)
    lam_e, u_e = linalg.eigh(even)
    lam_o, u_o = linalg.eigh(oddb)
    lam = np.concatenate([lam_e, lam_o])
    u = np.hstack([embed_even(u_e), embed_odd(u_o)])
    order = np.argsort(lam, kind="stable")[::-1]
    return lam[order], u[:, order]


def retained_eigenpairs(kernel: Kernel | None, t, weights, rel_tol: float = DEFAULT_REL_TOL, *, method: str = "auto",
                        n_components: int | None = None, gram: np.ndarray | None = None,
                        positive_trace: bool = False):
    """Eigenpairs of ``W^{½} G W^{½}`` with ``λ_j > rel_tol · λ_1``, descending, computing only those
    (and at most the leading ``n_components``).

    Parameters
    ----------
    kernel : Kernel or None
        None only with ``gram`` (then ``"auto"`` takes the dense paths, and Lanczos multiplies by ``gram``).
    t, weights : ndarray, shape (m,)
        Grid and quadrature weights (all 1: the eigenpairs of the matrix ``G`` itself).
    rel_tol : float
    method : {"auto", "dense", "lanczos"}
        ``"dense"``: ``scipy.linalg.eigh`` of the ``m × m`` matrix (where many pairs are retained the
        full decomposition is faster than LAPACK's value-subset driver; under ``"auto"`` a mirror-symmetric matrix
        of at least :data:`LANCZOS_MIN_SIZE` points takes two half-size decompositions instead, ``"dense-mirror"``); ``"lanczos"``: ARPACK (``scipy.sparse.linalg.eigsh``,
        ``tol=0``) for the largest ``k`` eigenpairs, ``k`` grown (up to 8x, by the decay found) until the smallest
        found is below ``rel_tol · λ_1`` (FFT products when ``t`` is uniform, else the dense Gram matrix; on a
        uniform grid with mirror-symmetric weights the even and odd eigenvectors are found separately);
        ``"auto"``: Lanczos when the grid has at least :data:`LANCZOS_MIN_SIZE` points and the kernel's
        eigenvalue decay (``Kernel.eigen_decay`` β: about ``max(1, 1/ρ) rel_tol^{-1/β}`` pairs; 32 to
        start with for super-polynomial decay) predicts fewer than
        :data:`LANCZOS_MAX_SHARE` · m retained pairs, and while Lanczos finds that many; dense otherwise.
    n_components : int, optional
        Keep at most the leading ``n_components`` pairs (a public choice, like the grid); None keeps
        every pair above ``rel_tol``.
    gram : ndarray, shape (m, m), optional
        The symmetric Gram matrix ``G = [k(t_a, t_b)]`` when it is already formed (a kernel machine's 1-D
        factors); used in place of ``kernel.gram(t)``.
    positive_trace : bool
        Also return ``Σ_j max(λ_j, 0)`` over *all* pairs, retained or not (what a truncation leaves out is
        it minus ``Σ`` retained): from the decomposition on the full dense paths, else the trace
        ``Σ_a w_a G_aa`` (equal but for the round-off negative eigenvalues).

    Returns
    -------
    lam : ndarray (J,)
        Retained eigenvalues, descending.
    u : ndarray (m, J)
        Orthonormal eigenvectors (``φ_j = W^{-½} u_j``), sign not yet fixed.
    n_dropped : int
        ``m − J``.
    how : str
        ``"dense"``, ``"dense-mirror"`` (a mirror-symmetric matrix: two half-size ``eigh``), ``"lanczos-fft"`` or
        ``"lanczos-dense"``.
    trace : float
        Only with ``positive_trace=True`` (a fifth element).

    Raises
    ------
    InputError
        Not enough memory for the path taken (:func:`fdp_ppl.settings.check_memory`).
    ValueError
        Unknown ``method``; neither a kernel nor a Gram matrix.
    """
    from .. import settings
    from ..settings import check_memory

    if method not in ("auto", "dense", "lanczos"):
        raise ValueError(f"method must be 'auto', 'dense' or 'lanczos', got {method!r}")
    if kernel is None and gram is None:
        raise ValueError("pass a kernel or its Gram matrix (gram=)")
    plain = method == "dense"   # asked for by name: one decomposition of the whole matrix (the reference path)
    t = np.asarray(t, dtype=float)
    w = np.asarray(weights, dtype=float)
    m = t.size
    cap = m if n_components is None else int(n_components)
    if not 1 <= cap:
        raise ValueError(f"n_components must be >= 1, got {n_components!r}")
    cap = min(cap, m)
    sw = np.sqrt(w)
    k_max = max(1, int(LANCZOS_MAX_SHARE * m))
    # Lanczos keeps about 2k + 2 vectors of length m (ARPACK's basis and work space): k is capped by memory
    k_mem = max(1, int((settings.MEMORY_SHARE * settings.available_memory() / (16.0 * m) - 2) / 2))
    if method == "auto" and kernel is None:
        method = "dense"    # a formed Gram matrix and no kernel to guess the decay from (the mirror split allowed)
    elif method == "auto":
        beta = kernel.eigen_decay
        # λ_j/λ_1 ≈ (ρ j)^{-β} past the plateau j ≲ 1/ρ: about max(1, 1/ρ) rel_tol^{-1/β} pairs are retained
        guess = 32 if beta is None else int(np.ceil(max(1.0, 1.0 / kernel.rho) * rel_tol ** (-1.0 / beta)))
        guess = min(guess, cap)
        k_max = min(k_max, k_mem)
        method = "lanczos" if (m >= LANCZOS_MIN_SIZE and guess <= k_max) else "dense"
        k = min(max(guess, min(16, cap)), k_max)
    else:
        k = min(32, cap, m - 2)
        k_max = min(m - 2, k_mem)
    k_max = min(k_max, cap)
    step = _uniform_step(t) if method == "lanczos" else None
    if method == "lanczos":
        check_memory(8.0 * m * (2 * k + 2) * 2, f"the eigenbasis of a {m}-point grid (Lanczos iteration for {k} "
                     "eigenpairs)", "use a coarser public grid or fewer components (n_components)")
    if method == "lanczos" and step is None:
        check_memory(2.0 * 8.0 * m * m, f"the eigenbasis of a {m}-point grid (the {m} x {m} kernel matrix for "
                     "Lanczos iteration)", "use a coarser public grid, or a uniform grid (FFT products, O(m) memory)")
    if method == "lanczos":
        if step is not None and gram is None:
            mat = _toeplitz_matmat(kernel, t, sw)
            how = "lanczos-fft"
        else:
            a = sw[:, None] * (kernel.gram(t) if gram is None else gram) * sw[None, :]
            mat = a.__matmul__
            how = "lanczos-dense"
        # a uniform grid with mirror-symmetric weights: the operator commutes with the reflection t -> -t, so
        # its eigenvectors are even or odd and each half is an (m/2)-dimensional problem (about 4x less work);
        # weights mirror-equal to 1e-12 (rounding of the grid), so the pairs agree with the unsplit ones to rounding
        # (not with a cap on the count: each half would need up to n_components pairs, twice the work)
        split = step is not None and cap >= m and np.allclose(w, w[::-1], rtol=1e-12, atol=0)
        parts = _mirror_parts(mat, m) if split else [(mat, m, lambda y: y)]
        found = _lanczos_parts(parts, m, k, k_max, cap, rel_tol)
        if found is not None:
            lam, u = found
            keep = lam > rel_tol * lam[0]
            keep[cap:] = False
            return _retained(lam, u, keep, how, _trace(kernel, gram, w) if positive_trace else None)
        # more pairs retained than Lanczos is worth (or ARPACK did not converge): the dense path below
    check_memory(4.0 * 8.0 * m * m, f"the eigenbasis of a {m}-point grid ({m} x {m} dense eigendecomposition)",
                 "use a coarser public grid; on a Cartesian grid with a product kernel the Kronecker path "
                 "(fdp_ppl.spaces.TensorEigenbasis) never forms the m x m matrix")
    a = sw[:, None] * (kernel.gram(t) if gram is None else gram) * sw[None, :]
    # all pairs, then the retained ones: with many retained, LAPACK's value-subset driver (MRRR on the
    # clustered tiny eigenvalues) was 1.7-3.4x slower than the full decomposition at m = 1600
    if not plain and cap > m // 2 and m >= LANCZOS_MIN_SIZE and _mirror_symmetric(a):
        lam, u = _mirror_eigh(a)
        keep = lam > rel_tol * lam[0]
        keep[cap:] = False
        return _retained(lam, u, keep, "dense-mirror", float(np.sum(np.clip(lam, 0.0, None))) if positive_trace else None)
    subset = cap <= m // 2
    if subset:   # the leading pairs only
        lam, u = linalg.eigh(a, subset_by_index=[m - cap, m - 1])
        top = lam[-1]
    else:
        lam, u = linalg.eigh(a)
        top = lam[-1]
    lam, u = lam[::-1], u[:, ::-1]
    keep = lam > rel_tol * top
    keep[cap:] = False
    trace = None
    if positive_trace:
        trace = _trace(kernel, gram, w) if subset else float(np.sum(np.clip(lam, 0.0, None)))
    return _retained(lam, u, keep, "dense", trace)


def _trace(kernel, gram, w) -> float:
    """``tr(W^½ G W^½) = Σ_a w_a G_aa``."""
    diag = np.diagonal(gram) if gram is not None else np.full(w.shape, float(kernel(np.zeros(1))[0]))
    return float(np.dot(w, diag))


def _retained(lam, u, keep, how, trace):
    out = (lam[keep], u[:, keep], u.shape[0] - int(keep.sum()), how)
    return out if trace is None else out + (trace,)


class Eigenbasis:
    """Operator eigenpairs of ``kernel`` on ``grid``; build with :func:`eigenbasis`.

    Attributes
    ----------
    kernel : Kernel
    grid : Grid
    eigenvalues : ndarray, shape (J,)
        Operator eigenvalues λ_j, descending, all ``> rel_tol · λ_1``.
    eigenfunctions : ndarray, shape (K, J)
        ``eigenfunctions[k, j] = φ_j(t_k)``, orthonormal in ``<·,·>_w``; the
        sign of each is fixed so its largest-magnitude value is positive (the
        first such value along the grid where several agree to 1e-9, as the
        symmetric peaks of an odd eigenfunction do, so that the sign does not
        depend on rounding in the BLAS of the machine).
    rel_tol : float
    n_dropped : int
        Number of eigenpairs not kept: numerically zero (``λ_j <= rel_tol · λ_1``) or past ``n_components``.
    method : str
        How the retained pairs were computed (:func:`retained_eigenpairs`): ``"dense"``,
        ``"lanczos-fft"`` or ``"lanczos-dense"``.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> basis
    Eigenbasis(Matern(rho=0.1, nu=1.5), K=50, J=50, dropped=0)
    >>> basis.eigenfunctions.shape               # (K grid points, J eigenpairs)
    (50, 50)
    >>> phi_1 = basis.eigenfunctions[:, 0]
    >>> round(float(basis.grid.norm(phi_1)), 6)  # orthonormal in the grid's inner product
    1.0
    >>> c = basis.coefficients(phi_1)            # (1, 0, 0, ...)
    >>> round(float(basis.norm_cameron_martin(c)), 4)   # ‖φ_1‖_C = λ_1^(-1/2)
    2.1329

    See Also
    --------
    eigenbasis : build (and cache) one.
    """

    def __init__(self, kernel: Kernel, grid: Grid, rel_tol: float = DEFAULT_REL_TOL, method: str = "auto",
                 n_components: int | None = None):
        if not isinstance(kernel, Kernel):
            raise TypeError("kernel must be an fdp_ppl Kernel, e.g. Matern(rho=0.1, nu=1.5)")
        if not isinstance(grid, Grid):
            raise TypeError("grid must be an fdp_ppl Grid, e.g. Grid.uniform(100)")
        if not (0 < rel_tol < 1):
            raise ValueError("rel_tol must lie in (0, 1)")
        self.kernel, self.grid, self.rel_tol = kernel, grid, float(rel_tol)
        sw = np.sqrt(grid.weights)
        lam, u, self.n_dropped, self.method = retained_eigenpairs(kernel, grid.t, grid.weights, rel_tol,
                                                                  method=method, n_components=n_components)
        u = u * _sign_convention(u)
        self.eigenvalues = lam
        self.eigenfunctions = u / sw[:, None]
        self._u = u
        for arr in (self.eigenvalues, self.eigenfunctions, self._u):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ basics
    @property
    def size(self) -> int:
        """Number J of retained eigenpairs."""
        return self.eigenvalues.size

    weights = property(lambda self: self.grid.weights,
                       doc="Quadrature weights (K,) of the inner product (the grid's; :class:`~fdp_ppl.spaces.Basis`).")

    def __repr__(self):
        return f"Eigenbasis({self.kernel!r}, K={self.grid.size}, J={self.size}, dropped={self.n_dropped})"

    def coefficients(self, x) -> np.ndarray:
        """Coefficients ``<x, φ_j>_w`` of functions on the grid.

        Parameters
        ----------
        x : array_like, shape (..., K)

        Returns
        -------
        ndarray, shape (..., J)
        """
        x = np.asarray(x, dtype=float)
        if x.shape[-1] != self.grid.size:
            raise ValueError(f"last axis has {x.shape[-1]} points, the grid has {self.grid.size}")
        return (x * self.grid.weights) @ self.eigenfunctions

    def reconstruct(self, c) -> np.ndarray:
        """Function on the grid from its first ``c.shape[-1]`` coefficients,
        ``Σ_j c_j φ_j(t_k)``; shape (..., J') -> (..., K)."""
        c = np.asarray(c, dtype=float)
        return c @ self.eigenfunctions[:, : c.shape[-1]].T

    def project(self, x, n_components: int | None = None) -> np.ndarray:
        """Orthogonal projection of functions on the grid onto the first
        ``n_components`` eigenfunctions (all retained if None); (..., K) -> (..., K)."""
        c = self.coefficients(x)
        if n_components is not None:
            c = c[..., :n_components]
        return self.reconstruct(c)

    def power(self, s: float) -> np.ndarray:
        """Eigenvalues ``λ_j^s`` of the power operator ``C^s``; shape (J,)."""
        return self.eigenvalues**s

    def power_kernel(self, s: float) -> np.ndarray:
        """Kernel of ``C^s`` on the grid, ``Σ_j λ_j^s φ_j(t_a) φ_j(t_b)``; shape (K, K).

        This is the operator power, not the pointwise power of the kernel."""
        phi = self.eigenfunctions
        return (phi * self.power(s)) @ phi.T

    def trace(self, s: float = 1.0) -> float:
        """``tr(C^s) = Σ_j λ_j^s`` over retained eigenpairs."""
        return float(np.sum(self.power(s)))

    # ------------------------------------------------------------------ norms on coefficients
    def _lam(self, c):
        c = np.asarray(c, dtype=float)
        return c, self.eigenvalues[: c.shape[-1]]

    def norm_l2(self, c) -> np.ndarray:
        """``‖h‖`` from coefficients (Parseval on the retained span)."""
        c = np.asarray(c, dtype=float)
        return np.sqrt(np.sum(c * c, axis=-1))

    def norm_cs(self, c, s: float = 1.0) -> np.ndarray:
        """``‖h‖_{C^s} = (Σ_j c_j² / λ_j^s)^{1/2}``; ``s = 1`` is the Cameron–Martin norm."""
        c, lam = self._lam(c)
        return np.sqrt(np.sum(c * c / lam**s, axis=-1))

    def norm_cameron_martin(self, c) -> np.ndarray:
        """Cameron–Martin norm ``‖h‖_C = (Σ_j c_j²/λ_j)^{1/2}`` (Mirshani et al. 2019, eq. 1)."""
        return self.norm_cs(c, 1.0)

    def norm_1c(self, c, s: float = 1.0) -> np.ndarray:
        """``‖h‖_{1,C^s} = Σ_j |c_j| / λ_j^{s/2}``; ``s = 1`` gives the ICLP norm
        ``‖·‖_{1,C}`` (Lin & Reimherr 2026, Section 3)."""
        c, lam = self._lam(c)
        return np.sum(np.abs(c) / lam ** (s / 2), axis=-1)

    # ------------------------------------------------------------------ xarray
    def to_dataset(self) -> xr.Dataset:
        """Public description of the basis: eigenvalues (basis), eigenfunctions (t, basis)."""
        coords = {dims.T: self.grid.t, dims.BASIS: np.arange(self.size)}
        return xr.Dataset(
            {
                "eigenvalues": ((dims.BASIS,), np.array(self.eigenvalues)),
                "eigenfunctions": ((dims.T, dims.BASIS), np.array(self.eigenfunctions)),
                "quadrature_weights": ((dims.T,), np.array(self.grid.weights)),
            },
            coords=coords,
        )

    def decay_exponent(self, j_min: int | None = None, j_max: int | None = None) -> float:
        """Fitted β in ``λ_j ≍ j^{-β}`` by least squares on log-log scale over
        ``j_min <= j <= j_max`` (1-based; defaults ``j_max = min(J, K/5)``,
        ``j_min = max(2, j_max/5)``: the asymptotic range, away from the
        length-scale plateau and the grid's resolution limit)."""
        if j_max is None:
            j_max = max(5, min(self.size, self.grid.size // 5))
        if j_min is None:
            j_min = max(2, j_max // 5)
        j = np.arange(j_min, min(j_max, self.size) + 1)
        slope = np.polyfit(np.log(j), np.log(self.eigenvalues[j - 1]), 1)[0]
        return float(-slope)


@functools.lru_cache(maxsize=64)
def _cached(kernel: Kernel, grid: Grid, rel_tol: float, n_components: int | None = None) -> Eigenbasis:
    return Eigenbasis(kernel, grid, rel_tol, n_components=n_components)


def eigenbasis(kernel: Kernel, grid: Grid, rel_tol: float = DEFAULT_REL_TOL,
               n_components: int | None = None) -> Eigenbasis:
    """Eigenbasis of ``kernel`` on ``grid``, computed once and cached per
    (kernel, grid, rel_tol).

    Parameters
    ----------
    kernel : Kernel
        e.g. ``Matern(rho=0.1, nu=1.5)``.
    grid : Grid
    rel_tol : float
        Eigenpairs with ``λ_j <= rel_tol · λ_1`` are dropped.
    n_components : int, optional
        Keep (and compute) at most the leading ``n_components`` pairs: a 3200-point Matérn basis of
        which 100 pairs are kept costs a Lanczos run, not a dense decomposition.

    Returns
    -------
    Eigenbasis

    Raises
    ------
    TypeError
        If kernel or grid is not an fdp_ppl object.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> grid = fp.Grid.uniform(50)
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    >>> [round(float(lam), 4) for lam in basis.eigenvalues[:3]]   # λ_1 > λ_2 > λ_3
    [0.2198, 0.1907, 0.1531]
    >>> fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid) is basis   # cached
    True
    >>> fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid, n_components=8).size
    8

    See Also
    --------
    Eigenbasis : the eigenpairs and the norms (Cameron–Martin, ``‖·‖_{1,C}``) they define.
    Grid.from_points : the grid of a dataset's evaluation points.
    """
    if not isinstance(kernel, Kernel) or not isinstance(grid, Grid):
        return Eigenbasis(kernel, grid, rel_tol)  # raises the informative TypeError
    return _cached(kernel, grid, float(rel_tol), None if n_components is None else int(n_components))


def clear_cache() -> None:
    """Forget the eigenbases :func:`eigenbasis` keeps (at most 64), so the next call computes afresh (timing
    studies of cold releases; :func:`fdp_ppl.releasing.draw.clear_public_cache` calls it)."""
    _cached.cache_clear()


__all__ = ["Eigenbasis", "eigenbasis", "retained_eigenpairs", "DEFAULT_REL_TOL", "clear_cache"]
