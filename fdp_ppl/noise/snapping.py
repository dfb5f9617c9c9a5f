"""Floating-point-safe release of float-valued noise: dithered rounding to a public lattice.

Mironov (2012) showed that a float64 sampler ``c + s·Z`` reaches a set of floats that depends on the centre
``c``: a released value can rule a neighbouring centre out with certainty. Laplace and Gaussian coefficient
noise avoid this with OpenDP's exact discrete samplers (:mod:`fdp_ppl.noise.opendp`); the laws that have no
exact sampler (elliptical t, Laplace process, K-norm; GP paths drawn by recursion; the exponential mechanism's
frames) go through the construction of this module, the one place where it is written.

The construction (per coordinate j, public step ``η_j``, a power of two)
------------------------------------------------------------------------
1. Split the centre exactly: ``a_j = floor(c_j/η_j)`` (an integer, exact in float64 because ``η_j`` is a power
   of two and ``|c_j/η_j| < 2^52``), ``r_j = c_j − a_j η_j`` in ``[0, η_j)`` (exact).
2. Draw a public dither ``u_j = η_j K_j 2^-52``, ``K_j`` uniform on ``{0, …, 2^52 − 1}`` (independent of the
   data, fresh OS entropy).
3. Draw the float noise ``ñ_j`` (the law's own float sampler, centre 0).
4. Release the lattice index ``k_j = a_j + rint((r_j + ñ_j − u_j)/η_j)`` with ``u_j``, as the float
   ``k_j η_j + u_j`` (a deterministic function of ``(k_j, u_j)``: post-processing).

Guarantee (Theorem)
-------------------
Let ``M*`` be the ideal mechanism (exact real noise ``n*``) and suppose it is (ε, δ)-DP. Assume

(A) *float accuracy*: the float sampler's draw ``ñ`` can be coupled with an exact draw ``n*`` of the law so that
    ``E|ñ_j − n*_j| <= w · E|n*_j|`` for every coordinate, with ``w =`` :data:`FLOAT_REL_ERROR` ``= 2^-44``
    (about 2^8 times the few-ulp error of numpy's ziggurat normals, Marsaglia–Tsang gammas and the products
    and square roots that scale them; Doornik 2005, Marsaglia & Tsang 2000).

Then the released vector is (ε, δ + (1 + e^ε) δ_fp)-DP with
``δ_fp = Σ_j [2 (w + 2^-49) E|n*_j|/η_j + 2^-49 + 2^-51]`` (:func:`snapping_delta`).

*Proof.* (i) The ideal rounded output ``(k*, u)``, ``k* = a + rint((r + n* − u)/η) = rint((c + n* − u)/η)``, is
a function of the ideal release ``c + n*`` and the data-independent ``u``: post-processing, (ε, δ)-DP.
(ii) ``k̃_j ≠ k*_j`` only if a half-integer lies between ``(r_j + n*_j − u_j)/η_j`` and the computed ``t̂_j``, which differ by ``D_j <= (|ñ_j − n*_j| + e_j)/η_j`` with
``e_j <= 2^-50 (η_j + |ñ_j|)`` the rounding error of one addition and one subtraction of numbers below
``η_j + |ñ_j|`` (the division by ``η_j`` is exact). For fixed noise, the ``2^52`` equally spaced dithers put
at most ``2 D_j 2^52 + 2`` of them within ``D_j`` of a half-integer, so ``P(k̃_j ≠ k*_j) <= 2 E[D_j] + 2^-51``,
and ``2 E[D_j] <= 2 (w + 2^-50 (1 + w)) E|n*_j|/η_j + 2^-49`` by (A) (``E|ñ_j| <= (1 + w) E|n*_j|``); a union
bound over j gives ``TV(M̃(c), M*(c)) <= δ_fp`` for every centre c. (iii) For every set S,
``P̃_c(S) <= P*_c(S) + δ_fp <= e^ε P*_c'(S) + δ + δ_fp <= e^ε P̃_c'(S) + δ + (1 + e^ε) δ_fp``. ∎

Why it defeats the float attack: the released index ``k`` ranges over all integers from every centre (no
centre-dependent support), and the only difference the float arithmetic can make is bounded in total variation.
The rounding error ``k*η + u − (c + n*)`` is, with a continuous dither, Uniform(−η/2, η/2) and independent of
``n*`` (subtractive dither, Schuchman 1964): the noise variance grows by ``η_j²/12`` (:func:`sigma_inflation`).
With ``η_j = 2^(floor(log2 s_j) − 5)`` (``s_j/64 < η_j <= s_j/32``) the sd grows by less than 4.1e-5 relative for
unit-variance noise, and ``δ_fp`` is about ``7.5·10^-12 · E|z_j|`` per coordinate.

Examples
--------
>>> import numpy as np
>>> from fdp_ppl.noise.snapping import lattice_step, snap
>>> step = lattice_step(np.array([1.0, 0.3]))
>>> step.tolist()
[0.03125, 0.0078125]
>>> y = snap(np.array([10.0, -2.0]), np.zeros((3, 2)), step, random_seed=1)
>>> bool(np.all(np.abs(y - [10.0, -2.0]) <= step / 2 + 1e-15))
True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

#: lattice bits: the step of coordinate j is ``2^(floor(log2 scale_j) - LATTICE_BITS)``
LATTICE_BITS = 5
#: assumption (A) of the module docstring: relative W1 accuracy of the float noise samplers
FLOAT_REL_ERROR = 2.0**-44
#: bits of the public dither
OFFSET_BITS = 52

__all__ = ["LATTICE_BITS", "FLOAT_REL_ERROR", "OFFSET_BITS", "SnapCost", "lattice_step", "snap", "snapping_delta",
           "sigma_inflation", "snap_cost", "FRAME_BITS", "FRAME_MAX_INFLATION", "frame_cost", "frame_bits_for",
           "snap_frame"]


def lattice_step(scale, bits: int = LATTICE_BITS) -> np.ndarray:
    """Public lattice step per coordinate: the power of two ``2^(floor(log2 scale_j) − bits)``, shape like ``scale``.

    Raises
    ------
    InputError
        Scales that are not finite and > 0.
    """
    from ..errors import InputError

    scale = np.asarray(scale, dtype=float)
    if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise InputError("lattice scales must be finite and > 0", "pass the public noise scales")
    _, e = np.frexp(scale)  # scale = m 2^e, m in [0.5, 1): floor(log2 scale) = e - 1
    return np.ldexp(1.0, e - 1 - int(bits))


def snap(centre, noise, step, random_seed=None) -> np.ndarray:
    """Release ``centre + noise`` on the dithered public lattice (module docstring, steps 1-4).

    Parameters
    ----------
    centre : array_like, shape (J,)
        The non-private value (not kept).
    noise : array_like, shape (n, J)
        Float noise draws around 0 (or the float values themselves with ``centre = 0``).
    step : array_like, shape (J,)
        Public lattice steps, powers of two (:func:`lattice_step`).
    random_seed : None or int
        Seed of the dither (None: fresh OS entropy; a seed only for tests).

    Returns
    -------
    ndarray, shape (n, J)
        ``k_j η_j + u_j``.

    Raises
    ------
    InputError
        Steps that are not powers of two, or a centre beyond ``2^52`` steps (the exact split fails).
    """
    from ..errors import InputError

    centre = np.asarray(centre, dtype=float)
    noise = np.asarray(noise, dtype=float)
    step = np.asarray(step, dtype=float)
    m, _ = np.frexp(step)
    if not (np.all(step > 0) and np.all(m == 0.5)):
        raise InputError("lattice steps must be positive powers of two", "use lattice_step(scale)")
    a = np.floor(centre / step)  # exact: division by a power of two
    if np.any(np.abs(a) >= 2.0**52) or not np.all(np.isfinite(a)):
        raise InputError("a value is more than 2^52 lattice steps from 0: the lattice split is not exact",
                         "rescale the data or use a coarser lattice")
    r = centre - a * step  # exact, in [0, step)
    rng = np.random.default_rng(random_seed)
    u = step * (rng.integers(0, 2**OFFSET_BITS, size=noise.shape, dtype=np.int64) * 2.0**-OFFSET_BITS)
    k = a + np.rint(((r + noise) - u) / step)
    return k * step + u


def snapping_delta(mean_abs_ratio, rel_error: float = FLOAT_REL_ERROR) -> float:
    """``δ_fp`` of the theorem: ``Σ_j [2 (w + 2^-49) E|n*_j|/η_j + 2^-49 + 2^-51]``.

    Parameters
    ----------
    mean_abs_ratio : array_like, shape (J,)
        ``E|n*_j| / η_j``, an upper bound (public; :func:`snap_cost` computes it for the noise laws).
    rel_error : float
        ``w`` of assumption (A).
    """
    q = np.asarray(mean_abs_ratio, dtype=float)
    return float(np.sum(2.0 * (rel_error + 2.0**-49) * q + 2.0**-49 + 2.0**-51))


def sigma_inflation(step, sd) -> float:
    """Largest relative growth of a coordinate's sd from the dither: ``max_j sqrt(1 + η_j²/(12 sd_j²)) − 1``."""
    step, sd = np.asarray(step, dtype=float), np.asarray(sd, dtype=float)
    return float(np.max(np.sqrt(1.0 + step**2 / (12.0 * sd**2)) - 1.0))


@dataclass(frozen=True)
class SnapCost:
    """What the construction costs one release of J coordinates.

    Attributes
    ----------
    delta_fp : float
        Total-variation distance to the ideal rounded release (the theorem's ``δ_fp``).
    delta_added : float
        ``(1 + e^ε) δ_fp``, added to δ.
    sigma_inflation : float
        Largest relative growth of a coordinate's sd (0 when the law has no finite variance: not defined).
    bits : int
        Lattice bits.
    lattice : str
        The lattice, in words.
    """

    delta_fp: float
    delta_added: float
    sigma_inflation: float
    bits: int
    lattice: str = f"2^(floor(log2 scale)-{LATTICE_BITS}) Z"

    def text(self) -> str:
        """One sentence for the release attributes."""
        return (f"floating-point safe: float values released on the public dithered lattice {self.lattice} "
                f"(fdp_ppl.noise.snapping); under float accuracy {FLOAT_REL_ERROR:.3g} (W1, relative) "
                f"the release is within total variation {self.delta_fp:.3g} of the exact law's rounding, adding "
                f"{self.delta_added:.3g} to delta; sd inflation {self.sigma_inflation:.2g}")


def snap_cost(scale, mean_abs, sd, epsilon: float, bits: int = LATTICE_BITS) -> SnapCost:
    """The cost of snapping noise of public ``scale`` (J,) whose coordinates have ``E|n_j| = mean_abs_j`` and
    sd ``sd_j`` (same units), for a mechanism at ``epsilon``.

    Examples
    --------
    >>> import numpy as np
    >>> c = snap_cost(np.ones(10), np.sqrt(2 / np.pi) * np.ones(10), np.ones(10), 1.0)
    >>> c.delta_fp < 1e-9, c.sigma_inflation < 5e-5
    (True, True)
    """
    step = lattice_step(scale, bits)
    dfp = snapping_delta(np.asarray(mean_abs, dtype=float) / step)
    sd = np.asarray(sd, dtype=float)
    infl = sigma_inflation(step, sd) if np.all(np.isfinite(sd)) else 0.0
    return SnapCost(delta_fp=dfp, delta_added=(1.0 + math.exp(float(epsilon))) * dfp, sigma_inflation=infl,
                    bits=int(bits))


# ====================================================================================== the release generator
#: name of the generator of :func:`fdp_ppl.noise.sampling.register_generator`
NAME = "snapped"


def standard_moments(law, n_components: int) -> tuple[float, float]:
    """``(E|z_j|, sd(z_j))`` of one coordinate of the law at unit scale (``sd`` is inf without a finite variance).

    Elliptical ``z = √W g``: ``E|z_j| = E[√W] √(2/π)``, ``sd = √E[W]``; Laplace ``(1, √2)``; Normal
    ``(√(2/π), 1)``.

    Raises
    ------
    CompatibilityError
        A law without a finite mean ``E|z_j|`` (t with ν <= 1) or one this module does not know.
    """
    from scipy.special import gammaln

    from ..errors import CompatibilityError

    g = math.sqrt(2.0 / math.pi)
    if law.name == "laplace":
        return 1.0, math.sqrt(2.0)
    if law.name == "normal":
        return g, 1.0
    kind = getattr(law, "kind", None)
    if kind == "gaussian":
        return g, 1.0
    if kind == "laplace":  # W ~ Exp(1)
        return g * math.sqrt(math.pi) / 2.0, 1.0
    if kind == "knorm":  # W ~ chi2_{J+1}
        d = int(n_components) + 1
        return g * math.sqrt(2.0) * math.exp(gammaln((d + 1) / 2.0) - gammaln(d / 2.0)), math.sqrt(d)
    if kind == "t":  # W ~ InvGamma(nu/2, nu/2)
        nu = float(law.nu)
        if nu <= 1.0:
            raise CompatibilityError(f"the t law with nu = {nu:g} <= 1 has no finite mean: the floating-point-safe "
                                     "lattice release needs E|z| < inf", "use nu > 1, or generator='pymc' (not "
                                     "floating-point safe)")
        m = math.sqrt(nu / 2.0) * math.exp(gammaln((nu - 1) / 2.0) - gammaln(nu / 2.0))
        return g * m, (math.sqrt(nu / (nu - 2.0)) if nu > 2 else math.inf)
    raise CompatibilityError(f"no floating-point-safe lattice release for the {law.name!r} law",
                             "use generator='pymc' (not floating-point safe)")


def snappable(law) -> bool:
    """Whether :class:`SnappedSampler` can release ``law`` (:func:`standard_moments` succeeds)."""
    from ..errors import CompatibilityError

    try:
        standard_moments(law, 1)
    except CompatibilityError:
        return False
    return True


def _law_cost(law, n_components: int, epsilon: float) -> SnapCost:
    """:class:`SnapCost` at the worst ratio ``scale_j/η_j < 2^(bits+1)`` (independent of σ: used by the
    calibration before σ is known)."""
    m1, sd = standard_moments(law, n_components)
    scale = np.full(int(n_components), 1.0 - 2.0**-52)  # s/η just below 2^(bits+1): the worst case
    return snap_cost(scale, m1 * scale, sd * scale, epsilon)


@functools.lru_cache(maxsize=64)
def _unit_sigma(kind: str, nu, epsilon: float, delta: float) -> float:
    """σ of the exact mixture profile at Δ = 1 (δ(σ) depends on Δ/σ only; a numerical root, cached)."""
    from .elliptical.privacy import sigma_for_delta
    from .laws.elliptical import Elliptical

    return sigma_for_delta(epsilon, delta, 1.0, Elliptical(kind, nu=nu).mixing_law(), "exact")


@dataclass(frozen=True)
class SnapGuarantee:
    """The privacy of one snapped draw (the module's theorem), with the sentence for ``fp_safety``.

    Attributes
    ----------
    epsilon, delta : float
        The (ε, δ) one released vector has (δ includes the rounding's ``(1 + e^ε) δ_fp``).
    rho : None
        No zCDP statement.
    measurement : str
        How the numbers were obtained.
    fp_safety : str
        :meth:`SnapCost.text`.
    cost : SnapCost
    """

    epsilon: float
    delta: float
    rho: None
    measurement: str
    fp_safety: str
    cost: SnapCost


class SnappedSampler:
    """Floating-point-safe generator for laws without an exact discrete sampler (elliptical laws).

    Draws the law's float noise with the compiled sampler (fresh OS entropy, centre 0) and releases
    ``centre + noise`` on the public dithered lattice (:func:`snap`; the theorem of the module docstring).
    Never seeded (like OpenDP's generator). For an (ε, δ) mechanism with δ > 0 the calibration raises σ
    (:meth:`calibrate_sigma`) so that the guarantee, rounding included, stays within the claimed (ε, δ); a pure
    ε mechanism becomes (ε, (1 + e^ε) δ_fp)-DP, which the release records and charges.

    Parameters
    ----------
    law : NoiseLaw
    n_components : int

    Raises
    ------
    CompatibilityError
        A law :func:`standard_moments` refuses.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.noise.snapping import SnappedSampler
    >>> SnappedSampler.generator, SnappedSampler.fp_safe
    ('snapped', True)
    """

    generator = NAME
    fp_safe = True
    #: samples laws that are not ``law.fp_safe`` (:func:`fdp_ppl.noise.sampling.resolve_generator`)
    snaps = True
    guarantee_needs_epsilon = True

    @staticmethod
    def float_sampler(law, n_components: int):
        """The float sampler of the noise (set by :mod:`fdp_ppl.noise.sampling` when it registers this generator:
        the compiled sampler, shared; this module does not import the sampling module)."""
        raise NotImplementedError("register the generator through fdp_ppl.noise.sampling")

    def __init__(self, law, n_components: int):
        standard_moments(law, n_components)  # refuse before anything is compiled
        self.law = law
        self.n_components = int(n_components)

    def draw(self, centre, scale, n_draws: int = 1, random_seed=None, *, progressbar: bool = False,
             calibration=None, study: bool = False) -> np.ndarray:
        """``n_draws`` snapped draws of ``centre + ξ``, shape (n_draws, J) (arguments as
        :meth:`fdp_ppl.noise.sampling.CompiledSampler.draw`).

        Raises
        ------
        InputError
            A seed (fresh OS entropy only; without ``study=True`` by the seed rule,
            :func:`fdp_ppl.noise.sampling.check_study`), or what the compiled sampler refuses.
        """
        from .seeds import check_fresh_draw

        check_fresh_draw("snapped", random_seed, study)
        scale = np.asarray(scale, dtype=float)
        inner = type(self).float_sampler(self.law, self.n_components)
        noise = inner.draw(np.zeros(self.n_components), scale, n_draws, None, progressbar=progressbar)
        return snap(centre, noise, lattice_step(scale))

    def cost(self, scale, epsilon: float) -> SnapCost:
        """:class:`SnapCost` at the public ``scale`` (J,)."""
        m1, sd = standard_moments(self.law, self.n_components)
        scale = np.asarray(scale, dtype=float)
        return snap_cost(scale, m1 * scale, sd * scale, epsilon)

    @staticmethod
    def calibrate_sigma(law, sensitivity, epsilon: float, delta: float, n_components: int, sigma: float) -> float:
        """σ' >= σ with the ideal mechanism (ε, δ − (1 + e^ε) δ_fp)-DP (exact mixture profile; δ > 0 only)."""
        from ..errors import InputError

        if delta <= 0 or getattr(law, "kind", None) is None:
            return float(sigma)
        added = _law_cost(law, n_components, epsilon).delta_added
        if added >= delta / 2:
            raise InputError(f"delta = {delta:g} is too small for the floating-point-safe lattice release (it adds "
                             f"{added:.3g})", "use a larger delta, or generator='pymc' (not floating-point safe)")
        sens = float(getattr(sensitivity, "value", sensitivity))
        if law.kind == "gaussian":
            from ...accounting import analytic_sigma

            need = analytic_sigma(epsilon, delta - added, sens)
        else:
            need = sens * _unit_sigma(law.kind, law.nu, float(epsilon), float(delta - added)) * (1 + 1e-12)
        return max(float(sigma), float(need))

    def guarantee(self, calibration, delta: float = 0.0, epsilon: float | None = None) -> SnapGuarantee | None:
        """The theorem's (ε, δ') at the calibration's scale: δ' = δ when the calibration was made for this
        generator with δ > 0 (σ raised for it), else δ + (1 + e^ε) δ_fp. None without ε."""
        if epsilon is None:
            return None
        c = self.cost(calibration.scale, epsilon)
        absorbed = delta > 0 and getattr(calibration, "generator", None) == NAME
        d = float(delta) if absorbed else float(delta) + c.delta_added
        how = ("sigma calibrated at delta - (1 + e^eps) delta_fp" if absorbed
               else "delta + (1 + e^eps) delta_fp")
        return SnapGuarantee(epsilon=float(epsilon), delta=min(d, 1.0), rho=None,
                             measurement=f"mechanism's (eps, delta) for exact noise; dithered lattice rounding "
                                         f"(fdp_ppl.noise.snapping): {how}, delta_fp = {c.delta_fp:.3g}",
                             fp_safety=c.text(), cost=c)

    def __repr__(self):
        return f"SnappedSampler({self.law!r}, n_components={self.n_components})"


# ====================================================================================== frames (exponential mechanism)
#: lattice bits of a released frame's entries (entries in [-1, 1]; step 2^-FRAME_BITS)
FRAME_BITS = 12
#: largest sd inflation of a frame entry (relative to its rms 1/√m) a coarser frame lattice may cost
#: (:func:`frame_bits_for`)
FRAME_MAX_INFLATION = 0.02


def frame_cost(m: int, k: int, epsilon: float, bits: int = FRAME_BITS) -> SnapCost:
    """:class:`SnapCost` of :func:`snap_frame` for an m x k frame released by a mechanism at ``epsilon``.

    ``Σ_ij E|V_ij| <= k √m`` (Cauchy–Schwarz on unit columns), so the theorem's sum uses ``E|V_ij| = 1/√m``
    per entry; the step is ``2^-bits``. The sd inflation is that of an entry of sd ``1/√m``.

    Examples
    --------
    >>> c = frame_cost(5, 1, 1.0)
    >>> c.delta_fp < 1e-8
    True
    """
    J = int(m) * int(k)
    step = np.full(J, 2.0**-int(bits))
    mean_abs = np.full(J, 1.0 / math.sqrt(m))
    dfp = snapping_delta(mean_abs / step)
    return SnapCost(delta_fp=dfp, delta_added=(1.0 + math.exp(float(epsilon))) * dfp,
                    sigma_inflation=sigma_inflation(step, mean_abs), bits=int(bits), lattice=f"2^-{int(bits)} Z")


def frame_bits_for(m: int, k: int, epsilon: float, delta: float,
                   max_inflation: float = FRAME_MAX_INFLATION) -> int | None:
    """The finest frame lattice ``2^-bits Z`` (``bits <= FRAME_BITS``) whose rounding's δ, ``(1 + e^ε) δ_fp``, is at
    most half of ``delta`` while the sd of an entry grows by at most ``max_inflation``; None if there is none.

    ``δ_fp`` falls in proportion to the step (the theorem's ``2 (w + 2^-49) E|V_ij|/η`` term dominates), so a plan
    whose δ is below twice the ``2^-FRAME_BITS`` lattice's cost (the default 1e-10 for small frames) can hold a
    coarser one; the step is public (m, k, ε, δ only). Its cost in accuracy is the sd inflation of
    :func:`frame_cost` (the uniform dither's ``η²/12`` against an entry's mean square ``1/m``).

    Examples
    --------
    >>> frame_bits_for(5, 1, 1.0, 1e-7), frame_bits_for(5, 1, 1.0, 1e-10), frame_bits_for(40, 3, 1.0, 1e-10)
    (12, 5, None)
    """
    for bits in range(FRAME_BITS, 0, -1):
        c = frame_cost(m, k, epsilon, bits)
        if c.sigma_inflation > max_inflation:
            return None
        if 2.0 * c.delta_added <= delta:
            return bits
    return None


def snap_frame(frames, random_seed=None, bits: int = FRAME_BITS) -> np.ndarray:
    """Frames (..., m, k) with orthonormal columns, released on the dithered lattice ``2^-bits Z`` (the
    module's theorem with centre 0: each entry is a float value of the sampler) and mapped back to the nearest
    orthonormal frame (polar factor; post-processing of the lattice point). Same shape.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 2)))[0]
    >>> w = snap_frame(v[None], random_seed=1)[0]
    >>> bool(np.allclose(w.T @ w, np.eye(2))), bool(np.max(np.abs(w - v)) < 2.0**-FRAME_BITS)
    (True, True)
    """
    frames = np.asarray(frames, dtype=float)
    shape = frames.shape
    flat = frames.reshape(-1, shape[-2] * shape[-1])
    step = np.full(flat.shape[1], 2.0**-int(bits))
    out = snap(np.zeros(flat.shape[1]), flat, step, random_seed).reshape(shape)
    u, _, vt = np.linalg.svd(out, full_matrices=False)
    return u @ vt
