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
* **exact, with the population target's sampling scale κ by quadrature** when every prior hyperparameter is
  fixed and κ (no public ``sampling_sd``) is the one free parameter, where its marginal likelihood has a closed
  form (the priors and laws above, the ICLP prior with Laplace noise too): κ from its one-dimensional marginal
  posterior by quadrature on log κ (:mod:`fdp_ppl.inference.quadrature`, the rule's error measured and recorded),
  then everything else exactly given each κ.
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
  mixture model (one factorisation per step), sampled under Laplace noise by collapsed Gibbs
  (:mod:`fdp_ppl.inference.collapsed`: no divergences), else by NUTS.
* ``method="nuts"`` forces the latent-scale mixture model (today's check).

Nothing switches silently: the result's attrs record ``inference_method_requested``, ``inference_model``,
``inference_reason`` (why this model), ``inference_free_parameters`` and, when not exact,
``inference_not_exact_because``. NUTS because hyperparameters are left free is what leaving them out asks for: it
is recorded, not warned about. When every prior hyperparameter is fixed and ``method="auto"`` still cannot draw
exactly it warns (:class:`InferenceMethodWarning`, stderr) with the reason and the sampler used.

The model is chosen by :mod:`fdp_ppl.inference.plan`; the curve, the coefficients and the latent
scales the model does not sample are drawn exactly given each posterior draw
(:mod:`fdp_ppl.inference.conditional`). BLAS runs single-threaded during
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
from .._options import Default, given_options, option_values, refuse_options
from ..errors import InputError
from ..settings import MAX_RHAT, MIN_ESS_PER_CHAIN, blas_threads, compile_mode
from .conditional import _conditional_draws, _sampling_base
from .diagnostics import InferenceWarning, diagnostics
from .plan import _is_gaussian, _plan
from .priors import CustomPrior, GPPrior, ICLPPrior, resolve_prior

TARGETS = ("summary", "population")

#: NUTS's target acceptance rate when none is given and the model samples the noise law's latent mixing scales
#: (``"mixture"``, ``"dense"``: a GP prior with a free length-scale, Laplace noise). Measured
#: (``benchmarks/bench_inference_defaults.py --quick``, the default GP prior, 20 replicates): 27 divergences in 14
#: replicates at 0.9, 4 in 3 at 0.95 (median 68 s → 100 s, coverage 0.865 → 0.877). Models on the hyperparameters
#: alone (``"marginal"``) keep 0.9, the signature's default: 0 divergences there.
MIXTURE_TARGET_ACCEPT = 0.95

#: the options of :func:`infer`, in signature order
OPTIONS = ("prior", "target", "draw", "sampling_sd", "method", "draws", "tune", "chains", "cores", "target_accept",
           "random_seed", "progressbar", "nuts_sampler", "posterior_predictive", "log_likelihood")
#: the options of the mean curve's own model: every one (``posterior_predictive=False`` and ``log_likelihood=False``
#: skip the replicated releases and the log-likelihood with what is built on them)
MEAN_OPTIONS = OPTIONS


@dataclass(frozen=True)
class InferenceFamily:
    """What :func:`infer` takes from one family of releases.

    Attributes
    ----------
    family : str
        Key in :data:`INFERENCE_FAMILIES`: the release family's one name (``"mean"``, ``"kde"``, ``"machine"``,
        ``"fpca"``; :data:`fdp_ppl.releasing.families.FAMILIES`).
    label : str
        The family in messages (``"inference from a <label> release takes no ..."``).
    options : tuple of str
        The options of :func:`infer` (:data:`OPTIONS`) that the family uses; any other option given,
        its default value included, is refused before any work.
    hook : str
        Qualified name of the family's inference function, called as ``hook(release, prior, **options)``
        (empty: :func:`infer`'s own model, the mean curve's).
    """

    family: str
    label: str
    options: tuple[str, ...]
    hook: str = ""

    def check(self, given) -> None:
        """Refuse given options the family does not take (:class:`~fdp_ppl.errors.InputError` naming them
        and the options it takes)."""
        refuse_options(f"inference from a {self.label} release", given, self.options)


def _inference_families() -> dict[str, InferenceFamily]:
    from ..releasing.families import FAMILIES

    return {e.family: InferenceFamily(e.family, e.label, e.infer_options or MEAN_OPTIONS, e.inference) for e in FAMILIES}


#: the options each release family's inference takes and its hook (the one table :func:`infer` checks before any
#: work), read from the family registry (:data:`fdp_ppl.releasing.families.FAMILIES`: ``label``, ``inference``,
#: ``infer_options``)
INFERENCE_FAMILIES: dict[str, InferenceFamily] = _inference_families()


def inference_family(release) -> InferenceFamily:
    """The :data:`INFERENCE_FAMILIES` entry of a release, read from its public attributes only (anything that is
    not a density, kernel-machine or principal-components release is read as a mean-curve release, whose
    reader refuses what is not one)."""
    family = S.release_family(release) or "mean"
    if family not in INFERENCE_FAMILIES:  # a family registered after this import (register_family)
        INFERENCE_FAMILIES.update(_inference_families())
    return INFERENCE_FAMILIES[family]


class InferenceMethodWarning(UserWarning):
    """The posterior is not drawn exactly although every prior hyperparameter is fixed (``method="auto"`` found no
    exact form: e.g. a GP prior with another kernel than the release's under Laplace noise): the warning says
    which sampler runs and why. Not raised for NUTS because hyperparameters are free (recorded in the result's
    ``inference_reason``)."""


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


def _released(view, draw) -> np.ndarray:
    """``view.released(draw)`` (J,) without xarray's ``stack`` (about a tenth of a small inference's time): the same
    values, chains then draws flattened; out of range, ``view.released`` raises its error."""
    if not 0 <= int(draw) < view.n_draws:
        return view.released(draw)
    c = view.coefficients.transpose(dims.CHAIN, dims.DRAW, dims.BASIS).values
    return np.array(c.reshape(-1, c.shape[-1])[int(draw)], dtype=float)


def _context(release, draw):
    view = S.read_release(release)
    y = _released(view, draw)
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


def build_model(release: xr.DataTree, prior="gp", *, target: str | None = None, draw: int = 0,
                sampling_sd=None, method: str = "auto") -> pm.Model:
    """The PyMC model behind :func:`infer` (same arguments).

    Five models, all exact (no approximation of the likelihood or the prior), and ``"gibbs"`` (no PyMC
    variables: :class:`~fdp_ppl.inference.gibbs.SplitGibbs` draws the coefficients in :func:`infer`);
    ``method`` picks one (``"auto"``: the cheapest that applies, see :func:`infer`):

    * ``"marginal"`` — the latent coefficients are integrated out in closed form and only the
      hyperparameters remain (none when they are fixed: the posterior is then drawn exactly).
      Where the prior is diagonal in the release's basis (the ICLP prior; a GP prior whose kernel
      is the release's, ``A K Aᵀ`` diagonal to :data:`~fdp_ppl.settings.DIAGONAL_KL_TOL`) and the noise is a
      product law, the likelihood is a product of one-dimensional marginals ``law.marginal_logp`` (Normal or
      Laplace prior convolved with the Laplace or Normal noise; the ICLP prior with the population target's
      Gaussian sampling error and Laplace noise: Laplace ⊛ Normal ⊛ Laplace,
      :func:`~fdp_ppl.inference.quadrature.laplace_normal_laplace_logp`); for Gaussian noise it is the
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
            if sampling_sd is None and plan.model == "quadrature":
                sampling_var = None   # κ is drawn by quadrature (fdp_ppl.inference.quadrature), not by PyMC
            elif sampling_sd is None:
                kappa = pm.HalfNormal("sampling_scale", sigma=2 * ctx["hint"]["spread"])
                sampling_var = (shrink * kappa * _sampling_base(pub, J)) ** 2 / n
            else:
                sampling_var = (shrink * np.broadcast_to(np.asarray(sampling_sd, dtype=float), (J,))) ** 2 / n
        else:
            shrink, sampling_var = np.ones(J), 0.0
        if plan.model == "direct":
            _direct(prior, ctx, target, shrink, sampling_var)
        elif plan.model in ("gibbs", "quadrature"):
            pass   # no PyMC variables: SplitGibbs draws the coefficients, or ScaleQuadrature κ (see _infer)
        elif plan.model == "marginal" and plan.diagonal and law.product:
            xp = backend("pt")
            if isinstance(prior, GPPrior):
                _, amp, m = prior.hyperparameters(ctx["hint"])
                centre = m * (shrink * A.sum(axis=1))
                var = shrink**2 * amp**2 * plan.prior_var + sampling_var   # numbers when all are fixed:
                spread = np.sqrt(var) if isinstance(var, np.ndarray) else pt.sqrt(var)   # a constant, nothing to fold
            elif target == "population" and not _is_gaussian(law):
                if prior.amplitude is None or prior.smoothness is None or sampling_sd is None:
                    # free hyperparameters: y_j = s_j θ_j + s_j e_j + ξ_j, Laplace ⊛ Normal ⊛ Laplace in closed form
                    from .quadrature import laplace_normal_laplace_logp

                    amp, power = prior.hyperparameters(ctx["hint"])
                    c = shrink * prior.laplace_scale(pub["eigenvalues"], amp, power)
                    pm.CustomDist(S.RELEASED, c, pt.sqrt(sampling_var), b, observed=y, dims=dims.BASIS,
                                  logp=lambda value, cc, g, bb: laplace_normal_laplace_logp(value, cc, g, bb, xp=xp))
                # else fixed prior and sampling sd (plan): exact draws by rejection, nothing for PyMC to sample
            else:
                amp, power = prior.hyperparameters(ctx["hint"])
                centre, spread = np.zeros(J), shrink * prior.laplace_scale(pub["eigenvalues"], amp, power)
            noise_sd = b
            if isinstance(prior, ICLPPrior) and target == "population":   # Gaussian noise (plan): sampling adds
                noise_sd = pt.sqrt(b**2 + sampling_var)
            if isinstance(prior, GPPrior) or target == "summary" or _is_gaussian(law):
                pm.CustomDist(S.RELEASED, centre, spread, noise_sd, observed=y, dims=dims.BASIS,
                              logp=lambda value, c, g, s: law.marginal_logp(value, s, prior.law, c, g, xp=xp))
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
    """Warn (stderr) when the posterior is not drawn exactly although nothing asked for a sampler and no prior
    hyperparameter is free (:attr:`~fdp_ppl.inference.plan.Plan.attention`): ``"auto"`` found no exact form for
    a fully specified prior, so it runs the sampler of :attr:`~fdp_ppl.inference.plan.Plan.model` — something the
    user may want to change (the release's own kernel, a public ``sampling_sd``). NUTS because hyperparameters are
    free is what was asked for: it is recorded (``inference_reason``) and shown, not warned about."""
    if not plan.attention or isinstance(meta["prior"], CustomPrior):
        return
    warnings.warn(f"infer(method='auto'): no exact posterior because {plan.reason}; drawing it with "
                  f"{plan.describe(meta['prior'], meta['ctx']['law'])} (method={plan.model!r}; the result's attrs "
                  "record it as inference_model)", InferenceMethodWarning, stacklevel=4)


def _scale_quadrature(model):
    """:class:`~fdp_ppl.inference.quadrature.ScaleQuadrature` of the population target's sampling scale κ
    (``HalfNormal(2 · spread)`` prior, as in the NUTS model) with every prior hyperparameter fixed."""
    from .quadrature import (NodeTerms, ScaleQuadrature, diagonal_log_marginal, gaussian_log_marginal,
                             half_normal_log_density)

    meta = model._fdp_meta
    prior, ctx, plan, shrink = meta["prior"], meta["ctx"], meta["plan"], meta["shrink"]
    y, A, b, law = ctx["y"], ctx["A"], np.asarray(ctx["scale"], dtype=float), ctx["law"]
    J = y.size
    base = shrink * meta["sampling_base"] / np.sqrt(float(ctx["attrs"]["n"]))   # sd of s_j e_j per unit κ
    sigma = 2 * ctx["hint"]["spread"]
    b = np.broadcast_to(b, (J,))
    loglik = None
    if isinstance(prior, GPPrior):
        centre = shrink * prior.mean * A.sum(axis=1)
        if plan.diagonal and law.product:
            terms = diagonal_log_marginal(law, y, b, prior.law, centre, shrink * prior.amplitude
                                          * np.sqrt(plan.prior_var), base, pointwise=True)
        else:   # Gaussian noise: the dense Gaussian marginal
            cov = prior.amplitude**2 * shrink[:, None] * plan.covariance() * shrink[None, :]
            loglik, terms = gaussian_log_marginal(y, centre, cov, b**2, base, loo=True)
    else:   # ICLP prior, Gaussian noise
        c = shrink * prior.laplace_scale(ctx["pub"]["eigenvalues"], prior.amplitude, prior.smoothness)
        terms = diagonal_log_marginal(law, y, b, prior.law, np.zeros(J), c, base, pointwise=True)
    terms = NodeTerms(terms)   # the fine grid's terms, summed for its density, serve its exact LOO as they are
    if loglik is None:   # independent coefficients given κ: log p(y | κ) = Σ_j log p(y_j | κ)
        loglik = (lambda x: np.sum(terms(x), axis=1))
    return ScaleQuadrature(lambda x: half_normal_log_density(x, sigma) + loglik(x), centre=float(np.log(sigma)),
                           loo_terms=terms)


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


class _LazyRefit:
    """:func:`fdp_ppl.inference.reloo.slice_refit`, compiled at the first refit only (none when PSIS suffices)."""

    def __init__(self, *args):
        self.args, self.fn = args, None

    def __call__(self, j):
        if self.fn is None:
            *args, make = self.args
            self.fn = make(*args)
        return self.fn(j) if self.fn else None


def _refit_collapsed(model, j, draws, tune, chains, seed, post):
    """Leave-one-out refit of coefficient ``j`` by :func:`fdp_ppl.inference.collapsed.refit_terms`."""
    from .collapsed import refit_terms

    return refit_terms(model, j, draws, tune, chains, np.random.default_rng(seed + 7919 * (j + 1)), post)


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
        shape = mu.shape   # (chain, draw, J) as (draws, J): the law's elementwise blocks are then cache-sized rows
        ll = law.convolved_logp((y - mu).reshape(-1, shape[-1]), np.broadcast_to(g, shape).reshape(-1, shape[-1]),
                                b).reshape(shape)
    else:
        ll = law.logp(y, mu, b, pointwise=True)
    if law.product:
        return xr.DataArray(ll, dims=(dims.CHAIN, dims.DRAW, dims.BASIS))
    # a joint law (elliptical): one log-likelihood term for the whole released vector
    return xr.DataArray(ll, dims=(dims.CHAIN, dims.DRAW, "released_vector"))


def infer(release: xr.DataTree, prior=Default("gp"), *, target: str | None = Default(None), draw: int = Default(0),
          sampling_sd=Default(None), method: str = Default("auto"), draws: int = Default(1000),
          tune: int = Default(1000), chains: int = Default(2), cores: int = Default(1),
          target_accept: float = Default(0.9), random_seed=Default(None), progressbar: bool = Default(True),
          nuts_sampler: str = Default("pymc"), posterior_predictive: bool | None = Default(None),
          log_likelihood: bool | None = Default(None), provenance=None) -> xr.DataTree:
    """Posterior of the underlying curve given one private release: exact where the model allows, NUTS otherwise.

    Every family the command line writes is served, each by its own function, which takes some of the options
    below (:data:`INFERENCE_FAMILIES`, read from the release's public attributes):

    ============================  ========================================================================
    release family                options it takes (any other given, its default value included, is refused)
    ============================  ========================================================================
    mean curve                    all of them (this function's own model, described below;
                                  ``posterior_predictive=False`` and ``log_likelihood=False`` skip outputs)
    kernel density estimate       ``prior``, ``target``, ``draw``, ``method`` (``"auto"`` or ``"exact"``),
                                  ``draws``, ``chains``, ``random_seed``: exact draws
                                  (:func:`~fdp_ppl.inference.density.infer_density`, ``fdp-ppl kde``)
    kernel machine                ``prior``, ``target`` (``"summary"``), ``draw``, ``method`` (``"auto"`` or
                                  ``"exact"``), ``draws``, ``chains``, ``random_seed``: exact draws
                                  (:func:`~fdp_ppl.inference.machine.infer_machine`, ``fdp-ppl machine``)
    principal components (FPCA)   ``prior``, ``draws``, ``tune``, ``chains``, ``target_accept``, ``random_seed``,
                                  ``progressbar``, ``posterior_predictive``: NUTS given all released frames
                                  (:func:`~fdp_ppl.inference.components.infer_components`, ``fdp-ppl fpca``)
    ============================  ========================================================================

    Parameters
    ----------
    release : xr.DataTree
        A release from :func:`fdp_ppl.release` (or read back with ``xr.open_datatree``). Only public content is
        read. The other families' results are described with their functions (table above).
    prior : "gp", "iclp", GPPrior, ICLPPrior or callable
        Prior over the curve; see :mod:`fdp_ppl.inference.priors`. Every family takes it, with its own priors: a
        KDE release a :class:`~fdp_ppl.inference.density.DensityPrior`, ``"envelope"`` or ``"flat"``; a
        kernel-machine release ``"rkhs-ball"``, ``"flat"`` or a radius; an FPCA release None, ``"default"``, a
        dict or a :class:`~fdp_ppl.inference.components.ComponentsPrior`; for these ``"gp"`` (the default) means
        the family's default prior.
    target : {"population", "summary"} or None
        Mean curve, density (``"summary"`` or None: the estimate; ``"population"``: the smoothed population
        density) and kernel machine (``"summary"`` only). For a mean curve,
        ``"population"``: the population mean μ₀, adding the sampling error of
        the clipped sample mean as ``X̄_j ~ N(μ₀_j, sd_j²/n)`` (CLT; clipping
        ignored) and shrinkage ``s_j`` of the summary; for Laplace noise the
        Normal–Laplace convolution is exact (:func:`normal_laplace_logp`).
        ``"summary"``: the released summary itself (e.g. the ICLP-QR smoothed
        mean, shrunk toward its centre); likelihood ``y_j ~ Law(θ_j, scale_j)`` exactly.
        None (default): ``"population"`` where the release allows it, else ``"summary"``
        (:func:`default_target`; the choice is the result's ``attrs["target"]``). With the
        population target and no ``sampling_sd`` the sampling scale κ is learned: with fixed prior
        hyperparameters exactly (its one-dimensional marginal by quadrature, model ``"quadrature"``), else with
        NUTS alongside them.
    draw : int
        Which released draw to condition on (one draw = one publication; default 0). Mean curve, density and
        kernel machine (an FPCA posterior conditions on all released frames).
    sampling_sd : float or array (basis,), optional
        Mean curve only. Public/assumed sd of one curve's coefficients for ``target="population"``;
        None puts a half-normal prior on κ with ``sd_j = κ√λ_j``.
    method : {"auto", "exact", "nuts", "marginal", "whitened", "mixture", "dense", "gibbs", "quadrature"}
        Mean curve; density and kernel machine take ``"auto"`` and ``"exact"`` (their posteriors are always
        drawn exactly). ``"auto"`` (default) draws the posterior **exactly, without MCMC**, when every
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
        is fixed; the latent-scale mixture model otherwise (under Laplace noise sampled by collapsed Gibbs,
        :mod:`fdp_ppl.inference.collapsed`, not NUTS). With every hyperparameter fixed and a
        prior that is not diagonal (a GP prior with another kernel than the release's), the
        exactly targeted Gibbs sampler ``"gibbs"`` (:class:`~fdp_ppl.inference.gibbs.SplitGibbs`;
        ``tune`` iterations discarded). With the population target, fixed prior hyperparameters and no
        ``sampling_sd``, ``"quadrature"``: κ from its one-dimensional marginal posterior by quadrature, the rest
        exactly given it (:mod:`fdp_ppl.inference.quadrature`). When ``"auto"`` does not draw exactly although
        every prior hyperparameter is fixed it says so (:class:`InferenceMethodWarning`).
        ``"exact"`` insists on exact draws (raises if the model does not allow them); ``"nuts"``
        forces NUTS on the latent-scale mixture model, an independent check of the exact and
        marginal computations; the other names pick a model of :func:`build_model` directly
        (``"dense"`` is the model before exact inference was added, for benchmarks).
    draws, chains : int
        Posterior draws per chain and chains (default 1000 and 2; exact draws are independent; they are laid
        out as chains × draws like MCMC output). Every family.
    tune, target_accept, progressbar
        Passed to ``pm.sample`` (default 1000, 0.9, True; unused by exact draws). Mean curve and FPCA. For a mean
        curve whose model samples the noise's latent mixing scales with NUTS (``method="mixture"``, ``"dense"``
        or ``"nuts"``; ``"auto"`` samples them by collapsed Gibbs) ``target_accept`` not given is :data:`MIXTURE_TARGET_ACCEPT` (0.95: fewer divergences,
        measured); the value used is the result's ``inference_target_accept``.
    cores : int
        Passed to ``pm.sample`` (default 1). Mean curve only (the FPCA sampler runs its chains in one process).
    random_seed : int, sequence, Generator or None
        Seeds NUTS and the exact conditional draws (default None: fresh entropy). Every family.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}
        Alternative NUTS implementations when installed (default ``"pymc"``). Mean curve only.
    posterior_predictive : bool or None
        Mean curve and FPCA: also draw replicated releases from the posterior. Mean curve: None (default) or
        True, the ``posterior_predictive`` group (``released``, one replicated release per draw, for
        ``az.plot_ppc``) and the standardised predictive check (``released_standardised`` there and in
        ``observed_data``); False, neither is computed. They are drawn after the posterior: the posterior draws are
        the same bits either way at the same ``random_seed``. FPCA: replicated frames, None the family's default
        (:func:`~fdp_ppl.inference.components.infer_components`).
    log_likelihood : bool or None
        Mean curve only. None (default) or True: the pointwise ``log_likelihood`` group and what scores it — the
        exact ``loo`` group, or ``log_likelihood_integrated`` and PSIS-LOO with refits — for ``az.compare`` and
        :func:`fdp_ppl.inference.compare` (as ``pm.sample(idata_kwargs={"log_likelihood": True})``). False: none
        of them is computed and the posterior draws are the same bits at the same ``random_seed``; the root attrs
        record ``log_likelihood`` = ``"not computed (log_likelihood=False)"`` and ``loo_method`` =
        ``"none (log_likelihood=False)"``, ``release_id`` still, and :func:`fdp_ppl.inference.compare` and
        :func:`fdp_ppl.inference.loo` refuse the result in one line naming ``log_likelihood=True`` (``az.loo`` and
        ``az.compare`` fail on it with an ``AttributeError``).
    provenance : mapping of str to str or number, optional
        Public descriptions recorded as root attributes of the result as given (``fdp-ppl infer`` passes
        ``release_file``); a key the result already records is refused. Every family.

    Returns
    -------
    xr.DataTree
        ``posterior`` (``curve`` (chain, draw, t), ``coefficients`` (chain,
        draw, basis), hyperparameters, latent mixing scales), ``sample_stats`` (NUTS only),
        ``observed_data`` (``released``: the release), ``posterior_predictive`` (replicated releases; not with
        ``posterior_predictive=False``), ``log_likelihood`` (``released`` per
        basis coefficient; one term per draw for elliptical laws, whose
        coefficients are not independent; not with ``log_likelihood=False``, nor ``loo`` and
        ``log_likelihood_integrated``). ``attrs`` mark the tree as an
        inference result (:data:`fdp_ppl.releasing.schema.KIND_ATTR`) and record the
        prior, the target, the release's public attributes, the diagnostics,
        ``inference`` (``"exact"``, ``"Gibbs"`` or ``"NUTS"``), ``inference_model`` (the model of
        :func:`build_model`), ``inference_sampler``, ``inference_description``,
        ``inference_method_requested`` and, when not exact, ``inference_not_exact_because``.

    Warns
    -----
    InferenceMethodWarning
        ``method="auto"`` found no exact posterior although every prior hyperparameter is fixed: which sampler
        runs instead, and why (not when hyperparameters are free: then ``inference_reason`` says so).
    InferenceWarning
        NUTS and Gibbs: R-hat > :data:`~fdp_ppl.settings.MAX_RHAT` (1.01), bulk or tail ESS below
        :data:`~fdp_ppl.settings.MIN_ESS_PER_CHAIN` (100) per chain, or divergences.

    Raises
    ------
    ValueError
        Not a release, unknown target, prior or method, or an unsupported combination
        (``InputError``, a ``ValueError``; e.g. ``method="exact"`` with free hyperparameters).
    InputError
        An option the release's family does not take (table above; the default value passed explicitly
        included), naming the options it takes, before the release is read further.

    See Also
    --------
    fdp_ppl.plan : what a release will be, before any data is read.
    fdp_ppl.observe : a release as an observed node of the user's own population model.
    fdp_ppl.inference.compare : leave-one-out comparison of posteriors of one release.

    Examples
    --------
    A seeded study release of 50 curves on 20 points, then exact draws of the summary under an ICLP prior whose
    hyperparameters are all fixed (no MCMC):

    >>> import warnings
    >>> import numpy as np
    >>> import fdp_ppl as fp
    >>> grid = fp.Grid.uniform(20)
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    >>> curves = np.sin(2 * np.pi * grid.t) + np.random.default_rng(0).normal(0, 0.1, (50, 20))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", fp.SeededReleaseWarning)
    ...     tree = fp.release(fp.iclp_qr_mean(curves, basis, tau=3.0), fp.ICLP(epsilon=1.0),
    ...                       random_seed=1, study=True)
    >>> prior = fp.inference.ICLPPrior(amplitude=1.0, smoothness=2.0)
    >>> post = fp.infer(tree, prior, target="summary", draws=200, random_seed=0, progressbar=False)
    >>> post.attrs["inference"], post["posterior"]["curve"].dims, post["posterior"]["curve"].shape
    ('exact', ('chain', 'draw', 't'), (2, 200, 20))
    >>> sorted(post.children)[:4]
    ['constant_data', 'log_likelihood', 'loo', 'observed_data']
    """
    if provenance:  # the result of the same call, with the caller's public descriptions recorded on it
        return _recorded(infer(release, prior, target=target, draw=draw, sampling_sd=sampling_sd, method=method,
                               draws=draws, tune=tune, chains=chains, cores=cores, target_accept=target_accept,
                               random_seed=random_seed, progressbar=progressbar, nuts_sampler=nuts_sampler,
                               posterior_predictive=posterior_predictive, log_likelihood=log_likelihood),
                         provenance)
    options = {"prior": prior, "target": target, "draw": draw, "sampling_sd": sampling_sd, "method": method,
               "draws": draws, "tune": tune, "chains": chains, "cores": cores, "target_accept": target_accept,
               "random_seed": random_seed, "progressbar": progressbar, "nuts_sampler": nuts_sampler,
               "posterior_predictive": posterior_predictive, "log_likelihood": log_likelihood}
    family = inference_family(release)
    family.check(given_options(options))
    accept_given = "target_accept" in given_options(options)
    (prior, target, draw, sampling_sd, method, draws, tune, chains, cores, target_accept, random_seed, progressbar,
     nuts_sampler, posterior_predictive, log_likelihood) = option_values(options).values()
    check_draws_memory(release, draws, chains)
    if family.hook:  # the family's own inference (fdp_ppl.releasing.families: ReleaseEntry.inference)
        import importlib

        module, _, name = family.hook.rpartition(".")
        values = dict(zip(OPTIONS, (prior, target, draw, sampling_sd, method, draws, tune, chains, cores,
                                    target_accept, random_seed, progressbar, nuts_sampler, posterior_predictive,
                                    log_likelihood)))
        return getattr(importlib.import_module(module), name)(
            release, prior, **{k: values[k] for k in family.options if k != "prior"})
    with blas_threads(rescan=True, children=True):  # PyMC chains in processes (cores > 1) too
        return _infer(release, prior, target=target, draw=draw, sampling_sd=sampling_sd, method=method,
                      draws=draws, tune=tune, chains=chains, cores=cores,
                      target_accept=target_accept if accept_given else Default(target_accept),
                      random_seed=random_seed, progressbar=progressbar, nuts_sampler=nuts_sampler,
                      posterior_predictive=posterior_predictive, log_likelihood=log_likelihood)


#: bytes a posterior draw holds per value of one released draw: float64 values in about three copies in the result
#: (the draws, their curve or coefficients, the log-likelihood) and as much again while it is built (measured: the
#: result of a growth release holds 23 bytes per released value and draw)
BYTES_PER_DRAW_VALUE = 6 * 8


def check_draws_memory(release, draws: int, chains: int) -> None:
    """Refuse ``chains × draws`` posterior draws that do not fit in memory, before any work.

    The estimate reads public sizes only: the values of one released draw (every variable of the release's
    ``posterior`` group, per chain and draw) × :data:`BYTES_PER_DRAW_VALUE` × ``chains × draws``, against
    :func:`fdp_ppl.settings.check_memory`.

    Raises
    ------
    InputError
        The draws do not fit; the message gives the largest ``draws`` that does.
    """
    from ..settings import MEMORY_SHARE, available_memory, check_memory

    post = release["posterior"] if isinstance(release, xr.DataTree) and "posterior" in release.children else None
    if post is None or isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1 \
            or not isinstance(chains, (int, np.integer)) or chains < 1:
        return  # not a release or bad counts: refused with their own messages by the family's reader
    per_draw = BYTES_PER_DRAW_VALUE * sum(
        v.size / max(1, v.sizes.get(dims.CHAIN, 1) * v.sizes.get(dims.DRAW, 1)) for v in post.data_vars.values())
    fit = int(MEMORY_SHARE * available_memory() // max(1.0, chains * per_draw))
    check_memory(float(chains) * float(draws) * per_draw, f"draws={draws} posterior draws per chain × {chains} chains",
                 f"pass at most draws={max(fit, 0)} (the largest that fits), or fewer chains")


def _check_switch(name: str, value) -> None:
    """Refuse a ``posterior_predictive`` or ``log_likelihood`` that is not None, True or False (one line)."""
    if value is not None and not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be None, True or False, got {value!r}",
                         f"pass {name}=False to skip it, or leave it out")


def _recorded(result: xr.DataTree, provenance) -> xr.DataTree:
    """``result`` with ``provenance`` added to its root attributes (refusing a key it already records)."""
    extra = S.clean_attrs(dict(provenance))
    clash = sorted(set(extra) & set(result.attrs))
    if clash:
        raise InputError(f"provenance may not set {', '.join(clash)}: the inference result records them",
                         "drop them from provenance")
    result.attrs = {**result.attrs, **extra}
    return result


def _infer(release, prior, *, target, draw, sampling_sd, method, draws, tune, chains, cores, target_accept,
           random_seed, progressbar, nuts_sampler, posterior_predictive=None, log_likelihood=None):
    _check_switch("posterior_predictive", posterior_predictive)
    _check_switch("log_likelihood", log_likelihood)
    model = build_model(release, prior, target=target, draw=draw, sampling_sd=sampling_sd, method=method)
    meta = model._fdp_meta
    target_given, target = target is not None, meta["target"]
    plan = meta["plan"]
    rng = np.random.default_rng(random_seed)
    seed = int(rng.integers(2**31))
    _say_method(method, plan, meta)
    accept_why = "given"
    if isinstance(target_accept, Default):   # not given: by model (MIXTURE_TARGET_ACCEPT)
        latent = plan.model in ("mixture", "dense")
        target_accept = MIXTURE_TARGET_ACCEPT if latent else target_accept.value
        accept_why = ("default for NUTS on latent mixing scales (fewer divergences, measured)" if latent
                      else "default")
    if plan.model == "gibbs":
        coefs = _run_gibbs(model, draws, tune, chains, rng)
        post = xr.Dataset({S.COEFFICIENTS: ((dims.CHAIN, dims.DRAW, dims.BASIS), coefs)},
                          coords={dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)})
        tree = xr.DataTree.from_dict({"posterior": post})
        sampler = "gibbs"
    elif plan.model == "quadrature":  # κ from its 1-D marginal by quadrature; the rest exactly given κ below
        quad = meta["quadrature"] = _scale_quadrature(model)   # its exact LOO: comparison.mean_exact_loo
        kappa = quad.draws(chains * draws, rng).reshape(chains, draws)
        post = xr.Dataset({"sampling_scale": ((dims.CHAIN, dims.DRAW), kappa)},
                          coords={dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)})
        tree, sampler = None, "quadrature"   # exact: the posterior group is built directly below
    elif plan.sampler == "collapsed_gibbs":   # free GP hyperparameters, Laplace noise (fdp_ppl.inference.collapsed)
        from .collapsed import sample_collapsed

        post, tree = sample_collapsed(model, draws, tune, chains, rng), None
        sampler = "gibbs"   # inference_model "mixture" and the description tell it from SplitGibbs
    elif not model.free_RVs:  # fixed hyperparameters: nothing to sample, every draw is exact
        post = xr.Dataset(coords={dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)})
        tree, sampler = None, "none"
    else:
        kwargs = {}
        mode = compile_mode()
        if nuts_sampler == "pymc" and mode is not None:
            kwargs["compile_kwargs"] = {"mode": mode}

        def sample(m, seed, progressbar=progressbar):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*BLAS.*")
                return pm.sample(model=m, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                                 progressbar=progressbar, target_accept=target_accept, nuts_sampler=nuts_sampler,
                                 compute_convergence_checks=False, **kwargs)
        tree = sample(model, seed)
        sampler = nuts_sampler
    exact = sampler in ("none", "quadrature")
    post = post if tree is None else tree["posterior"].to_dataset()
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
    observed = xr.Dataset({S.RELEASED: ((dims.BASIS,), meta["ctx"]["y"])},
                          coords={dims.BASIS: post[dims.BASIS]})
    groups = {S.POSTERIOR: post}
    # the extras below are drawn after the posterior (rng): skipping them leaves the posterior's bits unchanged
    if posterior_predictive is not False:
        from .predictive import replicated_releases

        groups[S.POSTERIOR_PREDICTIVE] = replicated_releases(meta, post, rng)
    if log_likelihood is not False:
        loglik = _pointwise_loglik(model, post)
        if dims.BASIS in loglik.dims:
            loglik = loglik.assign_coords({dims.BASIS: post[dims.BASIS]})
        groups[S.LOG_LIKELIHOOD] = xr.Dataset({S.RELEASED: loglik})
    groups.update({S.OBSERVED_DATA: observed, S.CONSTANT_DATA: constant})
    if tree is not None and S.SAMPLE_STATS in tree.children:
        groups[S.SAMPLE_STATS] = tree[S.SAMPLE_STATS].to_dataset()
    from .comparison import mean_comparison

    # release_id, exact LOO, standardised PPC (each where its inputs were asked for)
    comparison = mean_comparison(model, release, draw, post, groups, log_likelihood=log_likelihood is not False)
    from .comparison import INTEGRATED_GROUP, LOO_GROUP

    # (no INTEGRATED_GROUP with log_likelihood=False: no PSIS, no refit)
    if (plan.model == "marginal" or plan.sampler == "collapsed_gibbs") and not exact and INTEGRATED_GROUP in groups \
            and LOO_GROUP not in groups:
        from .reloo import loo_group, psis_then_refit, refit_attrs, slice_refit   # refit where PSIS fails

        out = psis_then_refit(model, post, groups[INTEGRATED_GROUP]["released"], observed,
                              sample=None if plan.sampler == "collapsed_gibbs" else
                              (lambda m, s: sample(m, seed + s, progressbar=False)),
                              refit=(lambda j: _refit_collapsed(model, j, draws, tune, chains, seed, post))
                              if plan.sampler == "collapsed_gibbs" else _LazyRefit(model, post, draws, tune, chains,
                                                                                   seed, slice_refit))
        groups[LOO_GROUP] = loo_group(out, post[dims.BASIS].values)
        comparison.update(refit_attrs(out))
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
    if sampler not in ("none", "quadrature", "gibbs"):
        attrs.update({"inference_target_accept": float(target_accept), "inference_target_accept_choice": accept_why})
    attrs.update(comparison)
    if plan.own_kernel:
        attrs["inference_prior_diagonal"] = "by construction (the release's own kernel: A K A^T = eigenvalues)"
    if plan.reason is not None:
        attrs["inference_not_exact_because"] = plan.reason
    attrs["inference_reason"] = plan.because
    attrs["inference_free_parameters"] = ", ".join(plan.free) if plan.free else "none"
    if sampler == "quadrature":
        attrs.update({"inference_quadrature_nodes": int(quad.x.size), "inference_quadrature_tv_half": quad.tv_half,
                      "inference_quadrature_tail_drop": quad.drop})
        if hasattr(quad, "loo_error"):   # the exact LOO's rule (comparison.mean_exact_loo)
            attrs["loo_quadrature_error"] = quad.loo_error
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


__all__ = ["infer", "build_model", "default_target", "diagnostics", "normal_laplace_logp",
           "InferenceWarning", "InferenceMethodWarning", "TARGETS", "OPTIONS", "MEAN_OPTIONS", "InferenceFamily", "INFERENCE_FAMILIES",
           "inference_family"]
