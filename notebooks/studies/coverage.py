"""Frequentist coverage of noise-aware credible bands: release → infer → band, replicated.

The computation behind Section 6 of ``notebooks/06_inference_from_release.ipynb``
and ``tests/inference/test_coverage.py``. One replicate:

1. simulate ``n`` curves from an ICLP simulation design (Lin & Reimherr 2026,
   Section 6.1: ``"S-1"`` … ``"S-4"``, GP errors) or ``"GP"`` (S-1's errors
   around one fixed draw of a Matérn-5/2 Gaussian process, :func:`gp_truth`);
2. fit the ICLP-QR mean (PSS tuning) with the public bound
   ``τ = ‖μ0‖ + 2`` (the design's mean norm plus two; the errors have
   ``E‖e‖² = 1``), and release it **once** with ``ICLP(ε)``;
3. run :func:`fdp_ppl.inference.infer` on the release (``target="summary"``)
   and compute the pointwise credible band (:func:`fdp_ppl.inference.credible_band`);
4. score the band against the truth, the **non-private summary** of the
   simulated data (``summary.curve()``): ``infer`` never sees it.

Per replicate (:func:`coverage_replicate`): how many of the evaluation points
(default t = 0.1, 0.3, …, 0.9) the band covers, the coverage averaged over
the whole grid, and the error ratio ``‖posterior mean − truth‖² /
‖release − truth‖²`` (grid L² norm). :func:`summarise_coverage` pools the
covered indicators over replicates with an exact Clopper–Pearson interval
(:func:`clopper_pearson`); the points of one curve are correlated, so the
interval is somewhat too narrow.

Bayesian credible bands have nominal *frequentist* coverage only on average
over the prior; for a fixed truth, under-coverage is possible where the prior
shrinks a real feature.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from fdp_ppl.datasets import simulate_iclp
from fdp_ppl.inference import ICLPPrior, credible_band, infer
from fdp_ppl.noise.mechanisms import ICLP
from fdp_ppl.releasing.draw import release as release_summary
from fdp_ppl.releasing.schema import read_release
from fdp_ppl.spaces import Grid, Matern, eigenbasis
from fdp_ppl.summaries import iclp_qr_mean

#: evaluation points of the pooled coverage
POINTS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: simulation designs: the ICLP designs of Section 6.1 and a Gaussian-process truth
DESIGNS = ("S-1", "S-2", "S-3", "S-4", "GP")
N_CURVES = 500
EPSILON = 1.0
CI_PROB = 0.9
CI_KIND = "eti"
#: columns of :func:`run_coverage`
REPLICATE_COLUMNS = ("replicate", "covered", "points", "grid_coverage", "err_posterior", "err_release", "ratio",
                     "max_rhat", "divergences")
#: columns of :func:`summarise_coverage` (besides the grouping columns)
SUMMARY_COLUMNS = ("replicates", "covered", "points", "coverage", "cp_lower", "cp_upper", "grid_coverage", "ratio",
                   "ratio_se", "ratio_median", "share_ratio_below_1")


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) confidence interval of a binomial proportion ``k/n``.

    Parameters
    ----------
    k, n : int
        Successes and trials, ``0 <= k <= n``, ``n >= 1``.
    level : float
        Confidence level.

    Returns
    -------
    (lower, upper) : tuple of float
        Beta quantiles ``B(α/2; k, n−k+1)`` and ``B(1−α/2; k+1, n−k)``
        (0 when k = 0, 1 when k = n).
    """
    a = 1 - level
    lo = stats.beta.ppf(a / 2, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - a / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def gp_truth(grid: Grid, seed: int = 777) -> np.ndarray:
    """A smooth random truth: one draw of a Matérn-5/2 GP (ρ = 0.2, sd 1) on ``grid``; shape (K,)."""
    rng = np.random.default_rng(seed)
    K = Matern(rho=0.2, nu=2.5).gram(grid.t)
    w, V = np.linalg.eigh(K)
    return V @ (np.sqrt(np.clip(w, 0, None)) * rng.standard_normal(grid.size))


def simulate_release(design: str, grid: Grid, basis, seed, *, n: int = N_CURVES, epsilon: float = EPSILON,
                     truth_seed: int = 777):
    """One release of the ICLP-QR mean and its truth (the non-private summary).

    Parameters
    ----------
    design : {"S-1", "S-2", "S-3", "S-4", "GP"}
    grid : Grid
    basis : Eigenbasis
        ICLP eigenbasis on ``grid`` (summary and mechanism).
    seed : int, sequence of int or Generator
        Seeds ``numpy.random.default_rng``, which draws one seed for the
        data and one for the release.
    n : int
        Curves per dataset.
    epsilon : float
        ε of the ICLP.
    truth_seed : int
        Seed of the GP mean of design ``"GP"`` (fixed across replicates).

    Returns
    -------
    release : xr.DataTree
        One draw of :func:`fdp_ppl.release`.
    truth : ndarray, shape (K,)
        The non-private ICLP-QR summary on the grid (for evaluation only).

    Raises
    ------
    ValueError
        Unknown design.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; use one of {DESIGNS}")
    rng = np.random.default_rng(seed)
    s_data, s_rel = (int(v) for v in rng.integers(2**31, size=2))
    if design == "GP":
        ds = simulate_iclp("S-1", n, grid, random_seed=s_data)
        mean = gp_truth(grid, truth_seed)
        curves = ds["curves"] - ds["mean"] + mean
    else:
        ds = simulate_iclp(design, n, grid, random_seed=s_data)
        curves, mean = ds["curves"], ds["mean"].values
    tau = float(np.sqrt(np.sum(grid.weights * mean**2))) + 2.0  # public: the design's ‖μ0‖ + 2 (E‖e‖² = 1)
    summary = iclp_qr_mean(curves, basis, tau=tau)
    tree = release_summary(summary, ICLP(epsilon), random_seed=s_rel, study=True)
    return tree, summary.curve().values


def coverage_replicate(design: str, grid: Grid, basis, prior=None, *, seed, infer_seed=None, n: int = N_CURVES,
                       epsilon: float = EPSILON, points=POINTS, ci_prob: float = CI_PROB, ci_kind: str = CI_KIND,
                       draws: int = 200, tune: int = 200, chains: int = 2, truth_seed: int = 777) -> dict:
    """Release once, infer, and score the band against the truth (one replicate).

    Parameters
    ----------
    design, grid, basis, seed, n, epsilon, truth_seed :
        See :func:`simulate_release`.
    prior : prior of :func:`fdp_ppl.inference.infer`, optional
        Default :class:`~fdp_ppl.inference.ICLPPrior`.
    infer_seed : int, optional
        MCMC seed.
    points : sequence of float
        Evaluation points on [0, 1] (band and truth are interpolated linearly).
    ci_prob : float
    ci_kind : {"eti", "hdi"}
    draws, tune, chains : int
        NUTS settings.

    Returns
    -------
    dict
        ``covered`` (points whose band covers the truth), ``points``,
        ``grid_coverage`` (share of grid points covered), ``err_posterior``
        ``‖posterior mean − truth‖²``, ``err_release`` ``‖release − truth‖²``
        (grid L² norm, squared curve units), ``ratio`` (their quotient),
        ``max_rhat``, ``divergences``.
    """
    release, truth = simulate_release(design, grid, basis, seed, n=n, epsilon=epsilon, truth_seed=truth_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diagnostics are recorded below and checked in tests/inference/test_inference.py
        post = infer(release, prior if prior is not None else ICLPPrior(), draws=draws, tune=tune, chains=chains,
                     random_seed=infer_seed, progressbar=False, target="summary")
    band = credible_band(post, ci_prob=ci_prob, ci_kind=ci_kind)
    lower, upper, mean = band["lower"].values, band["upper"].values, band["mean"].values
    pts = np.asarray(points, dtype=float)
    lo, hi, tp = (np.interp(pts, grid.t, v) for v in (lower, upper, truth))
    w = grid.weights
    err_post = float(np.sum(w * (mean - truth) ** 2))
    err_rel = float(np.sum(w * (read_release(release).curve.values[0, 0] - truth) ** 2))
    return {"covered": int(np.sum((lo <= tp) & (tp <= hi))), "points": int(pts.size),
            "grid_coverage": float(np.mean((lower <= truth) & (truth <= upper))),
            "err_posterior": err_post, "err_release": err_rel, "ratio": err_post / err_rel,
            "max_rhat": post.attrs["diagnostic_max_rhat"], "divergences": post.attrs["diagnostic_divergences"]}


def run_coverage(design: str = "S-1", replicates: int = 10, *, prior=None, seeds=None, infer_seeds=None,
                 grid_size: int = 30, rho: float = 0.1, nu: float = 1.5, n: int = N_CURVES, epsilon: float = EPSILON,
                 points=POINTS, ci_prob: float = CI_PROB, ci_kind: str = CI_KIND, draws: int = 200, tune: int = 200,
                 chains: int = 2, truth_seed: int = 777, progressbar: bool = False) -> pd.DataFrame:
    """Coverage simulation: ``replicates`` independent release → infer → band runs.

    Parameters
    ----------
    design : {"S-1", "S-2", "S-3", "S-4", "GP"}
    replicates : int
        Number of replicates (0 gives an empty table).
    prior : optional
        Default :class:`~fdp_ppl.inference.ICLPPrior`.
    seeds : sequence, optional
        Per-replicate data/release seeds (anything ``numpy.random.default_rng``
        takes); default ``[[0, r] for r in range(replicates)]``.
    infer_seeds : sequence of int, optional
        Per-replicate MCMC seeds; default ``range(replicates)``.
    grid_size : int
        Points of the uniform grid on [0, 1].
    rho, nu : float
        Matérn ICLP kernel of the summary and the mechanism.
    n, epsilon, points, ci_prob, ci_kind, draws, tune, chains, truth_seed :
        See :func:`coverage_replicate`.
    progressbar : bool

    Returns
    -------
    pandas.DataFrame
        One row per replicate, columns :data:`REPLICATE_COLUMNS`; ``attrs``
        record the design and settings.

    Raises
    ------
    ValueError
        Unknown design, or seeds of the wrong length.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; use one of {DESIGNS}")
    replicates = int(replicates)
    seeds = [[0, r] for r in range(replicates)] if seeds is None else list(seeds)
    infer_seeds = list(range(replicates)) if infer_seeds is None else list(infer_seeds)
    if len(seeds) != replicates or len(infer_seeds) != replicates:
        raise ValueError("seeds and infer_seeds need one entry per replicate")
    grid = Grid.uniform(grid_size)
    basis = eigenbasis(Matern(rho=rho, nu=nu), grid)
    it = range(replicates)
    if progressbar:
        from rich.progress import track

        it = track(it, description=f"coverage {design}", total=replicates)
    rows = []
    for r in it:
        rows.append({"replicate": r} | coverage_replicate(
            design, grid, basis, prior, seed=seeds[r], infer_seed=infer_seeds[r], n=n, epsilon=epsilon,
            points=points, ci_prob=ci_prob, ci_kind=ci_kind, draws=draws, tune=tune, chains=chains,
            truth_seed=truth_seed))
    out = pd.DataFrame(rows, columns=list(REPLICATE_COLUMNS))
    out.attrs = {"design": design, "grid_size": int(grid_size), "n": int(n), "epsilon": float(epsilon),
                 "ci_prob": float(ci_prob), "ci_kind": ci_kind, "points": [float(p) for p in points],
                 "kernel": f"Matern(rho={rho:g}, nu={nu:g})", "draws": int(draws), "tune": int(tune),
                 "chains": int(chains), "prior": repr(prior if prior is not None else ICLPPrior())}
    return out


def summarise_coverage(table: pd.DataFrame, by=None, level: float = 0.95) -> pd.DataFrame:
    """Pooled coverage and error ratio of :func:`run_coverage` replicates.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`run_coverage` (several runs may be concatenated, with
        a column such as ``prior`` or ``design`` to group by).
    by : str or list of str, optional
        Grouping columns (in order of appearance); None pools everything.
    level : float
        Level of the Clopper–Pearson interval.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SUMMARY_COLUMNS`: ``replicates``, ``covered`` and
        ``points`` (pooled counts), ``coverage`` = covered/points,
        ``cp_lower`` / ``cp_upper`` (:func:`clopper_pearson`),
        ``grid_coverage`` (mean over replicates), ``ratio`` (mean error
        ratio), ``ratio_se`` (its standard error, NaN for one replicate),
        ``ratio_median``, ``share_ratio_below_1``; indexed by ``by``.
    """
    def one(g: pd.DataFrame) -> dict:
        k, m = int(g["covered"].sum()), int(g["points"].sum())
        lo, hi = clopper_pearson(k, m, level)
        r = g["ratio"].to_numpy(dtype=float)
        return {"replicates": len(g), "covered": k, "points": m, "coverage": k / m, "cp_lower": lo, "cp_upper": hi,
                "grid_coverage": float(np.mean(g["grid_coverage"].to_numpy(dtype=float))), "ratio": float(np.mean(r)),
                "ratio_se": float(np.std(r, ddof=1) / np.sqrt(r.size)) if r.size > 1 else np.nan,
                "ratio_median": float(np.median(r)), "share_ratio_below_1": float(np.mean(r < 1))}

    if by is None:
        return pd.DataFrame([one(table)], columns=list(SUMMARY_COLUMNS))
    keys = [by] if isinstance(by, str) else list(by)
    rows = [dict(zip(keys, key if isinstance(key, tuple) else (key,))) | one(g)
            for key, g in table.groupby(keys if len(keys) > 1 else keys[0], sort=False)]
    return pd.DataFrame(rows, columns=keys + list(SUMMARY_COLUMNS)).set_index(keys if len(keys) > 1 else keys[0])


__all__ = ["POINTS", "DESIGNS", "N_CURVES", "EPSILON", "CI_PROB", "CI_KIND", "REPLICATE_COLUMNS", "SUMMARY_COLUMNS",
           "clopper_pearson", "gp_truth", "simulate_release", "coverage_replicate", "run_coverage",
           "summarise_coverage"]
