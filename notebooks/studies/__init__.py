"""Reproductions of the papers' studies, used by the notebooks, tests and benchmarks (not shipped in the wheel).

A plain package next to the notebooks: ``import studies`` works with ``notebooks/`` on ``sys.path`` (the
notebooks' working directory; ``pythonpath`` in pytest's configuration; ``benchmarks/_common.py``). It imports
``fdp_ppl`` freely; nothing in ``fdp_ppl`` imports it. Import the submodules directly.

Each computation submodule holds what one notebook computes (``timing``: notebook 01, ``iclp_simulation``: 02,
``real_data``: 03, ``mirshani``: 04, ``coverage``: 06, ``fpca``: 07, ``kde`` / ``kde_iclp``: 09,
``machine_coverage``: 11); the notebooks only orchestrate, tabulate and plot. Figures drawn here live in
``plotting`` and ``kde_plots``, the only submodules that use matplotlib.
"""
