"""Models of the people from private releases: a mean release as an observed node of the user's own PyMC model.

:func:`fdp_ppl.infer` answers "what was the released summary (or the population mean) before the noise?". Here the
user writes the *population* model — a mean function ``μ(t)`` and a covariance ``K(t, t')`` of the curves on the
release's grid, with hyperparameters as PyMC variables — and :func:`observe` connects a mean release to it with one
call. The package supplies the release's likelihood given ``(μ, K)``, from the release's public content only
(:func:`fdp_ppl.releasing.schema.read_release`): its public n, shrinkage ``s_j`` (rebuilt by the summary's own spec,
:func:`fdp_ppl.inference.infer._shrinkage`), the map ``A`` from the grid to its coefficients
(:meth:`~fdp_ppl.releasing.schema.ReleaseView.grid_to_coefficients`), its public offset, and its noise law and
scales (:class:`~fdp_ppl.noise.laws.NoiseLaw`).

The likelihood (stated in the result's attrs, ``<name>_likelihood``):

* the sample mean of n curves, clipped to τ and projected on the release's basis. Where clipping cannot bind
  (:func:`~fdp_ppl.inference.population_clipping.clipping_plan`: no draw of the model's *prior* puts more than
  0.1 % of curves beyond τ — public quantities only, never the data) it is taken as
  ``X̄ ~ N(S A (μ − o), S A K Aᵀ S / n)`` (``S = diag s_j``, ``o`` the public offset): exact for a Gaussian
  population whose curves are not clipped, the central limit theorem otherwise. Where clipping may bind
  (:mod:`fdp_ppl.inference.population_clipping`): for n > 30 the CLT with the *clipped* moments,
  ``N(S A m_τ, S A C_τ Aᵀ S / n)``, ``m_τ, C_τ`` computed on 2048 fixed public quadrature points (common random
  numbers: NUTS has the gradient; their error is measured at posterior draws and recorded,
  ``<name>_clipping_moment_error_*``); for n ≤ 30 the n records as latent variables (exact data augmentation).
  ``clipping=`` overrides the choice. With ``clipping="ignore"``, :func:`population_result` computes from the fitted
  model (never from data) the share of curves the population puts outside τ, records it and warns
  (:class:`PopulationClippingWarning`) when it is above :data:`CLIPPING_TOLERANCE`;
* the release's own noise law on top. Normal noise (Gaussian mechanism; Mirshani et al. 2019): the exact
  convolution, ``N(S A (μ − o), S A K Aᵀ S / n + diag s²)``. Laplace noise (ICLP, FRL; Lin & Reimherr 2026, with
  scale ``b_j``): the noise written as its exact normal scale mixture ``ξ_j | E_j ~ N(0, 2 b_j² E_j)``,
  ``E_j ~ Exp(1)`` (:meth:`~fdp_ppl.noise.laws.Laplace.mixing`), with the latent scales ``<name>::noise_mixing``
  sampled by NUTS alongside the population parameters: given them the release is Gaussian, so the likelihood is
  one ``pm.MvNormal`` and its gradient flows to every population parameter. A joint (elliptical) law is refused.

n enters as a number: a release of n = 10⁵ curves costs the same as one of n = 100.

Several releases of the same people (a mean release and a principal-components release of one data set):
``observe([mean_tree, components_tree], ...)``, :mod:`fdp_ppl.inference.population_joint` (latent sample mean and
scatter shared by both likelihoods; ``clipping=`` as here, the latent statistics then the clipped ones, calibrated
by ``benchmarks/bench_sbc_population.py --clipped --settings mean+components``; its ``log_likelihood`` with the latent
statistics integrated out, :class:`~fdp_ppl.inference.population_joint.JointLoo`).

:func:`population_result` turns the sampled trace into the result: pointwise ``log_likelihood`` for ``az.compare``
(the non-factorised leave-one-out terms ``log p(y_j | y_{-j}, population parameters)``; Bürkner, Gabry & Vehtari
2021), ``observed_data``, ``constant_data`` and the identity of each release it conditions on (``release_id``,
:func:`~fdp_ppl.inference.comparison.release_identity`).

Costs no privacy: the release is post-processed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError
from ..releasing import schema as S
from ..settings import blas_threads
from . import population_clipping as C
from .comparison import RELEASE_ID
from .population_clipping import CLIPPING_POINTS
from .population_parts import (
    CLIPPING_SAMPLES,
    CONDITIONAL_LOO_NOTE,
    _as_tensor,
    _check_name,
    _mean_release,
    _model,
    loo_mean_terms,
    outside_tau,
)

#: share of the population's curves outside τ above which :func:`population_result` warns that clipping binds
CLIPPING_TOLERANCE = 0.01
#: posterior draws (evenly spaced) at which :func:`population_result` computes the share outside τ
CLIPPING_DRAWS = 200
#: what the likelihood assumes, recorded as ``<name>_approximation``
APPROXIMATION = ("sample mean of the n curves ~ N(S A (mu - offset), S A K A^T S / n): exact for a Gaussian "
                 "population without clipping, the central limit theorem otherwise; clipping to tau not modelled "
                 "(<name>_outside_tau: the population's share of curves beyond tau)")
APPROXIMATION_MOMENTS = ("mean of the n clipped curves ~ N(m_tau, C_tau / n) (central limit theorem; clipped curves are "
                         "bounded by tau), the clipped moments m_tau, C_tau of the Gaussian population computed on {S} "
                         "fixed public moment-matched Sobol points (quadrature error measured at posterior draws: "
                         "<name>_clipping_moment_error_*)")
APPROXIMATION_RECORDS = "none: the n records are latent variables (record-level data augmentation)"
#: the latent records' name (``<name>::records``, shape (n, K)) under ``clipping="records"``
RECORDS = "records"
#: posterior draws (evenly spaced) at which :func:`population_result` measures the clipped moments' quadrature error
MOMENT_ERROR_DRAWS = 8
#: quadrature error of the clipped likelihood's mean (in its standard deviations) above which a warning is raised
MOMENT_ERROR_TOLERANCE = 0.1


class PopulationClippingWarning(UserWarning):
    """The fitted population model puts more than :data:`CLIPPING_TOLERANCE` of its curves outside the release's τ
    and the likelihood ignores clipping (it is then biased), or the clipped likelihood's quadrature is too coarse."""


@dataclass(frozen=True, eq=False)
class PopulationObservation:
    """One release observed by :func:`observe` (what :func:`population_result` needs; public content only).

    Attributes
    ----------
    name : str
        The observed variable's name in the model (its coefficients' dim is ``<name>_basis``).
    release_id : str
        :func:`~fdp_ppl.inference.comparison.release_identity` of the release and draw.
    released : ndarray (J,)
        The released coefficients.
    design : ndarray (J, K)
        ``S A``: the clipped sample mean on the grid → the summary's coefficients.
    offset : ndarray (K,)
        The release's public offset (zeros when it has none).
    n : int
        The release's public number of records.
    law : NoiseLaw
    scale : ndarray (J,)
        The public noise scales.
    tau : float
    tau_norm : str
        ``"l2"`` (the grid norm) or ``"sup"``.
    weights, t : ndarray (K,)
        Quadrature weights and the grid (original units).
    mean, covariance : TensorVariable
        The population's mean (K,) and covariance (K, K) as given to :func:`observe`.
    mixing : str or None
        The latent mixing variable's name (Laplace noise), or None.
    attrs : dict
        Public description of the likelihood, recorded by :func:`population_result` as ``<name>_<key>``.
    clipping : str
        How clipping is handled: ``"ignore"`` (closed form), ``"moments"`` or ``"records"``
        (:mod:`fdp_ppl.inference.population_clipping`).
    coef_mean, sampling_cov : TensorVariable
        The likelihood's mean (J,) and sampling covariance (J, J) of the coefficients before the noise (``"records"``:
        ``S A x̄_τ`` given the latent records, and zeros).
    points : ndarray (S, K) or None
        The public quadrature points of ``"moments"``.
    """

    name: str
    release_id: str
    released: np.ndarray
    design: np.ndarray
    offset: np.ndarray
    n: int
    law: object
    scale: np.ndarray
    tau: float
    tau_norm: str
    weights: np.ndarray
    t: np.ndarray
    mean: object
    covariance: object
    mixing: str | None
    attrs: dict = field(default_factory=dict)
    clipping: str = "ignore"
    coef_mean: object = None
    sampling_cov: object = None
    points: np.ndarray | None = None

    @property
    def dim(self) -> str:
        return f"{self.name}_basis"


def observe(release: xr.DataTree, *, mean, covariance, name: str = "release", draw: int = 0, clipping: str = "auto",
            clipping_points: int = CLIPPING_POINTS, density_of=None) -> PopulationObservation:
    """Observe a mean-curve release in the current PyMC model, given a population model of the curves.

    Adds the release's likelihood given the population mean ``μ(t)`` and covariance ``K(t, t')`` on the release's
    grid (module docstring: the sample mean of the n curves projected on the release's basis and shrunk,
    ``N(S A (μ − o), S A K Aᵀ S / n)``, composed with the release's public noise law). Call it inside
    ``with pm.Model():``; then sample as usual and pass the trace to :func:`population_result`.

    Several releases of the same people: ``observe([mean_tree, components_tree], mean=..., covariance=...)`` observes
    a mean release and an ε-DP FPCA release (Bingham, k = 1) of one data set together, their dependence through the
    shared curves carried by latent sufficient statistics (the sample mean and the scatter about it;
    :func:`fdp_ppl.inference.population_joint.observe_joint`, which returns a ``JointObservation``). A d = 1 density
    release of a scalar feature ``wᵀX_i`` of the same curves joins them with ``density_of=w``:
    ``observe([mean_tree, kde_tree], ..., density_of=w)`` or ``[mean_tree, components_tree, kde_tree]``, its latent
    density coefficients entering by the joint central limit theorem with the other latent means
    (:mod:`fdp_ppl.inference.population_density`).

    Parameters
    ----------
    release : xr.DataTree or list of two xr.DataTree
        A mean-curve release (:func:`fdp_ppl.release`) of a summary linear in the clipped mean (FRL, ICLP-QR, RKHS,
        the sample mean, Bernstein) with a product noise law (Laplace or Normal); or a list of such a release and an
        FPCA release of the same curves (joint observation). Only public content is read.
    mean : array_like or TensorVariable, shape (K,) or scalar
        The population mean of one curve on the release's grid ``t`` (K points, the curves' units; the public offset
        is subtracted here).
    covariance : array_like or TensorVariable, shape (K, K)
        The population covariance of one curve on the grid (positive semi-definite; e.g. ``a² Matérn(|t − t'|/ρ)``).
    name : str
        Name of the observed variable (``<name>``), its dim (``<name>_basis``) and the latent mixing scales'
        sub-model (``<name>::noise_mixing``). One per release in a model.
    draw : int
        Which released draw to condition on (each draw is a separate publication; default 0).
    clipping : {"auto", "moments", "records", "ignore"}
        How clipping to τ enters the likelihood (module docstring; :mod:`fdp_ppl.inference.population_clipping`):
        ``"auto"`` chooses from the release's n and τ and draws of the model's prior (never from the data);
        ``"moments"``: CLT with the clipped moments; ``"records"``: the n records as latents (exact; n·K latent
        variables); ``"ignore"``: the closed form without clipping. Recorded as ``<name>_clipping``.
    clipping_points : int
        Public quadrature points of ``"moments"`` (a power of two; error recorded by :func:`population_result`).
    density_of : array_like (K,), optional
        With a d = 1 density (KDE) release in the list: the public functional ``w`` of each curve whose density it
        released, ``x_i = wᵀX_i`` (one-hot: the value at a grid point; quadrature weights: the curve's average);
        :func:`fdp_ppl.inference.population_density.observe_with_density`.

    Returns
    -------
    PopulationObservation
        Also registered on the model for :func:`population_result`.

    Raises
    ------
    InputError
        Outside a model, a name already in the model, shapes that do not match the grid, a joint (elliptical) noise
        law, a summary that is not linear in the clipped mean (ICLP-AR) or an unknown ``clipping``.
    SchemaError
        Not a mean-curve release.

    Notes
    -----
    Clipping to τ: see ``clipping``; the choice and its approximation are in the result's attrs
    (``<name>_clipping``, ``<name>_approximation``, ``<name>_clipping_prior_share``). Laplace noise is written as its normal scale mixture (Lin & Reimherr 2026;
    ``specs/iclp.md`` §4.3): J latent scales are sampled by NUTS with the population parameters.

    Cost: the likelihood is one J × J ``MvNormal`` (J ≤ K coefficients). Its log-density and gradient are a few dense
    products with the public ``S A``, which OpenBLAS's threads slow down on a busy machine (free Matérn amplitude and
    lengthscale, K = 100: 185 ms per evaluation with the default threads against 2.1 ms with one; K = 12: 0.66 against
    0.24 ms). ``pm.sample`` limits them already (``blas_cores="auto"``); evaluate ``model.compile_logp`` /
    ``compile_dlogp`` outside it under :func:`fdp_ppl.settings.blas_threads`, as :func:`population_result` does.

    Examples
    --------
    >>> import numpy as np, pymc as pm, warnings
    >>> import fdp_ppl as fp
    >>> grid = fp.Grid.uniform(20)
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    >>> curves = np.sin(2 * np.pi * grid.t) + np.random.default_rng(0).normal(0, 0.1, (50, 20))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", fp.SeededReleaseWarning)
    ...     tree = fp.release(fp.frl_mean(curves, basis, tau=3.0, M=5), fp.FRL(epsilon=1.0),
    ...                       random_seed=1, study=True)
    >>> d = np.abs(grid.t[:, None] - grid.t[None, :])
    >>> with pm.Model() as model:
    ...     level = pm.Normal("level", 0.0, 1.0)
    ...     obs = fp.observe(tree, mean=level + np.sin(2 * np.pi * grid.t),
    ...                      covariance=0.01 * np.exp(-d / 0.2), name="frl")
    >>> obs.name, obs.dim, obs.mixing, obs.released.shape
    ('frl', 'frl_basis', 'frl::noise_mixing', (5,))
    >>> sorted(v.name for v in model.free_RVs)
    ['frl::noise_mixing', 'level']
    """
    import pymc as pm
    import pytensor.tensor as pt

    from .plan import _is_gaussian

    if density_of is not None or (isinstance(release, (list, tuple)) and any(S.is_kde_release(t) for t in release)):
        from .population_density import observe_with_density

        if not isinstance(release, (list, tuple)):
            raise InputError("density_of= is for a density release observed with the mean release of the same people",
                             "pass [mean_release, density_release] (or with a components release), or drop density_of")
        return observe_with_density(release, mean=mean, covariance=covariance, density_of=density_of, name=name,
                                    draw=draw, clipping=clipping, clipping_points=clipping_points)
    if isinstance(release, (list, tuple)):
        from .population_joint import observe_joint

        return observe_joint(release, mean=mean, covariance=covariance, name=name, draw=draw, clipping=clipping,
                             clipping_points=clipping_points)
    model = _model(None)
    _check_name(model, name, (name, f"{name}_basis"))
    part = _mean_release(release, draw)
    view, law, y, SA, offset, n, b = (part[k] for k in ("view", "law", "y", "design", "offset", "n", "scale"))
    K, J = view.t.size, y.size
    mu = _as_tensor(mean, (K,), "mean")
    cov = _as_tensor(covariance, (K, K), "covariance")
    tau, norm = part["tau"], part["tau_norm"]
    choice, prior_share = C.clipping_plan(model, mu, cov, n=n, tau=tau, norm=norm, weights=view.weights,
                                          offset=offset, clipping=clipping)
    dim = f"{name}_basis"
    model.add_coord(dim, np.arange(J))
    centred, points, mixing = mu - offset, None, None
    if choice == "records":
        chol = _cholesky(cov, K)
        with pm.Model(name=name):
            z = pm.Normal(RECORDS, 0.0, 1.0, shape=(n, K))
        x = centred + pt.dot(z, chol.T)
        coef_mean = pt.dot(SA, pt.mean(x - C.excess(x, view.weights, tau, norm, pt), axis=0))
        sampling_cov = pt.zeros((J, J))
        law.pymc(name, mu=coef_mean, scale=b, observed=y, dims=dim)
        noise = f"given the {n} latent records {name}::{RECORDS} (X_i = mu + L z_i), the release's own {law.name} law"
        likelihood = "S A mean_i clip_tau(X_i - offset) + noise, exact (record-level data augmentation)"
    else:
        if choice == "moments":
            points = C.normal_points(int(clipping_points), K)
            m, cc = C.clipped_moments(centred, _cholesky(cov, K), points, view.weights, tau, norm, xp=pt)
            likelihood = "N(S A m_tau, S A C_tau A^T S / n) for the clipped sample mean (m_tau, C_tau: clipped moments)"
        else:
            m, cc = centred, cov
            likelihood = "N(S A (mu - offset), S A K A^T S / n) for the clipped sample mean"
        coef_mean = pt.dot(SA, m)
        sampling_cov = pt.dot(pt.dot(SA, cc), SA.T) / n
        if _is_gaussian(law):
            noise_var = b**2
        else:
            with pm.Model(name=name):
                noise_var = b**2 * law.mixing(J, dims=dim)
            mixing = f"{name}::{_mixing_name()}"
        pm.MvNormal(name, mu=coef_mean, cov=sampling_cov + pt.diag(noise_var), observed=y, dims=dim)
        noise = ("exact convolution with the Normal noise (covariance + diag s^2)" if mixing is None else
                 f"{law.name} noise as its normal scale mixture (latent scales {mixing}, sampled with the population "
                 "parameters)")
    approximation = {"ignore": APPROXIMATION.replace("<name>", name),
                     "moments": APPROXIMATION_MOMENTS.format(S=0 if points is None else points.shape[0]).replace(
                         "<name>", name),
                     "records": APPROXIMATION_RECORDS}[choice]
    attrs = {"release_id": part["release_id"], "release_draw": int(draw), "likelihood": f"{likelihood}; {noise}",
             "approximation": approximation, "clipping": choice, "clipping_prior_share": prior_share, "n": n,
             "tau": tau, "noise_law": law.name, "summary": view.metadata.summary, "n_components": J}
    if choice == "records":
        attrs["log_likelihood"] = f"log p(y_j | latent records): {CONDITIONAL_LOO_NOTE}"
    obs = PopulationObservation(name=name, release_id=attrs["release_id"], released=y, design=SA, offset=offset, n=n,
                                law=law, scale=b, tau=tau, tau_norm=norm, weights=view.weights,
                                t=view.t_original, mean=mu, covariance=cov, mixing=mixing, attrs=attrs,
                                clipping=choice, coef_mean=coef_mean, sampling_cov=sampling_cov, points=points)
    model._fdp_population = [*getattr(model, "_fdp_population", []), obs]
    return obs


def _cholesky(cov, K: int):
    """Lower Cholesky factor of the population covariance (PyTensor; a jitter of 1e-10 · mean variance)."""
    import pytensor.tensor as pt

    return pt.linalg.cholesky(cov + 1e-10 * pt.mean(pt.diagonal(cov)) * pt.eye(K))


def _mixing_name() -> str:
    from ..noise.laws import MIXING_VARIABLE

    return MIXING_VARIABLE


def _population_function(model, observations):
    """A compiled function of the model's free variables' values → per observation (the likelihood's coefficient
    mean and sampling covariance, ``μ − o``, ``K``), evaluated at posterior draws."""
    import pytensor

    from ..settings import compile_mode

    outputs = []
    for o in observations:
        outputs += [o.coef_mean, o.sampling_cov, o.mean - o.offset, o.covariance]
    inputs = list(model.free_RVs)
    fn = pytensor.function(inputs, outputs, on_unused_input="ignore", mode=compile_mode())
    return fn, [v.name for v in inputs]


def population_result(idata: xr.DataTree, model=None, *, log_likelihood: str = "integrated",
                      loo_draws: int | None = None) -> xr.DataTree:
    """The result of sampling a model with :func:`observe`'d releases: ``log_likelihood`` for ``az.compare``, the
    observed releases, their identity, and the share of curves the fitted population puts outside τ.

    Parameters
    ----------
    idata : xr.DataTree
        What ``pm.sample`` returned for ``model`` (its ``posterior`` group is read).
    model : pm.Model, optional
        The model (default: the current ``with pm.Model()`` context).
    log_likelihood : {"integrated", "joint", "conditional"}
        Joint observations (``observe([mean, components])``) only: ``"integrated"`` (default) gives terms with the
        latent sample mean and scatter integrated out given the population parameters
        (:class:`~fdp_ppl.inference.population_joint.JointLoo`: ``log p(y_j | y_{-j}, θ)`` per mean coefficient,
        ``log p(v | y, θ)`` per frame by Monte Carlo); ``"joint"`` also conditions each mean term on the frame (the
        joint's exact leave-one-out terms, J + 1 times the Monte Carlo cost); ``"conditional"`` the terms given the
        latent statistics (optimistic under PSIS-LOO; for a user who needs them). A density release
        (``density_of=``) adds ``<name>_density``: integrated given θ and the mean release, or given the latent
        density mean (:class:`~fdp_ppl.inference.population_density.DensityLoo`).
    loo_draws : int, optional
        Public Monte Carlo draws per posterior draw of the integrated components term (default
        :data:`~fdp_ppl.inference.population_joint.LOO_DRAWS`).

    Returns
    -------
    xr.DataTree
        ``idata``'s groups with ``log_likelihood/<name>`` (chain, draw, ``<name>_basis``): ``log p(y_j | y_{-j},
        population parameters)``, the non-factorised leave-one-out terms (Bürkner, Gabry & Vehtari 2021; Laplace
        noise: the latent scale ``E_j`` integrated out exactly, a Normal–Laplace density,
        :meth:`~fdp_ppl.noise.laws.Laplace.convolved_logp`), for ``az.loo`` / ``az.compare`` (their sum is not
        ``log p(y | ·)``); ``observed_data/<name>`` (the released coefficients); ``constant_data``
        (``<name>_noise_scale``, ``<name>_design`` (``S A``), ``<name>_offset``, the grid); attrs ``release_id``
        (one release: its :func:`~fdp_ppl.inference.comparison.release_identity`; several: the ids joined by ``,``),
        ``<name>_release_id``, ``<name>_likelihood``, ``<name>_approximation``, ``<name>_clipping`` (and for
        ``"moments"`` ``<name>_clipping_moment_error_{mean,cov,reference_se}``: the quadrature's error at
        :data:`MOMENT_ERROR_DRAWS` posterior draws, in the likelihood's sd), ``<name>_outside_tau`` (posterior
        mean of the share of curves beyond τ, from the model at :data:`CLIPPING_DRAWS` draws; never from data) and
        ``<name>_outside_tau_max``.

    Warns
    -----
    PopulationClippingWarning
        The posterior mean share outside τ exceeds :data:`CLIPPING_TOLERANCE` and the likelihood ignores clipping
        (``clipping="ignore"``, or a joint observation), or the clipped moments' quadrature error exceeds
        :data:`MOMENT_ERROR_TOLERANCE` likelihood sd.
    JointLooWarning
        The Monte Carlo standard error of a joint observation's integrated components term exceeds
        :data:`~fdp_ppl.inference.population_joint.LOO_MC_TOLERANCE` nats.

    Raises
    ------
    InputError
        A model without :func:`observe`, or a trace without its free variables.
    """
    from . import population_density as D
    from . import population_joint as J

    model = _model(model)
    if log_likelihood not in J.LOG_LIKELIHOOD_MODES:
        raise InputError(f"unknown log_likelihood {log_likelihood!r}", f"pass one of {J.LOG_LIKELIHOOD_MODES}")
    observations = getattr(model, "_fdp_population", [])
    joints = getattr(model, "_fdp_population_joint", [])
    densities = getattr(model, "_fdp_population_density", [])
    if not observations and not joints and not densities:
        raise InputError("the model observes no release", "call fp.observe(release, mean=..., covariance=...) in it")
    post = idata[S.POSTERIOR].to_dataset()
    fn, names = _population_function(model, observations) if observations else (None, [])
    jfn, jnames = J.joint_function(model, joints) if joints else (None, [])
    dfn, dnames = D.density_function(model, densities) if densities else (None, [])
    missing = [v for v in dict.fromkeys(names + jnames + dnames) if v not in post]
    if missing:
        raise InputError(f"the trace has no draws of {missing}", "pass what pm.sample returned for this model")
    n_chain, n_draw = post.sizes[dims.CHAIN], post.sizes[dims.DRAW]
    ns = n_chain * n_draw
    flat = {v: post[v].transpose(dims.CHAIN, dims.DRAW, ...).values.reshape(ns, *post[v].shape[2:])
            for v in dict.fromkeys(names + jnames + dnames)}
    clip_at = set(np.unique(np.linspace(0, ns - 1, min(ns, CLIPPING_DRAWS)).astype(int)).tolist())
    loglik = {o.name: np.empty((ns, o.released.size)) for o in observations}
    outside = {o.name: [] for o in observations}
    error_at = set(np.unique(np.linspace(0, ns - 1, min(ns, MOMENT_ERROR_DRAWS)).astype(int)).tolist())
    errors = {o.name: [] for o in observations}
    jdims = {}
    jloo = [J.JointLoo(o, log_likelihood, loo_draws) for o in joints]
    for o in joints:
        jdims.update(J.joint_groups(o)[2])
        outside.update({f"{o.name}_{part}": [] for part in ("mean", "components")})
    dloo = [D.DensityLoo(o, log_likelihood) for o in densities]
    for o in densities:
        jdims.update(D.density_groups(o)[2])
        outside.setdefault(f"{o.name}_mean", [])
    with blas_threads():   # small dense algebra per draw: OpenBLAS's second thread only synchronises
        for i in range(ns):
            values = fn(*[flat[v][i] for v in names]) if fn is not None else []
            for k, o in enumerate(observations):
                m, cm, centred, Kt = values[4 * k: 4 * k + 4]
                if o.clipping == "records":   # given the latent records: the release's own noise density
                    loglik[o.name][i] = o.law.logp(o.released, m, o.scale, pointwise=True)
                else:
                    mix = (1.0 if o.mixing is None else
                           o.law.mixing_draws({_mixing_name(): flat[o.mixing][i]}, 1, o.released.size)[0])
                    loglik[o.name][i] = loo_mean_terms(o.law, o.released, m, cm, o.scale**2 * mix, o.scale)
                if i in clip_at and o.tau_norm != "sup":
                    outside[o.name].append(outside_tau(centred, Kt, o.weights, o.tau))
                if o.clipping == "moments" and i in error_at:
                    errors[o.name].append(C.moment_error(centred, Kt, o.design, o.n, o.law.variance(o.scale),
                                                         o.weights, o.tau, o.tau_norm, o.points))
            for gfn, gnames, gobs, gloo in ((jfn, jnames, joints, jloo), (dfn, dnames, densities, dloo)):
                gvalues = gfn(*[flat[v][i] for v in gnames]) if gfn is not None else []
                for k, o in enumerate(gobs):
                    terms, share = gloo[k].terms(gvalues[k], i, i in clip_at)
                    for var, value in terms.items():
                        loglik.setdefault(var, np.empty((ns, value.size)))[i] = value
                    for part, value in share.items():
                        outside[f"{o.name}_{part}"].append(value)
    groups = {key: node.to_dataset() for key, node in idata.children.items()}
    ll_dims = {**{o.name: o.dim for o in observations}, **jdims}
    ll = xr.Dataset({var: ((dims.CHAIN, dims.DRAW, ll_dims[var]), loglik[var].reshape(n_chain, n_draw, -1))
                     for var in ll_dims}, coords={dims.CHAIN: post[dims.CHAIN], dims.DRAW: post[dims.DRAW]})
    groups[S.LOG_LIKELIHOOD] = ll
    observed = xr.Dataset({o.name: ((o.dim,), o.released) for o in observations})
    constant = xr.Dataset()
    for o in observations:
        tdim = f"{o.name}_t"
        constant = constant.assign({f"{o.name}_noise_scale": ((o.dim,), o.scale),
                                    f"{o.name}_design": ((o.dim, tdim), o.design),
                                    f"{o.name}_offset": ((tdim,), o.offset),
                                    f"{o.name}_quadrature_weights": ((tdim,), o.weights)}).assign_coords({tdim: o.t})
    for o in joints:
        jobs, jconst, _ = J.joint_groups(o)
        observed, constant = observed.merge(jobs), constant.merge(jconst)
    for o in densities:
        dobs, dconst, _ = D.density_groups(o)
        observed, constant = observed.merge(dobs), constant.merge(dconst)
    groups[S.OBSERVED_DATA] = groups.get(S.OBSERVED_DATA, xr.Dataset()).drop_vars(
        list(observed.data_vars), errors="ignore").merge(observed)
    groups[S.CONSTANT_DATA] = groups.get(S.CONSTANT_DATA, xr.Dataset()).merge(constant)
    tree = xr.DataTree.from_dict(groups)
    attrs = dict(idata.attrs)
    attrs[RELEASE_ID] = ",".join([o.release_id for o in observations] + [r for o in joints
                                                                         for r in o.release_ids.values()]
                                  + [r for o in densities for k, r in o.release_ids.items()
                                     if o.own_mean or k == "density"])
    attrs["inference"] = "population model (fdp_ppl.inference.population.observe)"
    attrs["privacy_cost"] = "none (post-processing of a release)"
    if observations:
        attrs["log_likelihood"] = ("log p(y_j | y_-j, population parameters) per released coefficient (non-factorised "
                                   "leave-one-out terms, Buerkner, Gabry & Vehtari 2021); not summing to log p(y | .)")
    for o in observations:
        attrs.update({f"{o.name}_{k}": v for k, v in o.attrs.items()})
        if o.tau_norm == "sup":
            attrs[f"{o.name}_outside_tau"] = "not computed (sup-norm clipping)"
            continue
        _record_clipping(attrs, o.name, outside[o.name], o.tau, modelled=o.clipping != "ignore")
        if errors[o.name]:
            _record_moment_error(attrs, o.name, errors[o.name])
    for o, loo in zip(joints, jloo):
        attrs.update({f"{o.name}_{k}": v for k, v in o.attrs.items()})
        loo.record(attrs)
        for part, tau in (("mean", o.mean_part["tau"]), ("components", o.components_tau)):
            if outside[f"{o.name}_{part}"]:
                _record_clipping(attrs, f"{o.name}_{part}", outside[f"{o.name}_{part}"], tau,
                                 modelled=o.clipping != "ignore")
    for o, loo in zip(densities, dloo):
        attrs.update({f"{o.name}_{k}": v for k, v in o.attrs.items()})
        loo.record(attrs)
        if o.own_mean and outside[f"{o.name}_mean"]:
            _record_clipping(attrs, f"{o.name}_mean", outside[f"{o.name}_mean"], o.mean_part["tau"],
                             modelled=o.clipping != "ignore")
    tree.attrs = S.clean_attrs(attrs)
    return tree


def _record_clipping(attrs: dict, key: str, shares, tau: float, *, modelled: bool = False) -> None:
    """Record the fitted population's share of curves beyond τ as ``<key>_outside_tau`` (posterior mean) and
    ``<key>_outside_tau_max``; warn when it binds and the likelihood ignores it."""
    share = np.asarray(shares)
    attrs[f"{key}_outside_tau"] = float(share.mean())
    attrs[f"{key}_outside_tau_max"] = float(share.max())
    if share.mean() > CLIPPING_TOLERANCE and not modelled:
        warnings.warn(f"clipping binds for {key!r}: the fitted population puts {share.mean():.1%} of curves "
                      f"outside tau = {tau:g} (posterior mean, from the model; up to {share.max():.1%}), which "
                      "fp.observe's likelihood ignores: the population posterior is biased (not handled)",
                      PopulationClippingWarning, stacklevel=3)


def _record_moment_error(attrs: dict, key: str, errors: list) -> None:
    """Record the clipped moments' quadrature error (largest over the checked draws) as
    ``<key>_clipping_moment_error_{mean,cov,reference_se}``; warn when the mean's exceeds
    :data:`MOMENT_ERROR_TOLERANCE` standard deviations."""
    worst = {k: float(max(e[k] for e in errors)) for k in errors[0]}
    attrs.update({f"{key}_clipping_moment_error_{k}": v for k, v in worst.items()})
    attrs[f"{key}_clipping_moment_error"] = (
        f"largest over {len(errors)} posterior draws of |error of the likelihood's mean| / its sd (_mean), relative "
        f"error of its variances (_cov), against {C.REFERENCE_FACTOR}x as many independent points (their own standard "
        "error: _reference_se)")
    if worst["mean"] > MOMENT_ERROR_TOLERANCE + 2 * worst["reference_se"]:
        warnings.warn(f"the clipped moments of {key!r} are off by up to {worst['mean']:.2f} likelihood sd at posterior "
                      "draws: the quadrature is too coarse for this n and noise (pass a larger clipping_points= to "
                      "fp.observe)", PopulationClippingWarning,
                      stacklevel=3)


__all__ = [
    "APPROXIMATION",
    "APPROXIMATION_MOMENTS",
    "APPROXIMATION_RECORDS",
    "CLIPPING_DRAWS",
    "CLIPPING_SAMPLES",
    "CLIPPING_TOLERANCE",
    "MOMENT_ERROR_DRAWS",
    "MOMENT_ERROR_TOLERANCE",
    "RECORDS",
    "PopulationClippingWarning",
    "PopulationObservation",
    "observe",
    "outside_tau",
    "population_result",
]
