"""Mean-function simulation of Lin & Reimherr (2026), Section 6.1 (Figures 1, 2) and Appendix D.

For each design S-1..S-4, sample size ``n`` and replicate dataset, the clipped
curves are summarised by every mechanism of the paper at ε = 1 and three
errors are computed in the grid's weighted L² norm on [0, 1]:

* estimation error ``‖μ̂ − μ0‖²`` (non-private summary against the truth);
* privacy error ``E‖μ̃ − μ̂‖²`` (expectation over the mechanism's noise);
* privacy-estimation error ``E‖μ̃ − μ0‖²``.

**Exact expectation over the noise.** Every release is ``μ̃ = μ̂ + Σ_j ξ_j g_j``
with independent zero-mean ``ξ_j`` (Laplace or Normal) independent of the
data and public design columns ``g_j`` (eigenfunctions, or Bernstein
polynomials). Hence ``E‖μ̃ − μ̂‖² = Σ_j Var(ξ_j)‖g_j‖²`` exactly — this is
:meth:`mechanism.noise_energy(spec) <fdp_ppl.noise.mechanisms.Mechanism.noise_energy>`
— and the cross term vanishes, so

    ``E‖μ̃ − μ0‖² = ‖μ̂ − μ0‖² + noise_energy``   (exact, not an approximation).

The paper averages 1000 Monte Carlo releases per dataset; the formula above is
the limit of that average (infinitely many releases), so the only Monte Carlo
error left is over datasets (replicates), reported as standard errors.
:func:`studies.iclp_simulation_checks.monte_carlo_check` verifies the identity with exact forward draws of the
library's compiled PyMC samplers (:func:`fdp_ppl.noise.sampling.draw_releases`).

**Mechanisms** (Section 6.1.2): FRL, ICLP-AR, ICLP-QR, Bernstein (cover size
k = 20, sup-norm clipping bound τ_∞) at ε = 1 and GP-ADP (Gaussian mechanism,
ε = 1, δ = 0.01, classical calibration). The paper does not say which summary
GP-ADP privatises (``specs/iclp.md`` §1.7 [?]); we use the **ICLP-QR summary**
(same η, ψ), so that the GP-ADP/ICLP-QR comparison isolates the change of
noise law (ε-DP Laplace process → (ε, δ) Gaussian process), with the
Cameron–Martin sensitivity of that summary (Mirshani et al. 2019, Thm 4.1).

**Parameter selection** (Section 6.1.1; ``specs/iclp.md`` §2.5):

* ``"PSS"`` — privacy-safe: ψ = 1/n, η_QR = 1 + 2/β, η_AR = 2(1 + 2/β) from
  the public kernel decay β. For FRL the paper's "PSS" picks, per dataset, the
  ``M ∈ 𝓜 = [⌈n^{1/(η_QR β)}⌉, ⌊n^{1/3}⌋]`` with the smallest estimation error:
  this is an **oracle** (it uses μ0), not privacy-safe. Bernstein (k = 20,
  public τ_∞) has nothing to tune and is listed under "PSS".
* ``"PSS-max"`` (FRL only) — the privacy-safe FRL choice ``M = max 𝓜``
  (the library's default), for comparison with the oracle.
* ``"PCV"`` — 10-fold private cross-validation (Mirshani et al. 2019): held-out
  ``‖X_i − μ̃_{−F}‖²`` averaged over folds and, exactly, over the noise
  (score of :func:`fdp_ppl.summaries.cv_score` with ``draws=0``), over
  ψ ∈ [0.1 ψ_PSS, 10 ψ_PSS] (log-spaced) for ICLP-QR, ICLP-AR and GP-ADP, and
  over M ∈ [min 𝓜 − 3, max 𝓜 + 3] for FRL. PCV looks at the data and is **not
  privacy-safe**; its results are labelled as such.

**Sensitivity bounds.** ``bound="paper"`` uses the paper's Theorem 12 bounds
(each coefficient bounded separately: ``2Mτ/n`` for FRL,
``(2τ/n)Σ_j λ_j^{η−1/2}/(λ_j^η+ψ)`` for QR) — the reproduction;
``bound="tight"`` uses the exact ℓ²-type bounds of ``specs/iclp.md`` §2.2,
what the library deploys by default. Both are valid (ε-DP either way).

The computation is vectorised in coefficient space: the clipped means of
all folds are computed at once and the library's shrinkage
(:func:`~fdp_ppl.summaries.ridge_shrinkage`), thresholds
(:func:`~fdp_ppl.summaries.ar_thresholds`, :func:`~fdp_ppl.summaries.ar_j_star`)
and Bernstein lattice (:class:`~fdp_ppl.summaries.BernsteinSpec`) are applied
to them for all candidate parameters; the result is tested against the
library's builders (:func:`iclp_qr_mean`, :func:`iclp_ar_mean`,
:func:`frl_mean`, :func:`bernstein_mean`) and :func:`cv_score`. Mechanisms and
summary specs come from :data:`fdp_ppl.releasing.registry.MECHANISMS`; noise energies
are ``mechanism.noise_energy(spec)`` on public specs (no data), the same
objects the brute-force sensitivity tests check.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from fdp_ppl.datasets import simulate_iclp
from fdp_ppl.noise.mechanisms import Mechanism
from fdp_ppl.releasing.registry import MECHANISMS as REGISTRY
from fdp_ppl.spaces import Eigenbasis, Grid, Matern, eigenbasis
from fdp_ppl.summaries import SummarySpec, ar_j_star, ar_thresholds, bernstein_design, pss, ridge_shrinkage

DESIGNS = ("S-1", "S-2", "S-3", "S-4")
MECHANISMS = ("FRL", "ICLP-AR", "ICLP-QR", "Bernstein", "GP-ADP")
SELECTIONS = ("PSS", "PSS-max", "PCV")
METRICS = ("privacy_estimation", "estimation", "privacy")
BOUNDS = ("paper", "tight")
#: columns of the tidy table written to ``notebooks/results/iclp_simulation.csv``
TABLE_COLUMNS = ("design", "error_process", "kernel", "n", "mechanism", "selection", "metric", "value", "se",
                 "bound", "replicates")


# ---------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Variant:
    """One panel of the paper: error process of the curves and ICLP covariance.

    Attributes
    ----------
    error_process : {"gp", "t5"}
        ``"gp"``: Gaussian-process errors with an RBF covariance (Section 6.1);
        ``"t5"``: ``Σ_{j<=100} U_ij φ_j`` with ``U_ij`` iid Student t_5
        (Appendix D.1).
    nu : float
        Matérn smoothness of the ICLP covariance (ρ = 0.1): 1.5 (β = 4,
        Section 6.1) or 2.5 (β = 6, Appendix D.2).
    """

    error_process: str = "gp"
    nu: float = 1.5

    @property
    def kernel_label(self) -> str:
        return f"matern{self.nu:g}"

    @property
    def key(self) -> str:
        return f"{self.error_process}-{self.kernel_label}"

    @property
    def paper_figure(self) -> str:
        return {("gp", 1.5): "Figures 1-2", ("t5", 1.5): "Figure 6 (App. D.1)",
                ("gp", 2.5): "Figure 7 (App. D.2)", ("t5", 2.5): "Figure 8 (App. D.2)"}[(self.error_process, self.nu)]


#: The paper's four panels: Section 6.1 and Appendix D.1 / D.2.
VARIANTS = (Variant("gp", 1.5), Variant("t5", 1.5), Variant("gp", 2.5), Variant("t5", 2.5))
_VARIANT_INDEX = {(v.error_process, v.nu): i for i, v in enumerate(VARIANTS)}


@dataclass(frozen=True)
class Config:
    """Settings of the simulation (the paper leaves most of them unstated).

    Attributes
    ----------
    n_grid : tuple of int
        Sample sizes.
    replicates : int
        Datasets per (variant, design, n); the paper uses 100.
    grid_size : int
        Points K of the uniform grid on [0, 1] (trapezoid weights).
    epsilon, delta : float
        ε of every mechanism; δ of GP-ADP.
    rho : float
        Length-scale ρ of the Matérn ICLP covariance (paper: 0.1).
    folds : int
        PCV folds (paper: 10).
    n_psi : int
        Candidate ψ values for PCV, log-spaced over ``[0.1, 10] ψ_PSS``.
    frl_widen : int
        PCV range of FRL's M: ``[min 𝓜 − frl_widen, max 𝓜 + frl_widen]``.
    bernstein_k : int
        Bernstein cover size (paper: 20).
    gp_error_scale : float
        Pointwise sd of the GP errors, covariance ``scale² exp(−d²/(2·0.1²))``.
    t5_error_scale : float or None
        Multiplier of the t_5 coefficients; None means ``1/√K`` (see notes in
        :func:`simulate_dataset`).
    tau_quantile : float
        τ (L²) and τ_∞ (sup) are this quantile of ``‖X‖`` and ``sup|X|`` under
        the public design law, from a pilot simulation.
    pilot_size : int
        Curves in the pilot simulation.
    bounds : tuple of str
        Sensitivity bounds to evaluate ("paper", "tight").
    """

    n_grid: tuple = (50, 100, 200, 500, 1000, 2000, 5000, 10000)
    replicates: int = 100
    grid_size: int = 100
    epsilon: float = 1.0
    delta: float = 0.01
    rho: float = 0.1
    folds: int = 10
    n_psi: int = 13
    frl_widen: int = 3
    bernstein_k: int = 20
    gp_error_scale: float = 1.0
    t5_error_scale: float | None = None
    tau_quantile: float = 0.99
    pilot_size: int = 20000
    bounds: tuple = BOUNDS

    def __post_init__(self):
        if self.replicates < 2:
            raise ValueError("replicates must be >= 2 (standard errors need at least two datasets)")
        if min(self.n_grid) < self.folds:
            raise ValueError(f"every n must be >= folds={self.folds}")
        if self.grid_size < 100:
            raise ValueError("grid_size must be >= 100: the t5 errors use 100 eigenfunctions (Appendix D.1)")
        bad = set(self.bounds) - set(BOUNDS)
        if bad:
            raise ValueError(f"unknown bounds {sorted(bad)}; use {BOUNDS}")
        if not 0.5 < self.tau_quantile < 1:
            raise ValueError("tau_quantile must lie in (0.5, 1)")

    @property
    def t5_scale(self) -> float:
        return 1.0 / np.sqrt(self.grid_size) if self.t5_error_scale is None else float(self.t5_error_scale)

    @property
    def grid(self) -> Grid:
        return _grid(self.grid_size)


def full_config(**changes) -> Config:
    """Settings of the committed results (about 4 minutes on one core)."""
    return replace(Config(), **changes)


def fast_config(**changes) -> Config:
    """Few replicates, two sample sizes, coarse ψ grid (seconds)."""
    return replace(Config(n_grid=(100, 1000), replicates=4, n_psi=5, pilot_size=2000), **changes)


@functools.lru_cache(maxsize=8)
def _grid(k: int) -> Grid:
    return Grid.uniform(int(k))


def iclp_basis(variant: Variant, config: Config) -> Eigenbasis:
    """Cached eigenbasis of the variant's Matérn ICLP covariance on the config grid."""
    return eigenbasis(Matern(rho=config.rho, nu=variant.nu), config.grid)


# ---------------------------------------------------------------------- seeds
def _entropy(random_seed) -> int:
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**63))
    if isinstance(random_seed, np.random.SeedSequence):
        return int(random_seed.generate_state(2, np.uint64)[0])
    if random_seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_seed, numbers.Integral) and not isinstance(random_seed, bool):
        return int(random_seed)
    return int(np.random.SeedSequence(list(random_seed)).generate_state(2, np.uint64)[0])


def _stream(entropy: int, purpose: int, *key) -> np.random.SeedSequence:
    """Independent stream per (purpose, variant, design, n, replicate): results of
    one cell do not depend on which other cells are run."""
    return np.random.SeedSequence(entropy, spawn_key=(purpose,) + tuple(int(k) for k in key))


# ---------------------------------------------------------------------- data
def simulate_dataset(variant: Variant, design: str, n: int, config: Config, random_seed=None):
    """Curves and true mean of one replicate, via :func:`fdp_ppl.datasets.simulate_iclp`.

    GP errors: RBF covariance ``gp_error_scale² exp(−d²/(2·0.1²))``
    (library default; the paper gives no parameters). t_5 errors: the paper's
    ``Σ_{j<=100} U_ij φ_j`` with ``φ_j`` the ICLP eigenfunctions and
    coefficients ``t5_scale · U_ij``. With the default ``t5_scale = 1/√K`` this
    equals the printed design written with the unit-Euclidean-norm eigenvectors
    of the Gram matrix (the paper's Algorithm 1 convention), and gives
    ``E‖e‖² = (5/3)·100/K`` — the same order as the GP errors
    (``E‖e‖² = 1``). S-4 and the t_5 errors use the variant's ICLP basis.

    Returns
    -------
    curves : ndarray (n, K)
    mu0 : ndarray (K,)
    """
    basis = iclp_basis(variant, config)
    if variant.error_process == "gp":
        ds = simulate_iclp(design, int(n), config.grid, error="gp", error_scale=config.gp_error_scale,
                           basis=basis, random_seed=random_seed)
    else:
        ds = simulate_iclp(design, int(n), config.grid, error="t5", error_scale=config.t5_scale, n_terms=100,
                           t5_scaling="unit", basis=basis, random_seed=random_seed)
    return np.asarray(ds["curves"].values), np.asarray(ds["mean"].values)


def public_bounds(variant: Variant, design: str, config: Config, random_seed=None) -> tuple[float, float]:
    """Public clipping bounds (τ in L², τ_∞ in sup norm) from the design law.

    The ``tau_quantile`` quantiles of ``‖X‖`` and ``sup_t |X(t)|`` over
    ``pilot_size`` curves simulated from the (public) design law with an
    independent seed — never from the dataset being privatised. For S-4 the
    random mean is redrawn every 100 pilot curves, so the bound covers the
    design's law of μ0 too. This plays the role of the paper's normalisation
    "constants set to 1" (τ = 1 after scaling) without looking at the sample.

    Returns
    -------
    tau, tau_inf : float
    """
    ss = np.random.SeedSequence(_entropy(random_seed)) if not isinstance(random_seed, np.random.SeedSequence) \
        else random_seed
    chunk = 100 if design == "S-4" else config.pilot_size
    seeds = ss.spawn(max(1, int(np.ceil(config.pilot_size / chunk))))
    x = np.concatenate([simulate_dataset(variant, design, chunk, config, s)[0] for s in seeds])
    w = config.grid.weights
    l2 = np.sqrt(np.sum(x * x * w, axis=1))
    sup = np.max(np.abs(x), axis=1)
    return float(np.quantile(l2, config.tau_quantile)), float(np.quantile(sup, config.tau_quantile))


# ---------------------------------------------------------------------- public summaries and noise energies
#: paper label -> name in :data:`fdp_ppl.releasing.registry.MECHANISMS` (GP-ADP: the Gaussian mechanism on the ICLP-QR summary)
REGISTRY_NAMES = {"FRL": "frl", "ICLP-AR": "iclp-ar", "ICLP-QR": "iclp-qr", "Bernstein": "bernstein",
                  "GP-ADP": "gaussian"}
#: paper label -> the summary it releases (the registry entry's summary spec name)
_KIND = {label: REGISTRY[name].summary for label, name in REGISTRY_NAMES.items()}


def public_summary(kind: str, basis: Eigenbasis, *, tau: float, n: int, eta: float | None = None,
                   psi: float | None = None, M: int | None = None, k: int = 20) -> SummarySpec:
    """The public summary spec (no data) of one of the paper's summaries.

    Calibration depends only on τ, n, the kernel and the tuning parameters,
    so the noise of a release is computed without data, from the same spec
    classes (:class:`~fdp_ppl.summaries.ICLPQRSpec`,
    :class:`~fdp_ppl.summaries.ICLPARSpec`, :class:`~fdp_ppl.summaries.FRLSpec`,
    :class:`~fdp_ppl.summaries.BernsteinSpec`) that the library's builders fit
    and the brute-force sensitivity tests check (Lin & Reimherr 2026, Theorem 12).

    Parameters
    ----------
    kind : {"iclp-qr", "iclp-ar", "frl", "bernstein"}
    basis : Eigenbasis
        ICLP eigenbasis on the curves' grid (Bernstein uses only its grid).
    tau : float
        Public clipping bound: L² for the eigenbasis summaries, sup norm (τ_∞) for Bernstein.
    n : int
        Public number of records.
    eta, psi : float, optional
        ICLP-QR / ICLP-AR tuning (default PSS).
    M : int, optional
        FRL truncation (default ``floor(n^{1/3})``).
    k : int
        Bernstein lattice size.

    Returns
    -------
    SummarySpec

    Raises
    ------
    ValueError
        Unknown ``kind``.
    InputError
        Invalid parameters (e.g. ICLP-AR with ``J* = 1``).
    """
    if kind not in ("iclp-qr", "iclp-ar", "frl", "bernstein"):
        raise ValueError(f"unknown summary kind {kind!r}")
    entry = REGISTRY[kind]
    if kind == "bernstein":
        return entry.spec(basis.grid, tau=tau, n=n, k=k)
    return entry.spec(basis, tau=tau, n=n, eta=eta, psi=psi, M=M)


def mechanism_for(name: str, config: Config) -> Mechanism:
    """The library mechanism behind a mechanism label of the paper (from :data:`fdp_ppl.releasing.registry.MECHANISMS`).

    ICLP-QR / ICLP-AR: ``ICLP(ε)``; FRL: ``FRL(ε)``; Bernstein: ``Bernstein(ε)``;
    GP-ADP: ``GaussianMechanism(ε, δ, calibration="classical")``.

    Raises
    ------
    ValueError
        Unknown label.
    """
    if name not in REGISTRY_NAMES:
        raise ValueError(f"unknown mechanism {name!r}; use one of {MECHANISMS}")
    entry = REGISTRY[REGISTRY_NAMES[name]]
    if entry.approximate:
        return entry.mechanism(config.epsilon, config.delta, calibration="classical")
    return entry.mechanism(config.epsilon)


@functools.lru_cache(maxsize=200_000)
def _energy_cached(mech_name, basis, tau, n, eta, psi, M, k, bound, epsilon, delta):
    cfg = _MechConfig(epsilon, delta)
    if mech_name == "ICLP-AR" and ar_j_star(basis, tau, eta, psi) <= 1:
        return 0.0  # every coefficient is thresholded away for every dataset: nothing random is released
    spec = public_summary(_KIND[mech_name], basis, tau=tau, n=n, eta=eta, psi=psi, M=M, k=k)
    return mechanism_for(mech_name, cfg).noise_energy(spec, bound)


@dataclass(frozen=True)
class _MechConfig:
    epsilon: float
    delta: float


def privacy_error(mech_name: str, basis: Eigenbasis, config: Config, *, tau: float, n: int, bound: str,
                  eta: float | None = None, psi: float | None = None, M: int | None = None) -> float:
    """Exact privacy error ``E‖μ̃ − μ̂‖²`` of a mechanism (data-independent).

    ``mechanism.noise_energy(spec, bound)`` of the library mechanism on the
    public spec (:func:`public_summary`); cached. ICLP-AR with ``J* = 1``
    releases nothing random and has privacy error 0.
    """
    return _energy_cached(mech_name, basis, float(tau), int(n), None if eta is None else float(eta),
                          None if psi is None else float(psi), None if M is None else int(M),
                          int(config.bernstein_k), bound, float(config.epsilon), float(config.delta))


# ---------------------------------------------------------------------- estimators (vectorised)
def _soft(x, thr):
    return np.sign(x) * np.maximum(np.abs(x) - thr, 0.0)


def _ar_fit(c, basis, tau, eta, psi):
    """ICLP-AR coefficients (Theorem 12.2) for ψ of shape (P,) and clipped-mean
    coefficients c (..., J); returns (..., P, J). Thresholds
    :func:`~fdp_ppl.summaries.ar_thresholds`; coefficients ``j >= J*``
    (:func:`~fdp_ppl.summaries.ar_j_star`, 1-based) are set to 0, as in
    :func:`fdp_ppl.iclp_ar_mean` (Remark 13)."""
    psi = np.atleast_1d(psi)
    lam = basis.eigenvalues
    thr = np.stack([ar_thresholds(lam, eta, p) for p in psi])  # (P, J)
    n_keep = np.array([ar_j_star(basis, tau, eta, p) - 1 for p in psi])
    keep = np.arange(lam.size)[None, :] < n_keep[:, None]
    return _soft(c[..., None, :], thr) * keep


def _qr_fit(c, lam, eta, psi):
    """ICLP-QR ridge coefficients ``s_j c_j`` with the shrinkage
    :func:`~fdp_ppl.summaries.ridge_shrinkage` (eq. 11); (..., J) -> (..., P, J)."""
    shrink = np.stack([ridge_shrinkage(lam, eta, p) for p in np.atleast_1d(psi)])  # (P, J)
    return c[..., None, :] * shrink


def _frl_fit(c, Ms):
    """FRL projections on the first M eigenfunctions, M of shape (P,); (..., J) -> (..., P, J)."""
    Ms = np.atleast_1d(Ms)
    mask = np.arange(c.shape[-1])[None, :] < Ms[:, None]
    return c[..., None, :] * mask


@dataclass
class _Setting:
    """Public quantities of one (variant, design) cell; build with :func:`make_setting`."""

    variant: Variant
    design: str
    config: Config
    basis: Eigenbasis
    tau: float
    tau_inf: float
    bernstein: np.ndarray = field(default=None, repr=False)

    def __post_init__(self):
        self.bernstein = bernstein_design(self.config.grid.t, self.config.bernstein_k)


def make_setting(variant: Variant, design: str, config: Config, *, tau: float, tau_inf: float) -> _Setting:
    """Bundle of the public quantities of one (variant, design) cell: ICLP
    eigenbasis, clipping bounds τ (L²) and τ_∞ (sup), Bernstein design."""
    return _Setting(variant, design, config, iclp_basis(variant, config), float(tau), float(tau_inf))


@dataclass
class _Prepared:
    n: int
    pss: object
    c: np.ndarray  # (J,) clipped-mean coefficients
    c_train: np.ndarray  # (F, J) training-fold clipped means
    xbar_held: np.ndarray  # (F, J) held-out raw means
    q: np.ndarray  # (F,) held-out mean squared norms
    n_train: np.ndarray  # (F,)
    m0: np.ndarray  # (J,) coefficients of mu0
    r0: float  # squared norm of mu0 outside the retained span
    e_bernstein: float

    def est(self, a):
        """``‖Σ_j a_j φ_j − μ0‖²`` for coefficient arrays (..., J)."""
        return np.sum((a - self.m0) ** 2, axis=-1) + self.r0


def _prepare(curves, mu0, setting: _Setting, random_seed) -> _Prepared:
    cfg, basis = setting.config, setting.basis
    x = np.asarray(curves, dtype=float)
    mu0 = np.asarray(mu0, dtype=float)
    n, K = x.shape
    if K != cfg.grid_size or mu0.shape != (K,):
        raise ValueError(f"curves must have shape (n, {cfg.grid_size}) and mu0 ({cfg.grid_size},)")
    if n < cfg.folds:
        raise ValueError(f"need at least folds={cfg.folds} curves, got {n}")
    grid = cfg.grid
    w = grid.weights
    phi = basis.eigenfunctions
    tau = setting.tau

    # clip each curve to L2 norm tau (Assumption 10), fold sums for PCV
    sq = np.sum(x * x * w, axis=1)
    factor = np.minimum(1.0, tau / np.maximum(np.sqrt(sq), np.finfo(float).tiny))
    rng = np.random.default_rng(random_seed)
    perm = rng.permutation(n)  # same fold assignment as summaries.tuning.cv_score with this seed
    sizes = np.array([f.size for f in np.array_split(perm, cfg.folds)])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    xp = x[perm]
    s_clip = np.add.reduceat(xp * factor[perm, None], starts, axis=0)  # (F, K)
    s_raw = np.add.reduceat(xp, starts, axis=0)
    c_fold = (s_clip * w) @ phi  # (F, J)
    c_total = c_fold.sum(0)
    n_train = n - sizes
    m0 = (mu0 * w) @ phi
    # Bernstein: the library's spec (pointwise clipping to [-tau_inf, tau_inf], lattice nu/k)
    lattice = public_summary("bernstein", basis, tau=setting.tau_inf, n=n, k=cfg.bernstein_k).fit(x).coefficients
    return _Prepared(
        n=n, pss=pss(n, basis.kernel.eigen_decay), c=c_total / n,
        c_train=(c_total[None, :] - c_fold) / n_train[:, None],
        xbar_held=((s_raw * w) @ phi) / sizes[:, None],
        q=np.add.reduceat(sq[perm], starts) / sizes, n_train=n_train, m0=m0,
        r0=max(0.0, float(np.sum(mu0 * mu0 * w) - np.sum(m0 * m0))),
        e_bernstein=float(np.sum((setting.bernstein @ lattice - mu0) ** 2 * w)))


def _candidates(mech: str, prep: _Prepared, setting: _Setting):
    """PCV candidates: ψ values (ICLP-QR, ICLP-AR, GP-ADP) or M values (FRL)."""
    p, cfg = prep.pss, setting.config
    if mech == "FRL":
        lo, hi = p.m_range
        return np.arange(max(1, lo - cfg.frl_widen), min(setting.basis.size, hi + cfg.frl_widen) + 1)
    if mech in ("ICLP-QR", "GP-ADP", "ICLP-AR"):
        return p.psi * np.logspace(-1.0, 1.0, cfg.n_psi)
    raise ValueError(f"{mech!r} has no tuning parameter to cross-validate")


def _fit_and_energy(mech, coef, prep, setting, params, n, bound):
    """Coefficients (..., P, J) of the summaries with parameters ``params`` and
    their exact noise energies for sample size ``n`` (int) -> (P,)."""
    basis, cfg, p = setting.basis, setting.config, prep.pss
    lam = basis.eigenvalues
    if mech == "FRL":
        fit = _frl_fit(coef, params)
        kw = [{"M": int(m)} for m in params]
    else:
        eta = p.eta_ar if mech == "ICLP-AR" else p.eta_qr
        fit = _ar_fit(coef, basis, setting.tau, eta, params) if mech == "ICLP-AR" else _qr_fit(coef, lam, eta, params)
        kw = [{"eta": eta, "psi": float(s)} for s in params]
    if n is None:
        return fit, None
    return fit, np.array([privacy_error(mech, basis, cfg, tau=setting.tau, n=int(n), bound=bound, **k) for k in kw])


def _pcv(mech, prep, setting, bound):
    cand = _candidates(mech, prep, setting)
    fits = _fit_and_energy(mech, prep.c_train, prep, setting, cand, None, bound)[0]  # (F, P, J)
    energy = {int(nt): _fit_and_energy(mech, prep.c, prep, setting, cand, int(nt), bound)[1]
              for nt in np.unique(prep.n_train)}
    en = np.stack([energy[int(nt)] for nt in prep.n_train])  # (F, P)
    held = prep.q[:, None] - 2 * np.einsum("fpj,fj->fp", fits, prep.xbar_held) + np.sum(fits**2, -1)
    return cand, (held + en).mean(0)


def pcv_scores(curves, setting: _Setting, mechanism: str, *, bound: str = "paper", random_seed=None):
    """Private cross-validation scores of one mechanism over its candidates.

    The score of :func:`fdp_ppl.summaries.cv_score` with ``draws=0`` (same
    folds for the same seed): mean over folds of the held-out
    ``(1/|F|) Σ_{i∈F} ‖X_i − f̂_{−F}‖²`` (raw held-out curves) plus the exact
    noise energy of the release calibrated for ``n − |F|`` records. **Not
    privacy-safe** (it reads the data); computed in coefficient space for all
    folds and candidates at once.

    Returns
    -------
    candidates : ndarray
        ψ values (ICLP-QR, ICLP-AR, GP-ADP) or M values (FRL).
    scores : ndarray, same shape
    """
    mu0 = np.zeros(setting.config.grid_size)
    prep = _prepare(curves, mu0, setting, random_seed)
    return _pcv(mechanism, prep, setting, bound)


def replicate_errors(curves, mu0, setting: _Setting, *, random_seed=None) -> list[dict]:
    """Errors of every mechanism and selection rule on one dataset.

    Parameters
    ----------
    curves : ndarray (n, K)
        Raw (unclipped) curves on the config grid.
    mu0 : ndarray (K,)
        True mean.
    setting : from :func:`make_setting`
    random_seed : int, sequence, SeedSequence or Generator
        PCV fold assignment.

    Returns
    -------
    list of dict
        One per (mechanism, selection, bound): ``estimation`` ``‖μ̂ − μ0‖²``,
        ``privacy`` (exact noise energy ``E‖μ̃ − μ̂‖²``), ``privacy_estimation``
        (their sum = ``E‖μ̃ − μ0‖²`` exactly, the noise being zero-mean and
        independent of the data), ``param`` (ψ/ψ_PSS, M, or k for Bernstein)
        and ``privacy_safe``.
    """
    cfg, basis = setting.config, setting.basis
    prep = _prepare(curves, mu0, setting, random_seed)
    p, n, c = prep.pss, prep.n, prep.c
    lam = basis.eigenvalues
    lo, hi = p.m_range
    m_pss = np.arange(lo, hi + 1)

    rows = []

    def add(mech, sel, bound, e, pr, param, safe):
        rows.append({"mechanism": mech, "selection": sel, "bound": bound, "estimation": float(e),
                     "privacy": float(pr), "privacy_estimation": float(e + pr), "param": float(param),
                     "privacy_safe": bool(safe)})

    def energy(name, bound, **kw):
        return privacy_error(name, basis, cfg, tau=setting.tau, n=n, bound=bound, **kw)

    e_qr = float(prep.est(_qr_fit(c, lam, p.eta_qr, p.psi)[0]))
    e_ar = float(prep.est(_ar_fit(c, basis, setting.tau, p.eta_ar, p.psi)[0]))
    e_frl = prep.est(_frl_fit(c, m_pss))
    i_oracle = int(np.argmin(e_frl))  # the paper's FRL "PSS": smallest estimation error over M (uses mu0)

    for bound in cfg.bounds:
        add("Bernstein", "PSS", bound, prep.e_bernstein,
            privacy_error("Bernstein", basis, cfg, tau=setting.tau_inf, n=n, bound=bound), cfg.bernstein_k, True)
        add("ICLP-QR", "PSS", bound, e_qr, energy("ICLP-QR", bound, eta=p.eta_qr, psi=p.psi), 1.0, True)
        add("GP-ADP", "PSS", bound, e_qr, energy("GP-ADP", bound, eta=p.eta_qr, psi=p.psi), 1.0, True)
        add("ICLP-AR", "PSS", bound, e_ar, energy("ICLP-AR", bound, eta=p.eta_ar, psi=p.psi), 1.0, True)
        add("FRL", "PSS", bound, e_frl[i_oracle], energy("FRL", bound, M=int(m_pss[i_oracle])), m_pss[i_oracle],
            False)
        add("FRL", "PSS-max", bound, e_frl[-1], energy("FRL", bound, M=int(m_pss[-1])), m_pss[-1], True)
        for mech in ("FRL", "ICLP-AR", "ICLP-QR", "GP-ADP"):
            cand, scores = _pcv(mech, prep, setting, bound)
            best = cand[int(np.argmin(scores))]
            fit, en = _fit_and_energy(mech, c, prep, setting, np.atleast_1d(best), n, bound)
            add(mech, "PCV", bound, float(prep.est(fit[0])), float(en[0]),
                best if mech == "FRL" else best / p.psi, False)
    return rows


# ---------------------------------------------------------------------- driver
def _single_thread_blas():
    """One BLAS thread: the work is many small matrix products, for which
    OpenBLAS threads only contend (10x slower on a shared 2-core machine)."""
    from threadpoolctl import threadpool_limits  # a dependency of pymc

    return threadpool_limits(limits=1, user_api="blas")


def _run_cell(v: Variant, d: str, n: int, config: Config, entropy: int, settings: dict) -> pd.DataFrame:
    vi, di = _VARIANT_INDEX[(v.error_process, v.nu)], DESIGNS.index(d)
    if (vi, di) not in settings:
        tau, tau_inf = public_bounds(v, d, config, _stream(entropy, 2, vi, di))
        settings[(vi, di)] = make_setting(v, d, config, tau=tau, tau_inf=tau_inf)
    s = settings[(vi, di)]
    rows = []
    for r in range(config.replicates):
        curves, mu0 = simulate_dataset(v, d, n, config, _stream(entropy, 0, vi, di, n, r))
        for row in replicate_errors(curves, mu0, s, random_seed=_stream(entropy, 1, vi, di, n, r)):
            row["replicate"] = r
            rows.append(row)
    df = pd.DataFrame(rows)
    df.insert(0, "n", int(n))
    df.insert(0, "design", d)
    df.insert(0, "kernel", v.kernel_label)
    df.insert(0, "error_process", v.error_process)
    df["tau"], df["tau_inf"] = s.tau, s.tau_inf
    return df


def run_simulation(config: Config | None = None, *, variants=VARIANTS, designs=DESIGNS, random_seed=20260331,
                   progressbar: bool = False) -> pd.DataFrame:
    """Run the simulation and return per-replicate errors (long format).

    Parameters
    ----------
    config : Config, optional
        Default :func:`full_config`.
    variants : sequence of Variant
        Default the four panels of the paper (:data:`VARIANTS`).
    designs : sequence of str
        Subset of ``("S-1", "S-2", "S-3", "S-4")``.
    random_seed : int, sequence or Generator
        Root seed; each (variant, design, n, replicate) gets its own stream,
        so a cell's result does not depend on the other cells run.
    progressbar : bool

    Returns
    -------
    pd.DataFrame
        One row per (variant, design, n, replicate, mechanism, selection,
        bound): ``error_process``, ``kernel``, ``design``, ``n``,
        ``replicate``, ``mechanism``, ``selection``, ``bound``, ``estimation``,
        ``privacy``, ``privacy_estimation``, ``param``, ``privacy_safe``,
        ``tau``, ``tau_inf``. ``attrs`` hold the config and the seed.
    """
    config = full_config() if config is None else config
    variants = tuple(variants)
    for v in variants:
        if (v.error_process, v.nu) not in _VARIANT_INDEX:
            raise ValueError(f"unknown variant {v}; use one of {VARIANTS}")
    entropy = _entropy(random_seed)
    designs = tuple(designs)
    bad = set(designs) - set(DESIGNS)
    if bad:
        raise ValueError(f"unknown designs {sorted(bad)}; use {DESIGNS}")
    tasks = [(v, d, n) for v in variants for d in designs for n in config.n_grid]
    it = tasks
    if progressbar:
        from rich.progress import track

        it = track(tasks, description="ICLP simulation", total=len(tasks))
    settings, frames = {}, []
    with _single_thread_blas():
        for v, d, n in it:
            frames.append(_run_cell(v, d, n, config, entropy, settings))
    out = pd.concat(frames, ignore_index=True)
    out.attrs = {"config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
                 "random_seed": entropy}
    return out


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """Tidy table of means over replicates with Monte Carlo standard errors.

    Returns
    -------
    pd.DataFrame
        Columns :data:`TABLE_COLUMNS`: ``value`` is the average over datasets
        of the exact noise expectation; ``se = sd/√replicates`` (0 when the
        quantity does not vary over datasets, e.g. PSS privacy errors).
    """
    keys = ["design", "error_process", "kernel", "n", "mechanism", "selection", "bound"]
    long = raw.melt(id_vars=keys + ["replicate"], value_vars=list(METRICS), var_name="metric")
    g = long.groupby(keys + ["metric"], sort=False)["value"]
    out = g.agg(value="mean", sd="std", replicates="count").reset_index()
    out["se"] = out["sd"].fillna(0.0) / np.sqrt(out["replicates"])
    out = out[list(TABLE_COLUMNS)]
    order = {"mechanism": MECHANISMS, "selection": SELECTIONS, "metric": METRICS, "design": DESIGNS,
             "bound": BOUNDS}
    sort_keys = {k: out[k].map({v: i for i, v in enumerate(vals)}) for k, vals in order.items()}
    out = out.assign(**{f"_{k}": v for k, v in sort_keys.items()})
    out = out.sort_values(["error_process", "kernel", "_bound", "_design", "n", "_mechanism", "_selection",
                           "_metric"]).drop(columns=[f"_{k}" for k in order]).reset_index(drop=True)
    return out


__all__ = ["Config", "Variant", "VARIANTS", "DESIGNS", "MECHANISMS", "SELECTIONS", "METRICS", "BOUNDS",
           "TABLE_COLUMNS", "full_config", "fast_config", "iclp_basis", "simulate_dataset", "public_bounds",
           "public_summary", "REGISTRY_NAMES", "mechanism_for", "privacy_error", "make_setting", "replicate_errors",
           "run_simulation", "summarise"]
