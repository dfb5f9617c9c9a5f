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

Usage::

    python benchmarks/bench_records_loo.py      # 100 data sets per ratio, seconds
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
        res = {"s_over_b": ratio, "datasets": datasets}
        for kind in ("records", "moments"):
            bias = [r[f"{kind}_{m}"] - r[f"exact_{m}"] for r in rows for m in "AB"]
            res[f"{kind}_elpd_bias_mean"] = float(np.mean(bias))
            res[f"{kind}_elpd_bias_sd"] = float(np.std(bias))
            res[f"{kind}_k_above_0.7"] = float(np.mean([r[f"k_{kind}_{m}"] > 0.7 for r in rows for m in "AB"]))
            res[f"{kind}_same_ranking"] = float(np.mean([(r[f"{kind}_A"] > r[f"{kind}_B"]) ==
                                                         (r["exact_A"] > r["exact_B"]) for r in rows]))
            res[f"{kind}_difference_bias"] = float(np.mean([(r[f"{kind}_A"] - r[f"{kind}_B"]) -
                                                            (r["exact_A"] - r["exact_B"]) for r in rows]))
        out[f"s/b={ratio:g}"] = res
        print(f"s/b = {ratio:g}: elpd bias records {res['records_elpd_bias_mean']:+.3f} "
              f"(sd {res['records_elpd_bias_sd']:.3f}, k>0.7 in {res['records_k_above_0.7']:.0%}, same ranking "
              f"{res['records_same_ranking']:.0%}, A-B bias {res['records_difference_bias']:+.3f}) | moments "
              f"{res['moments_elpd_bias_mean']:+.3f} (k>0.7 in {res['moments_k_above_0.7']:.0%}, same ranking "
              f"{res['moments_same_ranking']:.0%}, A-B bias {res['moments_difference_bias']:+.3f})")
    return out


def main(argv=None) -> int:
    from _common import write_results

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    write_results("bench_records_loo", {"J": J, "draws": DRAWS, "mu_true": MU_TRUE, "regimes": run(a.datasets)},
                  out=a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
