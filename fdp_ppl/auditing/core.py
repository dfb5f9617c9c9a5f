"""The empirical privacy audit: :func:`audit` (see :mod:`fdp_ppl.auditing` and ``docs/audit.md``)."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np
import xarray as xr

from .._options import Default, given_options, option_values, refuse_options
from ..errors import InputError, check_epsilon
from ..releasing.draw import clear_public_cache
from .stats import Event, best_threshold, epsilon_lower_bound, fit_statistics
from .targets import AUDIT_FAMILIES, FAMILIES, FAMILY_ALIASES, Pair, Target, approximate, audit_hook, build_target, option_keys
from .whitebox import WHITEBOX_METHOD

VERDICT_OK = "consistent with the claim"
VERDICT_VIOLATION = "VIOLATION: effective epsilon > claimed"
#: event kinds the audit can use
EVENT_KINDS = ("statistic", "failure", "timing")
#: default number of releases per side for targets that draw many releases in one call / one call per release
DEFAULT_SAMPLES = {"batched": 20_000, "per-call": 1_000}
SOURCES = ("Bichsel et al. (2021), DP-Sniper, IEEE S&P; Clopper & Pearson (1934), Biometrika 26; Google "
           "DP-Auditorium (github.com/google/differential-privacy, python/dp_auditorium)")
METHOD = ("for each neighbouring pair (D, D'), N releases per side; events chosen on the first half (thresholds of "
          "a Fisher/LDA projection with a shrunk covariance, of a Laplace log-likelihood-ratio statistic and of "
          "the most shifted coordinate, upper/lower/both tails; the failure event; thresholds of one call's wall "
          "time), counted on the held-out second half; eps_lb = log((p_lo(D) - delta) / p_hi(D')) with one-sided "
          "Clopper-Pearson bounds, both directions, Bonferroni over the tested events and both bounds")


def _as_pairs(pairs) -> list[Pair]:
    out = []
    for i, p in enumerate(pairs):
        if isinstance(p, Pair):
            out.append(p)
        elif isinstance(p, (tuple, list)) and len(p) in (2, 3):
            out.append(Pair(p[0], p[1], str(p[2]) if len(p) == 3 else f"pair {i + 1}"))
        else:
            raise InputError(f"pair {i + 1} is not (D, D') or (D, D', description)",
                             "pass pairs=[(D, D_prime, 'what differs'), ...]")
    if not out:
        raise InputError("no neighbouring pairs to audit", "pass pairs=[(D, D_prime, 'what differs'), ...]")
    return out


def _flat(x) -> np.ndarray:
    return np.asarray(x, dtype=float).reshape(-1)


def _per_call(target: Target, pair: Pair, calls: int, rng, warmup: int = 2, keep_values: bool = True):
    """``calls`` single release calls per side, interleaved D, D′ (so a change of machine load hits both sides
    alike); returns per side (values (calls, d) with NaN rows for failures, failed (calls,), times (calls,))."""
    sides = (pair.first, pair.second)
    for _ in range(warmup):  # compilation and caches: not timed
        for d in sides:
            try:
                target.release_one(d, rng)
            except Exception:  # noqa: BLE001  (a failure is an outcome; counted below)
                pass
    values = [[], []]
    failed = np.zeros((2, calls), bool)
    times = np.zeros((2, calls))
    errors = []
    for i in range(calls):
        for s, d in enumerate(sides):
            t0 = time.perf_counter()
            try:
                out = target.release_one(d, rng)
                ok = True
            except Exception as err:  # noqa: BLE001  (any exception is the outcome "failed")
                ok = False
                if len(errors) < 1:
                    errors.append(err)
            times[s, i] = time.perf_counter() - t0
            failed[s, i] = not ok
            if keep_values:
                values[s].append(_flat(out) if ok else None)
    note = ""
    if failed.all():
        err = errors[0]
        note = f"every release call failed on both sides ({type(err).__name__}: {' '.join(str(err).split())})"
    arrays = []
    for s in range(2):
        if not keep_values or failed.all():
            arrays.append(None)
            continue
        dim = next(v.size for vs in values for v in vs if v is not None)
        X = np.full((calls, dim), np.nan)
        for i, v in enumerate(values[s]):
            if v is not None:
                if v.size != dim:
                    raise InputError("the release function returned arrays of different sizes",
                                     "return one flat vector of fixed length per release")
                X[i] = v
        arrays.append(X)
    return arrays, failed, times, note


#: seconds of single timed release calls per pair and side at most, when the release path also draws in bulk
TIMING_BUDGET_S = 10.0


def _timing_calls(target: Target, pair: Pair, requested: int, rng) -> int:
    """Number of single timed calls per side: ``requested``, fewer (at least 30) when one call is slow (a
    mechanism whose release recomputes an expensive public calibration on every call)."""
    t0 = time.perf_counter()
    try:
        target.release_one(pair.first, rng)
    except Exception:  # noqa: BLE001
        pass
    one = time.perf_counter() - t0
    return int(min(requested, max(30, TIMING_BUDGET_S / max(one, 1e-9))))


def _halves(n: int, frac: float):
    h = min(max(int(round(n * frac)), 1), n - 1)
    return slice(0, h), slice(h, n)


def _candidates(pair_index, values, failed, times, kinds, delta, alpha, frac):
    """Training-half candidates of one pair: the best event per kind and direction, with its training score."""
    out = []
    (Va, Vb), (fa, fb), (ta, tb) = values, failed, times
    directions = {"A>B": "P(E | D) vs P(E | D')", "B>A": "P(E | D') vs P(E | D)"}
    if "statistic" in kinds and Va is not None and Vb is not None:
        tr_a, tr_b = _halves(len(Va), frac)[0], _halves(len(Vb), frac)[0]
        A, B = Va[tr_a], Vb[tr_b]
        okA, okB = A[~np.isnan(A).any(1)], B[~np.isnan(B).any(1)]
        best = {"A>B": (-np.inf, None), "B>A": (-np.inf, None)}
        for stat in fit_statistics(okA, okB):
            res = best_threshold(stat(okA), stat(okB), len(A), len(B), delta, alpha, "statistic", stat)
            for key in best:
                if res[key][1] is not None and (best[key][1] is None or res[key][0] > best[key][0]):
                    best[key] = res[key]
        for key, (score, ev) in best.items():
            if ev is not None:
                out.append(dict(pair_index=pair_index, key=key, direction=directions[key], kind="statistic",
                                score=score, event=ev))
    if fa is not None:
        tr_a, tr_b = _halves(len(fa), frac)[0], _halves(len(fb), frac)[0]
        if "failure" in kinds:
            ka, kb = int(fa[tr_a].sum()), int(fb[tr_b].sum())
            na, nb = len(fa[tr_a]), len(fb[tr_b])
            for key, (kn, nn, kd, nd) in (("A>B", (ka, na, kb, nb)), ("B>A", (kb, nb, ka, na))):
                score = float(epsilon_lower_bound(kn, nn, kd, nd, delta, alpha)[0])
                out.append(dict(pair_index=pair_index, key=key, direction=directions[key], kind="failure",
                                score=score, event=Event("failure")))
        if "timing" in kinds:
            res = best_threshold(ta[tr_a], tb[tr_b], len(ta[tr_a]), len(tb[tr_b]), delta, alpha, "timing",
                                 tails=(">", "<"))
            for key, (score, ev) in res.items():
                if ev is not None:
                    out.append(dict(pair_index=pair_index, key=key, direction=directions[key], kind="timing",
                                    score=score, event=ev))
    return out


def _held_out_counts(cand, values, failed, times, frac):
    """(count, n) on the held-out half for side A and side B."""
    ev = cand["event"]
    res = []
    for s in range(2):
        if ev.kind == "statistic":
            X = values[s]
            ho = _halves(len(X), frac)[1]
            hit = ev.indicator(values=X[ho])
        else:
            f, t = failed[s], times[s]
            ho = _halves(len(f), frac)[1]
            hit = ev.indicator(failed=f[ho], times=t[ho])
        res.append((int(hit.sum()), int(hit.size)))
    return res


def _refuse_options(mechanism, given: list[str], family, options, spec) -> None:
    """Refuse, before any work, the options the audited family or mechanism does not use, naming those it takes
    (:data:`~fdp_ppl.auditing.targets.AUDIT_FAMILIES`; the keys of ``options``:
    :func:`~fdp_ppl.auditing.targets.option_keys`)."""
    if callable(mechanism) and not isinstance(mechanism, str):
        refuse_options(AUDIT_FAMILIES["callable"].label, given, AUDIT_FAMILIES["callable"].takes())
        return
    if family not in FAMILIES:
        raise InputError(f"unknown family {family!r}", f"choose one of {', '.join(FAMILIES)}")
    entry, name = AUDIT_FAMILIES[family], str(mechanism)
    name = audit_hook(family).canonical(name)
    what = entry.label if name not in entry.per_call else f"{entry.label} released one frame per call ({name!r})"
    refuse_options(what, given, entry.takes(name))
    keys = option_keys(name, family, spec_given=spec is not None)
    if options is None or keys is None:  # an unknown name is refused by build_target
        return
    if not isinstance(options, Mapping):
        raise InputError(f"options must be a dict, got {type(options).__name__}", "pass e.g. options={'eta': 2.0}")
    refused = [str(k) for k in options if k not in keys]
    if refused:
        where = f"the {family} mechanism {name!r}" + (" with a spec" if spec is not None
                                                       and audit_hook(family).takes_spec else "")
        raise InputError(f"{where} takes no option {', '.join(refused)}",
                         f"drop {', '.join(refused)} from options (its options: {', '.join(keys) or 'none'})")


def audit(mechanism: str | Callable[[Any, np.random.Generator], Any], *, family: str = Default("mean"),
          epsilon: float | None = Default(None), delta: float | None = Default(None), pairs=Default(None),
          samples: int | None = Default(None), confidence: float = Default(0.95), random_seed=Default(0),
          tests: int = Default(4), events=Default(EVENT_KINDS), timing_calls: int = Default(300),
          options: dict | None = Default(None), spec=Default(None), name: str | None = Default(None),
          train_fraction: float = Default(0.5), progressbar: bool = Default(False)) -> xr.Dataset:
    """Empirical privacy audit: a statistical LOWER bound on the effective ε of a mechanism.

    Searches replace-one neighbouring datasets (D, D′) built from public structure, draws ``samples``
    releases from each side, chooses events on a first half (DP-Sniper style: thresholds of a scalar
    statistic of the released vector, the failure event "the release call raised", thresholds of one
    call's wall time) and counts them on the held-out second half. For an event E,
    ``ε_lb = log((p̂_lo(E | D) − δ) / p̂_hi(E | D′))`` with one-sided Clopper–Pearson bounds, in both
    directions; the overall bound is the maximum over the ``tests`` events with the best training
    scores, Bonferroni-corrected over those events and the two bounds of each, so that with
    probability at least ``confidence`` every reported bound holds simultaneously.

    A lower bound can only refute a claim: ``ε_lb > ε`` (verdict ``"VIOLATION: effective epsilon >
    claimed"``) means the mechanism is not (ε, δ)-DP (up to the stated error probability); ``ε_lb ≤ ε``
    (``"consistent with the claim"``) proves nothing — other pairs or events may do better.

    White-box test (by default, for mechanisms that add noise to a summary: the ``"mean"``, ``"kde"`` and
    ``"machine"`` families, when statistic events are drawn): the noise law is fitted from the same releases
    minus the non-private summaries of the synthetic datasets, and the ε it implies for the claimed sensitivity
    (or the largest pair difference, if larger) is estimated with a standard error; it flags when ``estimate −
    z·se > ε (1 + 0.01)`` (Bonferroni z at ``α = 1 − confidence``; :mod:`fdp_ppl.auditing.whitebox`). The
    verdict is a violation when either test finds one.

    The audit builds synthetic neighbouring datasets and never touches real data or a ledger: it costs
    no privacy budget. Its releases are seeded (an audit is a study); the seed is recorded.

    Each family uses some of the options below (:data:`~fdp_ppl.auditing.targets.AUDIT_FAMILIES`); any other
    given, its default value included, is refused before any work, naming the options the family takes:

    ==============================  ======================================================================
    audited                         options it takes besides ``epsilon``, ``delta``, ``pairs``, ``samples``,
                                    ``confidence``, ``random_seed``, ``tests``, ``events``
    ==============================  ======================================================================
    a release function              ``name``, ``train_fraction``, ``progressbar`` (no ``family``, ``options``,
                                    ``spec``; no ``timing_calls``: every call is timed)
    ``"mean"`` family               ``family``, ``timing_calls``, ``options``, ``spec``, ``train_fraction``,
                                    ``progressbar``
    ``"kde"``/``"machine"`` family  ``family``, ``timing_calls``, ``options``, ``train_fraction``,
                                    ``progressbar`` (no ``spec``: their default spec only)
    ``"fpca"`` family               ``family``, ``timing_calls`` (not the NUTS samplers: one frame per call,
                                    each timed), ``options``, ``spec``, ``train_fraction``, ``progressbar``
    ==============================  ======================================================================

    Parameters
    ----------
    mechanism : str or callable
        A mechanism name of ``family`` (``"mean"``: the names of :data:`fdp_ppl.releasing.registry.MECHANISMS`;
        ``"kde"``: gp, sobolev, iclp, frl, bernstein; ``"machine"``: gp, iclp; ``"fpca"``: ``FORM/SAMPLER``,
        e.g. ``"gp-base/exact"``, ``"bingham/exact"``), audited on the family's default small public
        spec (stated in ``attrs["spec"]``) and its candidate pairs; or your own release function
        ``release_fn(dataset, rng) -> array`` (one release per call; any exception is the outcome
        "failed"), audited on ``pairs``.
    family : {"mean", "kde", "machine", "fpca"}
        (``"release"`` and ``"svm"``, the former names of ``"mean"`` and ``"machine"``, are read as them.)
        The family of a named mechanism (default ``"mean"``); a release function has none.
    epsilon : float, optional
        The claimed ε (default 1 for a named mechanism; required for a callable).
    delta : float, optional
        The claimed δ: required range [0, 1). Default: 1e-5 for a named (ε, δ) mechanism, 0 otherwise;
        refused for a named pure ε-DP mechanism.
    pairs : sequence of (D, D′) or (D, D′, description), optional
        Neighbouring pairs (required for a callable; replaces the family's candidates for a name).
    samples : int, optional
        N, releases per side of each pair (half for choosing events, half held out). Default 20 000 when
        the release path draws many releases in one call, 1 000 when it needs one call per release
        (callables, NUTS) and for the FPCA family (fixed proposal budgets per frame).
    confidence : float
        Simultaneous confidence of the reported bounds, in (0, 1).
    random_seed : int, sequence, Generator or None
        Seed of the audit (pairs are fixed; releases are drawn from it). None: fresh entropy, recorded.
    tests : int
        Number of events (best training scores over all pairs, kinds and directions) counted on the
        held-out half; the Bonferroni factor.
    events : sequence of {"statistic", "failure", "timing"}
        Event kinds to search.
    timing_calls : int
        Single release calls per side (interleaved D, D′) whose wall time and failures are recorded
        when the release path draws N releases in one call (default 300; fewer, at least 30, when one call
        takes long: about ``TIMING_BUDGET_S`` seconds per side and pair; ``attrs["timing_calls"]`` is the
        number used). Named mechanisms that draw in bulk only: callables and per-call paths (the FPCA NUTS
        samplers) time every one of their N calls and refuse it.
    options : dict, optional
        Mechanism and spec options of a named mechanism; a key the mechanism does not read is refused
        (:func:`~fdp_ppl.auditing.targets.option_keys`): ``"mean"``: the registry's mechanism options
        (``calibration``; ``nu`` of the t laws) and, without ``spec``, its summary options (``eta``, ``psi``,
        ``M``, ``k``); ``"kde"``: ``eta`` (iclp), ``M`` (frl), ``k`` (bernstein); ``"machine"``: ``eta`` (iclp);
        ``"fpca"``: ``n`` and, for the Gibbs and NUTS samplers, ``iterations``.
    spec : object, optional
        A public spec replacing the family's default (``"mean"`` and ``"fpca"`` only): a summary spec of the
        mechanism's class (``"mean"``) or an :class:`~fdp_ppl.fpca.FPCASpec` of the mechanism's form
        (``"fpca"``; its ε is the claim; pairs: ``options["n"]`` curves (default 28) along the last basis
        function vs one replaced by the first, and the like).
    train_fraction : float
        Share of each side's releases used to choose the events (the rest is held out), in (0, 1).
    name : str, optional
        Display name of a callable (default its ``__name__``); callables only.
    progressbar : bool
        Show one progress line per pair (:func:`fdp_ppl._progress.stage`: on a terminal, or with
        ``FDP_PPL_PROGRESS=1``).

    Returns
    -------
    xarray.Dataset
        Dimension ``event`` (one row per candidate event: per pair, kind and direction). Variables:
        ``pair`` and ``pair_index``, ``direction`` (which side is the numerator), ``kind``,
        ``event_description`` (the event with its threshold), ``tested`` (1 if counted on the held-out half),
        ``train_epsilon`` (the selection score on the first half), ``count_numerator``,
        ``count_denominator``, ``n_numerator``, ``n_denominator`` (held-out counts; −1 if not tested),
        ``p_lower`` (Clopper–Pearson lower bound, numerator side), ``p_upper`` (upper bound,
        denominator side), ``epsilon_lower_bound`` (NaN if not tested, −inf if ``p_lower ≤ δ``),
        ``epsilon_claimed``, ``delta``, ``confidence``, ``samples``. Attrs: ``epsilon_lower_bound``
        (max over tested events, at least 0), ``epsilon_claimed``, ``delta``, ``confidence``,
        ``verdict``, ``best_event``, ``best_pair``, ``n_tests``, ``alpha_per_bound``, ``samples``,
        ``timing_calls``, ``spec``, ``features``, ``pairs`` (descriptions), ``mechanism``, ``family``,
        ``random_seed`` and ``random_seed_use``, ``privacy_cost``, ``run_time_s``, ``method``,
        ``sources``; the white-box test: ``epsilon_whitebox`` (the effective ε of the fitted law, at the claimed
        δ), ``epsilon_whitebox_se``, ``epsilon_whitebox_lower`` (the bound the decision uses),
        ``whitebox_flagged`` (0/1), ``whitebox`` (one line), ``whitebox_fit`` (the fitted law),
        ``whitebox_releases``, ``whitebox_z``, ``whitebox_tolerance``, ``whitebox_estimates``,
        ``sensitivity_claimed``, ``sensitivity_reached`` (largest pair difference / claimed Δ),
        ``whitebox_method``, ``verdict_blackbox``, ``verdict_whitebox``, ``run_time_whitebox_s`` (NaN and "not
        run" without a white-box test: callables, FPCA).

    Raises
    ------
    InputError
        An option the audited family or mechanism does not take (table above), or a key of ``options`` it
        does not read, before any work; unknown family or mechanism; ε ≤ 0; δ outside [0, 1) or given to a
        pure ε-DP mechanism; confidence outside (0, 1); samples < 20; tests < 1; an unknown event kind; a
        callable without pairs or ε; every release call failing on both sides.

    References
    ----------
    Bichsel, Steffen, Bogunovic & Vechev (2021), DP-Sniper, IEEE S&P. Clopper & Pearson (1934),
    Biometrika 26, 404–413. Google DP-Auditorium (github.com/google/differential-privacy).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> result = fp.audit("frl", epsilon=1.0, samples=2000, random_seed=0)  # doctest: +SKIP
    >>> result.attrs["epsilon_lower_bound"] <= result.attrs["epsilon_claimed"]  # doctest: +SKIP
    True

    (Skipped in the doctests: 2000 releases per side of 6 neighbouring pairs take about 10 s.)
    """
    given = {"family": family, "epsilon": epsilon, "delta": delta, "pairs": pairs, "samples": samples,
             "confidence": confidence, "random_seed": random_seed, "tests": tests, "events": events,
             "timing_calls": timing_calls, "options": options, "spec": spec, "name": name,
             "train_fraction": train_fraction, "progressbar": progressbar}
    o = option_values(given)
    o["family"] = FAMILY_ALIASES.get(o["family"], o["family"]) if isinstance(o["family"], str) else o["family"]
    _refuse_options(mechanism, given_options(given), o["family"], o["options"], o["spec"])
    (family, epsilon, delta, pairs, samples, confidence, random_seed, tests, events, timing_calls, options, spec, name,
     train_fraction, progressbar) = o.values()
    clear_public_cache()  # the code as it runs now: no calibration or sampler kept from an earlier release
    t_start = time.perf_counter()
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise InputError(f"confidence must lie in (0, 1), got {confidence!r}", "pass e.g. confidence=0.95")
    if not (isinstance(train_fraction, (int, float)) and 0 < train_fraction < 1):
        raise InputError(f"train_fraction must lie in (0, 1), got {train_fraction!r}", "pass e.g. 0.5")
    tests = int(tests)
    if tests < 1:
        raise InputError(f"tests must be >= 1, got {tests}", "pass e.g. tests=4")
    if isinstance(timing_calls, bool) or not isinstance(timing_calls, numbers.Integral) or timing_calls < 0:
        raise InputError(f"timing_calls must be a whole number >= 0, got {timing_calls!r}", "pass e.g. timing_calls=300")
    kinds = tuple(events)
    if not kinds or any(k not in EVENT_KINDS for k in kinds):
        raise InputError(f"unknown event kinds {kinds!r}", f"choose from {EVENT_KINDS}")
    if samples is not None and int(samples) < 20:
        raise InputError(f"samples must be >= 20 per side, got {samples}", "pass e.g. samples=20000")
    if delta is not None and not (isinstance(delta, (int, float)) and math.isfinite(delta) and 0 <= delta < 1):
        raise InputError(f"delta must lie in [0, 1), got {delta!r}", "pass e.g. delta=1e-5")
    if callable(mechanism) and not isinstance(mechanism, str):
        if epsilon is None:
            raise InputError("auditing a release function needs the claimed epsilon", "pass epsilon=...")
        if pairs is None:
            raise InputError("auditing a release function needs neighbouring pairs",
                             "pass pairs=[(D, D_prime, 'what differs'), ...]")
        eps = check_epsilon(epsilon)
        label = name or getattr(mechanism, "__name__", "release function")
        target = Target(label, "callable", eps, float(delta or 0.0), _as_pairs(pairs), mechanism, None,
                        "user-supplied release function and pairs", "the returned vector")
    else:
        if family not in FAMILIES:
            raise InputError(f"unknown family {family!r}", f"choose one of {', '.join(FAMILIES)}")
        eps = check_epsilon(1.0 if epsilon is None else epsilon)
        approx = approximate(str(mechanism), family)
        if delta is not None and delta > 0 and not approx:
            raise InputError(f"mechanism {mechanism!r} ({family}) is pure epsilon-DP and takes no delta",
                             f"drop delta={delta:g}")
        if approx and delta is not None and delta <= 0:
            raise InputError(f"mechanism {mechanism!r} ({family}) is (epsilon, delta)-DP: delta must be > 0",
                             "pass e.g. delta=1e-5")
        target = build_target(str(mechanism), family, eps, (1e-5 if delta is None else delta) if approx else None,
                              options, spec)
        if epsilon is not None and spec is not None and hasattr(spec, "epsilon") \
                and not math.isclose(float(spec.epsilon), eps):
            raise InputError(f"epsilon = {eps:g} differs from the spec's epsilon {float(spec.epsilon):g}",
                             "omit epsilon (the spec's is audited) or build the spec with it")
        if pairs is not None:
            target.pairs = _as_pairs(pairs)
    per_call = target.draw is None
    N = int(samples) if samples is not None else (
        target.default_samples or DEFAULT_SAMPLES["per-call" if per_call else "batched"])
    alpha = (1.0 - float(confidence)) / (2.0 * tests)
    ss = np.random.SeedSequence(random_seed) if not isinstance(random_seed, np.random.Generator) else None
    if ss is not None:
        rng = np.random.default_rng(ss)
        seed_record = str(ss.entropy)
    else:
        rng = random_seed
        seed_record = "a numpy Generator passed by the caller"
    from .._progress import stage

    samples_data, cands, skipped, calls_used = [], [], [], []
    for i, pair in enumerate(target.pairs):
        msg = f"audit {target.mechanism}: pair {i + 1}/{len(target.pairs)} ({N} releases per side)"
        with (stage(msg) if progressbar else _null()):
            if per_call:
                values, failed, times, note = _per_call(target, pair, N, rng, keep_values="statistic" in kinds)
            else:
                try:
                    values = [target.draw(pair.first, N, rng), target.draw(pair.second, N, rng)]
                except Exception as err:  # noqa: BLE001  (e.g. a sampler's cap over N draws: per-call events only)
                    values = [None, None]
                    skipped.append(f"pair {i + 1}: statistic events skipped, drawing {N} releases in one call "
                                   f"raised {type(err).__name__}")
                if any(k in kinds for k in ("failure", "timing")) and timing_calls > 0:
                    calls = _timing_calls(target, pair, int(timing_calls), rng)
                    calls_used.append(calls)
                    _, failed, times, note = _per_call(target, pair, calls, rng, keep_values=False)
                else:
                    failed = times = (None, None)
                    note = ""
            if note:
                skipped.append(f"pair {i + 1}: {note}")
            failed = tuple(failed) if failed is not None else (None, None)
            times = tuple(times) if times is not None else (None, None)
        samples_data.append((values, failed, times))
        cands += _candidates(i, values, failed, times, kinds, target.delta, alpha, float(train_fraction))
    whitebox, whitebox_note = None, target.noise_note
    t_whitebox = time.perf_counter()
    if target.noise is not None and "statistic" in kinds:
        from .whitebox import whitebox_test

        drawn = [(pair, v) for pair, (v, _, _) in zip(target.pairs, samples_data) if v is not None and v[0] is not None]
        if drawn:
            whitebox = whitebox_test(target.noise, [(d, X) for pair, v in drawn for d, X in zip((pair.first,
                                                                                                pair.second), v)],
                                     pairs=[(pair.first, pair.second) for pair, _ in drawn],
                                     confidence=float(confidence), random_seed=rng)
        else:
            whitebox_note = "not available: no releases were drawn in bulk"
    elif target.noise is not None:
        whitebox_note = "not run: it reads the released values (event kind 'statistic')"
    t_whitebox_end = time.perf_counter()
    order = sorted(range(len(cands)), key=lambda j: -cands[j]["score"] if np.isfinite(cands[j]["score"]) else np.inf)
    chosen = set(order[:tests])
    rows = []
    for j, c in enumerate(cands):
        row = dict(pair_index=c["pair_index"], pair=target.pairs[c["pair_index"]].description,
                   direction=c["direction"], kind=c["kind"], event_description=c["event"].describe(), tested=int(j in chosen),
                   train_epsilon=c["score"], count_numerator=-1, count_denominator=-1, n_numerator=-1,
                   n_denominator=-1, p_lower=np.nan, p_upper=np.nan, epsilon_lower_bound=np.nan)
        if j in chosen:
            values, failed, times = samples_data[c["pair_index"]]
            (ka, na), (kb, nb) = _held_out_counts(c, values, failed, times, float(train_fraction))
            kn, nn, kd, nd = (ka, na, kb, nb) if c["key"] == "A>B" else (kb, nb, ka, na)
            e, lo, hi = epsilon_lower_bound(kn, nn, kd, nd, target.delta, alpha)
            row.update(count_numerator=kn, count_denominator=kd, n_numerator=nn, n_denominator=nd,
                       p_lower=float(lo), p_upper=float(hi), epsilon_lower_bound=float(e))
        rows.append(row)
    ds = _dataset(rows, target, N, confidence, tests, alpha,
                  (min(calls_used) if calls_used else 0) if not per_call else N, seed_record,
                  time.perf_counter() - t_start, kinds)
    ds.attrs["skipped"] = "; ".join(skipped) or "none"
    _whitebox_attrs(ds, whitebox, whitebox_note)
    ds.attrs["run_time_whitebox_s"] = float(t_whitebox_end - t_whitebox)
    return ds


def _whitebox_attrs(ds, wb, note) -> None:
    """The white-box test's named fields in ``ds.attrs`` and the verdict from both tests."""
    at = ds.attrs
    at["verdict_blackbox"] = at["verdict"]
    nan = float("nan")
    if wb is None:
        at.update(epsilon_whitebox=nan, epsilon_whitebox_se=nan, epsilon_whitebox_lower=nan, whitebox_flagged=0,
                  whitebox=note, whitebox_fit="none", whitebox_releases=0, whitebox_z=nan, whitebox_tolerance=nan,
                  whitebox_estimates=0, sensitivity_claimed=nan, sensitivity_reached=nan,
                  whitebox_method=WHITEBOX_METHOD, verdict_whitebox="not run")
        return

    at.update(epsilon_whitebox=wb.epsilon, epsilon_whitebox_se=wb.standard_error, epsilon_whitebox_lower=wb.lower,
              whitebox_flagged=int(wb.flagged), whitebox=wb.describe(), whitebox_fit=wb.fit,
              whitebox_releases=wb.releases, whitebox_z=wb.z, whitebox_tolerance=wb.tolerance,
              whitebox_estimates=wb.estimates, sensitivity_claimed=wb.sensitivity_claimed,
              sensitivity_reached=wb.sensitivity_reached, whitebox_method=WHITEBOX_METHOD,
              verdict_whitebox=VERDICT_VIOLATION if wb.flagged else VERDICT_OK)
    if wb.flagged:
        at["verdict"] = VERDICT_VIOLATION


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _dataset(rows, target: Target, N, confidence, tests, alpha, timing_calls, seed_record, run_time, kinds):
    n = len(rows)
    cols = {k: [r[k] for r in rows] for k in (rows[0] if rows else ())}
    str_vars = ("pair", "direction", "kind", "event_description")
    int_vars = ("pair_index", "tested", "count_numerator", "count_denominator", "n_numerator", "n_denominator")
    data = {}
    for k, v in cols.items():
        if k in str_vars:
            data[k] = ("event", np.asarray(v, dtype=str))
        elif k in int_vars:
            data[k] = ("event", np.asarray(v, dtype=np.int64))
        else:
            data[k] = ("event", np.asarray(v, dtype=float))
    data["epsilon_claimed"] = ("event", np.full(n, target.epsilon))
    data["delta"] = ("event", np.full(n, target.delta))
    data["confidence"] = ("event", np.full(n, float(confidence)))
    data["samples"] = ("event", np.full(n, int(N), dtype=np.int64))
    ds = xr.Dataset(data, coords={"event_index": ("event", np.arange(n))})
    tested = [r for r in rows if r["tested"] and np.isfinite(r["epsilon_lower_bound"])]
    best = max(tested, key=lambda r: r["epsilon_lower_bound"], default=None)
    eps_lb = max(0.0, best["epsilon_lower_bound"]) if best is not None else 0.0
    violation = eps_lb > target.epsilon
    ds.attrs = {
        "kind": "privacy-audit",
        "mechanism": target.mechanism,
        "family": target.family,
        "epsilon_lower_bound": float(eps_lb),
        "epsilon_claimed": float(target.epsilon),
        "delta": float(target.delta),
        "confidence": float(confidence),
        "verdict": VERDICT_VIOLATION if violation else VERDICT_OK,
        "best_event": (f"{best['event_description']} [{best['direction']}; {best['kind']}]" if best is not None
                       and best["epsilon_lower_bound"] > 0 else "none (no tested event gives a positive bound)"),
        "best_pair": best["pair"] if best is not None and best["epsilon_lower_bound"] > 0 else "none",
        "samples": int(N),
        "timing_calls": int(timing_calls),
        "n_tests": int(tests),
        "alpha_per_bound": float(alpha),
        "bonferroni": (f"{tests} tested events (chosen on the training half among {n} candidates) x 2 one-sided "
                       f"bounds each: alpha = (1 - {confidence:g}) / {2 * tests} per bound"),
        "event_kinds": ",".join(kinds),
        "spec": target.spec,
        "features": target.features,
        "pairs": " | ".join(p.description for p in target.pairs),
        "n_pairs": len(target.pairs),
        "random_seed": seed_record,
        "random_seed_use": ("seeds the audit's synthetic releases (an audit is a study of the mechanism, not a "
                            "release: no real data is involved); rerunning with it reproduces the audit"),
        "privacy_cost": ("none: the audit builds synthetic neighbouring datasets, never touches real data and never "
                         "charges a ledger"),
        "interpretation": ("a lower bound can only refute a claim: eps_lb > epsilon_claimed shows the claim is false "
                           "(at the stated confidence); eps_lb <= epsilon_claimed proves nothing"),
        "run_time_s": float(run_time),
        "method": METHOD,
        "sources": SOURCES,
    }
    return ds


__all__ = ["audit", "VERDICT_OK", "VERDICT_VIOLATION", "EVENT_KINDS", "DEFAULT_SAMPLES"]
