"""Noise-aware Bayesian inference from private releases (post-processing: no privacy cost).

Examples
--------
Inference reads only the release: its noise law, noise scales and public basis.

>>> import fdp_ppl as fp
>>> curves = fp.datasets.load_dataset("growth")
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
>>> tree = fp.release(fp.iclp_qr_mean(curves, basis, tau=200.0), fp.ICLP(epsilon=1.0))
>>> tree.attrs["noise_law"], tree["constant_data"]["noise_scale"].shape
('laplace', (31,))

The posterior draws are random, so they are not printed here:

>>> posterior = fp.infer(tree, prior="iclp")                   # doctest: +SKIP
>>> posterior.posterior["curve"].dims                          # doctest: +SKIP
('chain', 'draw', 't')
"""

from .bands import CI_KINDS, compare, credible_band, functionals, summarize_functionals
from .bingham import bingham_log_constant
from .comparison import loo, release_identity
from .components import ComponentsPrior, infer_components
from .density import DensityPrior, density_bands, density_functionals, infer_density
from .infer import InferenceMethodWarning, InferenceWarning, build_model, diagnostics, infer, normal_laplace_logp
from .machine import (decision_band, describe_machine_inference, infer_machine, machine_posterior,
                      positive_probability, sign_agreement)
from .population import PopulationClippingWarning, observe, population_result
from .priors import CustomPrior, GPPrior, ICLPPrior

__all__ = ["infer", "build_model", "diagnostics", "normal_laplace_logp", "InferenceWarning", "InferenceMethodWarning",
           "GPPrior", "ICLPPrior", "CustomPrior", "credible_band", "functionals", "summarize_functionals", "compare",
           "CI_KINDS", "infer_density", "density_bands", "density_functionals", "DensityPrior", "infer_machine",
           "machine_posterior", "decision_band", "sign_agreement", "positive_probability", "describe_machine_inference",
           "infer_components", "ComponentsPrior", "bingham_log_constant", "loo", "release_identity", "observe",
           "population_result", "PopulationClippingWarning"]
