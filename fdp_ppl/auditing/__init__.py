"""Empirical privacy audit: a statistical lower bound on a mechanism's effective ε.

``fdp_ppl.audit(...)`` (the function :func:`fdp_ppl.auditing.core.audit`; this package is named ``auditing``
as :func:`fdp_ppl.release` lives in ``fdp_ppl.releasing``, so ``fdp_ppl.audit`` is the function whatever the
import order) and ``fdp-ppl audit``. For a registered mechanism (or your own release function) and a public
spec, the audit searches replace-one neighbouring datasets built from public structure, draws many releases
from each side, and reports a Clopper–Pearson lower bound on ε next to the claimed ε. A bound above the claim
refutes the claim; a bound below it proves nothing. By default it also fits the noise law from the same releases
(white-box: :mod:`fdp_ppl.auditing.whitebox`) and reports the ε that law implies with its standard error. Synthetic
data only: no budget is spent. See ``docs/audit.md``.

* :func:`audit` — the audit (returns an ``xarray.Dataset``).
* :mod:`fdp_ppl.auditing.stats` — Clopper–Pearson bounds, ε lower bounds, statistics and event selection.
* :mod:`fdp_ppl.auditing.targets` — the audited families, read from the release registry; each family's default
  spec and neighbouring pairs in its own hook module (:mod:`~fdp_ppl.auditing.mean`, :mod:`~fdp_ppl.auditing.kde`,
  :mod:`~fdp_ppl.auditing.machine`, :mod:`~fdp_ppl.auditing.fpca`) on :mod:`fdp_ppl.auditing.hooks`.
* :mod:`fdp_ppl.auditing.whitebox` — the noise law fitted from releases and the ε it implies.

Sources: Bichsel et al. (2021), DP-Sniper; Clopper & Pearson (1934); Google DP-Auditorium.

Examples
--------
The bound behind every verdict: 90 hits in 100 trials give, at 95% confidence, a success probability of at least

>>> from fdp_ppl.auditing import cp_lower
>>> round(float(cp_lower(90, 100, 0.95)), 4)
0.9371
"""

from __future__ import annotations

from .core import DEFAULT_SAMPLES, EVENT_KINDS, VERDICT_OK, VERDICT_VIOLATION, audit
from .stats import cp_lower, cp_upper, epsilon_lower_bound
from .fpca import fpca_issue_design, frame_features
from .targets import DEFAULT_SPECS, FAMILIES, Pair, mechanisms_of

__all__ = ["audit", "Pair", "FAMILIES", "DEFAULT_SPECS", "DEFAULT_SAMPLES", "EVENT_KINDS", "VERDICT_OK",
           "VERDICT_VIOLATION", "cp_lower", "cp_upper", "epsilon_lower_bound", "fpca_issue_design",
           "frame_features", "mechanisms_of"]
