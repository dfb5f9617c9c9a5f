"""Privacy mechanisms as noise laws on eigen-coefficients (PyMC model fragments)."""

from .base import Calibration, Mechanism, compile_mode
from .gaussian import GaussianMechanism
from .laplace import FRL, ICLP, Bernstein

__all__ = ["Mechanism", "Calibration", "ICLP", "FRL", "GaussianMechanism", "Bernstein", "compile_mode"]
