"""Exact releases as ``xarray.DataTree``.

:func:`release` draws from a mechanism's PyMC model with a forward sampler
compiled once per (noise law, grid size, number of components) and reused:
new summaries and scales are passed through ``pm.Data``. The result holds
only released quantities and public metadata (DESIGN invariants 5 and 6).
"""

from __future__ import annotations

import datetime
import numbers
import warnings

import numpy as np
import pymc as pm
import xarray as xr
from pymc.pytensorf import reseed_rngs
from pytensor.tensor.random.type import RandomGeneratorType

from . import dims
from .accounting import PrivacyLedger
from .errors import CompatibilityError
from .mechanisms import Mechanism, compile_mode
from .summaries import LinearSummary

_SAMPLERS: dict = {}


def _sampler(mechanism: Mechanism, n_components: int):
    """Forward sampler of the mechanism's law of released coefficients, compiled
    once per (noise law, J): ``coefficients ~ Law(mu=centre, scale)`` with shape
    (n_draws, J); centre, scale and n_draws are ``pm.Data``."""
    key = (mechanism.noise_law, n_components)
    if key not in _SAMPLERS:
        with pm.Model() as model:
            centre = pm.Data("summary_coefficients", np.zeros(n_components))
            sc = pm.Data("noise_scale", np.ones(n_components))
            n = pm.Data("n_draws", np.array(1, dtype="int64"))
            coefficients = mechanism.distribution("coefficients", mu=centre, scale=sc, shape=(n, n_components))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*BLAS.*")
            fn = pm.compile([], coefficients, mode=compile_mode())
        rngs = [v for v in fn.get_shared() if isinstance(v.type, RandomGeneratorType)]
        _SAMPLERS[key] = (model, fn, rngs)
    return _SAMPLERS[key]


def _seed(random_seed):
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**63))
    if random_seed is None or isinstance(random_seed, numbers.Integral):
        return np.random.SeedSequence(random_seed).generate_state(2).tolist()
    return list(np.random.SeedSequence(list(random_seed)).generate_state(2))


def draw_releases(mechanism: Mechanism, summary: LinearSummary, scale, draws: int = 1, random_seed=None,
                  progressbar: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Exact i.i.d. draws of released coefficients and curves (no bookkeeping).

    Returns
    -------
    coefficients : ndarray, shape (draws, J)
    curves : ndarray, shape (draws, K)
    """
    custom = getattr(mechanism, "draw_coefficients", None)
    if custom is not None:  # laws that are not independent per coefficient (elliptical scale mixtures)
        coef = np.asarray(custom(summary, scale, draws, random_seed))
        return coef, coef @ summary.design.T
    model, fn, rngs = _sampler(mechanism, summary.n_components)
    model.set_data("summary_coefficients", summary.coefficients)
    model.set_data("noise_scale", np.asarray(scale, dtype=float))
    reseed_rngs(rngs, _seed(random_seed))
    chunk = 1000
    sizes = [min(chunk, draws - i) for i in range(0, draws, chunk)]
    if progressbar and len(sizes) > 1:
        from rich.progress import track

        sizes = track(sizes, description=f"{mechanism.family} releases")
    parts = []
    try:
        for size in sizes:
            model.set_data("n_draws", np.array(size, dtype="int64"))
            parts.append(fn())
    finally:  # do not keep the non-private summary in the cached model
        model.set_data("summary_coefficients", np.zeros(summary.n_components))
    out_c = np.concatenate(parts, axis=0)
    # the curve Deterministic of the model, evaluated for all draws at once
    return out_c, out_c @ summary.design.T


def _clean_attrs(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if v is None:
            v = "none"
        elif isinstance(v, (bool, np.bool_)):
            v = int(v)
        elif isinstance(v, (np.integer,)):
            v = int(v)
        elif isinstance(v, (np.floating,)):
            v = float(v)
        elif isinstance(v, (tuple, list)):
            v = ",".join(str(x) for x in v)
        out[k] = v
    return out


def release(summary: LinearSummary, mechanism: Mechanism, *, draws: int = 1, random_seed=None,
            ledger: PrivacyLedger | None = None, bound: str = "tight", progressbar: bool = False,
            label: str = "") -> xr.DataTree:
    """Release a summary privately: exact forward draws of the mechanism.

    The draws come from a PyMC model of the mechanism's law, compiled once per
    (noise law, number of coefficients) and reused; the released curve is the
    model's ``curve`` Deterministic, ``design @ coefficients``.

    Parameters
    ----------
    summary : LinearSummary
        E.g. ``iclp_qr_mean(curves, basis, tau=1.0)``; its sensitivity is
        computed from public quantities only.
    mechanism : Mechanism
        ``ICLP(epsilon)``, ``FRL(epsilon)`` or ``GaussianMechanism(epsilon, delta)``.
    draws : int
        Number of independent releases. One draw is one publication; ``k``
        draws cost ``k × (ε, δ)`` by basic composition (recorded in attrs and
        charged to the ledger). ``k > 1`` is for studying the mechanism.
    random_seed : int, sequence of int or numpy Generator, optional
    ledger : PrivacyLedger, optional
        Charged ``draws × mechanism.budget``; the release is refused before any
        draw if it does not fit.
    bound : {"tight", "paper", "closed-form"}
        Which sensitivity bound calibrates the noise (see
        :meth:`LinearSummary.sensitivity`).
    progressbar : bool
    label : str
        Ledger label.

    Returns
    -------
    xr.DataTree
        ``posterior``: ``coefficients`` (chain, draw, basis) and ``curve``
        (chain, draw, t) with one chain; ``constant_data``: public
        ``eigenvalues`` (basis), ``eigenfunctions`` (t, basis),
        ``noise_scale`` (basis), ``quadrature_weights`` (t). Root ``attrs``
        record the mechanism, ε, δ, sensitivity, its norm and bound, the
        neighbouring relation, τ, n, kernel and its parameters, η, ψ, M,
        quadrature, package version and the budget spent. The non-private
        summary is never included.

    Raises
    ------
    CompatibilityError
        Summary or mechanism of the wrong type.
    BudgetExceededError
        The ledger cannot pay for the release.
    ValueError
        draws < 1.
    """
    from . import __version__

    if not isinstance(mechanism, Mechanism):
        raise CompatibilityError("mechanism must be an fdp_ppl Mechanism, e.g. ICLP(epsilon=1)")
    if not isinstance(summary, LinearSummary):
        raise CompatibilityError("summary must be a LinearSummary, e.g. iclp_qr_mean(curves, basis, tau=1)")
    draws = int(draws)
    if draws < 1:
        raise ValueError("draws must be >= 1")
    cal = mechanism.calibrate(summary, bound)
    cost = mechanism.budget * draws
    if ledger is not None:
        ledger.check(cost)
    coef, curves = draw_releases(mechanism, summary, cal.scale, draws, random_seed, progressbar)
    if ledger is not None:
        ledger.spend(cost, label or f"{mechanism.family} release of {summary.name}")

    grid = summary.grid
    coords = {dims.CHAIN: [0], dims.DRAW: np.arange(draws), dims.BASIS: np.arange(summary.n_components),
              dims.T: grid.t}
    posterior = xr.Dataset(
        {
            "coefficients": ((dims.CHAIN, dims.DRAW, dims.BASIS), coef[None]),
            "curve": ((dims.CHAIN, dims.DRAW, dims.T), curves[None]),
        },
        coords=coords,
    ).assign_coords(t_original=(dims.T, grid.points))
    posterior["coefficients"].attrs["description"] = "released coefficients <f~, phi_j>_w"
    posterior["curve"].attrs["description"] = "released curve sum_j coefficients_j phi_j(t)"
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    posterior.attrs = {"created_at": now, "creation_library": "fdp_ppl",
                       "creation_library_version": __version__, "sampling": "exact forward draws"}
    constant = summary.public_dataset().assign(noise_scale=((dims.BASIS,), np.asarray(cal.scale)))
    attrs = {}
    attrs.update(mechanism.attrs())
    attrs.update(cal.sensitivity.attrs())
    attrs.update(summary.attrs())
    attrs.update(summary.basis_attrs())
    attrs.update(grid.attrs())
    attrs.update({
        "noise_multiplier": cal.sigma,
        "draws": draws,
        "budget_spent_epsilon": cost.epsilon,
        "budget_spent_delta": cost.delta,
        "fdp_ppl_version": __version__,
        "created_at": now,
        "sampling": "exact forward draws (compiled PyMC sampler), not MCMC",
    })
    if hasattr(mechanism, "release_attrs"):
        attrs.update(mechanism.release_attrs(summary))
    if ledger is not None:
        attrs.update(ledger.attrs())
    tree = xr.DataTree.from_dict({"posterior": posterior, "constant_data": constant})
    tree.attrs = _clean_attrs(attrs)
    return tree


__all__ = ["release", "draw_releases"]
