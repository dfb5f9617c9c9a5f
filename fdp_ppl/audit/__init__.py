"""Empirical privacy audit: a statistical lower bound on a mechanism's effective ε.

``fdp_ppl.audit(...)`` (this module is callable: ``fdp_ppl.audit(name)`` is
:func:`fdp_ppl.audit.audit`) and ``fdp-ppl audit``. For a registered mechanism
(or your own release function) and a public spec, the audit searches
replace-one neighbouring datasets built from public structure, draws many
releases from each side, and reports a Clopper–Pearson lower bound on ε next
to the claimed ε. A bound above the claim refutes the claim; a bound below it
proves nothing. Synthetic data only: no budget is spent. See ``docs/audit.md``.

* :func:`audit` — the audit (returns an ``xarray.Dataset``).
* :mod:`fdp_ppl.audit.stats` — Clopper–Pearson bounds, ε lower bounds, statistics and event selection.
* :mod:`fdp_ppl.audit.targets` — default specs and neighbouring pairs per family.

Sources: Bichsel et al. (2021), DP-Sniper; Clopper & Pearson (1934); Google DP-Auditorium.
"""

from __future__ import annotations

import sys
import types

from .core import DEFAULT_SAMPLES, EVENT_KINDS, VERDICT_OK, VERDICT_VIOLATION, audit
from .stats import cp_lower, cp_upper, epsilon_lower_bound
from .targets import DEFAULT_SPECS, FAMILIES, Pair, fpca_issue_design, frame_features, mechanisms_of


class _CallableModule(types.ModuleType):
    """``fdp_ppl.audit`` is both this package and the function: ``fdp_ppl.audit(...)`` calls :func:`audit`
    whichever of the two the attribute holds (the import system sets the package attribute)."""

    def __call__(self, *args, **kwargs):
        return audit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["audit", "Pair", "FAMILIES", "DEFAULT_SPECS", "DEFAULT_SAMPLES", "EVENT_KINDS", "VERDICT_OK",
           "VERDICT_VIOLATION", "cp_lower", "cp_upper", "epsilon_lower_bound", "fpca_issue_design",
           "frame_features", "mechanisms_of"]
