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
from ..mechanisms import compile_mode
from .priors import CustomPrior, GPPrior, resolve_prior


def coefs_size(model) -> int:
    return model._fdp_meta["ctx"]["y"].size

#: names read from a release (whitelist: nothing else is ever accessed)
RELEASE_VARIABLES = ("coefficients",)
CONSTANT_VARIABLES = ("eigenvalues", "eigenfunctions", "bernstein_design", "lattice", "quadrature_weights",
                      "noise_scale")
RELEASE_ATTRS = ("mechanism", "noise_law", "summary", "eta", "psi", "n", "epsilon", "delta", "tau", "kernel",
                 "kernel_rho", "kernel_nu", "M", "lattice_k", "sensitivity", "sensitivity_norm")
TARGETS = ("summary", "population")


class InferenceWarning(UserWarning):
    """MCMC diagnostics failed (R-hat, ESS or divergences)."""


def _public(tree: xr.DataTree, draw: int):
    post = tree["posterior"]
    if "coefficients" not in post.data_vars:
        raise ValueError("not a fdp_ppl release: posterior.coefficients is missing")
    coef = post["coefficients"]
    n_draws = coef.sizes[dims.CHAIN] * coef.sizes[dims.DRAW]
    if not 0 <= draw < n_draws:
        raise ValueError(f"draw must lie in 0..{n_draws - 1}")
    y = np.asarray(coef.stack(sample=(dims.CHAIN, dims.DRAW)).isel(sample=draw).values, dtype=float)
    const = tree["constant_data"]
    pub = {name: np.asarray(const[name].values) for name in CONSTANT_VARIABLES if name in const.data_vars}
    attrs = {k: tree.attrs[k] for k in RELEASE_ATTRS if k in tree.attrs}
    t = np.asarray(post[dims.T].values)
    t_original = np.asarray(post["t_original"].values) if "t_original" in post.coords else t
    if n_draws > 1:
        warnings.warn(f"the release holds {n_draws} draws; inference uses draw {draw} only (each draw is a "
                      "separate publication)", UserWarning, stacklevel=3)
    return y, pub, attrs, t, t_original


def _grid_to_basis(pub, t):
    """Linear map A (J, K) from a curve on the grid to the release's coefficients."""
    if "eigenfunctions" in pub:
        return (pub["eigenfunctions"] * pub["quadrature_weights"][:, None]).T
    lattice = pub["lattice"]
    eye = np.eye(t.size)
    return np.stack([np.interp(lattice, t, eye[:, k]) for k in range(t.size)], axis=1)


def _shrinkage(attrs, pub):
    name = attrs.get("summary")
    if name in ("iclp-qr", "rkhs"):
        lam_eta = pub["eigenvalues"] ** float(attrs["eta"])
        return lam_eta / (lam_eta + float(attrs["psi"]))
    if name in ("frl", "sample-mean", "bernstein"):
        return np.ones(pub["noise_scale"].size)
    raise ValueError(f"target='population' needs a summary linear in the sample mean (FRL, ICLP-QR, RKHS, "
                     f"Bernstein); got {name!r} — use target='summary'")


def normal_laplace_logp(x, g, b):
    """Log-density of ``N(0, g²) + Laplace(0, b)`` at ``x`` (pytensor).

    ``log p = −log(4b) − x²/(2g²) + log[erfcx(z₁) + erfcx(z₂)]``,
    ``z_{1,2} = (g²/b ∓ x)/(g√2)`` (``specs/iclp.md`` §4.3), with a stable
    ``log erfcx`` for negative arguments.
    """
    z1 = (g**2 / b - x) / (g * np.sqrt(2.0))
    z2 = (g**2 / b + x) / (g * np.sqrt(2.0))
    return -pt.log(4 * b) - x**2 / (2 * g**2) + pt.logaddexp(_log_erfcx(z1), _log_erfcx(z2))


def _log_erfcx(z):
    zn = pt.minimum(z, 0.0)
    zp = pt.maximum(z, 0.0)
    neg = zn**2 + pt.log(2.0 - pt.exp(-(zn**2)) * pt.erfcx(-zn))
    pos = pt.log(pt.erfcx(zp))
    return pt.switch(z < 0, neg, pos)


def _context(release, draw):
    y, pub, attrs, t, t_original = _public(release, draw)
    law = attrs.get("noise_law")
    if law not in ("laplace", "normal"):
        raise ValueError("the release does not record its noise law (attrs['noise_law'])")
    design = pub.get("eigenfunctions", pub.get("bernstein_design"))
    w = pub["quadrature_weights"]
    released_curve = design @ y
    level = float(np.sum(w * released_curve))
    spread = float(np.sqrt(np.sum(w * (released_curve - level) ** 2))) or 1.0
    hint = {"level": level, "spread": spread, "rms": float(np.sqrt(np.sum(w * released_curve**2))) or 1.0}
    return {"y": y, "pub": pub, "attrs": attrs, "t": t, "t_original": t_original, "law": law,
            "A": _grid_to_basis(pub, t), "scale": pub["noise_scale"], "hint": hint}


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
        raise ValueError(f"target must be one of {TARGETS}")
    ctx = _context(release, draw)
    prior = resolve_prior(prior)
    y, pub, attrs, t, A, b = ctx["y"], ctx["pub"], ctx["attrs"], ctx["t"], ctx["A"], ctx["scale"]
    J = y.size
    coords = {dims.BASIS: np.arange(J), dims.T: t}
    with pm.Model(coords=coords) as model:
        if target == "population":
            shrink = _shrinkage(attrs, pub)
            n = float(attrs["n"])
            if sampling_sd is None:
                kappa = pm.HalfNormal("sampling_scale", sigma=2 * ctx["hint"]["spread"])
                base = np.sqrt(pub["eigenvalues"]) if "eigenvalues" in pub else np.ones(J)
                sampling_var = (shrink * kappa * base) ** 2 / n
            else:
                sampling_var = (shrink * np.broadcast_to(np.asarray(sampling_sd, dtype=float), (J,))) ** 2 / n
        else:
            shrink, sampling_var = np.ones(J), 0.0
        if isinstance(prior, CustomPrior):
            _direct(prior, ctx, target, shrink, sampling_var)
        else:
            if ctx["law"] == "laplace":
                e = pm.Exponential("noise_mixing", 1.0, dims=dims.BASIS)
                noise_var = 2 * b**2 * e
            else:
                noise_var = pt.as_tensor_variable(b**2)
            diag = noise_var + sampling_var
            if isinstance(prior, GPPrior):
                rho, amp, m = prior.hyperparameters(ctx["hint"])
                K = prior.kernel_matrix(t, rho)
                SA = shrink[:, None] * A
                cov = amp**2 * pt.dot(pt.dot(SA, K), SA.T) + pt.diag(diag)
                pm.MvNormal("released", mu=m * SA.sum(axis=1), cov=cov, observed=y, dims=dims.BASIS)
            else:  # ICLPPrior
                if "eigenvalues" not in pub:
                    raise ValueError("the ICLP prior needs a release in an eigenbasis; use a GP prior")
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
    y, pub, A, b = ctx["y"], ctx["pub"], ctx["A"], ctx["scale"]
    curve, theta = prior.add(ctx["t"], pub.get("eigenfunctions"), pub["quadrature_weights"],
                             eigenvalues=pub.get("eigenvalues"), hint=ctx["hint"])
    if curve is None and theta is None:
        raise ValueError("a prior must return a curve (t) or coefficients (basis)")
    if theta is None:
        theta = pm.Deterministic("coefficients", pt.dot(A, curve), dims=dims.BASIS)
    else:
        if "eigenfunctions" not in pub:
            raise ValueError("coefficient priors need a release in an eigenbasis; use a GP prior")
        if curve is None:
            pm.Deterministic("curve", pt.dot(pub["eigenfunctions"], theta), dims=dims.T)
        theta = pm.Deterministic("coefficients", theta, dims=dims.BASIS)
    mu = shrink * theta
    if target == "summary" or (np.ndim(sampling_var) == 0 and sampling_var == 0):
        if ctx["law"] == "laplace":
            pm.Laplace("released", mu=mu, b=b, observed=y, dims=dims.BASIS)
        else:
            pm.Normal("released", mu=mu, sigma=b, observed=y, dims=dims.BASIS)
    elif ctx["law"] == "normal":
        pm.Normal("released", mu=mu, sigma=pt.sqrt(sampling_var + b**2), observed=y, dims=dims.BASIS)
    else:
        pm.CustomDist("released", mu, pt.sqrt(sampling_var), b, observed=y, dims=dims.BASIS,
                      logp=lambda value, mu, g, bb: normal_laplace_logp(value - mu, g, bb))


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

    S = n_chain * n_draw
    noise = 2 * b**2 * get("noise_mixing", np.ones(J)) if ctx["law"] == "laplace" else np.broadcast_to(b**2, (S, J))
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        if meta["sampling_sd"] is None:
            base = np.sqrt(pub["eigenvalues"]) if "eigenvalues" in pub else np.ones(J)
            samp = (shrink * get("sampling_scale", 0.0)[:, None] * base) ** 2 / n
        else:
            samp = np.broadcast_to((shrink * np.asarray(meta["sampling_sd"], dtype=float)) ** 2 / n, (S, J))
    else:
        samp = np.zeros((S, J))
    D = noise + samp
    curves = np.empty((S, K))
    coefs = np.empty((S, J))
    if isinstance(prior, GPPrior):
        rho = get("lengthscale", prior.lengthscale)
        amp = get("amplitude", prior.amplitude)
        m = get("mean_level", prior.mean if prior.mean is not None else 0.0)
        SA = shrink[:, None] * A
        cache = {}
        for i in range(S):
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
        coefs = mean + rng.standard_normal((S, J)) / np.sqrt(prec)
        curves = coefs @ pub["eigenfunctions"].T
    shape = (n_chain, n_draw)
    return (xr.DataArray(curves.reshape(*shape, K), dims=(dims.CHAIN, dims.DRAW, dims.T)),
            xr.DataArray(coefs.reshape(*shape, J), dims=(dims.CHAIN, dims.DRAW, dims.BASIS)))


def _pointwise_loglik(model, post: xr.Dataset) -> xr.DataArray:
    """log p(y_j | coefficients) per released coefficient under the mechanism
    (and the sampling error for the population target)."""
    from scipy import special

    meta = model._fdp_meta
    ctx, shrink = meta["ctx"], meta["shrink"]
    y, b = ctx["y"], ctx["scale"]
    mu = shrink * post["coefficients"].values
    x = y - mu
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        if meta["sampling_sd"] is None:
            base = np.sqrt(ctx["pub"]["eigenvalues"]) if "eigenvalues" in ctx["pub"] else np.ones(y.size)
            g = shrink * post["sampling_scale"].values[..., None] * base / np.sqrt(n)
        else:
            g = shrink * np.asarray(meta["sampling_sd"], dtype=float) / np.sqrt(n)
        if ctx["law"] == "normal":
            v = g**2 + b**2
            ll = -0.5 * np.log(2 * np.pi * v) - x**2 / (2 * v)
        else:
            z1 = (g**2 / b - x) / (g * np.sqrt(2))
            z2 = (g**2 / b + x) / (g * np.sqrt(2))
            ll = -np.log(4 * b) - x**2 / (2 * g**2) + np.logaddexp(_np_log_erfcx(z1, special),
                                                                  _np_log_erfcx(z2, special))
    elif ctx["law"] == "laplace":
        ll = -np.log(2 * b) - np.abs(x) / b
    else:
        ll = -0.5 * np.log(2 * np.pi * b**2) - x**2 / (2 * b**2)
    return xr.DataArray(ll, dims=(dims.CHAIN, dims.DRAW, dims.BASIS))


def _np_log_erfcx(z, special):
    zn = np.minimum(z, 0.0)
    out = np.log(special.erfcx(np.maximum(z, 0.0)))
    neg = zn**2 + np.log(2.0 - np.exp(-(zn**2)) * special.erfcx(-zn))
    return np.where(z < 0, neg, out)


def diagnostics(tree: xr.DataTree, var_names=None) -> dict:
    """Max R-hat, min bulk/tail ESS and the number of divergences of a posterior."""
    var_names = var_names or list(tree["posterior"].data_vars)
    post = tree["posterior"].to_dataset()[var_names]
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
        basis coefficient). ``attrs`` record the prior, the target, the
        release's public attributes and the diagnostics.

    Warns
    -----
    InferenceWarning
        If R-hat > 1.01, bulk or tail ESS < 100 per chain, or there are divergences.

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
    post = post.assign_coords({dims.T: model._fdp_meta["ctx"]["t"], dims.BASIS: np.arange(coefs_size(model)),
                               "t_original": (dims.T, model._fdp_meta["ctx"]["t_original"])})
    loglik = _pointwise_loglik(model, post).assign_coords({dims.BASIS: post[dims.BASIS]})
    observed = xr.Dataset({"released": ((dims.BASIS,), model._fdp_meta["ctx"]["y"])},
                          coords={dims.BASIS: post[dims.BASIS]})
    groups = {"posterior": post, "log_likelihood": xr.Dataset({"released": loglik}), "observed_data": observed}
    if "sample_stats" in tree.children:
        groups["sample_stats"] = tree["sample_stats"].to_dataset()
    tree = xr.DataTree.from_dict(groups)
    meta = model._fdp_meta
    diag = diagnostics(tree)
    attrs = {f"release_{k}": v for k, v in meta["ctx"]["attrs"].items()}
    attrs.update(meta["prior"].describe())
    attrs.update({"target": target, "release_draw": draw, "inference": f"NUTS ({nuts_sampler}), MCMC",
                  "privacy_cost": "none (post-processing of a release)"})
    attrs.update({f"diagnostic_{k}": v for k, v in diag.items()})
    tree.attrs.update({k: (str(v) if v is None else v) for k, v in attrs.items()})
    problems = []
    if diag["max_rhat"] > 1.01:
        problems.append(f"R-hat up to {diag['max_rhat']:.3f}")
    if min(diag["min_ess_bulk"], diag["min_ess_tail"]) < 100 * chains:
        problems.append(f"ESS down to {min(diag['min_ess_bulk'], diag['min_ess_tail']):.0f}")
    if diag["divergences"]:
        problems.append(f"{diag['divergences']} divergences")
    if problems:
        warnings.warn("MCMC diagnostics failed (" + ", ".join(problems) + "): run longer (draws/tune), raise "
                      "target_accept, fix hyperparameters, or use the ICLP prior's scale-mixture form",
                      InferenceWarning, stacklevel=2)
    return tree


__all__ = ["infer", "build_model", "diagnostics", "normal_laplace_logp", "InferenceWarning", "TARGETS"]
