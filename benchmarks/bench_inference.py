#!/usr/bin/env python
"""Benchmark: curve-ESS per second of the posterior methods of ``fp.infer`` on the DTI example.

Setting (notebook 06 and the issue "Speed and scale"): DTI ``cca`` FA profiles
(``load_dataset("dti", "cca", missing="impute")``, 93 grid points), the ICLP-QR mean with a Matérn 3/2
(ρ = 0.1) eigenbasis and τ = 1, released once by the ICLP at ε = 1 (seeded). GP prior with the release's kernel
(Matérn 3/2, ρ = 0.1), so that ``A K Aᵀ`` is diagonal:

* ``fixed``: amplitude 0.1 and level 0.5 fixed (notebook 06's prior);
* ``free``:  amplitude and level free (half-normal / normal hyperpriors), ρ fixed at the release's;
* ``free_rho`` (``--configs``; not run by default): length-scale free too, so that the prior is not diagonal.

Methods, timed in the same process one after the other (each after a short warm-up call that compiles):

(a) ``method="dense"``: the model ``fp.infer`` used before exact inference was added (NUTS on the 93 latent
    Laplace mixing scales with a dense 93 × 93 Gaussian likelihood factorised at every gradient). Its
    conditional draws of the curve are now batched (one factorisation per draw in one LAPACK call) where the
    old code looped over draws in Python (1.1–1.4 s per 1000 draws), so (a) is slightly faster than the
    old code and the ratios below are conservative;
(b) ``method="nuts"``: NUTS on the same latent scales with the diagonal likelihood;
(c) ``method="auto"``: exact independent draws for ``fixed``; NUTS on the hyperparameters alone with the
    coefficients integrated out in closed form, then exact conditional draws, for ``free``; for ``free_rho``
    the latent-scale model again (the prior is not diagonal; NUTS on whitened coefficients with a free
    length-scale needed trees of depth 9-10 and did not finish 2 x 300 draws in 4 minutes, against 66-84 s).

Curve-ESS: bulk ESS (ArviZ) of the posterior curve at each grid point; the JSON has the minimum and the
median over the grid, the table the minimum. ESS/s = curve-ESS / wall time of the ``fp.infer`` call (model
building, sampling or exact draws, conditional draws, diagnostics). Ratios are against (a) in the same run.
The issue's targets: (c)/(a) ≥ 10 with fixed hyperparameters, ≥ 3 with free ones. Each (c) is also checked
against (a): the largest difference of posterior means of the curve in units of the posterior sd.

It also times one log-density gradient of model (a) with one BLAS thread and with the BLAS library's default
(alternating, same load), and with the C (CVM) and Numba backends: the cause of notebook 06's 500 s
(see the README).

Usage::

    python benchmarks/bench_inference.py            # 2 chains x 1000 draws (tune 1000)
    python benchmarks/bench_inference.py --quick    # 2 chains x 150 draws (tune 150)
    python benchmarks/bench_inference.py --configs fixed,free,free_rho --draws 500
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_info  # noqa: E402

CONFIGS = ("fixed", "free", "free_rho")
METHODS = (("a", "dense", "today's model: latent scales, dense likelihood"),
           ("b", "nuts", "NUTS on latent scales, diagonal likelihood"),
           ("c", "auto", "fp.infer default (exact / marginal / whitened)"))
TARGETS = {"fixed": 10.0, "free": 3.0}
SEED = 20260406


def dti_release():
    """The DTI ``cca`` ICLP-QR mean released once by ICLP(ε = 1) (Matérn 3/2, ρ = 0.1, τ = 1)."""
    import fdp_ppl as fp
    from fdp_ppl.datasets import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curves = load_dataset("dti", "cca", missing="impute")
    grid = fp.Grid.from_points(curves["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    summary = fp.iclp_qr_mean(curves, basis, tau=1.0)
    return fp.release(summary, fp.ICLP(epsilon=1.0), random_seed=SEED, study=True)


def prior_for(config):
    from fdp_ppl.inference import GPPrior

    return {"fixed": GPPrior(nu=1.5, lengthscale=0.1, amplitude=0.1, mean=0.5),
            "free": GPPrior(nu=1.5, lengthscale=0.1),
            "free_rho": GPPrior(nu=1.5)}[config]


def curve_ess(post) -> tuple[float, float]:
    import arviz as az

    ess = az.ess(post["posterior"].to_dataset()[["curve"]], method="bulk")["curve"].values
    return float(ess.min()), float(ess.mean() if ess.size == 0 else sorted(ess)[len(ess) // 2])


def run_one(release, config, method, draws, tune, chains, seed) -> tuple[dict, object]:
    import fdp_ppl as fp

    prior = prior_for(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp.infer(release, prior, method=method, draws=30, tune=30, chains=1, random_seed=seed, progressbar=False, target="summary")
        t0 = time.perf_counter()
        post = fp.infer(release, prior, method=method, draws=draws, tune=tune, chains=chains, random_seed=seed,
                        progressbar=False, target="summary")
        seconds = time.perf_counter() - t0
    ess_min, ess_med = curve_ess(post)
    row = {"config": config, "method": method, "seconds": seconds, "curve_ess_min": ess_min,
           "curve_ess_median": ess_med, "ess_min_per_s": ess_min / seconds, "ess_median_per_s": ess_med / seconds,
           "inference": post.attrs["inference"], "model": post.attrs["inference_model"],
           "max_rhat": float(post.attrs["diagnostic_max_rhat"]), "divergences": int(post.attrs["diagnostic_divergences"]),
           "draws": draws, "tune": tune, "chains": chains}
    if "sample_stats" in post.children:
        row["mean_tree_depth"] = float(post["sample_stats"]["tree_depth"].mean())
    return row, post


def gradient_timing(release, n_eval: int = 200, rounds: int = 3) -> dict:
    """Microseconds per log-density gradient of model (a): BLAS threads 1 vs library default (alternating
    within each round), under the C (CVM) and Numba backends; minimum over rounds."""
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    from fdp_ppl.inference import build_model

    default_threads = max((d.get("num_threads") or 1) for d in threadpool_info() if d.get("user_api") == "blas")
    model = build_model(release, prior_for("fixed"), method="dense", target="summary")
    size = sum(np.size(v) for v in model.initial_point().values())
    x = np.random.default_rng(0).normal(size=size) * 0.1
    out = {"default_blas_threads": default_threads}
    for mode in ("CVM", "NUMBA"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            f = model.logp_dlogp_function(ravel_inputs=True, mode=mode)
            f.set_extra_values({})
            f(x)
            out[f"compile_s_{mode}"] = time.perf_counter() - t0
        times = {1: [], default_threads: []}
        for _ in range(rounds):
            for th in times:
                with threadpool_limits(th, user_api="blas"):
                    t0 = time.perf_counter()
                    for i in range(n_eval):
                        f(x + 1e-3 * i)
                    times[th].append(1e6 * (time.perf_counter() - t0) / n_eval)
        for th, v in times.items():
            out[f"us_per_gradient_{mode}_blas{th}"] = min(v)
        out[f"ratio_blas{default_threads}_over_blas1_{mode}"] = min(times[default_threads]) / min(times[1])
    return out


def run(quick: bool = False, configs=("fixed", "free"), draws: int | None = None, tune: int | None = None,
        chains: int = 2, gradients: bool = True) -> dict:
    """Run the benchmark; returns {"rows", "ratios", "agreement", "gradient", "targets", "met", ...}."""
    import numpy as np

    import logging

    logging.getLogger("pymc").setLevel(logging.ERROR)   # one "Sampling ..." block per call is noise here
    draws = draws or (150 if quick else 1000)
    tune = tune or draws
    release = dti_release()
    rows, ratios, agreement = [], {}, {}
    for config in configs:
        posts = {}
        for label, method, _ in METHODS:
            print(f"  {config} ({label}) method={method} ...", flush=True)
            row, posts[label] = run_one(release, config, method, draws, tune, chains, SEED)
            row["label"] = label
            rows.append(row)
            print(f"    {row['seconds']:.1f} s, curve-ESS min {row['curve_ess_min']:.0f} -> "
                  f"{row['ess_min_per_s']:.1f}/s ({row['inference']}, {row['model']})", flush=True)
        by = {r["label"]: r for r in rows if r["config"] == config}
        ratios[config] = {f"ratio_{k}_over_a": by[k]["ess_min_per_s"] / by["a"]["ess_min_per_s"] for k in ("b", "c")}
        ratios[config].update({f"ratio_{k}_over_a_median_ess": by[k]["ess_median_per_s"] / by["a"]["ess_median_per_s"]
                               for k in ("b", "c")})
        ref = posts["a"]["posterior"]["curve"]
        for k in ("b", "c"):
            cur = posts[k]["posterior"]["curve"]
            sd = cur.std(("chain", "draw")).values
            diff = np.abs(cur.mean(("chain", "draw")).values - ref.mean(("chain", "draw")).values)
            agreement[f"{config}_{k}_vs_a_max_mean_diff_in_sd"] = float(np.max(diff / sd))
            agreement[f"{config}_{k}_vs_a_max_mean_diff"] = float(np.max(diff))
    res = {"rows": rows, "ratios": ratios, "agreement": agreement, "targets": TARGETS,
           "met": {c: bool(ratios[c]["ratio_c_over_a"] >= t) for c, t in TARGETS.items() if c in ratios},
           "draws": draws, "tune": tune, "chains": chains, "blas_threads_env": os.environ.get("FDP_PPL_BLAS_THREADS")}
    if gradients:
        print("  gradient timing (model a) ...", flush=True)
        res["gradient"] = gradient_timing(release, n_eval=50 if quick else 200)
    return res


def print_table(res):
    print(f"\n{'config':9} {'method':28} {'seconds':>8} {'ESS min':>8} {'ESS/s':>9} {'ratio':>7}  inference")
    for r in res["rows"]:
        base = next(x for x in res["rows"] if x["config"] == r["config"] and x["label"] == "a")
        name = next(d for lab, _, d in METHODS if lab == r["label"])
        print(f"{r['config']:9} ({r['label']}) {name[:24]:24} {r['seconds']:8.1f} {r['curve_ess_min']:8.0f} "
              f"{r['ess_min_per_s']:9.1f} {r['ess_min_per_s'] / base['ess_min_per_s']:7.1f}  "
              f"{r['inference']} ({r['model']})")
    for c, ok in res["met"].items():
        print(f"{c}: (c)/(a) = {res['ratios'][c]['ratio_c_over_a']:.1f} (target >= {TARGETS[c]:g}): "
              f"{'MET' if ok else 'NOT MET'}")
    g = res.get("gradient")
    if g:
        th = g["default_blas_threads"]
        for mode in ("CVM", "NUMBA"):
            print(f"model (a) gradient, {mode}: {g[f'us_per_gradient_{mode}_blas1']:.0f} us with 1 BLAS thread, "
                  f"{g[f'us_per_gradient_{mode}_blas{th}']:.0f} us with {th} "
                  f"(x{g[f'ratio_blas{th}_over_blas1_{mode}']:.1f}); compile {g[f'compile_s_{mode}']:.1f} s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 2 chains x 150 draws")
    p.add_argument("--configs", default="fixed,free", help=f"comma-separated among {', '.join(CONFIGS)}")
    p.add_argument("--draws", type=int, default=None)
    p.add_argument("--tune", type=int, default=None)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--no-gradients", action="store_true", help="skip the per-gradient BLAS / backend timing")
    p.add_argument("--out", default=None, help="JSON file (default results/bench_inference[_quick].json)")
    a = p.parse_args(argv)
    configs = tuple(c.strip() for c in a.configs.split(","))
    if set(configs) - set(CONFIGS):
        p.error(f"unknown configs {sorted(set(configs) - set(CONFIGS))}; choose among {CONFIGS}")
    res = run(a.quick, configs, a.draws, a.tune, a.chains, gradients=not a.no_gradients)
    print_table(res)
    out = Path(a.out) if a.out else HERE / "results" / f"bench_inference{'_quick' if a.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_info(), "command": " ".join(sys.argv), **res}, indent=2,
                              default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
