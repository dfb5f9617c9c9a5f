"""Numba's ``njit`` when Numba is importable, else a no-op decorator (the compiled loops then run as Python).

Numba comes with PyTensor; the compiled loops of :mod:`fdp_ppl.kde._l1` import
``njit`` from here, so the fallback is written once. ``HAVE_NUMBA`` says which one is in use (a caller with a
faster numpy path than the Python loop checks it).
"""

from __future__ import annotations

try:  # Numba comes with PyTensor
    from numba import njit
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - numba missing
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

__all__ = ["HAVE_NUMBA", "njit"]
