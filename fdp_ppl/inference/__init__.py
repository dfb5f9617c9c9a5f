"""Noise-aware Bayesian inference from private releases (post-processing: no privacy cost)."""

from .bands import CI_KINDS, compare, credible_band, functionals, summarize_functionals
from .components import ComponentsPrior, bingham_log_constant, infer_components
from .infer import InferenceWarning, build_model, diagnostics, infer, normal_laplace_logp
from .priors import CustomPrior, GPPrior, ICLPPrior

__all__ = ["infer", "build_model", "diagnostics", "normal_laplace_logp", "InferenceWarning", "GPPrior",
           "ICLPPrior", "CustomPrior", "credible_band", "functionals", "summarize_functionals", "compare",
           "CI_KINDS", "infer_components", "ComponentsPrior", "bingham_log_constant"]
