"""Figures of the experiments (Lin & Reimherr 2026, Tables 1 and 2).

Only notebooks and callers that plot import this module: the computation
modules (:mod:`~studies.timing`,
:mod:`~studies.real_data`, ...) do not import matplotlib.
matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from fdp_ppl.releasing.draw import release
from fdp_ppl.releasing.schema import read_release
from . import real_data as rd
from . import timing

# ----------------------------------------------------------------------------- Table 1 (timing)
def plot_timing(df: pd.DataFrame):
    """Seconds per 100 draws against K (log–log), one panel per kernel: the
    paper's Table 1 (ICLP, GP), the literal per-draw algorithms measured here,
    and ``fdp_ppl`` warm (compiled sampler, cached eigenbasis) and cold.

    Returns
    -------
    (fig, axes)
    """
    import matplotlib.pyplot as plt

    kernels = [k for k in timing.KERNELS if k in set(df.kernel)]
    ncol = min(2, len(kernels))
    nrow = int(np.ceil(len(kernels) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.6 * ncol, 3.9 * nrow + 1.2), squeeze=False, sharey=True,
                             constrained_layout=True)
    style = {"iclp": "tab:green", "gp": "tab:purple"}
    for ax, k in zip(axes.flat, kernels):
        g = df[df.kernel == k]
        for proc, col in style.items():
            h = g[g.process == proc].sort_values("K")
            name = "ICLP" if proc == "iclp" else "GP"
            ax.plot(h.K, h.paper_s, "s--", color=col, mfc="none", label=f"{name}: paper Table 1")
            ax.plot(h.K, h.literal_per100_s, "o-", color=col, label=f"{name}: literal per-draw, this machine")
            ax.plot(h.K, h.ours_warm_per100_s, "^-", color=col, alpha=0.6, label=f"{name}: fdp_ppl warm")
            ax.plot(h.K, h.ours_cold_s, "x:", color=col, alpha=0.6, label=f"{name}: fdp_ppl cold (one call)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ks = sorted(set(g.K))
        ax.set_xticks(ks)
        ax.set_xticklabels([str(x) for x in ks])
        ax.minorticks_off()
        ax.set_xlabel("grid size K")
        ax.set_title(timing.KERNEL_LABELS[k], fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("seconds per 100 draws")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    draws = int(df.draws.iloc[0])
    fig.suptitle(f"Lin & Reimherr (2026) Table 1: seconds for 100 ICLP / GP draws, paper vs this machine\n"
                 f"({draws} draws timed{', scaled to 100' if draws != 100 else ''}; literal = Gram matrix + "
                 "eigh (ICLP) / Cholesky (GP) per draw; cold = one call after clearing the package caches)",
                 fontsize=9)
    return fig, axes


# ----------------------------------------------------------------------------- Table 2 (real data)
MECH_STYLE = {"frl": ("tab:blue", "FRL"), "iclp-ar": ("tab:orange", "ICLP-AR"), "iclp-qr": ("tab:green", "ICLP-QR"),
              "bernstein": ("tab:red", "Bernstein")}


def plot_error_vs_epsilon(df: pd.DataFrame, setting: str = "paper-reading", reading: str | None = "cyclic",
                          dti_epsilon_reading: str = "doubling", show_printed: bool = False,
                          other_bound: bool = True):
    """Error vs ε on log–log axes, one panel per (dataset, kernel): our exact
    values (lines) with ±2 SE Monte Carlo bars, the paper's values under
    ``reading`` (filled markers; None: no paper values) and, optionally, as
    printed (hollow markers). ``other_bound`` adds ICLP-AR / ICLP-QR with the
    setting's other sensitivity bound (dashed, exact).

    Returns
    -------
    (fig, axes)
    """
    import matplotlib.pyplot as plt

    bound = rd.SETTINGS[setting].primary_bound
    alt = "tight" if bound == "paper" else "paper"
    every = df[df.setting == setting]
    sub = every[every.bound == bound]
    dss = [d for d in rd.DATASETS if d in set(sub.dataset)]
    ks = [k for k in rd.KERNELS if k in set(sub.kernel)]
    fig, axes = plt.subplots(len(dss), len(ks), figsize=(5.4 * len(ks), 3.9 * len(dss) + 1.3), squeeze=False,
                             constrained_layout=True)
    for i, ds in enumerate(dss):
        for j, k in enumerate(ks):
            ax = axes[i, j]
            g = sub[(sub.dataset == ds) & (sub.kernel == k)]
            if ds == "dti":
                g = g[g.epsilon_reading == dti_epsilon_reading]
            for m in rd.MECHANISMS:
                col, lab = MECH_STYLE[m]
                h = g[g.mechanism == m].sort_values("epsilon")
                if h.empty:
                    continue
                ax.plot(h.epsilon, h.exact, "-", color=col, lw=1.8, label=f"{lab}: ours")
                if h.mc_se.notna().any():
                    ax.errorbar(h.epsilon, h.mc_mean, yerr=2 * h.mc_se, fmt="none", ecolor=col, elinewidth=1)
                if other_bound and m in ("iclp-ar", "iclp-qr"):
                    a = every[(every.dataset == ds) & (every.kernel == k) & (every.mechanism == m)
                              & (every.bound == alt) & (every.epsilon_reading.isin(h.epsilon_reading.unique()))]
                    a = a.sort_values("epsilon")
                    ax.plot(a.epsilon, a.exact, "--", color=col, lw=1.1, alpha=0.8, label=f"{lab}: ours, {alt} bound")
                if reading is None:
                    continue
                ax.plot(h.epsilon, h[f"paper_{reading}"], "o", color=col, ms=5,
                        label=f"{lab}: paper (printed as {MECH_STYLE[rd.COLUMN_READINGS[reading][m]][1]})")
                if show_printed and reading != "printed":
                    ax.plot(h.epsilon, h["paper_printed"], "o", mfc="none", color=col, ms=9, mew=0.8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ticks = sorted(set(g.epsilon))
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"1/{1 / e:g}" if e < 1 else f"{e:g}" for e in ticks])
            ax.minorticks_off()
            ax.tick_params(axis="y", which="minor", left=True)
            eps_note = "" if ds != "dti" else (" (printed labels 2..7 read as 2^(label-5))"
                                               if dti_epsilon_reading == "doubling" else " (printed labels)")
            ax.set_title(f"{ds}, Matérn {k}{eps_note}", fontsize=10)
            ax.set_xlabel("ε")
            ax.set_ylabel("E‖μ̃ − X̄‖²  (standardised units)" if setting == "paper-reading"
                          else "E‖μ̃ − X̄‖²  (units of the public bound²)")
            ax.grid(True, which="both", alpha=0.3)
    from matplotlib.lines import Line2D

    found = dict(zip(*reversed(axes[0, 0].get_legend_handles_labels())))
    rows_per_mech = max(sum(lab.startswith(MECH_STYLE[m][1] + ":") for lab in found) for m in rd.MECHANISMS)
    handles, labels = [], []
    for m in rd.MECHANISMS:  # one legend column per mechanism (legends fill column by column)
        mine = [lab for lab in found if lab.startswith(MECH_STYLE[m][1] + ":")]
        mine.sort(key=lambda lab: (": paper" in lab, "bound" in lab))
        for lab in mine + [None] * (rows_per_mech - len(mine)):
            handles.append(found[lab] if lab else Line2D([], [], alpha=0))
            labels.append(lab or " ")
    fig.legend(handles, labels, loc="outside lower center", ncol=len(rd.MECHANISMS), fontsize=8, frameon=False)
    note = f"solid lines: ours ({setting} setting, {bound} sensitivity bound, exact); bars: ±2 Monte Carlo SE"
    if other_bound:
        note += f"; dashed: ICLP with the {alt} bound"
    if reading is not None:
        note += f"\ndots: the paper's values, printed columns assigned to mechanisms by the '{reading}' reading"
    if reading is not None and show_printed and reading != "printed":
        note += "; hollow circles: the value printed under the mechanism's own name"
    fig.suptitle(f"Lin & Reimherr (2026), Table 2: E‖μ̃ − X̄‖² against ε\n{note}", fontsize=9)
    return fig, axes


def plot_private_curves(setting: rd.Setting = rd.PUBLIC, epsilon: dict | None = None, kernel: str = "C1.5",
                        n_releases: int = 3, n_background: int = 80, random_seed: int = 7, data_dir=None):
    """Sample private mean curves against the sample mean, one panel per
    (dataset, mechanism), in physical units (paper Figure 5 analogue).

    Each release is one draw of :func:`fdp_ppl.release` (one publication at
    ε each); grey lines are a subset of the data curves.

    Returns
    -------
    (fig, axes)
    """
    import matplotlib.pyplot as plt

    epsilon = epsilon or {"electricity": 1.0, "dti": 2.0}
    fig, axes = plt.subplots(len(rd.DATASETS), len(rd.MECHANISMS), figsize=(16, 7.2), squeeze=False,
                             constrained_layout=True, sharey="row")
    rng = np.random.default_rng(random_seed)
    for i, ds in enumerate(rd.DATASETS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prep = rd.prepare(ds, setting, data_dir)
        summaries = rd.build_summaries(prep, rd.KERNELS[kernel], setting)
        t = prep.curves["t"].values
        x = prep.curves.values * prep.divisor
        sel = rng.choice(x.shape[0], size=min(n_background, x.shape[0]), replace=False)
        eps = epsilon[ds]
        for j, m in enumerate(rd.MECHANISMS):
            ax = axes[i, j]
            ax.plot(t, x[sel].T, color="0.82", lw=0.5, zorder=1)
            summary, mech_cls = summaries[m]
            tree = release(summary, mech_cls(eps), draws=n_releases, bound=setting.primary_bound,
                           random_seed=[random_seed, i, j], study=True,
                           allow_nonprivate=summary.spec.data_dependent)  # paper-reading tau_inf: a study
            rel = read_release(tree).curve.values[0] * prep.divisor
            col, lab = MECH_STYLE[m]
            for r in rel:
                ax.plot(t, r, color=col, lw=1.1, alpha=0.85, zorder=2)
            ax.plot(t, prep.xbar * prep.divisor, color="k", lw=2, zorder=3, label="sample mean")
            rmse = np.sqrt(np.mean([prep.grid.norm(r / prep.divisor - prep.xbar) ** 2 for r in rel])) * prep.divisor
            unit = "MW" if ds == "electricity" else "FA"
            ax.set_title(f"{ds}: {lab}, ε = {eps:g}\n{n_releases} releases, RMS L² distance to mean {rmse:.3g} {unit}",
                         fontsize=9)
            ax.set_xlabel("half-hour of the day" if ds == "electricity" else "tract location")
            if j == 0:
                ax.set_ylabel("demand (MW)" if ds == "electricity" else "fractional anisotropy")
            lo, hi = np.percentile(x, [0.5, 99.5])
            pad = 0.35 * (hi - lo)
            ax.set_ylim(lo - pad, hi + pad)
        axes[i, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Private mean curves ({setting.name} setting, Matérn {kernel}, ρ = 0.1): coloured = releases, "
                 "black = sample mean, grey = data", fontsize=10)
    return fig, axes


__all__ = ["plot_timing", "plot_error_vs_epsilon", "plot_private_curves", "MECH_STYLE"]
