"""Privacy budgets and a ledger with basic (sequential) composition.

Basic composition: releasing mechanisms that are (ε_i, δ_i)-DP on the same
data is (Σ ε_i, Σ δ_i)-DP (Dwork & Roth 2014, Theorem 3.16). A published
release is one draw; ``k`` draws of the same mechanism cost ``k`` times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BudgetExceededError, check_delta, check_epsilon


@dataclass(frozen=True)
class PrivacyBudget:
    """An (ε, δ) pair; δ = 0 is pure ε-DP.

    Parameters
    ----------
    epsilon : float
        > 0 (dimensionless).
    delta : float
        In [0, 1).

    Raises
    ------
    ValueError
        ε <= 0 or not finite; δ outside [0, 1).
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=True))

    def __add__(self, other: "PrivacyBudget") -> "PrivacyBudget":
        return _unchecked(self.epsilon + other.epsilon, self.delta + other.delta)

    def __mul__(self, k: int) -> "PrivacyBudget":
        k = int(k)
        if k < 1:
            raise ValueError("a budget can only be multiplied by a positive integer")
        return _unchecked(self.epsilon * k, self.delta * k)

    __rmul__ = __mul__

    def fits_in(self, other: "PrivacyBudget", rtol: float = 1e-12) -> bool:
        """True when this budget is at most ``other`` in both ε and δ."""
        return (self.epsilon <= other.epsilon * (1 + rtol)) and (self.delta <= other.delta * (1 + rtol) + 1e-300)


def _unchecked(eps, delta):
    # composed budgets may exceed δ = 1 formally; keep the arithmetic honest
    b = object.__new__(PrivacyBudget)
    object.__setattr__(b, "epsilon", float(eps))
    object.__setattr__(b, "delta", float(delta))
    return b


@dataclass
class PrivacyLedger:
    """Tracks spending against a total budget (basic composition).

    Parameters
    ----------
    total : PrivacyBudget
        The most the data holder will spend on this dataset.

    Examples
    --------
    >>> ledger = PrivacyLedger(PrivacyBudget(2.0))
    >>> ledger.spend(PrivacyBudget(1.0), "mean curve")
    >>> ledger.remaining
    PrivacyBudget(epsilon=1.0, delta=0.0)
    """

    total: PrivacyBudget
    entries: list = field(default_factory=list)

    @property
    def spent(self) -> PrivacyBudget:
        eps = sum(b.epsilon for _, b in self.entries)
        dl = sum(b.delta for _, b in self.entries)
        return _unchecked(eps, dl)

    @property
    def remaining(self) -> PrivacyBudget:
        s = self.spent
        return _unchecked(max(self.total.epsilon - s.epsilon, 0.0), max(self.total.delta - s.delta, 0.0))

    def check(self, cost: PrivacyBudget) -> None:
        """Raise :class:`~fdp_ppl.errors.BudgetExceededError` if ``cost`` does not fit."""
        after = self.spent + cost
        if not after.fits_in(self.total):
            r = self.remaining
            raise BudgetExceededError(
                f"release needs epsilon={cost.epsilon:g}, delta={cost.delta:g} but only epsilon={r.epsilon:g}, "
                f"delta={r.delta:g} remain of the total (epsilon={self.total.epsilon:g}, delta={self.total.delta:g}); "
                "lower the number of draws or epsilon, or start a new ledger only for new data")

    def spend(self, cost: PrivacyBudget, label: str = "") -> None:
        """Record ``cost`` after :meth:`check`; raises BudgetExceededError if it does not fit."""
        self.check(cost)
        self.entries.append((label, cost))

    def attrs(self) -> dict:
        s, r = self.spent, self.remaining
        return {"ledger_total_epsilon": self.total.epsilon, "ledger_total_delta": self.total.delta,
                "ledger_spent_epsilon": s.epsilon, "ledger_spent_delta": s.delta,
                "ledger_remaining_epsilon": r.epsilon, "ledger_remaining_delta": r.delta}


__all__ = ["PrivacyBudget", "PrivacyLedger"]
