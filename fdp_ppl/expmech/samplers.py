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

All functions take a ``numpy.random.Generator`` and work in float64; none is
floating-point safe (the released frame is a float computed from the data).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ..errors import FdpPplError


class SamplerBudgetError(FdpPplError, RuntimeError):
    """An exact rejection sampler exceeded its data-independent cap on proposals."""


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
                          return_stats: bool = False):
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
        Data-independent cap on proposals; :class:`SamplerBudgetError` when hit.
    return_stats : bool
        Also return ``{"proposals": int, "acceptance": float}``.

    Returns
    -------
    ndarray, shape (size, q)
        Unit vectors. (With ``return_stats``, a tuple (draws, stats).)
    """
    env = acg_envelope(A)
    q = env["lam"].size
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


def gibbs_scan(V: np.ndarray, A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Gibbs scan for ``etr(VᵀAV)`` (Hoff 2009, §2.2): columns in random order,
    each redrawn exactly on the sphere orthogonal to the others.

    Parameters
    ----------
    V : ndarray, shape (m, k)
        Current orthonormal frame (not modified).
    A : ndarray, shape (m, m)
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (m, k)
    """
    V = V.copy()
    k = V.shape[1]
    for r in rng.permutation(k):
        others = np.delete(V, r, axis=1)
        N = _complement(others)
        x = sample_vector_bingham(N.T @ A @ N, 1, rng)[0]
        V[:, r] = N @ x
    return V


def gibbs_matrix_bingham(A, k: int, iterations: int, rng: np.random.Generator, *, chains: int = 1,
                         trace=None, init=None, progress=None):
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
            V = gibbs_scan(V, A, rng)
            if progress is not None:
                progress()
            if trace is not None:
                tr.append(trace(V))
        frames[c] = V
        traces.append(tr)
    return frames, (np.asarray(traces) if trace is not None else None)


def rejection_from_gp_base(G, sigma, k: int, scale: float, size: int, rng: np.random.Generator, *,
                           max_proposals: int = 2_000_000, return_stats: bool = False):
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
        Data-independent cap; :class:`SamplerBudgetError` when hit. The expected
        number of proposals grows like exp(scale · n · eigengap): the running time
        depends on the data (a timing side channel if it is observable).
    return_stats : bool

    Returns
    -------
    ndarray, shape (size, m, k)
        Orthonormal frames (signs fixed by the QR: diag R > 0).
    """
    G = np.asarray(G, dtype=float)
    m = G.shape[0]
    L = np.linalg.cholesky(np.asarray(sigma, dtype=float))
    top = float(np.sum(np.linalg.eigvalsh(G)[::-1][:k]))
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
