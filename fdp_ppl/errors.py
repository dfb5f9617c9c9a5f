"""Warnings, exceptions and input validation shared by every module."""

from __future__ import annotations

import numbers

import numpy as np


class PrivacyLeakWarning(UserWarning):
    """A quantity that should be public was derived from the private data.

    Raised (as a warning) whenever a sensitivity, clipping bound or tuning
    parameter was computed from the confidential records; the result is then
    labelled ``data_dependent`` and carries no formal guarantee.
    """


class BudgetExceededError(ValueError):
    """A release would spend more privacy budget than the ledger has left."""


class CompatibilityError(ValueError):
    """A summary and a mechanism do not fit (different eigenbases, norms ...)."""


def check_epsilon(epsilon) -> float:
    """Return ``epsilon`` as a float after checking ``0 < epsilon < inf``.

    Raises
    ------
    ValueError
        If epsilon is not a finite positive number.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}")
    eps = float(epsilon)
    if not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}; pass e.g. epsilon=1.0")
    return eps


def check_delta(delta, *, allow_zero: bool = False) -> float:
    """Return ``delta`` as a float after checking ``0 < delta < 1``.

    ``allow_zero=True`` also accepts 0 (pure differential privacy).

    Raises
    ------
    ValueError
        If delta is not in (0, 1) (or [0, 1) when ``allow_zero``).
    """
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    d = float(delta)
    lo_ok = d >= 0 if allow_zero else d > 0
    if not (np.isfinite(d) and lo_ok and d < 1):
        rng = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"delta must lie in {rng}, got {delta!r}; pass e.g. delta=1e-5")
    return d


def check_positive(value, name: str, fix: str = "") -> float:
    """Return ``value`` as a float after checking it is finite and > 0.

    Raises
    ------
    ValueError
        If the value is not finite and positive; the message names ``fix``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}" + (f"; {fix}" if fix else ""))
    return v


__all__ = [
    "PrivacyLeakWarning",
    "BudgetExceededError",
    "CompatibilityError",
    "check_epsilon",
    "check_delta",
    "check_positive",
]
