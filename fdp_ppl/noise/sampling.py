"""Compiled release samplers without shared state.

A :class:`CompiledSampler` owns one compiled PyTensor function that draws
``n`` i.i.d. released coefficient vectors ``Law(centre, scale)`` for a noise
law and a number of coefficients ``J``. The summary's coefficients, the
public scales, the number of draws **and the random generators** are
explicit inputs of every call: nothing non-private is stored between calls,
the sampler can be shared by threads (calls are serialised by a lock, since a
compiled function reuses its storage), and its seeding does not depend on
earlier calls.

:func:`sampler_for` returns the sampler of a (law, J, generator) pair,
compiled once per process; benchmarks can also build one directly to time
the compilation.

Generators (:func:`register_generator`, :func:`generators`):

* ``"pymc"``: the PyMC graph of the law compiled with PyTensor; fast and
  seedable (studies, tests), but its float64 noise is **not floating-point
  safe** (numpy's ``loc + b·log(2U)`` reaches a centre-dependent set of
  floats; Mironov 2012).
* ``"opendp"``: :class:`fdp_ppl.noise.opendp.OpenDPSampler`, exact discrete
  noise on a lattice with OpenDP's privacy map (Laplace and Normal laws,
  ``law.fp_safe``); fresh OS entropy only, never seeded.

* ``"snapped"``: :class:`fdp_ppl.noise.snapping.SnappedSampler`, the compiled
  sampler's float noise released on a public dithered lattice, with the
  rounding's cost added to δ (laws without an exact sampler: elliptical);
  fresh OS entropy only, never seeded.
* ``"lattice"``: :class:`fdp_ppl.noise.lattice.LatticeSampler`, exact K-norm or multivariate t noise on a
  public whitened lattice with a **pure** ε guarantee (the ellipsoidal K-norm law, σ raised by ``h√J/ε``, about
  10⁻⁹ relative; the t law, σ raised by ``h√J/a_ε``, ``a_ε = 2√ν sinh(ε/(ν + J))``, about 10⁻⁸); fresh OS
  entropy only, never seeded.

:func:`resolve_generator` picks the default of a release: ``"opendp"`` for an
unseeded release of a floating-point-safe law, ``"lattice"`` for an unseeded
pure K-norm or t release, ``"snapped"`` for an unseeded (ε, δ) release of another
law, ``"pymc"`` when seeded.

Examples
--------
>>> import fdp_ppl as fp
>>> fp.sampling.generators()
('pymc', 'opendp', 'snapped', 'lattice')
>>> law = fp.laws.Laplace()
>>> fp.sampling.resolve_generator(law), fp.sampling.resolve_generator(law, random_seed=1)
('opendp', 'pymc')
"""

from __future__ import annotations

import numbers
import threading
import warnings
from typing import Callable

import numpy as np

from .laws import NoiseLaw
from .seeds import STUDY, check_study  # noqa: F401  (the one seed rule; re-exported here)
from ..settings import RELEASE_CHUNK, compile_mode


def seed_sequence(random_seed=None) -> np.random.SeedSequence:
    """A :class:`numpy.random.SeedSequence` from ``random_seed``.

    ``None`` draws 128 bits of fresh entropy from the operating system. An
    int, a sequence of ints or a ``numpy.random.Generator`` is a reproducible
    seed for studies and tests, mapped exactly as the package always has
    (so seeded studies keep their numbers); a SeedSequence is used as is.
    """
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    if random_seed is None:
        return np.random.SeedSequence()
    if isinstance(random_seed, np.random.Generator):
        return np.random.SeedSequence(int(random_seed.integers(2**63)))
    if isinstance(random_seed, numbers.Integral):
        return np.random.SeedSequence(np.random.SeedSequence(int(random_seed)).generate_state(2).tolist())
    return np.random.SeedSequence(np.random.SeedSequence(list(random_seed)).generate_state(2).tolist())




class CompiledSampler:
    """Exact forward sampler of a noise law for J coefficients (see the module docstring).

    Parameters
    ----------
    law : NoiseLaw
    n_components : int
        Number J of released coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_ppl as fp
    >>> fp.CompiledSampler.generator, fp.CompiledSampler.fp_safe   # seedable, not floating-point safe
    ('pymc', False)

    Building one compiles a PyTensor function (about 1 s warm, 10 s cold), so it is not run here:

    >>> sampler = fp.CompiledSampler(fp.laws.Laplace(), 3)                        # doctest: +SKIP
    >>> sampler.draw(np.zeros(3), np.ones(3), 5, random_seed=1, study=True).shape  # doctest: +SKIP
    (5, 3)
    >>> sampler.draw(np.zeros(3), np.ones(3), 5, random_seed=1)                   # doctest: +SKIP
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: a random_seed makes the noise reproducible by anyone who knows or guesses it, ...

    See Also
    --------
    fdp_ppl.noise.opendp.OpenDPSampler : the floating-point-safe generator of unseeded releases.
    """

    generator = "pymc"
    #: float64 noise from numpy: not floating-point safe (see the module docstring)
    fp_safe = False

    def __init__(self, law: NoiseLaw, n_components: int):
        import pytensor
        import pytensor.tensor as pt
        from pytensor.graph.traversal import graph_inputs
        from pytensor.graph.replace import graph_replace
        from pymc.pytensorf import collect_default_updates
        from pytensor.tensor.random.type import RandomGeneratorType

        self.law = law
        self.n_components = int(n_components)
        centre = pt.vector("centre", shape=(self.n_components,))
        scale = pt.vector("scale", shape=(self.n_components,))
        n = pt.lscalar("n_draws")
        out = law.rv(centre, scale, n)
        shared_rngs = [v for v in graph_inputs([out]) if isinstance(v.type, RandomGeneratorType)]
        updates = collect_default_updates(outputs=[out])
        rngs = [v.type() for v in shared_rngs]
        replace = dict(zip(shared_rngs, rngs))
        # outputs: the draws and the advanced generators (so chunks continue one stream per variable)
        outs = graph_replace([out, *(updates[r] for r in shared_rngs)], replace, strict=False)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*BLAS.*")
            self._fn = pytensor.function([*rngs, centre, scale, n], outs, mode=compile_mode(),
                                         on_unused_input="ignore")
        self.n_rngs = len(rngs)
        self._lock = threading.Lock()

    def draw(self, centre, scale, n_draws: int = 1, random_seed=None, *, progressbar: bool = False,
             calibration=None, study: bool = False) -> np.ndarray:
        """``n_draws`` exact draws of ``centre + ξ``, shape (n_draws, J).

        Parameters
        ----------
        centre : array_like, shape (J,)
            The (non-private) summary coefficients; not kept after the call.
        scale : array_like, shape (J,)
            Public per-coefficient scale (> 0).
        n_draws : int
        random_seed : None, int, sequence, Generator or SeedSequence
            None: fresh OS entropy (128 bits). Any other value needs ``study=True`` (:func:`check_study`).
        progressbar : bool
            Show progress over chunks of :data:`~fdp_ppl.settings.RELEASE_CHUNK` draws.
        calibration : Calibration, optional
            Accepted for the common generator interface; not needed (the scale says it all).
        study : bool
            The draws are a study (a simulation, a test, a reproduction), not a release: the only way to seed.

        Raises
        ------
        InputError
            A ``random_seed`` without ``study=True`` (before anything is drawn); shapes that do not match J,
            scales that are not finite and > 0, n_draws < 1.
        """
        from ..errors import InputError

        check_study(random_seed, study)

        centre = np.asarray(centre, dtype=float)
        scale = np.asarray(scale, dtype=float)
        if centre.shape != (self.n_components,) or scale.shape != (self.n_components,):
            raise InputError(f"centre and scale must have shape ({self.n_components},), got {centre.shape} and "
                             f"{scale.shape}")
        if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise InputError("noise scales must be finite and > 0")
        n_draws = int(n_draws)
        if n_draws < 1:
            raise InputError("draws must be >= 1")
        # one PCG64 stream per random variable of the law (PyMC's reseed_rngs convention), continued across chunks
        gens = [np.random.Generator(np.random.PCG64(c)) for c in seed_sequence(random_seed).spawn(self.n_rngs)]
        sizes = [min(RELEASE_CHUNK, n_draws - i) for i in range(0, n_draws, RELEASE_CHUNK)]
        if progressbar and len(sizes) > 1:
            from rich.progress import track

            sizes = track(sizes, description=f"{self.law.name} releases")
        parts = []
        for size in sizes:
            with self._lock:
                value, *gens = self._fn(*gens, centre, scale, size)
                parts.append(np.array(value, dtype=float, copy=True))
        return np.concatenate(parts, axis=0)

    def guarantee(self, calibration, delta: float = 0.0):
        """None: this sampler adds nothing to the mechanism's nominal (ε, δ), which
        hold for continuous noise, not for its float64 rounding."""
        return None

    def __repr__(self):
        return f"CompiledSampler({self.law!r}, n_components={self.n_components})"


_GENERATORS: dict[str, Callable[[NoiseLaw, int], object]] = {"pymc": CompiledSampler}
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def register_generator(name: str, factory: Callable[[NoiseLaw, int], object]) -> None:
    """Register a sampler factory ``factory(law, J)`` under ``name``.

    The object it returns must have ``draw(centre, scale, n_draws, random_seed,
    progressbar=, calibration=)`` (``calibration`` is the mechanism's
    :class:`~fdp_ppl.noise.mechanisms.Calibration`, or None), ``guarantee(calibration,
    delta)`` (the privacy one draw actually has, or None for the nominal one),
    and the attributes ``generator`` (its name) and ``fp_safe``. A factory may
    have ``calibrate_sigma(law, sensitivity, epsilon, delta, J, sigma)``
    returning the σ' >= σ its guarantee needs (:func:`generator_sigma`). A
    floating-point-safe factory (``fp_safe = True``) samples only laws with
    ``law.fp_safe`` and is never seeded (:func:`resolve_generator`)."""
    _GENERATORS[str(name)] = factory


def generators() -> tuple[str, ...]:
    """Names of the registered release generators."""
    return tuple(_GENERATORS)


def _factory(generator: str):
    from ..errors import InputError

    if generator not in _GENERATORS:
        raise InputError(f"unknown release generator {generator!r}", f"use one of {generators()}")
    return _GENERATORS[generator]


def resolve_generator(law: NoiseLaw, generator: str | None = None, random_seed=None, *, pure: bool = False,
                      n_components: int | None = None) -> str:
    """The release generator for ``law``: the caller's choice, checked, or the default.

    Default (``generator=None``): ``"opendp"`` (floating-point safe) when
    ``random_seed is None`` and the law has an OpenDP sampler (``law.fp_safe``);
    ``"lattice"`` (floating-point safe, exact, pure ε) when ``random_seed is
    None`` for a pure mechanism (``pure=True``) of the K-norm or t law;
    ``"snapped"`` (floating-point safe, dithered lattice) when ``random_seed is
    None`` for the other laws (elliptical) of an (ε, δ) mechanism, whose σ
    absorbs the rounding's δ; ``"pymc"`` when a seed is given (seeded studies
    keep their numbers), the law cannot be snapped (t, ν <= 1), or the
    mechanism is pure and its law has no exact lattice sampler (the Laplace
    process; a t whose lattice design does not fit at ``n_components``, when
    given: very small or very large ν): the dithered lattice would turn its
    ε-DP into (ε, δ)-DP; ask for ``generator="snapped"`` to make that trade.

    Raises
    ------
    InputError
        An unknown generator, or ``"opendp"`` with a seed (OpenDP cannot be seeded).
    CompatibilityError
        A generator that cannot sample this law (``"opendp"`` with an elliptical law).
    """
    from ..errors import CompatibilityError, InputError

    if generator is None:
        if random_seed is not None:
            return "pymc"
        if law.fp_safe:
            return OPENDP
        if pure and LatticeSampler.supports(law, n_components):
            return LATTICE
        return SNAPPED if snappable(law) and not pure else "pymc"
    factory = _factory(generator)
    if getattr(factory, "fp_safe", False):
        if random_seed is not None:
            raise InputError(f"the {generator!r} release generator draws fresh OS entropy and cannot be seeded",
                             "pass random_seed=None, or generator='pymc' for a reproducible study (its noise is "
                             "not floating-point safe)")
        if not (law.fp_safe or (getattr(factory, "snaps", False) and snappable(law))
                or getattr(factory, "supports", lambda law: False)(law)):
            raise CompatibilityError(f"the {law.name!r} noise law has no floating-point-safe sampler",
                                     "release it with generator='pymc' (not floating-point safe)")
    return generator


def generator_sigma(generator: str, law: NoiseLaw, sensitivity, epsilon: float, delta: float, n_components: int,
                    sigma: float) -> float:
    """σ' >= σ that ``generator`` needs for its own guarantee to be within (ε, δ)
    (its factory's ``calibrate_sigma``; σ itself for generators without one).

    Raises
    ------
    InputError
        An unknown generator.
    """
    hook = getattr(_factory(generator), "calibrate_sigma", None)
    return float(sigma) if hook is None else float(hook(law, sensitivity, epsilon, delta, n_components, sigma))


def generator_attrs(sampler, calibration, epsilon: float, delta: float) -> dict:
    """Release attributes about the noise generator.

    ``noise_generator``; ``fp_safe`` (1/0); ``epsilon_guaranteed`` and
    ``delta_guaranteed`` (per draw: OpenDP's map for a floating-point-safe
    generator, else the nominal ε, δ); ``noise_sigma_source`` (which σ:
    the mechanism's calibration or the generator's); ``privacy_guarantee``
    and ``fp_safety`` (one sentence each); ``rho_guaranteed`` (zCDP ρ of
    one draw, Normal law on the OpenDP path).
    """
    guarantee = getattr(sampler, "guarantee", None)
    g = (None if guarantee is None else guarantee(calibration, delta, epsilon=epsilon)
         if getattr(sampler, "guarantee_needs_epsilon", False) else guarantee(calibration, delta))
    safe = bool(getattr(sampler, "fp_safe", False)) and g is not None
    out = {"noise_generator": sampler.generator, "fp_safe": int(safe),
           "epsilon_guaranteed": float(g.epsilon) if safe else float(epsilon),
           "delta_guaranteed": float(g.delta) if safe else float(delta),
           "noise_sigma_source": getattr(calibration, "sigma_source", "mechanism")}
    if safe:
        out["privacy_guarantee"] = g.measurement
        out["fp_safety"] = getattr(g, "fp_safety", None) or (
            "floating-point safe: exact discrete noise on the lattice 2^-1074 Z of the whitened coefficients "
            "(OpenDP), rescaled by public weights (post-processing)")
        if g.rho is not None:
            out["rho_guaranteed"] = float(g.rho)
    else:
        out["privacy_guarantee"] = "nominal (epsilon, delta) of the mechanism for continuous noise"
        reason = ("the law has no floating-point-safe sampler" if not (sampler.law.fp_safe or snappable(sampler.law))
                  else "drawn by the compiled float64 sampler")
        out["fp_safety"] = (f"NOT floating-point safe ({reason}): float64 noise reaches a centre-dependent set of "
                            "values (Mironov 2012), so the guarantee holds for the continuous law only")
    return out


def sampler_for(law: NoiseLaw, n_components: int, generator: str = "pymc"):
    """The sampler of (law, J, generator), built once per process and shared (thread safe).

    Raises
    ------
    InputError
        An unknown generator.
    """
    factory = _factory(generator)
    key = (generator, law, int(n_components))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = factory(law, int(n_components))
        return _CACHE[key]


def clear_cache() -> None:
    """Forget the compiled samplers (benchmarks time cold compilation with it)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def draw_releases(mechanism, summary, scale, draws: int = 1, random_seed=None, progressbar: bool = False,
                  generator: str = "pymc", calibration=None, *, study: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Exact i.i.d. draws of released coefficients and curves (no bookkeeping, no ledger).

    For simulation studies (default generator ``"pymc"``: fast, seedable, not
    floating-point safe); a publication goes through :func:`fdp_ppl.release`.
    ``calibration`` is passed to the sampler (the ``"opendp"`` generator takes σ from it).
    ``summary`` may be computed from real records, so the draws look like a release: a
    ``random_seed`` needs ``study=True`` (:func:`check_study`, the rule of :func:`fdp_ppl.release`).

    Returns
    -------
    coefficients : ndarray, shape (draws, J)
    curves : ndarray, shape (draws, K)

    Raises
    ------
    InputError
        A ``random_seed`` without ``study=True`` (before anything is drawn); bad shapes or ``draws`` < 1.
    """
    check_study(random_seed, study)
    sampler = sampler_for(mechanism.law, summary.n_components, generator)
    coef = sampler.draw(summary.coefficients, scale, draws, random_seed, progressbar=progressbar, study=study,
                        calibration=calibration)
    return coef, coef @ summary.design.T


# the floating-point-safe generator (it does not import this module, and imports opendp only when used)
from .opendp import NAME as OPENDP  # noqa: E402
from .opendp import OpenDPSampler  # noqa: E402

register_generator(OPENDP, OpenDPSampler)
# the floating-point-safe generator of laws without an exact sampler (dithered lattice rounding)
from .snapping import NAME as SNAPPED  # noqa: E402
from .snapping import SnappedSampler, snappable  # noqa: E402

SnappedSampler.float_sampler = staticmethod(lambda law, n_components: sampler_for(law, n_components, "pymc"))
register_generator(SNAPPED, SnappedSampler)
# the exact pure-epsilon generator of the K-norm law (public whitened lattice, exact rejection sampler)
from .lattice import NAME as LATTICE  # noqa: E402
from .lattice import LatticeSampler  # noqa: E402

register_generator(LATTICE, LatticeSampler)

__all__ = ["CompiledSampler", "OpenDPSampler", "OPENDP", "SnappedSampler", "SNAPPED", "LatticeSampler", "LATTICE", "sampler_for", "draw_releases", "seed_sequence",
           "register_generator", "generators", "resolve_generator", "generator_sigma", "generator_attrs",
           "clear_cache"]
