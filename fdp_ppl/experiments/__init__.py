"""Reproductions of the papers' experiments (import the submodules directly).

Each computation submodule holds what one notebook in ``notebooks/`` computes
(``timing``: notebook 01, ``iclp_simulation``: 02, ``real_data``: 03,
``mirshani``: 04, ``coverage``: 06); the notebooks only orchestrate, tabulate
and plot. Figures drawn by the package live in ``plotting``, the only
submodule that uses matplotlib.
"""
