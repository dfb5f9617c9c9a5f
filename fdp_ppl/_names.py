"""Names the command line lists before anything heavy is imported (kept free of numpy, xarray, PyMC)."""

#: kernel names accepted by :func:`fdp_ppl.spaces.kernel_from_name`
KERNEL_NAMES = ("matern12", "matern32", "matern52", "exponential", "gaussian", "gaussian-mirshani", "gaussian-hall")

#: default lattice size k of the Bernstein mechanism (:class:`fdp_ppl.summaries.BernsteinSpec`)
BERNSTEIN_DEFAULT_K = 20

#: forms and samplers of the ε-DP FPCA release (:class:`fdp_ppl.ExponentialMechanism`)
FPCA_FORMS = ("bingham", "gp-base")
FPCA_SAMPLERS = ("exact", "sequential", "gibbs", "nuts")
