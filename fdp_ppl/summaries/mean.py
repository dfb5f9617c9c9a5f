"""Mean-curve summaries with their sensitivities.

All estimators start from the sample mean of the curves clipped to a public
L² bound τ, expressed in the eigenbasis of the noise kernel:
``X̄_j = <X̄, φ_j>_w``. Then (Lin & Reimherr 2026, Theorem 12; Mirshani et al.
2019, eq. 2):

* FRL: ``X̄_j`` for ``j <= M`` (projection on the first M eigenfunctions);
* ICLP-QR / RKHS ridge: ``λ_j^η/(λ_j^η + ψ) · X̄_j`` (eq. 11);
* ICLP-AR: soft thresholding ``sgn(X̄_j)(|X̄_j| − ψ/(2λ_j^{η/2}))^+`` for
  ``j < J*``, where ``J* = min{j : τ <= ψ/(2λ_j^{η/2})}`` (Remark 13) — all
  later coefficients are zero for every dataset.

Privacy-safe parameter selection (PSS, Section 4.4 / Corollary 15):
``ψ = 1/n``, ``η_QR = 1 + 2/β``, ``η_AR = 2(1 + 2/β)``,
``M ∈ [n^{1/(ηβ)}, n^{1/3}]``, with β the eigen-decay exponent of the kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..errors import check_positive
from ..spaces import Eigenbasis
from .base import LinearSummary
from .curves import DataDerived, as_curves, clipped_mean


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
    """
    if int(n) < 1:
        raise ValueError("n must be >= 1")
    if not beta > 1:
        raise ValueError(f"the eigenvalues must decay faster than 1/j (beta > 1), got beta={beta}")
    eta_qr = 1.0 + 2.0 / beta
    lo = math.ceil(n ** (1.0 / (eta_qr * beta)))
    hi = max(lo, math.floor(n ** (1.0 / 3.0)))
    return PSS(psi=1.0 / n, eta_qr=eta_qr, eta_ar=2.0 * eta_qr, m_range=(lo, hi), beta=float(beta))


def _tau(tau):
    if isinstance(tau, DataDerived):
        return DataDerived(check_positive(tau, "tau"))
    return check_positive(tau, "tau", "pass a public bound on the curves' L2 norm")


def _mean_coefficients(curves, basis: Eigenbasis, tau: float, curve_dim=None, t_dim=None):
    if not isinstance(basis, Eigenbasis):
        raise TypeError("basis must be an Eigenbasis, e.g. eigenbasis(Matern(rho=0.1, nu=1.5), grid)")
    if isinstance(curves, xr.DataArray):
        da = as_curves(curves, curve_dim=curve_dim, t_dim=t_dim)
        if not np.allclose(da.attrs["grid"].t, basis.grid.t):
            raise ValueError("the curves' grid differs from the basis grid; build the basis on "
                             "Grid.from_points(curves[t_dim].values)")
        curves = da
    mean, n, n_clipped, _ = clipped_mean(curves, basis.grid, tau)
    return basis.coefficients(mean), n, n_clipped



def frl_mean(curves, basis: Eigenbasis, *, tau: float, M: int | None = None,
             curve_dim=None, t_dim=None) -> LinearSummary:
    """Sample mean projected on the first M eigenfunctions (FRL summary).

    Parameters
    ----------
    curves : xr.DataArray (curve, t) or ndarray (n, K) on ``basis.grid``
    basis : Eigenbasis
    tau : float
        Public L² bound; each curve is clipped to it.
    M : int, optional
        Number of components; default the upper end of the PSS range
        ``floor(n^{1/3})``.

    Returns
    -------
    LinearSummary
        ``lipschitz = 1`` on j < M; natural norm ``"l1"`` with sensitivity
        ``2Mτ/n`` (paper, Theorem 12.1) or ``2τ√M/n`` (tight).

    Raises
    ------
    ValueError
        NaN/inf curves, τ <= 0, M < 1 or M larger than the basis.
    """
    tau = _tau(tau)
    c, n, n_clipped = _mean_coefficients(curves, basis, tau, curve_dim, t_dim)
    if M is None:
        M = pss(n, kernel_beta(basis)).m_range[1]
    M = int(M)
    if not 1 <= M <= basis.size:
        raise ValueError(f"M must lie in 1..{basis.size} (retained eigenpairs), got {M}")
    return LinearSummary(name="frl", coefficients=c[:M].copy(), lipschitz=np.ones(M), basis=basis, tau=tau,
                         n=n, n_clipped=n_clipped, data_dependent=isinstance(tau, DataDerived), params={"M": M},
                         source="Lin & Reimherr (2026), Theorem 12.1", default_norm="l1")


def _ridge(curves, basis, tau, eta, psi, name, curve_dim, t_dim, min_eta):
    tau = _tau(tau)
    c, n, n_clipped = _mean_coefficients(curves, basis, tau, curve_dim, t_dim)
    if eta is None:
        eta = pss(n, kernel_beta(basis)).eta_qr
    eta = float(eta)
    psi = 1.0 / n if psi is None else check_positive(psi, "psi")
    if eta < min_eta:
        raise ValueError(f"eta must be >= {min_eta} for the {name} mean, got {eta}")
    lam_eta = basis.power(eta)
    w = lam_eta / (lam_eta + psi)
    return LinearSummary(name=name, coefficients=w * c, lipschitz=w, basis=basis, tau=tau, n=n,
                         n_clipped=n_clipped, data_dependent=isinstance(tau, DataDerived), params={"eta": eta, "psi": psi},
                         source=("Lin & Reimherr (2026), eq. (11), Theorem 12.3" if name == "iclp-qr"
                                 else "Mirshani et al. (2019), eq. (2), Theorem 4.1"),
                         default_norm="1,C" if name == "iclp-qr" else "cameron-martin")


def iclp_qr_mean(curves, basis: Eigenbasis, *, tau: float, eta: float | None = None,
                 psi: float | None = None, curve_dim=None, t_dim=None) -> LinearSummary:
    """ICLP-QR mean: ridge shrinkage ``λ_j^η/(λ_j^η+ψ) X̄_j`` of the clipped mean.

    Minimises ``(1/n) Σ_i ‖X_i − θ‖² + ψ‖θ‖²_{C^η}`` (Lin & Reimherr 2026,
    eq. 9 with QR penalty; closed form eq. 11).

    Parameters
    ----------
    curves : xr.DataArray (curve, t) or ndarray (n, K) on ``basis.grid``
    basis : Eigenbasis
    tau : float
        Public L² clipping bound.
    eta : float, optional
        Penalty power, default PSS ``1 + 2/β``. Must exceed 1.
    psi : float, optional
        Penalty weight, default PSS ``1/n``.

    Returns
    -------
    LinearSummary
        Natural norm ``"1,C"``: paper bound ``(2τ/n) Σ_j λ_j^{η−1/2}/(λ_j^η+ψ)``
        (Theorem 12.3) or the tight ℓ² form (default for releases).

    Raises
    ------
    ValueError
        NaN/inf curves, τ <= 0, ψ <= 0, η <= 1.
    """
    out = _ridge(curves, basis, tau, eta, psi, "iclp-qr", curve_dim, t_dim, min_eta=1.0)
    if out.params["eta"] <= 1.0:
        raise ValueError("ICLP-QR needs eta > 1 (Theorem 12.3)")
    return out


def rkhs_mean(curves, basis: Eigenbasis, *, tau: float, eta: float = 1.0, psi: float | None = None,
              curve_dim=None, t_dim=None) -> LinearSummary:
    """RKHS-penalised mean of Mirshani et al. (2019), eq. (2): the same ridge
    shrinkage as ICLP-QR with η >= 1 (default 1), natural norm Cameron–Martin
    (Theorem 4.1).

    Parameters
    ----------
    curves, basis, tau : see :func:`iclp_qr_mean`
    eta : float
        Penalty power, >= 1.
    psi : float, optional
        Penalty weight φ of the paper; default ``1/n``.

    Raises
    ------
    ValueError
        NaN/inf curves, τ <= 0, ψ <= 0, η < 1.
    """
    return _ridge(curves, basis, tau, eta, psi, "rkhs", curve_dim, t_dim, min_eta=1.0)


def ar_j_star(basis: Eigenbasis, tau: float, eta: float, psi: float) -> int:
    """``J* = min{j >= 1 : τ <= ψ/(2λ_j^{η/2})}`` (Remark 13), 1-based; returns
    ``J + 1`` if no retained eigenpair reaches the threshold."""
    thr = psi / (2.0 * basis.power(eta / 2.0))
    hit = np.nonzero(tau <= thr)[0]
    return int(hit[0]) + 1 if hit.size else basis.size + 1


def iclp_ar_mean(curves, basis: Eigenbasis, *, tau: float, eta: float | None = None,
                 psi: float | None = None, curve_dim=None, t_dim=None) -> LinearSummary:
    """ICLP-AR mean: soft thresholding of the clipped mean's coefficients.

    Minimises ``(1/n) Σ_i ‖X_i − θ‖² + ψ‖θ‖_{1,C^η}`` (Lin & Reimherr 2026,
    Theorem 12.2): ``sgn(X̄_j)(|X̄_j| − ψ/(2λ_j^{η/2}))^+``. Since
    ``|X̄_j| <= τ``, coefficients ``j >= J*`` vanish for every dataset
    (Remark 13), so only ``J* − 1`` coefficients are kept.

    Parameters
    ----------
    curves, basis, tau : see :func:`iclp_qr_mean`
    eta : float, optional
        Default PSS ``2(1 + 2/β)``; must be >= 1.
    psi : float, optional
        Default PSS ``1/n``.

    Returns
    -------
    LinearSummary
        ``lipschitz = 1`` (soft thresholding is 1-Lipschitz); paper bound
        ``(2τ/n) Σ_{j<J*} λ_j^{-1/2}``.

    Raises
    ------
    ValueError
        NaN/inf curves, τ <= 0, ψ <= 0, η < 1, or ``J* = 1`` (every
        coefficient is thresholded away: lower ψ or η).
    """
    tau = _tau(tau)
    c, n, n_clipped = _mean_coefficients(curves, basis, tau, curve_dim, t_dim)
    if eta is None:
        eta = pss(n, kernel_beta(basis)).eta_ar
    eta = float(eta)
    psi = 1.0 / n if psi is None else check_positive(psi, "psi")
    if eta < 1:
        raise ValueError(f"ICLP-AR needs eta >= 1, got {eta}")
    j_star = ar_j_star(basis, tau, eta, psi)
    J = j_star - 1
    if J < 1:
        raise ValueError("ICLP-AR thresholds every coefficient away (J* = 1); lower psi or eta")
    thr = psi / (2.0 * basis.power(eta / 2.0))[:J]
    x = c[:J]
    coef = np.sign(x) * np.maximum(np.abs(x) - thr, 0.0)
    return LinearSummary(name="iclp-ar", coefficients=coef, lipschitz=np.ones(J), basis=basis, tau=tau, n=n,
                         n_clipped=n_clipped, data_dependent=isinstance(tau, DataDerived), params={"eta": eta, "psi": psi, "J_star": j_star},
                         source="Lin & Reimherr (2026), Theorem 12.2, Remark 13", default_norm="1,C")


def sample_mean(curves, basis: Eigenbasis, *, tau: float, curve_dim=None, t_dim=None) -> LinearSummary:
    """Clipped sample mean on all retained eigenpairs, no smoothing.

    Its ``‖·‖_{1,C}`` sensitivity is finite only because the grid is finite and
    grows without bound as the grid is refined (Theorem 7): use it for
    comparison, not for release.
    """
    tau = _tau(tau)
    c, n, n_clipped = _mean_coefficients(curves, basis, tau, curve_dim, t_dim)
    return LinearSummary(name="sample-mean", coefficients=c, lipschitz=np.ones(c.size), basis=basis, tau=tau,
                         n=n, n_clipped=n_clipped, data_dependent=isinstance(tau, DataDerived), source="sample mean of clipped curves", default_norm="1,C")


__all__ = ["PSS", "pss", "kernel_beta", "frl_mean", "iclp_qr_mean", "iclp_ar_mean", "rkhs_mean",
           "sample_mean", "ar_j_star"]
