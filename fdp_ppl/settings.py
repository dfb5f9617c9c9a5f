"""One home for the package's settings: compile mode, data directory, MCMC
diagnostic thresholds and numerical tolerances.

Each setting reads its environment variable when asked (not at import), so a
test or a notebook can change it with ``os.environ`` / ``monkeypatch``.

=============================  ==========================================================
environment variable           meaning
=============================  ==========================================================
``FDP_PPL_PYTENSOR_MODE``      PyTensor mode of the package's compiled functions
                               (default ``"CVM"``, the C backend, unless ``PYTENSOR_FLAGS``
                               sets a mode)
``FDP_PPL_DATA_DIR``           directory of the NetCDF datasets (see
                               :func:`fdp_ppl.datasets.data_directory`)
``FDP_PPL_FAST``               ``1``: notebooks and studies run in their fast mode
``FDP_PPL_BLAS_THREADS``       BLAS threads in :func:`fdp_ppl.infer` and :func:`fdp_ppl.release` (default 1;
                               ``0``: leave the library's own setting)
=============================  ==========================================================

Examples
--------
>>> import fdp_ppl as fp
>>> fp.settings.MAX_RHAT, fp.settings.MIN_ESS_PER_CHAIN     # MCMC diagnostic thresholds of fp.infer
(1.01, 100)
>>> fp.settings.DATA_DIR_ENV                                # where load_dataset finds the NetCDF files
'FDP_PPL_DATA_DIR'
"""

from __future__ import annotations

import contextlib
import os
import sys

#: environment variable naming the data directory
DATA_DIR_ENV = "FDP_PPL_DATA_DIR"
#: environment variable overriding the PyTensor mode
PYTENSOR_MODE_ENV = "FDP_PPL_PYTENSOR_MODE"
#: environment variable of the fast mode of notebooks and studies
FAST_ENV = "FDP_PPL_FAST"
#: environment variable of the number of BLAS threads during inference
BLAS_THREADS_ENV = "FDP_PPL_BLAS_THREADS"

#: MCMC diagnostics: warn above this R-hat (Vehtari et al. 2021)
MAX_RHAT = 1.01
#: MCMC diagnostics: warn below this bulk / tail ESS per chain
MIN_ESS_PER_CHAIN = 100
#: draws per call of a compiled release sampler (bounds memory; a progress step)
RELEASE_CHUNK = 1000
#: relative jitter added to GP kernel matrices for a stable Cholesky
GP_JITTER = 1e-6
#: inference: a prior covariance of the release's coefficients counts as diagonal when the Kullback-Leibler
#: divergence KL(N(0, P) || N(0, diag P)) = -log det(corr P)/2 is at most this (nats)
DIAGONAL_KL_TOL = 1e-6


#: the share of the available memory one step may plan to use before it is refused
MEMORY_SHARE = 0.8


def available_memory() -> int:
    """Bytes of memory available to a new allocation (``MemAvailable`` of /proc/meminfo; else the free pages)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return 2**62


def check_memory(nbytes: float, what: str, fix: str) -> None:
    """Refuse a step that would need more than :data:`MEMORY_SHARE` of the available memory, before it starts
    (and before any budget is charged): a public check on public sizes.

    Raises
    ------
    InputError
        ``nbytes`` exceeds the share, with ``what`` it is for and ``fix``.
    """
    from .errors import InputError

    have = available_memory()
    if not nbytes <= MEMORY_SHARE * have:
        raise InputError(f"{what} needs about {_gib(nbytes)} of memory, but this machine has {_gib(have)} available",
                         fix)


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n < 2**50 else f"{n / 2**40:.3g} TiB"


def compile_mode() -> str | None:
    """PyTensor mode for the package's compiled functions.

    ``FDP_PPL_PYTENSOR_MODE`` if set; ``None`` (PyTensor's own choice) when
    ``PYTENSOR_FLAGS`` names a mode; otherwise ``"CVM"`` (the C backend,
    about 10× faster to compile than Numba).
    """
    mode = os.environ.get(PYTENSOR_MODE_ENV)
    if mode:
        return mode
    if "mode" in os.environ.get("PYTENSOR_FLAGS", ""):
        return None
    return "CVM"


def inference_blas_threads() -> int | None:
    """BLAS threads while :func:`fdp_ppl.infer` runs and while :func:`fdp_ppl.release` maps its draws to
    curves: ``FDP_PPL_BLAS_THREADS`` or 1; None (``0``) leaves the BLAS library's own setting.

    One thread by default: NUTS makes thousands of calls on small (J ≤ a few hundred) matrices, where
    OpenBLAS's threads only synchronise, and on a machine whose cores are busy with other work two
    threads made each dense 93 × 93 log-density gradient 30–50 times slower (1.1–1.8 ms against
    30–58 ms, DTI ``cca``, ``benchmarks/bench_inference.py``).
    """
    value = os.environ.get(BLAS_THREADS_ENV, "1").strip() or "1"
    n = int(value)
    return None if n <= 0 else n


_BLAS_LIBS: list = []
#: ``len(sys.modules)`` when :data:`_BLAS_LIBS` was last filled
_BLAS_SCAN: list = [-1]


@contextlib.contextmanager
def blas_threads(n: int | None | str = "default", *, rescan: bool = False, children: bool = False):
    """Limit the BLAS libraries' threads to ``n`` inside the block, then restore them.

    Parameters
    ----------
    n : int, None or "default"
        Threads; ``"default"`` reads :func:`inference_blas_threads`; None or 0 changes nothing.
    rescan : bool
        Look for loaded BLAS libraries again (``threadpoolctl``, about 3 ms) if modules were imported since
        the last look (a library loads with the extension module that links it). Otherwise the
        libraries found on the first call are reused, so a limit costs a few microseconds: the
        release path limits the threads of its small draws × basis product on every call.
    children : bool
        Also set ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``OMP_NUM_THREADS`` in the
        environment for the block, so that processes started inside it (PyMC's chains with
        ``cores > 1``) start with the same limit; the previous values are restored after.
    """
    if n == "default":
        n = inference_blas_threads()
    if not n:
        yield
        return
    if not _BLAS_LIBS or (rescan and len(sys.modules) != _BLAS_SCAN[0]):
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with PyMC
            yield
            return
        _BLAS_LIBS[:] = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
        _BLAS_SCAN[0] = len(sys.modules)
    libs = list(_BLAS_LIBS)
    saved_env = {}
    if children:
        for key in _THREAD_ENV:
            saved_env[key] = os.environ.get(key)
            os.environ[key] = str(int(n))
    previous = [lib.get_num_threads() for lib in libs]
    for lib, before in zip(libs, previous):
        if before is not None and before != n:
            lib.set_num_threads(int(n))
    try:
        yield
    finally:
        for lib, before in zip(libs, previous):
            if before is not None and before != n:
                lib.set_num_threads(before)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


#: environment variables read by BLAS libraries when a process starts
_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def fast_mode() -> bool:
    """True when ``FDP_PPL_FAST=1`` (notebooks and studies in their fast mode)."""
    return os.environ.get(FAST_ENV, "0") == "1"


__all__ = ["blas_threads", "compile_mode", "fast_mode", "inference_blas_threads", "DATA_DIR_ENV", "PYTENSOR_MODE_ENV", "FAST_ENV",
           "BLAS_THREADS_ENV", "MAX_RHAT",
           "MIN_ESS_PER_CHAIN", "RELEASE_CHUNK", "GP_JITTER", "DIAGONAL_KL_TOL"]
