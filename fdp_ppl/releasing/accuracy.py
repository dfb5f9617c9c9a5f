"""The accuracy a release will have, from its public plan alone: planning at no privacy cost.

For a mean curve (the ``"mean"`` family) the released curve is ``f̃(t) = Σ_j (c_j + ξ_j) φ_j(t)`` with
independent, uncorrelated noise coefficients ``ξ_j`` of the plan's noise law and per-coefficient scales
(``plan.noise_scale``), mapped to the grid by the spec's public design ``φ`` (K, J). Everything below is a
function of those public quantities: no data is read and nothing is charged.

* the pointwise noise sd ``sd(t) = sqrt(Σ_j φ_j(t)² Var ξ_j)`` (:func:`pointwise_sd`, also what
  :meth:`fdp_ppl.releasing.schema.ReleaseView.noise_sd` reports for a release);
* the RMS L² error from noise ``sqrt(E‖f̃ − f̂‖²_w) = sqrt(Σ_k w_k sd(t_k)²)`` (quadrature weights ``w``);
* pointwise and simultaneous (sup-norm) half-widths at a level: the quantiles of ``|ξ(t)|`` and of
  ``sup_t |ξ(t)|`` by Monte Carlo of the public noise law (the package's own sampler, a fixed seed);
* for a mean curve, the bias from shrinkage of a constant curve ``c``: ``c (g(t) − 1)`` with ``g`` the spec's public constant gain
  (:meth:`fdp_ppl.summaries.mean.EigenSpec.constant_gain`, from the summary's public shrinkage);
* for a kernel machine's decision function, the sign agreement at a stated margin ``γ``: the probability that the
  released sign equals the non-private one at a grid point where ``|f_D(x)| = γ``, ``P(ξ(x) > −γ)`` for the
  symmetric noise ``ξ`` (a lower bound wherever ``|f_D(x)| >= γ``), from the same Monte Carlo (:func:`public_map`'s
  ``margins``).

The principal components have no linear noise: their accuracy (the principal angle at a stated eigengap) is the
family's own Monte Carlo of its sampler (:func:`fdp_ppl.fpca.release.accuracy_release`).

:func:`smallest_epsilon` and :func:`largest_tau` invert these by bisection on plans (public only).
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import xarray as xr

from ..errors import InputError

#: the half-widths :func:`smallest_epsilon` and :func:`largest_tau` can target (variables of :func:`accuracy`)
TARGETS = ("simultaneous_halfwidth", "max_pointwise_halfwidth", "rms_l2_error")


def pointwise_sd(design, variance) -> np.ndarray:
    """Pointwise sd of ``Σ_j ξ_j φ_j(t)`` for uncorrelated ``ξ_j``: ``sqrt(Σ_j φ_j(t)² Var ξ_j)``.

    Parameters
    ----------
    design : array_like, shape (K, J)
        The basis functions on the grid.
    variance : array_like, shape (J,)
        Each coefficient's noise variance (:meth:`fdp_ppl.noise.laws.NoiseLaw.variance`).

    Returns
    -------
    ndarray, shape (K,)
        In the released curve's units.

    Examples
    --------
    >>> import numpy as np
    >>> pointwise_sd(np.array([[1.0, 0.0], [0.6, 0.8]]), np.array([4.0, 4.0])).tolist()
    [2.0, 2.0]
    """
    design = np.asarray(design, dtype=float)
    variance = np.asarray(variance, dtype=float)
    return np.sqrt(np.sum(design**2 * variance[None, :], axis=1))


def public_map(design, weights, coords, law, *, constant_gain=None, tau=float("nan"), n=-1, margins=None) -> dict:
    """The public inputs of :func:`noise_accuracy`: how a family's released variable depends on its noise.

    Parameters
    ----------
    design : array_like, shape (K, J)
        The released variable on its grid (flattened, K points) per unit of each noise coefficient.
    weights : array_like, shape (K,)
        Quadrature weights of the grid (the L² norm).
    coords : mapping of str to ndarray
        The grid's dims and axes, in order (their sizes multiply to K).
    law : NoiseLaw
        The plan's noise law.
    constant_gain : array_like, shape (K,), optional
        Share of a constant the noise-free summary keeps (mean curves); None: no bias figure.
    tau, n : float, int
        Recorded in the attributes.
    margins : array_like, shape (M,), optional
        Stated margins ``γ > 0`` of a classifier's decision function, in its units: the sign agreement at each
        (kernel machines); None: no sign figures.

    Raises
    ------
    InputError
        A margin that is not finite and > 0.
    """
    if margins is not None:
        margins = np.atleast_1d(np.asarray(margins, dtype=float)).reshape(-1)
        if margins.size == 0 or not np.all(np.isfinite(margins) & (margins > 0)):
            raise InputError(f"margins must be finite numbers > 0, got {margins.tolist()}",
                             "state the smallest |decision value| you assume, e.g. margin=0.5")
    return {"design": np.asarray(design, dtype=float), "weights": np.asarray(weights, dtype=float).reshape(-1),
            "coords": {str(k): np.asarray(v) for k, v in dict(coords).items()}, "law": law, "tau": float(tau),
            "n": int(n), "constant_gain": None if constant_gain is None else np.asarray(constant_gain, dtype=float),
            "margins": margins}


def _noise_draws(plan, pub, samples: int, seed) -> np.ndarray:
    """``samples`` draws of the noise on the grid, shape (samples, K): the plan's law and scales, the compiled
    (seedable) sampler of :mod:`fdp_ppl.noise.sampling`, centred at 0 (no data)."""
    from ..noise.sampling import sampler_for

    scale = np.asarray(plan.noise_scale, dtype=float)
    sampler = sampler_for(pub["law"], scale.size, "pymc")
    coef = sampler.draw(np.zeros(scale.size), scale, int(samples), seed, study=True)  # no data: a simulation
    return coef @ pub["design"].T


def accuracy(plan, *, level: float = 0.95, samples: int = 4000, seed=0, **options) -> xr.Dataset:
    """The accuracy of one draw of a planned release, from public quantities only (:meth:`ReleasePlan.accuracy`).

    Parameters
    ----------
    plan : ReleasePlan
        A plan of a family with an accuracy hook: mean curves (:func:`fdp_ppl.plan` of a summary spec),
        densities (a KDE spec), kernel machines (an ERM spec) and principal components (an FPCA spec).
    level : float
        Coverage of the pointwise and simultaneous half-widths (of the angle's quantile for components), in (0, 1).
    samples : int
        Monte Carlo draws of the public noise law for the quantiles (their relative error is about
        ``sqrt(level (1 − level) / samples) / density``: ~1% at the defaults).
    seed : int
        Seed of that Monte Carlo (public computation: the noise of no release).
    **options
        The family's own: ``constant`` (mean curves: the constant curve whose shrinkage bias is reported, in the
        data's units; default 1), ``margin`` (kernel machines: stated margins, :func:`fdp_ppl.machine.release.accuracy_release`),
        ``eigengap`` (principal components, :func:`fdp_ppl.fpca.release.accuracy_release`).

    Returns
    -------
    xr.Dataset
        The grid's dims (``t`` for a mean curve; ``x`` or ``x1, x2`` for a density or a decision function).
        Variables, in the released variable's units: ``noise_sd``, ``pointwise_halfwidth`` (over the grid),
        ``simultaneous_halfwidth``, ``max_pointwise_halfwidth``, ``rms_l2_error`` (scalars); for mean curves also
        ``constant_bias`` and ``constant_gain`` (over the grid) and ``max_abs_constant_bias``; for kernel machines
        ``sign_agreement`` (margin, grid), ``mean_sign_agreement`` and ``all_signs_kept`` (margin). Principal
        components: ``expected_angle`` and ``angle_quantile`` over ``eigengap``. Attrs: ``level``, ``samples``,
        ``seed``, ``family``, ``mechanism``, ``noise_law``, ``epsilon``, ``delta``, ``tau``, ``n``, ``source``
        (and ``constant`` for mean curves).

    Raises
    ------
    NotImplementedError
        A plan of a family without an accuracy hook.
    InputError
        ``level`` outside (0, 1) or ``samples`` < 100.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
    >>> acc = accuracy(fp.plan(fp.ICLPQRSpec(basis=basis, tau=1.0, n=100), fp.ICLP(1.0)), samples=500)
    >>> acc["noise_sd"].dims, bool(acc["simultaneous_halfwidth"] > acc["pointwise_halfwidth"].max())
    (('t',), True)
    """
    return plan.accuracy(level=level, samples=samples, seed=seed, **options)


def noise_accuracy(plan, pub: dict, *, level: float = 0.95, constant: float = 1.0, samples: int = 4000,
                   seed=0) -> xr.Dataset:
    """:func:`accuracy` of a plan whose released variable is ``design @ (centre + noise)`` (:func:`public_map`):
    the one implementation the families' accuracy hooks call.

    Raises
    ------
    InputError
        ``level`` outside (0, 1), ``samples`` < 100, or draws that do not fit in memory.
    """
    if not 0.0 < float(level) < 1.0:
        raise InputError(f"level must lie in (0, 1), got {level!r}", "e.g. level=0.95")
    if int(samples) < 100:
        raise InputError(f"samples must be at least 100, got {samples!r}", "e.g. samples=4000")
    scale = np.asarray(plan.noise_scale, dtype=float)
    from ..settings import check_memory

    grid_points = int(np.asarray(pub["weights"]).size)  # coefficients, their map to the grid, |noise| and its max
    check_memory(8.0 * int(samples) * (scale.size + 3 * grid_points), f"{int(samples)} Monte Carlo noise draws",
                 "ask for fewer samples (samples=, --samples)")
    sd = pointwise_sd(pub["design"], pub["law"].variance(scale))
    rms = float(np.sqrt(np.sum(pub["weights"] * sd**2)))
    signed = _noise_draws(plan, pub, samples, seed)
    noise = np.abs(signed)
    pointwise = np.quantile(noise, level, axis=0)
    simultaneous = float(np.quantile(noise.max(axis=1), level))
    dims = tuple(pub["coords"])
    shape = tuple(np.asarray(v).size for v in pub["coords"].values())

    def grid(values):
        return (dims, np.asarray(values).reshape(shape))

    where = ", ".join(dims)
    ds = xr.Dataset(
        {"noise_sd": (*grid(sd), {"long_name": "pointwise sd of the noise on the released variable"}),
         "pointwise_halfwidth": (*grid(pointwise), {"long_name": f"{level:g} quantile of |noise({where})|"}),
         "simultaneous_halfwidth": ((), simultaneous,
                                    {"long_name": f"{level:g} quantile of sup over ({where}) of |noise|"}),
         "max_pointwise_halfwidth": ((), float(pointwise.max()), {"long_name": "largest pointwise half-width"}),
         "rms_l2_error": ((), rms, {"long_name": "sqrt(E ||noise||^2) in the grid's quadrature (L2) norm"})},
        coords={d: (d, v) for d, v in pub["coords"].items()},
        attrs={"level": float(level), "samples": int(samples), "seed": int(seed),
               "family": plan.family, "mechanism": plan.mechanism, "noise_law": plan.noise_law,
               "epsilon": float(plan.epsilon), "delta": float(plan.delta), "tau": pub["tau"], "n": pub["n"],
               "units": "the released variable's units (one draw)",
               "source": "public plan only: noise law variance, public basis, Monte Carlo of the public law; "
                         "no data read, no privacy spent"})
    gain = pub["constant_gain"]
    if gain is not None:
        bias = float(constant) * (gain - 1.0)
        ds["constant_bias"] = (*grid(bias), {"long_name": f"bias of the noise-free summary of the constant {constant:g}"})
        ds["constant_gain"] = (*grid(gain), {"long_name": "share of a constant the summary keeps", "units": "1"})
        ds["max_abs_constant_bias"] = ((), float(np.max(np.abs(bias))), {"long_name": "largest |constant_bias|"})
        ds.attrs["constant"] = float(constant)
    if pub.get("margins") is not None:
        _sign_agreement(ds, signed, noise, pub["margins"], grid)
    return ds


def _sign_agreement(ds: xr.Dataset, signed, noise, margins, grid) -> None:
    """Add the sign figures at each stated margin ``γ`` to ``ds`` (the noise ``ξ`` is symmetric: ``P(ξ > −γ)`` is
    averaged with ``P(ξ < γ)``, one estimator for both signs of the decision value)."""
    agree = np.stack([0.5 * (np.mean(signed > -g, axis=0) + np.mean(signed < g, axis=0)) for g in margins])
    kept = np.array([np.mean(np.all(noise < g, axis=1)) for g in margins])
    dims, values = grid(agree[0])
    ds.coords["margin"] = ("margin", margins, {"long_name": "stated margin |f(x)| of the non-private decision value"})
    ds["sign_agreement"] = (("margin", *dims), agree.reshape((len(margins),) + values.shape),
                            {"long_name": "P(released sign = non-private sign) at a point with |f(x)| = margin "
                                          "(a lower bound where |f(x)| >= margin)", "units": "1"})
    ds["mean_sign_agreement"] = (("margin",), agree.mean(axis=1),
                                 {"long_name": "expected share of grid points whose sign agrees, when |f| = margin "
                                               "everywhere (a lower bound when |f| >= margin)", "units": "1"})
    ds["all_signs_kept"] = (("margin",), kept,
                            {"long_name": "P(sup |noise| < margin): every grid sign agrees with at least this "
                                          "probability when |f| >= margin everywhere", "units": "1"})


def accuracy_table(acc: xr.Dataset) -> list[tuple[str, str]]:
    """(field, value) rows of :func:`accuracy` for a printed plan."""
    level = acc.attrs["level"]
    if "expected_angle" in acc:  # principal components: the angle at each stated eigengap
        return [(f"angle at eigengap {float(g):.3g}",
                 f"mean {float(acc['expected_angle'].sel(eigengap=g)):.3g} deg, {level:.0%} quantile "
                 f"{float(acc['angle_quantile'].sel(eigengap=g)):.3g} deg") for g in acc["eigengap"].values]
    sd = acc["noise_sd"].values
    rows = [("RMS L2 error (noise)", f"{float(acc['rms_l2_error']):.4g}"),
            ("pointwise noise sd", f"{sd.min():.4g} to {sd.max():.4g}"),
            (f"pointwise {level:.0%} half-width", f"up to {float(acc['max_pointwise_halfwidth']):.4g}"),
            (f"simultaneous {level:.0%} half-width",
             f"{float(acc['simultaneous_halfwidth']):.4g} (sup over {', '.join(acc['noise_sd'].dims)})")]
    if "constant_bias" in acc:
        gain = acc["constant_gain"].values
        rows.append((f"bias of constant {acc.attrs['constant']:g}",
                     f"up to {float(acc['max_abs_constant_bias']):.4g} (gain {gain.min():.3g} to {gain.max():.3g})"))
    if "sign_agreement" in acc:
        rows += [(f"signs kept at margin {float(g):.3g}",
                  f"{float(acc['mean_sign_agreement'].sel(margin=g)):.2%} of the grid, all with probability "
                  f"{float(acc['all_signs_kept'].sel(margin=g)):.2%}") for g in acc["margin"].values]
    return rows


def _with_epsilon(mechanism, epsilon: float):
    """The same mechanism with another ε (a callable ``ε -> Mechanism`` is called)."""
    if callable(mechanism) and not hasattr(mechanism, "calibrate"):
        return mechanism(epsilon)
    names = [p for p in inspect.signature(type(mechanism).__init__).parameters if p != "self"]
    params = {k: v for k, v in vars(mechanism).items() if k in names}
    params["epsilon"] = float(epsilon)
    return type(mechanism)(**params)


def _width(spec, mechanism, target: str, level, samples, seed, options) -> float:
    from .families import entry_for

    if target not in TARGETS:
        raise InputError(f"target must be one of {', '.join(TARGETS)}, got {target!r}", "e.g. target='simultaneous_halfwidth'")
    planned = entry_for(spec).resolve("plan")(spec, mechanism, **options)  # fp.plan's hook (no cycle with plans)
    return float(accuracy(planned, level=level, samples=samples, seed=seed)[target])


def _bisect(f, lo: float, hi: float, rtol: float, increasing: bool) -> tuple[float, float]:
    """Bracket the root of ``f(x) = 0`` (monotone) on a log scale to relative width ``rtol``: (lo, hi)."""
    for _ in range(200):
        if hi / lo - 1.0 <= rtol:
            break
        mid = math.sqrt(lo * hi)
        if (f(mid) <= 0) == increasing:
            lo = mid
        else:
            hi = mid
    return lo, hi


def smallest_epsilon(spec, mechanism, width: float, *, target: str = "simultaneous_halfwidth", level: float = 0.95,
                     samples: int = 4000, seed=0, rtol: float = 1e-3, bounds=(1e-3, 100.0), **options) -> float:
    """The smallest ε whose planned release meets a target half-width (bisection on plans: public only).

    Parameters
    ----------
    spec : SummarySpec
        The public spec (τ, n, basis).
    mechanism : Mechanism or callable
        A mechanism whose ε is varied (its other parameters kept), or ``ε -> Mechanism``.
    width : float
        The half-width to meet, in the data's units.
    target : {"simultaneous_halfwidth", "max_pointwise_halfwidth", "rms_l2_error"}
        Which figure of :func:`accuracy` must be ``<= width``.
    level, samples, seed
        As :func:`accuracy` (the same seed at every step: the bisection is deterministic).
    rtol : float
        Relative precision of the ε returned (it meets the target; ``ε / (1 + rtol)`` may not).
    bounds : (float, float)
        The range of ε searched.
    **options
        Plan options (``bound``, ``generator``, ``draws``, ...).

    Returns
    -------
    float

    Raises
    ------
    InputError
        The target is not met even at ``bounds[1]`` (or already met at ``bounds[0]``: then that is returned).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
    >>> eps = smallest_epsilon(spec, fp.ICLP(1.0), 0.05, target="rms_l2_error", samples=200)
    >>> 0.05 / 1.01 < float(fp.plan(spec, fp.ICLP(eps)).accuracy(samples=200)["rms_l2_error"]) <= 0.05
    True
    """
    def f(eps):
        return _width(spec, _with_epsilon(mechanism, eps), target, level, samples, seed, options) - width

    lo, hi = map(float, bounds)
    if f(lo) <= 0:
        return lo
    if f(hi) > 0:
        raise InputError(f"no epsilon up to {hi:g} gives a {target} of {width:g} or less",
                         "ask for a wider band, a larger tau-independent n, or raise bounds=")
    return _bisect(f, lo, hi, rtol, increasing=False)[1]


def largest_tau(spec, mechanism, width: float, *, target: str = "simultaneous_halfwidth", level: float = 0.95,
                samples: int = 4000, seed=0, rtol: float = 1e-3, bounds=(1e-6, 1e6), **options) -> float:
    """The largest public τ whose planned release meets a target half-width (bisection on plans: public only).

    The noise grows with τ (the sensitivity is linear in it); a smaller τ clips more curves (a bias this
    function cannot see: it needs the data). Parameters as :func:`smallest_epsilon`, with ``spec``'s τ varied.

    Returns
    -------
    float

    Raises
    ------
    InputError
        The target is not met even at ``bounds[0]``.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(51))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
    >>> tau = largest_tau(spec, fp.ICLP(1.0), 0.05, target="rms_l2_error", samples=200)
    >>> round(tau * float(fp.plan(spec, fp.ICLP(1.0)).accuracy(samples=200)["rms_l2_error"]) / 0.05, 2)
    1.0
    """
    def f(tau):
        return _width(dataclasses.replace(spec, tau=tau), mechanism, target, level, samples, seed, options) - width

    lo, hi = map(float, bounds)
    if f(lo) > 0:
        raise InputError(f"no tau down to {lo:g} gives a {target} of {width:g} or less",
                         "ask for a wider band or spend a larger epsilon")
    if f(hi) <= 0:
        return hi
    return _bisect(f, lo, hi, rtol, increasing=True)[0]


__all__ = ["TARGETS", "accuracy", "accuracy_table", "largest_tau", "noise_accuracy", "pointwise_sd", "public_map",
           "smallest_epsilon"]
