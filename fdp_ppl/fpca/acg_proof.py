"""The certificate behind the proved ACG acceptance bound (:func:`fdp_ppl.fpca.samplers.acg_acceptance_bound`).

The acceptance rate of Kent, Ganeiber & Mardia's (2018) ACG rejection sampler for the vector Bingham law
on S^{q−1} is ``a(p) = (2e/q)^{q/2} Γ(q/2) f_T(1)``, with f_T the density of ``T = Σ_i p_i Z_i²`` (Z_i
i.i.d. N(0, 1), p on the simplex). At the vertex ``f_T(1) = f₁(1) = (2πe)^{−1/2}`` (f₁ the χ²₁ density)
and ``a = A_1(q)``. This module proves ``f_T(1) ≥ R_PROVED · f₁(1)`` for **every** p with
``ν = Σp_i²/p_max² ≤ NU_MAX`` (in particular every p in R^q, q ≤ NU_MAX, since ν ≤ 1/p_max ≤ q), hence
``a ≥ R_PROVED · A_1(q)``. Sort p_1 ≥ p_2 ≥ …; write c = p_1, ρ = p_2/c ∈ [0, 1] and
ν = Σp_i²/c² ∈ [1 + ρ², 1/c]. Three lower bounds, each of the form ``f_T(1) ≥ B(ν, ρ)/c ≥ ν B(ν, ρ)``:

(G1) *Condition on the largest term.* ``f_T(1) = E[g(1 − R)]``, g the density of cZ₁², R = T − cZ₁²
     independent, ``E R = 1 − c``, ``Var R = 2(Σp_i² − c²)``. With D = (R − E R)/c (mean 0, variance
     v = 2(ν − 1)) and ``h(d) = f₁(1 − d)`` for d < 1, 0 for d ≥ 1, ``f_T(1) = E[h(D)]/c``. For any
     quadratic ``α − βd − γd² ≤ h(d)`` on R (γ ≥ 0): ``f_T(1) ≥ (α − γ v)/c``.
(G2) *Condition on the two largest.* The density of cZ₁² + ρcZ₂² is ``k_ρ(y/c)/c`` with
     ``k_ρ(y) = (2√ρ)^{−1} e^{−y/2} ive₀((y/4)(1/ρ − 1))`` (ive₀(z) = e^{−z}I₀(z), decreasing), so
     ``f_T(1) = E[k_ρ(1 + ρ − D₂)]/c`` with D₂ of mean 0 and variance v = 2(ν − 1 − ρ²). For ρ in a cell
     [ρ_a, ρ_b], ``k_ρ(1 + ρ − d) ≥ H(d) = (2√ρ_b)^{−1} e^{−(1+ρ_b−d)/2} ive₀(((1+ρ_b−d)/4)(1/ρ_a − 1))`` for
     d < 1 + ρ_a (H := 0 beyond); a quadratic minorant of H gives the bound as in (G1).
(F)  *Fourier inversion.* With ψ(t) = E e^{it(T−1)} and τ = ct,
     ``f_T(1) = (πc)^{−1} ∫₀^∞ Re ψ(τ/c) dτ``, and, with φ(x) = x − arctan x and U(X) ≥ sup_{x≤X} φ(x)/x²:
     ``|ψ| ≥ (1+4τ²)^{−1/4} e^{−(ν−1)τ²}`` (log(1+x) ≤ x),
     ``|ψ| ≤ (1+4τ²)^{−1/4} (1+4ρ²τ²)^{−(ν−1)/(4ρ²)}`` (log(1 + x y²) ≥ y² log(1 + x) for y = p_i/p_2 ≤ 1),
     ``|arg ψ| ≤ A(τ) = φ(2τ)/2 + 2(ν−1)τ² U(2ρτ)``; so for A(τ₁) ≤ π/2
     ``f_T(1) ≥ (πc)^{−1} [∫₀^{τ₁} (1+4τ²)^{−1/4}e^{−(ν−1)τ²} cos A(τ) dτ − ∫_{τ₁}^∞ |ψ|-bound]``.
     The first integrand is decreasing in τ, ν and ρ; the second increasing in ρ, decreasing in ν: on a
     cell [ν_a, ν_b] × [ρ_a, ρ_b] the bound at (ν_b, ρ_b) for the first and (ν_a, ρ_b) for the second holds,
     and both integrals are bounded by Riemann sums on the safe side (monotone integrands) plus a closed-form tail.

The certificate covers ν ∈ [1, NU_MAX], ρ ∈ [0, 1] by cells and checks ``ν_a · max(G1, G2, F) ≥ R_PROVED f₁(1)``
on each; every quadratic minorant is checked on a grid of d-cells using that H is increasing in d
(``H(d_j) ≥ max_{[d_j, d_{j+1}]} q``), and with a relative margin of 1e−9 on every special-function value.
:func:`verify` runs it (tests/fpca/test_privacy.py; the full grid in the slow suite).
"""

from __future__ import annotations

import math
from functools import cache
from itertools import pairwise

import numpy as np
from scipy import optimize, special

#: proved constant: f_T(1) ≥ R_PROVED · (2πe)^{-1/2} for every convex combination T of independent χ²₁ with ν ≤ NU_MAX
R_PROVED = 0.5
#: largest ν = Σp²/max(p)² covered by the certificate (every q ≤ NU_MAX)
NU_MAX = 1.0e6
F1 = 1.0 / math.sqrt(2.0 * math.pi * math.e)
_MARGIN = 1.0 - 1e-9  # relative safety margin on float evaluations of special functions


# ------------------------------------------------------------------ quadratic minorants (G1, G2)
def _h_single(d):
    """h(d) = f₁(1 − d) for d < 1, else 0 (increasing on d < 1)."""
    d = np.asarray(d, float)
    y = np.where(d < 1.0, 1.0 - d, 1.0)
    return np.where(d < 1.0, np.exp(-0.5 * y) / np.sqrt(2.0 * math.pi * y), 0.0) * _MARGIN


def _h_pair(d, rho_a: float, rho_b: float):
    """H(d) ≤ k_ρ(1 + ρ − d) for every ρ in [ρ_a, ρ_b] (ρ_a > 0), increasing on d < 1 + ρ_a, 0 beyond."""
    d = np.asarray(d, float)
    y = np.where(d < 1.0 + rho_a, 1.0 + rho_b - d, 1.0)
    val = np.exp(-0.5 * y) * special.ive(0, 0.25 * y * (1.0 / rho_a - 1.0)) / (2.0 * math.sqrt(rho_b))
    return np.where(d < 1.0 + rho_a, val, 0.0) * _MARGIN


def _verify_minorant(h, d_end: float, alpha: float, beta: float, gamma: float, n: int = 4000, lo: float = -60.0) -> bool:
    """True when q(d) = α − βd − γd² ≤ h(d) for every real d, h increasing on (−∞, d_end) and ≥ 0 everywhere.

    On each cell [d_j, d_{j+1}] of (lo, d_end): h ≥ h(d_j) ≥ max q on the cell. Below lo: q ≤ 0 there when q(lo) ≤ 0 and
    q is increasing on (−∞, lo]. Beyond d_end: q ≤ 0 when q(d_end) ≤ 0 and q is decreasing on [d_end, ∞)."""
    if gamma <= 0.0:
        return False
    q = lambda d: alpha - beta * d - gamma * d * d
    vertex = -beta / (2.0 * gamma)
    if not (q(lo) <= 0.0 and vertex >= lo and q(d_end) <= 0.0 and vertex <= d_end):
        return False
    edges = np.linspace(lo, d_end, n + 1)
    a, b = edges[:-1], edges[1:]
    qmax = np.maximum(q(a), q(b))
    inside = (vertex > a) & (vertex < b)
    qmax = np.where(inside, q(vertex), qmax)
    return bool(np.all(qmax <= h(a)))


def _minorants(h, d_end: float, variances) -> list[tuple[float, float, float]]:
    """Quadratic minorants of h (LP on a grid, then shrunk until :func:`_verify_minorant` passes), one per variance."""
    d = np.unique(np.concatenate([np.linspace(-60.0, d_end, 6001), np.linspace(-1.0, d_end, 3001)]))
    d = d[d < d_end]
    hv = h(d)
    A = np.stack([np.ones_like(d), -d, -d * d], 1)
    out = []
    for v in variances:
        res = optimize.linprog(c=[-1.0, 0.0, v], A_ub=np.vstack([A, [1.0, -d_end, -d_end * d_end]]),
                               b_ub=np.r_[hv, 0.0], bounds=[(None, None), (None, None), (1e-9, None)], method="highs")
        if res.status != 0:
            continue
        alpha, beta, gamma = res.x
        scale = abs(alpha) + 1e-12
        for _ in range(60):
            if _verify_minorant(h, d_end, alpha, beta, gamma):
                out.append((float(alpha), float(beta), float(gamma)))
                break
            alpha -= 1e-4 * scale
            scale *= 1.5
    return out


def _quad_bound(minorants, v: float) -> float:
    """max_j (α_j − γ_j v): E[h(D)] ≥ this for any D with E D = 0, E D² ≤ v."""
    return max([0.0] + [a - g * v for a, _, g in minorants])


_VARIANCES = (0.0, 0.01, 0.03, 0.06, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.5, 6.0)


@cache
def _single_minorants():
    return tuple(_minorants(_h_single, 1.0, _VARIANCES))


@cache
def _pair_minorants(rho_a: float, rho_b: float):
    return tuple(_minorants(lambda d: _h_pair(d, rho_a, rho_b), 1.0 + rho_a, _VARIANCES))


# ------------------------------------------------------------------ Fourier bound (F)
_XH = 0.01
_XS = np.arange(0.0, 60.0 + _XH, _XH)
_phi = _XS - np.arctan(_XS)
# cell j = [x_j, x_{j+1}]: φ(x)/x² ≤ φ(x_{j+1})/x_j² (φ increasing); first cell: φ(x)/x² ≤ x/3 ≤ x_1/3
_UCELL = np.r_[_XS[1] / 3.0, _phi[2:] / _XS[1:-1] ** 2] / _MARGIN
_URUN = np.maximum.accumulate(_UCELL)


def _u_bound(X):
    """U(X) ≥ sup_{0<x≤X} φ(x)/x², increasing in X (φ(x)/x² ≤ 1/x ≤ 1/60 beyond the table)."""
    X = np.asarray(X, float)
    j = np.clip(np.ceil(X / _XH).astype(int) - 1, 0, _URUN.size - 1)
    return np.where(X > _XS[-1], max(_URUN[-1], 1.0 / 60.0), _URUN[j])


def _phase_bound(t, nu, rho):
    t = np.asarray(t, float)
    x = 2.0 * t
    return 0.5 * (x - np.arctan(x)) / _MARGIN + 2.0 * (nu - 1.0) * t * t * _u_bound(2.0 * rho * t)


def _mod_upper(t, nu, rho):
    t = np.asarray(t, float)
    first = (1.0 + 4.0 * t * t) ** -0.25
    if rho == 0.0:
        rest = np.exp(-(nu - 1.0) * t * t)
    else:
        rest = (1.0 + 4.0 * rho * rho * t * t) ** (-(nu - 1.0) / (4.0 * rho * rho))
    return first * rest / _MARGIN


def _mod_upper_tail(T, nu, rho) -> float:
    """∫_T^∞ of the ``|ψ|`` bound, in closed form (an upper bound)."""
    if rho == 0.0:
        return (2.0 * T) ** -0.5 * math.exp(-(nu - 1.0) * T * T) / (2.0 * (nu - 1.0) * T) / _MARGIN
    e = (nu - 1.0) / (4.0 * rho * rho)
    best = math.inf
    if e >= 1.0:  # (1+4ρ²τ²)^{-e} ≤ (1+4ρ²T²)^{-(e-1)} (1+4ρ²τ²)^{-1} and (1+4τ²)^{-1/4} ≤ (1+4T²)^{-1/4} for τ ≥ T
        log_b = (-(e - 1.0) * math.log1p(4.0 * rho * rho * T * T) - 0.25 * math.log1p(4.0 * T * T)
                 + math.log((0.5 * math.pi - math.atan(2.0 * rho * T)) / (2.0 * rho)))
        best = math.exp(log_b)
    if 2.0 * e > 0.5:  # (1+4ρ²τ²)^{-e} ≤ (2ρτ)^{-2e}, (1+4τ²)^{-1/4} ≤ (2τ)^{-1/2}
        log_b = -0.5 * math.log(2.0) - 2.0 * e * math.log(2.0 * rho) + (0.5 - 2.0 * e) * math.log(T) - math.log(2.0 * e - 0.5)
        best = min(best, math.exp(min(log_b, 700.0)))
    return best / _MARGIN


def fourier_bound(nu_a: float, nu_b: float, rho_b: float, n: int = 3000) -> float:
    """(F): a lower bound on c·f_T(1) valid for every p with ν ∈ [ν_a, ν_b] and ρ ≤ ρ_b (−inf when none proved)."""
    if nu_a - 1.0 <= rho_b * rho_b and rho_b > 0.0 or nu_a <= 1.0:
        return -math.inf
    # largest τ₁ with A(τ₁) ≤ π/2 at (ν_b, ρ_b); then the best of a few cut-offs below it
    grid = np.linspace(1e-3, 4.0, 4000)
    ok = _phase_bound(grid, nu_b, rho_b) <= 0.5 * math.pi
    if not ok[0]:
        return -math.inf
    tmax = grid[np.argmin(ok)] if not ok.all() else grid[-1]
    tmax = grid[max(np.argmin(ok) - 1, 0)] if not ok.all() else tmax
    best = -math.inf
    for tau1 in tmax * np.array([0.5, 0.65, 0.8, 0.9, 1.0]):
        t = np.linspace(0.0, tau1, n + 1)
        f = (1.0 + 4.0 * t * t) ** -0.25 * np.exp(-(nu_b - 1.0) * t * t) * np.cos(_phase_bound(t, nu_b, rho_b))
        f = np.maximum(f, 0.0) * _MARGIN
        i1 = float(np.sum(f[1:])) * (tau1 / n)  # right endpoints of a decreasing integrand
        T = max(8.0 * tau1, 40.0 / math.sqrt(nu_a - 1.0 + 1e-300), 20.0)
        s = tau1 * np.exp(np.linspace(0.0, math.log(T / tau1), n + 1))  # geometric cells, left endpoints
        g = _mod_upper(s, nu_a, rho_b)
        i2 = float(np.sum(g[:-1] * np.diff(s))) + _mod_upper_tail(T, nu_a, rho_b)
        best = max(best, (i1 - i2) / math.pi)
    return best


# ------------------------------------------------------------------ the certificate
def _nu_cells():
    edges = list(np.round(np.arange(1.0, 6.0, 0.02), 10)) + list(np.round(np.arange(6.0, 20.0, 0.25), 10))
    x = 20.0
    while x < NU_MAX:
        edges.append(x)
        x *= 1.1
    edges.append(NU_MAX)
    return list(pairwise(edges))


_RHO_EDGES = tuple(np.round(np.r_[0.0, 0.02, 0.05, np.arange(0.1, 1.0001, 0.05)], 10))


def cell_bound(nu_a: float, nu_b: float, rho_a: float, rho_b: float, full: bool = False) -> float:
    """Proved lower bound on f_T(1)/f₁(1) for every p whose (ν, ρ) lies in the cell: ν_a · max(G1, G2, F)/f₁(1).

    Parameters
    ----------
    nu_a, nu_b : float
        The cell's range of ν = Σp_i²/max(p)² (1 ≤ ν_a < ν_b).
    rho_a, rho_b : float
        The cell's range of ρ = p_(2)/p_(1) (0 ≤ ρ_a < ρ_b ≤ 1).
    full : bool
        Evaluate (F) even when (G1)/(G2) already reach ``R_PROVED`` (the default skips it).

    Returns
    -------
    float
        The bound (inf for an empty cell, ν_b < 1 + ρ_a²).

    Examples
    --------
    >>> cell_bound(1.0, 1.02, 0.0, 0.02) > 0.9     # near the vertex: (G1) is almost tight
    True
    """
    if nu_b < 1.0 + rho_a * rho_a:  # empty cell (ν ≥ 1 + ρ²)
        return math.inf
    best = _quad_bound(_single_minorants(), 2.0 * (nu_b - 1.0))
    if rho_a > 0.0:
        best = max(best, _quad_bound(_pair_minorants(rho_a, rho_b), 2.0 * max(nu_b - 1.0 - rho_a * rho_a, 0.0)))
    if full or best * nu_a < R_PROVED * F1:
        best = max(best, fourier_bound(max(nu_a, 1.0 + rho_a * rho_a), nu_b, rho_b))
    return nu_a * best / F1


def cells(nu_max: float = NU_MAX):
    """The certificate's cells (ν_a, ν_b, ρ_a, ρ_b), covering [1, nu_max] × [0, 1] (one ρ cell for ν ≥ 6, where (F) holds
    at ρ_b = 1)."""
    rho_cells = list(pairwise(_RHO_EDGES))
    for nu_a, nu_b in _nu_cells():
        if nu_a >= nu_max:
            break
        for rho_a, rho_b in (rho_cells if nu_a < 6.0 else [(0.0, 1.0)]):
            yield float(nu_a), float(nu_b), float(rho_a), float(rho_b)


def verify(nu_max: float = NU_MAX, full: bool = False) -> tuple[float, tuple]:
    """Run the certificate over every cell with ν_a < nu_max: (the smallest cell bound, its cell).

    The smallest bound must be ≥ R_PROVED for the proof to hold (it is a lower bound on f_T(1)/f₁(1)).

    Parameters
    ----------
    nu_max : float
        Cover ν ≤ nu_max (NU_MAX: the whole certificate, about 45 s of CPU).
    full : bool
        Passed to :func:`cell_bound` (True: the smallest bound over all three bounds, 0.536; False: stop at R_PROVED).

    Returns
    -------
    (float, tuple)
        The smallest cell bound and its cell (ν_a, ν_b, ρ_a, ρ_b).
    """
    worst, where = math.inf, None
    for cell in cells(nu_max):
        b = cell_bound(*cell, full=full)
        if b < worst:
            worst, where = b, cell
    return worst, where
