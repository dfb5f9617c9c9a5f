"""Samplers for Bingham-type densities on spheres and Stiefel manifolds.

* :func:`sample_vector_bingham` — exact draws from the vector Bingham law
  ``f(x) ∝ exp(xᵀAx)`` on the unit sphere S^{q-1} by rejection from an angular
  central Gaussian (ACG) envelope (Kent, Ganeiber & Mardia 2018, JCGS 27:291–301).
* :func:`gibbs_matrix_bingham` — Gibbs sampler for the matrix Bingham law
  ``f(V) ∝ etr(VᵀAV)`` on orthonormal m×k frames: one scan visits the columns in
  random order and redraws column r exactly from its conditional, a vector Bingham
  on the unit sphere of the orthogonal complement of the other columns (Hoff 2009,
  JCGS 18:438–456). The conditional draw uses the exact ACG sampler above instead
  of Hoff's Beta rejection (same conditional law, no θ → 1 loop).
* :func:`rejection_from_gp_base` — exact draws of the Theorem 4.1 law
  ``∝ exp(ε/(2Δ) tr(QᵀGQ))`` with respect to the law of span(Z), Z with k i.i.d.
  N(0, Σ) columns (Awan et al. 2019, Thm 4.1–4.2), by rejection from that base.

Two stopping rules (issue 22; DESIGN invariant 9):

* ``proposals=T`` (what :func:`fdp_ppl.release` of an FPCA fit uses): every draw
  costs exactly T proposals, generated in fixed batches whatever is accepted
  (the RNG consumption and the work are data-independent); the first accepted
  proposal is released and, when none is, a draw from a public fallback law.
  With p_D the probability that all T proposals of a draw are rejected and a
  data-independent bound ``p* ≥ sup_D p_D``, the output law is
  ``(1 − p_D) π_D + p_D F`` and the mechanism is ``(ε − log(1 − p*), p*)``-DP
  (:func:`fallback_guarantee`). ``p* = (1 − a_min)^T`` with ``a_min`` a
  data-independent lower bound on the acceptance rate:
  :func:`gp_base_acceptance_bound` (proved) and :func:`acg_acceptance_bound`
  (half the vertex value A_1(q), in closed form; proved for q ≤ 10⁶ by reducing the rate to the
  density at its mean of a convex combination of χ²_1 variables and bounding that density below,
  :mod:`fdp_ppl.fpca.acg_proof`).
  **Pure ε-DP** (the default of the release): when the fallback law F is exactly the reference
  measure of the target's density f_D = dπ_D/dF and ``f_D ≥ f_min`` with f_min data-independent,
  choosing T so that
  ``p* ≤ η f_min`` (:func:`pure_proposal_budget`) makes the release pure ε''-DP with
  ``ε'' = log((e^ε + p*/f_min)/(1 − p*))`` (:func:`pure_guarantee`). F is the mechanism's base law
  (the target of the empty data set: ν for the GP base, the vector Bingham ``∝ exp(−s xᵀΣ⁻¹x)`` for the
  Bingham form and each sequential step, drawn exactly by a loop whose work depends on Σ alone;
  ``fallback=`` of :func:`sample_vector_bingham`), for which ``f_min = e^{−sn}``
  (:func:`base_log_density_floor`); w.r.t. the uniform law the floor also holds the range of Σ⁻¹
  (:func:`bingham_log_density_floor`, the Gibbs path) and T is up to ~100 times larger.
* ``proposals=None`` (the default of the low-level functions): the historical
  loop until enough acceptances, with a cap ``max_proposals`` raising
  :class:`SamplerBudgetError`. Its run time and its failure depend on the data:
  never use it for a release.

All functions take a ``numpy.random.Generator`` and work in float64; none is
floating-point safe (the released frame is a float computed from the data; a release puts it on the public
dithered lattice of :func:`fdp_ppl.noise.snapping.snap_frame`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import integrate, optimize, special

from ..errors import FdpPplError
from .acg_proof import NU_MAX, R_PROVED

#: proposals generated per vectorised batch of the fixed-budget samplers (data-independent)
BATCH = 65536


class SamplerBudgetError(FdpPplError, RuntimeError):
    """An exact rejection sampler exceeded its data-independent cap on proposals."""


def gp_base_acceptance_bound(sigma, k: int, t: float) -> float:
    """Log of a data-independent lower bound on the acceptance rate of rejection from the GP base.

    For the Theorem 4.1 target ``∝ exp(s tr(QᵀGQ))`` w.r.t. ν = law of span(Z), Z with k
    i.i.d. N(0, Σ) columns, proposals from ν accepted with probability
    ``exp(s (tr(QᵀGQ) − Σ_{j≤k} λ_j(G)))`` have acceptance rate a_D ≥ a_min for every
    dataset with n rows of norm ≤ 1, where (t = s n)::

        a_min = c_Σ^k · E[exp(−t max_{j≤k} D_j)] + (1 − c_Σ^k) · e^{−t},
        D_j i.i.d. Beta((m−1)/2, 1/2),   c_Σ = Π_i (σ_min / σ_i)^{1/2}.

    Proof. With u_j the top-k eigenvectors of G, x_j = z_j/‖z_j‖ ∈ span(Q) gives
    ``‖P_Q u_j‖² ≥ (x_jᵀu_j)²``, so ``tr(QᵀGQ) − Σ_{j≤k}λ_j ≥ −Σ_{j≤k} λ_j (1 − (x_jᵀu_j)²)
    ≥ −n max_j (1 − (x_jᵀu_j)²) ≥ −n`` (λ_j ≥ 0, Σ_j λ_j ≤ tr G ≤ n since ‖X_i‖ ≤ 1). The x_j
    are i.i.d. ACG(Σ), whose density w.r.t. the uniform law U, ``det(Σ)^{-1/2}(xᵀΣ⁻¹x)^{-m/2}``,
    is ≥ c_Σ; so the law of (x_1, …, x_k) is the mixture ``c_Σ^k U^{⊗k} + (1 − c_Σ^k) R`` with R
    some probability law. Under U, ``(x_jᵀu_j)² ~ Beta(1/2, (m−1)/2)`` whatever u_j (first term);
    under R the integrand is ≥ e^{−t} (second term). For k = 1,
    ``E[exp(−tD)] = e^{−t} ₁F₁(1/2; m/2; t)``. The second term (issue 22 follow-up) makes the
    bound nearly tight when c_Σ is tiny: on the issue's design (n = 28, Gaussian-kernel
    eigenbasis ρ = 1, m = 5, ε = 1) it is 8.3·10⁻⁷ against a measured worst case of 8.33·10⁻⁷
    (curves along the eigenvector of σ_min), where the first term alone gave 1.07·10⁻⁹.

    Parameters
    ----------
    sigma : ndarray, shape (m, m)
        Public base covariance Σ (positive definite).
    k : int
        Frame size, 1 ≤ k ≤ m.
    t : float
        s·n = ε n/(2Δ) (public).

    Returns
    -------
    float
        ``log a_min`` (≤ 0); 0 when k = m (every proposal is accepted).
    """
    sig = np.linalg.eigvalsh(np.asarray(sigma, dtype=float))
    m = sig.size
    if k >= m:
        return 0.0
    log_c = 0.5 * float(np.sum(np.log(sig[0] / sig)))
    a, b = (m - 1) / 2.0, 0.5
    t = float(t)

    def integrand(u):  # t ∫_0^1 e^{-ty} F(y)^k dy with u = t y
        return math.exp(-u) * special.betainc(a, b, min(u / t, 1.0)) ** k

    pts = [p for p in (1.0, 10.0, 50.0) if p < t]
    val, _ = integrate.quad(integrand, 0.0, t, points=pts or None, limit=500, epsabs=0.0, epsrel=1e-10)
    expect = math.exp(-t) + val
    log_ck = k * log_c
    log_a = log_ck + math.log(expect)
    if log_ck < 0.0:  # the mass of ACG(Σ)^k beyond c_Σ^k U^{⊗k}, on which the acceptance is ≥ e^{-t}
        log_a = float(np.logaddexp(log_a, math.log(-math.expm1(log_ck)) - t))
    return log_a + math.log1p(-1e-6)  # 1e-6: margin for the quadrature error


def base_log_density_floor(scale: float, n: int) -> float:
    """Log of a data-independent lower bound f_min of an exponential mechanism's density w.r.t. its own base law.

    The target is ``f_D = exp(s u_D) / E_base[exp(s u_D)]`` w.r.t. a public base law, with a score
    ``0 ≤ u_D ≤ λ_max(G) ≤ tr G ≤ n`` (rows of norm ≤ 1), so ``f_D ≥ exp(0)/exp(s n)``: ``log f_min = −s n``.
    The forms and their base laws (the fallback law of the fixed-budget sampler):

    * ``gp-base``: u_D(Q) = tr(QᵀGQ) ≤ Σ_{j≤k} λ_j(G) ≤ tr G; base ν, the law of span(Z), Z with k i.i.d.
      N(0, Σ) columns;
    * ``bingham``, k = 1: u_D(x) = xᵀGx ≤ λ_max(G); base the vector Bingham law ``∝ exp(−s xᵀΣ⁻¹x)`` on the
      sphere (the target of the empty data set, G = 0);
    * the sequential mechanism's step i: u_D(u) = uᵀP_iᵀGP_iu ≤ λ_max(G) (a projection is a contraction); base
      ``∝ exp(−s_i uᵀP_iᵀΣ⁻¹P_iu)`` on the step's sphere (public given the columns already released).

    Unlike the floor w.r.t. the uniform law (:func:`bingham_log_density_floor`), this one does not contain the
    range of Σ⁻¹ (6.4·10⁴ on the paper's §6.1 design), so the pure plan's proposal budget is about
    ``(log(1/η) + s n)/a_min`` instead of ``(log(1/η) + s(n + range Σ⁻¹))/a_min``.

    Parameters
    ----------
    scale : float
        s = ε/(2Δ) (of the step, for the sequential mechanism).
    n : int
        Number of records (public).

    Returns
    -------
    float

    Examples
    --------
    >>> base_log_density_floor(0.5, 500)
    -250.0
    """
    return -float(scale) * int(n)


def bingham_log_density_floor(sigma, scale: float, n: int) -> float:
    """Log of a data-independent lower bound f_min of the Bingham target's density w.r.t. the uniform law.

    ``f_D(x) = exp(xᵀAx) / E_U[exp(yᵀAy)] ≥ exp(λ_min(A) − λ_max(A))`` with ``A = s(G − Σ⁻¹)``.
    By Weyl's inequalities ``λ_max(A) ≤ s(λ_max(G) − λ_min(Σ⁻¹))`` and ``λ_min(A) ≥ −s λ_max(Σ⁻¹)``
    (G is PSD), and ``λ_max(G) ≤ tr G ≤ n`` (rows of norm ≤ 1), so
    ``log f_min = −s (n + λ_max(Σ⁻¹) − λ_min(Σ⁻¹))``. The same bound holds for the density of one
    column on the unit sphere (k = 1) and, with the same A, of a frame w.r.t. the uniform law on
    frames (``tr(VᵀAV)`` ranges over an interval of length ≤ k·range(A)); the release uses it for k = 1.

    Parameters
    ----------
    sigma : ndarray, shape (m, m)
        Public base covariance Σ.
    scale : float
        s = ε/(2Δ).
    n : int
        Number of records (public).

    Returns
    -------
    float
    """
    w = np.linalg.eigvalsh(np.linalg.inv(np.asarray(sigma, dtype=float)))
    return -float(scale) * (int(n) + float(w[-1] - w[0]))


def acg_vertex_acceptance(q: int) -> float:
    """Log of A_1(q), the acceptance rate of the ACG sampler at the vertex of its parameter simplex, in closed form.

    ``A_1(q) = (2e/q)^{q/2} Γ(q/2) / sqrt(2π e)`` (0.658 at q = 2, 0.397 at q = 5, 0.136 at q = 40;
    ``A_1(q) → sqrt(2/(e q))`` as q → ∞). It is the limit of the acceptance rate when q − 1 of
    the shifted eigenvalues of −A tend to infinity (:func:`acg_acceptance_bound`, identity (3)),
    and equals the earlier quadrature ``E[(V e^{1−V})^{q/2}]``, ``V = (1 + (q − 1)F)/q``,
    F ~ F(q − 1, 1), to 1e-11.

    Parameters
    ----------
    q : int
        Sphere S^{q−1} in R^q (q ≥ 1; q = m − k + 1 for a Gibbs column update).

    Returns
    -------
    float
        ``log A_1(q)``; 0 when q = 1 (the sphere is two points, every proposal accepted).

    Examples
    --------
    >>> import math
    >>> round(math.exp(acg_vertex_acceptance(5)), 4)
    0.3965
    """
    q = int(q)
    if q <= 1:
        return 0.0
    return 0.5 * q * math.log(2.0 * math.e / q) + float(special.gammaln(0.5 * q)) - 0.5 * math.log(2.0 * math.pi * math.e)


@lru_cache(maxsize=None)
def acg_acceptance_bound(q: int) -> float:
    """Log of the data-independent acceptance bound a_min of the ACG sampler on S^{q−1}: ``A_1(q) / 2`` (proved).

    **Proof.** Let λ_1 = 0 ≤ λ_2 ≤ … ≤ λ_q be the shifted eigenvalues of −A, b ∈ [1, q]
    the root of ``Σ_i 1/(b + 2λ_i) = 1`` and ``p_i = 1/(b + 2λ_i)`` (a point of the open simplex;
    every such point arises, with b = 1/max p). With Kent et al.'s (2018) envelope, Ω = I + 2Λ/b,
    ``M = e^{−(q−b)/2}(q/b)^{q/2}``:

    (1) *Per proposal* (Kent et al. 2018, §3): ``e^{−u}(1 + 2u/b)^{q/2} ≤ M`` for u = xᵀΛx ≥ 0
        (maximum at u = (q − b)/2), and a proposal is accepted with probability
        ``(W e^{1−W})^{q/2}``, ``W = ‖g‖²/(q Σ_i p_i g_i²)``, g ~ N(0, I_q).
    (2) *The rate without b.* The rate is ``a = Z_f/(M Z_g)`` with ``Z_f = E_U[e^{−xᵀΛx}]`` and
        ``Z_g = E_U[(xᵀΩx)^{−q/2}] = |Ω|^{−1/2} = Π_i (b p_i)^{1/2}`` (U uniform on the sphere);
        since Σ x_i² = 1, ``e^{−xᵀΛx} = e^{b/2} exp(−½ Σ_i x_i²/p_i)`` and

            a(p) = (e/q)^{q/2} Π_i p_i^{−1/2} E_U[exp(−½ Σ_i x_i²/p_i)].

    (3) *Anchor identity.* Write d_i = x_i² (Dirichlet(½, …, ½)) and integrate out the anchor
        d_1 = 1 − Σ_{i≥2} d_i, whose factor in the Dirichlet density is (1 − s)^{−1/2}; the rest is
        a product of Gamma(½) kernels:

            a(λ) = A_1(q) · (b e^{1−b})^{1/2} · Π_{i≥2} (1 + b/(2λ_i))^{1/2} · E[(1 − Σ_{i≥2} Y_i)_+^{−1/2}],

        Y_i ~ Gamma(½, rate λ_i) independent, ``A_1(q) = (2e/q)^{q/2} Γ(q/2)/sqrt(2πe)``
        (:func:`acg_vertex_acceptance`). Equivalently (the Bingham normaliser in (2) is the density of
        a weighted χ² on the sphere ‖y‖ = 1 after y_i = √p_i z_i):

            a(p) = (2e/q)^{q/2} Γ(q/2) · f_T(1),   T = Σ_i p_i Z_i²,  Z_i i.i.d. N(0, 1),

        the density at its mean of a convex combination of independent χ²_1 variables; at the
        vertex T = Z_1² and f_T(1) = (2πe)^{−1/2}. Checked against quadrature of (2), of the
        χ² convolution and Monte Carlo of (1) in tests/fpca/test_privacy.py.
    (4) *Consequences.* As λ_2, …, λ_q → ∞: b → 1, the product → 1, Σ Y_i → 0 in probability, and
        ``a → A_1(q)`` (the vertex value; the limit computed before by quadrature). At λ = 0
        (uniform target) a = 1. From (3) with (1 − s)^{−1/2} ≥ 1 and Markov's inequality,
        ``a ≥ A_1(q) (b e^{1−b})^{1/2} Π_{i≥2}(1 + b/(2λ_i))^{1/2} (1 − Σ_{i≥2} 1/(2λ_i))_+``; from (2)
        and Jensen, ``a ≥ Π_i (e^{1 − 1/r_i}/r_i)^{1/2}``, r_i = q p_i (tight near the uniform target).

    (5) *The bound (proved).* ``f_T(1) ≥ ½ f_{χ²_1}(1)`` for every p with ``ν = Σp_i²/p_max² ≤ 10⁶`` (so every q ≤ 10⁶,
        since ν ≤ 1/p_max ≤ q), hence **a ≥ A_1(q)/2** over the whole simplex. With c = p_1 ≥ p_2 ≥ … (sorted),
        ρ = p_2/c, ν ∈ [1 + ρ², 1/c], three lower bounds of the form f_T(1) ≥ B(ν, ρ)/c ≥ ν B(ν, ρ):
        (G1) condition on c Z_1²: ``f_T(1) = E[h(D)]/c``, h(d) = f_{χ²_1}(1 − d) (0 for d ≥ 1), D of mean 0 and
        variance 2(ν − 1), and a quadratic minorant α − βd − γd² ≤ h gives B ≥ α − 2γ(ν − 1);
        (G2) the same conditioning on the two largest terms (their density is e^{−y/2} I_0-type, in closed form),
        variance 2(ν − 1 − ρ²);
        (F) Fourier inversion ``f_T(1) = (πc)^{−1}∫_0^∞ Re ψ(τ/c) dτ`` with explicit bounds on ``|ψ|`` (from above and
        below) and on arg ψ in terms of (ν, ρ) only.
        A finite certificate over cells of (ν, ρ), using monotonicity of each bound in ν and ρ and safe-side
        Riemann sums, gives ``ν_a max(G1, G2, F) ≥ 0.536 f_{χ²_1}(1)`` on every cell (worst near ν = 3.6, ρ = 1,
        i.e. about four comparable weights). Code and full statement: :mod:`fdp_ppl.fpca.acg_proof`
        (``R_PROVED = 0.5``); docs/mechanisms/expmech_fpca.md, "The ACG acceptance bound".

    **Not proved**: that the infimum is the vertex value A_1(q) (R ≥ 1; adversarial minimisation over the
    simplex never goes below 0.95 A_1(q) for q ≤ 12, tests/fpca/test_privacy.py). A proof of R ≥ 1 would halve
    T: ``T ≈ log(1/(η f_min))/a_min``.

    Parameters
    ----------
    q : int
        Dimension of the ambient space (≥ 1).

    Returns
    -------
    float
        ``log a_min`` (0 for q = 1).

    Raises
    ------
    ValueError
        q > 10⁶ (beyond the certificate of :mod:`fdp_ppl.fpca.acg_proof`).

    Examples
    --------
    >>> import math
    >>> round(math.exp(acg_acceptance_bound(40)), 4)    # A_1(40)/2
    0.0681
    """
    q = int(q)
    if q <= 1:
        return 0.0
    if q > NU_MAX:
        raise ValueError(f"the ACG acceptance bound is proved for q <= {NU_MAX:.0e}, got q = {q}")
    return acg_vertex_acceptance(q) + math.log(R_PROVED)


def proposal_budget(log_a_min: float, delta: float) -> tuple[int, float]:
    """The data-independent number of proposals T per draw for a fallback probability ≤ δ.

    Parameters
    ----------
    log_a_min : float
        Log of a data-independent lower bound on the acceptance rate.
    delta : float
        Target bound on the probability that a draw falls back, in (0, 1).

    Returns
    -------
    T : int
        ``ceil(log δ / log(1 − a_min))`` (1 when a_min = 1).
    p_star : float
        ``(1 − a_min)^T ≤ δ``, the fallback probability bound actually reached.
    """
    T, log_p = _budget(log_a_min, math.log(delta))
    return T, math.exp(log_p)


def _budget(log_a_min: float, log_target: float) -> tuple[int, float]:
    """T and ``log p* = T log(1 − a_min) ≤ log_target`` (log p* = −inf when a_min = 1)."""
    a = math.exp(log_a_min)
    if a >= 1.0:
        return 1, -math.inf
    log1m = math.log1p(-a) if a > 1e-12 else -a
    T = max(1, math.ceil(log_target / log1m))
    return T, T * log1m


def pure_proposal_budget(log_a_min: float, log_f_min: float, eta: float) -> tuple[int, float]:
    """The data-independent T per draw with fallback probability ``p* ≤ η f_min`` (pure ε-DP, :func:`pure_guarantee`).

    Parameters
    ----------
    log_a_min : float
        Log of a data-independent lower bound on the acceptance rate.
    log_f_min : float
        Log of a data-independent lower bound of the target's density w.r.t. the fallback law
        (:func:`base_log_density_floor`, :func:`bingham_log_density_floor`).
    eta : float
        In (0, 1): the target ratio p*/f_min.

    Returns
    -------
    T : int
        ``ceil((log η + log f_min) / log(1 − a_min))``.
    log_p_star : float
        ``T log(1 − a_min) ≤ log η + log f_min`` (log, since p* may underflow).
    """
    return _budget(log_a_min, math.log(eta) + float(log_f_min))


def pure_guarantee(epsilon: float, log_p_star: float, log_f_min: float) -> float:
    """ε'' of an ε-DP exponential mechanism sampled exactly except for a fallback to its own reference law.

    Let F be the fallback law and f_D = dπ_D/dF the target's density w.r.t. F, with
    ``f_D ≤ e^ε f_D'`` pointwise (exponential mechanism: Awan et al. 2019, Prop. 3.1; the
    normalisers differ by at most e^{sΔ}) and ``f_D ≥ f_min`` (data-independent). A draw is
    π_D with probability 1 − p_D and F with probability p_D ≤ p*, so its density w.r.t. F is
    ``g_D = (1 − p_D) f_D + p_D`` and, pointwise,

        g_D / g_D' ≤ (f_D + p*) / ((1 − p*) f_D') ≤ (e^ε + p*/f_min) / (1 − p*).

    The release is therefore **pure ε''-DP**, ``ε'' = log(e^ε + p*/f_min) − log(1 − p*)``
    (≤ ε + log(1 + η e^{−ε}) − log(1 − p*) when p* ≤ η f_min). ``draws`` independent draws
    compose to ``draws · ε''``.

    Parameters
    ----------
    epsilon : float
    log_p_star : float
        Log of the data-independent bound p* on the fallback probability.
    log_f_min : float
        Log of f_min.

    Returns
    -------
    float
        ε''.
    """
    p = math.exp(log_p_star)
    return float(np.logaddexp(float(epsilon), float(log_p_star) - float(log_f_min)) - math.log1p(-p))


def fallback_guarantee(epsilon: float, p_star: float) -> tuple[float, float]:
    """(ε', δ') of an ε-DP exact sampler that falls back with probability ≤ p* (data-independent bound).

    The output law is ``(1 − p_D) π_D + p_D F_D``, p_D ≤ p*, π_D the ε-DP target and F_D any
    law: ``P_D(S) ≤ π_D(S) + p* ≤ e^ε π_D'(S) + p* ≤ e^ε P_D'(S)/(1 − p*) + p*``.

    Returns
    -------
    (float, float)
        ``(ε − log(1 − p*), p*)``.
    """
    return float(epsilon - math.log1p(-p_star)), float(p_star)


def batches(T: int, size: int) -> int:
    """Number of fixed batches of :func:`_fixed_budget` for T proposals per draw and ``size`` draws (public)."""
    return -(-int(T) * int(size) // BATCH)


def _fixed_budget(propose, T: int, size: int, rng: np.random.Generator, fallback, shape, progress=None):
    """First accepted of exactly T proposals per draw (all generated, in fixed batches); else the fallback.

    ``propose(b, rng) -> (candidates (b, *shape), log_accept (b,))``; ``fallback(size, rng) ->
    (size, *shape)`` is drawn for every draw (constant RNG use) and used where nothing was accepted.
    ``progress()``, if given, is called once per batch (:func:`batches` calls: public, data-independent).

    Returns
    -------
    out : ndarray, shape (size, *shape)
    n_fallback : int
        Data-dependent: for tests only, never released.
    """
    out = np.empty((size, *shape))
    found = np.zeros(size, dtype=bool)
    total = int(T) * int(size)
    start = 0
    while start < total:
        nb = min(BATCH, total - start)
        cand, log_acc = propose(nb, rng)
        ok = np.log(rng.random(nb)) < log_acc
        idx = np.flatnonzero(ok)
        if idx.size:
            d = (start + idx) // T
            d_u, first = np.unique(d, return_index=True)
            new = ~found[d_u]
            out[d_u[new]] = cand[idx[first[new]]]
            found[d_u[new]] = True
        start += nb
        if progress is not None:
            progress()
    fb = fallback(size, rng)
    out[~found] = fb[~found]
    return out, int(size - found.sum())


def acg_envelope(A):
    """Constants of the ACG envelope for ``exp(xᵀAx)`` on S^{q-1} (Kent et al. 2018, §3).

    Parameters
    ----------
    A : ndarray, shape (q, q)
        Symmetric parameter.

    Returns
    -------
    dict
        ``U`` (q, q) eigenvectors of −A, ``lam`` (q,) eigenvalues of −A shifted
        so the smallest is 0 (ascending), ``b`` in [1, q] the root of
        ``Σ 1/(b + 2λ_i) = 1``, ``omega`` (q,) = 1 + 2λ/b, ``log_m`` the log of
        the bound ``M = exp(−(q − b)/2) (q/b)^{q/2}``, ``shift`` = min eigenvalue of −A.
    """
    A = np.asarray(A, dtype=float)
    A = 0.5 * (A + A.T)
    w, U = np.linalg.eigh(-A)
    shift = float(w[0])
    lam = np.maximum(w - shift, 0.0)
    q = lam.size

    def h(b):
        return np.sum(1.0 / (b + 2.0 * lam)) - 1.0

    if q == 1 or h(float(q)) >= 0.0:
        b = float(q)
    else:
        lo = 1.0
        b = float(optimize.brentq(h, lo, float(q), xtol=1e-14, rtol=1e-14)) if h(lo) > 0 else lo
    omega = 1.0 + 2.0 * lam / b
    log_m = -(q - b) / 2.0 + (q / 2.0) * np.log(q / b)
    return {"U": U, "lam": lam, "b": b, "omega": omega, "log_m": float(log_m), "shift": shift}


def sample_vector_bingham(A, size: int, rng: np.random.Generator, *, max_proposals: int = 10_000_000,
                          proposals: int | None = None, fallback=None, return_stats: bool = False):
    """Exact draws from the vector Bingham law ``f(x) ∝ exp(xᵀAx)`` on the unit sphere.

    Rejection with the angular central Gaussian envelope ``g(x) ∝ (xᵀΩx)^{-q/2}``,
    ``Ω = I + 2Λ/b`` (Kent, Ganeiber & Mardia 2018, eqs. 3.1–3.4): propose
    ``y ~ N(0, Ω⁻¹)``, ``x = y/‖y‖``, accept with probability
    ``exp(−xᵀΛx) (xᵀΩx)^{q/2} / M``.

    Parameters
    ----------
    A : ndarray, shape (q, q)
        Symmetric parameter (dimensionless; e.g. ``(ε/2)(G − Σ⁻¹)``).
    size : int
        Number of draws.
    rng : numpy.random.Generator
    max_proposals : int
        Cap of the historical loop (``proposals=None``); :class:`SamplerBudgetError` when hit.
        That loop's run time is geometric with a data-dependent rate: not for releases.
    proposals : int, optional
        Fixed budget T: exactly T proposals per draw (module docstring), the first accepted
        released, a draw of the fallback law (public) when none is. Choose T with
        :func:`proposal_budget` or :func:`pure_proposal_budget` and :func:`acg_acceptance_bound`.
    fallback : ndarray, shape (q, q), optional
        With ``proposals``: the public parameter A₀ of the fallback law, the vector Bingham ``∝ exp(xᵀA₀x)``
        (the mechanism's base law, e.g. ``−s Σ⁻¹``), drawn exactly for every draw by the run-until-accepted
        loop — its work depends on A₀ alone, never on A. None: the uniform law on the sphere.
    return_stats : bool
        Also return ``{"proposals": int, "acceptance": float}`` (and ``"fallbacks"`` with
        ``proposals``); these depend on the data: tests only.

    Returns
    -------
    ndarray, shape (size, q)
        Unit vectors. (With ``return_stats``, a tuple (draws, stats).)

    Raises
    ------
    SamplerBudgetError
        Only without ``proposals``: more than ``max_proposals`` proposals were needed.
    """
    env = acg_envelope(A)
    q = env["lam"].size
    if proposals is not None:
        sd = 1.0 / np.sqrt(env["omega"])

        def propose(b, g):  # y ~ N(0, Ω⁻¹); the ratio at x = y/‖y‖ from y (scale-free), only kept ones normalised
            y = g.standard_normal((b, q)) * sd
            y2 = y * y
            r2 = y2.sum(axis=1)
            return y, -(y2 @ env["lam"]) / r2 + (q / 2.0) * np.log((y2 @ env["omega"]) / r2) - env["log_m"]

        def base(b, g):  # the public fallback law, rotated back below
            if fallback is None:
                y = g.standard_normal((b, q))
                return (y / np.linalg.norm(y, axis=1, keepdims=True)) @ env["U"]
            return sample_vector_bingham(fallback, b, g, max_proposals=max_proposals) @ env["U"]

        x, n_fb = _fixed_budget(propose, int(proposals), size, rng, base, (q,))
        draws = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ env["U"].T
        if return_stats:
            return draws, {"proposals": int(proposals) * size, "fallbacks": n_fb,
                           "acceptance": float("nan")}
        return draws
    out = np.empty((size, q))
    got, proposed = 0, 0
    sd = 1.0 / np.sqrt(env["omega"])
    while got < size:
        batch = int(min(max(64, 4 * (size - got) * np.exp(min(env["log_m"], 5.0))), 1_000_000))
        y = rng.standard_normal((batch, q)) * sd
        x = y / np.linalg.norm(y, axis=1, keepdims=True)
        x2 = x * x
        log_acc = -(x2 @ env["lam"]) + (q / 2.0) * np.log(x2 @ env["omega"]) - env["log_m"]
        ok = np.log(rng.uniform(size=batch)) < log_acc
        idx = np.flatnonzero(ok)
        take = idx[: size - got]
        if take.size:
            # proposals used: everything up to and including the last accepted one
            used = (take[-1] + 1) if got + take.size == size else batch
        else:
            used = batch
        proposed += int(used)
        out[got: got + take.size] = x[take]
        got += take.size
        if proposed > max_proposals and got < size:
            raise SamplerBudgetError(f"the ACG rejection sampler needed more than {max_proposals} proposals",
                                     "raise max_proposals")
    draws = out @ env["U"].T
    if return_stats:
        return draws, {"proposals": proposed, "acceptance": size / max(proposed, 1)}
    return draws


def random_frame(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly distributed orthonormal m×k frame (QR of a Gaussian matrix, signs fixed).

    Returns
    -------
    ndarray, shape (m, k)
    """
    z = rng.standard_normal((m, k))
    q, r = np.linalg.qr(z)
    return q * np.sign(np.diag(r))


def _complement(others: np.ndarray) -> np.ndarray:
    """Orthonormal basis (m, m − j) of the orthogonal complement of the j orthonormal columns."""
    m, j = others.shape
    if j == 0:
        return np.eye(m)
    q, _ = np.linalg.qr(others, mode="complete")
    return q[:, j:]


def gibbs_scan(V: np.ndarray, A: np.ndarray, rng: np.random.Generator, *, proposals: int | None = None) -> np.ndarray:
    """One Gibbs scan for ``etr(VᵀAV)`` (Hoff 2009, §2.2): columns in random order,
    each redrawn exactly on the sphere orthogonal to the others.

    With ``proposals=T`` each column update costs exactly T ACG proposals; when none is
    accepted the column is kept (a mixture of the exact conditional update and the identity,
    with weights depending only on the other columns: the target stays invariant).

    Parameters
    ----------
    V : ndarray, shape (m, k)
        Current orthonormal frame (not modified).
    A : ndarray, shape (m, m)
    rng : numpy.random.Generator
    proposals : int, optional
        Fixed ACG budget per column update (see :func:`sample_vector_bingham`).

    Returns
    -------
    ndarray, shape (m, k)
    """
    V = V.copy()
    k = V.shape[1]
    for r in rng.permutation(k):
        others = np.delete(V, r, axis=1)
        N = _complement(others)
        if proposals is None:
            x = sample_vector_bingham(N.T @ A @ N, 1, rng)[0]
        else:
            x, st = sample_vector_bingham(N.T @ A @ N, 1, rng, proposals=proposals, return_stats=True)
            x = (N.T @ V[:, r]) if st["fallbacks"] else x[0]  # nothing accepted: keep the column
        V[:, r] = N @ x
    return V


def gibbs_matrix_bingham(A, k: int, iterations: int, rng: np.random.Generator, *, chains: int = 1,
                         trace=None, init=None, progress=None, proposals: int | None = None):
    """Run ``chains`` independent Gibbs chains for ``etr(VᵀAV)`` on m×k frames.

    Each chain starts from a uniformly random frame (data-independent, spec §5.6)
    and runs a fixed number of scans.

    Parameters
    ----------
    A : ndarray, shape (m, m)
    k : int
    iterations : int
        Number of full scans per chain (fixed in advance; not a stopping rule).
    rng : numpy.random.Generator
    chains : int
    trace : callable, optional
        ``trace(V) -> float or ndarray``, evaluated after every scan; its values
        are returned as an array of shape (chains, iterations, ...).
    init : ndarray, shape (chains, m, k), optional
        Starting frames (default: uniform random).
    progress : callable, optional
        Called with no argument after every scan (a progress bar).
    proposals : int, optional
        Fixed ACG budget per column update (data-independent cost; :func:`gibbs_scan`).

    Returns
    -------
    frames : ndarray, shape (chains, m, k)
        The final state of each chain.
    traces : ndarray or None
    """
    A = np.asarray(A, dtype=float)
    m = A.shape[0]
    frames = np.empty((chains, m, k))
    traces = []
    for c in range(chains):
        V = random_frame(m, k, rng) if init is None else np.array(init[c], dtype=float)
        tr = []
        for _ in range(iterations):
            V = gibbs_scan(V, A, rng, proposals=proposals)
            if progress is not None:
                progress()
            if trace is not None:
                tr.append(trace(V))
        frames[c] = V
        traces.append(tr)
    return frames, (np.asarray(traces) if trace is not None else None)


def rejection_from_gp_base(G, sigma, k: int, scale: float, size: int, rng: np.random.Generator, *,
                           max_proposals: int = 2_000_000, proposals: int | None = None,
                           return_stats: bool = False, progress=None):
    """Exact draws of the Theorem 4.1 law by rejection from its base measure.

    Target (w.r.t. the law ν of span(Z), Z = [Z_1 … Z_k], Z_j i.i.d. N(0, Σ)):
    ``f(P) ∝ exp(scale · tr(P G))``. Propose Z, ``Q = qr(Z)``, accept with
    probability ``exp(scale · (tr(QᵀGQ) − Σ_{j≤k} λ_j(G)))`` ≤ 1.

    Parameters
    ----------
    G : ndarray, shape (m, m)
        Scatter matrix XᵀX (data-holder only).
    sigma : ndarray, shape (m, m)
        Base covariance Σ (public, positive definite).
    k : int
    scale : float
        ε/(2Δ).
    size : int
    rng : numpy.random.Generator
    max_proposals : int
        Cap of the historical loop (``proposals=None``); :class:`SamplerBudgetError` when hit.
        That loop's number of proposals is geometric with a data-dependent rate and its
        failure probability depends on the data far more than e^ε allows (issue 22): a
        low-level primitive, never used for a release.
    proposals : int, optional
        Fixed budget T: exactly T proposals per draw, generated in fixed batches; the
        first accepted is released and, when none is, a fresh draw from the base law ν
        (public). With T from :func:`proposal_budget` and :func:`gp_base_acceptance_bound`
        the release is ``(ε − log(1 − p*), p*)``-DP (:func:`fallback_guarantee`).
    return_stats : bool
        Also return ``{"proposals", "acceptance"}`` (and ``"fallbacks"`` with ``proposals``);
        these depend on the data: tests only.
    progress : callable, optional
        With ``proposals``: called once per fixed batch (:func:`batches` times; public).

    Returns
    -------
    ndarray, shape (size, m, k)
        Orthonormal frames (signs fixed by the QR: diag R > 0).

    Raises
    ------
    SamplerBudgetError
        Only without ``proposals``: more than ``max_proposals`` proposals were needed.
    """
    G = np.asarray(G, dtype=float)
    m = G.shape[0]
    L = np.linalg.cholesky(np.asarray(sigma, dtype=float))
    top = float(np.sum(np.linalg.eigvalsh(G)[::-1][:k]))
    if proposals is not None:
        def base(b, g):
            Z = L @ g.standard_normal((b, m, k))
            if k == 1:
                return Z / np.linalg.norm(Z, axis=1, keepdims=True)
            Q, R = np.linalg.qr(Z)
            return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]

        def propose(b, g):
            Q = base(b, g)
            return Q, scale * (np.einsum("bik,ij,bjk->b", Q, G, Q) - top)

        out, n_fb = _fixed_budget(propose, int(proposals), size, rng, base, (m, k), progress)
        if return_stats:
            return out, {"proposals": int(proposals) * size, "fallbacks": n_fb, "acceptance": float("nan")}
        return out
    out = np.empty((size, m, k))
    got, proposed = 0, 0
    batch = 256
    while got < size:
        Z = L @ rng.standard_normal((batch, m, k))
        Q, R = np.linalg.qr(Z)
        Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
        val = np.einsum("bik,ij,bjk->b", Q, G, Q)
        ok = np.log(rng.uniform(size=batch)) < scale * (val - top)
        idx = np.flatnonzero(ok)[: size - got]
        used = (idx[-1] + 1) if (idx.size and got + idx.size == size) else batch
        proposed += int(used)
        out[got: got + idx.size] = Q[idx]
        got += idx.size
        if got < size and proposed >= max_proposals:
            raise SamplerBudgetError(
                f"rejection from the GP base measure needed more than {max_proposals} proposals",
                "use form='bingham' with the exact (k = 1) or Gibbs sampler, a smaller epsilon, or raise max_proposals")
        batch = min(batch * 2, 65536)
    if return_stats:
        return out, {"proposals": proposed, "acceptance": size / max(proposed, 1)}
    return out
