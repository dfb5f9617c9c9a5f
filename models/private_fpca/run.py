"""ε-DP principal components of the Berkeley growth curves (exponential mechanism, Awan et al. 2019).

Written only against the public API of ``fdp_ppl``. See README.md (model card).

Usage::

    python models/private_fpca/run.py [--out-dir DIR] [--epsilon 1] [--k 1] [--form bingham|gp-base]
                                      [--sampler exact|gibbs|nuts] [--iterations 200] [--delta D] [--seed S]
                                      [--no-plot] [--data-dir DIR]

Default: the Bingham form (the paper's Section 5), k = 1, exact: pure epsilon''-DP with epsilon'' = epsilon + ~1e-10
(a data-independent proposal budget with a public fallback). Writes ``release.nc`` (one private k-frame, an
``xarray.DataTree``) and ``release.png`` into
``--out-dir`` and prints the public parameters, plus a line meant for the data holder only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.datasets import GROWTH_DEVIATION_TAU, growth_reference, load_dataset
from fdp_ppl.fpca import FPCASpec

EPSILON = 1.0
K = 1  # k > 1: only Gibbs / NUTS (uncertified MCMC) serve the Bingham form; the GP-base form is refused at n = 93
M = 5
# Gaussian kernel exp(-d^2/rho) on the ages rescaled to [0, 1]: with rho = 0.1 its first 5 operator
# eigenvalues explain >= 99% of the trace and 4 do not (the paper's Section 6.2 rule); a public choice.
RHO = 0.1
TAU = GROWTH_DEVIATION_TAU  # 40 cm, public bound on deviations from the CDC 2000 median height


def run(out_dir: Path = Path("."), epsilon: float = EPSILON, k: int = K, form: str = "bingham",
        sampler: str = "exact", iterations: int = 200, seed: int | None = None, plot: bool = True,
        data_dir=None, delta: float | None = None) -> xr.DataTree:
    """Release one ε-DP k-frame of principal components of growth deviations; returns the release."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    curves = load_dataset("growth", data_dir=data_dir)  # heights (cm), 93 children x 31 ages
    ages = curves["t"].values
    deviations = curves.values - growth_reference(ages)  # public reference subtracted (not the sample mean)
    grid = fp.Grid.from_points(ages)
    basis = fp.eigenbasis(fp.Gaussian(rho=RHO), grid)
    share = float(np.sum(basis.eigenvalues[:M]))          # unit-variance kernel: the operator trace is 1
    # Sigma = K * diag(lambda_1..lambda_M): the kernel-matrix eigenvalues (as in notebook 07's reading)
    spec = FPCASpec(grid=grid, m=M, k=k, epsilon=epsilon, tau=TAU, basis=basis, form=form,
                    sigma_scale=float(grid.size))
    fit = spec.fit(deviations)
    tree = fp.release(fit, fp.ExponentialMechanism(sampler=sampler, iterations=iterations, delta=delta),
                      random_seed=seed, study=seed is not None, dataset="growth", label="models/private_fpca")
    tree.attrs.update({
        "data_source": "Berkeley Growth Study heights (fdars), deviations from the CDC 2000 median height",
        "model": "models/private_fpca",
        "privacy_unit": "one child's height curve (replace one record, n public)",
        "public_reference": "CDC 2000 median height, boys and girls averaged (fdp_ppl.datasets.growth_reference)",
        "kernel": f"gaussian exp(-d^2/rho), rho = {RHO:g} on ages rescaled to [0, 1]",
    })
    post = tree["posterior"].to_dataset()
    post["components"].attrs.update(long_name="private principal component (unit L2 norm on rescaled ages)",
                                    units="1")
    post["t"].attrs.update(long_name="age", units="years")
    tree["posterior"].dataset = post
    tree.to_netcdf(out_dir / "release.nc")

    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from fdp_ppl.plots import plot_fpca

        fig, _ = plot_fpca(tree)
        fig.savefig(out_dir / "release.png", dpi=150, bbox_inches="tight")
        plt.close(fig)

    a = tree.attrs
    print("eps-DP functional PCA of Berkeley growth curves, models/private_fpca")
    if int(a["certified"]) and int(a["pure"]):
        guarantee = f"pure {a['epsilon_guaranteed']:.12g}-DP"
    elif int(a["certified"]):
        guarantee = f"({a['epsilon_guaranteed']:.12g}, {a['delta_guaranteed']:.3g})-DP"
    else:
        guarantee = "UNCERTIFIED MCMC: delta not bounded"
    print(f"  epsilon            {epsilon:g} for one {k}-frame; guaranteed {guarantee} (replace one child, n public)")
    print(f"  n                  {fit.n} children, {grid.size} ages {ages[0]:g}-{ages[-1]:g} years")
    print(f"  data               heights minus the CDC 2000 median height; clipped to tau = {TAU:g} cm (L2 on [0, 1])")
    print(f"  basis              first {M} eigenfunctions of the Gaussian kernel, rho = {RHO:g} "
          f"({100 * share:.2f}% of its trace); Sigma: {a['sigma_rule']}")
    print(f"  objective          {a['objective']}; sensitivity {a['sensitivity']:g}")
    print(f"  form / sampler     {form} / {a['sampler']} (exact = {a['exact']}, iterations = {a['iterations']})")
    print(f"  seeded             {bool(a['noise_seeded'])}")
    print(f"  wrote              {out_dir / 'release.nc'}" + (f", {out_dir / 'release.png'}" if plot else ""))
    print(f"data holder only: {fit.n_clipped} curves clipped at tau", file=sys.stderr)
    return tree


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=".", type=Path, help="output directory (default: current directory)")
    p.add_argument("--epsilon", default=EPSILON, type=float, help="privacy parameter of the release (default 1)")
    p.add_argument("--k", default=K, type=int, help=f"components released jointly (default {K})")
    p.add_argument("--form", default="bingham", choices=("bingham", "gp-base"),
                   help="bingham: the paper's Section 5 density, exact and pure eps-DP for k = 1 (default); gp-base: "
                        "Theorem 4.1, exact for any k but refused at this n unless epsilon is small")
    p.add_argument("--sampler", default="exact", choices=("exact", "gibbs", "nuts"),
                   help="exact (default; bingham needs k = 1), gibbs (bingham, any k; uncertified MCMC for k > 1) or "
                        "nuts (either form; uncertified MCMC)")
    p.add_argument("--delta", default=None, type=float,
                   help="the (eps', delta')-DP variant of the exact samplers (fallback probability <= DELTA); "
                        "default: pure eps''-DP")
    p.add_argument("--iterations", default=200, type=int,
                   help="Gibbs scans or NUTS tuning steps (not used by exact; default 200)")
    p.add_argument("--seed", default=None, type=int,
                   help="random seed for a reproducible study; default: fresh OS entropy (a seeded release is "
                        "private only while the seed stays secret)")
    p.add_argument("--data-dir", default=None, help="data directory (unused: the growth data ship with fdars; "
                                                    "accepted for a uniform model command line)")
    p.add_argument("--no-plot", action="store_true", help="do not write release.png")
    a = p.parse_args(argv)
    run(a.out_dir, a.epsilon, a.k, a.form, a.sampler, a.iterations, a.seed, plot=not a.no_plot, data_dir=a.data_dir,
        delta=a.delta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
