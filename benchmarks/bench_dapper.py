#!/usr/bin/env python
"""Benchmark: population inference from a mean release — :func:`fdp_ppl.observe` + NUTS against the record-wise
data-augmentation Metropolis-within-Gibbs sampler of the noise-aware literature (the ``dapper`` construction).

The model (one population, one release; clipping does not bind, so both samplers target the same posterior):

* curves ``X_i ~ N(β·1, σ² K₀)`` on a 12-point grid, ``K₀`` a Matérn-3/2 covariance (lengthscale 0.3, public),
  priors ``β ~ N(0, 2²)``, ``σ² ~ InvGamma(3, 1)``; truth β = 0.5, σ = 0.5;
* the release: the FRL mean (``M`` = 6 coefficients, τ = 6, no curve clipped) of n curves with the Gaussian
  mechanism (ε = 1, δ = 1e-5), a study release (seeded).

Ours: ``fp.observe(release, mean=β·1, covariance=σ² K₀)`` inside ``pm.Model``, NUTS (PyMC's sampler, 2 chains).
Its likelihood is the released mean's exact law given (β, σ²): n enters as a number.

Baseline (``dapper``: Ju, Awan, Gong & Rao 2022, the R package's construction): the n confidential records (their
J coefficients ``c_i = S A X_i``) are latent. One sweep updates each record in turn by a Metropolis step whose
proposal is the population law, ``c_i* ~ N(β u, σ² C₀)``, accepted with the ratio of the release's noise density at
the two summaries (``s* = s + (c_i* − c_i)/n``) — the record-wise step of the paper — then draws β and σ² from their
exact conditionals given the records (conjugate). The record loop is compiled with numba, so the baseline is as fast
as that construction can be written; it is written here from the construction, not from the R code.

Printed: CPU seconds (wall beside them), the smallest bulk ESS of (β, σ²) and ESS per CPU second of each sampler
(ours with its model compile, the baseline after its numba compile), the ratio, and whether the
posterior means agree within 0.1 posterior sd (the baseline run long enough for its Monte Carlo error to allow it).
At n = 10⁵ only ours is run (the baseline's sweep is O(n J²) and its mixing slows with n).

With ``--tau 0.8`` clipping binds (~29% of curves clipped): the baseline's latent records are then whole curves (their
norm sets the clipping) and every step recomputes the exact clipped statistic, so it targets the exact posterior of
the clipped release; ours uses ``clipping="moments"`` (the clipped mean's central limit theorem with its moments by
quadrature): the comparison measures that approximation (``results/bench_dapper_clipped.json``).

Usage::

    python benchmarks/bench_dapper.py            # n = 1000 both, n = 100000 ours (a few minutes)
    python benchmarks/bench_dapper.py --quick    # shorter chains
    python benchmarks/bench_dapper.py --tau 0.8  # clipping binding
    python benchmarks/bench_dapper.py --sampler nutpie   # ours with nutpie (results/bench_dapper_nutpie.json)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import _common  # noqa: F401  (puts this checkout first on sys.path)

K, M, TAU, EPS, DELTA = 12, 6, 6.0, 1.0, 1e-5
BETA, SIGMA = 0.5, 0.5
PRIOR_BETA_SD, IG_A, IG_B = 2.0, 3.0, 1.0


def matern32(d, ell=0.3):
    import numpy as np

    r = np.sqrt(3.0) * d / ell
    return (1 + r) * np.exp(-r)


def make_release(n: int, seed: int = 0, tau: float = TAU, parts: bool = False):
    """The study release of n curves and its public parts ``(tree, K₀, u = S A 1, C₀ = S A K₀ Aᵀ S, y, b)``; with
    ``parts`` also ``(S A, quadrature weights, share of curves clipped)`` (the map from a curve to its released
    coefficients, the clipping norm's weights, and the data holder's count: for the printout only)."""
    import numpy as np

    import fdp_ppl as fp
    from fdp_ppl.inference.infer import _shrinkage
    from fdp_ppl.releasing import schema as S

    grid = fp.Grid.uniform(K)
    K0 = matern32(np.abs(grid.t[:, None] - grid.t[None, :])) + 1e-9 * np.eye(K)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    rng = np.random.default_rng(seed)
    X = BETA + SIGMA * rng.standard_normal((n, K)) @ np.linalg.cholesky(K0).T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fp.frl_mean(X, basis, tau=tau, M=M)
        tree = fp.release(fit, fp.GaussianMechanism(EPS, DELTA), random_seed=seed + 1, study=True)
    view = S.read_release(tree)
    SA = _shrinkage(view)[:, None] * view.grid_to_coefficients()
    assert np.allclose(view.offset if getattr(view, "offset", None) is not None else 0.0, 0.0)
    out = (tree, K0, SA @ np.ones(K), SA @ K0 @ SA.T, np.asarray(view.released(0), float), np.asarray(view.noise_scale))
    if not parts:
        return out
    norms = np.sqrt((X * X) @ grid.weights)
    clipped = X * np.minimum(1.0, tau / norms)[:, None]
    # the baseline's clipping is the release's own, to rounding (checked, not assumed)
    assert np.allclose(view.grid_to_coefficients() @ clipped.mean(axis=0), fit.coefficients, rtol=0, atol=1e-12)
    return out + (SA, np.asarray(grid.weights, float), float(np.mean(norms > tau)))


def run_ours(tree, K0, draws: int, tune: int, seed: int, clipping: str = "auto", sampler: str = "pymc"):
    """``fp.observe`` + NUTS, 2 chains: PyMC's sampler (model compile on the clock) or nutpie's (its numba compile
    timed apart, ``compile_cpu_seconds``, as the baseline's numba compile is)."""
    import arviz as az
    import numpy as np
    import pymc as pm

    import fdp_ppl as fp

    t0, c0 = time.perf_counter(), time.process_time()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, PRIOR_BETA_SD)
        sigma2 = pm.InverseGamma("sigma2", IG_A, IG_B)
        fp.observe(tree, mean=beta * np.ones(K), covariance=sigma2 * K0, name="mean_release", clipping=clipping)
    compile_cpu = 0.0
    if sampler == "nutpie":
        import nutpie

        compiled = nutpie.compile_pymc_model(model)
        compile_cpu = time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=2, cores=1, seed=seed, progress_bar=False)
    else:
        with model:
            idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    post = idata["posterior"]
    ess = az.ess(idata, var_names=["beta", "sigma2"], method="bulk")
    mcse = az.mcse(idata, var_names=["beta", "sigma2"], method="mean")
    return {"sampler": sampler, "seconds": seconds, "cpu_seconds": cpu, "compile_cpu_seconds": compile_cpu,
            "ess": {v: float(ess[v]) for v in ("beta", "sigma2")},
            "mcse": {v: float(mcse[v]) for v in ("beta", "sigma2")},
            "mean": {v: float(post[v].mean()) for v in ("beta", "sigma2")},
            "sd": {v: float(post[v].std()) for v in ("beta", "sigma2")},
            "divergences": int(idata["sample_stats"]["diverging"].sum())}


def _sweeps():
    """The compiled record-wise Metropolis pass (numba when present)."""
    from fdp_ppl._numba import njit

    @njit(cache=False)
    def sweep(c, s, y, inv_var, mean, L, n, z, logu):  # pragma: no cover - compiled
        J = c.shape[1]
        accepted = 0
        for i in range(c.shape[0]):
            prop = mean.copy()
            for a in range(J):
                acc = 0.0
                for b in range(a + 1):
                    acc += L[a, b] * z[i, b]
                prop[a] += acc
            dlog = 0.0
            for a in range(J):
                new = s[a] + (prop[a] - c[i, a]) / n
                dlog += -0.5 * inv_var[a] * ((y[a] - new) ** 2 - (y[a] - s[a]) ** 2)
            if logu[i] < dlog:
                for a in range(J):
                    s[a] += (prop[a] - c[i, a]) / n
                    c[i, a] = prop[a]
                accepted += 1
        return accepted

    return sweep


def grid_posterior(K0, SA, w, tau, y, b, n: int, draws: int = 20_000, seed: int = 5) -> dict:
    """A third opinion on the release's posterior, by brute force: on a 61 × 60 grid of (β, log σ²) the
    likelihood of the released coefficients is the central limit theorem's for the clipped mean of n curves (exact to
    O(1/√n) in its shape), ``N(y; E[S A clip_τ X], Cov[S A clip_τ X]/n + diag b²)``, its two moments by Monte Carlo
    over ``draws`` curves (common random numbers across the grid); times the priors. ``tau=None`` (no clipping
    modelled, as both samplers assume then): the exact ``N(y; S A β1, σ² S A K₀ Aᵀ S/n + diag b²)``. Posterior mean
    and sd of β, σ²."""
    import numpy as np
    from scipy import stats

    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((draws, K0.shape[0])) @ np.linalg.cholesky(K0).T
    betas = np.linspace(-0.3, 1.7, 61)
    s2s = np.exp(np.linspace(np.log(0.03), np.log(8.0), 60))
    ll = np.empty((betas.size, s2s.size))
    for j, s2 in enumerate(s2s):
        for i, bt in enumerate(betas):
            if tau is None:  # no clipping modelled: the released mean's exact law, no Monte Carlo
                m, C = SA @ (bt * np.ones(K0.shape[0])), s2 * SA @ K0 @ SA.T
            else:
                X = bt + math.sqrt(s2) * Z
                c = (X * np.minimum(1.0, tau / np.sqrt((X * X) @ w))[:, None]) @ SA.T
                m, C = c.mean(axis=0), np.cov(c.T)
            ll[i, j] = stats.multivariate_normal.logpdf(y, m, C / n + np.diag(b**2))
    # priors; the grid is uniform in log σ², hence the Jacobian σ²
    lp = (ll + stats.norm.logpdf(betas, 0, PRIOR_BETA_SD)[:, None]
          + (stats.invgamma.logpdf(s2s, IG_A, scale=IG_B) + np.log(s2s))[None, :])
    p = np.exp(lp - lp.max())
    p /= p.sum()
    out = {}
    for v, grid, marg in (("beta", betas, p.sum(axis=1)), ("sigma2", s2s, p.sum(axis=0))):
        mean = float(marg @ grid)
        out[v] = (mean, float(np.sqrt(marg @ (grid - mean) ** 2)))
    return {"mean": {v: m for v, (m, _) in out.items()}, "sd": {v: sd for v, (_, sd) in out.items()},
            "grid": "beta -0.3..1.7 (61), sigma2 0.03..8 log-spaced (60)", "moment_draws": draws}


def _chain_summary(out: dict, seconds: float, sweeps: int, acceptance: float, cpu: float) -> dict:
    """Seconds, bulk ESS, MCSE, mean and sd of the second half of the baseline's chains ``out[v]`` (chains, sweeps)."""
    import arviz as az

    burn = sweeps // 2
    kept = {v: a[:, burn:] for v, a in out.items()}
    ess = {v: float(az.ess(a, method="bulk")) for v, a in kept.items()}
    mcse = {v: float(az.mcse(a, method="mean")) for v, a in kept.items()}
    return {"seconds": seconds, "cpu_seconds": cpu, "ess": ess, "mcse": mcse, "mean": {v: float(a.mean()) for v, a in kept.items()},
            "sd": {v: float(a.std()) for v, a in kept.items()}, "sweeps": sweeps, "burn_in": burn,
            "record_acceptance": acceptance}


def _clipped_sweeps():
    """The compiled record-wise Metropolis pass with clipping: the latent records are whole curves (their norm sets
    the clipping), each carried with its clipped curve's released coefficients ``S A clip_τ(X_i)``."""
    import numpy as np

    from fdp_ppl._numba import njit

    @njit(cache=False)
    def sweep(X, cc, s, y, inv_var, mean, L, n, z, logu, SA, w, tau):  # pragma: no cover - compiled
        K, J = X.shape[1], SA.shape[0]
        accepted = 0
        prop = np.empty(K)
        pc = np.empty(J)
        for i in range(X.shape[0]):
            sq = 0.0
            for a in range(K):
                acc = mean[a]
                for b in range(a + 1):
                    acc += L[a, b] * z[i, b]
                prop[a] = acc
                sq += w[a] * acc * acc
            f = min(1.0, tau / np.sqrt(sq))
            dlog = 0.0
            for j in range(J):
                acc = 0.0
                for a in range(K):
                    acc += SA[j, a] * prop[a]
                pc[j] = f * acc
                new = s[j] + (pc[j] - cc[i, j]) / n
                dlog += -0.5 * inv_var[j] * ((y[j] - new) ** 2 - (y[j] - s[j]) ** 2)
            if logu[i] < dlog:
                for j in range(J):
                    s[j] += (pc[j] - cc[i, j]) / n
                    cc[i, j] = pc[j]
                for a in range(K):
                    X[i, a] = prop[a]
                accepted += 1
        return accepted

    return sweep


def run_dapper_clipped(n, K0, SA, w, tau, y, b, sweeps: int, seed: int, chains: int = 2):
    """The record-wise sampler with clipping binding: latent curves ``X_i ~ N(β 1, σ² K₀)`` (K points), the released
    statistic ``S A mean_i clip_τ(X_i)`` recomputed exactly at every step (no approximation: the target is the
    exact posterior of the clipped release), β and σ² from their conjugate conditionals given the curves."""
    import numpy as np

    sweep = _clipped_sweeps()
    Kp = K0.shape[0]
    K0inv = np.linalg.inv(K0)
    L0 = np.linalg.cholesky(K0)
    ones = np.ones(Kp)
    quad_1 = float(ones @ K0inv @ ones)
    inv_var = 1.0 / b**2

    def coefficients(X):
        norms = np.sqrt((X * X) @ w)
        return (X * np.minimum(1.0, tau / norms)[:, None]) @ SA.T

    out = {"beta": np.empty((chains, sweeps)), "sigma2": np.empty((chains, sweeps))}
    sweep(np.ones((1, Kp)), np.zeros((1, SA.shape[0])), np.zeros(SA.shape[0]), y, inv_var, np.ones(Kp), L0, float(n),
          np.zeros((1, Kp)), np.zeros(1), SA, w, tau)  # compile (a curve of norm 1: no division by 0)
    t0, c0 = time.perf_counter(), time.process_time()
    acc_total = 0
    for ch in range(chains):
        rng = np.random.default_rng(seed + ch)
        beta, sigma2 = rng.normal(0, PRIOR_BETA_SD), 1.0 / rng.gamma(IG_A, 1.0 / IG_B)
        X = beta + np.sqrt(sigma2) * rng.standard_normal((n, Kp)) @ L0.T
        cc = coefficients(X)
        s = cc.mean(axis=0)
        for it in range(sweeps):
            acc_total += sweep(X, cc, s, y, inv_var, beta * ones, np.sqrt(sigma2) * L0, float(n),
                               rng.standard_normal((n, Kp)), np.log(rng.uniform(size=n)), SA, w, tau)
            s = cc.mean(axis=0)  # re-anchor the running sum (rounding)
            prec = n * quad_1 / sigma2 + 1.0 / PRIOR_BETA_SD**2
            beta = rng.normal(float(ones @ K0inv @ X.sum(axis=0)) / sigma2 / prec, 1.0 / np.sqrt(prec))
            r = X - beta
            ss = float(np.einsum("ij,jk,ik->", r, K0inv, r))
            sigma2 = 1.0 / rng.gamma(IG_A + n * Kp / 2.0, 1.0 / (IG_B + ss / 2.0))
            out["beta"][ch, it], out["sigma2"][ch, it] = beta, sigma2
    return _chain_summary(out, time.perf_counter() - t0, sweeps, acc_total / (chains * sweeps * n),
                          time.process_time() - c0)


def run_dapper(n, u, C0, y, b, sweeps: int, seed: int, chains: int = 2):
    """The record-wise data-augmentation sampler (module docstring); chains start at the prior's draw of records."""
    import numpy as np

    sweep = _sweeps()
    J = u.size
    C0inv = np.linalg.inv(C0)
    L0 = np.linalg.cholesky(C0)
    inv_var = 1.0 / b**2
    quad_u = float(u @ C0inv @ u)
    out = {"beta": np.empty((chains, sweeps)), "sigma2": np.empty((chains, sweeps))}
    sweep(np.zeros((1, J)), np.zeros(J), y, inv_var, np.zeros(J), L0, float(n), np.zeros((1, J)), np.zeros(1))  # compile
    t0, c0 = time.perf_counter(), time.process_time()
    acc_total = 0
    for ch in range(chains):
        rng = np.random.default_rng(seed + ch)
        beta, sigma2 = rng.normal(0, PRIOR_BETA_SD), 1.0 / rng.gamma(IG_A, 1.0 / IG_B)
        c = beta * u + np.sqrt(sigma2) * rng.standard_normal((n, J)) @ L0.T
        s = c.mean(axis=0)
        for it in range(sweeps):
            L = np.sqrt(sigma2) * L0
            acc_total += sweep(c, s, y, inv_var, beta * u, L, float(n), rng.standard_normal((n, J)),
                               np.log(rng.uniform(size=n)))
            s = c.mean(axis=0)  # re-anchor the running sum (rounding)
            csum = c.sum(axis=0)
            prec = n * quad_u / sigma2 + 1.0 / PRIOR_BETA_SD**2
            beta = rng.normal(float(u @ C0inv @ csum) / sigma2 / prec, 1.0 / np.sqrt(prec))
            r = c - beta * u
            ss = float(np.einsum("ij,jk,ik->", r, C0inv, r))
            sigma2 = 1.0 / rng.gamma(IG_A + n * J / 2.0, 1.0 / (IG_B + ss / 2.0))
            out["beta"][ch, it], out["sigma2"][ch, it] = beta, sigma2
    return _chain_summary(out, time.perf_counter() - t0, sweeps, acc_total / (chains * sweeps * n),
                          time.process_time() - c0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="shorter chains; writes results/bench_dapper_quick.json")
    p.add_argument("--n", type=int, default=1000, help="records for the head-to-head (default 1000)")
    p.add_argument("--large-n", type=int, default=100_000, help="records for ours alone (default 100000)")
    p.add_argument("--tau", type=float, default=TAU,
                   help=f"clipping bound of the release (default {TAU:g}: no curve clipped; 0.8 clips ~29%%: the baseline "
                        "then carries whole latent curves and the exact clipped statistic, ours clipping='moments')")
    p.add_argument("--sampler", default="pymc", choices=("pymc", "nutpie"),
                   help="ours: PyMC's NUTS (model compile on the clock) or nutpie's (its compile timed apart)")
    p.add_argument("--sweeps", type=int, default=None, help="baseline sweeps per chain (default 20000; --quick 4000)")
    p.add_argument("--baseline-only", action="store_true",
                   help="run only the record-wise baseline at --n (e.g. a long run: --sweeps 400000 --seed 11)")
    p.add_argument("--seed", type=int, default=2, help="the baseline's seed (default 2)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if not (10 <= a.n <= 10**6 and 10 <= a.large_n <= 10**8):
        p.error("--n must lie in [10, 1e6] and --large-n in [10, 1e8]")
    os.environ.setdefault("FDP_PPL_FAST", "1")
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    warnings.simplefilter("ignore")
    import numpy as np

    from _common import write_results

    draws, tune, sweeps = (500, 500, 4000) if a.quick else (1000, 1000, 20000)
    sweeps = a.sweeps or sweeps
    print(f"load average {os.getloadavg()[0]:.2f}; n = {a.n}: ours {draws} draws x 2 chains, baseline {sweeps} "
          f"sweeps x 2 chains (half burn-in)")
    clipped = a.tau != TAU
    tree, K0, u, C0, y, b, SA, w, share = make_release(a.n, tau=a.tau, parts=True)
    print(f"tau = {a.tau:g}: {100 * share:.0f}% of the n = {a.n} curves clipped")
    base = (run_dapper_clipped(a.n, K0, SA, w, a.tau, y, b, sweeps, seed=a.seed) if clipped else
            run_dapper(a.n, u, C0, y, b, sweeps, seed=a.seed))
    if a.baseline_only:
        print(f"record-wise DA-MwG n={a.n}: {base['cpu_seconds']:.1f} CPU s, {2 * sweeps} sweeps, bulk ESS "
              f"{base['ess']}, beta {base['mean']['beta']:.4f} ± {base['sd']['beta']:.4f} (mcse "
              f"{base['mcse']['beta']:.4f}), sigma2 {base['mean']['sigma2']:.4f} ± {base['sd']['sigma2']:.4f} (mcse "
              f"{base['mcse']['sigma2']:.4f})")
        write_results("bench_dapper_baseline", {"n": a.n, "tau": a.tau, "seed": a.seed, "baseline": base},
                      quick=a.quick, out=a.out)
        return 0
    ours = run_ours(tree, K0, draws, tune, seed=1, clipping="moments" if clipped else "auto", sampler=a.sampler)
    rows = []
    for name, r in ((f"fp.observe + {a.sampler} NUTS", ours), ("record-wise DA-MwG (dapper)", base)):
        ess = min(r["ess"].values())
        r["min_ess_per_s"] = ess / r["cpu_seconds"]  # per CPU second (the machine is shared: wall time varies)
        rows.append(r)
        print(f"{name:28s} n={a.n:7d}: {r['cpu_seconds']:7.1f} CPU s ({r['seconds']:.1f} s wall), min bulk ESS "
              f"{ess:8.1f}, ESS per CPU s {r['min_ess_per_s']:9.2f}; "
              f"beta {r['mean']['beta']:.4f} ± {r['sd']['beta']:.4f}, sigma2 {r['mean']['sigma2']:.4f} ± "
              f"{r['sd']['sigma2']:.4f}" + (f"; record acceptance {r['record_acceptance']:.3f}"
                                            if "record_acceptance" in r else ""))
    ratio = ours["min_ess_per_s"] / base["min_ess_per_s"]
    agree = {v: abs(ours["mean"][v] - base["mean"][v]) / ours["sd"][v] for v in ("beta", "sigma2")}
    # the two Monte Carlo errors of the difference, in posterior sd: a difference within 0.1 sd + 2 of them is
    # what the chains can resolve (the baseline's ESS is small)
    mc = {v: 2 * float(np.hypot(ours["mcse"][v], base["mcse"][v])) / ours["sd"][v] for v in ("beta", "sigma2")}
    print(f"ESS/s ratio ours / baseline: {ratio:.0f}x (target >= 100x: {'met' if ratio >= 100 else 'missed'}); "
          f"|mean difference| / posterior sd: beta {agree['beta']:.3f} (2 MC se {mc['beta']:.3f}), sigma2 "
          f"{agree['sigma2']:.3f} (2 MC se {mc['sigma2']:.3f}) (target <= 0.1 + 2 MC se: "
          f"{'met' if all(agree[v] <= 0.1 + mc[v] for v in agree) else 'missed'})")
    # a third opinion: the likelihood on a grid (grid_posterior; exact without clipping, CLT with Monte Carlo moments
    # with clipping)
    grid = grid_posterior(K0, SA, w, a.tau if clipped else None, y, b, a.n)
    gap = {f"{name} vs grid": {v: abs(r["mean"][v] - grid["mean"][v]) / grid["sd"][v] for v in ("beta", "sigma2")}
           for name, r in (("ours", ours), ("baseline", base))}
    print(f"grid posterior ({'CLT likelihood, Monte Carlo moments' if clipped else 'exact likelihood'}): beta "
          f"{grid['mean']['beta']:.4f} ± {grid['sd']['beta']:.4f}, sigma2 {grid['mean']['sigma2']:.4f} ± "
          f"{grid['sd']['sigma2']:.4f}; "
          + "; ".join(f"|mean difference| / grid sd, {k}: beta {g['beta']:.3f}, sigma2 {g['sigma2']:.3f}"
                      for k, g in gap.items()))
    grid["mean_difference_in_grid_sd"] = gap
    tree_l, K0_l, *_ = make_release(a.large_n, seed=3, tau=a.tau)
    large = run_ours(tree_l, K0_l, draws, tune, seed=4, clipping="moments" if clipped else "auto", sampler=a.sampler)
    print(f"fp.observe + NUTS n={a.large_n}: {large['cpu_seconds']:.1f} CPU s, min bulk ESS {min(large['ess'].values()):.0f}, "
          f"beta {large['mean']['beta']:.4f} ± {large['sd']['beta']:.4f} (truth {BETA}), sigma2 "
          f"{large['mean']['sigma2']:.4f} ± {large['sd']['sigma2']:.4f} (truth {SIGMA**2}), "
          f"divergences {large['divergences']}")
    write_results(("bench_dapper_clipped" if clipped else "bench_dapper") + ("_nutpie" if a.sampler == "nutpie" else ""),
                  {"n": a.n, "tau": a.tau, "sampler": a.sampler,
                                   "share_clipped": share, "grid_posterior": grid, "ours": ours, "baseline": base, "ess_per_s_ratio": ratio,
                                   "mean_difference_in_sd": agree, "two_mc_se_in_sd": mc, "large_n": a.large_n, "ours_large": large,
                                   "load_average_end": list(os.getloadavg()),
                                   "truth": {"beta": BETA, "sigma2": SIGMA**2}, "design": {"K": K, "M": M, "tau": TAU,
                                   "epsilon": EPS, "delta": DELTA}}, quick=a.quick, out=a.out)
    _ = np
    return 0


if __name__ == "__main__":
    sys.exit(main())
