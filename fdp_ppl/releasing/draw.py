"""Exact releases as ``xarray.DataTree`` (the layout is :mod:`fdp_ppl.releasing.schema`).

:func:`release` draws from the mechanism's noise law with the shared
compiled sampler of :mod:`fdp_ppl.noise.sampling` (the summary is an input of each
call, never stored) and returns only released quantities and public
metadata (DESIGN invariants 5 and 6).
"""

from __future__ import annotations

import datetime
import threading
import warnings
import weakref

import numpy as np
import xarray as xr

from .._version import __version__
from ..accounting import PrivacyLedger
from ..errors import CompatibilityError, InputError, SeededReleaseWarning
from ..noise.mechanisms import Mechanism
from ..noise.sampling import generator_attrs, resolve_generator, sampler_for
from ..settings import blas_threads
from .schema import NOISE_SCALE, ReleaseMetadata, ReleaseTemplate, release_tree
from ..summaries import LinearSummary


#: keyword options of :func:`release` that only some families take (``None`` / False: not given)
_FAMILY_OPTIONS = ("bound", "generator", "chains", "allow_nonprivate")


def release(fitted, mechanism, *, draws: int = 1, random_seed=None, ledger: PrivacyLedger | None = None,
            label: str = "", dataset: str = "", progressbar: bool = False, bound: str | None = None,
            generator: str | None = None, chains: int | None = None,
            allow_nonprivate: bool | None = None) -> xr.DataTree:
    """Release any fitted object privately: one entry for every mechanism family.

    Dispatches on the type of ``fitted`` through :data:`fdp_ppl.releasing.registry.RELEASES` to its
    family's release function (imported on first use): the result is the one that function
    makes, value for value and attribute for attribute.

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
        knows it (studies, tests): the release records ``noise_seeded = 1`` and a
        :class:`~fdp_ppl.errors.SeededReleaseWarning` is emitted.
    ledger : PrivacyLedger or FileLedger, optional
        Charged before any draw, after every public check; a refused release costs nothing.
    label, dataset : str
        Ledger label (empty: the family's default label) and dataset identity.
    progressbar : bool
        Progress of long draws (mean and FPCA releases; the others are not long and ignore it).
    bound : {"tight", "paper", "closed-form"}, optional
        Sensitivity bound (mean and KDE; default ``"tight"``).
    generator : {None, "opendp", "pymc"}, optional
        Release sampler (mean and KDE; default: OpenDP when unseeded and the law has one).
    chains : int, optional
        Releases arranged ``(chain, draw)`` (KDE and ERM; default 1).
    allow_nonprivate : bool, optional
        Release a mean whose τ came from the data (mean only; the release records ``private = 0``).

    Returns
    -------
    xr.DataTree
        The family's release (``posterior`` with dims ``chain``, ``draw`` first, ``constant_data``, root attrs
        recording the mechanism, ε, δ, the sensitivity and the budget spent; never the non-private fit).

    Raises
    ------
    CompatibilityError
        ``fitted`` is not a fitted object of a registered family, or ``mechanism`` is not one the
        family accepts (before any charge).
    InputError
        A family option the family does not take (e.g. ``bound`` for an ERM fit), before any
        charge; and the family's own refusals (:func:`release_linear` and the family functions).
    BudgetExceededError
        The ledger cannot pay for the release; nothing is drawn.
    """
    from .families import release_entry

    entry = release_entry(fitted)
    if entry is None:
        raise CompatibilityError(f"cannot release a {type(fitted).__name__}: fp.release takes a fitted summary",
                                 "fit one first, e.g. iclp_qr_mean(curves, basis, tau=1), KDESpec(...).fit(x), "
                                 "ERMSpec(...).fit(X, y) or FPCASpec(...).fit(curves)")
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(mechanism).__mro__}
    if not names.intersection(entry.mechanisms):
        raise CompatibilityError(f"a {entry.family} fit is not released with {type(mechanism).__name__}",
                                 f"use {entry.hint}")
    given = {"bound": bound, "generator": generator, "chains": chains, "allow_nonprivate": allow_nonprivate or None}
    refused = [name for name in _FAMILY_OPTIONS if given[name] is not None and name not in entry.options]
    if refused:
        takes = [o for o in entry.options if o in _FAMILY_OPTIONS]
        raise InputError(f"a {entry.family} release takes no {', '.join(refused)}",
                         f"drop {', '.join(refused)} (its options: {', '.join(takes) or 'none'})")
    options = {name: value for name, value in given.items() if value is not None}
    if "progressbar" in entry.options:
        options["progressbar"] = progressbar
    if label:
        options["label"] = label
    return entry.resolve()(fitted, mechanism, draws=draws, random_seed=random_seed, ledger=ledger, dataset=dataset,
                           **options)


def release_linear(summary: LinearSummary, mechanism: Mechanism, *, draws: int = 1, random_seed=None,
                   ledger: PrivacyLedger | None = None, bound: str = "tight", progressbar: bool = False,
                   label: str = "", generator: str | None = None, dataset: str = "",
                   allow_nonprivate: bool = False) -> xr.DataTree:
    """Release a linear summary (a mean curve) privately: exact forward draws of the mechanism's noise law.

    The family function :func:`release` calls for a :class:`~fdp_ppl.summaries.LinearSummary`;
    call ``fp.release(summary, mechanism, ...)``.

    Parameters
    ----------
    summary : LinearSummary
        A fitted summary, e.g. ``iclp_qr_mean(curves, basis, tau=1.0)``; its
        sensitivity comes from its public spec only.
    mechanism : Mechanism
        ``ICLP(epsilon)``, ``FRL(epsilon)``, ``Bernstein(epsilon)``,
        ``GaussianMechanism(epsilon, delta)``, or an elliptical mechanism.
    draws : int
        Number of independent releases. One draw is one publication; ``k``
        draws cost ``k × (ε, δ)`` by basic composition (recorded in attrs and
        charged to the ledger). ``k > 1`` is for studying the mechanism.
    random_seed : int, sequence of int, numpy Generator or None
        None (the default): fresh OS entropy (128 bits), ``attrs["noise_seeded"] = 0``.
        A seed makes the noise reproducible by anyone who knows it: for studies
        and tests; the release records ``noise_seeded = 1`` and a
        :class:`~fdp_ppl.errors.SeededReleaseWarning` is emitted.
    ledger : PrivacyLedger or FileLedger, optional
        Charged ``draws × mechanism.budget`` before any draw (a failure later
        never refunds); the release is refused, with nothing drawn, if it does
        not fit. ``PrivacyLedger.open(path, total)`` gives a ledger shared by
        processes and runs.
    bound : {"tight", "paper", "closed-form"}
        Which sensitivity bound calibrates the noise
        (:meth:`~fdp_ppl.summaries.SummarySpec.sensitivity`).
    progressbar : bool
    label : str
        Ledger label.
    dataset : str
        Identity of the dataset, recorded in the ledger.
    allow_nonprivate : bool
        Release a summary whose public parameters were computed from the
        private data (τ from :func:`~fdp_ppl.summaries.data_tau`), for
        reproducing papers; the release records ``private = 0``. Every other
        release records ``private = 1``.
    generator : {None, "opendp", "pymc"}
        Release sampler (:func:`fdp_ppl.noise.sampling.generators`), recorded as
        ``attrs["noise_generator"]``. None (the default): ``"opendp"`` when
        ``random_seed`` is None and the law is floating-point safe (Laplace:
        ICLP, FRL, Bernstein; Normal: Gaussian mechanism), else ``"pymc"``.
        ``"opendp"``: exact discrete noise on a lattice (OpenDP), never seeded;
        the Gaussian σ is raised if OpenDP's privacy map needs it.
        ``"pymc"``: the compiled float64 sampler, seedable and fast, **not
        floating-point safe** (its noise reaches a centre-dependent set of
        floats, Mironov 2012). Elliptical releases are always ``"pymc"``:
        they are not floating-point safe.

    Returns
    -------
    xr.DataTree
        ``posterior``: ``coefficients`` (chain, draw, basis) and ``curve``
        (chain, draw, t) with one chain; ``constant_data``: the public basis,
        ``noise_scale`` (basis) and ``quadrature_weights`` (t). Root
        ``attrs`` (:class:`~fdp_ppl.releasing.schema.ReleaseMetadata`) record the
        mechanism, noise law, ε, δ, sensitivity, its norm and bound, the
        neighbouring relation, τ, n, kernel and its parameters, η, ψ, M,
        quadrature, package version and the budget spent; the generator:
        ``noise_generator``, ``fp_safe`` (1/0), ``epsilon_guaranteed`` and
        ``delta_guaranteed`` (per draw: OpenDP's privacy map on the
        ``"opendp"`` path, the nominal ε, δ otherwise), ``fp_safety`` and
        ``privacy_guarantee`` (sentences), ``noise_sigma_source``. The
        non-private summary is never included.

    Raises
    ------
    CompatibilityError
        Summary or mechanism of the wrong type; ``generator="opendp"`` for a
        law without a floating-point-safe sampler (elliptical laws).
    BudgetExceededError
        The ledger cannot pay for the release.
    InputError
        draws < 1; a data-derived τ without ``allow_nonprivate=True``; an
        unknown generator, or ``generator="opendp"`` with a seed.
    """
    if not isinstance(mechanism, Mechanism):
        raise CompatibilityError("mechanism must be an fdp_ppl Mechanism", "e.g. ICLP(epsilon=1)")
    if not isinstance(summary, LinearSummary):
        raise CompatibilityError("summary must be a fitted summary",
                                 "e.g. iclp_qr_mean(curves, basis, tau=1) or spec.fit(curves)")
    draws = int(draws)
    if draws < 1:
        raise InputError("draws must be >= 1")
    seeded = random_seed is not None
    if seeded:
        warnings.warn("the release noise is drawn from the given random_seed: anyone who learns the seed can "
                      "regenerate the noise and remove it, so the release is private only while the seed stays "
                      "secret; pass no seed for a real release (fresh OS entropy)", SeededReleaseWarning, stacklevel=3)
    spec = summary.spec
    private = not spec.data_dependent  # τ from the data: no formal guarantee
    if not private and not allow_nonprivate:
        raise InputError("tau was computed from the private data (data_tau): the release would carry no privacy "
                         "guarantee", "pass a public tau, or allow_nonprivate=True for a study (the release then "
                         "records private = 0)")
    generator = resolve_generator(mechanism.law, generator, random_seed)
    cal, sampler, head, tail = _public_parts(spec, mechanism, bound, generator)
    check_public_sizes(cal.scale, draws, spec.n_components + spec.grid.size)
    cost = mechanism.budget * draws
    if ledger is not None:  # charged before any draw: a failure after this point never refunds
        ledger.spend(cost, label or f"{mechanism.family} release of {spec.name}", dataset=dataset,
                     mechanism=mechanism.family, event=mechanism.privacy_event(cal, draws))
    coef = sampler.draw(summary.coefficients, cal.scale, draws, random_seed, progressbar=progressbar,
                        calibration=cal)
    with blas_threads():  # a small product: OpenBLAS's second thread only synchronises (10x slower under load)
        curves = coef @ spec.design.T

    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    extra = dict(head)
    extra.update({
        "noise_multiplier": cal.sigma,
        "noise_seeded": int(seeded),
        "private": int(private),
        "fdp_ppl_version": __version__,
        "created_at": now,
        "sampling": ("exact forward draws (OpenDP lattice sampler), not MCMC" if getattr(sampler, "fp_safe", False)
                     else "exact forward draws (compiled PyMC sampler), not MCMC"),
    })
    extra.update(tail)
    if ledger is not None:
        extra.update(ledger.attrs())
    meta = ReleaseMetadata(
        mechanism=mechanism.family, noise_law=mechanism.law.name, summary=spec.name, epsilon=mechanism.epsilon,
        delta=mechanism.delta, sensitivity=cal.sensitivity.value, sensitivity_norm=cal.sensitivity.norm, n=spec.n,
        tau=float(spec.tau), draws=draws, budget_spent_epsilon=cost.epsilon, budget_spent_delta=cost.delta,
        extra={k: v for k, v in extra.items() if k not in ReleaseMetadata._TYPES})
    template = _template(summary, np.asarray(cal.scale, dtype=float), mechanism.law.describe_scale())
    return release_tree(meta, coef, curves, None, None, None,
                        {"created_at": now, "creation_library": "fdp_ppl", "creation_library_version": __version__,
                         "sampling": "exact forward draws"}, template=template)


#: public calibration, sampler and attributes per public spec (weakly held) and per (mechanism class and
#: parameters, bound, generator); only mechanisms whose parameters are plain numbers and strings are cached
_PUBLIC: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_PLAIN_PARAMS = (int, float, str, bool, type(None))


def check_public_sizes(scale, draws: int, values_per_draw: int) -> None:
    """Public checks before any charge: the noise scales are finite and > 0 (a sampler cannot serve an infinite
    scale: e.g. τ = 1e308 overflows the sensitivity), and ``draws`` releases of ``values_per_draw`` float64
    values fit in memory (the draws, the curves and the tree's copy).

    Raises
    ------
    InputError
        Either check fails; nothing is charged or drawn.
    """
    from ..settings import check_memory

    scale = np.asarray(scale, dtype=float)
    if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise InputError("the noise scale is not a finite positive number (the sensitivity overflows: tau or the "
                         "kernel's constants are too large, or the eigenvalues too small)",
                         "pass a smaller public tau, in the data's units")
    check_memory(3.0 * 8.0 * float(draws) * float(values_per_draw), f"{draws} draws of {values_per_draw} values",
                 "release fewer draws at a time (--draws)")


def _public_parts(spec, mechanism: Mechanism, bound: str, generator: str):
    """``(calibration, sampler, head attrs, tail attrs)`` of releasing ``spec`` with ``mechanism``: all public,
    computed once per spec and mechanism parameters (the calibration's scales are made read-only)."""
    params = tuple(sorted(vars(mechanism).items()))
    key = ((type(mechanism), params, bound, generator) if all(isinstance(v, _PLAIN_PARAMS) for _, v in params)
           else None)
    if key is not None:
        parts = _cache_get(_PUBLIC, spec, key)
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
    parts = (cal, sampler, head, generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta))
    if key is not None:
        _cache_put(_PUBLIC, spec, key, parts)
    return parts


def _cache_get(store, spec, key):
    with _TEMPLATES_LOCK:
        per_spec = store.get(spec)
        return None if per_spec is None else per_spec.get(key)


def _cache_put(store, spec, key, value) -> None:
    """Keep ``value`` for ``(spec, key)``: at most ``_TEMPLATES_PER_SPEC`` per spec, the oldest dropped first."""
    with _TEMPLATES_LOCK:
        per_spec = store.setdefault(spec, {})
        if len(per_spec) >= _TEMPLATES_PER_SPEC:
            per_spec.pop(next(iter(per_spec)))
        per_spec[key] = value


#: public parts of release trees (:class:`~fdp_ppl.releasing.schema.ReleaseTemplate`), per public spec (weakly held) and
#: per (noise scales, their description, labels, public offset): nothing non-private is kept
_TEMPLATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_TEMPLATES_LOCK = threading.Lock()
_TEMPLATES_PER_SPEC = 8


def _template(summary: LinearSummary, scale: np.ndarray, scale_description: str) -> ReleaseTemplate:
    """The release template of a summary's public parts, built once per spec and noise scales."""
    spec = summary.spec
    offset = summary.offset
    key = (scale.tobytes(), scale_description, tuple(sorted(summary.labels.items())),
           None if offset is None else np.asarray(offset, dtype=float).tobytes(), summary.offset_source)
    template = _cache_get(_TEMPLATES, spec, key)
    if template is None:
        constant = spec.public_dataset().assign({NOISE_SCALE: (("basis",), scale.copy())})
        constant[NOISE_SCALE].attrs["description"] = scale_description
        grid = spec.grid
        template = ReleaseTemplate(constant, grid.t, grid.points, labels=summary.labels, offset=offset,
                                   offset_source=summary.offset_source)
        _cache_put(_TEMPLATES, spec, key, template)
    return template


__all__ = ["release"]
