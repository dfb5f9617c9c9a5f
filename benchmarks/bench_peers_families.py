#!/usr/bin/env python
"""Benchmark: every family but densities against its strongest peer, in one process (issue "within 2× of the
strongest peer").

One BLAS thread (threadpoolctl), the median of 3 calls of each side, the two sides alternating within each
repeat (the same machine load), growth exponents ``log(t2/t1)/log(n2/n1)`` between consecutive sizes, peak
memory (tracemalloc, a separate call: numpy buffers and Python objects, not a library's C allocations):

* ``mean``: ``fp.iclp_qr_mean(x, basis, tau)`` + ``fp.release(·, ICLP(1))`` (OpenDP, unseeded) on n curves ×
  m points, a *second* release of the public configuration (the first one, ``cold``, also builds the eigenbasis
  and the public parts; it is reported once per m). Peer: the fused numpy pass of ``bench_summaries.py``
  (grid norms in one ``einsum``, clip factors, one product, the projection). ``floor+draw`` adds what a
  release must also do: a numpy Laplace draw of the J coefficients and the J × K reconstruction. Target ≤ 1.3×
  the fused pass at m = 100 and m = 3200; a second row per size sets ours against the fused pass plus the
  floating-point-safe draw alone (OpenDP, the noise stage's sampler: what no non-private pass pays).
* ``pca``: ``FPCASpec(k = 1, m = 10 Matérn eigenfunctions).fit(x)`` + ``fp.release(·, ExponentialMechanism("exact"))``
  (one frame). Peer: ``sklearn.decomposition.PCA(1, svd_solver="randomized")``; also diffprivlib's ``PCA``
  (ε = 1, ``data_norm = τ``) when it imports (diffprivlib 0.6.6 does not with scikit-learn 1.9: its models
  import ``sklearn.tree._tree.DOUBLE``, gone). Accuracy: |cos| of the first component with the truth. Target ≤ 3×
  randomized PCA from n = 10⁴.
* ``svm``: ``ERMSpec(approximation="nystroem")``, hinge loss (the privacy-safe solver runs a public ``n/slack``
  iterations, slack < 1: quadratic in n, so at small n), the Huber hinge (the hinge with its corner smoothed,
  h = 1/2: the same M = 1 and Δ, a count logarithmic in n, so at the issue's sizes; slack 1e-2) and logistic loss
  (count logarithmic in n, against ``LogisticRegression`` on the same features, C = 1/(λn)): fit +
  ``fp.release(·, GaussianMechanism(1, 1e-6))``. Peer of the hinge and the Huber hinge:
  ``sklearn.kernel_approximation.Nystroem`` fitted on the *same* public landmarks (all of them components) +
  ``LinearSVC(loss="hinge")`` with the same C = 1/(2λn) (the exact hinge, stopped when the data say so). Accuracy: held-out accuracy of the (non-private) fits.
  Target ≤ 2× for n ≥ 10⁵.
* ``infer``: ``fp.infer`` of ICLP-QR releases (GP prior with the release's kernel, fixed amplitude and level: exact
  draws) against a hand-written PyMC model of the *same* posterior sampled by nutpie (PyMC NUTS if nutpie is
  missing), for both targets: ``summary`` (``θ ~ N(level, a²λ_j)``, ``y_j ~ Laplace(θ_j, b_j)``) and the default
  ``population`` (also ``κ ~ HalfNormal(2 · spread)`` and the mean's sampling error written latent, non-centred;
  ours draws κ by quadrature and the rest exactly). Both sides make 2 chains × 1000 curve draws (the default of
  both, in both modes) and nutpie tunes its own default 300 steps a chain (``--peer-tune``; PyMC's 1000 made the
  peer slower: at m = 1600 nutpie's curve ESS was 412 in 4.15 CPU s with 1000 tuning steps, 642 in 2.91 s with
  300, so the peer at its default is the strongest); the peer's clock includes the curves ``c Φᵀ``, ours' the whole
  call: in the ``summary`` and ``population`` rows ``fp.infer``'s default result (curves, mixing scales,
  log-likelihood, replicated releases, exact LOO, which the peer does not compute), in the ``population, posterior
  only`` row the posterior alone (``log_likelihood=False, posterior_predictive=False``: the peer's outputs, like for
  like). Each of the 3 repeats is a fresh release; warm-ups on another release and nutpie's compile (with the observation as ``pm.Data``: once a size)
  are off the clock, the compile reported apart (``peer_compile_s``, and ``ratio_with_compile``). Curve-ESS:
  ArviZ bulk ESS, minimum over the grid, for both. Ratio: median ESS/s, ours / peer, by wall clock (the table)
  and CPU time (``ratio_cpu``). Target ≥ 10× at m = 100 and 1600.

Usage::

    python benchmarks/bench_peers_families.py --quick   # small sizes, minutes
    python benchmarks/bench_peers_families.py           # the sizes of the issue
    python benchmarks/bench_peers_families.py --only mean,pca
    python benchmarks/bench_peers_families.py --only svm --svm-sizes 100000,300000   # Huber hinge and logistic
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import (  # noqa: E402
    growth_exponents,
    paired_times,
    peak_traced_bytes,
    peer_row,
    peer_table,
    size_label,
    write_results,
)

FAMILIES = ("mean", "pca", "svm", "infer")
#: sizes m of the inference rows (``--infer-sizes``); the issue's targets are at 100 and 1600
INFER_SIZES = (100, 1600)
#: tuning steps a chain of the inference peer: nutpie's default (PyMC NUTS, the fallback, tunes its own 1000)
PEER_TUNE = {"nutpie": 300, "pymc": 1000}
TARGETS = {"mean": ("<=", 1.3), "pca": ("<=", 3.0), "svm": ("<=", 2.0), "infer": (">=", 10.0)}
NAMES = {"mean": "mean curve (ICLP-QR)", "pca": "principal components (k = 1, exact)", "svm": "kernel machine",
         "infer": "exact inference"}


def median_times(fns: dict, repeats: int = 3) -> dict:
    """Median wall time of each callable, the callables alternating within each repeat."""
    return paired_times(fns, repeats, statistics.median)


def _row(family, size, ours_s, peer, peer_s, peak=None, *, group=None, accuracy=None, applies=True, **extra) -> dict:
    """A row of the shared peers table (:func:`_common.peer_row`; ``ours_s``, ``peer_s`` are ESS/s for infer) and
    this benchmark's extra figures."""
    op, target = TARGETS[family]
    row = peer_row(NAMES[family] + (f" ({extra['loss']})" if "loss" in extra else ""), size, ours_s, peer, peer_s,
                   op=op, bound=target, applies=applies, n=extra.get("n"), group=group,
                   peak_mb=None if peak is None else peak / 2**20, accuracy=accuracy,
                   unit="ESS/s" if family == "infer" else "s")
    row["kind"] = family
    row.update(extra)
    ratio = row["ratio"]
    print(f"  {family:<6} {size:<22} ours {ours_s:10.4g}  {peer:<28} {peer_s if peer_s is None else round(peer_s, 5)}"
          f"  ratio {ratio if ratio is None else round(ratio, 2)}  {'—' if row['met'] is None else 'MET' if row['met'] else 'not met'}"
          + (f"  (CPU: ours {row['cpu_ours']:.4g} s, peer {row['cpu_peer']:.4g} s, ratio {row['ratio_cpu']:.2f})"
             if "ratio_cpu" in row and "cpu_peer" in row else ""),
          file=sys.stderr, flush=True)
    return row


# ----------------------------------------------------------------------------- mean
def _curves(n, k, seed=1):
    import numpy as np

    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, k)
    x = np.empty((n, k))
    step = max(1, 2_000_000 // k)
    for i in range(0, n, step):
        j = min(n, i + step)
        x[i:j] = rng.uniform(0.5, 1.5, (j - i, 1)) * 1.2 * np.sin(2 * np.pi * t) + 0.3 * rng.standard_normal((j - i, k))
    return x


def mean_rows(sizes: dict, repeats: int) -> list:
    import numpy as np

    import fdp_ppl as fp

    rows = []
    mech = fp.ICLP(epsilon=1.0)
    for k, ns in sizes.items():
        grid = fp.Grid.uniform(k)
        kernel = fp.Matern(rho=0.1, nu=1.5)
        first = True
        for n in ns:
            x = _curves(n, k)

            def ours(x=x):
                basis = fp.eigenbasis(kernel, fp.Grid.uniform(k))  # as a user writes it: cached per (kernel, grid)
                return fp.release(fp.iclp_qr_mean(x, basis, tau=1.0), mech)

            if first:  # the first release of the configuration: eigenbasis, calibration, template
                t0 = time.perf_counter()
                ours()
                cold = time.perf_counter() - t0
                first = False
            else:
                cold = None
            basis = fp.eigenbasis(kernel, grid)
            A = (basis.eigenfunctions * grid.weights[:, None]).T
            scale = np.asarray(fp.iclp_qr_mean(x[:2], basis, tau=1.0).spec.shrinkage)  # any positive J-vector
            rng = np.random.default_rng(0)

            def fused(x=x):
                sq = np.einsum("ij,ij,j->i", x, x, grid.weights)
                f = np.minimum(1.0, 1.0 / np.sqrt(sq))
                return A @ ((f @ x) / x.shape[0])

            def floor_draw(x=x):
                c = fused(x) + rng.laplace(0.0, scale)
                return c @ basis.eigenfunctions.T

            summary = fp.iclp_qr_mean(x[:2], basis, tau=1.0)
            _, cal, sampler, *_ = fp.plan(summary, mech).state
            zeros = np.zeros(summary.spec.n_components)

            def noise():  # the floating-point-safe draw alone (OpenDP): what a private release must add
                return sampler.draw(zeros, cal.scale, 1, None, calibration=cal)

            t, cpu = _wall_cpu_medians({"ours": ours, "fused": fused, "floor": floor_draw, "noise": noise}, repeats)
            peak = peak_traced_bytes(ours)
            rows.append(_row("mean", f"n={size_label(n)}, m={k}", t["ours"], "fused numpy pass", t["fused"], peak,
                             group=("mean", k), n=n, m=k, floor_draw_s=t["floor"],
                             ratio_to_floor_draw=t["ours"] / t["floor"],
                             cold_first_release_s=cold, data_mb=x.nbytes / 2**20, noise_s=t["noise"],
                             cpu_ours=cpu["ours"], cpu_peer=cpu["fused"], ratio_cpu=cpu["ours"] / cpu["fused"]))
            rows.append(_row("mean", f"n={size_label(n)}, m={k}", t["ours"], "fused numpy pass + fp-safe draw",
                             t["fused"] + t["noise"], None, group=("mean-noise", k), n=n, m=k, cpu_ours=cpu["ours"],
                             cpu_peer=cpu["fused"] + cpu["noise"],
                             ratio_cpu=cpu["ours"] / (cpu["fused"] + cpu["noise"])))
    return rows


# ----------------------------------------------------------------------------- pca
def pca_rows(ns, repeats: int, k=100, m=10) -> list:
    import numpy as np
    from sklearn.decomposition import PCA

    import fdp_ppl as fp
    from fdp_ppl.fpca import FPCASpec

    try:
        from diffprivlib.models import PCA as DPPCA
    except ImportError:
        DPPCA = None
    grid = fp.Grid.uniform(k)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    truth = basis.eigenfunctions[:, 0] / np.sqrt(np.sum(basis.eigenfunctions[:, 0] ** 2))  # unit vector on the grid
    tau = 4.0
    spec = FPCASpec(grid=grid, m=m, k=1, epsilon=1.0, tau=tau, basis=basis)
    mech = fp.ExponentialMechanism(sampler="exact")
    rows = []
    for n in ns:
        rng = np.random.default_rng(n)
        scores = rng.normal(0.0, 1.0, (n, 1)) * np.array([[1.5]])
        x = scores * basis.eigenfunctions[:, 0][None, :] + 0.3 * rng.normal(0, 1, (n, 3)) @ basis.eigenfunctions[:, 1:4].T
        out = {}

        def ours():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out["tree"] = fp.release(spec.fit(x), mech)

        def peer():
            out["pca"] = PCA(n_components=1, svd_solver="randomized", random_state=0).fit(x)

        fns = {"ours": ours, "peer": peer}
        if DPPCA is not None:
            def dp():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out["dp"] = DPPCA(n_components=1, epsilon=1.0, data_norm=tau, centered=True, random_state=0).fit(
                        np.clip(x, -tau, tau) * np.minimum(1.0, tau / np.linalg.norm(x, axis=1, keepdims=True)))
            fns["diffprivlib"] = dp
        t = median_times(fns, repeats)
        peak = peak_traced_bytes(ours)
        frame = out["tree"]["posterior"]["frame"].values.reshape(-1, m)[0]
        f = basis.eigenfunctions[:, :m] @ frame
        cos = lambda v: float(abs(v @ truth) / np.linalg.norm(v))  # noqa: E731
        extra = {"n": n, "K": k, "m": m, "cos_ours": cos(f), "cos_sklearn": cos(out["pca"].components_[0])}
        if DPPCA is not None:
            extra.update(diffprivlib_s=t["diffprivlib"], cos_diffprivlib=cos(out["dp"].components_[0]),
                         ratio_to_diffprivlib=t["ours"] / t["diffprivlib"])
        rows.append(_row("pca", f"n={size_label(n)}, K={k}", t["ours"], "sklearn PCA (randomized)", t["peer"], peak,
                         group=("pca", k), accuracy=f"|cos| {extra['cos_ours']:.3f} / {extra['cos_sklearn']:.3f}",
                         applies=n >= 10**4, **extra))
    return rows


# ----------------------------------------------------------------------------- svm
def svm_rows(ns, repeats: int, lam=0.01, rho=0.2, loss="hinge") -> list:
    import numpy as np
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    import fdp_ppl as fp
    from fdp_ppl.machine import ERMSpec
    from fdp_ppl.spaces import Gaussian

    kernel = Gaussian(rho, convention="hall")
    mech = fp.GaussianMechanism(1.0, 1e-6)

    def data(n, seed):
        rng = np.random.default_rng(seed)
        X = rng.uniform(0, 1, (n, 2))
        y = np.where(X[:, 0] + 0.3 * np.sin(6 * X[:, 1]) + rng.normal(0, 0.2, n) > 0.6, 1.0, -1.0)
        return X, y

    Xt, yt = data(20_000, 99)
    rows = []
    for n in ns:
        X, y = data(n, 1)
        # hinge: the public iteration count is n/slack - 1 (slack < 1), so the largest slack
        spec = ERMSpec(kernel, lam=lam, n=n, domain=[[0, 1], [0, 1]], approximation="nystroem", loss=loss,
                       solver_slack=0.99 if loss == "hinge" else 1e-2)
        land = spec.landmark_points()
        out = {}

        def ours():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out["fit"] = fit = spec.fit(X, y)
                fp.release(fit, mech)

        def peer():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ny = Nystroem(kernel="rbf", gamma=1 / (2 * rho**2), n_components=len(land)).fit(land)
                model = (LinearSVC(C=1 / (2 * lam * n), loss="hinge", fit_intercept=False, max_iter=2000)
                         if loss in ("hinge", "huber") else LogisticRegression(C=1 / (lam * n), fit_intercept=False))
                out["peer"] = (ny, model.fit(ny.transform(X), y))

        t, cpu = _wall_cpu_medians({"ours": ours, "peer": peer}, repeats)
        peak = peak_traced_bytes(ours) if n <= 2 * 10**4 else None  # tracemalloc slows a large fit several-fold
        ny, svc = out["peer"]
        acc_ours = float(np.mean(np.sign(out["fit"].decision(Xt)) == yt))
        acc_peer = float(np.mean(svc.predict(ny.transform(Xt)) == yt))
        peer_name = "Nystroem + " + ("LinearSVC" if loss in ("hinge", "huber") else "LogisticRegression")
        rows.append(_row("svm", f"n={size_label(n)}, landmarks={len(land)}", t["ours"], peer_name,
                         t["peer"], peak, group=("svm", loss), accuracy=f"{acc_ours:.3f} / {acc_peer:.3f}",
                         applies=n >= 10**5, n=n, loss=loss, landmarks=len(land), rank=spec.nystroem_map().rank,
                         iterations=spec.solver_iterations, accuracy_ours=acc_ours, accuracy_peer=acc_peer,
                         cpu_ours=cpu["ours"], cpu_peer=cpu["peer"], ratio_cpu=cpu["ours"] / cpu["peer"],
                         peer_iterations=int(np.max(svc.n_iter_))))
    return rows


def _wall_cpu_medians(fns: dict, repeats: int) -> tuple:
    """Median wall (perf_counter) and CPU (process_time) seconds of each callable, alternating within a repeat."""
    wall, cpu = {k: [] for k in fns}, {k: [] for k in fns}
    for _ in range(max(1, repeats)):
        for k, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    return ({k: statistics.median(v) for k, v in wall.items()}, {k: statistics.median(v) for k, v in cpu.items()})


# ----------------------------------------------------------------------------- inference
def _curve_ess(curves) -> float:
    """Bulk ESS (ArviZ, rank-normalised) of the curve, the minimum over the grid; ``curves`` (chain, draw, m)."""
    import arviz as az

    return float(az.ess(az.convert_to_dataset({"curve": curves}), method="bulk")["curve"].values.min())


def _infer_models(rel, prior, basis, level, a):
    """The hand-written PyMC models of the two posteriors ``fp.infer`` draws exactly, with the observation as
    ``pm.Data`` (one nutpie compile serves every release of a size):

    * ``summary`` (``target="summary"``: θ the noisy-free summary's coefficients): ``θ_j = level + a√λ_j w_j``,
      ``w ~ N(0, 1)``, ``y_j ~ Laplace(θ_j, b_j)``;
    * ``population`` (the default target: θ the population mean's): also ``κ ~ HalfNormal(2 · spread)`` (spread
      from the same public hint as ``fp.infer``) and the mean's sampling error written latent and non-centred,
      ``y_j ~ Laplace(s_j θ_j + s_j κ √λ_j / √n z_j, b_j)``, ``z ~ N(0, 1)``, ``s_j`` the public shrinkage — what
      a user writes without the Normal–Laplace convolution."""
    import numpy as np
    import pymc as pm

    from fdp_ppl.inference import build_model

    meta = build_model(rel, prior, target="population")._fdp_meta
    y = rel["posterior"]["coefficients"].values[0, 0]
    b = rel["constant_data"]["noise_scale"].values
    shrink = np.asarray(meta["shrink"], dtype=float)
    J = y.size
    sd = a * np.sqrt(basis.eigenvalues[:J])
    base = shrink * np.asarray(meta["sampling_base"], dtype=float) / np.sqrt(float(meta["ctx"]["attrs"]["n"]))
    models = {}
    with pm.Model() as models["summary"]:
        obs = pm.Data("y", y)
        w = pm.Normal("w", shape=J)
        pm.Deterministic("c", level + sd * w)
        pm.Laplace("obs", mu=level + sd * w, b=b, observed=obs)
    with pm.Model() as models["population"]:
        obs = pm.Data("y", y)
        w = pm.Normal("w", shape=J)
        kappa = pm.HalfNormal("kappa", sigma=2 * meta["ctx"]["hint"]["spread"])
        z = pm.Normal("z", shape=J)
        pm.Deterministic("c", level + sd * w)
        pm.Laplace("obs", mu=shrink * (level + sd * w) + kappa * base * z, b=b, observed=obs)
    return models


#: the inference rows: (label, ``fp.infer`` target, its other options). The first two are ``fp.infer``'s default
#: result (posterior, log-likelihood, exact LOO, replicated releases); ``posterior only`` asks for the posterior
#: alone (``log_likelihood=False, posterior_predictive=False``: what the peer's clock holds, like for like)
INFER_ROWS = (("summary", "summary", {}), ("population", "population", {}),
              ("population, posterior only", "population", {"log_likelihood": False, "posterior_predictive": False}))


def infer_rows(ms, draws: int, tune: int | None = None, n=2000, repeats: int = 3, targets=INFER_ROWS) -> list:
    """Exact inference against nutpie on the same posterior, per size m and target; see the module docstring.

    Each repeat uses a fresh release (seeds 1, 2, ...; nothing cached for one release helps the next) and the two
    sides alternate; a warm-up of each side on another release (seed 99) and nutpie's compile (once per size and
    target, reported apart as ``peer_compile_s``) are outside the clock. Both sides produce ``chains · draws`` curve
    draws; the peer's clock includes the curves ``c Φᵀ`` (ours' includes them too, and also the log-likelihood,
    the replicated releases, the exact leave-one-out and the noise's mixing scales, which the peer does not
    compute). ESS: the same ArviZ bulk ESS of the curve, minimum over the grid, for both. Ratio: the median over
    repeats of ESS/s, ours over the peer's, by the wall clock and by the CPU time (``process_time``: all threads).
    """
    import numpy as np

    import fdp_ppl as fp
    from fdp_ppl.inference import GPPrior

    try:
        import nutpie
    except ImportError:
        nutpie = None
    import pymc as pm

    a, level, chains = 0.3, 0.0, 2
    prior = GPPrior(nu=1.5, lengthscale=0.1, amplitude=a, mean=level)
    rows = []
    for k in ms:
        grid = fp.Grid.uniform(k)
        basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
        summary = fp.iclp_qr_mean(_curves(n, k), basis, tau=2.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rels = [fp.release(summary, fp.ICLP(epsilon=1.0), random_seed=s, study=True)
                    for s in [99] + list(range(1, repeats + 1))]
        J = int(rels[0]["posterior"]["coefficients"].sizes["basis"])
        phi = basis.eigenfunctions[:, :J]
        for label, target, options in targets:
            models = [_infer_models(r, prior, basis, level, a)[target] for r in rels]
            t0 = time.perf_counter()
            compiled = nutpie.compile_pymc_model(models[0]) if nutpie is not None else None
            compile_s = time.perf_counter() - t0
            peer_name = "PyMC model + " + ("nutpie" if nutpie is not None else "PyMC NUTS")
            tune = PEER_TUNE["nutpie" if nutpie is not None else "pymc"] if tune is None else tune

            def ours(rel, draws=draws, target=target, options=options):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    post = fp.infer(rel, prior, draws=draws, chains=chains, random_seed=0, progressbar=False,
                                    target=target, **options)
                return post["posterior"]["curve"].values, post

            def peer(i, draws=draws, tune=tune):
                if compiled is not None:
                    y = rels[i]["posterior"]["coefficients"].values[0, 0]
                    idata = nutpie.sample(compiled.with_data(y=y), draws=draws, tune=tune, chains=chains, seed=i,
                                          progress_bar=False, cores=1)
                else:
                    with models[i], warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=i,
                                          progressbar=False)
                post = idata.posterior
                stats = idata.sample_stats
                return post["c"].values @ phi.T, int(np.sum(stats["diverging"].values))   # the curves, c Φᵀ

            ours(rels[0], 50), peer(0, 50, 50)   # warm-up: imports, caches of the public configuration
            runs = {"ours": [], "peer": []}
            for i in range(1, repeats + 1):
                for side in ("ours", "peer"):
                    c0, t0 = time.process_time(), time.perf_counter()
                    out = ours(rels[i]) if side == "ours" else peer(i)
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    runs[side].append({"wall": wall, "cpu": cpu, "ess": _curve_ess(out[0]),
                                       "mean": out[0].reshape(-1, k).mean(0), "sd": out[0].reshape(-1, k).std(0),
                                       "extra": out[1] if side == "peer" else out[1].attrs.get("inference_model")})
            med = {side: {key: statistics.median(r[key] for r in rs) for key in ("wall", "cpu", "ess")}
                   for side, rs in runs.items()}
            per_s = {side: {clock: statistics.median(r["ess"] / r[clock] for r in rs) for clock in ("wall", "cpu")}
                     for side, rs in runs.items()}
            gap = max(float(np.max(np.abs(o["mean"] - p["mean"]) / p["sd"])) for o, p in zip(runs["ours"], runs["peer"]))
            rows.append(_row("infer", f"m={k}, J={J}, {label}", per_s["ours"]["wall"], peer_name,
                             per_s["peer"]["wall"], None, group=("infer", label), m=k, J=J, posterior_target=target,
                             ours_options={key: str(v) for key, v in options.items()},
                             ours_seconds=med["ours"]["wall"], ours_cpu_s=med["ours"]["cpu"],
                             ours_ess=med["ours"]["ess"], peer_seconds=med["peer"]["wall"],
                             peer_cpu_s=med["peer"]["cpu"], peer_ess=med["peer"]["ess"], peer_compile_s=compile_s,
                             ratio_cpu=per_s["ours"]["cpu"] / per_s["peer"]["cpu"],
                             ratio_with_compile=(per_s["ours"]["wall"] * (med["peer"]["wall"] + compile_s)
                                                 / med["peer"]["ess"]),   # nutpie's compile on its clock
                             peer_divergences=[r["extra"] for r in runs["peer"]],
                             inference=runs["ours"][0]["extra"], max_mean_gap_in_sd=gap, draws=draws, tune=tune,
                             chains=chains, repeats=repeats))
            print(f"    CPU: ours {med['ours']['cpu']:.3f} s, peer {med['peer']['cpu']:.3f} s; ESS/s by CPU ratio "
                  f"{rows[-1]['ratio_cpu']:.2f}; peer compile {compile_s:.1f} s", file=sys.stderr, flush=True)
    return rows


# ----------------------------------------------------------------------------- table
def table(rows) -> str:
    """The shared peers table (:func:`_common.peer_table`)."""
    return peer_table(rows)


def run(quick: bool, only=FAMILIES, repeats: int = 3, svm_sizes=None, peer_tune=None) -> dict:
    from threadpoolctl import threadpool_limits

    warnings.simplefilter("ignore")
    rows = []
    with threadpool_limits(1):
        if "mean" in only:
            rows += mean_rows({100: (10**4, 3 * 10**4, 10**5, 3 * 10**5) if quick else
                               (10**4, 10**5, 10**6, 3 * 10**6),
                               3200: (1000, 2000, 4000, 8000) if quick else (2500, 5000, 10**4, 2 * 10**4)}, repeats)
        small = 1 if quick else repeats  # the quick mode: one call per side where one call takes seconds
        if "pca" in only:
            rows += pca_rows((10**4, 2 * 10**4, 5 * 10**4, 10**5) if quick else (10**4, 10**5, 10**6, 3 * 10**6),
                             small)
        if "svm" in only and svm_sizes:  # --svm-sizes: the smooth-loss machines alone at these n (one BLAS thread)
            rows += svm_rows(svm_sizes, repeats, loss="huber")
            rows += svm_rows(svm_sizes, repeats, loss="logistic")
        elif "svm" in only:  # hinge: T = n/slack iterations, so smaller n; the Huber hinge serves every n
            rows += svm_rows((500, 750, 1000, 1500) if quick else (2000, 4000, 8000, 16000), small)
            large = (2000, 5000, 10**4, 2 * 10**4) if quick else (10**5, 3 * 10**5, 10**6, 2 * 10**6)
            rows += svm_rows(large, small, loss="huber")
            rows += svm_rows(large, small, loss="logistic")
        if "infer" in only:
            rows += infer_rows(INFER_SIZES, draws=1000, tune=peer_tune, repeats=repeats)   # a median: one run moves 1.5x
    growth_exponents(rows)
    return {"rows": rows, "table": table(rows), "repeats": repeats}


def main(argv=None) -> int:
    global INFER_SIZES
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default=",".join(FAMILIES))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("--infer-sizes", default=None, help="comma-separated m of the inference rows (default "
                                                        f"{','.join(map(str, INFER_SIZES))})")
    p.add_argument("--peer-tune", type=int, default=None,
                   help="tuning steps a chain of the inference peer (default: its sampler's own, nutpie 300)")
    p.add_argument("--svm-sizes", default=None,
                   help="comma-separated n: only the Huber-hinge and logistic kernel-machine rows at these sizes (e.g. "
                        "100000,300000; the hinge solver's public count n/slack makes n >= 10^5 refused)")
    a = p.parse_args(argv)
    if a.infer_sizes:
        INFER_SIZES = tuple(int(v) for v in a.infer_sizes.split(","))
    res = run(a.quick, tuple(a.only.split(",")), a.repeats,
              svm_sizes=[int(float(v)) for v in a.svm_sizes.split(",")] if a.svm_sizes else None,
              peer_tune=a.peer_tune)
    print(res["table"])
    write_results("bench_peers_families", res, quick=a.quick, out=a.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
