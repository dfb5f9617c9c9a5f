"""The families :func:`fdp_ppl.release` and :func:`fdp_ppl.plan` dispatch through (:data:`RELEASES`, :data:`PLANS`;
re-exported as :data:`fdp_ppl.releasing.registry.RELEASES`).

A leaf module (standard library only): :mod:`fdp_ppl.releasing.draw` reads it without importing the registry's
mechanism builders, and the families are imported only when one of their objects is released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


#: options every family's release takes (the protocol's own); a family lists only the options beyond these
COMMON_OPTIONS = ("draws", "random_seed", "ledger", "label", "dataset", "progressbar", "provenance", "composed_with")
#: every family option fp.release / fp.plan know; a family takes a subset (``ReleaseEntry.options``)
FAMILY_OPTIONS = ("bound", "generator", "chains", "allow_nonprivate", "n")


@dataclass(frozen=True)
class ReleaseEntry:
    """How :func:`fdp_ppl.release` and :func:`fdp_ppl.plan` serve one family: its two hooks and what it takes.

    Attributes
    ----------
    family : str
        The family's one name (``"mean"``, ``"kde"``, ``"machine"``, ``"fpca"``), used in messages, plans
        (``ReleasePlan.family``) and files (``release_family``).
    kind : str
        The file kind its releases carry (root attribute ``fdp_ppl_kind``): ``"<family>_release"``.
    legacy_kinds : tuple of str
        Kinds of files written before the family had its one name (still read).
    module : str
        The module holding the family's hooks, imported on first use (the families import
        :mod:`fdp_ppl.releasing`, never the reverse): ``plan_release(spec_or_fit, mechanism, *, draws, seeded,
        **options) -> ReleasePlan`` (public: no data) and ``draw_release(fitted, plan, *, random_seed,
        progressbar) -> xr.DataTree`` (the draw; the protocol records the attributes).
    fitted : tuple of str
        Qualified class names (``module.Class``) of the fitted objects it releases.
    specs : tuple of str
        Qualified class names of the public specs :func:`fdp_ppl.plan` takes for it.
    mechanisms : tuple of str
        Qualified class names of the mechanisms it accepts (a subclass counts).
    options : tuple of str
        Family options it takes beyond :data:`COMMON_OPTIONS` (a subset of :data:`FAMILY_OPTIONS`); any
        other is refused.
    hint : str
        The mechanisms to use, for the refusal of a wrong one.
    plan_options : tuple of str
        Options only :func:`fdp_ppl.plan` takes from a spec (``n`` of an FPCA spec: a fit carries it).
    label : str
        The family in words, for messages (``"kernel-machine"``: "inference from a kernel-machine release ...").
    legacy_names : tuple of str
        Former names of the family, still read where a family is named (``fp.audit(family=...)``,
        ``fdp-ppl audit --family``).
    inference : str
        Qualified name (``module.function``) of the family's inference hook, which :func:`fdp_ppl.infer` calls as
        ``hook(release, prior, **options)`` with the options in ``infer_options`` (empty: ``infer``'s own model).
    infer_options : tuple of str
        The options of :func:`fdp_ppl.infer` the family's inference takes (empty: every one); any other given is
        refused, naming these.
    audit : str
        Qualified name (``module.NAME``) of the family's :class:`fdp_ppl.auditing.hooks.AuditHook` (its
        mechanism names, option keys, default spec and target builder), which :func:`fdp_ppl.audit` and
        ``fdp-ppl audit`` read on first use; empty: the family is not audited by name.
    command : str
        The name of its command, the module ``fdp_ppl.cli.<command>`` (``add_subparser(sub)``, ``run(args)``),
        listed by ``fdp-ppl --help`` in :data:`FAMILIES` order; empty: no command of its own.
    public : tuple of str
        Names ``fp.<name>`` gives, each the hooks' folder's (:attr:`folder`) attribute of that name, imported on
        first use (the folder itself is always ``fp.<folder>``).
    mechanism_names : str
        Qualified name (``module.NAME``) of the family's mechanism names as ``fdp-ppl audit --mechanism`` and
        ``fp.audit(family=...)`` spell them (a tuple, or a dict keyed by them), in a module that imports nothing
        heavy: ``fdp-ppl audit --help`` lists them and the family's audit hook reads them.
    """

    family: str
    kind: str
    legacy_kinds: tuple[str, ...]
    module: str
    fitted: tuple[str, ...]
    specs: tuple[str, ...]
    mechanisms: tuple[str, ...]
    options: tuple[str, ...] = ()
    hint: str = ""
    plan_options: tuple[str, ...] = ()
    label: str = ""
    legacy_names: tuple[str, ...] = ()
    inference: str = ""
    infer_options: tuple[str, ...] = ()
    audit: str = ""
    command: str = ""
    public: tuple[str, ...] = ()
    mechanism_names: str = ""

    @property
    def folder(self) -> str:
        """The package holding the family's hooks (``"fdp_ppl.kde"``; the mean family's is ``fdp_ppl.releasing``)."""
        return ".".join(self.module.split(".")[:2])

    def resolve(self, hook: str) -> Callable:
        """The family's ``plan`` or ``draw`` hook (imported with :mod:`importlib`)."""
        import importlib

        return getattr(importlib.import_module(self.module), f"{hook}_release")

    def load(self, what: str):
        """The object a qualified name of this entry names (``what``: ``"inference"`` or ``"audit"``), imported on
        first use (the stages above the families are named by string, so no import runs back up)."""
        return load(getattr(self, what))

    def names(self) -> tuple[str, ...]:
        """The family's mechanism names (:attr:`mechanism_names`, read on first use; empty if it names none)."""
        return tuple(load(self.mechanism_names)) if self.mechanism_names else ()

    def check(self, mechanism, options: dict, *, plan: bool = False) -> None:
        """Refuse a mechanism or an option (given, not None) this family does not take, before any work.

        Raises
        ------
        CompatibilityError
            A mechanism of another family.
        InputError
            An option the family does not take, naming the options it does take.
        """
        from ..errors import CompatibilityError, InputError

        names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(mechanism).__mro__}
        if not names.intersection(self.mechanisms):
            raise CompatibilityError(f"a {self.family} release is not made with {type(mechanism).__name__}",
                                     f"use {self.hint}")
        takes = self.options + (self.plan_options if plan else ())
        refused = sorted(k for k, v in options.items() if v is not None and k not in takes)
        if refused:
            raise InputError(f"a {self.family} {'plan' if plan else 'release'} takes no {', '.join(refused)}",
                             f"drop {', '.join(refused)} (its options: {', '.join(takes) or 'none'})")


def load(qualified: str):
    """The object ``module.NAME`` names, importing its module (:mod:`importlib`)."""
    import importlib

    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


_AUDITS = "fdp_ppl.auditing"
_MEAN_MECHANISM = "fdp_ppl.noise.mechanisms.base.Mechanism"
_GAUSSIAN = "fdp_ppl.noise.mechanisms.gaussian.GaussianMechanism"
_ICLP = "fdp_ppl.noise.mechanisms.laplace.ICLP"
_NAMES = "fdp_ppl._names"

#: the families, in registration order (the order names are listed in: the mean family, the default, first);
#: dispatch follows the fitted object's class hierarchy (a KDE spec, a SummarySpec too, is found as a KDE spec)
FAMILIES: tuple[ReleaseEntry, ...] = ()
#: the families' one names, in :data:`FAMILIES` order
NAMES: tuple[str, ...] = ()
#: former family name -> its one name (still read where a family is named)
ALIASES: dict[str, str] = {}
#: the families' commands (``fdp_ppl.cli.<command>``), in :data:`FAMILIES` order
COMMANDS: tuple[str, ...] = ()
#: family name -> entry
BY_NAME: dict[str, ReleaseEntry] = {}
#: file kind (current and former) -> family name: how readers (inference, plots, the command line) tell families apart
KINDS: dict[str, str] = {}
#: fitted class name -> entry: the table :func:`fdp_ppl.release` dispatches through
RELEASES: dict[str, ReleaseEntry] = {}
#: spec class name -> entry: the table :func:`fdp_ppl.plan` dispatches through
PLANS: dict[str, ReleaseEntry] = {}


def register_family(entry: ReleaseEntry) -> ReleaseEntry:
    """Add one release family to the registry: every table :func:`fdp_ppl.release`, :func:`fdp_ppl.plan`, the
    readers of files (:data:`KINDS`), :func:`fdp_ppl.infer` and :func:`fdp_ppl.audit` read. The built-in families
    are registered by this function too, one line each below; a new family is its own package (its plan and draw
    hooks) plus one ``register_family(ReleaseEntry(...))`` line, here or in its package.

    Tables other modules compute once from :data:`FAMILIES` at import (the command line's commands,
    ``fp.<folder>``, the audit's families) list a family registered after them only if it is registered before
    they are imported; the dispatch of ``release``, ``plan``, ``infer`` and file kinds reads these tables on every
    call.

    Returns
    -------
    ReleaseEntry
        ``entry``, registered.

    Raises
    ------
    ValueError
        A family name, former name, file kind or class another family already has (nothing is registered).

    Examples
    --------
    >>> from fdp_ppl.releasing.families import BY_NAME, register_family
    >>> try:
    ...     register_family(BY_NAME["kde"])
    ... except ValueError as err:
    ...     print(str(err).split(" (")[0])
    family 'kde' is registered already
    """
    global FAMILIES, NAMES, COMMANDS

    names = (entry.family, *entry.legacy_names)
    clash = ([n for n in names if n in BY_NAME or n in ALIASES] + [k for k in (entry.kind, *entry.legacy_kinds)
             if k in KINDS] + [c for c in entry.fitted if c in RELEASES] + [c for c in entry.specs if c in PLANS])
    if clash:
        raise ValueError(f"family {entry.family!r} is registered already (its name, a former name, a kind or a "
                         f"class: {', '.join(clash)})")
    FAMILIES += (entry,)
    NAMES += (entry.family,)
    COMMANDS += (entry.command,) if entry.command else ()
    BY_NAME[entry.family] = entry
    ALIASES.update({old: entry.family for old in entry.legacy_names})
    KINDS.update({k: entry.family for k in (entry.kind, *entry.legacy_kinds)})
    RELEASES.update({name: entry for name in entry.fitted})
    PLANS.update({name: entry for name in entry.specs})
    return entry


register_family(ReleaseEntry("mean", "mean_release", ("release",), "fdp_ppl.releasing.draw", ("fdp_ppl.summaries.base.LinearSummary",),
                             ("fdp_ppl.summaries.base.SummarySpec",), (_MEAN_MECHANISM,),
                             ("bound", "generator", "allow_nonprivate"),
                             "ICLP(epsilon), FRL(epsilon), Bernstein(epsilon), GaussianMechanism(epsilon, delta) or an "
                             "elliptical mechanism", label="mean-curve", legacy_names=("release",),
                             audit=f"{_AUDITS}.mean.MEAN_AUDIT", command="release",
                             mechanism_names="fdp_ppl.releasing.registry.MECHANISMS"))
register_family(ReleaseEntry("kde", "kde_release", (), "fdp_ppl.kde.release", ("fdp_ppl.kde.gaussian.KDESummary",),
                             ("fdp_ppl.kde.gaussian.KDESpec",), (_MEAN_MECHANISM,), ("bound", "generator", "chains"),
                             "GaussianMechanism(epsilon, delta) for KDESpec / SobolevKDESpec, ICLP(epsilon) for ICLPKDESpec",
                             label="kernel density estimate", inference="fdp_ppl.inference.density.infer_density_dispatch",
                             infer_options=("prior", "target", "draw", "method", "draws", "chains", "random_seed"),
                             audit=f"{_AUDITS}.kde.KDE_AUDIT", command="kde", mechanism_names=f"{_NAMES}.KDE_MECHANISMS"))
register_family(ReleaseEntry("machine", "machine_release", ("erm_release",), "fdp_ppl.machine.release", ("fdp_ppl.machine.machine.ERMFit",), ("fdp_ppl.machine.machine.ERMSpec",),
                             (_GAUSSIAN, _ICLP), ("chains",),
                             "GaussianMechanism(epsilon, delta) (eta=None specs) or ICLP(epsilon) (eta > 1 specs)",
                             label="kernel-machine", legacy_names=("svm",),
                             inference="fdp_ppl.inference.machine.infer_machine_dispatch",
                             infer_options=("prior", "target", "draw", "method", "draws", "chains", "random_seed"),
                             audit=f"{_AUDITS}.machine.MACHINE_AUDIT", command="machine", mechanism_names=f"{_NAMES}.MACHINE_MECHANISMS"))
register_family(ReleaseEntry("fpca", "fpca_release", ("expmech_fpca",), "fdp_ppl.fpca.release", ("fdp_ppl.fpca.fpca.FPCAFit",),
                             ("fdp_ppl.fpca.fpca.FPCASpec",), ("fdp_ppl.fpca.mechanism.ExponentialMechanism",), (),
                             "ExponentialMechanism(sampler='exact') (epsilon is the FPCASpec's)", ("n",),
                             label="principal-components (FPCA)", inference="fdp_ppl.inference.components.infer_components",
                             infer_options=("prior", "draws", "tune", "chains", "target_accept", "random_seed", "progressbar",
                                            "posterior_predictive"),
                             audit=f"{_AUDITS}.fpca.FPCA_AUDIT", command="fpca", public=("ExponentialMechanism",),
                             mechanism_names=f"{_NAMES}.FPCA_MECHANISMS"))


def _lookup(table: dict, obj) -> ReleaseEntry | None:
    for cls in type(obj).__mro__:
        entry = table.get(f"{cls.__module__}.{cls.__qualname__}")
        if entry is not None:
            return entry
    return None


def release_entry(fitted) -> ReleaseEntry | None:
    """The entry of a fitted object (its most derived registered class), or None."""
    return _lookup(RELEASES, fitted)


def entry_for(spec_or_fit) -> ReleaseEntry | None:
    """The entry of a public spec or of a fitted object, or None."""
    return _lookup(PLANS, spec_or_fit) or _lookup(RELEASES, spec_or_fit)


__all__ = ["ALIASES", "BY_NAME", "COMMANDS", "COMMON_OPTIONS", "load", "FAMILIES", "KINDS", "NAMES", "FAMILY_OPTIONS",
           "PLANS", "RELEASES", "ReleaseEntry", "entry_for", "register_family", "release_entry"]
