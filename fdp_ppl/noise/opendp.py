"""Floating-point-safe release noise from OpenDP (the ``"opendp"`` generator of :mod:`fdp_ppl.noise.sampling`).

Continuous noise drawn in float64 (``loc + b·log(2U)`` with ``U`` on the
2⁻⁵³ grid, as numpy's ``Generator.laplace`` does) leaks the centre through
the set of values it can reach: given a released value, its public scale and
a candidate centre, an exact search over the grid of ``U`` decides whether
the value is reachable at all (Mironov 2012, "On significance of the least
significant bits for differential privacy", CCS). OpenDP's float
measurements instead add **exact discrete** Laplace / Gaussian noise on the
lattice ``2^k ℤ`` (Canonne, Kamath & Steinke 2020) to the input rounded to
that lattice, and their privacy maps account for the rounding.

The product laws of the package have per-coefficient scales
``scale_j = σ·w_j`` (ICLP: ``w_j = √λ_j``, FRL and Bernstein: ``w_j = 1``,
Gaussian mechanism: ``w_j = √λ_j``), and the mechanism's sensitivity ``Δ``
is measured in the whitened norm of ``c_j/w_j`` (``"1,C"`` and ``"l1"``:
ℓ¹; ``"cameron-martin"``: ℓ²). :class:`OpenDPSampler` therefore releases

``ỹ = w ⊙ M(c ⊘ w)``,  ``M = make_laplace`` (ℓ¹) or ``make_gaussian`` (ℓ²) of scale σ,

i.e. OpenDP noise of scale σ on the whitened centre, rescaled by ``w``
(post-processing, which costs no privacy). The lattice is ``k = −1074``
(:data:`LATTICE_K`): every float64 is a multiple of 2⁻¹⁰⁷⁴, so the input is
not rounded at all, the rounding term of the privacy map is 0, the exact
lattice output is rounded to the nearest float (post-processing), and every
float is reachable from every centre.

Guarantees (per draw, :meth:`OpenDPSampler.guarantee`): Laplace, pure
``ε = M.map(Δ)`` (OpenDP rounds it up; ``Δ/σ`` up to that rounding).
Normal: the exact privacy profile of the lattice Gaussian
(:func:`lattice_gaussian_delta`), not OpenDP's zCDP → approximate-DP
conversion, which is looser (it gave the analytic σ for (ε = 1, δ = 10⁻⁵,
Δ = 1) only ε = 1.092, and raising σ until it did cost 8–14% more noise).
OpenDP's own zCDP statement ``ρ = M.map(Δ) = Δ²/(2σ²)`` is recorded next
to it.

What the guarantee does not cover: it treats the whitened centre ``c ⊘ w``
as the exact input, i.e. the float rounding of the summary's own computation
and of the division by ``w`` (relative 2⁻⁵³ per coefficient) is outside the
sensitivity ``Δ``, as for any library that takes a float summary as given.

Run time (DESIGN invariant 9): OpenDP's exact samplers take slightly longer when the noise they draw is
larger (the discrete samplers run more Bernoulli / geometric trials for a larger magnitude). Measured by
``benchmarks/bench_timing.py`` (σ = 1, OpenDP 0.16, 3000 draws per law on a shared 2-vCPU AMD EPYC,
``results/bench_timing.json``): Spearman correlation of a draw's time with its noise norm +0.13 for a scalar
Laplace (p = 8e-13; the tenth of draws with the largest noise took 165 µs in median, the smallest tenth
155 µs), +0.06 for a 31-coefficient Laplace vector (p = 0.001), +0.02 and +0.01 for Normal noise (J = 1 and
31, not significant); an attacker's review on another machine measured +0.27 (scalar Laplace) and +0.11
(31 coefficients). The time reveals a little about ``|ξ|`` and so about the centre given the output; this
is **not** padded (OpenDP's trial count cannot be fixed from outside, and a wall-clock deadline leaks
whenever a loaded machine overruns it) and not covered by the stated ε: do not publish per-release timings.

Cost: the measurement of a (law, J, σ) is built once per process (``_measurement``, cached; 1–4 ms) and each
draw is one call on the whole whitened vector, so a draw costs what OpenDP alone costs: J = 146, σ = 1.85e-4
(the GP density at n = 10⁶, K = 200): 9.2–9.6 ms CPU, ~65 µs per coefficient, with this sampler within 1–5% of
the bare OpenDP call; J scalar calls would take 2.8× longer (38 vs 13.5 ms in one run). The time is OpenDP's
exact CKS20 sampler on integers of ~1060 bits (σ·2^1074): ``perf`` puts 55% of a draw loop's samples in OpenDP's
library, about half of them in the big-integer gcd that normalises the rationals of its Bernoulli(exp)
trials. Only the size of σ/2^k moves it (J = 146, one run): σ·2^1074 ≈ 2^574 costs 6.2 ms, ≈ 2^74 3.3 ms (k = −64
at this σ: 5.0 against 9.8 ms), but a coarser lattice is another law and, with the centre rounded to it, another privacy
map, so :data:`LATTICE_K` stays. OpenDP's call releases the GIL: two threads drawing J/2 each take 7.5 ms of
wall time on two idle cores instead of 9–14 ms (2 × 1000 coefficients: 0.091 against 0.170 s), for the same CPU
time; the sampler draws in one thread (a release uses one core, as its peers are measured).
The draw's time does not follow the centre: 300 interleaved calls each at centres 0, N(0, 10³), N(0, 10¹²) and
10⁻³⁰⁰ took 12.92 / 12.97 / 12.92 / 13.35 ms in median (Mann–Whitney against 0: p = 0.18, 0.16, 0.10); the
work around the call (one division, one finiteness test of J floats) is not data dependent beyond the float
unit's own timing.

OpenDP draws from the operating system's entropy and cannot be seeded: a
seeded call raises :class:`~fdp_ppl.errors.InputError` (studies that need
reproducible noise use the ``"pymc"`` generator, which is not
floating-point safe).

Only the laws with ``fp_safe = True`` (:class:`~fdp_ppl.noise.laws.Laplace`,
:class:`~fdp_ppl.noise.laws.Normal`) have this sampler; the elliptical laws (one
shared continuous mixing variable, no exact discrete analogue in OpenDP) are
not floating-point safe.

This module does not import :mod:`fdp_ppl.noise.sampling` (which registers it) and
imports ``opendp`` only when a sampler is used.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass

import numpy as np

from ..errors import CompatibilityError, InputError
from .laws import NoiseLaw

#: the generator's name in :func:`fdp_ppl.noise.sampling.generators`
NAME = "opendp"
#: OpenDP lattice exponent: noise on 2^k ℤ; −1074 makes every float64 a lattice point (no input rounding)
LATTICE_K = -1074
#: sensitivity norms (of the whitened centre c ⊘ w) that each law's OpenDP measurement accepts
NORMS = {"laplace": ("1,C", "l1"), "normal": ("cameron-martin", "l2")}
#: norms in which the whitening is the identity (scale_j = σ for every j)
_UNWHITENED = ("l1", "l2")
#: relative tolerance of the σ root search on OpenDP's map
_SIGMA_RTOL = 1e-10

_FEATURES_LOCK = threading.Lock()


def _dp():
    """``opendp.prelude`` with the ``contrib`` feature enabled.

    Raises
    ------
    CompatibilityError
        OpenDP is not installed.
    """
    try:
        import opendp.prelude as dp
    except ImportError as err:  # pragma: no cover - a declared dependency
        raise CompatibilityError("the floating-point-safe release generator needs OpenDP",
                                 "pip install 'opendp>=0.16', or pass generator='pymc'") from err
    with _FEATURES_LOCK:
        dp.enable_features("contrib")
    return dp


@dataclass(frozen=True)
class Guarantee:
    """The privacy of one draw as OpenDP's privacy map states it.

    Returned by :meth:`OpenDPSampler.guarantee` at a calibration's σ and Δ (cached per law, J, σ, Δ, δ);
    :func:`fdp_ppl.noise.sampling.generator_attrs` writes it into a floating-point-safe release as
    ``epsilon_guaranteed``, ``delta_guaranteed``, ``rho_guaranteed`` and ``privacy_guarantee``.

    Attributes
    ----------
    epsilon : float
        ε guaranteed for one released vector (pure for Laplace; at :attr:`delta` for Normal).
    delta : float
        0 for Laplace; the mechanism's δ for Normal.
    rho : float or None
        zero-concentrated DP ρ of one draw (Normal only).
    measurement : str
        The OpenDP measurement and conversion that gave the numbers.
    """

    epsilon: float
    delta: float
    rho: float | None
    measurement: str


def _check_law(law: NoiseLaw) -> str:
    if not getattr(law, "fp_safe", False) or law.name not in NORMS:
        raise CompatibilityError(f"the {law.name!r} noise law has no floating-point-safe (OpenDP) sampler",
                                 "release it with generator='pymc' (not floating-point safe), or use a Laplace or "
                                 "Gaussian mechanism")
    return law.name


def _check_norm(law_name: str, norm: str) -> None:
    if norm not in NORMS[law_name]:
        raise CompatibilityError(f"OpenDP's {law_name} measurement needs a sensitivity in one of {NORMS[law_name]} "
                                 f"(of the whitened coefficients), got {norm!r}",
                                 "calibrate with the mechanism of this law")


@functools.lru_cache(maxsize=256)
def _measurement(law_name: str, n_components: int, sigma: float):
    """The OpenDP measurement of scale σ on float vectors of length J (cached; measurements are immutable)."""
    dp = _dp()
    if law_name == "laplace":
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n_components), dp.l1_distance(T=float)
        return dp.m.make_laplace(*space, scale=float(sigma), k=LATTICE_K)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n_components), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=float(sigma), k=LATTICE_K)


def lattice_error(n_components: int, sigma: float, k: int = LATTICE_K) -> float:
    """Bound η on how far a threshold probability of the lattice Gaussian is from the continuous one.

    For ``Y`` the discrete Gaussian on ``hℤ^J`` (``h = 2^k``) with parameter σ, ``G ~ N(0, σ²I_J)``, any
    vector ``s`` and threshold ``c``: ``|P[⟨Y, s⟩ > c] − P[⟨G, s⟩ > c]| <= η = 4 J h / σ`` while
    ``J h <= σ / 4`` [D]: ``Y + U`` (``U`` uniform on the cell) has a density within a factor
    ``exp(±(h‖v‖₁ + J h²/4)/(2σ²))`` of the Gaussian one, and ``|⟨U, s⟩| <= h‖s‖₁/2`` moves the
    threshold by at most ``h √J /(σ √(2π))`` in probability. With ``h = 2^-1074`` this is below
    1e-300 for any σ the package uses: the lattice Gaussian's profile is the continuous one.

    Returns
    -------
    float
        η (1 when the bound does not apply: J h > σ/4).
    """
    h = math.ldexp(1.0, k)
    J = int(n_components)
    if J * h > sigma / 4:
        return 1.0
    return 4.0 * J * h / float(sigma)


def lattice_gaussian_delta(epsilon: float, sensitivity: float, sigma: float, n_components: int,
                           k: int = LATTICE_K) -> float:
    """Upper bound on δ(ε) of one draw of the lattice Gaussian mechanism (OpenDP ``make_gaussian``).

    The privacy loss of ``x + Y`` against ``x' + Y`` (``Y`` discrete Gaussian on ``2^k ℤ^J``, centres on
    the lattice, ``‖x − x'‖₂ <= Δ``) is an affine function of ``⟨Y, x − x'⟩``, as for continuous noise, so
    ``δ(ε) = P[L > ε] − e^ε P'[L > ε]`` is the continuous profile (Balle & Wang 2018, Theorem 8;
    Canonne, Kamath & Steinke 2020, Theorem 7 for the discrete Gaussian) up to the lattice error of
    both probabilities:

    ``δ(ε) <= δ_Gauss(ε; Δ, σ) + (1 + e^ε) η``  (:func:`lattice_error`).

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Δ in the whitened ℓ² norm.
    sigma : float
        The noise scale (OpenDP's ``scale``) in the whitened units.
    n_components : int
        J.
    k : int
        Lattice exponent.

    Returns
    -------
    float
    """
    from ..accounting.calibration import gaussian_delta

    eta = lattice_error(n_components, sigma, k)
    try:
        growth = 1.0 + math.exp(epsilon)
    except OverflowError:  # e^ε beyond float64: no finite bound (and no privacy at such an ε)
        raise InputError(f"epsilon = {float(epsilon):g} is too large for the floating-point-safe Gaussian sampler "
                         "(its lattice bound needs e^epsilon, which overflows)",
                         "pass an epsilon below 700 (e^700 = 1e304 already protects nothing)") from None
    return min(gaussian_delta(epsilon, sensitivity, sigma) + growth * eta, 1.0)


def adaptive_lattice_slack(n_coordinates: int, sigma: float, k: int = LATTICE_K) -> float:
    """γ: the lattice Gaussian of an adaptive sequence of answers is within ``e^{±γ}`` of the continuous one.

    An online oracle (:class:`fdp_ppl.machine.OnlineRelease`) draws each answer's whitened innovation as ``c_t + Y_t``,
    ``Y_t`` OpenDP's discrete Gaussian on ``h ℤ`` (``h = 2^k``, scale σ), with ``c_t`` a float (a lattice point) that
    may depend on earlier answers. ``Y_t = rint_h(Y_t + U_t)`` with ``U_t`` uniform on ``[−h/2, h/2)``, so the answers
    are post-processing of ``V_t = c_t + Y_t + U_t``; the density of ``Y_t + U_t`` at ``v`` is
    ``φ_σ(v) · e^{±(h|v| + h²/4)/(2σ²)} / θ`` with ``θ = Σ_j e^{−(jh)²/(2σ²)} · h/(√(2π) σ) = 1 + 2Σ_{j≥1}
    e^{−2π²j²σ²/h²}`` (Poisson summation). On the event ``E`` that every ``|Y_t| <= 2^512 σ`` the joint density of
    ``n`` such coordinates is within ``e^{±γ}`` of the continuous Gaussian process's, whatever the adaptive choice of
    centres, with ``γ = n [(h 2^512 σ + h²/4)/(2σ²) + 2 log θ]``; ``P(E^c) <= 2n e^{−2^1023}`` [D]. So an (ε, δ)
    guarantee of the continuous mechanism gives ``(ε + 2γ, e^γ δ + (1 + e^{ε+γ}) P(E^c))`` for the lattice one.

    Parameters
    ----------
    n_coordinates : int
        The most coordinates the oracle can draw (its public cap).
    sigma : float
        The scale of the whitened noise.
    k : int
        Lattice exponent.

    Returns
    -------
    float
        γ (about ``n 2^-563/σ`` at ``k = −1074``; below ``10^-100`` for ``n <= 10^8``, ``σ >= 10^-40``).

    Raises
    ------
    InputError
        ``σ <= 64 h`` (the bound is not stated there).

    Examples
    --------
    >>> adaptive_lattice_slack(10**8, 1.0) < 1e-150
    True
    """
    h = math.ldexp(1.0, k)
    sigma = float(sigma)
    if not sigma > 64 * h:
        raise InputError(f"sigma = {sigma!r} is too close to the lattice step 2^{k}", "use a larger noise scale")
    # h²/4 <= h 2^512 σ · 2^-520 (h < σ/64), folded into a factor on the first term
    per = math.ldexp(1.0, k + 512) / (2.0 * sigma) * (1.0 + math.ldexp(1.0, -500))
    ratio_log2 = math.log2(sigma) - k  # log2(σ/h) > 6; σ/h itself overflows at k = -1074
    log_theta = 2.0 * math.exp(-2.0 * math.pi**2 * 2.0 ** min(2.0 * ratio_log2, 20.0))  # >= log θ
    return float(int(n_coordinates) * (per + 2.0 * log_theta))


#: relative margin kept below δ when σ is calibrated on :func:`lattice_gaussian_delta` (float rounding of Φ)
_DELTA_MARGIN = 1e-9


@functools.lru_cache(maxsize=1024)
def _guarantee(law_name: str, n_components: int, sigma: float, sensitivity: float, delta: float) -> Guarantee:
    meas = _measurement(law_name, n_components, sigma)
    k = f"k={LATTICE_K}"
    if law_name == "laplace":
        return Guarantee(epsilon=float(meas.map(sensitivity)), delta=0.0, rho=None,
                         measurement=f"opendp make_laplace(scale={sigma!r}, {k}) on l1; pure epsilon = map(Delta)")
    rho = float(meas.map(sensitivity))  # OpenDP's own zCDP statement, recorded for a cross-check
    eps = _epsilon_at(float(delta), sensitivity, sigma, n_components)
    return Guarantee(epsilon=eps, delta=float(delta), rho=rho,
                     measurement=f"opendp make_gaussian(scale={sigma!r}, {k}) on l2; epsilon at delta from the exact "
                                 f"privacy profile of the lattice Gaussian (Balle & Wang 2018 Thm 8, Canonne, Kamath & "
                                 f"Steinke 2020 Thm 7, lattice error <= 4 J 2^k / sigma); OpenDP's zCDP rho = "
                                 f"map(Delta) recorded as rho_guaranteed")


def _smallest(ok, lo: float, hi: float, rtol: float) -> float:
    """The smallest x in [lo, hi] with ``ok(x)`` for a monotone ``ok`` (``ok(hi)`` true), by bisection to ``rtol``,
    ending on the safe side (the returned x satisfies ``ok``)."""
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _epsilon_at(delta: float, sensitivity: float, sigma: float, n_components: int) -> float:
    """The smallest ε (to 1e-12 relative, rounded up) with ``lattice_gaussian_delta(ε) <= δ``."""
    def ok(e):
        return lattice_gaussian_delta(e, sensitivity, sigma, n_components) <= delta

    if ok(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while not ok(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # pragma: no cover - δ below the lattice error
            return math.inf
    return _smallest(ok, lo, hi, 1e-12)


class OpenDPSampler:
    """Floating-point-safe release sampler of a product law (see the module docstring).

    Parameters
    ----------
    law : NoiseLaw
        :class:`~fdp_ppl.noise.laws.Laplace` or :class:`~fdp_ppl.noise.laws.Normal` (``law.fp_safe``).
    n_components : int
        Number J of released coefficients.

    Raises
    ------
    CompatibilityError
        A law without an OpenDP sampler (elliptical laws), or OpenDP missing.
    InputError
        J < 1.

    Examples
    --------
    >>> s = OpenDPSampler(Laplace(), 3)                                       # doctest: +SKIP
    >>> s.draw(np.zeros(3), np.ones(3), 5).shape                              # doctest: +SKIP
    (5, 3)
    """

    generator = NAME
    fp_safe = True

    def __init__(self, law: NoiseLaw, n_components: int):
        self._law_name = _check_law(law)
        self.law = law
        self.n_components = int(n_components)
        if self.n_components < 1:
            raise InputError(f"the number of coefficients must be >= 1, got {n_components!r}")
        _dp()  # fail at construction if OpenDP is missing

    # ------------------------------------------------------------------ calibration
    @staticmethod
    def calibrate_sigma(law: NoiseLaw, sensitivity, epsilon: float, delta: float, n_components: int,
                        sigma: float) -> float:
        """The smallest σ' >= σ whose OpenDP guarantee is within the claimed (ε, δ).

        Laplace: σ itself unless OpenDP's rounded-up ``map(Δ)`` exceeds ε (then σ
        is raised by a few ulps). Normal: the smallest σ' >= σ whose exact lattice
        profile (:func:`lattice_gaussian_delta`) gives δ(ε) <= δ (1 − 1e-9), by
        bisection (relative tolerance 1e-10, ending on the safe side): the
        analytic σ up to about 1e-9.

        Parameters
        ----------
        law : NoiseLaw
        sensitivity : Sensitivity
            Δ and its norm (must be a whitened ℓ¹ norm for Laplace, ℓ² for Normal).
        epsilon, delta : float
            The mechanism's claimed privacy of one draw.
        n_components : int
        sigma : float
            The mechanism's own σ (e.g. Δ/ε, the classical or analytic Gaussian σ).

        Returns
        -------
        float
            σ' >= σ.

        Raises
        ------
        CompatibilityError
            A law without an OpenDP sampler or a sensitivity in another norm.
        """
        name = _check_law(law)
        _check_norm(name, sensitivity.norm)
        return _calibrate_sigma(name, int(n_components), float(sensitivity.value), float(epsilon), float(delta),
                                float(sigma))

    def guarantee(self, calibration, delta: float = 0.0) -> Guarantee:
        """OpenDP's privacy map for one draw at the calibration's σ and Δ.

        Parameters
        ----------
        calibration : Calibration
            From ``mechanism.calibrate(spec, bound, generator="opendp")``.
        delta : float
            The mechanism's δ (Normal: the δ at which ε is read off the
            zCDP → approximate-DP profile; ignored for Laplace).

        Returns
        -------
        Guarantee

        Raises
        ------
        CompatibilityError
            A sensitivity in a norm the measurement does not take.
        InputError
            Normal law with δ outside (0, 1).
        """
        _check_norm(self._law_name, calibration.sensitivity.norm)
        if self._law_name == "normal" and not 0 < float(delta) < 1:
            raise InputError(f"the Gaussian guarantee needs delta in (0, 1), got {delta!r}")
        return _guarantee(self._law_name, self.n_components, float(calibration.sigma),
                          float(calibration.sensitivity.value), float(delta) if self._law_name == "normal" else 0.0)

    # ------------------------------------------------------------------ sampling
    def draw(self, centre, scale, n_draws: int = 1, random_seed=None, *, progressbar: bool = False,
             calibration=None, study: bool = False) -> np.ndarray:
        """``n_draws`` independent floating-point-safe draws of ``centre + ξ``, shape (n_draws, J).

        Each draw is one call of the OpenDP measurement of scale σ on the
        whitened centre ``centre / w`` with ``w = scale / σ``, multiplied back by ``w``.

        Parameters
        ----------
        centre : array_like, shape (J,)
            The (non-private) summary coefficients; not kept after the call.
        scale : array_like, shape (J,)
            Public per-coefficient scale (> 0): Laplace ``b_j``, Normal sd ``s_j``.
        n_draws : int
        random_seed : None
            Must be None: OpenDP draws from the operating system and cannot be seeded (a seed without
            ``study=True`` is refused by the package's one seed rule,
            :func:`fdp_ppl.noise.sampling.check_study`; with it, because OpenDP cannot use it).
        study : bool
            The draws are a study, not a release (the seed rule's flag; OpenDP stays unseeded).
        progressbar : bool
            Show progress over the draws.
        calibration : Calibration, optional
            The mechanism's calibration (gives σ, and must have ``scale``);
            without it σ = 1 (``w = scale``), the same law of the noise.

        Raises
        ------
        InputError
            A seed; shapes that do not match J; scales that are not finite and
            > 0; a whitened centre that is not finite; n_draws < 1; a scale
            different from the calibration's.
        """
        from .seeds import check_fresh_draw

        check_fresh_draw("opendp", random_seed, study)
        centre = np.asarray(centre, dtype=float)
        scale = np.asarray(scale, dtype=float)
        J = self.n_components
        if centre.shape != (J,) or scale.shape != (J,):
            raise InputError(f"centre and scale must have shape ({J},), got {centre.shape} and {scale.shape}")
        if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise InputError("noise scales must be finite and > 0")
        n_draws = int(n_draws)
        if n_draws < 1:
            raise InputError("draws must be >= 1")
        if calibration is None:
            sigma = 1.0
        else:
            sigma = float(calibration.sigma)
            if not np.array_equal(np.asarray(calibration.scale, dtype=float), scale):
                raise InputError("the scale differs from the calibration's scale",
                                 "pass calibration.scale with its calibration")
        w = scale / sigma
        x = centre / w
        if not np.all(np.isfinite(x)):
            raise InputError("the whitened centre centre/w is not finite",
                             "check the summary coefficients and the noise scale")
        meas = _measurement(self._law_name, J, sigma)
        xs = np.ascontiguousarray(x, dtype=np.float64)  # OpenDP converts an array in one copy (a list: per element)
        steps = range(n_draws)
        if progressbar and n_draws > 1:
            from rich.progress import track

            steps = track(steps, description=f"{self.law.name} releases (OpenDP)")
        out = np.empty((n_draws, J))
        for i in steps:
            out[i] = np.asarray(meas(xs), dtype=float)
        return out * w

    def __repr__(self):
        return f"OpenDPSampler({self.law!r}, n_components={self.n_components})"


@functools.lru_cache(maxsize=256)
def _calibrate_sigma(name: str, J: int, sensitivity: float, epsilon: float, delta: float, sigma: float) -> float:
    def eps_at(s: float) -> float:
        return _guarantee(name, J, s, sensitivity, delta if name == "normal" else 0.0).epsilon

    if name == "normal":  # the smallest σ' >= σ whose exact lattice profile gives δ(ε) <= δ (1 - margin)
        target = delta * (1.0 - _DELTA_MARGIN)

        def ok(s):
            return lattice_gaussian_delta(epsilon, sensitivity, s, J) <= target

        if ok(sigma):
            return sigma
        lo, hi = sigma, sigma * (1 + 1e-6)
        while not ok(hi):
            lo, hi = hi, sigma + 2.0 * (hi - sigma)
        return _smallest(ok, lo, hi, _SIGMA_RTOL)
    if eps_at(sigma) <= epsilon:
        return sigma
    # Laplace: only OpenDP's upward rounding of Δ/σ, a few ulps
    s = sigma
    for _ in range(64):
        s = math.nextafter(s, math.inf)
        if eps_at(s) <= epsilon:
            return s
    s = sigma * (1 + 1e-12)
    while eps_at(s) > epsilon:  # pragma: no cover - not reached for finite inputs
        s *= 1 + 1e-12
    return s


#: bits of the public candidate lattice of :func:`private_quantile`: ``2^QUANTILE_BITS + 1`` equally spaced candidates
QUANTILE_BITS = 10


def quantile_candidates(domain, bits: int = QUANTILE_BITS) -> np.ndarray:
    """The public candidate lattice of :func:`private_quantile` on ``domain = (lo, hi)``: ``lo + (hi − lo) i/2^bits``,
    ``i = 0, …, 2^bits``; shape ``(2^bits + 1,)``, the data's units.

    Raises
    ------
    InputError
        A domain that is not finite with ``lo < hi``.
    """
    lo, hi = (float(v) for v in domain)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"the quantile domain must be finite with lo < hi, got ({lo:g}, {hi:g})",
                         "pass the public domain (lo, hi)")
    return lo + (hi - lo) * np.arange(2**int(bits) + 1) / 2.0**int(bits)


@functools.lru_cache(maxsize=64)
def _quantile_measurement(n: int, alpha: float, epsilon: float, candidates: tuple):
    """OpenDP's quantile measurement on vectors of the public size ``n`` with ``map(2) <= epsilon`` (replace-one is
    symmetric distance 2; the map is ``c/scale``, so the scale is ``c(1)/ε``, nudged up past OpenDP's rounding)."""
    dp = _dp()

    def make(scale):
        return dp.m.make_private_quantile(dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(n)),
                                          dp.symmetric_distance(), dp.max_divergence(), candidates=list(candidates),
                                          alpha=float(alpha), scale=float(scale))

    scale = make(1.0).map(2) / epsilon
    meas = make(scale)
    while meas.map(2) > epsilon:  # pragma: no cover - OpenDP's map rounds up by a few ulp at most
        scale = math.nextafter(scale, math.inf)
        meas = make(scale)
    return meas


def private_quantile(x, alpha: float, epsilon: float, domain, bits: int = QUANTILE_BITS) -> float:
    """ε-DP ``alpha``-quantile of ``x`` on a public candidate lattice, floating-point safe (OpenDP).

    The exponential mechanism for quantiles (Smith 2011) restricted to the public lattice
    :func:`quantile_candidates`: OpenDP's ``make_private_quantile`` scores every candidate by its integer rank
    error and selects one by report-noisy-max with exponential noise under ``MaxDivergence`` (equivalent to
    permute-and-flip, McKenna & Sheldon 2020), sampled and compared in exact arbitrary precision, so its privacy
    map holds for the computed selection: ``ε`` for
    replace-one neighbours with ``n`` public (symmetric distance 2 on vectors of known size). The output is a
    candidate, a public float: its support is the same for every data set (no float attack, Mironov 2012).
    What the lattice costs: the quantile is resolved to ``(hi − lo)/2^bits`` (1/1024 of the domain by
    default); ε is unchanged.

    Parameters
    ----------
    x : array_like, shape (n,)
        Observations (clipped to ``domain``; ``n`` public).
    alpha : float
        In [0, 1].
    epsilon : float
        ε of this quantile (pure).
    domain : (float, float)
        Public ``(lo, hi)``.
    bits : int
        Lattice bits.

    Returns
    -------
    float
        A candidate of :func:`quantile_candidates`.

    Raises
    ------
    InputError
        Non-finite observations, an empty ``x``, ε <= 0, ``alpha`` outside [0, 1], a bad domain.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_ppl.noise.opendp import private_quantile, quantile_candidates
    >>> q = private_quantile(np.linspace(0, 1, 101), 0.5, 1.0, (0.0, 1.0))
    >>> bool(q in quantile_candidates((0.0, 1.0))), abs(q - 0.5) < 0.2
    (True, True)
    """
    cand = quantile_candidates(domain, bits)
    x = np.clip(np.asarray(x, dtype=float).ravel(), cand[0], cand[-1])
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise InputError("a private quantile needs finite observations", "drop missing values first")
    if not (epsilon > 0 and math.isfinite(epsilon)) or not 0.0 <= alpha <= 1.0:
        raise InputError(f"need epsilon > 0 and alpha in [0, 1], got {epsilon!r}, {alpha!r}",
                         "pass e.g. epsilon=0.25, alpha=0.5")
    meas = _quantile_measurement(int(x.size), float(alpha), float(epsilon), tuple(cand.tolist()))
    return float(meas(x.tolist()))


__all__ = ["OpenDPSampler", "Guarantee", "NAME", "LATTICE_K", "NORMS", "QUANTILE_BITS", "lattice_error",
           "lattice_gaussian_delta", "private_quantile", "quantile_candidates"]
