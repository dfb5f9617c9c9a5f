"""Independent noise per coefficient: Laplace (ε-DP mechanisms) and Normal (Gaussian mechanisms)."""

from __future__ import annotations

import sys

import numpy as np

from ... import dims as D
from ..._backend import NP
from .base import BLOCK, MIXING_VARIABLE, NoiseLaw, check_coefficients, check_scale, check_scale_graph




#: calls of the Normal–Laplace evaluations in this process (the compiled kernels load from the second on)
_CALLS = [0]


def _kernels():
    """The compiled Normal–Laplace kernels (:mod:`._normal_laplace`) where they pay, else None (the numpy path).

    Loading Numba and the cached kernels costs a process about a second, more than one call of a small posterior
    saves, so a process's first call takes the numpy path unless Numba is already loaded, and every later call the
    kernels (as the mean's clipping pass does, :mod:`fdp_ppl.summaries.curves`). The two paths do the same
    arithmetic in the same order on the same uniforms (equal to a few units in the last place); which one runs
    depends on the process, never on the data.
    """
    _CALLS[0] += 1
    if _CALLS[0] == 1 and "numba" not in sys.modules:
        return None
    from . import _normal_laplace

    return _normal_laplace if _normal_laplace.HAVE_KERNELS else None


def _by_blocks(fn, *arrays):
    """``fn(*arrays)`` for an elementwise ``fn``, evaluated over blocks of the broadcast shape's leading axis (each
    about :data:`BLOCK` elements) into one array; arrays without that axis are passed whole to every block."""
    arrays = [np.asarray(a, dtype=float) for a in arrays]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    size = int(np.prod(shape))
    if len(shape) == 0 or shape[0] < 2 or size <= 2 * BLOCK:
        return fn(*arrays)
    step = max(1, BLOCK // max(1, size // shape[0]))

    def part(a, lo):
        return a[lo:lo + step] if a.ndim == len(shape) and a.shape[0] == shape[0] else a

    out = None
    for lo in range(0, shape[0], step):   # each block's values into one array (no concatenation pass)
        block = fn(*(part(a, lo) for a in arrays))
        if out is None:
            out = np.empty((shape[0],) + block.shape[1:], dtype=block.dtype)
        out[lo:lo + step] = block
    return out


def _shared_first_row(*arrays):
    """The first rows ``a[:1]`` of arrays of one shape that repeat their first row along the leading axis as
    stride-0 views (what ``np.broadcast_to``/``np.broadcast_arrays`` make of parameters shared by every row), or
    None where any array's rows are stored apart (checked by strides, not by value: no pass over the arrays)."""
    if arrays[0].ndim < 2 or arrays[0].shape[0] < 2 or any(a.strides[0] != 0 for a in arrays):
        return None
    return [a[:1] for a in arrays]


def _pieces(u1, u2, w, e1, e2, shift, m, p):
    """numpy: draws of the Normal–Laplace posterior (:meth:`Laplace.centre_posterior_draws`) from its terms, the
    piece ``u1 < w`` (below ``y``) or above, each by its inverse CDF at ``u2`` (the compiled ``posterior_pieces``)."""
    from scipy.special import ndtri_exp

    lower = u1 < w                                                      # the piece c < y
    # N(0, 1) truncated to (α, ∞), α = √2 z: log Φ(−α) = log erfc(z) − log 2 (the halves' erfcx)
    z = -ndtri_exp(np.log(u2) + np.where(lower, e1, e2) - np.log(2.0))
    return np.where(lower, m + shift - p * z, m - shift + p * z)


def _conjugate(y, m, g, s, z):
    """numpy: a draw of ``c`` given ``y ~ N(c, s²)`` under a ``N(m, g²)`` prior at the standard normal ``z``:
    ``P = 1/s² + 1/g²``, ``(y/s² + m/g²)/P + z/√P`` (the compiled ``normal_posterior_draws``)."""
    prec = 1.0 / s**2 + 1.0 / g**2
    return (y / s**2 + m / g**2) / prec + z / np.sqrt(prec)


def _j(mu, scale):
    import pytensor.tensor as pt

    return pt.shape(pt.as_tensor_variable(scale))[-1]


class _ProductLaw(NoiseLaw, abstract=True):
    """A law of independent coefficients: the population posterior step by step."""

    def population_posterior_draws(self, y, scale, centre, prior_sd, sampling_sd, rng):
        """:meth:`NoiseLaw.population_posterior_draws` one step at a time: ``v | y`` (:meth:`centre_posterior_draws`
        with a ``N(centre, prior_sd² + sampling_sd²)`` prior; a prior sd shared by every row as a stride-0 view stays
        one, so its terms are computed once), ``ξ = y − v``, ``θ | v`` (conjugate), ``E | ξ``."""
        y = np.asarray(y, dtype=float)
        prior_sd = np.asarray(prior_sd, dtype=float)
        total = prior_sd if sampling_sd is None else np.sqrt(prior_sd**2 + np.asarray(sampling_sd, dtype=float)**2)
        v = self.centre_posterior_draws(y, scale, Normal(), centre, total, rng)
        noise = y - v
        theta = v if sampling_sd is None else Normal().centre_posterior_draws(v, sampling_sd, Normal(), centre,
                                                                              prior_sd, rng)
        return theta, noise, self.mixing_conditional_draws(noise, scale, rng)


class Laplace(_ProductLaw):
    """Independent ``Laplace(0, b_j)`` noise, density ``exp(−|x|/b_j)/(2b_j)``
    (``scipy.stats.laplace(scale=b)``, ``pm.Laplace(mu, b)``); variance ``2b_j²``.

    Scale mixture: ``ξ_j | E_j ~ N(0, 2b_j² E_j)`` with ``E_j ~ Exp(1)``
    (Andrews & Mallows 1974; ``specs/iclp.md`` §4.3). Used by ICLP
    (Lin & Reimherr 2026, Theorem 8), FRL and Bernstein.
    """

    name = "laplace"
    product = True
    #: OpenDP samples it exactly on a lattice (:class:`fdp_ppl.noise.opendp.OpenDPSampler`)
    fp_safe = True
    source = "Laplace mechanism (Dwork et al. 2006); ICLP: Lin & Reimherr (2026), Theorem 8"

    def rv(self, mu, scale, n_draws):
        import pymc as pm

        return pm.Laplace.dist(mu=mu, b=scale, size=(n_draws, _j(mu, scale)))

    def pymc(self, name, mu, scale, **kwargs):
        import pymc as pm

        return pm.Laplace(name, mu=mu, b=scale, **kwargs)

    def logp(self, y, mu, scale, *, xp=NP, pointwise=False):
        """``Σ_j −log(2b_j) − |y_j − μ_j|/b_j`` (see :meth:`NoiseLaw.logp`)."""
        if xp is NP:
            y, mu, scale = check_coefficients(y, mu, scale=scale)
        z = y - mu
        out = -xp.log(2 * scale) - xp.abs(z) / scale
        out = out if pointwise else xp.sum(out, axis=-1)
        return out if xp is NP else check_scale_graph(out, scale)

    def privacy_loss(self, y, centre, centre_prime, scale):
        """``Σ_j (|y_j − c'_j| − |y_j − c_j|)/b_j``, computed term-wise (never as
        a difference of two large sums, ``specs/iclp.md`` pitfall 10)."""
        y, c, cp, s = check_coefficients(y, centre, centre_prime, scale=scale)
        return np.sum((np.abs(y - cp) - np.abs(y - c)) / s, axis=-1)

    def variance(self, scale):
        """``2b_j²``, shape like ``scale``."""
        return 2.0 * check_scale(scale) ** 2

    def mixing(self, n_components, dims=D.BASIS):
        import pymc as pm

        return 2.0 * pm.Exponential(MIXING_VARIABLE, 1.0, dims=dims, shape=None if dims else (n_components,))

    def mixing_draws(self, posterior, n_samples, n_components):
        e = posterior.get(MIXING_VARIABLE)
        if e is None:
            raise KeyError(f"the posterior has no {MIXING_VARIABLE!r} draws of the Laplace scale mixture")
        return 2.0 * np.asarray(e, dtype=float).reshape(n_samples, n_components)

    @staticmethod
    def _normal_terms(x, g, b, xp=NP, *, log_erfc=False):
        """The two halves of the Normal–Laplace convolution at ``x`` in log space:
        ``h_{1,2} = −x²/(2g²) + log erfcx(z_{1,2})`` with ``z_{1,2} = (g²/b ∓ x)/(g√2)``, and ``z₁, z₂``.
        ``½e^{h₁}`` is ``∫_{u<x} N(u; 0, g²) e^{−(x−u)/b} du`` and ``½e^{h₂}`` the integral over ``u > x``.

        Stable for any ``g/b``: where ``z < 0`` the two large terms cancel in closed form,
        ``−x²/(2g²) + z₁² = g²/(2b²) − x/b`` (``+ x/b`` for ``z₂``), so ``h = g²/(2b²) ∓ x/b + log erfc(z)``
        with ``erfc(z) = 2 − e^{−z²} erfcx(−z)`` in (1, 2]; where ``z >= 0``, ``log erfcx(z)`` is moderate.
        (Adding ``−x²/(2g²)`` to ``log erfcx(z)`` loses every digit when ``g ≪ b``.)

        numpy: one ``erfcx(|z|)`` per element and half; with ``log_erfc=True`` also ``log erfc(z₁)`` and
        ``log erfc(z₂)`` (``log 2Φ(−√2 z)``, what a truncated-normal draw needs) from the same values."""
        lift, width = g**2 / b, g * np.sqrt(2.0)   # shared by both halves (the same values, computed once)
        z1 = (lift - x) / width
        z2 = (lift + x) / width
        if xp is NP:   # the branches' terms shared by both halves
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # in the branch not taken
                shift, slope, quad = g**2 / (2 * b**2), x / b, -(x**2) / (2 * g**2)

        def half(z, sign):
            if xp is NP:   # numpy: erfcx(|z|) once; both branches' arithmetic is cheaper than masked gathers
                neg = z < 0
                w = NP.erfcx(np.abs(z))
                e = np.exp(-(z * z))
                e *= w
                np.subtract(2.0, e, out=e)                                   # erfc(z) for z < 0
                le = np.log(np.where(neg, e, w))                             # log erfc(z) or log erfcx(z)
                with np.errstate(over="ignore", invalid="ignore"):
                    out = le + np.where(neg, shift + sign * slope, quad)
                return out, (np.where(neg, le, le - z * z) if log_erfc else None)
            zn, zp = xp.minimum(z, 0.0), xp.maximum(z, 0.0)
            neg = g**2 / (2 * b**2) + sign * x / b + xp.log(2.0 - xp.exp(-(zn**2)) * xp.erfcx(-zn))
            pos = -(x**2) / (2 * g**2) + xp.log(xp.erfcx(zp))
            return xp.where(z < 0, neg, pos), None

        (h1, e1), (h2, e2) = half(z1, -1.0), half(z2, 1.0)
        return (h1, h2, z1, z2, e1, e2) if log_erfc else (h1, h2, z1, z2)

    def convolved_logp(self, x, g, scale, *, xp=NP):
        """Normal–Laplace: ``−log(4b) − x²/(2g²) + log[erfcx(z₁) + erfcx(z₂)]``,
        ``z_{1,2} = (g²/b ∓ x)/(g√2)`` (``specs/iclp.md`` §4.3), stable log-erfcx."""
        if xp is NP:
            x, g, scale = check_coefficients(x, g, scale=scale)
            nl = _kernels()
            if nl is not None:   # one compiled pass, the same arithmetic (to the last bit of exp/log)
                return nl.run(nl.convolved_logp, x, g, scale)
            return _by_blocks(lambda *a: self._convolved(*a, NP), x, g, scale)
        return self._convolved(x, g, scale, xp)

    def _convolved(self, x, g, scale, xp):
        h1, h2, _, _ = self._normal_terms(x, g, scale, xp)  # each includes −x²/(2g²), stably
        return -xp.log(4 * scale) + xp.logaddexp(h1, h2)

    @staticmethod
    def _laplace_pieces(x, c, b, xp=NP):
        """``log ∫ e^{−|u|/c − |x−u|/b} du`` split at ``u = 0`` and ``u = |x|``: the log-masses
        ``(M₁, M₂, M₃)`` of ``u < 0``, ``0 ≤ u ≤ |x|``, ``u > |x|`` (for ``|x|``; mirror for x < 0).

        ``M₁ = e^{−|x|/b}/r``, ``M₃ = e^{−|x|/c}/r`` with ``r = 1/c + 1/b``, and
        ``M₂ = e^{−|x|/max(b, c)} (1 − e^{−|x||κ|})/|κ|``, ``κ = 1/b − 1/c`` (→ ``|x| e^{−|x|/b}``
        as ``c → b``; ``|κ|`` is nudged by ``1e-12 r`` so that the formula has no 0/0)."""
        ax = xp.abs(x)
        r = 1.0 / c + 1.0 / b
        k = xp.abs(1.0 / b - 1.0 / c) + 1e-12 * r
        m1 = -ax / b - xp.log(r)
        m3 = -ax / c - xp.log(r)
        h = -xp.expm1(-ax * k) / k
        m2 = -ax / xp.maximum(b, c) + xp.log(xp.maximum(h, 1e-300))
        return m1, m2, m3

    def convolved_laplace_logp(self, x, c, scale, *, xp=NP):
        """Log-density of ``Laplace(0, c) + ξ_j`` at ``x`` (..., J): the Laplace–Laplace
        convolution ``(c e^{−|x|/c} − b e^{−|x|/b}) / (2(c² − b²))`` (``(b + |x|) e^{−|x|/b}/(4b²)``
        at ``c = b``), computed as ``log(M₁ + M₂ + M₃) − log(4bc)`` from :meth:`_laplace_pieces`,
        stable for ``c ≈ b`` and large ``|x|``.

        Raises
        ------
        InputError
            numpy: ``c`` or ``scale`` not finite and > 0, or shapes that do not match.
        """
        if xp is NP:
            x, c, scale = check_coefficients(x, check_scale(c), scale=scale)
        m1, m2, m3 = self._laplace_pieces(x, c, scale, xp)
        return xp.logaddexp(xp.logaddexp(m1, m2), m3) - xp.log(4 * c * scale)

    def marginal_logp(self, y, scale, prior, prior_mean, prior_scale, *, xp=NP):
        """``y = c + ξ``: Normal prior → :meth:`convolved_logp`; Laplace prior →
        :meth:`convolved_laplace_logp` (see :meth:`NoiseLaw.marginal_logp`)."""
        if isinstance(prior, Normal):
            return self.convolved_logp(y - prior_mean, prior_scale, scale, xp=xp)
        if isinstance(prior, Laplace):
            return self.convolved_laplace_logp(y - prior_mean, prior_scale, scale, xp=xp)
        return super().marginal_logp(y, scale, prior, prior_mean, prior_scale, xp=xp)

    def centre_posterior_draws(self, y, scale, prior, prior_mean, prior_scale, rng):
        """Exact draws of ``c`` given ``y ~ Laplace(c, b)`` (see :meth:`NoiseLaw.centre_posterior_draws`).

        * Normal prior ``N(m, g²)``: the posterior is a mixture of two truncated normals,
          ``N(m + g²/b, g²)`` on ``c < y`` and ``N(m − g²/b, g²)`` on ``c > y``, with weights the two
          halves of the Normal–Laplace convolution (:meth:`_normal_terms`); each piece is drawn by
          its inverse CDF in log space (``ndtri_exp(log U + log Φ(·))``, ``log Φ`` from the same
          ``erfcx`` values as the weights), exact to rounding in any tail. Where ``y``, the prior and the scale
          repeat one row along the leading axis as stride-0 views (``np.broadcast_to``: the same posterior for
          every draw), those terms are computed for that row once; the draws are the same bits.
        * Laplace prior ``Laplace(m, β)``: the posterior of ``u = c − m`` is piecewise exponential
          on ``(−∞, 0)``, ``[0, x]``, ``(x, ∞)`` (``x = y − m``) with the masses of
          :meth:`_laplace_pieces`; each piece is drawn by its closed-form inverse CDF.
        """
        y, m, p, b = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(y, prior_mean, prior_scale, scale))
        check_scale(b), check_scale(p)
        if isinstance(prior, Normal):
            def pieces(w, e1, e2, shift, m, p):
                return _pieces(rng.random(w.shape), rng.random(w.shape), w, e1, e2, shift, m, p)

            nl = _kernels()

            def terms(x, p, b):
                if nl is not None:
                    return nl.run(nl.posterior_terms, x, p, b, outputs=4)
                return self._posterior_terms(x, p, b)

            if nl is not None:   # compiled passes over the same uniforms (the same blocks, so the same stream)
                def pieces(w, e1, e2, shift, m, p):
                    u1 = rng.random(w.shape)
                    return nl.run(nl.posterior_pieces, u1, rng.random(w.shape), w, e1, e2, shift, m, p)

                def fused(x, m, p, b):
                    u1 = rng.random(x.shape)
                    return nl.run(nl.posterior_draws, u1, rng.random(x.shape), x, m, p, b)
            else:
                def fused(x, m, p, b):
                    return pieces(*terms(x, p, b), m, p)

            row = _shared_first_row(y, m, p, b)
            if row is not None:   # the same posterior in every row (a fixed prior): its terms once, then the draws
                w, e1, e2, shift = (np.broadcast_to(a, y.shape) for a in terms(row[0] - row[1], *row[2:]))
                return _by_blocks(pieces, w, e1, e2, shift, m, p)   # the same blocks, so the same random stream
            return _by_blocks(lambda y, m, p, b: fused(y - m, m, p, b), y, m, p, b)   # y − m a block at a time
        if isinstance(prior, Laplace):
            x = y - m
            m1, m2, m3 = self._laplace_pieces(x, p, b)
            logs = np.stack([m1, m2, m3])
            w = np.exp(logs - logs.max(axis=0))
            cum = np.cumsum(w, axis=0) / w.sum(axis=0)
            piece = (rng.random(x.shape)[None] > cum[:2]).sum(axis=0)       # 0, 1 or 2
            u = rng.random(x.shape)
            ax = np.abs(x)
            r = 1.0 / p + 1.0 / b
            e = -np.log1p(-u) / r                                            # Exp(r) for the outer pieces
            k = 1.0 / b - 1.0 / p                                            # density ∝ e^{κv} on [0, |x|]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                from_top = ax + np.log1p((1.0 - u) * np.expm1(-k * ax)) / k   # κ > 0
                from_bottom = np.log1p(u * np.expm1(k * ax)) / k             # κ < 0
            inner = np.where(np.abs(k) * ax < 1e-12, u * ax, np.where(k > 0, from_top, from_bottom))
            v = np.choose(piece, [-e, inner, ax + e])
            return m + np.where(x < 0, -v, v)
        return super().centre_posterior_draws(y, scale, prior, prior_mean, prior_scale, rng)

    def _posterior_terms(self, x, p, b):
        """numpy: the weight ``expit(h₁ − h₂)`` of the piece below ``y``, ``log erfc z₁₂`` and the shift ``g²/b`` of
        the posterior of a ``N(0, p²)`` centre at ``x`` (the compiled ``posterior_terms``)."""
        from scipy.special import expit

        t1, t2, _, _, e1, e2 = self._normal_terms(x, p, b, log_erfc=True)
        return expit(t1 - t2), e1, e2, p**2 / b

    def population_posterior_draws(self, y, scale, centre, prior_sd, sampling_sd, rng):
        """:meth:`NoiseLaw.population_posterior_draws` for Laplace noise: with a sampling error, every step of an
        element (``v | y``: two truncated normals, :meth:`centre_posterior_draws`; ``θ | v``: conjugate; ``E | ξ``:
        :meth:`mixing_conditional_draws`) in one pass over blocks of rows (about :data:`BLOCK` elements), the
        block's five random arrays drawn by numpy in a fixed order (uniform, uniform, normal, normal, uniform),
        compiled where the kernels load (:func:`~fdp_ppl.noise.laws._normal_laplace.population_draws`), numpy
        otherwise: the same arithmetic on the same stream, so the two paths agree to a few units in the last
        place. Without a sampling error (``sampling_sd`` None): one step at a time, as every product law.

        Examples
        --------
        >>> import numpy as np
        >>> theta, noise, mixing = Laplace().population_posterior_draws(
        ...     np.array([0.5, -1.0]), 1.0, 0.0, np.full((300, 2), 0.2), np.full((300, 2), 0.1),
        ...     np.random.default_rng(0))
        >>> theta.shape, bool(np.all(mixing > 0))
        ((300, 2), True)
        """
        if sampling_sd is None:
            return super().population_posterior_draws(y, scale, centre, prior_sd, sampling_sd, rng)
        from . import _normal_laplace

        arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (y, centre, prior_sd, sampling_sd,
                                                                             scale)))
        check_scale(arrays[2]), check_scale(arrays[3]), check_scale(arrays[4])
        (y, m, g, s, b), shape = _normal_laplace.as_rows(*arrays)
        rows, J = y.shape
        theta, xi, e = np.empty((rows, J)), np.empty((rows, J)), np.empty((rows, J))
        step = max(1, BLOCK // max(J, 1))
        buf = np.empty((5, min(step, rows), J))
        nl = _kernels()
        for lo in range(0, rows, step):
            hi = min(lo + step, rows)
            u1, u2, z, nu, w = (a[:hi - lo] for a in buf)
            rng.random(out=u1), rng.random(out=u2), rng.standard_normal(out=z), rng.standard_normal(out=nu)
            rng.random(out=w)
            Y, M, G, S, B = (np.ascontiguousarray(a[lo:hi]) for a in (y, m, g, s, b))
            if nl is not None:
                nl.population_draws(*(_normal_laplace._readonly(a) for a in (u1, u2, z, nu, w, Y, M, G, S, B)),
                                    theta[lo:hi], xi[lo:hi], e[lo:hi])
                continue
            P = np.sqrt(G * G + S * S)
            V = _pieces(u1, u2, *self._posterior_terms(Y - M, P, B), M, P)
            xi[lo:hi] = Y - V
            theta[lo:hi] = _conjugate(V, M, G, S, z)
            e[lo:hi] = _normal_laplace.mixing_scales(np.abs(xi[lo:hi]) / (2.0 * B), nu * nu, w)
        return theta.reshape(shape), xi.reshape(shape), e.reshape(shape)

    def mixing_conditional_draws(self, noise, scale, rng):
        """``E_j | ξ_j`` of the scale mixture ``ξ_j | E_j ~ N(0, 2b_j² E_j)``, ``E_j ~ Exp(1)``: a
        generalised inverse Gaussian ``GIG(½, 2, ξ²/(2b²))``, i.e. ``1/E ~ Wald(2b/|ξ|, 2)`` (``Gamma(½, 1)`` at
        ``ξ = 0``), drawn exactly from one standard normal and one uniform an element, each drawn whole by numpy
        (:func:`~fdp_ppl.noise.laws._normal_laplace.mixing_scales`: numpy's ``wald`` algorithm written without its
        cancellation, ``ξ = 0`` included; one compiled pass where the kernels load). Shape of ``noise``."""
        from . import _normal_laplace

        xi, b = np.broadcast_arrays(np.asarray(noise, dtype=float), check_scale(scale))
        nu = rng.standard_normal(xi.shape)
        np.square(nu, out=nu)
        u = rng.random(xi.shape)
        nl = _kernels()
        if nl is not None:
            return nl.run(nl.mixing_draws, xi, b, nu, u)
        return _normal_laplace.mixing_scales(np.abs(xi) / (2.0 * b), nu, u)

    def describe_scale(self):
        return "Laplace scale b_j of each coefficient's noise (variance 2 b_j^2)"


class Normal(_ProductLaw):
    """Independent ``N(0, s_j²)`` noise (``scipy.stats.norm(scale=s)``, ``pm.Normal(mu, sigma)``).

    The Gaussian mechanism in a Hilbert space (Mirshani et al. 2019,
    Theorems 3.2–3.3; Hall et al. 2013, Corollary 9): ``s_j = σ√λ_j``.
    """

    name = "normal"
    product = True
    #: OpenDP samples it exactly on a lattice (:class:`fdp_ppl.noise.opendp.OpenDPSampler`)
    fp_safe = True
    source = "Gaussian mechanism: Mirshani et al. (2019), Theorems 3.2-3.3; Hall et al. (2013), Corollary 9"

    def rv(self, mu, scale, n_draws):
        import pymc as pm

        return pm.Normal.dist(mu=mu, sigma=scale, size=(n_draws, _j(mu, scale)))

    def pymc(self, name, mu, scale, **kwargs):
        import pymc as pm

        return pm.Normal(name, mu=mu, sigma=scale, **kwargs)

    def logp(self, y, mu, scale, *, xp=NP, pointwise=False):
        """``Σ_j −½log(2π) − log s_j − (y_j − μ_j)²/(2s_j²)`` (see :meth:`NoiseLaw.logp`)."""
        if xp is NP:
            y, mu, scale = check_coefficients(y, mu, scale=scale)
        z = (y - mu) / scale
        out = -0.5 * np.log(2 * np.pi) - xp.log(scale) - 0.5 * z**2
        out = out if pointwise else xp.sum(out, axis=-1)
        return out if xp is NP else check_scale_graph(out, scale)

    def privacy_loss(self, y, centre, centre_prime, scale):
        """``Σ_j ((y_j − c'_j)² − (y_j − c_j)²)/(2s_j²)``, term-wise."""
        y, c, cp, s = check_coefficients(y, centre, centre_prime, scale=scale)
        return np.sum(((y - cp) ** 2 - (y - c) ** 2) / (2 * s**2), axis=-1)

    def variance(self, scale):
        """``s_j²``, shape like ``scale``."""
        return check_scale(scale) ** 2

    def mixing(self, n_components, dims=D.BASIS):
        return 1.0

    def mixing_draws(self, posterior, n_samples, n_components):
        return np.ones((n_samples, n_components))

    def convolved_logp(self, x, g, scale, *, xp=NP):
        """``N(0, g² + s²)`` at ``x``."""
        if xp is NP:
            x, g, scale = check_coefficients(x, g, scale=scale)
        v = g**2 + scale**2
        return -0.5 * xp.log(2 * np.pi * v) - x**2 / (2 * v)

    def marginal_logp(self, y, scale, prior, prior_mean, prior_scale, *, xp=NP):
        """``y = c + ξ``: Normal prior → ``N(m, g² + s²)`` (:meth:`convolved_logp`); Laplace prior →
        the Normal–Laplace convolution of :meth:`Laplace.convolved_logp` with the roles swapped."""
        if isinstance(prior, Normal):
            return self.convolved_logp(y - prior_mean, prior_scale, scale, xp=xp)
        if isinstance(prior, Laplace):
            return prior.convolved_logp(y - prior_mean, scale, prior_scale, xp=xp)
        return super().marginal_logp(y, scale, prior, prior_mean, prior_scale, xp=xp)

    def centre_posterior_draws(self, y, scale, prior, prior_mean, prior_scale, rng):
        """Exact draws of ``c`` given ``y ~ N(c, s²)`` (see :meth:`NoiseLaw.centre_posterior_draws`):
        Normal prior ``N(m, g²)``: conjugate ``N((y/s² + m/g²)/P, 1/P)``, ``P = 1/s² + 1/g²``;
        Laplace prior ``Laplace(m, β)``: ``p(c | y) ∝ N(c; y, s²) e^{−|m − c|/β}``, which is
        :meth:`Laplace.centre_posterior_draws` of an observation ``m`` with a ``N(y, s²)`` prior."""
        if isinstance(prior, Normal):
            y, m, g, s = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(y, prior_mean, prior_scale, scale))
            check_scale(s), check_scale(g)
            z = rng.standard_normal(y.shape)   # one call (the stream does not depend on the blocks below)

            nl = _kernels()
            if nl is not None:   # one compiled pass, the same arithmetic
                return nl.run(nl.normal_posterior_draws, y, m, g, s, z)

            return _by_blocks(_conjugate, y, m, g, s, z)
        if isinstance(prior, Laplace):
            return prior.centre_posterior_draws(prior_mean, prior_scale, Normal(), y, scale, rng)
        return super().centre_posterior_draws(y, scale, prior, prior_mean, prior_scale, rng)

    def mixing_conditional_draws(self, noise, scale, rng):
        """None: Normal noise has no mixing variable."""
        return None

    def describe_scale(self):
        return "standard deviation s_j of each coefficient's Normal noise"


__all__ = ["Laplace", "Normal"]
