"""Warnings, exceptions and input validation shared by every module."""

from __future__ import annotations

import numbers

import math


class FdpPplError(Exception):
    """Base class of the package's errors: a message that says what is wrong and how to fix it.

    Parameters
    ----------
    message : str
        What is wrong.
    fix : str, optional
        What to do instead; appended to the message after ``"; "`` and kept in
        :attr:`fix`, so a command line prints the library's message unchanged.
    """

    def __init__(self, message: str, fix: str = ""):
        self.message = str(message)
        self.fix = str(fix)
        super().__init__(self.message + (f"; {self.fix}" if self.fix else ""))


class InputError(FdpPplError, ValueError):
    """Bad input: a parameter out of range, NaN curves, wrong dims ... (DESIGN invariant 7)."""


class SchemaError(FdpPplError, ValueError):
    """A tree is not a release / inference result of a schema this version reads."""


class PrivacyLeakWarning(UserWarning):
    """A quantity that should be public was derived from the private data.

    Raised (as a warning) whenever a sensitivity, clipping bound or tuning
    parameter was computed from the confidential records; the result is then
    labelled ``data_dependent`` and carries no formal guarantee.
    """


class SeededReleaseWarning(UserWarning):
    """A release drew its noise from a caller's seed: anyone who learns the seed can
    regenerate the noise and subtract it, so the release is private only while
    the seed stays secret. For studies and tests; real releases pass no seed."""


class BudgetExceededError(FdpPplError, ValueError):
    """A release would spend more privacy budget than the ledger has left."""


class LedgerError(FdpPplError, ValueError):
    """A privacy ledger file that is not a ledger or fails its validation (edited, truncated, damaged):
    refused, never reset or re-budgeted."""


class CompatibilityError(FdpPplError, ValueError):
    """A summary and a mechanism do not fit (different eigenbases, norms ...)."""


def check_epsilon(epsilon) -> float:
    """Return ``epsilon`` as a float after checking ``0 < epsilon < inf``.

    Raises
    ------
    ValueError
        If epsilon is not a finite positive number.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise InputError(f"epsilon must be a positive number, got {epsilon!r}", "pass e.g. epsilon=1.0")
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0:
        raise InputError(f"epsilon must be finite and > 0, got {epsilon!r}", "pass e.g. epsilon=1.0")
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
        raise InputError(f"delta must be a number in (0, 1), got {delta!r}", "pass e.g. delta=1e-5")
    d = float(delta)
    lo_ok = d >= 0 if allow_zero else d > 0
    if not (math.isfinite(d) and lo_ok and d < 1):
        rng = "[0, 1)" if allow_zero else "(0, 1)"
        raise InputError(f"delta must lie in {rng}, got {delta!r}", "pass e.g. delta=1e-5")
    return d


def check_positive(value, name: str, fix: str = "") -> float:
    """Return ``value`` as a float after checking it is finite and > 0.

    Raises
    ------
    ValueError
        If the value is not finite and positive; the message names ``fix``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a positive number, got {value!r}", fix)
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be finite and > 0, got {value!r}", fix)
    return v


__all__ = [
    "FdpPplError",
    "InputError",
    "LedgerError",
    "SchemaError",
    "PrivacyLeakWarning",
    "SeededReleaseWarning",
    "BudgetExceededError",
    "CompatibilityError",
    "check_epsilon",
    "check_delta",
    "check_positive",
]
