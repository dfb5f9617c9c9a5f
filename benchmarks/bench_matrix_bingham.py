#!/usr/bin/env python
"""Feasibility of an exact k > 1 Bingham sampler by matrix-angular-central-Gaussian (MACG) rejection.

The candidate: rejection from the MACG envelope of Kent, Ganeiber & Mardia (2018, the matrix analogue of the
ACG envelope used for k = 1): propose Y with k i.i.d. N(0, Ω⁻¹) columns, Ω = I + 2Λ/b (Λ the shifted
eigenvalues of −A, b the root of Σ 1/(b + 2λ_i) = 1), X = Y (YᵀY)^{−1/2}; with u_1..u_k the eigenvalues of
XᵀΛX the ratio of target to envelope is Π_l e^{−u_l}(1 + 2u_l/b)^{m/2}, bounded by M = Π_l h(max(λ_(l),
(m − b)/2)), h(u) = e^{−u}(1 + 2u/b)^{m/2} (Cauchy interlacing: u_(l) ≥ λ_(l)). A fixed public budget needs a
data-independent lower bound on the acceptance rate; this script measures the rate where it matters:

* ``design``      the paper's §6.1 design (Fourier basis, m = 40, Σ_ii = i⁻³, ε = 1, n = 500 curves with
                  21 components of weight 1/j², rescaled to norm < 1), k = 1, 2, 3;
* ``adversarial`` a spectrum of −A (m = 5) with the k smallest eigenvalues well separated, scaled by
                  0.1–100 (the MACG scales every row from the smallest eigenvalue, while the target's spread
                  in row j is set by the gaps above the j-th: a leak the envelope cannot follow, growing with
                  the scale, i.e. with ε n);
* ``gibbs``       the existing column-wise Gibbs sampler (Hoff 2009, run-until-accepted ACG column updates, as
                  the paper's rstiefel chain): time per scan and ESS/s of the explained-variance ratio, and
                  the cost of one frame by the paper's 20,000-scan recipe.

Output: a table on stdout and ``results/bench_matrix_bingham.json``. ``--quick``: fewer proposals and scans.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize

HERE = Path(__file__).resolve().parent
PAPER_ITERATIONS = 20_000


def macg_rate(A, k: int, n_proposals: int, rng) -> tuple[float, float]:
    """Monte Carlo acceptance rate of MACG rejection for etr(XᵀAX) and the time per proposal (s)."""
    m = A.shape[0]
    w = np.linalg.eigvalsh(-A)
    lam = w - w[0]

    def h(b):
        return np.sum(1.0 / (b + 2.0 * lam)) - 1.0

    b = float(m) if h(m) >= 0 else optimize.brentq(h, 1.0, float(m), xtol=1e-14)
    u_star = (m - b) / 2.0

    def log_h(u):
        return -u + 0.5 * m * np.log1p(2.0 * u / b)

    log_m = sum(log_h(max(lam[j], u_star)) for j in range(k))
    omega = 1.0 + 2.0 * lam / b
    t0 = time.perf_counter()
    Y = rng.standard_normal((n_proposals, m, k)) / np.sqrt(omega)[None, :, None]
    Q, _ = np.linalg.qr(Y)
    u = np.linalg.eigvalsh(np.einsum("nik,i,nil->nkl", Q, lam, Q))
    log_acc = np.sum(log_h(u), axis=1) - log_m
    dt = (time.perf_counter() - t0) / n_proposals
    return float(np.exp(log_acc).mean()), dt


def design_gram(m: int, n: int, rng) -> np.ndarray:
    """G = XᵀX of §6.1-like curves in Fourier coefficients (21 components, weights 1/j², extra on the 4th)."""
    U = rng.normal(0.0, math.sqrt(0.1), (n, 21)) / np.arange(1, 22) ** 2
    U[:, 3] *= 3.0
    X = np.zeros((n, m))
    X[:, :21] = U
    X += rng.normal(0.0, 0.1, (n, m)) / math.sqrt(m)
    X /= 1.0001 * np.max(np.linalg.norm(X, axis=1))
    return X.T @ X


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--proposals", type=int, default=50_000)
    p.add_argument("--scans", type=int, default=2000, help="Gibbs scans timed (ESS after 10%% burn-in)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out-dir", type=Path, default=HERE / "results")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.quick:
        a.proposals, a.scans = 5000, 200
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent))
    import arviz as az
    from _common import write_results

    from fdp_ppl.fpca.samplers import gibbs_scan, random_frame

    rng = np.random.default_rng(a.seed)
    m, n, eps = 40, 500, 1.0
    s = eps / 2.0
    G = design_gram(m, n, rng)
    A = s * (G - np.diag(np.arange(1, m + 1) ** 3.0))
    rows = []
    for k in (1, 2, 3):
        r, dt = macg_rate(A, k, a.proposals, rng)
        rows.append({"case": "design", "m": m, "k": k, "acceptance": r, "us_per_proposal": dt * 1e6,
                     "proposals_per_frame": 1.0 / max(r, 1e-300), "s_per_frame": dt / max(r, 1e-300)})
    for scale in (0.1, 1.0, 10.0, 100.0):  # the spectrum scales with s·n = ε n/2: no data-independent floor
        lam = scale * np.array([0.0, 128.0, 244.0, 698.0, 1627.0])
        for k in (2, 3):
            r, dt = macg_rate(-np.diag(lam), k, a.proposals, rng)
            rows.append({"case": "adversarial", "m": lam.size, "k": k, "spectrum": lam.tolist(), "acceptance": r,
                         "us_per_proposal": dt * 1e6, "proposals_per_frame": 1.0 / max(r, 1e-300)})
    for k in (2, 3):
        V = random_frame(m, k, rng)
        trace = []
        t0 = time.perf_counter()
        for _ in range(a.scans):
            V = gibbs_scan(V, A, rng)
            trace.append(np.trace(V.T @ G @ V) / np.trace(G))
        el = time.perf_counter() - t0
        ess = float(az.ess(np.asarray(trace)[None, a.scans // 10:]))
        rows.append({"case": "gibbs", "m": m, "k": k, "scans": a.scans, "ms_per_scan": el / a.scans * 1e3,
                     "ess": ess, "ess_per_s": ess / el, "s_per_frame_paper_recipe": PAPER_ITERATIONS * el / a.scans})
    for row in rows:
        print({key: (f"{v:.3g}" if isinstance(v, float) else v) for key, v in row.items()})
    write_results("bench_matrix_bingham", {"rows": rows}, quick=a.quick,
                  out=a.out_dir / f"bench_matrix_bingham{'_quick' if a.quick else ''}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
