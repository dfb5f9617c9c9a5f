"""Release: the public plan of a release (:mod:`.plans`, :func:`fdp_ppl.plan`), drawing it (:mod:`.draw`,
:func:`fdp_ppl.release`: one protocol for every family), the schema of every released file
(:mod:`.schema`) and the registry that names mechanisms, summaries, laws and each family's release function
(:mod:`.registry`).

May import noise, summaries, spaces, accounting and data in; the families (KDE, kernel machines, FPCA) are reached
through the registry by name, never imported here.
"""


def __getattr__(name):  # PEP 562: ``fdp_ppl.releasing.release`` without loading PyMC on ``import fdp_ppl.releasing``
    if name == "release":
        from . import draw

        return getattr(draw, name)
    if name in ("plan", "ReleasePlan"):
        from . import plans

        return getattr(plans, name)
    raise AttributeError(f"module 'fdp_ppl.releasing' has no attribute {name!r}")
