"""fdp_ppl: differential privacy for functional data, as PyMC generative models.

Quick start::

    import fdp_ppl as fp
    curves = fp.datasets.load_dataset("growth")          # xr.DataArray (curve, t)
    grid = fp.Grid.from_points(curves["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    summary = fp.iclp_qr_mean(curves, basis, tau=200.0)
    tree = fp.release(summary, fp.ICLP(epsilon=1.0))       # fresh OS entropy

The flow is curves → public spec (:mod:`fdp_ppl.summaries`) → fit →
mechanism and its noise law (:mod:`fdp_ppl.mechanisms`, :mod:`fdp_ppl.laws`)
→ release (:mod:`fdp_ppl.schema`) → inference (:mod:`fdp_ppl.inference`).
"""

from ._version import __version__
from . import datasets, dims, elliptical, inference, laws, schema
from .accounting import PrivacyBudget, PrivacyLedger, analytic_sigma, classical_sigma, gaussian_delta
from .errors import (BudgetExceededError, CompatibilityError, FdpPplError, InputError, PrivacyLeakWarning,
                     SchemaError, SeededReleaseWarning)
from .mechanisms import FRL, ICLP, Bernstein, GaussianMechanism, Mechanism
from .inference import infer
from .releasing import release
from .sampling import CompiledSampler
from .spaces import Eigenbasis, Exponential, Gaussian, Grid, Matern, eigenbasis, kernel_from_name
from .summaries import (BernsteinSpec, FRLSpec, ICLPARSpec, ICLPQRSpec, LinearSummary, RKHSSpec, SampleMeanSpec,
                        Sensitivity, SummarySpec, bernstein_mean, data_tau, frl_mean, iclp_ar_mean, iclp_qr_mean, pss,
                        rkhs_mean, sample_mean)

__all__ = [
    "__version__", "datasets", "dims", "elliptical", "inference", "infer", "Grid", "Matern", "Exponential", "Gaussian", "kernel_from_name", "Eigenbasis",
    "eigenbasis", "LinearSummary", "Sensitivity", "frl_mean", "iclp_qr_mean", "iclp_ar_mean", "rkhs_mean",
    "sample_mean", "pss", "data_tau", "ICLP", "FRL", "Bernstein", "bernstein_mean", "GaussianMechanism", "Mechanism", "PrivacyBudget",
    "PrivacyLedger", "gaussian_delta", "classical_sigma", "analytic_sigma", "release", "BudgetExceededError",
    "CompatibilityError", "PrivacyLeakWarning", "FdpPplError", "InputError", "SchemaError", "SeededReleaseWarning", "laws", "schema",
    "CompiledSampler", "SummarySpec", "ICLPQRSpec", "ICLPARSpec", "FRLSpec", "RKHSSpec", "SampleMeanSpec",
    "BernsteinSpec",
]
