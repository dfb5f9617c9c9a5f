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

from dataclasses import dataclass, field

import numpy as np

from .._names import FPCA_FORMS, FPCA_SAMPLERS
from ..errors import InputError, check_epsilon
from ..io.lattice import flush_tiny, to_lattice
from ..releasing.schema import FPCA_RELEASE
from ..spaces import Eigenbasis, Grid

FORMS = FPCA_FORMS
SAMPLERS = FPCA_SAMPLERS
KIND = FPCA_RELEASE


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
            Rows with norm ≤ 1, rounded towards zero onto the public lattice ``2^-40 Z``
            (:func:`~fdp_ppl.io.lattice.to_lattice`: a record of amplitude ``1e-160`` becomes 0, so no
            arithmetic on the scatter matrix takes the subnormal slow path; Andrysco et al. 2015).
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
        x = flush_tiny(x, self.tau)  # values below 2^-400 τ are 0 before any arithmetic touches them
        norms = self.grid.norm(x)
        over = norms > self.tau
        x = x * np.where(over, self.tau / np.where(norms > 0, norms, 1.0), 1.0)[:, None] / self.tau
        c = (x * self.grid.weights) @ self._basis_values
        cn = np.linalg.norm(c, axis=1)
        c = c / np.maximum(cn, 1.0)[:, None]
        # the public lattice 2^-40 Z (towards zero: norms stay <= 1): every entry of G = CᵀC is then 0 or at least
        # 2^-132, so no product in the sampler (tr(QᵀGQ) per proposal) is subnormal (fdp_ppl.io.lattice)
        return to_lattice(c, 1.0), int(over.sum())

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

