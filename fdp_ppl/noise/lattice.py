"""Exact, floating-point-safe, pure ε-DP release of the ellipsoidal K-norm and multivariate t mechanisms on a
public lattice.

The pure elliptical K-norm mechanism releases ``x = c + scale ⊙ u`` with ``u`` of density ``∝ exp(−‖u‖₂)`` on
``R^J`` (whitened units, ``scale_j = σ √λ_j``, ``σ = Δ/ε``). Its float sampler reaches a centre-dependent set of
floats (Mironov 2012), and the dithered lattice of :mod:`fdp_ppl.noise.snapping` costs a δ, so it cannot serve a
pure mechanism. This module releases instead, with a public step ``h = 2^-LATTICE_BITS`` in whitened units,

``K = k̂ + Z``,  ``k̂_j = round(c_j / (scale_j h))`` (exact rational rounding of the given floats),
``Z ~ P_h``,  ``P_h(z) = exp(−h ‖z‖₂) / Z_h`` on ``ℤ^J``,

and publishes ``x_j = scale_j · h · K_j`` (a deterministic function of ``K``: post-processing).

Privacy (Theorem 1)
-------------------
Let ``u = c ⊘ scale`` and ``u' = c' ⊘ scale`` be the whitened centres of neighbouring data sets, with
``‖u − u'‖₂ <= a`` (``a = Δ/σ`` up to the float rounding of the public scales, covered by the factor
``1 + 2^-40`` of :func:`knorm_epsilon`). Then the release is ``ε'``-DP with ``ε' = a + h √J``.

*Proof.* The normaliser ``Z_h = Σ_z exp(−h‖z‖)`` does not depend on the centre (translation invariance of
``ℤ^J``), so for every ``k ∈ ℤ^J``:
``P(K = k | c) / P(K = k | c') = exp(h‖k − k̂'‖ − h‖k − k̂‖) <= exp(h ‖k̂ − k̂'‖)`` (triangle inequality), and
``h k̂_j = u_j + e_j`` with ``|e_j| <= h/2``, so ``h ‖k̂ − k̂'‖ <= ‖u − u'‖ + ‖e − e'‖ <= a + h √J``. Every
``k`` has positive probability under every centre (full support), and ``x`` is a function of ``K``. ∎

The generator (:class:`LatticeSampler`) raises σ so that ``ε'`` is within the mechanism's ε
(:meth:`LatticeSampler.calibrate_sigma`: ``σ' = Δ/(ε − h√J)``, relative growth ``h√J/ε``, 2.3·10⁻⁹ at J = 100,
ε = 1), so the release keeps its pure ε.

Exact sampler of ``P_h`` (Theorem 2)
------------------------------------
Rejection from a mixture of public components, each lattice point ``z`` assigned to exactly one component
``i*(z)`` by its squared norm ``N = ‖z‖² `` (an exact integer): Gaussian bins ``N ∈ [E_i, E_{i+1})``,
``i = 0..m−1``, and a tail ``N >= E_m``.

* Gaussian component ``i``: the discrete Gaussian ``q_i(z) = exp(−N/(2 s_i²)) / θ_i`` on ``ℤ^J``,
  ``θ_i = θ(s_i)^J``, ``θ(s) = Σ_{n∈ℤ} exp(−n²/(2s²))`` (OpenDP's exact CKS sampler on integers,
  ``make_gaussian`` on ``vector_domain(atom_domain(T="i64"))``, scale ``s_i`` a float, an exact rational).
* Tail component: the product discrete Laplace ``q_T(z) = exp(−‖z‖₁/β) / η^J``, ``η = (1 + e^{−1/β})/(1 − e^{−1/β})``,
  ``β`` a public integer with ``hβ > √J`` (drawn here exactly: :func:`discrete_laplace`).

One round draws ``i`` with the public dyadic probability ``w_i`` (an exact uniform integer), draws ``z ~ q_i``,
rejects if ``i*(z) ≠ i`` and otherwise accepts with probability

``p_i(z) = κ g(z) / (w_i q_i(z))``,  ``g(z) = exp(−h √N)``,

decided exactly by :func:`bernoulli` (lazily drawn uniform bits against interval bounds of ``p``). Then
``P(round outputs z) = w_{i*} q_{i*}(z) p_{i*}(z) = κ g(z)`` for every ``z``, so the output of the first
accepted round has law ``g / Z_h = P_h`` exactly, the rounds are i.i.d. with acceptance ``κ Z_h``, and their
number has a law that does not depend on the data (noise drawn around 0).

*Why* ``p_i <= 1`` (checked with interval arithmetic when the design is built, :meth:`KNormLattice.verify`):
for a Gaussian bin, ``log p_i = log κ − log w_i + log θ_i + φ_i(r)`` with ``r = h√N`` and
``φ_i(r) = −r + r²/(2 h² s_i²)`` convex, so its maximum over the bin is at ``r = h√E_i`` or
``r = h√(E_{i+1} − 1)``; for the tail, ``‖z‖₁ <= √J ‖z‖₂`` gives
``log p_T <= log κ − log w_T + J log η − √E_m (h − √J/β)``. ``κ`` is the largest value for which every bound is
``<= 0``. The lattice Gaussian normaliser is bounded by Poisson summation,
``θ(s) = s√(2π) Σ_k e^{−2π²s²k²} ∈ [s√(2π), s√(2π)(1 + 3e^{−2π²s²})]`` for ``s >= 1``. A proposal that OpenDP
saturates at the ``i64`` bounds has ``N >= (2^63 − 1)² > E_m``, outside every Gaussian bin, so it is rejected
whatever its true value: no approximation.

Design (public, a function of J and h only): bins of width ``2√J`` in the whitened radius around the radial law
Gamma(J, 1), each Gaussian scale minimising its bin's cost ``θ_i max_bin e^{φ_i}`` (continuous approximation, for
speed only: the proof does not use it), weights ``∝ θ_i max_bin e^{φ_i}``, the tail from the radius where its
cost is ``2^-30`` of ``Z_h``; acceptance about 0.47–0.50 for J = 2..100 (:attr:`KNormLattice.acceptance`).

Run time: the number of rounds and the work of each are functions of the noise draws only (made around 0), so
the run time's law does not depend on the data; but together with the released ``K`` it says a little about
``Z = K − k̂`` and so about the centre (OpenDP's discrete samplers take longer for larger noise, and a draw from
a farther bin may take more rounds), as for the ``"opendp"`` generator (:mod:`fdp_ppl.noise.opendp`): this is not
covered by the stated ε, do not publish per-release timings. The exact rounding of the centre (``k̂``) costs a few
big-integer operations per coefficient, as OpenDP's own input handling.

The multivariate t (Theorems 3 and 4)
-------------------------------------
The pure t mechanism releases ``x = c + scale ⊙ u``, ``u`` of density ``∝ f(‖u‖²)``, ``f(y) = (1 + y/ν)^{−(ν+J)/2}``,
ε-DP with ``ε_t(a) = (ν + J) asinh(a/(2√ν))`` at whitened sensitivity ``a = Δ/σ`` (Reimherr & Awan 2019,
Example 6, corrected; :meth:`fdp_ppl.noise.elliptical.families.MultivariateT.epsilon_closed_form`). On the same
lattice it releases ``K = k̂ + Z``, ``P(Z = z) = g(z)/Z_h``, ``g(z) = f(h²‖z‖²)``, and ``x_j = scale_j h K_j``.

*Theorem 3 (privacy).* With ``‖u − u'‖ <= a`` as in Theorem 1 and ``d = a (1 + 2^-40) + h√J (1 + 2^-40)``
(:func:`lattice_distance`), the release is ``ε'``-DP with ``ε' = ε_t(d)`` (:func:`t_epsilon`; rounded up).

*Proof.* ``Z_h`` does not depend on the centre, so for every ``k``,
``P(K = k | c)/P(K = k | c') = f(‖y‖²)/f(‖y + w‖²)`` with ``y = h(k − k̂)``, ``w = h(k̂ − k̂')``, and
``‖w‖ <= a + h√J <= d`` as in Theorem 1. By the triangle inequality ``‖y + w‖ <= ‖y‖ + ‖w‖``, so with
``τ = ‖y‖`` and ``D = ‖w‖`` the log ratio is at most ``(ν + J)/2 · log φ(τ)``, ``φ(τ) = (ν + (τ + D)²)/(ν + τ²)``.
``φ'(τ) = 0`` iff ``τ(τ + D) = ν``, i.e. at ``τ* = p − D``, ``p = D/2 + √(ν + D²/4)``, where
``φ = (τ*p + p²)/(τ*p + τ*²) = p/τ* = p²/ν``; ``φ(0) = 1 + D²/ν <= p²/ν`` and ``φ(∞) = 1``, so
``sup φ = p²/ν`` and the log ratio is at most ``(ν + J) log(p/√ν) = (ν + J) asinh(D/(2√ν)) <= ε_t(d)`` (asinh
increases). This is the continuous law's sup-ratio (its Theorem 3) evaluated at the lattice centres' distance:
the lattice only adds ``h√J`` to the whitened sensitivity. ∎

The generator raises σ so that ``ε_t(d) <= ε``: ``σ' = Δ (1 + 2^-40)/(a_ε − h√J (1 + 2^-40))``,
``a_ε = 2√ν sinh(ε/(ν + J))`` (:meth:`LatticeSampler.calibrate_sigma`), relative growth ``h√J/a_ε``
(1.0·10⁻⁸ at J = 30, ν = 5, ε = 1; 5.5·10⁻⁸ at J = 100).

*Theorem 4 (exact sampler of the lattice t).* As Theorem 2 with ``g(z) = (1 + h²N/ν)^{−(ν+J)/2}``, whose log
``−(ν + J)/2 · log(1 + h²N/ν)`` is convex in ``N``, so ``φ_i = log g + N/(2s_i²)`` is convex in N and its maximum
over a bin is at an end (:class:`TLattice`: bins geometric in the radius, ratio ``t ≈ 1 + 1.5/√J``). The tail
``N >= A`` is the union of the shells ``S_L = [A t^{2L}, A t^{2L+2})``, ``L >= 0``; its component draws ``L`` with
probability ``(1 − ρ) ρ^L``, ``ρ = t^{−ν}`` (L exact Bernoulli(ρ) trials), then ``z`` from the discrete Gaussian of
scale ``s_L = fl(s_0 t^L)`` (the correctly rounded float of the exact rational), rejects ``z ∉ S_L`` and accepts with
``p_T(z) = κ g(z) / (w_T (1 − ρ) ρ^L q_{s_L}(z))``. Each ``z`` in the tail lies in exactly one shell, so
``P(round outputs z) = κ g(z)`` again. ``p_T <= 1`` for every L at once: with ``log(1 + y) >= log y``,
``s_L ∈ s_0 t^L [1 − 2^-52, 1 + 2^-52]``, ``θ(s_L) <= s_L √(2π)(1 + 3e^{−2π²s_0²})`` and ``x = N/(A t^{2L}) ∈ [1, t²]``,
``log p_T <= log κ − log w_T − log(1 − ρ) + J log(s_0 √(2π)(1 + 2^-52)) + 3J e^{−2π²s_0²} − (ν + J)/2 · log(h²A/ν)
+ max_{x ∈ {1, t²}} [A x/(2 s_0² (1 − 2^-52)²) − (ν + J)/2 · log x]``: the terms in L, ``L ν log t`` (from ``ρ^{−L}``),
``J L log t`` (from θ) and ``−(ν + J) L log t`` (from g), cancel, and the bracket is convex in x. Shells whose
top exceeds ``2^124`` are drawn by :func:`discrete_gaussian` (Python integers, exact); below, a saturated OpenDP
proposal has ``N >= 2^126`` and is outside its shell. Acceptance (mean rounds⁻¹) 0.31–0.48 for J = 1..300 and
ν from 0.5 to 1000 (:attr:`TLattice.acceptance`); the run time's law does not depend on the data, as above.

Examples
--------
>>> from fdp_ppl.noise.lattice import KNormLattice
>>> d = KNormLattice(2, step=0.5)
>>> d.verify()
True
>>> z = d.sample(3)
>>> len(z), len(z[0])
(3, 2)
"""

from __future__ import annotations

import bisect
import functools
import math
import secrets
import threading
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: whitened lattice step ``h = 2^-LATTICE_BITS`` of the generator
LATTICE_BITS = 32
#: bits of the dyadic component probabilities ``w_i = n_i / 2^WEIGHT_BITS``
WEIGHT_BITS = 64
#: relative slack on the whitened sensitivity for the float rounding of the public scales
SCALE_SLACK = 2.0**-40
#: the tail's cost is ``2^-TAIL_BITS`` of the target's mass (efficiency only)
TAIL_BITS = 30
#: bit precision of the first interval evaluation of an acceptance probability (raised until decided)
START_PREC = 64
#: the generator's name in :func:`fdp_ppl.noise.sampling.generators`
NAME = "lattice"

__all__ = ["LATTICE_BITS", "NAME", "bernoulli", "interval_bounds", "discrete_laplace", "discrete_gaussian",
           "KNormLattice", "TLattice", "knorm_epsilon", "t_epsilon", "lattice_distance", "lattice_index",
           "LatticeSampler", "LatticeGuarantee"]

_IV_LOCK = threading.RLock()
_I64_MAX = 2**63 - 1


def _iv():
    from mpmath import iv

    return iv


def _fraction(mpf_tuple) -> Fraction:
    """The exact value of an mpmath ``_mpf_`` tuple ``(sign, man, exp, bc)``."""
    sign, man, exp, bc = mpf_tuple
    if man == 0:
        if bc == 0 and exp == 0:
            return Fraction(0)
        raise ArithmeticError("an interval endpoint is infinite or not a number")
    v = Fraction(man) * (Fraction(2) ** exp)
    return -v if sign else v


def _upper(iv, value: Fraction):
    """An interval containing the exact rational ``value`` (outward rounded)."""
    value = Fraction(value)
    return iv.mpf(value.numerator) / value.denominator


def interval_bounds(fn):
    """Wrap ``fn(iv) -> mpmath interval`` (evaluated in mpmath's ``iv`` context) into ``bounds(prec) -> (lo, hi)``
    exact Fractions with ``lo <= value <= hi`` (the ``bounds`` argument of :func:`bernoulli`).

    The ``iv`` context rounds every operation outwards, so ``[lo, hi]`` contains the exact value at every
    precision and shrinks to it as ``prec`` grows.
    """

    def bounds(prec: int):
        iv = _iv()
        with _IV_LOCK:
            old = iv.prec
            iv.prec = int(prec)
            try:
                x = fn(iv)
            finally:
                iv.prec = old
        lo, hi = x._mpi_
        return _fraction(lo), _fraction(hi)

    return bounds


def bernoulli(bounds, randbits=None) -> bool:
    """An exact Bernoulli(p) draw, given only ``bounds(prec) -> (lo, hi)``, exact rationals with ``lo <= p <= hi``
    whose width tends to 0 as ``prec`` grows.

    A uniform ``U`` in [0, 1) is revealed 64 bits at a time: after ``n`` bits ``U ∈ [u 2^-n, (u+1) 2^-n)``. The
    answer is True once ``(u + 1) 2^-n <= lo`` (then ``U < p``) and False once ``u 2^-n >= hi`` (then ``U >= p``);
    otherwise more bits are drawn and ``p`` is bounded at higher precision. So the answer is ``[U < p]`` whenever it
    is given, it is given with probability 1 (``U ≠ p`` almost surely), and ``P(True) = p`` exactly. No float of
    ``p`` is ever formed.

    Parameters
    ----------
    bounds : callable
        ``bounds(prec)`` returns ``(lo, hi)``, ``int`` or :class:`fractions.Fraction` (floats are refused);
        :func:`interval_bounds` builds one from an mpmath interval expression.
    randbits : callable, optional
        ``randbits(k)`` returns k uniform bits as an int (default :func:`secrets.randbits`, OS entropy; tests pass
        a fixed bit source).

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        Bounds that are not exact rationals (a float ``p`` would decide by its rounding).

    Examples
    --------
    >>> from fractions import Fraction
    >>> bernoulli(lambda prec: (Fraction(1, 3), Fraction(1, 3)), randbits=lambda k: 0)   # U = 0 < 1/3
    True
    >>> bernoulli(lambda prec: (Fraction(1, 3), Fraction(1, 3)), randbits=lambda k: 2**k - 1)  # U ~ 1
    False
    """
    rb = secrets.randbits if randbits is None else randbits
    u, n, prec = 0, 0, START_PREC
    lo = hi = None
    while True:
        if lo is None or (hi - lo) * (1 << n) >= 1:  # p's interval is not narrower than U's: refine p
            lo, hi = bounds(prec)
            if not all(isinstance(v, (int, Fraction)) and not isinstance(v, bool) for v in (lo, hi)):
                raise TypeError("bernoulli needs exact rational bounds (int or Fraction), not floats: use "
                                "interval_bounds(...) or Fractions")
            if lo > hi or lo > 1 or hi < 0:
                raise ArithmeticError(f"the bounds [{float(lo):.6g}, {float(hi):.6g}] are not those of a probability")
            prec += 64
        u, n = (u << 64) | rb(64), n + 64
        scale = 1 << n
        if (u + 1) <= lo * scale:
            return True
        if u >= hi * scale:
            return False


def _exp_bounds(log_fn):
    """``bounds`` of ``exp(log_fn(iv))`` for :func:`bernoulli`."""
    return interval_bounds(lambda iv: iv.exp(log_fn(iv)))


def discrete_laplace(beta: int, randbits=None) -> int:
    """One exact draw of the discrete Laplace law ``P(z) ∝ exp(−|z|/β)`` on ℤ (``β`` a positive integer).

    The magnitude ``n = 2^m q + r`` (``2^m >= β``, ``0 <= r < 2^m``) has ``P(n) ∝ e^{−2^m q/β} e^{−r/β}``: ``q`` is
    geometric (Bernoulli(``e^{−2^m/β}``) successes before the first failure) and the bits ``b_k`` of ``r`` are
    independent Bernoulli(``1/(1 + e^{2^k/β})``); a uniform sign is drawn and the pair (0, −) is redrawn, so
    ``P(z) ∝ e^{−|z|/β}`` on all of ℤ. Every Bernoulli is exact (:func:`bernoulli`); Python integers, no overflow.

    Examples
    --------
    >>> isinstance(discrete_laplace(3), int)
    True
    """
    rb = secrets.randbits if randbits is None else randbits
    beta = int(beta)
    if beta < 1:
        raise ValueError("beta must be a positive integer")
    m = beta.bit_length()
    while True:
        q = 0
        while bernoulli(_laplace_bounds(beta, m), rb):
            q += 1
        r = 0
        for k in range(m):
            if bernoulli(_laplace_bounds(beta, k), rb):
                r |= 1 << k
        n = (q << m) | r
        negative = rb(1) == 1
        if n == 0 and negative:
            continue
        return -n if negative else n


@functools.lru_cache(maxsize=4096)
def _laplace_bounds(beta: int, k: int):
    """``bounds`` of :func:`discrete_laplace`'s Bernoulli probabilities (cached per precision): for ``k`` below
    the bit length m of β, ``1/(1 + e^{2^k/β})`` (bit k of r); for ``k = m``, ``e^{−2^m/β}`` (the geometric q)."""
    if k == beta.bit_length():
        fn = interval_bounds(lambda iv: iv.exp(-iv.mpf(1 << k) / beta))
    else:
        fn = interval_bounds(lambda iv: 1 / (1 + iv.exp(iv.mpf(1 << k) / beta)))
    return functools.lru_cache(maxsize=8)(fn)


def _log_theta(iv, s, J: int):
    """Interval of ``J log θ(s)``, ``θ(s) = Σ_n exp(−n²/(2s²))``, ``s >= 1``, by Poisson summation:
    ``θ(s) = s√(2π) (1 + 2 Σ_{k>=1} e^{−a k²})``, ``a = 2π²s²``, the terms ``k <= K`` summed and the rest in
    ``[0, 2 e^{−a(K+1)²}/(1 − e^{−a})]``, K growing with the precision so that the interval shrinks to the value
    (which :func:`bernoulli` needs); at K = 0 the bound is ``log(1 + x) <= x <= 3 e^{−a}``."""
    s = iv.mpf(s)
    a = 2 * iv.pi**2 * s * s
    K = max(0, math.ceil(math.sqrt(iv.prec * 0.7 / max(float(_fraction(a._mpi_[0])), 1.0))) - 1)
    head = 1 + 2 * sum((iv.exp(-a * k * k) for k in range(1, K + 1)), iv.mpf(0))
    rest = 2 * iv.exp(-a * (K + 1) ** 2) / (1 - iv.exp(-a))
    return J * (iv.log(s * iv.sqrt(2 * iv.pi)) + iv.log(head + rest * iv.mpf([0, 1])))


def _log_eta(iv, beta: int, J: int):
    """Interval of ``J log η``, ``η = Σ_z e^{−|z|/β} = (1 + e^{−1/β})/(1 − e^{−1/β})``."""
    e = iv.exp(-iv.mpf(1) / beta)
    return J * iv.log((1 + e) / (1 - e))


class KNormLattice:
    """The public design of the exact sampler of ``P_h(z) ∝ exp(−h‖z‖₂)`` on ``ℤ^J`` (module docstring, Theorem 2).

    Parameters
    ----------
    n_components : int
        J >= 1.
    step : float
        Whitened lattice step h, a power of two (default ``2^-LATTICE_BITS``).
    tail_bits : float
        The tail component starts where its cost is ``2^-tail_bits`` of the target's (efficiency only; tests use
        a small value to exercise it).
    width : float
        Width of a Gaussian bin in the whitened radius, in units of ``√J``.

    Attributes
    ----------
    edges : list of int
        ``E_0 = 0 < E_1 < ... < E_m``: component i < m holds ``N = ‖z‖² ∈ [E_i, E_{i+1})``, the tail ``N >= E_m``.
    scales : list of float
        Discrete Gaussian scales ``s_i`` (integer units, >= 1).
    beta : int
        The tail's discrete Laplace scale.
    weights : list of int
        ``n_i`` with ``w_i = n_i / 2^WEIGHT_BITS`` (tail last), summing to ``2^WEIGHT_BITS``.
    log_kappa : float
        ``log κ`` (an exact float).
    acceptance : float
        ``κ Z_h`` with ``Z_h`` from its continuous approximation ``h^-J |S^{J-1}| Γ(J)`` (the mean number of rounds
        is its inverse).

    Raises
    ------
    ValueError
        J < 1, or a step that is not a positive power of two.
    """

    def __init__(self, n_components: int, step: float = 2.0**-LATTICE_BITS, tail_bits: float = TAIL_BITS,
                 width: float = 2.0):
        from scipy import optimize, special

        J = int(n_components)
        if J < 1:
            raise ValueError("the lattice K-norm needs J >= 1")
        step = float(step)
        if not (step > 0 and math.frexp(step)[0] == 0.5):
            raise ValueError(f"the lattice step must be a positive power of two, got {step!r}")
        self.n_components, self.step, self.tail_bits = J, step, float(tail_bits)
        h, sd = Fraction(step), math.sqrt(J)
        # tail scale: β an integer with h β > √J (exactly), about 2√J/h
        beta = max(1, math.ceil(2.0 * sd / step))
        while (h * beta) ** 2 <= J:
            beta += 1
        self.beta = int(beta)
        hb = float(h * beta)
        # continuous design (efficiency only)
        log_z = (math.log(2.0) + 0.5 * J * math.log(math.pi) - special.gammaln(0.5 * J) + special.gammaln(J))
        self._log_z_cont = float(log_z)
        k_tail = 1.0 - sd / hb  # tail: log ratio <= −r (1 − √J/(hβ))
        log_tail = J * math.log(2.0 * hb)  # J log η + J log h ≈ J log(2β h)
        r_tail = max((log_tail - log_z + self.tail_bits * math.log(2.0)) / k_tail, 2.0 * step * sd)
        lo = max(0.0, J - 12.0 * sd)
        radii = [0.0] + ([lo] if lo > 0 else [])
        x = lo + width * sd
        while x < r_tail:
            radii.append(x)
            x += width * sd
        radii.append(max(r_tail, radii[-1] + width * sd / 2))
        edges = sorted({math.ceil((r / step) ** 2) for r in radii})
        if edges[0] != 0:
            edges.insert(0, 0)
        if len(edges) < 2:
            edges.append(1)
        self.edges = [int(e) for e in edges]
        if self.edges[-1] >= _I64_MAX**2:
            raise ValueError("the lattice is too fine for 64-bit proposals; use a coarser step")
        scales = []
        for a_n, b_n in zip(self.edges[:-1], self.edges[1:]):
            a, b = step * math.sqrt(a_n), step * math.sqrt(b_n - 1)

            def cost(lv, a=a, b=b):
                v = math.exp(lv)
                return 0.5 * J * math.log(2 * math.pi * v) + max(-a + a * a / (2 * v), -b + b * b / (2 * v))

            res = optimize.minimize_scalar(cost, bounds=(2 * math.log(step), math.log(1e4 * J + b * b + 1)),
                                           method="bounded")
            s = max(math.sqrt(math.exp(res.x)) / step, 1.0)
            scales.append(float(np.float32(s)))  # 24 significant bits: a short exact rational
        self.scales = scales
        self._constants = {}
        self._design_weights()

    # ------------------------------------------------------------------ the proof of p <= 1
    def _log_bounds(self, iv):
        """Interval upper bounds ``λ_i`` of ``log θ_i + max_bin φ_i`` (Gaussian) and ``J log η − √E_m (h − √J/β)``
        (tail), in the order of :attr:`weights`."""
        J, h = self.n_components, iv.mpf(self.step)
        out = []
        for i, s in enumerate(self.scales):
            s2 = 2 * iv.mpf(s) ** 2
            ends = (self.edges[i], self.edges[i + 1] - 1)
            phi = [self._log_g(iv, iv.mpf(n)) + iv.mpf(n) / s2 for n in ends]
            out.append(_log_theta(iv, s, J) + _upper(iv, max(_fraction(p._mpi_[1]) for p in phi)))
        out.append(self._tail_bound(iv))
        return out

    def _log_g(self, iv, n):
        """``log g`` at ``N = n`` (an interval): ``−h √N``."""
        return -iv.mpf(self.step) * iv.sqrt(n)

    def _tail_bound(self, iv):
        """``λ_T = J log η − √E_m (h − √J/β)`` (module docstring, Theorem 2)."""
        J, h = self.n_components, iv.mpf(self.step)
        return _log_eta(iv, self.beta, J) - iv.sqrt(iv.mpf(self.edges[-1])) * (h - iv.sqrt(iv.mpf(J)) / self.beta)

    def _hypotheses(self) -> bool:
        """The tail's own hypothesis: ``(hβ)² > J``."""
        return (Fraction(self.step) * self.beta) ** 2 > self.n_components

    def _tail_draw(self, rb):
        """One tail proposal: ``(z, inside its region, log p as a function of iv)``."""
        z = tuple(discrete_laplace(self.beta, rb) for _ in range(self.n_components))
        N = sum(v * v for v in z)
        i = len(self.scales)
        return z, N >= self.edges[-1], self.log_accept(i, z)

    def _design_weights(self):
        iv = _iv()
        with _IV_LOCK:
            old = iv.prec
            iv.prec = 128
            try:
                lam = self._log_bounds(iv)
                top = [float(_fraction(x._mpi_[1])) for x in lam]
                ref = max(top)
                ideal = [math.exp(t - ref) for t in top]
                tot = sum(ideal)
                n = [max(1, math.ceil(2.0**WEIGHT_BITS * x / tot)) for x in ideal]  # >= ideal: κ not cut by a floor
                n[int(np.argmax(n))] += 2**WEIGHT_BITS - sum(n)
                self.weights = n
                self._cum = list(np.cumsum([0] + n, dtype=object))
                # log κ = min_i (log w_i − λ_i), rounded down to a float (exact)
                cand = [iv.log(iv.mpf(ni) / 2**WEIGHT_BITS) - x for ni, x in zip(n, lam)]
                low = min(float(_fraction(c._mpi_[0])) for c in cand)
                self.log_kappa = math.nextafter(math.nextafter(low, -math.inf), -math.inf)
            finally:
                iv.prec = old
        if not self.verify():
            raise ArithmeticError("the lattice design failed its acceptance bound check")
        self.acceptance = math.exp(self.log_kappa + self._log_z_cont - self.n_components * math.log(self.step))

    def verify(self, prec: int = 160) -> bool:
        """True when the hypotheses of Theorem 2 hold: every acceptance probability is proved ``<= 1`` (the interval
        upper bound of ``log κ − log w_i + λ_i`` is ``<= 0`` for every component), the Gaussian scales are ``>= 1``
        (Poisson bound), ``(hβ)² > J``, the edges increase from 0, the last one is below ``(2^63 − 1)²`` (a
        saturated proposal is outside every Gaussian bin), and the weights are positive and sum to
        ``2^WEIGHT_BITS``."""
        if not (all(s >= 1.0 for s in self.scales) and self._hypotheses() and self.edges[0] == 0
                and all(a < b for a, b in zip(self.edges, self.edges[1:])) and self.edges[-1] < _I64_MAX**2
                and len(self.weights) == len(self.scales) + 1 == len(self.edges)
                and all(n >= 1 for n in self.weights) and sum(self.weights) == 2**WEIGHT_BITS):
            return False
        iv = _iv()
        with _IV_LOCK:
            old = iv.prec
            iv.prec = int(prec)
            try:
                lam = self._log_bounds(iv)
                return all(_fraction((iv.mpf(self.log_kappa) - iv.log(iv.mpf(ni) / 2**WEIGHT_BITS) + x)._mpi_[1])
                           <= 0 for ni, x in zip(self.weights, lam))
            finally:
                iv.prec = old

    # ------------------------------------------------------------------ sampling
    def _opendp_gaussian(self, scale: float):
        """OpenDP's exact discrete Gaussian of ``scale`` on ``ℤ^J`` (i64, saturating), a callable of the centre."""
        from .opendp import _dp

        dp = _dp()
        space = dp.vector_domain(dp.atom_domain(T="i64"), size=self.n_components), dp.l2_distance(T="i64")
        return dp.m.make_gaussian(*space, scale=float(scale))

    def _gaussian(self, i: int):
        """Bin i's proposal (built on first use: a design may have many bins, most rarely drawn)."""
        cache = self.__dict__.setdefault("_gaussian_cache", {})
        m = cache.get(i)
        if m is None:
            m = cache[i] = self._opendp_gaussian(self.scales[i])
        return m

    def component(self, sq_norm: int) -> int:
        """``i*(z)`` of a point with ``‖z‖² = sq_norm`` (the tail is ``len(scales)``)."""
        return bisect.bisect_right(self.edges, int(sq_norm)) - 1

    def _constant(self, iv, i: int):
        """Interval of ``log κ − log w_i + log θ_i`` (Gaussian) or ``log κ − log w_T + J log η`` (tail) at the
        context's precision (cached per precision)."""
        key = (i, iv.prec)
        c = self._constants.get(key)
        if c is None:
            norm = (_log_theta(iv, self.scales[i], self.n_components) if i < len(self.scales)
                    else _log_eta(iv, self.beta, self.n_components))
            c = iv.mpf(self.log_kappa) - iv.log(iv.mpf(self.weights[i]) / 2**WEIGHT_BITS) + norm
            self._constants[key] = c
        return c

    def log_accept(self, i: int, z) -> "callable":
        """``log p_i(z)`` as a function of mpmath's ``iv`` context (for :func:`bernoulli`)."""
        N = sum(int(v) * int(v) for v in z)
        if i < len(self.scales):
            s = self.scales[i]

            def log_p(iv):
                n = iv.mpf(N)
                return self._constant(iv, i) + self._log_g(iv, n) + n / (2 * iv.mpf(s) ** 2)
        else:
            s1 = sum(abs(int(v)) for v in z)

            def log_p(iv):
                return (self._constant(iv, i) - iv.mpf(self.step) * iv.sqrt(iv.mpf(N))
                        + iv.mpf(s1) / self.beta)
        return log_p

    def propose(self, randbits=None):
        """One round: ``(z, accepted)`` (``z`` a tuple of Python ints, or None when rejected by its bin)."""
        rb = secrets.randbits if randbits is None else randbits
        t = rb(WEIGHT_BITS)
        i = bisect.bisect_right(self._cum, t) - 1
        if i < len(self.scales):
            z = tuple(int(v) for v in self._gaussian(i)([0] * self.n_components))
            inside, log_p = self.component(sum(v * v for v in z)) == i, self.log_accept(i, z)
        else:
            z, inside, log_p = self._tail_draw(rb)
        if not inside:
            return None, False
        return z, bernoulli(_exp_bounds(log_p), rb)

    def sample(self, n: int = 1, randbits=None, counts: list | None = None) -> list:
        """``n`` exact draws of ``P_h``: a list of J-tuples of Python ints (``counts``, a list, receives the
        number of rounds of each draw)."""
        out = []
        for _ in range(int(n)):
            rounds = 0
            while True:
                rounds += 1
                z, ok = self.propose(randbits)
                if ok:
                    out.append(z)
                    break
            if counts is not None:
                counts.append(rounds)
        return out

    def log_pmf(self, z) -> float:
        """Unnormalised ``log P_h(z) = −h ‖z‖₂`` (float; for tests and enumeration), z of shape (..., J)."""
        z = np.asarray(z, dtype=float)
        return -self.step * np.sqrt(np.sum(z * z, axis=-1))

    def __repr__(self):
        return (f"KNormLattice(J={self.n_components}, step={self.step!r}, components={len(self.weights)}, "
                f"acceptance≈{self.acceptance:.3f})")


def discrete_gaussian(sigma: float, randbits=None) -> int:
    """One exact draw of ``P(z) ∝ exp(−z²/(2σ²))`` on ℤ (σ >= 1 a float, an exact rational; Python integers).

    Canonne, Kamath & Steinke (2020), Algorithm 3: ``t = ⌊σ⌋ + 1``, ``Y`` from the discrete Laplace of scale t
    (:func:`discrete_laplace`), accepted with probability ``exp(−(|Y| − σ²/t)²/(2σ²))`` (:func:`bernoulli`):
    ``e^{−y²/(2σ²)} ∝ e^{−|y|/t} e^{−(|y| − σ²/t)²/(2σ²)}``. Used for the t law's far shells, beyond 64-bit integers.

    Examples
    --------
    >>> isinstance(discrete_gaussian(2.5), int)
    True
    """
    rb = secrets.randbits if randbits is None else randbits
    sig = Fraction(float(sigma))
    if sig < 1:
        raise ValueError("sigma must be >= 1")
    t = int(sig) + 1
    shift = sig * sig / t
    while True:
        y = discrete_laplace(t, rb)
        d = abs(y) - shift
        if bernoulli(_exp_bounds(lambda iv, d=d: -(_upper(iv, d * d)) / (2 * _upper(iv, sig * sig))), rb):
            return y


class TLattice(KNormLattice):
    """The public design of the exact sampler of ``P_h(z) ∝ g(z) = (1 + h²‖z‖²/ν)^{−(ν+J)/2}`` on ``ℤ^J`` (the
    multivariate t on the lattice; module docstring, Theorem 4).

    Gaussian bins over the bulk, ``N = ‖z‖² ∈ [E_i, E_{i+1})`` with ``√E_i`` geometric of ratio ``t`` (a dyadic
    rational about ``1 + ratio/√J``: the radius concentrates in a shell of relative width ``~1/√J``, so a bin is
    about one proposal's radial spread wide), then infinitely many shells of the same ratio,
    ``N ∈ [A t^{2L}, A t^{2L+2})``, ``L = 0, 1, …``, ``A = E_m``: the tail component draws ``L`` with probability
    ``(1 − ρ) ρ^L``, ``ρ = t^{−ν}`` (exact Bernoulli(ρ) trials), and ``z`` from the discrete Gaussian of scale
    ``s_L = fl(s_0 t^L)`` (correctly rounded; OpenDP while ``A t^{2L+2} <= 2^124``, else
    :func:`discrete_gaussian`), rejecting ``z`` outside shell L.

    Parameters
    ----------
    n_components : int
        J >= 1.
    nu : float
        Degrees of freedom (> 0).
    step : float
        Whitened lattice step h, a power of two.
    ratio : float
        Bin ratio ``t ≈ 1 + ratio/√J`` (efficiency only).
    tail_start : float, optional
        Whitened radius where the tail shells start (efficiency only; tests use a small value to exercise them).

    Attributes
    ----------
    ratio : fractions.Fraction
        ``t`` (a dyadic rational > 1).
    shell_scale : float
        ``s_0`` (>= 1).
    edges, scales, weights, log_kappa, acceptance
        As :class:`KNormLattice` (no ``beta``: the tail is the shells).

    Raises
    ------
    ValueError
        J < 1, ν not finite and > 0, a step that is not a power of two, or a lattice so fine that the tail's first
        shell does not fit 64-bit proposals.

    Examples
    --------
    >>> d = TLattice(3, 4.0, step=0.25)
    >>> d.verify(), len(d.sample(2))
    (True, 2)
    """

    def __init__(self, n_components: int, nu: float, step: float = 2.0**-LATTICE_BITS, ratio: float = 1.5,
                 tail_start: float | None = None):
        from scipy import optimize, special, stats

        J = int(n_components)
        nu = float(nu)
        if J < 1 or not (math.isfinite(nu) and nu > 0):
            raise ValueError("the lattice t needs J >= 1 and nu > 0")
        step = float(step)
        if not (step > 0 and math.frexp(step)[0] == 0.5):
            raise ValueError(f"the lattice step must be a positive power of two, got {step!r}")
        self.n_components, self.step, self.nu, self.tail_bits = J, step, nu, None
        self._log_z_cont = float(0.5 * J * math.log(nu * math.pi) + special.gammaln(nu / 2)
                                 - special.gammaln((nu + J) / 2))
        k = (nu + J) / 2.0
        t = 1.0 + max(round(float(ratio) / math.sqrt(J) * 256), 1) / 256.0  # dyadic, 8 bits
        self.ratio = Fraction(t)
        # efficiency only: bins from r0 = min(radius quantile 1e-9, √(ν/k)/2) (bin 0 is the ball below it, where g
        # is nearly flat, so it costs about √(πJ) times its mass) to r_A, where the tail's bound log(1 + y) >= log y
        # loses at most k ν / r_A² = 0.05
        r0 = min(math.sqrt(J * stats.f.ppf(1e-9, J, nu)), 0.5 * math.sqrt(nu / k))
        r_a = (max(math.sqrt(20.0 * k * nu), math.sqrt(J * stats.f.ppf(0.5, J, nu)) * t, r0 * t)
               if tail_start is None else max(float(tail_start), r0 * t))
        n_bins = max(1, math.ceil(math.log(r_a / r0) / math.log(t)))
        radii = [0.0] + [r0 * t**i for i in range(n_bins + 1)]
        edges = sorted({math.ceil((r / step) ** 2) for r in radii} | {0})
        if len(edges) < 2:
            edges.append(1)
        self.edges = [int(e) for e in edges]
        if self.edges[-1] * self.ratio**2 > 2**124:
            raise ValueError("the lattice is too fine for 64-bit proposals; use a coarser step")

        def best_v(cost, hi):
            res = optimize.minimize_scalar(cost, bounds=(2 * math.log(step), math.log(hi)), method="bounded")
            return float(np.float32(max(math.sqrt(math.exp(res.x)) / step, 1.0)))  # 24 bits: a short rational

        def bin_scale(a, b):  # a, b: whitened radii of the bin's ends
            return best_v(lambda lv: 0.5 * J * (math.log(2 * math.pi) + lv)
                          + max(-k * math.log1p(a * a / nu) + a * a / (2 * math.exp(lv)),
                                -k * math.log1p(b * b / nu) + b * b / (2 * math.exp(lv))), 1e4 * J + 4 * b * b + 1)

        self.scales = [bin_scale(step * math.sqrt(a), step * math.sqrt(b - 1))
                       for a, b in zip(self.edges[:-1], self.edges[1:])]
        ra2 = step * step * self.edges[-1]
        self.shell_scale = best_v(lambda lv: 0.5 * J * (math.log(2 * math.pi) + lv)
                                  + max(ra2 / (2 * math.exp(lv)), ra2 * t * t / (2 * math.exp(lv)) - 2 * k * math.log(t)),
                                  1e4 * J + 4 * ra2 * t * t + 1)
        self._constants = {}
        self._shell_gaussians = {}
        self._design_weights()

    def _log_g(self, iv, n):
        """``log g = −(ν + J)/2 log(1 + h² N/ν)`` at ``N = n`` (an interval; convex in N)."""
        nu = iv.mpf(self.nu)
        return -(nu + self.n_components) / 2 * iv.log(1 + iv.mpf(self.step) ** 2 * n / nu)

    def _log_rho(self, iv):
        """``log ρ = −ν log t``."""
        return -iv.mpf(self.nu) * iv.log(_upper(iv, self.ratio))

    def _tail_bound(self, iv):
        """``λ_T`` of Theorem 4, valid for every shell L: with ``log(1 + y) >= log y``,
        ``s_L ∈ s_0 t^L [1 − 2^-52, 1 + 2^-52]`` and the Poisson bound on θ, the L-terms ``J L log t + ν L log t
        − (ν + J) L log t`` cancel, and ``A x/(2 s_0² (1 − 2^-52)²) − (ν + J)/2 log x`` (convex in x) is at most
        its value at ``x = 1`` or ``x = t²``."""
        J, nu, h = self.n_components, iv.mpf(self.nu), iv.mpf(self.step)
        A, s0, t = iv.mpf(self.edges[-1]), iv.mpf(self.shell_scale), _upper(iv, self.ratio)
        slack = iv.mpf(2) ** -52
        base = (-iv.log(1 - iv.exp(self._log_rho(iv))) + J * iv.log(s0 * iv.sqrt(2 * iv.pi)) + J * iv.log(1 + slack)
                + 3 * J * iv.exp(-2 * iv.pi**2 * s0 * s0) - (nu + J) / 2 * iv.log(h * h * A / nu))
        c = A / (2 * s0 * s0 * (1 - slack) ** 2)
        x1 = c
        xt = c * t * t - (nu + J) * iv.log(t)
        return base + _upper(iv, max(_fraction(x1._mpi_[1]), _fraction(xt._mpi_[1])))

    def _hypotheses(self) -> bool:
        """``s_0 >= 1``, ``t > 1`` and ``A t² <= 2^124`` (a saturated OpenDP proposal is outside the shell)."""
        return self.shell_scale >= 1.0 and self.ratio > 1 and self.edges[-1] * self.ratio**2 <= 2**124

    @functools.cached_property
    def _rho_bounds(self):
        return functools.lru_cache(maxsize=8)(interval_bounds(lambda iv: iv.exp(self._log_rho(iv))))

    def shell_sigma(self, L: int) -> float:
        """``s_L = fl(s_0 t^L)``, the correctly rounded float of the exact rational."""
        return float(Fraction(self.shell_scale) * self.ratio**L)

    def _shell_draw(self, L: int, rb):
        s = self.shell_sigma(L)
        if self.edges[-1] * self.ratio ** (2 * L + 2) <= 2**124:  # saturation (N >= 2^126) is outside the shell
            m = self._shell_gaussians.get(L)
            if m is None:
                m = self._shell_gaussians[L] = self._opendp_gaussian(s)
            return s, tuple(int(v) for v in m([0] * self.n_components))
        return s, tuple(discrete_gaussian(s, rb) for _ in range(self.n_components))

    def _tail_draw(self, rb):
        L = 0
        while bernoulli(self._rho_bounds, rb):
            L += 1
        s, z = self._shell_draw(L, rb)
        N = sum(v * v for v in z)
        lo = self.edges[-1] * self.ratio ** (2 * L)
        inside = lo <= N < lo * self.ratio**2
        return z, inside, self.log_accept_tail(L, s, N)

    def log_accept_tail(self, L: int, s: float, N: int):
        """``log p_T(z)`` of shell L (scale s, ``N = ‖z‖²``) as a function of mpmath's ``iv`` context."""
        J, wT = self.n_components, self.weights[-1]

        def log_p(iv):
            n = iv.mpf(N)
            return (iv.mpf(self.log_kappa) - iv.log(iv.mpf(wT) / 2**WEIGHT_BITS)
                    - iv.log(1 - iv.exp(self._log_rho(iv))) - L * self._log_rho(iv) + _log_theta(iv, s, J)
                    + n / (2 * iv.mpf(s) ** 2) + self._log_g(iv, n))
        return log_p

    def log_pmf(self, z) -> float:
        """Unnormalised ``log P_h(z) = −(ν + J)/2 log(1 + h²‖z‖²/ν)`` (float), z of shape (..., J)."""
        z = np.asarray(z, dtype=float)
        return -(self.nu + self.n_components) / 2 * np.log1p(self.step**2 * np.sum(z * z, axis=-1) / self.nu)

    def __repr__(self):
        return (f"TLattice(J={self.n_components}, nu={self.nu:g}, step={self.step!r}, "
                f"components={len(self.weights)}, acceptance≈{self.acceptance:.3f})")


@functools.lru_cache(maxsize=64)
def design(n_components: int, step: float = 2.0**-LATTICE_BITS, nu: float | None = None) -> KNormLattice:
    """The design of (J, h), built once per process (about 10–100 ms): :class:`KNormLattice`, or
    :class:`TLattice` of ``nu`` degrees of freedom when ``nu`` is given."""
    return KNormLattice(n_components, step) if nu is None else TLattice(n_components, nu, step)


def lattice_index(centre, scale, step: float) -> list:
    """``k̂_j = round(c_j / (scale_j h))`` computed exactly on the rationals the floats are (ties to even).

    Parameters
    ----------
    centre, scale : array_like, shape (J,)
        The given float centre and public scales.
    step : float
        h, a power of two.

    Returns
    -------
    list of int
        Python integers (no overflow).

    Examples
    --------
    >>> lattice_index([1.0, -0.3], [1.0, 1.0], 0.25)
    [4, -1]
    """
    h = Fraction(float(step))
    return [round(Fraction(float(c)) / (Fraction(float(s)) * h))
            for c, s in zip(np.asarray(centre, dtype=float).ravel(), np.asarray(scale, dtype=float).ravel())]


def lattice_distance(whitened_sensitivity: float, n_components: int, step: float = 2.0**-LATTICE_BITS) -> float:
    """``a (1 + 2^-40) + h √J (1 + 2^-40)`` rounded up: a bound on ``‖h k̂ − h k̂'‖₂``, the distance of the lattice
    centres of two whitened centres at distance ``<= a`` (Theorems 1 and 3), ``a`` the whitened sensitivity Δ/σ.

    Examples
    --------
    >>> lattice_distance(1.0, 100) - 1.0 < 3e-9
    True
    """
    a = float(whitened_sensitivity) * (1.0 + SCALE_SLACK)
    cost = float(step) * math.sqrt(int(n_components)) * (1.0 + SCALE_SLACK)
    return math.nextafter(a + cost, math.inf)


def knorm_epsilon(whitened_sensitivity: float, n_components: int, step: float = 2.0**-LATTICE_BITS) -> float:
    """``ε' = a (1 + 2^-40) + h √J`` of Theorem 1 (rounded up; :func:`lattice_distance`).

    Examples
    --------
    >>> knorm_epsilon(1.0, 100) - 1.0 < 3e-9
    True
    """
    return lattice_distance(whitened_sensitivity, n_components, step)


def t_epsilon(whitened_sensitivity: float, n_components: int, nu: float, step: float = 2.0**-LATTICE_BITS) -> float:
    """``ε' = ε_t(d)`` of Theorem 3, ``d`` = :func:`lattice_distance` and ``ε_t(d) = (ν + J) asinh(d/(2√ν))`` the
    continuous t's ε at whitened distance d (its one copy:
    :meth:`fdp_ppl.noise.elliptical.families.MultivariateT.epsilon_closed_form`), times ``1 + 2^-40`` for its
    float rounding (a few ulps), rounded up.

    Examples
    --------
    >>> from fdp_ppl.noise.elliptical.families import MultivariateT
    >>> e = t_epsilon(0.1, 10, 5.0)
    >>> 0 < e - MultivariateT(10, 5.0).epsilon_closed_form(0.1) < 1e-8   # (ν + J) h√J / (2√ν) = 2.5e-9
    True
    """
    from .elliptical.families import MultivariateT

    d = lattice_distance(whitened_sensitivity, n_components, step)
    eps = MultivariateT(int(n_components), float(nu)).epsilon_closed_form(d)
    return math.nextafter(eps * (1.0 + SCALE_SLACK), math.inf)


@dataclass(frozen=True)
class LatticeGuarantee:
    """The pure privacy of one lattice elliptical draw (Theorem 1 or 3), in the generator protocol's form.

    Attributes
    ----------
    epsilon : float
        ε' (K-norm: Δ/σ (1 + 2^-40) + h √J; t: ``(ν + J) asinh(d/(2√ν))`` at ``d = Δ/σ + h√J``, rounded up).
    delta : float
        0.
    rho : None
    measurement, fp_safety : str
        One sentence each for the release attributes.
    lattice_cost : float
        ``h √J``, the whitened distance the lattice adds to Δ/σ before σ absorbs it.
    """

    epsilon: float
    delta: float
    rho: None
    measurement: str
    fp_safety: str
    lattice_cost: float


class LatticeSampler:
    """Floating-point-safe, pure ε-DP generator of the ellipsoidal K-norm and multivariate t laws (module
    docstring).

    Parameters
    ----------
    law : Elliptical
        ``Elliptical("knorm")`` or ``Elliptical("t", nu=ν)``.
    n_components : int

    Raises
    ------
    CompatibilityError
        Another law (the Laplace process and Gaussian elliptical laws have no exact lattice sampler here), or a t
        whose design does not fit 64-bit proposals at this J (very small or very large ν).

    Examples
    --------
    >>> from fdp_ppl.noise.lattice import LatticeSampler
    >>> LatticeSampler.generator, LatticeSampler.fp_safe
    ('lattice', True)
    """

    generator = NAME
    fp_safe = True

    @staticmethod
    def supports(law, n_components: int | None = None) -> bool:
        """Whether the law has this exact sampler (the ellipsoidal K-norm or the multivariate t); with
        ``n_components``, also whether the t's design builds at that J (a very small or very large ν needs
        proposals beyond 64-bit integers: :class:`TLattice` refuses it)."""
        if not (getattr(law, "kind", None) in ("knorm", "t") and getattr(law, "key", None) == "elliptical"):
            return False
        if n_components is None or law.kind != "t":
            return True
        try:
            design(int(n_components), 2.0**-LATTICE_BITS, law.nu)
        except ValueError:
            return False
        return True

    def __init__(self, law, n_components: int):
        from ..errors import CompatibilityError

        if not self.supports(law):
            raise CompatibilityError(f"the 'lattice' generator samples the elliptical K-norm and t laws only, not "
                                     f"{getattr(law, 'name', law)!r}", "use generator='pymc' or the default")
        self.law = law
        self.n_components = int(n_components)
        self.step = 2.0**-LATTICE_BITS
        try:
            self.design = design(self.n_components, self.step, law.nu if law.kind == "t" else None)
        except ValueError as err:
            raise CompatibilityError(f"no exact lattice sampler for {law.name} at J = {self.n_components} ({err})",
                                     "release it with generator='pymc' (not floating-point safe)") from None

    def draw(self, centre, scale, n_draws: int = 1, random_seed=None, *, progressbar: bool = False,
             calibration=None, study: bool = False) -> np.ndarray:
        """``n_draws`` releases ``scale ⊙ h (k̂ + Z)``, shape (n_draws, J) (arguments as
        :meth:`fdp_ppl.noise.sampling.CompiledSampler.draw`).

        Raises
        ------
        InputError
            A seed (fresh OS entropy only), shapes that do not match J, scales not finite and > 0, a centre not
            finite, n_draws < 1.
        """
        from ..errors import InputError
        from .seeds import check_fresh_draw

        check_fresh_draw("lattice", random_seed, study)
        centre, scale = np.asarray(centre, dtype=float), np.asarray(scale, dtype=float)
        J = self.n_components
        if centre.shape != (J,) or scale.shape != (J,):
            raise InputError(f"centre and scale must have shape ({J},), got {centre.shape} and {scale.shape}")
        if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise InputError("noise scales must be finite and > 0")
        if not np.all(np.isfinite(centre)):
            raise InputError("the centre must be finite", "check the summary")
        n_draws = int(n_draws)
        if n_draws < 1:
            raise InputError("draws must be >= 1")
        k_hat = lattice_index(centre, scale, self.step)
        noise = self.design.sample(n_draws)
        out = np.empty((n_draws, J))
        for d, z in enumerate(noise):
            out[d] = [float(Fraction(k + v) * Fraction(self.step)) for k, v in zip(k_hat, z)]
        return out * scale

    @staticmethod
    def _epsilon(law, whitened_sensitivity: float, n_components: int) -> float:
        """ε' of Theorem 1 (K-norm) or 3 (t) at the generator's step."""
        step = 2.0**-LATTICE_BITS
        if law.kind == "t":
            return t_epsilon(whitened_sensitivity, n_components, law.nu, step)
        return knorm_epsilon(whitened_sensitivity, n_components, step)

    @classmethod
    def calibrate_sigma(cls, law, sensitivity, epsilon: float, delta: float, n_components: int,
                        sigma: float) -> float:
        """σ' >= σ with ε' of Theorem 1 or 3 <= ε: ``σ' = Δ (1 + 2^-40) / (a_ε − h √J (1 + 2^-40))`` (rounded up),
        ``a_ε`` the whitened sensitivity the continuous law needs for ε (K-norm: ε; t: ``2√ν sinh(ε/(ν + J))``,
        :meth:`~fdp_ppl.noise.elliptical.families.MultivariateT.a_closed_form`), raised by steps of ``2^-40``
        until ε' <= ε holds as computed (the float rounding of the t's formula).

        Raises
        ------
        InputError
            ``a_ε`` not above twice the lattice's cost ``h √J``.
        """
        from ..errors import InputError

        J = int(n_components)
        sens = float(getattr(sensitivity, "value", sensitivity))
        cost = 2.0**-LATTICE_BITS * math.sqrt(J) * (1.0 + SCALE_SLACK)
        a_eps = float(epsilon) if law.kind != "t" else law.family(J).a_closed_form(float(epsilon))
        if not a_eps > 2.0 * cost:
            raise InputError(f"epsilon = {epsilon:g} is too small for the lattice {law.kind} (its lattice adds "
                             f"{cost:.3g} to the whitened sensitivity {a_eps:.3g} allows)", "use a larger epsilon")
        need = sens * (1.0 + SCALE_SLACK) / math.nextafter(a_eps - cost, 0.0) * (1.0 + 2.0**-50)
        for _ in range(64):
            if cls._epsilon(law, sens / need, J) <= epsilon:
                return max(float(sigma), need)
            need *= 1.0 + 2.0**-40
        raise ArithmeticError("the lattice sigma calibration did not converge")  # pragma: no cover

    def guarantee(self, calibration, delta: float = 0.0) -> LatticeGuarantee:
        """Theorem 1 (K-norm) or 3 (t) at the calibration's σ and Δ: pure ε'."""
        a = float(calibration.sensitivity.value) / float(calibration.sigma)
        J = self.n_components
        cost = self.step * math.sqrt(J)
        eps = self._epsilon(self.law, a, J)
        if self.law.kind == "t":
            what = (f"pure epsilon of the multivariate t (nu = {self.law.nu:g}) released on the whitened lattice "
                    f"2^-{LATTICE_BITS} Z^J (fdp_ppl.noise.lattice, Theorem 3): (nu + J) asinh(d / (2 sqrt(nu))) at "
                    f"d = Delta/sigma (1 + 2^-40) + h sqrt(J), lattice cost h sqrt(J) = {cost:.3g} in d")
            law = "multivariate t noise (1 + h^2 ||z||^2 / nu)^(-(nu + J)/2)"
            raise_ = f"h sqrt(J) / (2 sqrt(nu) sinh(epsilon / (nu + J))) = {cost:.3g} / a_epsilon"
        else:
            what = (f"pure epsilon of the K-norm released on the whitened lattice 2^-{LATTICE_BITS} Z^J "
                    f"(fdp_ppl.noise.lattice, Theorem 1): Delta/sigma (1 + 2^-40) + h sqrt(J), lattice cost "
                    f"{cost:.3g}")
            law = "K-norm noise exp(-h||z||)"
            raise_ = f"h sqrt(J)/epsilon = {cost:.3g}/epsilon"
        return LatticeGuarantee(
            epsilon=eps, delta=0.0, rho=None, lattice_cost=cost, measurement=what,
            fp_safety=(f"floating-point safe: exact lattice {law} on 2^-{LATTICE_BITS} Z^J "
                       "(whitened) by exact rejection from OpenDP discrete Gaussians, the centre rounded exactly to "
                       f"the lattice, rescaled by the public scales (post-processing); sigma raised by {raise_} "
                       "relative to keep epsilon"))

    def __repr__(self):
        return f"LatticeSampler({self.law!r}, n_components={self.n_components})"
