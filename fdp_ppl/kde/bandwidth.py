"""Private rule-of-thumb bandwidth (Hall, Rinaldo & Wasserman 2013, §4.1.2).

``ĥ_k = (4/((d+1) n))^{1/(d+4)} · IQR_k / 1.34`` with the paper's ``d + 1``
(``specs/gp-mechanism-hall.md`` §3.3 flags it; the usual normal-reference
constant has ``d + 2``). Each ``IQR_k`` is private: its two quartiles are
drawn by the exponential mechanism for quantiles on the public domain
(Smith 2011; utility ``−|#{x_i < q} − p n|``, sensitivity 1), each with
``ε/(2d)``, so the bandwidth costs ε by basic composition, charged to the
ledger before anything is drawn. (Hall suggests Dwork & Lei 2009; this is a
pure ε-DP substitute.)

Floating-point safety (Mironov 2012). A real (unseeded) release draws each quartile with OpenDP's
``make_private_quantile`` (:func:`fdp_ppl.noise.opendp.private_quantile`): the same exponential mechanism
restricted to the public candidate lattice ``lo + (hi − lo) i/2^10`` (1025 points), selected by report-noisy-max
with exactly sampled noise; the output is a public lattice point, reachable from every data set, and ε is
OpenDP's map (ε/(2d) per quartile, unchanged). What the lattice costs: each quartile is resolved to 1/1024 of the
domain (the IQR to 1/512); the root-mean-square error of a quartile was 0.99–1.23 times the continuous draw's
(n = 50, 200, 1000 normal records on [0, 1], ε = 0.5, 0.25, 0.1 per quartile; 1000 draws each), within the
spread of repeated 600-draw runs of the same comparison (0.86–1.24); about 1–3 ms of CPU per quartile. A seeded
study keeps Smith's continuous draw (numpy: the chosen interval by its probability, then a float64 uniform
inside it), which is **not** floating-point safe: the
uniform ``a + (b − a)·U`` (``U`` on the 2⁻⁵³ grid) reaches only some floats of ``[a, b]``, and ``a, b`` are
records, so a released quartile can rule out a neighbouring data set (``tests/kde/test_bandwidth_fp_safe.py``).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..accounting.budget import PrivacyBudget
from ..errors import InputError, SeededReleaseWarning, check_epsilon
from ..noise.opendp import QUANTILE_BITS
from ..noise.opendp import private_quantile as opendp_quantile
from ..noise.sampling import seed_sequence


def private_quantile(x, p: float, epsilon: float, domain, rng) -> float:
    """ε-DP ``p``-quantile of ``x`` clipped to the public ``domain`` (exponential mechanism, Smith 2011), drawn with
    numpy's float64 uniforms from ``rng``: the seeded-study path, **not** floating-point safe (module docstring;
    a real release uses :func:`fdp_ppl.noise.opendp.private_quantile`)."""
    lo, hi = float(domain[0]), float(domain[1])
    z = np.concatenate([[lo], np.sort(np.clip(np.asarray(x, dtype=float), lo, hi)), [hi]])
    n = z.size - 2
    widths = np.diff(z)
    with np.errstate(divide="ignore"):
        logw = np.log(widths) - 0.5 * epsilon * np.abs(np.arange(n + 1) - p * n)
    logw -= logw.max()
    prob = np.exp(logw)
    i = rng.choice(n + 1, p=prob / prob.sum())
    return float(rng.uniform(z[i], z[i + 1]))


def bandwidth_plan(epsilon: float, d: int = 1, *, seeded: bool = False):
    """The public plan of :func:`private_bandwidth`: ``(ε, 0)`` for 2d private quartiles, ``ε/(2d)`` each.

    Compose it with the density's plan (``fp.release(..., composed_with=(plan,))``, :meth:`ReleasePlan.then`)
    so that the density's file records the bandwidth's spending.

    Returns
    -------
    ReleasePlan
        Family ``"kde-bandwidth"``; ``fp_safe`` True and generator ``"opendp"`` (public candidate lattice,
        exact noisy max) unless ``seeded`` (numpy's float64 uniforms within the chosen interval: False).

    Raises
    ------
    InputError
        ε <= 0 or d not in {1, 2, ...}.

    Examples
    --------
    >>> from fdp_ppl.kde import bandwidth_plan
    >>> p = bandwidth_plan(0.2, d=2)
    >>> p.cost.epsilon, p.fp_safe, dict(p.output)
    (0.2, True, {'bandwidth': 2})
    """
    from ..releasing.plans import ReleasePlan

    eps = check_epsilon(epsilon)
    if isinstance(d, bool) or int(d) != d or int(d) < 1:
        raise InputError(f"d must be a whole number >= 1, got {d!r}", "pass d=1 or d=2")
    d = int(d)
    return ReleasePlan(
        family="kde-bandwidth", mechanism="exponential-quantiles", noise_law="exponential-mechanism", epsilon=eps,
        delta=0.0, draws=1, sensitivity=1.0, sensitivity_norm="rank utility |#{x_i < q} - p n|",
        noise_scale=np.zeros(0), noise_multiplier=float("nan"), event=None, cost=PrivacyBudget(eps, 0.0),
        privacy_unit="record", neighbouring="replace-one record; n public",
        guarantee=(f"{eps:g}-DP: Hall et al. (2013) 4.1.2 rule of thumb with private IQRs, {2 * d} quartiles by the "
                   f"exponential mechanism (Smith 2011), epsilon/{2 * d} each"
                   + ("" if seeded else f", on the public lattice of 2^{QUANTILE_BITS} + 1 candidates per "
                                        "coordinate (OpenDP make_private_quantile)")),
        fp_safe=not seeded, certified=True, seeded=seeded, generator="numpy" if seeded else "opendp",
        output={"bandwidth": d},
        memory_bytes=8.0 * d, label="kde bandwidth (private IQR)",
        attrs={"bandwidth_rule": f"private: Hall et al. (2013) 4.1.2 rule of thumb with private IQRs, epsilon {eps:g}",
               "bandwidth_epsilon": eps})


def private_bandwidth(observations, epsilon: float, domain, *, ledger=None, random_seed=None,
                      floor: float | None = None, label: str = "kde bandwidth (private IQR)",
                      study: bool = False) -> np.ndarray:
    """Hall §4.1.2 rule-of-thumb bandwidth with private IQRs; shape (d,).

    Parameters
    ----------
    observations : ndarray (n,) or (n, d)
    epsilon : float
        Budget of the bandwidth (ε-DP, δ = 0), split ``ε/(2d)`` per quartile.
    domain : (lo, hi) or list of them
        Public box.
    ledger : PrivacyLedger or FileLedger, optional
        Charged ``(ε, 0)`` before any draw.
    random_seed : None or seed
        None: fresh OS entropy; a seed needs ``study=True`` and warns :class:`~fdp_ppl.errors.SeededReleaseWarning`.
    floor : float, optional
        Public smallest bandwidth (default: 1% of the smallest domain width), so a
        private IQR of 0 still gives h > 0.
    study : bool
        A study (the only way to pass a seed): no ledger may be given (:func:`fdp_ppl.release`).

    Raises
    ------
    InputError
        A seed without ``study=True`` or a ledger with it; ε <= 0, non-finite observations, wrong shapes.
    """
    from ..releasing.plans import check_study

    check_study(random_seed, study, ledger)
    eps = check_epsilon(epsilon)
    obs = np.asarray(observations, dtype=float)
    obs = obs[:, None] if obs.ndim == 1 else obs
    dom = np.atleast_2d(np.asarray(domain, dtype=float))
    if obs.ndim != 2 or dom.shape != (obs.shape[1], 2) or not np.all(np.isfinite(obs)):
        raise InputError("observations must be finite, shape (n, d), with one (lo, hi) per dimension",
                         "pass domain=[(lo, hi)] * d")
    n, d = obs.shape
    plan = bandwidth_plan(eps, d, seeded=random_seed is not None)
    if ledger is not None:
        ledger.spend(plan.cost, label or plan.label, mechanism=plan.mechanism, event=plan.event)
    if random_seed is not None:
        warnings.warn("seeded private bandwidth: private only while the seed stays secret", SeededReleaseWarning,
                      stacklevel=2)
    rng = np.random.default_rng(seed_sequence(random_seed))
    floor = 0.01 * float(np.min(np.diff(dom, axis=1))) if floor is None else float(floor)
    out = np.empty(d)
    if random_seed is None:  # a real release: OpenDP's lattice quantiles (floating-point safe)
        def quartile(col, p, k):
            return opendp_quantile(col, p, eps / (2 * d), dom[k])
    else:  # a seeded study: reproducible, not floating-point safe
        def quartile(col, p, k):
            return private_quantile(col, p, eps / (2 * d), dom[k], rng)
    for k in range(d):
        q1 = quartile(obs[:, k], 0.25, k)
        q3 = quartile(obs[:, k], 0.75, k)
        iqr = max(q3 - q1, 0.0)
        out[k] = max((4.0 / ((d + 1) * n)) ** (1.0 / (d + 4)) * iqr / 1.34, floor)
    return out


__all__ = ["bandwidth_plan", "private_bandwidth", "private_quantile"]
