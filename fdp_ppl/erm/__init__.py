"""Private kernel machines (regularised ERM in an RKHS) and online release of a GP path.

Hall, Rinaldo & Wasserman (2013), §4.3 and §5; Lin & Reimherr (2026), §4.3, Theorem 18.
:class:`ERMSpec` (public) → :meth:`ERMSpec.fit` (data holder) → :func:`release_erm`
(grid, GP or ICLP noise) or :class:`OnlineRelease` (queries one at a time, GP noise).
"""

from .gp import GPPath, chol_jitter, gaussian_conditional, ou_conditional
from .machine import ERMFit, ERMSpec, rkhs_distance
from .release import OnlineRelease, predict_labels, release_erm
from .solvers import LOSSES, Solution, solve_erm

__all__ = [
           "LOSSES",
           "ERMFit",
           "ERMSpec",
           "GPPath",
           "OnlineRelease",
           "Solution",
           "chol_jitter",
           "gaussian_conditional",
           "ou_conditional",
           "predict_labels",
           "release_erm",
           "rkhs_distance",
           "solve_erm",
]
