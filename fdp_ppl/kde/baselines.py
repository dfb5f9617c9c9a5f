"""FRL and Bernstein KDE baselines in d = 1 through the package's mean-curve specs.

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
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..spaces import Eigenbasis, Grid
from ..spaces.kernels import Gaussian
from ..summaries import BernsteinSpec, FRLSpec


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
    return np.exp(-0.5 * ((pts[None, :] - x[:, None]) / h) ** 2) / (np.sqrt(2 * np.pi) * h)


def frl_kde_spec(points, h: float, n: int, M: int | None = None) -> FRLSpec:
    """FRL spec for a 1-D Gaussian KDE on ``points`` (original units, domain = their ends)."""
    grid = Grid.from_points(points)
    length = grid.upper - grid.lower
    basis = Eigenbasis(Gaussian(rho=h / length, convention="hall"), grid)
    tau = 1.0 / np.sqrt(2 * np.sqrt(np.pi) * h * length)
    return FRLSpec(basis=basis, tau=float(tau), n=int(n), M=M)


def bernstein_kde_spec(points, h: float, n: int, k: int = 20) -> BernsteinSpec:
    """Bernstein spec for a 1-D Gaussian KDE on ``points`` (original units)."""
    return BernsteinSpec(lattice_grid=Grid.from_points(points), tau=float(1.0 / (np.sqrt(2 * np.pi) * h)),
                         n=int(n), k=int(k))


__all__ = ["kde_bumps", "frl_kde_spec", "bernstein_kde_spec"]
