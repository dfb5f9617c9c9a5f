#!/usr/bin/env python
"""Benchmark: simulation-based calibration (Talts et al. 2018) of the population parameters of a GP population model
observed through private releases with ``fp.observe`` (fdp_ppl/inference/population.py, population_joint.py).

Population: curves on a grid of :data:`K` points, ``X_i ~ GP(c + sin 2πt, a² Matérn-3/2(|t − t'|/ρ))`` with
``c ~ N(0, 1)``, ``a ~ LogNormal(log 0.5, 0.25)``, ``ρ ~ LogNormal(log 0.3, 0.3)``. Per replicate: (c, a, ρ) from the
prior, n curves, then

* ``(a) mean``: one FRL mean release (Laplace noise, ε, M = 4 coefficients), observed alone (the release's noise as a
  normal scale mixture, the sample mean marginalised);
* ``(b) mean+components``: the same mean release and an ε-DP FPCA release (Bingham, k = 1, m = 3 Fourier functions,
  one frame) of the same curves, observed together (latent sample mean and scatter);

a NUTS fit, and the rank of each true parameter among thinned posterior draws. Regimes: ε ∈ {0.5, 1, 4} with τ large
(no curve clipped), and ε = 1 with a small τ (:data:`TAU_CLIPPED`: 10-25 % of curves clipped, which the likelihood
does not model; the share is reported). Uniformity of the ranks: chi-square test on ``--bins`` bins, one p-value per
parameter per regime.

Output: a table on stdout and ``results/bench_sbc_population[_quick].json``.

Usage::

    python benchmarks/bench_sbc_population.py --quick    # 12 replicates per regime and setting (~25 min, 2 cores)
    python benchmarks/bench_sbc_population.py            # 60 replicates per regime and setting (hours)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: grid points, curves per data set, mean-release coefficients, FPCA basis size
K, N, M, M_PCA = 10, 100, 4, 3
TAU_LARGE = 8.0
#: a τ at which 10-25 % of the prior's curves are clipped (grid L² norm)
TAU_CLIPPED = 1.25
PARAMETERS = ("c", "amp", "rho")
REGIMES = ((0.5, TAU_LARGE), (1.0, TAU_LARGE), (4.0, TAU_LARGE), (1.0, TAU_CLIPPED))
SETTINGS = ("mean", "mean+components")


def _matern32(d, amp, rho, xp):
    r = np.sqrt(3.0) * d / rho
    return amp**2 * (1 + r) * xp.exp(-r)


import numpy as np


def prior_draw(rng) -> dict:
    return {"c": rng.normal(), "amp": float(np.exp(rng.normal(np.log(0.5), 0.25))),
            "rho": float(np.exp(rng.normal(np.log(0.3), 0.3)))}


def simulate(theta: dict, epsilon: float, tau: float, rng):
    """The curves' releases (mean; components) and the share of curves clipped (simulation side only)."""
    import fdp_ppl as fp
    from fdp_ppl.fpca import FPCASpec

    grid = fp.Grid.uniform(K)
    d = np.abs(grid.t[:, None] - grid.t[None, :])
    cov = _matern32(d, theta["amp"], theta["rho"], np) + 1e-9 * np.eye(K)
    X = rng.multivariate_normal(theta["c"] + np.sin(2 * np.pi * grid.t), cov, size=N, method="cholesky")
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean_tree = fp.release(fp.frl_mean(X, basis, tau=tau, M=M), fp.FRL(epsilon=epsilon),
                               random_seed=int(rng.integers(2**31)), study=True)
        spec = FPCASpec(grid=grid, m=M_PCA, k=1, epsilon=epsilon, tau=tau)
        pca_tree = fp.release(spec.fit(X), fp.ExponentialMechanism(), random_seed=int(rng.integers(2**31)),
                              study=True)
    clipped = float(np.mean(grid.norm(X) > tau))
    return mean_tree, pca_tree, clipped


def fit(setting: str, mean_tree, pca_tree, *, draws: int, tune: int, seed: int):
    """NUTS on (c, amp, rho) (and the latent variables); the posterior draws of the parameters (draws,) each."""
    import pymc as pm
    import pytensor.tensor as pt

    import fdp_ppl as fp
    from fdp_ppl.settings import blas_threads

    grid = fp.Grid.uniform(K)
    d = np.abs(grid.t[:, None] - grid.t[None, :])
    with pm.Model():
        c = pm.Normal("c", 0.0, 1.0)
        amp = pm.LogNormal("amp", np.log(0.5), 0.25)
        rho = pm.LogNormal("rho", np.log(0.3), 0.3)
        mean = c + np.sin(2 * np.pi * grid.t)
        cov = _matern32(d, amp, rho, pt) + 1e-9 * np.eye(K)
        fp.observe(mean_tree if setting == "mean" else [mean_tree, pca_tree], mean=mean, covariance=cov, name="rel")
        with warnings.catch_warnings(), blas_threads():
            warnings.simplefilter("ignore")
            idata = pm.sample(draws, tune=tune, chains=1, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False, target_accept=0.9)
    post = idata["posterior"]
    return {p: post[p].values.ravel() for p in PARAMETERS}, int(idata["sample_stats"]["diverging"].sum())


def run(replicates: int, *, draws: int, tune: int, thin: int, bins: int, seed: int = 20261127, settings=SETTINGS,
        regimes=REGIMES, log=print) -> dict:
    """SBC ranks and chi-square p-values per setting, regime and parameter."""
    from scipy import stats

    out = {}
    L = draws // thin
    for setting in settings:
        for eps, tau in regimes:
            key = f"{setting} eps={eps:g} tau={tau:g}"
            rng = np.random.default_rng([seed, int(eps * 10), int(tau * 100)])
            ranks = {p: [] for p in PARAMETERS}
            clipped, divergent, t0 = [], 0, time.time()
            for r in range(replicates):
                theta = prior_draw(rng)
                mean_tree, pca_tree, share = simulate(theta, eps, tau, rng)
                post, div = fit(setting, mean_tree, pca_tree, draws=draws, tune=tune, seed=seed + r)
                divergent += div
                clipped.append(share)
                for p in PARAMETERS:
                    ranks[p].append(int(np.sum(post[p][::thin][:L] < theta[p])))
            pvalues = {}
            for p in PARAMETERS:
                counts = np.bincount(np.asarray(ranks[p]) * bins // (L + 1), minlength=bins)
                pvalues[p] = float(stats.chisquare(counts).pvalue)
            out[key] = {"setting": setting, "epsilon": eps, "tau": tau, "replicates": replicates, "ranks": ranks,
                        "pvalues": pvalues, "clipped_share_mean": float(np.mean(clipped)),
                        "clipped_share_max": float(np.max(clipped)), "divergences": divergent,
                        "seconds_per_fit": (time.time() - t0) / replicates}
            log(f"{key:40s} clipped {np.mean(clipped):5.1%}  " +
                "  ".join(f"p[{p}]={v:.3f}" for p, v in pvalues.items()) +
                f"  div={divergent}  {(time.time() - t0) / replicates:.1f} s/fit")
    return out


def main(argv=None) -> int:
    from _common import write_results

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--replicates", type=int)
    ap.add_argument("--bins", type=int)
    ap.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    reps = a.replicates or (12 if a.quick else 60)
    draws, tune, thin = (190, 200, 10) if a.quick else (400, 400, 20)
    bins = a.bins or (3 if a.quick else 5)
    res = run(reps, draws=draws, tune=tune, thin=thin, bins=bins, settings=tuple(a.settings))
    write_results("bench_sbc_population", {"replicates": reps, "draws": draws, "tune": tune, "thin": thin,
                                           "bins": bins, "n": N, "K": K, "regimes": res}, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
