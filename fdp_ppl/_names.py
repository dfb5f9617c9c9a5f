"""Names the command line lists before anything heavy is imported (kept free of numpy, xarray, PyMC)."""

#: kernel names accepted by :func:`fdp_ppl.spaces.kernel_from_name`
KERNEL_NAMES = ("matern12", "matern32", "matern52", "exponential", "gaussian", "gaussian-mirshani", "gaussian-hall")

#: default lattice size k of the Bernstein mechanism (:class:`fdp_ppl.summaries.BernsteinSpec`)
BERNSTEIN_DEFAULT_K = 20

#: forms and samplers of the ε-DP FPCA release (:class:`fdp_ppl.ExponentialMechanism`)
FPCA_FORMS = ("bingham", "gp-base")
FPCA_SAMPLERS = ("exact", "sequential", "gibbs", "nuts")

#: mechanism names of the density, kernel-machine and principal-components families, as ``fdp-ppl audit --mechanism``
#: and ``fp.audit(family=...)`` spell them (``ReleaseEntry.mechanism_names``; the mean family's are the keys of
#: :data:`fdp_ppl.releasing.registry.MECHANISMS`). The kde names are :data:`fdp_ppl.kde.options.MECHANISMS`'s
#: (a test checks they agree); the fpca names are FORM/SAMPLER.
KDE_MECHANISMS = ("gp", "sobolev", "iclp", "frl", "bernstein")
MACHINE_MECHANISMS = ("gp", "iclp")
#: default Bernstein lattice number k of a density by dimension (``fdp-ppl kde --mechanism bernstein``)
KDE_BERNSTEIN_K = {1: 20, 2: 10}
#: default grid points per axis of a density by dimension (``fdp-ppl kde``, :func:`fdp_ppl.kde.release.kde_spec`)
KDE_GRID_SIZE = {1: 200, 2: 30}
FPCA_MECHANISMS = ("gp-base/exact", "bingham/exact", "bingham/sequential", "bingham/gibbs", "gp-base/nuts",
                   "bingham/nuts")

#: neighbouring relations (docs/DESIGN.md, "What a release protects"): one unit replaced with n public, or one unit
#: added or removed with n private (membership protected; mean curves with a public lower bound on n)
REPLACE_ONE, ADD_REMOVE = "replace-one", "add-remove"
RELATIONS = (REPLACE_ONE, ADD_REMOVE)


def is_add_remove(relation) -> bool:
    """Whether a neighbouring relation in words is add/remove (unbounded DP: a unit added or removed)."""
    text = str(relation).strip().lower()
    if text.startswith("replace"):  # "replace one subject_id (... padded)": replace-one in words
        return False
    return any(word in text for word in ("add", "remov", "unbounded", "insert", "delet"))


def canonical_relation(relation) -> str | None:
    """``"replace-one"`` or ``"add-remove"`` for a relation as a user spells it (``"add/remove"``,
    ``"unbounded"``...); None for anything else."""
    if not isinstance(relation, str):
        return None
    if relation.strip().lower() == REPLACE_ONE:
        return REPLACE_ONE
    return ADD_REMOVE if is_add_remove(relation) else None
