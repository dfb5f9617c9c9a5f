#!/usr/bin/env python
"""Benchmark: do log-likelihoods conditional on latent records (``fp.observe(..., clipping="records")``) make PSIS-LOO
and ``az.compare`` too optimistic?

Under ``clipping="records"`` the pointwise ``log_likelihood`` of a mean release is the noise density of each released
coefficient given the latent records, ``log p(y_j | records)``; under ``"moments"``/``"ignore"`` the sampling of the
records is integrated out (``log p(y_j | y_-j, population parameters)``). Both target the same leave-one-out
predictive ``log p(y_j | y_-j)`` (the coefficients are independent given the records), but with the records latent
each ``y_j`` has its own latent direction that it alone informs, and PSIS's importance weights become heavy-tailed.

An exact Gaussian analogue (no MCMC; posterior draws exact): level ``μ ~ N(0, 1)``; ``J`` released coefficients
``y_j = x_j + b ξ_j`` of a latent sample-mean coefficient ``x_j = μ + s e_j`` (``s``: sampling sd, ``b``: noise sd).
Model A (level free) against model B (level fixed at 0; data from μ = 1). Per data set: ``az.loo`` from the
conditional terms ``log N(y_j; x_j, b²)`` (records-style) and from the integrated terms ``log N(y_j; μ, s² + b²)``
(moments-style), against the exact LOO ``log p(y_j | y_-j)`` (Gaussian conditioning).

Printed per ratio s/b: the bias of each elpd estimate against the exact one (mean over data sets), the share of data
sets with a Pareto k > 0.7, and how often each ranks the models as the exact elpd does. Output
``results/bench_records_loo.json``.

With ``--joint`` the analogue of a joint observation (``fp.observe([mean, components])``, :func:`run_joint`): a second
release ``u = aᵀx + w + b ζ`` of the same latent x (the shared sample mean) and its own latent w (the scatter), and
four kinds of terms against the exact leave-one-out elpd of all J + 1 observations: ``conditional`` (given x, w: the
old default), ``integrated`` (the new default of ``population_result``: ``log p(y_j | y_-j, μ)`` and ``log p(u | y,
μ)`` by Monte Carlo with 256 common random draws), ``integrated_exact_u`` (the same with the exact u term: separates
the Monte Carlo error) and ``joint`` (``log_likelihood="joint"``: each mean term also given u). Output
``results/bench_records_loo_joint.json``.

Usage::

    python benchmarks/bench_records_loo.py      # 100 data sets per ratio, seconds
    python benchmarks/bench_records_loo.py --joint   # 100 data sets per ratio, about 6 CPU minutes
"""

from __future__ import annotations

import argparse
import sys
import warnings

import _common  # noqa: F401  (puts this checkout first on sys.path)
import numpy as np
from scipy import stats

J, DRAWS, MU_TRUE = 8, 2000, 1.0
RATIOS = (0.2, 1.0, 5.0)


def exact_loo(y, s, b, free: bool) -> float:
    """Sum over j of log p(y_j | y_-j): y ~ N(0, (s² + b²) I + [free] 1 1ᵀ)."""
    cov = (s**2 + b**2) * np.eye(y.size) + (np.ones((y.size, y.size)) if free else 0.0)
    prec = np.linalg.inv(cov)
    d = np.diag(prec)   # y_j | y_-j ~ N(y_j − (P y)_j / P_jj, 1 / P_jj)
    return float(np.sum(-0.5 * np.log(2 * np.pi / d) - 0.5 * (prec @ y) ** 2 / d))


def posterior(y, s, b, free: bool, rng):
    """Exact posterior draws of (μ, x) (DRAWS each)."""
    if free:   # μ | y ~ N(m, v), y_j | μ ~ N(μ, s² + b²)
        v = 1 / (1 + y.size / (s**2 + b**2))
        mu = rng.normal(v * y.sum() / (s**2 + b**2), np.sqrt(v), DRAWS)
    else:
        mu = np.zeros(DRAWS)
    w = s**2 / (s**2 + b**2)     # x_j | μ, y_j ~ N(μ + w (y_j − μ), w b²)
    x = mu[:, None] + w * (y[None, :] - mu[:, None]) + np.sqrt(w * b**2) * rng.standard_normal((DRAWS, y.size))
    return mu, x


def loo(ll):
    import arviz as az

    if np.ptp(ll, axis=0).max() == 0:   # no parameter: the terms are the leave-one-out predictive itself
        return float(ll[0].sum()), 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = az.loo(az.from_dict({"posterior": {"mu": np.zeros((1, DRAWS))}, "log_likelihood": {"y": ll[None]}}),
                   pointwise=True)
    return float(r.elpd), float(np.max(np.asarray(r.pareto_k)))


def _summary(rows, kinds) -> dict:
    """Per kind of terms, against the exact leave-one-out elpd over the data sets (rows): the bias of each model's
    elpd (A, B and both), the share with a Pareto k > 0.7, how often the ranking is the exact one, and the bias of
    the difference A − B."""
    res = {}
    for kind in kinds:
        bias = [r[f"{kind}_{m}"] - r[f"exact_{m}"] for r in rows for m in "AB"]
        for m in "AB":
            res[f"{kind}_elpd_bias_{m}"] = float(np.mean([r[f"{kind}_{m}"] - r[f"exact_{m}"] for r in rows]))
        res[f"{kind}_elpd_bias_mean"] = float(np.mean(bias))
        res[f"{kind}_elpd_bias_sd"] = float(np.std(bias))
        res[f"{kind}_k_above_0.7"] = float(np.mean([r[f"k_{kind}_{m}"] > 0.7 for r in rows for m in "AB"]))
        res[f"{kind}_same_ranking"] = float(np.mean([(r[f"{kind}_A"] > r[f"{kind}_B"]) ==
                                                     (r["exact_A"] > r["exact_B"]) for r in rows]))
        res[f"{kind}_difference_bias"] = float(np.mean([(r[f"{kind}_A"] - r[f"{kind}_B"]) -
                                                        (r["exact_A"] - r["exact_B"]) for r in rows]))
    return res


def run(datasets: int, seed: int = 20261128) -> dict:
    out = {}
    for ratio in RATIOS:
        b = 0.3
        s = ratio * b
        rng = np.random.default_rng([seed, int(ratio * 10)])
        rows = []
        for _ in range(datasets):
            y = MU_TRUE + s * rng.standard_normal(J) + b * rng.standard_normal(J)
            row = {}
            for model, free in (("A", True), ("B", False)):
                mu, x = posterior(y, s, b, free, rng)
                row[f"exact_{model}"] = exact_loo(y, s, b, free)
                row[f"records_{model}"], row[f"k_records_{model}"] = loo(stats.norm.logpdf(y, x, b))
                row[f"moments_{model}"], row[f"k_moments_{model}"] = loo(
                    stats.norm.logpdf(y, mu[:, None], np.sqrt(s**2 + b**2)))
            rows.append(row)
        res = {"s_over_b": ratio, "datasets": datasets, **_summary(rows, ("records", "moments"))}
        out[f"s/b={ratio:g}"] = res
        print(f"s/b = {ratio:g}: elpd bias records {res['records_elpd_bias_mean']:+.3f} "
              f"(sd {res['records_elpd_bias_sd']:.3f}, k>0.7 in {res['records_k_above_0.7']:.0%}, same ranking "
              f"{res['records_same_ranking']:.0%}, A-B bias {res['records_difference_bias']:+.3f}) | moments "
              f"{res['moments_elpd_bias_mean']:+.3f} (k>0.7 in {res['moments_k_above_0.7']:.0%}, same ranking "
              f"{res['moments_same_ranking']:.0%}, A-B bias {res['moments_difference_bias']:+.3f})")
    return out


# ------------------------------------------------------------------ joint analogue (fp.observe([mean, components]))
#: Monte Carlo draws of the integrated second-release term (population_joint.LOO_DRAWS)
JOINT_MC = 256
#: the joint analogue's estimates: conditional terms, the default integrated terms (the mean terms not given u), the
#: same with the exact u term (no Monte Carlo), and log_likelihood="joint" (the mean terms given u too)
KINDS = ("conditional", "integrated", "integrated_exact_u", "joint")


def _joint_model(J_, s, b):
    """The joint analogue as a linear Gaussian model: standard normals ``ε = (μ₀, e_1..e_J, w₀)``, latents
    ``z = (μ, x, w) = M ε`` (model A: ``μ = μ₀``; B: ``μ = 0``), observations ``(y, u) = H z + noise``: ``y_j = x_j +
    b ξ_j`` (mean release of the latent sample-mean coefficients ``x_j = μ + s e_j``) and ``u = aᵀx + w + b ζ``
    (second release: depends on the same x — the shared sample mean — and on its own latent ``w ~ N(0, s²)``, the
    scatter's analogue), ``a = 1/√J``. Returns (M for A, M for B, H, noise variances)."""
    M = np.zeros((J_ + 2, J_ + 2))
    M[1:J_ + 1, 1:J_ + 1] = s * np.eye(J_)
    M[J_ + 1, J_ + 1] = s
    MA = M.copy()
    MA[0, 0] = 1.0
    MA[1:J_ + 1, 0] = 1.0
    H = np.zeros((J_ + 1, J_ + 2))
    H[:J_, 1:J_ + 1] = np.eye(J_)
    H[J_, 1:J_ + 1] = 1 / np.sqrt(J_)
    H[J_, J_ + 1] = 1.0
    return MA, M, H, np.full(J_ + 1, b**2)


def _gaussian_posterior(M, H, noise, obs, rng, draws):
    """Exact posterior draws of z = M ε given obs = H z + N(0, diag noise)."""
    P = M @ M.T
    S_ = H @ P @ H.T + np.diag(noise)
    gain = P @ H.T @ np.linalg.inv(S_)
    mean = gain @ obs
    cov = P - gain @ H @ P
    w, U = np.linalg.eigh(0.5 * (cov + cov.T))
    return mean + rng.standard_normal((draws, mean.size)) @ (U * np.sqrt(np.maximum(w, 0))).T


def run_joint(datasets: int, seed: int = 20261128) -> dict:
    """The joint analogue (:func:`_joint_model`): elpd of A and B from the conditional terms (given the latents x, w:
    what ``log_likelihood="conditional"`` gives) and from the integrated terms of
    :class:`fdp_ppl.inference.population_joint.JointLoo` (``log p(y_j | y_-j, μ)`` per mean coefficient, not
    conditioning on u; ``log p(u | y, μ)`` by Monte Carlo over ``(x, w) | y, μ`` with :data:`JOINT_MC` fixed draws),
    against the exact leave-one-out ``log p(o_i | o_-i)`` of all J + 1 observations (Gaussian conditioning)."""
    from scipy.special import logsumexp

    out = {}
    for ratio in RATIOS:
        b = 0.3
        s = ratio * b
        rng = np.random.default_rng([seed, int(ratio * 10), 1])
        crn = np.random.default_rng(seed).standard_normal((JOINT_MC, J + 1))   # common random numbers (x, w)
        MA, MB, H, noise = _joint_model(J, s, b)
        a = H[J, 1:J + 1]
        rows = []
        for _ in range(datasets):
            z = MA @ np.r_[MU_TRUE, rng.standard_normal(J + 1)]
            z[0], z[1:J + 1] = MU_TRUE, MU_TRUE + z[1:J + 1] - z[0]
            obs = H @ z + np.sqrt(noise) * rng.standard_normal(J + 1)
            y, u = obs[:J], obs[J]
            row = {}
            for model, M in (("A", MA), ("B", MB)):
                cov = H @ M @ M.T @ H.T + np.diag(noise)
                prec = np.linalg.inv(cov)
                d = np.diag(prec)
                row[f"exact_{model}"] = float(np.sum(-0.5 * np.log(2 * np.pi / d) - 0.5 * (prec @ obs) ** 2 / d))
                draws = _gaussian_posterior(M, H, noise, obs, rng, DRAWS)
                mu, x, w = draws[:, 0], draws[:, 1:J + 1], draws[:, J + 1]
                cond = np.c_[stats.norm.logpdf(y, x, b), stats.norm.logpdf(u, x @ a + w, b)]
                # integrated: y_j | μ ~ N(μ, s² + b²) independently; u | y, μ by Monte Carlo over x | y, μ and w
                k = s**2 / (s**2 + b**2)
                xs = (mu[:, None, None] + k * (y - mu[:, None])[:, None, :]
                      + np.sqrt(k) * b * crn[None, :, :J])                                # (draws, R, J)
                us = xs @ a + s * crn[None, :, J]
                comp = logsumexp(stats.norm.logpdf(u, us, b), axis=1) - np.log(JOINT_MC)
                integ = np.c_[stats.norm.logpdf(y, mu[:, None], np.sqrt(s**2 + b**2)), comp]
                # the exact term of u given y and μ (no Monte Carlo): separates the decomposition from the Monte Carlo
                cov_u = k * b**2 * (a @ a) + s**2 + b**2
                exact_comp = stats.norm.logpdf(u, mu * (a.sum()) + k * (y - mu[:, None]) @ a, np.sqrt(cov_u))
                row[f"mc_error_{model}"] = float(np.sqrt(np.mean((comp - exact_comp) ** 2)))
                # log_likelihood="joint": each mean term also given u, log p(y_j | y_-j, u, μ) = log p(y_j | y_-j, μ)
                # + log p(u | y, μ) − log p(u | y_-j, μ), the last by Monte Carlo with the same draws (x_j | y_-j, μ
                # is its prior N(μ, s²) here)
                corr = np.empty((DRAWS, J))
                for j in range(J):
                    xj = xs.copy()
                    xj[:, :, j] = mu[:, None] + s * crn[None, :, j]
                    corr[:, j] = comp - (logsumexp(stats.norm.logpdf(u, xj @ a + s * crn[None, :, J], b), axis=1)
                                         - np.log(JOINT_MC))
                for kind, terms in (("conditional", cond), ("integrated", integ),
                                    ("integrated_exact_u", np.c_[integ[:, :J], exact_comp]),
                                    ("joint", np.c_[integ[:, :J] + corr, comp])):
                    row[f"{kind}_{model}"], row[f"k_{kind}_{model}"] = loo(terms)
            rows.append(row)
        res = {"s_over_b": ratio, "datasets": datasets, **_summary(rows, KINDS)}
        res["integrated_mc_rmse"] = float(np.mean([r[f"mc_error_{m}"] for r in rows for m in "AB"]))
        out[f"s/b={ratio:g}"] = res
        print(f"joint s/b = {ratio:g}: " + " | ".join(
            f"{kind} elpd bias A {res[f'{kind}_elpd_bias_A']:+.3f} B {res[f'{kind}_elpd_bias_B']:+.3f} "
            f"(sd {res[f'{kind}_elpd_bias_sd']:.3f}, "
            f"k>0.7 in {res[f'{kind}_k_above_0.7']:.0%}, same ranking {res[f'{kind}_same_ranking']:.0%}, A-B bias "
            f"{res[f'{kind}_difference_bias']:+.3f})" for kind in KINDS)
            + f"; Monte Carlo rmse of log p(u | y, mu) {res['integrated_mc_rmse']:.4f}")
    return out


def main(argv=None) -> int:
    from _common import write_results

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--out")
    ap.add_argument("--joint", action="store_true", help="the joint analogue (fp.observe([mean, components]))")
    a = ap.parse_args(argv)
    if a.joint:
        write_results("bench_records_loo_joint", {"J": J, "draws": DRAWS, "mc_draws": JOINT_MC, "mu_true": MU_TRUE,
                                                  "regimes": run_joint(a.datasets)}, out=a.out)
        return 0
    write_results("bench_records_loo", {"J": J, "draws": DRAWS, "mu_true": MU_TRUE, "regimes": run(a.datasets)},
                  out=a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
