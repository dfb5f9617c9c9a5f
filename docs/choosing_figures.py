"""The figures of docs/choosing.md, made by the package from public plans only (no data, no privacy spent).

Run by the docs build (docs/conf.py) as ``python docs/choosing_figures.py OUTDIR``; about 10-20 s. Every number
comes from :meth:`fdp_ppl.ReleasePlan.accuracy` and its inverses :func:`~fdp_ppl.releasing.accuracy.smallest_epsilon`
and :func:`~fdp_ppl.releasing.accuracy.largest_tau`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

import fdp_ppl as fp
from fdp_ppl.releasing.accuracy import largest_tau, smallest_epsilon

SAMPLES = 500  # Monte Carlo draws of the public noise law per plan (quantiles to ~2%)
GRID = fp.Grid.uniform(101)
N = 200
WIDTH = 0.25  # the target simultaneous 95% half-width, in the data's units (tau = 1)


def mean_spec(tau=1.0, rho=0.1):
    return fp.ICLPQRSpec(basis=fp.eigenbasis(fp.Matern(rho=rho, nu=1.5), GRID), tau=tau, n=N)


def save(fig, path: Path, *legends) -> None:
    """Legends on ``legends``, plain numbers on every log axis (no 2 x 10^-1 minor labels), then write ``path``."""
    for ax in legends:
        ax.legend(fontsize=7)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                axis.set_major_formatter(ScalarFormatter())
                axis.set_minor_formatter(NullFormatter())
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_epsilon(out: Path) -> None:
    """Band width against epsilon, and the smallest epsilon for a target band."""
    eps = np.geomspace(0.1, 10, 13)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for (name, mech), offset in zip((("ICLP (epsilon-DP)", fp.ICLP),
                                     ("Gaussian (delta = 1e-6)", lambda e: fp.GaussianMechanism(e, 1e-6))),
                                    ((8, 8), (8, -16))):
        acc = [fp.plan(mean_spec(), mech(e)).accuracy(samples=SAMPLES) for e in eps]
        line, = ax.loglog(eps, [float(a["simultaneous_halfwidth"]) for a in acc], "-o", ms=3,
                          label=f"{name}: simultaneous 95%")
        ax.loglog(eps, [float(a["max_pointwise_halfwidth"]) for a in acc], "--", color=line.get_color(),
                  label=f"{name}: pointwise 95%")
        best = smallest_epsilon(mean_spec(), mech(1.0), WIDTH, samples=SAMPLES, rtol=1e-2)
        ax.plot([best], [WIDTH], "s", color=line.get_color(), ms=7)
        ax.annotate(f"smallest eps = {best:.2g}", (best, WIDTH), textcoords="offset points", xytext=offset,
                    color=line.get_color())
    ax.axhline(WIDTH, color="0.5", lw=0.8)
    ax.set_xlabel("epsilon per release")
    ax.set_ylabel("noise half-width (data units, tau = 1)")
    ax.set_title(f"Mean curve, n = {N}, Matern 3/2 basis (rho = 0.1), tau = 1")
    save(fig, out / "width_vs_epsilon.png", ax)


def figure_tau_and_basis(out: Path) -> None:
    """The noise grows linearly with tau; the basis trades noise against shrinkage bias."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8))
    taus = np.geomspace(0.25, 4, 9)
    widths = [float(fp.plan(mean_spec(tau=t), fp.ICLP(1.0)).accuracy(samples=SAMPLES)["simultaneous_halfwidth"])
              for t in taus]
    left.loglog(taus, widths, "-o", ms=3)
    best = largest_tau(mean_spec(), fp.ICLP(1.0), 1.0, samples=SAMPLES, rtol=1e-2)
    left.axhline(1.0, color="0.5", lw=0.8)
    left.plot([best], [1.0], "s", ms=7)
    left.annotate(f"largest tau = {best:.2g}", (best, 1.0), textcoords="offset points", xytext=(6, -14))
    left.set_xlabel("public tau (data units)")
    left.set_ylabel("simultaneous 95% half-width")
    left.set_title("ICLP, epsilon = 1: noise is linear in tau")
    rhos = np.geomspace(0.02, 0.5, 9)
    acc = [fp.plan(mean_spec(rho=r), fp.ICLP(1.0)).accuracy(samples=SAMPLES, constant=0.5) for r in rhos]
    right.semilogx(rhos, [float(a["simultaneous_halfwidth"]) for a in acc], "-o", ms=3,
                   label="simultaneous 95% half-width")
    right.semilogx(rhos, [float(a["max_abs_constant_bias"]) for a in acc], "-s", ms=3,
                   label="bias of the constant 0.5 (shrinkage)")
    right.set_xlabel("basis length-scale rho (Matern 3/2)")
    right.set_title("ICLP, epsilon = 1, tau = 1: the basis")
    save(fig, out / "tau_and_basis.png", right)


def figure_families(out: Path) -> None:
    """Kernel machines: sign agreement against the stated margin; components: angle against the eigengap."""
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.machine import ERMSpec

    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8))
    margins = np.geomspace(0.02, 1.0, 12)
    spec = ERMSpec(fp.Gaussian.from_bandwidth(0.15), lam=0.05, n=1000, domain=[[0, 1]], grid_size=50)
    for eps in (0.25, 1.0, 4.0):
        acc = fp.plan(spec, fp.GaussianMechanism(eps, 1e-6)).accuracy(margin=margins, samples=SAMPLES)
        line, = left.semilogx(margins, acc["mean_sign_agreement"], "-o", ms=3, label=f"eps = {eps:g}: share kept")
        left.semilogx(margins, acc["all_signs_kept"], "--", color=line.get_color(), label=f"eps = {eps:g}: all kept")
    left.set_xlabel("stated margin |f(x)| (label units)")
    left.set_ylabel("probability")
    left.set_title("Kernel SVM, n = 1000, GP noise (delta = 1e-6)")
    gaps = np.geomspace(0.005, 0.5, 8)
    for eps in (0.25, 1.0, 4.0):
        fpca = FPCASpec(grid=fp.Grid.uniform(51), m=5, k=1, epsilon=eps, tau=1.0)
        acc = fp.plan(fpca, fp.ExponentialMechanism(), n=500).accuracy(eigengap=gaps, samples=SAMPLES)
        right.semilogx(gaps, acc["expected_angle"], "-o", ms=3, label=f"eps = {eps:g}")
    right.set_xlabel("stated eigengap (tau-scaled second moment)")
    right.set_ylabel("mean principal angle (degrees)")
    right.set_title("Principal component, n = 500, m = 5, k = 1")
    save(fig, out / "families.png", left, right)


def main(out) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figure_epsilon(out)
    figure_tau_and_basis(out)
    figure_families(out)


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/_generated/choosing")
