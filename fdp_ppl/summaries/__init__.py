"""Non-private summaries that are safe to privatise, each with its sensitivity."""

from .bernstein import BernsteinSummary, bernstein_design, bernstein_mean
from .tuning import cv_grid, cv_score, noise_energy
from .base import NEIGHBOURING, NORMS, LinearSummary, Sensitivity
from .curves import DataDerived, as_curves, check_finite, clip_curves, clipped_mean, data_tau, l2_norms
from .mean import PSS, ar_j_star, frl_mean, iclp_ar_mean, iclp_qr_mean, kernel_beta, pss, rkhs_mean, sample_mean

__all__ = ["cv_grid", "cv_score", "noise_energy", "BernsteinSummary", "bernstein_design", "bernstein_mean", "DataDerived", "data_tau", "Sensitivity", "LinearSummary", "NORMS", "NEIGHBOURING", "as_curves", "check_finite", "clip_curves",
           "clipped_mean", "l2_norms", "PSS", "pss", "kernel_beta", "frl_mean", "iclp_qr_mean", "iclp_ar_mean",
           "rkhs_mean", "sample_mean", "ar_j_star"]
