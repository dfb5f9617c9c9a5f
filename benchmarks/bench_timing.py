#!/usr/bin/env python
"""Benchmark: the timing channel of a release, as an ε lower bound an observer of the run time gets.

DESIGN invariant 9 says the run time is covered by the guarantee. For each neighbouring pair below this
times ``--runs`` runs per side (the sides alternating, A B A B …, so a change of machine load hits both)
and turns the times into an ε lower bound the way :func:`fdp_ppl.audit` does: on the first half of the runs
(training) the event "time > t" or "time < t" with the largest Clopper–Pearson bound is chosen over the
thresholds; on the second half (held out, so the choice is honest) its counts give
``ε_lb = log((TPR_lo − δ)/FPR_hi)`` with one-sided Clopper–Pearson bounds at α = 0.025 / 2 each (95 %
overall, Bonferroni over the two directions). A sound release has ε_lb <= its claimed ε (up to the 5 %
chance of the bound being wrong).

Pairs:

* ``svm-gp``: ``fdp-ppl svm``'s kernel machine (hinge loss, Gaussian kernel ``exp(−d²/(2h²))``, h = 0.1,
  λ = 0.01, n = 50 points uniform on [0, 1] labelled by ``x > 0.5``, 16-point grid) released with
  ``GaussianMechanism(ε = 1, δ = 1e-5)`` (unseeded: OpenDP noise); the neighbour flips the label of the
  record whose flip changed the previous solver's sweep count most (10 → 142 sweeps). Timed: fit +
  release, what ``fdp-ppl svm`` does after reading the file.
* ``fpca-gp-base``: ``FPCASpec(form="gp-base")`` on the issue's design (30-point grid, m = 5, k = 1, τ = 1,
  n = 28, ε = 0.2) with the exact sampler; side A all-zero curves, side B one curve replaced by a curve of
  amplitude 1e-160 spread over all five components (unprotected: all 25 entries of the scatter matrix are
  subnormal, 1e-320). Timed: fit + release.
* ``kde-binned``: the binned Gaussian-kernel density (``KDESpec(estimator="binned")``, n = 20,000 points
  uniform on [0, 1], h = 0.05, 64-point grid, ``GaussianMechanism(ε = 1, δ = 1e-5)``); side B replaces two
  records, one by the smallest subnormal above the domain's edge (its lattice fraction and every product it
  enters are subnormal) and one far outside the domain (the compiled binning pass's clamping branch) — the
  two data-dependent branches of that pass. Timed: fit + release.
* ``noise``: not a pair: the time of each OpenDP draw against the size of the noise it drew (Spearman and
  Pearson correlation, and the median time of the draws with the largest and the smallest 10 % of noise),
  for scalar Laplace, a 31-coefficient Laplace vector and the same for Normal noise (σ = 1).

``--code PATH`` times another checkout's ``fdp_ppl`` (e.g. ``--code ../other-checkout`` for the code before a
change); the statistics module is this package's :mod:`fdp_ppl.auditing.stats` in both.

The machine these run on is small and shared (2 vCPUs; six sessions at the time of the recorded results):
absolute times move from run to run, and load average at start and end is in the JSON. The alternating
order makes the comparison within a run fair; it cannot remove load spikes, which only add noise (and so
make the bound smaller, never larger, for a release whose time does not depend on the data).

Usage::

    python benchmarks/bench_timing.py                 # 300 runs per side (about 5 minutes)
    python benchmarks/bench_timing.py --runs 60       # quicker, wider bounds
    python benchmarks/bench_timing.py --quick         # smoke run: 40 runs per side, 300 noise draws
    python benchmarks/bench_timing.py --code ../other-checkout --out /tmp/before.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import _common  # noqa: F401  (puts this checkout first on sys.path)

ALPHA = 0.025 / 2  # each one-sided Clopper-Pearson bound; two directions (Bonferroni) -> 95 % overall
SVM = {"n": 50, "lam": 0.01, "bandwidth": 0.1, "grid_size": 16, "seed": 0, "epsilon": 1.0, "delta": 1e-5}
FPCA = {"epsilon": 0.2, "amplitude": 1e-160}
KDE = {"n": 20_000, "bandwidth": 0.05, "grid_size": 64, "seed": 0, "epsilon": 1.0, "delta": 1e-5}


def timing_epsilon(ta, tb, delta: float) -> dict:
    """Held-out timing ε lower bound of two samples of run times (module docstring)."""
    import numpy as np

    from fdp_ppl.auditing.stats import best_threshold, epsilon_lower_bound

    ta, tb = np.asarray(ta, float), np.asarray(tb, float)
    ha, hb = len(ta) // 2, len(tb) // 2
    train = best_threshold(ta[:ha], tb[:hb], ha, hb, delta, ALPHA, "timing", tails=(">", "<"))
    out = {"epsilon_lb": -np.inf}
    for key, (_, ev) in train.items():
        if ev is None:
            continue
        hit_a = ev.indicator(times=ta[ha:]).sum()
        hit_b = ev.indicator(times=tb[hb:]).sum()
        kn, nn, kd, nd = (hit_a, len(ta) - ha, hit_b, len(tb) - hb) if key == "A>B" else \
            (hit_b, len(tb) - hb, hit_a, len(ta) - ha)
        eps, lo, hi = epsilon_lower_bound(kn, nn, kd, nd, delta, ALPHA)
        if float(eps) > out["epsilon_lb"]:
            out = {"epsilon_lb": float(eps), "direction": key, "event": f"time {ev.tail} {ev.threshold * 1e3:.3f} ms",
                   "tpr_lo": float(lo), "fpr_hi": float(hi), "held_out_counts": [int(kn), int(nn), int(kd), int(nd)]}
    out["median_ms"] = [float(np.median(ta) * 1e3), float(np.median(tb) * 1e3)]
    out["runs_per_side"] = [len(ta), len(tb)]
    return out


def alternate(fa, fb, runs: int, warm: int = 3):
    """Run ``fa`` and ``fb`` alternately ``runs`` times each (after ``warm`` untimed calls each); their times."""
    for _ in range(warm):
        fa(), fb()
    ta, tb = [], []
    for _ in range(runs):
        for f, acc in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            f()
            acc.append(time.perf_counter() - t0)
    return ta, tb


def svm_pair():
    """The svm-gp spec, its two neighbouring datasets and the mechanism (module docstring)."""
    import numpy as np

    from fdp_ppl.machine import ERMSpec
    from fdp_ppl.noise.mechanisms import GaussianMechanism
    from fdp_ppl.spaces import Gaussian

    d = SVM
    rng = np.random.default_rng(d["seed"])
    x = rng.uniform(0, 1, d["n"])
    y = np.where(x < 0.5, -1.0, 1.0)
    spec = ERMSpec(Gaussian(d["bandwidth"], convention="hall"), lam=d["lam"], n=d["n"], loss="hinge",
                   domain=[[0.0, 1.0]], grid_size=d["grid_size"])
    y2 = y.copy()
    y2[37] = -y2[37]  # the flip with the largest change of the previous solver's sweeps (10 -> 142), found once
    return spec, (x, y), (x, y2), GaussianMechanism(d["epsilon"], d["delta"])


def bench_svm(runs: int) -> dict:
    import fdp_ppl as fp

    spec, a, b, mech = svm_pair()

    def run(data):
        return lambda: fp.release(spec.fit(*data), mech)

    its = [getattr(spec.fit(*data).solution, "iterations", None) for data in (a, b)]
    ta, tb = alternate(run(a), run(b), runs)
    res = timing_epsilon(ta, tb, mech.delta)
    res.update(claimed_epsilon=mech.epsilon, claimed_delta=mech.delta, solver_iterations=its, design=SVM)
    return res


def fpca_pair():
    import numpy as np

    from fdp_ppl.auditing.fpca import fpca_issue_design

    spec, first, _ = fpca_issue_design(FPCA["epsilon"], "gp-base")
    phi = np.asarray(spec.basis.eigenfunctions)[:, :5].sum(1)
    A = np.zeros_like(first)
    B = A.copy()
    B[0] = FPCA["amplitude"] * phi / spec.grid.norm(phi[None])[0]
    return spec, A, B


def bench_fpca(runs: int) -> dict:
    import numpy as np

    import fdp_ppl as fp

    spec, A, B = fpca_pair()
    mech = fp.ExponentialMechanism("exact")
    plan = fp.plan(spec, mech, n=A.shape[0])

    def run(curves):
        return lambda: fp.release(spec.fit(curves), mech)

    G = spec.fit(B).gram
    sub = int(np.sum((np.abs(G) > 0) & (np.abs(G) < np.finfo(float).tiny)))
    ta, tb = alternate(run(A), run(B), runs)
    res = timing_epsilon(ta, tb, float(plan.delta))
    res.update(claimed_epsilon=float(plan.epsilon), claimed_delta=float(plan.delta), guarantee=plan.guarantee,
               subnormal_gram_entries_side_b=sub, design=FPCA)
    return res


def kde_pair():
    """The kde-binned spec, its two neighbouring datasets (two records apart) and the mechanism (module docstring)."""
    import numpy as np

    from fdp_ppl.kde import CartesianGrid, KDESpec
    from fdp_ppl.noise.mechanisms import GaussianMechanism

    d = KDE
    x = np.random.default_rng(d["seed"]).uniform(0.0, 1.0, d["n"])
    spec = KDESpec(grid=CartesianGrid.uniform([(0.0, 1.0)], d["grid_size"]), bandwidth=d["bandwidth"], n=d["n"],
                   estimator="binned")
    x2 = x.copy()
    x2[0], x2[1] = 5e-324, 1e300  # a subnormal lattice fraction, and the clamping branch
    return spec, x, x2, GaussianMechanism(d["epsilon"], d["delta"])


def bench_kde(runs: int) -> dict:
    import fdp_ppl as fp

    spec, a, b, mech = kde_pair()

    def run(data):
        return lambda: fp.release(spec.fit(data), mech)

    ta, tb = alternate(run(a), run(b), runs)
    res = timing_epsilon(ta, tb, mech.delta)
    # two records apart: the claim an observer is held to is the group bound (2 eps, 2 e^eps delta)
    res.update(claimed_epsilon=2 * mech.epsilon, claimed_delta=mech.delta, design=KDE,
               note="side B differs in two records: claim is the group-privacy 2 eps")
    return res


def bench_noise(draws: int) -> list:
    import numpy as np
    from scipy import stats

    from fdp_ppl.noise.opendp import _measurement

    rows = []
    for law, J in (("laplace", 1), ("laplace", 31), ("normal", 1), ("normal", 31)):
        meas = _measurement(law, J, 1.0)
        xs = [0.0] * J
        for _ in range(50):
            meas(xs)
        t, z = np.empty(draws), np.empty(draws)
        for i in range(draws):
            t0 = time.perf_counter()
            out = meas(xs)
            t[i] = time.perf_counter() - t0
            z[i] = float(np.sqrt(np.sum(np.square(out))))
        big, small = z >= np.quantile(z, 0.9), z <= np.quantile(z, 0.1)
        rows.append({"law": law, "J": J, "draws": draws, "median_us": float(np.median(t) * 1e6),
                     "pearson": float(stats.pearsonr(t, z)[0]), "spearman": float(stats.spearmanr(t, z)[0]),
                     "spearman_p": float(stats.spearmanr(t, z)[1]),
                     "median_us_top10_noise": float(np.median(t[big]) * 1e6),
                     "median_us_bottom10_noise": float(np.median(t[small]) * 1e6)})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=300, help="timed runs per side of each pair (default 300)")
    p.add_argument("--noise-draws", type=int, default=3000, help="timed OpenDP draws per law (default 3000)")
    p.add_argument("--quick", action="store_true", help="40 runs per side, 300 noise draws; writes *_quick.json")
    p.add_argument("--only", default="svm,fpca,kde,noise", help="comma-separated subset of svm,fpca,kde,noise")
    p.add_argument("--code", default=None, metavar="PATH", help="a checkout whose fdp_ppl is timed (default: this)")
    p.add_argument("--out", default=None, help="JSON path (default results/bench_timing[_quick].json)")
    a = p.parse_args(argv)
    if not (1 <= a.runs <= 100_000 and 1 <= a.noise_draws <= 1_000_000):
        p.error("--runs must lie in [1, 100000] and --noise-draws in [1, 1000000]")
    if a.quick:
        a.runs, a.noise_draws = min(a.runs, 40), min(a.noise_draws, 300)
    if a.code:
        sys.path.insert(0, os.path.abspath(a.code))
    os.environ.setdefault("FDP_PPL_FAST", "1")
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    import fdp_ppl

    warnings.simplefilter("ignore")
    from _common import machine_info, write_results

    load0 = os.getloadavg()
    print(f"fdp_ppl from {os.path.dirname(fdp_ppl.__file__)}; load average {load0[0]:.2f} (2 vCPUs shared with "
          f"other sessions: absolute times move, the A/B alternation keeps the comparison fair)")
    res = {"code": os.path.dirname(fdp_ppl.__file__), "runs": a.runs, "alpha_per_bound": ALPHA}
    parts = a.only.split(",")
    for name, fn in (("svm", lambda: bench_svm(a.runs)), ("fpca", lambda: bench_fpca(a.runs)),
                     ("kde", lambda: bench_kde(a.runs))):
        if name not in parts:
            continue
        t0 = time.perf_counter()
        r = fn()
        r["seconds"] = time.perf_counter() - t0
        res[name] = r
        ok = r["epsilon_lb"] <= r["claimed_epsilon"]
        print(f"{name:5s}: median {r['median_ms'][0]:.2f} vs {r['median_ms'][1]:.2f} ms over {a.runs} runs per side; "
              f"timing eps_lb {r['epsilon_lb']:.3f} (95%, held out) vs claimed eps {r['claimed_epsilon']:g} -> "
              f"{'OK' if ok else 'EXCEEDS THE CLAIM'}" + (f"; {r.get('event')}" if "event" in r else ""))
    if "noise" in parts:
        res["noise"] = bench_noise(a.noise_draws)
        for r in res["noise"]:
            print(f"noise: {r['law']:7s} J={r['J']:2d}: median {r['median_us']:.0f} us, Spearman(time, |noise|) "
                  f"{r['spearman']:+.3f} (p = {r['spearman_p']:.1g}), Pearson {r['pearson']:+.3f}; median time of the "
                  f"10% largest / smallest noise {r['median_us_top10_noise']:.0f} / {r['median_us_bottom10_noise']:.0f} us")
    res["load_average_end"] = list(os.getloadavg())
    res["note"] = ("2 vCPUs shared with other sessions (six at the time of the recorded run); the sides alternate "
                   "A B A B so load changes hit both")
    _ = machine_info
    write_results("bench_timing", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
