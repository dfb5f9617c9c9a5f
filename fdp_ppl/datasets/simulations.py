"""Simulation designs of the papers, as ``xr.Dataset`` of curves on a grid in [0, 1].

* :func:`iclp_mean_function`, :func:`simulate_iclp` — Lin & Reimherr (2026),
  Section 6.1 (designs S-1 to S-4) and Appendix D.1 (heavy-tailed errors);
  ``specs/iclp.md`` §3.2.
* :func:`simulate_mirshani` — Mirshani, Reimherr & Slavković (2019),
  Section 5, eq. (4); ``specs/gaussian-banach.md`` §3.1 and A6.

Every function that draws takes ``random_seed`` (int, sequence or
``np.random.Generator``; passed to ``np.random.default_rng``). Values are on
the grid's ``t`` in [0, 1]; eigenfunctions are orthonormal in the grid's
weighted inner product (DESIGN.md, conventions), so the norms and the
a-priori bound τ below are exact in that inner product.
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr
from scipy import linalg, stats

from .. import dims
from ..spaces import Eigenbasis, Gaussian, Grid, Kernel, Matern, eigenbasis

ICLP_DESIGNS = ("S-1", "S-2", "S-3", "S-4")

#: ICLP covariance of the paper's Section 6.1: Matérn ν = 3/2 (α = 1.5), ρ = 0.1.
ICLP_KERNEL = Matern(rho=0.1, nu=1.5)
#: Our choice for the unstated RBF error covariance of Section 6.1:
#: ``exp(-d²/(2·0.1²))`` (Hall convention, length-scale 0.1), unit variance.
DEFAULT_ERROR_KERNEL = Gaussian(rho=0.1, convention="hall")


# ---------------------------------------------------------------------- helpers
def _as_grid(grid) -> Grid:
    if isinstance(grid, Grid):
        return grid
    if isinstance(grid, numbers.Integral) and not isinstance(grid, bool):
        return Grid.uniform(int(grid))
    raise TypeError("grid must be an fdp_ppl Grid (e.g. Grid.uniform(100)) or a number of points")


def _design(design) -> str:
    if isinstance(design, numbers.Integral) and not isinstance(design, bool):
        key = f"S-{int(design)}"
    else:
        s = str(design).strip().upper().replace("_", "-")
        key = s if s.startswith("S-") else "S-" + s.removeprefix("S")
    if key not in ICLP_DESIGNS:
        raise ValueError(f"unknown design {design!r}; use one of {', '.join(ICLP_DESIGNS)}")
    return key


def _basis(basis, grid: Grid, need: int, what: str) -> Eigenbasis:
    if basis is None:
        basis = eigenbasis(ICLP_KERNEL, grid)
    if not isinstance(basis, Eigenbasis):
        raise TypeError("basis must be an fdp_ppl Eigenbasis, e.g. eigenbasis(Matern(0.1, 1.5), grid)")
    if basis.grid != grid:
        raise ValueError("basis was built on a different grid; build it with eigenbasis(kernel, grid)")
    if basis.size < need:
        raise ValueError(f"{what} needs {need} eigenfunctions but the basis retains {basis.size} on a "
                         f"{grid.size}-point grid; use a finer grid (at least {need} points) or a rougher kernel")
    return basis


def _kernel_attrs(kernel: Kernel, prefix: str) -> dict:
    return {f"{prefix}_{k.removeprefix('kernel_') if k != 'kernel' else 'name'}": v
            for k, v in kernel.params().items()}


def _seed_attr(random_seed):
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        return "none" if random_seed is None else "generator"
    if isinstance(random_seed, numbers.Integral):
        return int(random_seed)
    return str(list(np.atleast_1d(random_seed)))


def _npdf(t, a, b):
    return stats.norm.pdf(t, loc=a, scale=b)


def _gp_draws(kernel: Kernel, grid: Grid, n: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of a zero-mean GP with covariance ``scale² · k(t_a, t_b)`` at the grid points.

    Uses the eigendecomposition ``G = U diag(λ) Uᵀ`` of the Gram matrix with
    negative (round-off) eigenvalues clipped to 0: ``x = U diag(√λ) z``. No
    Cholesky, so numerically singular kernels (RBF) need no jitter.
    """
    lam, u = linalg.eigh(kernel.gram(grid.t))
    root = u * np.sqrt(np.clip(lam, 0.0, None))
    z = rng.standard_normal((n, grid.size))
    return scale * (z @ root.T)


# ---------------------------------------------------------------------- ICLP designs
def iclp_mean_function(design, grid, *, random_seed=None, basis: Eigenbasis | None = None) -> np.ndarray:
    """True mean function μ0 of the ICLP simulation designs S-1 to S-4.

    Lin & Reimherr (2026), Section 6.1, with ``f_{a,b}`` the N(a, b²) density
    (``scipy.stats.norm.pdf(t, loc=a, scale=b)``):

    * S-1: ``μ0(t) = 10 t exp(-t)`` (monotone);
    * S-2: ``μ0 = 0.3 f_{0.3,0.05} + 0.7 f_{0.8,0.05}`` (bimodal);
    * S-3: ``μ0 = 0.2 (f_{0,0.03} + f_{0.2,0.05} + f_{0.5,0.05} - f_{0.75,0.03} + f_{1,0.03})``;
    * S-4: ``μ0 = Σ_{j=1}^{25} R_j φ_j``, ``R_j`` iid U[-1, 1], ``φ_j`` the
      eigenfunctions of the ICLP covariance. Our reading of the paper's
      ``R_ij``: one draw of ``R`` per call (per replicate dataset), shared by
      all curves. ``φ_j`` default: Matérn ν = 3/2, ρ = 0.1 on ``grid``
      (the paper's ICLP kernel), orthonormal in the grid inner product.

    Parameters
    ----------
    design : {"S-1", "S-2", "S-3", "S-4"} or int
        Also accepted: ``"s1"``, ``"S1"``, ``1`` ...
    grid : Grid or int
        Evaluation grid on [0, 1] (an int K means ``Grid.uniform(K)``).
    random_seed : int, sequence or np.random.Generator, optional
        Used by S-4 only.
    basis : Eigenbasis, optional
        Eigenbasis on ``grid`` for S-4 (at least 25 eigenpairs).

    Returns
    -------
    ndarray, shape (K,)
        μ0 at ``grid.t``.

    Raises
    ------
    ValueError
        Unknown design; S-4 basis on another grid or with fewer than 25
        eigenfunctions.
    TypeError
        ``grid`` or ``basis`` of the wrong type.
    """
    mu, _ = _mean_and_coefficients(_design(design), _as_grid(grid), np.random.default_rng(random_seed), basis)
    return mu


def _mean_and_coefficients(key: str, grid: Grid, rng: np.random.Generator, basis):
    t = np.asarray(grid.t)
    if key == "S-1":
        return 10.0 * t * np.exp(-t), None
    if key == "S-2":
        return 0.3 * _npdf(t, 0.3, 0.05) + 0.7 * _npdf(t, 0.8, 0.05), None
    if key == "S-3":
        return 0.2 * (_npdf(t, 0.0, 0.03) + _npdf(t, 0.2, 0.05) + _npdf(t, 0.5, 0.05)
                      - _npdf(t, 0.75, 0.03) + _npdf(t, 1.0, 0.03)), None
    b = _basis(basis, grid, 25, "design S-4")
    r = rng.uniform(-1.0, 1.0, size=25)
    return b.reconstruct(r), r


def simulate_iclp(design, n: int, grid, *, error: str = "gp", error_kernel: Kernel | None = None,
                  error_scale: float = 1.0, n_terms: int = 100, t5_scaling: str = "unit",
                  basis: Eigenbasis | None = None, random_seed=None) -> xr.Dataset:
    """Curves ``X_i = μ0 + e_i`` of the ICLP mean-function simulation.

    Lin & Reimherr (2026), Section 6.1 (Gaussian-process errors) and
    Appendix D.1 (heavy-tailed basis-expansion errors); ``specs/iclp.md`` §3.2.

    ``error="gp"``: ``e_i`` a zero-mean Gaussian process with an RBF
    covariance. The paper does not state its parameters; **our default** is
    ``error_scale² · exp(-d²/(2·0.1²))`` (``Gaussian(rho=0.1,
    convention="hall")``, length-scale 0.1) with ``error_scale = 1`` (unit
    pointwise variance, ``E‖e_i‖² = 1``). Any kernel can be passed as
    ``error_kernel``. Draws are exact: eigendecomposition of the Gram matrix
    with negative round-off eigenvalues clipped to 0 (no Cholesky, no jitter).

    ``error="t5"``: Appendix D.1 writes ``e_i(t) = Σ_{j=1}^{100} U_ij φ_j(t)``,
    ``U_ij`` iid Student t with 5 degrees of freedom, and states **no**
    eigenvalue scaling of the coefficients. Our reading: ``φ_j`` are the
    eigenfunctions of the ICLP covariance (``basis``, default Matérn ν = 3/2,
    ρ = 0.1 on ``grid``), ``n_terms = 100``, and the coefficients are
    ``error_scale · U_ij`` (``t5_scaling="unit"``, the paper as printed; on a
    100-point grid the errors are then rough, ``E‖e_i‖² = 100·5/3``).
    ``t5_scaling="sqrt_eigenvalue"`` uses ``error_scale · √λ_j · U_ij``
    instead (covariance ``(5/3) error_scale² C``, a smooth Karhunen–Loève
    type expansion) — an alternative, not the printed design.

    Parameters
    ----------
    design : {"S-1", "S-2", "S-3", "S-4"} or int
        True mean μ0, see :func:`iclp_mean_function`.
    n : int
        Number of curves (the paper varies n; values appear only on its plots).
    grid : Grid or int
        Grid on [0, 1] (an int K means ``Grid.uniform(K)``; the paper does
        not state its grid size).
    error : {"gp", "t5"}
    error_kernel : Kernel, optional
        Covariance of GP errors (default ``Gaussian(rho=0.1, convention="hall")``).
    error_scale : float
        Standard deviation multiplier of the errors (> 0).
    n_terms : int
        Number of basis terms of t5 errors (paper: 100; needs that many
        retained eigenpairs, i.e. a grid of at least ``n_terms`` points).
    t5_scaling : {"unit", "sqrt_eigenvalue"}
        Coefficient scaling of t5 errors (see above).
    basis : Eigenbasis, optional
        ICLP eigenbasis on ``grid`` for S-4 and t5 errors.
    random_seed : int, sequence or np.random.Generator, optional
        Draw order: S-4 mean coefficients, then the errors.

    Returns
    -------
    xr.Dataset
        ``curves`` (curve, t), ``mean`` (t) the true μ0, and for S-4
        ``mean_coefficients`` (basis) the ``R_j``; coordinate ``t = grid.t``.
        ``attrs`` record the design, n, error law and its parameters, the
        basis kernel, the grid (quadrature, size) and the seed.

    Raises
    ------
    ValueError
        Unknown design / error / t5_scaling, n < 1, error_scale <= 0, too few
        eigenpairs for S-4 or for ``n_terms``, basis on another grid.
    TypeError
        Wrong type for grid, basis or error_kernel.

    Notes
    -----
    GP and t5 curves are unbounded: clip them to a public τ before computing
    a private summary (``specs/iclp.md`` §5 item 3).
    """
    key = _design(design)
    grid = _as_grid(grid)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    error_scale = float(error_scale)
    if not (np.isfinite(error_scale) and error_scale > 0):
        raise ValueError(f"error_scale must be finite and > 0, got {error_scale!r}")
    err = str(error).lower().replace("_", "").replace("-", "")
    if err not in ("gp", "t5"):
        raise ValueError(f"unknown error {error!r}; use 'gp' (Gaussian process) or 't5' (t_5 basis expansion)")
    rng = np.random.default_rng(random_seed)

    attrs = {"design": key, "paper": "Lin & Reimherr (2026), Section 6.1" + (" / Appendix D.1" if err == "t5" else ""),
             "n": int(n), "error": err, "error_scale": error_scale, "random_seed": _seed_attr(random_seed),
             "grid_size": grid.size, "quadrature": grid.quadrature}

    if isinstance(n_terms, bool) or not isinstance(n_terms, numbers.Integral) or n_terms < 1:
        raise ValueError(f"n_terms must be a positive integer, got {n_terms!r}")
    need = {"S-4": 25}.get(key, 0)
    if err == "t5":
        need = max(need, int(n_terms))
    b = _basis(basis, grid, need, "design S-4" if need == 25 and key == "S-4" else "t5 errors") if need else None
    if b is not None:
        attrs.update(_kernel_attrs(b.kernel, "basis_kernel"))

    mu, r = _mean_and_coefficients(key, grid, rng, b)

    if err == "gp":
        kernel = DEFAULT_ERROR_KERNEL if error_kernel is None else error_kernel
        if not isinstance(kernel, Kernel):
            raise TypeError("error_kernel must be an fdp_ppl Kernel, e.g. Gaussian(rho=0.1, convention='hall')")
        e = _gp_draws(kernel, grid, int(n), error_scale, rng)
        attrs.update(_kernel_attrs(kernel, "error_kernel"))
        attrs["error_law"] = "zero-mean Gaussian process, covariance error_scale^2 * error_kernel"
    else:
        if error_kernel is not None:
            raise ValueError("error_kernel applies to error='gp' only; t5 errors use the basis eigenfunctions")
        scaling = str(t5_scaling).lower()
        if scaling not in ("unit", "sqrt_eigenvalue"):
            raise ValueError(f"unknown t5_scaling {t5_scaling!r}; use 'unit' (paper) or 'sqrt_eigenvalue'")
        m = int(n_terms)
        u = rng.standard_t(5.0, size=(int(n), m))
        w = np.full(m, error_scale) if scaling == "unit" else error_scale * np.sqrt(b.eigenvalues[:m])
        e = b.reconstruct(u * w)
        attrs.update(n_terms=m, t5_scaling=scaling, t_df=5,
                     error_law="sum_{j<=n_terms} w_j U_ij phi_j, U_ij iid Student t(5); "
                               + ("w_j = error_scale" if scaling == "unit" else "w_j = error_scale*sqrt(lambda_j)"))

    coords = {dims.CURVE: np.arange(int(n)), dims.T: np.array(grid.t)}
    data = {"curves": ((dims.CURVE, dims.T), mu[None, :] + e), "mean": ((dims.T,), mu)}
    if r is not None:
        data["mean_coefficients"] = ((dims.BASIS,), r)
        coords[dims.BASIS] = np.arange(r.size)
    return xr.Dataset(data, coords=coords, attrs=attrs)


# ---------------------------------------------------------------------- Mirshani et al. (2019)
def simulate_mirshani(n: int = 25, grid=None, *, rho: float = 0.001, p: float = 4, m: int = 50,
                      random_seed=None) -> xr.Dataset:
    """Curves of the Gaussian-mechanism simulation, Mirshani et al. (2019), Section 5, eq. (4).

    ``X_i(t) = μ(t) + Σ_{j=1}^m j^{-p/2} U_ij v_j(t)``, ``U_ij`` iid
    U(-0.4, 0.4), ``v_j`` the eigenfunctions of the Gaussian kernel
    ``C_1(s, t) = exp(-|s - t|²/ρ)`` (Mirshani convention, eq. 3) on the grid,
    orthonormal in the grid inner product, and ``μ(t) = 0.1 sin(πt)``. Paper
    values: n = N = 25, 100 equally spaced points on [0, 1], ρ = 0.001, p = 4,
    m "about 50" (``specs/gaussian-banach.md`` §3.1: a parameter, default 50).

    The paper sets τ = max_i ‖X_i‖ from the data (not DP). A public bound is
    recorded instead: ``tau_a_priori = ‖μ‖ + 0.4·(Σ_{j<=m} j^{-p})^{1/2}``
    (≈ 0.4868 for the defaults); every curve satisfies ``‖X_i‖ <= tau_a_priori``
    in the grid norm, by the triangle inequality and Parseval.

    Parameters
    ----------
    n : int
        Number of curves.
    grid : Grid or int, optional
        Default ``Grid.uniform(100)`` (trapezoid weights).
    rho : float
        Gaussian-kernel parameter ρ in ``exp(-d²/ρ)``.
    p : float
        Smoothness: scores scale as ``j^{-p/2}``.
    m : int
        Number of eigenfunctions (needs ``m`` retained eigenpairs on the grid).
    random_seed : int, sequence or np.random.Generator, optional

    Returns
    -------
    xr.Dataset
        ``curves`` (curve, t), ``mean`` (t) = μ, ``scores`` (curve, basis) =
        ``U_ij`` (before the ``j^{-p/2}`` factor); coordinates ``t = grid.t``,
        ``basis = 0..m-1``. attrs: ``paper``, ``n``, ``rho``, ``p``, ``m``,
        ``kernel``, ``tau_a_priori``, ``tau_data`` (= max_i ‖X_i‖, the
        paper's data-derived choice, not DP), grid and seed.

    Raises
    ------
    ValueError
        n < 1, rho <= 0, m < 1, or fewer than ``m`` eigenpairs on the grid.
    """
    grid = Grid.uniform(100) if grid is None else _as_grid(grid)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
        raise ValueError(f"m must be a positive integer, got {m!r}")
    kernel = Gaussian(rho=rho, convention="mirshani")
    b = eigenbasis(kernel, grid)
    if b.size < m:
        raise ValueError(f"m={m} eigenfunctions requested but the Gaussian kernel (rho={rho}) retains {b.size} "
                         f"on a {grid.size}-point grid; lower m or use a smaller rho / finer grid")
    rng = np.random.default_rng(random_seed)
    j = np.arange(1, m + 1, dtype=float)
    decay = j ** (-float(p) / 2.0)
    u = rng.uniform(-0.4, 0.4, size=(int(n), int(m)))
    mu = 0.1 * np.sin(np.pi * np.asarray(grid.t))
    x = mu[None, :] + b.reconstruct(u * decay)
    tau = float(grid.norm(mu) + 0.4 * np.sqrt(np.sum(decay**2)))
    attrs = {"paper": "Mirshani, Reimherr & Slavkovic (2019), Section 5, eq. (4)", "n": int(n), "rho": float(rho),
             "p": float(p), "m": int(m), "score_law": "U(-0.4, 0.4)", "mean_function": "0.1*sin(pi*t)",
             "tau_a_priori": tau, "tau_data": float(np.max(grid.norm(x))),
             "tau_data_note": "max_i ||X_i||, the paper's data-derived tau; not differentially private",
             "random_seed": _seed_attr(random_seed), "grid_size": grid.size, "quadrature": grid.quadrature}
    attrs.update(_kernel_attrs(kernel, "kernel"))
    return xr.Dataset(
        {"curves": ((dims.CURVE, dims.T), x), "mean": ((dims.T,), mu), "scores": ((dims.CURVE, dims.BASIS), u)},
        coords={dims.CURVE: np.arange(int(n)), dims.T: np.array(grid.t), dims.BASIS: np.arange(int(m))},
        attrs=attrs)


__all__ = ["iclp_mean_function", "simulate_iclp", "simulate_mirshani", "ICLP_DESIGNS", "ICLP_KERNEL",
           "DEFAULT_ERROR_KERNEL"]
