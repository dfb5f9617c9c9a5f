"""A shipped test kit, as ``pymc.testing`` ships ``check_logp``: call it from your own tests when you add a noise
law or a summary spec (the package's tests call it for every registered law and spec).

* :func:`check_law` (:mod:`fdp_ppl.testing.laws`): a :class:`~fdp_ppl.noise.laws.NoiseLaw`'s log-density
  (against scipy, PyTensor and ``pm.logp``), its draws and variance, its privacy loss and the ε it states.
* :func:`check_spec_sensitivity` (:mod:`fdp_ppl.testing.sensitivity`): brute-force neighbouring datasets
  against a :class:`~fdp_ppl.summaries.SummarySpec`'s claimed sensitivity Δ.
* :func:`check_family` (:mod:`fdp_ppl.testing.family`): a release family follows its public plan
  (:func:`fdp_ppl.plan` without data equals the fit's; the ledger is charged ``plan.cost`` with ``plan.event``;
  the release records ``plan.attrs``; the output has the planned dims; the file reads back the same).

Each check raises ``AssertionError`` with a one-line message when a property fails, and returns a small
report otherwise. The kit sits at the top of the import stages (beside the command line): it may import any
stage, and nothing in the library imports it.

Examples
--------
>>> import fdp_ppl as fp
>>> from fdp_ppl.testing import check_family
>>> curves = fp.datasets.load_dataset("growth")
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
>>> plan, tree = check_family(fp.iclp_qr_mean(curves, basis, tau=200.0), fp.ICLP(1.0), draws=1)
>>> plan.family, tree.attrs["budget_spent_epsilon"] == plan.cost.epsilon
('mean', True)
"""

from .laws import LawReport, check_law, reference_logp, stated_epsilon
from .family import check_family
from .sensitivity import SensitivityReport, check_spec_sensitivity

__all__ = ["check_law", "LawReport", "reference_logp", "stated_epsilon", "check_spec_sensitivity",
           "SensitivityReport", "check_family"]
