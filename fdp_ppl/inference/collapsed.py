"""A collapsed Gibbs sampler for a GP prior with free hyperparameters under Laplace noise (the default
``fp.infer(tree)`` on an ICLP, FRL or Bernstein release): no Hamiltonian dynamics, hence no divergences.

The model is the latent-scale mixture model of :func:`~fdp_ppl.inference.build_model` (``"mixture"``), unchanged:

* ``θ = m A1 + a A z``, ``z ~ GP(0, Matérn_ρ)`` (the coefficients of the curve in the release's basis);
* the population target adds the sampling error of the mean, ``y_j = s_j θ_j + s_j e_j + ξ_j`` with
  ``s_j e_j ~ N(0, g_j²)``, ``g_j = κ s_j √λ_j / √n``;
* the Laplace noise as its exact Normal scale mixture ``ξ_j | E_j ~ N(0, 2 b_j² E_j)``, ``E_j ~ Exp(1)``
  (Andrews & Mallows 1974);
* hyperpriors of :meth:`~fdp_ppl.inference.GPPrior.hyperparameters` (``ρ ~ LogNormal(log 0.2, 1)``,
  ``a ~ HalfNormal``, ``m ~ Normal``) and ``κ ~ HalfNormal(2 · spread)`` as in the PyMC model.

Given the latent scales ``E`` the release is Gaussian, ``y ~ N(m c, a² S P_ρ S + diag(g² + 2b²E))`` with
``c = S A 1`` and ``P_ρ = A K_ρ Aᵀ``, so each iteration is exact in three blocks (van Dyk & Park 2008,
"partially collapsed Gibbs"; every block a draw from a conditional of the same joint law):

1. ``ρ, a, κ | E, y`` with ``θ`` and ``m`` integrated out (``m`` Gaussian: a rank-one term in the covariance):
   one univariate slice update each on the log scale (Neal 2003, stepping out and shrinkage), one Cholesky
   factorisation per evaluation;
2. ``m | ρ, a, κ, E, y`` (Gaussian, exact), then the noise ``ξ | ρ, a, κ, m, E, y`` (Gaussian, exact, by
   Matheron's rule: one joint prior draw and one solve with the same factorisation);
3. ``E_j | ξ_j`` independently, a generalised inverse Gaussian
   (:meth:`~fdp_ppl.noise.laws.Laplace.mixing_conditional_draws`).

The coefficients and the curve are then drawn exactly given each draw (:mod:`fdp_ppl.inference.conditional`), as
for NUTS on the same model. Why not NUTS: on the README's default GP example NUTS on the ~J latent scales and
four hyperparameters had divergences at ``target_accept`` 0.95 in 3 of 20 replicates and took ~100 s a fit
(``benchmarks/bench_inference_defaults.py``); this sampler has no divergences to report and its cost per
iteration is a few ``J × J`` factorisations, so a leave-one-out refit (:func:`refit_terms`) costs seconds.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.lapack import dpotrf, dtrtrs

from .. import dims
from ..noise.laws import Laplace
from ..noise.laws.base import MIXING_VARIABLE

#: width (log scale) of the initial slice bracket, and the most steps it is stepped out by on each side
SLICE_WIDTH, SLICE_STEPS = 1.0, 8
LOG_RHO_LOC, LOG_RHO_SD = float(np.log(0.2)), 1.0   # GPPrior's LogNormal(log 0.2, 1) hyperprior of ρ


class CollapsedGPGibbs:
    """The sampler of the module docstring for one release (``keep`` selects the released coefficients it
    conditions on: all of them, or all but one for a leave-one-out refit).

    Parameters
    ----------
    meta : dict
        ``model._fdp_meta`` of :func:`~fdp_ppl.inference.build_model` (a GP prior, Laplace noise).
    keep : array of int, optional
        Indices of the released coefficients conditioned on (default all).
    """

    def __init__(self, meta, keep=None):
        prior, ctx, shrink = meta["prior"], meta["ctx"], np.asarray(meta["shrink"], dtype=float)
        if not isinstance(ctx["law"], Laplace):
            raise ValueError("the collapsed Gibbs sampler needs Laplace noise")
        J = ctx["y"].size
        keep = np.arange(J) if keep is None else np.asarray(keep)
        self.prior, self.t = prior, ctx["t"]
        SA = shrink[:, None] * np.asarray(ctx["A"], dtype=float)
        self.SA, self.y = SA[keep], np.asarray(ctx["y"], dtype=float)[keep]
        self.b = np.broadcast_to(np.asarray(ctx["scale"], dtype=float), (J,))[keep]
        self.c = self.SA.sum(axis=1)
        hint = ctx["hint"]
        self.amp_scale = prior.amplitude_scale if prior.amplitude_scale is not None else 2 * hint["spread"]
        self.mean_loc = prior.mean_loc if prior.mean_loc is not None else hint["level"]
        self.mean_scale = prior.mean_scale if prior.mean_scale is not None else 2 * hint["spread"]
        self.kappa_scale = 2 * hint["spread"]
        self.g2_fixed, self.base = np.zeros(keep.size), None
        if meta["target"] == "population":
            n = float(ctx["attrs"]["n"])
            if meta["sampling_sd"] is None:
                self.base = (shrink * np.asarray(meta["sampling_base"], dtype=float) / np.sqrt(n))[keep]
            else:
                sd = np.broadcast_to(np.asarray(meta["sampling_sd"], dtype=float), (J,))
                self.g2_fixed = ((shrink * sd) ** 2 / n)[keep]
        # the free log-scale coordinates, in update order
        self.free = [name for name, fixed in (("lengthscale", prior.lengthscale), ("amplitude", prior.amplitude),
                                              ("sampling_scale", 0.0 if self.base is None else None))
                     if fixed is None]
        self.mean_free = prior.mean is None
        self._mean_outer = self.mean_scale**2 * np.outer(self.c, self.c)
        self._cache = {}
        self.width = dict.fromkeys(self.free, SLICE_WIDTH)

    # ------------------------------------------------------------------ the collapsed density of ρ, a, κ given E
    def _kernel(self, rho):
        """``S P_ρ S`` for one length-scale, cached for the last few values (the slice on ρ tries several)."""
        if rho not in self._cache:
            if len(self._cache) > 4:
                self._cache.pop(next(iter(self._cache)))
            self._cache[rho] = self.SA @ self.prior.kernel_matrices(self.t, [rho])[0] @ self.SA.T
        return self._cache[rho]

    def _values(self, x):
        rho = float(np.exp(x["lengthscale"])) if "lengthscale" in x else float(self.prior.lengthscale)
        amp = float(np.exp(x["amplitude"])) if "amplitude" in x else float(self.prior.amplitude)
        g2 = self.g2_fixed if self.base is None else np.square(np.exp(x["sampling_scale"]) * self.base)
        return rho, amp, g2

    def _covariance(self, x, E):
        """``Σ₀ = a² S P_ρ S + diag(g² + 2b²E)`` (the release's covariance given ``m``) and the parts of it."""
        rho, amp, g2 = self._values(x)
        S0 = amp**2 * self._kernel(rho)
        S0.flat[::S0.shape[0] + 1] += g2 + 2 * self.b**2 * E
        return S0, amp, g2, rho

    def log_density(self, x, E) -> float:
        """``log p(y | ρ, a, κ, E) + log p(ρ, a, κ)`` in the log coordinates ``x`` (Jacobians included), ``θ`` and
        (when free) ``m`` integrated out, up to a constant (LAPACK directly: this runs ~20 times an iteration)."""
        S0 = self._covariance(x, E)[0]
        if self.mean_free:
            S0 += self._mean_outer
            r = self.y - self.mean_loc * self.c
        else:
            r = self.y - float(self.prior.mean) * self.c
        L, info = dpotrf(S0, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            return -np.inf
        z, info = dtrtrs(L, r, lower=1)
        out = -0.5 * float(z @ z) - float(np.sum(np.log(L.diagonal())))
        for name, v in x.items():   # log-scale hyperpriors with their Jacobians
            if name == "lengthscale":
                out += -0.5 * ((v - LOG_RHO_LOC) / LOG_RHO_SD) ** 2
            else:   # HalfNormal(σ) of exp(v): −e^{2v}/(2σ²) + v
                sigma = self.amp_scale if name == "amplitude" else self.kappa_scale
                out += -0.5 * np.exp(2 * v) / (sigma * sigma) + v
        return out

    def _slice(self, x, name, E, current, rng):
        """One univariate slice update of ``x[name]`` (:func:`slice_update`), bracket width ``self.width``."""
        names = list(x)
        vec, current = slice_update(lambda v: self.log_density(dict(zip(names, v)), E), [x[n] for n in names],
                                    names.index(name), current, self.width[name], rng)
        return dict(zip(names, vec)), current

    def step(self, x, m, E, rng):
        """One iteration: ``(ρ, a, κ) | E``, ``m | ·``, ``ξ | ·``, ``E | ξ``; returns the new ``(x, m, E)``."""
        current = self.log_density(x, E)
        for name in self.free:
            x, current = self._slice(x, name, E, current, rng)
        S0, amp, g2, rho = self._covariance(x, E)
        LK = np.linalg.cholesky(self.prior.kernel_matrices(self.t, [rho])[0])
        cf = cho_factor(S0, lower=True)
        if self.mean_free:   # m | ·: Normal prior, Gaussian likelihood in the direction c
            Sc = cho_solve(cf, self.c)
            prec = 1 / self.mean_scale**2 + float(self.c @ Sc)
            m = (self.mean_loc / self.mean_scale**2 + float(Sc @ self.y)) / prec + rng.standard_normal() / np.sqrt(prec)
        V = 2 * self.b**2 * E
        # ξ | y by Matheron's rule: a joint prior draw (h*, ξ*) corrected by the same factorisation
        xi_star = np.sqrt(V) * rng.standard_normal(V.size)
        h_star = amp * self.SA @ (LK @ rng.standard_normal(LK.shape[0])) + np.sqrt(g2) * rng.standard_normal(V.size)
        xi = xi_star + V * cho_solve(cf, self.y - m * self.c - h_star - xi_star)
        E = Laplace().mixing_conditional_draws(xi, self.b, rng)
        return x, m, E

    def _start(self, rng):
        """Over-dispersed starting values around the hyperpriors' centres (one chain)."""
        x = {}
        for name in self.free:
            centre = {"lengthscale": LOG_RHO_LOC, "amplitude": np.log(self.amp_scale / 2),
                      "sampling_scale": np.log(self.kappa_scale / 2)}[name]
            x[name] = centre + 0.5 * rng.standard_normal()
        m = self.mean_loc + 0.5 * self.mean_scale * rng.standard_normal() if self.mean_free else float(self.prior.mean)
        return x, m, rng.exponential(size=self.y.size)

    def run(self, draws: int, tune: int, chains: int, rng, start=None) -> dict[str, np.ndarray]:
        """``draws`` iterations per chain after ``tune`` discarded ones: arrays (chains, draws[, J]) named as the
        PyMC model's variables (``lengthscale``, ``amplitude``, ``mean_level``, ``sampling_scale``,
        ``noise_mixing``; the free ones). ``start``: one ``(x, m, E)`` per chain (default: over-dispersed around
        the hyperpriors' centres)."""
        names = self.free + (["mean_level"] if self.mean_free else [])
        out = {name: np.empty((chains, draws)) for name in names}
        out[MIXING_VARIABLE] = np.empty((chains, draws, self.y.size))
        for ch in range(chains):
            crng = np.random.default_rng(rng.integers(2**63))
            x, m, E = self._start(crng) if start is None else start[ch]
            self.width = dict.fromkeys(self.free, SLICE_WIDTH)
            seen = []
            for i in range(tune + draws):
                x, m, E = self.step(x, m, E, crng)
                if i < tune:   # the bracket width from the second quarter of tuning (fixed after: Neal 2003, §4.1)
                    seen.append([x[name] for name in self.free])
                    if i == tune // 2 and tune >= 40:
                        sd = np.std(np.asarray(seen)[tune // 4:], axis=0)
                        self.width = {name: float(np.clip(2.5 * v, 0.05, 3.0)) for name, v in zip(self.free, sd)}
                if i >= tune:
                    k = i - tune
                    for name in self.free:
                        out[name][ch, k] = np.exp(x[name])
                    if self.mean_free:
                        out["mean_level"][ch, k] = m
                    out[MIXING_VARIABLE][ch, k] = E
        return out


def slice_update(logf, x, k: int, current: float, width: float, rng):
    """One univariate slice update of coordinate ``k`` of ``x`` (a list) under the log-density ``logf`` (Neal 2003,
    Fig. 3 and 5: stepping out by ``width`` at most :data:`SLICE_STEPS` times each side, then shrinkage); returns the
    new ``(x, logf(x))``. ``current`` is ``logf(x)``.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_ppl.inference.collapsed import slice_update
    >>> x, f = slice_update(lambda v: -0.5 * v[0] ** 2, [0.0], 0, 0.0, 1.0, np.random.default_rng(0))
    >>> len(x), bool(f == -0.5 * x[0] ** 2)
    (1, True)
    """
    x0 = x[k]

    def at(v):
        return logf(x[:k] + [v] + x[k + 1:])

    level = current + np.log(rng.uniform())
    lo = x0 - width * rng.uniform()
    hi = lo + width
    for _ in range(SLICE_STEPS):
        if at(lo) <= level:
            break
        lo -= width
    for _ in range(SLICE_STEPS):
        if at(hi) <= level:
            break
        hi += width
    while hi - lo > 1e-12:
        v = rng.uniform(lo, hi)
        f = at(v)
        if f > level:
            return x[:k] + [v] + x[k + 1:], f
        if v < x0:
            lo = v
        else:
            hi = v
    return x, current


def _dataset(values: dict, keep=None, J=None) -> xr.Dataset:
    """The sampler's arrays as a posterior Dataset; with ``keep`` the latent scales are padded to all ``J``
    coefficients with 1 (a left-out coefficient's scale is integrated out by the terms that read them)."""
    data = {}
    for name, v in values.items():
        if v.ndim == 3:
            if keep is not None:
                full = np.ones(v.shape[:2] + (J,))
                full[..., keep] = v
                v = full
            data[name] = ((dims.CHAIN, dims.DRAW, dims.BASIS), v)
        else:
            data[name] = ((dims.CHAIN, dims.DRAW), v)
    nc, nd = next(iter(values.values())).shape[:2]
    return xr.Dataset(data, coords={dims.CHAIN: np.arange(nc), dims.DRAW: np.arange(nd)})


def sample_collapsed(model, draws: int, tune: int, chains: int, rng) -> xr.Dataset:
    """Posterior draws of the hyperparameters and latent noise scales of ``model`` (the ``"mixture"`` model of
    :func:`~fdp_ppl.inference.build_model`, GP prior, Laplace noise) by :class:`CollapsedGPGibbs`."""
    return _dataset(CollapsedGPGibbs(model._fdp_meta).run(draws, tune, chains, rng))


#: tuning iterations of a leave-one-out refit started from the full posterior's last draws (at most ``tune``)
REFIT_TUNE = 200


def refit_terms(model, j: int, draws: int, tune: int, chains: int, rng, post: xr.Dataset | None = None) -> np.ndarray:
    """``log p(y_j | y_{-j}, ρ, a, m, κ, E_{-j})`` (chains · draws,) over draws of the posterior given ``y_{-j}``
    (:class:`CollapsedGPGibbs` run without ``y_j``): their log-mean-exp is the exact leave-one-out density
    ``log p(y_j | y_{-j})`` up to Monte Carlo error (Vehtari, Gelman & Gabry 2017, §2.1). Given the full
    posterior ``post``, each chain starts from its last draw (close to the leave-one-out posterior) and tunes
    :data:`REFIT_TUNE` iterations (the chain's stationary law is the same whatever its start)."""
    from .comparison import _gp_dense_loo_terms

    meta = model._fdp_meta
    J = meta["ctx"]["y"].size
    keep = np.delete(np.arange(J), j)
    sampler = CollapsedGPGibbs(meta, keep)
    start = None
    if post is not None and post.sizes[dims.CHAIN] == chains:
        last = post.isel({dims.DRAW: -1})
        start = [({name: float(np.log(last[name].values[c])) for name in sampler.free},
                  float(last["mean_level"].values[c]) if sampler.mean_free else float(sampler.prior.mean),
                  np.asarray(last[MIXING_VARIABLE].values[c])[keep]) for c in range(chains)]
        tune = min(tune, REFIT_TUNE)
    post = _dataset(sampler.run(draws, tune, chains, rng, start), keep, J)
    return _gp_dense_loo_terms(meta, post)[..., j]


__all__ = ["CollapsedGPGibbs", "sample_collapsed", "refit_terms", "slice_update", "REFIT_TUNE", "SLICE_WIDTH",
           "SLICE_STEPS"]
