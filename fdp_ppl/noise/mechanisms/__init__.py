"""Privacy mechanisms as noise laws on eigen-coefficients (PyMC model fragments)."""

from ...settings import compile_mode
from .base import Calibration, Mechanism
from .gaussian import GaussianMechanism
from .laplace import FRL, ICLP, Bernstein

__all__ = ["Mechanism", "Calibration", "ICLP", "FRL", "GaussianMechanism", "Bernstein", "compile_mode"]
