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
(no curve clipped), and ε = 1 with a small τ (:data:`TAU_CLIPPED`: most prior draws clip 10 % or more of the curves;
the share is reported). ``--clipped``: ε ∈ {0.5, 1, 4} at :data:`TAU_CLIPPED` (:data:`CLIPPED_REGIMES`), clipping
modelled (``fp.observe``'s ``clipping="auto"`` chooses the clipped-moments likelihood for n = 100; for (b) the
latent statistics are the clipped mean and the clipped coefficient rows' scatter), for (a) by default and for (b)
with ``--settings mean+components``. Uniformity of the ranks: chi-square test on ``--bins`` bins, one p-value per
parameter per regime; ``--pool`` merges runs of different ``--seed``.

Output: a table on stdout and ``results/bench_sbc_population[_quick].json``.

Usage::

    python benchmarks/bench_sbc_population.py --quick    # 12 replicates per regime and setting (~25 min, 2 cores)
    python benchmarks/bench_sbc_population.py            # 60 replicates per regime and setting (hours)
    python benchmarks/bench_sbc_population.py --clipped --settings mean+components --eps 1 --replicates 1 \
        --seed 101 --draws 150 150 10 --bins 3 --out /tmp/j_1_101.json    # one joint clipped replicate (~1 min CPU)
    python benchmarks/bench_sbc_population.py ... --sampler nutpie    # nutpie's NUTS (fewer gradients, numba compile)
    python benchmarks/bench_sbc_population.py --pool /tmp/j_*.json --out results/bench_sbc_population_joint_clipped.json
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
#: the clipped regimes of the mean release, whose likelihood models clipping (fp.observe's clipping="auto" chooses
#: the clipped-moments likelihood from n, τ and the prior)
CLIPPED_REGIMES = ((0.5, TAU_CLIPPED), (1.0, TAU_CLIPPED), (4.0, TAU_CLIPPED))
#: public quadrature points of the clipped moments in the study (the package's default is 2048; the measured error
#: at the true parameters is reported per regime)
POINTS = 512
SETTINGS = ("mean", "mean+components")


def _matern32(d, amp, rho, xp):
    r = np.sqrt(3.0) * d / rho
    return amp**2 * (1 + r) * xp.exp(-r)


import numpy as np


def prior_draw(rng) -> dict:
    return {"c": rng.normal(), "amp": float(np.exp(rng.normal(np.log(0.5), 0.25))),
            "rho": float(np.exp(rng.normal(np.log(0.3), 0.3)))}


def simulate(theta: dict, epsilon: float, tau: float, rng, *, components: bool = True):
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
        pca_tree = None
        if components:
            spec = FPCASpec(grid=grid, m=M_PCA, k=1, epsilon=epsilon, tau=tau)
            pca_tree = fp.release(spec.fit(X), fp.ExponentialMechanism(), random_seed=int(rng.integers(2**31)),
                                  study=True)
    clipped = float(np.mean(grid.norm(X) > tau))
    return mean_tree, pca_tree, clipped


def fit(setting: str, mean_tree, pca_tree, *, draws: int, tune: int, seed: int, clipping: str = "auto",
        sampler: str = "pymc"):
    """NUTS on (c, amp, rho) (and the latent variables); the posterior draws of the parameters (draws,) each.
    ``sampler``: PyMC's NUTS, or nutpie's (numba-compiled gradient, its own mass-matrix adaptation)."""
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
        obs = fp.observe(mean_tree if setting == "mean" else [mean_tree, pca_tree], mean=mean, covariance=cov,
                         name="rel", clipping=clipping, clipping_points=POINTS)
        with warnings.catch_warnings(), blas_threads():
            warnings.simplefilter("ignore")
            idata = pm.sample(draws, tune=tune, chains=1, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False, target_accept=0.9, nuts_sampler=sampler)
    post = idata["posterior"]
    return ({p: post[p].values.ravel() for p in PARAMETERS}, int(idata["sample_stats"]["diverging"].sum()),
            getattr(obs, "clipping", "ignore"))


def moment_error(theta: dict, mean_tree) -> float:
    """The clipped moments' quadrature error (:data:`POINTS` points) at the true population, in likelihood sd."""
    import fdp_ppl as fp
    from fdp_ppl.inference.population_clipping import moment_error as error
    from fdp_ppl.inference.population_clipping import normal_points
    from fdp_ppl.inference.population_parts import _mean_release

    grid = fp.Grid.uniform(K)
    d = np.abs(grid.t[:, None] - grid.t[None, :])
    part = _mean_release(mean_tree, 0)
    cov = _matern32(d, theta["amp"], theta["rho"], np) + 1e-9 * np.eye(K)
    centred = theta["c"] + np.sin(2 * np.pi * grid.t) - part["offset"]
    return error(centred, cov, part["design"], part["n"], part["law"].variance(part["scale"]), grid.weights,
                 part["tau"], part["tau_norm"], normal_points(POINTS, K))["mean"]


def uniformity(ranks: dict, L: int, bins: int) -> dict:
    """Chi-square p-value of the ranks (0..L) on ``bins`` equal bins, per parameter."""
    from scipy import stats

    return {p: float(stats.chisquare(np.bincount(np.asarray(r) * bins // (L + 1), minlength=bins)).pvalue)
            for p, r in ranks.items()}


def pool(paths) -> dict:
    """Pool the ranks of several runs' JSON files (different ``--seed``) per regime; p-values of the pooled ranks."""
    import json

    paths = list(dict.fromkeys(str(Path(p).resolve()) for p in paths))   # a file named twice counts once
    runs = [json.loads(Path(p).read_text()) for p in paths]
    first = runs[0]
    L, bins = first["draws"] // first["thin"], first["bins"]
    pooled = {}
    summed = ("divergences", "seconds_per_fit", "cpu_seconds_per_fit")
    for r in runs:
        for key, reg in r["regimes"].items():
            acc = pooled.setdefault(key, {**{k: v for k, v in reg.items() if k not in ("ranks", "pvalues")},
                                          "ranks": {p: [] for p in PARAMETERS}, "replicates": 0, "clipped": [],
                                          "clipped_shares": [],
                                          "clipped_share_max": 0.0, "clipping": [], **dict.fromkeys(summed, 0.0)})
            acc["replicates"] += reg["replicates"]
            acc["clipped"].append(reg["clipped_share_mean"] * reg["replicates"])
            acc["clipped_share_max"] = max(acc["clipped_share_max"], reg["clipped_share_max"])
            acc["clipped_shares"] += reg.get("clipped_shares", [])
            acc["clipping"] = sorted(set(acc["clipping"]) | set(reg.get("clipping", [])))
            acc["samplers"] = sorted(set(acc.get("samplers", [])) | set(reg.get("samplers", ["pymc"])))
            acc["divergences"] += reg["divergences"]
            for k in summed[1:]:   # per-fit times: weighted by replicates below
                acc[k] += reg[k] * reg["replicates"]
            for p in PARAMETERS:
                acc["ranks"][p] += reg["ranks"][p]
            if reg.get("moment_error_max_sd") is not None:
                acc["moment_error_max_sd"] = max(acc.get("moment_error_max_sd") or 0.0, reg["moment_error_max_sd"])
    for acc in pooled.values():
        acc["clipped_share_mean"] = float(sum(acc.pop("clipped")) / acc["replicates"])
        acc["divergences"] = int(acc["divergences"])
        for k in ("seconds_per_fit", "cpu_seconds_per_fit"):
            acc[k] /= acc["replicates"]
        acc["pvalues"] = uniformity(acc["ranks"], L, bins)
        print(f"{acc['setting']} eps={acc['epsilon']:g} tau={acc['tau']:g}: {acc['replicates']} replicates, clipped "
              f"{acc['clipped_share_mean']:.1%}, " + "  ".join(f"p[{p}]={v:.3f}" for p, v in acc["pvalues"].items()))
    return {**{k: v for k, v in first.items() if k not in ("regimes", "machine")},
            "pooled_from": [Path(p).name for p in paths],   # names only: no machine's folders in a tracked file
            "regimes": pooled}


def run(replicates: int, *, draws: int, tune: int, thin: int, bins: int, seed: int = 20261127, settings=SETTINGS,
        regimes=REGIMES, log=print, clipping: str = "auto", sampler: str = "pymc") -> dict:
    """SBC ranks and chi-square p-values per setting, regime and parameter."""
    out = {}
    L = draws // thin
    for setting in settings:
        for eps, tau in regimes:
            key = f"{setting} eps={eps:g} tau={tau:g}" + ("" if clipping == "auto" else f" clipping={clipping}")
            rng = np.random.default_rng([seed, int(eps * 10), int(tau * 100)])
            ranks = {p: [] for p in PARAMETERS}
            clipped, divergent, t0, c0, choices, errors = [], 0, time.time(), time.process_time(), set(), []
            for r in range(replicates):
                theta = prior_draw(rng)
                mean_tree, pca_tree, share = simulate(theta, eps, tau, rng, components=setting != "mean")
                post, div, choice = fit(setting, mean_tree, pca_tree, draws=draws, tune=tune, seed=seed + r,
                                        clipping=clipping, sampler=sampler)
                divergent += div
                clipped.append(share)
                choices.add(choice)
                if choice == "moments":
                    errors.append(moment_error(theta, mean_tree))
                for p in PARAMETERS:
                    ranks[p].append(int(np.sum(post[p][::thin][:L] < theta[p])))
                log(f"  {key} replicate {r}: clipped {share:.2f} ranks " +
                    " ".join(f"{p}={ranks[p][-1]}" for p in PARAMETERS) + f" (of {L}) {choice} div={div}")
            pvalues = uniformity(ranks, L, bins)
            out[key] = {"setting": setting, "epsilon": eps, "tau": tau, "replicates": replicates, "ranks": ranks,
                        "pvalues": pvalues, "clipped_share_mean": float(np.mean(clipped)),
                        "clipped_share_max": float(np.max(clipped)), "clipped_shares": [float(c) for c in clipped],
                        "divergences": divergent,
                        "seconds_per_fit": (time.time() - t0) / replicates,
                        "cpu_seconds_per_fit": (time.process_time() - c0) / replicates,
                        "clipping": sorted(choices), "moment_error_max_sd": max(errors, default=None),
                        "samplers": [sampler],
                        "clipping_points": POINTS}
            log(f"{key:40s} clipping {','.join(sorted(choices))} clipped {np.mean(clipped):5.1%}  " +
                "  ".join(f"p[{p}]={v:.3f}" for p, v in pvalues.items()) +
                f"  div={divergent}  {(time.time() - t0) / replicates:.1f} s/fit "
                f"({(time.process_time() - c0) / replicates:.1f} s CPU)" +
                (f"  moment error <= {max(errors):.3f} sd" if errors else ""))
    return out


def main(argv=None) -> int:
    from _common import write_results

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--replicates", type=int)
    ap.add_argument("--bins", type=int)
    ap.add_argument("--settings", nargs="+", choices=SETTINGS,
                    help="default: both; with --clipped: mean (add mean+components for the joint observation)")
    ap.add_argument("--clipped", action="store_true",
                    help="the clipped regimes (CLIPPED_REGIMES), clipping modelled")
    ap.add_argument("--clipping", default="auto", choices=("auto", "moments", "ignore"),
                    help="fp.observe's clipping= (ignore: the unmodelled baseline)")
    ap.add_argument("--eps", type=float, nargs="+", help="only these epsilons")
    ap.add_argument("--sampler", default="pymc", choices=("pymc", "nutpie"),
                    help="NUTS implementation (nutpie: numba-compiled gradient, compiled once per replicate)")
    ap.add_argument("--seed", type=int, default=20261127, help="seed of the replicates (pool several seeds' ranks)")
    ap.add_argument("--draws", type=int, nargs=3, metavar=("DRAWS", "TUNE", "THIN"))
    ap.add_argument("--n", type=int, default=N, help=f"curves per data set (default {N})")
    ap.add_argument("--pool", nargs="+", metavar="JSON", help="pool these runs' ranks (write --out) and exit")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if not 10 <= a.n <= 10**6:
        ap.error("--n must lie in [10, 1e6]")
    globals()["N"] = a.n   # the module's curves per data set (read by simulate)
    if a.pool:
        res = pool(a.pool)
        write_results("bench_sbc_population_pooled", res, out=a.out)
        return 0
    reps = a.replicates or (12 if a.quick else 60)
    draws, tune, thin = a.draws or ((190, 200, 10) if a.quick else (400, 400, 20))
    bins = a.bins or (3 if a.quick else 5)
    regimes = CLIPPED_REGIMES if a.clipped else REGIMES
    settings = tuple(a.settings or (("mean",) if a.clipped else SETTINGS))
    if a.eps:
        regimes = tuple(r for r in regimes if r[0] in a.eps)
    res = run(reps, draws=draws, tune=tune, thin=thin, bins=bins, settings=settings, regimes=regimes,
              clipping=a.clipping, seed=a.seed, sampler=a.sampler)
    name = "bench_sbc_population" + ("_clipped" if a.clipped else "")
    write_results(name, {"replicates": reps, "draws": draws, "tune": tune, "thin": thin, "bins": bins, "n": a.n,
                         "K": K, "clipping": a.clipping, "regimes": res}, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
