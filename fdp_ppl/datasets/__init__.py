"""Example data: real functional datasets and the papers' simulation designs.

* :func:`load_dataset` — Berkeley growth and Canadian weather (embedded, from
  ``fdars``), DTI and Adelaide electricity demand (NetCDF files in a data
  directory, see :func:`data_directory`), or any NetCDF file; returns an
  ``xr.DataArray`` with dims ``("curve", "t")`` on the original grid.
* :func:`iclp_mean_function`, :func:`simulate_iclp` — Lin & Reimherr (2026),
  Section 6.1 and Appendix D.
* :func:`simulate_mirshani` — Mirshani, Reimherr & Slavković (2019), Section 5.

Examples
--------
>>> import fdp_ppl as fp
>>> curves = fp.datasets.load_dataset("growth")             # embedded: no download
>>> dict(curves.sizes), curves.attrs["units"], curves.attrs["t_units"]
({'curve': 93, 't': 31}, 'cm', 'years')
>>> grid = fp.Grid.from_points(curves["t"].values)          # ages 1-18 rescaled to [0, 1]
>>> grid.lower, grid.upper
(1.0, 18.0)
"""

from .references import CDC2000_MEDIAN_HEIGHT_CM, GROWTH_DEVIATION_TAU, growth_reference

#: names loaded on first use (PEP 562): the references are light, the loaders import xarray and scipy
_WHERE = {"DATASETS": "loaders", "ENV_VAR": "loaders", "data_directory": "loaders", "load_dataset": "loaders",
          "DEFAULT_ERROR_KERNEL": "simulations", "ICLP_DESIGNS": "simulations", "ICLP_KERNEL": "simulations",
          "iclp_mean_function": "simulations", "simulate_iclp": "simulations", "simulate_mirshani": "simulations"}


def __getattr__(name):
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = ["growth_reference", "CDC2000_MEDIAN_HEIGHT_CM", "GROWTH_DEVIATION_TAU", "load_dataset", "data_directory",
           "DATASETS", "ENV_VAR", "iclp_mean_function", "simulate_iclp", "simulate_mirshani", "ICLP_DESIGNS",
           "ICLP_KERNEL", "DEFAULT_ERROR_KERNEL"]
