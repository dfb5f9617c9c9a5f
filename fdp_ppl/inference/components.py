"""Noise-aware inference for ε-DP principal components (exponential mechanism; Awan, Kenney, Reimherr &
Slavković 2019).

A ``fdp-ppl fpca`` release (kind :data:`fdp_ppl.releasing.schema.FPCA_RELEASE`) of the Bingham form with k = 1 is a
unit vector v (basis coordinates, m entries) drawn from

    p(v | G) = exp(vᵀ A v) / C(A),   A = s (G − Σ⁻¹),   s = ε / (2Δ),

with respect to the uniform law on the sphere S^{m−1} (spec ``expmech-fpca.md`` §2.2; the paper's Sec. 5
density). G = XᵀX is the data's uncentred scatter matrix of clipped, τ-scaled coefficients, Σ the public
base covariance. The normaliser is a hypergeometric function of matrix argument,

    C(A) = E_U[exp(xᵀAx)] = ₁F₁(1/2; m/2; A)

(Kume & Wood 2005; Chikuse 2003), computed with its gradient by :mod:`fdp_ppl.inference.bingham` (exact series
or saddlepoint). This module samples the posterior of G given the released frames with PyMC;
:mod:`fdp_ppl.inference.components_sbc` checks it by simulation-based calibration.

k > 1 (a matrix Bingham on the Stiefel manifold, ₁F₁(k/2; m/2; A) of a matrix argument with k columns)
and the GP-base form (a normaliser that is not a hypergeometric function) are refused with an
:class:`~fdp_ppl.errors.InputError`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr

from .. import dims
from ..releasing import schema as S
from ..errors import InputError
from .comparison import RELEASE_ID, release_identity
from .bingham import SERIES_MAX_SPREAD, bingham_log_constant, bingham_log_constant_op

#: default cap on the prior's degrees of freedom d (:class:`ComponentsPrior`)
DEFAULT_MAX_DOF = 6
#: name of the observed frames' dimension (one entry per released frame)
RELEASE_DRAW = "release_draw"
#: name of the dimension of the m eigenvalues of the second-moment operator
EIGEN = "eigen"


# ---------------------------------------------------------------------------- prior over G
@dataclass(frozen=True)
class ComponentsPrior:
    """Prior over the data's uncentred second-moment operator S = G/n (basis coordinates, m × m).

    ``S = r · W / tr W`` with ``W = Y Yᵀ``, Y an m × d matrix of i.i.d. N(0, 1) entries (so W ~ Wishart(d, I)),
    and ``r = tr S ~ Beta(trace_alpha, trace_beta)``.

    Why this prior. The mechanism clips every record to norm ≤ 1 (τ-scaled), so G = XᵀX is positive
    semi-definite with ``tr G ≤ n`` (n public), and every such matrix is a possible G: the prior's support is
    exactly the set the release can come from. W / tr W is independent of tr W and invariant under rotations
    (the law of Y is), so no direction of the release's basis is favoured: what the posterior says about the
    eigenfunctions comes from the released frame alone. r, the mean squared norm of the scaled records, is
    public-scale (it lies in [0, 1] by the clipping); its Beta prior says how close to τ the curves' norms are
    believed to be. The degrees of freedom d set how spiked the spectrum is a priori: d = 1 is a rank-one
    operator, large d approaches r/m · I (no principal direction); the default d = m gives a spread of
    explained-variance ratios (capped at 6 for large m: the parameter count is m·d). An inverse-Wishart is not
    used because it cannot respect tr S ≤ 1.

    Parameters
    ----------
    trace_alpha, trace_beta : float
        Beta prior of r = tr(G)/n (> 0; default 1, 1: uniform on [0, 1]).
    dof : int, optional
        d ≥ 1 (default: min(m, :data:`DEFAULT_MAX_DOF`); S has rank ≤ d, so d < m restricts the operator to d
        non-zero eigenvalues, which keeps NUTS's dimension m·d + 1 manageable at m = 40).

    Raises
    ------
    InputError
        Non-positive Beta parameters or d < 1.
    """

    trace_alpha: float = 1.0
    trace_beta: float = 1.0
    dof: int | None = None

    def __post_init__(self):
        for name in ("trace_alpha", "trace_beta"):
            v = float(getattr(self, name))
            if not (np.isfinite(v) and v > 0):
                raise InputError(f"{name} must be a finite number > 0 (got {getattr(self, name)!r})",
                                 "e.g. ComponentsPrior(trace_alpha=1, trace_beta=1)")
        if self.dof is not None and int(self.dof) < 1:
            raise InputError(f"dof must be >= 1 (got {self.dof!r})", "e.g. ComponentsPrior(dof=3), or None for m")

    def degrees(self, m: int) -> int:
        """d: ``dof``, or min(m, :data:`DEFAULT_MAX_DOF`) when None."""
        return int(min(m, DEFAULT_MAX_DOF) if self.dof is None else self.dof)

    def draw(self, m: int, size: int, rng) -> np.ndarray:
        """``size`` draws of S, shape (size, m, m) (for simulation-based calibration and prior checks)."""
        d = self.degrees(m)
        r = rng.beta(self.trace_alpha, self.trace_beta, size=size)
        Y = rng.standard_normal((size, m, d))
        W = Y @ np.swapaxes(Y, -1, -2)
        return r[:, None, None] * W / np.trace(W, axis1=-2, axis2=-1)[:, None, None]

    def describe(self, m: int) -> dict:
        return {"prior": "components", "prior_description":
                f"S = G/n = r W / tr W, W ~ Wishart({self.degrees(m)}, I_{m}) (rotation-invariant), "
                f"r ~ Beta({self.trace_alpha:g}, {self.trace_beta:g}) (tr G <= n from the clipping)",
                "prior_dof": self.degrees(m), "prior_trace_alpha": float(self.trace_alpha),
                "prior_trace_beta": float(self.trace_beta)}


def _resolve_prior(prior) -> ComponentsPrior:
    if prior is None or (isinstance(prior, str) and prior in ("default", "components", "gp")):
        return ComponentsPrior()
    if isinstance(prior, ComponentsPrior):
        return prior
    if isinstance(prior, dict):
        return ComponentsPrior(**prior)
    raise InputError(f"unknown prior {prior!r} for principal components",
                     "pass None, 'default', a dict of ComponentsPrior fields or a ComponentsPrior")


# ---------------------------------------------------------------------------- the release's likelihood
@dataclass(frozen=True)
class FrameLikelihood:
    """The public likelihood of released k = 1 frames: ``p(v | G) = exp(vᵀAv)/C(A)``, ``A = s(G − Σ⁻¹)``.

    Attributes
    ----------
    frames : ndarray, shape (F, m)
        The released unit vectors (each frame one independent observation).
    sigma_inv : ndarray, shape (m, m)
        Σ⁻¹, the public base precision.
    scale : float
        s = ε/(2Δ) (:attr:`fdp_ppl.fpca.FPCASpec.scale`, from the release's ε and Δ).
    n : int
        Public number of records (units): tr G ≤ n.
    method : {"series", "saddlepoint"}
        How log C is computed, fixed for the run from the public bound on the spread of A's eigenvalues,
        ``s (n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹))`` (the same bound as
        :func:`fdp_ppl.fpca.samplers.bingham_log_density_floor`).
    """

    frames: np.ndarray
    sigma_inv: np.ndarray
    scale: float
    n: int
    method: str

    @classmethod
    def build(cls, frames, sigma, scale, n, method="auto") -> "FrameLikelihood":
        frames = np.asarray(frames, dtype=float)
        if frames.ndim == 1:
            frames = frames[None]
        sigma = np.asarray(sigma, dtype=float)
        m = sigma.shape[0]
        if frames.ndim != 2 or frames.shape[1] != m or not np.all(np.isfinite(frames)):
            raise InputError(f"frames must have shape (F, {m}) and be finite, got {frames.shape}",
                             "pass the released unit vectors in basis coordinates")
        if not np.allclose(np.linalg.norm(frames, axis=1), 1.0, atol=1e-6):
            raise InputError("released frames must be unit vectors", "pass the release's posterior 'frame'")
        sigma_inv = np.linalg.inv(0.5 * (sigma + sigma.T))
        w = np.linalg.eigvalsh(sigma_inv)
        spread = float(scale) * (int(n) + w[-1] - w[0])
        if method == "auto":
            method = "series" if spread <= SERIES_MAX_SPREAD else "saddlepoint"
        if method not in ("series", "saddlepoint"):
            raise InputError(f"unknown log_constant {method!r}", "choose 'auto', 'series' or 'saddlepoint'")
        if method == "series" and spread > SERIES_MAX_SPREAD:
            raise InputError(f"the exact series serves spreads up to {SERIES_MAX_SPREAD:g}; this release allows "
                             f"{spread:.4g}", "pass log_constant='saddlepoint' (or 'auto')")
        return cls(frames=frames, sigma_inv=sigma_inv, scale=float(scale), n=int(n), method=method)

    def parameter(self, second_moment) -> np.ndarray:
        """A = s(n S − Σ⁻¹) for S = G/n, shape (..., m, m)."""
        return self.scale * (self.n * np.asarray(second_moment, dtype=float) - self.sigma_inv)

    def logp(self, second_moment) -> np.ndarray:
        """Log-likelihood of each frame, shape (..., F), for S of shape (..., m, m) (numpy)."""
        S_ = np.asarray(second_moment, dtype=float)
        A = self.parameter(S_)
        flat = A.reshape(-1, *A.shape[-2:])
        logc = np.array([bingham_log_constant(a, self.method) for a in flat]).reshape(A.shape[:-2])
        quad = np.einsum("fi,...ij,fj->...f", self.frames, A, self.frames)
        return quad - logc[..., None]


def _likelihood_scale(attrs) -> float:
    """s = ε/(2Δ) of the release (the factor :attr:`fdp_ppl.fpca.FPCASpec.scale` used to draw it)."""
    return float(attrs["epsilon"]) / (2.0 * float(attrs.get("sensitivity", 1.0)))


# ---------------------------------------------------------------------------- the model
def components_model(likelihood: FrameLikelihood, prior: ComponentsPrior | None = None):
    """PyMC model of S = G/n given released k = 1 frames.

    Free variables: ``trace`` r = tr S (Beta prior) and the Bartlett factors of W ~ Wishart(d, I): W = LLᵀ with
    L m × d lower-trapezoidal, ``bartlett_diag`` L_ii² ~ χ²_{d−i} (0-based i < min(m, d)) and ``bartlett_lower``
    the entries below the diagonal, N(0, 1) (the Bartlett decomposition, Muirhead 1982, Thm 3.2.14; for d < m
    the LQ factor of an m × d Gaussian matrix). ``S = r W / tr W``. Unlike W = YYᵀ with Gaussian Y, this has no
    rotational redundancy Y → YO, whose curved orbits made NUTS take ~100 leapfrog steps per draw once many
    frames concentrate the posterior (the scale of W stays a nuisance the likelihood does not see). The
    potential ``release`` is ``Σ_f v_fᵀ A v_f − F log C(A)``, A = s(nS − Σ⁻¹), with log C and its gradient from
    :func:`~fdp_ppl.inference.bingham.bingham_log_constant_op`. The release enters through ``pm.Data``
    (``scatter`` = Σ_f v_f v_fᵀ, ``n_frames``, ``scale``, ``n``, ``sigma_inv``), so one compiled model serves many
    releases of the same m (:func:`_set_release`).

    Returns
    -------
    pm.Model
    """
    import pymc as pm
    import pytensor.tensor as pt

    prior = prior or ComponentsPrior()
    m = likelihood.sigma_inv.shape[0]
    d = prior.degrees(m)
    op = bingham_log_constant_op(likelihood.method)
    with pm.Model(coords={dims.BASIS: np.arange(m), "factor": np.arange(d)}) as model:
        scatter = pm.Data("scatter", np.zeros((m, m)))
        n_frames = pm.Data("n_frames", 1.0)
        scale = pm.Data("scale", 1.0)
        n = pm.Data("n", 1.0)
        sigma_inv = pm.Data("sigma_inv", np.eye(m))
        r = pm.Beta("trace", float(prior.trace_alpha), float(prior.trace_beta))
        di, (ri, ci) = _bartlett_indices(m, d)
        c = pm.ChiSquared("bartlett_diag", nu=d - np.arange(di.size, dtype=float))
        z = pm.Normal("bartlett_lower", 0.0, 1.0, shape=ri.size)
        L = pt.set_subtensor(pt.zeros((m, d))[di, di], pt.sqrt(c))
        L = pt.set_subtensor(L[ri, ci], z)
        T = pt.sum(L**2)
        Sm = r * pt.dot(L, L.T) / T
        A = scale * (n * Sm - sigma_inv)
        logc, _ = op(A)
        pm.Potential("release", pt.sum(A * scatter) - n_frames * logc)  # Σ_f v_fᵀAv_f = tr(A Σ_f v_f v_fᵀ)
    _set_release(model, likelihood)
    return model


def _set_release(model, likelihood: FrameLikelihood) -> None:
    import pymc as pm

    V = likelihood.frames
    pm.set_data({"scatter": V.T @ V, "n_frames": float(V.shape[0]), "scale": likelihood.scale,
                 "n": float(likelihood.n), "sigma_inv": likelihood.sigma_inv}, model=model)


#: compiled (model, NUTS step) per (m, d, prior, log-constant method, target_accept, mode): compiling takes seconds,
#: sampling a small posterior less than one
_COMPILED: dict = {}
#: largest number of free variables for which NUTS adapts a dense mass matrix (else diagonal)
DENSE_MAX = 60


def _compiled(likelihood: FrameLikelihood, prior: ComponentsPrior, target_accept: float, mode):
    import pymc as pm

    m = likelihood.sigma_inv.shape[0]
    key = (m, prior.degrees(m), prior.trace_alpha, prior.trace_beta, likelihood.method, float(target_accept), mode)
    if key not in _COMPILED:
        if len(_COMPILED) >= 8:
            _COMPILED.pop(next(iter(_COMPILED)))
        model = components_model(likelihood, prior)
        from pymc.step_methods.hmc.quadpotential import QuadPotentialFullAdapt

        size = 1 + min(m, prior.degrees(m)) + _bartlett_indices(m, prior.degrees(m))[1][0].size
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(BLAS|experimental).*")
            # a dense mass matrix: with many frames the posterior is concentrated along directions of Y that are
            # not axis-aligned (a diagonal mass matrix then needs ~100 leapfrog steps per draw)
            potential = QuadPotentialFullAdapt(size, np.zeros(size), np.eye(size), 10) if size <= DENSE_MAX else None
            step = pm.NUTS(model=model, target_accept=float(target_accept), potential=potential,
                           **({"compile_kwargs": {"mode": mode}} if mode is not None else {}))
        _COMPILED[key] = (model, step)
    model, step = _COMPILED[key]
    _set_release(model, likelihood)
    return model, step


def initial_values(m: int, d: int, chains: int, rng) -> list[dict]:
    """Data-independent NUTS starting points of :func:`components_model`: prior draws of the Bartlett factors and a
    trace in (0.2, 0.8)."""
    di, (ri, _) = _bartlett_indices(m, d)
    return [{"trace": float(rng.uniform(0.2, 0.8)), "bartlett_diag": rng.chisquare(d - np.arange(di.size)),
             "bartlett_lower": rng.standard_normal(ri.size)} for _ in range(chains)]


def _bartlett_indices(m: int, d: int):
    """Diagonal positions (min(m, d),) and strictly-lower positions (rows, cols) of an m × d lower-trapezoidal L."""
    rows, cols = np.tril_indices(m, -1, d)
    return np.arange(min(m, d)), (rows, cols)


def _second_moment(trace, diag, lower, m: int, d: int) -> np.ndarray:
    """S = r LLᵀ/tr(LLᵀ) from draws of the Bartlett factors (:func:`components_model`), shape (..., m, m)."""
    di, (ri, ci) = _bartlett_indices(m, d)
    L = np.zeros(trace.shape + (m, d))
    L[..., di, di] = np.sqrt(diag)
    L[..., ri, ci] = lower
    W = L @ np.swapaxes(L, -1, -2)
    return trace[..., None, None] * W / np.trace(W, axis1=-2, axis2=-1)[..., None, None]


def _reference(frames: np.ndarray) -> np.ndarray:
    """A public sign reference: the top eigenvector of Σ_f v_f v_fᵀ of the released frames (sign: largest |entry|
    positive). Aligning to the release is post-processing of public data."""
    w, U = np.linalg.eigh(frames.T @ frames)
    u = U[:, -1]
    return u * np.sign(u[np.argmax(np.abs(u))])


def summarise_second_moment(Sdraws, reference, basis_values) -> dict:
    """Eigen-summaries of draws of S (..., m, m): descending ``eigenvalues`` (..., m), ``explained`` λ₁/tr S,
    ``top`` eigenvector (..., m) with sign fixed by ``reference`` (uᵀref ≥ 0), ``function`` (..., K) on the grid."""
    w, U = np.linalg.eigh(Sdraws)
    w = w[..., ::-1]
    u = U[..., :, -1]
    sgn = np.where(u @ reference < 0, -1.0, 1.0)
    u = u * sgn[..., None]
    tr = np.sum(w, axis=-1)
    return {"eigenvalues": w, "explained": w[..., 0] / np.where(tr > 0, tr, 1.0), "top": u,
            "function": u @ np.asarray(basis_values).T}


# ---------------------------------------------------------------------------- entry point
def _read_fpca(release):
    if not S.is_fpca_release(release):
        raise InputError("infer_components takes an epsilon-DP FPCA release (fdp-ppl fpca)",
                         "pass the file written by fdp-ppl fpca or fdp_ppl.release")
    at = dict(release.attrs)
    k = int(at.get("k", 1))
    if k != 1:
        raise InputError(f"inference for FPCA releases serves k = 1 frames only (got k = {k}): the matrix Bingham "
                         "normaliser for k > 1 is not implemented", "release with --k 1 (one component per frame)")
    if at.get("form", "bingham") != "bingham":
        raise InputError(f"inference for FPCA releases serves the bingham form only (got {at.get('form')!r})",
                         "release with --form bingham (the default)")
    post = release[S.POSTERIOR]
    fr = np.asarray(post[S.FRAME].values, dtype=float)  # (chain, draw, basis, component)
    frames = fr[..., 0].reshape(-1, fr.shape[-2])
    const = release[S.CONSTANT_DATA]
    sigma = np.asarray(const[S.SIGMA].values, dtype=float)
    B = np.asarray(const[S.BASIS_FUNCTIONS].values, dtype=float)
    t = np.asarray(post[dims.T].values, dtype=float)
    return at, frames, sigma, B, t


def infer_components(release: xr.DataTree, prior=None, *, draws: int = 1000, tune: int = 1000, chains: int = 2,
                     target_accept: float = 0.9, random_seed=None, progressbar: bool = False,
                     log_constant: str = "auto", posterior_predictive: bool = True) -> xr.DataTree:
    """Posterior of the data's second-moment operator, its top eigenfunction and explained-variance ratio, given an
    ε-DP FPCA release (Bingham form, k = 1).

    Every released frame (chain × draw of the release) is an independent observation with density
    ``exp(vᵀAv)/C(A)``, ``A = s(G − Σ⁻¹)``, ``s = ε/(2Δ)`` (Awan et al. 2019, Sec. 5; spec ``expmech-fpca.md``
    §2.2) w.r.t. the uniform law on the sphere; log C is exact (positive series) or the Kume–Wood saddlepoint
    (:class:`FrameLikelihood`). The prior over G = n S is :class:`ComponentsPrior`. Sampled with PyMC NUTS.
    The public fallback of the exact sampler (probability ≤ ``exp(fallback_bound_log)``, about 1e-40 or less)
    is ignored.

    Parameters
    ----------
    release : xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.FPCA_RELEASE`, form ``bingham``, k = 1. Only public content is read.
    prior : None, "default", dict or ComponentsPrior
    draws, tune, chains, target_accept
        NUTS settings (``pm.sample``).
    random_seed : int, sequence, Generator or None
        Seeds NUTS, its starting points and the replicated frames.
    progressbar : bool
    log_constant : {"auto", "series", "saddlepoint"}
        "auto": the exact series when the public bound on the spread of A's eigenvalues allows it
        (:data:`~fdp_ppl.inference.bingham.SERIES_MAX_SPREAD`), else the saddlepoint; fixed for the run.
    posterior_predictive : bool
        Draw one replicated frame per posterior draw (exact Bingham sampler,
        :func:`fdp_ppl.fpca.sample_vector_bingham`).

    Returns
    -------
    xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.INFERENCE`. ``posterior``: ``second_moment`` (chain, draw, basis, basis_aux)
        = G/n, ``eigenvalues`` (chain, draw, eigen) descending, ``explained_variance_ratio`` (chain, draw),
        ``top_eigenvector`` (chain, draw, basis) and ``top_eigenfunction`` (chain, draw, t) with the sign that
        agrees with the released frames, ``trace`` (chain, draw) = tr(G)/n. ``posterior_predictive``: ``frame``
        (chain, draw, basis, component) and ``components`` (chain, draw, component, t). ``observed_data``: the
        released ``frame`` (release_draw, basis, component) and ``components``. ``constant_data``: basis
        functions, quadrature weights, Σ, and the scalars ``scale`` (s) and ``n``. ``sample_stats`` from NUTS.
        ``attrs``: the release's public attributes (``release_*``), the prior, ``log_constant`` and diagnostics.

    Warns
    -----
    InferenceWarning
        R-hat above 1.01, ESS below 100 per chain, or divergences (on rotation-invariant summaries).

    Raises
    ------
    InputError
        Not an FPCA release, k > 1, the gp-base form, or a bad prior.
    """
    import pymc as pm

    from ..settings import MAX_RHAT, MIN_ESS_PER_CHAIN, compile_mode
    from .diagnostics import InferenceWarning, diagnostics

    at, frames, sigma, B, t = _read_fpca(release)
    prior = _resolve_prior(prior)
    lik = FrameLikelihood.build(frames, sigma, _likelihood_scale(at), int(at["n"]), log_constant)
    m = sigma.shape[0]
    rng = np.random.default_rng(random_seed)
    mode = compile_mode()
    model, step = _compiled(lik, prior, target_accept, mode)
    d = prior.degrees(m)
    di, (ri, _) = _bartlett_indices(m, d)
    inits = initial_values(m, d, chains, rng)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(BLAS|divergen|rhat|effective sample).*")
        idata = pm.sample(model=model, step=step, draws=draws, tune=tune, chains=chains, cores=1, initvals=inits,
                          random_seed=int(rng.integers(2**31 - 1)), progressbar=progressbar, quiet=not progressbar,
                          compute_convergence_checks=False,
                          **({"compile_kwargs": {"mode": mode}} if mode is not None else {}))
    post_raw = idata[S.POSTERIOR]
    tr_ = np.asarray(post_raw["trace"].values)
    Sd = _second_moment(tr_, np.asarray(post_raw["bartlett_diag"].values),
                        np.asarray(post_raw["bartlett_lower"].values), m, d)
    ref = _reference(frames)
    summ = summarise_second_moment(Sd, ref, B)
    cd = {dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)}
    tcoord = {dims.T: t}
    post = xr.Dataset(
        {"second_moment": ((dims.CHAIN, dims.DRAW, dims.BASIS, dims.BASIS_AUX), Sd),
         "eigenvalues": ((dims.CHAIN, dims.DRAW, EIGEN), summ["eigenvalues"]),
         "explained_variance_ratio": ((dims.CHAIN, dims.DRAW), summ["explained"]),
         "top_eigenvector": ((dims.CHAIN, dims.DRAW, dims.BASIS), summ["top"]),
         "top_eigenfunction": ((dims.CHAIN, dims.DRAW, dims.T), summ["function"]),
         "trace": ((dims.CHAIN, dims.DRAW), tr_)},
        coords={**cd, dims.BASIS: np.arange(m), dims.BASIS_AUX: np.arange(m), EIGEN: np.arange(m), **tcoord})
    post["second_moment"].attrs["description"] = "G/n: uncentred second moment of the clipped, tau-scaled records"
    post["top_eigenfunction"].attrs["description"] = ("top eigenfunction of G on the release's grid, sign agreeing "
                                                      "with the released frames")
    post["explained_variance_ratio"].attrs["description"] = "lambda_1(G) / tr(G)"
    groups = {S.POSTERIOR: post}
    obs_comp = frames @ B.T
    groups[S.OBSERVED_DATA] = xr.Dataset(
        {S.FRAME: ((RELEASE_DRAW, dims.BASIS, dims.COMPONENT), frames[:, :, None]),
         S.COMPONENTS: ((RELEASE_DRAW, dims.COMPONENT, dims.T), obs_comp[:, None, :])},
        coords={RELEASE_DRAW: np.arange(frames.shape[0]), dims.BASIS: np.arange(m), dims.COMPONENT: [0], **tcoord})
    if posterior_predictive:
        from ..fpca.samplers import sample_vector_bingham

        A = lik.parameter(Sd).reshape(-1, m, m)
        rep = np.stack([sample_vector_bingham(a, 1, rng)[0] for a in A]).reshape(chains, draws, m)
        groups["posterior_predictive"] = xr.Dataset(
            {S.FRAME: ((dims.CHAIN, dims.DRAW, dims.BASIS, dims.COMPONENT), rep[..., None]),
             S.COMPONENTS: ((dims.CHAIN, dims.DRAW, dims.COMPONENT, dims.T), (rep @ B.T)[:, :, None, :])},
            coords={**cd, dims.BASIS: np.arange(m), dims.COMPONENT: [0], **tcoord})
    # one term per released frame (each an independent observation): PSIS-LOO over frames (comparison.py)
    groups[S.LOG_LIKELIHOOD] = xr.Dataset(
        {S.RELEASED: ((dims.CHAIN, dims.DRAW, RELEASE_DRAW), lik.logp(Sd))},
        coords={**cd, RELEASE_DRAW: np.arange(frames.shape[0])})
    const = release[S.CONSTANT_DATA].to_dataset()
    const = const.assign(scale=lik.scale, n=lik.n)
    groups[S.CONSTANT_DATA] = const
    if "sample_stats" in idata.children:
        groups["sample_stats"] = idata["sample_stats"].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    diag = diagnostics(tree, ["trace", "explained_variance_ratio", "eigenvalues"])
    attrs = {f"release_{k}": v for k, v in at.items() if k in S.PUBLIC_ATTRS or k in ("m", "k", "form", "basis",
                                                                                         "sigma_rule", "sampler",
                                                                                         "exact", "certified")}
    attrs.update(prior.describe(m))
    attrs.update({"target": "second moment operator G/n (uncentred) of the clipped, tau-scaled records",
                  "inference": "NUTS", "inference_model": "components", "inference_sampler": "pymc",
                  "log_constant": lik.method, "release_frames": int(frames.shape[0]),
                  "inference_description": "k = 1 Bingham likelihood exp(v'Av)/C(A), A = s(G - Sigma^-1), "
                                           f"s = {lik.scale:g}, log C by the {lik.method} "
                                           "(Kume & Wood 2005 for the saddlepoint)",
                  "privacy_cost": "none (post-processing of a release)",
                  RELEASE_ID: release_identity(release, None), "loo_method": "psis",
                  "log_likelihood": "log p(frame_f | second moment), per released frame"})
    attrs.update({f"diagnostic_{k}": v for k, v in diag.items()})
    tree.attrs.update({k: (str(v) if v is None else v) for k, v in attrs.items()})
    tree.attrs.update(S.inference_attrs())
    if not int(at.get("exact", 1)):
        warnings.warn("the release was drawn by uncertified MCMC: the likelihood assumes exact draws from the "
                      "mechanism", InferenceWarning, stacklevel=2)
    problems = []
    if diag["max_rhat"] > MAX_RHAT:
        problems.append(f"R-hat up to {diag['max_rhat']:.3f}")
    if min(diag["min_ess_bulk"], diag["min_ess_tail"]) < MIN_ESS_PER_CHAIN * chains:
        problems.append(f"ESS down to {min(diag['min_ess_bulk'], diag['min_ess_tail']):.0f}")
    if diag["divergences"]:
        problems.append(f"{diag['divergences']} divergences")
    if problems:
        warnings.warn("MCMC diagnostics failed (" + ", ".join(problems) + "): run longer (draws/tune) or raise "
                      "target_accept", InferenceWarning, stacklevel=2)
    return tree


__all__ = ["ComponentsPrior", "FrameLikelihood", "components_model", "infer_components", "summarise_second_moment",
           "initial_values"]
