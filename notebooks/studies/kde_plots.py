"""Figures of notebooks 08 (Hall et al. 2013) and 09 (ICLP KDE); matplotlib is imported when a figure is drawn.

The computation modules :mod:`~studies.kde` and :mod:`~studies.kde_iclp` do not
import matplotlib. Every function returns ``(fig, axes)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DENSITY_LABEL = "density (1 / unit of x)"


def plot_hall_examples(ex):
    """Figures 1–2: truth, KDE (solid) and one release (dashed) per route; ``ex`` from :func:`kde.example`."""
    import matplotlib.pyplot as plt

    from .kde import ROUTE_LABELS

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True, constrained_layout=True)
    for ax, route, fig_no in zip(axes, ("gaussian", "sobolev"), (1, 2)):
        ax.plot(ex.x, ex.truth, ":", color="0.45", label="true mixture density")
        ax.plot(ex.x, ex.kde, "-", color="tab:blue", label="kernel density estimate (non-private)")
        ax.plot(ex.x, ex.released[route], "--", color="tab:red", label="released (private) version")
        ax.plot(ex.observations.clip(0, 1), np.full(ex.observations.shape, -0.05), "|", color="k", ms=6,
                label="observations (clipped to [0, 1])")
        ax.set_xlabel("x (data units, domain [0, 1])")
        ax.set_ylabel(DENSITY_LABEL)
        ax.set_title(f"Fig. {fig_no}: {ROUTE_LABELS[route]}\n"
                     f"n = 100, h = 0.1, eps = 1, delta = 0.1, sigma = {ex.attrs[route]['sigma']:.4f}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper right")
    return fig, axes


def plot_hall_ise(summary: pd.DataFrame):
    """Left: ISE (mean ± SE) against ε for both routes with the KDE's; right: the part privacy adds (log–log)."""
    import matplotlib.pyplot as plt

    from .kde import ROUTE_LABELS

    colours = {"gaussian": "tab:red", "sobolev": "tab:purple"}
    sw = summary[summary.setting == "sweep"]
    kde = summary[summary.route == "kde"].iloc[0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), constrained_layout=True)
    for route in ("gaussian", "sobolev"):
        g = sw[sw.route == route].sort_values("epsilon")
        # error bars without labels, the labelled line drawn separately (legend handles are Line2D)
        axes[0].errorbar(g.epsilon, g.ise, yerr=g.ise_se, fmt="none", ecolor=colours[route], capsize=3)
        axes[0].plot(g.epsilon, g.ise, "o-", color=colours[route], label=ROUTE_LABELS[route])
        axes[1].errorbar(g.epsilon, g.noise_energy, yerr=g.noise_energy_se, fmt="none", ecolor=colours[route],
                         capsize=3)
        axes[1].plot(g.epsilon, g.noise_energy, "o-", color=colours[route], label=f"{ROUTE_LABELS[route]}: ∫(f̃ − f_D)²")
        axes[1].plot(g.epsilon, g.sigma ** 2, ":", color=colours[route], label=f"σ² ({route} route)")
    axes[0].axhline(kde.ise, color="tab:blue", ls="--", label=f"non-private KDE ({kde.ise:.3f})")
    delta = sw.delta.iloc[0] if len(sw) else float("nan")
    axes[0].set_title(f"ISE against the true density (mean ± SE), delta = {delta:g}", fontsize=9)
    axes[1].set_title("error added by privacy (mean ± SE) and its expectation", fontsize=9)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("privacy budget ε")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ISE ∫(f̃ − f₀)² (1 / unit of x)")
    axes[1].set_ylabel("∫(f̃ − f_D)² (1 / unit of x)")
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    return fig, axes


def plot_svm(fit, X, y, private_values, *, title_private: str = "private kernel SVM"):
    """Figure 3: data with the non-private (top) and the private (bottom) predicted class as background."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    spec = fit.spec
    a1, a2 = spec.axes
    dec = fit.decision(spec.points).reshape(spec.grid_size)
    cmap = ListedColormap(["#f4c7c3", "#c6dbef"])
    fig, axes = plt.subplots(2, 1, figsize=(5.2, 9), sharex=True, constrained_layout=True)
    for ax, vals, title in ((axes[0], dec, "non-private kernel SVM"), (axes[1], private_values, title_private)):
        ax.pcolormesh(a1, a2, (np.sign(vals).T > 0).astype(float), cmap=cmap, vmin=0, vmax=1, shading="nearest")
        pos, neg = y > 0, y < 0
        ax.scatter(X[pos, 0], X[pos, 1], s=8, marker="o", color="tab:blue", label="label +1 (points)")
        ax.scatter(X[neg, 0], X[neg, 1], s=10, marker="x", color="tab:red", label="label −1 (crosses)")
        ax.set_title(f"{title}\n(background: predicted class; blue = +1)", fontsize=9)
        ax.set_ylabel("feature x2 (unitless, domain [0, 1])")
        ax.set_xlim(a1[0], a1[-1])
        ax.set_ylim(a2[0], a2[-1])
    axes[1].set_xlabel("feature x1 (unitless, domain [0, 1])")
    axes[0].legend(fontsize=7, loc="upper right")
    return fig, axes


def plot_iclp_1d(ex, panels):
    """Figure 3 of Lin & Reimherr: non-private (blue) and 10 private (red) KDEs per mechanism.

    ``ex`` from :func:`kde_iclp.example_1d`; ``panels`` the mechanism keys to draw.
    """
    import matplotlib.pyplot as plt

    from .kde_iclp import MECHANISM_LABELS

    ncol = 3
    nrow = int(np.ceil(len(panels) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), sharex=True, squeeze=False,
                             constrained_layout=True)
    for ax, key in zip(axes.flat, panels):
        for i, v in enumerate(ex.released[key]):
            ax.plot(ex.x, v, "-", color="tab:red", alpha=0.35, lw=0.8,
                    label="private realisations (10)" if i == 0 else None)
        ax.plot(ex.x, ex.nonprivate[key], "-", color="tab:blue", lw=1.8, label="non-private estimate")
        ax.plot(ex.x, ex.truth, ":", color="k", lw=1.2, label="true density")
        ax.set_title(MECHANISM_LABELS[key], fontsize=9)
        ax.set_xlabel("x (data units, domain [0, 1])")
        ax.set_ylabel(DENSITY_LABEL)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    return fig, axes


def plot_iclp_2d(ex, panels):
    """Figure 4 of Lin & Reimherr as contour maps: non-private (blue) and one private (red) KDE per mechanism."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from .kde_iclp import MECHANISM_LABELS

    ncol = 3
    nrow = int(np.ceil(len(panels) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.9 * nrow), sharex=True, sharey=True, squeeze=False,
                             constrained_layout=True)
    x1, x2 = ex.axes
    for ax, key in zip(axes.flat, panels):
        top = max(ex.nonprivate[key].max(), 1e-12)
        levels = top * np.array([0.1, 0.3, 0.5, 0.7, 0.9])
        ax.contour(x1, x2, ex.nonprivate[key].T, levels=levels, colors="tab:blue", linewidths=1.2)
        ax.contour(x1, x2, ex.released[key][0].T, levels=levels, colors="tab:red", linewidths=0.9)
        ax.set_title(MECHANISM_LABELS[key], fontsize=9)
        ax.set_xlabel("x1 (data units)")
        ax.set_ylabel("x2 (data units)")
        ax.legend(handles=[Line2D([], [], color="tab:blue", label="non-private (10-90% of its peak)"),
                           Line2D([], [], color="tab:red", label="one private release, same levels")], fontsize=6,
                  loc="lower right")
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    return fig, axes


def plot_iclp_ise(summary: pd.DataFrame, title: str, *, log: bool = True):
    """ISE (mean ± SE) of each mechanism as horizontal bars: non-private part and the part privacy adds.

    ``log``: logarithmic ISE axis (for ranges over more than a decade; bars then start at the axis' left end).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from .kde_iclp import MECHANISM_LABELS

    s = summary.reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(s) + 1.4), constrained_layout=True)
    y = np.arange(len(s))
    ax.barh(y, s.ise_nonprivate, color="tab:blue")
    ax.barh(y, (s.ise - s.ise_nonprivate).clip(lower=0), left=s.ise_nonprivate, color="tab:red", alpha=0.6)
    ax.errorbar(s.ise, y, xerr=s.ise_se, fmt="none", ecolor="k", capsize=3)
    ax.set_yticks(y, [MECHANISM_LABELS[k] for k in s.mechanism], fontsize=8)
    if log:
        from matplotlib.ticker import NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # minor log labels overlap
    ax.set_xlabel("ISE ∫(f̃ − f₀)² (mean ± SE over data sets; 1 / unit of x^d)")
    ax.set_ylabel("mechanism")
    ax.set_title(title, fontsize=9)
    ax.legend(handles=[Patch(color="tab:blue", label="ISE of the mechanism's non-private estimate"),
                       Patch(color="tab:red", alpha=0.6, label="added by the private release (mean)")], fontsize=7)
    ax.grid(alpha=0.3, axis="x")
    return fig, ax


__all__ = ["plot_hall_examples", "plot_hall_ise", "plot_iclp_1d", "plot_iclp_2d", "plot_iclp_ise", "plot_svm"]
