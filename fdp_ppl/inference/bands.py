"""Credible bands for curves and scalar functionals of posterior curves."""

from __future__ import annotations

import arviz as az
import numpy as np
import xarray as xr

from .. import dims
from ..releasing.schema import CONSTANT_DATA, T_UNIT

CI_KINDS = ("eti", "hdi")


def ci_defaults(ci_prob: float | None = None, ci_kind: str | None = None) -> tuple[float, str]:
    """``(ci_prob, ci_kind)`` with the package's defaults filled in.

    Parameters
    ----------
    ci_prob : float, optional
        Default ``arviz.rcParams["stats.ci_prob"]`` (0.89 unless changed): the one default of every credible band
        of the package (mean curves, densities, kernel machines, components; tables and plots).
    ci_kind : {"eti", "hdi"}, optional
        Default ``arviz.rcParams["stats.ci_kind"]`` (``"eti"`` unless changed).

    Returns
    -------
    (float, str)
        Both are read at call time, so a change of ``az.rcParams`` (or ``az.rc_context``) applies.
    """
    if ci_prob is None:
        ci_prob = float(az.rcParams["stats.ci_prob"])
    if ci_kind is None:
        ci_kind = str(az.rcParams["stats.ci_kind"])
    return ci_prob, ci_kind


def _interval(da: xr.DataArray, ci_prob: float, ci_kind: str) -> xr.DataArray:
    if not 0 < ci_prob < 1:
        raise ValueError("ci_prob must lie in (0, 1)")
    if ci_kind == "eti":
        return az.eti(da, prob=ci_prob)
    if ci_kind == "hdi":
        return az.hdi(da, prob=ci_prob)
    raise ValueError(f"ci_kind must be one of {CI_KINDS}")


def credible_band(tree: xr.DataTree, *, ci_prob: float | None = None, ci_kind: str | None = None,
                  var: str = "curve") -> xr.Dataset:
    """Pointwise credible band of a posterior curve.

    Parameters
    ----------
    tree : xr.DataTree
        Result of :func:`~fdp_ppl.inference.infer`.
    ci_prob : float, optional
        Probability in (0, 1). Default ``arviz.rcParams["stats.ci_prob"]``; the value used
        is in the result's attrs.
    ci_kind : {"eti", "hdi"}, optional
        Equal-tailed or highest-density interval (ArviZ ``eti`` / ``hdi``).
        Default ArviZ's ``rcParams["stats.ci_kind"]`` (``"eti"`` unless changed).
    var : str

    Returns
    -------
    xr.Dataset
        ``mean``, ``lower``, ``upper`` over ``t``; attrs ci_prob, ci_kind
        (the values used).

    Raises
    ------
    ValueError
        ``ci_prob`` outside (0, 1) or an unknown ``ci_kind``.
    SchemaError
        ``tree`` is a release, not an inference result: a publication is one draw, so its "band" would have
        zero width; the uncertainty about the true curve is the posterior of :func:`~fdp_ppl.inference.infer`.
    """
    from ..releasing.schema import is_fpca_release, is_kde_release, is_release

    if is_release(tree) or is_fpca_release(tree) or is_kde_release(tree):
        from ..errors import SchemaError

        raise SchemaError("credible_band needs a posterior, and this is a release: one draw of the mechanism, "
                          "whose band would have zero width",
                          "run fp.infer(release, prior) first and pass its result (the public noise band of a "
                          "release is fdp_ppl.plots.noise_sd)")
    ci_prob, ci_kind = ci_defaults(ci_prob, ci_kind)
    da = tree["posterior"][var]
    iv = _interval(da, ci_prob, ci_kind)
    ci_dim = next(d for d in iv.dims if d not in da.dims)
    out = xr.Dataset({"mean": da.mean((dims.CHAIN, dims.DRAW)), "lower": iv.isel({ci_dim: 0}, drop=True),
                      "upper": iv.isel({ci_dim: 1}, drop=True)})
    out.attrs = {"ci_prob": ci_prob, "ci_kind": ci_kind, "variable": var}
    return out


def functionals(tree: xr.DataTree, *, points=(), var: str = "curve", weights=None, t_original=None) -> xr.Dataset:
    """Posterior draws of scalar functionals of a curve.

    Parameters
    ----------
    tree : xr.DataTree
        Result of :func:`~fdp_ppl.inference.infer` (or any tree with
        ``posterior/<var>`` over ``t``).
    points : sequence of float
        Locations (original units if ``t_original`` is given, else [0, 1]) for
        point values, by linear interpolation.
    weights : array (t,), optional
        Quadrature weights for the integral over [0, 1]; default trapezoid on
        the grid rescaled to [0, 1].
    t_original : array (t,), optional
        Original-unit grid, used for point locations and for the location of
        the maximum (e.g. ``tree["posterior"]["t"].values``).

    Returns
    -------
    xr.Dataset
        Over (chain, draw): ``integral`` (∫₀¹ f), ``argmax`` (location of the
        maximum), ``max`` and ``value_at_<p>`` for each point.

    Notes
    -----
    From schema 3 on, the ``t`` coordinate of a release or inference result
    is the grid in original units and ``constant_data/t_unit`` the grid on
    [0, 1]; older trees have the [0, 1] grid as ``t``. Both are read.
    """
    da = tree["posterior"][var]
    t = np.asarray(da[dims.T].values, dtype=float)
    const = tree[CONSTANT_DATA].dataset if CONSTANT_DATA in tree.children else None
    if const is not None and T_UNIT in const.data_vars:  # schema >= 3: t is the original grid
        t = np.asarray(const[T_UNIT].values, dtype=float)
    x = t if t_original is None else np.asarray(t_original)
    if weights is None:
        d = np.diff(t)
        weights = np.zeros_like(t)
        weights[:-1] += d / 2
        weights[1:] += d / 2
    w = xr.DataArray(np.asarray(weights), dims=(dims.T,))
    vals = da.values
    out = {"integral": (da * w).sum(dims.T),
           "max": da.max(dims.T),
           "argmax": xr.DataArray(x[np.argmax(vals, axis=-1)], dims=(dims.CHAIN, dims.DRAW))}
    for p in points:
        out[f"value_at_{p:g}"] = xr.DataArray(
            np.apply_along_axis(lambda f: np.interp(p, x, f), -1, vals), dims=(dims.CHAIN, dims.DRAW))
    return xr.Dataset(out)


def summarize_functionals(fun: xr.Dataset, *, ci_prob: float | None = None, ci_kind: str | None = None) -> xr.Dataset:
    """Posterior mean and credible interval of each functional from :func:`functionals`.

    ``ci_prob`` / ``ci_kind`` default to ``arviz.rcParams["stats.ci_prob"]`` /
    ``arviz.rcParams["stats.ci_kind"]`` as in :func:`credible_band`; the values used
    are in the result's attrs.
    """
    ci_prob, ci_kind = ci_defaults(ci_prob, ci_kind)
    rows = {}
    for name, da in fun.data_vars.items():
        iv = _interval(da, ci_prob, ci_kind)
        rows[name] = xr.DataArray([float(da.mean()), float(iv.values[0]), float(iv.values[1])],
                                  dims=("stat",), coords={"stat": ["mean", "lower", "upper"]})
    out = xr.Dataset(rows)
    out.attrs = {"ci_prob": ci_prob, "ci_kind": ci_kind}
    return out


def compare(results: dict, *, loo: str = "auto", **kwargs):
    """``az.compare`` over inference results of **one** release (different priors, kernels or models for it).

    What it means: each model is scored by its leave-one-out expected log predictive density over the released
    coefficients (frames for principal components), i.e. how well the model predicts one released value from the
    others, noise included. It compares priors' ability to explain the release, not closeness to the true
    curve; with few, strongly noisy high-frequency coefficients differences are often small: treat ``dse``
    seriously. It costs no privacy.

    Parameters
    ----------
    results : dict of str to xr.DataTree
        Inference results (:func:`fdp_ppl.infer`, any family) or population results
        (:func:`fdp_ppl.inference.population.population_result`: every observed release's values pointwise). Each
        records ``release_id``
        (:func:`fdp_ppl.inference.comparison.release_identity`: the sha256 of the released values it conditions on
        and the release's public attributes); all must be equal.
    loo : {"auto", "exact", "psis"}
        ``"auto"`` (default): the exact leave-one-out values where the result holds them (every hyperparameter
        fixed: the ``loo`` group, :mod:`fdp_ppl.inference.comparison`), else PSIS-LOO with Pareto k̂
        (``az.loo``); ``"exact"`` refuses a result without an exact form; ``"psis"`` forces PSIS-LOO.
    **kwargs
        Passed to ``az.compare`` (e.g. ``method="stacking"``, the weighting).

    Returns
    -------
    pandas.DataFrame
        ``az.compare``'s table; ``attrs["loo"]`` says which estimate each model got (``"exact"`` or ``"psis"``)
        and ``attrs["pareto_k_above_0.7"]`` how many k̂ exceeded 0.7 per model (0 for exact).

    Raises
    ------
    InputError
        Results of different releases or draws (one line, naming two of them and their ``release_id``), a result
        without ``release_id``, a result without a log-likelihood (``fp.infer(..., log_likelihood=False)``; the fix
        is ``log_likelihood=True``), or ``loo="exact"`` where there is no exact form.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> fp.inference.compare({"a": a_posterior, "b": b_posterior})   # doctest: +SKIP
    """
    from .comparison import GOOD_K, LOO_GROUP, check_log_likelihood, check_same_release
    from .comparison import loo as _loo

    check_same_release(results)
    for name, tree in results.items():   # before any score: one line naming the result and the fix
        check_log_likelihood(tree, name)
    elpd = {name: _loo(tree, method=loo) for name, tree in results.items()}
    table = az.compare(elpd, **kwargs)
    table.attrs["loo"] = {name: ("exact" if loo != "psis" and LOO_GROUP in tree.children else "psis")
                          for name, tree in results.items()}
    table.attrs["pareto_k_above_0.7"] = {name: int(np.sum(np.asarray(e.pareto_k) > GOOD_K))
                                         for name, e in elpd.items()}
    return table


__all__ = ["credible_band", "functionals", "summarize_functionals", "compare", "ci_defaults", "CI_KINDS"]
