"""ε-DP functional PCA by the exponential mechanism (Awan, Kenney, Reimherr & Slavković 2019, §4–6).

Public spec → data-holder fit → one private frame per ε.

* :class:`FPCASpec` — public choices only: grid, basis (Fourier on the grid or a
  kernel eigenbasis), m, k, ε, τ (public L² bound) and the rule that builds Σ.
* :meth:`FPCASpec.fit` — clips each curve to ‖X_i‖ ≤ τ, divides by τ (so
  ‖X_i‖ ≤ 1; never rescaled by the data's largest norm), takes coefficients by
  quadrature, clips the coefficient rows to norm ≤ 1 (spec §2.3d) and returns the
  **uncentred** scatter matrix G = XᵀX (m×m) in a :class:`FPCAFit` (data holder only).
* Two targets on orthonormal m×k frames V, named distinctly:

  - ``form="bingham"`` — the paper's §5 density ``∝ etr(ε/(2Δ) Vᵀ(G − Σ⁻¹)V)``
    w.r.t. the uniform law on frames (matrix Bingham). Its base measure
    ``∝ etr(−(ε/2)VᵀΣ⁻¹V)`` is data-independent, so it is ε-DP if sampled
    exactly, but it depends on the **scale** of Σ (spec §2.3b–c).
  - ``form="gp-base"`` — Theorem 4.1: ``∝ exp(ε/(2Δ) tr(VᵀGV))`` w.r.t. the law
    of span(Z), Z with k i.i.d. N(0, Σ) columns; w.r.t. the uniform law this is
    ``etr(ε/(2Δ) VᵀGV) det(VᵀΣ⁻¹V)^{-m/2}`` and does not depend on the scale of Σ.

* Sensitivity: ξ_X(P) = Σ_i ‖P X_i‖² (uncentred) with ‖X_i‖ ≤ 1 has Δ = 1 under
  replace-one adjacency (Awan et al. 2019, §4). Centring with the empirical mean
  would change Δ (4(1 − 1/n) for k = 1, ≤ 6(1 − 1/n) for any k; spec §5.2); this
  module does **not** centre, and :attr:`FPCASpec.sensitivity` is 1.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .._names import FPCA_FORMS, FPCA_SAMPLERS
from ..accounting import PrivacyBudget
from ..errors import InputError, SeededReleaseWarning, check_epsilon
from ..noise.sampling import seed_sequence
from ..releasing.schema import (BASIS_FUNCTIONS, COMPONENTS, CONSTANT_DATA, EXPMECH_FPCA, FRAME, POSTERIOR, QUADRATURE_WEIGHTS,
                      SIGMA, fpca_attrs)
from ..spaces import Eigenbasis, Grid
from .samplers import (acg_acceptance_bound, bingham_log_density_floor, fallback_guarantee, gibbs_matrix_bingham,
                       gp_base_acceptance_bound, gp_base_log_density_floor, proposal_budget, pure_guarantee,
                       pure_proposal_budget, random_frame, rejection_from_gp_base, sample_vector_bingham)

FORMS = FPCA_FORMS
SAMPLERS = FPCA_SAMPLERS
KIND = EXPMECH_FPCA

#: Default bound δ on the probability that an exact draw exhausts its fixed proposal budget and falls back, when the
#: (ε', δ') variant is asked for (``delta=`` / ``--delta``).
DEFAULT_DELTA = 1e-10
#: Default η of the pure ε''-DP plan: the fallback probability bound p* is at most η·f_min, so
#: ε'' ≤ ε + log(1 + η e^{−ε}) − log(1 − p*) (an inflation of ε by at most ~1e-10).
DEFAULT_ETA = 1e-10
#: Largest number of proposals (T × draws) an exact release will run; larger requests are refused before the charge.
DEFAULT_MAX_PROPOSALS = 20_000_000
#: Public floor on Gibbs scans for k > 1: at n = 100–500 the invariant statistics matched the exact law within
#: 5–10 scans (spec §4) and at m = 5 were stationary after 5–20 (studies.fpca.gibbs_convergence);
#: 20 is the upper end. A floor, not a certificate: the chain's distance to the target stays unknown.
GIBBS_MIN_SCANS = 20
#: Public floor on NUTS tuning steps: PyMC's step-size dual averaging and diagonal mass-matrix windows (default
#: 1000 steps) have not settled after fewer than ~100 steps in the checks of spec §4.1. Not a certificate either.
NUTS_MIN_TUNE = 100


def fourier_basis(grid: Grid, m: int) -> np.ndarray:
    """First m Fourier functions 1, √2 sin 2πrt, √2 cos 2πrt, … on ``grid``,
    orthonormalised in the grid's quadrature inner product (Gram–Schmidt in order,
    so each function is changed only by the quadrature error).

    Parameters
    ----------
    grid : Grid
    m : int
        1 ≤ m ≤ K (grid size).

    Returns
    -------
    ndarray, shape (K, m)
        ``B[t, j]``, with ``Bᵀ diag(w) B = I_m``.

    Raises
    ------
    InputError
        m < 1 or m > K.
    """
    K = grid.size
    if not 1 <= m <= K:
        raise InputError(f"m = {m} basis functions need 1 <= m <= {K} (the grid size)",
                         "choose m no larger than the number of grid points")
    t = grid.t
    cols = [np.ones_like(t)]
    r = 1
    while len(cols) < m:
        cols.append(np.sqrt(2) * np.sin(2 * np.pi * r * t))
        if len(cols) < m:
            cols.append(np.sqrt(2) * np.cos(2 * np.pi * r * t))
        r += 1
    B = np.stack(cols, axis=1)
    sw = np.sqrt(grid.weights)[:, None]
    q, rr = np.linalg.qr(sw * B)
    q = q * np.sign(np.diag(rr))
    if np.min(np.abs(np.diag(rr))) < 1e-8:
        raise InputError(f"the grid cannot resolve {m} Fourier functions", "choose a smaller m")
    return q / sw


@dataclass(frozen=True, kw_only=True, eq=False)
class FPCASpec:
    """Public settings of the ε-DP FPCA mechanism (nothing here may depend on the data).

    Parameters
    ----------
    grid : Grid
        Evaluation grid (K points) with quadrature weights.
    m : int
        Number of orthonormal basis functions (1 ≤ k ≤ m ≤ K).
    k : int
        Number of components released jointly as one frame (one ε per frame).
    epsilon : float
        Privacy budget per released frame, > 0.
    tau : float
        Public L² bound: curves are clipped to ‖X_i‖ ≤ τ and divided by τ.
    basis : "fourier" or Eigenbasis
        Fourier functions on the grid (:func:`fourier_basis`) or the first m
        eigenfunctions of a kernel's :class:`~fdp_ppl.spaces.Eigenbasis` on the same grid.
    sigma : None or ndarray, shape (m, m)
        Base covariance Σ in basis coordinates. ``None``: the public rule
        ``Σ = sigma_scale · diag(i^{-sigma_power})``, i = 1..m, for the Fourier
        basis (paper §6.1: Σ_ii = i⁻³), and ``sigma_scale · diag(λ_1..λ_m)`` (the
        kernel's operator eigenvalues) for an eigenbasis (paper §6.2).
    sigma_power : float
        Exponent of the Fourier rule (default 3).
    sigma_scale : float
        Multiplier of Σ (> 0). Irrelevant for ``gp-base``; changes the ``bingham`` law.
    form : {"bingham", "gp-base"}
        Which target (module docstring).

    Raises
    ------
    InputError
        k > m, m larger than the grid or the eigenbasis, ε ≤ 0, τ ≤ 0, bad Σ, unknown form.
    """

    grid: Grid
    m: int
    k: int
    epsilon: float
    tau: float
    basis: object = "fourier"
    sigma: np.ndarray | None = None
    sigma_power: float = 3.0
    sigma_scale: float = 1.0
    form: str = "bingham"
    privacy_unit: object = None
    _basis_values: np.ndarray = field(init=False, repr=False, compare=False)
    _sigma: np.ndarray = field(init=False, repr=False, compare=False)
    _sigma_rule: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.privacy_unit is not None:
            from ..io.units import PrivacyUnit

            if not isinstance(self.privacy_unit, PrivacyUnit):
                raise InputError("privacy_unit must be an fdp_ppl.io.units.PrivacyUnit",
                                 "e.g. PrivacyUnit('subject_id', combine='mean')")
        if not isinstance(self.grid, Grid):
            raise InputError("grid must be an fdp_ppl.spaces.Grid",
                             "build one with Grid.uniform(K) or Grid.from_points(t)")
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        tau = float(self.tau)
        if not np.isfinite(tau) or tau <= 0:
            raise InputError(f"tau must be a finite public bound > 0, got {self.tau!r}",
                             "pass the public L2 bound of the curves, e.g. tau=1.0")
        object.__setattr__(self, "tau", tau)
        m, k = int(self.m), int(self.k)
        if k < 1 or m < 1:
            raise InputError(f"need m >= 1 and k >= 1, got m = {m}, k = {k}", "pass e.g. m=5, k=1")
        if k > m:
            raise InputError(f"k = {k} components cannot exceed m = {m} basis functions", "choose k <= m")
        if m > self.grid.size:
            raise InputError(f"m = {m} basis functions exceed the {self.grid.size} grid points",
                             "choose m no larger than the grid")
        if self.form not in FORMS:
            raise InputError(f"unknown form {self.form!r}", f"choose one of {FORMS}")
        scale = float(self.sigma_scale)
        if not np.isfinite(scale) or scale <= 0:
            raise InputError("sigma_scale must be > 0", "pass e.g. sigma_scale=1.0")
        if isinstance(self.basis, Eigenbasis):
            if self.basis.grid != self.grid:
                raise InputError("the eigenbasis was built on another grid", "build it on spec.grid")
            if m > self.basis.size:
                raise InputError(f"m = {m} exceeds the {self.basis.size} retained eigenfunctions",
                                 "choose a smaller m")
            B = np.asarray(self.basis.eigenfunctions[:, :m])
            default_sigma = np.diag(np.asarray(self.basis.eigenvalues[:m]))
            rule = f"{scale:g} * diag(kernel operator eigenvalues 1..{m}) of {self.basis.kernel!r}"
        elif self.basis == "fourier":
            B = fourier_basis(self.grid, m)
            default_sigma = np.diag(np.arange(1, m + 1, dtype=float) ** (-float(self.sigma_power)))
            rule = f"{scale:g} * diag(i^-{float(self.sigma_power):g}), i = 1..{m}"
        else:
            raise InputError(f"unknown basis {self.basis!r}", "pass 'fourier' or an fdp_ppl.spaces.Eigenbasis")
        if self.sigma is not None:
            S = np.array(self.sigma, dtype=float)
            if S.shape != (m, m) or not np.all(np.isfinite(S)) or not np.allclose(S, S.T):
                raise InputError(f"sigma must be a finite symmetric ({m}, {m}) matrix",
                                 "pass a public covariance")
            rule = f"{scale:g} * user-supplied public matrix"
        else:
            S = default_sigma
        S = scale * 0.5 * (S + S.T)
        if np.linalg.eigvalsh(S)[0] <= 0:
            raise InputError("sigma must be positive definite", "pass a positive-definite public covariance")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "_basis_values", B)
        object.__setattr__(self, "_sigma", S)
        object.__setattr__(self, "_sigma_rule", rule)

    # ---------------------------------------------------------------- public quantities
    @property
    def basis_values(self) -> np.ndarray:
        """The public basis on the grid, shape (K, m), orthonormal in the quadrature inner product."""
        return self._basis_values

    @property
    def Sigma(self) -> np.ndarray:
        """Base covariance Σ in basis coordinates, shape (m, m)."""
        return self._sigma

    @property
    def sigma_rule(self) -> str:
        """How Σ was built (recorded in the release attrs)."""
        return self._sigma_rule

    @property
    def basis_name(self) -> str:
        return "fourier" if isinstance(self.basis, str) else f"eigenbasis {self.basis.kernel!r}"

    @property
    def sensitivity(self) -> float:
        """Δ = 1: sensitivity of the uncentred objective Σ‖PX_i‖² with ‖X_i‖ ≤ 1
        (Awan et al. 2019, §4; replace-one adjacency). With a privacy unit: 1 for ``combine="mean"`` (a unit
        contributes the mean of its ``x xᵀ``, trace ≤ 1) and k for ``max_contributions=k`` (k records)."""
        return float(1 if self.privacy_unit is None else self.privacy_unit.contributions)

    @property
    def scale(self) -> float:
        """ε/(2Δ), the factor multiplying the objective (Prop. 3.1)."""
        return self.epsilon / (2.0 * self.sensitivity)

    def bingham_parameter(self, gram) -> np.ndarray:
        """The matrix A of the target ``etr(VᵀAV)`` of the Bingham form: ``ε/(2Δ)(G − Σ⁻¹)``, shape (m, m)."""
        return self.scale * (np.asarray(gram, dtype=float) - np.linalg.inv(self._sigma))

    def log_density(self, V, gram) -> np.ndarray:
        """Unnormalised log-density of the spec's form w.r.t. the uniform law on frames.

        Parameters
        ----------
        V : ndarray, shape (..., m, k)
            Orthonormal frames.
        gram : ndarray, shape (m, m)

        Returns
        -------
        ndarray, shape (...)
            ``bingham``: tr(VᵀAV); ``gp-base``: (ε/2Δ) tr(VᵀGV) − (m/2) log det(VᵀΣ⁻¹V) (spec §2.3b).
        """
        V = np.asarray(V, dtype=float)
        if self.form == "bingham":
            return np.einsum("...ik,ij,...jk->...", V, self.bingham_parameter(gram), V)
        Si = np.linalg.inv(self._sigma)
        M = np.einsum("...ik,ij,...jl->...kl", V, Si, V)
        return self.scale * np.einsum("...ik,ij,...jk->...", V, np.asarray(gram, float), V) \
            - 0.5 * self.m * np.linalg.slogdet(M)[1]

    def attrs(self) -> dict:
        """Public metadata of the mechanism (numbers and strings only)."""
        return {"epsilon": self.epsilon, "tau": self.tau, "m": self.m, "k": self.k, "basis": self.basis_name,
                "sigma_rule": self.sigma_rule, "form": self.form, "sensitivity": self.sensitivity,
                "objective": "uncentred sum_i ||P X_i||^2, ||X_i|| <= 1 (Awan et al. 2019, Sec. 4)",
                "centring": "none", "adjacency": "replace-one", **self.grid.attrs(),
                **({"privacy_unit": "record"} if self.privacy_unit is None else
                   {**self.privacy_unit.attrs(), "adjacency": f"replace one {self.privacy_unit.column} (all its "
                                                             "records); the number of units public"})}

    # ---------------------------------------------------------------- data holder
    def coefficients(self, curves) -> tuple[np.ndarray, int]:
        """Clipped, τ-scaled basis coefficients of the curves (data holder only).

        Parameters
        ----------
        curves : array_like, shape (n, K)
            Curves on the grid (same units as τ).

        Returns
        -------
        coefficients : ndarray, shape (n, m)
            Rows with norm ≤ 1.
        n_clipped : int
            Number of curves with ‖X_i‖ > τ.

        Raises
        ------
        InputError
            Wrong shape, fewer than 1 curve, or non-finite values.
        """
        x = np.asarray(curves, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.grid.size or x.shape[0] < 1:
            raise InputError(f"curves must have shape (n, {self.grid.size}), got {x.shape}",
                             "pass one row per curve evaluated on spec.grid")
        if not np.all(np.isfinite(x)):
            raise InputError("curves contain NaN or infinite values", "remove or impute them before the release")
        norms = self.grid.norm(x)
        over = norms > self.tau
        x = x * np.where(over, self.tau / np.where(norms > 0, norms, 1.0), 1.0)[:, None] / self.tau
        c = (x * self.grid.weights) @ self._basis_values
        cn = np.linalg.norm(c, axis=1)
        c = c / np.maximum(cn, 1.0)[:, None]
        return c, int(over.sum())

    def fit(self, curves, units=None, n: int | None = None) -> "FPCAFit":
        """The non-private scatter matrix G = XᵀX of the clipped coefficients (data holder only).

        Parameters
        ----------
        curves : array_like, shape (n_records, K)
        units : array_like, shape (n_records,), optional
            The unit of each record, required with a ``privacy_unit``: ``combine="mean"`` gives
            ``G = Σ_u mean_{i∈u} x_i x_iᵀ`` (n = the number of units), ``max_contributions=k`` keeps each
            unit's first k records (n = k × the number of units; missing records count as 0).
        n : int, optional
            The public n the release is for (default: the number of records, or what the unit rule gives);
            checked against the data.

        Returns
        -------
        FPCAFit

        Raises
        ------
        InputError
            Units missing or given without a privacy unit, or an n that does not match.
        """
        from ..io.records import is_lazy

        if is_lazy(curves):  # curves out of core: the Gram summed chunk by chunk on dask
            return self._fit_lazy(curves, units, n)
        c, n_clipped = self.coefficients(curves)
        if (self.privacy_unit is None) != (units is None):
            raise InputError("units= goes with a privacy_unit in the spec, and a privacy_unit needs units=",
                             "pass both or neither")
        if self.privacy_unit is None:
            n_public = c.shape[0]
            gram = c.T @ c
        else:
            u = np.asarray(units)
            if u.shape != (c.shape[0],):
                raise InputError("units= needs one id per curve", "pass the unit coordinate along the curves")
            n_units = int(np.unique(u).size)
            n_public = n_units * self.privacy_unit.contributions
            keep, w = self.privacy_unit.weights(u, n_public)
            ck = c[keep]
            gram = (ck * (n_public * w)[:, None]).T @ ck  # combine: Σ_u mean x xᵀ; max k: Σ of kept x xᵀ
        if n is not None and int(n) != n_public:
            raise InputError(f"the data give n = {n_public} but the release is planned for the public n = {n}",
                             "n is public: pass the number of records (or units) the release is for")
        return FPCAFit(spec=self, gram=gram, n=n_public, n_clipped=n_clipped)

    def chunk_gram(self, block) -> np.ndarray:
        """One chunk's share of :meth:`fit` (data holder only): ``CᵀC`` of the clipped coefficient rows of the
        finite curves (m_rows, K) (:meth:`coefficients`), flat (m²,), then the number of curves clipped."""
        c, n_clipped = self.coefficients(block)
        return np.append((c.T @ c).ravel(), n_clipped)

    def _fit_lazy(self, curves, units, n) -> FPCAFit:
        """:meth:`fit` of curves in a dask array (or dask-backed DataArray, dims ``("curve", "t")``):
        :meth:`chunk_gram` of every chunk added on dask (:func:`fdp_ppl.io.records.reduce_records`),
        never the curves gathered. n (public) is the array's length. No privacy unit out of core."""
        from ..io.records import reduce_records

        if self.privacy_unit is not None or units is not None:
            raise InputError("an FPCA with a privacy unit (units=) is not fitted out of core",
                             "load the curves and their units in memory, or drop the privacy unit")
        m = self.m
        total, n_public, bad = reduce_records(curves, self.grid.size, "curves", self.chunk_gram, m * m + 1, n=n)
        if bad:
            raise InputError("curves contain NaN or infinite values",  # no count: it depends on the data
                             "remove or impute them before the release")
        if n_public < 1:
            raise InputError(f"curves must have shape (n, {self.grid.size}), got (0, {self.grid.size})",
                             "pass one row per curve evaluated on spec.grid")
        return FPCAFit(spec=self, gram=total[: m * m].reshape(m, m), n=n_public, n_clipped=int(total[m * m]))


@dataclass(frozen=True, eq=False)
class FPCAFit:
    """Fitted (confidential) summary of ε-DP FPCA: ``gram`` = XᵀX, shape (m, m).

    Attributes
    ----------
    spec : FPCASpec
    gram : ndarray, shape (m, m)
        Uncentred scatter matrix of the clipped coefficients (data holder only).
    n : int
        Number of curves (public under replace-one adjacency).
    n_clipped : int
        Curves clipped to τ (data holder only; not released).
    """

    spec: FPCASpec
    gram: np.ndarray
    n: int
    n_clipped: int = 0

    def nonprivate_frame(self) -> np.ndarray:
        """Top-k eigenvectors of G, shape (m, k) (evaluation only; not private)."""
        w, U = np.linalg.eigh(self.gram)
        return U[:, ::-1][:, : self.spec.k]


# ---------------------------------------------------------------------- utility (Section 6)
def _proj(Q):
    Q = np.asarray(Q, dtype=float)
    return Q @ np.swapaxes(Q, -1, -2)


def variance_ratio(Q_private, gram, k: int | None = None, *, reading: str = "trace") -> np.ndarray:
    """Section 6 "variance ratio" of a private frame against the non-private one.

    Parameters
    ----------
    Q_private : ndarray, shape (..., m, k)
        Orthonormal private frames.
    gram : ndarray, shape (m, m)
        G = XᵀX (evaluation only).
    k : int, optional
        Defaults to ``Q_private.shape[-1]``.
    reading : {"trace", "frobenius"}
        The paper's formula ‖XᵀP̃X‖²_F / ‖XᵀP̂X‖²_F is dimensionally inconsistent
        (spec §3.2). ``"trace"`` (default, spec reading i): tr(P̃G)/tr(P̂G);
        ``"frobenius"`` (reading ii): ‖P̃GP̃‖²_F / ‖P̂GP̂‖²_F = ‖XP̃Xᵀ‖²_F / ‖XP̂Xᵀ‖²_F.

    Returns
    -------
    ndarray, shape (...)
        In [0, 1].
    """
    G = np.asarray(gram, dtype=float)
    Q = np.asarray(Q_private, dtype=float)
    k = Q.shape[-1] if k is None else k
    w, U = np.linalg.eigh(G)
    Qh = U[:, ::-1][:, :k]
    if reading == "trace":
        return np.einsum("...ik,ij,...jk->...", Q, G, Q) / np.trace(Qh.T @ G @ Qh)
    if reading == "frobenius":
        P = _proj(Q)
        num = np.sum((P @ G @ P) ** 2, axis=(-2, -1))
        Ph = Qh @ Qh.T
        return num / np.sum((Ph @ G @ Ph) ** 2)
    raise InputError(f"unknown reading {reading!r}", "choose 'trace' or 'frobenius'")


def subspace_distance(Q_private, Q_reference) -> np.ndarray:
    """Section 6 subspace norm ½‖P̃ − P̂‖²_F = k − ‖Q̃ᵀQ̂‖²_F, in [0, k].

    Parameters
    ----------
    Q_private : ndarray, shape (..., m, k)
    Q_reference : ndarray, shape (m, k)

    Returns
    -------
    ndarray, shape (...)
    """
    Q = np.asarray(Q_private, dtype=float)
    R = np.asarray(Q_reference, dtype=float)
    return Q.shape[-1] - np.sum((np.swapaxes(Q, -1, -2) @ R) ** 2, axis=(-2, -1))


# ---------------------------------------------------------------------- release
def _rhat_ess(traces: np.ndarray) -> tuple[float, float]:
    """Max split-R̂ and min bulk ESS over the scalar traces, shape (chains, iterations, p)."""
    import arviz as az

    traces = np.asarray(traces, dtype=float)
    if traces.ndim == 2:
        traces = traces[..., None]
    rh, es = [], []
    for j in range(traces.shape[-1]):
        x = traces[..., j]
        if np.ptp(x) == 0:
            continue
        rh.append(float(az.rhat(x)))
        es.append(float(az.ess(x)))
    return (max(rh) if rh else 1.0), (min(es) if es else float(traces.shape[0] * traces.shape[1]))


def iteration_floor(sampler: str, k: int) -> int:
    """Public floor on ``iterations`` (Gibbs scans for k > 1, NUTS tuning steps; 0 otherwise).

    Raises
    ------
    Nothing; see :data:`GIBBS_MIN_SCANS`, :data:`NUTS_MIN_TUNE` for the reasons of the values.
    """
    if sampler == "nuts":
        return NUTS_MIN_TUNE
    if sampler == "gibbs" and int(k) > 1:
        return GIBBS_MIN_SCANS
    return 0


def exact_plan(spec: FPCASpec, n: int, sampler: str, *, delta: float | None = None, eta: float = DEFAULT_ETA) -> dict:
    """The data-independent proposal budget of a release and the guarantee it gives (issue 22).

    Two certified guarantees for the exact samplers (and k = 1 Gibbs, whose every scan redraws the
    whole column from the target):

    * ``delta=None`` (default): **pure ε''-DP**. The fallback law F is the reference measure of the
      target's density f_D (uniform on the sphere for ``bingham``, ν for ``gp-base``), f_D ≥ f_min
      (data-independent: ``exp(−s(n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹)))`` for ``bingham``, ``exp(−s n)`` for
      ``gp-base``, s = ε/(2Δ)) and T is chosen so that ``p* = (1 − a_min)^T ≤ η f_min``; then
      ``ε'' = log((e^ε + p*/f_min)/(1 − p*)) ≤ ε + log(1 + η e^{−ε}) − log(1 − p*)``
      (:func:`~fdp_ppl.expmech.samplers.pure_guarantee`).
    * ``delta`` given: **(ε', δ')-DP**, ``T = ceil(log δ / log(1 − a_min))``, ε' = ε − log(1 − p*), δ' = p*
      (:func:`~fdp_ppl.expmech.samplers.fallback_guarantee`).

    For k = 1 Gibbs the chain's output is a target draw unless every one of its scans falls back (then
    the uniform starting column): the same mixture with a fallback probability ≤ p*^iterations ≤ p*.

    Parameters
    ----------
    spec : FPCASpec
    n : int
        Number of curves (public under replace-one adjacency).
    sampler : {"exact", "gibbs", "nuts"}
    delta : float, optional
        Target bound on the probability that one draw falls back, in (0, 1): the (ε', δ') variant.
    eta : float
        η of the pure plan, in (0, 1).

    Returns
    -------
    dict
        ``proposals`` T per draw (``"exact"``) or per Gibbs column update (``"gibbs"``; 0 for NUTS),
        ``p_star`` = (1 − a_min)^T and ``log_p_star``, ``log_a_min``, ``log_f_min`` (pure plan; NaN
        otherwise), ``bound`` ("proved" for the GP-base rejection,
        :func:`~fdp_ppl.expmech.samplers.gp_base_acceptance_bound`; "verified numerically" for the
        ACG sampler, :func:`~fdp_ppl.expmech.samplers.acg_acceptance_bound`), ``certified`` (1 for the
        exact samplers and k = 1 Gibbs), ``pure`` (1 for the pure plan), ``epsilon``, ``delta`` — the
        per-draw guarantee: (ε'', 0), (ε', δ'), or (ε, NaN) when uncertified.

    Raises
    ------
    InputError
        δ or η outside (0, 1).
    """
    if delta is not None and not (0.0 < float(delta) < 1.0):
        raise InputError(f"delta must be in (0, 1), got {delta!r}",
                         "pass e.g. delta=1e-10, or no delta (pure epsilon-DP)")
    if not (0.0 < float(eta) < 1.0):
        raise InputError(f"eta must be in (0, 1), got {eta!r}", "pass e.g. eta=1e-10")
    m, k = spec.m, spec.k
    nan = float("nan")
    if sampler == "nuts":
        return {"proposals": 0, "p_star": nan, "log_p_star": nan, "log_a_min": nan, "log_f_min": nan, "bound": "none",
                "certified": 0, "pure": 0, "epsilon": spec.epsilon, "delta": nan}
    if sampler == "exact" and spec.form == "gp-base":
        log_a, bound = gp_base_acceptance_bound(spec.Sigma, k, spec.scale * int(n)), "proved"
        log_f = gp_base_log_density_floor(spec.scale, n)
    else:  # ACG updates on the sphere of the complement of k - 1 columns
        log_a, bound = acg_acceptance_bound(m - k + 1), "verified numerically (not proved)"
        log_f = bingham_log_density_floor(spec.Sigma, spec.scale, n)
    certified = int(sampler == "exact" or k == 1)
    pure = int(certified and delta is None)
    if pure:
        T, log_p = pure_proposal_budget(log_a, log_f, float(eta))
        p_star = math.exp(log_p)
        eps, dlt = pure_guarantee(spec.epsilon, log_p, log_f), 0.0
    else:
        T, p_star = proposal_budget(log_a, float(DEFAULT_DELTA if delta is None else delta))
        log_p = math.log(p_star) if p_star > 0 else -math.inf
        log_f = nan
        eps, dlt = fallback_guarantee(spec.epsilon, p_star) if certified else (spec.epsilon, nan)
    return {"proposals": T, "p_star": p_star, "log_p_star": log_p, "log_a_min": log_a, "log_f_min": log_f,
            "bound": bound, "certified": certified, "pure": pure, "epsilon": eps, "delta": dlt}


def _work(plan: dict, sampler: str, k: int, draws: int, iterations: int) -> int:
    """Proposals a release runs (public): T × draws (exact), T × k × iterations × draws (Gibbs), 0 (NUTS)."""
    if sampler == "exact":
        return int(plan["proposals"]) * draws
    if sampler == "gibbs":
        return int(plan["proposals"]) * k * iterations * draws
    return 0


def release_plan(spec: FPCASpec, n: int, sampler: str, *, draws: int = 1, iterations: int = 200,
                 delta: float | None = None, max_proposals: int = DEFAULT_MAX_PROPOSALS, eta: float = DEFAULT_ETA,
                 flags: bool = False) -> dict:
    """Everything public a release decides before the charge: its plan, its cost, or its refusal.

    Parameters
    ----------
    spec : FPCASpec
    n : int
        Number of curves (public).
    sampler : {"exact", "gibbs", "nuts"}
    draws, iterations : int
    delta : float, optional
        None (default): the pure ε''-DP plan; a number: the (ε', δ') plan (:func:`exact_plan`).
    max_proposals : int
        Largest number of proposals the release may run (:func:`_work`).
    eta : float
    flags : bool
        Name the fixes as command-line flags (``--delta``) instead of arguments (``delta=``).

    Returns
    -------
    dict
        :func:`exact_plan` plus ``cost`` (:class:`~fdp_ppl.accounting.PrivacyBudget`: draws × (ε'', 0),
        draws × (ε', δ'), or draws × (ε, 0) for uncertified MCMC) and ``work`` (proposals).

    Raises
    ------
    InputError
        The work exceeds ``max_proposals`` (one line naming the fix: the (ε', δ') variant when it
        can be served, else the Bingham form with k = 1, a smaller ε or k, or a larger δ).
    """
    if sampler not in SAMPLERS:
        raise InputError(f"unknown sampler {sampler!r}", f"choose one of {SAMPLERS}")
    draws, iterations = int(draws), int(iterations)
    if draws < 1:
        raise InputError("draws must be >= 1", "pass draws=1 for one release")
    floor = iteration_floor(sampler, spec.k)
    if sampler in ("gibbs", "nuts") and iterations < max(floor, 1):
        what = "NUTS tuning steps" if sampler == "nuts" else "Gibbs scans"
        raise InputError(f"iterations = {iterations} {what} is below the public floor {max(floor, 1)} "
                         f"(an unconverged chain's privacy loss is unbounded)", "pass e.g. iterations=200")
    if spec.form == "bingham" and sampler == "exact" and spec.k > 1:
        raise InputError("no exact sampler for the Bingham form with k > 1: only Gibbs and NUTS, which are uncertified "
                         "MCMC (no certified guarantee)",
                         "use k = 1 (exact, pure epsilon-DP), sampler='gibbs' (uncertified MCMC), or form='gp-base' "
                         "(exact for any k, but refused unless n x epsilon is small)")
    if spec.form == "gp-base" and sampler == "gibbs":
        raise InputError("the Gibbs sampler serves the Bingham form only; the GP-base form is sampled by exact "
                         "rejection (or NUTS)", "use sampler='exact'")
    plan = exact_plan(spec, n, sampler, delta=delta, eta=eta)
    work = _work(plan, sampler, spec.k, draws, iterations)
    if work > int(max_proposals):
        kind = ("pure epsilon-DP" if plan["pure"] else "uncertified" if not plan["certified"] else
                f"(epsilon, delta <= {float(delta):g})-DP")
        what = (f"a {kind} {spec.form} "
                f"{sampler} release of {draws} frame{'s' if draws > 1 else ''} needs {work:.3g} proposals "
                f"({plan['proposals']:.3g} per {'draw' if sampler == 'exact' else 'column update'}; data-independent "
                f"acceptance bound {math.exp(plan['log_a_min']):.3g} at n = {int(n)}, epsilon = {spec.epsilon:g}, "
                f"k = {spec.k}"
                + (f", density floor exp({plan['log_f_min']:.4g})" if plan["pure"] else "")
                + f"), more than max_proposals = {int(max_proposals):.3g}")
        dflag = "--delta 1e-10" if flags else "delta=1e-10"
        if spec.form == "bingham" and spec.k == 1:  # its density floor exp(-s(n + range of Sigma^-1)) sets T
            other = ("a flatter Sigma (the eigenvalue range of Sigma^-1 sets the density floor), fewer basis "
                     "functions m")
        else:
            other = ("--form bingham --k 1 (exact, pure epsilon-DP)" if flags else
                     "form='bingham' with k = 1 (exact, pure epsilon-DP)")
        if plan["pure"]:
            alt = exact_plan(spec, n, sampler, delta=DEFAULT_DELTA)
            alt_work = _work(alt, sampler, spec.k, draws, iterations)
            if alt_work <= int(max_proposals):
                raise InputError(what, f"pass {dflag} for an (epsilon', delta')-DP release with {alt_work:.3g} "
                                       f"proposals (needs a ledger with a delta budget), or use {other}, a smaller "
                                       "epsilon or fewer frames")
            raise InputError(what, f"neither the pure nor the (epsilon', delta' = 1e-10) guarantee can be served "
                                   f"({alt_work:.3g} proposals): use {other}, a smaller epsilon, fewer components k "
                                   "or fewer frames")
        raise InputError(what, f"use {other}, a smaller epsilon, fewer components k or frames, or a larger delta")
    certified = bool(plan["certified"])
    plan["cost"] = PrivacyBudget(plan["epsilon"] * draws, (plan["delta"] * draws) if certified else 0.0)
    plan["work"] = work
    return plan


def fpca_release(fitted: FPCAFit, mechanism, *, draws: int = 1, random_seed=None, ledger=None, label: str = "",
                 dataset: str = "", progressbar: bool = False) -> xr.DataTree:
    """Release DP principal components: ``draws`` frames, pure ε''-DP each by default (issue 22).

    The family function :func:`fdp_ppl.release` calls for an :class:`FPCAFit` (through
    :data:`fdp_ppl.releasing.registry.RELEASES`); call ``fp.release(fitted, ExponentialMechanism(...))``.
    The sampler options below are the fields of ``mechanism``
    (:class:`~fdp_ppl.expmech.mechanism.ExponentialMechanism`); ε is the spec's.

    Guarantee (per frame; ``draws`` independent frames compose to ``draws ×`` it):

    * ``"exact"`` and k = 1 ``"gibbs"``: every draw costs exactly T proposals, generated
      whatever is accepted (data-independent run time and RNG use); the first accepted is
      released, else a public fallback F (a draw of the base law: ν for ``gp-base``, the
      uniform law for ``bingham``; the k = 1 Gibbs chain keeps its uniform start). F is the
      reference measure of the target's density f_D, and a_min (acceptance) and f_min
      (density) are data-independent lower bounds:

      - default (``delta=None``): T with ``p* = (1 − a_min)^T ≤ η f_min`` and the release is
        **pure ε''-DP**, ``ε'' = log((e^ε + p*/f_min)/(1 − p*)) ≤ ε + log(1 + η e^{−ε}) −
        log(1 − p*)`` (:func:`~fdp_ppl.expmech.samplers.pure_guarantee`); the ledger is charged
        ``draws × (ε'', 0)``. f_min = ``exp(−s(n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹)))`` (Bingham),
        ``exp(−s n)`` (GP base), s = ε/(2Δ).
      - ``delta`` given: T with ``p* ≤ δ``, **(ε' = ε − log(1 − p*), δ' = p*)-DP**
        (:func:`~fdp_ppl.expmech.samplers.fallback_guarantee`), charged ``draws × (ε', δ')``:
        for a ledger with a δ budget when the pure plan needs too many proposals.

      a_min: ``c_Σ^k E[exp(−s n max_{j≤k} D_j)] + (1 − c_Σ^k) e^{−s n}`` for ``gp-base``
      (proved, :func:`~fdp_ppl.expmech.samplers.gp_base_acceptance_bound`); half the
      infimum of Kent et al.'s acceptance for the ACG sampler (verified numerically, not
      proved, :func:`~fdp_ppl.expmech.samplers.acg_acceptance_bound`). A release whose
      proposals exceed ``max_proposals`` is refused before the charge (:func:`release_plan`).
    * ``"gibbs"`` with k > 1 and ``"nuts"``: **uncertified MCMC**. The guarantee is
      (ε, (1 + e^ε)γ) with γ the chain's total-variation distance to the target, which is
      not bounded: the release records ``certified = 0``, ``private = 0``,
      ``delta_guaranteed = NaN``; the ledger is charged ``draws × ε`` (it cannot charge an
      unknown δ) under a mechanism name ending "(uncertified MCMC)". NUTS's run time
      depends on the data (tree depths; not padded); PyMC's log lines (including its
      "Sampling ... took X seconds") are silenced. Iterations below a public floor
      (:func:`iteration_floor`) are refused.

    Parameters
    ----------
    fitted : FPCAFit
        From :meth:`FPCASpec.fit` (data holder only).
    mechanism : ExponentialMechanism
        Carries ``sampler``, ``iterations``, ``max_proposals``, ``delta``, ``eta`` and
        ``diagnostics`` (described here):
    sampler : {"exact", "gibbs", "nuts"}
        ``"exact"``: Bingham form with k = 1 by ACG rejection (Kent et al. 2018);
        GP-base form (any k) by rejection from the base measure (Thm 4.1).
        ``"gibbs"``: Bingham form, any k, ``iterations`` column-wise Gibbs scans
        (Hoff 2009) from a uniform random start; each released draw is the last
        state of its own chain. Not exact for k > 1 (the guarantee is then
        (ε, (1 + e^ε)γ) with γ the unknown TV distance to the target, spec §4.2).
        ``"nuts"``: either form, any k: PyMC's NUTS on the Euclidean
        parametrisation of :func:`fpca_pymc_model` (k Gaussian vectors whose
        span is the frame; the exponential-mechanism term as a potential), one
        chain per released draw from a data-independent random start,
        ``iterations`` tuning steps, the frame of the chain's last state
        (orthonormalised). Never exact (``exact = 0``): the same (ε, (1 + e^ε)γ)
        caveat as Gibbs.
    draws : int
        Number of released frames; the ledger is charged ``draws ×`` the per-frame guarantee.
    iterations : int
        Gibbs scans, or NUTS tuning steps, per chain (fixed in advance; ignored by ``"exact"``);
        at least :data:`GIBBS_MIN_SCANS` (Gibbs, k > 1) or :data:`NUTS_MIN_TUNE` (NUTS).
    random_seed : None, int, sequence or Generator
        None (default): fresh OS entropy. A seed warns :class:`~fdp_ppl.errors.SeededReleaseWarning`.
    ledger : PrivacyLedger or FileLedger, optional
        Charged before any draw; a later failure never refunds.
    label, dataset : str
        Ledger entry details.
    diagnostics : bool
        For ``"gibbs"``: record max split-R̂ and min ESS of the traces of the
        rotation/sign-invariant quantities (explained-variance ratio tr(VᵀGV)/tr(G)
        and the entries of VVᵀ) in attrs. These are computed on the confidential
        data and are **not covered by ε** (``diagnostics_private = 1``), so they are
        off by default: turn them on only for a release that stays with the data
        holder, or diagnose on public data with the same (n, m, ε, Σ).
    max_proposals : int
        Largest number of proposals a release runs (T × draws exact, T × k × iterations × draws
        Gibbs; ~0.2 µs per proposal for k = 1, ~1 µs for k = 2); more is refused before the charge.
    delta : float, optional
        None (default): the pure ε''-DP plan. A number in (0, 1): the (ε', δ') plan with each
        draw's fallback probability ≤ δ (e.g. 1e-10).
    eta : float
        η of the pure plan (p* ≤ η f_min), in (0, 1); default 1e-10.
    progressbar : bool
        Show progress of the Gibbs scans or of PyMC's NUTS chains.

    Returns
    -------
    xr.DataTree
        ``posterior``: ``components`` (chain, draw, component, t) — the released
        functions on the grid (in units of the clipped, τ-divided curves: unit
        L² norm) — and ``frame`` (chain, draw, basis, component);
        ``constant_data``: ``basis_functions`` (t, basis), ``quadrature_weights`` (t),
        ``sigma`` (basis, basis2); root attrs: ε, τ, n, m, k, basis, sigma_rule,
        form, sampler, iterations, exact (1/0), fp_safe = 0, noise_seeded,
        epsilon_guaranteed, delta_guaranteed (0 for the pure plan, NaN when not bounded), pure,
        certified, private, guarantee, proposal_budget, fallback_bound_log (log p*),
        density_floor_log (log f_min; NaN unless pure), eta, fallback, delta_target (0 unless
        given), budget_spent_epsilon,
        budget_spent_delta, rhat/ess (Gibbs, only when asked for). Acceptance rates,
        proposals used and whether a fallback was taken depend on the data and are
        neither written nor returned.

    Raises
    ------
    InputError
        Unknown sampler, a sampler that does not serve the form, draws < 1, iterations
        below the floor, δ or η ∉ (0, 1), or a release whose proposals exceed
        ``max_proposals`` (all before the charge; :func:`release_plan`).
    BudgetExceededError
        From the ledger; nothing is drawn.
    """
    spec = fitted.spec
    sampler, iterations, diagnostics = mechanism.sampler, mechanism.iterations, mechanism.diagnostics
    max_proposals, delta, eta = mechanism.max_proposals, mechanism.delta, mechanism.eta
    draws, iterations = int(draws), int(iterations)
    seeded = random_seed is not None
    if seeded:
        warnings.warn("the release is drawn from the given random_seed: anyone who learns the seed can "
                      "regenerate the draw, so the release is private only while the seed stays secret; pass no "
                      "seed for a real release (fresh OS entropy)", SeededReleaseWarning, stacklevel=2)
    plan = release_plan(spec, fitted.n, sampler, draws=draws, iterations=iterations, delta=delta,
                        max_proposals=max_proposals, eta=eta)
    T = plan["proposals"]
    certified = bool(plan["certified"])
    cost = plan["cost"]
    mech_name = f"expmech-fpca-{spec.form}-{sampler}" + ("" if certified else " (uncertified MCMC)")
    if ledger is not None:
        lab = label or mech_name
        if not certified:
            lab += " [uncertified MCMC: delta not bounded, only epsilon charged]"
        ledger.spend(cost, lab, dataset=dataset, mechanism=mech_name)
    rng = np.random.default_rng(seed_sequence(random_seed))
    G = np.asarray(fitted.gram, dtype=float)
    m, k = spec.m, spec.k
    extra: dict = {}
    if sampler == "nuts":
        frames, tr = _nuts_frames(fitted, draws, iterations, rng, diagnostics=diagnostics, progressbar=progressbar)
        exact, its = 0, iterations
        if diagnostics:
            rhat, ess = _rhat_ess(tr["invariant"])
            extra.update(rhat_invariant=rhat, ess_invariant=ess, diagnostics_private=1, divergences=tr["divergences"],
                         diagnostics_on="explained-variance ratio and entries of V V^T (NUTS draws after tuning)")
    elif spec.form == "gp-base":
        frames = rejection_from_gp_base(G, spec.Sigma, k, spec.scale, draws, rng, proposals=T)
        exact, its = 1, 0
    elif sampler == "exact":
        frames = sample_vector_bingham(spec.bingham_parameter(G), draws, rng, proposals=T)[:, :, None]
        exact, its = 1, 0
    else:
        A = spec.bingham_parameter(G)
        iu = np.triu_indices(m)
        trG = max(np.trace(G), 1e-300)

        def invariant(V):
            P = V @ V.T
            return np.concatenate([[np.trace(V.T @ G @ V) / trG], P[iu]])

        frames, tr = gibbs_matrix_bingham(A, k, iterations, rng, chains=draws, proposals=T,
                                          trace=invariant if diagnostics else None,
                                          progress=_progress(draws * iterations, "Gibbs scans") if progressbar
                                          else None)
        exact, its = int(k == 1), iterations
        if diagnostics and iterations >= 4:
            rhat, ess = _rhat_ess(tr)
            extra.update(rhat_invariant=rhat, ess_invariant=ess, diagnostics_private=1,
                         diagnostics_on="explained-variance ratio and entries of V V^T")
    frames = frames.reshape(1, draws, m, k)
    B = spec.basis_values
    comps = np.einsum("tb,cdbk->cdkt", B, frames)
    t = spec.grid.points
    post = xr.Dataset(
        {COMPONENTS: (("chain", "draw", "component", "t"), comps),
         FRAME: (("chain", "draw", "basis", "component"), frames)},
        coords={"chain": [0], "draw": np.arange(draws), "component": np.arange(k), "basis": np.arange(m),
                "t": t})
    const = xr.Dataset(
        {BASIS_FUNCTIONS: (("t", "basis"), B), QUADRATURE_WEIGHTS: (("t",), spec.grid.weights),
         SIGMA: (("basis", "basis2"), spec.Sigma)},
        coords={"t": t, "basis": np.arange(m), "basis2": np.arange(m)})
    attrs = {**spec.attrs(), **fpca_attrs(), "mechanism": mech_name, "n": int(fitted.n),
             "sampler": _SAMPLER_NAMES[(spec.form, sampler)], "sampler_reference": _SAMPLER_REFERENCES[sampler, spec.form],
             "iterations": its, "exact": exact, "fp_safe": 0, "noise_seeded": int(seeded), "draws": draws,
             "budget_spent_epsilon": cost.epsilon, "budget_spent_delta": cost.delta, "private": int(certified),
             "delta": float(cost.delta) / draws, "certified": int(certified), "pure": int(plan["pure"]),
             "epsilon_guaranteed": plan["epsilon"],
             "delta_guaranteed": plan["delta"], "delta_target": float(delta) if delta is not None else 0.0,
             "proposal_budget": int(T), "fallback_bound_log": float(plan["log_p_star"]) if certified else float("nan"),
             "density_floor_log": float(plan["log_f_min"]), "eta": float(eta) if plan["pure"] else float("nan"),
             "fallback": _FALLBACKS[(spec.form, sampler)] if sampler != "nuts" else "none",
             "guarantee": _guarantee_text(spec, sampler, plan),
             "initialisation": {"gibbs": "uniform random frame (data-independent)",
                                "nuts": _NUTS_INIT}.get(sampler, "none"),
             "draws_exact": ("yes: exact draws from the mechanism, except with probability <= "
                             "exp(fallback_bound_log) a public fallback" if exact else
                             "no: MCMC after a fixed number of steps; the privacy guarantee holds only up to the "
                             "chain's distance to the target"),
             **extra}
    if ledger is not None and hasattr(ledger, "attrs"):
        attrs.update(ledger.attrs())
    post[COMPONENTS].attrs.update(long_name="private principal component (unit L2 norm on the rescaled grid)")
    tree = xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: const})
    tree.attrs = attrs
    return tree


_FALLBACKS = {
    ("gp-base", "exact"): "a fresh draw of the base law (span of k i.i.d. N(0, Sigma) vectors; public)",
    ("bingham", "exact"): "a uniformly random unit vector (public)",
    ("bingham", "gibbs"): "the column update keeps the current column (the target stays invariant)",
}
_NUTS_INIT = ("W0 = L^-1 Z0, Z0 a uniformly random orthonormal frame: the starting span span(L W0) = span(Z0) is "
              "uniform on the Grassmannian (data-independent); W0 itself and the parametrisation Z = L W depend on the "
              "data through L (the ACG envelope of the target, nuts_parametrisation)")


def _guarantee_text(spec: FPCASpec, sampler: str, plan: dict) -> str:
    """The one-line guarantee recorded in the release attrs."""
    if not plan["certified"]:
        return (f"uncertified MCMC: ({spec.epsilon:g}, (1 + e^epsilon) gamma)-DP per frame with gamma the chain's "
                "unknown total-variation distance to the target (not bounded; delta_guaranteed = NaN); the ledger "
                "is charged epsilon only" + ("; NUTS's run time depends on the data (tree depths)"
                                              if sampler == "nuts" else ""))
    if plan["pure"]:
        return (f"pure {plan['epsilon']:.12g}-DP per frame: epsilon'' = log((e^epsilon + p*/f_min)/(1 - p*)) with "
                f"p* = (1 - a_min)^T <= eta f_min, T = {plan['proposals']} proposals per draw (data-independent), "
                f"a_min = {np.exp(plan['log_a_min']):.3g} a data-independent acceptance bound ({plan['bound']}), "
                f"f_min = exp({plan['log_f_min']:.6g}) a data-independent floor of the target's density w.r.t. the "
                "fallback law")
    return (f"({plan['epsilon']:.12g}, {plan['delta']:.3g})-DP per frame: epsilon - log(1 - p*), p* with "
            f"p* = (1 - a_min)^T, T = {plan['proposals']} proposals per draw (data-independent), a_min = "
            f"{np.exp(plan['log_a_min']):.3g} a data-independent acceptance bound ({plan['bound']})")


_SAMPLER_NAMES = {("bingham", "exact"): "exact", ("bingham", "gibbs"): "gibbs", ("bingham", "nuts"): "nuts",
                  ("gp-base", "exact"): "rejection-from-gp-base", ("gp-base", "nuts"): "nuts"}
_SAMPLER_REFERENCES = {
    ("exact", "bingham"): "Kent, Ganeiber & Mardia 2018 (ACG rejection)",
    ("exact", "gp-base"): "rejection from the base measure (Awan et al. 2019, Thm 4.1)",
    ("gibbs", "bingham"): "Hoff 2009 (column-wise Gibbs)",
    ("nuts", "bingham"): "PyMC NUTS on span(Z), Z = L W with an angular-central-Gaussian base and the density "
                         "ratio as a potential (fpca_pymc_model; target: Awan et al. 2019, Sec. 5)",
    ("nuts", "gp-base"): "PyMC NUTS on span(Z), Z = L W with an angular-central-Gaussian base and the density "
                         "ratio as a potential (fpca_pymc_model; target: Awan et al. 2019, Thm 4.1-4.2)",
}


def _progress(total: int, description: str):
    """A callable advancing a rich progress bar by one step per call (closes itself at ``total``)."""
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task(description, total=total)
    bar.start()
    state = {"done": 0}

    def step():
        state["done"] += 1
        bar.advance(task)
        if state["done"] >= total:
            bar.stop()

    return step


def _frames_from_z(Z: np.ndarray) -> np.ndarray:
    """Orthonormal frames (..., m, k) spanning the columns of Z (..., m, k); signs fixed by diag R > 0."""
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]


def _nuts_frames(fitted: FPCAFit, chains: int, tune: int, rng: np.random.Generator, *, diagnostics: bool,
                 progressbar: bool):
    """NUTS on :func:`fpca_pymc_model`: one chain per released frame, the last state of each (orthonormalised).

    PyMC's log lines are silenced (``quiet=True``: no "Sampling ... took X seconds", a timing side channel on
    the terminal). The run time itself still depends on the data (tree depths); it is not padded.

    Returns
    -------
    frames : ndarray, shape (chains, m, k)
    traces : dict
        With ``diagnostics``: ``invariant`` (chains, tune, 1 + m(m+1)/2) — explained-variance ratio and
        the upper triangle of VVᵀ over ``tune`` draws after tuning — and ``divergences`` (int).
    """
    import pymc as pm

    spec = fitted.spec
    m, k = spec.m, spec.k
    model = fpca_pymc_model(fitted)
    L, _ = nuts_parametrisation(fitted)
    # start: W0 = L⁻¹ Z0, Z0 a uniformly random frame. span(L W0) = span(Z0) is uniform (data-independent); W0 itself
    # depends on the data through L (recorded in the "initialisation" attr)
    inits = [{"W": np.linalg.solve(L, random_frame(m, k, rng))} for _ in range(chains)]
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=chains)]
    keep = tune if diagnostics else 1
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(divergen|rhat|effective sample|chain).*")
        idata = pm.sample(model=model, draws=keep, tune=tune, chains=chains, cores=1, random_seed=seeds,
                          initvals=inits, init="adapt_diag", progressbar=progressbar, quiet=True,
                          compute_convergence_checks=False, var_names=["W", "explained", "projection"]
                          if diagnostics else ["W"])
    Z = L @ np.asarray(idata["posterior"]["W"].values[:, -1], dtype=float)
    out = {}
    if diagnostics:
        iu = np.triu_indices(m)
        P = np.asarray(idata["posterior"]["projection"].values)
        out["invariant"] = np.concatenate([np.asarray(idata["posterior"]["explained"].values)[..., None],
                                           P[..., iu[0], iu[1]]], axis=-1)
        out["divergences"] = int(np.asarray(idata["sample_stats"]["diverging"].values).sum())
    return _frames_from_z(Z), out


def nuts_parametrisation(fitted: FPCAFit) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian base of the NUTS parametrisation: ``Z = L W``, W with i.i.d. N(0, 1) entries.

    The columns of Z are i.i.d. N(0, C), so span(Z) has the matrix angular
    central Gaussian law ACG(C), density ``det(VᵀC⁻¹V)^{-m/2}`` w.r.t. the
    uniform law on frames (Chikuse 2003, §2.4). C is the ACG envelope of
    Kent, Ganeiber & Mardia (2018) for ``etr(VᵀMV)``, with M = A (Bingham form)
    or M = ε/(2Δ)G − ½Σ⁻¹ (GP-base form): ``C⁻¹ = I + 2Λ/b`` in the
    eigenvectors of −M (:func:`~fdp_ppl.expmech.samplers.acg_envelope`). The
    potential corrects ACG(C) to the target exactly, so the choice of C only
    changes how well NUTS mixes: the W-space looks nearly standard normal
    instead of a funnel (the target depends on span(Z) alone).

    Returns
    -------
    L : ndarray, shape (m, m)
        ``C = L Lᵀ``.
    C_inv : ndarray, shape (m, m)
    """
    from .samplers import acg_envelope

    spec = fitted.spec
    G = np.asarray(fitted.gram, dtype=float)
    if spec.form == "bingham":
        M = spec.bingham_parameter(G)
    else:
        M = spec.scale * G - 0.5 * np.linalg.inv(spec.Sigma)
    env = acg_envelope(M)
    U, omega = env["U"], env["omega"]
    return U / np.sqrt(omega), (U * omega) @ U.T


def fpca_pymc_model(fitted: FPCAFit):
    """PyMC model of the spec's FPCA target on a Euclidean auxiliary variable (spec §4.1), for NUTS.

    PyMC has no Stiefel transform, so the frame is the span of ``Z = L W``
    (m×k), W with i.i.d. N(0, 1) entries (:func:`nuts_parametrisation`): span(Z)
    has the ACG(C) law, and the potential

    ``log f(V) + (m/2) log det(VᵀC⁻¹V)``,  V an orthonormal basis of span(Z),

    with ``log f`` the target's log-density w.r.t. the uniform law on frames
    (:meth:`FPCASpec.log_density`: ``tr(VᵀAV)``, A = ε/(2Δ)(G − Σ⁻¹), for
    ``bingham``; ``ε/(2Δ) tr(VᵀGV) − (m/2) log det(VᵀΣ⁻¹V)`` for ``gp-base``,
    Thm 4.1–4.2) turns it into the target: span(Z) has exactly the target law.
    Log-determinants use ``log det(VᵀMV) = log det(ZᵀMZ) − log det(ZᵀZ)``.
    Draws are not exact (MCMC); compute diagnostics on ``explained`` =
    tr(GP)/tr(G) or on the projection P = Z(ZᵀZ)⁻¹Zᵀ, never on W. A release
    takes an orthonormal basis of span(Z) of ONE draw per chain (each released
    draw costs ε).

    Parameters
    ----------
    fitted : FPCAFit

    Returns
    -------
    pm.Model
        Variable ``W`` (m, k); potential ``expmech``; deterministics
        ``projection`` (m, m) and ``explained``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    spec = fitted.spec
    m, k = spec.m, spec.k
    G = np.asarray(fitted.gram, dtype=float)
    L, C_inv = nuts_parametrisation(fitted)

    def logdet(Z, M):  # log det(Zᵀ M Z), a k×k positive-definite matrix
        return 2.0 * pt.sum(pt.log(pt.diag(pt.linalg.cholesky(pt.dot(Z.T, pt.dot(M, Z))))))

    with pm.Model() as model:
        W = pm.Normal("W", 0.0, 1.0, shape=(m, k))
        Z = pt.dot(L, W)
        ZtZ = pt.dot(Z.T, Z)
        P = pt.dot(Z, pt.linalg.solve(ZtZ, Z.T, assume_a="pos"))
        pm.Deterministic("projection", P)
        ld_gram = logdet(Z, np.eye(m))
        if spec.form == "bingham":
            log_f = pt.sum(spec.bingham_parameter(G) * P)
        else:
            log_f = spec.scale * pt.sum(G * P) - 0.5 * m * (logdet(Z, np.linalg.inv(spec.Sigma)) - ld_gram)
        log_acg = -0.5 * m * (logdet(Z, C_inv) - ld_gram)
        pm.Potential("expmech", log_f - log_acg)
        pm.Deterministic("explained", pt.sum(G * P) / max(float(np.trace(G)), 1e-300))
    return model
