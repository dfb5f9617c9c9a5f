"""Private kernel density estimation (Hall, Rinaldo & Wasserman 2013, §4.1–4.2; Lin & Reimherr 2026, §4.3).

KDEs on a public Cartesian grid in d = 1 or 2 are public summary specs
(:class:`~fdp_ppl.summaries.SummarySpec` subclasses) released by
:func:`fdp_ppl.release` through the package's mechanisms and samplers:

* :class:`KDESpec`: Gaussian kernel, GP noise with the same Gaussian kernel (Hall §4.1);
* :class:`SobolevKDESpec`: Gaussian kernel, L¹-exponential (OU) GP noise (Hall §4.2);
* :class:`ICLPKDESpec`: estimator kernel ``K^η``, ICLP Laplace noise (Lin & Reimherr §4.3);
* FRL / Bernstein baselines in :mod:`fdp_ppl.kde.baselines`;
* bounded memory: :func:`kde_values_chunked` (exact, chunked), :func:`binned_kde_values`
  (``estimator="binned"``), :func:`check_kde_size` (refuse before the charge);
* bandwidths: :func:`bandwidth_rule` (public) and :func:`private_bandwidth` (Hall §4.1.2).

Examples
--------
The public spec of a Gaussian KDE on [0, 1] gives the Cameron–Martin sensitivity of Hall et al. (2013):

>>> import fdp_ppl as fp
>>> grid = fp.spaces.CartesianGrid.uniform((0.0, 1.0), 64)
>>> spec = fp.kde.KDESpec(grid=grid, bandwidth=0.1, n=500)
>>> sens = spec.sensitivity()                               # √2 / (n √(2π) h)
>>> sens.norm, round(sens.value, 5)
('cameron-martin', 0.01128)
>>> round(fp.GaussianMechanism(epsilon=1.0, delta=1e-5).calibrate(spec).sigma, 4)
0.0421
"""

from .accumulate import binned_kde_values, check_kde_size, kde_values_chunked
from .bandwidth import bandwidth_plan, private_bandwidth, private_quantile
from .gaussian import KDESpec, KDESummary, cameron_martin_difference, realised_delta
from .grid import CartesianGrid, ProductEigenbasis, bandwidth_rule, gaussian_kde_values  # noqa: F401 (CartesianGrid: documented in fdp_ppl.spaces)
from .iclp import ICLPKDESpec, one_c_difference
from .sobolev import SobolevKDESpec

__all__ = [
    "ICLPKDESpec",
    "KDESpec",
    "KDESummary",
    "ProductEigenbasis",
    "SobolevKDESpec",
    "bandwidth_rule",
    "binned_kde_values",
    "check_kde_size",
    "cameron_martin_difference",
    "gaussian_kde_values",
    "kde_values_chunked",
    "one_c_difference",
    "bandwidth_plan",
    "private_bandwidth",
    "private_quantile",
    "realised_delta",
]
