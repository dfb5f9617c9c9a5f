"""Non-private summaries that are safe to privatise: public specs (sensitivity,
shrinkage, attrs, no data) and their fits.

The flow is ``curves → spec → spec.fit(curves) → mechanism → release``:
:class:`ICLPQRSpec`, :class:`RKHSSpec`, :class:`ICLPARSpec`, :class:`FRLSpec`,
:class:`SampleMeanSpec`, :class:`BernsteinSpec`; the ``*_mean`` functions
build a spec with n = the number of records and fit it.

Examples
--------
>>> import fdp_ppl as fp
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
>>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)        # public: no data
>>> round(spec.sensitivity().value, 4), spec.sensitivity().norm
(0.1376, '1,C')
>>> fp.summaries.ridge_shrinkage([1.0, 0.01], eta=1.5, psi=0.01).round(4)   # λ^η/(λ^η + ψ)
array([0.9901, 0.0909])
"""

from .base import (NEIGHBOURING, NORMS, DataDerived, DataHolderReport, LinearSummary, Sensitivity, SummarySpec,
                   as_spec, curve_labels)
from .bernstein import BernsteinSpec, BernsteinSummary, bernstein_design, bernstein_mean
from .curves import as_curves, check_finite, clip_curves, clipped_mean, curves_and_grid, data_tau, l2_norms
from .mean import (PSS, EigenSpec, FRLSpec, ICLPARSpec, ICLPQRSpec, RidgeSpec, RKHSSpec, SampleMeanSpec, ar_j_star,
                   ar_thresholds, frl_mean, iclp_ar_mean, iclp_qr_mean, kernel_beta, pss, ridge_shrinkage, rkhs_mean,
                   sample_mean)
from .tuning import cv_grid, cv_score, noise_energy

__all__ = ["SummarySpec", "EigenSpec", "SampleMeanSpec", "FRLSpec", "RidgeSpec", "ICLPQRSpec", "RKHSSpec",
           "ICLPARSpec", "BernsteinSpec", "LinearSummary", "DataHolderReport", "as_spec", "BernsteinSummary",
           "bernstein_design", "bernstein_mean", "DataDerived", "data_tau", "Sensitivity", "NORMS", "NEIGHBOURING",
           "as_curves", "curves_and_grid", "check_finite", "clip_curves", "clipped_mean", "l2_norms", "PSS", "pss",
           "kernel_beta", "ridge_shrinkage", "ar_thresholds", "frl_mean", "iclp_qr_mean", "iclp_ar_mean",
           "rkhs_mean", "sample_mean", "ar_j_star", "cv_score", "cv_grid", "noise_energy", "curve_labels"]
