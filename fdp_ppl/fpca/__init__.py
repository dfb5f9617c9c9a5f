"""The exponential mechanism with a base measure, and ε-DP functional PCA (Awan, Kenney, Reimherr &
Slavković 2019).

* :mod:`.general` — Prop. 3.1 as a PyMC model (``pm.Potential``), Example 3.5 and its CLT (Thms 3.2–3.3).
* :mod:`.samplers` — exact vector Bingham (Kent et al. 2018), column-wise Gibbs (Hoff 2009), exact
  rejection from the GP base (Thm 4.1).
* :mod:`.sequential` — the sequential exponential mechanism for k > 1 (exact, pure ε by composition): its
  sampler, its law (:func:`sequential_logpdf`) and its per-step plan.
* :mod:`.fpca` — public :class:`FPCASpec`, data-holder :class:`FPCAFit` and the Section 6 utility measures;
  :mod:`.fpca_plan` — the public proposal budget, guarantee and cost of a release, decided before the charge;
  :mod:`.release` — the release (``fp.release(fit, ExponentialMechanism(...))``, :mod:`.mechanism`);
  :mod:`.fpca_nuts` — the PyMC model and parametrisation NUTS samples.

Examples
--------
>>> import fdp_ppl as fp
>>> spec = fp.fpca.FPCASpec(grid=fp.Grid.uniform(50), m=10, k=1, epsilon=1.0, tau=1.0)
>>> spec.sensitivity, spec.attrs()["basis"], spec.sigma_rule   # Δ = 1 after scaling by τ
(1.0, 'fourier', '1 * diag(i^-3), i = 1..10')
"""

from .fpca import FORMS, SAMPLERS, FPCAFit, FPCASpec, fourier_basis, subspace_distance, variance_ratio
from .fpca_nuts import fpca_pymc_model, nuts_parametrisation
from .general import (GaussianProcessBase, UniformBase, exponential_mechanism_model, penalised_mean_clt_covariance,
                      penalised_mean_draws, penalised_mean_estimate, penalised_mean_gaussian,
                      penalised_mean_model)
from .mechanism import ExponentialMechanism
from .samplers import (SamplerBudgetError, gibbs_matrix_bingham, random_frame, rejection_from_gp_base,
                       sample_vector_bingham)
from .sequential import sample_sequential_bingham, sequential_logpdf

__all__ = ["FPCASpec", "FPCAFit", "ExponentialMechanism", "fpca_pymc_model", "nuts_parametrisation", "fourier_basis", "variance_ratio",
           "subspace_distance", "FORMS", "SAMPLERS", "GaussianProcessBase", "UniformBase",
           "exponential_mechanism_model", "penalised_mean_model",
           "penalised_mean_gaussian", "penalised_mean_estimate", "penalised_mean_draws", "penalised_mean_clt_covariance",
           "sample_vector_bingham", "gibbs_matrix_bingham", "rejection_from_gp_base", "random_frame",
           "SamplerBudgetError", "sample_sequential_bingham", "sequential_logpdf"]
