"""A density release observed jointly with the mean (and components) release of the same people.

``fp.observe([mean_tree, kde_tree], mean=μ, covariance=K, name="growth", density_of=w)``, or with a k = 1
components release as well, ``[mean_tree, pca_tree, kde_tree]`` (:func:`observe_with_density`). The KDE release
(:mod:`fdp_ppl.kde`, d = 1) is of a scalar feature of the same n curves ``X_i`` (grid values, K points): a public
linear functional ``x_i = wᵀX_i`` passed as ``density_of=w`` (shape (K,); one-hot at a grid point: "the height at
age 18"; the grid's quadrature weights: "the curve's average").

The KDE's released coefficients are ``y = ē + ξ`` with ``ē = (1/n) Σ_i e(x_i)``, ``e(x) = n · r(clip_box(x))`` the
per-record coefficient vector of the spec (``record_coefficients``; the basis rebuilt from the release's public
attrs, :func:`~fdp_ppl.inference.density.read_kde_release`) and ``ξ`` the release's own noise law with its public
per-coefficient scale (``constant_data/noise_scale``). ``e`` is nonlinear in the curve, so ``ē`` is another latent
sufficient statistic beside the clipped sample mean ``x̄_τ`` (and the components release's ``d̄``), entering by the
joint central limit theorem: given the standard-normal variables ``ω`` that write the other latent means (module
docstring of :mod:`~fdp_ppl.inference.population_joint`),

``ē = m_e + (β ω + R^{½} ζ) / √n``,  ``β = Cov(e, ω)``, ``R = C_ee − β βᵀ``,  ``ζ ~ N(0, I_J)``
(``<name>::density_mean_std``),

so ``(x̄_τ, d̄, ē) ~ N(m, C/n)`` jointly with the per-record moments of the Gaussian population. By clipping mode:

``"ignore"`` (no clipping of the curves; the density's own clipping to its box is always modelled)
    ``x = wᵀX ~ N(wᵀμ, wᵀKw)`` exactly, and ``x̄ = μ + L ξ/√n`` is linear in ``ξ``, so ``β = Cov(e, u) vᵀ/s``
    (``u = (x − wᵀμ)/s``, ``v = Lᵀw``, ``s = |v|``) and every moment is a one-dimensional integral, computed on
    :data:`CELLS_PER_NODE` cells per node interval of the density grid plus the two tails (each cell's exact normal
    mass, ``e`` at its exact conditional mean; the clipped tails exactly at the box's ends): accurate far beyond
    the CLT's own error, smooth in ``(μ, K)`` so NUTS gets the gradient.
``"moments"``
    ``ω = ξ`` (``[mean, density]``) or ``(ξ, η)`` (with components), ``β = C_{e,u} M⁻ᵀ`` with ``M`` the lower
    triangular factor writing the clipped statistics ``u = (a, d)`` from ``ω`` (``M Mᵀ = C_uu`` + jitter); the
    moments on the same fixed public quadrature points as the clipped moments
    (:func:`~fdp_ppl.inference.population_clipping.normal_points`, common random numbers).
``"records"``
    ``ē`` computed exactly from the latent records (``<name>::records``).

The binned Gaussian KDE (``estimator="binned"``, records spread over lattice corners: ``e`` is then piecewise
linear in the record) is modelled with the unbinned bump (its difference is within the release's recorded
``kde_binned_error_bound``); the snapped mechanisms (ICLP, FRL, Bernstein: records snapped to the nearest grid
node, ``e`` piecewise constant, zero gradient) with ``e`` interpolated linearly between the nodes' rows (the same
cell masses to second order in the node spacing; stated in ``<name>_density_approximation``).

The density release given ``ē``: its own noise law (``law.pymc``: Normal for gp / sobolev, Laplace for iclp, frl,
bernstein) around ``ē``, observed as ``<name>_density`` (dim ``<name>_density_basis``).

``log_likelihood`` (:class:`DensityLoo`, by :func:`~fdp_ppl.inference.population.population_result`):
``"integrated"`` (default) / ``"joint"``: ``log p(y_dj | y_d,-j, y_m, θ)`` — the latent means integrated out given
θ, ``(x̄_τ, ē)`` Gaussian conditioned on the mean release ``y_m`` (Laplace mean noise through its normal scale
mixture, ``E`` drawn from its exact conditional given the posterior draw's latent mean); the components frame is
not conditioned on (its information about ē is dropped from these terms). Without a components release the mean
release's terms are those of one mean release (``log p(y_mj | y_m,-j, θ)``). ``"conditional"`` and
``clipping="records"``: the terms given ``ē`` (and ``x̄_τ``).

What is dropped: the dependence of ``ē`` on the Wishart scatter about the mean (components release), the CLT for
``ē`` (bounded records: error ``O(n^{-1/2})``), the Gaussian population. Costs no privacy: post-processing of
public releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ..errors import InputError
from ..spaces.kernels import gaussian_bump
from ..releasing import schema as S
from .comparison import release_identity
from .population_clipping import CLIPPING_POINTS

#: cells of the one-dimensional quadrature per interval between density grid nodes ("ignore")
CELLS_PER_NODE = 8
#: relative jitter on the diagonal of the conditional covariance of the density coefficients
JITTER = 1e-9
#: the standard-normal variable of the density coefficients' own part (``<name>::density_mean_std``)
DENSITY_STD = "density_mean_std"
#: seed of the Laplace mixing draws of the integrated log-likelihood (public; one stream per posterior draw)
LOO_SEED = 20261129
MODELLED = {"gp": "the Gaussian bump (exact)", "sobolev": "the Gaussian bump (exact)"}
INTERPOLATED = ("records snapped to the nearest grid node ({mech}): e interpolated linearly between the nodes' rows "
                "(the snapped statistic is piecewise constant; same cell masses to second order in the node spacing)")
BINNED = ("binned estimator: the unbinned Gaussian bump (within the release's kde_binned_error_bound = {bound:g} of "
          "the binned estimate)")
APPROXIMATION = ("density coefficients: mean of e(x_i), x_i = w^T X_i, by the joint central limit theorem with the "
                 "other latent means (bounded records), moments of the Gaussian population {how}; {stat}; its "
                 "dependence on the components' Wishart scatter dropped")
LOG_LIKELIHOOD = ("<density>: log p(y_dj | y_d-j, y_m, theta) per coefficient (latent means integrated out given "
                  "theta, (x_tau, e) Gaussian conditioned on the mean release y_m; Laplace noise through its normal "
                  "scale mixture, E drawn from its exact conditional given the posterior draw's latent means; the "
                  "components frame not conditioned on)")
LOG_LIKELIHOOD_CONDITIONAL = "<density>: log p(y_dj | e) per coefficient, conditional on the latent density mean"


@dataclass(frozen=True, eq=False)
class DensityRelease:
    """The public content of a d = 1 KDE release that a joint observation reads (:func:`read_density_release`).

    Attributes
    ----------
    mechanism : str
    law : NoiseLaw
    released, scale : ndarray (J,)
        The released coefficients and their public noise scales.
    n : int
    nodes : ndarray (G,)
        The density grid.
    box : tuple of float
        The public box records are clipped to.
    table : ndarray (G, J)
        ``"bump"``: grid values → coefficients; ``"interpolated"``: ``e`` at each node.
    kind : {"bump", "interpolated"}
    bandwidth : float
    release_id : str
    statistic : str
        How ``e`` is modelled (words).
    epsilon : float
    """

    mechanism: str
    law: object
    released: np.ndarray
    scale: np.ndarray
    n: int
    nodes: np.ndarray
    box: tuple
    table: np.ndarray
    kind: str
    bandwidth: float
    release_id: str
    statistic: str
    epsilon: float

    def values(self, x, xp=np):
        """``e(x)`` (S, J) of records ``x`` (S,) (numpy or PyTensor ``xp``): ``n`` times one record's coefficients,
        the record clipped to the box first."""
        lo, hi = self.box
        xc = xp.clip(x, lo, hi)
        t = self.nodes
        if self.kind == "bump":
            f = gaussian_bump(t[None, :] - xc[:, None], self.bandwidth, density=True, xp=xp)
        else:
            gaps = np.diff(t)
            left = np.concatenate([[1e30], gaps])
            right = np.concatenate([gaps, [1e30]])
            d = xc[:, None] - t[None, :]
            f = xp.clip(xp.minimum(1.0 + d / left, 1.0 - d / right), 0.0, 1.0)
        return xp.dot(f, self.table)

    def edges(self) -> np.ndarray:
        """Interior cell edges of the one-dimensional quadrature: the box's ends and :data:`CELLS_PER_NODE` cells per
        node interval (at most a tenth of the bandwidth wide for the bump)."""
        lo, hi = self.box
        knots = np.unique(np.clip(np.concatenate([[lo], self.nodes, [hi]]), lo, hi))
        r = CELLS_PER_NODE
        if self.kind == "bump":
            r = max(r, int(np.ceil(10 * np.max(np.diff(knots)) / self.bandwidth)))
        return np.interp(np.linspace(0, knots.size - 1, r * (knots.size - 1) + 1), np.arange(knots.size), knots)


def read_density_release(tree, draw: int, K: int | None = None) -> DensityRelease:
    """The public content of a KDE release for a joint observation (d = 1 only).

    Raises
    ------
    InputError
        A density of d > 1 dimensions.
    SchemaError
        Not a KDE release (:func:`~fdp_ppl.inference.density.read_kde_release`).
    """
    from .density import read_kde_release

    view = read_kde_release(tree, draw)
    if len(view.axes) != 1:
        raise InputError(f"fp.observe takes the density of one scalar feature (d = 1); this release has d = "
                         f"{len(view.axes)}", "release a 1-D KDE of x_i = w^T X_i and pass density_of=w")
    nodes = np.asarray(view.axes[0], dtype=float)
    spec = view.spec
    grid = getattr(spec, "grid", None)
    box = (float(grid.domain[0, 0]), float(grid.domain[0, 1])) if hasattr(grid, "domain") else (nodes[0], nodes[-1])
    h = float(np.atleast_1d(getattr(spec, "bandwidths", [view.attrs.get("h", np.nan)]))[0])
    if view.mechanism in MODELLED:
        table = spec.basis.coefficients(np.eye(nodes.size))
        kind, statistic = "bump", MODELLED[view.mechanism]
        if str(view.attrs.get("kde_estimator", "exact")) == "binned":
            statistic = BINNED.format(bound=float(view.attrs.get("kde_binned_error_bound", np.nan)))
    else:
        table, kind = np.asarray(view.record_rows, dtype=float), "interpolated"
        statistic = INTERPOLATED.format(mech=view.mechanism)
    return DensityRelease(mechanism=view.mechanism, law=view.law, released=view.released, scale=view.scale,
                          n=int(view.attrs["n"]), nodes=nodes, box=box, table=table, kind=kind, bandwidth=h,
                          release_id=release_identity(tree, draw), statistic=statistic,
                          epsilon=float(view.attrs.get("epsilon", np.nan)))


def _phi_cdf_diff(a, b, xp):
    """``Φ(b) − Φ(a)`` for ``a <= b`` without cancellation in the upper tail."""
    from scipy.special import erfc

    r2 = math.sqrt(2.0)
    f = erfc if xp is np else xp.erfc
    low = 0.5 * (f(-b / r2) - f(-a / r2))
    high = 0.5 * (f(a / r2) - f(b / r2))
    return np.where(a > 0, high, low) if xp is np else xp.switch(a > 0, high, low)


def density_moments_1d(centre, sd, rel: DensityRelease, xp=np):
    """Moments of ``e(x)``, ``x ~ N(centre, sd²)`` (scalar), by the cell quadrature of the module docstring:
    ``(m_e (J,), C_ee (J, J), c (J,), v)`` with ``c = Cov(e, u)`` and ``v = Var(u)`` of ``u = (x − centre)/sd``
    under the same discrete law (so ``C_ee − c cᵀ/v`` is positive semi-definite).

    Examples
    --------
    >>> import numpy as np, warnings, fdp_ppl as fp
    >>> from fdp_ppl.kde import KDESpec
    >>> grid = fp.spaces.CartesianGrid.uniform((-4.0, 4.0), 41)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     tree = fp.release(KDESpec(grid=grid, bandwidth=0.5, n=50).fit(np.zeros(50)),
    ...                       fp.GaussianMechanism(epsilon=1.0, delta=1e-5), random_seed=0, study=True)
    >>> rel = read_density_release(tree, 0)
    >>> m, C, c, v = density_moments_1d(0.0, 1.0, rel)
    >>> f = rel.table.T                          # density of the smoothed population on the grid: N(0, 1 + h²)
    >>> dens = np.linalg.lstsq(f, m, rcond=None)[0]
    >>> round(float(dens[20]), 3), round(float(1 / np.sqrt(2 * np.pi * 1.25)), 3)
    (0.357, 0.357)
    """
    edges = rel.edges()
    sd = xp.maximum(sd, 1e-300)
    inner = xp.clip((edges - centre) / sd, -40.0, 40.0)
    big = np.array([40.0])
    if xp is np:
        a = np.concatenate([-big, inner])
        b = np.concatenate([inner, big])
    else:
        a = xp.concatenate([xp.as_tensor(-big), inner])
        b = xp.concatenate([inner, xp.as_tensor(big)])
    p = _phi_cdf_diff(a, b, xp)
    first = gaussian_bump(a, 1.0, density=True, xp=xp) - gaussian_bump(b, 1.0, density=True, xp=xp)  # φ(a) − φ(b)
    u = xp.clip(first / (p + 1e-300), a, b)
    e = rel.values(centre + sd * u, xp)
    m = xp.dot(p, e)
    ec = e - m
    C = xp.dot(ec.T * p, ec)
    return m, C, xp.dot(p * u, ec), xp.sum(p * u * u)


def density_point_moments(x, U, rel: DensityRelease, xp=np):
    """Moments of ``e`` with other per-record statistics on common public points: ``x`` (S,) the records'
    functional, ``U`` (S, p) the other statistics → ``(m_e, C_ee, C_eu)``."""
    e = rel.values(x, xp)
    S = e.shape[0] if xp is np else x.shape[0]
    m = xp.mean(e, axis=0)
    ec = e - m
    uc = U - xp.mean(U, axis=0)
    return m, xp.dot(ec.T, ec) / S, xp.dot(ec.T, uc) / S


@dataclass(frozen=True, eq=False)
class DensityObservation:
    """A density release observed with the mean (and components) release of the same people.

    Attributes
    ----------
    name : str
    density : DensityRelease
    functional : ndarray (K,)
        ``w``: each curve's scalar feature ``x_i = wᵀX_i`` whose density was released.
    n : int
    clipping : str
    ebar : TensorVariable (J,)
        The latent mean ``ē`` of the density coefficients.
    mean_part : dict
        The mean release's public content.
    own_mean : bool
        True when this observation also owns the mean release's likelihood (no components release).
    tensors : tuple
        ``(x̄_τ − o, m_a, C_aa, m_e, C_ee, C_ea, μ, K)`` for :class:`DensityLoo` (``"records"``: the first and ē only).
    release_ids : dict
    attrs : dict
    """

    name: str
    density: DensityRelease
    functional: np.ndarray
    n: int
    clipping: str
    ebar: object
    mean_part: dict
    own_mean: bool
    tensors: tuple
    t: np.ndarray
    release_ids: dict
    attrs: dict = field(default_factory=dict)

    @property
    def variables(self) -> dict:
        out = {"density": f"{self.name}_density"}
        if self.own_mean:
            out["mean"] = f"{self.name}_mean"
        return out


def _split(releases):
    dens = [t for t in releases if S.is_kde_release(t)]
    rest = [t for t in releases if not S.is_kde_release(t)]
    if len(dens) != 1:
        raise InputError(f"fp.observe takes one density release per call (got {len(dens)})",
                         "pass [mean_release, density_release] or [mean_release, components_release, "
                         "density_release] with density_of=w")
    comps = [t for t in rest if S.is_fpca_release(t)]
    means = [t for t in rest if not S.is_fpca_release(t)]
    if len(means) != 1 or len(comps) > 1:
        raise InputError("a joint observation with a density release needs one mean release (and at most one "
                         "components release) of the same people",
                         "pass [mean_release, density_release] or [mean_release, components_release, density_release]")
    return means[0], (comps[0] if comps else None), dens[0]


def _chol(C):
    import pytensor.tensor as pt
    from pytensor.tensor.linalg import cholesky

    from .population_joint import JITTER as JJ

    C = 0.5 * (C + C.T)
    return cholesky(C + JJ * (pt.mean(pt.diag(C)) + 1e-300) * pt.eye(C.shape[0]))


def observe_with_density(releases, *, mean, covariance, density_of, name: str = "release", draw: int = 0,
                         clipping: str = "auto", clipping_points: int = CLIPPING_POINTS) -> DensityObservation:
    """Observe a d = 1 density release of ``x_i = wᵀX_i`` with the mean release (and a k = 1 components release) of
    the same n curves (module docstring). Called by :func:`fdp_ppl.observe` when its list holds a KDE release.

    Parameters
    ----------
    releases : sequence of xr.DataTree
        ``[mean, density]`` or ``[mean, components, density]`` (any order).
    mean, covariance : array_like or TensorVariable, shapes (K,), (K, K)
        The population of one curve on the mean release's grid.
    density_of : array_like (K,)
        ``w``: the public functional of each curve whose density was released.
    name, draw, clipping, clipping_points
        As :func:`fdp_ppl.inference.population_joint.observe_joint`.

    Returns
    -------
    DensityObservation
        Registered on the model for :func:`~fdp_ppl.inference.population.population_result` (with components, the
        :class:`~fdp_ppl.inference.population_joint.JointObservation` of the other two is registered as well).

    Raises
    ------
    InputError
        No ``density_of``, or not of shape (K,), two density releases, no mean release, a density of d > 1, a
        density release of a different n, or what :func:`fdp_ppl.observe` refuses for the others.

    Examples
    --------
    >>> import numpy as np, pymc as pm, warnings
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.kde import KDESpec
    >>> grid = fp.Grid.uniform(12)
    >>> curves = np.sin(2 * np.pi * grid.t) + np.random.default_rng(0).normal(0, 0.3, (60, 12))
    >>> w = np.eye(12)[6]                                     # the feature: each curve's value at t[6]
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    ...     mean_tree = fp.release(fp.frl_mean(curves, basis, tau=6.0, M=4), fp.FRL(epsilon=1.0), random_seed=1,
    ...                            study=True)
    ...     box = fp.spaces.CartesianGrid.uniform((-2.0, 2.0), 24)
    ...     kde_tree = fp.release(KDESpec(grid=box, bandwidth=0.4, n=60).fit(curves @ w),
    ...                           fp.GaussianMechanism(epsilon=1.0, delta=1e-5), random_seed=2, study=True)
    >>> d = np.abs(grid.t[:, None] - grid.t[None, :])
    >>> with pm.Model() as model:
    ...     amp = pm.HalfNormal("amp", 1.0)
    ...     obs = fp.observe([mean_tree, kde_tree], mean=np.sin(2 * np.pi * grid.t),
    ...                      covariance=amp**2 * np.exp(-d / 0.2), name="data", density_of=w)
    >>> obs.variables, obs.clipping
    ({'density': 'data_density', 'mean': 'data_mean'}, 'ignore')
    >>> sorted(v.name for v in model.free_RVs)
    ['amp', 'data::density_mean_std', 'data::sample_mean_std']
    """
    import pymc as pm
    import pytensor.tensor as pt

    from . import population_clipping as PC
    from .population_parts import _as_tensor, _check_name, _mean_release, _model

    model = _model(None)
    mean_tree, comp_tree, dens_tree = _split(releases)
    if density_of is None:
        raise InputError("a density release in a joint observation needs the functional of each curve whose density "
                         "it released", "pass density_of=w (shape (K,), e.g. np.eye(K)[k] for the value at t[k])")
    part = _mean_release(mean_tree, draw)
    view = part["view"]
    K, n = view.t.size, part["n"]
    w = np.asarray(density_of, dtype=float)
    if w.shape != (K,) or not np.all(np.isfinite(w)):
        raise InputError(f"density_of must be a finite vector of shape ({K},) on the curves' grid, got {w.shape}",
                         "pass w with one weight per grid point (e.g. quadrature weights for the curve's average)")
    rel = read_density_release(dens_tree, draw, K)
    if rel.n != n:
        raise InputError(f"the releases count different people (n = {n} and {rel.n})",
                         "observe releases of the same data set together; others one by one")
    var_dens, dim_dens = f"{name}_density", f"{name}_density_basis"
    _check_name(model, name, (var_dens, dim_dens))
    J = rel.released.size
    y_m, SA, offset, law, b = part["y"], part["design"], part["offset"], part["law"], part["scale"]
    tau, norm = part["tau"], part["tau_norm"]
    if comp_tree is not None:
        from .population_joint import observe_joint

        joint = observe_joint([mean_tree, comp_tree], mean=mean, covariance=covariance, name=name, draw=draw,
                              clipping=clipping, clipping_points=clipping_points)
        mu, cov, choice = joint.mean, joint.covariance, joint.clipping
    else:
        joint = None
        mu = _as_tensor(mean, (K,), "mean")
        cov = _as_tensor(covariance, (K, K), "covariance")
        _check_name(model, name, (f"{name}_mean", f"{name}_mean_basis", f"{name}_t"))
        choice, prior_share = PC.clipping_plan(model, mu, cov, n=n, tau=tau, norm=norm, weights=view.weights,
                                               offset=offset, clipping=clipping)
        model.add_coord(f"{name}_t", np.arange(K))
        model.add_coord(f"{name}_mean_basis", np.arange(y_m.size))
    model.add_coord(dim_dens, np.arange(J))
    L = _chol(cov)

    def latent(var, **kw):
        full = f"{name}::{var}"
        if full in model.named_vars:
            return model[full]
        with pm.Model(name=name):
            return pm.Normal(var, 0.0, 1.0, **kw)

    if choice == "records":
        from .population_joint import RECORDS

        zr = latent(RECORDS, shape=(n, K))
        X = mu + pt.dot(zr, L.T)
        a = X - offset - PC.excess(X - offset, view.weights, tau, norm, pt)
        stat, ebar = pt.mean(a, axis=0), pt.mean(rel.values(pt.dot(X, w), pt), axis=0)
        tensors, how = (stat, ebar), "none (from the latent records)"
    else:
        xi = latent("sample_mean_std", dims=f"{name}_t")
        zeta = latent(DENSITY_STD, dims=dim_dens)
        if choice == "ignore":
            v = pt.dot(L.T, w)
            s = pt.sqrt(pt.sum(v * v))
            m_e, C_ee, c_eu, var_u = density_moments_1d(pt.dot(w, mu), s, rel, pt)
            beta_u = c_eu / var_u
            resid = C_ee - pt.outer(c_eu, c_eu) / var_u
            shift = beta_u * pt.dot(v, xi) / s
            stat = mu - offset + pt.dot(L, xi) / np.sqrt(n)
            m_a, C_aa, C_ea = mu - offset, cov, pt.outer(beta_u, pt.dot(cov, w)) / s
            how = f"by one-dimensional quadrature of x ~ N(w^T mu, w^T K w) ({CELLS_PER_NODE} cells per node interval)"
        else:
            points = PC.normal_points(int(clipping_points), K)
            Xs = mu + pt.dot(points, L.T)
            if joint is None:
                a = Xs - offset - PC.excess(Xs - offset, view.weights, tau, norm, pt)
                U, omega = a, xi
            else:
                a, d = PC.record_statistics(Xs, offset, view.weights, tau, norm, joint.coef_map,
                                            joint.components_weights, joint.components_tau, pt)
                U, omega = pt.concatenate([a, d], axis=1), pt.concatenate([xi, latent("coefficient_mean_std")])
            m_e, C_ee, C_eu = density_point_moments(pt.dot(Xs, w), U, rel, pt)
            m_u = pt.mean(U, axis=0)
            Uc = U - m_u
            C_uu = pt.dot(Uc.T, Uc) / points.shape[0]
            M = _write_factor(C_uu, K, 0 if joint is None else joint.coef_map.shape[0])
            beta = pt.transpose(pt.linalg.solve_triangular(M, C_eu.T, lower=True))
            resid = C_ee - pt.dot(beta, beta.T)
            shift = pt.dot(beta, omega)
            m_a, C_aa, C_ea = m_u[:K], C_uu[:K, :K], C_eu[:, :K]
            stat = m_a + pt.dot(M[:K, :K], xi) / np.sqrt(n)
            how = f"on {points.shape[0]} fixed public moment-matched Sobol points (with the clipped moments)"
        resid = 0.5 * (resid + resid.T) + JITTER * (pt.mean(pt.diag(C_ee)) + 1e-300) * pt.eye(J)
        ebar = m_e + (shift + pt.dot(pt.linalg.cholesky(resid), zeta)) / np.sqrt(n)
        tensors = (stat, m_a, C_aa, m_e, C_ee, C_ea, mu, cov)
    if joint is None:
        with pm.Model(name=name):
            pm.Deterministic("sample_mean", stat + offset, dims=f"{name}_t")
        law.pymc(f"{name}_mean", pt.dot(SA, stat), b, observed=y_m, dims=f"{name}_mean_basis")
    with pm.Model(name=name):
        pm.Deterministic("density_mean", ebar, dims=dim_dens)
    rel.law.pymc(var_dens, ebar, rel.scale, observed=rel.released, dims=dim_dens)
    approx = APPROXIMATION.format(how=how, stat=rel.statistic)
    dens_attrs = {"density_release_id": rel.release_id, "density_mechanism": rel.mechanism,
                  "density_noise_law": rel.law.name, "density_epsilon": rel.epsilon,
                  "density_functional": [float(v) for v in w], "density_approximation": approx,
                  "density_likelihood": (f"{var_dens} | e ~ {rel.law.name} noise (the release's own scales) around "
                                         f"the latent density mean e = {name}::density_mean, n^-1 sum_i e(w^T X_i)")}
    ids = {"mean": part["release_id"], "density": rel.release_id}
    if joint is not None:
        joint.attrs.update(dens_attrs)
        ids = {**joint.release_ids, "density": rel.release_id}
        joint.attrs["release_id"] = ",".join(ids.values())
        attrs = {}
    else:
        attrs = {**dens_attrs, "release_id": ",".join(ids.values()), "mean_release_id": part["release_id"],
                 "release_draw": int(draw), "n": n, "clipping": choice, "clipping_prior_share": prior_share,
                 "mean_tau": tau, "mean_noise_law": law.name, "mean_summary": view.metadata.summary,
                 "approximation": {"ignore": "sample mean ~ N(mu, K/n) (exact for a Gaussian population); clipping "
                                             "to tau not modelled (<name>_mean_outside_tau)",
                                   "moments": "clipped sample mean ~ N(m_a, C_aa/n) (central limit theorem, clipped "
                                              "moments on the public points)",
                                   "records": "none: the n records are latent variables"}[choice].replace(
                                       "<name>", name),
                 "likelihood": (f"{name}_mean | sample mean ~ {law.name} noise around S A (sample mean - offset); "
                                f"{dens_attrs['density_likelihood']}")}
    obs = DensityObservation(name=name, density=rel, functional=w, n=n, clipping=choice, ebar=ebar, mean_part=part,
                             own_mean=joint is None, tensors=tensors, t=view.t_original, release_ids=ids, attrs=attrs)
    model._fdp_population_density = [*getattr(model, "_fdp_population_density", []), obs]
    return obs


def _write_factor(C_uu, K: int, m: int):
    """The lower triangular ``M`` with which :func:`~fdp_ppl.inference.population_joint.observe_joint` writes the
    clipped statistics from their standard normals: ``La`` (mean only) or ``[[La, 0], [C_da La⁻ᵀ, L_c]]``."""
    import pytensor.tensor as pt

    from .population_joint import JITTER as JJ

    La = _chol(C_uu[:K, :K])
    if m == 0:
        return La
    Cda, Cdd = C_uu[K:, :K], C_uu[K:, K:]
    low = pt.transpose(pt.linalg.solve_triangular(La, Cda.T, lower=True))        # C_da La⁻ᵀ
    cond = Cdd - pt.dot(low, low.T)
    cond = 0.5 * (cond + cond.T) + JJ * pt.mean(pt.diag(Cdd)) * pt.eye(m)
    top = pt.concatenate([La, pt.zeros((K, m))], axis=1)
    return pt.concatenate([top, pt.concatenate([low, pt.linalg.cholesky(cond)], axis=1)], axis=0)


def density_function(model, observations):
    """Compiled: the model's free variables → per density observation its tensors (:attr:`DensityObservation.tensors`
    and ``ē``)."""
    from .population_parts import grouped_function

    return grouped_function(model, [(*o.tensors, o.ebar) for o in observations])


class DensityLoo:
    """Pointwise ``log_likelihood`` of a density observation (module docstring): ``<name>_density`` and, without a
    components release, ``<name>_mean``."""

    def __init__(self, o: DensityObservation, mode: str = "integrated"):
        self.o = o
        self.mode = "conditional" if (mode == "conditional" or o.clipping == "records") else "integrated"

    def terms(self, values, index: int, with_clipping: bool) -> tuple[dict, dict]:
        from .plan import _is_gaussian
        from .population_joint import laplace_mixing_given
        from .population_parts import loo_mean_terms, outside_tau

        o, part, rel = self.o, self.o.mean_part, self.o.density
        y, SA, b, law, n = part["y"], part["design"], part["scale"], part["law"], o.n
        stat, ebar = values[0], values[-1]
        ll, share = {}, {}
        if self.mode == "conditional":
            if o.own_mean:
                ll[f"{o.name}_mean"] = law.logp(y, SA @ stat, b, pointwise=True)
            ll[f"{o.name}_density"] = rel.law.logp(rel.released, ebar, rel.scale, pointwise=True)
        else:
            _, m_a, Caa, m_e, Cee, Cea, mu, Kt = values[:8]
            rng = np.random.default_rng([LOO_SEED, int(index)])
            var_m = b**2 if _is_gaussian(law) else laplace_mixing_given(y - SA @ stat, b, rng)
            cm, cc = SA @ m_a, SA @ Caa @ SA.T / n
            if o.own_mean:
                ll[f"{o.name}_mean"] = loo_mean_terms(law, y, cm, cc, var_m, b)
            S_y = 0.5 * (cc + cc.T) + np.diag(var_m)
            cross = Cea @ SA.T / n                                         # Cov(ē, y_m)
            gain = np.linalg.solve(S_y, cross.T).T
            e_mean = m_e + gain @ (y - cm)
            e_cov = Cee / n - gain @ cross.T
            var_d = (rel.scale**2 if _is_gaussian(rel.law) else
                     laplace_mixing_given(rel.released - ebar, rel.scale, rng))
            ll[f"{o.name}_density"] = loo_mean_terms(rel.law, rel.released, e_mean, 0.5 * (e_cov + e_cov.T), var_d,
                                                     rel.scale)
            if with_clipping and o.own_mean and part["tau_norm"] != "sup":
                share["mean"] = outside_tau(mu - part["offset"], Kt, part["view"].weights, part["tau"])
        return ll, share

    def record(self, attrs: dict) -> None:
        name = self.o.name
        text = LOG_LIKELIHOOD if self.mode == "integrated" else LOG_LIKELIHOOD_CONDITIONAL
        if self.o.own_mean:
            text = (f"{name}_mean: " + ("log p(y_mj | y_m-j, theta) per coefficient (the latent mean integrated out, "
                                        "as for one mean release)" if self.mode == "integrated" else
                                        "log p(y_mj | sample mean) per coefficient") + "; " + text)
        attrs[f"{name}_density_log_likelihood"] = text.replace("<density>", f"{name}_density")
        attrs[f"{name}_density_log_likelihood_mode"] = self.mode


def density_groups(o: DensityObservation) -> tuple[xr.Dataset, xr.Dataset, dict]:
    """``observed_data``, ``constant_data`` and the log-likelihood dims of one density observation."""
    rel, part = o.density, o.mean_part
    dd, tdim, gdim = f"{o.name}_density_basis", f"{o.name}_t", f"{o.name}_density_grid"
    observed = xr.Dataset({f"{o.name}_density": ((dd,), rel.released)})
    constant = xr.Dataset({f"{o.name}_density_noise_scale": ((dd,), rel.scale),
                           f"{o.name}_density_functional": ((tdim,), o.functional),
                           f"{o.name}_density_record_map": ((gdim, dd), rel.table)}).assign_coords(
        {tdim: o.t, gdim: rel.nodes})
    lldims = {f"{o.name}_density": dd}
    if o.own_mean:
        md = f"{o.name}_mean_basis"
        observed[f"{o.name}_mean"] = ((md,), part["y"])
        constant = constant.assign({f"{o.name}_mean_noise_scale": ((md,), part["scale"]),
                                    f"{o.name}_mean_design": ((md, tdim), part["design"]),
                                    f"{o.name}_mean_offset": ((tdim,), part["offset"])})
        lldims[f"{o.name}_mean"] = md
    return observed, constant, lldims


__all__ = ["CELLS_PER_NODE", "DensityLoo", "DensityObservation", "DensityRelease", "density_function",
           "density_groups", "density_moments_1d", "density_point_moments", "observe_with_density",
           "read_density_release"]
