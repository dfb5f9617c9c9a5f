"""Plots of releases and eigenbases (matplotlib only).

Nothing in the core package imports this module, so ``import fdp_ppl`` never
pulls in matplotlib. Every function returns ``(fig, ax)`` (or ``(fig, axes)``)
and draws on a given ``ax`` when one is passed.

Everything drawn by :func:`plot_release` from the release alone is public: the
released curve(s) and the noise band, which is a function of the public
``constant_data`` (eigenfunctions and noise scales). The optional ``truth`` /
``reference`` curves are whatever the caller passes (a simulation's true mean,
a public reference curve, or the data holder's own non-private estimate) and
are labelled as such.

Examples
--------
>>> import fdp_ppl as fp
>>> curves = fp.datasets.load_dataset("growth")
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
>>> tree = fp.release(fp.iclp_qr_mean(curves, basis, tau=200.0), fp.ICLP(epsilon=1.0))
>>> fig, ax = fp.plots.plot_release(tree)                   # released curve and public noise band
>>> ax.get_ylabel()
'height (cm)'
>>> round(float(fp.plots.noise_sd(tree).max()), 2)          # the band's noise sd (cm), from public data
40.83
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import dims
from .releasing.registry import label
from .errors import SchemaError
from .releasing.schema import CURVE, POSTERIOR, T_ORIGINAL, is_inference, read_release

#: colours (colour-blind safe: Okabe–Ito)
_RELEASE = "#0072B2"
_DRAWS = "#56B4E9"
_TRUTH = "#D55E00"
_REFERENCE = "#555555"



def _plt():
    import matplotlib.pyplot as plt

    return plt


def noise_sd(tree: xr.DataTree) -> xr.DataArray:
    """Pointwise standard deviation of a release's noise, from public metadata only.

    ``sd(t) = sqrt(Σ_j design_j(t)² Var_j)`` with ``Var_j`` the noise law's
    variance of coefficient j (:meth:`fdp_ppl.noise.laws.NoiseLaw.variance`: ``2b_j²``
    for Laplace, ``s_j²`` for Normal, ``E[W] s_j²`` for elliptical laws, whose
    coefficients are uncorrelated though not independent).

    Parameters
    ----------
    tree : xr.DataTree
        A release from :func:`fdp_ppl.release`.

    Returns
    -------
    xr.DataArray
        dims ``("t",)``, in the units of the released curve.

    Raises
    ------
    SchemaError
        The tree is not a release (:func:`fdp_ppl.releasing.schema.read_release`).
    """
    view = read_release(tree)
    return xr.DataArray(view.noise_sd(), dims=(dims.T,), coords={dims.T: view.t})


def _fmt(x) -> str:
    return f"{float(x):.4g}"


def _title(attrs: dict) -> str:
    mech = label(attrs.get("mechanism", "release"))
    law = str(attrs.get("noise_law", ""))
    if law.startswith("elliptical-"):
        mech = f"{mech} ({label(law, 'law')})"
    summ = label(attrs.get("summary", ""), "summary") if attrs.get("summary") else ""
    head = f"{mech} release of the {summ}" if summ else f"{mech} release"
    source = str(attrs.get("data_source", ""))
    if source:
        head += f": {source}"
    bits = [f"ε = {_fmt(attrs.get('epsilon', float('nan')))}"]
    delta = attrs.get("delta", 0.0)
    try:
        if float(delta) > 0:
            bits[0] = f"(ε, δ) = ({_fmt(attrs['epsilon'])}, {float(delta):.2g})"
    except (TypeError, ValueError):
        pass
    if "n" in attrs:
        bits.append(f"n = {int(attrs['n'])}")
    if "tau" in attrs:
        units = attrs.get("value_units")
        tau = f"τ = {_fmt(attrs['tau'])}" + (f" {units}" if _short(units) else "")
        if "public_offset" in attrs:
            tau += " around a public reference"
        bits.append(tau)
    draws = int(attrs.get("draws", 1))
    if draws > 1:
        bits.append(f"{draws} draws, ε spent = {_fmt(attrs.get('budget_spent_epsilon', float('nan')))}")
    return head + "\n" + ",  ".join(bits)


def _short(units) -> bool:
    return bool(units) and " " not in str(units) and len(str(units)) <= 12


def _label(name, units, width: int = 48) -> str:
    """``name (units)`` for short units; otherwise the more descriptive of the two, wrapped."""
    import textwrap

    name = str(name) if name else ""
    units = str(units) if units else ""
    if name and units:
        if "(" in name:
            text = name
        elif _short(units):
            text = f"{name} ({units})"
        else:
            text = name if " " in name else units
    else:
        text = name or units
    return "\n".join(textwrap.wrap(text, width)) or text


def _x_label(tree: xr.DataTree, x: xr.DataArray) -> str:
    a = x.attrs
    label = _label(a.get("long_name") or tree.attrs.get("t_name") or "t", a.get("units") or tree.attrs.get("t_units"))
    lo, hi = float(x.min()), float(x.max())
    return f"{label};  domain [{lo:g}, {hi:g}]"


def _y_label(tree: xr.DataTree, curve: xr.DataArray) -> str:
    return _label(curve.attrs.get("long_name") or tree.attrs.get("value_name") or "released curve",
                  curve.attrs.get("units") or tree.attrs.get("value_units"))


def _as_line(values, size: int, what: str) -> np.ndarray:
    arr = np.asarray(values.values if isinstance(values, xr.DataArray) else values, dtype=float).ravel()
    if arr.size != size:
        raise ValueError(f"{what} has {arr.size} values but the release grid has {size} points")
    return arr


def _finish_axes(ax, xv):
    """Shared styling of the curve plots: x range, light grid, open frame, legend."""
    ax.set_xlim(xv[0], xv[-1])
    ax.grid(True, color="0.9", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    leg = ax.legend(fontsize=9, loc="best", frameon=True, framealpha=0.92)
    leg.get_frame().set_edgecolor("none")


def plot_release(tree: xr.DataTree, *, ax=None, band: bool = True, truth=None, reference=None,
                 max_draws: int = 20, truth_label: str = "truth", reference_label: str = "reference"):
    """Plot a released curve with its public pointwise noise band.

    Parameters
    ----------
    tree : xr.DataTree
        Output of :func:`fdp_ppl.release` (or the file it was saved to, opened
        with ``xr.open_datatree``).
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is created otherwise.
    band : bool
        Shade ``first draw ± 2 sd(t)`` where ``sd(t)`` is the noise standard
        deviation at ``t`` (:func:`noise_sd`; public: computed from the
        eigenfunctions and noise scales only). It shows how far a release
        typically lies from the underlying summary.
    truth, reference : array_like or xr.DataArray, shape (t,), optional
        Curves on the release grid to compare with, e.g. a simulation's true
        mean or a public reference curve. A non-private estimate of the data
        holder is for their own comparison only: a figure showing it must not
        be published.
    max_draws : int
        When the release has several draws, at most this many extra draws are
        drawn as thin lines (the first draw is always the main line).
    truth_label, reference_label : str
        Legend labels.

    Returns
    -------
    fig, ax

    Raises
    ------
    ValueError
        ``tree`` is not a release, or ``truth``/``reference`` do not match the grid.
    """
    plt = _plt()
    view = read_release(tree)
    post = tree[POSTERIOR].to_dataset()
    curve = post[CURVE]
    x = post[T_ORIGINAL] if T_ORIGINAL in post.coords else post[dims.T]
    xv = np.asarray(x.values, dtype=float)
    flat = curve.stack(sample=(dims.CHAIN, dims.DRAW)).transpose("sample", dims.T).values
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
    else:
        fig = ax.figure
    attrs = dict(tree.attrs)

    if band:
        sd = view.noise_sd()
        ax.fill_between(xv, flat[0] - 2 * sd, flat[0] + 2 * sd, color=_RELEASE, alpha=0.15, linewidth=0,
                        label="±2 sd of the privacy noise (public)", zorder=1)
    extra = flat[1 : 1 + max(int(max_draws), 0)]
    for i, row in enumerate(extra):
        ax.plot(xv, row, color=_DRAWS, lw=0.8, alpha=0.55, zorder=2,
                label=f"other draws ({extra.shape[0]} of {flat.shape[0] - 1})" if i == 0 else None)
    ax.plot(xv, flat[0], color=_RELEASE, lw=2.2, zorder=4,
            label="private release" if flat.shape[0] == 1 else "private release (draw 0)")
    if reference is not None:
        ax.plot(xv, _as_line(reference, xv.size, "reference"), color=_REFERENCE, lw=1.5, ls="--", zorder=3,
                label=reference_label)
    if truth is not None:
        ax.plot(xv, _as_line(truth, xv.size, "truth"), color=_TRUTH, lw=1.8, ls=(0, (4, 2)), zorder=3,
                label=truth_label)

    ax.set_xlabel(_x_label(tree, x))
    ax.set_ylabel(_y_label(tree, curve))
    ax.set_title(_title(attrs), fontsize=11)
    _finish_axes(ax, xv)
    return fig, ax


def plot_eigenbasis(basis, n: int = 6):
    """Eigenfunctions and eigenvalue decay of an eigenbasis.

    Parameters
    ----------
    basis : fdp_ppl.Eigenbasis
    n : int
        Number of leading eigenfunctions to draw.

    Returns
    -------
    fig, (ax_functions, ax_eigenvalues)
        Left: ``φ_1..φ_n`` against the original grid points; right: ``λ_j``
        against ``j`` on log-log axes (slope ``-β``).
    """
    plt = _plt()
    n = max(1, min(int(n), basis.size))
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    x = basis.grid.points
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.9, n))
    for j in range(n):
        lam = basis.eigenvalues[j]
        ax0.plot(x, basis.eigenfunctions[:, j], color=colors[j], lw=1.6, label=f"φ{j + 1}  (λ = {lam:.3g})")
    ax0.axhline(0, color="0.6", lw=0.8)
    ax0.set_xlabel(f"t  (domain [{basis.grid.lower:g}, {basis.grid.upper:g}])")
    ax0.set_ylabel("eigenfunction")
    ax0.set_title(f"leading eigenfunctions of {getattr(basis.kernel, 'name', 'kernel')}", fontsize=11)
    ax0.legend(frameon=False, fontsize=8, ncols=2)
    j = np.arange(1, basis.size + 1)
    ax1.loglog(j, basis.eigenvalues, "o-", ms=3, color=_RELEASE)
    ax1.set_xlabel("j")
    ax1.set_ylabel("eigenvalue λ_j")
    ax1.set_title(f"eigenvalue decay (J = {basis.size} retained)", fontsize=11)
    for ax in (ax0, ax1):
        ax.grid(True, color="0.9", lw=0.8, which="both")
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig, (ax0, ax1)


def plot_fpca(tree: xr.DataTree, *, draw: int = 0, ax=None, max_draws: int = 30):
    """The released principal subspace of an ε-DP FPCA release (:func:`fdp_ppl.release`).

    Parameters
    ----------
    tree : xr.DataTree
        The release: ``posterior/components`` (chain, draw, component, t).
    draw : int
        Which released frame to draw in colour.
    ax : matplotlib Axes, optional
    max_draws : int
        Other released frames (each cost ε) drawn as thin grey lines, up to this many; their columns are
        aligned in sign with the chosen frame's for display only.

    Returns
    -------
    fig, ax
        Component functions against ``t`` in its original units. The columns of a frame are an
        orthonormal basis of the private subspace: unordered, signs arbitrary (said in the title).
    """
    plt = _plt()
    post = tree[POSTERIOR]
    comps = post["components"]
    values = np.asarray(comps.values[0], dtype=float)  # (draw, component, t)
    if not 0 <= draw < values.shape[0]:
        raise ValueError(f"draw {draw} is outside the {values.shape[0]} released frames")
    x = np.asarray(post[dims.T].values, dtype=float)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    else:
        fig = ax.figure
    colours = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
    k = values.shape[1]
    main = values[draw]
    others = [d for d in range(values.shape[0]) if d != draw][: max(0, int(max_draws))]
    for d in others:
        for j in range(k):
            sign = np.sign(np.sum(values[d, j] * main[j])) or 1.0
            ax.plot(x, sign * values[d, j], color="0.75", lw=0.7, zorder=1,
                    label="other released frames" if (d == others[0] and j == 0) else None)
    for j in range(k):
        ax.plot(x, main[j], color=colours[j % len(colours)], lw=2.0, zorder=3, label=f"released direction {j + 1}")
    ax.axhline(0, color="0.6", lw=0.8, zorder=0)
    a = tree.attrs
    ax.set_xlabel(_x_label(tree, post[dims.T]))
    ax.set_ylabel(_label(comps.attrs.get("long_name") or "component (unit L² norm on the rescaled grid)",
                         comps.attrs.get("units")))
    exact = "exact draw" if int(a.get("exact", 0)) else "MCMC draw (not exact)"
    ax.set_title(f"ε-DP principal subspace: k = {a.get('k', k)}, ε = {_fmt(a.get('epsilon'))}, "
                 f"{a.get('form', '')} form, {a.get('sampler', '')} ({exact})\n"
                 "columns are unordered with arbitrary signs", fontsize=10)
    _finish_axes(ax, x)
    return fig, ax


_POSTERIOR = "#009E73"

_PRIOR_NAMES = {"gp": "GP prior", "iclp": "ICLP prior", "custom": "custom prior"}


def _prior_label(attrs: dict) -> str:
    name = str(attrs.get("prior", "custom"))
    label = _PRIOR_NAMES.get(name, f"{name} prior")
    bits = []
    if name == "gp":
        if attrs.get("prior_nu") is not None:
            bits.append(f"Matérn ν = {_fmt(attrs['prior_nu'])}")
        for key, sym in (("prior_lengthscale", "ρ"), ("prior_amplitude", "a")):
            val = str(attrs.get(key, "None"))
            bits.append(f"{sym} learned" if val in ("None", "") else f"{sym} = {_fmt(val)}")
    elif name == "iclp":
        for key, sym in (("prior_smoothness", "s"), ("prior_amplitude", "a")):
            val = str(attrs.get(key, "None"))
            bits.append(f"{sym} learned" if val in ("None", "") else f"{sym} = {_fmt(val)}")
    return label + (f" ({', '.join(bits)})" if bits else "")


def plot_inference(posterior_tree: xr.DataTree, release_tree: xr.DataTree | None = None, *,
                   ci_prob: float | None = None, ci_kind: str | None = None, truth=None, ax=None, truth_label: str = "truth", n_curves: int = 0,
                   random_seed=0):
    """Plot the posterior of a curve given a private release, with its credible band.

    Draws the released curve (draw 0, the one the inference conditioned on),
    the posterior mean and the pointwise credible band from
    :func:`fdp_ppl.inference.credible_band`, and optionally a truth curve. The
    x axis is in original units (the ``t_original`` coordinate). Everything
    drawn from ``posterior_tree`` and ``release_tree`` is public
    post-processing of the release; ``truth`` is whatever the caller passes
    (a simulation's true summary) and must not be a non-private estimate in a
    published figure.

    Parameters
    ----------
    posterior_tree : xr.DataTree
        Output of :func:`fdp_ppl.inference.infer`.
    release_tree : xr.DataTree, optional
        The release the posterior conditions on (output of
        :func:`fdp_ppl.release`); its draw ``posterior_tree.attrs["release_draw"]``
        (default 0) is plotted. Without it the released curve is
        reconstructed from ``observed_data`` only when the posterior's basis
        can be recovered, so pass it whenever available.
    ci_prob : float, optional
        Probability of the pointwise band, in (0, 1); default
        ``arviz.rcParams["stats.ci_prob"]`` (as :func:`~fdp_ppl.inference.credible_band`).
    ci_kind : {"eti", "hdi"}, optional
        Equal-tailed or highest-density interval; default ArviZ's
        ``rcParams["stats.ci_kind"]``.
    truth : array_like or xr.DataArray, shape (t,), optional
        Reference curve on the same grid (e.g. a simulation's true summary).
    ax : matplotlib Axes, optional
    truth_label : str
    n_curves : int
        Number of posterior curve draws to overlay as thin lines (0: none).
    random_seed : int or Generator
        Which posterior draws are overlaid.

    Returns
    -------
    fig, ax

    Raises
    ------
    ValueError
        ``posterior_tree`` has no ``posterior/curve``, or the release / truth
        grid does not match the posterior's grid.
    """
    from .inference import credible_band

    plt = _plt()
    if is_inference(posterior_tree) and CURVE not in posterior_tree[POSTERIOR].data_vars:
        family = _grid_family(posterior_tree)
        if family is not None:  # a density or a kernel machine: its own variable on its grid
            return _plot_grid_inference(posterior_tree, release_tree, family, ci_prob=ci_prob, ci_kind=ci_kind,
                                        ax=ax, truth=truth, truth_label=truth_label)
    if not is_inference(posterior_tree) or CURVE not in posterior_tree[POSTERIOR].data_vars:
        raise SchemaError("not an inference result: posterior/curve is missing or the tree is not marked as one",
                          "use the output of fdp_ppl.inference.infer")
    post = posterior_tree[POSTERIOR].to_dataset()
    curve = post[CURVE]
    band = credible_band(posterior_tree, ci_prob=ci_prob, ci_kind=ci_kind)
    ci_prob, ci_kind = band.attrs["ci_prob"], band.attrs["ci_kind"]
    x = post[T_ORIGINAL] if T_ORIGINAL in post.coords else post[dims.T]
    xv = np.asarray(x.values, dtype=float)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
    else:
        fig = ax.figure
    pattrs = dict(posterior_tree.attrs)

    label_ci = f"{ci_prob:.0%} pointwise credible band ({ci_kind.upper()})"
    ax.fill_between(xv, band["lower"].values, band["upper"].values, color=_POSTERIOR, alpha=0.22, linewidth=0,
                    label=label_ci, zorder=1)
    if n_curves > 0:
        flat = curve.stack(sample=(dims.CHAIN, dims.DRAW)).transpose("sample", dims.T).values
        rng = np.random.default_rng(random_seed)
        pick = rng.choice(flat.shape[0], size=min(int(n_curves), flat.shape[0]), replace=False)
        for i, k in enumerate(pick):
            ax.plot(xv, flat[k], color=_POSTERIOR, lw=0.6, alpha=0.35, zorder=2,
                    label="posterior draws" if i == 0 else None)
    rattrs = {}
    if release_tree is not None:
        rview = read_release(release_tree)
        rflat = rview.curve.stack(sample=(dims.CHAIN, dims.DRAW)).transpose("sample", dims.T).values
        draw = int(pattrs.get("release_draw", 0))
        released = _as_line(rflat[draw], xv.size, "the released curve")
        ax.plot(xv, released, color=_RELEASE, lw=1.3, alpha=0.9, zorder=3, marker="o", ms=2.2,
                label="private release" + (f" (draw {draw})" if rflat.shape[0] > 1 else ""))
        rattrs = dict(release_tree.attrs)
    ax.plot(xv, band["mean"].values, color=_POSTERIOR, lw=2.4, zorder=4, label="posterior mean")
    if truth is not None:
        ax.plot(xv, _as_line(truth, xv.size, "truth"), color=_TRUTH, lw=1.8, ls=(0, (4, 2)), zorder=5,
                label=truth_label)

    if not rattrs:
        rattrs = {k[len("release_"):]: v for k, v in pattrs.items() if k.startswith("release_")}
    head = _title(rattrs).split("\n")
    target = str(pattrs.get("target", "summary"))
    what = "released summary" if target == "summary" else "population mean"
    title = f"Posterior of the {what} — {_prior_label(pattrs)}\ngiven one {head[0]}"
    if len(head) > 1:
        title += f"\n{head[1]}"
    ax.set_title(title, fontsize=10.5)
    tree_for_labels = release_tree if release_tree is not None else posterior_tree
    ax.set_xlabel(_x_label(tree_for_labels, x))
    ycurve = rview.curve if release_tree is not None else curve
    ax.set_ylabel(_y_label(tree_for_labels, ycurve))
    _finish_axes(ax, xv)
    return fig, ax


#: posterior variables of the density and kernel-machine inference results, by family
_GRID_VARIABLES = {"kde": ("population", "kde"), "machine": ("decision",)}


def _grid_family(tree: xr.DataTree):
    """``(family, variable)`` of a density or kernel-machine inference result, else None."""
    names = tree[POSTERIOR].data_vars
    for family, candidates in _GRID_VARIABLES.items():
        for name in candidates:
            if name in names:
                return family, name
    return None


def _feature_labels(tree: xr.DataTree, da: xr.DataArray, grid_dims) -> list[str]:
    """Axis labels of a density's or machine's grid dims: the release's feature names (attrs ``features`` /
    ``kde_variables``, or their ``release_`` copies on an inference result) with the coordinate's units."""
    at = tree.attrs
    text = next((str(at[k]) for k in ("features", "release_features", "kde_variables", "release_kde_variables")
                 if at.get(k)), "")
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) != len(grid_dims):
        names = [str(d) for d in grid_dims]
    return [_label(da[d].attrs.get("long_name") or n, da[d].attrs.get("units")) if d in da.coords else n
            for n, d in zip(names, grid_dims)]


def _plot_grid_inference(tree, release_tree, family, *, ci_prob, ci_kind, ax, truth, truth_label):
    """The posterior of a density or a kernel-machine decision function with its pointwise credible band
    (:func:`plot_inference` for those families): 1-D, mean and band over the feature; 2-D, the posterior mean
    as a filled contour, its zero contour (machines) and the grid points whose band contains 0 (machines) or
    the band's width (densities) as contours."""
    from .inference import credible_band

    plt = _plt()
    family, name = family
    band = credible_band(tree, ci_prob=ci_prob, ci_kind=ci_kind, var=name)
    ci_prob, ci_kind = band.attrs["ci_prob"], band.attrs["ci_kind"]
    da = tree[POSTERIOR][name]
    grid_dims = [d for d in da.dims if d not in (dims.CHAIN, dims.DRAW)]
    labels = _feature_labels(tree if release_tree is None else release_tree, da, grid_dims)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.8) if len(grid_dims) == 1 else (6.5, 5), layout="constrained")
    else:
        fig = ax.figure
    what = {"kde": "density", "machine": "decision function (label = sign)"}[family]
    label_ci = f"{ci_prob:.0%} pointwise credible band ({ci_kind.upper()})"
    released = None
    if release_tree is not None:
        rvar = "decision" if family == "machine" else "density"
        if rvar in release_tree[POSTERIOR].data_vars:
            rel = release_tree[POSTERIOR][rvar]
            released = rel.isel({d: 0 for d in rel.dims if d in (dims.CHAIN,)}).isel(
                {dims.DRAW: int(tree.attrs.get("release_draw", 0))})
    if len(grid_dims) == 1:
        xv = np.asarray(da[grid_dims[0]].values, dtype=float)
        ax.fill_between(xv, band["lower"].values, band["upper"].values, color=_POSTERIOR, alpha=0.22, linewidth=0,
                        label=label_ci, zorder=1)
        if released is not None:
            ax.plot(xv, np.asarray(released.values, dtype=float), color=_RELEASE, lw=1.3, alpha=0.9, zorder=3,
                    marker="o", ms=2.2, label="private release")
        ax.plot(xv, band["mean"].values, color=_POSTERIOR, lw=2.4, zorder=4, label="posterior mean")
        if truth is not None:
            ax.plot(xv, _as_line(truth, xv.size, "truth"), color=_TRUTH, lw=1.8, ls=(0, (4, 2)), zorder=5,
                    label=truth_label)
        if family == "machine":
            ax.axhline(0.0, color=_REFERENCE, lw=0.8, ls="--")
        ax.set_xlabel(labels[0])
        ax.set_ylabel(what)
        _finish_axes(ax, xv)
    else:
        x1, x2 = (np.asarray(da[d].values, dtype=float) for d in grid_dims)
        z = band["mean"].transpose(*grid_dims).values
        lo, hi = (band[k].transpose(*grid_dims).values for k in ("lower", "upper"))
        if family == "machine":
            lim = float(np.max(np.abs(z))) or 1.0
            cs = ax.contourf(x1, x2, z.T, levels=21, cmap="RdBu_r", vmin=-lim, vmax=lim)
            ax.contour(x1, x2, z.T, levels=[0.0], colors="k", linewidths=1.2)
            unsure = ((lo < 0) & (hi > 0)).astype(float)
            ax.contourf(x1, x2, unsure.T, levels=[0.5, 1.5], colors="none", hatches=["//"])
            ax.contour(x1, x2, unsure.T, levels=[0.5], colors=_REFERENCE, linewidths=0.8, linestyles="--")
            ax.plot([], [], color=_REFERENCE, ls="--", lw=0.8, label=f"{label_ci} contains 0 (hatched)")
        else:
            cs = ax.contourf(x1, x2, z.T, levels=21, cmap="viridis")
            ax.contour(x1, x2, (hi - lo).T, levels=5, colors="w", linewidths=0.7)
            ax.plot([], [], color="w", lw=0.7, label=f"width of the {label_ci}")
        fig.colorbar(cs, ax=ax, label=f"posterior mean {what}")
        ax.set_xlabel(labels[0])
        ax.set_ylabel(labels[1])
        leg = ax.legend(fontsize=8, loc="upper right", framealpha=0.9)
        leg.get_frame().set_edgecolor("none")
    at = release_tree.attrs if release_tree is not None else {
        k[len("release_"):]: v for k, v in tree.attrs.items() if k.startswith("release_")}
    head = f"private {what.split(' (')[0]} ({at.get('mechanism', '')}, ε = {_fmt(at.get('epsilon', float('nan')))})"
    ax.set_title(f"Posterior of the {what.split(' (')[0]} given one {head}", fontsize=10)
    return fig, ax


def plot_decision(tree: xr.DataTree, *, draw: int = 0, ax=None, points=None, labels=None):
    """Plot a released kernel-machine decision function (:func:`fdp_ppl.release`).

    One feature: every released draw as a line, with the zero level (the private classifier
    is the sign). Two features: the chosen draw as a filled contour with its zero contour.
    Only public content is drawn, plus ``points`` / ``labels`` if the caller passes them
    (the data holder's own records: label them as such before publishing a figure).

    Parameters
    ----------
    tree : xarray.DataTree
        With ``posterior/decision`` (chain, draw, x) or (chain, draw, x1, x2).
    draw : int
        Draw shown for two features (chain 0).

    Returns
    -------
    (fig, ax)

    Raises
    ------
    SchemaError
        No ``posterior/decision`` variable.
    """
    plt = _plt()
    try:
        dec = tree[POSTERIOR]["decision"]
    except KeyError:
        raise SchemaError("the tree has no posterior/decision variable", "pass a tree from fdp_ppl.release") \
            from None
    grid_dims = [d for d in dec.dims if d not in ("chain", "draw")]
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 4.5))
    at = tree.attrs
    title = f"private decision function ({at.get('mechanism', '')}, epsilon = {at.get('epsilon', float('nan')):g})"
    if len(grid_dims) == 1:
        x = dec[grid_dims[0]].values
        vals = dec.values.reshape(-1, x.size)
        for k, v in enumerate(vals[:30]):
            ax.plot(x, v, color=_DRAWS if k else _RELEASE, lw=1.5 if k == 0 else 0.8, alpha=1.0 if k == 0 else 0.6,
                    label="released" if k == 0 else None)
        ax.axhline(0.0, color=_REFERENCE, lw=0.8, ls="--")
        if points is not None and labels is not None:
            ax.scatter(np.ravel(points), np.ravel(labels), s=12, color=_TRUTH, label="data holder's records")
        ax.set_xlabel(_feature_labels(tree, dec, grid_dims)[0])
        ax.set_ylabel("decision value (label = sign)")
        ax.legend(loc="best", fontsize=8)
    else:
        x1, x2 = (dec[d].values for d in grid_dims)
        z = dec.isel(chain=0, draw=draw).transpose(*grid_dims).values
        lim = float(np.max(np.abs(z))) or 1.0
        cs = ax.contourf(x1, x2, z.T, levels=21, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.contour(x1, x2, z.T, levels=[0.0], colors="k", linewidths=1.2)
        fig.colorbar(cs, ax=ax, label="decision value (label = sign)")
        if points is not None and labels is not None:
            p = np.asarray(points)
            ax.scatter(p[:, 0], p[:, 1], c=np.asarray(labels), cmap="RdBu_r", edgecolors="k", s=14)
        ax.set_xlabel(_feature_labels(tree, dec, grid_dims)[0])
        ax.set_ylabel(_feature_labels(tree, dec, grid_dims)[1])
    ax.set_title(title, fontsize=9)
    return fig, ax


def plot_privacy(source, *, ax=None, alpha: float = 0.01, label: str | None = None):
    """Plot what a release, a plan or a whole ledger lets an attacker do: the f-DP trade-off curve.

    The curve is the smallest type II error (missed people) of any test telling two neighbouring datasets apart,
    against its type I error (false positives) — :func:`fdp_ppl.accounting.trade_off_curve`. Drawn beside it: the
    diagonal (no information: a coin flip), the curve the summed (ε, δ) alone would allow (basic composition, the
    (ε, δ) trade-off of Dong, Roth & Su 2022, eq. 2.2), and a marker at ``alpha`` with the attacker's power in words.
    Everything drawn is public (the recorded privacy events).

    Parameters
    ----------
    source : PrivacyEvent, list of PrivacyEvent, ledger, ReleasePlan or release tree
        As in :func:`fdp_ppl.accounting.privacy_profile`.
    ax : matplotlib Axes, optional
    alpha : float
        The false-positive rate marked (default 1 %).
    label : str, optional
        Legend label of the curve (default ``"this ledger"`` / ``"this release"``).

    Returns
    -------
    (fig, ax)

    Raises
    ------
    InputError
        As :func:`fdp_ppl.accounting.trade_off_curve`.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> fig, ax = fp.plots.plot_privacy(fp.PrivacyEvent("gaussian", 1.0, 1e-5, 5.0))
    >>> ax.get_xlabel()
    'type I error: false positives (alpha)'
    """
    from .accounting.curves import _events, attacker_power, trade_off_curve
    from .accounting.events import basic_total

    plt = _plt()
    events = _events(source)
    curve = trade_off_curve(events)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5.2, 5.0))
    a = curve["alpha"].values
    ax.plot([0, 1], [1, 0], color=_REFERENCE, lw=0.8, ls=":", label="no information (coin flip)")
    total = basic_total(events)
    eps, delta = float(total.epsilon), float(min(total.delta, 1.0))
    with np.errstate(over="ignore"):
        basic = np.maximum.reduce([np.zeros_like(a), 1 - delta - np.exp(min(eps, 700.0)) * a,
                                   np.exp(-min(eps, 700.0)) * (1 - delta - a)])
    ax.plot(a, basic, color=_DRAWS, lw=1.0, ls="--", label=f"summed (ε, δ) = ({eps:.3g}, {delta:.2g}) alone")
    many = len(events) > 1 or getattr(source, "events", None) is not None
    ax.plot(a, curve.values, color=_RELEASE, lw=2.0, label=label or ("this ledger" if many else "this release"))
    power = attacker_power(events, alpha)
    ax.scatter([alpha], [1 - power], color=_TRUTH, zorder=3,
               label=f"at {100 * alpha:.3g}% false positives: at most {100 * power:.2g}% power")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("type I error: false positives (alpha)")
    ax.set_ylabel("type II error: misses (beta)")
    ax.set_title("what an attacker can tell about one person (trade-off curve)", fontsize=9)
    ax.legend(loc="upper right", fontsize=7.5)
    return fig, ax


#: dims of a tree whose length grows with the basis or the grid (an ArviZ plot draws one panel per entry)
_WIDE_DIMS = ("basis", "component", "t", "x", "x1", "x2")


def arviz_view(tree: xr.DataTree, *, components: int = 4, points: int = 6) -> xr.DataTree:
    """A view of a release or an inference result small enough for ArviZ's per-variable plots.

    ArviZ draws one panel per scalar (``az.plot_trace``, ``az.plot_dist``): a release of 31 coefficients and a
    31-point curve asks for 62 panels, more than ``rcParams["plot.max_subplots"]`` (40). The view keeps the
    first ``components`` entries of every basis/component dim (the largest eigenvalues come first) and
    ``points`` evenly spaced points of every grid dim (``t``, ``x``...), in every group, with their original
    coordinates; nothing else changes and no data are copied beyond the selection. ``az.summary`` and
    ``az.plot_forest`` take the whole tree.

    Parameters
    ----------
    tree : xr.DataTree
    components : int
        Entries kept along ``basis`` / ``component`` (>= 1).
    points : int
        Points kept along ``t`` / ``x`` / ``x1`` / ``x2`` (>= 1), including both ends.

    Returns
    -------
    xr.DataTree
        Same groups and variables, shorter wide dims: e.g. ``az.plot_trace(arviz_view(tree))``.

    Raises
    ------
    ValueError
        ``components`` or ``points`` below 1.
    """
    if int(components) < 1 or int(points) < 1:
        raise ValueError("components and points must be >= 1")
    sizes: dict = {}
    for node in tree.subtree:
        for d, n in node.dataset.sizes.items():
            sizes[d] = max(sizes.get(d, 0), int(n))
    sel = {}
    for d, n in sizes.items():
        if d in ("basis", "component"):
            sel[d] = slice(0, int(components))
        elif d in _WIDE_DIMS and n > int(points):
            sel[d] = np.unique(np.round(np.linspace(0, n - 1, int(points))).astype(int))
    out = {}
    for node in tree.subtree:
        ds = node.to_dataset(inherit=False)
        out[node.path] = ds.isel({d: s for d, s in sel.items() if d in ds.dims})
    view = xr.DataTree.from_dict(out)
    view.attrs = dict(tree.attrs)
    return view


__all__ = ["plot_release", "plot_privacy", "plot_eigenbasis", "plot_fpca", "noise_sd", "arviz_view", "plot_inference",
           "plot_decision"]
