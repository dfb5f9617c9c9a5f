"""The sequential (deflation) exponential mechanism for k > 1 principal components: exact draws, its law, its plan.

The paper's mechanism for k > 1 (Awan, Kenney, Reimherr & Slavković 2019, §4–5) is the matrix Bingham law
``∝ etr(s VᵀAV)`` on m×k frames, for which no exact sampler with a data-independent budget is known (MACG rejection
accepts ~2·10⁻¹⁴ at k = 2 on the §6.1 design, benchmarks/bench_matrix_bingham.py). This module serves a
**different mechanism** whose every step *is* exactly sampled: k exponential mechanisms in sequence, step i on the
unit sphere of the orthogonal complement of the columns released before it (the sequential exponential
mechanism of Kapralov & Talwar 2013, "On differentially private low rank approximation", SODA; and the
"sequential exact alternative" of the spec, §4 — "a different mechanism, private by composition"; the paper
itself releases the k components jointly, spec §2.1).

**The mechanism.** ε = ε_1 + … + ε_k (default ε_i = ε/k; a public split otherwise), s_i = ε_i/(2Δ), B = G − Σ⁻¹
(G = XᵀX, rows ‖X_j‖ ≤ 1; Σ public). For i = 1..k: P_i (m × (m − i + 1)) is an orthonormal basis of the
orthogonal complement of v_1..v_{i−1} — a deterministic function of the columns already drawn (:func:`complement`;
P_1 = I); draw u on S^{m−i} from the vector Bingham ``∝ exp(s_i uᵀ P_iᵀ B P_i u)`` with the exact fixed-budget
ACG sampler (:func:`~fdp_ppl.fpca.samplers.sample_vector_bingham`, T_i proposals, an exact draw of the step's
base law ``∝ exp(−s_i uᵀP_iᵀΣ⁻¹P_iu)`` when none is accepted), and set v_i = P_i u. The frame V = [v_1 … v_k] is orthonormal.

**Proof of the guarantee.**

1. *Sensitivity.* The score of step i is u ↦ uᵀP_iᵀGP_iu = Σ_j (X_jᵀP_iu)². P_i has orthonormal columns, so
   ‖P_iu‖ = 1 and ``|X_jᵀP_iu| ≤ ‖X_j‖ ≤ 1`` (equivalently ‖P_iᵀX_j‖ ≤ ‖X_j‖: a projection is a contraction);
   replacing one record changes the score by (X'ᵀP_iu)² − (XᵀP_iu)² ∈ [−1, 1]: Δ = 1, as for k = 1
   (:attr:`~fdp_ppl.fpca.FPCASpec.sensitivity`; Δ of a privacy unit likewise). The term −uᵀP_iᵀΣ⁻¹P_iu is public
   given P_i (the base measure of step i).
2. *Each step.* Conditional on the earlier columns (and so on P_i), step i is the exponential mechanism
   ``exp(s_i · score)`` w.r.t. the public base ``exp(−s_i uᵀP_iᵀΣ⁻¹P_iu) dU`` (McSherry & Talwar 2007;
   Prop. 3.1 of the paper): ε_i-DP if sampled exactly. Its fixed-budget sampler runs T_i proposals whatever the
   data and falls back to that base law F_i (drawn exactly by a loop whose work depends on Σ and v_{<i} only, never
   on G) — the reference measure of the step's density ``f_i = dπ_i/dF_i = exp(s_i uᵀP_iᵀGP_iu)/E_{F_i}[…]``.
   Its floor is data-independent: ``f_i ≥ exp(−s_i n)``
   (:func:`~fdp_ppl.fpca.samplers.base_log_density_floor` with s_i), because 0 ≤ uᵀP_iᵀGP_iu ≤
   λ_max(P_iᵀGP_i) ≤ λ_max(G) ≤ tr G ≤ n. (W.r.t. the uniform law the floor would also hold the range of Σ⁻¹,
   6.4·10⁴ on the §6.1 design, and T_i would be ~100 times larger.) Its acceptance rate is ≥ a_min(m − i + 1) = A_1(m − i + 1)/2
   (:func:`~fdp_ppl.fpca.samplers.acg_acceptance_bound`, proved for q ≤ 10⁶ by the certificate of
   :mod:`fdp_ppl.fpca.acg_proof`, as for k = 1). With T_i such that p*_i = (1 − a_min)^{T_i} ≤ η f_min,i the step's output has density
   ``(1 − p_D) f_D + p_D`` w.r.t. F_i, within ``e^{ε''_i}`` of a neighbour's,
   ``ε''_i = log((e^{ε_i} + p*_i/f_min,i)/(1 − p*_i))`` (:func:`~fdp_ppl.fpca.samplers.pure_guarantee`); with
   ``delta``, T_i with p*_i ≤ δ/k and the step is (ε_i − log(1 − p*_i), p*_i)-DP
   (:func:`~fdp_ppl.fpca.samplers.fallback_guarantee`).
3. *Composition.* The step-i law depends on the data and on v_{<i} only (P_i is a fixed function of v_{<i}:
   post-processing of released output), so the frame's density w.r.t. the product of the base laws F_i on the
   nested spheres is the product of the step densities, and the ratio for neighbours is at most
   ``Π_i e^{ε''_i}``: the frame is **pure (Σ_i ε''_i)-DP** (adaptive composition of pure DP, Dwork & Roth 2014,
   Thm 3.16 with its adaptive form); with ``delta`` it is **(Σ_i ε'_i, Σ_i δ'_i)-DP**. ``draws`` frames compose
   to ``draws ×`` that. The released frame is then put on the public dithered lattice (post-processing).

**Not the matrix Bingham law.** The frame's law is a product of vector Bingham densities on nested complements
(:func:`sequential_logpdf`), not ``etr(s VᵀBV)``; each column gets ε/k of the budget, so a column's concentration
is that of a k = 1 release at ε/k (the utility differs from the paper's joint mechanism: worse on the leading
component, comparable on the span when the spectrum is well separated; benchmarks/bench_sequential_fpca.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from .bingham import bingham_log_normaliser
from .samplers import (_complement, acg_acceptance_bound, base_log_density_floor,
                       fallback_guarantee, proposal_budget, pure_guarantee, pure_proposal_budget, sample_vector_bingham)

complement = _complement


def step_epsilons(epsilon: float, k: int, split=None) -> np.ndarray:
    """The per-step budgets ε_1..ε_k of the sequential mechanism: ``ε · split`` (default ε/k each).

    Parameters
    ----------
    epsilon : float
        Total ε of one frame (the spec's), > 0.
    k : int
        Number of components.
    split : sequence of float, optional
        Public fractions of ε, one per component, each > 0, summing to 1 (within 1e-9).

    Returns
    -------
    ndarray, shape (k,)

    Raises
    ------
    InputError
        A split of the wrong length, a non-positive fraction, or fractions not summing to 1.

    Examples
    --------
    >>> step_epsilons(1.0, 2).tolist(), step_epsilons(1.0, 2, (0.75, 0.25)).tolist()
    ([0.5, 0.5], [0.75, 0.25])
    """
    k = int(k)
    if split is None:
        return np.full(k, float(epsilon) / k)
    w = np.asarray(split, dtype=float).reshape(-1)
    if w.size != k or not np.all(np.isfinite(w) & (w > 0)) or abs(float(w.sum()) - 1.0) > 1e-9:
        raise InputError(f"split must hold {k} positive fractions of epsilon summing to 1, got {list(np.atleast_1d(split))}",
                         f"pass e.g. split=({', '.join(['%.3g' % (1 / k)] * k)}) or none (epsilon/k each)")
    return float(epsilon) * w / w.sum()


def _step_matrix(gram, Sigma, scale_i: float) -> np.ndarray:
    """s_i (G − Σ⁻¹), the m×m parameter of step i before compression to the complement."""
    return float(scale_i) * (np.asarray(gram, dtype=float) - np.linalg.inv(np.asarray(Sigma, dtype=float)))


def sequential_logpdf(frames, gram, Sigma, eps_steps, sensitivity: float = 1.0, *, normalised: bool = True):
    """Log density of frames under the sequential mechanism's law (exact sampling, no fallback).

    The law of V = [v_1 … v_k] (m×k orthonormal) is, w.r.t. the product reference measure
    ``U_1(dv_1) U_2(dv_2 | v_1) ⋯ U_k(dv_k | v_{<k})`` — U_i the uniform probability law on the unit sphere of the
    orthogonal complement of v_{<i} (dimension m − i + 1) —

        p(V) = Π_{i=1}^k exp(s_i v_iᵀ B v_i) / C_i(v_{<i}),   B = G − Σ⁻¹,  s_i = ε_i/(2Δ),
        C_i(v_{<i}) = E_{U_i}[exp(s_i uᵀBu)] = ₁F₁(½; (m − i + 1)/2; s_i P_iᵀBP_i),

    with P_i any orthonormal basis of that complement (C_i does not depend on the choice). The normalisers depend
    on the earlier columns **and on the data** (through G): a likelihood for G must keep them. The density is
    invariant to each column's sign, but not to rotations within span(V) nor to the order of the columns: the
    release's column order is the draw order. The fixed-budget sampler's output law is
    ``Π_i [(1 − p_i) π_i + p_i F_i]`` (F_i the step's base law) with p_i ≤ p*_i (the plan's, ~η f_min): within total variation Σ p*_i of
    this one.

    Parameters
    ----------
    frames : ndarray, shape (..., m, k)
        Orthonormal frames (columns in release order).
    gram : ndarray, shape (m, m)
        G = XᵀX of the clipped, τ-scaled coefficients (or any symmetric matrix: the parameter of a likelihood).
    Sigma : ndarray, shape (m, m)
        Public base covariance Σ (:attr:`~fdp_ppl.fpca.FPCASpec.Sigma`).
    eps_steps : sequence of float, shape (k,)
        ε_1..ε_k (:func:`step_epsilons`; the release's attrs ``epsilon_steps``).
    sensitivity : float
        Δ (:attr:`~fdp_ppl.fpca.FPCASpec.sensitivity`; 1 without a privacy unit).
    normalised : bool
        False: only the exponents Σ_i s_i v_iᵀBv_i (no normaliser: cheap, but not a likelihood in G).

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    InputError
        Shapes that disagree.

    Examples
    --------
    >>> import numpy as np
    >>> V = np.eye(3)[:, :2]
    >>> float(sequential_logpdf(V, np.zeros((3, 3)), np.eye(3), [1.0, 1.0]))   # G = 0, Σ = I: uniform steps
    0.0
    """
    V = np.asarray(frames, dtype=float)
    G = np.asarray(gram, dtype=float)
    eps = np.asarray(eps_steps, dtype=float).reshape(-1)
    if V.ndim < 2 or G.shape != (V.shape[-2],) * 2 or eps.size != V.shape[-1]:
        raise InputError(f"frames (..., m, k) {V.shape}, gram (m, m) {G.shape} and {eps.size} step epsilons disagree",
                         "pass frames of shape (..., m, k), the (m, m) gram and k step epsilons")
    m, k = V.shape[-2:]
    flat = V.reshape(-1, m, k)
    B = G - np.linalg.inv(np.asarray(Sigma, dtype=float))
    s = eps / (2.0 * float(sensitivity))
    out = np.einsum("nik,ij,njk->nk", flat, B, flat) @ s
    if normalised:
        out -= bingham_log_normaliser(s[0] * B)  # step 1: the whole sphere, one constant
        for d in range(flat.shape[0]):
            for i in range(1, k):
                P = complement(flat[d, :, :i])
                out[d] -= bingham_log_normaliser(s[i] * (P.T @ B @ P))
    return out.reshape(V.shape[:-2])


def sample_sequential_bingham(gram, Sigma, eps_steps, size: int, rng: np.random.Generator, *, proposals=None,
                              sensitivity: float = 1.0) -> np.ndarray:
    """Exact draws of the sequential mechanism (module docstring): ``size`` frames, column i by ACG rejection.

    Parameters
    ----------
    gram : ndarray, shape (m, m)
        G = XᵀX (data holder only).
    Sigma : ndarray, shape (m, m)
        Public Σ.
    eps_steps : sequence of float, shape (k,)
        ε_1..ε_k.
    size : int
        Number of frames.
    rng : numpy.random.Generator
    proposals : sequence of int, shape (k,), optional
        Fixed budgets T_1..T_k (:func:`sequential_plan`): every step of every frame runs exactly T_i proposals
        (the work does not depend on the data), an exact draw of the step's base law
        ``∝ exp(−s_i uᵀP_iᵀΣ⁻¹P_iu)`` when none is accepted. None: the run-until-accepted loop (tests and public synthetic matrices only: its run time
        depends on the data).
    sensitivity : float
        Δ.

    Returns
    -------
    ndarray, shape (size, m, k)
        Orthonormal frames, columns in draw order.

    Examples
    --------
    >>> import numpy as np
    >>> V = sample_sequential_bingham(np.diag([40.0, 10, 0, 0]), np.eye(4), [1.0, 1.0], 3, np.random.default_rng(0),
    ...                               proposals=[200, 200])
    >>> V.shape, bool(np.allclose(np.swapaxes(V, 1, 2) @ V, np.eye(2)))
    ((3, 4, 2), True)
    """
    G = np.asarray(gram, dtype=float)
    m = G.shape[0]
    eps = np.asarray(eps_steps, dtype=float).reshape(-1)
    k = eps.size
    Sinv = np.linalg.inv(np.asarray(Sigma, dtype=float))
    B = G - Sinv
    s = eps / (2.0 * float(sensitivity))
    out = np.zeros((int(size), m, k))
    for d in range(int(size)):
        for i in range(k):
            P = complement(out[d, :, :i])
            kw = {} if proposals is None else {"proposals": int(proposals[i]), "fallback": -s[i] * (P.T @ Sinv @ P)}
            u = sample_vector_bingham(s[i] * (P.T @ B @ P), 1, rng, **kw)[0]
            v = P @ u
            out[d, :, i] = v / np.linalg.norm(v)
    return out


def sequential_plan(Sigma, n: int, eps_steps, *, delta: float | None = None, eta: float = 1e-10,
                    sensitivity: float = 1.0) -> dict:
    """The data-independent per-step proposal budgets of the sequential mechanism and the frame's guarantee.

    Step i (sphere S^{m−i}, q_i = m − i + 1): a_min,i = A_1(q_i)/2
    (:func:`~fdp_ppl.fpca.samplers.acg_acceptance_bound`), f_min,i = exp(−s_i n) w.r.t. the step's base law
    (module docstring, proof step 2). Pure (``delta=None``): T_i with p*_i ≤ η f_min,i, ε'' = Σ_i ε''_i. With ``delta``: T_i with
    p*_i ≤ δ/k, ε' = Σ_i (ε_i − log(1 − p*_i)), δ' = Σ_i p*_i ≤ δ.

    Parameters
    ----------
    Sigma : ndarray, shape (m, m)
    n : int
        Public number of records (or units).
    eps_steps : sequence of float, shape (k,)
    delta : float, optional
        Per-frame fallback bound of the (ε', δ') variant, in (0, 1).
    eta : float
        η of the pure plan, in (0, 1).
    sensitivity : float
        Δ.

    Returns
    -------
    dict
        ``proposals`` (Σ_i T_i per frame), ``proposals_steps`` (T_i), ``log_p_star_steps``, ``log_a_min_steps``,
        ``log_f_min_steps``, ``epsilon_steps`` (ε_i), ``epsilon_guaranteed_steps`` (ε''_i or ε'_i),
        ``log_p_star`` (log Σ p*_i), ``p_star``, ``log_a_min`` (the smallest), ``log_f_min`` (of step 1; NaN with
        delta), ``epsilon``, ``delta`` (the frame's), ``pure``, ``certified`` = 1, ``bound``.

    Examples
    --------
    >>> import numpy as np
    >>> pl = sequential_plan(np.diag(np.arange(1, 41.0) ** -3), 500, [0.5, 0.5])
    >>> pl["proposals_steps"], round(pl["epsilon"], 9)
    ([2099, 2072], 1.0)
    """
    eps = np.asarray(eps_steps, dtype=float).reshape(-1)
    k = eps.size
    m = np.asarray(Sigma).shape[0]
    T, lp, la, lf, eg = [], [], [], [], []
    for i in range(k):
        s_i = float(eps[i]) / (2.0 * float(sensitivity))
        log_a = acg_acceptance_bound(m - i)  # q_i = m − i for 0-based i
        log_f = base_log_density_floor(s_i, n)
        if delta is None:
            t, log_p = pure_proposal_budget(log_a, log_f, float(eta))
            e = pure_guarantee(float(eps[i]), log_p, log_f)
        else:
            t, p = proposal_budget(log_a, float(delta) / k)
            log_p = math.log(p) if p > 0 else -math.inf
            e = fallback_guarantee(float(eps[i]), p)[0]
            log_f = float("nan")
        T.append(int(t))
        lp.append(float(log_p))
        la.append(float(log_a))
        lf.append(float(log_f))
        eg.append(float(e))
    log_p_tot = float(np.logaddexp.reduce(lp)) if k else -math.inf
    p_tot = math.exp(log_p_tot)
    return {"proposals": int(sum(T)), "proposals_steps": T, "log_p_star_steps": lp, "log_a_min_steps": la,
            "log_f_min_steps": lf, "epsilon_steps": [float(e) for e in eps], "epsilon_guaranteed_steps": eg,
            "p_star": p_tot, "log_p_star": log_p_tot, "log_a_min": min(la), "log_f_min": lf[0],
            "bound": "proved", "certified": 1, "pure": int(delta is None),
            "epsilon": float(sum(eg)), "delta": 0.0 if delta is None else float(p_tot)}


__all__ = ["step_epsilons", "bingham_log_normaliser", "sequential_logpdf", "sample_sequential_bingham",
           "sequential_plan", "complement"]
