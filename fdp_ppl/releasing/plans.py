"""The public release plan: everything a release will charge, draw and record, known before any data is read.

A :class:`ReleasePlan` is OpenDP's idea of a *measurement whose privacy map is known in advance*, for every
family of the package: the noise law and its scales, the sensitivity and its norm, the privacy event the ledger
will record (law, noise multiplier, count, privacy unit, neighbouring relation), the guarantee in words, whether
the noise is floating-point safe and the guarantee certified, the output's dims and memory, and the public
attributes the release file will carry. It is computed from public quantities only (a spec, a mechanism, a number
of draws), so :func:`plan` costs no privacy and reads no records.

:func:`fdp_ppl.release` runs one protocol for every family around it (:mod:`fdp_ppl.releasing.draw`):
refuse what cannot be served → plan → warn → charge ``plan.cost`` with ``plan.event`` → draw → record
``plan.attrs`` → tree. Each family supplies two hooks, registered in :mod:`fdp_ppl.releasing.families`: its plan
(public) and its draw (the only step that touches the fit).
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from ..accounting import PrivacyBudget
from ..errors import CompatibilityError, InputError
from ..noise.sampling import STUDY, check_study  # noqa: F401  (the one seed rule, re-exported here)

#: the root attributes a plan contributes to every release besides its family's own (:meth:`ReleasePlan.attrs`)
PLAN_ATTRS = ("release_family", "epsilon", "delta", "draws", "budget_spent_epsilon", "budget_spent_delta",
              "privacy_unit", "neighbouring", "fp_safe", "certified", "noise_seeded", "guarantee", "study")



#: without a public n, a per-draw δ at least this large needs ``allow_large_delta`` (:meth:`ReleasePlan.check_delta`)
LARGE_DELTA = 0.1

#: draws needing less memory than this are not checked against the machine's free memory (they always fit)
SMALL_BYTES = 16 * 2**20


def _frozen_array(a, dtype=float) -> np.ndarray:
    out = np.array(a, dtype=dtype).reshape(-1)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """The public plan of one release (immutable; computed without data).

    Attributes
    ----------
    family : str
        The release family: ``"mean"``, ``"kde"``, ``"machine"``, ``"fpca"``, or ``"composed"``.
    mechanism : str
        The mechanism's name as the ledger and the file record it (``"iclp"``, ``"gaussian"``, ...).
    noise_law : str
        The noise law (``"laplace"``, ``"normal"``, an elliptical law, ``"exponential-mechanism"``).
    epsilon, delta : float
        The guarantee of one draw, as stated (for a floating-point-safe sampler OpenDP's map may state a
        slightly larger one: ``attrs["epsilon_guaranteed"]``).
    draws : int
        Independent draws (each a publication); the ledger is charged ``draws ×`` the per-draw guarantee.
    sensitivity : float
        Δ in ``sensitivity_norm`` (NaN where the family states none, e.g. a composition).
    sensitivity_norm : str
    noise_scale : ndarray, shape (J,)
        Per-coefficient noise scale of the law (read-only; empty where the law has none, the exponential
        mechanism).
    noise_multiplier : float
        The global scale σ (Laplace ``Δ/ε``, Gaussian σ) in sensitivity units times Δ (NaN where none).
    event : PrivacyEvent or None
        What the ledger records (law, multiplier, count, neighbouring relation), stamped with the plan's
        ``privacy_unit`` and ``certified`` (a family's event of the cost alone when it gives none; None only
        when the cost is no valid guarantee, e.g. ``draws × δ >= 1``, which a ledger refuses).
    cost : PrivacyBudget
        ``draws ×`` the per-draw (ε, δ) (basic composition), charged before any draw.
    privacy_unit : str
        ``"record"`` or the person-level unit (its column). What is protected, under replace-one: one unit's
        records replaced by any others, with the number of units n public, so whether a person is in the data at
        all (presence) is not protected; under add/remove (mean curves built with ``neighbouring="add-remove"``,
        ``n_lower``): one unit added or removed, n private.
    neighbouring : str
        The neighbouring relation of the sensitivity in words (``"replace-one record; n public"``, or
        ``"add or remove one record; n private ..."``); the event records it as ``"replace-one"`` or
        ``"add-remove"``.
    guarantee : str
        The guarantee in words.
    fp_safe : bool
        The noise comes from a floating-point-safe sampler.
    certified : bool
        The stated guarantee is proved for the sampler that draws (False for uncertified MCMC).
    seeded : bool
        The draw will come from a caller's seed (a study; not private once the seed is known).
    study : bool
        A study, not a release (always when ``seeded``): ``attrs["study"]`` is :data:`STUDY` and no ledger may be
        charged for it.
    generator : str
        The sampler that draws (``"opendp"``, ``"pymc"``, a family's own).
    output : Mapping[str, int]
        Dims and sizes of the released variable, e.g. ``{"chain": 1, "draw": 1, "t": 101}``.
    memory_bytes : float
        Memory the draw needs (the draws, their map to the grid and the tree's copy).
    label : str
        The ledger label used when the caller gives none.
    attrs : Mapping[str, Any]
        Public root attributes the release records, exactly (a read-only mapping).
    parts : tuple of ReleasePlan
        The plans a composed plan is made of (empty otherwise).
    variable : str
        Name of the released variable in the ``posterior`` group (``"curve"``, ``"density"``, ``"decision"``,
        ``"components"``), whose dims and sizes are ``output``.
    coords : Mapping[str, ndarray]
        Public coordinates of the released variable's non-sample dims (read-only), e.g. ``{"t": grid points}``.
    units : str
        Units of the released values, recorded as the variable's ``units`` attribute (empty for a mean curve,
        which is in the data's units: the release records them as ``value_units`` when the provenance names them).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
    >>> plan = fp.plan(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100), fp.ICLP(1.0), draws=2)
    >>> plan.family, plan.mechanism, plan.noise_law, plan.draws
    ('mean', 'iclp', 'laplace', 2)
    >>> plan.cost.epsilon, plan.event.law, plan.event.count
    (2.0, 'laplace', 2)
    """

    family: str
    mechanism: str
    noise_law: str
    epsilon: float
    delta: float
    draws: int
    sensitivity: float
    sensitivity_norm: str
    noise_scale: np.ndarray
    noise_multiplier: float
    event: Any
    cost: PrivacyBudget
    privacy_unit: str
    neighbouring: str
    guarantee: str
    fp_safe: bool
    certified: bool
    seeded: bool
    generator: str
    output: Mapping[str, int]
    memory_bytes: float
    label: str
    attrs: Mapping[str, Any]
    parts: tuple = ()
    variable: str = ""
    coords: Mapping[str, Any] = field(default_factory=dict)
    units: str = ""
    study: bool = False
    #: family-private public objects the draw reuses (a calibration, a sampler, a basis); never data
    state: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "event", _unit_event(self.event, self.cost, self.privacy_unit, self.certified,
                                                      self.neighbouring))
        object.__setattr__(self, "study", bool(self.study or self.seeded))
        object.__setattr__(self, "noise_scale", _frozen_array(self.noise_scale))
        object.__setattr__(self, "output", types.MappingProxyType(dict(self.output)))
        object.__setattr__(self, "coords", types.MappingProxyType(
            {str(k): _frozen_array(v, dtype=None) for k, v in dict(self.coords).items()}))
        from .schema import clean_attrs

        attrs = dict(clean_attrs(self.attrs))
        attrs.update(clean_attrs(self.common_attrs()))
        object.__setattr__(self, "attrs", types.MappingProxyType(attrs))

    def common_attrs(self) -> dict:
        """The attributes every family's release records from its plan (:data:`PLAN_ATTRS`; ``study`` only for a
        study)."""
        return ({"study": STUDY} if self.study else {}) | {"release_family": self.family, "epsilon": float(self.epsilon), "delta": float(self.delta),
                "draws": int(self.draws), "budget_spent_epsilon": float(self.cost.epsilon),
                "budget_spent_delta": float(self.cost.delta), "privacy_unit": self.privacy_unit,
                "neighbouring": self.neighbouring, "fp_safe": int(bool(self.fp_safe)),
                "certified": int(bool(self.certified)), "noise_seeded": int(bool(self.seeded)),
                "guarantee": self.guarantee}

    # ------------------------------------------------------------------ composition
    def then(self, other: "ReleasePlan") -> "ReleasePlan":
        """The plan of this release followed by ``other`` on the same data (basic composition).

        The composed cost is the sum of the costs; it is floating-point safe and certified only if both parts
        are; its attributes are ``other``'s, with the totals and the guarantee of the composition and each
        part's per-draw ``(ε, δ)`` recorded as ``part<i>_epsilon`` / ``part<i>_delta``.

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
        >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
        >>> both = fp.plan(spec, fp.ICLP(0.5)).then(fp.plan(spec, fp.ICLP(1.0)))
        >>> both.cost.epsilon, len(both.parts)
        (1.5, 2)
        """
        parts = (self.parts or (self,)) + (other.parts or (other,))
        cost = PrivacyBudget(sum(p.cost.epsilon for p in parts), min(sum(p.cost.delta for p in parts), 1.0))
        attrs = {}
        for p in parts[:-1]:  # an earlier part's own attributes (the bandwidth's rule), then the last part's
            attrs.update({k: v for k, v in p.attrs.items() if k not in PLAN_ATTRS})
        attrs.update(other.attrs)
        for i, p in enumerate(parts):
            attrs[f"part{i}_mechanism"] = p.mechanism
            attrs[f"part{i}_epsilon"] = float(p.epsilon)
            attrs[f"part{i}_delta"] = float(p.delta)
            attrs[f"part{i}_draws"] = int(p.draws)
            attrs[f"part{i}_fp_safe"] = int(bool(p.fp_safe))
        generators = list(dict.fromkeys(str(p.attrs.get("noise_generator", p.generator)) for p in parts))
        attrs["noise_generator"] = " + ".join(generators)
        unsafe = [p.mechanism for p in parts if not p.fp_safe]
        attrs["fp_safety"] = ("every part floating-point safe" if not unsafe else
                              "NOT floating-point safe: " + ", ".join(unsafe) + " drawn with float64 noise")
        guarantee = ("composition (basic) of " + "; ".join(f"[{p.mechanism}: {p.guarantee}]" for p in parts)
                     + f"; in all ({cost.epsilon:.6g}, {cost.delta:.3g})-DP")
        composed = replace(other, cost=cost, parts=parts, fp_safe=all(p.fp_safe for p in parts),
                           certified=all(p.certified for p in parts), guarantee=guarantee, attrs=attrs,
                           state=other.state, study=any(p.study for p in parts))
        return composed

    # ------------------------------------------------------------------ reading
    def table(self) -> list[tuple[str, str]]:
        """(field, value) rows for a printed plan (what ``--dry-run`` shows)."""
        scale = self.noise_scale
        rows = [("family", self.family), ("mechanism", self.mechanism), ("noise law", self.noise_law),
                ("asked per draw", f"({self.epsilon:.12g}, {self.delta:.6g})"),
                ("draws", str(self.draws)), ("charged", f"({self.cost.epsilon:.12g}, {self.cost.delta:.6g})"),
                ("sensitivity", f"{self.sensitivity:.6g} ({self.sensitivity_norm})"),
                ("noise multiplier", f"{self.noise_multiplier:.6g}")]
        if scale.size:
            rows.append(("noise scale", f"{scale.size} coefficients, {scale.min():.4g} to {scale.max():.4g}"))
        rows += [("privacy unit", f"{self.privacy_unit} ({self.neighbouring})"),
                 ("floating-point safe", "yes" if self.fp_safe else "no"),
                 ("certified", "yes" if self.certified else "no"), ("sampler", self.generator),
                 ("output", (f"{self.variable} " if self.variable else "")
                  + "(" + ", ".join(f"{k} {v}" for k, v in self.output.items()) + ")"
                  + (f" in {self.units}" if self.units else "")),
                 ("memory", f"{self.memory_bytes / 2**20:.3g} MiB"), ("guarantee", self.guarantee)]
        return rows + ([("study", STUDY)] if self.study else [])

    def accuracy(self, **options):
        """The accuracy one draw of this release will have, from public quantities only (no data, no charge):
        :func:`fdp_ppl.releasing.accuracy.accuracy` as an ``xr.Dataset``, through the family's ``accuracy_release``
        hook (mean curves and densities: RMS L² error, pointwise and simultaneous noise half-widths, the bias from
        shrinkage of a constant curve; kernel machines: also the sign agreement at stated margins; principal
        components: the principal angle at stated eigengaps).

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
        >>> acc = fp.plan(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100), fp.ICLP(1.0)).accuracy(samples=500)
        >>> sorted(acc.sizes.items()), acc.attrs["level"]
        ([('t', 51)], 0.95)
        """
        import importlib

        from .families import FAMILIES

        module = next((e.module for e in FAMILIES if e.family == self.family), None)
        hook = getattr(importlib.import_module(module), "accuracy_release", None) if module else None
        if hook is None:
            raise NotImplementedError(f"the accuracy of a {self.family} plan is not available (plan each part)")
        return hook(self, **options)

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.table())
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.table())

    def check_delta(self, allow_large_delta: bool = False) -> None:
        """Refuse a δ so large that the guarantee is void, unless the caller says so (a public check).

        (ε, δ)-DP allows a mechanism that publishes each person's records outright with probability δ, i.e.
        δ·n persons' in expectation (Dwork & Roth 2014, §2.3: δ should be less than the inverse of any
        polynomial in n); a δ above 1/n is refused. The rule uses only what the plan publishes: the per-draw δ against 1/(units), units =
        ``n / contributions_per_unit`` from the plan's attributes; where the plan states no n, δ ≥ 0.1.

        Raises
        ------
        InputError
            δ above that bound without ``allow_large_delta=True``; nothing is charged or drawn.

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
        >>> p = fp.plan(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100), fp.GaussianMechanism(1.0, 0.05))
        >>> p.check_delta()
        Traceback (most recent call last):
        ...
        fdp_ppl.errors.InputError: delta = 0.05 per draw is above 1/n = 1/100: ...
        >>> p.check_delta(allow_large_delta=True)
        """
        delta = float(self.delta)
        if delta <= 0 or allow_large_delta:
            return
        n = self.attrs.get("n")
        try:
            units = float(n) / float(self.attrs.get("contributions_per_unit", 1) or 1)
        except (TypeError, ValueError):
            units = float("nan")
        if units >= 1:
            if delta <= 1.0 / units:
                return
            what = f"above 1/n = 1/{units:.0f}"
        elif delta < LARGE_DELTA:
            return
        else:
            what = f"at least {LARGE_DELTA:g} (the plan states no n)"
        raise InputError(f"delta = {delta:g} per draw is {what}: the (epsilon, delta) guarantee then allows "
                         "publishing a person's record outright",
                         "pass a delta below 1/n (e.g. 1e-6), or allow_large_delta=True to release with it anyway")

    def check_memory(self) -> None:
        """Refuse a plan whose draw does not fit in memory (before any charge).

        Raises
        ------
        InputError
            The draws need more memory than the machine's share (:func:`fdp_ppl.settings.check_memory`).
        """
        from ..settings import check_memory

        if self.memory_bytes < SMALL_BYTES:  # nothing this small can fail to fit (and reading the free memory costs)
            return
        check_memory(self.memory_bytes, f"{self.draws} draws of a {self.family} release",
                     "release fewer draws at a time (draws=, --draws)")


def _unit_event(event, cost, unit, certified, neighbouring=""):
    """A plan's event stated for its privacy unit, certification and relation (``"add-remove"`` when the plan's
    relation in words is add/remove; a family that gives none: the generic (ε, δ) event of its cost; None when
    the cost is no valid guarantee, which the ledger refuses)."""
    from .._names import ADD_REMOVE, is_add_remove
    from ..accounting import PrivacyEvent

    if event is None:
        try:
            event = PrivacyEvent.from_budget(cost)
        except InputError:
            return None
    event = event.with_unit(str(unit), certified=bool(certified))
    return replace(event, neighbouring=ADD_REMOVE) if is_add_remove(neighbouring) else event


def check_relation(p: ReleasePlan, neighbouring) -> None:
    """Refuse a plan whose neighbouring relation is not the one the caller asks for (``None``: any), before any
    charge: a user who asks for membership protection (``neighbouring="add-remove"``) gets it or a refusal.

    Raises
    ------
    InputError
        The plan's relation differs (one line: how to get the relation asked for).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.releasing.plans import check_relation
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(20))
    >>> check_relation(fp.plan(fp.FRLSpec(basis=basis, tau=1.0, n_lower=50, neighbouring="add-remove"),
    ...                        fp.FRL(1.0)), "add-remove")
    >>> check_relation(fp.plan(fp.FRLSpec(basis=basis, tau=1.0, n=50), fp.FRL(1.0)), "add-remove")
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: membership protection (neighbouring='add-remove') was asked for, but this release is replace-one with n public ...
    """
    if neighbouring is None:
        return
    from .._names import ADD_REMOVE, canonical_relation, is_add_remove

    wanted = canonical_relation(neighbouring)
    if wanted is None:
        raise InputError(f"unknown neighbouring relation {neighbouring!r}",
                         "use neighbouring='replace-one' (n public) or 'add-remove' (membership protected)")
    held = ADD_REMOVE if is_add_remove(p.neighbouring) else "replace-one"
    if wanted == held:
        return
    if wanted == ADD_REMOVE:
        raise InputError(f"membership protection (neighbouring='add-remove') was asked for, but this release is "
                         f"replace-one with n public ({p.neighbouring})", "build the mean curve's spec with "
                         "neighbouring='add-remove' and a public lower bound n_lower=N (e.g. iclp_qr_mean(curves, "
                         "basis, tau=..., neighbouring='add-remove', n_lower=N)); other families offer replace-one "
                         "only")
    raise InputError(f"neighbouring='replace-one' was asked for, but the spec is add/remove ({p.neighbouring})",
                     "drop neighbouring, or build the spec without neighbouring='add-remove'")


def check_draws(draws, chains: int | None = None) -> tuple[int, int]:
    """``(draws, chains)`` as ints, refusing anything below 1 or not whole (a public check of every family).

    Raises
    ------
    InputError
        A count below 1, not a whole number, or above 10⁹.
    """
    out = []
    for name, v in (("draws", draws), ("chains", 1 if chains is None else chains)):
        try:
            iv = int(v)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{name} must be a whole number >= 1, got {v!r}", f"pass {name}=1 for one release") from None
        if isinstance(v, bool) or iv != v or iv < 1 or iv > 10**9:
            raise InputError(f"{name} must be a whole number in 1..1e9, got {v!r}", f"pass {name}=1 for one release")
        out.append(iv)
    return out[0], out[1]


def check_scale(scale) -> None:
    """Noise scales must be finite and > 0 (a sampler cannot serve an infinite scale: e.g. τ = 1e308 overflows
    the sensitivity).

    Raises
    ------
    InputError
        Otherwise; nothing is charged or drawn.
    """
    scale = np.asarray(scale, dtype=float)
    if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise InputError("the noise scale is not a finite positive number (the sensitivity overflows: tau or the "
                         "kernel's constants are too large, or the eigenvalues too small)",
                         "pass a smaller public tau, in the data's units")


def as_study(p: ReleasePlan, study: bool) -> ReleasePlan:
    """``p`` marked a study when ``study`` (its attributes then carry ``study`` = :data:`STUDY`); else ``p``."""
    return replace(p, study=True) if study and not p.study else p


def plan(spec_or_fit, mechanism, *, draws: int = 1, privacy_unit=None, seeded: bool = False, study: bool = False,
         neighbouring: str | None = None, **options) -> ReleasePlan:
    """The public plan of releasing a spec (or a fit) with a mechanism: no data read, no privacy spent.

    Parameters
    ----------
    spec_or_fit
        A public spec (``ICLPQRSpec``, ``KDESpec``, ``ERMSpec``, ``FPCASpec``, ...) or a fitted object of one
        (only its public spec is read).
    mechanism
        A mechanism the family accepts (as :func:`fdp_ppl.release`).
    draws : int
        Independent draws; the plan's cost is ``draws ×`` the per-draw guarantee.
    privacy_unit : PrivacyUnit, optional
        The unit the guarantee is for, when the spec does not already carry it (mean curves: the spec's
        ``privacy_unit``); must agree with the spec's when both are given.
    seeded : bool
        Plan a seeded study (the compiled float sampler instead of the floating-point-safe one); implies ``study``.
    study : bool
        Plan a study (``random_seed`` given or not): ``attrs["study"]`` is :data:`STUDY`.
    neighbouring : {None, "replace-one", "add-remove"}
        The relation the caller requires (None: the spec's): ``"add-remove"`` (membership protected) is served
        by a mean-curve spec built with ``neighbouring="add-remove", n_lower=N`` and refused otherwise
        (:func:`check_relation`).
    **options
        The family's options, as :func:`fdp_ppl.release` takes them (``bound``, ``generator``, ``chains``,
        ``n`` for an FPCA spec, ...); an option the family does not take is refused.

    Returns
    -------
    ReleasePlan
        Frozen; ``plan.attrs`` are exactly the public attributes the release will record, ``plan.cost`` and
        ``plan.event`` exactly what the ledger will be charged.

    Raises
    ------
    CompatibilityError
        Not a spec or fit of a registered family, or a mechanism the family does not take.
    InputError
        An option the family does not take; a release the machine cannot serve (memory, proposals, scales).

    See Also
    --------
    fdp_ppl.release : runs the plan: charge, draw, record.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
    >>> p = fp.plan(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100), fp.GaussianMechanism(1.0, 1e-6))
    >>> p.noise_law, p.event.law, round(p.epsilon, 3), p.fp_safe
    ('normal', 'gaussian', 1.0, True)
    >>> dict(p.output)
    {'chain': 1, 'draw': 1, 't': 51}
    """
    from .families import entry_for

    entry = entry_for(spec_or_fit)
    if entry is None:
        raise CompatibilityError(f"cannot plan a release of a {type(spec_or_fit).__name__}",
                                 "pass a public spec (ICLPQRSpec, KDESpec, ERMSpec, FPCASpec, ...) or a fit of one")
    entry.check(mechanism, options, plan=True)
    if privacy_unit is not None:
        spec_or_fit = _with_unit(spec_or_fit, privacy_unit)
    out = as_study(entry.resolve("plan")(spec_or_fit, mechanism, draws=draws, seeded=bool(seeded), **options),
                   bool(study))
    check_relation(out, neighbouring)
    return out


def _with_unit(spec_or_fit, unit):
    """The spec with ``unit`` as its privacy unit (a fit must already carry it)."""
    import dataclasses

    spec = getattr(spec_or_fit, "spec", spec_or_fit)
    if not hasattr(spec, "privacy_unit"):
        raise InputError(f"a {type(spec).__name__} has no person-level privacy unit",
                         "drop privacy_unit (the guarantee is per record)")
    current = spec.privacy_unit
    if current == unit:
        return spec_or_fit
    if current is not None or spec is not spec_or_fit:
        raise InputError(f"privacy_unit={unit!r} disagrees with the spec's {current!r}",
                         "build the spec (and its fit) with the privacy unit you mean")
    try:
        return dataclasses.replace(spec, privacy_unit=unit)
    except TypeError:
        raise InputError(f"a {type(spec).__name__} takes its privacy unit when it is built",
                         "build the spec with privacy_unit=...") from None


__all__ = ["LARGE_DELTA", "PLAN_ATTRS", "STUDY", "ReleasePlan", "as_study", "check_draws", "check_relation", "check_scale",
           "check_study", "plan"]
