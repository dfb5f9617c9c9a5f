"""The audit's families, read from the release registry: each family's audit hook (``ReleaseEntry.audit``, a module of
this folder per family: ``mean.py``, ``kde.py``, ``machine.py``, ``fpca.py``) gives its default public spec and the
candidate neighbouring pairs; this module holds the tables every entry point reads.

A :class:`Target` holds a mechanism's claim (ε, δ), the candidate replace-one pairs (D, D′) built from
public structure only (eigenfunctions of the public kernel, ends of the public domain, label flips), and
how to release: ``release_one(dataset, rng)`` is one release call (the whole pipeline from the synthetic
dataset: fit, calibrate, draw; it is timed and its exceptions are failures) and, where the release path
can draw many releases of one fitted summary in one call, ``draw(dataset, size, rng)`` (same law, fast).
Every released object is reduced to a flat vector of public released numbers (``features``).

Families (``family=``): ``"mean"`` (the mechanisms of :data:`fdp_ppl.releasing.registry.MECHANISMS`, i.e.
``fdp-ppl release --mechanism NAME``), ``"kde"`` (``fdp-ppl kde``), ``"machine"`` (``fdp-ppl machine``; ``"svm"`` is read as ``"machine"`` and ``"release"`` as ``"mean"``, their former names) and
``"fpca"`` (``fdp-ppl fpca``, names ``FORM/SAMPLER``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..releasing.families import ALIASES, BY_NAME
from ..releasing.families import FAMILIES as REGISTERED
from .hooks import AuditHook, NoSeedWarning, Pair, Target, noise_claim

#: former family names, still read (:data:`fdp_ppl.releasing.families.ALIASES`)
FAMILY_ALIASES = ALIASES

#: the keyword options of :func:`~fdp_ppl.auditing.core.audit`, in signature order
AUDIT_OPTIONS = ("family", "epsilon", "delta", "pairs", "samples", "confidence", "random_seed", "tests", "events",
                 "timing_calls", "options", "spec", "name", "train_fraction", "progressbar")
_EVERY = ("epsilon", "delta", "pairs", "samples", "confidence", "random_seed", "tests", "events")


@dataclass(frozen=True)
class AuditFamily:
    """What :func:`~fdp_ppl.auditing.core.audit` takes for one family of mechanisms.

    Attributes
    ----------
    family : str
        Key in :data:`AUDIT_FAMILIES`: ``"callable"`` (a release function) or a name of :data:`FAMILIES`.
    label : str
        The family in messages (``"<label> takes no ..."``).
    options : tuple of str
        The options of :func:`~fdp_ppl.auditing.core.audit` (:data:`AUDIT_OPTIONS`) the family uses; any other
        given, its default value included, is refused before any work.
    per_call : tuple of str
        Mechanisms that release one draw per call: every call is timed, so they take no ``timing_calls``.
    """

    family: str
    label: str
    options: tuple[str, ...]
    per_call: tuple[str, ...] = ()

    def takes(self, mechanism: str = "") -> tuple[str, ...]:
        """The options the audit of ``mechanism`` (a name of this family) takes."""
        if mechanism in self.per_call:
            return tuple(o for o in self.options if o != "timing_calls")
        return self.options




def option_keys(mechanism: str, family: str, spec_given: bool = False) -> tuple[str, ...] | None:
    """The keys of ``options`` a named mechanism of a family reads, or None for an unknown name (the family's
    :attr:`AuditHook.keys`).

    ``"mean"``: the registry entry's mechanism options (``calibration``, ``nu``) and, when the audit builds
    the default spec, its summary options (``eta``, ``psi``, ``M``, ``k``); ``"kde"``: ``eta`` (iclp), ``M``
    (frl), ``k`` (bernstein); ``"machine"``: ``eta`` (iclp); ``"fpca"``: ``n`` (curves per dataset) and
    ``iterations`` (Gibbs and NUTS samplers; the exact samplers have none).
    """
    hook = _hook_or_none(family)
    return None if hook is None else hook.keys(mechanism, spec_given)


def _hook_or_none(family: str) -> AuditHook | None:
    entry = BY_NAME.get(family)
    return entry.load("audit") if entry is not None and entry.audit else None


def audit_hook(family: str) -> AuditHook:
    """The :class:`AuditHook` of a family (its registry line's ``audit``).

    Raises
    ------
    InputError
        A family that is not registered, or has no audit.
    """
    hook = _hook_or_none(family)
    if hook is None:
        raise InputError(f"unknown family {family!r}", f"choose one of {', '.join(FAMILIES)}")
    return hook


def build_target(mechanism: str, family: str, epsilon: float, delta: float | None, options=None,
                 spec=None) -> Target:
    """The :class:`Target` of a named mechanism of a family, with its default public spec and pairs.

    Raises
    ------
    InputError
        An unknown family or mechanism, bad ε or δ.
    """
    return audit_hook(family).build(mechanism, epsilon, delta, options, spec)


def mechanisms_of(family: str) -> tuple[str, ...]:
    """Mechanism names of a family (its registry line's ``mechanism_names``, through its audit hook)."""
    return audit_hook(family).names()


def approximate(mechanism: str, family: str) -> bool:
    """Whether a named mechanism is (ε, δ)-DP (it needs δ)."""
    return audit_hook(family).approximate(mechanism)


#: the audited families: the release families with an audit hook, in the registry's order
FAMILIES = tuple(e.family for e in REGISTERED if e.audit)
#: the options each family's audit takes (the one table :func:`~fdp_ppl.auditing.core.audit` checks): a release
#: function is audited on its own pairs and takes no family, spec or options, nor timing_calls (every call is
#: timed); a named mechanism takes no name; a family audits a caller's spec if its hook says so; mechanisms that
#: release one draw per call take no timing_calls
AUDIT_FAMILIES: dict[str, AuditFamily] = {
    "callable": AuditFamily("callable", "an audit of a release function",
                            _EVERY + ("name", "train_fraction", "progressbar")),
    **{name: AuditFamily(name, f"an audit of a {BY_NAME[name].label} mechanism",
                         ("family",) + _EVERY + ("timing_calls", "options")
                         + (("spec",) if audit_hook(name).takes_spec else ()) + ("train_fraction", "progressbar"),
                         per_call=audit_hook(name).per_call) for name in FAMILIES},
}
#: default public specs per family (stated in every audit's attrs)
DEFAULT_SPECS = {name: audit_hook(name).default_spec for name in FAMILIES}


__all__ = ["FAMILIES", "DEFAULT_SPECS", "Pair", "Target", "build_target", "mechanisms_of", "approximate", "AUDIT_OPTIONS",
           "AUDIT_FAMILIES", "AuditFamily", "option_keys", "noise_claim", "AuditHook", "NoSeedWarning", "audit_hook"]
