"""Release: the public plan of a release (:mod:`.plans`, :func:`fdp_ppl.plan`), drawing it (:mod:`.draw`,
:func:`fdp_ppl.release`: one protocol for every family), the schema of every released file
(:mod:`.schema`) and the registry that names mechanisms, summaries, laws and each family's release function
(:mod:`.registry`).

May import noise, summaries, spaces, accounting and data in; the families (KDE, kernel machines, FPCA) are reached
through the registry by name, never imported here.

Examples
--------
The noise is random (fresh OS entropy); what the release records about it is public and fixed:

>>> import fdp_ppl as fp
>>> curves = fp.datasets.load_dataset("growth")
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
>>> tree = fp.release(fp.iclp_qr_mean(curves, basis, tau=200.0), fp.ICLP(epsilon=1.0))
>>> tree.attrs["mechanism"], tree.attrs["epsilon"], round(tree.attrs["sensitivity"], 4)
('iclp', 1.0, 28.8703)
>>> tree.posterior["curve"].dims, tree.posterior["curve"].shape
(('chain', 'draw', 't'), (1, 1, 31))
"""


def __getattr__(name):  # PEP 562: ``fdp_ppl.releasing.release`` without loading PyMC on ``import fdp_ppl.releasing``
    if name == "release":
        from . import draw

        return getattr(draw, name)
    if name in ("plan", "ReleasePlan"):
        from . import plans

        return getattr(plans, name)
    raise AttributeError(f"module 'fdp_ppl.releasing' has no attribute {name!r}")
