"""What a privacy loss means for one person: privacy profiles, trade-off curves and an attacker's power.

An (ε, δ) pair is one point of a curve. The whole guarantee of a release, or of everything a ledger has
charged, is its **privacy profile** δ(ε) — the smallest δ for which the releases are (ε, δ)-DP, for every
ε ≥ 0 — or equivalently its **trade-off function** f(α): the smallest type II error β of any test of
"dataset D" against "the neighbouring dataset D′" (one person's record changed) whose type I error is α
(Dong, Roth & Su 2022, Definition 2.1). An attacker who decides which of the two datasets it faces, and
who accepts a 1 % false-positive rate (α = 0.01), has power at most ``1 − f(0.01)``: that figure is the one
:func:`privacy_in_words` prints. Under the package's replace-one relation (n public) the two datasets differ
in one person's record (or all records of one person, for a person-level privacy unit); presence in the data
is not what is protected.

Both come from the privacy-loss distributions the ledger already composes (:func:`fdp_ppl.accounting.events.
composed_pld`, computed by dp-accounting; pessimistic, so every figure here is a bound an attacker cannot
beat):

* the profile is ``PrivacyLossDistribution.get_delta_for_epsilon`` on a grid of ε;
* the trade-off function is its convex conjugate (Dong, Roth & Su 2022, Proposition 2.12, for the symmetric
  trade-off functions of neighbouring pairs under replace-one):
  ``f(α) = sup_{ε ≥ 0} max(0, 1 − δ(ε) − e^ε α, e^{−ε} (1 − δ(ε) − α))``, the supremum taken over the grid
  (every grid point is a valid (ε, δ(ε)) guarantee, so the curve is a valid lower bound of the exact one;
  a finer grid only tightens it);
* when every event is Gaussian the composition is exactly μ-GDP with ``μ² = Σ count/σ²`` (Dong, Roth & Su
  2022, Corollary 3.3) and the curve is the closed form ``G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)``, with profile
  ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`` (their Corollary 2.13).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import xarray as xr

from ..errors import InputError
from .events import PrivacyEvent, composed_pld

#: type I errors of a default trade-off curve (denser near 0, where attackers operate)
DEFAULT_ALPHAS = np.unique(np.concatenate([np.geomspace(1e-6, 0.05, 120), np.linspace(0.0, 1.0, 201)]))
#: points of the ε grid the conjugate is taken over (the curve is within 1e-6 of the exact one for a Laplace event)
EPSILON_POINTS = 2001
#: the PLDs' loss discretisation here: 10x coarser than the ledger's (still pessimistic, so still a valid bound;
#: δ(ε) moves by about 1e-8 for the ledgers tested) — composing them is 20x faster
VALUE_DISCRETIZATION = 1e-3
#: the profile is followed until δ(ε) falls below this (beyond, its lines add nothing visible)
DELTA_FLOOR = 1e-12


def _events(source) -> list[PrivacyEvent]:
    """The certified privacy events of ``source`` (:func:`_all_events`): an uncertified release (MCMC whose output
    law is not the mechanism's) has no proved privacy loss, so no curve states one for it; the ledger shows such
    releases apart.

    Raises
    ------
    InputError
        Events only of uncertified releases.
    """
    events = _all_events(source)
    certified = [e for e in events if e.certified]
    if events and not certified:
        raise InputError("only uncertified releases (MCMC whose output law is not the mechanism's): no privacy "
                         "curve is proved for them", "use an exact (certified) sampler to state a privacy curve")
    return certified


def _all_events(source) -> list[PrivacyEvent]:
    """The privacy events of ``source``: an event, an iterable of events, a ledger (``.events``), a release plan
    (``.event``, or its cost as a generic (ε, δ) event when it has none) or a release file's tree (its attrs)."""
    if isinstance(source, PrivacyEvent):
        return [source]
    if isinstance(source, xr.DataTree):
        return [_release_event(source.attrs)]
    if hasattr(source, "noise_law") and hasattr(source, "cost") and hasattr(source, "event"):  # a ReleasePlan
        if source.parts:  # a composed plan: every part's events
            return [e for part in source.parts for e in _all_events(part)]
        if source.event is not None:
            return [source.event]
        return [PrivacyEvent("approx", source.epsilon, source.delta, None, source.draws)]
    if hasattr(source, "events"):  # PrivacyLedger, FileLedger
        return [e for e in source.events if e is not None]
    try:
        events = list(source)
    except TypeError:
        raise InputError(f"cannot read privacy events from a {type(source).__name__}",
                         "pass a PrivacyEvent, a list of them, a ledger, a ReleasePlan or a release tree") from None
    if not all(isinstance(e, PrivacyEvent) for e in events):
        raise InputError("a list of privacy events holds something else", "pass PrivacyEvent objects only")
    return events


def _release_event(attrs) -> PrivacyEvent:
    """The event a release file records in its public attributes (law, scale, sensitivity, draws)."""
    try:
        eps, delta = float(attrs["epsilon"]), float(attrs["delta"])
        draws = int(attrs.get("draws", 1)) * int(attrs.get("chains", 1))
    except (KeyError, TypeError, ValueError):
        raise InputError("the tree is not a release file (no epsilon/delta attributes)",
                         "pass a release written by fp.release or an fdp-ppl release command") from None
    law, sigma, sens = attrs.get("noise_law"), attrs.get("noise_multiplier"), attrs.get("sensitivity")
    if law in ("laplace", "normal") and sigma is not None and sens is not None and int(attrs.get("part1_draws", 0)) == 0:
        return PrivacyEvent.for_noise(str(law), eps, delta, float(sigma), float(sens), draws)
    spent_eps = float(attrs.get("budget_spent_epsilon", eps * draws))
    spent_delta = float(attrs.get("budget_spent_delta", delta * draws))
    return PrivacyEvent("approx", spent_eps, min(spent_delta, 1 - 1e-15), None, 1)


def _gaussian_mu(events) -> float | None:
    """μ of the exact μ-GDP composition when every event is Gaussian (else None)."""
    if not events or any(e.law != "gaussian" for e in events):
        return None
    return math.sqrt(math.fsum(e.count / e.noise_multiplier**2 for e in events))


def _pld(events):
    pld = _cached_pld(tuple(events))
    if pld is None:
        raise InputError("the composition of these events is too large to compute tightly (more than "
                         "100,000 non-Gaussian draws, or a per-draw epsilon above 50)",
                         "read the basic-composition total (ledger.spent) instead")
    return pld


def _loss_pmfs(pld) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """``(losses, probabilities, infinity mass)`` of each direction of a dp-accounting PLD (one when symmetric).

    Reads dp-accounting's dense probability mass functions (the version pinned in ``constraints.txt``); a test
    checks that :func:`_hockey_stick` equals ``get_delta_for_epsilon`` so a change of those internals fails
    loudly rather than silently.
    """
    out = []
    for pmf in (pld._pmf_remove,) if pld._symmetric else (pld._pmf_remove, pld._pmf_add):
        dense = pmf.to_dense_pmf()
        losses = (np.arange(dense.size) + dense._lower_loss) * dense._discretization
        out.append((losses, np.asarray(dense._probs, float), float(dense._infinity_mass)))
    return out


def _hockey_stick(pld, eps: np.ndarray) -> np.ndarray:
    """δ(ε) of a PLD at ascending or unsorted ``eps``, the worse of its directions (the formula of
    ``get_delta_for_epsilon``, ``δ(ε) = m_∞ + Σ_{l ≥ ε} p_l (1 − e^{ε − l})``, by cumulative sums: a few
    milliseconds for thousands of ε where dp-accounting's loop takes a second)."""
    eps = np.asarray(eps, float)
    worst = np.zeros_like(eps)
    for losses, probs, inf_mass in _loss_pmfs(pld):
        tail_p = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
        tail_q = np.concatenate([np.cumsum((probs * np.exp(-losses))[::-1])[::-1], [0.0]])
        first = np.searchsorted(losses, eps, side="left")  # first loss >= ε
        delta = inf_mass + tail_p[first] - np.exp(eps) * tail_q[first]
        worst = np.maximum(worst, delta)
    return np.clip(worst, 0.0, 1.0)


def _epsilon_grid(pld) -> np.ndarray:
    """ε from 0 to the largest finite privacy loss (beyond it δ(ε) is the infinity mass and adds no line)."""
    hi = max(float(losses[probs > DELTA_FLOOR * 1e-3].max(initial=0.0)) for losses, probs, _ in _loss_pmfs(pld))
    return np.linspace(0.0, max(hi, 1e-6), EPSILON_POINTS)


@functools.lru_cache(maxsize=16)
def _cached_pld(events: tuple):
    """The composed PLD of ``events`` (frozen, hashable) at this module's :data:`VALUE_DISCRETIZATION` (cached: a
    curve, its power and its advantage read one composition)."""
    return composed_pld(events, value_discretization=VALUE_DISCRETIZATION)


def _gaussian_profile(mu: float, eps: np.ndarray) -> np.ndarray:
    from scipy.stats import norm

    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def privacy_profile(source, epsilons=None) -> xr.DataArray:
    """The privacy profile δ(ε) of a release or of everything a ledger charged.

    Parameters
    ----------
    source : PrivacyEvent, list of PrivacyEvent, PrivacyLedger, FileLedger, ReleasePlan or xr.DataTree
        What to read: events, a ledger's recorded events, a plan's event (or its cost as a generic (ε, δ)
        mechanism when it records none), or a release file's public attributes.
        Only certified events count: an uncertified release (Gibbs k > 1, NUTS) has no proved privacy loss and
        is left out (the ledger shows it apart); a source of uncertified releases alone is refused.
    epsilons : array_like, optional
        ε ≥ 0 to evaluate at (default: 0 up to where δ falls below 1e-12).

    Returns
    -------
    xr.DataArray
        ``delta``, dims ``("epsilon",)``: the smallest δ for which the composition is (ε, δ)-DP (an upper bound:
        dp-accounting's pessimistic discretisation; exact for Gaussian-only compositions).

    Raises
    ------
    InputError
        A negative or non-finite ε; a source with no events, or only uncertified ones; a composition too large
        to compute tightly.

    See Also
    --------
    trade_off_curve, privacy_in_words

    Examples
    --------
    >>> from fdp_ppl.accounting import PrivacyEvent, privacy_profile
    >>> gauss = PrivacyEvent("gaussian", 1.0, 1e-5, 5.0)       # σ = 5 Δ: 0.2-GDP
    >>> round(float(privacy_profile(gauss, [0.5]).item()), 5)
    0.00051
    """
    events = _events(source)
    if not events:
        raise InputError("nothing to draw a privacy profile of: no privacy events", "release something first")
    mu = _gaussian_mu(events)
    pld = None if mu is not None else _pld(events)
    eps = _epsilon_grid(pld) if epsilons is None and pld is not None else (
        np.linspace(0.0, mu * (mu / 2 + 8.0), EPSILON_POINTS) if epsilons is None else np.asarray(epsilons, float))
    eps = np.atleast_1d(eps).astype(float)
    if eps.ndim != 1 or not np.all(np.isfinite(eps)) or np.any(eps < 0):
        raise InputError("epsilons must be finite values >= 0", "e.g. epsilons=np.linspace(0, 5, 101)")
    delta = _gaussian_profile(mu, eps) if mu is not None else _hockey_stick(pld, eps)
    delta = np.clip(delta, 0.0, 1.0)
    return xr.DataArray(delta, dims=("epsilon",), coords={"epsilon": eps}, name="delta",
                        attrs={"long_name": "delta(epsilon): the privacy profile",
                               "method": "closed form (mu-GDP)" if mu is not None else
                               "dp-accounting privacy-loss distribution (pessimistic)"})


def trade_off_curve(source, alphas=None) -> xr.DataArray:
    """The f-DP trade-off curve: the smallest type II error of any test telling two neighbouring datasets
    apart, against its type I error.

    Parameters
    ----------
    source
        As in :func:`privacy_profile`.
    alphas : array_like, optional
        Type I errors in [0, 1] (default: :data:`DEFAULT_ALPHAS`, dense near 0).

    Returns
    -------
    xr.DataArray
        ``beta``, dims ``("alpha",)``: f(α) (Dong, Roth & Su 2022, Definition 2.1); exactly ``G_μ`` when every
        event is Gaussian, else the conjugate of the pessimistic privacy profile (Proposition 2.12) — a lower
        bound of the exact curve, so an attacker does no better than it says. ``1 − alpha − beta`` is the
        attacker's advantage over guessing.

    Raises
    ------
    InputError
        Type I errors outside [0, 1]; as :func:`privacy_profile`.

    Examples
    --------
    >>> from fdp_ppl.accounting import PrivacyEvent, trade_off_curve
    >>> lap = PrivacyEvent("laplace", 1.0, 0.0, 1.0)             # Laplace scale = Δ: pure 1-DP
    >>> round(float(trade_off_curve(lap, [0.5]).item()), 3)      # exactly e^-1 / 2 = 0.184
    0.184
    """
    events = _events(source)
    if not events:
        raise InputError("nothing to draw a trade-off curve of: no privacy events", "release something first")
    alpha = DEFAULT_ALPHAS if alphas is None else np.atleast_1d(np.asarray(alphas, float))
    if alpha.ndim != 1 or not np.all(np.isfinite(alpha)) or np.any((alpha < 0) | (alpha > 1)):
        raise InputError("alphas (type I errors) must lie in [0, 1]", "e.g. alphas=np.linspace(0, 1, 101)")
    mu = _gaussian_mu(events)
    if mu is not None:
        from scipy.stats import norm

        beta, method = norm.cdf(norm.ppf(1.0 - alpha) - mu), f"closed form G_mu, mu = {mu:.6g}"
    else:
        pld = _pld(events)
        eps = _epsilon_grid(pld)
        delta = _hockey_stick(pld, eps)
        one = 1.0 - delta[None, :]
        lines = np.maximum(one - np.exp(eps)[None, :] * alpha[:, None], np.exp(-eps)[None, :] * (one - alpha[:, None]))
        beta, method = np.maximum(lines.max(axis=1), 0.0), "conjugate of the dp-accounting privacy profile"
    return xr.DataArray(np.clip(beta, 0.0, 1.0 - alpha), dims=("alpha",), coords={"alpha": alpha}, name="beta",
                        attrs={"long_name": "smallest type II error at type I error alpha (trade-off function)",
                               "method": method})


def attacker_power(source, alpha: float = 0.01) -> float:
    """The largest share of the people it is after that an attacker can single out at false-positive rate
    ``alpha``: ``1 − f(alpha)`` (:func:`trade_off_curve`).

    Examples
    --------
    >>> from fdp_ppl.accounting import PrivacyEvent, attacker_power
    >>> round(attacker_power(PrivacyEvent("gaussian", 1.0, 1e-5, 5.0)), 4)   # 0.2-GDP at 1 % false positives
    0.0167
    """
    return float(1.0 - trade_off_curve(source, [alpha]).item())


def largest_advantage(source) -> float:
    """``max_α (1 − α − f(α))``: the largest gain over a coin flip of any test, which is δ(0), the total-variation
    distance of the worst neighbouring pair (the ε = 0 point of the profile).

    Examples
    --------
    >>> from fdp_ppl.accounting import PrivacyEvent, largest_advantage
    >>> round(largest_advantage(PrivacyEvent("laplace", 1.0, 0.0, 1.0)), 3)   # 1 - e^{-1/2}
    0.393
    """
    return float(privacy_profile(source, [0.0]).item())


def privacy_in_words(source, alpha: float = 0.01) -> str:
    """One sentence saying what the privacy loss means for one person.

    Examples
    --------
    >>> from fdp_ppl.accounting import PrivacyEvent, privacy_in_words
    >>> print(privacy_in_words(PrivacyEvent("gaussian", 1.0, 1e-5, 5.0)))   # doctest: +NORMALIZE_WHITESPACE
    an attacker telling apart two datasets that differ in one person's record, at 1% false positives, has at
    most 1.7% power (largest advantage over guessing: 0.08)
    """
    power = attacker_power(source, alpha)
    return (f"an attacker telling apart two datasets that differ in one person's record, at {100 * alpha:.3g}% "
            f"false positives, has at most {100 * power:.2g}% power (largest advantage over guessing: "
            f"{largest_advantage(source):.2g})")


__all__ = ["DEFAULT_ALPHAS", "attacker_power", "largest_advantage", "privacy_in_words", "privacy_profile",
           "trade_off_curve"]
