"""Example data: real functional datasets and the papers' simulation designs.

* :func:`load_dataset` — Berkeley growth and Canadian weather (embedded, from
  ``fdars``), DTI and Adelaide electricity demand (NetCDF files in a data
  directory, see :func:`data_directory`), or any NetCDF file; returns an
  ``xr.DataArray`` with dims ``("curve", "t")`` on the original grid.
* :func:`iclp_mean_function`, :func:`simulate_iclp` — Lin & Reimherr (2026),
  Section 6.1 and Appendix D.
* :func:`simulate_mirshani` — Mirshani, Reimherr & Slavković (2019), Section 5.
"""

from .loaders import DATASETS, ENV_VAR, data_directory, load_dataset
from .references import CDC2000_MEDIAN_HEIGHT_CM, GROWTH_DEVIATION_TAU, growth_reference
from .simulations import (DEFAULT_ERROR_KERNEL, ICLP_DESIGNS, ICLP_KERNEL, iclp_mean_function, simulate_iclp,
                          simulate_mirshani)

__all__ = ["growth_reference", "CDC2000_MEDIAN_HEIGHT_CM", "GROWTH_DEVIATION_TAU", "load_dataset", "data_directory", "DATASETS", "ENV_VAR", "iclp_mean_function", "simulate_iclp",
           "simulate_mirshani", "ICLP_DESIGNS", "ICLP_KERNEL", "DEFAULT_ERROR_KERNEL"]
