"""Release: drawing a release (:mod:`.draw`, :func:`fdp_ppl.release`), the schema of every released file
(:mod:`.schema`) and the registry that names mechanisms, summaries, laws and each family's release function
(:mod:`.registry`).

May import noise, summaries, spaces, accounting and data in; the families (KDE, kernel machines, FPCA) are reached
through the registry by name, never imported here.
"""


def __getattr__(name):  # PEP 562: ``fdp_ppl.releasing.release`` without loading PyMC on ``import fdp_ppl.releasing``
    if name in ("release", "check_public_sizes"):
        from . import draw

        return getattr(draw, name)
    raise AttributeError(f"module 'fdp_ppl.releasing' has no attribute {name!r}")
