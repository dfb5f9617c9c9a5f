"""Privacy accounting: budgets, privacy events, a composition ledger (basic and tight), calibration constants.

Examples
--------
>>> import fdp_ppl as fp
>>> ledger = fp.PrivacyLedger(fp.PrivacyBudget(epsilon=3.0))
>>> for label in ("mean curve, boys", "mean curve, girls"):
...     ledger.spend(fp.PrivacyBudget(epsilon=1.0), label)
>>> ledger.spent, ledger.remaining
(PrivacyBudget(epsilon=2.0, delta=0.0), PrivacyBudget(epsilon=1.0, delta=0.0))
"""

from .budget import PrivacyBudget
from .events import PrivacyEvent, basic_total, tight_epsilon
from .ledger import FileLedger, PrivacyLedger
from .curves import attacker_power, largest_advantage, privacy_in_words, privacy_profile, trade_off_curve
from .calibration import CALIBRATIONS, analytic_sigma, classical_sigma, gaussian_delta, gaussian_sigma

__all__ = ["PrivacyBudget", "PrivacyLedger", "gaussian_delta", "classical_sigma", "analytic_sigma",
           "gaussian_sigma", "CALIBRATIONS", "FileLedger", "PrivacyEvent", "basic_total", "tight_epsilon",
           "privacy_profile", "trade_off_curve", "attacker_power", "largest_advantage", "privacy_in_words"]
