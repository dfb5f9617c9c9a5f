"""Noise: the laws (:mod:`.laws`: Laplace, Normal, elliptical), the mechanisms that calibrate them to a summary's
sensitivity (:mod:`.mechanisms`, :mod:`.elliptical`; the Gaussian σ(ε, δ) comes from :mod:`fdp_ppl.accounting`), and
the samplers that draw them (:mod:`.sampling`: the compiled PyMC sampler; :mod:`.opendp`: OpenDP's floating-point-safe
samplers).

May import function spaces, summaries and accounting; never the release, the families, inference or the CLI.
"""
