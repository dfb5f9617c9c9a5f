"""Frequentist coverage of noise-aware bands for private kernel machines: data → fit → release → infer.

The computation behind ``benchmarks/bench_coverage_svm.py`` and ``tests/inference/test_machine.py``.
One replicate (:func:`machine_replicate`):

1. simulate ``n`` labelled records: ``x ~ U(0, 1)``, ``y = sign(sin(3π x) + 0.5 e)``, ``e ~ N(0, 1)``
   (a two-boundary problem with label noise; the design is the project's);
2. fit the hinge-loss kernel machine (Gaussian kernel, Hall's convention, bandwidth 0.1, λ = 0.02,
   solver slack 0.1, no intercept; :class:`fdp_ppl.machine.ERMSpec`) and release it **once** with
   ``GaussianMechanism(ε, δ = 1e-5, "analytic")`` on a 100-point grid (:func:`fdp_ppl.release`);
3. run :func:`fdp_ppl.inference.machine.infer_machine` on the release (default prior: the RKHS ball);
4. score the 90% ETI band against the **non-private minimiser** ``f̂`` on the grid (``fit.decision``:
   the study may use it, the inference never sees it): the share of grid points covered; and the
   posterior sign-agreement probabilities against whether ``sign f̂ = sign f̃`` actually held.

``noise_factor`` rescales the release's stored noise scales before inference: a likelihood whose noise
scale is off by that factor (``√2`` and ``1/√2`` must move the coverage out of 85–95%).
Grid points of one replicate are strongly correlated (smooth GP noise): the spread over replicates,
not the number of grid points, sets the precision (``coverage_se`` is the standard error over replicates).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from fdp_ppl.machine import ERMSpec
import fdp_ppl as fp
from fdp_ppl.noise.mechanisms import ICLP, GaussianMechanism
from fdp_ppl.releasing.schema import CONSTANT_DATA, NOISE_SCALE
from fdp_ppl.spaces import Gaussian

CI_PROB = 0.9
EPSILONS = (0.5, 1.0, 4.0)
DELTA = 1e-5
DESIGN = {"n": 200, "bandwidth": 0.1, "lam": 0.02, "solver_slack": 0.1, "grid_size": 100, "loss": "hinge"}


def simulate_records(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``x ~ U(0, 1)`` (n,) and labels ``sign(sin(3π x) + 0.5 e)`` in {−1, +1} (n,)."""
    x = rng.uniform(0.0, 1.0, n)
    y = np.where(np.sin(3 * np.pi * x) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return x, y


def machine_spec(**overrides) -> ERMSpec:
    """The study's public spec (:data:`DESIGN`, overridable; ``eta=2`` for the ICLP mechanism)."""
    d = {**DESIGN, **overrides}
    return ERMSpec(Gaussian(d["bandwidth"], convention="hall"), lam=d["lam"], n=d["n"], loss=d["loss"],
                   grid_size=d["grid_size"], solver_slack=d["solver_slack"], eta=d.get("eta"))


def study_mechanism(name: str, epsilon: float):
    """``"gp"``: ``GaussianMechanism(ε, DELTA, "analytic")``; ``"iclp"``: ``ICLP(ε)`` (spec with ``eta=2``)."""
    if name == "gp":
        return GaussianMechanism(epsilon, DELTA, "analytic")
    if name == "iclp":
        return ICLP(epsilon)
    raise ValueError(f"mechanism must be 'gp' or 'iclp', got {name!r}")


def with_noise_factor(release, factor: float):
    """A copy of a release whose stored noise scales are multiplied by ``factor`` (a misspecified likelihood)."""
    out = release.copy(deep=True)
    const = out[CONSTANT_DATA].to_dataset()
    const[NOISE_SCALE] = const[NOISE_SCALE] * float(factor)
    out[CONSTANT_DATA] = const
    return out


def machine_replicate(epsilon: float, seed: int, *, noise_factors=(1.0,), draws: int = 500, chains: int = 2,
                      prior="rkhs-ball", spec: ERMSpec | None = None, mechanism: str = "gp") -> list[dict]:
    """One data set, one fit, one release; one row per ``noise_factor`` (see the module docstring).

    Returns
    -------
    list of dict
        ``epsilon``, ``seed``, ``noise_factor``, ``coverage`` (share of grid points in the band),
        ``width`` (mean band width), ``coef_coverage`` (share of the release's eigen-coefficients of ``f̂``
        inside their 90% posterior intervals: independent across coefficients, so a sharper check of the
        likelihood's scale), ``agree_prob`` (mean posterior sign-agreement probability),
        ``agree_rate`` (share of grid points where ``sign f̂ = sign f̃``), ``sigma`` (release attr ``noise_scale``:
        σ for GP noise, Δ_{1,C}/ε for ICLP),
        ``norm`` (``‖f̂‖_H``), ``radius`` (prior R), ``infer_s`` (wall time of the inference).
    """
    from fdp_ppl.inference.machine import decision_band, infer_machine, machine_posterior, sign_agreement

    spec = spec or machine_spec(**({"eta": 2.0} if mechanism == "iclp" else {}))
    rng = np.random.default_rng(seed)
    x, y = simulate_records(spec.n, rng)
    fit = spec.fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded study releases warn by design
        release = fp.release(fit, study_mechanism(mechanism, epsilon), random_seed=seed, study=True)
    truth = fit.decision(spec.points)
    released = release["posterior"]["decision"].values.reshape(-1)
    rows = []
    for factor in noise_factors:
        rel = release if factor == 1.0 else with_noise_factor(release, factor)
        t0 = time.perf_counter()
        tree = infer_machine(rel, prior, draws=draws, chains=chains, random_seed=seed + 1)
        elapsed = time.perf_counter() - t0
        band = decision_band(tree, ci_prob=CI_PROB, ci_kind="eti")
        lo, hi = band["lower"].values.reshape(-1), band["upper"].values.reshape(-1)
        agree = sign_agreement(tree).values.reshape(-1)
        # the same check in the release's eigen-coordinates, where the r coefficients are independent
        basis = machine_posterior(rel).basis
        coefs = basis.coefficients(tree["posterior"]["decision"].values.reshape(-1, truth.size))
        clo, chi = np.quantile(coefs, [(1 - CI_PROB) / 2, (1 + CI_PROB) / 2], axis=0)
        ctruth = basis.coefficients(truth)
        rows.append({"epsilon": float(epsilon), "seed": int(seed), "noise_factor": float(factor),
                     "coverage": float(np.mean((lo <= truth) & (truth <= hi))), "width": float(np.mean(hi - lo)),
                     "coef_coverage": float(np.mean((clo <= ctruth) & (ctruth <= chi))),
                     "agree_prob": float(np.mean(agree)),
                     "agree_rate": float(np.mean(np.sign(truth) == np.sign(released))),
                     "sigma": float(release.attrs["noise_scale"]), "norm": fit.rkhs_norm(),
                     "radius": float(tree.attrs["prior_radius"]) if tree.attrs["prior_radius"] != "none" else np.inf,
                     "infer_s": elapsed})
    return rows


def run_machine_coverage(epsilons=EPSILONS, replicates: int = 40, *, noise_factors=(1.0,), draws: int = 500,
                         seed: int = 0, **kwargs) -> pd.DataFrame:
    """Replicates × ε (× noise factor) rows of :func:`machine_replicate` as a DataFrame."""
    from fdp_ppl.settings import blas_threads

    rows = []
    with blas_threads():  # small dense problems: one BLAS thread each is faster on shared cores
        for i, eps in enumerate(epsilons):  # independent data sets and noise per epsilon
            for r in range(int(replicates)):
                rows += machine_replicate(eps, seed * 100_000 + i * 10_000 + r, noise_factors=noise_factors,
                                          draws=draws, **kwargs)
    return pd.DataFrame(rows)


def summarise_machine_coverage(df: pd.DataFrame) -> pd.DataFrame:
    """Per (ε, noise factor): replicates, mean coverage and its standard error over replicates, mean band
    width, mean posterior sign-agreement probability against the realised agreement rate, σ, mean ‖f̂‖_H."""
    g = df.groupby(["epsilon", "noise_factor"])
    out = g.agg(replicates=("coverage", "size"), coverage=("coverage", "mean"), coverage_sd=("coverage", "std"),
                coef_coverage=("coef_coverage", "mean"),
                width=("width", "mean"), agree_prob=("agree_prob", "mean"), agree_rate=("agree_rate", "mean"),
                sigma=("sigma", "mean"), norm=("norm", "mean"), radius=("radius", "mean"),
                infer_s=("infer_s", "mean")).reset_index()
    out["coverage_se"] = out["coverage_sd"] / np.sqrt(out["replicates"])
    return out.drop(columns="coverage_sd")


__all__ = ["CI_PROB", "DELTA", "DESIGN", "EPSILONS", "machine_replicate", "machine_spec", "run_machine_coverage",
           "simulate_records", "study_mechanism", "summarise_machine_coverage", "with_noise_factor"]
