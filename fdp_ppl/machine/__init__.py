"""Private kernel machines (regularised ERM in an RKHS) and online release of a GP path.

Hall, Rinaldo & Wasserman (2013), §4.3 and §5; Lin & Reimherr (2026), §4.3, Theorem 18.
:class:`ERMSpec` (public) → :meth:`ERMSpec.fit` (data holder) → :func:`fdp_ppl.release`
(grid, GP or ICLP noise) or :class:`OnlineRelease` (queries one at a time, GP noise).

Examples
--------
>>> import fdp_ppl as fp
>>> spec = fp.machine.ERMSpec(fp.Gaussian(rho=0.3, convention="hall"), lam=0.1, n=200, loss="hinge",
...                       domain=[0.0, 1.0], grid_size=50)
>>> sens = spec.sensitivity()                               # RKHS norm: (1 + slack) M κ/(λ n)
>>> sens.norm, round(sens.value, 4)
('cameron-martin', 0.0505)
"""

from .gp import (
           GPPath,
           GridEigenbasis,
           InnovationPath,
           KroneckerEigenbasis,
           chol_jitter,
           gaussian_conditional,
           ou_conditional,
)
from .machine import APPROXIMATIONS, EXACT_MAX_N, ERMFit, ERMSpec, rkhs_distance
from .nystroem import NystroemMap
from .release import (
           GPGridDraws,
           OnlineRelease,
           erm_model,
           gp_calibration,
           gp_grid_draws,
           grid_basis,
           predict_labels,
)
from .solvers import LOSSES, Solution, solve_erm

__all__ = [
           "APPROXIMATIONS",
           "EXACT_MAX_N",
           "NystroemMap",
           "LOSSES",
           "ERMFit",
           "ERMSpec",
           "GPGridDraws",
           "GPPath",
           "GridEigenbasis",
           "InnovationPath",
           "KroneckerEigenbasis",
           "OnlineRelease",
           "Solution",
           "chol_jitter",
           "erm_model",
           "gaussian_conditional",
           "gp_calibration",
           "gp_grid_draws",
           "grid_basis",
           "ou_conditional",
           "predict_labels",
           "rkhs_distance",
           "solve_erm",
]
