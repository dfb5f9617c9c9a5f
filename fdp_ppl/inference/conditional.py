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


def _shared_rows(a):
    """``a`` (draws, J) as a stride-0 view of its first row where every row equals it (fixed hyperparameters: a
    product noise law then computes each coefficient's posterior terms once for all draws), else ``a``."""
    if a.ndim and a.shape[0] > 1 and a.strides[0] == 0:   # already one row repeated
        return a
    shared = a.shape[0] > 1 and np.array_equal(a[-1], a[0]) and np.array_equal(a, np.broadcast_to(a[:1], a.shape))
    return np.broadcast_to(a[:1], a.shape) if shared else a


def _one_row(v):
    """``v`` (draws, ...) as its first row ``v[:1]`` where its rows are one stored row repeated (stride 0: a fixed
    hyperparameter broadcast over the draws), else ``v``: arithmetic on it then runs once for all draws."""
    return v[:1] if v.ndim and v.shape[0] > 1 and v.strides[0] == 0 else v


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


#: proposal rounds of :func:`laplace_population_draws` before it gives up (expected rounds are 1/acceptance)
MAX_ROUNDS = 100_000


def population_proposal(y, b, c, g, *, log_rates=False) -> np.ndarray:
    """Which exact proposal of :func:`laplace_population_draws` has the highest acceptance rate (0–3, the broadcast
    shape of the inputs), from the rates' closed forms (the marginal
    :func:`~fdp_ppl.inference.quadrature.laplace_normal_laplace_logp` over each proposal's envelope mass);
    ``log_rates``: the four log acceptance rates instead (4, ...)."""
    from scipy.special import log_ndtr

    from .quadrature import laplace_normal_laplace_logp

    y, b, c, g = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(y, b, c, g))
    shape = y.shape
    y, b, c, g = (a.ravel() for a in (y, b, c, g))
    L = Laplace()
    logm = laplace_normal_laplace_logp(y, c, g, b)
    log_nl0 = L.convolved_logp(np.zeros((y.size, 1)), g[:, None], c[:, None])[:, 0]
    log_k = g**2 / (2 * c**2) + log_ndtr(g / c)
    log_ll = L.convolved_laplace_logp(y[:, None], c[:, None], b[:, None])[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        # log of 2b times the envelope's mass, e^{−|y|/b} e^{g²/(2b²)}/(1 − c²/b²)
        log_tilt = np.where(c < b, -np.abs(y) / b + g**2 / (2 * b**2) - np.log1p(-(c / b) ** 2), np.inf)
    rates = np.stack([logm + np.log(2 * b), logm - log_nl0, logm - np.log(2.0) - log_k - log_ll,
                      logm + np.log(2 * b) - log_tilt])
    return (rates.reshape((4,) + shape) if log_rates else np.argmax(rates, axis=0).reshape(shape))


#: representative sampling scales at which :func:`_proposal_by_rows` computes the proposals' acceptance rates
PROPOSAL_SCALES = 33


def _proposal_by_rows(y, b, c, g, key) -> np.ndarray:
    """:func:`population_proposal` for rows ``(n, J)`` of ``c`` and ``g`` that vary with one scalar per row (``key``
    (n,), e.g. log κ), computed only at the rows nearest :data:`PROPOSAL_SCALES` evenly spaced values of ``key``;
    each row takes the choice of the representative nearest it. Any choice is exact; near-best ones keep the
    rejection rounds few."""
    key = np.asarray(key, dtype=float)
    grid = np.linspace(key.min(), key.max(), PROPOSAL_SCALES)
    rep = np.unique(np.abs(key[:, None] - grid[None, :]).argmin(axis=0))
    rep = rep[np.argsort(key[rep], kind="stable")]
    kr = key[rep]
    pos = np.clip(np.searchsorted(kr, key), 1, max(kr.size - 1, 1))
    nearest = np.where(np.abs(key - kr[pos - 1]) <= np.abs(kr[np.minimum(pos, kr.size - 1)] - key), pos - 1,
                       np.minimum(pos, kr.size - 1))
    c, g = np.broadcast_arrays(c, g)
    return population_proposal(y, b, c[rep], g[rep])[nearest]


#: rounds after which :func:`laplace_population_draws` gives the elements not yet accepted their own best proposal
_REVISE_AFTER = 8


def _proposal_constants(choice, g, c):
    """``log NL(0)`` where proposal 1 is used and ``log(e^{g²/(2c²)} Φ(g/c))`` where proposal 2 is (0 elsewhere)."""
    from scipy.special import log_ndtr

    log_nl0, log_k = np.zeros(choice.size), np.zeros(choice.size)
    sel = choice == 1
    if sel.any():
        log_nl0[sel] = Laplace().convolved_logp(np.zeros((sel.sum(), 1)), g[sel, None], c[sel, None])[:, 0]
    sel = choice == 2
    log_k[sel] = g[sel] ** 2 / (2 * c[sel] ** 2) + log_ndtr(g[sel] / c[sel])
    return log_nl0, log_k


def laplace_population_draws(y, b, c, g, rng, choice=None):
    """Exact draws of ``U`` and ``V = U + e`` given ``y = U + e + ξ``, ``U ~ Laplace(0, c)``, ``e ~ N(0, g²)``,
    ``ξ ~ Laplace(0, b)`` independent (an ICLP prior's coefficient times its shrinkage, the sampling error of the
    mean, the ICLP noise), elementwise over the broadcast arrays.

    ``V | y`` has density ``∝ NL(V; g, c) e^{−|y − V|/b}`` (``NL`` the Normal–Laplace density). It is drawn by
    rejection, per element from whichever of three exact proposals has the highest acceptance rate (each rate is
    known in closed form from the marginal :func:`~fdp_ppl.inference.quadrature.laplace_normal_laplace_logp`):

    * the prior ``NL(g, c)``, accepted with probability ``e^{−|y − V|/b}``;
    * ``V = y − ξ'``, ``ξ' ~ Laplace(0, b)``, accepted with ``NL(V)/NL(0)``;
    * the Laplace–Laplace posterior ``∝ e^{−|V|/c − |y − V|/b}``, accepted with ``NL(V)/M(V)``, where
      ``M(v) = e^{g²/(2c²)} Φ(g/c) e^{−|v|/c}/c ≥ NL(v)`` (since ``E e^{|e|/c} = 2e^{g²/(2c²)}Φ(g/c)``);
    * for ``c < b`` (and a ``y`` far in the noise's tail, where the others fail): the prior tilted toward
      ``y``, ``∝ NL(V) e^{sign(y) V/b}`` (``U`` an asymmetric Laplace, ``e ~ N(sign(y) g²/b, g²)``; mass
      ``e^{g²/(2b²)}/(1 − c²/b²)``), times ``e^{−|y|/b}`` dominates ``NL(V) e^{−|y − V|/b}``; accepted
      with probability 1 on ``y``'s near side and ``e^{−2|V − y|/b}`` beyond it.

    The prior and the tilted proposal draw the pair ``(U, e)`` and accept on ``V = U + e`` alone, so an accepted
    pair is an exact draw of ``(U, V) | y`` and its ``U`` is kept; after the other two (which propose ``V``
    only) ``U | V`` (Laplace prior, Normal observation) is drawn exactly. Then ``ξ = y − V``.

    The proposal used is any function of the inputs (each is exact); ``choice`` (integers 0–3, broadcast like
    the inputs) gives it, e.g. :func:`population_proposal` computed at a few representative sampling scales
    (:func:`_proposal_by_rows`), which spares its four log-densities per element; default: computed here. Elements
    not accepted after :data:`_REVISE_AFTER` rounds then take their own best proposal.

    Returns
    -------
    U, V : ndarray
        Broadcast shape of the inputs.

    Raises
    ------
    RuntimeError
        Some element not accepted after :data:`MAX_ROUNDS` rounds (acceptance below about ``1e-5``).
    ValueError
        ``choice`` picks the tilted proposal (3) where ``c ≥ b`` (it does not dominate there).
    """
    y, b, c, g = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(y, b, c, g))
    shape = y.shape
    y, b, c, g = (a.ravel() for a in (y, b, c, g))
    L = Laplace()

    def nl(v, gg, cc):
        return L.convolved_logp(v[:, None], gg[:, None], cc[:, None])[:, 0]

    given = choice is not None
    if choice is None:
        choice = population_proposal(y, b, c, g).ravel()
    else:
        choice = np.broadcast_to(np.asarray(choice, dtype=int), shape).ravel()
        if np.any((choice == 3) & (c >= b)):
            raise ValueError("the tilted proposal (3) needs a prior scale c below the noise scale b")
    log_nl0, log_k = _proposal_constants(choice, g, c)
    V, U = np.empty(y.size), np.full(y.size, np.nan)   # U stays NaN where the proposal drew V alone
    todo = np.arange(y.size)
    for rnd in range(MAX_ROUNDS):
        if todo.size == 0:
            break
        if rnd == _REVISE_AFTER and given:   # the few left take their own best proposal (a choice made from past
            choice = choice.copy()           # rejections only: each round's acceptance stays exact)
            choice[todo] = population_proposal(y[todo], b[todo], c[todo], g[todo])
            log_nl0[todo], log_k[todo] = _proposal_constants(choice[todo], g[todo], c[todo])
        every = rnd == 0   # the first round proposes for every element: views, no gathers
        at = slice(None) if every else todo
        ch, yy, bb, cc, gg = choice[at], y[at], b[at], c[at], g[at]
        v, u = np.empty(todo.size), np.full(todo.size, np.nan)
        logr = np.empty(todo.size)
        used = np.flatnonzero(np.bincount(ch, minlength=4))
        for kind in used:
            s = slice(None) if used.size == 1 else ch == kind   # one proposal for all: views again
            Y, B, Cc, G = yy[s], bb[s], cc[s], gg[s]
            n = Y.size
            uk = np.nan
            if kind == 0:
                uk = rng.laplace(0.0, Cc)
                vk = uk + G * rng.standard_normal(n)
                lr = -np.abs(Y - vk) / B
            elif kind == 1:
                vk = Y - rng.laplace(0.0, B)
                lr = nl(vk, G, Cc) - log_nl0[at][s]
            elif kind == 2:
                vk = L.centre_posterior_draws(Y, B, Laplace(), 0.0, Cc, rng)
                lr = nl(vk, G, Cc) - (log_k[at][s] - np.log(Cc) - np.abs(vk) / Cc)
            else:   # tilted by e^{±V/b} toward y: U asymmetric Laplace, e ~ N(±g²/b, g²)
                vk, uk, lr = _tilted_proposal(Y, B, Cc, G, rng)
            v[s], u[s], logr[s] = vk, uk, lr
        ok = np.log(rng.random(todo.size)) < logr
        got = np.flatnonzero(ok) if every else todo[ok]
        V[got], U[got] = v[ok], u[ok]
        todo = todo[~ok]
    else:
        raise RuntimeError(f"{todo.size} posterior draws of the Laplace-prior population target were not accepted "
                           f"after {MAX_ROUNDS} proposals")
    redraw = np.flatnonzero(np.isnan(U))   # accepted from a proposal of V alone: U | V exactly
    if redraw.size:
        U[redraw] = Normal().centre_posterior_draws(V[redraw], g[redraw], Laplace(), 0.0, c[redraw], rng)
    return U.reshape(shape), V.reshape(shape)


def _tilted_proposal(y, b, c, g, rng):
    """The tilted proposal of :func:`laplace_population_draws` (c < b): ``U`` from the prior tilted by
    ``e^{sign(y) U/b}`` (an asymmetric Laplace), ``e ~ N(sign(y) g²/b, g²)``, ``V = U + e``; returns ``V``, ``U`` and
    the log acceptance probability (0 on ``y``'s near side, ``−2|V − y|/b`` beyond). Its three random arrays are
    drawn whole (uniform, Exp(1), N(0, 1)), the arithmetic in cache-sized blocks (the same values as one pass)."""
    from ..noise.laws.base import BLOCK

    n = y.size
    r, e, z = rng.random(n), rng.standard_exponential(n), rng.standard_normal(n)
    v, u, lr = np.empty(n), np.empty(n), np.empty(n)
    for lo in range(0, n, BLOCK):
        s = slice(lo, lo + BLOCK)
        Y, inv_c, inv_b, G = y[s], 1 / c[s], 1 / b[s], g[s]
        sgn = np.where(Y >= 0, 1.0, -1.0)
        up, down = inv_c - inv_b, inv_c + inv_b               # rates of the tilted U toward and away from y
        a = np.where(r[s] * (up + down) < down, e[s] / up, -e[s] / down)
        u[s], v[s] = sgn * a, sgn * (a + G**2 * inv_b + G * z[s])
        lr[s] = -2 * np.maximum(sgn * (v[s] - Y), 0.0) * inv_b    # 1 on y's near side, e^{−2|V − y|/b} beyond
    return v, u, lr


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
    samp_sd = None   # sd of the shrunk sample mean's error (population target), its variance where a branch needs it
    if meta["target"] == "population":
        n = float(ctx["attrs"]["n"])
        if meta["sampling_sd"] is None:   # κ_s · s_j sd_j/κ / √n: one pass over (draws, J)
            samp_sd = get("sampling_scale", 0.0)[:, None] * (shrink * _sampling_base(pub, J) / np.sqrt(n))
        else:
            samp_sd = np.broadcast_to(shrink * np.asarray(meta["sampling_sd"], dtype=float) / np.sqrt(n), (ns, J))

    def samp():
        return 0.0 if samp_sd is None else samp_sd**2
    noise = mixing = None
    mixing_drawn = False   # with the noise, by the law (population_posterior_draws)
    one_d = plan.model in ("marginal", "quadrature") and plan.diagonal and law.product
    if isinstance(prior, GPPrior):
        rho = get("lengthscale", prior.lengthscale)
        amp = get("amplitude", prior.amplitude)
        m = get("mean_level", prior.mean if prior.mean is not None else 0.0)
        A1 = A.sum(axis=1)
        if one_d:   # u = Sθ + e ~ N(S m A1, S² a² P_jj + g²) per coefficient; y = u + ξ
            # a fixed amplitude or level (stride-0 rows): its (draws, J) terms computed for one row, the same values
            prior_sd = _one_row(amp)[:, None] * np.sqrt(plan.prior_var)
            centre = _shared_rows(np.broadcast_to(shrink * _one_row(m)[:, None] * A1, (ns, J)))
            # (Sθ, ξ, E) | y: Sθ + e | y, ξ = y − (Sθ + e) exactly, Sθ | Sθ + e, the noise's mixing scales | ξ
            u, noise, mixing = law.population_posterior_draws(
                y, b, centre, _shared_rows(np.broadcast_to(shrink * prior_sd, (ns, J))),
                samp_sd, rng)
            mixing_drawn, coefs = True, u / shrink
        elif plan.model in ("whitened", "gibbs"):
            coefs = flat[S.COEFFICIENTS]
        else:
            D = b**2 * law.mixing_draws(flat, ns, J) + samp()
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
        if one_d and meta["target"] == "population" and not _is_gaussian(law):   # Laplace noise: by rejection
            choice = None
            if np.ptp(amp) == 0 and np.ptp(power) == 0:   # c fixed: proposals at a few κ (any choice is exact)
                choice = _proposal_by_rows(y, b, shrink * c, samp_sd, np.log(get("sampling_scale", 1.0)))
            u, v = laplace_population_draws(y, b, shrink * c, samp_sd, rng, choice)
            coefs, noise = u / shrink, y - v
        elif one_d:   # population target with Gaussian noise: the sampling error adds to it
            coefs = law.centre_posterior_draws(y, np.sqrt(b**2 + samp()), Laplace(), 0.0, shrink * c, rng) / shrink
        else:
            D = b**2 * law.mixing_draws(flat, ns, J) + samp()
            var_theta = 2 * c**2 * get("prior_mixing", np.ones(J))
            prec = 1 / var_theta + shrink**2 / D
            mean = (shrink * y / D) / prec
            coefs = mean + rng.standard_normal((ns, J)) / np.sqrt(prec)
        curves = coefs @ pub["eigenfunctions"].T
        extra = {} if "prior_mixing" in post else {"prior_mixing": Laplace().mixing_conditional_draws(coefs, c, rng)}
    if law.product and MIXING_VARIABLE not in post:
        resid = noise if noise is not None else y - shrink * coefs
        if noise is None and meta["target"] == "population":   # the noise given r = e + ξ: Normal "prior" N(r, g²)
            resid = law.centre_posterior_draws(0.0, b, Normal(), resid, samp_sd, rng) if not _is_gaussian(law) \
                else resid
        e = mixing if mixing_drawn else law.mixing_conditional_draws(resid, b, rng)
        if e is not None:
            extra[MIXING_VARIABLE] = e
    shape = (n_chain, n_draw)
    out = {S.CURVE: xr.DataArray(curves.reshape(*shape, K), dims=(dims.CHAIN, dims.DRAW, dims.T)),
           S.COEFFICIENTS: xr.DataArray(coefs.reshape(*shape, J), dims=(dims.CHAIN, dims.DRAW, dims.BASIS))}
    for name, v in extra.items():
        out[name] = xr.DataArray(v.reshape(*shape, J), dims=(dims.CHAIN, dims.DRAW, dims.BASIS))
    return out
