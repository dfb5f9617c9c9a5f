"""Reproductions of the papers' studies, used by the notebooks, tests and benchmarks (not shipped in the wheel).

A plain package next to the notebooks: ``import studies`` works with ``notebooks/`` on ``sys.path`` (the
notebooks' working directory; ``pythonpath`` in pytest's configuration; ``benchmarks/_common.py``). It imports
``fdp_ppl`` freely; nothing in ``fdp_ppl`` imports it. Import the submodules directly.

Each computation submodule holds what one notebook computes (``timing``: notebook 01; ``iclp_simulation`` and
its checks ``iclp_simulation_checks``: 02; ``real_data`` and ``real_data_diagnostics``: 03; ``mirshani``
(Section 5) and ``mirshani_dti`` (Section 6): 04; ``elliptical``: 05; ``coverage``: 06; ``fpca``: 07; ``kde``:
08; ``kde_iclp``: 09; ``machine_coverage``: 11); the notebooks only orchestrate, tabulate and plot. Figures drawn here live in
``plotting`` and ``kde_plots``, the only submodules that use matplotlib.
"""
