"""Noise-aware Bayesian inference from a private release.

The mechanism's noise law and its parameters are public and stored in the
release, so the exact density of the released coefficients given the
underlying summary is a known likelihood. The posterior of the curve given
the release is therefore post-processing: it costs no privacy
(``specs/iclp.md`` §4.3 P3, ``specs/gaussian-banach.md`` §4 (iii)).

:func:`infer` reads **only** the release: ``posterior.coefficients``,
``constant_data`` (eigenvalues/eigenfunctions or Bernstein design,
quadrature weights, noise scale) and public attributes (noise law, summary
type, η, ψ, n). It never sees the non-private summary.

How the posterior is computed (:func:`infer`, ``method="auto"``):

* **exact**, no MCMC, when every hyperparameter is fixed and either the noise is
  Gaussian (conjugate; one factorisation) or the prior is diagonal in the
  release's basis and the noise law is a product law. The ICLP prior is
  diagonal by construction; so is a GP prior whose kernel is the release's own:
  ``A K Aᵀ = Λ``, the release's eigenvalues, used as they are (checked on probe
  eigenpairs, no ``m × m`` product, no tolerance that a finer grid crosses);
  another GP prior counts as diagonal when the KL to its diagonal is at most
  :data:`~fdp_ppl.settings.DIAGONAL_KL_TOL`. The posterior then factorises
  into one-dimensional posteriors, each drawn exactly by the noise law
  (:meth:`~fdp_ppl.noise.laws.NoiseLaw.centre_posterior_draws`); the curve and the
  latent mixing scales follow exactly given the coefficients.
* **NUTS on the hyperparameters only** when they are free and the prior is
  diagonal: the coefficients are integrated out in closed form
  (:meth:`~fdp_ppl.noise.laws.NoiseLaw.marginal_logp`), then drawn exactly per draw.
* **Gibbs, exactly targeted** (:mod:`fdp_ppl.inference.gibbs`), where the prior is
  not diagonal (a GP prior with another kernel) but every hyperparameter is
  fixed and the noise is a product law: the prior split into a diagonal part
  and a Gaussian auxiliary variable, each coefficient drawn exactly given it
  under the release's own noise law, one eigendecomposition in all
  (``O(J²)`` per iteration), plus exact slice steps along the prior's slowest
  directions. MCMC diagnostics are reported.
* **NUTS on whitened coefficients** with the release's own likelihood
  (``method="whitened"``; ``"auto"`` used it for a fixed non-diagonal prior
  before the Gibbs sampler). With a free length-scale, the latent-scale
  mixture model (one factorisation per step).
* ``method="nuts"`` forces the latent-scale mixture model (today's check).

Nothing switches silently: when ``method="auto"`` cannot draw exactly it warns
(:class:`InferenceMethodWarning`, stderr) with the reason and the sampler used,
and the result's attrs record ``inference_method_requested``,
``inference_model`` and ``inference_not_exact_because``.

Conditional draws are batched: one factorisation per distinct length-scale
(Matheron's rule for the curve given its coefficients), one batched solve per
posterior draw where the latent scales differ. BLAS runs single-threaded during
inference (:func:`~fdp_ppl.settings.inference_blas_threads`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from .. import dims
from ..releasing import schema as S
from .._backend import backend
from ..errors import InputError
from ..noise.laws import MIXING_VARIABLE, Laplace, Normal
from ..settings import DIAGONAL_KL_TOL, MAX_RHAT, MIN_ESS_PER_CHAIN, blas_threads, compile_mode
from .diagnostics import InferenceWarning, diagnostics
from .priors import CustomPrior, GPPrior, resolve_prior

TARGETS = ("summary", "population")


class InferenceMethodWarning(UserWarning):
    """The posterior is not drawn exactly (``method="auto"`` found no exact form, or the method asked for
    was changed): the warning says which sampler runs and why."""


def coefs_size(model) -> int:
    return model._fdp_meta["ctx"]["y"].size


def _grid_to_basis(pub, t):
    """Linear map A (J, K) from a curve on the grid to the release's coefficients
    (:func:`fdp_ppl.releasing.schema.coefficient_map` on a dict of public arrays)."""
    return S.coefficient_map(t, pub["quadrature_weights"], eigenfunctions=pub.get("eigenfunctions"),
                             lattice=pub.get("lattice"))


def _shrinkage(view: S.ReleaseView) -> np.ndarray:
    """Shrinkage s_j of a linear summary, rebuilt by its registered spec from public values."""
    from ..releasing.registry import SUMMARIES

    name = view.metadata.summary
    spec_cls = SUMMARIES.get(name)
    if spec_cls is None or not spec_cls.linear:
        raise InputError(f"target='population' needs a summary linear in the sample mean (FRL, ICLP-QR, RKHS, "
                         f"Bernstein); got {name!r}", "use target='summary'")
    eig = view.eigenvalues if view.eigenvalues is not None else np.ones(view.n_components)
    return spec_cls.shrinkage_from_public(eig, view.metadata.public())


def default_target(view: S.ReleaseView) -> str:
    """The target :func:`infer` uses when none is given: ``"population"`` (the population mean, what an analyst
    means by "the mean curve") where the release allows it — a noise law with independent coefficients and a
    summary linear in the sample mean, whose public shrinkage the likelihood then undoes — else ``"summary"``.

    Chosen from a coverage study (``benchmarks/bench_coverage_target.py``): at ε = 1 the 90% bands of
    ``target="summary"`` covered the population mean at 0.79 (pooled), because the summary is shrunk toward the
    centre; those of ``"population"`` at 0.91.

    Parameters
    ----------
    view : ReleaseView
        A mean-curve release read by :func:`fdp_ppl.releasing.schema.read_release` (public content only).

    Returns
    -------
    {"population", "summary"}
    """
    from ..releasing.registry import SUMMARIES

    spec_cls = SUMMARIES.get(view.metadata.summary)
    return "population" if view.law.product and spec_cls is not None and spec_cls.linear else "summary"


def normal_laplace_logp(x, g, b):
    """Log-density of ``N(0, g²) + Laplace(0, b)`` at ``x`` (pytensor):
    :meth:`fdp_ppl.noise.laws.Laplace.convolved_logp` (``specs/iclp.md`` §4.3)."""
    from ..noise.laws import Laplace

    return Laplace().convolved_logp(x, g, b, xp=backend("pt"))


def _context(release, draw):
    view = S.read_release(release)
    y = view.released(draw)
    if view.n_draws > 1:
        warnings.warn(f"the release holds {view.n_draws} draws; inference uses draw {draw} only (each draw is a "
                      "separate publication)", UserWarning, stacklevel=4)
    w = view.weights
    released_curve = view.design @ y
    level = float(np.sum(w * released_curve))
    spread = float(np.sqrt(np.sum(w * (released_curve - level) ** 2))) or 1.0
    hint = {"level": level, "spread": spread, "rms": float(np.sqrt(np.sum(w * released_curve**2))) or 1.0}
    pub = {"eigenfunctions": view.design if view.eigenvalues is not None else None, "eigenvalues": view.eigenvalues,
           "quadrature_weights": w}
    return {"view": view, "y": y, "pub": pub, "attrs": view.metadata.public(), "t": view.t,
            "t_original": view.t_original, "law": view.law, "A": view.grid_to_coefficients(),
            "scale": view.noise_scale, "hint": hint}


#: values of ``method`` in :func:`infer` / :func:`build_model`
METHODS = ("auto", "exact", "nuts", "marginal", "whitened", "mixture", "dense", "gibbs")
#: bytes of one batch of matrices in the batched conditional draws (bounds memory)
_BATCH_BYTES = 64 * 2**20


def _chunk(size: int) -> int:
    """Posterior draws per batch when each needs a ``size × size`` matrix (at most 256)."""
    return int(max(1, min(256, _BATCH_BYTES // (8 * size * size))))


def _is_gaussian(law) -> bool:
    """True for laws whose scale mixture is trivial (``mixing`` is the constant 1)."""
    return isinstance(law, Normal) or getattr(law, "kind", None) == "gaussian"


def diagonal_kl(P) -> float:
    """``KL(N(0, P) || N(0, diag P)) = −½ log det R`` (nats), ``R`` the correlation matrix of ``P`` (J, J).

    Zero exactly when ``P`` is diagonal; treating ``P`` as diagonal changes the prior of the
    coefficients by this much (:data:`~fdp_ppl.settings.DIAGONAL_KL_TOL` is the threshold :func:`infer` uses).
    """
    d = np.sqrt(np.diag(P))
    R = P / d[:, None] / d[None, :]
    sign, logdet = np.linalg.slogdet(R)
    return float("inf") if sign <= 0 else max(0.0, -0.5 * float(logdet))


@dataclass(frozen=True)
class Plan:
    """How :func:`infer` computes a posterior (see :func:`build_model`).

    Attributes
    ----------
    model : {"marginal", "whitened", "mixture", "dense", "direct", "gibbs"}
        The PyMC model behind it (``"gibbs"``: no PyMC model, :class:`~fdp_ppl.inference.gibbs.SplitGibbs`).
    exact : bool
        True when nothing is left to sample (fixed hyperparameters): every draw is exact.
    diagonal : bool
        The prior covariance of the release's coefficients is diagonal (to :data:`DIAGONAL_KL_TOL`).
    P0 : ndarray (J, J) or None
        Unit-amplitude prior covariance ``A K_ρ Aᵀ`` of the coefficients at a fixed length-scale (GP prior);
        None where it is the release's own eigenvalues (``own_kernel``; :meth:`covariance` builds it).
    kl : float or None
        :func:`diagonal_kl` of ``P0`` (0 for the release's own kernel, diagonal by construction).
    prior_var : ndarray (J,) or None
        Diagonal of ``P0``.
    own_kernel : bool
        The GP prior's kernel is the release's: ``A K Aᵀ = Λ`` (the release's eigenvalues) exactly,
        without forming ``K`` (Karhunen–Loève; the Cholesky jitter is not part of the prior).
    """

    model: str
    exact: bool = False
    diagonal: bool = False
    P0: np.ndarray | None = None
    kl: float | None = None
    prior_var: np.ndarray | None = None
    own_kernel: bool = False
    reason: str | None = None

    def covariance(self) -> np.ndarray | None:
        """``P0`` as a dense (J, J) matrix (the diagonal one for the release's own kernel)."""
        if self.P0 is None and self.prior_var is not None:
            return np.diag(self.prior_var)
        return self.P0

    def describe(self, prior, law) -> str:
        if self.model == "marginal" and self.diagonal and law.product:
            what = (f"{prior.law.name} prior x {law.name} noise, independent one-dimensional posteriors "
                    "drawn exactly per coefficient")
            return ("exact: " + what) if self.exact else ("NUTS on the hyperparameters with the coefficients "
                                                           "marginalised in closed form; then " + what)
        if self.model == "gibbs":
            return (f"Gibbs sampler exactly targeting the posterior: {prior.law.name} prior not diagonal in the "
                    f"release's basis split into a diagonal part and a Gaussian auxiliary variable; each "
                    f"coefficient drawn exactly given it under the {law.name} noise, the auxiliary variable "
                    "drawn exactly given the coefficients (one factorisation); MCMC diagnostics reported")
        if self.model == "marginal":
            return ("exact: Gaussian conjugate posterior" if self.exact else
                    "NUTS on the hyperparameters with the Gaussian marginal likelihood; exact Gaussian conditional "
                    "draws")
        return {"whitened": "NUTS on whitened coefficients with the release's exact likelihood (one factorisation "
                            "per hyperparameter value); exact conditional draws of the curve and mixing scales",
                "mixture": "NUTS on the noise law's latent mixing scales (Gaussian scale mixture) and "
                           "hyperparameters; exact Gaussian conditional draws of the curve",
                "dense": "NUTS on the latent mixing scales with a dense J x J Gaussian likelihood at every step "
                         "(the model before exact inference was added); exact Gaussian conditional draws",
                "direct": "NUTS on the prior's own variables with the release's exact likelihood"}[self.model]


def _plan(ctx, prior, target, sampling_sd, method) -> Plan:
    """Choose the model for ``method`` (see :func:`infer`), or raise if the model does not allow it."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    law = ctx["law"]
    if isinstance(prior, CustomPrior):
        if method not in ("auto", "nuts"):
            raise InputError(f"a custom prior is sampled with NUTS on its own variables; method={method!r} does "
                             "not apply", "use method='auto' or 'nuts'")
        return Plan("direct")
    fixed_sampling = target == "summary" or sampling_sd is not None
    P0, kl, diagonal, prior_var, own = None, None, False, None, False
    gibbs_ok = False
    if isinstance(prior, GPPrior):
        if prior.lengthscale is not None:
            prior_var = _own_kernel_variances(ctx, prior)
            own = prior_var is not None
            if own:
                kl, diagonal = 0.0, True
            else:
                P0 = prior.coefficient_covariance(ctx["A"], ctx["t"], prior.lengthscale)
                kl = diagonal_kl(P0)
                diagonal = kl <= DIAGONAL_KL_TOL
                prior_var = np.diag(P0).copy()
        fixed = (prior.lengthscale is not None and prior.amplitude is not None and prior.mean is not None
                 and fixed_sampling)
        marginal_ok = (law.product and diagonal) or _is_gaussian(law)
        gibbs_ok = fixed and law.product
        whitened_ok = law.product
        # with a free length-scale the whitened model refactorises P(ρ) at every step and NUTS needs deep trees
        # (DTI: slower than the latent-scale model), so "auto" keeps it for a fixed ρ
        whitened_auto = whitened_ok and prior.lengthscale is not None
        mixture_latent = not (_is_gaussian(law) and fixed)
        if not fixed:
            why = "the GP prior's hyperparameters are free (fix lengthscale, amplitude and mean)"
        elif not law.product:
            why = f"the {law.name} noise shares one mixing variable across coefficients"
        else:
            why = (f"the prior's coefficient covariance is not diagonal in the release's basis (KL {kl:.2g} > "
                   f"{DIAGONAL_KL_TOL:g}: the prior's kernel or length-scale differs from the release's) and the "
                   f"{law.name} noise is not Gaussian")
    else:  # ICLPPrior
        if ctx["pub"]["eigenvalues"] is None:
            raise InputError("the ICLP prior needs a release in an eigenbasis", "use a GP prior")
        diagonal = True
        fixed = prior.amplitude is not None and prior.smoothness is not None
        marginal_ok = law.product and target == "summary"
        whitened_ok = whitened_auto = False
        mixture_latent = True
        why = ("the ICLP prior's amplitude or smoothness is free (fix both)" if not fixed else
               f"the {law.name} noise shares one mixing variable across coefficients" if not law.product else
               "target='population' with an ICLP prior has no closed form")
    if method == "auto":
        model = ("marginal" if marginal_ok else "gibbs" if gibbs_ok else
                 "whitened" if whitened_auto else "mixture")
    elif method == "exact":
        if not (marginal_ok and fixed):
            raise InputError(f"no exact posterior for this model: {why}", "use method='auto' (NUTS where needed)")
        model = "marginal"
    elif method == "nuts":
        model = "mixture" if mixture_latent else ("whitened" if whitened_ok else None)
        if model is None:
            raise InputError("nothing to sample with NUTS: the posterior is Gaussian and every hyperparameter is "
                             "fixed", "use method='exact' or 'auto'")
    else:
        model = method
        ok = {"marginal": marginal_ok, "whitened": whitened_ok, "mixture": mixture_latent,
              "dense": mixture_latent and isinstance(prior, GPPrior), "gibbs": gibbs_ok}[method]
        if not ok:
            raise InputError(f"method={method!r} does not apply to a {prior.name} prior with {law.name} noise and "
                             f"target={target!r}", "use method='auto'")
    exact = model == "marginal" and fixed
    return Plan(model, exact=exact, diagonal=diagonal and model != "dense", P0=P0, kl=kl, prior_var=prior_var,
                own_kernel=own, reason=None if exact else why)


def _own_kernel_variances(ctx, prior) -> np.ndarray | None:
    """The release's eigenvalues ``λ`` (J,) when the GP prior's kernel is the release's own kernel, else None.

    Then ``A K Aᵀ = Φᵀ W K W Φ = Λ`` exactly (the release's basis is the eigenbasis of ``W^{½} K W^{½}``,
    ``specs/iclp.md`` §4.2), so the prior is diagonal by construction: no ``m × m`` kernel matrix, no
    tolerance that a finer grid crosses. The identity is checked, not assumed: the release's kernel is
    rebuilt from its public attributes, compared with the prior's at a few distances, and
    ``K W φ_j = λ_j φ_j`` is verified on eight eigenpairs to ``1e-8 λ_1`` (:func:`_kernel_times`: FFT products
    on a uniform grid, ``O(8 m log m)``, no ``m × m`` matrix).
    """
    from ..spaces import Matern
    from ..spaces.kernels import kernel_from_name

    attrs, lam, phi = ctx["attrs"], ctx["pub"]["eigenvalues"], ctx["pub"]["eigenfunctions"]
    if lam is None or phi is None or attrs.get("kernel") is None or attrs.get("kernel_rho") is None:
        return None
    try:
        nu = attrs.get("kernel_nu")
        release_kernel = kernel_from_name(str(attrs["kernel"]), float(attrs["kernel_rho"]),
                                          None if nu is None else float(nu))
    except (ValueError, TypeError):
        return None
    d = np.linspace(0.0, 1.0, 17)
    if not np.allclose(release_kernel(d), Matern(rho=float(prior.lengthscale), nu=prior.nu)(d), rtol=1e-12,
                       atol=1e-14):
        return None
    t, w = ctx["t"], ctx["pub"]["quadrature_weights"]
    J = lam.size
    probe = np.unique(np.linspace(0, J - 1, min(J, 8)).astype(int))
    resid = _kernel_times(release_kernel, t, w[:, None] * phi[:, probe]) - phi[:, probe] * lam[probe]
    if float(np.sqrt(np.max(np.sum(w[:, None] * resid**2, axis=0)))) > 1e-8 * float(lam[0]):
        return None
    return np.asarray(lam, dtype=float)


def _kernel_times(kernel, t, x) -> np.ndarray:
    """``G x`` with ``G = [k(t_a, t_b)]`` for x (m, p): the exact FFT (Toeplitz) product of
    :mod:`fdp_ppl.spaces.eigenbasis` on a uniform grid, else the Gram matrix in blocks of 512 rows."""
    from ..spaces.eigenbasis import _toeplitz_matmat, _uniform_step

    t = np.asarray(t, dtype=float)
    if _uniform_step(t) is not None:
        return _toeplitz_matmat(kernel, t, np.ones_like(t))(x)
    return np.vstack([kernel.gram(t[s:s + 512], t) @ x for s in range(0, t.size, 512)])


def build_model(release: xr.DataTree, prior="gp", *, target: str | None = None, draw: int = 0,
                sampling_sd=None, method: str = "auto") -> pm.Model:
    """The PyMC model behind :func:`infer` (same arguments).

    Five models, all exact (no approximation of the likelihood or the prior), and ``"gibbs"`` (no PyMC
    variables: :class:`~fdp_ppl.inference.gibbs.SplitGibbs` draws the coefficients in :func:`infer`);
    ``method`` picks one (``"auto"``: the cheapest that applies, see :func:`infer`):

    * ``"marginal"`` — the latent coefficients are integrated out in closed form and only the
      hyperparameters remain (none when they are fixed: the posterior is then drawn exactly).
      Where the prior is diagonal in the release's basis (the ICLP prior; a GP prior whose kernel
      is the release's, ``A K Aᵀ`` diagonal to :data:`DIAGONAL_KL_TOL`) and the noise is a product law,
      the likelihood is a product of one-dimensional marginals ``law.marginal_logp`` (Normal or
      Laplace prior convolved with the Laplace or Normal noise); for Gaussian noise it is the
      Gaussian ``N(S A m, S A Σ_f Aᵀ S + diag(noise + sampling))``.
    * ``"whitened"`` — GP prior, product law, non-diagonal prior: ``θ = m A1 + a L_ρ z`` with
      ``L_ρ`` the Cholesky factor of ``A K_ρ Aᵀ`` (a constant at fixed ρ), ``z ~ N(0, I)``, and the
      release's exact likelihood ``law.pymc(..., observed=released)``: one factorisation per
      length-scale value, no latent noise scales. ``"auto"`` uses it only at a fixed ρ: with a
      free ρ NUTS needed deep trees on DTI and was slower than ``"mixture"``.
    * ``"mixture"`` — the noise as its exact Normal scale mixture (Laplace:
      ``ξ_j | E_j ~ N(0, 2b_j² E_j)``, ``E_j ~ Exp(1)``) so that, given the latent scales and
      hyperparameters, the release is Gaussian; NUTS samples the scales (and, for the ICLP prior,
      its own mixing scales). The likelihood is diagonal where the prior is.
    * ``"dense"`` — ``"mixture"`` with the dense ``J × J`` Gaussian likelihood even where the prior
      is diagonal (the model used before; kept for benchmarks).
    * a :class:`CustomPrior` keeps the curve explicit with the exact Laplace / Normal /
      Normal–Laplace likelihood (``"direct"``).

    In every case but the last, the curve (and the latent scales the model does not sample) is
    then drawn exactly given each posterior draw (Rao–Blackwellisation).

    Raises
    ------
    InputError
        Unknown target or method, a method that does not apply to the prior, law or target.
    """
    ctx = _context(release, draw)
    if target is None:
        target = default_target(ctx["view"])
    if target not in TARGETS:
        raise InputError(f"target must be one of {TARGETS}, got {target!r}")
    prior = resolve_prior(prior)
    y, pub, attrs, t, A, b, law = ctx["y"], ctx["pub"], ctx["attrs"], ctx["t"], ctx["A"], ctx["scale"], ctx["law"]
    J = y.size
    if target == "population" and not law.product:
        raise InputError(f"target='population' needs a noise law with independent coefficients; the release has "
                         f"{law.name!r}", "use target='summary'")
    plan = _plan(ctx, prior, target, sampling_sd, method)
    coords = {dims.BASIS: np.arange(J), dims.T: t}
    with pm.Model(coords=coords) as model:
        if target == "population":
            shrink = _shrinkage(ctx["view"])
            n = float(attrs["n"])
            if sampling_sd is None:
                kappa = pm.HalfNormal("sampling_scale", sigma=2 * ctx["hint"]["spread"])
                sampling_var = (shrink * kappa * _sampling_base(pub, J)) ** 2 / n
            else:
                sampling_var = (shrink * np.broadcast_to(np.asarray(sampling_sd, dtype=float), (J,))) ** 2 / n
        else:
            shrink, sampling_var = np.ones(J), 0.0
        if plan.model == "direct":
            _direct(prior, ctx, target, shrink, sampling_var)
        elif plan.model == "gibbs":
            pass   # no PyMC variables: SplitGibbs draws the coefficients (see _infer)
        elif plan.model == "marginal" and plan.diagonal and law.product:
            xp = backend("pt")
            if isinstance(prior, GPPrior):
                _, amp, m = prior.hyperparameters(ctx["hint"])
                centre = m * (shrink * A.sum(axis=1))
                spread = pt.sqrt(shrink**2 * amp**2 * plan.prior_var + sampling_var)
            else:
                amp, power = prior.hyperparameters(ctx["hint"])
                centre, spread = np.zeros(J), shrink * prior.laplace_scale(pub["eigenvalues"], amp, power)
            pm.CustomDist(S.RELEASED, centre, spread, observed=y, dims=dims.BASIS,
                          logp=lambda value, c, g: law.marginal_logp(value, b, prior.law, c, g, xp=xp))
        elif plan.model == "whitened":
            rho, amp, m = prior.hyperparameters(ctx["hint"])
            if plan.prior_var is not None:
                L = np.linalg.cholesky(plan.covariance())
            else:
                K = prior.kernel_matrix(t, rho)
                L = pt.linalg.cholesky(pt.dot(pt.dot(A, K), A.T))
            z = pm.Normal("coefficients_whitened", 0.0, 1.0, dims=dims.BASIS)
            theta = pm.Deterministic(S.COEFFICIENTS, m * A.sum(axis=1) + amp * pt.dot(L, z), dims=dims.BASIS)
            _likelihood(law, shrink * theta, b, y, sampling_var, target)
        else:  # mixture / dense (and the Gaussian marginal, whose mixture has no latent scale)
            noise_var = b**2 * law.mixing(J, dims=dims.BASIS)  # the law's exact Gaussian scale mixture
            diag = noise_var + sampling_var
            if isinstance(prior, GPPrior):
                rho, amp, m = prior.hyperparameters(ctx["hint"])
                SA = shrink[:, None] * A
                if plan.diagonal:
                    pm.Normal(S.RELEASED, mu=m * SA.sum(axis=1),
                              sigma=pt.sqrt(amp**2 * shrink**2 * plan.prior_var + diag), observed=y,
                              dims=dims.BASIS)
                else:
                    K = prior.kernel_matrix(t, rho)
                    cov = amp**2 * pt.dot(pt.dot(SA, K), SA.T) + pt.diag(diag)
                    pm.MvNormal(S.RELEASED, mu=m * SA.sum(axis=1), cov=cov, observed=y, dims=dims.BASIS)
            else:  # ICLPPrior
                amp, power = prior.hyperparameters(ctx["hint"])
                mix = pm.Exponential("prior_mixing", 1.0, dims=dims.BASIS)
                var_theta = amp**2 * prior.ratio(pub["eigenvalues"], power) * mix
                pm.Normal(S.RELEASED, mu=0.0, sigma=pt.sqrt(shrink**2 * var_theta + diag), observed=y,
                          dims=dims.BASIS)
    model._fdp_meta = {"prior": prior, "target": target, "ctx": ctx, "shrink": shrink, "sampling_sd": sampling_sd,
                       "sampling_base": _sampling_base(pub, J),
                       "plan": plan}
    return model


def _say_method(method, plan, meta):
    """Warn (stderr) when the posterior is not drawn exactly although ``method`` did not ask for a sampler:
    ``"auto"`` found no exact form, so it runs the sampler of :attr:`Plan.model` (never a silent switch)."""
    if method != "auto" or plan.exact or isinstance(meta["prior"], CustomPrior):
        return
    warnings.warn(f"infer(method='auto'): no exact posterior because {plan.reason}; drawing it with "
                  f"{plan.describe(meta['prior'], meta['ctx']['law'])} (method={plan.model!r}; the result's attrs "
                  "record it as inference_model)", InferenceMethodWarning, stacklevel=4)


def _run_gibbs(model, draws, tune, chains, rng) -> np.ndarray:
    """Coefficient draws (chains, draws, J) of :class:`~fdp_ppl.inference.gibbs.SplitGibbs` for a GP prior with
    fixed hyperparameters whose coefficient covariance ``a² P0`` is not diagonal."""
    from .gibbs import SplitGibbs

    meta = model._fdp_meta
    prior, ctx, plan, shrink = meta["prior"], meta["ctx"], meta["plan"], meta["shrink"]
    J = ctx["y"].size
    if meta["target"] == "population":
        samp = (shrink * np.broadcast_to(np.asarray(meta["sampling_sd"], dtype=float), (J,))) ** 2 / float(
            ctx["attrs"]["n"])
    else:
        samp = np.zeros(J)
    mean = prior.mean * ctx["A"].sum(axis=1)
    cov = prior.amplitude**2 * plan.covariance()
    sampler = SplitGibbs(mean, cov, ctx["law"], ctx["y"], ctx["scale"], shrink=shrink, sampling_var=samp)
    return sampler.run(draws, tune, chains, rng)


def _sampling_base(pub, J):
    """``sd_j/κ`` of one curve's coefficients for the population target: ``√λ_j`` (or 1 outside an eigenbasis)."""
    return np.sqrt(pub["eigenvalues"]) if pub["eigenvalues"] is not None else np.ones(J)


def _likelihood(law, mu, b, y, sampling_var, target):
    """The release's exact likelihood given the coefficients' centre ``mu``: the law itself, or its
    convolution with the Gaussian sampling error of the clipped mean (population target)."""
    if target == "summary" or (np.ndim(sampling_var) == 0 and sampling_var == 0):
        law.pymc(S.RELEASED, mu, b, observed=y, dims=dims.BASIS)  # the mechanism's exact likelihood
    else:
        xp = backend("pt")
        pm.CustomDist(S.RELEASED, mu, pt.sqrt(sampling_var), b, observed=y, dims=dims.BASIS,
                      logp=lambda value, m, g, bb: law.convolved_logp(value - m, g, bb, xp=xp))


def _direct(prior, ctx, target, shrink, sampling_var):
    """Explicit-curve model for user priors: exact mechanism likelihood."""
    pub, A, b, law = ctx["pub"], ctx["A"], ctx["scale"], ctx["law"]
    curve, theta = prior.add(ctx["t"], pub.get("eigenfunctions"), pub["quadrature_weights"],
                             eigenvalues=pub.get("eigenvalues"), hint=ctx["hint"])
    if curve is None and theta is None:
        raise InputError("a prior must return a curve (t) or coefficients (basis)")
    if theta is None:
        theta = pm.Deterministic("coefficients", pt.dot(A, curve), dims=dims.BASIS)
    else:
        if pub["eigenfunctions"] is None:
            raise InputError("coefficient priors need a release in an eigenbasis", "use a GP prior")
        if curve is None:
            pm.Deterministic("curve", pt.dot(pub["eigenfunctions"], theta), dims=dims.T)
        theta = pm.Deterministic("coefficients", theta, dims=dims.BASIS)
    _likelihood(law, shrink * theta, b, ctx["y"], sampling_var, target)


def _factors_by_lengthscale(prior, t, A, rho):
    """For each distinct length-scale: ``L_K`` (K, K) Cholesky of the jittered kernel, ``L_P`` (J, J)
    Cholesky of ``P = A K Aᵀ``, and ``G = K Aᵀ P⁻¹`` (K, J); plus the index of each draw's ρ.
    One factorisation per distinct value, batched."""
    values, index = np.unique(np.asarray(rho, dtype=float), return_inverse=True)
    Kmat = prior.kernel_matrices(t, values)                        # (R, K, K)
    LK = np.linalg.cholesky(Kmat)
    KA = Kmat @ A.T                                                # (R, K, J)
    P = A @ KA                                                     # (R, J, J)
    P = (P + np.swapaxes(P, -1, -2)) / 2
    LP = np.linalg.cholesky(P)
    G = np.swapaxes(np.linalg.solve(P, np.swapaxes(KA, -1, -2)), -1, -2)   # K Aᵀ P⁻¹, (R, K, J)
    return {"LK": LK, "LP": LP, "G": G, "P": P}, index


def _curves_given_coefficients(prior, t, A, theta, rho, amp, m, rng):
    """Exact draws of the GP curve given its coefficients ``θ = A f`` (Matheron's rule):
    ``f = f₀ + K Aᵀ P⁻¹ (θ − A f₀)`` with ``f₀ ~ N(m, a² K)`` a prior draw (the amplitude cancels in
    ``K Aᵀ P⁻¹``). Shapes: theta (n, J), rho/amp/m (n,); returns (n, K)."""
    n, K = theta.shape[0], A.shape[1]
    out = np.empty((n, K))
    step = _chunk(K)
    if np.unique(np.asarray(rho, dtype=float)).size == 1:   # one length-scale: one factorisation for all draws
        f, _ = _factors_by_lengthscale(prior, t, A, rho[:1])
        LK, G = f["LK"][0], f["G"][0]
        for lo in range(0, n, max(step, 256)):
            sl = slice(lo, min(n, lo + max(step, 256)))
            f0 = m[sl, None] + amp[sl, None] * (rng.standard_normal((sl.stop - lo, K)) @ LK.T)
            out[sl] = f0 + (theta[sl] - f0 @ A.T) @ G.T
        return out
    for lo in range(0, n, step):
        sl = slice(lo, min(n, lo + step))
        f, idx = _factors_by_lengthscale(prior, t, A, rho[sl])
        z = rng.standard_normal((sl.stop - lo, K))
        f0 = m[sl, None] + amp[sl, None] * np.einsum("nkl,nl->nk", f["LK"][idx], z)
        out[sl] = f0 + np.einsum("nkj,nj->nk", f["G"][idx], theta[sl] - f0 @ A.T)
    return out


def _gaussian_coefficients(prior, t, A, y, shrink, D, rho, amp, m, rng):
    """Exact draws of ``θ`` given the release when it is Gaussian given the latent scales:
    ``y = S θ + ε``, ``θ ~ N(m A1, a² P_ρ)``, ``ε ~ N(0, diag D_i)`` (D (n, J): noise times its mixing
    multiplier, plus sampling error). Matheron's rule, ``θ = θ₀ + a² P S C⁻¹ (y − S θ₀ − ε)`` with
    ``C = a² S P S + diag D``: one batched solve per draw, one factorisation of ``P`` per distinct ρ."""
    n, J = D.shape
    out = np.empty((n, J))
    A1 = A.sum(axis=1)
    step = _chunk(max(J, A.shape[1]))
    for lo in range(0, n, step):
        sl = slice(lo, min(n, lo + step))
        f, idx = _factors_by_lengthscale(prior, t, A, rho[sl])
        a2 = amp[sl, None, None] ** 2
        SP = shrink[:, None] * f["P"][idx]                                       # S P, (n, J, J)
        C = a2 * SP * shrink[None, None, :] + D[sl, :, None] * np.eye(J)         # a² S P S + diag D
        th0 = m[sl, None] * A1 + amp[sl, None] * np.einsum("njl,nl->nj", f["LP"][idx], rng.standard_normal((sl.stop - lo, J)))
        eps = np.sqrt(D[sl]) * rng.standard_normal((sl.stop - lo, J))
        r = np.linalg.solve(C, (y - shrink * th0 - eps)[..., None])[..., 0]
        out[sl] = th0 + np.einsum("nij,nj->ni", a2 * np.swapaxes(SP, -1, -2), r)   # a² P S r
    return out


def _conditional_draws(model, post: xr.Dataset, rng: np.random.Generator) -> dict:
    """Exact draws of the curve, the coefficients and the latent mixing scales the model did not
    sample, given each posterior draw of the sampled variables (GP and ICLP priors).

    Returns
    -------
    dict of name -> xr.DataArray with dims (chain, draw, ...)
    """
    meta = model._fdp_meta
    prior, ctx, shrink, plan = meta["prior"], meta["ctx"], meta["shrink"], meta["plan"]
    y, A, b, pub, t, law = ctx["y"], ctx["A"], ctx["scale"], ctx["pub"], ctx["t"], ctx["law"]
    n_chain, n_draw = post.sizes[dims.CHAIN], post.sizes[dims.DRAW]
    J, K = A.shape
    ns = n_chain * n_draw

    def get(name, default):
        if name in post:
            return post[name].values.reshape(ns, *post[name].shape[2:])
        return np.broadcast_to(np.asarray(default, dtype=float), (ns,))

    flat = {name: post[name].values.reshape(ns, *post[name].shape[2:]) for name in post.data_vars}
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        if meta["sampling_sd"] is None:
            samp = (shrink * get("sampling_scale", 0.0)[:, None] * _sampling_base(pub, J)) ** 2 / n
        else:
            samp = np.broadcast_to((shrink * np.asarray(meta["sampling_sd"], dtype=float)) ** 2 / n, (ns, J))
    else:
        samp = np.zeros((ns, J))
    one_d = plan.model == "marginal" and plan.diagonal and law.product
    if isinstance(prior, GPPrior):
        rho = get("lengthscale", prior.lengthscale)
        amp = get("amplitude", prior.amplitude)
        m = get("mean_level", prior.mean if prior.mean is not None else 0.0)
        A1 = A.sum(axis=1)
        if one_d:   # u = Sθ + e ~ N(S m A1, S² a² P_jj + g²) per coefficient; y = u + ξ
            prior_sd = amp[:, None] * np.sqrt(plan.prior_var)
            u_sd = np.sqrt(shrink**2 * prior_sd**2 + samp)
            u = law.centre_posterior_draws(y, b, Normal(), shrink * m[:, None] * A1, u_sd, rng)
            if meta["target"] == "population":   # θ | u: Normal prior, Gaussian sampling error
                u = Normal().centre_posterior_draws(u, np.sqrt(samp), Normal(), shrink * m[:, None] * A1,
                                                    shrink * prior_sd, rng)
            coefs = u / shrink
        elif plan.model in ("whitened", "gibbs"):
            coefs = flat[S.COEFFICIENTS]
        else:
            D = b**2 * law.mixing_draws(flat, ns, J) + samp
            coefs = _gaussian_coefficients(prior, t, A, y, shrink, D, rho, amp, m, rng)
        if pub["eigenfunctions"] is not None and J == K:   # A = Φᵀ W is square and A Φ = I: f = Φ θ exactly
            curves = coefs @ pub["eigenfunctions"].T
        else:
            curves = _curves_given_coefficients(prior, t, A, coefs, rho, amp, m, rng)
        extra = {}
    else:
        amp = get("amplitude", prior.amplitude)
        power = 1.0 + get("smoothness_excess", 0.0) if prior.smoothness is None else get("x", prior.smoothness)
        c = prior.laplace_scale(pub["eigenvalues"], amp[:, None], power[:, None])          # (ns, J)
        if one_d:
            coefs = law.centre_posterior_draws(y, b, Laplace(), 0.0, shrink * c, rng) / shrink
        else:
            D = b**2 * law.mixing_draws(flat, ns, J) + samp
            var_theta = 2 * c**2 * get("prior_mixing", np.ones(J))
            prec = 1 / var_theta + shrink**2 / D
            mean = (shrink * y / D) / prec
            coefs = mean + rng.standard_normal((ns, J)) / np.sqrt(prec)
        curves = coefs @ pub["eigenfunctions"].T
        extra = {} if "prior_mixing" in post else {"prior_mixing": Laplace().mixing_conditional_draws(coefs, c, rng)}
    if law.product and MIXING_VARIABLE not in post:
        resid = y - shrink * coefs
        if meta["target"] == "population":   # the noise given the residual r = e + ξ: Normal "prior" N(r, g²)
            resid = law.centre_posterior_draws(0.0, b, Normal(), resid, np.sqrt(samp), rng) if not _is_gaussian(law) \
                else resid
        e = law.mixing_conditional_draws(resid, b, rng)
        if e is not None:
            extra[MIXING_VARIABLE] = e
    shape = (n_chain, n_draw)
    out = {S.CURVE: xr.DataArray(curves.reshape(*shape, K), dims=(dims.CHAIN, dims.DRAW, dims.T)),
           S.COEFFICIENTS: xr.DataArray(coefs.reshape(*shape, J), dims=(dims.CHAIN, dims.DRAW, dims.BASIS))}
    for name, v in extra.items():
        out[name] = xr.DataArray(v.reshape(*shape, J), dims=(dims.CHAIN, dims.DRAW, dims.BASIS))
    return out


def _pointwise_loglik(model, post: xr.Dataset) -> xr.DataArray:
    """log p(y_j | coefficients) per released coefficient under the mechanism
    (and the sampling error for the population target)."""
    meta = model._fdp_meta
    ctx, shrink = meta["ctx"], meta["shrink"]
    y, b, law = ctx["y"], ctx["scale"], ctx["law"]
    mu = shrink * post["coefficients"].values
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        if meta["sampling_sd"] is None:
            eig = ctx["pub"]["eigenvalues"]
            base = np.sqrt(eig) if eig is not None else np.ones(y.size)
            g = shrink * post["sampling_scale"].values[..., None] * base / np.sqrt(n)
        else:
            g = shrink * np.asarray(meta["sampling_sd"], dtype=float) / np.sqrt(n)
        ll = law.convolved_logp(y - mu, g, b)
    else:
        ll = law.logp(y, mu, b, pointwise=True)
    if law.product:
        return xr.DataArray(ll, dims=(dims.CHAIN, dims.DRAW, dims.BASIS))
    # a joint law (elliptical): one log-likelihood term for the whole released vector
    return xr.DataArray(ll, dims=(dims.CHAIN, dims.DRAW, "released_vector"))


def infer(release: xr.DataTree, prior="gp", *, target: str | None = None, draw: int = 0, sampling_sd=None,
          method: str = "auto", draws: int = 1000, tune: int = 1000, chains: int = 2, cores: int = 1,
          target_accept: float = 0.9, random_seed=None, progressbar: bool = True,
          nuts_sampler: str = "pymc") -> xr.DataTree:
    """Posterior of the underlying curve given one private release: exact where the model allows, NUTS otherwise.

    Parameters
    ----------
    release : xr.DataTree
        A release from :func:`fdp_ppl.release` (or read back with
        ``xr.open_datatree``). Only public content is read. Every family the command line writes is
        served: a kernel density estimate (:func:`fdp_ppl.releasing.schema.is_kde_release`) goes to
        :func:`fdp_ppl.inference.density.infer_density` (``prior``, ``draws``, ``chains``, ``draw``,
        ``random_seed``; target ``"summary"`` or None is the estimate, ``"population"`` the smoothed population
        density), a kernel-machine release (``fdp-ppl svm``) to :func:`fdp_ppl.inference.machine.infer_machine`
        (exact draws), an ε-DP FPCA release (``fdp-ppl fpca``) to
        :func:`fdp_ppl.inference.components.infer_components` (``prior``, ``draws``, ``tune``, ``chains``,
        ``target_accept``, ``random_seed``, ``progressbar`` passed on; ``"gp"`` means its default prior); their
        results are described there.
    prior : "gp", "iclp", GPPrior, ICLPPrior or callable
        Prior over the curve; see :mod:`fdp_ppl.inference.priors` (for a KDE release: a
        :class:`~fdp_ppl.inference.density.DensityPrior`, ``"envelope"`` or ``"flat"``; ``"gp"`` is the default
        envelope prior).
    target : {"population", "summary"} or None
        ``"population"``: the population mean μ₀, adding the sampling error of
        the clipped sample mean as ``X̄_j ~ N(μ₀_j, sd_j²/n)`` (CLT; clipping
        ignored) and shrinkage ``s_j`` of the summary; for Laplace noise the
        Normal–Laplace convolution is exact (:func:`normal_laplace_logp`).
        ``"summary"``: the released summary itself (e.g. the ICLP-QR smoothed
        mean, shrunk toward its centre); likelihood ``y_j ~ Law(θ_j, scale_j)`` exactly.
        None (default): ``"population"`` where the release allows it, else ``"summary"``
        (:func:`default_target`; the choice is the result's ``attrs["target"]``). With the
        population target and no ``sampling_sd`` the sampling scale κ is learned (NUTS on the
        hyperparameters); pass a public ``sampling_sd`` (and fixed prior hyperparameters) for exact draws.
    draw : int
        Which released draw to condition on (one draw = one publication).
    sampling_sd : float or array (basis,), optional
        Public/assumed sd of one curve's coefficients for ``target="population"``;
        None puts a half-normal prior on κ with ``sd_j = κ√λ_j``.
    method : {"auto", "exact", "nuts", "marginal", "whitened", "mixture", "dense", "gibbs"}
        ``"auto"`` (default) draws the posterior **exactly, without MCMC**, when every
        hyperparameter is fixed and either the noise is Gaussian (conjugate) or the prior is
        diagonal in the release's basis and the noise law is a product law (ICLP, FRL, Bernstein
        Laplace noise; the ICLP prior, or a GP prior whose kernel is the release's so that
        ``A K Aᵀ`` is diagonal to :data:`~fdp_ppl.settings.DIAGONAL_KL_TOL`): the posterior then factorises
        into one-dimensional posteriors, each drawn exactly (:meth:`fdp_ppl.noise.laws.NoiseLaw.centre_posterior_draws`:
        two truncated normals for a Normal prior and Laplace noise, three exponential pieces for
        Laplace–Laplace). With free hyperparameters it runs NUTS on the cheapest exact model
        (:func:`build_model`): the hyperparameters alone with the coefficients integrated out in
        closed form where the prior is diagonal; whitened coefficients with the release's own
        likelihood (one factorisation, no latent noise scales) where it is not but the length-scale
        is fixed; the latent-scale mixture model otherwise. With every hyperparameter fixed and a
        prior that is not diagonal (a GP prior with another kernel than the release's), the
        exactly targeted Gibbs sampler ``"gibbs"`` (:class:`~fdp_ppl.inference.gibbs.SplitGibbs`;
        ``tune`` iterations discarded). Whenever ``"auto"`` does not draw exactly it says so
        (:class:`InferenceMethodWarning`).
        ``"exact"`` insists on exact draws (raises if the model does not allow them); ``"nuts"``
        forces NUTS on the latent-scale mixture model, an independent check of the exact and
        marginal computations; the other names pick a model of :func:`build_model` directly
        (``"dense"`` is the model before exact inference was added, for benchmarks).
    draws, chains : int
        Posterior draws per chain and chains (exact draws are independent; they are laid out as
        chains × draws like MCMC output).
    tune, cores, target_accept, progressbar
        Passed to ``pm.sample`` (unused by exact draws).
    random_seed : int, sequence, Generator or None
        Seeds NUTS and the exact conditional draws.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}
        Alternative NUTS implementations when installed.

    Returns
    -------
    xr.DataTree
        ``posterior`` (``curve`` (chain, draw, t), ``coefficients`` (chain,
        draw, basis), hyperparameters, latent mixing scales), ``sample_stats`` (NUTS only),
        ``observed_data`` (``released``: the release), ``log_likelihood`` (``released`` per
        basis coefficient; one term per draw for elliptical laws, whose
        coefficients are not independent). ``attrs`` mark the tree as an
        inference result (:data:`fdp_ppl.releasing.schema.KIND_ATTR`) and record the
        prior, the target, the release's public attributes, the diagnostics,
        ``inference`` (``"exact"``, ``"Gibbs"`` or ``"NUTS"``), ``inference_model`` (the model of
        :func:`build_model`), ``inference_sampler``, ``inference_description``,
        ``inference_method_requested`` and, when not exact, ``inference_not_exact_because``.

    Warns
    -----
    InferenceMethodWarning
        ``method="auto"`` found no exact posterior: which sampler runs instead, and why.
    InferenceWarning
        NUTS and Gibbs: R-hat > :data:`~fdp_ppl.settings.MAX_RHAT` (1.01), bulk or tail ESS below
        :data:`~fdp_ppl.settings.MIN_ESS_PER_CHAIN` (100) per chain, or divergences.

    Raises
    ------
    ValueError
        Not a release, unknown target, prior or method, or an unsupported combination
        (``InputError``, a ``ValueError``; e.g. ``method="exact"`` with free hyperparameters).
    """
    if isinstance(release, xr.DataTree) and release.attrs.get(S.KIND_ATTR) == S.ERM_RELEASE:  # kernel machines
        from .machine import infer_machine_dispatch

        return infer_machine_dispatch(release, prior, target="summary" if target is None else target, method=method,
                                      draw=draw, draws=draws, chains=chains, random_seed=random_seed)
    if S.is_kde_release(release):  # a density: exact draws with its own prior (fdp_ppl.inference.density)
        from .density import infer_density

        if (target is not None and target not in TARGETS) or method not in ("auto", "exact") or sampling_sd is not None:
            raise InputError("a kernel density estimate release takes method='auto' and no sampling_sd",
                             "drop them (its posterior is always drawn exactly)")
        return infer_density(release, prior, target="population" if target == "population" else "kde", draws=draws,
                             chains=chains, draw=draw, random_seed=random_seed)
    if S.is_fpca_release(release):  # principal components (exponential mechanism): inference.components
        from .components import infer_components

        return infer_components(release, prior, draws=draws, tune=tune, chains=chains, target_accept=target_accept,
                                random_seed=random_seed, progressbar=progressbar)
    with blas_threads(rescan=True, children=True):  # PyMC chains in processes (cores > 1) too
        return _infer(release, prior, target=target, draw=draw, sampling_sd=sampling_sd, method=method,
                      draws=draws, tune=tune, chains=chains, cores=cores, target_accept=target_accept,
                      random_seed=random_seed, progressbar=progressbar, nuts_sampler=nuts_sampler)


def _infer(release, prior, *, target, draw, sampling_sd, method, draws, tune, chains, cores, target_accept,
           random_seed, progressbar, nuts_sampler):
    model = build_model(release, prior, target=target, draw=draw, sampling_sd=sampling_sd, method=method)
    meta = model._fdp_meta
    target_given, target = target is not None, meta["target"]
    plan = meta["plan"]
    rng = np.random.default_rng(random_seed)
    seed = int(rng.integers(2**31))
    _say_method(method, plan, meta)
    if plan.model == "gibbs":
        coefs = _run_gibbs(model, draws, tune, chains, rng)
        post = xr.Dataset({S.COEFFICIENTS: ((dims.CHAIN, dims.DRAW, dims.BASIS), coefs)},
                          coords={dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)})
        tree = xr.DataTree.from_dict({"posterior": post})
        sampler = "gibbs"
    elif not model.free_RVs:  # fixed hyperparameters: nothing to sample, every draw is exact
        post = xr.Dataset(coords={dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)})
        tree = xr.DataTree.from_dict({"posterior": post})
        sampler = "none"
    else:
        kwargs = {}
        mode = compile_mode()
        if nuts_sampler == "pymc" and mode is not None:
            kwargs["compile_kwargs"] = {"mode": mode}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*BLAS.*")
            tree = pm.sample(model=model, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                             progressbar=progressbar, target_accept=target_accept, nuts_sampler=nuts_sampler,
                             compute_convergence_checks=False, **kwargs)
        sampler = nuts_sampler
    exact = sampler == "none"
    post = tree["posterior"].to_dataset()
    if not isinstance(meta["prior"], CustomPrior):
        post = post.drop_vars([v for v in ("coefficients_whitened",) if v in post]).assign(
            _conditional_draws(model, post, rng))
    view = meta["ctx"]["view"]
    # the original grid is the coordinate (ArviZ labels with it); the public offset goes back onto the curve
    post = post.assign_coords({dims.T: view.t_original, dims.BASIS: np.arange(coefs_size(model))})
    post[dims.T].attrs.update(view.t_attrs)
    if view.public_offset is not None:
        post[S.CURVE] = post[S.CURVE] + xr.DataArray(view.public_offset, dims=(dims.T,))
    post[S.CURVE].attrs.update({k: v for k, v in view.curve_attrs.items() if k in ("long_name", "units")})
    post[S.CURVE].attrs["description"] = ("posterior of the true " + ("summary" if target == "summary" else
                                          "population mean") + (" (public offset added back)"
                                                                if view.public_offset is not None else ""))
    constant = xr.Dataset({S.T_UNIT: ((dims.T,), view.t), S.QUADRATURE_WEIGHTS: ((dims.T,), view.weights)},
                          coords={dims.T: view.t_original})
    if view.public_offset is not None:
        constant[S.PUBLIC_OFFSET] = ((dims.T,), view.public_offset)
    loglik = _pointwise_loglik(model, post)
    if dims.BASIS in loglik.dims:
        loglik = loglik.assign_coords({dims.BASIS: post[dims.BASIS]})
    observed = xr.Dataset({S.RELEASED: ((dims.BASIS,), meta["ctx"]["y"])},
                          coords={dims.BASIS: post[dims.BASIS]})
    from .predictive import replicated_releases

    groups = {S.POSTERIOR: post, S.POSTERIOR_PREDICTIVE: replicated_releases(meta, post, rng),
              S.LOG_LIKELIHOOD: xr.Dataset({S.RELEASED: loglik}), S.OBSERVED_DATA: observed, S.CONSTANT_DATA: constant}
    if S.SAMPLE_STATS in tree.children:
        groups[S.SAMPLE_STATS] = tree[S.SAMPLE_STATS].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    if exact:  # independent exact draws: R-hat 1 and ESS = number of draws by construction (not estimated)
        n_total = float(chains * draws)
        diag = {"max_rhat": 1.0, "min_ess_bulk": n_total, "min_ess_tail": n_total, "divergences": 0}
    else:
        diag = diagnostics(tree)
    attrs = {f"release_{k}": v for k, v in meta["ctx"]["attrs"].items()}
    attrs.update(meta["prior"].describe())
    attrs.update({"target": target, "target_choice": "given" if target_given else "default (fdp_ppl.inference.infer."
                  "default_target)", "release_draw": draw,
                  "inference": "exact" if exact else ("Gibbs" if sampler == "gibbs" else "NUTS"),
                  "inference_model": plan.model, "inference_sampler": sampler,
                  "inference_description": plan.describe(meta["prior"], meta["ctx"]["law"]),
                  "privacy_cost": "none (post-processing of a release)",
                  "public_offset_added": int(view.public_offset is not None)})
    if plan.kl is not None:
        attrs["inference_prior_diagonal_kl"] = plan.kl
    attrs["inference_method_requested"] = method
    if plan.own_kernel:
        attrs["inference_prior_diagonal"] = "by construction (the release's own kernel: A K A^T = eigenvalues)"
    if plan.reason is not None:
        attrs["inference_not_exact_because"] = plan.reason
    attrs.update({f"diagnostic_{k}": v for k, v in diag.items()})
    tree.attrs.update({k: (str(v) if v is None else v) for k, v in attrs.items()})
    tree.attrs.update(S.inference_attrs())
    problems = []
    if not exact and diag["max_rhat"] > MAX_RHAT:
        problems.append(f"R-hat up to {diag['max_rhat']:.3f}")
    if not exact and min(diag["min_ess_bulk"], diag["min_ess_tail"]) < MIN_ESS_PER_CHAIN * chains:
        problems.append(f"ESS down to {min(diag['min_ess_bulk'], diag['min_ess_tail']):.0f}")
    if diag["divergences"]:
        problems.append(f"{diag['divergences']} divergences")
    if problems:
        warnings.warn("MCMC diagnostics failed (" + ", ".join(problems) + "): run longer (draws/tune), raise "
                      "target_accept, fix hyperparameters, or use the ICLP prior's scale-mixture form",
                      InferenceWarning, stacklevel=3)
    return tree


__all__ = ["infer", "build_model", "default_target", "diagnostics", "diagonal_kl", "normal_laplace_logp",
           "InferenceWarning", "InferenceMethodWarning", "Plan",
           "TARGETS", "METHODS"]
