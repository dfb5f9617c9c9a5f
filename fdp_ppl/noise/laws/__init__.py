"""Noise laws of the mechanisms: one object owns each law's formulas (see :mod:`fdp_ppl.noise.laws.base`).

Examples
--------
>>> import numpy as np
>>> import fdp_ppl as fp
>>> scale = np.array([1.0, 2.0])
>>> fp.laws.Laplace().variance(scale), fp.laws.Normal().variance(scale)
(array([2., 8.]), array([1., 4.]))
>>> y, centre, centre_prime = np.array([-1.0, 0.0]), np.zeros(2), np.array([1.0, 0.0])
>>> float(fp.laws.Laplace().privacy_loss(y, centre, centre_prime, np.ones(2)))   # log p_D(y) − log p_D'(y)
1.0
"""

from __future__ import annotations

from typing import Any, Mapping

from ...errors import SchemaError
from .base import MIXING_VARIABLE, NoiseLaw
from .elliptical import KINDS as ELLIPTICAL_KINDS
from .elliptical import Elliptical
from .product import Laplace, Normal

def law_from_name(name: str) -> NoiseLaw:
    """The law recorded as ``attrs["noise_law"]`` (``"laplace"``, ``"normal"``,
    ``"elliptical-<kind>"``, ``"elliptical-t(nu=<ν>)"`` ...): the first law class
    whose :meth:`NoiseLaw.from_name` recognises it.

    Raises
    ------
    SchemaError
        An unknown name.
    """
    name = str(name).strip().lower()
    for cls in NoiseLaw.classes:
        law = cls.from_name(name)
        if law is not None:
            return law
    known = ", ".join(c.name for c in NoiseLaw.classes if isinstance(c.__dict__.get("name"), str))
    raise SchemaError(f"unknown noise law {name!r} in the release",
                      f"expected one of {known} or 'elliptical-<t(nu=...)|laplace|knorm|gaussian>'")


def law_from_attrs(attrs: Mapping[str, Any]) -> NoiseLaw:
    """The law of a release from its attributes (``attrs["noise_law"]``).

    Raises
    ------
    SchemaError
        No or an unknown ``noise_law`` attribute.
    """
    if "noise_law" not in attrs:
        raise SchemaError("the tree does not record its noise law (attrs['noise_law'])",
                          "pass a release written by fdp_ppl.release or `fdp-ppl release`")
    return law_from_name(attrs["noise_law"])


__all__ = ["NoiseLaw", "Laplace", "Normal", "Elliptical", "ELLIPTICAL_KINDS", "law_from_name", "law_from_attrs",
           "MIXING_VARIABLE"]
