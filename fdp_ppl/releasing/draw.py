"""Exact releases as ``xarray.DataTree`` (the layout is :mod:`fdp_ppl.releasing.schema`).

:func:`release` draws from the mechanism's noise law with the shared
compiled sampler of :mod:`fdp_ppl.noise.sampling` (the summary is an input of each
call, never stored) and returns only released quantities and public
metadata (DESIGN invariants 5 and 6).
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Callable
import datetime
import threading
import warnings
import weakref

import numpy as np
import xarray as xr

from .._version import __version__
from ..accounting import PrivacyLedger
from ..errors import BudgetExceededError, CompatibilityError, InputError, SeededReleaseWarning
from ..noise.mechanisms import Mechanism
from ..noise.sampling import generator_attrs, resolve_generator, sampler_for
from ..settings import blas_threads
from .schema import NOISE_SCALE, ReleaseMetadata, ReleaseTemplate, release_tree
from ..summaries import LinearSummary


def release(fitted, mechanism, *, draws: int = 1, random_seed=None, ledger: PrivacyLedger | None = None,
            label: str = "", dataset: str = "", progressbar: bool = False, provenance=None, composed_with=(),
            bound: str | None = None, generator: str | None = None, chains: int | None = None,
            allow_nonprivate: bool | None = None, records_per_unit: int | None = None,
            allow_large_delta: bool = False, study: bool = False, neighbouring: str | None = None) -> xr.DataTree:
    """Release any fitted object privately: one protocol for every family.

    The steps, in this order and only here: refuse a seed without ``study=True`` and a study with a ledger
    (before anything is read) → refuse a mechanism or option the family does not take → the
    family's public plan (:func:`fdp_ppl.plan`: calibration, every size and memory check; no data) → the
    seed warning → the ledger charge of ``plan.cost`` with ``plan.event`` → the family's draw (the only step
    that reads the fit) → the plan's attributes, the provenance and the ledger's state recorded on the tree.
    A refusal at any step before the charge costs nothing; after it nothing is refunded.

    Families (fitted object, from; mechanisms; family options):

    * ``LinearSummary`` (``iclp_qr_mean``, ...): ICLP, FRL, Bernstein, GaussianMechanism or an elliptical
      mechanism; ``bound``, ``generator``, ``allow_nonprivate``.
    * ``KDESummary`` (``KDESpec(...).fit``): GaussianMechanism (KDESpec, SobolevKDESpec), ICLP (ICLPKDESpec),
      FRL / Bernstein (baselines); ``bound``, ``generator``, ``chains``.
    * ``ERMFit`` (``ERMSpec(...).fit``): GaussianMechanism (``eta=None``), ICLP (``eta > 1``); ``chains``.
    * ``FPCAFit`` (``FPCASpec(...).fit``): :class:`~fdp_ppl.ExponentialMechanism` (its sampler options are the
      mechanism's).

    Parameters
    ----------
    fitted : LinearSummary, KDESummary, ERMFit or FPCAFit
        A fitted summary (data holder only); its sensitivity comes from its public spec.
    mechanism
        A mechanism the family accepts (list above).
    draws : int
        Number of independent releases; ``k`` draws cost ``k ×`` the per-draw guarantee.
    random_seed : int, sequence of int, numpy Generator or None
        None (the default): fresh OS entropy. A seed makes the noise reproducible by anyone who
        knows or guesses it, so it needs ``study=True``: the release records ``noise_seeded = 1`` and a
        :class:`~fdp_ppl.errors.SeededReleaseWarning` is emitted.
    ledger : PrivacyLedger or FileLedger, optional
        Charged ``plan.cost`` (with ``plan.event``) before any draw, after every public check. Refused for a
        study (a study is not private spending).
    label, dataset : str
        Ledger label (empty: the plan's label) and dataset identity.
    progressbar : bool
        Progress of long draws (mean and FPCA releases; the others are not long).
    provenance : mapping of str to str or number, optional
        Public descriptions recorded as root attributes as given (``data_source``, ``missing``, the variables'
        names): the command line passes its own here, so a release made from Python with the same provenance
        is the same file. A key that the plan records is refused.
    composed_with : sequence of ReleasePlan, optional
        Plans already charged on the same data that this release completes (a density's private bandwidth,
        :func:`fdp_ppl.kde.bandwidth_plan`): the file records their composition (:meth:`ReleasePlan.then`:
        the summed budget, floating-point safe only if every part is); only this release's own plan is
        charged here.
    bound : {"tight", "paper", "closed-form"}, optional
        Sensitivity bound (mean and KDE; default ``"tight"``).
    generator : {None, "opendp", "pymc"}, optional
        Release sampler (mean and KDE; default: OpenDP when unseeded and the law has one).
    chains : int, optional
        Releases arranged ``(chain, draw)`` (KDE and machines; default 1).
    allow_nonprivate : bool, optional
        Release a mean whose τ came from the data (mean only; the release records ``private = 0``).
    records_per_unit : int, optional
        A public bound k on each person's records: a record-level release charged to a ledger whose privacy unit
        is a person is then charged by group privacy (kε; (kε, k e^{(k-1)ε} δ); Gaussian kμ) and the file
        records ``ledger_charged_epsilon`` / ``ledger_charged_delta`` / ``ledger_records_per_unit``. Without it,
        such a release is refused (one ledger keeps one privacy unit: :func:`fdp_ppl.accounting.events.for_ledger`).
    allow_large_delta : bool
        Release with a per-draw δ above 1/n (0.1 without a public n): refused otherwise
        (:meth:`~fdp_ppl.releasing.plans.ReleasePlan.check_delta`), except in a seeded study (not a release).
    study : bool
        A study (tests, simulations, reproductions), not a release: the only way to pass a ``random_seed``. The
        release records ``study = "not private"`` (:data:`~fdp_ppl.releasing.plans.STUDY`) and no ledger may be
        given: a study charges nothing to a real ledger.
    neighbouring : {None, "replace-one", "add-remove"}
        The relation the caller requires (None: the fit's): membership protection (``"add-remove"``) is served by
        a mean curve fitted with ``neighbouring="add-remove", n_lower=N`` and refused, before any charge,
        otherwise (:func:`~fdp_ppl.releasing.plans.check_relation`). A replace-one ledger charges an add/remove
        release (2ε, (1 + e^ε) δ) and the file records ``ledger_charged_epsilon``; an add/remove ledger refuses a
        replace-one release.

    Returns
    -------
    xr.DataTree
        The family's release: ``posterior`` with dims ``chain``, ``draw`` first, ``constant_data``, root attrs
        equal to ``plan.attrs`` (the mechanism, ε, δ, the sensitivity, the budget spent, the privacy unit, the
        guarantee) plus the provenance, the ledger's state and the creation stamp; never the non-private fit.

    Raises
    ------
    CompatibilityError
        ``fitted`` is not a fitted object of a registered family, or ``mechanism`` is not one the
        family accepts (before any charge).
    InputError
        A ``random_seed`` without ``study=True``, or a ledger with ``study=True`` (before anything is read); a
        family option the family does not take, a provenance key the plan records, a δ above 1/n without
        ``allow_large_delta``, a privacy unit the ledger does not hold, and the family plan's own refusals
        (sizes, memory, scales), all before any charge.
    BudgetExceededError
        The ledger cannot pay for the release; nothing is drawn.

    See Also
    --------
    fdp_ppl.plan : the same plan, without data and without spending.
    fdp_ppl.infer : the posterior of the truth given the release (no privacy cost).

    Examples
    --------
    >>> import warnings
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.iclp_qr_mean(curves, basis, tau=200.0)
    >>> tree = fp.release(summary, fp.ICLP(epsilon=1.0))       # fresh OS entropy: floating-point-safe noise
    >>> tree.attrs["release_family"], tree.attrs["noise_generator"], tree.attrs["budget_spent_epsilon"]
    ('mean', 'opendp', 1.0)
    >>> tree["posterior"]["curve"].dims
    ('chain', 'draw', 't')
    """
    from .families import release_entry
    from .plans import ReleasePlan, as_study, check_relation, check_study

    check_study(random_seed, study, ledger)
    entry = release_entry(fitted)
    if entry is None:
        raise CompatibilityError(f"cannot release a {type(fitted).__name__}: fp.release takes a fitted summary",
                                 "fit one first, e.g. iclp_qr_mean(curves, basis, tau=1), KDESpec(...).fit(x), "
                                 "ERMSpec(...).fit(X, y) or FPCASpec(...).fit(curves)")
    options = {"bound": bound, "generator": generator, "chains": chains, "allow_nonprivate": allow_nonprivate or None}
    entry.check(mechanism, options)
    seeded = random_seed is not None
    plan = entry.resolve("plan")(fitted, mechanism, draws=draws, seeded=seeded,
                                 **{k: v for k, v in options.items() if v is not None})
    if not isinstance(plan, ReleasePlan):
        raise TypeError(f"the {entry.family} family's plan hook returned a {type(plan).__name__}")
    plan = as_study(plan, study)
    check_relation(plan, neighbouring)
    plan.check_delta(allow_large_delta or plan.study)  # a study is no release: any delta
    extra = _provenance(provenance, plan)
    if seeded:
        warn_seeded(entry.family)
    recorded = plan
    for earlier in reversed(tuple(composed_with or ())):
        if not isinstance(earlier, ReleasePlan):
            raise InputError("composed_with takes the ReleasePlans already charged", "e.g. composed_with=(bw_plan,)")
        recorded = earlier.then(recorded)
    extra = {**extra, **charge(plan, ledger, label=label, dataset=dataset, records_per_unit=records_per_unit)}
    tree = entry.resolve("draw")(fitted, plan, random_seed=random_seed, progressbar=bool(progressbar))
    return _record(tree, recorded, extra, ledger)


def charge(plan, ledger, *, label: str = "", dataset: str = "", records_per_unit: int | None = None) -> dict:
    """The protocol's charge step: ``plan.cost`` with ``plan.event`` spent on ``ledger`` (nothing when it is None).

    The one place a release is charged (:func:`release`, :class:`fdp_ppl.machine.OnlineRelease`): after every
    public check and the seed warning, before any draw; a failure after it never refunds.

    Parameters
    ----------
    plan : ReleasePlan
    ledger : PrivacyLedger, FileLedger or None
    label, dataset : str
        Ledger label (empty: ``plan.label``) and dataset identity.
    records_per_unit : int, optional
        Public bound on records per person, for a record-level plan charged to a person-level ledger.

    Returns
    -------
    dict
        The group-privacy attributes to record (``ledger_charged_epsilon``, ...; empty when none apply).

    Raises
    ------
    BudgetExceededError, InputError
        From the ledger (the cost does not fit; a privacy unit it does not hold).
    """
    if ledger is None:
        return {}
    unit = {} if records_per_unit is None else {"records_per_unit": records_per_unit}
    try:
        ledger.spend(plan.cost, label or plan.label, dataset=dataset, mechanism=plan.mechanism, event=plan.event,
                     **unit)
    except BudgetExceededError as err:
        raise lattice_refusal(plan, err) from err
    return _group_attrs(plan, ledger, records_per_unit)


def lattice_refusal(plan, err: BudgetExceededError) -> BudgetExceededError:
    """The ledger's refusal ``err`` of ``plan``, said in the plan's words when the plan is a pure ε mechanism that the
    floating-point-safe lattice made (ε, δ_fp)-DP (``generator == "snapped"``, nominal δ = 0): a pure ledger cannot
    pay that δ, and the fix is a δ budget or the float sampler; ``err`` itself otherwise."""
    if not (plan.generator == "snapped" and plan.delta == 0 < plan.cost.delta):
        return err
    return BudgetExceededError(
        f"the floating-point-safe lattice release of this pure epsilon-DP mechanism is (epsilon, delta)-DP with delta "
        f"= {plan.cost.delta:.3g} (the rounding's, fdp_ppl.noise.snapping), which this ledger cannot pay",
        "create the ledger with a delta budget (--budget EPSILON,1e-8), or pass generator='pymc' in Python (pure "
        "epsilon, NOT floating-point safe); nothing was released")


def warn_seeded(family: str, stacklevel: int = 3) -> None:
    """The protocol's seed warning (:class:`~fdp_ppl.errors.SeededReleaseWarning`), before the charge."""
    warnings.warn(f"the {family} release is drawn from the given random_seed: anyone who learns the seed "
                  "can regenerate the noise and remove it, so the release is private only while the seed stays "
                  "secret; pass no seed for a real release (fresh OS entropy)", SeededReleaseWarning,
                  stacklevel=stacklevel)


def _group_attrs(plan, ledger, records_per_unit) -> dict:
    """What a release was charged to a ledger of another unit or relation (group privacy), after the charge: a
    record-level release on a ledger of a person unit, an add/remove release on a replace-one ledger."""
    held, relation = getattr(ledger, "privacy_unit", None), getattr(ledger, "neighbouring", None)
    regroup = records_per_unit is not None and plan.event is not None and held not in (None, plan.event.unit)
    if plan.event is None or not (regroup or relation not in (None, plan.event.neighbouring)):
        return {}
    from ..accounting.events import for_ledger

    charged = for_ledger(plan.event, held, records_per_unit if regroup else None, relation)
    rules = ([f"group privacy for <= {int(records_per_unit)} records per {held}: (k eps, k e^((k-1) eps) delta)"]
             if regroup else [])
    if charged.neighbouring != plan.event.neighbouring:
        rules.append("add/remove to replace-one (remove then add): (2 eps, (1 + e^eps) delta)")
    return {**({"ledger_records_per_unit": int(records_per_unit)} if regroup else {}),
            "ledger_charged_epsilon": charged.basic.epsilon, "ledger_charged_delta": charged.basic.delta,
            "ledger_charge_rule": (f"{'; then '.join(rules)}: ({plan.epsilon:g}, {plan.delta:g}) per draw -> "
                                   f"({charged.epsilon:.6g}, {charged.delta:.3g})")}


def _provenance(provenance, plan) -> dict:
    """The caller's public descriptions as attributes (refusing a key the plan records)."""
    from .schema import clean_attrs

    if not provenance:
        return {}
    extra = clean_attrs(dict(provenance))
    clash = sorted(set(extra) & set(plan.attrs))
    if clash:
        raise InputError(f"provenance may not set {', '.join(clash)}: the release plan records them",
                         "drop them from provenance (they come from the spec and the mechanism)")
    return extra


def _record(tree: xr.DataTree, plan, extra: dict, ledger) -> xr.DataTree:
    """The one place a release's root attributes are written: the family's tree, the plan's attributes, the
    caller's provenance, the ledger's state after the charge and the creation stamp (ArviZ's ``created_at``,
    ``creation_library`` on the posterior group too)."""
    from .schema import POSTERIOR, clean_attrs

    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    planned = plan.attrs  # already clean (ReleasePlan), like extra
    attrs = clean_attrs({k: v for k, v in tree.attrs.items() if k not in planned}) if tree.attrs else {}
    attrs.update(planned)
    attrs.update(extra)
    if ledger is not None and hasattr(ledger, "attrs"):
        attrs.update(clean_attrs(ledger.attrs()))
    attrs["fdp_ppl_version"] = __version__
    attrs["created_at"] = now
    tree.attrs = attrs
    if POSTERIOR in tree.children:
        post = tree[POSTERIOR]
        post.attrs.update({"created_at": now, "creation_library": "fdp_ppl", "creation_library_version": __version__})
        if plan.units and plan.variable in post.data_vars:
            post[plan.variable].attrs["units"] = plan.units
        if ("t_name" in extra or "t_units" in extra) and "t" in post.coords:  # the grid's public name and units
            for key, attr in (("t_name", "long_name"), ("t_units", "units")):
                if key in extra:
                    post.coords["t"].attrs[attr] = str(extra[key])
    return tree


def plan_release(spec_or_fit, mechanism, *, draws: int = 1, seeded: bool = False, bound: str | None = None,
                 generator: str | None = None, allow_nonprivate: bool | None = None):
    """The mean family's plan hook: the public plan of releasing a linear summary (a mean curve).

    Called by :func:`fdp_ppl.plan` and :func:`fdp_ppl.release`; reads the spec only.

    Parameters
    ----------
    spec_or_fit : SummarySpec or LinearSummary
    mechanism : Mechanism
        ``ICLP(epsilon)``, ``FRL(epsilon)``, ``Bernstein(epsilon)``, ``GaussianMechanism(epsilon, delta)``, or
        an elliptical mechanism.
    draws : int
        One draw is one publication; ``k`` draws cost ``k × (ε, δ)``.
    seeded : bool
        A seeded study: the compiled float64 sampler (not floating-point safe) instead of OpenDP's.
    bound : {"tight", "paper", "closed-form"}
        Which sensitivity bound calibrates the noise (:meth:`~fdp_ppl.summaries.SummarySpec.sensitivity`).
    generator : {None, "opendp", "pymc"}
        Release sampler (:func:`fdp_ppl.noise.sampling.generators`). None: ``"opendp"`` (exact discrete
        noise on a lattice) when unseeded and the law is floating-point safe (Laplace: ICLP, FRL, Bernstein;
        Normal: Gaussian mechanism; the Gaussian σ is raised if OpenDP's privacy map needs it), else ``"pymc"``
        (float64, seedable, **not floating-point safe**: Mironov 2012). Elliptical laws are always ``"pymc"``.
    allow_nonprivate : bool
        Release a summary whose τ was computed from the private data (``data_tau``), for reproducing papers;
        the release records ``private = 0`` and ``certified = 0``.

    Returns
    -------
    ReleasePlan
        ``attrs`` are the release's root attributes (:class:`~fdp_ppl.releasing.schema.ReleaseMetadata`:
        mechanism, noise law, ε, δ, sensitivity, its norm and bound, the neighbouring relation, τ, n, kernel
        and its parameters, η, ψ, M, quadrature, the budget spent; the generator: ``noise_generator``,
        ``fp_safe``, ``epsilon_guaranteed`` / ``delta_guaranteed`` (per draw: OpenDP's privacy map on the
        ``"opendp"`` path, the nominal ε, δ otherwise), ``fp_safety``, ``privacy_guarantee``,
        ``noise_sigma_source``).

    Raises
    ------
    CompatibilityError
        A mechanism that is not an fdp_ppl Mechanism, a spec it cannot release; ``generator="opendp"`` for a
        law without a floating-point-safe sampler.
    InputError
        draws < 1; a data-derived τ without ``allow_nonprivate=True``; an unknown generator or
        ``"opendp"`` with a seed; a scale that is not finite; draws that do not fit in memory.
    """
    from ..summaries import SummarySpec
    from .plans import check_draws

    if not isinstance(mechanism, Mechanism):
        raise CompatibilityError("mechanism must be an fdp_ppl Mechanism", "e.g. ICLP(epsilon=1)")
    spec = spec_or_fit.spec if isinstance(spec_or_fit, LinearSummary) else spec_or_fit
    if not isinstance(spec, SummarySpec):
        raise CompatibilityError("summary must be a fitted summary or its spec",
                                 "e.g. iclp_qr_mean(curves, basis, tau=1) or spec.fit(curves)")
    draws, _ = check_draws(draws)
    params = tuple(sorted(vars(mechanism).items()))
    key = (("plan", type(mechanism), params, bound, generator, draws, bool(seeded), bool(allow_nonprivate))
           if all(isinstance(v, _PLAIN_PARAMS) for _, v in params) else None)
    out = _cache_get(_PUBLIC, spec, key) if key is not None else None
    if out is None and key is not None:  # another spec of the same public configuration (a new fit of new data)
        out = _plan_of_config(spec, key)
    if out is None:  # a plan is public and immutable: made once per public configuration and mechanism parameters
        out = _plan_mean(spec, mechanism, draws, seeded, bound, generator, allow_nonprivate)
        if key is not None:
            _cache_put(_PUBLIC, spec, key, out, ("plan",))
    out.check_memory()
    return out


def _plan_of_config(spec, key):
    """The plan kept for another spec of ``spec``'s public configuration, bound to ``spec`` (its draw hook checks
    the spec it was planned for), or None. Only the weak reference differs: every other part of a plan is a
    function of the configuration and the key (0.17 ms a release otherwise, at K = 100)."""
    config = _config_key(spec, key, ("plan",))
    if config is None:
        return None
    with _TEMPLATES_LOCK:
        other = _BY_CONFIG.get(config)
        if other is not None:
            _BY_CONFIG.move_to_end(config)
    if other is None:
        return None
    out = copy.copy(other)  # a frozen dataclass: no __post_init__ again
    object.__setattr__(out, "state", (weakref.ref(spec),) + tuple(other.state[1:]))
    _cache_put(_PUBLIC, spec, key, out)
    return out


def _plan_mean(spec, mechanism, draws, seeded, bound, generator, allow_nonprivate):
    from .plans import ReleasePlan, check_scale

    private = not spec.data_dependent  # τ from the data: no formal guarantee
    if not private and not allow_nonprivate:
        raise InputError("tau was computed from the private data (data_tau): the release would carry no privacy "
                         "guarantee", "pass a public tau, or allow_nonprivate=True for a study (the release then "
                         "records private = 0)")
    generator = resolve_generator(mechanism.law, generator, 0 if seeded else None, pure=mechanism.delta == 0,
                                  n_components=spec.n_components)
    cal, sampler, head, tail, accuracy = _public_parts(spec, mechanism, bound or "tight", generator)
    check_scale(cal.scale)
    J, K = spec.n_components, spec.grid.size
    eps_g, dlt_g = tail.get("epsilon_guaranteed", mechanism.epsilon), tail.get("delta_guaranteed", mechanism.delta)
    event = mechanism.privacy_event(cal, draws)
    cost = mechanism.budget * draws
    if dlt_g > mechanism.delta:  # the generator adds to δ (floating-point-safe lattice rounding): charged
        from ..accounting import PrivacyBudget, PrivacyEvent

        cost, event = PrivacyBudget(mechanism.epsilon, dlt_g) * draws, PrivacyEvent("approx", mechanism.epsilon,
                                                                                   dlt_g, None, draws)
    extra = dict(head)
    extra.update({"noise_multiplier": cal.sigma, "private": int(private),
                  "sampling": (f"exact forward draws ({sampler.generator} floating-point-safe sampler), not MCMC"
                               if getattr(sampler, "fp_safe", False)
                               else "exact forward draws (compiled PyMC sampler), not MCMC")})
    extra.update(tail)
    meta = ReleaseMetadata(
        mechanism=mechanism.family, noise_law=mechanism.law.name, summary=spec.name, epsilon=mechanism.epsilon,
        delta=mechanism.delta, sensitivity=cal.sensitivity.value, sensitivity_norm=cal.sensitivity.norm, n=spec.n,
        tau=float(spec.tau), draws=draws, budget_spent_epsilon=cost.epsilon, budget_spent_delta=cost.delta,
        extra={k: v for k, v in extra.items() if k not in ReleaseMetadata._TYPES})
    unit = getattr(spec, "privacy_unit", None)
    out = ReleasePlan(
        family="mean", mechanism=mechanism.family, noise_law=mechanism.law.name, epsilon=float(mechanism.epsilon),
        delta=float(mechanism.delta), draws=draws, sensitivity=float(cal.sensitivity.value),
        sensitivity_norm=cal.sensitivity.norm, noise_scale=cal.scale, noise_multiplier=float(cal.sigma),
        event=event, cost=cost,
        privacy_unit="record" if unit is None else unit.column, neighbouring=cal.sensitivity.neighbouring,
        guarantee=(f"({float(eps_g):.6g}, {float(dlt_g):.3g})-DP per draw for {cal.sensitivity.neighbouring}"
                   + ("" if private else "; NOT private: tau was computed from the data")),
        fp_safe=bool(tail.get("fp_safe", 0)), certified=private, seeded=seeded, generator=generator,
        output={"chain": 1, "draw": draws, "t": K}, memory_bytes=3.0 * 8.0 * draws * (J + K),
        variable="curve", coords={"t": spec.grid.points},  # units: the data's (value_units, from provenance)
        label=f"{mechanism.family} release of {spec.name}", attrs=meta.to_attrs(),
        # the spec weakly: plans are cached per spec (weakly held), and a strong reference would keep it alive
        state=(weakref.ref(spec), cal, sampler, mechanism.law.describe_scale(), meta, accuracy))
    return out


def _accuracy_inputs(spec, law) -> dict:
    """The public map :func:`accuracy_release` needs (held by the plan: it outlives a spec built inline)."""
    from .accuracy import public_map

    return public_map(spec.design, spec.grid.weights, {"t": spec.grid.points}, law,
                      constant_gain=spec.constant_gain(), tau=float(spec.tau), n=int(spec.n))


def accuracy_release(plan, **options):
    """The mean family's accuracy hook (:meth:`fdp_ppl.ReleasePlan.accuracy`):
    :func:`fdp_ppl.releasing.accuracy.noise_accuracy` on the spec's public design."""
    from .accuracy import noise_accuracy

    return noise_accuracy(plan, plan.state[5], **options)


def draw_release(summary: LinearSummary, plan, *, random_seed=None, progressbar: bool = False) -> xr.DataTree:
    """The mean family's draw hook: exact forward draws of the planned noise around the summary.

    ``posterior``: ``coefficients`` (chain, draw, basis) and ``curve`` (chain, draw, t) with one chain;
    ``constant_data``: the public basis, ``noise_scale`` (basis) and ``quadrature_weights`` (t). The
    non-private summary is never included. Called by :func:`fdp_ppl.release` after the charge.
    """
    spec_ref, cal, sampler, scale_description, meta, _ = plan.state
    spec = summary.spec
    if spec_ref() is not spec:
        raise CompatibilityError("the plan was made for another spec", "plan the release of this summary's spec")
    coef = sampler.draw(summary.coefficients, cal.scale, plan.draws, random_seed, progressbar=progressbar,
                        calibration=cal, study=plan.study)
    with blas_threads():  # a small product: OpenBLAS's second thread only synchronises (10x slower under load)
        curves = coef @ spec.design.T
    template = _template(summary, np.asarray(cal.scale, dtype=float), scale_description)
    return release_tree(meta, coef, curves, None, None, None, {"sampling": "exact forward draws"},
                        template=template)


#: public calibration, sampler and attributes per public spec (weakly held) and per (mechanism class and
#: parameters, bound, generator); only mechanisms whose parameters are plain numbers and strings are cached
_PUBLIC: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_PLAIN_PARAMS = (int, float, str, bool, type(None))


def _public_parts(spec, mechanism: Mechanism, bound: str, generator: str):
    """``(calibration, sampler, head attrs, tail attrs, accuracy inputs)`` of releasing ``spec`` with ``mechanism``:
    all public, computed once per public configuration and mechanism parameters (the calibration's scales are
    made read-only; the accuracy inputs cost a K × J product, 10 ms at K = 3200)."""
    params = tuple(sorted(vars(mechanism).items()))
    key = ((type(mechanism), params, bound, generator) if all(isinstance(v, _PLAIN_PARAMS) for _, v in params)
           else None)
    if key is not None:
        parts = _cache_get(_PUBLIC, spec, key, ("parts",))
        if parts is not None:
            return parts
    cal = mechanism.calibrate(spec, bound, generator=generator)
    cal.scale.flags.writeable = False
    sampler = sampler_for(mechanism.law, spec.n_components, generator)
    head = {}
    head.update(mechanism.attrs())
    head.update(cal.sensitivity.attrs())
    head.update(spec.attrs())
    head.update(spec.basis_attrs())
    head.update(spec.grid.attrs())
    head.update(mechanism.release_attrs(spec))
    parts = (cal, sampler, head, generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta),
             _accuracy_inputs(spec, mechanism.law))
    if key is not None:
        _cache_put(_PUBLIC, spec, key, parts, ("parts",))
    return parts


def _cache_get(store, spec, key, shared=None):
    """The value kept for ``(spec, key)``; with ``shared`` (a tag), also one kept for another spec of the same
    public configuration (:meth:`~fdp_ppl.summaries.SummarySpec.public_key`), then kept for this spec too."""
    with _TEMPLATES_LOCK:
        per_spec = store.get(spec)
        value = None if per_spec is None else per_spec.get(key)
        config = None if value is not None or shared is None else _config_key(spec, key, shared)
        if config is not None and config in _BY_CONFIG:
            _BY_CONFIG.move_to_end(config)
            value = _BY_CONFIG[config]
    if value is not None and config is not None:
        _cache_put(store, spec, key, value)
    return value


def _cache_put(store, spec, key, value, shared=None) -> None:
    """Keep ``value`` for ``(spec, key)``: at most ``_TEMPLATES_PER_SPEC`` per spec, the oldest dropped first;
    with ``shared``, also for the spec's public configuration (at most ``_CONFIGS`` kept, least recent dropped)."""
    config = None if shared is None else _config_key(spec, key, shared)
    with _TEMPLATES_LOCK:
        per_spec = store.setdefault(spec, {})
        if len(per_spec) >= _TEMPLATES_PER_SPEC:
            per_spec.pop(next(iter(per_spec)))
        per_spec[key] = value
        if config is not None:
            _BY_CONFIG[config] = value
            _BY_CONFIG.move_to_end(config)
            while len(_BY_CONFIG) > _CONFIGS:
                _BY_CONFIG.popitem(last=False)


def _config_key(spec, key, shared):
    """``(shared, public configuration, key)``, or None when the spec has no public key (τ from the data, a
    parameter that is not hashable): such specs share nothing."""
    public = spec.public_key()
    return None if public is None else (shared, public, key)


#: public parts of release trees (:class:`~fdp_ppl.releasing.schema.ReleaseTemplate`), per public spec (weakly held) and
#: per (noise scales, their description, labels, public offset): nothing non-private is kept
_TEMPLATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_TEMPLATES_LOCK = threading.Lock()
_TEMPLATES_PER_SPEC = 8
#: the same public parts (calibrations, templates) per public configuration of a spec, so that a new spec of the
#: same configuration (``iclp_qr_mean(curves, basis, tau)`` builds one per call) does not redo them: keyed by
#: public parameters only (never by data), at most ``_CONFIGS`` kept (a template holds the basis: 80 MB at K = 3200;
#: three entries a configuration released by one mechanism: its public parts, its template and its plan)
_BY_CONFIG: "collections.OrderedDict" = collections.OrderedDict()
_CONFIGS = 12


#: the clear functions of the public caches kept by later stages (a family's bases), registered on their import
_OTHER_CACHES: list = []


def register_public_cache(clear: Callable[[], None]) -> Callable[[], None]:
    """Register the clear function of a public cache kept by a later stage (a family's eigenbases), so that
    :func:`clear_public_cache` forgets it too; returns ``clear`` (usable as a decorator)."""
    if clear not in _OTHER_CACHES:
        _OTHER_CACHES.append(clear)
    return clear


def clear_public_cache() -> None:
    """Forget every public part kept across releases: calibrations, samplers, attributes, tree templates, the
    compiled samplers (:func:`fdp_ppl.noise.sampling.clear_cache`), the eigenbases
    (:func:`fdp_ppl.spaces.eigenbasis.clear_cache`) and every cache a family registered with
    :func:`register_public_cache` (the density's eigenbases). For timing studies of cold releases, and for code
    that changes a mechanism's calibration in place (audits, the planted bugs of :mod:`fdp_ppl.testing.plants`).

    Examples
    --------
    >>> clear_public_cache()  # the next release rebuilds its public parts
    """
    from ..noise.sampling import clear_cache
    from ..spaces.eigenbasis import clear_cache as clear_eigenbases

    with _TEMPLATES_LOCK:
        _PUBLIC.clear()
        _TEMPLATES.clear()
        _BY_CONFIG.clear()
    clear_cache()
    clear_eigenbases()
    for clear in list(_OTHER_CACHES):
        clear()


def _template(summary: LinearSummary, scale: np.ndarray, scale_description: str) -> ReleaseTemplate:
    """The release template of a summary's public parts, built once per spec and noise scales."""
    spec = summary.spec
    offset = summary.offset
    key = (scale.tobytes(), scale_description, tuple(sorted(summary.labels.items())),
           None if offset is None else np.asarray(offset, dtype=float).tobytes(), summary.offset_source)
    template = _cache_get(_TEMPLATES, spec, key, ("template",))
    if template is None:
        constant = spec.public_dataset().assign({NOISE_SCALE: (("basis",), scale.copy())})
        constant[NOISE_SCALE].attrs["description"] = scale_description
        grid = spec.grid
        template = ReleaseTemplate(constant, grid.t, grid.points, labels=summary.labels, offset=offset,
                                   offset_source=summary.offset_source)
        _cache_put(_TEMPLATES, spec, key, template, ("template",))
    return template


__all__ = ["release", "charge", "warn_seeded", "clear_public_cache", "register_public_cache", "plan_release", "draw_release", "accuracy_release"]
