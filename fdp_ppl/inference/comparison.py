"""Safe model comparison of inference results: which release a posterior conditions on, exact leave-one-out where
the conditional is Gaussian (or the coefficients are independent), PSIS-LOO with Pareto k̂ otherwise, and a
predictive check on each family's own scale.

* **Identity.** Every inference result records ``release_id`` (:func:`release_identity`): the sha256 of the released
  values it conditions on and of the release's public attributes. :func:`fdp_ppl.inference.compare` refuses
  posteriors whose ``release_id`` differ (another release, or another draw of the same one): ELPDs of different
  data sets are not comparable.
* **Exact leave-one-out.** ``elpd_loo = Σ_j log p(y_j | y_{-j})`` over the released coefficients. Where every
  hyperparameter is fixed, the coefficients are independent a priori and the noise is a product law (the default
  exact path of every family: the ICLP prior, a GP prior with the release's own kernel, a density's or kernel
  machine's diagonal prior), ``p(y_j | y_{-j}) = p(y_j)``, the law's one-dimensional marginal
  (:meth:`fdp_ppl.noise.laws.NoiseLaw.marginal_logp`). With Gaussian noise and any Gaussian prior the release is
  ``N(μ, C)`` and ``p(y_j | y_{-j}) = N(y_j; y_j − (C⁻¹(y − μ))_j / (C⁻¹)_jj, 1/(C⁻¹)_jj)`` (Sundararajan & Keerthi
  2001; Rasmussen & Williams 2006, eq. 5.12). A hyperparameter on a public grid (a density's amplitude) is summed
  exactly over the grid: ``log p(y_j | y_{-j}) = logΣ_a p(a, y) − logΣ_a p(a, y)/p(y_j | a, y_{-j})``; the
  population target's sampling scale κ (the one free parameter of the default exact path) the same way, by the
  quadrature rule it is drawn with (:meth:`fdp_ppl.inference.quadrature.ScaleQuadrature.loo`). The pointwise values are stored in the result's ``loo`` group (``released``, one value per coefficient) and
  :func:`loo` turns them into an ``ELPDData`` that ``az.compare`` takes (no importance sampling, no k̂).
* **PSIS-LOO otherwise** (:func:`loo` falls back to ``az.loo``, reporting k̂). With free hyperparameters and a
  diagonal prior (the ICLP prior; a GP prior with the release's kernel) the importance weights use
  ``log p(y_j | hyperparameters)``, the coefficient and its latent mixing scale integrated out in closed form
  (group ``log_likelihood_integrated``): leaving y_j out then moves a few hyperparameters, not y_j's own
  coefficient, so k̂ stays small — except where y_j alone carries most of what the release says about one;
  there a posterior sampled on the hyperparameters alone is refitted without y_j (:mod:`fdp_ppl.inference.reloo`). Otherwise (Gibbs, a custom prior, principal components) ``log_likelihood``,
  the likelihood given the coefficients.
* **Predictive check on the release's own scale.** ``posterior_predictive/released_standardised`` and
  ``observed_data/released_standardised`` (coefficient dim): ``(ỹ_j − m_j)/s_j`` and ``(y_j − m_j)/s_j``, with
  ``m_j`` the posterior predictive mean of coefficient j and ``s_j`` the public sd of the mechanism's noise on it:
  every coefficient in units of its own noise, so ``az.plot_ppc_dist`` pools comparable numbers (the raw
  coefficients span orders of magnitude).

A mean-curve result inferred with ``log_likelihood=False`` (``posterior_predictive=False``) holds none of the
leave-one-out parts (no predictive check); :func:`loo` and :func:`fdp_ppl.inference.compare` refuse it in one line
naming ``log_likelihood=True`` (:func:`check_log_likelihood`).

Costs no privacy: every quantity is computed from the release and the posterior (post-processing).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from .. import dims
from ..errors import InputError

#: root attribute of an inference result naming the release it conditions on
RELEASE_ID = "release_id"
#: group of an inference result holding exact pointwise leave-one-out log predictive densities
LOO_GROUP = "loo"
#: group of a mean-curve result holding ``log p(y_j | hyperparameters)``, the coefficients integrated out (PSIS-LOO)
INTEGRATED_GROUP = "log_likelihood_integrated"
#: variable name of the standardised coefficients in ``posterior_predictive`` and ``observed_data``
STANDARDISED = "released_standardised"
#: ``loo_method`` of a result whose prior is improper (flat): no predictive density, no leave-one-out
LOO_IMPROPER = "none (improper flat prior: no predictive density)"
#: ``loo_method`` of a result inferred with ``log_likelihood=False``: no log-likelihood, no leave-one-out
LOO_SKIPPED = "none (log_likelihood=False)"
#: ``log_likelihood`` root attribute of such a result
LOGLIK_SKIPPED = "not computed (log_likelihood=False)"
#: PSIS k̂ above which an importance-sampling estimate is unreliable (Vehtari et al. 2024)
GOOD_K = 0.7


# ---------------------------------------------------------------------------------------------- identity
def _canonical(value):
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        return [_canonical(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return repr(value)
    return value if isinstance(value, (int, str)) or value is None else str(value)


def release_identity(release: xr.DataTree, draw: int | None = 0) -> str:
    """The identity of the release a posterior conditions on: a sha256 hex digest.

    Hashes the released values (every numeric variable over (chain, draw) of the release's ``posterior`` group, at
    flat draw index ``draw``, or all draws when ``draw`` is None), their numeric coordinates, and the release's root
    attributes (public by the schema: DESIGN invariant 6). A netCDF round trip keeps it (float64 values and
    attributes are stored exactly).

    Parameters
    ----------
    release : xr.DataTree
        A release of any family (mean curve, density, kernel machine, principal components).
    draw : int or None
        The draw conditioned on (mean, density, machine); None for all of them (principal components).

    Returns
    -------
    str
        64 hexadecimal characters.

    Raises
    ------
    InputError
        A tree without a ``posterior`` group.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"coefficients": (("chain", "draw", "basis"), np.ones((1, 2, 3)))})
    >>> tree = xr.DataTree.from_dict({"posterior": post})
    >>> tree.attrs["epsilon"] = 1.0
    >>> a, b = release_identity(tree, 0), release_identity(tree, 1)
    >>> len(a), a == b
    (64, True)
    >>> tree.attrs["epsilon"] = 2.0
    >>> release_identity(tree, 0) == a
    False
    """
    if "posterior" not in release.children:
        raise InputError("not a release: it has no posterior group", "pass the tree fp.release or fdp-ppl wrote")
    post = release["posterior"].to_dataset()
    h = hashlib.sha256()
    for name in sorted(post.data_vars):
        da = post[name]
        if dims.CHAIN not in da.dims or dims.DRAW not in da.dims or not np.issubdtype(da.dtype, np.number):
            continue  # the released draws only: what inference reads
        rest = [d for d in da.dims if d not in (dims.CHAIN, dims.DRAW)]
        if draw is not None:
            flat = da.transpose(dims.CHAIN, dims.DRAW, *rest).values.reshape((-1,) + tuple(da.sizes[d] for d in rest))
            values, vdims = flat[int(draw)], rest
        else:
            values, vdims = da.values, list(da.dims)
        h.update(f"{name}|{','.join(map(str, vdims))}|{values.shape}|".encode())
        h.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
        for d in vdims:
            if d in post.coords and np.issubdtype(post[d].dtype, np.number):
                h.update(np.ascontiguousarray(post[d].values, dtype="<f8").tobytes())
    attrs = {str(k): _canonical(v) for k, v in release.attrs.items()}
    h.update(json.dumps(attrs, sort_keys=True, default=str).encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------------- exact leave-one-out
def gaussian_loo(y, mean, cov) -> np.ndarray:
    """``log p(y_j | y_{-j})`` (J,) for ``y ~ N(mean, cov)``, every j at once from one factorisation.

    With ``P = cov⁻¹`` and ``r = P (y − mean)``: ``y_j | y_{-j} ~ N(y_j − r_j/P_jj, 1/P_jj)`` (Rasmussen & Williams
    2006, eq. 5.12).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import norm
    >>> bool(np.allclose(gaussian_loo(np.array([1.0, -2.0]), np.zeros(2), np.diag([4.0, 9.0])),
    ...                  norm.logpdf([1.0, -2.0], 0.0, [2.0, 3.0])))
    True
    """
    r, d = gaussian_loo_terms(y, mean, cov)
    return -0.5 * np.log(2 * np.pi) + 0.5 * np.log(d) - 0.5 * r**2 / d


def gaussian_loo_terms(y, mean, cov) -> tuple[np.ndarray, np.ndarray]:
    """``(r, d)`` (J,) each, with ``P = cov⁻¹``, ``r = P (y − mean)``, ``d = diag P``: ``y_j | y_{-j} ~
    N(y_j − r_j/d_j, 1/d_j)`` (:func:`gaussian_loo`)."""
    from scipy.linalg import cho_factor, cho_solve

    y, mean, cov = (np.asarray(a, dtype=float) for a in (y, mean, cov))
    P = cho_solve(cho_factor(0.5 * (cov + cov.T)), np.eye(y.size))
    return P @ (y - mean), np.diag(P)


def grid_loo(loglik, logprior, total=None) -> np.ndarray:
    """Exact ``log p(y_j | y_{-j})`` (J,) when a hyperparameter ``a`` lives on a public grid (G,) and the
    coefficients are independent given it: ``loglik`` (G, J) = ``log p(y_j | a)``, ``logprior`` (G,) = the grid's
    log prior mass. ``log p(y_j | y_{-j}) = logΣ_a e^{lp(a) + Σ_i ℓ_i(a)} − logΣ_a e^{lp(a) + Σ_{i≠j} ℓ_i(a)}``.
    Where the coefficients are not independent given ``a``, pass ``total`` (G,) = ``log p(y | a)`` and ``loglik`` =
    ``log p(y_j | y_{-j}, a)`` (:func:`gaussian_loo` per grid point): then ``log p(y_{-j} | a) = total − loglik``."""
    loglik = np.asarray(loglik, dtype=float)
    total = np.asarray(logprior, dtype=float) + (loglik.sum(axis=1) if total is None else np.asarray(total, dtype=float))
    return logsumexp(total) - logsumexp(total[:, None] - loglik, axis=0)


def loo_dataset(values, dim: str, coords=None, method: str = "exact") -> xr.Dataset:
    """The ``loo`` group: ``released`` (dim,) exact pointwise leave-one-out log predictive densities."""
    values = np.asarray(values, dtype=float)
    ds = xr.Dataset({"released": ((dim,), values)}, coords={dim: np.arange(values.size) if coords is None else coords})
    ds["released"].attrs["description"] = "exact log p(y_j | y_-j): leave-one-out log predictive density"
    ds.attrs["loo_method"] = method
    return ds


def mean_exact_loo(model) -> np.ndarray | None:
    """Exact ``log p(y_j | y_{-j})`` (J,) of a mean-curve model of :func:`fdp_ppl.inference.infer.build_model`
    with no free variable, or None where there is no closed form (free hyperparameters, Gibbs, a custom prior, an
    elliptical law).

    A diagonal marginal (the law's one-dimensional marginals, Normal or Laplace noise) gives ``p(y_j)``; a dense
    Gaussian marginal ``N(μ, C)`` gives :func:`gaussian_loo`. With the population target's sampling scale κ drawn
    by quadrature (model ``"quadrature"``), κ is integrated out by the same rule
    (:meth:`~fdp_ppl.inference.quadrature.ScaleQuadrature.loo`).
    """
    meta = model._fdp_meta
    quad = meta.get("quadrature")
    if quad is not None and quad.loo_terms is not None:   # κ integrated out by its quadrature rule
        return quad.loo()
    if model.free_RVs or not model.observed_RVs:
        return None
    if not meta["ctx"]["law"].product or meta["plan"].model == "direct":
        return None
    obs = model.observed_RVs[0]
    y = np.asarray(meta["ctx"]["y"], dtype=float)
    op_name = type(obs.owner.op).__name__
    if "MvNormal" in op_name:
        mu, cov = (np.asarray(v.eval(), dtype=float) for v in obs.owner.inputs[-2:])
        return gaussian_loo(y, np.broadcast_to(mu, y.shape), cov)
    if "CustomDist" in op_name and meta["plan"].model == "marginal" and meta["plan"].diagonal:
        # the one-dimensional marginals law.marginal_logp(y, s, prior law, c, g) in numpy: no logp to compile
        params = [_folded(v) for v in obs.owner.inputs[-3:]]
        if all(p is not None for p in params):
            c, g, s = params
            values = meta["ctx"]["law"].marginal_logp(y, s, meta["prior"].law, c, g)
            return np.broadcast_to(np.asarray(values, dtype=float), y.shape).copy()
    values = model.compile_logp(vars=[obs], sum=False, jacobian=False)({})[0]
    values = np.asarray(values, dtype=float)
    return values if values.shape == y.shape else None


def _folded(var) -> np.ndarray | None:
    """The value of a PyTensor graph built from constants only (constant-folded, nothing compiled), else None."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.rewriting.utils import rewrite_graph

    var = var if isinstance(var, Constant) else rewrite_graph(var, include=("canonicalize",))
    return np.asarray(var.data, dtype=float) if isinstance(var, Constant) else None


def laplace_sum_logp(x, g, b1, b2) -> np.ndarray:
    """Log-density at ``x`` of ``N(0, g²) + Laplace(0, b1) + Laplace(0, b2)`` (closed form, numpy).

    Two Laplace laws sum to ``(b1² L_{b1} − b2² L_{b2}) / (b1² − b2²)`` (``L_b`` the Laplace density), and adding
    the Normal turns each ``L_b`` into the Normal–Laplace density (:meth:`fdp_ppl.noise.laws.Laplace.convolved_logp`);
    evaluated in log space. Where ``b1`` and ``b2`` are within a relative 1e-4 the larger is moved 1e-4 away
    (a relative change of the density of order 1e-4; the cancellation would otherwise lose every digit).
    ``g = 0`` gives the two-Laplace density itself."""
    from ..noise.laws import Laplace

    x, g, b1, b2 = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(x, g, b1, b2))
    hi, lo = np.maximum(b1, b2), np.minimum(b1, b2)
    hi = np.where(hi - lo < 1e-4 * hi, lo * (1 + 1e-4), hi)
    law = Laplace()
    if np.all(g == 0):
        l_hi, l_lo = -np.log(2 * hi) - np.abs(x) / hi, -np.log(2 * lo) - np.abs(x) / lo
    else:
        gg = np.maximum(g, 1e-300)
        l_hi, l_lo = law.convolved_logp(x, gg, hi), law.convolved_logp(x, gg, lo)
    a, c = 2 * np.log(hi) + l_hi, 2 * np.log(lo) + l_lo
    span = np.log(hi * hi - lo * lo)
    return a + np.log1p(-np.exp(np.minimum(c - a, 0.0))) - span


def _iclp_integrated(meta, post: xr.Dataset) -> np.ndarray | None:
    """``log p(y_j | a, s, κ)`` (chain, draw, J) under the ICLP prior (Laplace coefficients), Laplace or Normal noise,
    either target: the coefficient and every latent mixing scale integrated out in closed form."""
    from ..noise.laws import Laplace, Normal

    prior, ctx, shrink = meta["prior"], meta["ctx"], np.asarray(meta["shrink"], dtype=float)
    law, y, b = ctx["law"], np.asarray(ctx["y"], dtype=float), np.asarray(ctx["scale"], dtype=float)
    if not isinstance(law, (Laplace, Normal)) or ctx["pub"]["eigenvalues"] is None:
        return None
    shape = (post.sizes[dims.CHAIN], post.sizes[dims.DRAW], 1)
    amp = post["amplitude"].values[..., None] if prior.amplitude is None else np.full(shape, float(prior.amplitude))
    power = (1.0 + post["smoothness_excess"].values[..., None] if prior.smoothness is None
             else np.full(shape, float(prior.smoothness)))
    g_prior = shrink * prior.laplace_scale(ctx["pub"]["eigenvalues"], amp, power)          # Laplace scale of sθ_j
    gs = np.zeros(shape)
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        kappa = (post["sampling_scale"].values[..., None] * np.asarray(meta["sampling_base"])
                 if meta["sampling_sd"] is None else np.asarray(meta["sampling_sd"], dtype=float))
        gs = shrink * kappa / np.sqrt(n) * np.ones(shape)
    if isinstance(law, Normal):
        return Laplace().convolved_logp(y, np.sqrt(b**2 + gs**2), g_prior)
    return laplace_sum_logp(y, gs, g_prior, b)


def _gp_dense_loo_terms(meta, post: xr.Dataset) -> np.ndarray | None:
    """``log p(y_j | y_{-j}, hyperparameters, E_{-j})`` (chain, draw, J) of the latent-scale mixture model with a GP
    prior that is not diagonal: given the draws the release is ``N(μ, C)``, ``C = a² S A K_ρ Aᵀ S + diag(2b²E +
    sampling)``; conditioning on the others (one factorisation, :func:`gaussian_loo`'s identity) and integrating y_j's
    own mixing scale ``E_j ~ Exp(1)`` gives the Normal–Laplace density (Laplace noise). Pointwise terms of a
    non-factorised model (Bürkner, Gabry & Vehtari 2021): PSIS weights ``1/p(y_j | y_{-j}, …)`` target the
    leave-one-out posterior."""
    from ..noise.laws import Laplace, Normal
    from ..noise.laws.base import MIXING_VARIABLE

    prior, ctx, shrink = meta["prior"], meta["ctx"], np.asarray(meta["shrink"], dtype=float)
    law, y, b = ctx["law"], np.asarray(ctx["y"], dtype=float), np.asarray(ctx["scale"], dtype=float)
    if not isinstance(law, (Laplace, Normal)):
        return None
    nc, nd, J = post.sizes[dims.CHAIN], post.sizes[dims.DRAW], y.size
    S_ = nc * nd

    def values(name, fixed):
        if fixed is not None:
            return np.full(S_, float(fixed))
        return None if name not in post else post[name].values.reshape(S_)

    rho, amp, m = (values("lengthscale", prior.lengthscale), values("amplitude", prior.amplitude),
                   values("mean_level", prior.mean))
    if rho is None or amp is None or m is None:
        return None
    if isinstance(law, Laplace):
        if MIXING_VARIABLE not in post:
            return None
        noise_var = 2.0 * b**2 * post[MIXING_VARIABLE].transpose(dims.CHAIN, dims.DRAW, ...).values.reshape(S_, J)
    else:
        noise_var = np.broadcast_to(b**2, (S_, J))
    samp = np.zeros((S_, J))
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        kappa = (post["sampling_scale"].values.reshape(S_, 1) * np.asarray(meta["sampling_base"])
                 if meta["sampling_sd"] is None else np.broadcast_to(np.asarray(meta["sampling_sd"], dtype=float), (J,)))
        samp = samp + (shrink * kappa) ** 2 / n
    SA = shrink[:, None] * np.asarray(ctx["A"], dtype=float)
    centre = SA.sum(axis=1)
    out = np.empty((S_, J))
    uniq, index = np.unique(rho, return_inverse=True)
    for k, r in enumerate(uniq):
        P0 = SA @ prior.kernel_matrix(ctx["t"], float(r), xp="np") @ SA.T
        for s in np.flatnonzero(index == k):
            C = amp[s] ** 2 * P0 + np.diag(noise_var[s] + samp[s])
            from scipy.linalg import cho_factor, cho_solve

            Pm = cho_solve(cho_factor(C), np.eye(J))
            d = np.diag(Pm)
            resid = Pm @ (y - m[s] * centre) / d                        # y_j − E[y_j | y_-j]
            if isinstance(law, Normal):
                out[s] = norm_logpdf(resid, 1.0 / d)
            else:
                w = np.maximum(1.0 / d - noise_var[s], 1e-12 * (1.0 / d))
                out[s] = Laplace().convolved_logp(resid, np.sqrt(w), b)
    return out.reshape(nc, nd, J)


def norm_logpdf(x, var):
    """``log N(x; 0, var)``."""
    return -0.5 * np.log(2 * np.pi * var) - 0.5 * x**2 / var


def integrated_loglik(model, post: xr.Dataset) -> xr.DataArray | None:
    """``log p(y_j | hyperparameters)`` (chain, draw, basis) with the coefficients (and latent mixing scales)
    integrated out, where the posterior has free hyperparameters and a diagonal prior: the ICLP prior in closed form
    (:func:`laplace_sum_logp`), a diagonal GP prior through the ``"marginal"`` model's own likelihood; None
    otherwise. PSIS-LOO on it weighs draws of a few hyperparameters, not of J coefficients, so its k̂ stays small
    (the local coefficient and mixing scale of y_j, which one y_j moves most, are no longer in the weights)."""
    from .priors import ICLPPrior

    if not model.free_RVs or not model._fdp_meta["ctx"]["law"].product:
        return None
    from .priors import GPPrior

    if isinstance(model._fdp_meta["prior"], ICLPPrior):
        values = _iclp_integrated(model._fdp_meta, post)
        return None if values is None else xr.DataArray(values, dims=(dims.CHAIN, dims.DRAW, dims.BASIS))
    plan = model._fdp_meta["plan"]
    if isinstance(model._fdp_meta["prior"], GPPrior) and plan.model in ("mixture", "dense"):
        values = _gp_dense_loo_terms(model._fdp_meta, post)
        return None if values is None else xr.DataArray(values, dims=(dims.CHAIN, dims.DRAW, dims.BASIS))
    if plan.model != "marginal" or not plan.diagonal:
        return None
    import pymc as pm

    names = [rv.name for rv in model.free_RVs]
    if any(n not in post for n in names):
        return None
    tree = xr.DataTree.from_dict({"posterior": post[names]})
    ll = pm.compute_log_likelihood(tree, model=model, extend_inferencedata=False, progressbar=False)
    out = ll["released"] if "released" in getattr(ll, "data_vars", {}) else ll["log_likelihood"]["released"]
    out = out if isinstance(out, xr.DataArray) else out.to_dataarray()
    if out.ndim != 3:
        return None
    return xr.DataArray(np.asarray(out.transpose(dims.CHAIN, dims.DRAW, ...).values),
                        dims=(dims.CHAIN, dims.DRAW, dims.BASIS))


# ------------------------------------------------------------------------------------- predictive check
def standardised(observed, replicated, noise_sd, dim: str, coords=None) -> tuple[xr.DataArray, xr.DataArray]:
    """Observed (dim,) and replicated (chain, draw, dim) coefficients minus the posterior predictive mean, over the
    public noise sd of each coefficient (module docstring)."""
    rep = np.asarray(replicated, dtype=float)
    centre = rep.mean(axis=(0, 1))
    sd = np.broadcast_to(np.asarray(noise_sd, dtype=float), centre.shape)
    coords = {dim: np.arange(centre.size) if coords is None else coords}
    attrs = {"long_name": "standardised released coefficient", "units": "noise sd",
             "description": "(released - posterior predictive mean) / the mechanism's noise sd, per coefficient"}
    obs = xr.DataArray((np.asarray(observed, dtype=float) - centre) / sd, dims=(dim,), coords=coords, attrs=attrs)
    rep_da = xr.DataArray((rep - centre) / sd, dims=(dims.CHAIN, dims.DRAW, dim),
                          coords={dims.CHAIN: np.arange(rep.shape[0]), dims.DRAW: np.arange(rep.shape[1]), **coords},
                          attrs=attrs)
    return obs, rep_da


# ------------------------------------------------------------------------------------------- comparison
def loo(result: xr.DataTree, *, method: str = "auto"):
    """Leave-one-out ELPD of an inference result, as ArviZ's ``ELPDData`` (``az.compare`` takes it).

    Parameters
    ----------
    result : xr.DataTree
        An inference result of any family (:func:`fdp_ppl.infer`).
    method : {"auto", "exact", "psis"}
        ``"auto"``: exact where the result holds a ``loo`` group, else PSIS-LOO (``az.loo``, Pareto k̂ per
        coefficient in ``pareto_k``); ``"exact"`` raises where there is no exact form; ``"psis"`` forces ``az.loo``.

    Returns
    -------
    arviz_stats.utils.ELPDData
        ``kind`` ``"loo"``; exact results have ``pareto_k`` all ``-inf`` (no importance sampling) and ``p`` the
        difference between the in-sample and leave-one-out log predictive densities.

    Raises
    ------
    InputError
        Unknown method, ``method="exact"`` on a result without an exact form, an improper (flat) prior, or a
        result without a log-likelihood (``fp.infer(..., log_likelihood=False)``).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> elpd = fp.inference.loo(fp.infer(tree, fp.inference.ICLPPrior(smoothness=2.0, amplitude=1.0)))  # doctest: +SKIP
    >>> elpd.elpd, elpd.pareto_k.max()                                  # doctest: +SKIP
    """
    import arviz as az
    from arviz_stats.utils import ELPDDataLOO

    if method not in ("auto", "exact", "psis"):
        raise InputError(f"method must be 'auto', 'exact' or 'psis', got {method!r}", "use method='auto'")
    if result.attrs.get("loo_method") == LOO_IMPROPER:
        raise InputError("leave-one-out is undefined under an improper (flat) prior: it has no predictive density",
                         "fit a proper prior (the family's default) to compare models")
    check_log_likelihood(result)
    exact = LOO_GROUP in result.children
    if method == "exact" and not exact:
        raise InputError("this posterior has no exact leave-one-out form (free hyperparameters, MCMC or a custom "
                         "prior)", "use method='auto' (PSIS-LOO with Pareto k reported)")
    if method == "psis" or not exact:
        return _psis(result)
    elpd_i = result[LOO_GROUP]["released"]
    n = elpd_i.size
    ll = result[INTEGRATED_GROUP if INTEGRATED_GROUP in result.children else "log_likelihood"]["released"] \
        if "log_likelihood" in result.children else None
    p = float("nan")
    if ll is not None and ll.shape[-1] == n:
        s = ll.sizes[dims.CHAIN] * ll.sizes[dims.DRAW]
        lppd = logsumexp(ll.values.reshape(s, n), axis=0) - np.log(s)
        p = float(np.sum(lppd) - float(elpd_i.sum()))
    n_samples = int(result["posterior"].sizes.get(dims.CHAIN, 1) * result["posterior"].sizes.get(dims.DRAW, 1))
    return ELPDDataLOO(elpd=float(elpd_i.sum()), se=float(np.sqrt(n * np.var(elpd_i.values))), p=p,
                       n_samples=n_samples, n_data_points=n, scale="log", warning=False, good_k=GOOD_K,
                       elpd_i=elpd_i.rename(None).reset_coords(drop=True),
                       pareto_k=(result[LOO_GROUP]["pareto_k"] if "pareto_k" in result[LOO_GROUP]   # PSIS + refits
                                 else xr.full_like(elpd_i, -np.inf)).rename(None).reset_coords(drop=True))


def _psis(result: xr.DataTree):
    """PSIS-LOO (``az.loo``) on the integrated log-likelihood where the result holds it, else on ``log_likelihood``.
    A column constant over the draws (a coefficient the hyperparameters do not move) needs no importance sampling:
    its leave-one-out density is that constant (k̂ reported as −inf). A population result (no ``released``
    variable: one per observed release) is scored over all its variables' values, stacked along ``released_value``."""
    import arviz as az
    from arviz_stats.utils import ELPDDataLOO

    group = INTEGRATED_GROUP if INTEGRATED_GROUP in result.children else "log_likelihood"
    names = list(result[group].data_vars)
    if "released" in names:
        ll = result[group]["released"]
        if ll.ndim != 3:  # several observation dims: ArviZ's own reshaping
            return az.loo(result, pointwise=True)
        obs_dim = [d for d in ll.dims if d not in (dims.CHAIN, dims.DRAW)][0]
    else:  # a population result: one variable per observed release, all its released values pointwise
        obs_dim = "released_value"
        parts = [result[group][v].stack({obs_dim: [d for d in result[group][v].dims
                                                   if d not in (dims.CHAIN, dims.DRAW)]}) for v in names]
        ll = xr.concat([p_.drop_vars(list(p_.coords)).assign_coords({obs_dim: [f"{v}[{i}]" for i in range(p_.sizes[obs_dim])]})
                        for v, p_ in zip(names, parts)], dim=obs_dim)
        observed = {}
    v = ll.transpose(dims.CHAIN, dims.DRAW, obs_dim).values
    const = np.ptp(v.reshape(-1, v.shape[-1]), axis=0) <= 1e-12 * (1 + np.abs(v).max(axis=(0, 1)))
    elpd_i = v[0, 0].copy()
    k = np.full(v.shape[-1], -np.inf)
    if "released" in names:
        observed = result["observed_data"] if "observed_data" in result.children else {}

    def psis(columns):
        groups = {"posterior": result["posterior"].to_dataset(),
                  "log_likelihood": xr.Dataset({"released": ll.isel({obs_dim: columns})})}
        if "released" in observed:   # components hold the released frames under their own names
            groups["observed_data"] = xr.Dataset({"released": observed["released"].isel({obs_dim: columns})})
        sub = xr.DataTree.from_dict(groups)
        part = az.loo(sub, pointwise=True)
        return np.asarray(part.elpd_i), np.asarray(part.pareto_k)

    if not np.all(const):
        try:
            elpd_i[~const], k[~const] = psis(~const)
        except ValueError:  # a column whose largest ratios are all equal (a flat tail): nothing to smooth there
            for j in np.flatnonzero(~const):
                try:
                    (elpd_i[j],), (k[j],) = psis([j])
                except ValueError:  # plain importance sampling: the weights are bounded by the repeated maximum
                    col = v[..., j].reshape(-1)
                    elpd_i[j] = -(logsumexp(-col) - np.log(col.size))
    n, s_ = elpd_i.size, v.shape[0] * v.shape[1]
    lppd = logsumexp(v.reshape(s_, n), axis=0) - np.log(s_)
    coords = {obs_dim: ll[obs_dim].values}
    return ELPDDataLOO(elpd=float(elpd_i.sum()), se=float(np.sqrt(n * np.var(elpd_i))),
                       p=float(lppd.sum() - elpd_i.sum()), n_samples=s_, n_data_points=n, scale="log",
                       warning=bool(np.any(k > GOOD_K)), good_k=GOOD_K,
                       elpd_i=xr.DataArray(elpd_i, dims=(obs_dim,), coords=coords),
                       pareto_k=xr.DataArray(k, dims=(obs_dim,), coords=coords))


def check_log_likelihood(result: xr.DataTree, name: str | None = None) -> None:
    """Refuse a result that holds no log-likelihood to score (``fp.infer(..., log_likelihood=False)``, or a tree
    whose ``log_likelihood`` and ``loo`` groups were dropped): :class:`~fdp_ppl.errors.InputError`, one line naming
    the fix, where ``az.loo`` would raise a bare ``TypeError``/``KeyError``."""
    if LOO_GROUP in result.children or "log_likelihood" in result.children:
        return
    what = "this posterior" if name is None else f"posterior {name!r}"
    why = (" (inferred with log_likelihood=False)" if result.attrs.get("loo_method") == LOO_SKIPPED else "")
    raise InputError(f"{what} holds no log-likelihood{why}: no leave-one-out to score",
                     "re-run fp.infer(..., log_likelihood=True) (the default) on the release")


def check_same_release(results: dict) -> None:
    """Refuse inference results of different releases (or draws), or results that do not say which release they
    condition on (:class:`~fdp_ppl.errors.InputError`, one line)."""
    ids = {name: tree.attrs.get(RELEASE_ID) for name, tree in results.items()}
    missing = sorted(str(k) for k, v in ids.items() if not v)
    if missing:
        raise InputError(f"compare: {', '.join(missing)} record no release_id (the release it conditions on)",
                         "re-run fp.infer on the release with this version")
    if len(set(ids.values())) > 1:
        items = list(ids.items())
        b, ib = items[0]
        a, ia = next((k, v) for k, v in items if v != ib)
        raise InputError(f"compare takes posteriors of one release: {b!r} conditions on release {ib[:12]}, {a!r} on "
                         f"{ia[:12]}", "compare priors fitted to the same release and draw")


def mean_comparison(model, release: xr.DataTree, draw: int, post: xr.Dataset, groups: dict, *,
                    log_likelihood: bool = True) -> dict:
    """Add to a mean-curve result's ``groups`` (in place) the comparison parts of :func:`fdp_ppl.infer`: the
    integrated ``log_likelihood`` where the model integrates the coefficients out (:func:`integrated_loglik`), the
    exact ``loo`` group where there is one (:func:`mean_exact_loo`), and the standardised coefficients of the
    predictive check where ``groups`` holds replicated releases; returns the root attrs to record (``release_id``,
    ``loo_method``, ``log_likelihood``). With ``log_likelihood=False`` no leave-one-out part is computed: the attrs
    say so (:data:`LOO_SKIPPED`, :data:`LOGLIK_SKIPPED`)."""
    ctx = model._fdp_meta["ctx"]
    basis = post[dims.BASIS].values
    attrs = {RELEASE_ID: release_identity(release, draw), "log_likelihood": "log p(y_j | coefficients)"}
    if not log_likelihood:
        attrs.update({"log_likelihood": LOGLIK_SKIPPED, "loo_method": LOO_SKIPPED})
        exact = integrated = None
    else:
        exact = mean_exact_loo(model)
        integrated = integrated_loglik(model, post) if exact is None else None
    if integrated is not None:
        groups[INTEGRATED_GROUP] = xr.Dataset({"released": integrated.assign_coords({dims.BASIS: basis})})
    if exact is not None:
        groups[LOO_GROUP] = loo_dataset(exact, dims.BASIS, basis)
    if log_likelihood:
        attrs["loo_method"] = ("exact" if exact is not None else
                               "psis on log p(y_j | hyperparameters)" + (", y_-j" if model._fdp_meta["plan"].model in
                                                                         ("mixture", "dense") else "")
                               if integrated is not None else "psis")
    law, scale = ctx["law"], np.broadcast_to(np.asarray(ctx["scale"], dtype=float), basis.shape)
    pp = groups.get("posterior_predictive")
    if pp is not None and "released" in pp:
        obs, rep = standardised(ctx["y"], pp["released"].transpose(dims.CHAIN, dims.DRAW, dims.BASIS).values,
                                np.sqrt(np.asarray(law.variance(scale), dtype=float)), dims.BASIS, basis)
        groups["posterior_predictive"] = pp.assign({STANDARDISED: rep})
        groups["observed_data"] = groups["observed_data"].assign({STANDARDISED: obs})
    return attrs


__all__ = ["release_identity", "gaussian_loo", "gaussian_loo_terms", "grid_loo", "loo", "check_same_release",
           "check_log_likelihood", "LOO_SKIPPED", "LOGLIK_SKIPPED",
           "standardised", "mean_comparison", "mean_exact_loo", "integrated_loglik", "laplace_sum_logp", "loo_dataset",
           "RELEASE_ID", "LOO_GROUP", "LOO_IMPROPER", "INTEGRATED_GROUP", "STANDARDISED", "GOOD_K"]
