"""ε-DP mean FA profile of the corpus callosum (DTI) with the ICLP mechanism.

Written only against the public API of ``fdp_ppl``. See README.md (model card).

Usage::

    python models/iclp_mean/run.py [--out-dir DIR] [--epsilon 1] [--seed S] [--data-dir DIR]

Writes ``release.nc`` (the release, an ``xarray.DataTree``) and ``release.png``
into ``--out-dir`` (default: the current directory) and prints the public
parameters, plus a few lines meant for the data holder only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.datasets import data_directory, load_dataset
from fdp_ppl.dims import T
from fdp_ppl.releasing.schema import CURVE, POSTERIOR

EPSILON = 1.0
TAU = 1.0  # FA lies in [0, 1] on the domain [0, 1]: ||X||_L2 <= sup|X| <= 1, a public bound
KERNEL = fp.Matern(rho=0.1, nu=1.5)


def scans_per_subject(subject_id) -> int:
    """Largest number of rows sharing one subject id (the group size k of group privacy)."""
    _, counts = np.unique(np.asarray(subject_id), return_counts=True)
    return int(counts.max())


def run(out_dir: Path = Path("."), epsilon: float = EPSILON, seed: int | None = None, data_dir=None,
        plot: bool = True) -> xr.DataTree:
    """Load DTI cca, release its ICLP-QR mean, write release.nc (+ release.png); returns the release."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # missing points are set to 0 by a public rule, so n = 382 records whatever is missing (never dropped)
    curves = load_dataset("dti", "cca", data_dir=data_dir, missing="impute")
    n_imputed = int(curves.attrs.get("n_imputed_curves", 0))

    # group privacy: several scans per subject (public study design, see the model card)
    with xr.open_dataset(data_directory(data_dir) / "dti.nc") as ds:
        k_file = scans_per_subject(ds["subject_id"].values)
        n_subjects = int(np.unique(ds["subject_id"].values).size)
        n_file = int(ds.sizes["scan"])

    grid = fp.Grid.from_points(curves["t"].values)
    basis = fp.eigenbasis(KERNEL, grid)
    summary = fp.iclp_qr_mean(curves, basis, tau=TAU)  # PSS: eta = 1 + 2/beta, psi = 1/n
    tree = fp.release(summary, fp.ICLP(epsilon), random_seed=seed, study=seed is not None)
    tree.attrs.update({
        "data_source": "DTI corpus callosum FA (refund::DTI), all scans; missing points set to 0",
        "model": "models/iclp_mean",
        "privacy_unit": "one scan (record-level); person-level epsilon by group privacy is k*epsilon",
        "group_privacy_k": k_file,
        "group_privacy_epsilon": k_file * epsilon,
    })
    post = tree[POSTERIOR].to_dataset()
    post[CURVE].attrs.update(long_name="mean fractional anisotropy (FA)", units="1")
    post[T].attrs.update(long_name="position along the corpus callosum tract", units="0-1")
    tree[POSTERIOR].dataset = post
    tree.to_netcdf(out_dir / "release.nc")

    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from fdp_ppl.plots import plot_release

        fig, ax = plot_release(tree)
        fig.savefig(out_dir / "release.png", dpi=150)
        plt.close(fig)

    sens = summary.sensitivity("1,C", "tight").value
    paper = summary.sensitivity("1,C", "paper").value
    scale = tree["constant_data"]["noise_scale"].values
    print("ICLP-QR mean of DTI cca (fractional anisotropy), models/iclp_mean")
    print(f"  epsilon            {epsilon:g} per scan (pure epsilon-DP, replace one scan, n public)")
    print(f"  person level       k = {k_file} scans at most per subject: epsilon_person = k * epsilon = "
          f"{k_file * epsilon:g}")
    print(f"  n                  {summary.n} scans of {n_file} ({n_subjects} subjects; missing points set to 0)")
    print(f"  tau                {TAU:g} (FA in [0, 1] on [0, 1])")
    print(f"  kernel             Matern nu=1.5, rho=0.1; eta={summary.params['eta']:.4g}, "
          f"psi={summary.params['psi']:.4g}; J={summary.n_components}")
    print(f"  sensitivity        {sens:.4g} in ||.||_(1,C) (tight); paper Theorem 12.3 bound {paper:.4g}")
    print(f"  noise              Laplace, b_j = Delta sqrt(lambda_j)/epsilon; E||xi||^2 = "
          f"{float(np.sum(2 * scale**2)):.3g}")
    print(f"  wrote              {out_dir / 'release.nc'}" + (f", {out_dir / 'release.png'}" if plot else ""))
    print(f"data holder only: {n_imputed} scans had missing points set to 0; {summary.n_clipped} scans clipped at tau",
          file=sys.stderr)
    return tree


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=".", type=Path, help="output directory (default: current directory)")
    p.add_argument("--epsilon", default=EPSILON, type=float, help="privacy parameter per scan (default 1)")
    p.add_argument("--seed", default=None, type=int,
                   help="random seed for a reproducible study; default: fresh OS entropy (a seeded release is "
                        "private only while the seed stays secret)")
    p.add_argument("--data-dir", default=None, help="directory holding dti.nc (default: FDP_PPL_DATA_DIR or the "
                                                    "datasets shipped with the package)")
    p.add_argument("--no-plot", action="store_true", help="do not write release.png")
    a = p.parse_args(argv)
    run(a.out_dir, a.epsilon, a.seed, a.data_dir, plot=not a.no_plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
