"""Privacy accounting: budgets, privacy events, a composition ledger (basic and tight), calibration constants."""

from .budget import PrivacyBudget
from .events import PrivacyEvent, basic_total, tight_epsilon
from .ledger import FileLedger, PrivacyLedger
from .calibration import CALIBRATIONS, analytic_sigma, classical_sigma, gaussian_delta, gaussian_sigma

__all__ = ["PrivacyBudget", "PrivacyLedger", "gaussian_delta", "classical_sigma", "analytic_sigma",
           "gaussian_sigma", "CALIBRATIONS", "FileLedger", "PrivacyEvent", "basic_total", "tight_epsilon"]
