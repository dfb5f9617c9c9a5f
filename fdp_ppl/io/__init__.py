"""Data in: curve containers and files (:mod:`.containers`), the privacy unit (:mod:`.units`), the public rule for
missing values (:mod:`.missing`), and records read out of core from Zarr / NetCDF stores on dask (:mod:`.stores` for
curves, :mod:`.records` for KDE and FPCA records).

Imports only the package's foundation (errors, dims, settings); every later stage reads its data through here.

Examples
--------
A long table (one row per record and age) becomes curves with dims ``("curve", "t")``:

>>> import pandas as pd
>>> import fdp_ppl as fp
>>> table = pd.DataFrame({"id": [1, 1, 1, 2, 2, 2], "t": [1.0, 2.0, 3.0] * 2,
...                       "value": [75.0, 86.0, 95.0, 73.0, 85.0, 93.0]})
>>> curves = fp.io.containers.to_curves(table)
>>> curves.dims, curves.shape, curves["t"].values
(('curve', 't'), (2, 3), array([1., 2., 3.]))
"""
