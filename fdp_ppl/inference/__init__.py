"""Noise-aware Bayesian inference from private releases (post-processing: no privacy cost)."""

from .bands import CI_KINDS, compare, credible_band, functionals, summarize_functionals
from .infer import InferenceMethodWarning, InferenceWarning, build_model, diagnostics, infer, normal_laplace_logp
from .priors import CustomPrior, GPPrior, ICLPPrior

__all__ = ["infer", "build_model", "diagnostics", "normal_laplace_logp", "InferenceWarning", "InferenceMethodWarning",
           "GPPrior",
           "ICLPPrior", "CustomPrior", "credible_band", "functionals", "summarize_functionals", "compare",
           "CI_KINDS"]
