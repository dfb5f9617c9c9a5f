"""The population target's free sampling scale κ drawn from its one-dimensional marginal posterior by quadrature.

With the population target (:func:`fdp_ppl.infer`'s default) and no public ``sampling_sd``, one curve's
coefficients have sd ``κ√λ_j`` with ``κ ~ HalfNormal(2 · spread)``, and the released coefficients are
``y_j = s_j θ_j + e_j + ξ_j`` with ``e_j ~ N(0, s_j² κ² λ_j / n)``. Where every prior hyperparameter is fixed,
κ is the only free parameter, and the marginal likelihood ``p(y | κ)`` (the coefficients integrated out) has a
closed form:

* a Gaussian prior diagonal in the release's basis (the release's own kernel) and a product noise law: a product
  of one-dimensional convolutions (:meth:`~fdp_ppl.noise.laws.NoiseLaw.marginal_logp`: Normal–Normal,
  Normal–Laplace);
* the ICLP (Laplace) prior, diagonal by construction: Laplace prior, Gaussian sampling error and Laplace noise
  (:func:`laplace_normal_laplace_logp`), or Normal noise (the two Gaussians add);
* Gaussian noise and any Gaussian prior: ``N(S A m, a² S P S + diag(b² + κ² d))``, evaluated at every κ in
  ``O(J)`` after one symmetric eigendecomposition of ``diag(d)^{-½} (a² S P S + diag b²) diag(d)^{-½}``.

:class:`ScaleQuadrature` evaluates ``log p(log κ | y)`` on a grid of ``log κ`` (:data:`NODES` nodes over the
range where it lies within :data:`DROP` nats of its maximum, found by a coarse scan that widens until both ends
are that far below; a quarter of the nodes uniform over that range, the rest at quantiles of the coarse scan's
rule, so that they are dense where the mass is), interpolates it linearly between nodes and draws ``log κ`` from that piecewise-exponential
density exactly (a cell by its mass, then its inverse CDF). The one approximation is the interpolation; its size
is measured on every call as the total-variation distance between the rule on all nodes and on every other node
(:attr:`ScaleQuadrature.tv_half`; the interpolation error is O(h²), so the rule used is about four times closer
still), and the mass left outside the range is below ``e^{-DROP}`` times the range's width.
Given each κ, the coefficients and the curve are drawn exactly (:mod:`fdp_ppl.inference.conditional`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._numba import HAVE_NUMBA, njit

#: nodes of the fine grid on log κ (a quarter uniform over the range, the rest at quantiles of the coarse rule)
NODES = 513
#: the grid spans the log κ where the log posterior is within this many nats of its maximum
DROP = 45.0
#: nodes of the coarse scan that finds that range
_COARSE = 241
#: sub-cells of each cell on which :meth:`ScaleQuadrature.loo` integrates its spline-interpolated densities
_REFINE = 8
#: coefficients on which :meth:`ScaleQuadrature.loo` estimates its error
_LOO_CHECKED = 16
#: error estimate (nats) below which :meth:`ScaleQuadrature.loo` stops refining
_LOO_TOL = 1e-5
#: nodes × coefficients above which :meth:`ScaleQuadrature.loo` stops at every other node
_LOO_BUDGET = 100_000


def _cell_masses(x, logp):
    """Log-mass of each cell of the piecewise log-linear density through ``(x, logp)`` (unnormalised); ``logp``
    (G,) or (G, J): one density per column."""
    logp = np.asarray(logp, dtype=float)
    h = np.diff(x).reshape((-1,) + (1,) * (logp.ndim - 1))
    d = np.diff(logp, axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        factor = np.where(np.abs(d) < 1e-10, 1.0 + d / 2, np.expm1(d) / d)   # ∫₀¹ e^{d t} dt
    return logp[:-1] + np.log(h) + np.log(factor)


def _spline_loo(x, logp) -> np.ndarray:
    """``log ∫ e^{logp[:, 0]} − log ∫ e^{logp[:, k]}`` for k ≥ 1 (K − 1,): the columns of ``logp`` (G, K)
    interpolated by cubic splines in ``x`` (G,) and integrated by the log-linear rule on :data:`_REFINE`
    sub-cells a cell."""
    from scipy.interpolate import CubicSpline

    z = np.concatenate([x[:-1, None] + np.diff(x)[:, None] * (np.arange(_REFINE) / _REFINE), x[-1:, None]],
                       axis=None)   # every cell cut into _REFINE sub-cells
    spline = CubicSpline(x, logp, axis=0)
    if HAVE_NUMBA:   # one compiled pass: the spline's values at the sub-cells (scipy's arithmetic) integrated as
        # they are made, two transcendentals a sub-cell where the numpy rule takes four
        out = _spline_log_integrals(z, np.asarray(x, dtype=float), np.ascontiguousarray(spline.c, dtype=float))
        return out[0] - out[1:]
    v = spline(z)
    return _logsumexp0(_cell_masses(z, v[:, :1]))[0] - _logsumexp0(_cell_masses(z, v[:, 1:]))


@njit(cache=True, nogil=True, inline="always")
def _cubic(c, i, j, s):  # pragma: no cover - compiled
    """The cubic piece ``i`` of column ``j`` at ``s`` from its left node, as scipy's ``PPoly`` evaluates it (powers
    of ``s`` by repeated products, the terms added from the constant up): the same value."""
    return ((c[3, i, j] + c[2, i, j] * s) + c[1, i, j] * (s * s)) + c[0, i, j] * (s * s * s)


@njit(cache=True, nogil=True)
def _spline_log_integrals(z, x, c):  # pragma: no cover - compiled
    """``log ∫ e^{v_k}`` (K,) of each column ``v_k`` of the cubic spline of coefficients ``c`` (4, G − 1, K) on the
    nodes ``x`` (G,), log-linear between the sub-cell nodes ``z`` (Z,) of :func:`_spline_loo` (``_REFINE`` a cell,
    then ``x[-1]``): the rule of :func:`_cell_masses` and :func:`_logsumexp0` (``∫_cell = h e^{v_a} (e^d − 1)/d``,
    ``d = v_b − v_a``) with the column's maximum node value taken out, written ``h e^{v_b − top} (1 − e^{−d})/d``
    for ``d > 0`` so that nothing overflows (equal to the numpy rule to rounding: a few ulp of each cell's mass).
    The spline's values are computed where they are used (twice: for the maxima, then for the sums), not stored."""
    n, k, last = z.size, c.shape[2], x.size - 2
    top = np.full(k, -np.inf)
    for r in range(n):
        i = min(r // _REFINE, last)
        s = z[r] - x[i]
        for j in range(k):
            top[j] = max(top[j], _cubic(c, i, j, s))
    total = np.zeros(k)
    prev = np.empty(k)
    cur = np.empty(k)
    for j in range(k):
        prev[j] = _cubic(c, 0, j, z[0] - x[0])
    for r in range(n - 1):
        h = z[r + 1] - z[r]
        i = min((r + 1) // _REFINE, last)
        s = z[r + 1] - x[i]
        for j in range(k):
            a = prev[j]
            b = _cubic(c, i, j, s)
            cur[j] = b
            d = b - a
            if abs(d) < 1e-10:
                total[j] += np.exp(a - top[j]) * h * (1.0 + d / 2)
            elif d > 0:
                total[j] += np.exp(b - top[j]) * h * (-np.expm1(-d) / d)
            else:
                total[j] += np.exp(a - top[j]) * h * (np.expm1(d) / d)
        prev, cur = cur, prev
    return top + np.log(total)


def _logsumexp0(a) -> np.ndarray:
    """``log Σ_i e^{a_ij}`` over axis 0 of a finite (G, K) array (scipy's ``logsumexp`` without its checks)."""
    top = a.max(axis=0)
    return top + np.log(np.sum(np.exp(a - top), axis=0))


def _tv_between(x, logp, x2, logp2, n=8193) -> float:
    """Total-variation distance between two normalised piecewise log-linear densities (on a common fine grid)."""
    z = np.linspace(x[0], x[-1], n)
    a = np.interp(z, x, logp)
    b = np.interp(z, x2, logp2)
    pa, pb = np.exp(a - a.max()), np.exp(b - b.max())
    w = np.full(n, z[1] - z[0])
    w[[0, -1]] /= 2
    pa, pb = pa / np.sum(w * pa), pb / np.sum(w * pb)
    return float(0.5 * np.sum(w * np.abs(pa - pb)))


@dataclass
class ScaleQuadrature:
    """The marginal posterior of ``x = log κ`` on a grid (see the module docstring).

    Parameters
    ----------
    log_density : callable
        ``x (G,) -> (G,)``: the unnormalised log posterior density of ``x = log κ`` (prior, Jacobian ``+x`` and
        marginal likelihood), vectorised over nodes.
    centre : float
        Where the scan starts (the log of the prior's scale).
    nodes : int
        Nodes of the fine grid (default :data:`NODES`).
    loo_terms : callable, optional
        ``x (G,) -> (G, J)``: ``log p(y_j | y_{-j}, κ = e^x)`` for every released coefficient (for independent
        coefficients ``log p(y_j | κ)``), for :meth:`loo`.

    Attributes
    ----------
    x, logp : ndarray (nodes,)
        The nodes and the log density at them.
    tv_half : float
        Total-variation distance between the rule on all nodes and on every other node.
    drop : float
        How far (nats) the log density at both ends of the range lies below its maximum (at least :data:`DROP`).
    """

    log_density: Callable
    centre: float
    nodes: int = NODES
    loo_terms: Callable | None = None

    def __post_init__(self):
        lo, hi = self.centre - 40.0, self.centre + 6.0
        for _ in range(20):   # widen until both ends are DROP nats below the maximum
            xc = np.linspace(lo, hi, _COARSE)
            lc = np.asarray(self.log_density(xc), dtype=float)
            if not np.any(np.isfinite(lc)):
                raise ValueError("the marginal posterior of the sampling scale is not finite anywhere")
            lc = np.where(np.isfinite(lc), lc, -np.inf)
            top = lc.max()
            if lc[0] > top - DROP:
                lo -= hi - lo
            elif lc[-1] > top - DROP:
                hi += hi - lo
            else:
                break
        else:
            raise ValueError("could not bracket the marginal posterior of the sampling scale")
        keep = np.nonzero(lc > top - DROP)[0]
        i0, i1 = max(keep[0] - 1, 0), min(keep[-1] + 1, _COARSE - 1)
        # nodes: a quarter uniform over the range, the rest at quantiles of the coarse rule (dense where the mass is)
        xs, ls = xc[i0:i1 + 1], lc[i0:i1 + 1]
        cum = np.concatenate([[0.0], np.cumsum(np.exp(_cell_masses(xs, ls) - top))])
        q = np.interp(np.linspace(0.0, cum[-1], self.nodes - self.nodes // 4), cum, xs)
        self.x = np.unique(np.concatenate([np.linspace(xs[0], xs[-1], self.nodes // 4), q]))
        self.logp = np.asarray(self.log_density(self.x), dtype=float)
        if not np.all(np.isfinite(self.logp)):
            raise ValueError("the marginal posterior of the sampling scale is not finite on its range")
        self.drop = float(self.logp.max() - max(self.logp[0], self.logp[-1]))
        self._logmass = _cell_masses(self.x, self.logp)
        self.tv_half = _tv_between(self.x, self.logp, self.x[::2], self.logp[::2])

    def draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent draws of κ (not log κ), shape (n,)."""
        w = np.exp(self._logmass - self._logmass.max())
        cum = np.cumsum(w)
        cell = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), w.size - 1)
        h = self.x[cell + 1] - self.x[cell]
        d = (self.logp[cell + 1] - self.logp[cell])
        u = rng.random(n)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            frac = np.where(np.abs(d) < 1e-10, u, np.log1p(u * np.expm1(d)) / d)   # inverse CDF of e^{d t} on [0, 1]
        return np.exp(self.x[cell] + np.clip(frac, 0.0, 1.0) * h)

    def loo(self) -> np.ndarray:
        """Exact leave-one-out log predictive densities ``log p(y_j | y_{-j})`` (J,), κ integrated out by the
        same rule as the draws.

        Since ``p(y) = p(y_{-j}) p(y_j | y_{-j})`` and ``p(y | κ) = p(y_{-j} | κ) p(y_j | y_{-j}, κ)``,
        ``log p(y_j | y_{-j}) = log ∫ p(x) p(y | x) dx − log ∫ p(x) p(y | x) / p(y_j | y_{-j}, x) dx``: two
        one-dimensional integrals per coefficient on the nodes (the leave-one-out form of a marginal likelihood
        integrated over a hyperparameter; Vehtari, Gelman & Gabry 2017, eq. 1, with the hyperparameter integrated
        by quadrature instead of importance sampling, so there is no Pareto k̂): the log densities interpolated
        between nodes by cubic splines (error O(h⁴), where the draws' piecewise-linear rule has O(h²)) and
        integrated on :data:`_REFINE` sub-cells a cell, on every fourth node, every other node or all of them: the
        first whose :attr:`loo_error` is below :data:`_LOO_TOL` (all nodes only where nodes × J is at most
        :data:`_LOO_BUDGET`: at J = 800 they cost 7 s under load for an error estimate of 1e-5 a coefficient). :attr:`loo_error` is the largest change when
        every other node of those is dropped (a bound on the error of the rule used, which is about 16 times
        smaller), checked on the :data:`_LOO_CHECKED` coefficients whose term varies most over κ's posterior
        mass. The range is the full
        posterior's; :attr:`loo_drop` is how far (nats) the leave-one-out densities lie below their maxima at its
        ends.

        Raises
        ------
        ValueError
            No ``loo_terms`` were given.
        """
        if self.loo_terms is None:
            raise ValueError("ScaleQuadrature.loo needs loo_terms")
        x, lp, idx, ell = self.x, self.logp, None, None
        before = None   # the checked columns' rule on the previous (coarser) nodes: (nodes, values)
        for stride in (4, 2, 1):   # every stride-th node, finer until the estimated error is below _LOO_TOL
            idx = np.unique(np.append(np.arange(0, x.size, stride), x.size - 1))
            ell = np.asarray(self.loo_terms(x[idx]), dtype=float)
            if stride == 4:   # the error is checked on the coefficients whose term varies most over κ's mass
                mass = lp[idx] > lp.max() - DROP / 2
                worst = np.argsort(np.ptp(ell[mass], axis=0))[-_LOO_CHECKED:]
            sub = np.column_stack([lp[idx], lp[idx, None] - ell[:, worst]])   # the checked columns only
            fine = _spline_loo(x[idx], sub)
            # every other node of these is the previous stride's nodes (the same values): its rule is not redone
            coarse = before[1] if before is not None and np.array_equal(before[0], idx[::2]) else \
                _spline_loo(x[idx][::2], sub[::2])
            before = idx, fine
            self.loo_error = float(np.max(np.abs(fine - coarse)))
            if self.loo_error <= _LOO_TOL or (stride == 2 and x.size * ell.shape[1] > _LOO_BUDGET):
                break
        rest = lp[idx, None] - ell   # every column, by the rule chosen (each column's integral is its own)
        value = _spline_loo(x[idx], np.column_stack([lp[idx], rest]))
        self.loo_drop = float(np.min(rest.max(axis=0) - np.maximum(rest[0], rest[-1])))
        return value

    def mean(self, f=np.exp) -> float:
        """Posterior mean of ``f(x)`` by the same rule (trapezoid on the nodes; for tests)."""
        p = np.exp(self.logp - self.logp.max())
        h = np.diff(self.x)
        w = np.concatenate([h, [0.0]]) / 2 + np.concatenate([[0.0], h]) / 2
        return float(np.sum(w * p * f(self.x)) / np.sum(w * p))


class NodeTerms:
    """``loo_terms`` of :class:`ScaleQuadrature` remembered per node: called at nodes it has seen, it returns the
    rows it computed then (the fine grid's pointwise terms, whose sums are its log density, serve
    :meth:`ScaleQuadrature.loo` without evaluating them again).

    Parameters
    ----------
    terms : callable
        ``x (G,) -> (G, J)``.
    """

    def __init__(self, terms: Callable):
        self.terms, self._rows = terms, {}

    def __call__(self, x) -> np.ndarray:
        keys = np.asarray(x, dtype=float).ravel().tolist()
        new = [k for k in dict.fromkeys(keys) if k not in self._rows]
        if new:
            self._rows.update(zip(new, np.asarray(self.terms(np.asarray(new)), dtype=float)))
        return np.stack([self._rows[k] for k in keys]) if keys else np.asarray(self.terms(np.asarray(x, float)))


def half_normal_log_density(x, sigma):
    """``log HalfNormal(e^x; σ) + x`` (the Jacobian of κ = e^x), up to a constant."""
    return x - np.exp(2 * x) / (2 * sigma * sigma)


def diagonal_log_marginal(law, y, b, prior_law, centre, prior_sd, sampling_base, *, pointwise=False):
    """``x ↦ Σ_j log p(y_j | κ = e^x)`` (``pointwise``: the terms, (G, J)) for a prior diagonal in the release's basis: ``s_j θ_j + e_j`` has the
    prior law with centre ``centre`` (J,) and variance ``prior_sd² + e^{2x} sampling_base²`` (Normal prior), or,
    for a Laplace prior of scale ``prior_sd``, the Laplace prior plus Gaussian sampling error of sd
    ``e^x sampling_base`` (Normal noise: the two Gaussians add; Laplace noise:
    :func:`laplace_normal_laplace_logp`)."""
    from ..noise.laws import Laplace, Normal

    def f(x):
        k = np.exp(np.asarray(x, dtype=float))[:, None]
        g2 = (k * sampling_base) ** 2
        if isinstance(prior_law, Normal):
            return law.marginal_logp(np.broadcast_to(y, g2.shape), np.broadcast_to(b, g2.shape), Normal(),
                                     np.broadcast_to(centre, g2.shape), np.sqrt(prior_sd**2 + g2))
        if isinstance(prior_law, Laplace) and isinstance(law, Normal):
            return law.marginal_logp(np.broadcast_to(y, g2.shape), np.sqrt(b**2 + g2), Laplace(),
                                     np.broadcast_to(centre, g2.shape), np.broadcast_to(prior_sd, g2.shape))
        if isinstance(prior_law, Laplace) and isinstance(law, Laplace):
            return laplace_normal_laplace_logp(y - centre, prior_sd, np.sqrt(g2), b)
        raise NotImplementedError(f"no closed-form marginal for a {prior_law.name} prior with {law.name} noise "
                                  "and Gaussian sampling error")
    return f if pointwise else (lambda x: np.sum(f(x), axis=1))


#: relative gap below which the two Laplace scales of :func:`laplace_normal_laplace_logp` are pulled apart
_SCALE_GAP = 1e-5


def laplace_normal_laplace_logp(y, c, g, b, *, xp=None):
    """Log-density at ``y`` of ``U + e + ξ`` with ``U ~ Laplace(0, c)``, ``e ~ N(0, g²)``, ``ξ ~ Laplace(0, b)``
    independent (numpy, broadcast): a Laplace (ICLP) prior, the Gaussian sampling error of the mean and Laplace
    noise. Since ``1/((1 + c²ω²)(1 + b²ω²)) = (c²/(1 + c²ω²) − b²/(1 + b²ω²))/(c² − b²)``, it is
    ``(c² NL(y; g, c) − b² NL(y; g, b))/(c² − b²)`` with ``NL`` the Normal–Laplace density
    (:meth:`~fdp_ppl.noise.laws.Laplace.convolved_logp`), computed in log space from the larger scale. Where the
    two scales are within a relative :data:`_SCALE_GAP` the smaller is moved to that gap (a relative change of the
    density of at most about that size; the cancellation then costs about ``1e-11`` relative). ``xp``: the
    PyTensor namespace (:func:`fdp_ppl._backend.backend`) for the same formula in a PyMC model; None: numpy."""
    from ..noise.laws import Laplace

    if xp is not None and xp.name == "pt":   # the NUTS model of free ICLP hyperparameters (infer.build_model)
        hi = xp.maximum(c, b)
        lo = xp.minimum(xp.minimum(c, b), hi * (1 - _SCALE_GAP))
        l_hi, l_lo = Laplace().convolved_logp(y, g, hi, xp=xp), Laplace().convolved_logp(y, g, lo, xp=xp)
        ratio = xp.minimum((lo / hi) ** 2 * xp.exp(l_lo - l_hi), 1 - 1e-16)
        return 2 * xp.log(hi) + l_hi + xp.log1p(-ratio) - xp.log(hi**2 - lo**2)
    y, c, g, b = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(y, c, g, b))
    hi, lo = np.maximum(c, b), np.minimum(c, b)
    lo = np.minimum(lo, hi * (1 - _SCALE_GAP))
    L = Laplace()
    shape = y.shape
    f = (lambda a: a.reshape(-1, 1))
    l_hi = L.convolved_logp(f(y), f(g), f(hi)).reshape(shape)
    l_lo = L.convolved_logp(f(y), f(g), f(lo)).reshape(shape)
    ratio = np.minimum((lo / hi) ** 2 * np.exp(l_lo - l_hi), 1 - 1e-16)
    return 2 * np.log(hi) + l_hi + np.log1p(-ratio) - np.log(hi**2 - lo**2)


def gaussian_log_marginal(y, mean, cov, noise_var, sampling_base, *, loo=False):
    """``x ↦ log N(y; mean, cov + diag(noise_var + e^{2x} sampling_base²))`` at many x in ``O(J)`` each, after one
    eigendecomposition: with ``d = sampling_base²`` and ``D^{-½}(cov + diag noise_var)D^{-½} = U diag(μ) Uᵀ``, the
    covariance is ``D^{½} U (diag μ + κ²) Uᵀ D^{½}``.

    With ``loo=True`` it returns the pair ``(f, terms)``, ``terms: x ↦ log p(y_j | y_{-j}, κ = e^x)`` (G, J) in
    ``O(J²)`` per node from the same eigendecomposition: the precision is ``P = D^{-½} U (diag μ + κ²)⁻¹ Uᵀ
    D^{-½}`` and ``y_j | y_{-j} ~ N(y_j − (P(y − mean))_j / P_jj, 1/P_jj)`` (Rasmussen & Williams 2006, eq. 5.12)."""
    d = np.asarray(sampling_base, dtype=float) ** 2
    if not np.all(d > 0):
        raise ValueError("the sampling variance must be positive for every coefficient")
    r = 1 / np.sqrt(d)
    M = (cov + np.diag(noise_var)) * r[:, None] * r[None, :]
    mu, U = np.linalg.eigh((M + M.T) / 2)
    z = U.T @ (r * (y - mean))
    const = -0.5 * y.size * np.log(2 * np.pi) - 0.5 * np.sum(np.log(d))

    def f(x):
        k2 = np.exp(2 * np.asarray(x, dtype=float))[:, None]
        ev = mu[None, :] + k2
        return const - 0.5 * np.sum(np.log(ev), axis=1) - 0.5 * np.sum(z**2 / ev, axis=1)

    def terms(x):
        inv = 1.0 / (mu[None, :] + np.exp(2 * np.asarray(x, dtype=float))[:, None])     # (G, J) in U's basis
        p_jj = (inv @ (U**2).T) * r**2
        res = ((inv * z) @ U.T) * r
        return -0.5 * np.log(2 * np.pi) + 0.5 * np.log(p_jj) - 0.5 * res**2 / p_jj
    return (f, terms) if loo else f


__all__ = ["ScaleQuadrature", "NodeTerms", "NODES", "DROP", "half_normal_log_density", "diagonal_log_marginal",
           "gaussian_log_marginal", "laplace_normal_laplace_logp"]
