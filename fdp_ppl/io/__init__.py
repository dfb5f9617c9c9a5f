"""Data in: curve containers and files (:mod:`.containers`), the privacy unit (:mod:`.units`), the public rule for
missing values (:mod:`.missing`), and records read out of core from Zarr / NetCDF stores on dask (:mod:`.stores` for
curves, :mod:`.records` for KDE and FPCA records).

Imports only the package's foundation (errors, dims, settings); every later stage reads its data through here.
"""
