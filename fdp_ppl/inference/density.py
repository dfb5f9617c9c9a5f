"""Noise-aware posterior of a density from one private kernel density estimate (post-processing: no privacy cost).

Every KDE release the package writes (:func:`fdp_ppl.release`, ``fdp-ppl kde``) is a vector of released
coefficients ``y_j = c_j + ξ_j`` on a public basis, reconstructed on a public grid:

==========  ===========================================  ===========================================
mechanism   basis (owner)                                noise ``ξ_j`` (public scale in the file)
==========  ===========================================  ===========================================
gp          eigenpairs of ``exp(-½ (x−y)ᵀH⁻¹(x−y))``     ``N(0, σ²λ_j)``: Hall et al. (2013), Cor. 9, §4.1
sobolev     eigenpairs of ``exp(-Σ_k |x_k−y_k|/h_k)``    ``N(0, σ²λ_j)``: Hall et al. (2013), §4.2
iclp        eigenpairs of ``K_H`` (estimator ``K_H^η``)   ``Laplace(0, Δ√λ_j/ε)``: Lin & Reimherr (2026), Thm 8, §4.3
frl         first M eigenpairs of the Gaussian kernel    ``Laplace(0, Δ/ε)`` (FRL)
bernstein   (tensor) Bernstein lattice values            ``Laplace(0, Δ/ε)`` (Aldà & Rubinstein 2017)
==========  ===========================================  ===========================================

The basis is rebuilt from the file's public attributes by the spec that owns it (:class:`~fdp_ppl.kde.KDESpec`,
:class:`~fdp_ppl.kde.SobolevKDESpec`, :class:`~fdp_ppl.kde.ICLPKDESpec`, the baselines of
:mod:`fdp_ppl.kde.baselines`), checked against the stored eigenvalues, and the noise law and its per-coefficient
scale are the file's own (``noise_law``, ``constant_data/noise_scale``: on the grid the Gaussian noise is the
GP ``σ²K`` restricted to the retained eigenpairs, i.e. independent ``N(0, σ²λ_j)`` coefficients). The likelihood
of the release is therefore exact, and because the prior below is diagonal in the release's basis the posterior
factorises into one-dimensional posteriors drawn exactly by the noise law
(:meth:`fdp_ppl.noise.laws.NoiseLaw.centre_posterior_draws`: conjugate Normal for GP noise, two truncated normals for
Laplace noise). No MCMC.

Target and prior
----------------
The posterior variable ``kde`` is the **non-private estimate the release is centred on**, on the release's grid
(the Gaussian KDE for gp / sobolev, the ``K^η`` estimator of eq. (12) for iclp, its projection on the M
coefficients for frl, the Bernstein polynomial through the KDE's lattice values for bernstein). Its coefficients
get the prior ``c_j ~ N(0, (a e_j)²)`` where ``e_j = max_x |n r_j(x)|`` is the public **envelope**: ``r_j(x)`` is
the coefficient of one record at grid node ``x`` (the spec's ``record_coefficients``), and ``c_j`` is an average of
n such values, so ``|c_j| <= e_j`` for every data set (exactly where records are snapped to grid nodes: iclp,
frl, bernstein; up to the variation of a bump's coefficient between neighbouring nodes for gp and sobolev, whose
records are not snapped). The amplitude ``a`` is either fixed or, by default, has a
half-Cauchy(``amplitude_scale``) hyperprior integrated exactly on a fine logarithmic grid (the marginal
likelihood of each amplitude is a product of the law's one-dimensional marginals,
:meth:`fdp_ppl.noise.laws.NoiseLaw.marginal_logp`); ``a`` is drawn from that discrete posterior, then the coefficients
given ``a``. ``DensityPrior("flat")`` uses the likelihood alone (posterior ``c = y − ξ``, exact frequentist
coverage of every band, widest bands).

With ``target="population"`` (Gaussian-noise releases: gp, sobolev) the posterior is of the **smoothed
population density** ``E[kde]``: the estimate's coefficients are a mean of n records' coefficients, so given the
population they are ``N(μ, Σ/n)`` (central limit theorem), and the release is ``y ~ N(μ, Σ/n + diag(b²))``,
conjugate under the same envelope prior on ``μ``; ``Σ`` is evaluated at the posterior mean of the estimate
(:func:`sampling_covariance`, a plug-in). Laplace-noise releases would need a sampler for this target and are
refused.

Positivity and mass
-------------------
The Gaussian prior does not force ``kde >= 0`` nor a unit mass (the estimate's mass on a bounded box is below 1
when bumps cross its edges, and the ICLP estimator's mass is its ``public_mass``). The result reports, as
posterior statistics, the probability that the estimate is negative at each grid point (``prob_negative``) and
the expected mass below zero (attrs ``posterior_mass_below_zero``). The posterior variable ``pdf`` is the
**probability density** ``max(kde, 0) / ∫ max(kde, 0)`` of each draw (a projection of each draw onto densities
on the box, post-processing of the posterior, so exact as a posterior of that functional); the CDF, quantiles
and modes of :func:`density_functionals` and :func:`density_bands` are those of ``pdf``.

This module reads only the public release (the file's public attributes, grid, noise scales and released
density): it never sees the data.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import dims
from ..releasing import schema as S
from ..errors import InputError, SchemaError
from ..spaces.grid import trapezoid_weights
from .comparison import (LOO_GROUP, LOO_IMPROPER, RELEASE_ID, STANDARDISED, loo_dataset, release_identity,
                         standardised)

#: dim of the released coefficients of a KDE release (its ``constant_data``)
COMPONENT = "component"
PRIOR_KINDS = ("envelope", "flat")
MECHANISMS = ("gp", "sobolev", "iclp", "frl", "bernstein")
_SUMMARY_TO_MECHANISM = {"kde": "gp", "kde-sobolev": "sobolev", "kde-iclp-qr": "iclp", "kde-frl": "frl",
                         "kde-bernstein": "bernstein", "frl": "frl", "bernstein": "bernstein"}


@dataclass(frozen=True)
class DensityPrior:
    """Prior of the non-private estimate's coefficients in the release's basis (module docstring).

    Parameters
    ----------
    kind : {"envelope", "flat"}
        ``"envelope"``: ``c_j ~ N(0, (a e_j)²)`` with the public envelope ``e_j`` (``|c_j| <= e_j`` for every
        data set, up to the variation between grid nodes for gp / sobolev); ``"flat"``: no prior (the posterior is the likelihood: ``c = y − ξ``).
    amplitude : float, optional
        Fixed ``a`` > 0; None (default): half-Cauchy(``amplitude_scale``) hyperprior integrated on a grid.
    amplitude_scale : float
        Scale of the half-Cauchy hyperprior (1: the envelope itself is the typical size).
    grid_size : int
        Points of the logarithmic amplitude grid over ``[1e-5, 1e2] × amplitude_scale``.

    Raises
    ------
    InputError
        Unknown kind, a non-positive amplitude or scale, grid_size < 16.
    """

    kind: str = "envelope"
    amplitude: float | None = None
    amplitude_scale: float = 1.0
    grid_size: int = 400

    def __post_init__(self):
        if self.kind not in PRIOR_KINDS:
            raise InputError(f"unknown density prior {self.kind!r}", f"use one of {PRIOR_KINDS}")
        if self.amplitude is not None and not (np.isfinite(self.amplitude) and self.amplitude > 0):
            raise InputError(f"amplitude must be a finite number > 0 (got {self.amplitude})", "pass e.g. 0.1, or None")
        if not (np.isfinite(self.amplitude_scale) and self.amplitude_scale > 0):
            raise InputError(f"amplitude_scale must be > 0 (got {self.amplitude_scale})", "pass e.g. 1")
        if int(self.grid_size) < 16:
            raise InputError(f"grid_size must be >= 16 (got {self.grid_size})", "pass e.g. 400")

    def describe(self) -> dict:
        if self.kind == "flat":
            return {"prior": "flat (likelihood only)"}
        amp = (f"{self.amplitude:g}" if self.amplitude is not None else
               f"half-Cauchy({self.amplitude_scale:g}) on a {self.grid_size}-point log grid")
        return {"prior": "envelope: c_j ~ N(0, (a e_j)^2), e_j = max_x |n r_j(x)| (public)",
                "prior_amplitude": amp}


def resolve_density_prior(prior) -> DensityPrior:
    """A :class:`DensityPrior` from ``prior``: an instance, ``"envelope"`` / ``"flat"``, or ``None`` / ``"gp"``
    / ``"auto"`` (the default envelope prior; ``"gp"`` is :func:`fdp_ppl.infer`'s default argument).

    Raises
    ------
    InputError
        Anything else.
    """
    if isinstance(prior, DensityPrior):
        return prior
    if prior is None or prior in ("gp", "auto"):
        return DensityPrior()
    if isinstance(prior, str) and prior in PRIOR_KINDS:
        return DensityPrior(prior)
    raise InputError(f"a kernel density estimate takes a DensityPrior, 'envelope' or 'flat' (got {prior!r})",
                     "pass prior=fdp_ppl.inference.density.DensityPrior(...) or prior='envelope'")


# ----------------------------------------------------------------------------------------------- reading
@dataclass
class KDEView:
    """The public content of a KDE release, with its basis rebuilt (:func:`read_kde_release`).

    Attributes
    ----------
    mechanism : str
        One of :data:`MECHANISMS`.
    spec : object
        The public spec that owns the basis (a :class:`~fdp_ppl.kde.KDESpec` subclass, or the 1-D
        :class:`~fdp_ppl.summaries.FRLSpec` / :class:`~fdp_ppl.summaries.BernsteinSpec` of ``fdp-ppl kde``).
    grid_dims : tuple of str
        ``("x",)`` or ``("x1", "x2")``.
    axes : tuple of ndarray
    weights : tuple of ndarray
        Quadrature weights per axis (data units).
    released : ndarray (J,)
        The released coefficients of the draw conditioned on.
    observed : ndarray (grid shape)
        The released density of that draw.
    scale : ndarray (J,)
    law : NoiseLaw
    envelope : ndarray (J,)
        ``max_x |n r_j(x)|`` over grid nodes.
    """

    mechanism: str
    spec: object
    grid_dims: tuple
    axes: tuple
    weights: tuple
    released: np.ndarray
    observed: np.ndarray
    scale: np.ndarray
    law: object
    envelope: np.ndarray
    attrs: dict = field(default_factory=dict)
    _reconstruct: object = None
    #: one record's coefficients at every grid node, shape (nodes, J), nodes in C order of the grid
    record_rows: np.ndarray | None = None

    @property
    def shape(self) -> tuple:
        return tuple(a.size for a in self.axes)

    def reconstruct(self, coefficients) -> np.ndarray:
        """Coefficients ``(..., J)`` → values on the grid ``(..., *shape)`` (the release's own map)."""
        return self._reconstruct(np.asarray(coefficients, dtype=float))

    def integrate(self, values) -> np.ndarray:
        """``∫ f`` over the box by the grid's quadrature; ``(..., *shape) -> (...)``."""
        out = np.asarray(values, dtype=float)
        for w in reversed(self.weights):
            out = out @ w
        return out


def _list(value) -> list:
    if isinstance(value, str):
        return [float(v) for v in np.atleast_1d(ast.literal_eval(value))]
    return [float(v) for v in np.atleast_1d(value)]


def _mechanism(attrs) -> str:
    mech = attrs.get("kde_mechanism")
    if mech is None:
        mech = _SUMMARY_TO_MECHANISM.get(str(attrs.get("summary", "")))
    if mech not in MECHANISMS:
        raise SchemaError(f"cannot tell which KDE mechanism wrote this file (summary {attrs.get('summary')!r})",
                          "pass a file written by fdp_ppl.release or fdp-ppl kde")
    return str(mech)


def _grid_spec(mech, attrs, axes):
    from ..kde import ICLPKDESpec, KDESpec, SobolevKDESpec
    from ..kde.baselines import BernsteinKDESpec, FRLKDESpec
    from ..spaces.grid import CartesianGrid

    grid = CartesianGrid(tuple(axes))
    h = _list(attrs["bandwidth"]) if "bandwidth" in attrs else [float(attrs["h"])] * grid.d
    n = int(attrs["n"])
    tol = float(attrs.get("eigen_rel_tol", 1e-12))
    if mech == "gp":
        return KDESpec(grid=grid, bandwidth=h, n=n, rel_tol=tol)
    if mech == "sobolev":
        return SobolevKDESpec(grid=grid, bandwidth=h, n=n, rel_tol=tol)
    if mech == "iclp":
        return ICLPKDESpec(grid=grid, bandwidth=h, n=n, eta=float(attrs["eta"]), rel_tol=tol,
                           kernel=str(attrs.get("iclp_kernel", "gaussian")), normalise=bool(int(attrs["normalise"])))
    if mech == "frl":
        return FRLKDESpec(grid=grid, bandwidth=h, n=n, M=int(attrs["M"]), rel_tol=tol)
    return BernsteinKDESpec(grid=grid, bandwidth=h, n=n, k=int(attrs["lattice_k"]))


def _axis_solve(values, designs) -> np.ndarray:
    """Least-squares inverse of a Kronecker design (one (K_k, m_k) matrix per axis); ``(..., *K) -> (..., Π m)``."""
    out = np.asarray(values, dtype=float)
    d = len(designs)
    for k, B in enumerate(designs):
        axis = out.ndim - d + k
        out = np.moveaxis(np.moveaxis(out, axis, -1) @ np.linalg.pinv(B).T, -1, axis)
    return out.reshape(out.shape[: out.ndim - d] + (-1,))


def read_kde_release(release: xr.DataTree, draw: int = 0) -> KDEView:
    """Read a KDE release and rebuild its public basis (never anything but public content).

    Parameters
    ----------
    release : xr.DataTree
        From :func:`fdp_ppl.release` or ``fdp-ppl kde`` (any mechanism, 1-D or 2-D).
    draw : int
        Released draw to condition on (chains then draws flattened); each draw is a separate publication.

    Returns
    -------
    KDEView

    Raises
    ------
    SchemaError
        Not a KDE release, or a basis that the file's attributes do not rebuild (its stored eigenvalues or its
        number of noise scales differ).
    InputError
        ``draw`` out of range.
    """
    from ..noise.laws import law_from_name

    if not S.is_kde_release(release):
        raise SchemaError("not a kernel density estimate release", "pass a file written by fdp-ppl kde or "
                          "fdp_ppl.release")
    attrs = dict(release.attrs)
    mech = _mechanism(attrs)
    dens = release[S.POSTERIOR]["density"]
    grid_dims = tuple(d for d in dens.dims if d not in (dims.CHAIN, dims.DRAW))
    flat = np.asarray(dens.transpose(dims.CHAIN, dims.DRAW, *grid_dims).values, dtype=float)
    flat = flat.reshape((-1,) + flat.shape[2:])
    if not 0 <= int(draw) < flat.shape[0]:
        raise InputError(f"draw must lie in 0..{flat.shape[0] - 1}", "pass draw=0")
    if flat.shape[0] > 1:
        warnings.warn(f"the release holds {flat.shape[0]} draws; inference uses draw {draw} only (each draw is a "
                      "separate publication)", UserWarning, stacklevel=3)
    observed = flat[int(draw)]
    axes = tuple(np.asarray(dens[d].values, dtype=float) for d in grid_dims)
    const = release[S.CONSTANT_DATA].to_dataset()
    scale = np.asarray(const[S.NOISE_SCALE].values, dtype=float)
    law = law_from_name(str(attrs["noise_law"]))
    n = int(attrs["n"])
    grid_spec = mech in ("gp", "sobolev", "iclp") or "weights_" + grid_dims[0] in const
    if grid_spec:
        spec = _grid_spec(mech, attrs, axes)
        weights = tuple(spec.grid.weights)
        rs = float(spec.release_scale)
        if mech == "bernstein":
            released = _axis_solve(observed, spec.basis.designs)
        else:
            released = spec.basis.coefficients(observed / rs)

        def recon(c, _spec=spec, _rs=rs):
            return _spec.basis.reconstruct(c) * _rs

        if S.EIGENVALUES in const and mech != "bernstein":
            stored = np.asarray(const[S.EIGENVALUES].values, dtype=float)
            if stored.shape != spec.eigenvalues.shape or not np.allclose(stored, spec.eigenvalues, rtol=1e-6,
                                                                         atol=1e-12 * stored.max()):
                raise SchemaError("the file's attributes do not rebuild its eigenbasis (stored eigenvalues differ)",
                                  "pass an unmodified file written by fdp-ppl kde / fdp_ppl.release")
        rows = np.stack([spec.record_coefficients(np.array([a[i] for a, i in zip(axes, node)]))
                         for node in np.ndindex(*spec.grid.shape)]) * spec.n
    else:  # fdp-ppl kde, 1-D frl / bernstein: the KDE bumps released as a mean curve
        from ..kde.baselines import bernstein_kde_spec, frl_kde_spec, kde_bumps

        (pts,) = axes
        h = float(attrs["h"])
        if mech == "frl":
            spec = frl_kde_spec(pts, h, n, M=int(attrs.get("frl_M", attrs.get("M"))))
        else:
            spec = bernstein_kde_spec(pts, h, n, k=int(attrs.get("lattice_k", attrs.get("bernstein_k"))))
        pub = spec.public_dataset()
        A = S.coefficient_map(pub[dims.T].values, pub[S.QUADRATURE_WEIGHTS].values,
                              eigenfunctions=pub[S.EIGENFUNCTIONS].values if S.EIGENFUNCTIONS in pub else None,
                              lattice=pub[S.LATTICE].values if S.LATTICE in pub else None)
        design = np.asarray(spec.design, dtype=float)
        released = np.linalg.lstsq(design, observed, rcond=None)[0]
        weights = (trapezoid_weights(pts),)

        def recon(c, _D=design):
            return c @ _D.T

        rows = kde_bumps(pts, pts, h) @ A.T  # one record at each grid node (its bump), in the release's basis
    if released.shape[-1] != scale.size:
        raise SchemaError(f"the rebuilt basis has {released.shape[-1]} components but the file has {scale.size} "
                          "noise scales", "pass an unmodified file written by fdp-ppl kde / fdp_ppl.release")
    env = np.max(np.abs(rows), axis=0)
    env = np.maximum(env, 1e-12 * float(env.max()))
    return KDEView(mechanism=mech, spec=spec, grid_dims=grid_dims, axes=axes, weights=weights,
                   released=np.asarray(released, dtype=float), observed=observed, scale=scale, law=law,
                   envelope=env, attrs=attrs, _reconstruct=recon, record_rows=rows)


# ----------------------------------------------------------------------------------------------- posterior
def _noise_draws(law, scale, size, rng) -> np.ndarray:
    """Draws of the release noise ``(*size, J)`` from the law (Normal / Laplace: numpy; others: the law's graph)."""
    from ..noise.laws import Laplace, Normal

    b = np.broadcast_to(scale, tuple(size) + scale.shape)
    if isinstance(law, Normal):
        return rng.normal(0.0, b)
    if isinstance(law, Laplace):
        return rng.laplace(0.0, b)
    import pymc as pm

    n = int(np.prod(size))
    return np.asarray(pm.draw(law.rv(np.zeros(scale.size), scale, n), random_seed=rng)).reshape(b.shape)


def amplitude_posterior(view: KDEView, prior: DensityPrior) -> tuple[np.ndarray, np.ndarray]:
    """The amplitude grid and its posterior probabilities (exact marginal likelihood at every grid point).

    ``log p(a | y) = log p(a) + Σ_j log ∫ law(y_j; c, b_j) N(c; 0, (a e_j)²) dc + const``, with the law's own
    one-dimensional marginal (:meth:`fdp_ppl.noise.laws.NoiseLaw.marginal_logp`) and the half-Cauchy hyperprior on a
    logarithmic grid (density times the grid's Jacobian ``a``). Returns ``(grid (G,), probabilities (G,))``.
    """
    from ..noise.laws import Normal

    grid = prior.amplitude_scale * np.logspace(-5, 2, int(prior.grid_size))
    g = grid[:, None] * view.envelope[None, :]
    ll = np.sum(view.law.marginal_logp(view.released[None, :], view.scale[None, :], Normal(), 0.0, g), axis=-1)
    s = prior.amplitude_scale
    logprior = np.log(grid) - np.log1p((grid / s) ** 2)
    logp = ll + logprior
    p = np.exp(logp - logp.max())
    return grid, p / p.sum()


def sampling_covariance(view: KDEView, density) -> np.ndarray:
    """Covariance ``Σ`` (J, J) of one record's coefficients ``r(X)`` when ``X`` has the density ``density`` on the
    grid (plug-in; ``*grid shape``): ``Σ_x q_x r(x) r(x)ᵀ − m mᵀ`` over grid nodes with ``q_x ∝ density(x) w_x``
    (clipped at 0) and ``m = Σ_x q_x r(x)``. The estimate's coefficients are the mean of n such vectors, so their
    sampling covariance is ``Σ/n`` (central limit theorem)."""
    w = view.weights[0]
    for extra in view.weights[1:]:
        w = np.multiply.outer(w, extra)
    q = np.maximum(np.asarray(density, dtype=float), 0.0).ravel() * w.ravel()
    q = q / q.sum()
    r = view.record_rows
    m = q @ r
    return (r * q[:, None]).T @ r - np.outer(m, m)


def _population_draws(view: KDEView, prior: DensityPrior, size: int, rng, centre) -> tuple[np.ndarray, np.ndarray]:
    """Exact draws of the population coefficients ``μ`` (Gaussian noise): ``y ~ N(μ, Σ/n + diag(b²))``,
    ``μ ~ N(0, a² diag(e²))``; the amplitude from its posterior on the grid (dense Gaussian marginal likelihood).
    Returns ``(μ (size, J), a (size,))``."""
    from scipy.linalg import cho_factor, cho_solve, solve_triangular

    n = float(view.attrs["n"])
    R = sampling_covariance(view, centre) / n + np.diag(view.scale**2)
    y, e2 = view.released, view.envelope**2
    if prior.amplitude is None:
        grid = prior.amplitude_scale * np.logspace(-5, 2, int(prior.grid_size))
        ll = np.empty(grid.size)
        for k, a in enumerate(grid):
            L = np.linalg.cholesky(R + np.diag(a**2 * e2))
            z = solve_triangular(L, y, lower=True)
            ll[k] = -0.5 * z @ z - np.sum(np.log(np.diag(L)))
        logp = ll + np.log(grid) - np.log1p((grid / prior.amplitude_scale) ** 2)
        p = np.exp(logp - logp.max())
        idx = rng.choice(grid.size, size=size, p=p / p.sum())
        amp = grid[idx]
    else:
        amp = np.full(size, float(prior.amplitude))
    out = np.empty((size, y.size))
    Rinv = cho_solve(cho_factor(R), np.eye(y.size))
    for a in np.unique(amp):
        sel = np.flatnonzero(amp == a)
        prec = Rinv + np.diag(1.0 / (a**2 * e2))
        L = np.linalg.cholesky(prec)
        mean = cho_solve((L, True), Rinv @ y)
        z = rng.standard_normal((sel.size, y.size))
        out[sel] = mean + solve_triangular(L.T, z.T, lower=False).T  # N(0, prec^-1)
    return out, amp


def infer_density_dispatch(release: xr.DataTree, prior=None, *, target: str | None = None, draw: int = 0,
                           method: str = "auto", draws: int = 1000, chains: int = 2, random_seed=None) -> xr.DataTree:
    """:func:`fdp_ppl.infer` on a kernel density estimate release: its arguments mapped onto :func:`infer_density`.

    ``target`` None or ``"summary"``: the estimate (``"kde"``); ``"population"``: the smoothed population density.
    ``method`` ``"auto"`` or ``"exact"`` (the posterior is always drawn exactly).

    Raises
    ------
    InputError
        Another ``target`` or ``method``.
    """
    if target not in (None, "summary", "population") or method not in ("auto", "exact"):
        raise InputError(f"a kernel density estimate release takes method='auto' or 'exact' and target None, "
                         f"'summary' or 'population' (got method={method!r}, target={target!r})",
                         "drop them (its posterior is always drawn exactly)")
    return infer_density(release, prior, target="population" if target == "population" else "kde", draws=draws,
                         chains=chains, draw=draw, random_seed=random_seed)


def infer_density(release: xr.DataTree, prior=None, *, target: str = "kde", draws: int = 1000, chains: int = 2,
                  draw: int = 0, random_seed=None, predictive: bool = True) -> xr.DataTree:
    """Posterior of the non-private density estimate behind one private KDE release: exact draws, no MCMC.

    Parameters
    ----------
    release : xr.DataTree
        A KDE release (:func:`fdp_ppl.release`, ``fdp-ppl kde``; gp, sobolev, iclp, frl, bernstein;
        1-D or 2-D), or a file read back with ``xr.open_datatree``. Only public content is read.
    prior : DensityPrior, "envelope", "flat" or None
        Prior of the estimate's coefficients (module docstring); None, ``"gp"`` or ``"auto"``: the envelope
        prior with a half-Cauchy amplitude.
    target : {"kde", "population"}
        ``"kde"``: the non-private estimate the release is centred on (exact for every mechanism).
        ``"population"``: the **smoothed population density** ``E[kde] = ∫ K_h(· − u) p(u) du`` (projected on
        the released span), with the estimate's sampling error added to the likelihood: its coefficients are a
        mean of n records' coefficients, ``c ~ N(μ, Σ/n)`` by the central limit theorem, ``Σ``
        (:func:`sampling_covariance`) evaluated at the posterior mean of the ``"kde"`` target (a plug-in).
        Gaussian-noise releases (gp, sobolev) only, where ``y ~ N(μ, Σ/n + diag(b²))`` is conjugate: exact
        draws given the plug-in ``Σ``; the prior ``μ_j ~ N(0, (a e_j)²)`` as for ``"kde"`` (the flat prior is
        not available). Posterior variables ``population`` and ``pdf`` (its normalised positive part).
    draws, chains : int
        Independent exact posterior draws, laid out (chain, draw).
    draw : int
        Released draw conditioned on.
    random_seed : int, sequence, Generator or None
        Seeds the posterior draws (inference is post-processing: any seed is safe).
    predictive : bool
        Also draw replicated releases (``posterior_predictive``).

    Returns
    -------
    xr.DataTree
        * ``posterior``: ``kde`` (chain, draw, grid dims) — the non-private estimate on the release's grid, in the
          release's density units (``population`` instead with ``target="population"``); ``pdf`` (chain, draw, grid dims) — ``max(kde, 0)`` normalised to mass 1 on the
          box; ``coefficients`` (chain, draw, component); ``amplitude`` (chain, draw) (envelope prior);
        * ``posterior_predictive``: ``density`` (chain, draw, grid dims), replicated releases ``kde + ξ``;
        * ``observed_data``: ``density`` (grid dims), the release, and ``released`` (component), its coefficients;
        * ``log_likelihood``: ``released`` (chain, draw, component), pointwise log-likelihood of the release;
        * ``constant_data``: quadrature weights per axis, ``noise_scale`` and ``envelope`` (component),
          ``prob_negative`` (grid dims): posterior probability that the estimate is below zero;
        * attrs: kind :data:`fdp_ppl.releasing.schema.INFERENCE`, ``family = "kde"``, the mechanism, the prior,
          ``posterior_mass_below_zero`` (posterior mean of ``∫ max(−kde, 0)``), ``posterior_mass`` (posterior
          mean of ``∫ kde``), the release's public attributes (``release_*``), ``privacy_cost``.

    Raises
    ------
    SchemaError
        Not a KDE release, or one whose basis its attributes do not rebuild.
    InputError
        A bad prior or target, draws or chains < 1, draw out of range; ``target="population"`` with Laplace noise
        (iclp, frl, bernstein) or the flat prior.

    Notes
    -----
    Exactness: the release's likelihood is the mechanism's noise law on its retained coefficients (Hall et al.
    2013, Corollary 9 and §4.2 for gp / sobolev; Lin & Reimherr 2026, Theorem 8 and §4.3 for iclp); the prior
    is diagonal in that basis, so each coefficient's posterior is drawn exactly
    (:meth:`fdp_ppl.noise.laws.NoiseLaw.centre_posterior_draws`); with a free amplitude, the amplitude is drawn first
    from its posterior on a grid (:func:`amplitude_posterior`). Components of the estimate outside the retained
    eigenpairs (below ``eigen_rel_tol``, or beyond M for frl) are not released and not modelled: ``kde`` is the
    estimate projected on the released span, as the release is.
    """
    from ..settings import blas_threads

    with blas_threads():  # small dense algebra: one BLAS thread (the inference setting)
        return _infer_density(release, prior, target, draws, chains, draw, random_seed, predictive)


def _infer_density(release, prior, target, draws, chains, draw, random_seed, predictive):
    from ..noise.laws import Normal

    prior = resolve_density_prior(prior)
    draws, chains = int(draws), int(chains)
    if draws < 1 or chains < 1:
        raise InputError("draws and chains must be >= 1", "pass e.g. draws=1000, chains=2")
    if target not in ("kde", "population"):
        raise InputError(f"target must be 'kde' or 'population' (got {target!r})", "pass target='kde'")
    view = read_kde_release(release, draw)
    if target == "population" and (not isinstance(view.law, Normal) or prior.kind == "flat"):
        raise InputError(f"target='population' is exact for Gaussian-noise KDE releases (gp, sobolev) with the "
                         f"envelope prior; this is a {view.mechanism} release with {view.law.name} noise and the "
                         f"{prior.kind} prior", "use target='kde' (the non-private estimate)")
    rng = np.random.default_rng(random_seed)
    S_ = draws * chains
    J = view.released.size
    y, b = view.released, view.scale
    post_vars = {}
    if prior.kind == "flat":
        coefs = y[None, :] - _noise_draws(view.law, b, (S_,), rng)
    else:
        if prior.amplitude is None:
            grid, prob = amplitude_posterior(view, prior)
            amp = grid[rng.choice(grid.size, size=S_, p=prob)]
            if prob[0] > 1e-3 or prob[-1] > 1e-3:
                warnings.warn("the amplitude posterior reaches the end of its grid; widen amplitude_scale",
                              UserWarning, stacklevel=2)
        else:
            amp = np.full(S_, float(prior.amplitude))
        coefs = view.law.centre_posterior_draws(y[None, :], b[None, :], Normal(), 0.0,
                                                amp[:, None] * view.envelope[None, :], rng)
        post_vars["amplitude"] = amp
    plug_in = view.reconstruct(coefs.mean(0)) if target == "population" else None
    exact_loo = _exact_loo(view, prior, plug_in)
    if target == "population":  # plug-in sampling covariance at the posterior mean of the estimate
        coefs, amp = _population_draws(view, prior, S_, rng, plug_in)
        post_vars["amplitude"] = amp
    name = "kde" if target == "kde" else "population"
    kde = view.reconstruct(coefs)
    pos = np.maximum(kde, 0.0)
    mass_pos = view.integrate(pos)
    pdf = pos / np.where(mass_pos > 0, mass_pos, 1.0).reshape((-1,) + (1,) * len(view.shape))
    below = view.integrate(np.maximum(-kde, 0.0))
    grid_dims = view.grid_dims
    shape2 = (chains, draws)
    coords = {dims.CHAIN: np.arange(chains), dims.DRAW: np.arange(draws), COMPONENT: np.arange(J),
              **{d: a for d, a in zip(grid_dims, view.axes)}}
    gdims = (dims.CHAIN, dims.DRAW) + grid_dims
    post = xr.Dataset({name: (gdims, kde.reshape(shape2 + view.shape)),
                       "pdf": (gdims, pdf.reshape(shape2 + view.shape)),
                       "coefficients": ((dims.CHAIN, dims.DRAW, COMPONENT), coefs.reshape(shape2 + (J,)))},
                      coords=coords)
    if "amplitude" in post_vars:
        post["amplitude"] = ((dims.CHAIN, dims.DRAW), post_vars["amplitude"].reshape(shape2))
    post[name].attrs.update({"long_name": "non-private density estimate", "description":
                             f"posterior of the non-private estimate the {view.mechanism} release is centred on"}
                            if target == "kde" else
                            {"long_name": "smoothed population density",
                             "description": "posterior of E[kde] (the population density smoothed by the kernel)"})
    post["pdf"].attrs.update({"long_name": "probability density",
                              "description": "max(kde, 0) normalised to mass 1 on the box (per draw)"})
    groups = {S.POSTERIOR: post}
    if predictive:
        rep_c = coefs
        if target == "population":  # a replicated data set, then a replicated release
            n = float(view.attrs["n"])
            L = np.linalg.cholesky(sampling_covariance(view, kde.mean(0)) / n + 1e-12 * np.eye(J) * b.max() ** 2)
            rep_c = coefs + rng.standard_normal((S_, J)) @ L.T
        rep_c = rep_c + _noise_draws(view.law, b, (S_,), rng)
        rep = view.reconstruct(rep_c)
        std_obs, std_rep = standardised(y, rep_c.reshape(shape2 + (J,)), np.sqrt(view.law.variance(b)), COMPONENT)
        groups["posterior_predictive"] = xr.Dataset({"density": (gdims, rep.reshape(shape2 + view.shape)),
                                                     S.RELEASED: ((dims.CHAIN, dims.DRAW, COMPONENT),
                                                                  rep_c.reshape(shape2 + (J,))),
                                                     STANDARDISED: std_rep}, coords=coords)
    observed = xr.Dataset({"density": (grid_dims, view.observed), S.RELEASED: ((COMPONENT,), y)},
                          coords={COMPONENT: np.arange(J), **{d: a for d, a in zip(grid_dims, view.axes)}})
    if predictive:
        observed[STANDARDISED] = std_obs
    groups[S.OBSERVED_DATA] = observed
    if exact_loo is not None:
        groups[LOO_GROUP] = loo_dataset(exact_loo, COMPONENT)
    ll = view.law.logp(y[None, :], coefs, b[None, :], pointwise=True)
    groups[S.LOG_LIKELIHOOD] = xr.Dataset({S.RELEASED: ((dims.CHAIN, dims.DRAW, COMPONENT),
                                                        np.asarray(ll).reshape(shape2 + (J,)))},
                                          coords={dims.CHAIN: coords[dims.CHAIN], dims.DRAW: coords[dims.DRAW],
                                                  COMPONENT: np.arange(J)})
    const = xr.Dataset({**{f"weights_{d}": ((d,), w) for d, w in zip(grid_dims, view.weights)},
                        S.NOISE_SCALE: ((COMPONENT,), b), "envelope": ((COMPONENT,), view.envelope),
                        "prob_negative": (grid_dims, np.mean(kde < 0, axis=0))},
                       coords={COMPONENT: np.arange(J), **{d: a for d, a in zip(grid_dims, view.axes)}})
    groups[S.CONSTANT_DATA] = const
    tree = xr.DataTree.from_dict(groups)
    public = {k: view.attrs[k] for k in S.PUBLIC_ATTRS if k in view.attrs}
    attrs = {f"release_{k}": v for k, v in public.items()}
    attrs.update(prior.describe())
    attrs.update({"family": "kde", "kde_mechanism": view.mechanism, "release_draw": int(draw),
                  "target": ("the non-private estimate the release is centred on, on its grid (kde)" if target == "kde"
                             else "the smoothed population density E[kde] (population), plug-in sampling "
                                  "covariance"),
                  "inference": "exact", "inference_sampler": "none",
                  "inference_description": f"exact: {'flat' if prior.kind == 'flat' else 'Normal'} prior x "
                                           f"{view.law.name} noise, independent one-dimensional posteriors per "
                                           "coefficient" + ("" if prior.kind == "flat" or prior.amplitude is not None
                                                            else " given the amplitude, drawn from its posterior "
                                                                 "on a grid"),
                  "posterior_mass_below_zero": float(np.mean(below)),
                  "posterior_prob_any_negative": float(np.mean(np.any(kde.reshape(S_, -1) < 0, axis=1))),
                  "posterior_mass": float(np.mean(view.integrate(kde))),
                  "privacy_cost": "none (post-processing of a release)",
                  RELEASE_ID: release_identity(release, draw),
                  "loo_method": "exact" if exact_loo is not None else LOO_IMPROPER if prior.kind == "flat" else "psis",
                  "log_likelihood": "log p(y_j | coefficients)"})
    tree.attrs.update(S.clean_attrs(attrs))
    tree.attrs.update(S.inference_attrs())
    return tree


def _exact_loo(view: KDEView, prior: DensityPrior, plug_in) -> np.ndarray | None:
    """Exact ``log p(y_j | y_{-j})`` (J,) of the release's coefficients under the envelope prior
    (:mod:`fdp_ppl.inference.comparison`): independent one-dimensional marginals given the amplitude, summed over
    the amplitude's grid when it is free (:func:`~fdp_ppl.inference.comparison.grid_loo`); for the population
    target the Gaussian ``N(0, Σ/n + diag(b²) + a² diag(e²))`` with the same plug-in ``Σ`` as the posterior.
    None for the flat prior (improper: no predictive density)."""
    from ..noise.laws import Normal
    from .comparison import gaussian_loo, grid_loo

    if prior.kind == "flat":
        return None
    if prior.amplitude is None:
        grid = prior.amplitude_scale * np.logspace(-5, 2, int(prior.grid_size))
        logprior = np.log(grid) - np.log1p((grid / prior.amplitude_scale) ** 2)
    else:
        grid, logprior = np.array([float(prior.amplitude)]), np.zeros(1)
    y, b, e = view.released, view.scale, view.envelope
    if plug_in is None:
        ll = view.law.marginal_logp(y[None, :], b[None, :], Normal(), 0.0, grid[:, None] * e[None, :])
        return grid_loo(ll, logprior)
    from scipy.linalg import solve_triangular

    R = sampling_covariance(view, plug_in) / float(view.attrs["n"]) + np.diag(b**2)
    R = 0.5 * (R + R.T)
    loo, total = np.empty((grid.size, y.size)), np.empty(grid.size)
    for k, a in enumerate(grid):  # the dense marginal N(0, C_a) of _population_draws, per amplitude
        C = R + np.diag(a**2 * e**2)
        L = np.linalg.cholesky(C)
        z = solve_triangular(L, y, lower=True)
        total[k] = -0.5 * z @ z - np.sum(np.log(np.diag(L))) - 0.5 * y.size * np.log(2 * np.pi)
        loo[k] = gaussian_loo(y, np.zeros(y.size), C)
    return grid_loo(loo, logprior, total)


# ----------------------------------------------------------------------------------------------- functionals
def _grid_1d(tree, var):
    da = tree[S.POSTERIOR][var]
    gd = [d for d in da.dims if d not in (dims.CHAIN, dims.DRAW)]
    if len(gd) != 1:
        raise InputError(f"CDF, quantiles and modes need a 1-D density (this one is over {gd})",
                         "use density_bands(..., functionals=False) for the band of a 2-D density")
    return da, gd[0]


def _count_modes(f: np.ndarray, min_prominence: float) -> np.ndarray:
    """Number of local maxima of each row of ``f`` (S, K) whose prominence is at least ``min_prominence`` × the
    row's maximum (scipy.signal.find_peaks, with the ends counted as candidate peaks)."""
    from scipy.signal import find_peaks

    out = np.empty(f.shape[0], dtype=int)
    pad = np.concatenate([np.full((f.shape[0], 1), -np.inf), f, np.full((f.shape[0], 1), -np.inf)], axis=1)
    for i, row in enumerate(pad):
        top = float(np.max(row[1:-1]))
        finite = np.where(np.isfinite(row), row, min(0.0, float(np.min(row[1:-1]))))
        peaks, _ = find_peaks(finite, prominence=max(min_prominence * top, 1e-300))
        out[i] = len(peaks)
    return out


def density_functionals(tree: xr.DataTree, *, probs=(0.05, 0.25, 0.5, 0.75, 0.95), min_prominence: float = 0.1,
                        var: str = "pdf") -> xr.Dataset:
    """Posterior draws of the CDF, quantiles, number of modes and the largest mode of a 1-D density.

    Parameters
    ----------
    tree : xr.DataTree
        Result of :func:`infer_density` (1-D grid).
    probs : sequence of float in (0, 1)
        Probabilities of the quantiles.
    min_prominence : float
        A local maximum counts as a mode when its prominence is at least this fraction of the draw's maximum
        (rough posterior draws, e.g. Sobolev noise, have many tiny wiggles).
    var : str
        Posterior variable, ``"pdf"`` (default: a probability density per draw).

    Returns
    -------
    xr.Dataset
        ``cdf`` (chain, draw, x): ``P(X <= x)`` by trapezoid integration of the (normalised) density from the
        box's lower end; ``quantile`` (chain, draw, prob); ``n_modes`` (chain, draw); ``mode`` (chain, draw):
        location of the highest point.

    Raises
    ------
    InputError
        A 2-D density, or probabilities outside (0, 1).
    """
    da, xd = _grid_1d(tree, var)
    probs = np.atleast_1d(np.asarray(probs, dtype=float))
    if np.any((probs <= 0) | (probs >= 1)):
        raise InputError("probs must lie in (0, 1)", "pass e.g. probs=(0.05, 0.5, 0.95)")
    x = np.asarray(da[xd].values, dtype=float)
    f = np.asarray(da.transpose(dims.CHAIN, dims.DRAW, xd).values, dtype=float)
    c, d, K = f.shape
    flat = np.maximum(f.reshape(c * d, K), 0.0)
    steps = 0.5 * (flat[:, 1:] + flat[:, :-1]) * np.diff(x)[None, :]
    cdf = np.concatenate([np.zeros((c * d, 1)), np.cumsum(steps, axis=1)], axis=1)
    total = cdf[:, -1:]
    cdf = cdf / np.where(total > 0, total, 1.0)
    q = np.empty((c * d, probs.size))
    for i in range(c * d):
        cm = np.maximum.accumulate(cdf[i])
        q[i] = np.interp(probs, cm + np.arange(K) * 1e-15, x)
    n_modes = _count_modes(flat, float(min_prominence))
    mode = x[np.argmax(flat, axis=1)]
    out = xr.Dataset({"cdf": ((dims.CHAIN, dims.DRAW, xd), cdf.reshape(c, d, K)),
                      "quantile": ((dims.CHAIN, dims.DRAW, "prob"), q.reshape(c, d, probs.size)),
                      "n_modes": ((dims.CHAIN, dims.DRAW), n_modes.reshape(c, d)),
                      "mode": ((dims.CHAIN, dims.DRAW), mode.reshape(c, d))},
                     coords={dims.CHAIN: da[dims.CHAIN].values, dims.DRAW: da[dims.DRAW].values, xd: x,
                             "prob": probs})
    out["cdf"].attrs["description"] = f"P(X <= x) under each posterior draw of {var}"
    out["n_modes"].attrs["description"] = f"local maxima with prominence >= {min_prominence:g} x the draw's maximum"
    return out


def density_bands(tree: xr.DataTree, *, ci_prob: float | None = None, probs=(0.05, 0.25, 0.5, 0.75, 0.95),
                  min_prominence: float = 0.1, functionals: bool = True) -> xr.Dataset:
    """Equal-tailed credible bands of the estimate, the density, its CDF and quantiles, and mode probabilities.

    Parameters
    ----------
    tree : xr.DataTree
        Result of :func:`infer_density`.
    ci_prob : float, optional
        Probability of the bands, in (0, 1); default ``arviz.rcParams["stats.ci_prob"]`` (as every band).
    probs, min_prominence
        As for :func:`density_functionals`.
    functionals : bool
        False: the bands of ``kde`` (or ``population``) and ``pdf`` only (any dimension).

    Returns
    -------
    xr.Dataset
        ``kde_mean`` / ``kde_lower`` / ``kde_upper`` (or ``population_*``) and ``pdf_*`` over the grid; with ``functionals`` (1-D):
        ``cdf_*`` over the grid, ``quantile_*`` over ``prob``, ``prob_n_modes`` over ``n_modes`` (posterior
        probability of each number of modes), ``prob_multimodal`` (scalar: P(more than one mode)),
        ``mode_mean`` / ``mode_lower`` / ``mode_upper`` (scalars). Attrs: ci_prob.

    Raises
    ------
    InputError
        ``ci_prob`` outside (0, 1); functionals of a 2-D density.
    """
    from .bands import ci_defaults

    ci_prob = ci_defaults(ci_prob)[0]
    if not 0 < ci_prob < 1:
        raise InputError(f"ci_prob must lie in (0, 1) (got {ci_prob})", "pass e.g. ci_prob=0.9")
    lo, hi = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    sample = (dims.CHAIN, dims.DRAW)

    def band(da, name, out):
        out[f"{name}_mean"] = da.mean(sample)
        qs = da.quantile([lo, hi], dim=sample)
        out[f"{name}_lower"] = qs.isel(quantile=0, drop=True)
        out[f"{name}_upper"] = qs.isel(quantile=1, drop=True)

    out = xr.Dataset()
    post = tree[S.POSTERIOR].to_dataset()
    for name in ("kde", "population"):
        if name in post:
            band(post[name], name, out)
    band(post["pdf"], "pdf", out)
    if functionals:
        fn = density_functionals(tree, probs=probs, min_prominence=min_prominence)
        band(fn["cdf"], "cdf", out)
        band(fn["quantile"], "quantile", out)
        band(fn["mode"].astype(float), "mode", out)
        nm = fn["n_modes"].values.ravel()
        ks = np.arange(1, max(int(nm.max()), 1) + 1)
        out["prob_n_modes"] = (("n_modes",), np.array([np.mean(nm == k) for k in ks]))
        out = out.assign_coords(n_modes=ks)
        out["prob_multimodal"] = float(np.mean(nm > 1))
    out.attrs = {"ci_prob": float(ci_prob), "ci_kind": "eti"}
    return out


__all__ = [
    "MECHANISMS",
    "PRIOR_KINDS",
    "DensityPrior",
    "KDEView",
    "amplitude_posterior",
    "density_bands",
    "density_functionals",
    "infer_density",
    "infer_density_dispatch",
    "read_kde_release",
    "resolve_density_prior",
    "sampling_covariance",
]
