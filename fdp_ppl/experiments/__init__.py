"""Reproductions of the papers' experiments (import the submodules directly).

Each submodule holds the computations behind one notebook in ``notebooks/``;
the notebooks only orchestrate, tabulate and plot.
"""
