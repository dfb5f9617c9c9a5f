"""Which posterior target should ``fp.infer`` default to? A coverage study over replicated data sets.

An analyst who releases a mean curve means the **population mean** μ₀ (or the data mean, its estimate), not the
shrunk, clipped summary the mechanism privatises. This study measures, for both targets of
:func:`fdp_ppl.infer` (``"summary"``: the noise-free ICLP-QR summary; ``"population"``: μ₀, with the summary's
shrinkage and the sampling error of the mean in the likelihood), how often the pointwise 90% credible band covers

* μ₀, the design's population mean (what the analyst means),
* the data mean X̄ of the replicate (what the issue's user compared with), and
* the non-private summary (what ``"summary"`` targets),

averaged over the grid and over replicates, for the ICLP simulation design S-1 (Lin & Reimherr 2026, §6.1) and a
Gaussian-process truth, n ∈ {50, 500} curves, ε = 1, each replicate released once with ``ICLP(ε)`` and inferred
with the default prior (``prior="gp"``, free hyperparameters: NUTS).

Usage::

    python benchmarks/bench_coverage_target.py [--quick] [--replicates R] [--out results/bench_coverage_target.json]
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

TARGETS = ("summary", "population")


def replicate(design: str, n: int, seed: int, *, grid_size: int, epsilon: float, draws: int, tune: int,
              targets=TARGETS) -> list[dict]:
    """One data set, one release, both targets: grid-averaged coverage of μ₀, X̄ and the summary."""
    import fdp_ppl as fp
    from fdp_ppl.datasets import simulate_iclp
    from studies.coverage import gp_truth
    from fdp_ppl.inference import credible_band
    from fdp_ppl.spaces import Grid, Matern, eigenbasis
    from fdp_ppl.summaries import iclp_qr_mean

    grid = Grid.from_points(np.linspace(0.0, 1.0, grid_size))
    basis = eigenbasis(Matern(rho=0.1, nu=1.5), grid)
    rng = np.random.default_rng(seed)
    s_data, s_rel, s_inf = (int(v) for v in rng.integers(2**31, size=3))
    ds = simulate_iclp("S-1", n, grid, random_seed=s_data)
    if design == "GP":
        mu0 = gp_truth(grid)
        curves = ds["curves"] - ds["mean"] + mu0
    else:
        curves, mu0 = ds["curves"], ds["mean"].values
    tau = float(np.sqrt(np.sum(grid.weights * mu0**2))) + 2.0  # public: the design's ‖μ0‖ + 2
    summary = iclp_qr_mean(curves, basis, tau=tau)
    with warnings.catch_warnings():  # a seeded study release, never published
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        tree = fp.release(summary, fp.ICLP(epsilon), random_seed=s_rel, study=True)
    truths = {"mu0": mu0, "data_mean": curves.mean("curve").values, "summary": summary.curve().values}
    rows = []
    for target in targets:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = fp.infer(tree, target=target, draws=draws, tune=tune, random_seed=s_inf, progressbar=False)
        seconds = time.perf_counter() - t0
        band = credible_band(post, ci_prob=0.9)
        lo, hi = band["lower"].values, band["upper"].values
        row = {"design": design, "n": n, "epsilon": epsilon, "seed": seed, "target": target, "seconds": seconds,
               "width": float(np.mean(hi - lo))}
        for name, truth in truths.items():
            row[f"cover_{name}"] = float(np.mean((lo <= truth) & (truth <= hi)))
        rows.append(row)
    return rows


def run(quick: bool = False, replicates: int | None = None, epsilons=(1.0,), targets=TARGETS) -> dict:
    import pandas as pd

    replicates = replicates or (3 if quick else 25)
    draws = tune = 150 if quick else 400
    configs = [("S-1", 50), ("GP", 50), ("S-1", 500)] if not quick else [("S-1", 50)]
    rows = []
    for eps in epsilons:
        for design, n in configs:
            for r in range(replicates):
                rows += replicate(design, n, 1000 * r + n, grid_size=30, epsilon=eps, draws=draws, tune=tune,
                                  targets=targets)
            print(f"  epsilon={eps:g} {design} n={n}: {replicates} replicates done", flush=True)
    table = pd.DataFrame(rows)
    cols = ["cover_mu0", "cover_data_mean", "cover_summary", "width", "seconds"]
    summary = table.groupby(["epsilon", "design", "n", "target"])[cols].mean().reset_index()
    print("\n90% bands, share of grid points covered (mean over replicates)\n")
    print(summary.to_markdown(index=False, floatfmt=".3f") if hasattr(summary, "to_markdown") else summary)
    pooled = table.groupby(["epsilon", "target"])[["cover_mu0", "cover_data_mean", "cover_summary"]].mean()
    print("\npooled over configurations:\n", pooled.round(3).to_string())
    return {"replicates": replicates, "draws": draws, "rows": rows, "summary": summary.to_dict("records"),
            "pooled": pooled.reset_index().to_dict("records")}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--replicates", type=int, default=None)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    p.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    write_results("bench_coverage_target", run(a.quick, a.replicates, tuple(a.epsilons), tuple(a.targets)),
                  quick=a.quick, out=a.out)


if __name__ == "__main__":
    main()
