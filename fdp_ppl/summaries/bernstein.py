"""Lattice summary for the Bernstein mechanism (Aldà & Rubinstein 2017).

The mean curve is evaluated on the lattice ``ν/k``, ``ν = 0..k`` (k + 1 points
in one dimension) and reconstructed with the Bernstein polynomials
``B_{ν,k}(t) = C(k, ν) t^ν (1 − t)^{k−ν}``. The Lin & Reimherr (2026)
experiments use it with the sample mean and cover size 20 (Section 6.1,
footnote 1), through the R package diffpriv.

Its sensitivity rests on a **sup-norm** bound, not the L² bound of the
eigenbasis summaries: each curve is clipped pointwise to ``[−τ_∞, τ_∞]``, so
each lattice value of the mean changes by at most ``Δ_∞ = 2τ_∞/n`` and the
vector of ``k + 1`` lattice values by at most ``(k + 1) 2τ_∞/n`` in ℓ¹
(``specs/iclp.md`` §1.7).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats

from .. import dims
from ..errors import check_positive
from ..spaces import Grid
from .base import LinearSummary, Sensitivity
from .curves import DataDerived, as_curves, check_finite


def bernstein_design(t, k: int) -> np.ndarray:
    """Bernstein basis ``B_{ν,k}(t_m) = binom.pmf(ν; k, t_m)``; shape (len(t), k + 1)."""
    t = np.asarray(t, dtype=float)
    return stats.binom.pmf(np.arange(k + 1)[None, :], k, t[:, None])


@dataclass(frozen=True, eq=False)
class BernsteinSummary(LinearSummary):
    """Mean curve on the lattice ``ν/k`` with a Bernstein reconstruction.

    ``coefficients`` are the (non-private) lattice values of the mean, shape
    (k + 1,); ``tau`` is the sup-norm bound τ_∞; ``basis`` is unused (None).
    """

    lattice_grid: Grid | None = None
    k: int = 20

    @property
    def grid(self):
        return self.lattice_grid

    @property
    def design(self):
        return bernstein_design(self.lattice_grid.t, self.k)

    @property
    def eigenvalues(self):
        raise AttributeError("a Bernstein summary has no eigenvalues")

    def public_dataset(self) -> xr.Dataset:
        return xr.Dataset(
            {"bernstein_design": ((dims.T, dims.BASIS), self.design),
             "lattice": ((dims.BASIS,), np.arange(self.k + 1) / self.k),
             "quadrature_weights": ((dims.T,), np.array(self.lattice_grid.weights))},
            coords={dims.T: self.lattice_grid.t, dims.BASIS: np.arange(self.k + 1)})

    def basis_attrs(self) -> dict:
        return {"basis": "bernstein", "lattice_k": self.k}

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """ℓ¹ sensitivity of the lattice values, ``(k + 1) · 2τ_∞/n`` (attained by
        ``X_1 = τ_∞ = −X_1'``), the Laplace-mechanism calibration of diffpriv's
        ``DPMechBernstein``.

        Raises
        ------
        ValueError
            Any norm other than "l1" (the Bernstein summary has no eigenbasis).
        """
        norm = norm or "l1"
        if norm != "l1":
            raise ValueError("the Bernstein summary only has an l1 sensitivity (use FRL/Bernstein, not ICLP or Gaussian)")
        if bound not in ("tight", "paper"):
            raise ValueError(f"unknown bound {bound!r}")
        value = (self.k + 1) * 2.0 * self.tau / self.n
        return Sensitivity(value=value, norm="l1", bound=bound,
                           assumptions=f"each record clipped pointwise to [-tau_inf, tau_inf], tau_inf={self.tau:g}; "
                                       f"n={self.n}; sup-norm bound, not L2",
                           source="Aldà & Rubinstein (2017); specs/iclp.md §1.7", data_dependent=self.data_dependent)

    def attrs(self) -> dict:
        out = super().attrs()
        out["tau_norm"] = "sup"
        return out


def bernstein_mean(curves, grid: Grid | None = None, *, tau_inf: float, k: int = 20, curve_dim=None,
                   t_dim=None) -> BernsteinSummary:
    """Sample mean of sup-clipped curves on the Bernstein lattice ``ν/k``.

    Parameters
    ----------
    curves : xr.DataArray (curve, t) or ndarray (n, K)
    grid : Grid, optional
        Required for numpy input.
    tau_inf : float
        Public bound on ``sup_t |X_i(t)|``; curves are clipped pointwise to it.
    k : int
        Lattice size (cover size) ``k``; ``k + 1`` lattice points. The ICLP
        paper uses 20.

    Returns
    -------
    BernsteinSummary
        Lattice values are linear interpolations of the clipped mean at ``ν/k``
        (interpolation keeps the sup-norm bound).

    Raises
    ------
    ValueError
        NaN/inf curves, τ_∞ <= 0, k < 1.
    """
    tau = DataDerived(check_positive(tau_inf, "tau_inf")) if isinstance(tau_inf, DataDerived) else \
        check_positive(tau_inf, "tau_inf", "pass a public bound on |X(t)|")
    k = int(k)
    if k < 1:
        raise ValueError("k (lattice size) must be >= 1")
    da = as_curves(curves, grid, curve_dim=curve_dim, t_dim=t_dim)
    grid = da.attrs["grid"]
    check_finite(da)
    clipped = da.clip(-tau, tau)
    mean = np.asarray(clipped.mean(dims.CURVE).values, dtype=float)
    n_clipped = int((np.abs(da) > tau).any(dims.T).sum().values)
    values = np.interp(np.arange(k + 1) / k, grid.t, mean)
    return BernsteinSummary(name="bernstein", coefficients=values, lipschitz=np.ones(k + 1), basis=None, tau=tau,
                            n=int(da.sizes[dims.CURVE]), n_clipped=n_clipped, params={"lattice_k": k},
                            source="Aldà & Rubinstein (2017); Lin & Reimherr (2026), Section 6.1",
                            default_norm="l1", data_dependent=isinstance(tau, DataDerived), lattice_grid=grid, k=k)


__all__ = ["BernsteinSummary", "bernstein_mean", "bernstein_design"]
