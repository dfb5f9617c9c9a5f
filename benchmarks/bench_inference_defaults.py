#!/usr/bin/env python
"""Benchmark: the README's inference examples on simulated releases whose truth is known — divergences, held-out
coverage of the 90% bands of the population mean, and the largest Pareto k̂ of leave-one-out.

Examples (README "Inference from a release", docs/cli.md), each with the default target (the population mean, its
sampling scale κ learned):

* ``gp`` — ``fp.infer(tree)`` / ``fdp-ppl infer release.nc``: the default GP prior, length-scale, amplitude and
  level free (NUTS);
* ``iclp_s2`` — ``fp.infer(tree, ICLPPrior(smoothness=2.0))``: the ICLP prior, amplitude free (NUTS);
* ``iclp_s2_a20`` — ``fdp-ppl infer release.nc --prior iclp --smoothness 2 --amplitude 20``: every prior
  hyperparameter fixed, κ by quadrature (exact).

Replicates: the ICLP simulation design S-1 (Lin & Reimherr 2026, §6.1; population mean μ₀(t) = 10 t e^{-t}), n
curves on a K-point grid, the ICLP-QR mean (Matérn 3/2, ρ = 0.1 eigenbasis, τ = ‖μ₀‖ + 2, public) released once by
ICLP(ε = 1), each replicate from its own seed. The truth μ₀ is held out of everything the inference reads, so the
share of grid points where the pointwise 90% band covers μ₀ (averaged over the grid, then over replicates) is a
held-out coverage; target [0.85, 0.95]. Divergences: NUTS's (``diagnostic_divergences``), summed over replicates
(target 0). k̂: ``fp.inference.loo(post)`` — exact results report none (``-inf``), PSIS ones their Pareto k̂; the
table has the largest over replicates and coefficients, and how many replicates have any k̂ > 0.7 (target none);
results sampled on their hyperparameters alone (model ``marginal``) refit the model without y_j where PSIS's k̂ >
0.7 (:mod:`fdp_ppl.inference.reloo`), and the table gives the largest k̂ before the refits and how many there were.

Usage::

    python benchmarks/bench_inference_defaults.py --quick        # 20 replicates, K = 30, 2 x 300 draws
    python benchmarks/bench_inference_defaults.py                 # 40 replicates, K = 50, 2 x 1000 draws
    python benchmarks/bench_inference_defaults.py --examples iclp_s2_a20 --replicates 20
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_results  # noqa: E402

EXAMPLES = ("gp", "iclp_s2", "iclp_s2_a20")
COVERAGE = (0.85, 0.95)
GOOD_K = 0.7


def prior(name):
    from fdp_ppl.inference import GPPrior, ICLPPrior

    return {"gp": GPPrior(), "iclp_s2": ICLPPrior(smoothness=2.0),
            "iclp_s2_a20": ICLPPrior(smoothness=2.0, amplitude=20.0)}[name]


def simulated_release(seed: int, *, n: int, grid_size: int, epsilon: float = 1.0):
    """One S-1 data set released once by ICLP(ε): (release, μ₀ on the grid)."""
    import fdp_ppl as fp
    from fdp_ppl.datasets import simulate_iclp
    from fdp_ppl.spaces import Grid, Matern, eigenbasis
    from fdp_ppl.summaries import iclp_qr_mean

    grid = Grid.from_points(np.linspace(0.0, 1.0, grid_size))
    basis = eigenbasis(Matern(rho=0.1, nu=1.5), grid)
    s_data, s_rel = (int(v) for v in np.random.default_rng(seed).integers(2**31, size=2))
    ds = simulate_iclp("S-1", n, grid, random_seed=s_data)
    mu0 = ds["mean"].values
    tau = float(np.sqrt(np.sum(grid.weights * mu0**2))) + 2.0   # public: the design's ‖μ₀‖ + 2
    summary = iclp_qr_mean(ds["curves"], basis, tau=tau)
    with warnings.catch_warnings():   # a seeded study release, never published
        warnings.simplefilter("ignore")
        tree = fp.release(summary, fp.ICLP(epsilon), random_seed=s_rel, study=True)
    return tree, mu0


def replicate(example: str, tree, mu0, seed: int, *, draws: int, tune: int, target_accept=None) -> dict:
    import fdp_ppl as fp
    from fdp_ppl.inference import credible_band, loo

    kw = {} if target_accept is None else {"target_accept": target_accept}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fp.infer(tree, prior(example), draws=draws, tune=tune, chains=2, random_seed=seed,
                        progressbar=False, **kw)
        seconds = time.perf_counter() - t0
        band = credible_band(post, ci_prob=0.9)
        elpd = loo(post)
    lo, hi = band["lower"].values, band["upper"].values
    k = np.asarray(elpd.pareto_k, dtype=float)
    return {"example": example, "seed": seed, "seconds": seconds, "inference": post.attrs["inference"],
            "model": post.attrs["inference_model"], "loo_method": post.attrs.get("loo_method"),
            "divergences": int(post.attrs["diagnostic_divergences"]),
            "max_rhat": float(post.attrs["diagnostic_max_rhat"]),
            "coverage": float(np.mean((lo <= mu0) & (mu0 <= hi))), "width": float(np.mean(hi - lo)),
            "max_k": float(np.max(k)) if k.size else float("-inf"), "n_k_above": int(np.sum(k > GOOD_K)),
            "psis_max_k": float(post.attrs.get("loo_psis_max_k", np.max(k) if k.size else float("-inf"))),
            "loo_refits": int(post.attrs.get("loo_refits", 0))}


def summarise(rows) -> list[dict]:
    out = []
    for ex in dict.fromkeys(r["example"] for r in rows):
        rs = [r for r in rows if r["example"] == ex]
        cov = np.array([r["coverage"] for r in rs])
        out.append({"example": ex, "replicates": len(rs), "model": rs[0]["model"], "loo_method": rs[0]["loo_method"],
                    "divergences": int(sum(r["divergences"] for r in rs)),
                    "replicates_with_divergences": int(sum(r["divergences"] > 0 for r in rs)),
                    "coverage": float(cov.mean()), "coverage_se": float(cov.std(ddof=1) / np.sqrt(cov.size))
                    if cov.size > 1 else float("nan"),
                    "coverage_ok": bool(COVERAGE[0] <= cov.mean() <= COVERAGE[1]),
                    "max_k": float(max(r["max_k"] for r in rs)),
                    "replicates_k_above": int(sum(r["n_k_above"] > 0 for r in rs)),
                    "psis_max_k": float(max(r.get("psis_max_k", r["max_k"]) for r in rs)),
                    "loo_refits": int(sum(r.get("loo_refits", 0) for r in rs)),
                    "max_rhat": float(max(r["max_rhat"] for r in rs)),
                    "median_seconds": float(np.median([r["seconds"] for r in rs]))})
    return out


def markdown(summary) -> str:
    lines = ["| example | model (LOO) | replicates | divergences (replicates) | 90% coverage of μ₀ ± se | max k̂ "
             "(replicates > 0.7) | max PSIS k̂ before refits (refits) | max R-hat | median s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        k = "exact (none)" if s["max_k"] == -np.inf else f"{s['max_k']:.2f} ({s['replicates_k_above']})"
        lines.append(f"| {s['example']} | {s['model']} ({s['loo_method']}) | {s['replicates']} | {s['divergences']} "
                     f"({s['replicates_with_divergences']}) | {s['coverage']:.3f} ± {s['coverage_se']:.3f}"
                     f"{'' if s['coverage_ok'] else ' (off target)'} | {k} | "
                     f"{'-' if s['psis_max_k'] == -np.inf else format(s['psis_max_k'], '.2f')} ({s['loo_refits']}) | "
                     f"{s['max_rhat']:.3f} | "
                     f"{s['median_seconds']:.1f} |")
    return "\n".join(lines)


def run(quick: bool, replicates=None, examples=EXAMPLES, n=None, grid_size=None, draws=None, tune=None,
        target_accept=None) -> dict:
    from threadpoolctl import threadpool_limits

    replicates = replicates or (20 if quick else 40)
    n = n or (50 if quick else 100)
    grid_size = grid_size or (30 if quick else 50)
    draws = draws or (300 if quick else 1000)
    tune = tune or (300 if quick else 1000)
    rows = []
    with threadpool_limits(1):
        for r in range(replicates):
            seed = 7919 * r + 11
            tree, mu0 = simulated_release(seed, n=n, grid_size=grid_size)
            for ex in examples:
                rows.append(replicate(ex, tree, mu0, seed, draws=draws, tune=tune, target_accept=target_accept))
                row = rows[-1]
                print(f"  r={r} {ex}: cover={row['coverage']:.2f} div={row['divergences']} "
                      f"max_k={row['max_k']:.2f} {row['seconds']:.1f}s", file=sys.stderr, flush=True)
    summary = summarise(rows)
    print(markdown(summary))
    return {"config": {"replicates": replicates, "n": n, "grid_size": grid_size, "draws": draws, "tune": tune,
                       "chains": 2, "epsilon": 1.0, "design": "S-1", "target_accept": target_accept,
                       "targets": {"coverage": COVERAGE, "max_k": GOOD_K, "divergences": 0}},
            "summary": summary, "rows": rows, "table": markdown(summary)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="20 replicates, K = 30, n = 50, 2 x 300 draws")
    p.add_argument("--replicates", type=int, default=None)
    p.add_argument("--examples", default=",".join(EXAMPLES))
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--grid-size", type=int, default=None)
    p.add_argument("--draws", type=int, default=None)
    p.add_argument("--tune", type=int, default=None)
    p.add_argument("--target-accept", type=float, default=None, help="passed to fp.infer (default: its own)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    res = run(a.quick, a.replicates, tuple(v for v in a.examples.split(",") if v), a.n, a.grid_size, a.draws,
              a.tune, a.target_accept)
    write_results("bench_inference_defaults", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    import os

    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
