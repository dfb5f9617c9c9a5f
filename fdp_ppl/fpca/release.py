"""The ε-DP FPCA release: one private frame per draw as an ArviZ-style DataTree (Awan, Kenney, Reimherr &
Slavković 2019, §4–5).

:func:`plan_release` and :func:`draw_release` are the family's two hooks for :func:`fdp_ppl.plan` and
:func:`fdp_ppl.release` (an :class:`~fdp_ppl.fpca.fpca.FPCAFit`): the plan (:mod:`.fpca_plan`: proposal budget,
guarantee, cost; no data), then, after the protocol's charge, the draw with the exact samplers, Gibbs
(:mod:`.samplers`) or NUTS (:mod:`.fpca_nuts`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..errors import InputError
from ..accounting import PrivacyBudget
from ..noise.sampling import seed_sequence
from ..noise.snapping import FRAME_BITS, frame_bits_for, frame_cost, snap_frame
from ..releasing.schema import (BASIS_FUNCTIONS, COMPONENTS, CONSTANT_DATA, FRAME, POSTERIOR, QUADRATURE_WEIGHTS, SIGMA,
                                fpca_attrs)
from .fpca import FPCAFit, FPCASpec
from .fpca_nuts import _nuts_frames
from .fpca_plan import GIBBS_MIN_SCANS, release_plan
from .samplers import batches, gibbs_matrix_bingham, rejection_from_gp_base, sample_vector_bingham
from .sequential import sample_sequential_bingham


def _rhat_ess(traces: np.ndarray) -> tuple[float, float]:
    """Max split-R̂ and min bulk ESS over the scalar traces, shape (chains, iterations, p)."""
    import arviz as az

    traces = np.asarray(traces, dtype=float)
    if traces.ndim == 2:
        traces = traces[..., None]
    rh, es = [], []
    for j in range(traces.shape[-1]):
        x = traces[..., j]
        if np.ptp(x) == 0:
            continue
        rh.append(float(az.rhat(x)))
        es.append(float(az.ess(x)))
    return (max(rh) if rh else 1.0), (min(es) if es else float(traces.shape[0] * traces.shape[1]))



def plan_release(spec_or_fit, mechanism, *, draws: int = 1, seeded: bool = False, n: int | None = None):
    """The principal components' plan hook: the proposal budget, the guarantee and the cost, before any data.

    Parameters
    ----------
    spec_or_fit : FPCASpec or FPCAFit
    mechanism : ExponentialMechanism
        Its sampler options (``sampler``, ``iterations``, ``max_proposals``, ``delta``, ``eta``); ε is the
        spec's.
    draws : int
        Released frames; the ledger is charged ``draws ×`` the per-frame guarantee.
    seeded : bool
        A seeded study.
    n : int, optional
        The public number of curves: required with a spec, and must equal a fit's.

    Returns
    -------
    ReleasePlan
        See :func:`draw_release` for the guarantee of each sampler.

    Raises
    ------
    InputError
        Unknown sampler, a sampler that does not serve the form, draws < 1, iterations below the floor, δ or
        η ∉ (0, 1), a release whose proposals exceed ``max_proposals``
        (:func:`~fdp_ppl.fpca.fpca_plan.release_plan`), a spec without ``n``.
    """
    from ..releasing.plans import ReleasePlan, check_draws

    if isinstance(spec_or_fit, FPCAFit):
        spec, fit_n = spec_or_fit.spec, int(spec_or_fit.n)
        if n is not None and int(n) != fit_n:
            raise InputError(f"n = {n} disagrees with the fit's public n", "drop n (the fit carries it)")
        n = fit_n
    else:
        spec = spec_or_fit
        if n is None:
            raise InputError("planning an FPCA release needs the public number of curves",
                             "pass n=... (or plan the fit)")
    draws, _ = check_draws(draws)
    sampler, iterations = mechanism.sampler, int(mechanism.iterations)
    # frames go on the dithered lattice (draw_release); a delta target that holds its (1 + e^eps') delta_fp twice
    # is planned at delta - that (eps' <= eps - log(1 - delta)) and the release is floating-point safe
    dl = mechanism.delta
    eps_dl = spec.epsilon - (np.log1p(-dl) if dl is not None else 0.0)
    snapc = frame_cost(spec.m, spec.k, eps_dl)
    absorb = dl is not None and dl >= 2 * snapc.delta_added
    if dl is not None and not absorb and (sampler in ("exact", "sequential") or (sampler == "gibbs" and spec.k == 1)):
        # a certified delta below twice the 2^-12 lattice's cost (the default 1e-10 on small frames) takes the finest
        # coarser public lattice that holds it, at most 2% sd inflation of an entry (frame_bits_for); else unsafe
        bits = frame_bits_for(spec.m, spec.k, eps_dl, dl)
        if bits is not None:
            snapc, absorb = frame_cost(spec.m, spec.k, eps_dl, bits), True
    plan = release_plan(spec, int(n), sampler, draws=draws, iterations=iterations,
                        delta=dl - snapc.delta_added if absorb else dl,
                        max_proposals=mechanism.max_proposals, eta=mechanism.eta, split=mechanism.split)
    T = plan["proposals"]
    certified = bool(plan["certified"])
    fp_safe = absorb and certified and not plan["pure"]
    plan = {**plan, "frame_bits": snapc.bits}
    if fp_safe:
        plan = {**plan, "delta": plan["delta"] + snapc.delta_added,
                "cost": PrivacyBudget(plan["epsilon"] * draws, (plan["delta"] + snapc.delta_added) * draws)}
    cost = plan["cost"]
    mech_name = f"expmech-fpca-{spec.form}-{sampler}" + ("" if certified else " (uncertified MCMC)")
    label = mech_name + ("" if certified else " [uncertified MCMC: delta not bounded, only epsilon charged]")
    exact = int(sampler != "nuts" and (spec.form == "gp-base" or sampler in ("exact", "sequential") or spec.k == 1))
    its = iterations if sampler in ("nuts", "gibbs") and not (spec.form == "gp-base" and sampler == "exact") else 0
    delta = mechanism.delta
    attrs = {**spec.attrs(), **fpca_attrs(), "mechanism": mech_name, "n": int(n),
             "sampler": _SAMPLER_NAMES[(spec.form, sampler)], "sampler_reference": _SAMPLER_REFERENCES[sampler, spec.form],
             "iterations": its, "exact": exact, "private": int(certified),
             "epsilon_guaranteed": plan["epsilon"],
             "delta_guaranteed": plan["delta"], "delta_target": float(delta) if delta is not None else 0.0,
             "proposal_budget": int(T), "fallback_bound_log": float(plan["log_p_star"]) if certified else float("nan"),
             "density_floor_log": float(plan["log_f_min"]), "eta": float(mechanism.eta) if plan["pure"] else float("nan"),
             "pure": int(plan["pure"]), "frame_lattice_bits": int(snapc.bits),
             "fp_safety": (snapc.text() if fp_safe else "NOT floating-point safe as stated: frames are released on "
                           f"the dithered lattice {snapc.lattice} (no centre-dependent float support), which makes the float "
                           f"release within total variation {snapc.delta_fp:.3g} of the exact one; this plan cannot "
                           f"hold that (pure, uncertified, or delta below {2 * snapc.delta_added:.2g})"),
             "fallback": _FALLBACKS[(spec.form, sampler)] if sampler != "nuts" else "none",
             "initialisation": {"gibbs": "uniform random frame (data-independent)",
                                "nuts": _NUTS_INIT}.get(sampler, "none"),
             "draws_exact": ("yes: exact draws from the mechanism, except with probability <= "
                             "exp(fallback_bound_log) a public fallback" if exact else
                             "no: MCMC after a fixed number of steps; the privacy guarantee holds only up to the "
                             "chain's distance to the target")}
    if sampler == "sequential":  # the law of the release (sequential_logpdf) needs the per-step budgets
        attrs.update(epsilon_steps=np.asarray(plan["epsilon_steps"], dtype=float),
                     epsilon_guaranteed_steps=np.asarray(plan["epsilon_guaranteed_steps"], dtype=float),
                     proposal_budget_steps=np.asarray(plan["proposals_steps"], dtype=np.int64),
                     law=_SEQUENTIAL_LAW)
    m, k = spec.m, spec.k
    out = ReleasePlan(
        family="fpca", mechanism=mech_name, noise_law="exponential-mechanism", epsilon=float(spec.epsilon),
        delta=float(cost.delta) / draws, draws=draws, sensitivity=1.0,
        sensitivity_norm="sum of squared projections of tau-scaled records (utility)", noise_scale=np.zeros(0),
        noise_multiplier=float("nan"), event=None, cost=cost,
        privacy_unit="record" if spec.privacy_unit is None else spec.privacy_unit.column,
        neighbouring=str(attrs.get("adjacency", "replace-one record; n public")), guarantee=_guarantee_text(spec, sampler, plan), fp_safe=fp_safe,
        certified=certified, seeded=seeded, generator=_SAMPLER_NAMES[(spec.form, sampler)],
        output={"chain": 1, "draw": draws, "component": k, "t": int(spec.grid.size)},
        variable=COMPONENTS, coords={"component": np.arange(k), "t": spec.grid.points},
        units="dimensionless (unit L2 norm on the grid)",
        memory_bytes=3.0 * 8.0 * draws * k * (m + int(spec.grid.size)), label=label, attrs=attrs,
        state=(spec, mechanism, plan))
    out.check_memory()
    return out


def draw_release(fitted: FPCAFit, plan, *, random_seed=None, progressbar: bool = False) -> xr.DataTree:
    """Release DP principal components: ``draws`` frames, pure ε''-DP each by default (issue 22).

    The principal components' draw hook, called by :func:`fdp_ppl.release` after the charge of the plan
    (:func:`plan_release`); call ``fp.release(fitted, ExponentialMechanism(...))``.
    The sampler options below are the fields of ``mechanism``
    (:class:`~fdp_ppl.fpca.mechanism.ExponentialMechanism`); ε is the spec's.

    Guarantee (per frame; ``draws`` independent frames compose to ``draws ×`` it):

    * ``"exact"`` and k = 1 ``"gibbs"``: every draw costs exactly T proposals, generated
      whatever is accepted (data-independent run time and RNG use); the first accepted is
      released, else a public fallback F (an exact draw of the base law, the target of the empty data
      set: ν for ``gp-base``, the vector Bingham ``∝ exp(−s xᵀΣ⁻¹x)`` for ``bingham``; the k = 1 Gibbs
      chain keeps its uniform start). F is the
      reference measure of the target's density f_D, and a_min (acceptance) and f_min
      (density) are data-independent lower bounds:

      - default (``delta=None``): T with ``p* = (1 − a_min)^T ≤ η f_min`` and the release is
        **pure ε''-DP**, ``ε'' = log((e^ε + p*/f_min)/(1 − p*)) ≤ ε + log(1 + η e^{−ε}) −
        log(1 − p*)`` (:func:`~fdp_ppl.fpca.samplers.pure_guarantee`); the ledger is charged
        ``draws × (ε'', 0)``. f_min = ``exp(−s n)`` w.r.t. the base law, s = ε/(2Δ)
        (:func:`~fdp_ppl.fpca.samplers.base_log_density_floor`); ``exp(−s(n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹)))``
        w.r.t. the uniform start of k = 1 Gibbs.
      - ``delta`` given: T with ``p* ≤ δ``, **(ε' = ε − log(1 − p*), δ' = p*)-DP**
        (:func:`~fdp_ppl.fpca.samplers.fallback_guarantee`), charged ``draws × (ε', δ')``:
        for a ledger with a δ budget when the pure plan needs too many proposals.

      a_min: ``c_Σ^k E[exp(−s n max_{j≤k} D_j)] + (1 − c_Σ^k) e^{−s n}`` for ``gp-base``
      (proved, :func:`~fdp_ppl.fpca.samplers.gp_base_acceptance_bound`); half the
      vertex value A_1(m) of Kent et al.'s acceptance for the ACG sampler (proved,
      :func:`~fdp_ppl.fpca.samplers.acg_acceptance_bound`). A release whose
      proposals exceed ``max_proposals`` is refused before the charge (:func:`~fdp_ppl.fpca.fpca_plan.release_plan`).
    * ``"sequential"`` (Bingham form, any k): a different mechanism from the joint matrix Bingham — k exact
      vector-Bingham steps, column i on the unit sphere of the orthogonal complement of the earlier columns with
      ε_i (default ε/k; ``split``), each with its own data-independent budget T_i and base-law fallback as for
      k = 1 above; pure ``Σ_i ε''_i``-DP (``(Σ ε'_i, Σ δ'_i)`` with ``delta``, δ/k per step) by adaptive
      composition (proof: :mod:`fdp_ppl.fpca.sequential`). Attrs ``epsilon_steps``,
      ``epsilon_guaranteed_steps``, ``proposal_budget_steps`` and ``law``; the frame's density is
      :func:`~fdp_ppl.fpca.sequential.sequential_logpdf`.
    * ``"gibbs"`` with k > 1 and ``"nuts"``: **uncertified MCMC**. The guarantee is
      (ε, (1 + e^ε)γ) with γ the chain's total-variation distance to the target, which is
      not bounded: the release records ``certified = 0``, ``private = 0``,
      ``delta_guaranteed = NaN``; the ledger is charged ``draws × ε`` (it cannot charge an
      unknown δ) under a mechanism name ending "(uncertified MCMC)". NUTS's run time
      depends on the data (tree depths; not padded); PyMC's log lines (including its
      "Sampling ... took X seconds") are silenced. Iterations below a public floor
      (:func:`~fdp_ppl.fpca.fpca_plan.iteration_floor`) are refused.

    Parameters
    ----------
    fitted : FPCAFit
        From :meth:`~fdp_ppl.fpca.fpca.FPCASpec.fit` (data holder only).
    mechanism : ExponentialMechanism
        Carries ``sampler``, ``iterations``, ``max_proposals``, ``delta``, ``eta`` and
        ``diagnostics`` (described here):
    sampler : {"exact", "gibbs", "nuts"}
        ``"exact"``: Bingham form with k = 1 by ACG rejection (Kent et al. 2018);
        GP-base form (any k) by rejection from the base measure (Thm 4.1).
        ``"gibbs"``: Bingham form, any k, ``iterations`` column-wise Gibbs scans
        (Hoff 2009) from a uniform random start; each released draw is the last
        state of its own chain. Not exact for k > 1 (the guarantee is then
        (ε, (1 + e^ε)γ) with γ the unknown TV distance to the target, spec §4.2).
        ``"nuts"``: either form, any k: PyMC's NUTS on the Euclidean
        parametrisation of :func:`~fdp_ppl.fpca.fpca_nuts.fpca_pymc_model` (k Gaussian vectors whose
        span is the frame; the exponential-mechanism term as a potential), one
        chain per released draw from a data-independent random start,
        ``iterations`` tuning steps, the frame of the chain's last state
        (orthonormalised). Never exact (``exact = 0``): the same (ε, (1 + e^ε)γ)
        caveat as Gibbs.
    draws : int
        Number of released frames; the ledger is charged ``draws ×`` the per-frame guarantee.
    iterations : int
        Gibbs scans, or NUTS tuning steps, per chain (fixed in advance; ignored by ``"exact"``);
        at least :data:`~fdp_ppl.fpca.fpca_plan.GIBBS_MIN_SCANS` (Gibbs, k > 1) or
        :data:`~fdp_ppl.fpca.fpca_plan.NUTS_MIN_TUNE` (NUTS).
    random_seed : None, int, sequence or Generator
        None (default): fresh OS entropy. A seed warns :class:`~fdp_ppl.errors.SeededReleaseWarning`.
    ledger : PrivacyLedger or FileLedger, optional
        Charged before any draw; a later failure never refunds.
    label, dataset : str
        Ledger entry details.
    diagnostics : bool
        For ``"gibbs"``: record max split-R̂ and min ESS of the traces of the
        rotation/sign-invariant quantities (explained-variance ratio tr(VᵀGV)/tr(G)
        and the entries of VVᵀ) in attrs. These are computed on the confidential
        data and are **not covered by ε** (``diagnostics_private = 1``), so they are
        off by default: turn them on only for a release that stays with the data
        holder, or diagnose on public data with the same (n, m, ε, Σ).
    max_proposals : int
        Largest number of proposals a release runs (T × draws exact, T × k × iterations × draws
        Gibbs; ~0.2 µs per proposal for k = 1, ~1 µs for k = 2); more is refused before the charge.
    delta : float, optional
        None (default): the pure ε''-DP plan. A number in (0, 1): the (ε', δ') plan with each
        draw's fallback probability ≤ δ (e.g. 1e-10).
    eta : float
        η of the pure plan (p* ≤ η f_min), in (0, 1); default 1e-10.
    progressbar : bool
        Show progress of the Gibbs scans or of PyMC's NUTS chains.

    Returns
    -------
    xr.DataTree
        ``posterior``: ``components`` (chain, draw, component, t) — the released
        functions on the grid (in units of the clipped, τ-divided curves: unit
        L² norm) — and ``frame`` (chain, draw, basis, component);
        ``constant_data``: ``basis_functions`` (t, basis), ``quadrature_weights`` (t),
        ``sigma`` (basis, basis2); root attrs: ε, τ, n, m, k, basis, sigma_rule,
        form, sampler, iterations, exact (1/0), fp_safe (1 for a certified (ε', δ') plan whose δ holds twice the
        lattice's: frames on the dithered lattice of :func:`~fdp_ppl.noise.snapping.snap_frame`, p* planned at δ
        minus it; a δ below twice the 2^-12 lattice's cost takes the finest coarser lattice that holds it with at
        most 2% sd inflation of an entry, :func:`~fdp_ppl.noise.snapping.frame_bits_for`), frame_lattice_bits,
        fp_safety, noise_seeded,
        epsilon_guaranteed, delta_guaranteed (0 for the pure plan, NaN when not bounded), pure,
        certified, private, guarantee, proposal_budget, fallback_bound_log (log p*),
        density_floor_log (log f_min; NaN unless pure), eta, fallback, delta_target (0 unless
        given), budget_spent_epsilon,
        budget_spent_delta, rhat/ess (Gibbs, only when asked for). Acceptance rates,
        proposals used and whether a fallback was taken depend on the data and are
        neither written nor returned.

    Raises
    ------
    InputError
        Unknown sampler, a sampler that does not serve the form, draws < 1, iterations
        below the floor, δ or η ∉ (0, 1), or a release whose proposals exceed
        ``max_proposals`` (all before the charge; :func:`~fdp_ppl.fpca.fpca_plan.release_plan`).
    BudgetExceededError
        From the ledger; nothing is drawn.
    """
    spec, mechanism, pl = plan.state
    sampler, iterations, diagnostics = mechanism.sampler, int(mechanism.iterations), mechanism.diagnostics
    draws = plan.draws
    T = pl["proposals"]
    rng = np.random.default_rng(seed_sequence(random_seed))
    G = np.asarray(fitted.gram, dtype=float)
    m, k = spec.m, spec.k
    extra: dict = {}
    if sampler == "nuts":
        frames, tr = _nuts_frames(fitted, draws, iterations, rng, diagnostics=diagnostics, progressbar=progressbar)
        if diagnostics:
            rhat, ess = _rhat_ess(tr["invariant"])
            extra.update(rhat_invariant=rhat, ess_invariant=ess, diagnostics_private=1, divergences=tr["divergences"],
                         diagnostics_on="explained-variance ratio and entries of V V^T (NUTS draws after tuning)")
    elif spec.form == "gp-base":
        frames = rejection_from_gp_base(G, spec.Sigma, k, spec.scale, draws, rng, proposals=T,
                                        progress=_progress(batches(T, draws), "GP-base proposals (batches)")
                                        if progressbar else None)
    elif sampler == "exact":
        frames = sample_vector_bingham(spec.bingham_parameter(G), draws, rng, proposals=T,
                                       fallback=spec.bingham_parameter(np.zeros_like(G)))[:, :, None]
    elif sampler == "sequential":
        frames = sample_sequential_bingham(G, spec.Sigma, pl["epsilon_steps"], draws, rng,
                                           proposals=pl["proposals_steps"], sensitivity=spec.sensitivity)
    else:
        A = spec.bingham_parameter(G)
        iu = np.triu_indices(m)
        trG = max(np.trace(G), 1e-300)

        def invariant(V):
            P = V @ V.T
            return np.concatenate([[np.trace(V.T @ G @ V) / trG], P[iu]])

        frames, tr = gibbs_matrix_bingham(A, k, iterations, rng, chains=draws, proposals=T,
                                          trace=invariant if diagnostics else None,
                                          progress=_progress(draws * iterations, "Gibbs scans") if progressbar
                                          else None)
        if diagnostics and iterations >= 4:
            rhat, ess = _rhat_ess(tr)
            extra.update(rhat_invariant=rhat, ess_invariant=ess, diagnostics_private=1,
                         diagnostics_on="explained-variance ratio and entries of V V^T")
    frames = snap_frame(frames.reshape(1, draws, m, k), rng, pl.get("frame_bits", FRAME_BITS))  # public lattice
    B = spec.basis_values
    comps = np.einsum("tb,cdbk->cdkt", B, frames)
    t = spec.grid.points
    post = xr.Dataset(
        {COMPONENTS: (("chain", "draw", "component", "t"), comps),
         FRAME: (("chain", "draw", "basis", "component"), frames)},
        coords={"chain": [0], "draw": np.arange(draws), "component": np.arange(k), "basis": np.arange(m),
                "t": t})
    const = xr.Dataset(
        {BASIS_FUNCTIONS: (("t", "basis"), B), QUADRATURE_WEIGHTS: (("t",), spec.grid.weights),
         SIGMA: (("basis", "basis2"), spec.Sigma)},
        coords={"t": t, "basis": np.arange(m), "basis2": np.arange(m)})
    post[COMPONENTS].attrs.update(long_name="private principal component (unit L2 norm on the rescaled grid)")
    tree = xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: const})
    tree.attrs = extra  # the data holder's MCMC diagnostics, only when asked for (diagnostics_private = 1)
    return tree


#: default stated eigengaps of :func:`accuracy_release`: the top eigenvalues of the second-moment operator of the
#: τ-scaled curves (at most 1) minus the next
DEFAULT_EIGENGAPS = (0.01, 0.03, 0.1, 0.3)


def target_frames(spec: FPCASpec, gram, size: int, rng: np.random.Generator, iterations: int) -> np.ndarray:
    """``size`` frames (size, m, k) from the law the mechanism targets for a scatter matrix ``gram``, by the
    package's samplers without the fixed proposal budget (same law up to the fallback probability p*, which the
    plan bounds): ACG rejection (``bingham``, k = 1; Kent et al. 2018), rejection from the base measure
    (``gp-base``), or ``iterations`` Gibbs scans (``bingham``, k > 1; the Gibbs release's own law, ~1.5 ms per
    column update). For
    :func:`accuracy_release` on a public, synthetic ``gram`` (never the data's).

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.fpca import FPCASpec
    >>> spec = FPCASpec(grid=fp.Grid.uniform(21), m=3, k=1, epsilon=1.0, tau=1.0)
    >>> target_frames(spec, np.diag([50.0, 0, 0]), 4, np.random.default_rng(0), 0).shape
    (4, 3, 1)
    """
    if spec.form == "gp-base":
        return rejection_from_gp_base(gram, spec.Sigma, spec.k, spec.scale, size, rng)
    A = spec.bingham_parameter(gram)
    if spec.k == 1:
        return sample_vector_bingham(A, size, rng)[:, :, None]
    return gibbs_matrix_bingham(A, spec.k, iterations, rng, chains=size)[0]


def accuracy_release(plan, *, eigengap=None, level: float = 0.95, samples: int = 1000, seed=0) -> xr.Dataset:
    """The principal components' accuracy hook (:meth:`fdp_ppl.ReleasePlan.accuracy`): the principal angle
    between the released span and the true top-k span, as a function of a stated eigengap, by Monte Carlo of the
    mechanism's law on a public, synthetic scatter matrix (no data read, no privacy spent).

    **Assumption (stated, not checked: it is about the private data).** The second-moment operator of the
    clipped, τ-scaled curves in the spec's basis is *spiked*: ``G/n = c I + g Σ_{j<=k} e_j e_jᵀ``, i.e. its top k
    eigenvalues exceed all the others, which are equal, by the eigengap ``g`` (in (0, 1]: the curves have norm at
    most 1 after scaling), and the top k components lie along the first k basis functions (the directions the
    public Σ favours most). The mechanism's law does not depend on ``c`` (``tr(VᵀcIV) = ck`` for every frame), so
    the figures are a function of ``g`` alone; spreading the remaining eigenvalues apart, or a top component
    along a higher basis function (penalised by ``Σ⁻¹`` in the ``bingham`` form), changes them.

    Parameters
    ----------
    plan : ReleasePlan
        An FPCA plan (its ``n``, ε, k, m, Σ, form and sampler).
    eigengap : float or sequence of float, optional
        Stated eigengaps ``g`` in (0, 1]. Default: :data:`DEFAULT_EIGENGAPS`.
    level : float
        Level of the angle's quantile, in (0, 1).
    samples : int
        Monte Carlo frames per eigengap (>= 100); the mean angle's standard error is its sd / sqrt(samples).
        ``bingham`` with k > 1 runs a Gibbs chain per frame (the plan's iterations for a Gibbs plan, else
        :data:`~fdp_ppl.fpca.fpca_plan.GIBBS_MIN_SCANS`): about ``samples × scans × k × 1.5`` ms per eigengap.
    seed : int
        Seed of that Monte Carlo (public: the synthetic matrix, not the data).

    Returns
    -------
    xr.Dataset
        Dim ``eigengap``: ``expected_angle`` and ``angle_quantile`` (degrees: the largest principal angle, for
        k = 1 the angle between the released and the true top component, sign ignored), and
        ``expected_subspace_distance`` (``½‖P̃ − P‖²_F = Σ sin² θ_j``, :func:`~fdp_ppl.fpca.fpca.subspace_distance`).
        Attrs as :func:`fdp_ppl.releasing.accuracy.accuracy`, with ``assumption`` and ``sampler`` (how the law was
        drawn).

    Raises
    ------
    InputError
        An eigengap outside (0, 1], ``level`` outside (0, 1), ``samples`` < 100 or too many to fit in memory, or a
        law the rejection sampler cannot draw within its budget (``gp-base`` with a large ``n ε g``).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.fpca import FPCASpec
    >>> spec = FPCASpec(grid=fp.Grid.uniform(51), m=5, k=1, epsilon=1.0, tau=1.0)
    >>> acc = fp.plan(spec, fp.ExponentialMechanism(), n=200).accuracy(eigengap=[0.01, 0.1], samples=500)
    >>> acc["expected_angle"].dims, bool(acc["expected_angle"][1] < acc["expected_angle"][0])
    (('eigengap',), True)
    """
    from .fpca import subspace_distance
    from .samplers import SamplerBudgetError

    spec, mechanism, pl = plan.state
    gaps = np.atleast_1d(np.asarray(DEFAULT_EIGENGAPS if eigengap is None else eigengap, dtype=float)).reshape(-1)
    if gaps.size == 0 or not np.all(np.isfinite(gaps) & (gaps > 0) & (gaps <= 1)):
        raise InputError(f"eigengaps must lie in (0, 1], got {gaps.tolist()}",
                         "state the gap between the k-th and the next eigenvalue of the tau-scaled curves' second "
                         "moment, e.g. eigengap=0.1")
    if not 0.0 < float(level) < 1.0:
        raise InputError(f"level must lie in (0, 1), got {level!r}", "e.g. level=0.95")
    if int(samples) < 100:
        raise InputError(f"samples must be at least 100, got {samples!r}", "e.g. samples=1000")
    n, m, k = int(plan.attrs["n"]), spec.m, spec.k
    from ..settings import check_memory

    check_memory(8.0 * int(samples) * (3 * m * k + 4), f"{int(samples)} Monte Carlo frames",
                 "ask for fewer samples (samples=, --samples)")
    top = np.zeros(m)
    top[:k] = 1.0
    rng = np.random.default_rng(seed)
    scans = int(mechanism.iterations) if mechanism.sampler == "gibbs" else GIBBS_MIN_SCANS
    mean, quant, dist = [], [], []
    for g in gaps:
        try:
            frames = (sample_sequential_bingham(n * g * np.diag(top), spec.Sigma, pl["epsilon_steps"], int(samples),
                                                rng, sensitivity=spec.sensitivity)
                      if mechanism.sampler == "sequential" else
                      target_frames(spec, n * g * np.diag(top), int(samples), rng, scans))
        except SamplerBudgetError as err:
            raise InputError(f"the {spec.form} law at eigengap {g:g} is out of the rejection sampler's reach "
                             f"({err.args[0]})", "state a smaller eigengap, or plan the bingham form") from None
        cosines = np.linalg.svd(frames[:, :k, :], compute_uv=False)  # (samples, k): cos of the principal angles
        angle = np.degrees(np.arccos(np.clip(cosines.min(axis=1), 0.0, 1.0)))
        mean.append(angle.mean())
        quant.append(np.quantile(angle, level))
        dist.append(subspace_distance(frames, np.eye(m)[:, :k]).mean())
    how = ("sequential exact vector-Bingham steps (ACG rejection, Kent et al. 2018)" if mechanism.sampler ==
           "sequential" else
           "ACG rejection (Kent et al. 2018)" if spec.form == "bingham" and k == 1 else
           "rejection from the base measure" if spec.form == "gp-base" else
           f"{scans} Gibbs scans (Hoff 2009; the Gibbs release's law, uncertified MCMC)")
    return xr.Dataset(
        {"expected_angle": (("eigengap",), np.array(mean),
                            {"long_name": "mean largest principal angle between released and true top-k span",
                             "units": "degree"}),
         "angle_quantile": (("eigengap",), np.array(quant), {"long_name": f"{level:g} quantile of that angle",
                                                              "units": "degree"}),
         "expected_subspace_distance": (("eigengap",), np.array(dist),
                                        {"long_name": "mean 1/2 ||P_released - P_true||_F^2 (sum of squared "
                                                      "sines of the principal angles)", "units": "1"})},
        coords={"eigengap": ("eigengap", gaps, {"long_name": "stated gap of the tau-scaled second moment "
                                                             "(top k eigenvalues minus the others)"})},
        attrs={"level": float(level), "samples": int(samples), "seed": int(seed), "family": plan.family,
               "mechanism": plan.mechanism, "noise_law": plan.noise_law, "epsilon": float(plan.epsilon),
               "delta": float(plan.delta), "tau": float(spec.tau), "n": n, "k": k, "m": m, "form": spec.form,
               "sampler": how,
               "assumption": ("spiked second moment G/n = c I + eigengap on the first k basis functions (the top "
                              "components along them); a statement about the private data, not checked"),
               "source": "public plan only: Monte Carlo of the mechanism's law at a synthetic scatter matrix; no "
                         "data read, no privacy spent"})


_FALLBACKS = {
    ("gp-base", "exact"): "a fresh draw of the base law (span of k i.i.d. N(0, Sigma) vectors; public)",
    ("bingham", "exact"): ("an exact draw of the base law exp(-eps/(2 Delta) v'Sigma^-1 v) on the unit sphere (the "
                           "target of the empty data set; public)"),
    ("bingham", "gibbs"): "the column update keeps the current column (the target stays invariant)",
    ("bingham", "sequential"): ("per step, an exact draw of the step's base law exp(-eps_i/(2 Delta) v'Sigma^-1 v) on "
                                "the unit sphere of the step's complement (public given the columns released)"),
}
_SEQUENTIAL_LAW = ("sequential exponential mechanism (not the matrix Bingham): column i ~ vector Bingham "
                   "exp(eps_i/(2 Delta) v'(G - Sigma^-1)v) on the unit sphere of the orthogonal complement of columns "
                   "< i, eps_i = epsilon_steps; density fdp_ppl.fpca.sequential.sequential_logpdf")
_NUTS_INIT = ("W0 = L^-1 Z0, Z0 a uniformly random orthonormal frame: the starting span span(L W0) = span(Z0) is "
              "uniform on the Grassmannian (data-independent); W0 itself and the parametrisation Z = L W depend on the "
              "data through L (the ACG envelope of the target, nuts_parametrisation)")


def _guarantee_text(spec: FPCASpec, sampler: str, plan: dict) -> str:
    """The one-line guarantee recorded in the release attrs."""
    if not plan["certified"]:
        return (f"uncertified MCMC: ({spec.epsilon:g}, (1 + e^epsilon) gamma)-DP per frame with gamma the chain's "
                "unknown total-variation distance to the target (not bounded; delta_guaranteed = NaN); the ledger "
                "is charged epsilon only" + ("; NUTS's run time depends on the data (tree depths)"
                                              if sampler == "nuts" else ""))
    if sampler == "sequential":
        steps = ", ".join(f"{e:.6g}" for e in plan["epsilon_steps"])
        tees = " + ".join(str(t) for t in plan["proposals_steps"])
        if plan["pure"]:
            return (f"pure {plan['epsilon']:.12g}-DP per frame: k = {len(plan['epsilon_steps'])} sequential exact "
                    f"exponential-mechanism steps (epsilon_i = {steps}; sensitivity as k = 1, a projection being a "
                    "contraction), each pure epsilon''_i = log((e^epsilon_i + p*_i/f_min_i)/(1 - p*_i)) with "
                    f"p*_i <= eta f_min_i, T = {tees} proposals per frame (data-independent), composed adaptively "
                    f"(sum of epsilon''_i); a_min >= {np.exp(plan['log_a_min']):.3g} ({plan['bound']})")
        return (f"({plan['epsilon']:.12g}, {plan['delta']:.3g})-DP per frame: k sequential exact exponential-mechanism "
                f"steps (epsilon_i = {steps}), each (epsilon_i - log(1 - p*_i), p*_i) with p*_i <= delta/k, "
                f"T = {tees} proposals per frame (data-independent), composed (sums)")
    if plan["pure"]:
        return (f"pure {plan['epsilon']:.12g}-DP per frame: epsilon'' = log((e^epsilon + p*/f_min)/(1 - p*)) with "
                f"p* = (1 - a_min)^T <= eta f_min, T = {plan['proposals']} proposals per draw (data-independent), "
                f"a_min = {np.exp(plan['log_a_min']):.3g} a data-independent acceptance bound ({plan['bound']}), "
                f"f_min = exp({plan['log_f_min']:.6g}) a data-independent floor of the target's density w.r.t. the "
                "fallback law")
    return (f"({plan['epsilon']:.12g}, {plan['delta']:.3g})-DP per frame: epsilon - log(1 - p*), p* with "
            f"p* = (1 - a_min)^T, T = {plan['proposals']} proposals per draw (data-independent), a_min = "
            f"{np.exp(plan['log_a_min']):.3g} a data-independent acceptance bound ({plan['bound']})")


_SAMPLER_NAMES = {("bingham", "exact"): "exact", ("bingham", "gibbs"): "gibbs", ("bingham", "nuts"): "nuts",
                  ("bingham", "sequential"): "sequential",
                  ("gp-base", "exact"): "rejection-from-gp-base", ("gp-base", "nuts"): "nuts"}
_SAMPLER_REFERENCES = {
    ("exact", "bingham"): "Kent, Ganeiber & Mardia 2018 (ACG rejection)",
    ("exact", "gp-base"): "rejection from the base measure (Awan et al. 2019, Thm 4.1)",
    ("gibbs", "bingham"): "Hoff 2009 (column-wise Gibbs)",
    ("sequential", "bingham"): "sequential exponential mechanism (Kapralov & Talwar 2013), each step by ACG "
                               "rejection (Kent, Ganeiber & Mardia 2018)",
    ("nuts", "bingham"): "PyMC NUTS on span(Z), Z = L W with an angular-central-Gaussian base and the density "
                         "ratio as a potential (fpca_pymc_model; target: Awan et al. 2019, Sec. 5)",
    ("nuts", "gp-base"): "PyMC NUTS on span(Z), Z = L W with an angular-central-Gaussian base and the density "
                         "ratio as a potential (fpca_pymc_model; target: Awan et al. 2019, Thm 4.1-4.2)",
}


def _progress(total: int, description: str):
    """A callable advancing a rich progress bar by one step per call (closes itself at ``total``)."""
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task(description, total=total)
    bar.start()
    state = {"done": 0}

    def step():
        state["done"] += 1
        bar.advance(task)
        if state["done"] >= total:
            bar.stop()

    return step
