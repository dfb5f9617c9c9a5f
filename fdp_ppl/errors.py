"""Warnings, exceptions and input validation shared by every module.

Every error is an :class:`FdpPplError` with a one-line message and a fix; the input errors are also
``ValueError``, so generic handlers keep working.

Examples
--------
>>> import fdp_ppl as fp
>>> try:
...     fp.ICLP(epsilon=-1.0)
... except fp.FdpPplError as err:
...     print(err.message, "|", err.fix)
epsilon must be finite and > 0, got -1.0 | pass e.g. epsilon=1.0
>>> issubclass(fp.InputError, ValueError), issubclass(fp.PrivacyLeakWarning, UserWarning)
(True, True)
"""

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

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> err = fp.InputError("noise scales must be finite and > 0",
    ...                     "pass the public scale from mechanism.calibrate(spec).scale")
    >>> str(err)
    'noise scales must be finite and > 0; pass the public scale from mechanism.calibrate(spec).scale'
    >>> isinstance(err, fp.FdpPplError), err.fix.startswith("pass")
    (True, True)

    See Also
    --------
    InputError, SchemaError, CompatibilityError, BudgetExceededError : its subclasses.
    """

    def __init__(self, message: str, fix: str = ""):
        self.message = str(message)
        self.fix = str(fix)
        super().__init__(self.message + (f"; {self.fix}" if self.fix else ""))


class InputError(FdpPplError, ValueError):
    """Bad input: a parameter out of range, NaN curves, wrong dims ... (DESIGN invariant 7).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> fp.PrivacyBudget(epsilon=0)
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: epsilon must be finite and > 0, got 0; pass e.g. epsilon=1.0
    """


class SchemaError(FdpPplError, ValueError):
    """A tree is not a release / inference result of a schema this version reads.

    Examples
    --------
    >>> import xarray as xr
    >>> import fdp_ppl as fp
    >>> fp.schema.read_release(xr.DataTree())
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.SchemaError: not an fdp_ppl release (schema version 1): attributes [...] are missing; ...
    """


class PrivacyLeakWarning(UserWarning):
    """A quantity that should be public was derived from the private data.

    Raised (as a warning) whenever a sensitivity, clipping bound or tuning
    parameter was computed from the confidential records; the result is then
    labelled ``data_dependent`` and carries no formal guarantee.

    Examples
    --------
    A clipping bound τ taken from the data (Mirshani et al. 2019, Section 5) is not public:

    >>> import warnings
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     tau = fp.data_tau(curves)
    >>> [w.category is fp.PrivacyLeakWarning for w in caught]
    [True]
    """


class SeededReleaseWarning(UserWarning):
    """A release drew its noise from a caller's seed: anyone who learns the seed can
    regenerate the noise and subtract it, so the release is private only while
    the seed stays secret. For studies and tests; real releases pass no seed.

    Examples
    --------
    A simulation study that seeds its releases on purpose silences it for that block only:

    >>> import warnings
    >>> import fdp_ppl as fp
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", fp.SeededReleaseWarning)
    ...     pass  # seeded fp.release(..., random_seed=..., study=True) calls of the study
    >>> issubclass(fp.SeededReleaseWarning, UserWarning)
    True

    See Also
    --------
    fdp_ppl.release : draws from fresh OS entropy when no seed is given.
    """


class BudgetExceededError(FdpPplError, ValueError):
    """A release would spend more privacy budget than the ledger has left.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> ledger = fp.PrivacyLedger(fp.PrivacyBudget(1.0))
    >>> try:
    ...     ledger.spend(fp.PrivacyBudget(2.0), "too much")
    ... except fp.BudgetExceededError as err:
    ...     print(err.fix)
    lower the number of draws or epsilon; nothing was released
    >>> ledger.spent                                   # nothing was charged
    PrivacyBudget(epsilon=0.0, delta=0.0)
    """


class LedgerError(FdpPplError, ValueError):
    """A privacy ledger file that is not a ledger or fails its validation (edited, truncated, damaged):
    refused, never reset or re-budgeted."""


class CompatibilityError(FdpPplError, ValueError):
    """A summary and a mechanism do not fit (different eigenbases, norms ...).

    Examples
    --------
    The ICLP adds noise in a kernel's eigenbasis; a Bernstein lattice summary has none:

    >>> import fdp_ppl as fp
    >>> spec = fp.BernsteinSpec(lattice_grid=fp.Grid.uniform(50), tau=2.0, n=100)
    >>> fp.ICLP(epsilon=1.0).calibrate(spec)
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.CompatibilityError: ICLP needs a summary in a kernel's eigenbasis, got 'bernstein'; ...
    """


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
