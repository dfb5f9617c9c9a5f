"""The public plan of an ε-DP FPCA release (Awan, Kenney, Reimherr & Slavković 2019, §4–5; issue 22).

Everything decided before the charge and without the data: the proposal budget T of the exact samplers and the
guarantee it certifies (:func:`exact_plan`), the public floors on MCMC iterations (:func:`iteration_floor`), and
the cost or refusal of a release (:func:`release_plan`). The release itself is
:func:`fdp_ppl.fpca.release.draw_release` (through :func:`fdp_ppl.release`).
"""

from __future__ import annotations

import math

from ..accounting import PrivacyBudget
from ..errors import InputError
from .fpca import SAMPLERS, FPCASpec
from .sequential import sequential_plan, step_epsilons
from .samplers import (acg_acceptance_bound, bingham_log_density_floor, fallback_guarantee, gp_base_acceptance_bound,
                       base_log_density_floor, proposal_budget, pure_guarantee, pure_proposal_budget)

#: Default bound δ on the probability that an exact draw exhausts its fixed proposal budget and falls back, when the
#: (ε', δ') variant is asked for (``delta=`` / ``--delta``).
DEFAULT_DELTA = 1e-10
#: Default η of the pure ε''-DP plan: the fallback probability bound p* is at most η·f_min, so
#: ε'' ≤ ε + log(1 + η e^{−ε}) − log(1 − p*) (an inflation of ε by at most ~1e-10).
DEFAULT_ETA = 1e-10
#: Largest number of proposals (T × draws) an exact release will run; larger requests are refused before the charge.
#: Measured (one core, one BLAS thread): 0.34 µs per GP-base proposal at m = 5, k = 1 and 0.66 µs at m = 10 (17 s and
#: 33 s at the cap), 1.9 µs at m = 5, k = 2 (QR per proposal: 95 s at the cap). 5·10⁷ serves the pure GP-base form of
#: Awan et al. Thm 4.1 on the shipped growth data (n = 93, m = 5, ε = 1: 2.6–2.7·10⁷ proposals, about 9 s).
DEFAULT_MAX_PROPOSALS = 50_000_000
#: Public floor on Gibbs scans for k > 1: at n = 100–500 the invariant statistics matched the exact law within
#: 5–10 scans (spec §4) and at m = 5 were stationary after 5–20 (studies.fpca.gibbs_convergence);
#: 20 is the upper end. A floor, not a certificate: the chain's distance to the target stays unknown.
GIBBS_MIN_SCANS = 20
#: Public floor on NUTS tuning steps: PyMC's step-size dual averaging and diagonal mass-matrix windows (default
#: 1000 steps) have not settled after fewer than ~100 steps in the checks of spec §4.1. Not a certificate either.
NUTS_MIN_TUNE = 100


def iteration_floor(sampler: str, k: int) -> int:
    """Public floor on ``iterations`` (Gibbs scans for k > 1, NUTS tuning steps; 0 otherwise).

    Raises
    ------
    Nothing; see :data:`GIBBS_MIN_SCANS`, :data:`NUTS_MIN_TUNE` for the reasons of the values.
    """
    if sampler == "nuts":
        return NUTS_MIN_TUNE
    if sampler == "gibbs" and int(k) > 1:
        return GIBBS_MIN_SCANS
    return 0


def exact_plan(spec: FPCASpec, n: int, sampler: str, *, delta: float | None = None, eta: float = DEFAULT_ETA,
               split=None) -> dict:
    """The data-independent proposal budget of a release and the guarantee it gives (issue 22).

    Two certified guarantees for the exact samplers (and k = 1 Gibbs, whose every scan redraws the
    whole column from the target):

    * ``delta=None`` (default): **pure ε''-DP**. The fallback law F is the reference measure of the
      target's density f_D: the mechanism's base law for the exact samplers (ν for ``gp-base``; the vector
      Bingham ``∝ exp(−s xᵀΣ⁻¹x)``, the target of the empty data set, for ``bingham``), where
      f_D ≥ f_min = ``exp(−s n)`` (:func:`~fdp_ppl.fpca.samplers.base_log_density_floor`); the uniform law for
      k = 1 Gibbs, where f_min = ``exp(−s(n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹)))``; s = ε/(2Δ). T is chosen so that
      ``p* = (1 − a_min)^T ≤ η f_min``; then
      ``ε'' = log((e^ε + p*/f_min)/(1 − p*)) ≤ ε + log(1 + η e^{−ε}) − log(1 − p*)``
      (:func:`~fdp_ppl.fpca.samplers.pure_guarantee`).
    * ``delta`` given: **(ε', δ')-DP**, ``T = ceil(log δ / log(1 − a_min))``, ε' = ε − log(1 − p*), δ' = p*
      (:func:`~fdp_ppl.fpca.samplers.fallback_guarantee`).

    ``"sequential"`` (Bingham form, any k): the per-step budgets and the composed guarantee of
    :func:`~fdp_ppl.fpca.sequential.sequential_plan` (ε_i = ε · split_i, default ε/k).

    For k = 1 Gibbs the chain's output is a target draw unless every one of its scans falls back (then
    the uniform starting column): the same mixture with a fallback probability ≤ p*^iterations ≤ p*.

    Parameters
    ----------
    spec : FPCASpec
    n : int
        Number of curves (public under replace-one adjacency).
    sampler : {"exact", "gibbs", "nuts"}
    delta : float, optional
        Target bound on the probability that one draw falls back, in (0, 1): the (ε', δ') variant.
    eta : float
        η of the pure plan, in (0, 1).
    split : sequence of float, optional
        ``"sequential"`` only: the public fractions of ε per step (:func:`~fdp_ppl.fpca.sequential.step_epsilons`).

    Returns
    -------
    dict
        ``proposals`` T per draw (``"exact"``) or per Gibbs column update (``"gibbs"``; 0 for NUTS),
        ``p_star`` = (1 − a_min)^T and ``log_p_star``, ``log_a_min``, ``log_f_min`` (pure plan; NaN
        otherwise), ``bound`` ("proved" for the GP-base rejection,
        :func:`~fdp_ppl.fpca.samplers.gp_base_acceptance_bound`, and for the ACG sampler,
        :func:`~fdp_ppl.fpca.samplers.acg_acceptance_bound`), ``certified`` (1 for the
        exact samplers and k = 1 Gibbs), ``pure`` (1 for the pure plan), ``epsilon``, ``delta`` — the
        per-draw guarantee: (ε'', 0), (ε', δ'), or (ε, NaN) when uncertified.

    Raises
    ------
    InputError
        δ or η outside (0, 1).
    """
    if delta is not None and not (0.0 < float(delta) < 1.0):
        raise InputError(f"delta must be in (0, 1), got {delta!r}",
                         "pass e.g. delta=1e-10, or no delta (pure epsilon-DP)")
    if not (0.0 < float(eta) < 1.0):
        raise InputError(f"eta must be in (0, 1), got {eta!r}", "pass e.g. eta=1e-10")
    m, k = spec.m, spec.k
    nan = float("nan")
    if split is not None and sampler != "sequential":
        raise InputError("split applies to the sequential sampler only", "drop split, or pass sampler='sequential'")
    if sampler == "sequential":
        eps_steps = step_epsilons(spec.epsilon, k, split)
        return sequential_plan(spec.Sigma, int(n), eps_steps, delta=delta, eta=float(eta), sensitivity=spec.sensitivity)
    if sampler == "nuts":
        return {"proposals": 0, "p_star": nan, "log_p_star": nan, "log_a_min": nan, "log_f_min": nan, "bound": "none",
                "certified": 0, "pure": 0, "epsilon": spec.epsilon, "delta": nan}
    if sampler == "exact" and spec.form == "gp-base":
        log_a, bound = gp_base_acceptance_bound(spec.Sigma, k, spec.scale * int(n)), "proved"
        log_f = base_log_density_floor(spec.scale, n)
    else:  # ACG updates on the sphere of the complement of k - 1 columns
        log_a, bound = acg_acceptance_bound(m - k + 1), "proved"
        log_f = (base_log_density_floor(spec.scale, n) if sampler == "exact"  # falls back to the base law
                 else bingham_log_density_floor(spec.Sigma, spec.scale, n))  # Gibbs: to its uniform start
    certified = int(sampler == "exact" or k == 1)
    pure = int(certified and delta is None)
    if pure:
        T, log_p = pure_proposal_budget(log_a, log_f, float(eta))
        p_star = math.exp(log_p)
        eps, dlt = pure_guarantee(spec.epsilon, log_p, log_f), 0.0
    else:
        T, p_star = proposal_budget(log_a, float(DEFAULT_DELTA if delta is None else delta))
        log_p = math.log(p_star) if p_star > 0 else -math.inf
        log_f = nan
        eps, dlt = fallback_guarantee(spec.epsilon, p_star) if certified else (spec.epsilon, nan)
    return {"proposals": T, "p_star": p_star, "log_p_star": log_p, "log_a_min": log_a, "log_f_min": log_f,
            "bound": bound, "certified": certified, "pure": pure, "epsilon": eps, "delta": dlt}


def _work(plan: dict, sampler: str, k: int, draws: int, iterations: int) -> int:
    """Proposals a release runs (public): T × draws (exact; Σ_i T_i × draws sequential), T × k × iterations × draws
    (Gibbs), 0 (NUTS)."""
    if sampler in ("exact", "sequential"):
        return int(plan["proposals"]) * draws
    if sampler == "gibbs":
        return int(plan["proposals"]) * k * iterations * draws
    return 0


def release_plan(spec: FPCASpec, n: int, sampler: str, *, draws: int = 1, iterations: int = 200,
                 delta: float | None = None, max_proposals: int = DEFAULT_MAX_PROPOSALS, eta: float = DEFAULT_ETA,
                 flags: bool = False, split=None) -> dict:
    """Everything public a release decides before the charge: its plan, its cost, or its refusal.

    Parameters
    ----------
    spec : FPCASpec
    n : int
        Number of curves (public).
    sampler : {"exact", "gibbs", "nuts"}
    draws, iterations : int
    delta : float, optional
        None (default): the pure ε''-DP plan; a number: the (ε', δ') plan (:func:`exact_plan`).
    max_proposals : int
        Largest number of proposals the release may run (:func:`_work`).
    eta : float
    flags : bool
        Name the fixes as command-line flags (``--delta``) instead of arguments (``delta=``).
    split : sequence of float, optional
        The sequential sampler's public fractions of ε per component (default ε/k each).

    Returns
    -------
    dict
        :func:`exact_plan` plus ``cost`` (:class:`~fdp_ppl.accounting.PrivacyBudget`: draws × (ε'', 0),
        draws × (ε', δ'), or draws × (ε, 0) for uncertified MCMC) and ``work`` (proposals).

    Raises
    ------
    InputError
        The work exceeds ``max_proposals`` (one line naming the fix: the (ε', δ') variant when it
        can be served, else the Bingham form with k = 1, a smaller ε or k, or a larger δ).
    """
    if sampler not in SAMPLERS:
        raise InputError(f"unknown sampler {sampler!r}", f"choose one of {SAMPLERS}")
    draws, iterations = int(draws), int(iterations)
    if draws < 1:
        raise InputError("draws must be >= 1", "pass draws=1 for one release")
    floor = iteration_floor(sampler, spec.k)
    if sampler in ("gibbs", "nuts") and iterations < max(floor, 1):
        what = "NUTS tuning steps" if sampler == "nuts" else "Gibbs scans"
        raise InputError(f"iterations = {iterations} {what} is below the public floor {max(floor, 1)} "
                         f"(an unconverged chain's privacy loss is unbounded)", "pass e.g. iterations=200")
    if spec.form == "bingham" and sampler == "exact" and spec.k > 1:
        raise InputError("no exact sampler for the Bingham form's joint (matrix Bingham) law with k > 1: only Gibbs "
                         "and NUTS, which are uncertified MCMC (no certified guarantee)",
                         ("--sampler sequential" if flags else "sampler='sequential'")
                         + " (exact and pure: k exact vector-Bingham steps with epsilon/k each, a different "
                         "mechanism), k = 1, sampler='gibbs' (uncertified MCMC), or form='gp-base' (exact for any k, "
                         "but refused unless n x epsilon is small)")
    if spec.form == "gp-base" and sampler == "sequential":
        raise InputError("the sequential sampler serves the Bingham form only",
                         "use sampler='exact' for the GP-base form, or form='bingham'")
    if spec.form == "gp-base" and sampler == "gibbs":
        raise InputError("the Gibbs sampler serves the Bingham form only; the GP-base form is sampled by exact "
                         "rejection (or NUTS)", "use sampler='exact'")
    plan = exact_plan(spec, n, sampler, delta=delta, eta=eta, split=split)
    work = _work(plan, sampler, spec.k, draws, iterations)
    if work > int(max_proposals):
        kind = ("pure epsilon-DP" if plan["pure"] else "uncertified" if not plan["certified"] else
                f"(epsilon, delta <= {float(delta):g})-DP")
        what = (f"a {kind} {spec.form} "
                f"{sampler} release of {draws} frame{'s' if draws > 1 else ''} needs {work:.3g} proposals "
                f"({plan['proposals']:.3g} per {'column update' if sampler == 'gibbs' else 'draw'}; data-independent "
                f"acceptance bound {math.exp(plan['log_a_min']):.3g} at n = {int(n)}, epsilon = {spec.epsilon:g}, "
                f"k = {spec.k}"
                + (f", density floor exp({plan['log_f_min']:.4g})" if plan["pure"] else "")
                + f"), more than max_proposals = {int(max_proposals):.3g}")
        dflag = "--delta 1e-10" if flags else "delta=1e-10"
        if spec.form == "bingham" and spec.k == 1:  # its density floor exp(-s(n + range of Sigma^-1)) sets T
            other = ("a flatter Sigma (the eigenvalue range of Sigma^-1 sets the density floor), fewer basis "
                     "functions m")
        else:
            other = ("--form bingham --k 1 (exact, pure epsilon-DP)" if flags else
                     "form='bingham' with k = 1 (exact, pure epsilon-DP)")
        if plan["pure"]:
            alt = exact_plan(spec, n, sampler, delta=DEFAULT_DELTA, split=split)
            alt_work = _work(alt, sampler, spec.k, draws, iterations)
            if alt_work <= int(max_proposals):
                raise InputError(what, f"pass {dflag} for an (epsilon', delta')-DP release with {alt_work:.3g} "
                                       f"proposals (needs a ledger with a delta budget), or use {other}, a smaller "
                                       "epsilon or fewer frames")
            raise InputError(what, f"neither the pure nor the (epsilon', delta' = 1e-10) guarantee can be served "
                                   f"({alt_work:.3g} proposals): use {other}, a smaller epsilon, fewer components k "
                                   "or fewer frames")
        raise InputError(what, f"use {other}, a smaller epsilon, fewer components k or frames, or a larger delta")
    certified = bool(plan["certified"])
    plan["cost"] = PrivacyBudget(plan["epsilon"] * draws, (plan["delta"] * draws) if certified else 0.0)
    plan["work"] = work
    return plan
