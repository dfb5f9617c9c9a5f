"""Array namespaces so that a formula is written once for numpy and PyTensor.

``xp = backend("np")`` or ``backend("pt")`` exposes the handful of functions
the log-densities need (``log``, ``log1p``, ``expm1``, ``sqrt``, ``exp``, ``abs``,
``minimum``, ``maximum``, ``where``, ``logaddexp``, ``sum``, ``erfcx``,
``kve``). PyTensor is imported only when its namespace is asked for.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy import special

NP = SimpleNamespace(name="np", log=np.log, log1p=np.log1p, expm1=np.expm1, sqrt=np.sqrt, exp=np.exp, abs=np.abs,
                     minimum=np.minimum, maximum=np.maximum, where=np.where, logaddexp=np.logaddexp, sum=np.sum,
                     erfcx=special.erfcx, kve=special.kve)

_PT = None


def backend(name: str = "np") -> SimpleNamespace:
    """The numpy (``"np"``) or PyTensor (``"pt"``) namespace."""
    global _PT
    if name == "np":
        return NP
    if name != "pt":
        raise ValueError(f"unknown backend {name!r}; use 'np' or 'pt'")
    if _PT is None:
        import pytensor.tensor as pt

        _PT = SimpleNamespace(name="pt", log=pt.log, log1p=pt.log1p, expm1=pt.expm1, sqrt=pt.sqrt, exp=pt.exp, abs=pt.abs,
                              minimum=pt.minimum, maximum=pt.maximum, where=pt.switch, logaddexp=pt.logaddexp,
                              sum=pt.sum, erfcx=pt.erfcx, kve=pt.kve)
    return _PT


def log_erfcx(z, xp=NP):
    """``log erfcx(z)``, stable for negative ``z`` (where ``erfcx`` overflows):
    ``z² + log(2 − e^{−z²} erfcx(−z))`` for ``z < 0``."""
    zn = xp.minimum(z, 0.0)
    zp = xp.maximum(z, 0.0)
    neg = zn**2 + xp.log(2.0 - xp.exp(-(zn**2)) * xp.erfcx(-zn))
    pos = xp.log(xp.erfcx(zp))
    return xp.where(z < 0, neg, pos)


__all__ = ["backend", "NP", "log_erfcx"]
