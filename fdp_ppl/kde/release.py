"""The density family's two release hooks (plan, draw) for :func:`fdp_ppl.plan` and :func:`fdp_ppl.release`.

Source: Hall, Rinaldo & Wasserman (2013), Corollary 9 (GP noise, batch release
with the squared scale of the errata in ``specs/gp-mechanism-hall.md``); Lin &
Reimherr (2026), Theorem 8 (ICLP noise). Registered for :class:`KDESummary`
in :data:`fdp_ppl.releasing.families.FAMILIES`; callers use :func:`fdp_ppl.release` (the protocol: checks,
charge, attributes) and :func:`fdp_ppl.plan`.

A density by mechanism name (``fdp-ppl kde --mechanism NAME``): :func:`kde_spec` is the public spec it releases,
:func:`plan_kde` its plan (what ``fdp-ppl kde --dry-run`` prints), both from public quantities only.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._names import KDE_BERNSTEIN_K, KDE_GRID_SIZE
from ..errors import InputError
from ..releasing.schema import CONSTANT_DATA, POSTERIOR, kde_attrs
from .gaussian import KDESummary


def plan_release(spec_or_fit, mechanism, *, draws: int = 1, seeded: bool = False, chains: int = 1,
                 bound: str | None = None, generator: str | None = None):
    """The density family's plan hook: the public plan of releasing a KDE (no data read).

    The mechanism calibrates the noise from the spec's public sensitivity (``mechanism.calibrate(spec)``);
    the ledger will be charged ``chains × draws × (ε, δ)``; the coefficients are drawn by the release
    generator of :mod:`fdp_ppl.noise.sampling`: OpenDP's floating-point-safe sampler when unseeded (default),
    the compiled PyMC sampler when seeded. The noise is ``N(c_j, σ² λ_j)`` (GP noise, Hall et al. 2013,
    Corollary 9, batch release ``s² K`` of ``specs/gp-mechanism-hall.md`` errata) or ``Laplace(c_j,
    Δ√λ_j/ε)`` (ICLP, Lin & Reimherr 2026, Theorem 8) on the retained eigenpairs of the noise kernel.

    Parameters
    ----------
    spec_or_fit : KDESpec or KDESummary
        KDESpec, SobolevKDESpec or ICLPKDESpec (or ``spec.fit(observations)``: only its spec is read).
    mechanism : GaussianMechanism or ICLP
        GaussianMechanism for KDESpec / SobolevKDESpec; ICLP for ICLPKDESpec.
    draws, chains : int
        Independent releases, arranged (chain, draw). One draw is one publication.
    seeded : bool
        A seeded study (the compiled float64 sampler; not floating-point safe).
    bound : str
        Sensitivity bound (the spec's :meth:`sensitivity`; default ``"tight"``).
    generator : {None, "opendp", "pymc"}
        See :func:`fdp_ppl.release`.

    Returns
    -------
    ReleasePlan
        ``output``: ``density`` (chain, draw, x) or (chain, draw, x1, x2) in the data's density units
        (1/unit^d); ``attrs``: ε, δ, n, h, kernel, sensitivity and its norm, the noise kernel, σ,
        ``noise_generator``, ``fp_safe``, the privacy unit and the budget spent.

    Raises
    ------
    CompatibilityError
        A mechanism that cannot release this spec.
    InputError
        draws or chains < 1; a seed with ``generator="opendp"``; scales that are not finite; draws that do
        not fit in memory.
    """
    from ..errors import CompatibilityError
    from ..noise.mechanisms import Mechanism
    from ..noise.sampling import generator_attrs, resolve_generator
    from ..releasing.plans import ReleasePlan, check_draws, check_scale

    spec = spec_or_fit.spec if isinstance(spec_or_fit, KDESummary) else spec_or_fit
    if not isinstance(mechanism, Mechanism) or mechanism.family not in spec.mechanism_families:
        raise CompatibilityError(f"the {spec.name} summary is released with a {'/'.join(spec.mechanism_families)} "
                                 f"mechanism, got {type(mechanism).__name__}",
                                 "GaussianMechanism(epsilon, delta) for KDESpec / SobolevKDESpec, ICLP(epsilon) for "
                                 "ICLPKDESpec")
    draws, chains = check_draws(draws, chains)
    k = chains * draws
    gen = resolve_generator(mechanism.law, generator, 0 if seeded else None)
    cal, sampler = _calibration(spec, mechanism, bound or "tight", gen)
    check_scale(cal.scale)
    cost = mechanism.budget * k
    unit = spec.privacy_unit
    gattrs = generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta)
    attrs = {
        **spec.attrs(),
        **cal.sensitivity.attrs(),
        **({**unit.attrs(), "neighbouring": spec.neighbouring_text()} if unit is not None else {"privacy_unit": "record"}),
        **mechanism.attrs(),
        "sigma": float(cal.sigma),
        "noise_covariance": spec.noise_covariance_text(),
        "releases": k,
        "chains": chains,
        "sampling": "exact forward draws, not MCMC",
        "source": spec.source,
        **gattrs,
        **kde_attrs(),  # the file says it is a density (schema.is_kde_release)
    }
    neighbouring = spec.neighbouring_text() if unit is not None else cal.sensitivity.neighbouring
    out = ReleasePlan(
        family="kde", mechanism=mechanism.family, noise_law=mechanism.law.name, epsilon=float(mechanism.epsilon),
        delta=float(mechanism.delta), draws=draws, sensitivity=float(cal.sensitivity.value),
        sensitivity_norm=cal.sensitivity.norm, noise_scale=cal.scale, noise_multiplier=float(cal.sigma),
        event=mechanism.privacy_event(cal, k), cost=cost,
        privacy_unit="record" if unit is None else unit.column, neighbouring=neighbouring,
        guarantee=(f"({gattrs['epsilon_guaranteed']:.6g}, {gattrs['delta_guaranteed']:.3g})-DP per draw for "
                   f"{neighbouring}"),
        fp_safe=bool(gattrs["fp_safe"]), certified=True, seeded=seeded, generator=gen,
        output={"chain": chains, "draw": draws, **dict(zip(spec.grid.dims, spec.grid.shape))},
        variable="density", coords=dict(zip(spec.grid.dims, spec.grid.axes)),
        units="probability per unit of " + " × ".join(spec.grid.dims),
        memory_bytes=3.0 * 8.0 * k * (spec.n_components + int(np.prod(spec.grid.shape))),
        label=f"{mechanism.family} KDE release ({spec.name})", attrs=attrs, state=(spec, cal, sampler, mechanism))
    out.check_memory()
    return out


def _calibration(spec, mechanism, bound: str, generator: str):
    """``(calibration, sampler)`` of releasing ``spec`` with ``mechanism``: public, computed once per public
    configuration of the spec and mechanism parameters (:func:`fdp_ppl.kde.grid.public_cached`; scales made
    read-only); mechanisms with parameters other than plain numbers and strings are calibrated every time."""
    from ..noise.sampling import sampler_for
    from .grid import public_cached

    def build():
        cal = mechanism.calibrate(spec, bound, generator=generator)
        return cal, sampler_for(mechanism.law, spec.n_components, generator)

    params = tuple(sorted(vars(mechanism).items()))
    if not all(isinstance(v, (int, float, str, bool, type(None))) for _, v in params):
        return build()
    key = ("kde-calibration", spec._public_key, tuple(sorted(spec.params.items())), type(mechanism), params, bound,
           generator)

    def frozen():
        cal, sampler = build()
        np.asarray(cal.scale).flags.writeable = False
        return cal, sampler

    return public_cached(key, frozen)


def draw_release(summary: KDESummary, plan, *, random_seed=None, progressbar: bool = False) -> xr.DataTree:
    """The density family's draw hook (called by :func:`fdp_ppl.release` after the charge).

    ``posterior/density`` (chain, draw, x) or (chain, draw, x1, x2); ``constant_data``: the grid axes, quadrature
    weights, eigenvalues and the noise scale per coefficient (never the non-private estimate nor the clipping
    count). On the grid the noise is the process restricted to the retained eigenpairs' span, reconstructed
    through the Kronecker factors.
    """
    spec, cal, sampler, mechanism = plan.state
    chains, draws = plan.output["chain"], plan.output["draw"]
    coef = sampler.draw(summary.coefficients, cal.scale, chains * draws, random_seed, calibration=cal,
                        study=plan.study)
    # release_scale: public post-processing (ICLPKDESpec(normalise=True) divides by its public mass); 1 otherwise
    density = (spec.basis.reconstruct(coef) * spec.release_scale).reshape((chains, draws) + spec.grid.shape)
    return _layout(spec, cal, mechanism, chains, draws).tree({POSTERIOR: {"density": density}})


def _layout(spec, cal, mechanism, chains: int, draws: int):
    """The release tree's layout (:class:`fdp_ppl.releasing.schema.TreeLayout`: ``posterior/density`` (chain,
    draw, grid dims) and ``constant_data``), built once per public configuration, scales and shape
    (:func:`fdp_ppl.kde.grid.public_cached`); each release only puts its density in."""
    from ..releasing.schema import TreeLayout
    from .grid import public_cached

    dims = spec.grid.dims

    def build():
        const = _constant_data(spec, cal, mechanism)
        shape = (chains, draws) + tuple(spec.grid.shape)
        post = xr.Dataset({"density": (("chain", "draw") + dims, np.broadcast_to(0.0, shape))},
                          coords={"chain": np.arange(chains), "draw": np.arange(draws),
                                  **dict(zip(dims, spec.grid.axes))})
        post["density"].attrs["long_name"] = "private density estimate"
        return TreeLayout({POSTERIOR: post, CONSTANT_DATA: const}, {POSTERIOR: ("density",)})

    key = ("kde-layout", spec._public_key, np.asarray(cal.scale, dtype=float).tobytes(),
           mechanism.law.describe_scale(), int(chains), int(draws))
    return public_cached(key, build)


def _constant_data(spec, cal, mechanism) -> xr.Dataset:
    """``constant_data``: the spec's public dataset and the noise scales, built once per public configuration and
    scales (:func:`fdp_ppl.kde.grid.public_cached`; its arrays read-only, shared by the releases)."""
    from .grid import _freeze, public_cached

    scale = np.asarray(cal.scale, dtype=float)
    description = mechanism.law.describe_scale()

    def build():
        const = spec.public_dataset().assign(noise_scale=(("component",), scale.copy()))
        const["noise_scale"].attrs["description"] = description
        _freeze([v.values for v in const.variables.values()])
        return const

    return public_cached(("kde-constant-data", spec._public_key, scale.tobytes(), description), build)


def accuracy_release(plan, **options):
    """The density family's accuracy hook (:meth:`fdp_ppl.ReleasePlan.accuracy`): the noise of the released
    density on its grid, ``reconstruct(ξ) × release_scale`` (linear in the noise coefficients ξ), through
    :func:`fdp_ppl.releasing.accuracy.noise_accuracy` (sup error of the density: ``simultaneous_halfwidth``)."""
    from ..releasing.accuracy import noise_accuracy, public_map

    spec, cal, _, mechanism = plan.state
    J = int(np.asarray(cal.scale).size)
    design = np.asarray(spec.basis.reconstruct(np.eye(J)), dtype=float).reshape(J, -1).T * spec.release_scale
    flat = np.prod(np.meshgrid(*spec.grid.weights, indexing="ij"), axis=0).reshape(-1)  # product quadrature
    pub = public_map(design, flat, dict(zip(spec.grid.dims, spec.grid.axes)), mechanism.law, n=int(spec.n))
    return noise_accuracy(plan, pub, **options)


def baseline_points(domain, n: int, grid_size: int | None = None, bandwidth: float | None = None):
    """``(points, h)`` of a 1-D FRL or Bernstein density: ``grid_size`` uniform points over ``domain`` (default
    :data:`~fdp_ppl._names.KDE_GRID_SIZE`) and the public bandwidth (default the rule ``1.06 (width/4)
    n^(-1/5)``, :func:`fdp_ppl.kde.bandwidth_rule`)."""
    from .grid import bandwidth_rule

    lo, hi = domain
    points = np.linspace(lo, hi, grid_size or KDE_GRID_SIZE[1])
    return points, float(bandwidth or bandwidth_rule(n, 1, (hi - lo) / 4)[0])


def kde_spec(mechanism: str, *, n: int, domain, d: int = 1, grid_size: int | None = None, bandwidth=None,
             eta: float = 1.25, normalise: bool = False, M: int | None = None, k: int | None = None,
             estimator: str = "exact", privacy_unit=None):
    """The public spec a named KDE mechanism releases on the uniform grid of ``grid_size`` points per axis over ``domain``
    (what ``fdp-ppl kde`` releases and plans; no data read).

    ``gp``: :class:`~fdp_ppl.kde.KDESpec`; ``sobolev``: :class:`~fdp_ppl.kde.SobolevKDESpec`; ``iclp``:
    :class:`~fdp_ppl.kde.ICLPKDESpec`; ``frl`` / ``bernstein``: in 1-D the mean of the kernel bumps
    (:func:`~fdp_ppl.kde.baselines.frl_kde_spec`, :func:`~fdp_ppl.kde.baselines.bernstein_kde_spec`, on
    :func:`baseline_points`), in 2-D :class:`~fdp_ppl.kde.baselines.FRLKDESpec` /
    :class:`~fdp_ppl.kde.baselines.BernsteinKDESpec`. Defaults: ``grid_size`` :data:`~fdp_ppl._names.KDE_GRID_SIZE`,
    ``k`` :data:`~fdp_ppl._names.KDE_BERNSTEIN_K` by dimension.
    """
    size = grid_size or KDE_GRID_SIZE[d]
    unit = {"privacy_unit": privacy_unit}
    if mechanism in ("frl", "bernstein") and d == 1:
        from .baselines import bernstein_kde_spec, frl_kde_spec

        points, h = baseline_points(domain, n, size, bandwidth)
        if mechanism == "frl":
            return frl_kde_spec(points, h, n, M=M, **unit)
        return bernstein_kde_spec(points, h, n, k=KDE_BERNSTEIN_K[1] if k is None else k, **unit)
    from .baselines import BernsteinKDESpec, FRLKDESpec
    from .gaussian import KDESpec
    from .grid import CartesianGrid
    from .iclp import ICLPKDESpec
    from .options import MECHANISMS
    from .sobolev import SobolevKDESpec

    grid = CartesianGrid.uniform([tuple(domain)] * d, size)
    if mechanism == "frl":  # 2-D: first floor(n^(1/3)) tensor-eigenbasis coefficients, exact l1 sensitivity
        return FRLKDESpec(grid=grid, bandwidth=bandwidth, n=n, M=M, **unit)
    if mechanism == "bernstein":  # 2-D: (k + 1)^2 lattice values, exact l1 sensitivity
        return BernsteinKDESpec(grid=grid, bandwidth=bandwidth, n=n, k=KDE_BERNSTEIN_K[2] if k is None else k, **unit)
    if mechanism == "iclp":
        return ICLPKDESpec(grid=grid, bandwidth=bandwidth, n=n, eta=eta, normalise=normalise, **unit)
    if mechanism not in MECHANISMS:
        raise InputError(f"unknown KDE mechanism {mechanism!r}", f"choose one of {', '.join(MECHANISMS)}")
    cls = KDESpec if mechanism == "gp" else SobolevKDESpec
    return cls(grid=grid, bandwidth=bandwidth, n=n, estimator=estimator, **unit)


def plan_kde(mechanism: str, epsilon: float, delta: float | None = None, *, n: int | None, domain, d: int = 1,
             grid_size: int | None = None, bandwidth=None, bandwidth_epsilon: float | None = None, eta: float = 1.25,
             normalise: bool = False, M: int | None = None, k: int | None = None, estimator: str = "exact",
             privacy_unit=None, draws: int = 1, seeded: bool = False, names: dict | None = None):
    """The plan of releasing a named KDE mechanism (:func:`fdp_ppl.plan` of :func:`kde_spec`): public quantities
    only, no data read. ``fdp-ppl kde --dry-run`` prints it; the same refusals from Python and the command line.

    Parameters are those of :func:`~fdp_ppl.kde.options.check_kde_options` and :func:`kde_spec`, with ``n`` the public number of
    observations (or units) and ``draws`` / ``seeded`` those of :func:`fdp_ppl.plan`.

    Returns
    -------
    ReleasePlan
        The kde family's plan (``gp``, ``sobolev``, ``iclp``, the 2-D baselines) or, for a 1-D ``frl`` /
        ``bernstein`` density, the mean family's plan of the kernel bumps' mean (the density on the grid).

    Raises
    ------
    InputError
        What :func:`~fdp_ppl.kde.options.check_kde_options` refuses; ``n`` missing (the plan reads no data); ``bandwidth_epsilon``
        given (a private bandwidth is drawn from the data and the density's noise depends on it).

    Examples
    --------
    >>> from fdp_ppl.kde.release import plan_kde
    >>> plan = plan_kde("iclp", 1.0, n=500, domain=(0, 1), grid_size=40)
    >>> plan.family, dict(plan.output)
    ('kde', {'chain': 1, 'draw': 1, 'x': 40})
    >>> plan_kde("gp", 1.0, 1e-5, n=None, domain=(0, 1))
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: a density plan needs the public number of observations n (the data are not read); pass n=500
    """
    from ..releasing.plans import plan
    from .options import check_kde_options, kde_mechanism

    check_kde_options(mechanism, delta=delta, estimator=estimator, domain=domain, bandwidth=bandwidth,
                      bandwidth_epsilon=bandwidth_epsilon, grid_size=grid_size, d=d, M=M, k=k, normalise=normalise,
                      eta=eta, privacy_unit=privacy_unit, names=names)
    if n is None or n < 1:
        raise InputError("a density plan needs the public number of observations n (the data are not read)",
                         "pass n=500")
    if bandwidth_epsilon is not None:
        raise InputError("a density plan takes a public bandwidth: a private one is drawn from the data, and the "
                         "density's noise scale depends on it",
                         "pass bandwidth=0.1 (or plan the private bandwidth alone: fdp_ppl.kde.bandwidth_plan)")
    spec = kde_spec(mechanism, n=int(n), domain=domain, d=d, grid_size=grid_size, bandwidth=bandwidth, eta=eta,
                    normalise=normalise, M=M, k=k, estimator=estimator, privacy_unit=privacy_unit)
    return plan(spec, kde_mechanism(mechanism, epsilon, delta), draws=draws, seeded=seeded)
