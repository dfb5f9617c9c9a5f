"""Privacy mechanisms as noise laws on eigen-coefficients (PyMC model fragments).

Examples
--------
>>> import fdp_ppl as fp
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
>>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
>>> for eps in (0.5, 1.0, 2.0):                                      # Laplace scale b_1 = Δ √λ_1 / ε
...     print(eps, round(float(fp.mechanisms.ICLP(epsilon=eps).calibrate(spec).scale[0]), 4))
0.5 0.129
1.0 0.0645
2.0 0.0322
"""

from ...settings import compile_mode
from .base import Calibration, Mechanism
from .gaussian import GaussianMechanism
from .laplace import FRL, ICLP, Bernstein

__all__ = ["Mechanism", "Calibration", "ICLP", "FRL", "GaussianMechanism", "Bernstein", "compile_mode"]
