"""Mean-curve summaries: public specifications and their fitted estimates.

All estimators start from the sample mean of the curves clipped to a public
L² bound τ, expressed in the eigenbasis of the noise kernel:
``X̄_j = <X̄, φ_j>_w``. Then (Lin & Reimherr 2026, Theorem 12; Mirshani et al.
2019, eq. 2):

* FRL (:class:`FRLSpec`): ``X̄_j`` for ``j <= M`` (projection on the first M eigenfunctions);
* ICLP-QR / RKHS ridge (:class:`ICLPQRSpec`, :class:`RKHSSpec`):
  ``λ_j^η/(λ_j^η + ψ) · X̄_j`` (eq. 11, :func:`ridge_shrinkage`);
* ICLP-AR (:class:`ICLPARSpec`): soft thresholding
  ``sgn(X̄_j)(|X̄_j| − ψ/(2λ_j^{η/2}))^+`` for ``j < J*``, where
  ``J* = min{j : τ <= ψ/(2λ_j^{η/2})}`` (Remark 13) — all later coefficients
  are zero for every dataset;
* the plain clipped mean (:class:`SampleMeanSpec`).

Privacy-safe parameter selection (PSS, Section 4.4 / Corollary 15):
``ψ = 1/n``, ``η_QR = 1 + 2/β``, ``η_AR = 2(1 + 2/β)``,
``M ∈ [n^{1/(ηβ)}, n^{1/3}]``, with β the eigen-decay exponent of the kernel.
The ``*_mean`` functions build the spec with ``n`` = the number of records
(public under the replace-one relation) and fit it.

**Membership protected** (``neighbouring="add-remove"``, ``n_lower=n₀``; docs/DESIGN.md, "What a release
protects"): every spec here averages the clipped records by ``max(n, n₀)`` with n private; each coefficient is
a fixed public map of that average (a shrinkage, a projection, or ICLP-AR's 1-Lipschitz soft thresholding,
whose J* argument needs only ``‖average‖ <= τ``), so each sensitivity holds with ``2τ/(n₀ + 1)`` in place of
``2τ/n`` (:meth:`~fdp_ppl.summaries.SummarySpec.mean_step`), and the PSS defaults (ψ = 1/n, M) are taken
from n₀, a public number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError, check_positive
from ..spaces import Eigenbasis
from .base import LinearSummary, SummarySpec
from .curves import as_record_array, clipped_mean, curves_and_grid, record_and_grid_dims


@dataclass(frozen=True)
class PSS:
    """Privacy-safe tuning parameters: functions of public (n, β) only.

    Attributes
    ----------
    psi : float
        ``1/n``.
    eta_qr, eta_ar : float
        ``1 + 2/β`` and ``2(1 + 2/β)``.
    m_range : tuple of int
        ``(ceil(n^{1/(η_QR β)}), max(that, floor(n^{1/3})))`` for FRL.
    beta : float
    """

    psi: float
    eta_qr: float
    eta_ar: float
    m_range: tuple
    beta: float


def kernel_beta(basis: Eigenbasis) -> float:
    """Eigen-decay exponent β of the basis' kernel: the theoretical value when
    the kernel has one (Matérn ν: 2ν + 1), else the fitted slope of the
    eigenvalues (a property of the public kernel and grid, not of the data)."""
    beta = basis.kernel.eigen_decay
    return float(beta) if beta is not None else basis.decay_exponent()


def pss(n: int, beta: float) -> PSS:
    """Privacy-safe selection of (ψ, η, M) (Lin & Reimherr 2026, Section 4.4).

    Parameters
    ----------
    n : int
        Number of records (public).
    beta : float
        Eigenvalue decay exponent, ``λ_j ≍ j^{-β}``, β > 1.

    Raises
    ------
    ValueError
        ``n < 1`` or ``beta <= 1``.

    Examples
    --------
    For n = 100 curves and a Matérn ν = 3/2 kernel (eigenvalues decay as j^-4, β = 4):

    >>> import fdp_ppl as fp
    >>> fp.pss(100, beta=4.0)
    PSS(psi=0.01, eta_qr=1.5, eta_ar=3.0, m_range=(3, 4), beta=4.0)
    >>> fp.pss(100, beta=fp.Matern(rho=0.1, nu=2.5).eigen_decay).eta_qr   # β = 6
    1.3333333333333333

    See Also
    --------
    ICLPQRSpec, ICLPARSpec, FRLSpec : specs whose defaults are these values.
    """
    if int(n) < 1:
        raise InputError("n must be >= 1")
    if not beta > 1:
        raise InputError(f"the eigenvalues must decay faster than 1/j (beta > 1), got beta={beta}")
    eta_qr = 1.0 + 2.0 / beta
    lo = math.ceil(n ** (1.0 / (eta_qr * beta)))
    hi = max(lo, math.floor(n ** (1.0 / 3.0)))
    return PSS(psi=1.0 / n, eta_qr=eta_qr, eta_ar=2.0 * eta_qr, m_range=(lo, hi), beta=float(beta))


def ridge_shrinkage(eigenvalues, eta: float, psi: float) -> np.ndarray:
    """Ridge shrinkage ``λ_j^η/(λ_j^η + ψ)`` (Lin & Reimherr 2026, eq. 11; Mirshani et al. 2019, eq. 2)."""
    lam_eta = np.asarray(eigenvalues, dtype=float) ** float(eta)
    return lam_eta / (lam_eta + float(psi))


def ar_thresholds(eigenvalues, eta: float, psi: float) -> np.ndarray:
    """Soft thresholds ``ψ/(2λ_j^{η/2})`` of ICLP-AR (Theorem 12.2)."""
    return float(psi) / (2.0 * np.asarray(eigenvalues, dtype=float) ** (float(eta) / 2.0))


def ar_j_star(basis: Eigenbasis, tau: float, eta: float, psi: float) -> int:
    """``J* = min{j >= 1 : τ <= ψ/(2λ_j^{η/2})}`` (Remark 13), 1-based; returns
    ``J + 1`` if no retained eigenpair reaches the threshold."""
    hit = np.nonzero(tau <= ar_thresholds(basis.eigenvalues, eta, psi))[0]
    return int(hit[0]) + 1 if hit.size else basis.size + 1


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class EigenSpec(SummarySpec):
    """A mean summary in a kernel's eigenbasis (base of the mean specs).

    Parameters
    ----------
    basis : Eigenbasis
    tau : float
        Public L² clipping bound (grid norm).
    n : int
        Public number of records (omitted under add/remove).
    neighbouring : {"replace-one", "add-remove"}
        Add/remove protects membership: n private, the clipped records averaged by ``max(n, n_lower)``
        (module docstring); every mean spec derives it.
    n_lower : int, optional
        Public lower bound n₀ on the number of records (add/remove only).

    Examples
    --------
    Membership protected: n private, a public lower bound of 80 records; the sensitivity is that of
    ``2τ/(n₀ + 1)`` and the PSS defaults come from n₀:

    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, neighbouring="add-remove", n_lower=80)
    >>> spec
    ICLPQRSpec(tau=1, add-remove, n_lower=80, J=50, eta=1.5, psi=0.0125)
    >>> spec.sensitivity().value == fp.ICLPQRSpec(basis=basis, tau=1.0, n=81, psi=0.0125).sensitivity().value
    True
    """

    basis: Eigenbasis | None = None
    add_remove: ClassVar[bool] = True

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.basis, Eigenbasis):
            raise InputError("basis must be an Eigenbasis", "e.g. eigenbasis(Matern(rho=0.1, nu=1.5), grid)")

    @property
    def grid(self):
        return self.basis.grid

    @property
    def eigenvalues(self) -> np.ndarray:
        return self.basis.eigenvalues[: self.n_components]

    @property
    def design(self) -> np.ndarray:
        """Retained eigenfunctions on the grid, shape (K, J)."""
        return self.basis.eigenfunctions[:, : self.n_components]

    @property
    def n_components(self) -> int:
        return self.basis.size

    def public_dataset(self) -> xr.Dataset:
        """eigenvalues (basis), eigenfunctions (t, basis), quadrature weights (t)."""
        return self.basis.to_dataset().isel({dims.BASIS: slice(0, self.n_components)})

    def constant_gain(self) -> np.ndarray | None:
        """The share of a constant curve that the noise-free summary keeps at each grid point, shape (K,): a
        public measure of the shrinkage toward 0 that the public parameters (τ, n, kernel, η, ψ, M) imply.

        For a dataset of identical constant curves c (within τ), the summary on the grid is ``c g(t)`` with
        ``g = design · (s ⊙ coefficients(1))`` (:attr:`shrinkage` s). Near 1: little shrinkage; far below 1
        (typically at the ends of the grid) the summary should act on deviations from a public centre
        (``fit(offset=...)``). None for a summary that is not linear in the mean (ICLP-AR).
        """
        if not self.linear:
            return None
        c1 = np.asarray(self.basis.coefficients(np.ones(self.grid.size)), dtype=float)[: self.n_components]
        return np.asarray(self.design, dtype=float) @ (np.asarray(self.shrinkage, dtype=float) * c1)

    def basis_attrs(self) -> dict:
        out = dict(self.basis.kernel.params())
        out["eigen_rel_tol"] = self.basis.rel_tol
        return out

    def _beta(self) -> float:
        return kernel_beta(self.basis)

    def _mean_coefficients(self, curves, curve_dim=None, t_dim=None, offset=None):
        if isinstance(curves, xr.DataArray):
            curves, grid = curves_and_grid(curves, curve_dim=curve_dim, t_dim=t_dim)
            if not np.allclose(grid.t, self.basis.grid.t):
                raise InputError("the curves' grid differs from the basis grid",
                                 "build the basis on Grid.from_points(curves[t_dim].values)")
        # clip in the basis grid's norm (its quadrature), the norm every sensitivity is stated in; one pass
        mean, n, n_clipped, _ = clipped_mean(curves, self.basis.grid, self.tau, offset=offset)
        if self.neighbouring == "add-remove":  # the sum (the fit's public pads add 0) divided by max(n, n_lower)
            mean = np.asarray(mean, dtype=float) * (n / self.divisor(n - self.PADS))
        return self.basis.coefficients(mean), n, n_clipped

    def _transform(self, mean_coefficients: np.ndarray) -> np.ndarray:
        return self.shrinkage * mean_coefficients[: self.n_components]

    def _coefficients(self, curves, curve_dim=None, t_dim=None, offset=None):
        c, n, n_clipped = self._mean_coefficients(curves, curve_dim, t_dim, offset)
        return self._transform(c), n, n_clipped


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class SampleMeanSpec(EigenSpec):
    """Clipped sample mean on all retained eigenpairs, no smoothing.

    Its ``‖·‖_{1,C}`` sensitivity is finite only because the grid is finite and
    grows without bound as the grid is refined (Theorem 7): use it for
    comparison, not for release.

    Examples
    --------
    The ``‖·‖_{1,C}`` sensitivity grows as the grid is refined (the ICLP-QR one does not):

    >>> import fdp_ppl as fp
    >>> kernel = fp.Matern(rho=0.1, nu=1.5)
    >>> for k in (50, 200):
    ...     basis = fp.eigenbasis(kernel, fp.Grid.uniform(k))
    ...     print(k, round(fp.SampleMeanSpec(basis=basis, tau=1.0, n=100).sensitivity().value, 1))
    50 9.0
    200 293.2

    See Also
    --------
    ICLPQRSpec : a smoothed mean whose sensitivity stays bounded.
    """

    name: ClassVar[str] = "sample-mean"
    source: ClassVar[str] = "sample mean of clipped curves"

    @property
    def lipschitz(self):
        return np.ones(self.n_components)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class FRLSpec(EigenSpec):
    """Sample mean projected on the first M eigenfunctions (FRL summary).

    ``lipschitz = 1`` on j < M; natural norm ``"l1"`` with sensitivity
    ``2Mτ/n`` (paper, Theorem 12.1) or ``2τ√M/n`` (tight).

    Parameters
    ----------
    basis, tau, n : see :class:`EigenSpec`
    neighbouring, n_lower : see :class:`~fdp_ppl.summaries.SummarySpec` (add/remove: M defaults from n_lower)
    M : int, optional
        Number of components; default the upper end of the PSS range
        ``floor(n^{1/3})``, at most the basis' retained pairs.

    Raises
    ------
    InputError
        τ <= 0, n < 2, M < 1 or M larger than the basis.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.FRLSpec(basis=basis, tau=1.0, n=100)       # M = floor(100^(1/3)) = 4
    >>> spec.M, spec.default_norm
    (4, 'l1')
    >>> spec.sensitivity().value, spec.sensitivity(bound="paper").value   # 2τ√M/n, 2Mτ/n
    (0.04, 0.08)

    See Also
    --------
    FRL : the mechanism that releases it.
    frl_mean : build and fit in one call.
    """

    M: int | None = None
    name: ClassVar[str] = "frl"
    default_norm: ClassVar[str] = "l1"
    source: ClassVar[str] = "Lin & Reimherr (2026), Theorem 12.1"

    def __post_init__(self):
        super().__post_init__()
        # the default is capped at the retained pairs: the PSS upper end grows as n^(1/3) past any basis
        M = min(pss(self.n, self._beta()).m_range[1], self.basis.size) if self.M is None else self.M
        if isinstance(M, bool) or not float(M).is_integer() or not 1 <= int(M) <= self.basis.size:
            raise InputError(f"M must lie in 1..{self.basis.size} (retained eigenpairs), got {M}",
                             "pass a smaller M, or none for the default (the PSS range's upper end)")
        object.__setattr__(self, "M", int(M))

    @property
    def n_components(self):
        return self.M

    @property
    def lipschitz(self):
        return np.ones(self.M)

    @property
    def params(self):
        return {"M": self.M}


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RidgeSpec(EigenSpec):
    """Ridge (RKHS-penalised) mean ``λ_j^η/(λ_j^η+ψ) X̄_j`` (base of ICLP-QR and RKHS)."""

    eta: float | None = None
    psi: float | None = None
    min_eta: ClassVar[float] = 1.0

    def __post_init__(self):
        super().__post_init__()
        eta = self._default_eta() if self.eta is None else self.eta
        eta = float(eta)
        if not np.isfinite(eta) or eta < self.min_eta:
            raise InputError(f"eta must be >= {self.min_eta} for the {self.name} mean, got {eta}")
        psi = 1.0 / self.n if self.psi is None else check_positive(self.psi, "psi")
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "psi", float(psi))

    def _default_eta(self) -> float:
        return pss(self.n, self._beta()).eta_qr

    @property
    def lipschitz(self):
        return ridge_shrinkage(self.basis.eigenvalues, self.eta, self.psi)

    @property
    def params(self):
        return {"eta": self.eta, "psi": self.psi}

    @classmethod
    def shrinkage_from_public(cls, eigenvalues, attrs):
        return ridge_shrinkage(eigenvalues, float(attrs["eta"]), float(attrs["psi"]))

    def _closed_form(self) -> float:
        """``(τ/n) ((2η−1)^{2−1/η} / (η² ψ^{1/η}))^{1/2}`` (Mirshani et al. 2019, Theorem 4.1, second form)."""
        eta, psi = self.eta, self.psi  # τ/n is half the mean's step 2τ/n (2τ/(n₀ + 1) under add/remove)
        return (self.mean_step() / 2) * float(np.sqrt((2 * eta - 1) ** (2 - 1 / eta) / (eta**2 * psi ** (1 / eta))))


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class ICLPQRSpec(RidgeSpec):
    """ICLP-QR mean: minimises ``(1/n) Σ_i ‖X_i − θ‖² + ψ‖θ‖²_{C^η}``
    (Lin & Reimherr 2026, eq. 9 with QR penalty; closed form eq. 11).

    Natural norm ``"1,C"``: paper bound ``(2τ/n) Σ_j λ_j^{η−1/2}/(λ_j^η+ψ)``
    (Theorem 12.3) or the tight ℓ² form (default for releases).

    Parameters
    ----------
    basis, tau, n : see :class:`EigenSpec`
    eta : float, optional
        Penalty power, default PSS ``1 + 2/β``. Must exceed 1.
    psi : float, optional
        Penalty weight, default PSS ``1/n``.

    Raises
    ------
    InputError
        τ <= 0, ψ <= 0, η <= 1.

    Examples
    --------
    A public spec plans the noise before the curves are seen:

    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)    # η = 1 + 2/β, ψ = 1/n
    >>> spec
    ICLPQRSpec(tau=1, n=100, J=50, eta=1.5, psi=0.01)
    >>> round(spec.sensitivity().value, 4), round(spec.sensitivity(bound="paper").value, 4)
    (0.1376, 0.5273)
    >>> scale = fp.ICLP(epsilon=1.0).calibrate(spec).scale   # Laplace b_j = Δ √λ_j / ε
    >>> round(float(scale[0]), 4)
    0.0645

    See Also
    --------
    iclp_qr_mean : build and fit in one call.
    ICLP : its mechanism.
    """

    name: ClassVar[str] = "iclp-qr"
    source: ClassVar[str] = "Lin & Reimherr (2026), eq. (11), Theorem 12.3"

    def __post_init__(self):
        super().__post_init__()
        if self.eta <= 1.0:
            raise InputError("ICLP-QR needs eta > 1 (Theorem 12.3)")


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RKHSSpec(RidgeSpec):
    """RKHS-penalised mean of Mirshani et al. (2019), eq. (2): the ridge
    shrinkage with η >= 1 (default 1), natural norm Cameron–Martin
    (Theorem 4.1).

    Parameters
    ----------
    basis, tau, n : see :class:`EigenSpec`
    eta : float
        Penalty power, >= 1 (default 1).
    psi : float, optional
        Penalty weight φ of the paper; default ``1/n``.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.RKHSSpec(basis=basis, tau=1.0, n=100)
    >>> spec.default_norm                                    # Cameron–Martin
    'cameron-martin'
    >>> round(spec.sensitivity().value, 4), round(spec.sensitivity(bound="closed-form").value, 4)
    (0.0999, 0.1)

    See Also
    --------
    rkhs_mean : build and fit in one call.
    GaussianMechanism : its mechanism.
    """

    name: ClassVar[str] = "rkhs"
    default_norm: ClassVar[str] = "cameron-martin"
    source: ClassVar[str] = "Mirshani et al. (2019), eq. (2), Theorem 4.1"

    def _default_eta(self) -> float:
        return 1.0


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class ICLPARSpec(EigenSpec):
    """ICLP-AR mean: soft thresholding of the clipped mean's coefficients.

    Minimises ``(1/n) Σ_i ‖X_i − θ‖² + ψ‖θ‖_{1,C^η}`` (Lin & Reimherr 2026,
    Theorem 12.2): ``sgn(X̄_j)(|X̄_j| − ψ/(2λ_j^{η/2}))^+``. Since
    ``|X̄_j| <= τ``, coefficients ``j >= J*`` vanish for every dataset
    (Remark 13), so only ``J* − 1`` coefficients are kept. ``lipschitz = 1``
    (soft thresholding is 1-Lipschitz); paper bound ``(2τ/n) Σ_{j<J*} λ_j^{-1/2}``.

    Parameters
    ----------
    basis, tau, n : see :class:`EigenSpec`
    eta : float, optional
        Default PSS ``2(1 + 2/β)``; must be >= 1.
    psi : float, optional
        Default PSS ``1/n``.

    Raises
    ------
    InputError
        τ <= 0, ψ <= 0, η < 1, or ``J* = 1`` (every coefficient is
        thresholded away: lower ψ or η).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.ICLPARSpec(basis=basis, tau=1.0, n=100)    # η = 2(1 + 2/β) = 3
    >>> spec.j_star, spec.n_components                       # coefficients j >= J* are always 0
    (9, 8)
    >>> round(spec.sensitivity().value, 4)
    0.2075

    See Also
    --------
    iclp_ar_mean : build and fit in one call.
    ICLP : its mechanism.
    """

    eta: float | None = None
    psi: float | None = None
    name: ClassVar[str] = "iclp-ar"
    source: ClassVar[str] = "Lin & Reimherr (2026), Theorem 12.2, Remark 13"
    linear: ClassVar[bool] = False

    def __post_init__(self):
        super().__post_init__()
        eta = pss(self.n, self._beta()).eta_ar if self.eta is None else float(self.eta)
        psi = 1.0 / self.n if self.psi is None else check_positive(self.psi, "psi")
        if not eta >= 1:
            raise InputError(f"ICLP-AR needs eta >= 1, got {eta}")
        object.__setattr__(self, "eta", float(eta))
        object.__setattr__(self, "psi", float(psi))
        if self.j_star - 1 < 1:
            raise InputError("ICLP-AR thresholds every coefficient away (J* = 1)", "lower psi or eta")

    @property
    def j_star(self) -> int:
        return ar_j_star(self.basis, self.tau, self.eta, self.psi)

    @property
    def n_components(self):
        return self.j_star - 1

    @property
    def lipschitz(self):
        return np.ones(self.n_components)

    @property
    def params(self):
        return {"eta": self.eta, "psi": self.psi, "J_star": self.j_star}

    def _transform(self, c):
        x = c[: self.n_components]
        thr = ar_thresholds(self.eigenvalues, self.eta, self.psi)
        return np.sign(x) * np.maximum(np.abs(x) - thr, 0.0)


def _n_records(curves, curve_dim=None, t_dim=None) -> int:
    """Number of records of the input (public under the replace-one relation).

    A DataArray's record dim comes from names (:func:`~fdp_ppl.summaries.curves.record_and_grid_dims`);
    the rows of an array are records.
    """
    if isinstance(curves, xr.DataArray):
        rec, _ = record_and_grid_dims(curves.dims, curve_dim=curve_dim, t_dim=t_dim)
        return int(curves.sizes[rec])
    return int(as_record_array(curves).shape[0])


def _fit(spec_cls, curves, basis, curve_dim, t_dim, record_dim=None, neighbouring="replace-one", n_lower=None,
         **kw) -> LinearSummary:
    if not isinstance(basis, Eigenbasis):
        raise InputError("basis must be an Eigenbasis", "e.g. eigenbasis(Matern(rho=0.1, nu=1.5), grid)")
    if record_dim is not None:
        if curve_dim is not None and curve_dim != record_dim:
            raise InputError(f"record_dim={record_dim!r} and curve_dim={curve_dim!r} (its alias) differ",
                             "pass only record_dim")
        curve_dim = record_dim
    if n_lower is not None or neighbouring != "replace-one":  # add/remove: n private, never counted into the spec
        spec = spec_cls(basis=basis, neighbouring=neighbouring, n_lower=n_lower, **kw)
        return spec.fit(curves, curve_dim=curve_dim, t_dim=t_dim)
    n = _n_records(curves, curve_dim, t_dim)
    if n < 2:
        raise InputError("need at least 2 curves")
    return spec_cls(basis=basis, n=n, **kw).fit(curves, curve_dim=curve_dim, t_dim=t_dim)


def frl_mean(curves, basis: Eigenbasis, *, tau: float, M: int | None = None, curve_dim=None,
             t_dim=None, record_dim=None, neighbouring: str = "replace-one",
             n_lower: int | None = None) -> LinearSummary:
    """Fit :class:`FRLSpec` (n = number of records) to ``curves`` (xr.DataArray (curve, t) or ndarray (n, K)).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")          # 93 children, height (cm) at 31 ages
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.frl_mean(curves, basis, tau=200.0)      # M = floor(93^(1/3)) = 4
    >>> summary.n_components, round(summary.sensitivity().value, 4)
    (4, 8.6022)

    See Also
    --------
    FRLSpec, FRL
    """
    return _fit(FRLSpec, curves, basis, curve_dim, t_dim, record_dim, tau=tau, M=M,
                neighbouring=neighbouring, n_lower=n_lower)


def iclp_qr_mean(curves, basis: Eigenbasis, *, tau: float, eta: float | None = None, psi: float | None = None,
                 curve_dim=None, t_dim=None, record_dim=None, neighbouring: str = "replace-one",
                 n_lower: int | None = None) -> LinearSummary:
    """Fit :class:`ICLPQRSpec` (n = number of records): ridge shrinkage
    ``λ_j^η/(λ_j^η+ψ) X̄_j`` of the clipped mean (Lin & Reimherr 2026, eq. 11).

    Parameters
    ----------
    neighbouring, n_lower
        ``neighbouring="add-remove"`` with a public lower bound ``n_lower`` protects membership: n is not
        counted into the spec, the clipped records are averaged by ``max(n, n_lower)`` (the other helpers take
        the same two keywords; :class:`~fdp_ppl.summaries.SummarySpec`).

    Raises
    ------
    InputError
        NaN/inf curves, τ <= 0, ψ <= 0, η <= 1; ``n_lower`` without add/remove.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")          # 93 children, height (cm) at 31 ages
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.iclp_qr_mean(curves, basis, tau=200.0)  # τ: public bound on ‖X_i‖ (cm)
    >>> summary
    LinearSummary(ICLPQRSpec(tau=200, n=93, J=31, eta=1.5, psi=0.01075); non-private coefficients hidden)
    >>> round(summary.sensitivity().value, 4)                # Δ in ‖·‖_{1,C}
    28.8703
    >>> members = fp.iclp_qr_mean(curves, basis, tau=200.0, neighbouring="add-remove", n_lower=80)
    >>> members                                              # n = 93 is not in the spec: only n_lower
    LinearSummary(ICLPQRSpec(tau=200, add-remove, n_lower=80, J=31, eta=1.5, psi=0.0125); non-private coefficients hidden)

    See Also
    --------
    ICLPQRSpec : the public spec alone.
    ICLP : its mechanism.
    fdp_ppl.release : release it.
    """
    return _fit(ICLPQRSpec, curves, basis, curve_dim, t_dim, record_dim, tau=tau, eta=eta, psi=psi,
                neighbouring=neighbouring, n_lower=n_lower)


def rkhs_mean(curves, basis: Eigenbasis, *, tau: float, eta: float = 1.0, psi: float | None = None,
              curve_dim=None, t_dim=None, record_dim=None, neighbouring: str = "replace-one",
              n_lower: int | None = None) -> LinearSummary:
    """Fit :class:`RKHSSpec` (n = number of records): Mirshani et al. (2019), eq. (2).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")          # 93 children, height (cm) at 31 ages
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.rkhs_mean(curves, basis, tau=200.0)
    >>> sens = summary.sensitivity()                         # Cameron–Martin norm
    >>> sens.norm, round(sens.value, 4)
    ('cameron-martin', 20.699)

    See Also
    --------
    RKHSSpec, GaussianMechanism
    """
    return _fit(RKHSSpec, curves, basis, curve_dim, t_dim, record_dim, tau=tau, eta=eta, psi=psi,
                neighbouring=neighbouring, n_lower=n_lower)


def iclp_ar_mean(curves, basis: Eigenbasis, *, tau: float, eta: float | None = None, psi: float | None = None,
                 curve_dim=None, t_dim=None, record_dim=None, neighbouring: str = "replace-one",
                 n_lower: int | None = None) -> LinearSummary:
    """Fit :class:`ICLPARSpec` (n = number of records): soft thresholding (Theorem 12.2).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")          # 93 children, height (cm) at 31 ages
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.iclp_ar_mean(curves, basis, tau=200.0)
    >>> summary.j_star, summary.n_components                 # J* − 1 coefficients kept
    (22, 21)

    See Also
    --------
    ICLPARSpec, ICLP
    """
    return _fit(ICLPARSpec, curves, basis, curve_dim, t_dim, record_dim, tau=tau, eta=eta, psi=psi,
                neighbouring=neighbouring, n_lower=n_lower)


def sample_mean(curves, basis: Eigenbasis, *, tau: float, curve_dim=None, t_dim=None,
                record_dim=None, neighbouring: str = "replace-one",
                n_lower: int | None = None) -> LinearSummary:
    """Fit :class:`SampleMeanSpec` (n = number of records): the clipped mean, no smoothing.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")          # 93 children, height (cm) at 31 ages
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.sample_mean(curves, basis, tau=200.0)
    >>> round(summary.sensitivity().value, 1)                # far above ICLP-QR's 28.9: compare, do not release
    1104.2

    See Also
    --------
    SampleMeanSpec, iclp_qr_mean
    """
    return _fit(SampleMeanSpec, curves, basis, curve_dim, t_dim, record_dim, tau=tau,
                neighbouring=neighbouring, n_lower=n_lower)


__all__ = ["PSS", "pss", "kernel_beta", "ridge_shrinkage", "ar_thresholds", "ar_j_star", "EigenSpec",
           "SampleMeanSpec", "FRLSpec", "RidgeSpec", "ICLPQRSpec", "RKHSSpec", "ICLPARSpec", "frl_mean",
           "iclp_qr_mean", "iclp_ar_mean", "rkhs_mean", "sample_mean"]
