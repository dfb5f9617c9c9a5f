"""What every family's audit hook builds on: the neighbouring :class:`Pair`, the :class:`Target` under audit, the
:class:`AuditHook` a registry line names (``ReleaseEntry.audit``), the white-box :func:`noise_claim` and the
study's muted warnings. The hooks themselves live one module per family (``auditing/mean.py``, ``kde.py``,
``machine.py``, ``fpca.py``); :mod:`fdp_ppl.auditing.targets` reads them from the registry.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class Pair:
    """A replace-one neighbouring pair of synthetic datasets.

    Attributes
    ----------
    first, second : object
        The datasets D and D′ (arrays, or tuples ``(features, labels)`` for the SVM), identical except
        for one record.
    description : str
    """

    first: Any
    second: Any
    description: str


@dataclass
class Target:
    """A mechanism under audit (see the module docstring)."""

    mechanism: str
    family: str
    epsilon: float
    delta: float
    pairs: list[Pair]
    release_one: Callable[[Any, np.random.Generator], np.ndarray]
    draw: Callable[[Any, int, np.random.Generator], np.ndarray] | None = None
    spec: str = ""
    features: str = "the released vector"
    options: dict = field(default_factory=dict)
    default_samples: int | None = None
    #: what the release claims about its noise, for the white-box test (:mod:`~fdp_ppl.auditing.whitebox`)
    noise: Any = None
    #: why there is no white-box test, when ``noise`` is None
    noise_note: str = "not available for this mechanism (black-box bound only)"


class NoSeedWarning:
    """Context: the audit seeds its releases on purpose (a study), so the seeded-release warning is muted, and so
    is the data holder's clipping warning (the audit's synthetic records sit at the public bound τ on purpose)."""

    def __enter__(self):
        from ..errors import SeededReleaseWarning
        from ..summaries.curves import TauTooSmallWarning

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", SeededReleaseWarning)
        warnings.simplefilter("ignore", TauTooSmallWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def noise_claim(mech, spec, centre, coefficients):
    """The :class:`~fdp_ppl.auditing.whitebox.NoiseClaim` of a mechanism releasing a spec (None for a law the
    white-box test does not fit)."""
    from .whitebox import NoiseClaim

    law = mech.law.name
    kind = getattr(mech, "kind", None)
    if law == "laplace" or law == "normal":
        fitted = law
    elif law.startswith("elliptical"):
        fitted = "elliptical" if mech.family == "elliptical" else "elliptical-process"
    else:
        return None
    J = int(spec.n_components)
    lam = np.asarray(getattr(spec, "eigenvalues", np.ones(J)), float)[:J] if mech.norm != "l1" else np.ones(J)
    return NoiseClaim(fitted, mech.norm, lam, float(spec.sensitivity(mech.norm).value), float(mech.epsilon),
                      float(mech.delta), centre, coefficients, kind=kind, nu=getattr(mech, "nu", None),
                      description=f"{mech!r} on {spec.name}")


@dataclass(frozen=True)
class AuditHook:
    """What :func:`~fdp_ppl.auditing.core.audit` needs of one release family, named by its registry line
    (``ReleaseEntry.audit``, :data:`fdp_ppl.releasing.families.FAMILIES`) and read on first use: a new family's
    hook lives in its own module of this folder and no table here names it.

    Attributes
    ----------
    build : callable
        ``build(mechanism, epsilon, delta, options, spec) -> Target``: the mechanism's claim, its default public
        spec (or ``spec``) and the candidate pairs; raises :class:`~fdp_ppl.errors.InputError` for an unknown
        mechanism or bad ε, δ.
    mechanisms : tuple of str or callable
        The family's mechanism names (``fp.audit(name, family=...)``, ``fdp-ppl audit --family``), or a function
        returning them (read from another registry).
    default_spec : str
        The default public spec in words (:data:`DEFAULT_SPECS`, every audit's attrs).
    keys : callable
        ``keys(mechanism, spec_given) -> tuple of str or None``: the keys of ``options`` a mechanism reads (None:
        an unknown name).
    approximate : callable
        ``approximate(mechanism) -> bool``: whether the mechanism is (ε, δ)-DP (it needs δ).
    takes_spec : bool
        Whether a caller's ``spec=`` is audited (else the default spec only).
    per_call : tuple of str
        Mechanisms that release one draw per call (every call timed: no ``timing_calls``).
    canonical_name : callable or None
        A name's canonical spelling (``"gp-base"`` -> ``"gp-base/exact"``); None: names as given.
    """

    build: Callable
    mechanisms: Any
    default_spec: str
    keys: Callable
    approximate: Callable
    takes_spec: bool = False
    per_call: tuple[str, ...] = ()
    canonical_name: Callable | None = None

    def canonical(self, name: str) -> str:
        """``name`` in its canonical spelling."""
        return self.canonical_name(name) if self.canonical_name is not None else name

    def names(self) -> tuple[str, ...]:
        """The family's mechanism names."""
        return tuple(self.mechanisms() if callable(self.mechanisms) else self.mechanisms)
