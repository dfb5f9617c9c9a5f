"""fdp_ppl: differential privacy for functional data, as PyMC generative models.

Quick start::

    import fdp_ppl as fp
    curves = fp.datasets.load_dataset("growth")          # xr.DataArray (curve, t)
    grid = fp.Grid.from_points(curves["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    summary = fp.iclp_qr_mean(curves, basis, tau=200.0)
    tree = fp.release(summary, fp.ICLP(epsilon=1.0), random_seed=1)
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fdp-ppl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0"

from . import datasets, dims, elliptical, inference
from .accounting import PrivacyBudget, PrivacyLedger, analytic_sigma, classical_sigma, gaussian_delta
from .errors import BudgetExceededError, CompatibilityError, PrivacyLeakWarning
from .mechanisms import FRL, ICLP, Bernstein, GaussianMechanism, Mechanism
from .inference import infer
from .release import release
from .spaces import Eigenbasis, Exponential, Gaussian, Grid, Matern, eigenbasis, kernel_from_name
from .summaries import (LinearSummary, bernstein_mean, Sensitivity, data_tau, frl_mean, iclp_ar_mean, iclp_qr_mean, pss,
                        rkhs_mean, sample_mean)

__all__ = [
    "__version__", "datasets", "dims", "elliptical", "inference", "infer", "Grid", "Matern", "Exponential", "Gaussian", "kernel_from_name", "Eigenbasis",
    "eigenbasis", "LinearSummary", "Sensitivity", "frl_mean", "iclp_qr_mean", "iclp_ar_mean", "rkhs_mean",
    "sample_mean", "pss", "data_tau", "ICLP", "FRL", "Bernstein", "bernstein_mean", "GaussianMechanism", "Mechanism", "PrivacyBudget",
    "PrivacyLedger", "gaussian_delta", "classical_sigma", "analytic_sigma", "release", "BudgetExceededError",
    "CompatibilityError", "PrivacyLeakWarning",
]
