#!/usr/bin/env python
"""Benchmark: accuracy of the Bingham normalising constant and simulation-based calibration of
``fdp_ppl.inference.components.infer_components`` (posterior of the second-moment operator given an ε-DP FPCA
frame, k = 1; Awan, Kenney, Reimherr & Slavković 2019).

Three parts:

1. **log C(A)** — the exact positive series against Kume & Wood's (2005) saddlepoint approximations ĉ₁, ĉ₂, ĉ₃
   and an importance-sampling Monte Carlo estimate (ACG proposals, with its standard error), on Bingham
   parameters A = s(G − Σ⁻¹) of the mechanism (Fourier basis, Σ_ii = i⁻³) for several m, n, ε, and the
   closed form at m = 2 (e^{(a₁+a₂)/2} I₀((a₁ − a₂)/2)). Error columns are log C differences (nats). With
   ``--quick`` the series is skipped beyond a spread
   of 5000 (at m = 40, Σ⁻¹ reaches 64000·s and the series takes ~30 s).
2. **SBC** (Talts et al. 2018) — per replicate: S from the prior, G = nS, one frame from the mechanism with the
   package's exact sampler (``fp.release`` of an FPCA fit), a NUTS fit, the rank of the truth among thinned posterior draws
   for λ₁/tr S, tr S, λ₁, (u₁ᵀe₁)² and the log-likelihood of the released frame. Ranks are tested for uniformity
   with a chi-square test (``--bins``).
3. **Scale check** — SBC with ``--scale-frames`` frames per release (default 10: one frame carries little
   information about the size of the eigen-gap, so a single-frame SBC hardly sees a scale error), calibrated and
   with the simulated mechanism's s multiplied by √2 while the fit keeps the nominal s: the chi-square test
   should reject the latter (what a likelihood whose scale is √2 off looks like).

Cost: seconds per fit (compiled model reused: the first fit compiles), and the ratio to a fresh
``pm.sample`` on the same hand-written model (what a user calling PyMC directly pays).

``--k 2`` (or more) calibrates the k > 1 path instead: part 1 checks log ₁F₁(k/2; m/2; A) by the nested
approximation (and the exact complement identity where k = m − 1) against importance-sampling Monte Carlo on
mechanism parameters; part 2 is SBC with the released frames drawn by ``--scans`` Gibbs scans (the Gibbs
release) and the summaries of ``sbc_summary_names(k)`` (the top-k share of tr S, tr S, λ₁, the top-k span's
alignment with the first k basis functions, the frames' log-likelihood, λ_k); no scale check or cost part.
``--sampler sequential`` releases the frames by the certified sequential mechanism instead (inferred with its own
law, the product of exact vector Bingham constants); ``--m`` above k + 1 is where the matrix law's normaliser is
the nested approximation (or the zonal series at small spreads). Replicates run in chunks of ``--chunk``, each
chunk's ranks written to ``<--out>.partial`` as it ends (a long run on a loaded machine keeps what it did);
``--no-constant`` skips part 1. Output ``results/bench_sbc_fpca_k2[_quick].json`` (``_m<m>[_sequential]`` added
when m > k + 1 or the sampler is sequential).

Output: a table on stdout and ``results/bench_sbc_fpca.json`` (``bench_sbc_fpca_quick.json`` with ``--quick``).

Usage::

    python benchmarks/bench_sbc_fpca.py            # 200 replicates, 2 x 200 draws each (~15 min on 2 cores)
    python benchmarks/bench_sbc_fpca.py --quick    # 30 replicates, smaller fits (~2 min)
    python benchmarks/bench_sbc_fpca.py --k 2 --quick   # k = 2, m = 3: 30 replicates (~5 min on a loaded machine)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def constant_accuracy(rng, max_spread: float) -> list[dict]:
    import numpy as np
    from scipy import special

    import fdp_ppl as fp
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.inference.bingham import bingham_constant_check
    from fdp_ppl.inference.components import ComponentsPrior

    rows = []
    for m, n, eps in [(2, 50, 1.0), (3, 30, 1.0), (5, 100, 1.0), (5, 500, 1.0), (10, 200, 0.5), (20, 500, 1.0), (40, 500, 1.0),
                      (40, 100, 1.0)]:
        spec = FPCASpec(grid=fp.Grid.uniform(max(60, m)), m=m, k=1, epsilon=eps, tau=1.0)
        S = ComponentsPrior().draw(m, 1, rng)[0]
        A = spec.bingham_parameter(n * S)
        a = np.linalg.eigvalsh(A)
        t0 = time.perf_counter()
        res = bingham_constant_check(a, draws=400_000, random_seed=int(rng.integers(2**31)), max_spread=max_spread)
        secs = time.perf_counter() - t0
        row = {"m": m, "n": n, "epsilon": eps, "spread": float(np.ptp(a)), **res, "seconds_all": secs}
        if m == 2:
            d = abs(a[1] - a[0]) / 2
            row["closed_form"] = float((a[0] + a[1]) / 2 + math.log(special.ive(0, d)) + d)
        rows.append(row)
    return rows


def stiefel_accuracy(rng, k: int, draws: int) -> list[dict]:
    """log 1F1(k/2; m/2; A) on mechanism parameters: nested (and complement where exact) vs MACG Monte Carlo."""
    import numpy as np

    from fdp_ppl.inference.components import ComponentsPrior
    from fdp_ppl.inference.stiefel import stiefel_log_constant

    rows = []
    for m, n in [(k + 1, 100), (k + 2, 30), (k + 2, 100), (k + 3, 100), (k + 4, 200)]:
        Si = np.diag(np.arange(1, m + 1.0) ** 3)
        for _ in range(3):
            A = 0.5 * (n * ComponentsPrior().draw(m, 1, rng)[0] - Si)
            mc, se = stiefel_log_constant(A, k, "monte-carlo", draws=draws, random_seed=int(rng.integers(2**31)))
            row = {"m": m, "k": k, "n": n, "spread": float(np.ptp(np.linalg.eigvalsh(A))), "monte_carlo": mc,
                   "monte_carlo_se": se, "nested": stiefel_log_constant(A, k, "nested")}
            if k >= m - 1:
                row["complement"] = stiefel_log_constant(A, k, "complement")
            rows.append(row)
    return rows


def main_k(a, rng) -> int:
    """The k > 1 calibration (module docstring)."""
    import numpy as np

    import fdp_ppl as fp
    from _common import write_results
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.inference.components_sbc import rank_uniformity, sbc_ranks

    reps = a.replicates or (30 if a.quick else 100)
    draws, tune, chains, thin = (100, 200, 1, 5) if a.quick else (160, 400, 2, 4)
    bins = a.bins or (4 if a.quick else 8)
    print(f"1. log 1F1({a.k}/2; m/2; A): nested approximation (and exact complement, k = m - 1) vs Monte Carlo")
    rows = [] if a.no_constant else stiefel_accuracy(rng, a.k, 50_000 if a.quick else 200_000)
    print(f"{'m':>3} {'n':>4} {'spread':>8} {'MC':>11} {'MC se':>7} {'nested-MC':>10} {'compl-MC':>9}")
    for r in rows:
        cm = f"{r['complement'] - r['monte_carlo']:9.4f}" if "complement" in r else " " * 9
        print(f"{r['m']:3d} {r['n']:4d} {r['spread']:8.1f} {r['monte_carlo']:11.4f} {r['monte_carlo_se']:7.4f} "
              f"{r['nested'] - r['monte_carlo']:10.4f} {cm}")
    m = a.m if a.m > a.k else a.k + 1
    spec = FPCASpec(grid=fp.Grid.uniform(40), m=m, k=a.k, epsilon=a.epsilon, tau=1.0)
    how = f"{a.scans} Gibbs scans" if a.sampler == "gibbs" else "the sequential mechanism"
    print(f"\n2. SBC: m = {m}, k = {a.k}, n = {a.n}, epsilon = {a.epsilon}, {reps} replicates of {a.frames} frame(s) "
          f"by {how}, {chains} x {draws} draws (tune {tune}), thin {thin}")
    t0, c0 = time.perf_counter(), time.process_time()
    parts = []
    for start in range(0, reps, a.chunk):  # chunks of replicates, each written as it ends (a long run's partial result)
        parts.append(sbc_ranks(spec, a.n, min(a.chunk, reps - start), frames=a.frames, draws=draws, tune=tune,
                               chains=chains, thin=thin, random_seed=int(rng.integers(2**31)), scans=a.scans,
                               sampler=a.sampler))
        res = {"ranks": np.concatenate([p["ranks"] for p in parts]), "L": parts[0]["L"],
               "summaries": parts[0]["summaries"], "seconds": np.concatenate([p["seconds"] for p in parts]),
               "divergences": np.concatenate([p["divergences"] for p in parts])}
        if a.out and start + a.chunk < reps:
            import json

            Path(a.out + ".partial").write_text(json.dumps({"replicates_done": len(res["ranks"]), "L": res["L"],
                                                            "summaries": list(res["summaries"]),
                                                            "ranks": res["ranks"].tolist()}))
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    stat, pval = rank_uniformity(res["ranks"], res["L"], bins)
    print(f"{'summary':>26} {'chi2':>8} {'df':>3} {'p-value':>8}   rank histogram ({bins} bins, L = {res['L']})")
    edges = np.linspace(0, res["L"] + 1, bins + 1)
    for j, name in enumerate(res["summaries"]):
        hist = np.histogram(res["ranks"][:, j], edges)[0]
        print(f"{name:>26} {stat[j]:8.2f} {bins - 1:3d} {pval[j]:8.4f}   {' '.join(f'{h:3d}' for h in hist)}")
    secs = res["seconds"]
    print(f"cost: {total:.1f} s in all ({cpu:.1f} s CPU); per fit median {np.median(secs):.2f} s, divergences "
          f"{int(res['divergences'].sum())} in {reps} fits")
    out = {"constant": rows, "settings": {"m": m, "k": a.k, "n": a.n, "epsilon": a.epsilon, "replicates": reps,
                                          "frames": a.frames, "scans": a.scans, "sampler": a.sampler,
                                          "draws": draws, "tune": tune, "chains": chains, "thin": thin, "bins": bins},
           "sbc": {"chi2": stat.tolist(), "p_value": pval.tolist(), "summaries": list(res["summaries"]),
                   "L": res["L"], "ranks": res["ranks"].tolist(), "seconds": secs.tolist(),
                   "divergences": int(res["divergences"].sum()), "total_seconds": total, "cpu_seconds": cpu}}
    tag = f"_m{m}" + ("_sequential" if a.sampler == "sequential" else "")
    name = f"bench_sbc_fpca_k{a.k}" + ("" if (m, a.sampler) == (a.k + 1, "gibbs") else tag)
    write_results(name, out, quick=a.quick, out=a.out)
    return 0


def fresh_pymc_seconds(spec, n, draws, tune, chains, rng) -> float:
    """Seconds of one plain ``pm.sample`` on a freshly built model of the same posterior (compile included)."""
    import pymc as pm

    from fdp_ppl.fpca import FPCAFit
    import fdp_ppl as fp
    from fdp_ppl.inference.components import (ComponentsPrior, FrameLikelihood, _likelihood_scale, _read_fpca,
                                              components_model, initial_values)

    S = ComponentsPrior().draw(spec.m, 1, rng)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fp.release(FPCAFit(spec=spec, gram=n * S, n=n), fp.ExponentialMechanism(), draws=1,
                          random_seed=int(rng.integers(2**31)), study=True)
        at, frames, sigma, _, _ = _read_fpca(tree)
        lik = FrameLikelihood.build(frames, sigma, _likelihood_scale(at), n)
        t0 = time.perf_counter()
        model = components_model(lik)
        m, d = spec.m, ComponentsPrior().degrees(spec.m)
        inits = initial_values(m, d, chains, rng)
        pm.sample(model=model, draws=draws, tune=tune, chains=chains, cores=1, initvals=inits, progressbar=False,
                  quiet=True, compute_convergence_checks=False, random_seed=int(rng.integers(2**31)))
        return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--replicates", type=int, default=None)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--bins", type=int, default=None)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--frames", type=int, default=1, help="released frames per replicate (calibrated run)")
    ap.add_argument("--scale-frames", type=int, default=10,
                    help="released frames per replicate in the scale check (more frames: more power)")
    ap.add_argument("--no-scale-check", action="store_true")
    ap.add_argument("--no-constant", action="store_true", help="k > 1: skip part 1 (the constant's accuracy)")
    ap.add_argument("--k", type=int, default=1, help="components per frame (k > 1: the matrix Bingham path)")
    ap.add_argument("--scans", type=int, default=50, help="Gibbs scans per released frame (k > 1)")
    ap.add_argument("--chunk", type=int, default=10, help="k > 1: replicates per chunk (partial results to --out.partial)")
    ap.add_argument("--sampler", default="gibbs", choices=("gibbs", "sequential"),
                    help="k > 1 release: Gibbs scans (matrix Bingham law) or the sequential mechanism")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    import numpy as np

    import fdp_ppl as fp
    from _common import write_results
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.inference.components_sbc import SBC_SUMMARIES, rank_uniformity, sbc_ranks

    rng = np.random.default_rng(a.seed)
    if a.k > 1:
        return main_k(a, rng)
    reps = a.replicates or (30 if a.quick else 200)
    draws, tune, chains, thin = (100, 300, 1, 5) if a.quick else (200, 500, 2, 4)
    bins = a.bins or (4 if a.quick else 8)

    print("1. log C(A) = log 1F1(1/2; m/2; A): series (exact) vs saddlepoint (Kume & Wood 2005) vs Monte Carlo")
    rows = constant_accuracy(rng, 5000.0 if a.quick else 1e5)
    print(f"{'m':>3} {'n':>4} {'eps':>4} {'spread':>9} {'series':>12} {'spa1-ser':>9} {'spa2-ser':>9} "
          f"{'spa3-ser':>9} {'MC-ser':>9} {'MC se':>8} {'closed-ser':>10}")
    for r in rows:
        r.setdefault("series", float("nan"))  # beyond the series' spread in this run
        ref, mark = (r["series"], " ") if math.isfinite(r["series"]) else (r["monte_carlo"], "*")
        cf = f"{r['closed_form'] - r['series']:10.2e}" if "closed_form" in r else " " * 10
        print(f"{r['m']:3d} {r['n']:4d} {r['epsilon']:4g} {r['spread']:9.1f} {r['series']:12.6f} "
              f"{r['saddlepoint_1'] - ref:9.2e} {r['saddlepoint_2'] - ref:9.2e} "
              f"{r['saddlepoint_3'] - ref:9.2e} {r['monte_carlo'] - r['series']:9.2e} "
              f"{r['monte_carlo_se']:8.1e} {cf}{mark}")
    print("* series skipped (spread): saddlepoint errors are against Monte Carlo")

    spec = FPCASpec(grid=fp.Grid.uniform(40), m=a.m, k=1, epsilon=a.epsilon, tau=1.0)
    out = {"constant": rows, "settings": {"m": a.m, "n": a.n, "epsilon": a.epsilon, "replicates": reps,
                                          "draws": draws, "tune": tune, "chains": chains, "thin": thin,
                                          "bins": bins}}
    runs = [("calibrated", 1.0, a.frames)]
    if not a.no_scale_check:
        runs += [(f"calibrated, {a.scale_frames} frames", 1.0, a.scale_frames),
                 (f"scale x sqrt2, {a.scale_frames} frames", math.sqrt(2.0), a.scale_frames)]
    for label, factor, nf in runs:
        print(f"\n2. SBC ({label}): m = {a.m}, n = {a.n}, epsilon = {a.epsilon}, {reps} replicates of {nf} frame(s), "
              f"{chains} x {draws} draws (tune {tune}), thin {thin}")
        t0 = time.perf_counter()
        res = sbc_ranks(spec, a.n, reps, frames=nf, draws=draws, tune=tune, chains=chains, thin=thin,
                        random_seed=int(rng.integers(2**31)), scale_factor=factor)
        total = time.perf_counter() - t0
        stat, pval = rank_uniformity(res["ranks"], res["L"], bins)
        print(f"{'summary':>26} {'chi2':>8} {'df':>3} {'p-value':>8}   rank histogram ({bins} bins, L = {res['L']})")
        edges = np.linspace(0, res["L"] + 1, bins + 1)
        for j, name in enumerate(SBC_SUMMARIES):
            hist = np.histogram(res["ranks"][:, j], edges)[0]
            print(f"{name:>26} {stat[j]:8.2f} {bins - 1:3d} {pval[j]:8.4f}   {' '.join(f'{h:3d}' for h in hist)}")
        secs = res["seconds"]
        print(f"cost: {total:.1f} s in all; per fit median {np.median(secs):.2f} s (first {secs[0]:.2f} s, "
              f"compiles), divergences {int(res['divergences'].sum())} in {reps} fits")
        out[label] = {"chi2": stat.tolist(), "p_value": pval.tolist(), "summaries": list(SBC_SUMMARIES),
                      "L": res["L"], "ranks": res["ranks"].tolist(), "seconds": secs.tolist(),
                      "divergences": int(res["divergences"].sum()), "total_seconds": total}
    fresh = fresh_pymc_seconds(spec, a.n, draws, tune, chains, rng)
    med = float(np.median(out["calibrated"]["seconds"][1:] or out["calibrated"]["seconds"]))
    print(f"\n3. cost: infer_components {med:.2f} s per fit (compiled model reused) vs a fresh pm.sample on the "
          f"same hand-written model {fresh:.2f} s (compile included): ratio {med / fresh:.2f}")
    out["cost"] = {"infer_components_median_seconds": med, "fresh_pymc_seconds": fresh, "ratio": med / fresh}
    write_results("bench_sbc_fpca", out, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
