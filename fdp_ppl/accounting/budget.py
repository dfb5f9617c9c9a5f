"""Privacy budgets (ε, δ) with basic (sequential) composition.

Basic composition: releasing mechanisms that are (ε_i, δ_i)-DP on the same
data is (Σ ε_i, Σ δ_i)-DP (Dwork & Roth 2014, Theorem 3.16). A published
release is one draw; ``k`` draws of the same mechanism cost ``k`` times.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import check_delta, check_epsilon


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

    Examples
    --------
    Budgets add up by basic composition (Dwork & Roth 2014, Theorem 3.16):

    >>> import fdp_ppl as fp
    >>> fp.PrivacyBudget(1.0) + fp.PrivacyBudget(0.5, delta=1e-6)
    PrivacyBudget(epsilon=1.5, delta=1e-06)
    >>> three = 3 * fp.PrivacyBudget(1.0)          # three draws of a 1-DP mechanism
    >>> three, three.fits_in(fp.PrivacyBudget(2.0))
    (PrivacyBudget(epsilon=3.0, delta=0.0), False)

    See Also
    --------
    PrivacyLedger : spending against a total budget.
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


__all__ = ["PrivacyBudget"]
