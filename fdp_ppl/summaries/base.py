"""Summary and sensitivity containers shared by all summaries."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import dims
from ..spaces import Eigenbasis

#: Sensitivity norms understood by :meth:`LinearSummary.sensitivity`.
NORMS = ("1,C", "cameron-martin", "l1")
NEIGHBOURING = "replace-one record; n public"


@dataclass(frozen=True)
class Sensitivity:
    """Global sensitivity of a summary, with what it rests on.

    Attributes
    ----------
    value : float
        ``Δ = sup_{D ~ D'} ‖f_D − f_{D'}‖`` in ``norm``.
    norm : {"1,C", "cameron-martin", "l1"}
        ``"1,C"``: ``Σ_j |h_j|/√λ_j`` (ICLP); ``"cameron-martin"``:
        ``(Σ_j h_j²/λ_j)^{1/2}`` (Gaussian mechanism); ``"l1"``: ``Σ_j |h_j|``
        over the retained coefficients (FRL).
    bound : str
        Which bound gave ``value`` ("tight", "paper", "closed-form").
    neighbouring : str
        The neighbouring relation (replace one record, n public).
    assumptions : str
        What the bound assumes, e.g. the public clipping bound τ.
    source : str
        Paper, theorem or equation.
    data_dependent : bool
        True when a quantity behind the bound was computed from private data
        (a :class:`~fdp_ppl.errors.PrivacyLeakWarning` was raised).
    """

    value: float
    norm: str
    bound: str
    neighbouring: str = NEIGHBOURING
    assumptions: str = ""
    source: str = ""
    data_dependent: bool = False

    def attrs(self) -> dict:
        return {
            "sensitivity": float(self.value),
            "sensitivity_norm": self.norm,
            "sensitivity_bound": self.bound,
            "neighbouring": self.neighbouring,
            "sensitivity_assumptions": self.assumptions,
            "sensitivity_source": self.source,
            "sensitivity_data_dependent": int(self.data_dependent),
        }


@dataclass(frozen=True, eq=False)
class LinearSummary:
    """A (piecewise) linear summary of clipped curves, in an eigenbasis.

    The summary keeps the first ``J = coefficients.size`` eigenpairs of
    ``basis``; every coefficient beyond ``J`` is identically zero for every
    dataset, so estimate and noise live on the same retained eigenpairs
    (DESIGN invariant 2).

    Its sensitivity rests on one fact: for neighbouring datasets (replace one
    record, n public) the clipped sample mean changes by ``h = (X_1 − X_1')/n``
    with ``‖h‖ <= 2τ/n``, and each coefficient changes by at most
    ``lipschitz[j] · |h_j|``.

    This object holds the **non-private** estimate; it is an input to a
    mechanism and never part of a release.

    Attributes
    ----------
    name : str
        "frl", "iclp-qr", "iclp-ar", "rkhs" or "sample-mean".
    coefficients : ndarray, shape (J,)
        Non-private coefficients ``<f_D, φ_j>_w``.
    lipschitz : ndarray, shape (J,)
        Per-coefficient Lipschitz constants ``a_j``.
    basis : Eigenbasis
    tau : float
        Public L² clipping bound (grid norm).
    n : int
        Number of records (public).
    n_clipped : int
        Records whose norm exceeded τ and were scaled down.
    params : dict
        Tuning parameters (eta, psi, M, J_star) for metadata.
    paper_bound : dict
        Per-norm multiplier names used by ``bound="paper"``.
    """

    name: str
    coefficients: np.ndarray
    lipschitz: np.ndarray
    basis: Eigenbasis
    tau: float
    n: int
    n_clipped: int
    params: dict = field(default_factory=dict)
    source: str = ""
    default_norm: str = "1,C"
    data_dependent: bool = False

    @property
    def n_components(self) -> int:
        """Number J of retained coefficients."""
        return int(self.coefficients.size)

    @property
    def grid(self):
        """The evaluation grid of the curves."""
        return self.basis.grid

    @property
    def design(self) -> np.ndarray:
        """Map from retained coefficients to the curve on the grid, shape (K, J):
        ``curve = design @ coefficients``."""
        return self.eigenfunctions

    def public_dataset(self) -> xr.Dataset:
        """Public description of the basis, copied into releases' ``constant_data``:
        eigenvalues (basis), eigenfunctions (t, basis), quadrature weights (t)."""
        return self.basis.to_dataset().isel({dims.BASIS: slice(0, self.n_components)})

    def basis_attrs(self) -> dict:
        """Kernel and eigen-truncation metadata for releases."""
        out = dict(self.basis.kernel.params())
        out["eigen_rel_tol"] = self.basis.rel_tol
        return out

    @property
    def eigenvalues(self) -> np.ndarray:
        """Retained eigenvalues λ_1..λ_J, shape (J,)."""
        return self.basis.eigenvalues[: self.n_components]

    @property
    def eigenfunctions(self) -> np.ndarray:
        """Retained eigenfunctions on the grid, shape (K, J)."""
        return self.basis.eigenfunctions[:, : self.n_components]

    def curve(self) -> xr.DataArray:
        """The non-private summary as a curve over ``t`` (never released)."""
        return xr.DataArray(self.design @ self.coefficients, dims=(dims.T,),
                            coords={dims.T: self.grid.t}, name=f"{self.name}_nonprivate")

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """Global sensitivity in ``norm`` from public quantities (τ, n, λ_j, tuning).

        Parameters
        ----------
        norm : {"1,C", "cameron-martin", "l1"}, optional
            Defaults to the summary's natural norm.
        bound : {"tight", "paper", "closed-form"}
            For the ℓ¹-type norms ("1,C", "l1") with multipliers
            ``m_j = a_j/√λ_j`` (resp. ``a_j``):
            ``"paper"`` is ``(2τ/n) Σ_j m_j`` (Lin & Reimherr 2026, Theorem 12,
            each coefficient bounded separately);
            ``"tight"`` is ``(2τ/n) (Σ_j m_j²)^{1/2}`` (Cauchy–Schwarz with
            Bessel's inequality, ``specs/iclp.md`` §2.2; attained by
            ``X_1 − X_1' ∝ Σ_j m_j φ_j``).
            For "cameron-martin": ``"tight"`` (also "paper") is
            ``(2τ/n) max_j a_j/√λ_j`` (Mirshani et al. 2019, Theorem 4.1,
            first form; attained by ``X_1 = τφ_{j*} = −X_1'``) and
            ``"closed-form"`` is
            ``(τ/n) ((2η−1)^{2−1/η} / (η² ψ^{1/η}))^{1/2}`` (Theorem 4.1,
            second form; ridge summaries only).

        Returns
        -------
        Sensitivity

        Raises
        ------
        ValueError
            Unknown norm or bound, or a closed form that does not apply.
        """
        norm = norm or self.default_norm
        if norm not in NORMS:
            raise ValueError(f"unknown sensitivity norm {norm!r}; use one of {NORMS}")
        a = np.asarray(self.lipschitz, dtype=float)
        lam = self.eigenvalues
        scale = 2.0 * self.tau / self.n
        assumptions = f"each record clipped to L2 norm <= tau={self.tau:g} on the grid; n={self.n}"
        if norm in ("1,C", "l1"):
            m = a / np.sqrt(lam) if norm == "1,C" else a
            if bound == "paper":
                value = scale * float(np.sum(m))
                src = "Lin & Reimherr (2026), Theorem 12 (coefficient-wise bound)"
            elif bound == "tight":
                value = scale * float(np.sqrt(np.sum(m * m)))
                src = "specs/iclp.md §2.2 (Cauchy–Schwarz + Bessel; tight under ‖X‖ <= tau)"
            else:
                raise ValueError(f"bound {bound!r} is not available for norm {norm!r}; use 'tight' or 'paper'")
        else:
            if bound in ("tight", "paper"):
                value = scale * float(np.max(a / np.sqrt(lam)))
                src = "Mirshani et al. (2019), Theorem 4.1 (sup_j form)"
            elif bound == "closed-form":
                eta, psi = self.params.get("eta"), self.params.get("psi")
                if self.name not in ("iclp-qr", "rkhs") or eta is None or psi is None or eta < 1:
                    raise ValueError("the closed-form Cameron–Martin bound applies only to ridge (RKHS) means with eta >= 1")
                value = (self.tau / self.n) * float(np.sqrt((2 * eta - 1) ** (2 - 1 / eta) / (eta**2 * psi ** (1 / eta))))
                src = "Mirshani et al. (2019), Theorem 4.1 (closed form)"
            else:
                raise ValueError(f"unknown bound {bound!r}; use 'tight', 'paper' or 'closed-form'")
        return Sensitivity(value=value, norm=norm, bound=bound, assumptions=assumptions, source=src,
                           data_dependent=self.data_dependent)

    def attrs(self) -> dict:
        """Public metadata of the summary (no data-derived value except n_clipped)."""
        out = {"summary": self.name, "tau": float(self.tau), "n": int(self.n),
               "n_components": self.n_components, "summary_source": self.source}
        for k, v in self.params.items():
            out[k] = v
        return out


__all__ = ["Sensitivity", "LinearSummary", "NORMS", "NEIGHBOURING"]
