"""The Bingham normalising constant (k = 1) as a PyTensor Op with its gradient, for the ε-DP FPCA likelihood of
:mod:`fdp_ppl.inference.components`: the differentiable twin of the numeric normaliser
:mod:`fdp_ppl.fpca.bingham` (one implementation, in the stage of the law's sampler, so the sequential mechanism's
law and inference compute the same number; re-exported here).

``log C(A) = log E_U[exp(xᵀAx)] = log ₁F₁(½; m/2; A)`` and its gradient ``E[x xᵀ]`` are
:func:`~fdp_ppl.fpca.bingham.bingham_log_constant` (exact series, or the Kume–Wood saddlepoint beyond
:data:`~fdp_ppl.fpca.bingham.SERIES_MAX_SPREAD`); :func:`bingham_log_constant_op` evaluates both in one call.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..fpca.bingham import (METHODS, SERIES_MAX_SPREAD, TAIL_NATS, bingham_constant_check, bingham_log_constant,
                            bingham_log_normaliser)


# ---------------------------------------------------------------------------- PyTensor Op
def _log_constant_op():
    """The Op class, built on first use (PyTensor is imported lazily)."""
    global _OP_CLASS
    if _OP_CLASS is not None:
        return _OP_CLASS
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class BinghamLogConstant(Op):
        """``log C(A)`` of :func:`bingham_log_constant` (k = 1) as a PyTensor Op; second output ``E[x xᵀ]``, the
        gradient, so one evaluation serves the value and the gradient (NUTS)."""

        __props__ = ("method",)

        def __init__(self, method: str = "series"):
            if method not in ("series", "saddlepoint"):
                raise InputError(f"the log-constant Op takes method 'series' or 'saddlepoint', got {method!r}",
                                 "pick one for the whole run (a switch inside a sampler would make logp jump)")
            self.method = method

        def make_node(self, A):
            A = pt.as_tensor_variable(A)
            return Apply(self, [A], [pt.dscalar(), pt.dmatrix()])

        def perform(self, node, inputs, outputs):
            A = inputs[0]
            if not np.all(np.isfinite(A)):
                # a sampler's leapfrog step can reach a non-finite parameter (e.g. a failed Cholesky upstream): a
                # NaN log-density there, which NUTS counts as a divergence, instead of an exception ending the run
                outputs[0][0] = np.asarray(np.nan)
                outputs[1][0] = np.full(A.shape, np.nan)
                return
            logc, ex = bingham_log_constant(A, self.method, grad=True)
            outputs[0][0] = np.asarray(logc, dtype=float)
            outputs[1][0] = np.asarray(ex, dtype=float)

        def pullback(self, inputs, outputs, cotangents):
            return [cotangents[0] * outputs[1]]  # d log C / dA = E[x xᵀ], the second output

    _OP_CLASS = BinghamLogConstant
    return _OP_CLASS


_OP_CLASS = None


def bingham_log_constant_op(method: str = "series"):
    """A PyTensor Op computing ``log C(A)`` (output 0) and its gradient ``E[x xᵀ]`` (output 1) for a symmetric
    (m, m) matrix A; differentiable once (enough for NUTS). ``method``: ``"series"`` (exact) or ``"saddlepoint"``."""
    return _log_constant_op()(method)


__all__ = ["bingham_log_constant", "bingham_log_constant_op", "bingham_constant_check", "bingham_log_normaliser",
           "METHODS", "SERIES_MAX_SPREAD", "TAIL_NATS"]
