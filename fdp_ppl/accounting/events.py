"""Privacy events: what one charge did, in enough detail to recompose a ledger tightly.

A ledger that keeps only (ε, δ) per release can compose them only by summation (basic composition,
Dwork & Roth 2014, Theorem 3.16). A :class:`PrivacyEvent` also keeps the noise law and its scale in
sensitivity units, so a total can be recomputed from the privacy-loss distributions (PLDs) of the
mechanisms themselves (Meiser & Mohammadi 2018; Koskela, Jälkö & Honkela 2020), computed by Google's
``dp-accounting`` (:mod:`dp_accounting.pld`):

* ``law="laplace"``: Laplace noise of scale ``noise_multiplier · Δ`` on coordinates whose ℓ¹-type
  sensitivity is Δ (ICLP on whitened coefficients ``c_j/√λ_j`` with Δ in ``‖·‖_{1,C}``; FRL; Bernstein).
  The pair ``(Lap(0, b), Lap(Δ, b))`` dominates every pair of neighbouring releases, so the PLD is
  ``from_laplace_mechanism(noise_multiplier)``;
* ``law="gaussian"``: Gaussian noise of sd ``noise_multiplier · Δ`` with Δ in the Cameron–Martin
  norm (Mirshani et al. 2019; Hall et al. 2013): ``from_gaussian_mechanism(noise_multiplier)``;
* ``law="approx"``: only an (ε, δ) guarantee is known (elliptical laws, the exponential mechanism,
  a release made before events were recorded): the PLD of a generic (ε, δ)-DP mechanism,
  ``from_privacy_parameters`` (Kairouz, Oh & Viswanath 2015), which is what composition of such a
  guarantee can use.

The neighbouring relation of every event is replace-one (n public); the PLD of a shifted pair depends
only on the shift, which the sensitivity bounds under that relation.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from ..errors import InputError
from .budget import PrivacyBudget, _unchecked

LAWS = ("laplace", "gaussian", "approx")
#: the value discretisation of the PLDs (dp-accounting's pessimistic estimate: totals are upper bounds)
VALUE_DISCRETIZATION = 1e-4
#: compositions of more non-Gaussian draws than this are not computed tightly (the PLD arithmetic grows with the
#: count): the tight total is then reported as ``inf`` and basic composition decides
MAX_TIGHT_DRAWS = 100_000
#: per-draw ε above which no PLD is built (exp(ε) overflows; such a charge is decided by basic composition)
MAX_TIGHT_EPSILON = 50.0
_RTOL = 1e-9


@dataclass(frozen=True)
class PrivacyEvent:
    """One charge: ``count`` independent draws of one mechanism.

    Parameters
    ----------
    law : {"laplace", "gaussian", "approx"}
        The noise law (module docstring).
    epsilon, delta : float
        The guarantee stated per draw (ε > 0, δ in [0, 1)).
    noise_multiplier : float, optional
        Noise scale / sensitivity (Laplace ``b/Δ``, Gaussian ``σ/Δ``), > 0; required for the
        ``laplace`` and ``gaussian`` laws, absent for ``approx``.
    count : int
        Number of draws (≥ 1).
    neighbouring : str
        The neighbouring relation of the sensitivity (``"replace-one"``).

    Raises
    ------
    InputError
        Unknown law, a parameter out of range, or a stated (ε, δ) that the noise does not give
        (a Laplace event claiming ε < 1/noise_multiplier; a Gaussian one whose δ at ε is exceeded).

    Examples
    --------
    Ten Gaussian releases, each (1, 1e-5)-DP: basic composition spends ε = 10, the privacy-loss
    distributions far less at δ = 1e-4:

    >>> import fdp_ppl as fp
    >>> sigma = fp.analytic_sigma(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> event = fp.PrivacyEvent("gaussian", 1.0, 1e-5, noise_multiplier=sigma, count=10)
    >>> event.basic
    PrivacyBudget(epsilon=10.0, delta=0.0001)
    >>> round(fp.accounting.tight_epsilon([event], delta=1e-4), 2)
    3.13

    See Also
    --------
    PrivacyLedger : records one event per charge.
    """

    law: str
    epsilon: float
    delta: float = 0.0
    noise_multiplier: float | None = None
    count: int = 1
    neighbouring: str = "replace-one"

    def __post_init__(self):
        if self.law not in LAWS:
            raise InputError(f"unknown privacy event law {self.law!r}", f"use one of {LAWS}")
        eps, delta, count = float(self.epsilon), float(self.delta), self.count
        if not (math.isfinite(eps) and eps > 0):
            raise InputError(f"a privacy event needs a finite epsilon > 0, got {self.epsilon!r}")
        if not (math.isfinite(delta) and 0.0 <= delta < 1.0):
            raise InputError(f"a privacy event needs delta in [0, 1), got {self.delta!r}")
        if isinstance(count, bool) or int(count) != count or int(count) < 1:
            raise InputError(f"a privacy event needs an integer count >= 1, got {self.count!r}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "count", int(count))
        if self.law == "approx":
            if self.noise_multiplier is not None:
                raise InputError("an 'approx' event has no noise multiplier", "pass law='laplace' or 'gaussian'")
        else:
            nm = float(self.noise_multiplier) if self.noise_multiplier is not None else float("nan")
            if not (math.isfinite(nm) and nm > 0):
                raise InputError(f"a {self.law} event needs a finite noise_multiplier > 0, got "
                                 f"{self.noise_multiplier!r}")
            object.__setattr__(self, "noise_multiplier", nm)
            if self.law == "laplace" and eps < (1.0 / nm) * (1 - _RTOL):
                raise InputError(f"a Laplace event with noise multiplier {nm:g} is {1 / nm:g}-DP, not {eps:g}-DP",
                                 "record the epsilon the noise gives")
            if self.law == "gaussian":
                from .calibration import gaussian_delta

                if delta <= 0 or gaussian_delta(eps, 1.0, nm) > delta * (1 + 1e-6) + 1e-300:
                    raise InputError(f"a Gaussian event with noise multiplier {nm:g} is not ({eps:g}, {delta:g})-DP",
                                     "record the (epsilon, delta) the noise gives")
        if not isinstance(self.neighbouring, str) or not self.neighbouring:
            raise InputError("a privacy event needs its neighbouring relation", "e.g. neighbouring='replace-one'")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_budget(cls, budget: PrivacyBudget, count: int = 1) -> "PrivacyEvent":
        """An ``approx`` event stating only ``budget`` per draw (composed as a generic (ε, δ) mechanism)."""
        return cls("approx", budget.epsilon, budget.delta, None, count)

    @classmethod
    def for_noise(cls, law: str, epsilon: float, delta: float, sigma: float, sensitivity: float,
                  count: int = 1) -> "PrivacyEvent":
        """The event of ``count`` draws of noise law ``law`` (a :mod:`fdp_ppl.noise.laws` name) with global scale
        ``sigma`` (Laplace ``b``, Normal sd, in whitened units) for a summary of sensitivity ``sensitivity``,
        stating (ε, δ) per draw.

        ``laplace`` and ``normal`` give events with the noise multiplier ``sigma / sensitivity``; any other
        law (elliptical), or a scale that does not give the stated guarantee, an ``approx`` (ε, δ) event.
        """
        try:
            nm = float(sigma) / float(sensitivity)
            if law == "laplace" and delta == 0:
                return cls("laplace", epsilon, 0.0, nm, count)
            if law == "normal":
                return cls("gaussian", epsilon, delta, nm, count)
        except (InputError, ZeroDivisionError, TypeError, ValueError):
            pass
        return cls("approx", epsilon, delta, None, count)

    @classmethod
    def from_json(cls, text: str) -> "PrivacyEvent":
        """The event of :meth:`to_json`.

        Raises
        ------
        InputError
            Not a JSON object of an event's fields, or fields out of range.
        """
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or set(data) - set(cls.__dataclass_fields__):
                raise ValueError
        except (TypeError, ValueError):
            raise InputError("not a recorded privacy event", "the ledger entry was edited or damaged") from None
        try:
            return cls(**data)
        except TypeError:
            raise InputError("a recorded privacy event misses a field", "the ledger entry was edited or damaged") \
                from None

    def to_json(self) -> str:
        """The event as canonical JSON (sorted keys; floats in their shortest round-trip form)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    # ------------------------------------------------------------------ composition
    @property
    def basic(self) -> PrivacyBudget:
        """What the event costs by basic composition: ``count × (ε, δ)``."""
        return _unchecked(self.epsilon * self.count, self.delta * self.count)

    def key(self) -> tuple:
        """Events with equal keys have the same PLD per draw (their counts add)."""
        return (self.law, self.epsilon, self.delta, self.noise_multiplier, self.neighbouring)

    def pld(self, count: int | None = None, value_discretization: float = VALUE_DISCRETIZATION):
        """The privacy-loss distribution of ``count`` (default: the event's) draws (dp-accounting), its losses
        discretised (pessimistically) at ``value_discretization``.

        Returns
        -------
        dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        """
        from dp_accounting.pld import privacy_loss_distribution as pld
        from dp_accounting.pld.common import DifferentialPrivacyParameters

        k = self.count if count is None else int(count)
        if self.law == "gaussian":  # k-fold composition of N(0, σ²) vs N(Δ, σ²) is one Gaussian with σ/√k
            return pld.from_gaussian_mechanism(self.noise_multiplier / math.sqrt(k), sensitivity=1.0,
                                               value_discretization_interval=value_discretization)
        if self.law == "laplace":
            base = pld.from_laplace_mechanism(self.noise_multiplier, sensitivity=1.0,
                                              value_discretization_interval=value_discretization)
        else:
            base = pld.from_privacy_parameters(DifferentialPrivacyParameters(self.epsilon, self.delta),
                                               value_discretization_interval=value_discretization)
        return base.self_compose(k) if k > 1 else base


def basic_total(events) -> PrivacyBudget:
    """Basic composition of ``events``: the sum of their ``count × (ε, δ)``."""
    eps = math.fsum(e.basic.epsilon for e in events)
    delta = math.fsum(e.basic.delta for e in events)
    return _unchecked(eps, delta)


def composed_pld(events, value_discretization: float = VALUE_DISCRETIZATION):
    """The privacy-loss distribution of the composition of ``events`` (dp-accounting), or None.

    Identical events are merged (their counts add) and composed by dp-accounting's PLD arithmetic
    (pessimistic discretisation: every δ(ε) read from it is an upper bound). Gaussian events are merged
    exactly: draws of noise multipliers σ_i compose to one Gaussian of multiplier ``(Σ 1/σ_i²)^(-1/2)``
    (μ-GDP with μ² = Σ μ_i², Dong, Roth & Su 2022, Corollary 3.3).

    Returns
    -------
    PrivacyLossDistribution or None
        None without events, or when the composition is not computed (more than :data:`MAX_TIGHT_DRAWS`
        non-Gaussian draws, a per-draw ε above :data:`MAX_TIGHT_EPSILON`, or a PLD that cannot be built).
    """
    merged: dict = {}
    for e in events:
        merged[e.key()] = merged.get(e.key(), 0) + e.count
    if not merged:
        return None
    other = sum(c for (law, *_), c in merged.items() if law != "gaussian")
    if other > MAX_TIGHT_DRAWS or any(k[1] > MAX_TIGHT_EPSILON for k in merged if k[0] != "gaussian"):
        return None
    gauss_rho = 0.0  # Gaussian events compose exactly: Σ 1/σ_i² (μ-GDP with μ² = Σ μ_i²)
    total = None
    for key, count in merged.items():
        law, eps, dl, nm, rel = key
        if law == "gaussian":
            gauss_rho += count / nm**2
            continue
        try:
            part = PrivacyEvent(law, eps, dl, nm, count, rel).pld(value_discretization=value_discretization)
        except (OverflowError, ValueError, MemoryError):
            return None
        total = part if total is None else total.compose(part)
    if gauss_rho > 0:
        from dp_accounting.pld import privacy_loss_distribution as pld

        part = pld.from_gaussian_mechanism(1.0 / math.sqrt(gauss_rho), sensitivity=1.0,
                                           value_discretization_interval=value_discretization)
        total = part if total is None else total.compose(part)
    return total


def tight_epsilon(events, delta: float) -> float:
    """ε of the composition of ``events`` at ``delta``, from their privacy-loss distributions
    (:func:`composed_pld`).

    Parameters
    ----------
    events : iterable of PrivacyEvent
    delta : float
        Target δ in [0, 1).

    Returns
    -------
    float
        ε ≥ 0, ``inf`` when no finite ε holds at ``delta`` (e.g. δ = 0 for several Laplace releases,
        whose truncated tails the pessimistic PLD puts at infinity: basic composition is tight there) or
        when the composition is not computed (more than :data:`MAX_TIGHT_DRAWS` non-Gaussian draws, a
        per-draw ε above :data:`MAX_TIGHT_EPSILON`: basic composition decides), and 0 without events.
    """
    events = list(events)
    if not events:
        return 0.0
    total = composed_pld(events)
    if total is None:
        return math.inf
    return float(total.get_epsilon_for_delta(float(delta)))


def fits(events, total: PrivacyBudget, rtol: float = 1e-12) -> bool:
    """Whether ``events`` fit in ``total`` by basic composition **or** by the tight (PLD) total at
    ``total.delta`` — both are valid guarantees, so the ledger never refuses what either allows."""
    events = list(events)
    if basic_total(events).fits_in(total, rtol):
        return True
    return tight_epsilon(events, total.delta) <= total.epsilon * (1 + rtol)


__all__ = ["LAWS", "PrivacyEvent", "basic_total", "composed_pld", "fits", "tight_epsilon", "VALUE_DISCRETIZATION"]
