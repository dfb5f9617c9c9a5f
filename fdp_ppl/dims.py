"""Names of the dimensions used throughout :mod:`fdp_ppl`.

Every array the package returns uses these names so results line up in
xarray and ArviZ without renaming.

Examples
--------
>>> import fdp_ppl as fp
>>> fp.dims.CURVE, fp.dims.T, fp.dims.BASIS
('curve', 't', 'basis')
>>> fp.datasets.load_dataset("growth").dims == (fp.dims.CURVE, fp.dims.T)
True
"""

CURVE = "curve"  #: index of records (one curve per record)
T = "t"  #: evaluation grid, rescaled to [0, 1]
T_AUX = "t_aux"  #: a second copy of the grid (covariance surfaces)
BASIS = "basis"  #: index j of retained eigenpairs (0-based, descending eigenvalue)
BASIS_AUX = "basis_aux"  #: a second copy of the basis index
COMPONENT = "component"  #: principal components
CHAIN = "chain"
DRAW = "draw"

__all__ = ["CURVE", "T", "T_AUX", "BASIS", "BASIS_AUX", "COMPONENT", "CHAIN", "DRAW"]
