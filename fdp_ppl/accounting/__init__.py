"""Privacy accounting: budgets, a composition ledger, calibration constants."""

from .budget import PrivacyBudget
from .ledger import FileLedger, PrivacyLedger
from .calibration import CALIBRATIONS, analytic_sigma, classical_sigma, gaussian_delta, gaussian_sigma

__all__ = ["PrivacyBudget", "PrivacyLedger", "gaussian_delta", "classical_sigma", "analytic_sigma",
           "gaussian_sigma", "CALIBRATIONS", "FileLedger"]
