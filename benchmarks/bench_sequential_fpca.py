#!/usr/bin/env python
"""Certified k > 1 principal components by the sequential exponential mechanism, next to the paper and Gibbs.

Parts (Awan, Kenney, Reimherr & Slavković 2019, §6; ``--parts``, default all):

* ``table``   the §6.1 design — Fourier basis, m = 40, Σ_ii = i⁻³, curves of :func:`studies.fpca.simulate_curves`
              divided by their largest norm — over n ∈ {100, 250, 500, 1000} (the paper's Fig. 2 range), ε ∈
              {1/8, 1/4, 1/2, 1, 2} (the ε grid of its Tables 1–2; §6.1 states none) and k = 1, 2, 3, ``--table-replicates``
              simulated data sets per n (the paper: 10): variance ratio tr(VᵀGV)/tr(V̂ᵀGV̂), subspace norm ½‖P̃ − P̂‖²_F
              and largest principal angle of exact sequential frames (``--table-frames`` per data set) next to the
              final frame of a Gibbs chain of the joint matrix-Bingham law (``--table-scans`` scans from a uniform
              start, one chain per data set). The paper prints no numbers for §6.1 (Fig. 2 only, k = 1).
              Utility draws use the run-until-accepted loop: the fixed-budget release's law is within total
              variation p* of it (p* ≤ 10⁻¹⁰ e^{-1335} on this grid), so the tables are those of the served release;
              its cost is the ``speed`` part.
* ``speed``   effective samples per CPU second at m = 40, n = 500, ε = 1, k = 2, 3: exact frames with the pure plan's
              fixed per-step budgets (ESS = frames) against one Gibbs chain of ``--gibbs-iterations`` scans (the
              paper's 20,000), whose bulk ESS (arviz) is measured on the variance ratio, the subspace norm and the
              entries of UᵀPU (P = VVᵀ, U the leading 2k eigenvectors of G) after a 5 % burn-in; and against the
              paper's recipe (one release per 20,000-scan chain). CPU time (``time.process_time``).
* ``growth``  Tables 1–2 of the paper (Berkeley growth and DTI ``cca``, the notebook's paper-reading setting: m = 5
              Gaussian-kernel eigenfunctions), k = 1, 2, 3 over ε: the fixed-budget sequential release (means and
              standard errors over ``--replicates`` frames) next to the paper's printed values and to the joint law by
              Gibbs (200 scans, as the study).
* ``design``  the earlier single cell (m = 40, n = 500, ε = 1, k = 2, 3): budgets, wall time per frame, utility.

The sequential mechanism is not the paper's joint law: each component gets ε/k (here the default split), so
it releases the leading component less accurately and the span comparably or worse; the tables show by how much.
For k = 1 the sequential mechanism *is* the paper's mechanism (one exact vector-Bingham draw).

Output: markdown tables on stdout and ``results/bench_sequential_fpca[_<parts>][_quick].json``. ``--quick``: fewer
frames, a smaller grid.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np

import _common  # noqa: F401  (puts this checkout first on sys.path)
from _common import write_results

PAPER_ITERATIONS = 20_000
PARTS = ("table", "speed", "growth", "design")


def _metrics(frames, G, k):
    from fdp_ppl.fpca import subspace_distance, variance_ratio

    top = np.linalg.eigh(G)[1][:, ::-1][:, :k]
    cos = np.linalg.svd(np.swapaxes(frames, 1, 2) @ top, compute_uv=False)
    angle = np.degrees(np.arccos(np.clip(cos.min(axis=1), 0.0, 1.0)))
    return {"variance_ratio": variance_ratio(frames, G), "subspace_norm": subspace_distance(frames, top),
            "angle_deg": angle}


def _summary(vals: dict) -> dict:
    out = {}
    for key, v in vals.items():
        v = np.asarray(v, dtype=float)
        out[key] = float(v.mean())
        out[key + "_se"] = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return out


def design(args, rng) -> list[dict]:
    from studies import fpca as F

    import fdp_ppl as fp
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.fpca.fpca_plan import exact_plan
    from fdp_ppl.fpca.samplers import gibbs_scan, random_frame
    from fdp_ppl.fpca.sequential import sample_sequential_bingham

    grid = fp.Grid.uniform(F.SIM_GRID_SIZE)
    x, _ = F.simulate_curves(500, grid, rng=rng)
    x = x / (1.0001 * float(np.max(grid.norm(x))))
    rows = []
    for k in (2, 3):
        spec = FPCASpec(grid=grid, m=40, k=k, epsilon=1.0, tau=1.0)
        fit = spec.fit(x)
        G = fit.gram
        pl = exact_plan(spec, 500, "sequential")
        t0 = time.perf_counter()
        seq = sample_sequential_bingham(G, spec.Sigma, pl["epsilon_steps"], args.frames, rng,
                                        proposals=pl["proposals_steps"])
        t_seq = (time.perf_counter() - t0) / args.frames
        A = spec.bingham_parameter(G)
        gib, t_scan = [], 0.0
        for _ in range(args.gibbs_frames):
            V = random_frame(40, k, rng)
            t0 = time.perf_counter()
            for _ in range(args.scans):
                V = gibbs_scan(V, A, rng)
            t_scan += (time.perf_counter() - t0) / args.scans
            gib.append(V)
        t_scan /= args.gibbs_frames
        row = {"part": "design", "m": 40, "n": 500, "epsilon": 1.0, "k": k,
               "proposals_steps": pl["proposals_steps"], "proposals_per_frame": pl["proposals"],
               "epsilon_guaranteed": pl["epsilon"], "log_f_min_steps": pl["log_f_min_steps"],
               "s_per_frame_sequential": t_seq, "us_per_proposal": t_seq / pl["proposals"] * 1e6,
               "ms_per_gibbs_scan": t_scan * 1e3, "s_per_frame_gibbs_paper_recipe": PAPER_ITERATIONS * t_scan,
               "speedup_vs_paper_gibbs": PAPER_ITERATIONS * t_scan / t_seq, "frames": args.frames,
               "gibbs_frames": args.gibbs_frames, "gibbs_scans": args.scans}
        row.update({f"sequential_{key}": v for key, v in _summary(_metrics(seq, G, k)).items()})
        row.update({f"gibbs_{key}": v for key, v in _summary(_metrics(np.stack(gib), G, k)).items()})
        rows.append(row)
    return rows


def _design_data(n: int, rng):
    """Curves of the §6.1 design (:func:`studies.fpca.simulate_curves`), divided by 1.0001 × their largest norm (τ = 1)."""
    from studies import fpca as F

    import fdp_ppl as fp

    grid = fp.Grid.uniform(F.SIM_GRID_SIZE)
    x, _ = F.simulate_curves(n, grid, rng=rng)
    return grid, x / (1.0001 * float(np.max(grid.norm(x))))


def _span_trace(G, k):
    """``trace(V)`` for a Gibbs chain: variance ratio, subspace norm and the upper triangle of UᵀPU (P = VVᵀ, U the
    leading 2k eigenvectors of G): scalar functions of the released span, one row per scan."""
    from fdp_ppl.fpca import subspace_distance, variance_ratio

    U = np.linalg.eigh(G)[1][:, ::-1]
    top, lead = U[:, :k], U[:, : 2 * k]
    iu = np.triu_indices(2 * k)

    def trace(V):
        W = lead.T @ V
        return np.concatenate([[variance_ratio(V, G), subspace_distance(V, top)], (W @ W.T)[iu]])

    return trace


def _ess(draws) -> np.ndarray:
    """Bulk ESS (arviz, rank-normalised) of each column of a single chain's (draws, q) trace."""
    import arviz as az

    return np.array([float(az.ess(np.asarray(draws[:, j], dtype=float)[None, :], method="bulk"))
                     for j in range(draws.shape[1])])


def speed(args, rng) -> list[dict]:
    """Effective samples per CPU second: exact sequential frames (fixed budget; ESS = frames) vs one Gibbs chain of
    ``--gibbs-iterations`` scans (the paper's 20,000) at m = 40, n = 500, ε = 1, k = 2, 3 (§6.1 design)."""
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.fpca.fpca_plan import exact_plan
    from fdp_ppl.fpca.samplers import gibbs_matrix_bingham
    from fdp_ppl.fpca.sequential import sample_sequential_bingham

    grid, x = _design_data(500, rng)
    rows = []
    for k in (2, 3):
        spec = FPCASpec(grid=grid, m=40, k=k, epsilon=1.0, tau=1.0)
        G = spec.fit(x).gram
        pl = exact_plan(spec, 500, "sequential")
        c0, t0 = time.process_time(), time.perf_counter()
        sample_sequential_bingham(G, spec.Sigma, pl["epsilon_steps"], args.speed_frames, rng,
                                  proposals=pl["proposals_steps"])
        cpu_seq, wall_seq = (time.process_time() - c0) / args.speed_frames, (time.perf_counter() - t0) / args.speed_frames
        c0 = time.process_time()
        sample_sequential_bingham(G, spec.Sigma, pl["epsilon_steps"], args.speed_frames, rng)
        cpu_loop = (time.process_time() - c0) / args.speed_frames
        pd_ = exact_plan(spec, 500, "sequential", delta=args.speed_delta)  # the (ε', δ') plan: far smaller budgets
        c0 = time.process_time()
        sample_sequential_bingham(G, spec.Sigma, pd_["epsilon_steps"], 10 * args.speed_frames, rng,
                                  proposals=pd_["proposals_steps"])
        cpu_delta = (time.process_time() - c0) / (10 * args.speed_frames)
        trace = _span_trace(G, k)
        c0, t0 = time.process_time(), time.perf_counter()
        _, tr = gibbs_matrix_bingham(spec.bingham_parameter(G), k, args.gibbs_iterations, rng, trace=trace)
        cpu_gibbs, wall_gibbs = time.process_time() - c0, time.perf_counter() - t0
        tr = tr[0]
        burn = args.gibbs_iterations // 20
        ess = _ess(tr[burn:])
        names = ["variance_ratio", "subspace_norm"] + [f"P_{i}{j}" for i, j in zip(*np.triu_indices(2 * k))]
        row = {"part": "speed", "m": 40, "n": 500, "epsilon": 1.0, "k": k,
               "proposals_steps": pl["proposals_steps"], "proposals_per_frame": pl["proposals"],
               "epsilon_guaranteed": pl["epsilon"], "sequential_frames": args.speed_frames,
               "sequential_cpu_s_per_frame": cpu_seq, "sequential_wall_s_per_frame": wall_seq,
               "sequential_us_per_proposal_cpu": cpu_seq / pl["proposals"] * 1e6,
               "sequential_ess_per_cpu_s": 1.0 / cpu_seq,
               "loop_cpu_s_per_frame": cpu_loop,
               "delta_plan_delta": pd_["delta"], "delta_plan_epsilon": pd_["epsilon"],
               "delta_plan_proposals_steps": pd_["proposals_steps"], "delta_plan_cpu_s_per_frame": cpu_delta,
               "delta_plan_ess_per_cpu_s": 1.0 / cpu_delta,
               "gibbs_iterations": args.gibbs_iterations, "gibbs_burn_in": burn,
               "gibbs_cpu_s": cpu_gibbs, "gibbs_wall_s": wall_gibbs,
               "gibbs_cpu_ms_per_scan": cpu_gibbs / args.gibbs_iterations * 1e3,
               "gibbs_ess": dict(zip(names, ess.tolist())), "gibbs_ess_min": float(ess.min()),
               "gibbs_ess_median": float(np.median(ess)),
               "gibbs_ess_per_cpu_s_min": float(ess.min()) / cpu_gibbs,
               "gibbs_ess_per_cpu_s_median": float(np.median(ess)) / cpu_gibbs,
               "gibbs_releases_per_cpu_s_paper_recipe": 1.0 / cpu_gibbs,
               "gibbs_trace_mean": dict(zip(names[:2], tr[burn:, :2].mean(axis=0).tolist())),
               "gibbs_final_variance_ratio": float(tr[-1, 0]), "gibbs_final_subspace_norm": float(tr[-1, 1])}
        row["ratio_ess_per_cpu_s_vs_gibbs_chain_min"] = row["sequential_ess_per_cpu_s"] / row["gibbs_ess_per_cpu_s_min"]
        row["ratio_ess_per_cpu_s_vs_gibbs_chain_median"] = (row["sequential_ess_per_cpu_s"]
                                                            / row["gibbs_ess_per_cpu_s_median"])
        row["ratio_vs_paper_recipe"] = row["sequential_ess_per_cpu_s"] / row["gibbs_releases_per_cpu_s_paper_recipe"]
        row["delta_plan_ratio_vs_gibbs_chain_median"] = row["delta_plan_ess_per_cpu_s"] / row["gibbs_ess_per_cpu_s_median"]
        row["delta_plan_ratio_vs_paper_recipe"] = row["delta_plan_ess_per_cpu_s"] / row["gibbs_releases_per_cpu_s_paper_recipe"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def table(args, rng) -> list[dict]:
    """The §6.1 utility grid: per n, ``--table-replicates`` simulated data sets; per data set, ε and k, ``--table-frames``
    exact frames of the sequential mechanism and (k > 1) the final frame of one Gibbs chain of the joint law
    (``--table-scans`` scans from a uniform start). k = 1: the sequential mechanism is the paper's mechanism, drawn
    exactly (its Gibbs chain redraws the whole column from the target every scan: the same law)."""
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.fpca.samplers import gibbs_matrix_bingham
    from fdp_ppl.fpca.sequential import sample_sequential_bingham, step_epsilons

    rows = []
    for n in args.ns:
        cells = {}
        for rep in range(args.table_replicates):
            grid, x = _design_data(n, rng)
            for k in (1, 2, 3):
                spec0 = FPCASpec(grid=grid, m=40, k=k, epsilon=1.0, tau=1.0)
                G = spec0.fit(x).gram
                for eps in args.epsilons:
                    spec = FPCASpec(grid=grid, m=40, k=k, epsilon=eps, tau=1.0)
                    # the run-until-accepted loop: the law of the fixed-budget release up to total variation p* (< 1e-7000 here)
                    seq = sample_sequential_bingham(G, spec.Sigma, step_epsilons(eps, k), args.table_frames, rng)
                    cell = cells.setdefault((k, eps), {"sequential": [], "gibbs": [], "cpu_gibbs": 0.0})
                    cell["sequential"].append({key: float(np.mean(v)) for key, v in _metrics(seq, G, k).items()})
                    if k > 1:
                        c0 = time.process_time()
                        gib, _ = gibbs_matrix_bingham(spec.bingham_parameter(G), k, args.table_scans, rng)
                        cell["cpu_gibbs"] += time.process_time() - c0
                        cell["gibbs"].append({key: float(v[0]) for key, v in _metrics(gib, G, k).items()})
        for (k, eps), cell in sorted(cells.items()):
            row = {"part": "table", "m": 40, "n": n, "epsilon": eps, "k": k, "replicates": args.table_replicates,
                   "frames_per_replicate": args.table_frames, "gibbs_scans": args.table_scans if k > 1 else 0,
                   "gibbs_cpu_s": cell["cpu_gibbs"]}
            for who in ("sequential", "gibbs"):
                if cell[who]:
                    vals = {key: [r[key] for r in cell[who]] for key in cell[who][0]}
                    row.update({f"{who}_{key}": v for key, v in _summary(vals).items()})
            rows.append(row)
        print(f"table: n = {n} done", flush=True)
    return rows


def growth(args, rng) -> list[dict]:
    """Tables 1–2 (Berkeley growth and DTI ``cca``, the notebook's paper-reading setting, m = 5): per data set, ε and
    k = 1..3, ``--replicates`` fixed-budget sequential frames and (k > 1) ``--gibbs-replicates`` Gibbs frames of the
    joint law (200 scans each)."""
    from studies import fpca as F

    from fdp_ppl.fpca.fpca_plan import exact_plan
    from fdp_ppl.fpca.samplers import gibbs_matrix_bingham
    from fdp_ppl.fpca.sequential import sample_sequential_bingham

    rows = []
    for dataset in args.datasets:
        prep = F.prepare(dataset, "paper-reading")
        for k in (1, 2, 3):
            for eps in args.epsilons:
                spec = F.make_spec(prep, k=k, epsilon=eps)
                fit = spec.fit(prep.curves)
                G = fit.gram
                pl = exact_plan(spec, fit.n, "sequential")
                t0 = time.perf_counter()
                seq = sample_sequential_bingham(G, spec.Sigma, pl["epsilon_steps"], args.replicates, rng,
                                                proposals=pl["proposals_steps"])
                t_seq = (time.perf_counter() - t0) / args.replicates
                row = {"part": "growth", "dataset": dataset, "m": spec.m, "n": fit.n, "epsilon": eps, "k": k,
                       "proposals_steps": pl["proposals_steps"], "epsilon_guaranteed": pl["epsilon"],
                       "s_per_frame_sequential": t_seq}
                for metric in ("variance_ratio", "subspace_norm"):
                    row[f"paper_{metric}"], row[f"paper_{metric}_se"] = F.paper_value(metric, dataset, eps, k)
                row.update({f"sequential_{key}": v for key, v in _summary(_metrics(seq, G, k)).items()})
                if k > 1:
                    gib, _ = gibbs_matrix_bingham(spec.bingham_parameter(G), k, 200, rng, chains=args.gibbs_replicates)
                    row.update({f"gibbs_{key}": v for key, v in _summary(_metrics(gib, G, k)).items()})
                rows.append(row)
    return rows


def _cell(r, who, key):
    m = r.get(f"{who}_{key}")
    return "—" if m is None else f"{m:.3f} ({r[f'{who}_{key}_se']:.3f})"


def compare(rows) -> dict:
    """Sequential minus Gibbs (joint law) per k over the ``table`` cells: median and range of the differences of the
    variance ratio and the subspace norm, and the cells where the difference exceeds 2 combined SE either way."""
    out = {}
    tab = [r for r in rows if r["part"] == "table" and r["k"] > 1]
    for k in sorted({r["k"] for r in tab}):
        for key in ("variance_ratio", "subspace_norm", "angle_deg"):
            cells = [r for r in tab if r["k"] == k]
            d = np.array([r[f"sequential_{key}"] - r[f"gibbs_{key}"] for r in cells])
            se = np.array([math.hypot(r[f"sequential_{key}_se"], r[f"gibbs_{key}_se"]) for r in cells])
            out[f"k{k}_{key}"] = {"median_difference": float(np.median(d)), "min_difference": float(d.min()),
                                  "max_difference": float(d.max()), "cells": int(d.size),
                                  "cells_sequential_worse_2se": int(np.sum((d if key == "variance_ratio" else -d) < -2 * se)),
                                  "cells_sequential_better_2se": int(np.sum((d if key == "variance_ratio" else -d) > 2 * se))}
    return out


def report(rows) -> None:
    """Markdown tables of the rows on stdout."""
    tab = [r for r in rows if r["part"] == "table"]
    if tab:
        print("\n§6.1 design (Fourier m = 40, Σ_ii = i⁻³): mean (SE over data sets); sequential = exact draws, "
              f"Gibbs = joint law, {tab[-1]['gibbs_scans'] or '-'} scans\n")
        for key in ("variance_ratio", "subspace_norm"):
            print(f"| {key} | n | ε | k = 1 exact | k = 2 sequential | k = 2 Gibbs | k = 3 sequential | k = 3 Gibbs |")
            print("|---|---|---|---|---|---|---|---|")
            for n in sorted({r["n"] for r in tab}):
                for eps in sorted({r["epsilon"] for r in tab}):
                    by_k = {r["k"]: r for r in tab if r["n"] == n and r["epsilon"] == eps}
                    cells = [_cell(by_k[1], "sequential", key)] if 1 in by_k else ["—"]
                    for k in (2, 3):
                        cells += [_cell(by_k[k], "sequential", key), _cell(by_k[k], "gibbs", key)] if k in by_k else ["—"] * 2
                    print(f"| | {n} | {eps:g} | " + " | ".join(cells) + " |")
            print()
        for name, c in compare(rows).items():
            print(f"{name}: sequential - Gibbs median {c['median_difference']:+.3f} (range {c['min_difference']:+.3f} .. "
                  f"{c['max_difference']:+.3f}); sequential worse by > 2 SE in {c['cells_sequential_worse_2se']} of "
                  f"{c['cells']} cells, better in {c['cells_sequential_better_2se']}")
    for r in rows:
        if r["part"] == "speed":
            print(f"speed m=40 n=500 eps=1 k={r['k']}: T = {' + '.join(map(str, r['proposals_steps']))} = "
                  f"{r['proposals_per_frame']} proposals per frame, eps'' = {r['epsilon_guaranteed']:.12g}; exact "
                  f"{r['sequential_cpu_s_per_frame']:.3g} CPU s/frame ({r['sequential_wall_s_per_frame']:.3g} s wall, "
                  f"{r['sequential_us_per_proposal_cpu']:.3g} us/proposal) = {r['sequential_ess_per_cpu_s']:.3g} ESS/CPU s; "
                  f"Gibbs {r['gibbs_iterations']} scans {r['gibbs_cpu_s']:.1f} CPU s, ESS min {r['gibbs_ess_min']:.0f} / "
                  f"median {r['gibbs_ess_median']:.0f} -> {r['gibbs_ess_per_cpu_s_min']:.3g} / "
                  f"{r['gibbs_ess_per_cpu_s_median']:.3g} ESS/CPU s; ratio exact/Gibbs chain "
                  f"{r['ratio_ess_per_cpu_s_vs_gibbs_chain_min']:.3g}x (vs min ESS) / "
                  f"{r['ratio_ess_per_cpu_s_vs_gibbs_chain_median']:.3g}x (median); vs the paper's one release per "
                  f"chain {r['ratio_vs_paper_recipe']:.3g}x")
            if "delta_plan_cpu_s_per_frame" in r:
                print(f"    (eps', delta') plan, delta = {r['delta_plan_delta']:.3g}: T = "
                      f"{' + '.join(map(str, r['delta_plan_proposals_steps']))}, {r['delta_plan_cpu_s_per_frame'] * 1e3:.3g} "
                      f"ms CPU per frame = {r['delta_plan_ess_per_cpu_s']:.3g} ESS/CPU s: "
                      f"{r['delta_plan_ratio_vs_gibbs_chain_median']:.3g}x the Gibbs chain (median ESS), "
                      f"{r['delta_plan_ratio_vs_paper_recipe']:.3g}x the paper's recipe")
        if r["part"] == "design":
            print(f"design m=40 n=500 eps=1 k={r['k']}: T = {' + '.join(map(str, r['proposals_steps']))} proposals, "
                  f"eps'' = {r['epsilon_guaranteed']:.12g}, {r['s_per_frame_sequential']:.3g} s/frame "
                  f"({r['us_per_proposal']:.3g} us/proposal); Gibbs {r['ms_per_gibbs_scan']:.3g} ms/scan -> "
                  f"{r['s_per_frame_gibbs_paper_recipe']:.3g} s per 20,000-scan frame: speed-up "
                  f"{r['speedup_vs_paper_gibbs']:.3g}x")
            for key in ("variance_ratio", "subspace_norm", "angle_deg"):
                print(f"    {key:15s} sequential {r['sequential_' + key]:.3f} ({r['sequential_' + key + '_se']:.3f})"
                      f"   gibbs (joint law) {r['gibbs_' + key]:.3f} ({r['gibbs_' + key + '_se']:.3f})")
    gr = [r for r in rows if r["part"] == "growth"]
    if gr:
        print("\n| data | metric | ε | k | paper (printed) | sequential (exact) | Gibbs joint (200 scans) |")
        print("|---|---|---|---|---|---|---|")
        for r in gr:
            for key in ("variance_ratio", "subspace_norm"):
                print(f"| {r.get('dataset', 'growth')} | {key} | {r['epsilon']:g} | {r['k']} | "
                      f"{r['paper_' + key]:.3f} ({r['paper_' + key + '_se']:.3f}) | {_cell(r, 'sequential', key)} | "
                      f"{_cell(r, 'gibbs', key)} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    p.add_argument("--frames", type=int, default=40, help="exact sequential frames per k on the design")
    p.add_argument("--gibbs-frames", type=int, default=10, help="Gibbs chains per k on the design")
    p.add_argument("--scans", type=int, default=200, help="Gibbs scans per chain on the design")
    p.add_argument("--replicates", type=int, default=100, help="sequential frames per growth cell (paper: 100)")
    p.add_argument("--gibbs-replicates", type=int, default=100, help="Gibbs frames per growth cell")
    p.add_argument("--epsilons", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0, 2.0])
    p.add_argument("--ns", type=int, nargs="+", default=[100, 250, 500, 1000], help="table: n (paper: 100 to 1000)")
    p.add_argument("--table-replicates", type=int, default=10, help="table: simulated data sets per n (paper: 10)")
    p.add_argument("--table-frames", type=int, default=10, help="table: exact sequential frames per data set and cell")
    p.add_argument("--table-scans", type=int, default=50, help="table: Gibbs scans per chain (one chain per data set)")
    p.add_argument("--speed-frames", type=int, default=10, help="speed: fixed-budget sequential frames per k")
    p.add_argument("--speed-delta", type=float, default=1e-10, help="speed: delta of the (eps', delta') plan also timed")
    p.add_argument("--gibbs-iterations", type=int, default=PAPER_ITERATIONS, help="speed: scans of the Gibbs chain")
    p.add_argument("--datasets", nargs="+", default=["growth", "dti"], help="growth: the Tables 1-2 data sets")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.quick:
        a.frames, a.gibbs_frames, a.scans = 4, 2, 30
        a.replicates, a.gibbs_replicates, a.epsilons = 40, 20, [0.5, 2.0]
        a.ns, a.table_replicates, a.table_frames, a.table_scans = [100, 500], 2, 4, 20
        a.speed_frames, a.gibbs_iterations = 2, 400
    rng = np.random.default_rng(a.seed)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in a.parts:
            rows += {"design": design, "table": table, "speed": speed, "growth": growth}[part](a, rng)
    report(rows)
    name = "bench_sequential_fpca" + ("" if set(a.parts) == set(PARTS) else "_" + "_".join(a.parts))
    write_results(name, {"rows": rows, "comparison": compare(rows), "args": vars(a)}, quick=a.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
