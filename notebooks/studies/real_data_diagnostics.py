"""Lin & Reimherr (2026), Table 2: what the printed numbers say and why ours differ.

Diagnostics of the Table 2 reproduction of :mod:`studies.real_data` (which computes the table): the
ε-decay and kernel dependence read from the printed numbers alone, the reading of the table's columns
and ε labels that fits best, the FRL error floor that identifies the paper's truncation, the
discrepancies with their reasons, the standard-error comparison, the search for the ICLP calibration
that reproduces the paper, and the notebook's opening "at a glance" table.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd

from .real_data import (COLUMN_READINGS, DATASETS, KERNELS, MECHANISMS, PAPER_EPSILONS, PAPER_READING, PAPER_TABLE2,
                        SETTINGS, exact_error, paper_value, prepare, standardise_curves)


# ----------------------------------------------------------------------------- what the paper's numbers say
def paper_difference_ratios() -> pd.DataFrame:
    """Floor-free ε-decay diagnostic from the printed numbers alone.

    For a Laplace mechanism ``E‖μ̃ − X̄‖² = a + b/ε²``; successive
    differences ``D_i = v_i − v_{i+1}`` cancel the floor ``a``, and
    ``D_i/D_{i+1}`` depends only on the ε grid: 4 for a doubling grid
    (electricity's 1/8 … 4) and 2.86, 2.16, 1.75, 1.56 for DTI's printed
    labels 2, 3, …, 7. Returns one row per (dataset, kernel, printed column)
    with the observed ratios and both expectations.
    """
    rows = []
    for ds, by_k in PAPER_TABLE2.items():
        e = np.asarray(PAPER_EPSILONS[ds])
        inv = 1.0 / e**2
        expected_printed = (inv[:-2] - inv[1:-1]) / (inv[1:-1] - inv[2:])
        for k, cols in by_k.items():
            for col, (vals, _) in cols.items():
                v = np.asarray(vals)
                dif = v[:-1] - v[1:]
                ratio = dif[:-1] / dif[1:]
                rows.append({"dataset": ds, "kernel": k, "printed_column": col,
                             **{f"D{i + 1}/D{i + 2}": r for i, r in enumerate(ratio)},
                             "median_ratio": float(np.median(ratio[:3])),
                             "expected_if_printed_eps": np.round(expected_printed, 2).tolist(),
                             "expected_if_doubling": 4.0})
    return pd.DataFrame(rows)


def paper_floor_kernel_dependence() -> pd.DataFrame:
    """Large-ε value of each printed column under C1.5 and C2.5.

    Bernstein does not use the kernel, so its error floor must be identical
    under both kernels; the eigenbasis mechanisms' floors differ.
    """
    rows = []
    for ds, by_k in PAPER_TABLE2.items():
        for col in MECHANISMS:
            a = by_k["C1.5"][col][0][-1]
            b = by_k["C2.5"][col][0][-1]
            rows.append({"dataset": ds, "printed_column": col, "last_row_C1.5": a, "last_row_C2.5": b,
                         "relative_difference": abs(a - b) / (0.5 * (a + b))})
    return pd.DataFrame(rows)


def column_reading_scores(df: pd.DataFrame, setting: str = "paper-reading", dti_epsilon_reading: str = "doubling",
                          bound: str | None = None) -> pd.DataFrame:
    """How well each assignment of printed columns to mechanisms matches our numbers.

    Score = median over cells of ``|log(ours_exact / paper)|`` (0 is a
    perfect match); computed per mechanism and overall, for every permutation
    of the three non-FRL columns. Named readings are those of
    :data:`COLUMN_READINGS`.
    """
    bound = bound or SETTINGS[setting].primary_bound
    sub = df[(df.setting == setting) & (df.bound == bound)]
    sub = sub[(sub.dataset != "dti") | (sub.epsilon_reading == dti_epsilon_reading)]
    names = {tuple(v[m] for m in MECHANISMS): k for k, v in COLUMN_READINGS.items()}
    rows = []
    others = ("iclp-ar", "iclp-qr", "bernstein")
    for perm in itertools.permutations(others):
        mapping = {"frl": "frl", **dict(zip(others, perm))}
        logs = {}
        for mech in MECHANISMS:
            s = sub[sub.mechanism == mech]
            paper = np.array([paper_value(r.dataset, r.kernel, mapping[mech], r.epsilon_label)[0]
                              for r in s.itertuples()])
            logs[mech] = np.abs(np.log(s["exact"].to_numpy() / paper))
        key = tuple(mapping[m] for m in MECHANISMS)
        rows.append({"reading": names.get(key, "other"),
                     "assignment": ", ".join(f"{m}<-{mapping[m]}" for m in MECHANISMS),
                     **{f"score_{m}": float(np.median(logs[m])) for m in MECHANISMS},
                     "score": float(np.median(np.concatenate(list(logs.values()))))})
    return pd.DataFrame(rows).sort_values("score").reset_index(drop=True)


def frl_floor_identification(Ms=range(1, 11), data_dir=None) -> pd.DataFrame:
    """FRL error floor ``‖P_M X̄ − X̄‖²`` for several M and normalisations
    against the paper's large-ε FRL values (the evidence for the
    ``paper-reading`` setting). The paper's floor is estimated from its last
    two rows as ``v_6 − (v_5 − v_6)/3`` (noise ∝ 1/ε², ε doubling)."""
    import fdp_ppl as fp

    from fdp_ppl.datasets import load_dataset

    rows = []
    for ds in DATASETS:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*dropped.*incomplete.*")
            raw = load_dataset(ds, "cca" if ds == "dti" else None, data_dir=data_dir, drop_incomplete=True)
        grid = fp.Grid.from_points(raw["t"].values, quadrature="uniform")
        x = raw.values
        variants = {
            "raw": x,
            "divided by max curve norm (data)": x / grid.norm(x).max(),
            "divided by max value (data)": x / np.abs(x).max(),
            "per-curve unit norm": x / grid.norm(x)[:, None],
            "per-curve standardised": standardise_curves(raw, grid.weights).values,
        }
        for k, nu in KERNELS.items():
            basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=nu), grid)
            paper_floor = paper_floor_and_noise(ds, k, "frl")[0]
            for name, arr in variants.items():
                xb = arr.mean(axis=0)
                c = basis.coefficients(xb)
                tot = float(grid.norm(xb) ** 2)
                for M in Ms:
                    floor = tot - float(np.sum(c[:M] ** 2))
                    rows.append({"dataset": ds, "kernel": k, "normalisation": name, "M": M, "floor": floor,
                                 "paper_floor": paper_floor, "ratio": floor / paper_floor})
    return pd.DataFrame(rows)


REASONS = {
    "normalisation": "The paper's numbers are in per-curve standardised units (its 'normalising the sample "
                     "trajectories'); raw MW or FA units give errors orders of magnitude apart.",
    "dti-epsilon": "DTI rows printed as eps = 2..7 decay by 4x per row, i.e. like a doubling eps grid "
                   "(eps = 1/8 ... 4, the electricity grid), not like 1/eps^2 for eps = 2..7.",
    "columns": "The printed ICLP-AR column has a kernel-independent floor equal to our Bernstein bias: it is "
               "the Bernstein mechanism; the printed Bernstein column (smallest, kernel-dependent) is ICLP-QR "
               "and the printed ICLP-QR column is ICLP-AR.",
    "frl": "FRL: the floor matches within ~1% with M = 4; the noise part is ~8% (DTI) / ~16% (electricity) "
           "above Theorem 12.1's 2M(2M tau/(n eps))^2 with tau = 1; the paper's exact n / tau are not reported.",
    "iclp-ar": "ICLP-AR: the paper does not report eta, psi or the sensitivity bound; PSS "
               "(eta = 2(1 + 2/beta), psi = 1/n, Theorem 12.2 bound) gives a different bias/noise split.",
    "iclp-qr": "ICLP-QR: the paper does not report eta, psi or the sensitivity bound; PSS "
               "(eta = 1 + 2/beta, psi = 1/n, Theorem 12.3 bound) gives more noise and more bias than the "
               "paper's (relabelled) QR column.",
    "bernstein": "Bernstein: the bias matches; the noise depends on tau_inf, which the paper does not report "
                 "(diffpriv's sensitivity sampler); tau_inf = max|z| reproduces DTI, electricity's noise is "
                 "higher in the paper.",
    "se": "The paper's standard errors are smaller than 100 x 1000 Laplace releases allow (the variance of a "
          "squared Laplace sum is fixed by its mean); their definition is not reported.",
}


def discrepancies(df: pd.DataFrame, setting: str = "paper-reading", reading: str = "cyclic",
                  dti_epsilon_reading: str = "doubling", tolerance: float = 0.05) -> pd.DataFrame:
    """Per (dataset, kernel, mechanism): largest relative difference from the
    paper under a column reading, whether it exceeds Monte Carlo error
    (``|ours − paper| > 3 sqrt(se_ours² + se_paper²)`` and more than
    ``tolerance`` relative), and the reason found."""
    bound = SETTINGS[setting].primary_bound
    sub = df[(df.setting == setting) & (df.bound == bound)]
    sub = sub[(sub.dataset != "dti") | (sub.epsilon_reading == dti_epsilon_reading)]
    rows = []
    for (ds, k, m), g in sub.groupby(["dataset", "kernel", "mechanism"], sort=False):
        paper = g[f"paper_{reading}"].to_numpy()
        pse = g[f"paper_se_e3_{reading}"].to_numpy() * 1e-3
        ours = g["exact"].to_numpy()
        se = np.nan_to_num(g["mc_se"].to_numpy())
        rel = ours / paper - 1
        beyond = (np.abs(ours - paper) > 3 * np.sqrt(se**2 + pse**2)) & (np.abs(rel) > tolerance)
        i = int(np.argmax(np.abs(rel)))
        rows.append({"dataset": ds, "kernel": k, "mechanism": m, "printed_column": COLUMN_READINGS[reading][m],
                     "max_abs_rel_diff": float(np.abs(rel[i])), "at_epsilon": float(g["epsilon"].to_numpy()[i]),
                     "median_rel_diff": float(np.median(rel)), "cells_beyond_mc_error": int(beyond.sum()),
                     "cells": int(len(g)), "reason": REASONS[m] if beyond.any() else "agrees within MC error / 5%"})
    return pd.DataFrame(rows)


def se_comparison(df: pd.DataFrame, setting: str = "paper-reading", reading: str = "cyclic",
                  dti_epsilon_reading: str = "doubling") -> pd.DataFrame:
    """Our Monte Carlo SEs next to the paper's (×1e-3): SE of the
    100 × 1000 mean, SE of one 1000-release estimate, and the paper's."""
    bound = SETTINGS[setting].primary_bound
    sub = df[(df.setting == setting) & (df.bound == bound)]
    sub = sub[(sub.dataset != "dti") | (sub.epsilon_reading == dti_epsilon_reading)].copy()
    sub["ours_se_e3"] = sub["mc_se"] * 1e3
    sub["ours_se_replicate_e3"] = sub["mc_se_replicate"] * 1e3
    sub["paper_se_e3"] = sub[f"paper_se_e3_{reading}"]
    sub["paper_over_ours_se"] = sub["paper_se_e3"] / sub["ours_se_e3"]
    return sub[["dataset", "kernel", "mechanism", "epsilon", "exact", "ours_se_e3", "ours_se_replicate_e3",
                "paper_se_e3", "paper_over_ours_se"]]


# ----------------------------------------------------------------------------- which calibration reproduces ICLP?
def paper_floor_and_noise(dataset: str, kernel: str, column: str) -> tuple[float, float]:
    """The printed column read as ``a + b/ε²`` on a doubling ε grid (1/8 … 4).

    ``a = v₆ − (v₅ − v₆)/3`` (the floor: the last two rows differ by ``3b/16``)
    and ``b = (v₁ − a)/64`` (the first row is ε = 1/8). For DTI this is the
    doubling reading of its ε labels (:data:`EPSILON_READINGS`).

    Returns
    -------
    (floor, noise_eps2) : tuple of float
        Squared bias and ``ε²·E‖ξ‖²`` implied by the printed numbers.
    """
    v = np.asarray(PAPER_TABLE2[dataset][kernel][column][0], dtype=float)
    floor = v[-1] - (v[-2] - v[-1]) / 3.0
    return float(floor), float((v[0] - floor) / 64.0)


def calibration_search(mechanisms=("iclp-qr", "iclp-ar"), *, etas=None, psis=None, bounds=("paper", "tight"),
                       datasets=DATASETS, kernels=tuple(KERNELS), column_reading: str = "cyclic",
                       data_dir=None) -> pd.DataFrame:
    """Which (η, ψ, sensitivity bound) reproduce the paper's ICLP columns?

    Under the paper-reading setting (per-curve standardisation, τ = 1), each
    candidate (η, ψ) gives an exact squared bias ``‖μ̂ − X̄‖²`` and an exact
    noise energy at ε = 1 for each sensitivity bound; the paper's column
    (``column_reading``) implies a floor and a noise level
    (:func:`paper_floor_and_noise`). The log-error of a candidate is
    ``hypot(log(bias²/floor), log(noise/noise_paper))``: 0 reproduces both.
    A row with ``tuning = "PSS"`` is the default tuning (ψ = 1/n, η from β).

    Parameters
    ----------
    mechanisms : sequence of {"iclp-qr", "iclp-ar"}
    etas : array_like, optional
        η > 1 candidates (default 40 values in [1.05, 3]).
    psis : array_like, optional
        ψ > 0 candidates (default 41 log-spaced values in [1e-5, 1]).
    bounds : sequence of {"paper", "tight"}
    datasets, kernels : sequences
    column_reading : str
        Key of :data:`COLUMN_READINGS`.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, kernel, mechanism, tuning, η, ψ, bound): ``n``,
        ``n_psi`` (= nψ), ``bias2``, ``noise_eps2``, ``paper_floor``,
        ``paper_noise_eps2``, ``log_error``. Candidates for which ICLP-AR
        thresholds every coefficient away are skipped.
    """
    import fdp_ppl as fp

    from fdp_ppl.errors import InputError

    etas = np.linspace(1.05, 3.0, 40) if etas is None else np.asarray(etas, dtype=float)
    psis = np.logspace(-5, 0, 41) if psis is None else np.asarray(psis, dtype=float)
    fits = {"iclp-qr": fp.iclp_qr_mean, "iclp-ar": fp.iclp_ar_mean}
    rows = []
    for ds in datasets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prep = prepare(ds, PAPER_READING, data_dir)
        n = prep.info["n"]
        for kname in kernels:
            basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=KERNELS[kname]), prep.grid)
            for mech in mechanisms:
                floor, noise_paper = paper_floor_and_noise(ds, kname, COLUMN_READINGS[column_reading][mech])
                candidates = [("PSS", None, None)] + [("grid", e, p) for e in etas for p in psis]
                for tuning, eta, psi in candidates:
                    try:
                        summary = fits[mech](prep.curves, basis, tau=PAPER_READING.tau, eta=eta, psi=psi)
                    except InputError:
                        continue
                    for bound in bounds:
                        bias2, noise = exact_error(summary, fp.ICLP(1.0), prep.xbar, bound)
                        rows.append({"dataset": ds, "kernel": kname, "mechanism": mech, "tuning": tuning,
                                     "eta": summary.params["eta"], "psi": summary.params["psi"], "n": n,
                                     "n_psi": summary.params["psi"] * n, "bound": bound, "bias2": bias2,
                                     "noise_eps2": noise, "paper_floor": floor, "paper_noise_eps2": noise_paper})
    df = pd.DataFrame(rows)
    df["log_error"] = np.hypot(np.log(df.bias2 / df.paper_floor), np.log(df.noise_eps2 / df.paper_noise_eps2))
    return df


def best_calibrations(search: pd.DataFrame) -> pd.DataFrame:
    """Per (mechanism, bound): the PSS tuning, the best (η, ψ) of each
    (dataset, kernel) cell, and the best single (η, ψ) shared by every cell
    (its largest log-error over the cells), from :func:`calibration_search`.

    Returns
    -------
    pandas.DataFrame
        Columns ``mechanism, bound, cell, eta, psi, n_psi, bias2, paper_floor,
        noise_eps2, paper_noise_eps2, log_error, at_grid_edge`` (for the shared
        row, the worst cell's values and ``log_error`` the maximum over cells;
        ``at_grid_edge``: the optimum lies on the boundary of the searched grid).
    """
    cols = ["eta", "psi", "n_psi", "bias2", "paper_floor", "noise_eps2", "paper_noise_eps2", "log_error"]
    grid_rows = search[search.tuning == "grid"]
    edges = (grid_rows.eta.min(), grid_rows.eta.max(), grid_rows.psi.min(), grid_rows.psi.max())

    def edge(r) -> bool:
        return bool(r["eta"] in edges[:2] or r["psi"] in edges[2:])

    rows = []
    for (mech, bound), g in search.groupby(["mechanism", "bound"], sort=False):
        for (ds, k), c in g.groupby(["dataset", "kernel"], sort=False):
            pss_row = c[c.tuning == "PSS"]
            if len(pss_row):
                rows.append({"mechanism": mech, "bound": bound, "cell": f"{ds} {k}: PSS",
                             **pss_row.iloc[0][cols].to_dict()})
            best = c[c.tuning == "grid"].sort_values("log_error").iloc[0]
            rows.append({"mechanism": mech, "bound": bound, "cell": f"{ds} {k}: best", **best[cols].to_dict(),
                         "at_grid_edge": edge(best)})
        grid = g[g.tuning == "grid"]
        cells = grid.groupby(["dataset", "kernel"]).ngroups
        worst = grid.groupby(["eta", "psi"]).log_error.agg(["max", "count"]).reset_index()
        worst = worst[worst["count"] == cells].sort_values("max")
        if len(worst):
            eta, psi = worst.iloc[0][["eta", "psi"]]
            shared = grid[(grid.eta == eta) & (grid.psi == psi)].sort_values("log_error").iloc[-1]
            rows.append({"mechanism": mech, "bound": bound, "cell": "one (eta, psi) for all cells",
                         **shared[cols].to_dict(), "log_error": float(worst.iloc[0]["max"]),
                         "at_grid_edge": edge(shared)})
    out = pd.DataFrame(rows)
    out["at_grid_edge"] = out["at_grid_edge"].fillna(False).astype(bool)
    return out


#: One-line reasons for the glance table (the long ones are :data:`REASONS`).
SHORT_REASONS = {
    "dti-epsilon": "the DTI rows decay like a doubling eps grid (1/8 … 4), not like eps = 2 … 7",
    "frl": "noise part 8–16% above Theorem 12.1 with tau = 1 (paper's n, tau not reported)",
    "bernstein": "tau_inf not reported; max|z| reproduces DTI, electricity noise is higher in the paper",
    "iclp-ar": "eta, psi, bound not reported; PSS splits bias and noise differently (see the calibration search)",
    "iclp-qr": "eta, psi, bound not reported; PSS has 3–7x the noise and more bias (see the calibration search)",
}


def reproduction_summary(df: pd.DataFrame, calibration: pd.DataFrame | None = None) -> pd.DataFrame:
    """The opening "at a glance" table of the Table 2 notebook.

    Parameters
    ----------
    df : pandas.DataFrame
        :func:`table2` output (the committed full-mode CSV or a fresh run).
    calibration : pandas.DataFrame, optional
        :func:`best_calibrations` output; adds what reproduces the ICLP columns.

    Returns
    -------
    pandas.DataFrame
        :func:`studies.verdicts.glance` rows: item, paper, ours, verdict.
    """
    from .verdicts import fmt, glance, range_verdict, verdict

    pr = df[(df.setting == "paper-reading") & (df.bound == "paper")]
    supported = pr[((pr.dataset == "dti") & (pr.epsilon_reading == "doubling"))
                   | ((pr.dataset == "electricity") & (pr.epsilon_reading == "printed"))]
    rows = []
    dti_frl = pr[(pr.dataset == "dti") & (pr.epsilon_reading == "printed") & (pr.mechanism == "frl")
                 & (pr.kernel == "C1.5") & (pr.epsilon_label == 2.0)]
    if len(dti_frl):
        r = dti_frl.iloc[0]
        rows.append({"item": "DTI FRL, C1.5, row 'eps = 2' read as printed", "paper": fmt(r.paper_printed),
                     "ours": fmt(r.exact), "verdict": verdict(r.exact, r.paper_printed, why=SHORT_REASONS["dti-epsilon"])})
    names = {"frl": "FRL (M = 4)", "bernstein": "Bernstein (lattice 20)", "iclp-ar": "ICLP-AR (PSS tuning)",
             "iclp-qr": "ICLP-QR (PSS tuning)"}
    for ds in DATASETS:
        for mech in MECHANISMS:
            g = supported[(supported.dataset == ds) & (supported.mechanism == mech)]
            if not len(g):
                continue
            rel = g.rel_diff_cyclic.to_numpy()
            rows.append({"item": f"{ds}: {names[mech]}, {len(g)} cells (printed column "
                                 f"'{COLUMN_READINGS['cyclic'][mech]}')",
                         "paper": f"{fmt(g.paper_cyclic.min(), 3)} … {fmt(g.paper_cyclic.max(), 3)}",
                         "ours": f"median ours/paper − 1 = {100 * np.median(rel):+.1f}%",
                         "verdict": range_verdict(rel, tolerance=0.07 if mech in ("frl", "bernstein") else 0.05,
                                                  why=SHORT_REASONS[mech])})
    if calibration is not None and len(calibration):
        for (mech, bound), g in calibration[calibration.cell == "one (eta, psi) for all cells"].groupby(
                ["mechanism", "bound"], sort=False):
            r = g.iloc[0]
            factor = float(np.exp(r.log_error))
            rows.append({"item": f"{mech}: one (eta, psi) for all four cells, {bound} sensitivity bound",
                         "paper": "eta, psi, bound not reported",
                         "ours": f"eta = {r.eta:.2f}, n psi = {r.n_psi:.2g}" + (" (edge of the searched grid)"
                                                                                 if r.at_grid_edge else ""),
                         "verdict": (f"reproduces floor and noise within a factor {factor:.2f}"
                                     if factor < 1.5 else f"cannot reproduce: off by a factor {factor:.1f} at best")})
    return glance(rows)


__all__ = ["paper_difference_ratios", "paper_floor_kernel_dependence", "column_reading_scores",
           "frl_floor_identification", "discrepancies", "se_comparison", "REASONS", "paper_floor_and_noise",
           "calibration_search", "best_calibrations", "reproduction_summary", "SHORT_REASONS"]
