"""The exponential mechanism of ε-DP functional PCA as a mechanism object (Awan, Kenney, Reimherr & Slavković 2019).

``fp.release(FPCASpec(...).fit(curves), ExponentialMechanism(sampler="exact"))`` releases principal
components the way ``fp.release(summary, ICLP(epsilon))`` releases a mean curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._names import FPCA_SAMPLERS
from ..errors import InputError
from .fpca_plan import DEFAULT_ETA, DEFAULT_MAX_PROPOSALS


@dataclass(frozen=True)
class ExponentialMechanism:
    """The exponential mechanism that releases an :class:`~fdp_ppl.fpca.FPCAFit` (its sampler and plan).

    **ε lives in the spec, not here.** :class:`~fdp_ppl.fpca.FPCASpec` keeps ``epsilon``
    because it defines the target density ``exp(ε u(V; D)/(2Δ))`` itself (paper Prop. 3.1,
    Thm 4.1), and with it the public density floor, acceptance bound and proposal budget
    that the fit and :func:`~fdp_ppl.fpca.fpca_plan.release_plan` compute. A second ε here
    could disagree with the spec's, so this object carries none: it has no ``epsilon``
    attribute and refuses an ``epsilon`` argument. The ε charged is the spec's (or the
    guarantee the plan derives from it: ε'' for the pure plan, (ε', δ') with ``delta``).

    Parameters
    ----------
    sampler : {"exact", "sequential", "gibbs", "nuts"}
        ``"exact"``: rejection sampling (ACG for the Bingham form with k = 1, the GP base
        measure for the GP-base form, any k); ``"sequential"``: the certified k > 1 path of the
        Bingham form — k exact vector-Bingham steps on nested orthogonal complements, ε_i each
        (a different mechanism from the joint matrix Bingham, pure Σ ε''_i-DP by composition;
        :mod:`fdp_ppl.fpca.sequential`); ``"gibbs"``: column-wise Gibbs scans (Bingham
        form; uncertified MCMC for k > 1); ``"nuts"``: PyMC's NUTS (uncertified MCMC).
    iterations : int
        Gibbs scans or NUTS tuning steps per chain (ignored by ``"exact"``); a public floor
        applies (:func:`~fdp_ppl.fpca.fpca_plan.iteration_floor`).
    max_proposals : int
        Largest number of proposals a release may run; more is refused before any charge.
    delta : float or None
        None (default): the pure ε''-DP plan. A number in (0, 1): the (ε', δ') plan with each
        frame's fallback probability ≤ δ.
    eta : float
        η of the pure plan (fallback probability ≤ η × density floor), in (0, 1).
    split : sequence of float or None
        ``"sequential"`` only: public fractions of ε per component (k positive numbers summing
        to 1); None (default): ε/k each.
    diagnostics : bool
        Record R̂/ESS of the chains (Gibbs, NUTS). Computed on the confidential data and not
        covered by ε: for a release that stays with the data holder.

    Raises
    ------
    InputError
        An unknown sampler, ``delta`` or ``eta`` outside (0, 1), ``iterations`` < 0 or
        ``max_proposals`` < 1, or an ``epsilon`` argument (ε is ``FPCASpec(epsilon=...)``).
        The plan's own refusals (a sampler that does not serve the form, iterations below the
        floor, too many proposals) come from :func:`fdp_ppl.release`, before any charge.

    Examples
    --------
    ε is the FPCA spec's; the mechanism chooses how to sample the target density:

    >>> import fdp_ppl as fp
    >>> spec = fp.fpca.FPCASpec(grid=fp.Grid.uniform(50), m=10, k=1, epsilon=1.0, tau=1.0)
    >>> spec.sensitivity, spec.scale                     # Δ and ε/(2Δ) of exp(ε u(V; D)/(2Δ))
    (1.0, 0.5)
    >>> mechanism = fp.ExponentialMechanism(sampler="exact")
    >>> mechanism.family, mechanism.delta                # delta=None: the pure ε-DP plan
    ('expmech-fpca', None)
    >>> fp.ExponentialMechanism(epsilon=1.0)
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: ExponentialMechanism takes no epsilon: ...; pass epsilon to FPCASpec(..., epsilon=...)

    See Also
    --------
    fdp_ppl.fpca.FPCASpec : the public spec (ε, τ, m, k, basis).
    """

    sampler: str = "exact"
    iterations: int = 200
    max_proposals: int = DEFAULT_MAX_PROPOSALS
    delta: float | None = None
    eta: float = DEFAULT_ETA
    diagnostics: bool = False
    split: tuple | None = None

    #: attrs["mechanism"] of its releases start with this
    family = "expmech-fpca"

    def __init__(self, sampler: str = "exact", *, iterations: int = 200, max_proposals: int = DEFAULT_MAX_PROPOSALS,
                 delta: float | None = None, eta: float = DEFAULT_ETA, diagnostics: bool = False, split=None,
                 **unknown):
        if "epsilon" in unknown:
            raise InputError("ExponentialMechanism takes no epsilon: the FPCA spec's epsilon defines the target "
                             "density", "pass epsilon to FPCASpec(..., epsilon=...)")
        if unknown:
            raise InputError(f"ExponentialMechanism takes no argument {sorted(unknown)}",
                             "its options are sampler, iterations, max_proposals, delta, eta, diagnostics, split")
        if sampler not in FPCA_SAMPLERS:
            raise InputError(f"unknown sampler {sampler!r}", f"choose one of {FPCA_SAMPLERS}")
        if delta is not None and not 0.0 < float(delta) < 1.0:
            raise InputError(f"delta must be in (0, 1) or None, got {delta!r}", "e.g. delta=1e-10, or None (pure)")
        if not 0.0 < float(eta) < 1.0:
            raise InputError(f"eta must be in (0, 1), got {eta!r}", "e.g. eta=1e-10 (the default)")
        if split is not None:
            if sampler != "sequential":
                raise InputError("split applies to the sequential sampler only",
                                 "drop split, or pass sampler='sequential'")
            split = tuple(float(w) for w in np.atleast_1d(np.asarray(split, dtype=float)))
            if not all(np.isfinite(w) and w > 0 for w in split) or abs(sum(split) - 1.0) > 1e-9:
                raise InputError(f"split must hold positive fractions of epsilon summing to 1, got {list(split)}",
                                 "e.g. split=(0.5, 0.5), or none (epsilon/k each)")
        if int(iterations) < 0 or int(max_proposals) < 1:
            raise InputError("iterations must be >= 0 and max_proposals >= 1", "e.g. iterations=200")
        for name, value in (("sampler", sampler), ("iterations", int(iterations)),
                            ("max_proposals", int(max_proposals)), ("delta", None if delta is None else float(delta)),
                            ("eta", float(eta)), ("diagnostics", bool(diagnostics)), ("split", split)):
            object.__setattr__(self, name, value)


__all__ = ["ExponentialMechanism"]
