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
from typing import ClassVar

import numpy as np
import xarray as xr
from scipy import stats

from .. import dims
from .._names import BERNSTEIN_DEFAULT_K
from ..errors import InputError
from ..spaces import Grid
from .base import LinearSummary, Sensitivity, SummarySpec, public_tau
from .curves import clip_pass, curves_and_grid, warn_if_mostly_clipped


def bernstein_design(t, k: int) -> np.ndarray:
    """Bernstein basis ``B_{ν,k}(t_m) = binom.pmf(ν; k, t_m)``; shape (len(t), k + 1)."""
    t = np.asarray(t, dtype=float)
    return stats.binom.pmf(np.arange(k + 1)[None, :], k, t[:, None])


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class BernsteinSpec(SummarySpec):
    """Mean curve on the lattice ``ν/k`` with a Bernstein reconstruction.

    Parameters
    ----------
    grid : Grid
        The curves' grid (the released curve is evaluated on it).
    tau : float
        Public sup-norm bound τ_∞; curves are clipped pointwise to ``[−τ_∞, τ_∞]``.
    n : int
        Public number of records.
    k : int
        Lattice size (cover size); ``k + 1`` lattice points. The ICLP paper uses 20.

    Raises
    ------
    InputError
        τ_∞ <= 0, n < 2, k < 1.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> spec = fp.BernsteinSpec(lattice_grid=fp.Grid.uniform(50), tau=2.0, n=100, k=20)
    >>> spec.n_components                                    # k + 1 lattice values
    21
    >>> sens = spec.sensitivity()                            # (k + 1) 2τ_∞/n in ℓ¹
    >>> sens.norm, round(sens.value, 4)
    ('l1', 0.84)

    See Also
    --------
    bernstein_mean : build and fit in one call.
    Bernstein : its mechanism.
    """

    lattice_grid: Grid | None = None
    k: int = BERNSTEIN_DEFAULT_K
    name: ClassVar[str] = "bernstein"
    default_norm: ClassVar[str] = "l1"
    norms: ClassVar[tuple[str, ...]] = ("l1",)
    source: ClassVar[str] = "Aldà & Rubinstein (2017); Lin & Reimherr (2026), Section 6.1"

    @classmethod
    def check_tau(cls, tau) -> float:
        """The check of the public sup-norm bound τ_∞ on ``|X(t)|``, without data."""
        return public_tau(tau, "tau_inf", "pass a public bound on |X(t)|")

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.lattice_grid, Grid):
            raise InputError("a Bernstein spec needs the curves' grid", "pass lattice_grid=Grid.from_points(points)")
        if isinstance(self.k, bool) or not float(self.k).is_integer() or int(self.k) < 1:
            raise InputError(f"k (lattice size) must be an integer >= 1, got {self.k!r}", "pass e.g. k=20")
        object.__setattr__(self, "k", int(self.k))

    @property
    def grid(self):
        return self.lattice_grid

    @property
    def n_components(self):
        return self.k + 1

    @property
    def lipschitz(self):
        return np.ones(self.k + 1)

    @property
    def design(self):
        return bernstein_design(self.lattice_grid.t, self.k)

    @property
    def params(self):
        return {"lattice_k": self.k}

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
        InputError
            Any norm other than "l1" (the Bernstein summary has no eigenbasis).
        """
        norm = norm or "l1"
        if norm != "l1":
            raise InputError("the Bernstein summary only has an l1 sensitivity",
                             "use the FRL/Bernstein mechanisms, not ICLP or Gaussian")
        if bound not in ("tight", "paper"):
            raise InputError(f"unknown bound {bound!r}", "use 'tight' or 'paper'")
        value = (self.k + 1) * 2.0 * self.tau / self.n
        return self._unit_sensitivity(Sensitivity(
            value=value, norm="l1", bound=bound,
            assumptions=f"each record clipped pointwise to [-tau_inf, tau_inf], tau_inf={self.tau:g}; n={self.n}; "
                        "sup-norm bound, not L2",
            source="Aldà & Rubinstein (2017); specs/iclp.md §1.7", data_dependent=self.data_dependent))

    def attrs(self) -> dict:
        out = super().attrs()
        out["tau_norm"] = "sup"
        return out

    def _coefficients(self, curves, curve_dim=None, t_dim=None, offset=None):
        da, grid = curves_and_grid(curves, None if isinstance(curves, xr.DataArray) else self.lattice_grid,
                                   curve_dim=curve_dim, t_dim=t_dim)
        if not np.allclose(grid.t, self.lattice_grid.t):
            raise InputError("the curves' grid differs from the spec's grid",
                             "build the spec on Grid.from_points(curves[t_dim].values)")
        tau = float(self.tau)
        res = clip_pass(da, grid, tau, norm="sup", offset=offset)  # pointwise clip and sum, one pass
        warn_if_mostly_clipped(res.n_clipped, res.n, tau, norm="sup norm")
        values = np.interp(np.arange(self.k + 1) / self.k, grid.t, res.mean)
        return values, res.n, res.n_clipped


#: kept for code written against the first release of the package
BernsteinSummary = LinearSummary


def bernstein_mean(curves, grid: Grid | None = None, *, tau_inf: float, k: int = 20, curve_dim=None,
                   t_dim=None) -> LinearSummary:
    """Fit :class:`BernsteinSpec` (n = number of records): the mean of the
    pointwise-clipped curves on the Bernstein lattice ``ν/k``.

    Parameters
    ----------
    curves : xr.DataArray (curve, t) or ndarray (n, K)
    grid : Grid, optional
        Required for numpy input.
    tau_inf : float
        Public bound on ``sup_t |X_i(t)|``; curves are clipped pointwise to it.
    k : int
        Lattice size; ``k + 1`` lattice points.

    Returns
    -------
    LinearSummary
        Lattice values are linear interpolations of the clipped mean at ``ν/k``
        (interpolation keeps the sup-norm bound).

    Raises
    ------
    InputError
        NaN/inf curves, τ_∞ <= 0, k < 1.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")          # heights in cm: |X(t)| <= 200
    >>> summary = fp.bernstein_mean(curves, tau_inf=200.0, k=20)
    >>> summary.n_components, round(summary.sensitivity().value, 4)
    (21, 90.3226)

    See Also
    --------
    BernsteinSpec, Bernstein
    """
    da, grid = curves_and_grid(curves, grid, curve_dim=curve_dim, t_dim=t_dim)
    spec = BernsteinSpec(lattice_grid=grid, tau=tau_inf, n=int(da.sizes[dims.CURVE]), k=k)
    return spec.fit(da)


__all__ = ["BernsteinSpec", "BernsteinSummary", "bernstein_mean", "bernstein_design"]
