"""The KDE mechanisms by name and the public checks of their options, made before any data is read.

``fdp-ppl kde --mechanism NAME`` and ``fp.audit(NAME, family="kde")`` name a density mechanism; :data:`MECHANISMS`
says what each is and takes, :func:`kde_mechanism` builds its noise mechanism and :func:`check_kde_options` refuses,
from public quantities only (names, ε, δ, the domain, the bandwidth, the grid, the tuning options; never n or the
data), what the mechanism does not take: one wording from Python and from the command line, which names the options
as its flags (``names=``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError


@dataclass(frozen=True)
class KDEMechanismName:
    """One named KDE mechanism.

    Attributes
    ----------
    name : str
        Its name (``fdp-ppl kde --mechanism``, ``fp.audit(family="kde")``).
    approximate : bool
        (ε, δ)-DP (a Gaussian process's noise) rather than pure ε-DP.
    options : tuple of str
        The options of :func:`check_kde_options` only it (and the others naming them) takes.
    description : str
        What it releases, with its source.
    """

    name: str
    approximate: bool
    options: tuple[str, ...]
    description: str


#: the KDE mechanisms by name, in the order they are listed
MECHANISMS: dict[str, KDEMechanismName] = {m.name: m for m in (
    KDEMechanismName("gp", True, ("estimator",), "Gaussian KDE + Gaussian-process noise with the Gaussian kernel "
                                                 "(Hall et al. 2013, Sec. 4.1)"),
    KDEMechanismName("sobolev", True, ("estimator",), "Gaussian KDE + Gaussian-process noise with the L1-exponential "
                                                      "kernel (Hall et al. 2013, Sec. 4.2)"),
    KDEMechanismName("iclp", False, ("eta", "normalise"), "K^eta estimator + ICLP Laplace noise (Lin & Reimherr "
                                                          "2026, Sec. 4.3)"),
    KDEMechanismName("frl", False, ("M",), "Gaussian KDE, FRL Laplace noise on the first M eigen-coefficients "
                                           "(baseline)"),
    KDEMechanismName("bernstein", False, ("k",), "Gaussian KDE, Laplace noise on Bernstein lattice values "
                                                 "(baseline)"),
)}
#: largest Bernstein lattice number ``k`` (``(k + 1)^d`` lattice values)
MAX_BERNSTEIN_K = 200


def _mechanism(name: str) -> KDEMechanismName:
    if name not in MECHANISMS:
        raise InputError(f"unknown KDE mechanism {name!r}", f"choose one of {', '.join(MECHANISMS)}")
    return MECHANISMS[name]


def kde_mechanism(name: str, epsilon: float, delta: float | None = None):
    """The noise mechanism of a named KDE mechanism (the library refuses bad ε and δ).

    Raises
    ------
    InputError
        An unknown name, a δ for a pure ε-DP mechanism, bad ε or δ.

    Examples
    --------
    >>> from fdp_ppl.kde.options import kde_mechanism
    >>> type(kde_mechanism("iclp", 1.0)).__name__
    'ICLP'
    """
    from ..noise.mechanisms import FRL, ICLP, Bernstein, GaussianMechanism

    if _mechanism(name).approximate:
        return GaussianMechanism(epsilon, delta)
    _check_delta(name, delta, {})
    return {"iclp": ICLP, "frl": FRL, "bernstein": Bernstein}[name](epsilon)


def _check_delta(name, delta, names) -> None:
    if delta is not None and not MECHANISMS[name].approximate:
        n = names.get
        raise InputError(f"{n('mechanism', 'mechanism')} {name} is pure epsilon-DP and takes no {n('delta', 'delta')}",
                         f"drop {n('delta', 'delta')}")


def _eg(names: dict, key: str, value) -> str:
    """An example value of an option: ``--flag value`` under its flag, else ``key=value`` (Python)."""
    return f"{names[key]} {value}" if key in names else f"{key}={value!r}"


def check_kde_unit(privacy_unit, names: dict | None = None):
    """Refuse a privacy unit a KDE cannot serve: more than one record per unit (``max_contributions`` > 1 would need
    padding bumps at a public point); the unit, or None. ``combine="mean"`` averages each unit's bumps (a convex
    combination, so the record-level sensitivity holds with n = the number of units).

    Raises
    ------
    InputError
        Not a :class:`~fdp_ppl.io.units.PrivacyUnit`, or ``max_contributions`` > 1.
    """
    if privacy_unit is None:
        return None
    from ..io.units import PrivacyUnit

    names = dict(names or {})
    if not isinstance(privacy_unit, PrivacyUnit):
        raise InputError("privacy_unit must be an fdp_ppl.io.units.PrivacyUnit", "e.g. PrivacyUnit('id', combine='mean')")
    if privacy_unit.contributions != 1:
        raise InputError(f"a KDE takes {_eg(names, 'combine', 'mean')} or {_eg(names, 'max_contributions', 1)} per "
                         "unit (more records would need padding bumps at a public point)",
                         f"pass {_eg(names, 'combine', 'mean')} (each unit's observations share one observation's "
                         "weight)")
    return privacy_unit


def check_kde_options(mechanism: str, *, delta: float | None = None, estimator: str = "exact", domain=None,
                      bandwidth=None, bandwidth_epsilon: float | None = None, grid_size: int | None = None, d: int = 1,
                      M: int | None = None, k: int | None = None, normalise: bool = False, eta: float | None = None,
                      privacy_unit=None, names: dict | None = None) -> None:
    """Refuse, before any data is read, the options a named KDE mechanism does not take or bad public values.

    Parameters
    ----------
    mechanism : str
        A name of :data:`MECHANISMS`.
    delta : float or None
        δ: only the (ε, δ) mechanisms (``gp``, ``sobolev``) take one.
    estimator : str
        The Gaussian KDE's estimator (``"exact"``; another only for ``gp`` and ``sobolev``).
    domain : (float, float) or None
        The public domain ``(lo, hi)`` of each coordinate: finite, ``lo < hi``.
    bandwidth : float or None
        A public bandwidth > 0, or None (the rule, or a private choice with ``bandwidth_epsilon``).
    bandwidth_epsilon : float or None
        ε of a private bandwidth choice (> 0); excludes ``bandwidth``.
    grid_size : int or None
        Grid points per coordinate (>= 3).
    d : int
        Dimension of the observations (1 or 2).
    M, k : int or None
        The FRL baseline's number of coefficients (1 .. ``grid_size^d``) and the Bernstein lattice number
        (1 .. :data:`MAX_BERNSTEIN_K`); only ``frl`` and ``bernstein`` take them.
    normalise : bool
        Divide the ICLP density by its public mass (``iclp`` only).
    eta : float or None
        The ICLP estimator's power η > 1 (``iclp``; not checked for the others, which do not read it).
    privacy_unit : PrivacyUnit or None
        A KDE takes one record per unit (:func:`check_kde_unit`) and, here, no ordering of the records.
    names : dict, optional
        How to name each option in messages (keyword -> name): the command line passes its flags
        (``{"M": "--frl-m", ...}``); default the keyword itself.

    Raises
    ------
    InputError
        One line naming the option and its fix.

    Examples
    --------
    >>> from fdp_ppl.kde.options import check_kde_options
    >>> check_kde_options("iclp", eta=1.25, domain=(0, 1), bandwidth=0.1)
    >>> check_kde_options("iclp", M=5)
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: M applies to mechanism frl only (got iclp); drop M
    """
    names = dict(names or {})

    def n(key):
        return names.get(key, key)

    def eg(key, value):
        return _eg(names, key, value)

    entry = _mechanism(mechanism)
    if estimator != "exact" and "estimator" not in entry.options:
        raise InputError(f"{n('estimator')} {estimator} applies to {n('mechanism')} gp and sobolev",
                         f"drop {n('estimator')}")
    _check_delta(mechanism, delta, names)
    for key, value in (("M", M), ("k", k), ("normalise", normalise or None)):
        if value is not None and key not in entry.options:
            users = [m.name for m in MECHANISMS.values() if key in m.options]
            raise InputError(f"{n(key)} applies to {n('mechanism')} {' / '.join(users)} only (got {mechanism})",
                             f"drop {n(key)}")
    if check_kde_unit(privacy_unit, names) is not None and privacy_unit.order is not None:
        raise InputError(f"{n('order')} is not available for a KDE", f"sort the records by it and drop {n('order')}")
    if domain is not None:
        lo, hi = domain
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InputError(f"{n('domain')} needs finite lo < hi (got {lo} {hi})", f"pass e.g. {eg('domain', '0 1')}")
    if bandwidth is not None and not (math.isfinite(bandwidth) and bandwidth > 0):
        raise InputError(f"{n('bandwidth')} must be > 0 (got {bandwidth})", f"pass e.g. {eg('bandwidth', 0.1)}")
    if bandwidth_epsilon is not None:
        if bandwidth is not None:
            raise InputError(f"{n('bandwidth')} and {n('bandwidth_epsilon')} exclude each other",
                             f"pass a public {n('bandwidth')}, or {n('bandwidth_epsilon')} to choose h privately")
        if not (math.isfinite(bandwidth_epsilon) and bandwidth_epsilon > 0):
            raise InputError(f"{n('bandwidth_epsilon')} must be > 0 (got {bandwidth_epsilon})",
                             f"pass e.g. {eg('bandwidth_epsilon', 0.1)}")
    if grid_size is not None and grid_size < 3:
        raise InputError(f"{n('grid_size')} must be >= 3 (got {grid_size})", f"pass e.g. {eg('grid_size', 200)}")
    if M is not None:
        if M < 1:
            raise InputError(f"{n('M')} must be an integer >= 1 (got {M})", f"pass e.g. {eg('M', 7)}")
        if grid_size is not None and M > grid_size ** d:
            raise InputError(f"{n('M')} {M} exceeds the number of grid points", f"pass a smaller {n('M')}")
    if k is not None and not 1 <= k <= MAX_BERNSTEIN_K:
        raise InputError(f"{n('k')} must be an integer in [1, {MAX_BERNSTEIN_K}] (got {k})", f"pass e.g. {eg('k', 20)}")
    if "eta" in entry.options and eta is not None and not (math.isfinite(eta) and eta > 1):
        raise InputError(f"{n('eta')} must be > 1 (got {eta})", f"pass e.g. {eg('eta', 1.25)} (Lin & Reimherr 2026, "
                         "§6.2)")


__all__ = ["MECHANISMS", "KDEMechanismName", "MAX_BERNSTEIN_K", "check_kde_options", "check_kde_unit", "kde_mechanism"]
