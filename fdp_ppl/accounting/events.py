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

**Privacy unit.** Every event states the unit its guarantee protects (``unit``: ``"record"``, or the
column naming a person, e.g. ``"subject_id"``) and its neighbouring relation: ``"replace-one"`` (one unit's
records replaced, the number of units n public; presence is not protected, since n is published) or
``"add-remove"`` (one unit added or removed, n private: membership protected; offered for mean curves with a
public lower bound on n, docs/DESIGN.md, "What a release protects"). The PLD of a shifted pair depends only on
the shift, which the sensitivity bounds under that relation. A record-level event is converted to a unit of at
most k records by group privacy (:meth:`PrivacyEvent.for_group`), and an add/remove event to replace-one by
group privacy over its two steps (:meth:`PrivacyEvent.for_replace_one`); a replace-one event has no add/remove
guarantee (it may publish n), so a ledger of add/remove refuses it (:func:`for_ledger`).

**Adaptive acceptance.** A ledger decides after each release whether the next one may run: the releases
are chosen adaptively and the ledger stops adaptively, so its rule must be a *privacy filter* (Rogers, Roth,
Ullman & Vadhan 2016). :func:`fits` uses only filters with a theorem for that setting: basic composition,
a valid filter for approximate DP (Rogers et al. 2016, Theorem 5.1; Whitehouse, Ramdas, Rogers & Wu 2023,
"Fully-adaptive composition in differential privacy", ICML), and, while every event is Gaussian, the μ-GDP
filter (fully adaptive composition of Gaussian DP: Smith & Thakurta 2022, "Fully adaptive composition for
Gaussian differential privacy", arXiv:2210.17520, Theorem 1.1; composition of μ-GDP: Dong, Roth & Su 2022,
JRSSB, Corollary 3.3): Σ μ_i² ≤ μ² for the μ whose δ(ε) meets the budget. The PLD total of Laplace and
generic events (:func:`tight_epsilon`) holds for a sequence fixed in advance; no filter theorem covers it
(a Rényi filter, Feldman & Zrnic 2021, would cover Laplace and Gaussian events at one fixed order, but its
conversion to (ε, δ) is looser than the sum for the few releases a ledger holds), so it is shown, never used
to accept. Releases whose guarantee is not certified (uncertified MCMC) are charged at their nominal cost but
kept out of the guaranteed total (:func:`guaranteed`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

from .._names import ADD_REMOVE, RELATIONS, canonical_relation
from .._names import is_add_remove as _add_remove
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
#: fields added after events were first recorded: written only when they differ from their defaults
_LATER_FIELDS = ("unit", "group", "certified")
#: the default neighbouring relation (docs/DESIGN.md, "What a release protects"): one unit's records replaced, the
#: number of units n public; :data:`ADD_REMOVE` protects membership (one unit added or removed, n private)
NEIGHBOURING = "replace-one"


def relation_of(text) -> str:
    """The relation (:data:`RELATIONS`) of a relation in words: ``"add-remove"`` for add/remove, else
    ``"replace-one"`` (every other relation the families state in words replaces one unit with n public)."""
    return ADD_REMOVE if _add_remove(text) else NEIGHBOURING


def check_neighbouring(relation) -> str:
    """The neighbouring relation a ledger or a spec is made for: ``"replace-one"`` or ``"add-remove"``.

    ``"replace-one"``: one unit's records replaced, the number of units n public (presence not protected).
    ``"add-remove"``: one unit added or removed, n private (membership protected); only mean curves with a
    public lower bound ``n_lower`` derive a sensitivity for it (docs/DESIGN.md, "What a release protects").
    Spellings such as ``"add/remove"`` or ``"unbounded"`` read as ``"add-remove"``.

    Raises
    ------
    InputError
        Anything else.

    Examples
    --------
    >>> from fdp_ppl.accounting.events import check_neighbouring
    >>> check_neighbouring("replace-one"), check_neighbouring("add/remove")
    ('replace-one', 'add-remove')
    >>> check_neighbouring("swap")
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: unknown neighbouring relation 'swap'; use neighbouring='replace-one' (n public) or neighbouring='add-remove' (membership protected, n private)
    """
    canonical = canonical_relation(relation)
    if canonical is not None:
        return canonical
    raise InputError(f"unknown neighbouring relation {relation!r}",
                     f"use neighbouring={NEIGHBOURING!r} (n public) or neighbouring={ADD_REMOVE!r} (membership "
                     "protected, n private)")


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
        The neighbouring relation of the sensitivity: ``"replace-one"`` (one unit replaced, n public; also any
        family's words for it) or ``"add-remove"`` (one unit added or removed, n private; any spelling of it is
        recorded as ``"add-remove"``).
    unit : str
        The privacy unit the guarantee protects: ``"record"`` or the column naming a person (``"subject_id"``).
    group : int
        The group size k a record-level event was converted with (:meth:`for_group`; 1: not converted).
    certified : bool
        Whether the stated guarantee is proved for the sampler that drew (False: uncertified MCMC, kept out of
        the guaranteed total).

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
    unit: str = "record"
    group: int = 1
    certified: bool = True

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
        if _add_remove(self.neighbouring):
            object.__setattr__(self, "neighbouring", ADD_REMOVE)  # one spelling in the ledger
        if not isinstance(self.unit, str) or not self.unit:
            raise InputError("a privacy event needs its privacy unit", "e.g. unit='record' or unit='subject_id'")
        if isinstance(self.group, bool) or not isinstance(self.group, int) or self.group < 1:
            raise InputError(f"a privacy event's group size must be an integer >= 1, got {self.group!r}")
        if not isinstance(self.certified, bool):
            raise InputError(f"a privacy event's certified flag must be True or False, got {self.certified!r}")

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
        """The event as canonical JSON (sorted keys; floats in their shortest round-trip form). The fields added
        with privacy units (``unit``, ``group``, ``certified``) are written only when they differ from their
        defaults, so an event recorded before them reads back, and writes, unchanged."""
        data = asdict(self)
        for name in _LATER_FIELDS:
            if data[name] == self.__dataclass_fields__[name].default:
                del data[name]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    # ------------------------------------------------------------------ units
    def with_unit(self, unit: str, certified: bool = True) -> "PrivacyEvent":
        """This event stated for ``unit`` (the release's own privacy unit) and its certification."""
        return replace(self, unit=str(unit), certified=bool(self.certified and certified))

    def for_group(self, k: int, unit: str) -> "PrivacyEvent":
        """The guarantee of this record-level event for a ``unit`` that holds at most ``k`` records.

        Group privacy: an (ε, δ)-DP mechanism is (kε, k e^{(k-1)ε} δ)-DP for datasets differing in k records
        (Dwork & Roth 2014, Theorem 2.2 for ε-DP; Vadhan 2017, "The complexity of differential privacy",
        Lemma 2.2; Dwork & Roth 2014, §2.3 for (ε, δ)). The noise law keeps its shape with k times the shift:
        a Laplace or Gaussian event's noise multiplier is divided by k (the sensitivity of k records is at
        most kΔ by the triangle inequality), so a μ-GDP event becomes kμ-GDP (Dong, Roth & Su 2022,
        Theorem 2.14) and its PLD is that of σ/(kΔ).

        Parameters
        ----------
        k : int
            Public bound on the records of one unit (≥ 1).
        unit : str
            The unit's column (e.g. ``"subject_id"``).

        Returns
        -------
        PrivacyEvent
            ``count`` draws, each (kε, k e^{(k-1)ε} δ) (ε-DP: kε), ``unit`` set, ``group = k``.

        Raises
        ------
        InputError
            This event is not record-level, k < 1, or the converted δ is not below 1.

        Examples
        --------
        Two ε = 1 releases, one per subject and one per scan, with at most 8 scans per subject: the per-scan
        release costs a subject 8ε:

        >>> import fdp_ppl as fp
        >>> fp.PrivacyEvent("laplace", 1.0, 0.0, 1.0).for_group(8, "subject_id").basic
        PrivacyBudget(epsilon=8.0, delta=0.0)
        >>> g = fp.PrivacyEvent("approx", 0.5, 1e-6).for_group(3, "subject_id")
        >>> round(g.epsilon, 6), f"{g.delta:.4g}"          # 3 × 0.5, 3 e^(2 × 0.5) 1e-6
        (1.5, '8.155e-06')
        """
        if isinstance(k, bool) or int(k) != k or int(k) < 1:
            raise InputError(f"the records per unit must be a whole number >= 1, got {k!r}", "e.g. 8")
        k = int(k)
        if self.unit != "record":
            raise InputError(f"only a record-level event converts by group privacy (this one is per {self.unit})",
                             "charge it to a ledger of its own unit")
        eps_k = k * self.epsilon
        try:
            delta_k = k * math.exp((k - 1) * self.epsilon) * self.delta if self.delta > 0 else 0.0
        except OverflowError:
            delta_k = math.inf
        if not (math.isfinite(eps_k) and delta_k < 1.0):
            raise InputError(f"group privacy for {k} records per {unit} turns ({self.epsilon:g}, {self.delta:g}) into "
                             f"({eps_k:g}, {delta_k:.3g}): no guarantee (delta >= 1)",
                             "release per person instead (--privacy-unit with --combine or --max-contributions)")
        nm = None if self.noise_multiplier is None else self.noise_multiplier / k
        return replace(self, epsilon=eps_k, delta=delta_k, noise_multiplier=nm, unit=str(unit), group=self.group * k)

    def for_replace_one(self) -> PrivacyEvent:
        """The guarantee of this add/remove event under replace-one (this event itself if it is replace-one).

        Replacing one unit is removing it and adding another: two add/remove steps, so group privacy with k = 2
        gives (2ε, (1 + e^ε) δ) (Dwork & Roth 2014, §2.3: chain the two steps; Kifer & Machanavajjhala 2011 for
        the two relations). The noise law keeps its shape with twice the shift (the triangle inequality), so a
        Laplace or Gaussian event's noise multiplier is halved (a Gaussian μ-GDP event becomes 2μ-GDP). The
        converse does not hold: a replace-one release publishes n, so it has no add/remove guarantee.

        Returns
        -------
        PrivacyEvent
            ``neighbouring="replace-one"``, (2ε, (1 + e^ε) δ) per draw, the multiplier halved.

        Raises
        ------
        InputError
            The converted δ is not below 1.

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> e = fp.PrivacyEvent("laplace", 0.5, 0.0, 2.0, neighbouring="add-remove").for_replace_one()
        >>> e.neighbouring, e.epsilon, e.noise_multiplier
        ('replace-one', 1.0, 1.0)
        >>> g = fp.PrivacyEvent("approx", 1.0, 1e-6, neighbouring="add-remove").for_replace_one()
        >>> f"{g.delta:.4g}"                                  # (1 + e) 1e-6
        '3.718e-06'
        """
        if self.neighbouring != ADD_REMOVE:
            return self
        try:
            delta2 = (1.0 + math.exp(self.epsilon)) * self.delta if self.delta > 0 else 0.0
        except OverflowError:
            delta2 = math.inf
        if not delta2 < 1.0:
            raise InputError(f"an add/remove release of ({self.epsilon:g}, {self.delta:g}) per draw is "
                             f"(2 epsilon, (1 + e^epsilon) delta) = ({2 * self.epsilon:g}, {delta2:.3g}) under "
                             "replace-one: no guarantee (delta >= 1)", "charge it to a ledger of add/remove "
                             "(neighbouring='add-remove'), or lower epsilon or delta")
        nm = None if self.noise_multiplier is None else self.noise_multiplier / 2.0
        return replace(self, epsilon=2.0 * self.epsilon, delta=delta2, noise_multiplier=nm, neighbouring=NEIGHBOURING)

    # ------------------------------------------------------------------ composition
    @property
    def basic(self) -> PrivacyBudget:
        """What the event costs by basic composition: ``count × (ε, δ)``."""
        return _unchecked(self.epsilon * self.count, self.delta * self.count)

    def key(self) -> tuple:
        """Events with equal keys have the same PLD per draw (their counts add)."""
        return (self.law, self.epsilon, self.delta, self.noise_multiplier, self.neighbouring, self.unit)

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
        law, eps, dl, nm, rel, unit = key
        if law == "gaussian":
            gauss_rho += count / nm**2
            continue
        try:
            part = PrivacyEvent(law, eps, dl, nm, count, rel, unit).pld(value_discretization=value_discretization)
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


def gdp_epsilon(events, delta: float) -> float:
    """ε at ``delta`` of Gaussian ``events`` by μ-GDP: ``μ² = Σ count_i / σ_i²`` (σ_i the noise multiplier), and
    ε solves Balle & Wang's ``δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong, Roth & Su 2022, Corollary 2.13).

    Fully adaptive: a ledger that accepts Gaussian releases while this ε fits its budget is a valid privacy
    filter (Smith & Thakurta 2022, Theorem 1.1).

    Returns
    -------
    float
        ε ≥ 0 (0 without events; ``inf`` at δ = 0).

    Raises
    ------
    InputError
        An event that is not Gaussian.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> sigma = fp.analytic_sigma(epsilon=0.5, delta=1e-5, sensitivity=1.0)
    >>> round(fp.accounting.events.gdp_epsilon([fp.PrivacyEvent("gaussian", 0.5, 1e-5, sigma, count=10)], 1e-4), 2)
    1.5
    """
    from scipy import optimize

    from .calibration import gaussian_delta

    events = list(events)
    if any(e.law != "gaussian" for e in events):
        raise InputError("gdp_epsilon composes Gaussian events only", "use basic_total for other events")
    mu2 = math.fsum(e.count / e.noise_multiplier**2 for e in events)
    if mu2 == 0:
        return 0.0
    if not delta > 0:
        return math.inf
    sigma = 1.0 / math.sqrt(mu2)

    def excess(eps):
        return gaussian_delta(eps, 1.0, sigma) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-12, rtol=1e-12))


def guaranteed(events) -> list:
    """The certified events (``certified`` True): those a total can state a guarantee for."""
    return [e for e in events if e.certified]


def fits(events, total: PrivacyBudget, rtol: float = 1e-12) -> bool:
    """Whether a ledger holding ``events`` (the new one last) may accept it: a privacy filter for adaptively
    chosen releases and adaptive stopping (module docstring).

    Accepted when basic composition fits (a valid filter: Rogers et al. 2016, Theorem 5.1; Whitehouse et al.
    2023), or, when every event is a certified Gaussian one and the budget has δ > 0, when the μ-GDP total fits
    (:func:`gdp_epsilon`; Smith & Thakurta 2022, Theorem 1.1). For Gaussian events the μ-GDP total is never
    above basic composition, so on an all-Gaussian ledger this is the μ-GDP filter itself. Laplace and generic
    events are never accepted by their privacy-loss-distribution total (:func:`tight_epsilon` is shown only).

    Examples
    --------
    Ten Gaussian releases at (0.5, 1e-5) fit a (2, 1e-4) budget (μ-GDP total 1.50); ten Laplace releases at
    ε = 0.5 do not, whatever their PLD total:

    >>> import fdp_ppl as fp
    >>> from fdp_ppl.accounting.events import fits
    >>> sigma = fp.analytic_sigma(epsilon=0.5, delta=1e-5, sensitivity=1.0)
    >>> fits([fp.PrivacyEvent("gaussian", 0.5, 1e-5, sigma)] * 10, fp.PrivacyBudget(2.0, 1e-4))
    True
    >>> fits([fp.PrivacyEvent("laplace", 0.5, 0.0, 2.0)] * 10, fp.PrivacyBudget(2.0, 1e-4))
    False
    """
    events = list(events)
    if basic_total(events).fits_in(total, rtol):
        return True
    if total.delta > 0 and events and all(e.law == "gaussian" and e.certified for e in events):
        return gdp_epsilon(events, total.delta) <= total.epsilon * (1 + rtol)
    return False


def ledger_unit(events, declared: str | None = None) -> str | None:
    """A ledger's privacy unit: the one it was created with, else its first event's (None: no charge yet)."""
    if declared is not None:
        return str(declared)
    for e in events:
        return e.unit
    return None


def ledger_relation(events, declared: str | None = None) -> str | None:
    """A ledger's neighbouring relation: the one it was created with, else its first event's (None: no charge yet)."""
    if declared:
        return check_neighbouring(declared)
    for e in events:
        return relation_of(e.neighbouring)
    return None


def for_relation(event: PrivacyEvent, relation: str | None) -> PrivacyEvent:
    """The event a ledger of neighbouring relation ``relation`` records for ``event`` (one relation per ledger).

    The same relation (or a ledger without one yet): ``event``. An add/remove event on a replace-one ledger:
    converted by group privacy over its two steps (:meth:`PrivacyEvent.for_replace_one`: 2ε, (1 + e^ε) δ). A
    replace-one event on an add/remove ledger: refused, since a release that publishes n has no add/remove
    guarantee to convert.

    Raises
    ------
    InputError
        A replace-one event on an add/remove ledger (one line, naming the fix).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.accounting.events import for_relation
    >>> for_relation(fp.PrivacyEvent("laplace", 1.0, 0.0, 1.0, neighbouring="add-remove"), "replace-one").basic
    PrivacyBudget(epsilon=2.0, delta=0.0)
    >>> for_relation(fp.PrivacyEvent("laplace", 1.0, 0.0, 1.0), "add-remove")
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: the ledger protects membership (add-remove: n private), but this release is replace-one with n public, which has no add/remove guarantee ...
    """
    if relation is None or relation_of(event.neighbouring) == relation:
        return event
    if relation == NEIGHBOURING:
        return event.for_replace_one()
    raise InputError("the ledger protects membership (add-remove: n private), but this release is replace-one with n "
                     "public, which has no add/remove guarantee (it publishes n): one ledger keeps one relation",
                     "release with neighbouring='add-remove' and a public n_lower (mean curves: --neighbouring "
                     "add-remove --n-lower N), or charge it to a replace-one ledger")


def for_ledger(event: PrivacyEvent, unit: str | None, records_per_unit: int | None = None,
               relation: str | None = None) -> PrivacyEvent:
    """The event a ledger whose privacy unit is ``unit`` (and neighbouring relation ``relation``, None: any)
    records for ``event``: one unit and one relation per ledger (the relation by :func:`for_relation`, after the
    unit).

    The same unit (or a ledger without a unit yet): ``event`` itself. A record-level event on a ledger of a
    person unit: converted by group privacy (:meth:`PrivacyEvent.for_group`) when ``records_per_unit`` states
    a public bound k on each person's records, refused otherwise. Any other mix (a person-level release on a
    record-level ledger, two person units) is refused: the ledger's totals would add guarantees about
    different things.

    Raises
    ------
    InputError
        A unit the ledger does not hold (one line, naming the fix); ``records_per_unit`` for a ledger without
        a person unit.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.accounting.events import for_ledger
    >>> per_scan = fp.PrivacyEvent("laplace", 1.0, 0.0, 1.0)
    >>> for_ledger(per_scan, "subject_id", records_per_unit=8).basic
    PrivacyBudget(epsilon=8.0, delta=0.0)
    >>> for_ledger(per_scan, "subject_id")
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: the ledger protects each subject_id, but this release is per record: one ledger ...
    """
    return for_relation(_for_unit(event, unit, records_per_unit), relation)


def _for_unit(event: PrivacyEvent, unit: str | None, records_per_unit: int | None) -> PrivacyEvent:
    """:func:`for_ledger` for the unit alone."""
    if unit is None or event.unit == unit:
        if records_per_unit is not None and event.unit == "record" and unit is None:
            raise InputError("records per unit converts a record-level release for a ledger whose privacy unit is a "
                             "person, and this ledger has no release yet",
                             "make its first release per person (privacy_unit=COLUMN with combine=mean), or drop "
                             "records_per_unit")
        return event
    if event.unit == "record":
        if records_per_unit is None:
            raise InputError(f"the ledger protects each {unit}, but this release is per record: one ledger keeps one "
                             "privacy unit",
                             f"state a public bound K on each {unit}'s records, records_per_unit=K, to charge it "
                             f"by group privacy (K x epsilon), or release per {unit} (privacy_unit={unit} with "
                             "combine=mean or max_contributions=K)")
        return event.for_group(records_per_unit, unit)
    raise InputError(f"the ledger protects each {unit}, but this release is per {event.unit}: one ledger keeps one "
                     "privacy unit", f"charge per-{event.unit} releases to a ledger of their own (another ledger "
                     "file): a ledger's unit is that of its first release")


__all__ = ["ADD_REMOVE", "LAWS", "NEIGHBOURING", "RELATIONS", "PrivacyEvent", "basic_total", "check_neighbouring",
           "composed_pld", "fits", "for_ledger", "for_relation", "gdp_epsilon", "guaranteed", "ledger_relation",
           "ledger_unit", "relation_of",
           "tight_epsilon", "VALUE_DISCRETIZATION"]
