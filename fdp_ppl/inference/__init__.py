"""Noise-aware Bayesian inference from private releases (post-processing: no privacy cost)."""

from .bands import CI_KINDS, compare, credible_band, functionals, summarize_functionals
from .bingham import bingham_log_constant
from .components import ComponentsPrior, infer_components
from .density import DensityPrior, density_bands, density_functionals, infer_density
from .infer import InferenceMethodWarning, InferenceWarning, build_model, diagnostics, infer, normal_laplace_logp
from .machine import (decision_band, describe_machine_inference, infer_machine, machine_posterior,
                      positive_probability, sign_agreement)
from .priors import CustomPrior, GPPrior, ICLPPrior

__all__ = ["infer", "build_model", "diagnostics", "normal_laplace_logp", "InferenceWarning", "InferenceMethodWarning",
           "GPPrior", "ICLPPrior", "CustomPrior", "credible_band", "functionals", "summarize_functionals", "compare",
           "CI_KINDS", "infer_density", "density_bands", "density_functionals", "DensityPrior", "infer_machine",
           "machine_posterior", "decision_band", "sign_agreement", "positive_probability", "describe_machine_inference",
           "infer_components", "ComponentsPrior", "bingham_log_constant"]
