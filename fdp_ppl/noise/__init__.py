"""Noise: the laws (:mod:`.laws`: Laplace, Normal, elliptical), the mechanisms that calibrate them to a summary's
sensitivity (:mod:`.mechanisms`, :mod:`.elliptical`; the Gaussian σ(ε, δ) comes from :mod:`fdp_ppl.accounting`), and
the samplers that draw them (:mod:`.sampling`: the compiled PyMC sampler; :mod:`.opendp`: OpenDP's floating-point-safe
samplers).

May import function spaces, summaries and accounting; never the release, the families, inference or the CLI.

Examples
--------
>>> import fdp_ppl as fp
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
>>> cal = fp.ICLP(epsilon=1.0).calibrate(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100))
>>> law = fp.laws.Laplace()
>>> law.name, round(float(law.variance(cal.scale)[0]), 5)           # Var = 2 b_1²
('laplace', 0.00832)
"""
