#!/usr/bin/env python
"""Coverage study: 90% posterior bands of :func:`fdp_ppl.inference.density.infer_density` over replicated data sets.

Design: a fixed population on the public box [0, 1], a two-component normal mixture
``0.6 N(0.35, 0.08²) + 0.4 N(0.7, 0.06²)`` (values outside the box clipped by the spec), n records per data set,
a 1-D grid of ``--grid`` points, the package's default public bandwidth. For every replicate: draw a data set,
fit the public spec (its non-private estimate on the grid, ``summary.density``, is the target), release it once
with :func:`fdp_ppl.release` (seeded: a study), run ``infer_density`` (default prior: envelope with a
half-Cauchy amplitude; ``--prior flat`` for the likelihood alone) and record the fraction of grid points where
the 90% equal-tailed band of ``kde`` covers the target. The table gives the mean over replicates (pointwise
coverage averaged over the grid and over data sets) and its Monte Carlo standard error, the mean band width
relative to the target's maximum, ``z2`` (:func:`replicate`), and the coverage of the 90% bands of the CDF
``P(X <= x)`` (grid points where the target's CDF is inside (0.001, 0.999)) and of the median, both of the
normalised positive part ``pdf`` against those of the normalised target; ``modes``: fraction of data sets where
the most probable number of modes (prominence >= 0.1 of the maximum) is the target's, ``P(m)``: mean posterior
probability of the target's number of modes; per mechanism and ε. Target: coverage 0.85-0.95.

Mechanisms: gp and sobolev (Gaussian mechanism, δ = 1e-5, analytic calibration), iclp (η = 1.25), frl
and bernstein (the grid specs of :mod:`fdp_ppl.kde.baselines`, d = 1).

Usage::

    python benchmarks/bench_coverage_kde.py            # 100 replicates per cell
    python benchmarks/bench_coverage_kde.py --quick    # 20 replicates per cell
    python benchmarks/bench_coverage_kde.py --target population --mechanisms gp,sobolev \
        --out benchmarks/results/bench_coverage_kde_population.json
    python benchmarks/bench_coverage_kde.py --quick --noise-factor 0.7071 --out /tmp/x.json   # a wrong likelihood
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

MECHANISMS = ("gp", "sobolev", "iclp", "frl", "bernstein")
EPSILONS = (0.5, 1.0, 4.0)


def population(n: int, rng) -> np.ndarray:
    """n draws of the study's population (two-component normal mixture on [0, 1])."""
    comp = rng.random(n) < 0.6
    return np.where(comp, rng.normal(0.35, 0.08, n), rng.normal(0.7, 0.06, n))


def make_spec(mechanism: str, n: int, grid_size: int):
    """The public spec and mechanism class of one cell."""
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec
    from fdp_ppl.kde.baselines import BernsteinKDESpec, FRLKDESpec

    grid = CartesianGrid.uniform((0.0, 1.0), grid_size)
    if mechanism == "gp":
        return KDESpec(grid=grid, n=n)
    if mechanism == "sobolev":
        return SobolevKDESpec(grid=grid, n=n)
    if mechanism == "iclp":
        return ICLPKDESpec(grid=grid, n=n, eta=1.25)
    if mechanism == "frl":
        return FRLKDESpec(grid=grid, n=n)
    return BernsteinKDESpec(grid=grid, n=n, k=20)


def make_mechanism(mechanism: str, epsilon: float):
    from fdp_ppl.noise.mechanisms import FRL, ICLP, Bernstein, GaussianMechanism

    if mechanism in ("gp", "sobolev"):
        return GaussianMechanism(epsilon, 1e-5)
    return {"iclp": ICLP, "frl": FRL, "bernstein": Bernstein}[mechanism](epsilon)


def population_truth(spec, size: int = 200_000, seed: int = 0) -> np.ndarray:
    """The smoothed population density ``E[kde]`` on the spec's grid (projected on its span): the estimate of a
    spec of the same grid and bandwidth fitted to ``size`` records (Monte Carlo error ~ 1/sqrt(size))."""
    big = type(spec)(grid=spec.grid, bandwidth=spec.bandwidths, n=size)
    return big.fit(population(size, np.random.default_rng(seed))).density


def replicate(spec, mech, rng, *, prior=None, draws: int = 400, ci_prob: float = 0.9, noise_factor: float = 1.0,
              target: str = "kde", truth=None):
    """One replicate: (pointwise coverage averaged over the grid, mean band width / max target, ``z2``).

    ``z2`` is the mean over coefficients of ``(E[c_j | y] − c_j)² / Var(c_j | y)`` with ``c_j`` the true
    (non-private) coefficients: about 1 when the posterior is calibrated (exactly 1 in expectation with the
    flat prior), 1/2 or 2 when the likelihood's noise scale is √2 too large or too small.

    ``noise_factor`` rescales the noise scale stored in the release before inference (a deliberately wrong
    likelihood, for the test that a mis-scaled noise law is detected; 1: the file as written).
    ``target="population"``: the band of ``population`` is checked against ``truth``
    (:func:`population_truth`) and ``z2`` is not computed (nan). ``truth`` given with ``target="kde"``: the
    estimate's band is checked against it (what the estimate's band says about the population).
    """
    from fdp_ppl.errors import SeededReleaseWarning
    from fdp_ppl.inference.density import infer_density
    import fdp_ppl as fp

    x = population(spec.n, rng)
    summary = spec.fit(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        rel = fp.release(summary, mech, random_seed=int(rng.integers(2**62)), study=True, generator="pymc")
    if noise_factor != 1.0:
        rel["constant_data"]["noise_scale"] = rel["constant_data"]["noise_scale"] * noise_factor
    post = infer_density(rel, prior, target=target, draws=draws, chains=1, random_seed=int(rng.integers(2**31)),
                         predictive=False)
    kde = post["posterior"][target].values.reshape(draws, -1)
    lo, hi = np.quantile(kde, [(1 - ci_prob) / 2, (1 + ci_prob) / 2], axis=0)
    t = (summary.density if truth is None else truth).ravel()
    cover = float(np.mean((t >= lo) & (t <= hi)))
    width = float(np.mean(hi - lo) / np.max(np.abs(t)))
    coef = post["posterior"]["coefficients"].values.reshape(draws, -1)
    z2 = float(np.mean((coef.mean(0) - summary.coefficients) ** 2 / coef.var(0))) if target == "kde" else np.nan
    # CDF and median of the normalised positive part (``pdf``) against those of the target
    from fdp_ppl.inference.density import density_functionals

    da = post["posterior"][target]
    x = da[da.dims[-1]].values
    fn = density_functionals(post, probs=(0.5,))
    cdf = fn["cdf"].values.reshape(draws, -1)
    tp = np.maximum(t, 0.0)
    tc = np.concatenate([[0.0], np.cumsum(0.5 * (tp[1:] + tp[:-1]) * np.diff(x))])
    tc = tc / tc[-1]
    clo, chi = np.quantile(cdf, [(1 - ci_prob) / 2, (1 + ci_prob) / 2], axis=0)
    inner = (tc > 1e-3) & (tc < 1 - 1e-3)  # where the CDF is not pinned at 0 or 1
    cdf_cover = float(np.mean((tc[inner] >= clo[inner]) & (tc[inner] <= chi[inner])))
    med = np.interp(0.5, tc, x)
    mlo, mhi = np.quantile(fn["quantile"].values.ravel(), [(1 - ci_prob) / 2, (1 + ci_prob) / 2])
    from fdp_ppl.inference.density import _count_modes

    true_modes = int(_count_modes(tp[None, :], 0.1)[0])
    nm = fn["n_modes"].values.ravel()
    modal = int(np.bincount(nm).argmax())
    return cover, width, z2, cdf_cover, float(mlo <= med <= mhi), float(modal == true_modes), float(np.mean(nm == true_modes))


def study(mechanisms=MECHANISMS, epsilons=EPSILONS, *, reps: int = 100, n: int = 500, grid_size: int = 100,
          prior=None, seed: int = 2026, draws: int = 400, noise_factor: float = 1.0, target: str = "kde") -> list[dict]:
    """Run the coverage study; one dict per (mechanism, ε) with coverage, its MC s.e., width and time."""
    rows = []
    for mech_name in mechanisms:
        spec = make_spec(mech_name, n, grid_size)
        truth = population_truth(spec) if target == "population" else None
        for eps in epsilons:
            rng = np.random.default_rng([seed, MECHANISMS.index(mech_name), int(eps * 100)])
            mech = make_mechanism(mech_name, eps)
            t0 = time.perf_counter()
            res = np.array([replicate(spec, mech, rng, prior=prior, draws=draws, noise_factor=noise_factor,
                                      target=target, truth=truth) for _ in range(reps)])
            rows.append({"mechanism": mech_name, "epsilon": eps, "reps": reps, "coverage": float(res[:, 0].mean()),
                         "coverage_se": float(res[:, 0].std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
                         "width": float(res[:, 1].mean()), "std_resid_var": float(res[:, 2].mean()),
                         "cdf_coverage": float(res[:, 3].mean()), "median_coverage": float(res[:, 4].mean()),
                         "modes_right": float(res[:, 5].mean()), "prob_true_modes": float(res[:, 6].mean()),
                         "seconds": time.perf_counter() - t0})
    return rows


def cost_ratio(mechanism: str, *, epsilon: float = 1.0, n: int = 500, grid_size: int = 100, draws: int = 1000,
               tune: int = 1000, seed: int = 7) -> dict:
    """Sampling cost of ``infer_density`` against a hand-written PyMC model of the same posterior.

    The PyMC model (non-centred): ``a ~ HalfCauchy(1)``, ``z_j ~ N(0, 1)``, ``c_j = a e_j z_j``,
    ``y_j ~ Law(c_j, b_j)`` with the release's law (``pm.Normal`` / ``pm.Laplace``), NUTS with 2 chains; the
    grid values are ``c`` reconstructed afterwards. Cost = effective draws per wall second (median over the
    grid of the bulk ESS of ``kde``; exact draws are independent, so their ESS is the number of draws up to
    the estimator's noise); ``infer_density`` on the same release with the same prior (half-Cauchy(1)
    amplitude on its grid). Returns both costs and their ratio.
    """
    import arviz as az
    import pymc as pm

    from fdp_ppl.errors import SeededReleaseWarning
    from fdp_ppl.inference.density import infer_density, read_kde_release
    import fdp_ppl as fp

    rng = np.random.default_rng(seed)
    spec, mech = make_spec(mechanism, n, grid_size), make_mechanism(mechanism, epsilon)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        rel = fp.release(spec.fit(population(n, rng)), mech, random_seed=seed, study=True, generator="pymc")
    view = read_kde_release(rel)

    def ess_per_s(kde, seconds):
        ess = az.ess(xr.DataArray(kde, dims=("chain", "draw", "x")), method="bulk")
        return float(np.median(ess.values)) / seconds

    import xarray as xr

    t0 = time.perf_counter()
    post = infer_density(rel, draws=draws, chains=2, random_seed=seed, predictive=False)
    t_exact = time.perf_counter() - t0
    exact = ess_per_s(post["posterior"]["kde"].values, t_exact)
    with pm.Model() as model:
        a = pm.HalfCauchy("a", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=view.released.size)
        c = a * view.envelope * z
        view.law.pymc("y", c, view.scale, observed=view.released)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
                          model=model, compute_convergence_checks=False, target_accept=0.9)
    zs = idata["posterior"]["z"].values
    a_s = idata["posterior"]["a"].values
    kde = view.reconstruct(a_s[..., None] * view.envelope * zs)
    t_nuts = time.perf_counter() - t0
    nuts = ess_per_s(kde, t_nuts)
    div = int(idata["sample_stats"]["diverging"].sum())
    return {"mechanism": mechanism, "epsilon": epsilon, "exact_seconds": t_exact, "exact_ess_per_s": exact,
            "pymc_seconds": t_nuts, "pymc_ess_per_s": nuts, "pymc_divergences": div, "speedup": exact / nuts}


def print_table(rows) -> None:
    print(f"{'mechanism':<10} {'eps':>5} {'reps':>5} {'coverage':>9} {'(se)':>7} {'width/max':>10} "
          f"{'z2':>6} {'cdf':>6} {'median':>6} {'modes':>6} {'P(m)':>6} {'s':>6}")
    for r in rows:
        flag = "" if 0.85 <= r["coverage"] <= 0.95 else "  <- outside 0.85-0.95"
        print(f"{r['mechanism']:<10} {r['epsilon']:>5g} {r['reps']:>5d} {r['coverage']:>9.3f} "
              f"{r['coverage_se']:>7.3f} {r['width']:>10.3f} {r['std_resid_var']:>6.2f} {r['cdf_coverage']:>6.3f} "
              f"{r['median_coverage']:>6.3f} {r['modes_right']:>6.2f} {r['prob_true_modes']:>6.2f} "
              f"{r['seconds']:>6.1f}{flag}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--quick", action="store_true", help="20 replicates per cell")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--grid", type=int, default=100)
    p.add_argument("--prior", choices=("envelope", "flat"), default="envelope")
    p.add_argument("--mechanisms", default=",".join(MECHANISMS))
    p.add_argument("--epsilons", default=",".join(str(e) for e in EPSILONS))
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--noise-factor", type=float, default=1.0,
                   help="multiply the release's noise scale by this before inference (a wrong likelihood: "
                        "1.414 or 0.707 shows what a sqrt(2) error does)")
    p.add_argument("--target", choices=("kde", "population"), default="kde",
                   help="population: bands of the smoothed population density E[kde] (gp, sobolev only)")
    p.add_argument("--cost", action="store_true",
                   help="also time a hand-written PyMC (NUTS) model of the same posterior (gp and iclp, epsilon 1)")
    p.add_argument("--out", default=None, help="JSON path (default results/bench_coverage_kde[_quick].json)")
    a = p.parse_args(argv)
    reps = a.reps or (20 if a.quick else 100)
    rows = study(tuple(a.mechanisms.split(",")), tuple(float(e) for e in a.epsilons.split(",")), reps=reps, n=a.n,
                 grid_size=a.grid, prior=a.prior, seed=a.seed, noise_factor=a.noise_factor, target=a.target)
    print_table(rows)
    costs = []
    if a.cost:
        for mech in ("gp", "iclp"):
            costs.append(cost_ratio(mech, draws=300 if a.quick else 1000, tune=300 if a.quick else 1000))
            c = costs[-1]
            print(f"cost {mech}: exact {c['exact_ess_per_s']:.0f} ESS/s ({c['exact_seconds']:.2f} s), PyMC NUTS "
                  f"{c['pymc_ess_per_s']:.1f} ESS/s ({c['pymc_seconds']:.1f} s, {c['pymc_divergences']} divergences): "
                  f"ratio {c['speedup']:.0f}x")
    from _common import write_results

    write_results("bench_coverage_kde", {"costs": costs, "design": {"n": a.n, "grid": a.grid, "prior": a.prior, "reps": reps,
                                                    "population": "0.6 N(0.35, 0.08^2) + 0.4 N(0.7, 0.06^2)",
                                                    "ci_prob": 0.9, "noise_factor": a.noise_factor,
                                                    "target": a.target},
                                         "rows": rows}, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
