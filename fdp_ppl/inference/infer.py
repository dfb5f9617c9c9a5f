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
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from .. import dims
from .. import schema as S
from .._backend import backend
from ..errors import InputError
from ..settings import MAX_RHAT, MIN_ESS_PER_CHAIN, compile_mode
from .priors import CustomPrior, GPPrior, resolve_prior

TARGETS = ("summary", "population")


class InferenceWarning(UserWarning):
    """MCMC diagnostics failed (R-hat, ESS or divergences)."""


def coefs_size(model) -> int:
    return model._fdp_meta["ctx"]["y"].size


def _grid_to_basis(pub, t):
    """Linear map A (J, K) from a curve on the grid to the release's coefficients
    (:func:`fdp_ppl.schema.coefficient_map` on a dict of public arrays)."""
    return S.coefficient_map(t, pub["quadrature_weights"], eigenfunctions=pub.get("eigenfunctions"),
                             lattice=pub.get("lattice"))


def _shrinkage(view: S.ReleaseView) -> np.ndarray:
    """Shrinkage s_j of a linear summary, rebuilt by its registered spec from public values."""
    from ..registry import SUMMARIES

    name = view.metadata.summary
    spec_cls = SUMMARIES.get(name)
    if spec_cls is None or not spec_cls.linear:
        raise InputError(f"target='population' needs a summary linear in the sample mean (FRL, ICLP-QR, RKHS, "
                         f"Bernstein); got {name!r}", "use target='summary'")
    eig = view.eigenvalues if view.eigenvalues is not None else np.ones(view.n_components)
    return spec_cls.shrinkage_from_public(eig, view.metadata.public())


def normal_laplace_logp(x, g, b):
    """Log-density of ``N(0, g²) + Laplace(0, b)`` at ``x`` (pytensor):
    :meth:`fdp_ppl.laws.Laplace.convolved_logp` (``specs/iclp.md`` §4.3)."""
    from ..laws import Laplace

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


def build_model(release: xr.DataTree, prior="gp", *, target: str = "summary", draw: int = 0,
                sampling_sd=None) -> pm.Model:
    """The PyMC model behind :func:`infer` (same arguments).

    For the GP and ICLP priors the curve is integrated out: Laplace noise is
    written as its exact Normal scale mixture ``ξ_j | E_j ~ N(0, 2b_j² E_j)``,
    ``E_j ~ Exp(1)``, so given the latent scales and hyperparameters the
    release is Gaussian, ``y ~ N(S A m, S A Σ_f Aᵀ S + diag(noise + sampling))``
    with ``A`` the grid-to-coefficient map and ``S`` the summary's shrinkage
    (population target). NUTS samples only the scales and hyperparameters; the
    curve is then drawn exactly from its Gaussian conditional
    (Rao–Blackwellisation), which avoids the funnel between amplitude and
    curve. A :class:`CustomPrior` keeps the curve explicit with the exact
    Laplace / Normal / Normal–Laplace likelihood.
    """
    if target not in TARGETS:
        raise InputError(f"target must be one of {TARGETS}, got {target!r}")
    ctx = _context(release, draw)
    prior = resolve_prior(prior)
    y, pub, attrs, t, A, b, law = ctx["y"], ctx["pub"], ctx["attrs"], ctx["t"], ctx["A"], ctx["scale"], ctx["law"]
    J = y.size
    if target == "population" and not law.product:
        raise InputError(f"target='population' needs a noise law with independent coefficients; the release has "
                         f"{law.name!r}", "use target='summary'")
    coords = {dims.BASIS: np.arange(J), dims.T: t}
    with pm.Model(coords=coords) as model:
        if target == "population":
            shrink = _shrinkage(ctx["view"])
            n = float(attrs["n"])
            if sampling_sd is None:
                kappa = pm.HalfNormal("sampling_scale", sigma=2 * ctx["hint"]["spread"])
                base = np.sqrt(pub["eigenvalues"]) if pub["eigenvalues"] is not None else np.ones(J)
                sampling_var = (shrink * kappa * base) ** 2 / n
            else:
                sampling_var = (shrink * np.broadcast_to(np.asarray(sampling_sd, dtype=float), (J,))) ** 2 / n
        else:
            shrink, sampling_var = np.ones(J), 0.0
        if isinstance(prior, CustomPrior):
            _direct(prior, ctx, target, shrink, sampling_var)
        else:
            noise_var = b**2 * law.mixing(J, dims=dims.BASIS)  # the law's exact Gaussian scale mixture
            diag = noise_var + sampling_var
            if isinstance(prior, GPPrior):
                rho, amp, m = prior.hyperparameters(ctx["hint"])
                K = prior.kernel_matrix(t, rho)
                SA = shrink[:, None] * A
                cov = amp**2 * pt.dot(pt.dot(SA, K), SA.T) + pt.diag(diag)
                pm.MvNormal("released", mu=m * SA.sum(axis=1), cov=cov, observed=y, dims=dims.BASIS)
            else:  # ICLPPrior
                if pub["eigenvalues"] is None:
                    raise InputError("the ICLP prior needs a release in an eigenbasis", "use a GP prior")
                amp_scale = prior.amplitude_scale if prior.amplitude_scale is not None else 2 * ctx["hint"]["rms"]
                amp = pm.HalfNormal("amplitude", sigma=amp_scale) if prior.amplitude is None else prior.amplitude
                power = (1.0 + pm.HalfNormal("smoothness_excess", sigma=2.0) if prior.smoothness is None
                         else prior.smoothness)
                mix = pm.Exponential("prior_mixing", 1.0, dims=dims.BASIS)
                var_theta = amp**2 * (pub["eigenvalues"] / pub["eigenvalues"][0]) ** power * mix
                pm.Normal("released", mu=0.0, sigma=pt.sqrt(shrink**2 * var_theta + diag), observed=y,
                          dims=dims.BASIS)
    model._fdp_meta = {"prior": prior, "target": target, "ctx": ctx, "shrink": shrink, "sampling_sd": sampling_sd}
    return model


def _direct(prior, ctx, target, shrink, sampling_var):
    """Explicit-curve model for user priors: exact mechanism likelihood."""
    y, pub, A, b, law = ctx["y"], ctx["pub"], ctx["A"], ctx["scale"], ctx["law"]
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
    mu = shrink * theta
    if target == "summary" or (np.ndim(sampling_var) == 0 and sampling_var == 0):
        law.pymc(S.RELEASED, mu, b, observed=y, dims=dims.BASIS)  # the mechanism's exact likelihood
    else:  # the law convolved with the Gaussian sampling error of the clipped mean
        xp = backend("pt")
        pm.CustomDist(S.RELEASED, mu, pt.sqrt(sampling_var), b, observed=y, dims=dims.BASIS,
                      logp=lambda value, m, g, bb: law.convolved_logp(value - m, g, bb, xp=xp))


def _conditional_draws(model, post: xr.Dataset, rng: np.random.Generator):
    """Exact Gaussian draws of the curve given each posterior draw of the latent
    scales and hyperparameters (GP and ICLP priors)."""
    meta = model._fdp_meta
    prior, ctx, shrink = meta["prior"], meta["ctx"], meta["shrink"]
    y, A, b, pub, t = ctx["y"], ctx["A"], ctx["scale"], ctx["pub"], ctx["t"]
    n_chain, n_draw = post.sizes[dims.CHAIN], post.sizes[dims.DRAW]
    J, K = A.shape

    def get(name, default):
        if name in post:
            return post[name].values.reshape(n_chain * n_draw, *post[name].shape[2:])
        return np.broadcast_to(np.asarray(default, dtype=float), (n_chain * n_draw,))

    ns = n_chain * n_draw
    flat = {name: post[name].values.reshape(ns, *post[name].shape[2:]) for name in post.data_vars}
    noise = b**2 * ctx["law"].mixing_draws(flat, ns, J)
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        if meta["sampling_sd"] is None:
            base = np.sqrt(pub["eigenvalues"]) if pub["eigenvalues"] is not None else np.ones(J)
            samp = (shrink * get("sampling_scale", 0.0)[:, None] * base) ** 2 / n
        else:
            samp = np.broadcast_to((shrink * np.asarray(meta["sampling_sd"], dtype=float)) ** 2 / n, (ns, J))
    else:
        samp = np.zeros((ns, J))
    D = noise + samp
    curves = np.empty((ns, K))
    coefs = np.empty((ns, J))
    if isinstance(prior, GPPrior):
        rho = get("lengthscale", prior.lengthscale)
        amp = get("amplitude", prior.amplitude)
        m = get("mean_level", prior.mean if prior.mean is not None else 0.0)
        SA = shrink[:, None] * A
        cache = {}
        for i in range(ns):
            key = float(rho[i])
            if key not in cache:
                cache = {key: prior.kernel_matrix(t, key, xp="np")}
            Kf = amp[i] ** 2 * cache[key]
            KA = Kf @ SA.T                                   # (K, J)
            C = SA @ KA + np.diag(D[i])                      # (J, J)
            L = np.linalg.cholesky(C)
            resid = y - m[i] * SA.sum(axis=1)
            G = np.linalg.solve(L.T, np.linalg.solve(L, KA.T)).T    # K Aᵀ C⁻¹, (K, J)
            mean = m[i] + G @ resid
            cov = Kf - G @ KA.T
            w, V = np.linalg.eigh((cov + cov.T) / 2)
            curves[i] = mean + V @ (np.sqrt(np.clip(w, 0, None)) * rng.standard_normal(K))
            coefs[i] = A @ curves[i]
    else:
        amp = get("amplitude", prior.amplitude)
        mix = get("prior_mixing", np.ones(J))
        power = 1.0 + get("smoothness_excess", 0.0) if prior.smoothness is None else get("x", prior.smoothness)
        var_theta = amp[:, None] ** 2 * (pub["eigenvalues"] / pub["eigenvalues"][0]) ** power[:, None] * mix
        prec = 1 / var_theta + shrink**2 / D
        mean = (shrink * y / D) / prec
        coefs = mean + rng.standard_normal((ns, J)) / np.sqrt(prec)
        curves = coefs @ pub["eigenfunctions"].T
    shape = (n_chain, n_draw)
    return (xr.DataArray(curves.reshape(*shape, K), dims=(dims.CHAIN, dims.DRAW, dims.T)),
            xr.DataArray(coefs.reshape(*shape, J), dims=(dims.CHAIN, dims.DRAW, dims.BASIS)))


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


def diagnostics(tree: xr.DataTree, var_names=None) -> dict:
    """Max R-hat, min bulk/tail ESS and the number of divergences of a posterior."""
    var_names = var_names or list(tree[S.POSTERIOR].data_vars)
    post = tree[S.POSTERIOR].to_dataset()[var_names]
    rhat = az.rhat(post)
    ess_b = az.ess(post, method="bulk")
    ess_t = az.ess(post, method="tail")
    div = int(tree["sample_stats"]["diverging"].sum()) if "sample_stats" in tree.children else 0
    return {"max_rhat": float(max(float(rhat[v].max()) for v in rhat.data_vars)),
            "min_ess_bulk": float(min(float(ess_b[v].min()) for v in ess_b.data_vars)),
            "min_ess_tail": float(min(float(ess_t[v].min()) for v in ess_t.data_vars)),
            "divergences": div}


def infer(release: xr.DataTree, prior="gp", *, target: str = "summary", draw: int = 0, sampling_sd=None,
          draws: int = 1000, tune: int = 1000, chains: int = 2, cores: int = 1, target_accept: float = 0.9,
          random_seed=None, progressbar: bool = True, nuts_sampler: str = "pymc") -> xr.DataTree:
    """Posterior of the underlying curve given one private release (NUTS).

    Parameters
    ----------
    release : xr.DataTree
        A release from :func:`fdp_ppl.release` (or read back with
        ``xr.open_datatree``). Only public content is read.
    prior : "gp", "iclp", GPPrior, ICLPPrior or callable
        Prior over the curve; see :mod:`fdp_ppl.inference.priors`.
    target : {"summary", "population"}
        ``"summary"``: the released summary itself (e.g. the ICLP-QR smoothed
        mean); likelihood ``y_j ~ Law(θ_j, scale_j)`` exactly.
        ``"population"``: the population mean μ₀, adding the sampling error of
        the clipped sample mean as ``X̄_j ~ N(μ₀_j, sd_j²/n)`` (CLT; clipping
        ignored) and shrinkage ``s_j`` of the summary; for Laplace noise the
        Normal–Laplace convolution is exact (:func:`normal_laplace_logp`).
    draw : int
        Which released draw to condition on (one draw = one publication).
    sampling_sd : float or array (basis,), optional
        Public/assumed sd of one curve's coefficients for ``target="population"``;
        None puts a half-normal prior on κ with ``sd_j = κ√λ_j``.
    draws, tune, chains, cores, target_accept, random_seed, progressbar
        Passed to ``pm.sample``.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}
        Alternative NUTS implementations when installed.

    Returns
    -------
    xr.DataTree
        ``posterior`` (``curve`` (chain, draw, t), ``coefficients`` (chain,
        draw, basis), hyperparameters), ``sample_stats``, ``observed_data``
        (``released``: the release), ``log_likelihood`` (``released`` per
        basis coefficient; one term per draw for elliptical laws, whose
        coefficients are not independent). ``attrs`` mark the tree as an
        inference result (:data:`fdp_ppl.schema.KIND_ATTR`) and record the
        prior, the target, the release's public attributes and the diagnostics.

    Warns
    -----
    InferenceWarning
        If R-hat > :data:`~fdp_ppl.settings.MAX_RHAT` (1.01), bulk or tail ESS below
        :data:`~fdp_ppl.settings.MIN_ESS_PER_CHAIN` (100) per chain, or there are divergences.

    Raises
    ------
    ValueError
        Not a release, unknown target or prior, or an unsupported combination.
    """
    model = build_model(release, prior, target=target, draw=draw, sampling_sd=sampling_sd)
    rng = np.random.default_rng(random_seed)
    seed = int(rng.integers(2**31))
    if not model.free_RVs:  # fixed hyperparameters, Gaussian noise: the posterior is exactly Gaussian
        post = xr.Dataset(coords={dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws)})
        tree = xr.DataTree.from_dict({"posterior": post})
        nuts_sampler = "none (exact conjugate draws)"
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
    post = tree["posterior"].to_dataset()
    if not isinstance(model._fdp_meta["prior"], CustomPrior):
        curve, coefs = _conditional_draws(model, post, rng)
        post = post.assign(curve=curve, coefficients=coefs)
    view = model._fdp_meta["ctx"]["view"]
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
    observed = xr.Dataset({S.RELEASED: ((dims.BASIS,), model._fdp_meta["ctx"]["y"])},
                          coords={dims.BASIS: post[dims.BASIS]})
    groups = {S.POSTERIOR: post, S.LOG_LIKELIHOOD: xr.Dataset({S.RELEASED: loglik}), S.OBSERVED_DATA: observed,
              S.CONSTANT_DATA: constant}
    if S.SAMPLE_STATS in tree.children:
        groups[S.SAMPLE_STATS] = tree[S.SAMPLE_STATS].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    meta = model._fdp_meta
    diag = diagnostics(tree)
    attrs = {f"release_{k}": v for k, v in meta["ctx"]["attrs"].items()}
    attrs.update(meta["prior"].describe())
    attrs.update({"target": target, "release_draw": draw, "inference": f"NUTS ({nuts_sampler}), MCMC",
                  "privacy_cost": "none (post-processing of a release)",
                  "public_offset_added": int(view.public_offset is not None)})
    attrs.update({f"diagnostic_{k}": v for k, v in diag.items()})
    tree.attrs.update({k: (str(v) if v is None else v) for k, v in attrs.items()})
    tree.attrs.update(S.inference_attrs())
    problems = []
    if diag["max_rhat"] > MAX_RHAT:
        problems.append(f"R-hat up to {diag['max_rhat']:.3f}")
    if min(diag["min_ess_bulk"], diag["min_ess_tail"]) < MIN_ESS_PER_CHAIN * chains:
        problems.append(f"ESS down to {min(diag['min_ess_bulk'], diag['min_ess_tail']):.0f}")
    if diag["divergences"]:
        problems.append(f"{diag['divergences']} divergences")
    if problems:
        warnings.warn("MCMC diagnostics failed (" + ", ".join(problems) + "): run longer (draws/tune), raise "
                      "target_accept, fix hyperparameters, or use the ICLP prior's scale-mixture form",
                      InferenceWarning, stacklevel=2)
    return tree


__all__ = ["infer", "build_model", "diagnostics", "normal_laplace_logp", "InferenceWarning", "TARGETS"]
