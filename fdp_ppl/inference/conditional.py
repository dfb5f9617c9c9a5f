"""Exact conditional draws behind :func:`fdp_ppl.inference.infer` (Rao–Blackwellisation): given each posterior
draw of the variables the model sampled, the curve, the coefficients and the latent mixing scales it did not
sample are drawn exactly.

Conditional draws are batched: one factorisation per distinct length-scale
(Matheron's rule for the curve given its coefficients), one batched solve per
posterior draw where the latent scales differ.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .. import dims
from ..releasing import schema as S
from ..noise.laws import MIXING_VARIABLE, Laplace, Normal
from .plan import _is_gaussian
from .priors import GPPrior

#: bytes of one batch of matrices in the batched conditional draws (bounds memory)
_BATCH_BYTES = 64 * 2**20


def _chunk(size: int) -> int:
    """Posterior draws per batch when each needs a ``size × size`` matrix (at most 256)."""
    return int(max(1, min(256, _BATCH_BYTES // (8 * size * size))))


def _sampling_base(pub, J):
    """``sd_j/κ`` of one curve's coefficients for the population target: ``√λ_j`` (or 1 outside an eigenbasis)."""
    return np.sqrt(pub["eigenvalues"]) if pub["eigenvalues"] is not None else np.ones(J)


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
