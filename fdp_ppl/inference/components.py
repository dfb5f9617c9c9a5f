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

k > 1: a released m × k frame follows the matrix Bingham law ``etr(VᵀAV)/₁F₁(k/2; m/2; A)`` on the Stiefel
manifold (Gibbs and NUTS releases, whose target it is), or the sequential (deflation) law of a release drawn
column by column; the law is chosen from the release's attrs by :mod:`fdp_ppl.inference.frame_laws` and its
normaliser computed by :mod:`fdp_ppl.inference.stiefel`. The GP-base form (a normaliser that is not a
hypergeometric function) is refused with an :class:`~fdp_ppl.errors.InputError`.
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
from .bingham import SERIES_MAX_SPREAD

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
    """The public likelihood of released frames given S = G/n, by the release's frame law
    (:mod:`fdp_ppl.inference.frame_laws`): for the matrix Bingham law ``p(V | G) = etr(VᵀAV)/₁F₁(k/2; m/2; A)``,
    ``A = s(G − Σ⁻¹)`` (k = 1: ``exp(vᵀAv)/C(A)``).

    Attributes
    ----------
    frames : ndarray, shape (F, m, k)
        The released frames (each frame one independent observation).
    sigma_inv : ndarray, shape (m, m)
        Σ⁻¹, the public base precision.
    scale : float
        s = ε/(2Δ) (:attr:`fdp_ppl.fpca.FPCASpec.scale`, from the release's ε and Δ).
    n : int
        Public number of records (units): tr G ≤ n.
    method : str
        How the normaliser is computed, fixed for the run: k = 1 and the sequential law ``"series"`` or
        ``"saddlepoint"`` (from the public bound on the spread of A's eigenvalues,
        ``s (n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹))``, the same bound as
        :func:`fdp_ppl.fpca.samplers.bingham_log_density_floor`); the matrix law with k > 1 ``"complement"``
        (exact, k ≥ m − 1) or ``"nested"`` (:mod:`fdp_ppl.inference.stiefel`).
    law : str
        Key of :data:`~fdp_ppl.inference.frame_laws.FRAME_LAWS`.
    weights : ndarray, shape (k,)
        Step shares ε_i/ε of the sequential law (ones for the matrix law).
    vector_method : str
        ``"series"`` or ``"saddlepoint"``: the vector Bingham constants inside the k > 1 normalisers.
    """

    frames: np.ndarray
    sigma_inv: np.ndarray
    scale: float
    n: int
    method: str
    law: str = "matrix-bingham"
    weights: np.ndarray | None = None
    vector_method: str = "series"

    @property
    def k(self) -> int:
        return int(self.frames.shape[-1])

    @property
    def frame_law(self):
        from .frame_laws import FRAME_LAWS

        return FRAME_LAWS[self.law]

    @classmethod
    def build(cls, frames, sigma, scale, n, method="auto", law: str = "matrix-bingham",
              weights=None) -> "FrameLikelihood":
        from .frame_laws import FRAME_LAWS

        frames = np.asarray(frames, dtype=float)
        if frames.ndim == 1:
            frames = frames[None]
        if frames.ndim == 2:
            frames = frames[:, :, None]
        sigma = np.asarray(sigma, dtype=float)
        m = sigma.shape[0]
        if frames.ndim != 3 or frames.shape[1] != m or not np.all(np.isfinite(frames)):
            raise InputError(f"frames must have shape (F, {m}) or (F, {m}, k) and be finite, got {frames.shape}",
                             "pass the released frames in basis coordinates")
        k = frames.shape[2]
        gram = np.einsum("fik,fil->fkl", frames, frames)
        if not np.allclose(gram, np.eye(k), atol=1e-6):
            raise InputError("released frames must have orthonormal columns (unit vectors for k = 1)",
                             "pass the release's posterior 'frame'")
        if law not in FRAME_LAWS:
            raise InputError(f"unknown frame law {law!r}", f"choose one of {sorted(FRAME_LAWS)}")
        sigma_inv = np.linalg.inv(0.5 * (sigma + sigma.T))
        w = np.linalg.eigvalsh(sigma_inv)
        spread = float(scale) * (int(n) + w[-1] - w[0])
        vector = method if method in ("series", "saddlepoint") else "auto"
        if vector == "auto":
            vector = "series" if spread <= SERIES_MAX_SPREAD else "saddlepoint"
        if method not in ("auto", "series", "saddlepoint", "nested", "complement", "zonal") or (
                k == 1 and method in ("nested", "complement", "zonal")):
            raise InputError(f"unknown log_constant {method!r}", "choose 'auto', 'series' or 'saddlepoint' "
                                                                 "(and 'nested', 'complement' or 'zonal' for k > 1)")
        if vector == "series" and spread > SERIES_MAX_SPREAD:
            raise InputError(f"the exact series serves spreads up to {SERIES_MAX_SPREAD:g}; this release allows "
                             f"{spread:.4g}", "pass log_constant='saddlepoint' (or 'auto')")
        flaw = FRAME_LAWS[law]
        wts = np.ones(k) if weights is None else np.asarray(weights, dtype=float).reshape(k)
        return cls(frames=frames, sigma_inv=sigma_inv, scale=float(scale), n=int(n),
                   method=flaw.constant_method(m, k, vector, method, spread), law=law, weights=wts, vector_method=vector)

    def parameter(self, second_moment) -> np.ndarray:
        """A = s(n S − Σ⁻¹) for S = G/n, shape (..., m, m)."""
        return self.scale * (self.n * np.asarray(second_moment, dtype=float) - self.sigma_inv)

    def logp(self, second_moment) -> np.ndarray:
        """Log-likelihood of each frame, shape (..., F), for S of shape (..., m, m) (numpy)."""
        return self.frame_law.logp(self, self.parameter(second_moment))


def _approximation_text(lik: FrameLikelihood) -> str:
    """What the run's normaliser is (recorded in the result's attrs)."""
    from .stiefel import NESTED_TOLERANCE

    if lik.method == "nested":
        return (f"approximate: nested product of exact vector Bingham constants for 1F1({lik.k}/2; m/2; A) "
                f"(inference/stiefel.py; |error of log C| <= {NESTED_TOLERANCE:g} nats in the package's checks, "
                "about 0.01 on the mechanism's parameters at m <= 6)")
    if lik.method == "saddlepoint":
        return "approximate: Kume & Wood (2005) saddlepoint of the vector Bingham constants (0.01-0.05 nats)"
    if lik.method == "zonal":
        from .stiefel import ZONAL_TOLERANCE

        return (f"exact to {ZONAL_TOLERANCE:g} nats: truncated zonal-polynomial series of 1F1({lik.k}/2; m/2; A) "
                "(inference/stiefel.py, stated truncation bound)")
    return "exact" + (" (complement identity)" if lik.method == "complement" else "") + (
        "" if lik.vector_method == "series" else ", vector constants by the Kume-Wood saddlepoint")


def _likelihood_scale(attrs) -> float:
    """s = ε/(2Δ) of the release (the factor :attr:`fdp_ppl.fpca.FPCASpec.scale` used to draw it)."""
    return float(attrs["epsilon"]) / (2.0 * float(attrs.get("sensitivity", 1.0)))


# ---------------------------------------------------------------------------- the model
def components_model(likelihood: FrameLikelihood, prior: ComponentsPrior | None = None):
    """PyMC model of S = G/n given released frames (any k; the likelihood by the release's frame law).

    Free variables: ``trace`` r = tr S (Beta prior) and the Bartlett factors of W ~ Wishart(d, I): W = LLᵀ with
    L m × d lower-trapezoidal, ``bartlett_diag`` L_ii² ~ χ²_{d−i} (0-based i < min(m, d)) and ``bartlett_lower``
    the entries below the diagonal, N(0, 1) (the Bartlett decomposition, Muirhead 1982, Thm 3.2.14; for d < m
    the LQ factor of an m × d Gaussian matrix). ``S = r W / tr W``. Unlike W = YYᵀ with Gaussian Y, this has no
    rotational redundancy Y → YO, whose curved orbits made NUTS take ~100 leapfrog steps per draw once many
    frames concentrate the posterior (the scale of W stays a nuisance the likelihood does not see). The
    potential ``release`` is the frame law's log-likelihood (:mod:`fdp_ppl.inference.frame_laws`), A = s(nS − Σ⁻¹):
    for the matrix Bingham law ``Σ_f tr(V_fᵀAV_f) − F log C_k(A)`` with log C_k and its gradient from
    :func:`~fdp_ppl.inference.stiefel.stiefel_log_constant_op` (k = 1:
    :func:`~fdp_ppl.inference.bingham.bingham_log_constant_op`). The release enters through ``pm.Data`` (the law's
    own, e.g. ``scatter`` = Σ_f V_fV_fᵀ and ``n_frames``, then ``scale``, ``n``, ``sigma_inv``), so one compiled
    model serves many releases of the same m and k (:func:`_set_release`).

    Returns
    -------
    pm.Model
    """
    import pymc as pm
    import pytensor.tensor as pt

    prior = prior or ComponentsPrior()
    m = likelihood.sigma_inv.shape[0]
    d = prior.degrees(m)
    law = likelihood.frame_law
    with pm.Model(coords={dims.BASIS: np.arange(m), "factor": np.arange(d)}) as model:
        data = law.declare(m, likelihood.k)
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
        pm.Potential("release", law.potential(A, data, likelihood))
    _set_release(model, likelihood)
    return model


def _set_release(model, likelihood: FrameLikelihood) -> None:
    import pymc as pm

    pm.set_data({**likelihood.frame_law.data(likelihood), "scale": likelihood.scale,
                 "n": float(likelihood.n), "sigma_inv": likelihood.sigma_inv}, model=model)


#: compiled (model, NUTS step) per (m, d, prior, log-constant method, target_accept, mode): compiling takes seconds,
#: sampling a small posterior less than one
_COMPILED: dict = {}
#: largest number of free variables for which NUTS adapts a dense mass matrix (else diagonal)
DENSE_MAX = 60


def _compiled(likelihood: FrameLikelihood, prior: ComponentsPrior, target_accept: float, mode):
    import pymc as pm

    m = likelihood.sigma_inv.shape[0]
    key = (m, likelihood.k, likelihood.law, prior.degrees(m), prior.trace_alpha, prior.trace_beta, likelihood.method,
           likelihood.vector_method, float(target_accept), mode)
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
    """A public sign reference: the top eigenvector of Σ_f v_f v_fᵀ of released k = 1 frames (F, m) (sign: its
    entry of largest absolute value positive). Aligning to the release is post-processing of public data."""
    return _reference_frame(np.asarray(frames)[:, :, None])[:, 0]


def _reference_frame(frames: np.ndarray) -> np.ndarray:
    """The released subspace as one public frame (m, k): the top k eigenvectors of Σ_f V_fV_fᵀ (the released
    frame itself when F = 1, up to signs), each column's sign making its entry of largest absolute value positive."""
    k = frames.shape[-1]
    _, U = np.linalg.eigh(np.einsum("fik,fjk->ij", frames, frames))
    R = U[:, ::-1][:, :k]
    idx = np.argmax(np.abs(R), axis=0)
    return R * np.sign(R[idx, np.arange(k)])


def summarise_second_moment(Sdraws, reference, basis_values) -> dict:
    """Eigen-summaries of draws of S (..., m, m) against the released subspace ``reference`` ((m,) for k = 1 or
    (m, k)).

    Returns
    -------
    dict
        ``eigenvalues`` (..., m) descending; ``explained`` the top-k share Σ_{j≤k} λ_j / tr S; ``ratios`` (..., k)
        λ_j / tr S; ``vectors`` (..., m, k) the top k eigenvectors, each with its sign fixed by the reference's
        column (u_jᵀref_j ≥ 0); ``functions`` (..., k, K) on the grid; ``top``/``function`` the first of them;
        ``projection`` (..., m, m) the projector onto the top-k eigenspace; ``angles`` (..., k) the principal
        angles between that eigenspace and the released subspace, in degrees, ascending.
    """
    R = np.asarray(reference, dtype=float)
    R = R[:, None] if R.ndim == 1 else R
    k = R.shape[1]
    w, U = np.linalg.eigh(Sdraws)
    w = w[..., ::-1]
    Uk = U[..., :, ::-1][..., :, :k]
    sgn = np.where(np.einsum("...ik,ik->...k", Uk, R) < 0, -1.0, 1.0)
    Uk = Uk * sgn[..., None, :]
    tr = np.sum(w, axis=-1)
    safe = np.where(tr > 0, tr, 1.0)
    cosines = np.linalg.svd(np.swapaxes(Uk, -1, -2) @ R, compute_uv=False)      # descending cosines
    functions = np.einsum("tb,...bk->...kt", np.asarray(basis_values), Uk)
    return {"eigenvalues": w, "explained": np.sum(w[..., :k], axis=-1) / safe, "ratios": w[..., :k] / safe[..., None],
            "vectors": Uk, "functions": functions, "top": Uk[..., 0], "function": functions[..., 0, :],
            "projection": Uk @ np.swapaxes(Uk, -1, -2),
            "angles": np.degrees(np.arccos(np.clip(cosines, 0.0, 1.0)))}


# ---------------------------------------------------------------------------- entry point
def _read_fpca(release):
    if not S.is_fpca_release(release):
        raise InputError("infer_components takes an epsilon-DP FPCA release (fdp-ppl fpca)",
                         "pass the file written by fdp-ppl fpca or fdp_ppl.release")
    at = dict(release.attrs)
    if at.get("form", "bingham") != "bingham":
        raise InputError(f"inference for FPCA releases serves the bingham form only (got {at.get('form')!r})",
                         "release with --form bingham (the default)")
    post = release[S.POSTERIOR]
    fr = np.asarray(post[S.FRAME].values, dtype=float)  # (chain, draw, basis, component)
    frames = fr.reshape(-1, fr.shape[-2], fr.shape[-1])
    if frames.shape[-1] != int(at.get("k", frames.shape[-1])):
        raise InputError(f"the release's frames have {frames.shape[-1]} columns but k = {at.get('k')}",
                         "pass the release as written by fdp_ppl.release")
    const = release[S.CONSTANT_DATA]
    sigma = np.asarray(const[S.SIGMA].values, dtype=float)
    B = np.asarray(const[S.BASIS_FUNCTIONS].values, dtype=float)
    t = np.asarray(post[dims.T].values, dtype=float)
    return at, frames, sigma, B, t


def infer_components(release: xr.DataTree, prior=None, *, draws: int = 1000, tune: int = 1000, chains: int = 2,
                     target_accept: float = 0.9, random_seed=None, progressbar: bool = False,
                     log_constant: str = "auto", posterior_predictive: bool | None = None,
                     predictive_scans: int = 20) -> xr.DataTree:
    """Posterior of the data's second-moment operator, its top-k eigenspace (projection matrix, principal angles
    to the released frame, eigenfunctions) and explained variance, given an ε-DP FPCA release (Bingham form, any
    k).

    Every released frame (chain × draw of the release) is an independent observation whose law the release's
    ``frame_law``/``sampler`` attrs name (:func:`fdp_ppl.inference.frame_laws.frame_law`): the matrix Bingham law
    ``etr(VᵀAV)/₁F₁(k/2; m/2; A)``, ``A = s(G − Σ⁻¹)``, ``s = ε/(2Δ)`` (Awan et al. 2019, Sec. 5; spec
    ``expmech-fpca.md`` §2.2) w.r.t. the uniform law on frames for the exact, Gibbs and NUTS samplers (k = 1: log C
    exact by the positive series, or the Kume–Wood saddlepoint; k ≥ m − 1 exact by the complement identity;
    otherwise the nested approximation of :mod:`fdp_ppl.inference.stiefel`, within about 0.01–0.07 nats), or the
    sequential (deflation) Bingham law with exact step normalisers. The prior over G = n S is
    :class:`ComponentsPrior`. Sampled with PyMC NUTS. The public fallback of the exact sampler (probability ≤
    ``exp(fallback_bound_log)``, about 1e-40 or less) is ignored, and so is the distance of an uncertified MCMC
    release (k > 1 Gibbs or NUTS) from the law it targets (an :class:`InferenceWarning` says so).

    Parameters
    ----------
    release : xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.FPCA_RELEASE`, form ``bingham``. Only public content is read.
    prior : None, "default", dict or ComponentsPrior
    draws, tune, chains, target_accept
        NUTS settings (``pm.sample``).
    random_seed : int, sequence, Generator or None
        Seeds NUTS, its starting points and the replicated frames.
    progressbar : bool
    log_constant : {"auto", "series", "saddlepoint", "nested", "complement", "zonal"}
        "auto": the exact series when the public bound on the spread of A's eigenvalues allows it
        (:data:`~fdp_ppl.inference.bingham.SERIES_MAX_SPREAD`), else the saddlepoint, for the vector constants;
        for the matrix law with k > 1 the complement identity where exact (k ≥ m − 1), else the zonal series where
        the public spread bound s(n + range Σ⁻¹) lets it run (exact to its bound), else ``"nested"``. Fixed for
        the run.
    posterior_predictive : bool, optional
        Draw one replicated frame per posterior draw: exact samplers for k = 1 and the sequential law
        (:func:`fdp_ppl.fpca.sample_vector_bingham` per step), ``predictive_scans`` Gibbs scans for the matrix law
        with k > 1 (about 0.1 s per frame at m = 4, k = 2). Default: True except for the matrix law with k > 1.
    predictive_scans : int
        Gibbs scans per replicated frame of the matrix law with k > 1.

    Returns
    -------
    xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.INFERENCE`. ``posterior``: ``second_moment`` (chain, draw, basis,
        basis_aux) = G/n; ``eigenvalues`` (chain, draw, eigen) descending; ``explained_variance_ratio`` (chain,
        draw) the top-k share Σ_{j≤k} λ_j / tr G; ``component_variance_ratio`` (chain, draw, component) λ_j / tr G;
        ``projection`` (chain, draw, basis, basis_aux) the projector onto the top-k eigenspace;
        ``principal_angles`` (chain, draw, component) between that eigenspace and the released subspace (the top k
        eigenvectors of Σ_f V_fV_fᵀ; the released frame when there is one), degrees, ascending;
        ``eigenvectors`` (chain, draw, basis, component) and ``eigenfunctions`` (chain, draw, component, t), each
        with the sign that agrees with the released subspace's column; ``top_eigenvector`` (chain, draw, basis)
        and ``top_eigenfunction`` (chain, draw, t) the first of them; ``trace`` (chain, draw) = tr(G)/n.
        ``posterior_predictive`` (when drawn): ``frame`` (chain, draw, basis, component) and ``components``
        (chain, draw, component, t). ``log_likelihood``: ``released`` (chain, draw, release_draw), one term per
        released frame. ``observed_data``: the released ``frame`` (release_draw, basis, component) and
        ``components``. ``constant_data``: basis functions, quadrature weights, Σ, and the scalars ``scale`` (s)
        and ``n``. ``sample_stats`` from NUTS. ``attrs``: the release's public attributes (``release_*``), the
        prior, ``frame_law``, ``log_constant`` (and ``log_constant_vector``), ``log_constant_approximation``, and
        diagnostics.

    Warns
    -----
    InferenceWarning
        R-hat above 1.01, ESS below 100 per chain, or divergences (on rotation-invariant summaries); a release by
        uncertified MCMC.

    Raises
    ------
    InputError
        Not an FPCA release, the gp-base form, a sampler no frame law serves, or a bad prior.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.fpca import FPCAFit, FPCASpec
    >>> spec = FPCASpec(grid=fp.Grid.uniform(30), m=3, k=2, epsilon=1.0, tau=1.0)
    >>> fit = FPCAFit(spec=spec, gram=40 * np.diag([0.5, 0.3, 0.1]), n=40)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     rel = fp.release(fit, fp.ExponentialMechanism(sampler="gibbs", iterations=20), random_seed=0, study=True)
    ...     post = infer_components(rel, draws=50, tune=100, chains=1, random_seed=1)
    >>> post["posterior"]["principal_angles"].dims, post.attrs["log_constant"]
    (('chain', 'draw', 'component'), 'complement')
    """
    import pymc as pm

    from ..settings import MAX_RHAT, MIN_ESS_PER_CHAIN, compile_mode
    from .diagnostics import InferenceWarning, diagnostics
    from .frame_laws import frame_law

    at, frames, sigma, B, t = _read_fpca(release)
    prior = _resolve_prior(prior)
    law = frame_law(at)
    k = frames.shape[-1]
    lik = FrameLikelihood.build(frames, sigma, _likelihood_scale(at), int(at["n"]), log_constant, law=law.name,
                                weights=law.weights(at, k))
    m = sigma.shape[0]
    rng = np.random.default_rng(random_seed)
    mode = compile_mode()
    model, step = _compiled(lik, prior, target_accept, mode)
    d = prior.degrees(m)
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
    ref = _reference_frame(frames)
    summ = summarise_second_moment(Sd, ref, B)
    cd = {dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)}
    tcoord = {dims.T: t}
    comp = {dims.COMPONENT: np.arange(k)}
    cdims = (dims.CHAIN, dims.DRAW)
    post = xr.Dataset(
        {"second_moment": (cdims + (dims.BASIS, dims.BASIS_AUX), Sd),
         "eigenvalues": (cdims + (EIGEN,), summ["eigenvalues"]),
         "explained_variance_ratio": (cdims, summ["explained"]),
         "component_variance_ratio": (cdims + (dims.COMPONENT,), summ["ratios"]),
         "projection": (cdims + (dims.BASIS, dims.BASIS_AUX), summ["projection"]),
         "principal_angles": (cdims + (dims.COMPONENT,), summ["angles"]),
         "eigenvectors": (cdims + (dims.BASIS, dims.COMPONENT), summ["vectors"]),
         "eigenfunctions": (cdims + (dims.COMPONENT, dims.T), summ["functions"]),
         "top_eigenvector": (cdims + (dims.BASIS,), summ["top"]),
         "top_eigenfunction": (cdims + (dims.T,), summ["function"]),
         "trace": (cdims, tr_)},
        coords={**cd, dims.BASIS: np.arange(m), dims.BASIS_AUX: np.arange(m), EIGEN: np.arange(m), **comp, **tcoord})
    post["second_moment"].attrs["description"] = "G/n: uncentred second moment of the clipped, tau-scaled records"
    post["top_eigenfunction"].attrs["description"] = ("top eigenfunction of G on the release's grid, sign agreeing "
                                                      "with the released frames")
    post["explained_variance_ratio"].attrs["description"] = "sum of the top k eigenvalues of G / tr(G)"
    post["component_variance_ratio"].attrs["description"] = "lambda_j(G) / tr(G), j = 1..k"
    post["projection"].attrs["description"] = "projector onto the top-k eigenspace of G (basis coordinates)"
    post["principal_angles"].attrs.update(description="principal angles between the top-k eigenspace of G and the "
                                                      "released subspace, ascending", units="degree")
    groups = {S.POSTERIOR: post}
    obs_comp = np.einsum("tb,fbk->fkt", B, frames)
    groups[S.OBSERVED_DATA] = xr.Dataset(
        {S.FRAME: ((RELEASE_DRAW, dims.BASIS, dims.COMPONENT), frames),
         S.COMPONENTS: ((RELEASE_DRAW, dims.COMPONENT, dims.T), obs_comp)},
        coords={RELEASE_DRAW: np.arange(frames.shape[0]), dims.BASIS: np.arange(m), **comp, **tcoord})
    if posterior_predictive is None:
        posterior_predictive = k == 1 or law.name != "matrix-bingham"
    if posterior_predictive:
        A = lik.parameter(Sd).reshape(-1, m, m)
        rep = np.stack([law.replicate(lik, a, rng, int(predictive_scans)) for a in A]).reshape(chains, draws, m, k)
        groups["posterior_predictive"] = xr.Dataset(
            {S.FRAME: (cdims + (dims.BASIS, dims.COMPONENT), rep),
             S.COMPONENTS: (cdims + (dims.COMPONENT, dims.T), np.einsum("tb,cdbk->cdkt", B, rep))},
            coords={**cd, dims.BASIS: np.arange(m), **comp, **tcoord})
    # one term per released frame (each an independent observation): PSIS-LOO over frames (comparison.py)
    groups[S.LOG_LIKELIHOOD] = xr.Dataset(
        {S.RELEASED: (cdims + (RELEASE_DRAW,), lik.logp(Sd))},
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
                  "log_constant": lik.method, "log_constant_vector": lik.vector_method,
                  "frame_law": law.name, "release_frames": int(frames.shape[0]),
                  "log_constant_approximation": _approximation_text(lik),
                  "inference_description": law.describe(lik),
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
