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

Generators: ``"pymc"`` (the default, the PyMC graph of the law compiled with
PyTensor) is the only one today; :func:`register_generator` is the seam for a
floating-point-safe generator (OpenDP) per law.
"""

from __future__ import annotations

import numbers
import threading
import warnings
from typing import Callable

import numpy as np

from .laws import NoiseLaw
from .settings import RELEASE_CHUNK, compile_mode


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
    >>> s = CompiledSampler(Laplace(), 3)                                  # doctest: +SKIP
    >>> s.draw(np.zeros(3), np.ones(3), 5, random_seed=1).shape            # doctest: +SKIP
    (5, 3)
    """

    generator = "pymc"

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

    def draw(self, centre, scale, n_draws: int = 1, random_seed=None, *, progressbar: bool = False) -> np.ndarray:
        """``n_draws`` exact draws of ``centre + ξ``, shape (n_draws, J).

        Parameters
        ----------
        centre : array_like, shape (J,)
            The (non-private) summary coefficients; not kept after the call.
        scale : array_like, shape (J,)
            Public per-coefficient scale (> 0).
        n_draws : int
        random_seed : None, int, sequence, Generator or SeedSequence
            None: fresh OS entropy (128 bits).
        progressbar : bool
            Show progress over chunks of :data:`~fdp_ppl.settings.RELEASE_CHUNK` draws.

        Raises
        ------
        InputError
            Shapes that do not match J, scales that are not finite and > 0, n_draws < 1.
        """
        from .errors import InputError

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

    def __repr__(self):
        return f"CompiledSampler({self.law!r}, n_components={self.n_components})"


_GENERATORS: dict[str, Callable[[NoiseLaw, int], object]] = {"pymc": CompiledSampler}
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def register_generator(name: str, factory: Callable[[NoiseLaw, int], object]) -> None:
    """Register a sampler factory ``factory(law, J)`` under ``name`` (e.g. a
    floating-point-safe generator). The object it returns must have
    ``draw(centre, scale, n_draws, random_seed, progressbar=)`` and a
    ``generator`` attribute."""
    _GENERATORS[str(name)] = factory


def generators() -> tuple[str, ...]:
    """Names of the registered release generators."""
    return tuple(_GENERATORS)


def sampler_for(law: NoiseLaw, n_components: int, generator: str = "pymc"):
    """The sampler of (law, J, generator), built once per process and shared (thread safe).

    Raises
    ------
    InputError
        An unknown generator.
    """
    from .errors import InputError

    if generator not in _GENERATORS:
        raise InputError(f"unknown release generator {generator!r}", f"use one of {generators()}")
    key = (generator, law, int(n_components))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _GENERATORS[generator](law, int(n_components))
        return _CACHE[key]


def clear_cache() -> None:
    """Forget the compiled samplers (benchmarks time cold compilation with it)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def draw_releases(mechanism, summary, scale, draws: int = 1, random_seed=None, progressbar: bool = False,
                  generator: str = "pymc") -> tuple[np.ndarray, np.ndarray]:
    """Exact i.i.d. draws of released coefficients and curves (no bookkeeping, no ledger).

    For simulation studies; a publication goes through :func:`fdp_ppl.release`.

    Returns
    -------
    coefficients : ndarray, shape (draws, J)
    curves : ndarray, shape (draws, K)
    """
    sampler = sampler_for(mechanism.law, summary.n_components, generator)
    coef = sampler.draw(summary.coefficients, scale, draws, random_seed, progressbar=progressbar)
    return coef, coef @ summary.design.T


__all__ = ["CompiledSampler", "sampler_for", "draw_releases", "seed_sequence", "register_generator", "generators",
           "clear_cache"]
