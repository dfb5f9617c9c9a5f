"""Which model :func:`fdp_ppl.inference.infer` samples (or draws exactly) for a prior, a noise law, a target
and ``method=``: the :class:`Plan` and the checks behind it — whether the prior's coefficient covariance is
diagonal in the release's basis (:func:`diagonal_kl`; the release's own kernel recognised without forming an
``m × m`` matrix) and which exact or MCMC model applies (see :func:`fdp_ppl.inference.build_model`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..noise.laws import Laplace, Normal
from ..settings import DIAGONAL_KL_TOL
from .priors import CustomPrior, GPPrior

#: values of ``method`` in :func:`~fdp_ppl.inference.infer` / :func:`~fdp_ppl.inference.build_model`
METHODS = ("auto", "exact", "nuts", "marginal", "whitened", "mixture", "dense", "gibbs", "quadrature")


def _is_gaussian(law) -> bool:
    """True for laws whose scale mixture is trivial (``mixing`` is the constant 1)."""
    return isinstance(law, Normal) or getattr(law, "kind", None) == "gaussian"


def diagonal_kl(P) -> float:
    """``KL(N(0, P) || N(0, diag P)) = −½ log det R`` (nats), ``R`` the correlation matrix of ``P`` (J, J).

    Zero exactly when ``P`` is diagonal; treating ``P`` as diagonal changes the prior of the
    coefficients by this much (:data:`~fdp_ppl.settings.DIAGONAL_KL_TOL` is the threshold
    :func:`~fdp_ppl.inference.infer` uses).
    """
    d = np.sqrt(np.diag(P))
    R = P / d[:, None] / d[None, :]
    sign, logdet = np.linalg.slogdet(R)
    return float("inf") if sign <= 0 else max(0.0, -0.5 * float(logdet))


@dataclass(frozen=True)
class Plan:
    """How :func:`~fdp_ppl.inference.infer` computes a posterior (see :func:`~fdp_ppl.inference.build_model`).

    Attributes
    ----------
    model : {"marginal", "quadrature", "whitened", "mixture", "dense", "direct", "gibbs"}
        The PyMC model behind it (``"gibbs"``: no PyMC model, :class:`~fdp_ppl.inference.gibbs.SplitGibbs`;
        ``"quadrature"``: no PyMC model, the population target's sampling scale κ from its one-dimensional
        marginal posterior by :class:`~fdp_ppl.inference.quadrature.ScaleQuadrature`, everything else exactly
        given κ).
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
    reason : str or None
        Why the draws are not exact (None when they are).
    because : str
        Why this model was chosen, in one sentence (exact or not; the result's ``inference_reason``).
    free : tuple of str
        The free parameters: the prior's hyperparameters left out (``lengthscale``, ``amplitude``, ``mean``,
        ``smoothness``) and ``sampling_sd`` (population target without a public one).
    attention : bool
        The draws are not exact although no prior hyperparameter is free: :func:`~fdp_ppl.inference.infer`
        warns (:class:`~fdp_ppl.inference.InferenceMethodWarning`). MCMC because hyperparameters are free is
        information only (the result's attrs and the command line's table say it).
    sampler : {"nuts", "collapsed_gibbs"}
        How a ``"mixture"`` model is sampled: NUTS, or :class:`~fdp_ppl.inference.collapsed.CollapsedGPGibbs`
        (a GP prior with free hyperparameters under Laplace noise: no divergences, cheap leave-one-out refits).
    """

    model: str
    exact: bool = False
    diagonal: bool = False
    P0: np.ndarray | None = None
    kl: float | None = None
    prior_var: np.ndarray | None = None
    own_kernel: bool = False
    reason: str | None = None
    because: str = ""
    free: tuple = ()
    attention: bool = False
    sampler: str = "nuts"

    def covariance(self) -> np.ndarray | None:
        """``P0`` as a dense (J, J) matrix (the diagonal one for the release's own kernel)."""
        if self.P0 is None and self.prior_var is not None:
            return np.diag(self.prior_var)
        return self.P0

    def describe(self, prior, law) -> str:
        if self.model == "quadrature":
            return ("exact: the sampling scale of the population mean from its one-dimensional marginal posterior "
                    "by quadrature on log scale (closed-form marginal likelihood"
                    + (", one-dimensional per coefficient" if self.diagonal and law.product else
                       ", Gaussian, one eigendecomposition") + "), then "
                    + (f"independent one-dimensional {prior.law.name} prior x {law.name} noise posteriors drawn "
                       "exactly per coefficient" if self.diagonal and law.product else
                       "the Gaussian conditional drawn exactly") + " given each scale")
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
        if self.model == "mixture" and self.sampler == "collapsed_gibbs":
            return ("collapsed Gibbs: slice updates of the GP hyperparameters with the coefficients and the mean "
                    "level integrated out given the Laplace noise's latent scales, then the mean level, the noise and "
                    "the latent scales drawn exactly; exact Gaussian conditional draws of the curve; no divergences "
                    "(no Hamiltonian dynamics); MCMC diagnostics reported")
        return {"whitened": "NUTS on whitened coefficients with the release's exact likelihood (one factorisation "
                            "per hyperparameter value); exact conditional draws of the curve and mixing scales",
                "mixture": "NUTS on the noise law's latent mixing scales (Gaussian scale mixture) and "
                           "hyperparameters; exact Gaussian conditional draws of the curve",
                "dense": "NUTS on the latent mixing scales with a dense J x J Gaussian likelihood at every step "
                         "(the model before exact inference was added); exact Gaussian conditional draws",
                "direct": "NUTS on the prior's own variables with the release's exact likelihood"}[self.model]


def _names(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _plan(ctx, prior, target, sampling_sd, method) -> Plan:
    """Choose the model for ``method`` (see :func:`~fdp_ppl.inference.infer`), or raise if the model does not allow it."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    law = ctx["law"]
    if isinstance(prior, CustomPrior):
        if method not in ("auto", "nuts"):
            raise InputError(f"a custom prior is sampled with NUTS on its own variables; method={method!r} does "
                             "not apply", "use method='auto' or 'nuts'")
        return Plan("direct", reason="a custom prior is sampled with NUTS on its own variables",
                    because="a custom prior is sampled with NUTS on its own variables")
    sampling_free = target == "population" and sampling_sd is None
    fixed_sampling = not sampling_free
    P0, kl, diagonal, prior_var, own = None, None, False, None, False
    gibbs_ok = False
    if isinstance(prior, GPPrior):
        free_prior = tuple(name for name, v in (("lengthscale", prior.lengthscale), ("amplitude", prior.amplitude),
                                                ("mean", prior.mean)) if v is None)
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
        fixed = not free_prior and fixed_sampling
        marginal_ok = (law.product and diagonal) or _is_gaussian(law)
        quadrature_ok = not free_prior and sampling_free and marginal_ok
        gibbs_ok = fixed and law.product
        whitened_ok = law.product
        # with a free length-scale the whitened model refactorises P(ρ) at every step and NUTS needs deep trees
        # (DTI: slower than the latent-scale model), so "auto" keeps it for a fixed ρ
        whitened_auto = whitened_ok and prior.lengthscale is not None
        mixture_latent = not (_is_gaussian(law) and fixed)
        # free length-scale, Laplace noise: the mixture model sampled by collapsed Gibbs, not NUTS (NUTS had
        # divergences in 3 of 20 replicates at target_accept 0.95: benchmarks/bench_inference_defaults.py)
        collapsed_auto = mixture_latent and isinstance(law, Laplace) and prior.lengthscale is None
        if free_prior:
            why = (f"the GP prior's {_names(free_prior)} {'is' if len(free_prior) == 1 else 'are'} free (fix "
                   f"{_names(free_prior)} for exact draws)")
        elif not law.product:
            why = f"the {law.name} noise shares one mixing variable across coefficients"
        elif sampling_free and not marginal_ok:
            why = (f"the sampling sd of the population mean is free and, with the prior's coefficient covariance "
                   f"not diagonal in the release's basis (KL {kl:.2g} > {DIAGONAL_KL_TOL:g}) and {law.name} noise, "
                   "its marginal likelihood has no closed form (pass sampling_sd, or a GP prior with the release's "
                   "own kernel)")
        else:
            why = (f"the prior's coefficient covariance is not diagonal in the release's basis (KL {kl:.2g} > "
                   f"{DIAGONAL_KL_TOL:g}: the prior's kernel or length-scale differs from the release's) and the "
                   f"{law.name} noise is not Gaussian")
    else:  # ICLPPrior
        if ctx["pub"]["eigenvalues"] is None:
            raise InputError("the ICLP prior needs a release in an eigenbasis", "use a GP prior")
        free_prior = tuple(name for name, v in (("amplitude", prior.amplitude), ("smoothness", prior.smoothness))
                           if v is None)
        diagonal = True
        fixed = not free_prior and fixed_sampling
        # population target: Gaussian noise adds to the sampling error; Laplace noise has a closed-form marginal
        # (inference.quadrature.laplace_normal_laplace_logp, numpy and PyTensor) and exact draws
        # (conditional.laplace_population_draws): NUTS on the hyperparameters alone, no latent scales
        marginal_ok = law.product and (target == "summary" or _is_gaussian(law) or not free_prior
                                       or isinstance(law, Laplace))
        quadrature_ok = not free_prior and sampling_free and law.product
        whitened_ok = whitened_auto = collapsed_auto = False
        mixture_latent = True
        why = (f"the ICLP prior's {_names(free_prior)} {'is' if len(free_prior) == 1 else 'are'} free (fix "
               f"{_names(free_prior)} for exact draws)" if free_prior else
               f"the {law.name} noise shares one mixing variable across coefficients")
    free = free_prior + (("sampling_sd",) if sampling_free else ())
    sampler = "nuts"
    if method == "auto":
        model = ("quadrature" if quadrature_ok else "marginal" if marginal_ok else "gibbs" if gibbs_ok else
                 "whitened" if whitened_auto else "mixture")
        sampler = "collapsed_gibbs" if model == "mixture" and collapsed_auto else "nuts"

    elif method == "exact":
        if quadrature_ok:
            model = "quadrature"
        elif marginal_ok and fixed:
            model = "marginal"
        else:
            raise InputError(f"no exact posterior for this model: {why}", "use method='auto' (NUTS where needed)")
    elif method == "nuts":
        model = "mixture" if mixture_latent else ("whitened" if whitened_ok else None)
        if model is None:
            raise InputError("nothing to sample with NUTS: the posterior is Gaussian and every hyperparameter is "
                             "fixed", "use method='exact' or 'auto'")
    else:
        model = method
        ok = {"marginal": marginal_ok, "whitened": whitened_ok, "mixture": mixture_latent,
              "dense": mixture_latent and isinstance(prior, GPPrior), "gibbs": gibbs_ok,
              "quadrature": quadrature_ok}[method]
        if not ok:
            raise InputError(f"method={method!r} does not apply to a {prior.name} prior with {law.name} noise and "
                             f"target={target!r}", "use method='auto'")
    exact = model == "quadrature" or (model == "marginal" and fixed)
    if exact:
        because = ("every prior hyperparameter is fixed; the one free parameter, the sampling sd of the population "
                   "mean, has a closed-form one-dimensional marginal posterior (quadrature), and the rest is drawn "
                   "exactly given it" if model == "quadrature" else
                   "every hyperparameter is fixed and the posterior has a closed form")
    elif method == "auto":
        because = why + ("; with Laplace noise and a prior not diagonal in the release's basis the coefficients are "
                         "integrated out given the noise's latent scales, sampled by collapsed Gibbs (NUTS on them had "
                         "divergences)" if sampler == "collapsed_gibbs" else "")
    else:
        because = f"method={method!r} was asked for" + (f" ({why})" if free_prior else "")
    return Plan(model, exact=exact, diagonal=diagonal and model != "dense", P0=P0, kl=kl, prior_var=prior_var,
                own_kernel=own, reason=None if exact else why, because=because, free=free,
                attention=method == "auto" and not exact and not free_prior, sampler=sampler)


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


__all__ = ["Plan", "METHODS", "diagonal_kl"]
