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
``FDP_PPL_FAST``               ``1``: notebooks and experiments run in their fast mode
=============================  ==========================================================
"""

from __future__ import annotations

import os

#: environment variable naming the data directory
DATA_DIR_ENV = "FDP_PPL_DATA_DIR"
#: environment variable overriding the PyTensor mode
PYTENSOR_MODE_ENV = "FDP_PPL_PYTENSOR_MODE"
#: environment variable of the fast mode of notebooks and experiments
FAST_ENV = "FDP_PPL_FAST"

#: MCMC diagnostics: warn above this R-hat (Vehtari et al. 2021)
MAX_RHAT = 1.01
#: MCMC diagnostics: warn below this bulk / tail ESS per chain
MIN_ESS_PER_CHAIN = 100
#: draws per call of a compiled release sampler (bounds memory; a progress step)
RELEASE_CHUNK = 1000
#: relative jitter added to GP kernel matrices for a stable Cholesky
GP_JITTER = 1e-6


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


def fast_mode() -> bool:
    """True when ``FDP_PPL_FAST=1`` (notebooks and experiments in their fast mode)."""
    return os.environ.get(FAST_ENV, "0") == "1"


__all__ = ["compile_mode", "fast_mode", "DATA_DIR_ENV", "PYTENSOR_MODE_ENV", "FAST_ENV", "MAX_RHAT",
           "MIN_ESS_PER_CHAIN", "RELEASE_CHUNK", "GP_JITTER"]
