"""Several releases of the same people observed together: a mean release and a principal-components release of one
data set in the user's PyMC population model, their dependence through the shared data carried by latent sufficient
statistics.

``fp.observe([mean_tree, components_tree], mean=μ, covariance=K, name="growth")`` (:func:`observe_joint`). The two
releases are functions of the same n curves ``X_i`` (grid values, K points): the mean release of their clipped sample
mean ``X̄`` projected on its basis (:func:`fdp_ppl.inference.population.observe`), the ε-DP FPCA release
(:mod:`fdp_ppl.fpca`, Bingham form, k = 1) of their uncentred scatter ``G = Σ_i c_i c_iᵀ`` of coefficients
``c_i = B_w X_i / τ_c`` (``B_w`` the public basis times the quadrature weights, m × K). Independent likelihoods
would count the sample mean twice (it is in both); here the sufficient statistics are latent:

* ``X̄ = μ + L ξ / √n``, ``ξ ~ N(0, I_K)`` (``<name>::sample_mean_std``; ``L L ᵀ = K``): the sample mean of n
  curves of a Gaussian population, exactly; recorded as ``<name>::sample_mean``;
* ``G = n c̄ c̄ᵀ + W`` with ``c̄ = B_w X̄ / τ_c`` and ``W = Σ_i (c_i − c̄)(c_i − c̄)ᵀ ~ Wishart_m(n − 1, B_w K B_wᵀ/τ_c²)``
  independent of ``X̄`` (Cochran's theorem), drawn by its Bartlett decomposition ``W = L_c T Tᵀ L_cᵀ`` (T lower
  triangular, ``T_ij ~ N(0, 1)`` below the diagonal (``<name>::bartlett_lower``), ``T_ii² ~ χ²_{n−1−i}``). The χ²
  variables are written through the Wilson–Hilferty map ``T_ii² = ν(1 − 2/(9ν) + u √(2/(9ν)))³`` of a free
  ``u`` (``<name>::bartlett_diag_std``) with the exact χ² density and Jacobian added as a potential, so NUTS sees
  a near-standard-normal variable at any n (n = 10⁵ costs what n = 100 does);
* where ``tr G > n`` (outside the released scatter's support: clipped rows have norm ≤ 1) ``G`` is scaled down to
  ``tr G = n``, a crude stand-in for clipping that keeps the Bingham parameter's spread within the public bound by
  which the log-constant method was chosen;
* the mean release given ``X̄``: its noise law around ``S A (X̄ − o)`` (independent coefficients: ``pm.Normal`` or
  ``pm.Laplace``; no mixing variables needed once ``X̄`` is latent);
* the components release given ``G``: each released frame ``v`` has density ``exp(vᵀ A v)/C(A)``,
  ``A = s (G − Σ⁻¹)``, ``s = ε/(2Δ)`` (:class:`~fdp_ppl.inference.components.FrameLikelihood`), the normaliser
  ``C(A) = ₁F₁(½; m/2; A)`` and its gradient from :func:`~fdp_ppl.inference.bingham.bingham_log_constant_op`
  (exact series while the public bound on A's spread allows, else Kume & Wood's saddlepoint; recorded as
  ``<name>_components_log_constant``).

Clipping (``clipping=``, chosen as for one mean release by
:func:`~fdp_ppl.inference.population_clipping.clipping_plan` from n, both τ and the model's prior, never the data).
Each record enters the mean release as ``a_i = clip_τ(X_i − o)`` and the components release as the coefficient row
``d_i = clip_1(B_c clip_{τ_c}(X_i))`` (:func:`~fdp_ppl.inference.population_clipping.record_statistics`); the latent
sufficient statistics are their mean ``x̄_τ = (1/n) Σ a_i`` and their scatter ``G = Σ d_i d_iᵀ``:

``"ignore"`` (no prior draw clips)
    As above: ``a_i = X_i − o``, ``d_i = B_c X_i``. **Clipping is not modelled**; :func:`population_result` records
    from the fitted model the share of curves beyond each τ and warns (:class:`~fdp_ppl.inference.population.
    PopulationClippingWarning`) above :data:`~fdp_ppl.inference.population.CLIPPING_TOLERANCE`.
``"moments"`` (n > 30 where clipping may bind)
    The joint central limit theorem for the two clipped means, ``(x̄_τ, d̄) ~ N((m_a, m_d), C / n)``, with the
    clipped moments ``m_a, m_d, C = [[C_aa, C_ad], [C_da, C_dd]]`` of the Gaussian population on fixed public
    quadrature points (:func:`~fdp_ppl.inference.population_clipping.joint_clipped_moments`, common random numbers
    as for one release), written as ``x̄_τ = m_a + L_a ξ/√n`` and ``d̄ | x̄_τ`` with mean
    ``m_d + C_da C_aa⁻¹ (x̄_τ − m_a)`` and covariance ``(C_dd − C_da C_aa⁻¹ C_ad)/n`` (``<name>::coefficient_mean_std``;
    zero where nothing is clipped, so ``d̄ = B_c(x̄ + o)`` as without clipping); the scatter about the mean
    ``W ~ Wishart_m(n − 1, C_dd)`` independent of it, by the same Bartlett construction. Approximations: the CLT
    for the means, a Wishart for the scatter of bounded (non-Gaussian) rows with their exact second moment, their
    independence (exact for Gaussian rows only), and the quadrature.
``"records"`` (n ≤ 30)
    The n records as latent variables ``X_i = μ + L z_i`` (``<name>::records``, n × K): ``x̄_τ`` and ``G`` computed
    from them exactly (no Wishart, no CLT, no ``tr G`` guard needed).

What is approximate otherwise (recorded as ``<name>_approximation``): the population is taken Gaussian (the CLT
otherwise, for ``X̄``; ``W`` is Wishart only for Gaussian curves). ``benchmarks/bench_sbc_population.py`` calibrates
the joint observation with clipping binding (``--clipped --settings mean+components``).

``log_likelihood`` (one variable per release, for ``az.loo`` / ``az.compare``; :class:`JointLoo`,
``population_result(..., log_likelihood=)``). By default the latent statistics are **integrated out** given the
population parameters θ: terms conditional on them (given x̄_τ and G the releases are independent) make PSIS-LOO
optimistic, because each released value alone informs its own latent direction (``benchmarks/bench_records_loo.py``).
The joint dependence — the sample mean is in both releases, in y through ``S A x̄_τ`` and in the frame v through
``n d̄ d̄ᵀ`` in G — means the two releases are *not* independent given θ, so the terms follow the chain rule
``p(y, v | θ) = p(y | θ) p(v | y, θ)``:

* ``<name>_mean``: ``log p(y_j | y_{-j}, θ)`` per coefficient, the sample mean integrated out in closed form as for one
  mean release (``N(S A m_a, S A C_aa Aᵀ S / n)`` plus the noise; Laplace noise by its normal scale mixture);
* ``<name>_components``: ``log p(v | y, θ)`` per frame — the frame's exact leave-one-out term (its complement is y) —
  by Monte Carlo over ``d̄ | y, θ`` (Gaussian) and ``W`` (Wishart) with :data:`LOO_DRAWS` fixed public draws, its Monte
  Carlo standard error recorded (``<name>_components_mc_se``).

What this drops: the mean terms do not condition on v, so the frame's information about the sample mean is left out
of them; on the exact Gaussian analogue (``bench_records_loo.py --joint``) that costs the well-specified model up to
0.8 elpd at sampling/noise sd 5 and a badly misspecified one several. ``log_likelihood="joint"`` adds it back
(``log p(y_j | y_{-j}, v, θ)`` by the same Monte Carlo, J + 1 times the cost): every term is then the joint's exact
leave-one-out term up to Monte Carlo. ``"conditional"`` keeps the terms given the latent statistics.
``clipping="records"`` has no closed law of the statistics given θ: its terms stay conditional (stated in the attrs).

Costs no privacy: the releases are post-processed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ..errors import InputError
from ..releasing import schema as S
from .comparison import release_identity
from .population_clipping import CLIPPING_POINTS
from .population_parts import CONDITIONAL_LOO_NOTE

#: relative jitter added to the diagonal of K (and of the components' covariance) before its Cholesky factor
JITTER = 1e-9
#: smallest Wishart degrees of freedom n − m served (the Wilson–Hilferty map needs ν well above 1)
MIN_DOF = 10
APPROXIMATION = ("latent sufficient statistics of a Gaussian population: sample mean ~ N(mu, K/n) (the central limit "
                 "theorem for a non-Gaussian population), scatter about it ~ Wishart(n-1, B K B^T / tau_c^2) "
                 "independent of it, scaled down to tr G <= n (the released scatter's support) where it exceeds it; "
                 "clipping to tau (mean release), tau_c and the coefficient rows otherwise not modelled "
                 "(<name>_mean_outside_tau, <name>_components_outside_tau: the fitted population's share of curves "
                 "beyond each)")
APPROXIMATION_MOMENTS = ("latent clipped sufficient statistics of a Gaussian population: the means of the n clipped "
                         "records (x_tau, mean release) and clipped coefficient rows (d, components release) ~ N((m_a, "
                         "m_d), C/n) (joint central limit theorem), the scatter of the rows about d ~ Wishart(n-1, "
                         "C_dd) independent of them (exact second moment; Wishart and independence exact only for "
                         "Gaussian rows), scaled down to tr G <= n where it exceeds it; m_a, m_d, C the clipped "
                         "moments on {S} fixed public moment-matched Sobol points")
APPROXIMATION_RECORDS = ("none: the n records are latent variables (<name>::records) and the clipped mean and "
                         "scatter are computed from them")
#: the latent records' name (``<name>::records``, shape (n, K)) under ``clipping="records"``
RECORDS = "records"
#: public Monte Carlo draws of the latent statistics per posterior draw for the integrated components term
LOO_DRAWS = 256
#: seed of those draws (the same for every posterior draw: common random numbers)
LOO_SEED = 20261128
#: Monte Carlo standard error (nats) of the integrated components term above which a warning is raised
LOO_MC_TOLERANCE = 0.1
LOG_LIKELIHOOD_INTEGRATED = (
    "the latent statistics integrated out given the population parameters theta, chain rule p(y, v | theta) = "
    "p(y | theta) p(v | y, theta): <mean> log p(y_j | y_-j, theta) per coefficient (non-factorised leave-one-out "
    "terms, Buerkner, Gabry & Vehtari 2021; the sample mean integrated out in closed form, Laplace noise as its "
    "normal scale mixture with E_j integrated out and E_-j drawn from its exact conditional; NOT conditioning on the "
    "frame v, whose information about the sample mean is dropped from these terms), <components> log p(v | y, theta) "
    "= log E[p(v | G) | y, theta] (the frame's exact leave-one-out term) by Monte Carlo over d | y ~ Gaussian and "
    "W ~ Wishart(n-1, C_dd), {R} fixed public draws (seed {seed}, common random numbers), standard error in "
    "<name>_components_mc_se (mean over draws) and _mc_se_max")
LOG_LIKELIHOOD = ("conditional on the latent sufficient statistics: log p(y_j | sample mean) per coefficient, "
                  "log p(v_f | G) per frame; " + CONDITIONAL_LOO_NOTE.replace(
                      "prefer clipping='moments' for model comparison",
                      "prefer population_result(log_likelihood='integrated') (the default) for model comparison"))
#: what :func:`~fdp_ppl.inference.population.population_result` can give a joint observation (:class:`JointLoo`)
LOG_LIKELIHOOD_MODES = ("integrated", "joint", "conditional")
LOG_LIKELIHOOD_JOINT = (
    "; log_likelihood='joint': each <mean> term also given the frame, log p(y_j | y_-j, v, theta) = log p(y_j | "
    "y_-j, theta) + log p(v | y, theta) - log p(v | y_-j, theta) (the last two by Monte Carlo with the same draws; "
    "Laplace noise: given the drawn E_j), so every term is the joint's exact leave-one-out term up to Monte Carlo; "
    "<name>_mean_frame_correction: posterior mean of sum_j |log p(v | y) - log p(v | y_-j)|, what the frame adds")


@dataclass(frozen=True, eq=False)
class JointObservation:
    """A mean release and a components release of the same people, observed by :func:`observe_joint`.

    Attributes
    ----------
    name : str
    mean_part : dict
        The mean release's public content (:func:`fdp_ppl.inference.population._mean_release`).
    frames : ndarray (F, m)
        The released unit vectors.
    likelihood : FrameLikelihood
        Their Bingham likelihood (scale s, Σ⁻¹, n, log-constant method).
    coef_map : ndarray (m, K)
        ``B_w / τ_c``: grid values → the components release's scaled coefficients.
    components_tau : float
    components_weights : ndarray (K,)
    n : int
    sample_mean, scatter, mean, covariance : TensorVariable
        The mean release's statistic before its design, ``x̄ − o`` (the clipped ``x̄_τ`` where clipping is modelled)
        (K,), the scatter ``G`` (m, m) and the population's μ, K.
    release_ids : dict
        ``{"mean": id, "components": id}``.
    attrs : dict
    clipping : str
        ``"ignore"``, ``"moments"`` or ``"records"`` (module docstring).
    moments : tuple of TensorVariable
        The latent statistics' law given the population, ``(x̄_τ − o, d̄) ~ N((m_a, m_d), C / n)``:
        ``(m_a, m_d, C_aa, C_da, C_dd)`` (``"ignore"``: ``(μ − o, B_c μ, K, B_c K, B_c K B_cᵀ)``; empty for
        ``"records"``), for the integrated ``log_likelihood`` (:class:`JointLoo`).
    """

    name: str
    mean_part: dict
    frames: np.ndarray
    likelihood: object
    coef_map: np.ndarray
    components_tau: float
    components_weights: np.ndarray
    n: int
    t: np.ndarray
    sample_mean: object
    scatter: object
    mean: object
    covariance: object
    release_ids: dict
    attrs: dict = field(default_factory=dict)
    clipping: str = "ignore"
    moments: tuple = ()

    @property
    def variables(self) -> dict:
        """``{"mean": <name>_mean, "components": <name>_components}``."""
        return {"mean": f"{self.name}_mean", "components": f"{self.name}_components"}


def _components_release(release, draw):
    from .components import FrameLikelihood, _likelihood_scale, _read_fpca

    at, frames, sigma, B, _ = _read_fpca(release)
    if draw is not None and frames.shape[0] > 1:
        frames = frames[[int(draw)]]
    const = release[S.CONSTANT_DATA]
    w = np.asarray(const["quadrature_weights"].values, dtype=float)
    tau = float(at["tau"])
    n = int(at["n"])
    lik = FrameLikelihood.build(frames, sigma, _likelihood_scale(at), n)
    if lik.k != 1:
        raise InputError(f"a joint observation takes a k = 1 components release (this one has k = {lik.k})",
                         "release the first principal component (k = 1) for fp.observe([mean, components], ...)")
    return {"frames": lik.frames[:, :, 0], "likelihood": lik, "coef_map": (w[:, None] * B).T / tau, "tau": tau, "weights": w,
            "n": n, "release_id": release_identity(release, draw or 0), "epsilon": float(at["epsilon"])}


def _split(releases):
    mean_tree = comp_tree = None
    for tree in releases:
        if S.is_fpca_release(tree):
            if comp_tree is not None:
                raise InputError("fp.observe takes one components release per call", "observe one frame release")
            comp_tree = tree
        else:
            if mean_tree is not None:
                raise InputError("fp.observe takes one mean release per call (two mean releases of the same people "
                                 "share one latent sample mean)", "pass one mean release and one components release")
            mean_tree = tree
    if mean_tree is None or comp_tree is None:
        raise InputError("a joint observation needs a mean release and a principal-components release of the same "
                         "people", "pass [mean_release, components_release], or one release on its own")
    return mean_tree, comp_tree


def _chi2_by_wilson_hilferty(u, nu):
    """``c = ν(1 − 2/(9ν) + u h)³``, ``h = √(2/(9ν))``, and ``log χ²_ν(c) + log |dc/du| − log φ(u)`` (the potential
    that makes c exactly χ²_ν when u carries a standard normal prior)."""
    import pytensor.tensor as pt

    h = np.sqrt(2.0 / (9.0 * nu))
    base = pt.maximum(1.0 - 2.0 / (9.0 * nu) + u * h, 1e-12)
    c = nu * base**3
    log_chi2 = (nu / 2 - 1) * pt.log(c) - c / 2 - (nu / 2) * math.log(2.0) - np.array([math.lgamma(v / 2) for v in nu])
    log_jac = np.log(3 * nu * h) + 2 * pt.log(base)
    log_phi = -0.5 * u**2 - 0.5 * math.log(2 * math.pi)
    return c, pt.sum(log_chi2 + log_jac - log_phi)


def observe_joint(releases, *, mean, covariance, name: str = "release", draw: int = 0, clipping: str = "auto",
                  clipping_points: int = CLIPPING_POINTS) -> JointObservation:
    """Observe a mean release and a principal-components release of the same n people together (module docstring).

    Called by :func:`fdp_ppl.observe` when it is given a list of releases:
    ``fp.observe([mean_tree, components_tree], mean=mu, covariance=K, name="growth")``.

    Parameters
    ----------
    releases : sequence of two xr.DataTree
        A mean-curve release (as :func:`fdp_ppl.inference.population.observe` takes) and an ε-DP FPCA release
        (Bingham form, k = 1) of the same data set: the same n and the same grid of K points.
    mean : array_like or TensorVariable, shape (K,)
        The population mean of one curve on the grid.
    covariance : array_like or TensorVariable, shape (K, K)
        The population covariance of one curve on the grid.
    name : str
        Prefix: observed variables ``<name>_mean`` (dim ``<name>_mean_basis``) and ``<name>_components`` (dim
        ``<name>_components_frame``), latent variables in the sub-model ``<name>::``.
    draw : int
        Which released draw of the mean release (and frame of the components release) to condition on.
    clipping : {"auto", "moments", "records", "ignore"}
        How clipping to τ (mean release), τ_c and the unit coefficient norm (components release) enters the latent
        statistics (module docstring); ``"auto"`` chooses from n, both τ and the model's prior (never the data).
        Recorded as ``<name>_clipping``.
    clipping_points : int
        Public quadrature points of ``"moments"``.

    Returns
    -------
    JointObservation
        Registered on the model for :func:`fdp_ppl.inference.population.population_result`.

    Raises
    ------
    InputError
        Not one mean and one components release, different n or grids, n − m below :data:`MIN_DOF` (except with
        ``"records"``), an unknown ``clipping``, or what
        :func:`~fdp_ppl.inference.population.observe` and :func:`fdp_ppl.infer_components` refuse.

    Examples
    --------
    >>> import numpy as np, pymc as pm, warnings
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.fpca import FPCASpec
    >>> grid = fp.Grid.uniform(12)
    >>> curves = np.sin(2 * np.pi * grid.t) + np.random.default_rng(0).normal(0, 0.3, (60, 12))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    ...     mean_tree = fp.release(fp.frl_mean(curves, basis, tau=6.0, M=4), fp.FRL(epsilon=1.0), random_seed=1,
    ...                            study=True)
    ...     spec = FPCASpec(grid=grid, m=3, k=1, epsilon=1.0, tau=6.0)
    ...     pca_tree = fp.release(spec.fit(curves), fp.ExponentialMechanism(), random_seed=2, study=True)
    >>> d = np.abs(grid.t[:, None] - grid.t[None, :])
    >>> with pm.Model() as model:
    ...     amp = pm.HalfNormal("amp", 1.0)
    ...     obs = fp.observe([mean_tree, pca_tree], mean=np.sin(2 * np.pi * grid.t),
    ...                      covariance=amp**2 * np.exp(-d / 0.2), name="data")
    >>> obs.variables
    {'mean': 'data_mean', 'components': 'data_components'}
    >>> sorted(v.name for v in model.free_RVs)
    ['amp', 'data::bartlett_diag_std', 'data::bartlett_lower', 'data::sample_mean_std']
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pytensor.tensor.linalg import cholesky

    from . import population_clipping as PC
    from .bingham import bingham_log_constant_op
    from .population_parts import (
        _as_tensor,
        _check_name,
        _mean_release,
        _model,
        outside_tau,
    )

    model = _model(None)
    mean_tree, comp_tree = _split(releases)
    var_mean, var_comp = f"{name}_mean", f"{name}_components"
    dims_ = {"t": f"{name}_t", "mean": f"{name}_mean_basis", "frame": f"{name}_components_frame",
             "basis": f"{name}_components_basis"}
    _check_name(model, name, (var_mean, var_comp, *dims_.values()))
    part = _mean_release(mean_tree, draw)
    comp = _components_release(comp_tree, draw)
    view = part["view"]
    K = view.t.size
    if comp["coef_map"].shape[1] != K:
        raise InputError(f"the mean release's grid has {K} points and the components release's "
                         f"{comp['coef_map'].shape[1]}", "release both summaries of the same curves on the same grid")
    n = part["n"]
    if comp["n"] != n:
        raise InputError(f"the releases count different people (n = {n} and {comp['n']})",
                         "observe releases of the same data set together; others one by one")
    m = comp["frames"].shape[1]
    mu = _as_tensor(mean, (K,), "mean")
    cov = _as_tensor(covariance, (K, K), "covariance")
    y, SA, offset, law, b = part["y"], part["design"], part["offset"], part["law"], part["scale"]
    Bc = comp["coef_map"]
    tau, norm, cw, ctau = part["tau"], part["tau_norm"], comp["weights"], comp["tau"]
    choice, prior_share = PC.clipping_plan(
        model, mu, cov, n=n, tau=tau, norm=norm, weights=view.weights, offset=offset, clipping=clipping,
        also=lambda mu_, cov_: outside_tau(mu_, cov_, cw, ctau, samples=1000))
    if choice != "records" and n - m < MIN_DOF:
        raise InputError(f"n − m = {n - m} is below {MIN_DOF}: the latent scatter's Wishart degrees of freedom are "
                         "too few for its parametrisation", "observe the releases one by one (or clipping='records')")
    model.add_coord(dims_["t"], np.arange(K))
    model.add_coord(dims_["mean"], np.arange(y.size))
    model.add_coord(dims_["frame"], np.arange(comp["frames"].shape[0]))
    model.add_coord(dims_["basis"], np.arange(m))
    lower_r, lower_c = np.tril_indices(m, -1)
    nu = (n - 1 - np.arange(m)).astype(float)

    def _chol(C):
        C = 0.5 * (C + C.T)
        return cholesky(C + JITTER * (pt.mean(pt.diag(C)) + 1e-300) * pt.eye(C.shape[0]))

    points, moments = None, ()
    if choice == "records":
        with pm.Model(name=name):
            zr = pm.Normal(RECORDS, 0.0, 1.0, shape=(n, K))
        a, d = PC.record_statistics(mu + pt.dot(zr, _chol(cov).T), offset, view.weights, tau, norm, Bc, cw, ctau, pt)
        stat = pt.mean(a, axis=0)
        G = pt.dot(d.T, d)
    else:
        with pm.Model(name=name):
            xi = pm.Normal("sample_mean_std", 0.0, 1.0, dims=dims_["t"])
            if choice == "moments":
                eta = pm.Normal("coefficient_mean_std", 0.0, 1.0, dims=dims_["basis"])
            u = pm.Normal("bartlett_diag_std", 0.0, 1.0, dims=dims_["basis"])
            z = pm.Normal("bartlett_lower", 0.0, 1.0, shape=lower_r.size)
            c, correction = _chi2_by_wilson_hilferty(u, nu)
            pm.Potential("bartlett_chi2", correction)
        T = pt.set_subtensor(pt.zeros((m, m))[np.arange(m), np.arange(m)], pt.sqrt(c))
        T = pt.set_subtensor(T[lower_r, lower_c], z)
        if choice == "moments":
            # (x̄_τ, d̄) ~ N((m_a, m_d), C / n) written as x̄_τ given ξ, then d̄ given x̄_τ (the conditional
            # covariance C_dd − C_da C_aa⁻¹ C_ad is zero where nothing is clipped: d̄ = B_c(x̄ + o) as without clipping)
            points = PC.normal_points(int(clipping_points), K)
            m_a, m_d, Caa, Cda, Cdd = PC.joint_clipped_moments(mu, _chol(cov), points, offset, view.weights, tau, norm,
                                                              Bc, cw, ctau, xp=pt)
            La = _chol(Caa)
            dev = pt.dot(La, xi) / np.sqrt(n)
            reg = pt.transpose(pt.linalg.solve_triangular(La.T, pt.linalg.solve_triangular(La, Cda.T, lower=True),
                                                          lower=False))
            cond = Cdd - pt.dot(reg, Cda.T)
            cond = 0.5 * (cond + cond.T) + JITTER * pt.mean(pt.diag(Cdd)) * pt.eye(m)
            stat = m_a + dev
            cbar = m_d + pt.dot(reg, dev) + pt.dot(cholesky(cond), eta) / np.sqrt(n)
            scale_chol = _chol(Cdd)
            moments = (m_a, m_d, Caa, Cda, Cdd)
        else:
            xbar = mu + pt.dot(_chol(cov), xi) / np.sqrt(n)
            stat, cbar, scale_chol = xbar - offset, pt.dot(Bc, xbar), _chol(pt.dot(pt.dot(Bc, cov), Bc.T))
            moments = (mu - offset, pt.dot(Bc, mu), cov, pt.dot(Bc, cov), pt.dot(pt.dot(Bc, cov), Bc.T))
        LT = pt.dot(scale_chol, T)
        G_raw = n * pt.outer(cbar, cbar) + pt.dot(LT, LT.T)
        # the released scatter's support: clipped rows have norm <= 1, so tr G <= n; a latent scatter beyond it is
        # shrunk onto it (without clipping modelled, a crude stand-in for it; with it, a guard for the Wishart's tail)
        # so that A's spread stays within the public bound the log-constant method was chosen by
        G = G_raw * pt.minimum(1.0, n / pt.maximum(pt.sum(pt.diagonal(G_raw)), 1e-300))
    with pm.Model(name=name):
        pm.Deterministic("sample_mean", stat + offset, dims=dims_["t"])
    law.pymc(var_mean, pt.dot(SA, stat), b, observed=y, dims=dims_["mean"])
    lik = comp["likelihood"]
    A = lik.scale * (G - lik.sigma_inv)
    logc, _ = bingham_log_constant_op(lik.method)(A)
    V = comp["frames"]
    frame_terms = pt.sum(pt.dot(V, A) * V, axis=1) - logc
    pm.Potential(var_comp, pt.sum(frame_terms))
    method = ("exact series (Kume & Wood 2005 hypergeometric 1F1(1/2; m/2; A))" if lik.method == "series" else
              "Kume & Wood (2005) second-order saddlepoint (log C within 0.013-0.045 of the series)")
    ids = {"mean": part["release_id"], "components": comp["release_id"]}
    latent = {"ignore": (f"latent sample mean {name}::sample_mean ~ N(mu, K/n), latent scatter G = n cbar cbar^T + "
                         "Wishart(n-1, B K B^T/tau_c^2)"),
              "moments": (f"latent clipped means (x_tau, d) ~ N((m_a, m_d), C/n) ({name}::sample_mean = x_tau + "
                          "offset), latent scatter G = n d d^T + Wishart(n-1, C_dd)"),
              "records": (f"the {n} latent records {name}::{RECORDS} (X_i = mu + L z_i), their clipped mean and the "
                          "scatter G of their clipped coefficient rows")}[choice]
    approximation = {"ignore": APPROXIMATION,
                     "moments": APPROXIMATION_MOMENTS.format(S=0 if points is None else points.shape[0]),
                     "records": APPROXIMATION_RECORDS}[choice].replace("<name>", name)
    attrs = {"release_id": ",".join(ids.values()), "mean_release_id": ids["mean"],
             "components_release_id": ids["components"], "release_draw": int(draw), "n": n,
             "likelihood": (f"joint: {latent}; {var_mean} | sample mean ~ {law.name} noise around S A (sample mean - "
                            f"offset); {var_comp} | G ~ Bingham exp(v^T A v)/C(A), A = s(G - Sigma^-1)"),
             "approximation": approximation, "clipping": choice, "clipping_prior_share": prior_share,
             "components_log_constant": method,
             "mean_tau": tau, "components_tau": ctau, "components_epsilon": comp["epsilon"],
             "mean_noise_law": law.name, "mean_summary": view.metadata.summary, "components_m": m}
    obs = JointObservation(name=name, mean_part=part, frames=V, likelihood=lik, coef_map=Bc,
                           components_tau=ctau, components_weights=cw, n=n, t=view.t_original,
                           sample_mean=stat, scatter=G, mean=mu, covariance=cov, release_ids=ids, attrs=attrs,
                           clipping=choice, moments=moments)
    model._fdp_population_joint = [*getattr(model, "_fdp_population_joint", []), obs]
    return obs


def joint_function(model, joints):
    """Compiled: the model's free variables → per joint observation the values of ``(x̄_τ − o, G, μ, K, *moments)``
    (:attr:`JointObservation.moments`), as a list of tuples (one per observation)."""
    from .population_parts import grouped_function

    return grouped_function(model, [(o.sample_mean, o.scatter, o.mean, o.covariance, *o.moments) for o in joints])


class JointLoo:
    """The pointwise ``log_likelihood`` of a joint observation at each posterior draw, and what it is (attrs).

    ``"integrated"`` (the default of :func:`~fdp_ppl.inference.population.population_result`): the latent
    statistics integrated out given the population parameters θ, in the chain-rule order
    ``p(y, v | θ) = p(y | θ) · p(v | y, θ)`` (y the released mean coefficients, v the released frame):

    * ``<name>_mean``: ``log p(y_j | y_{-j}, θ)`` per coefficient, the sample mean integrated out in closed form,
      ``y ~ N(S A m_a, S A C_aa Aᵀ S / n + noise)`` (as for one mean release; Laplace noise through its normal scale
      mixture, the latent scale ``E_j`` integrated out exactly and ``E_{-j}`` drawn from its exact conditional given
      the posterior draw's latent sample mean, ``1/E | r ~ InverseGaussian(2b/|r|, 2)``, a Gibbs step that completes
      the posterior draw). These terms do **not** condition on the frame v: the frame's information about the sample
      mean (through ``n d̄ d̄ᵀ`` in G) is dropped from them — ``log_likelihood="joint"`` adds it back, below
      (measured in ``benchmarks/bench_records_loo.py --joint``);
    * ``<name>_components``: ``log p(v | y, θ) = log E[p(v | G) | y, θ]`` (exact leave-one-out term of the frame: its
      complement is y), by Monte Carlo over the law of ``(d̄, W)`` given y and θ — ``d̄ | y`` Gaussian (conditioning
      of the joint law ``N((m_a, m_d), C/n)`` on y), ``W ~ Wishart(n − 1, C_dd)`` by its Bartlett factors, G shrunk
      to ``tr G ≤ n`` as in the model — with ``draws`` fixed public draws (common random numbers for every posterior
      draw, seed :data:`LOO_SEED`); the Monte Carlo standard error of the log term (delta method) is recorded.

    ``"joint"``: as ``"integrated"``, and each mean term also given the frame, ``log p(y_j | y_{-j}, v, θ) =
    log p(y_j | y_{-j}, θ) + log p(v | y, θ) − log p(v | y_{-j}, θ)``, ``d̄ | y_{-j}`` again Gaussian and the last term
    by the same Monte Carlo draws: every term is then the joint's exact non-factorised leave-one-out term (up to
    Monte Carlo; Laplace noise: the correction given the drawn ``E_j``), at J + 1 times the cost of the components
    term.

    ``"conditional"``: the terms given the latent statistics, ``log p(y_j | x̄_τ)`` and ``log p(v | G)`` (optimistic
    under PSIS-LOO; :data:`LOG_LIKELIHOOD`). ``clipping="records"`` has no closed law of the statistics given θ: its
    terms are always conditional.
    """

    def __init__(self, o: JointObservation, mode: str = "integrated", draws: int | None = None):
        if mode not in LOG_LIKELIHOOD_MODES:
            raise InputError(f"unknown log_likelihood {mode!r}", f"pass one of {LOG_LIKELIHOOD_MODES}")
        self.o, self.draws = o, int(draws or LOO_DRAWS)
        self.mode = "conditional" if (mode == "conditional" or not o.moments) else mode
        self.mc_se, self.corrections = [], []
        if self.mode != "conditional":
            if self.draws < 2:
                raise InputError(f"loo_draws must be at least 2, got {self.draws}", f"the default is {LOO_DRAWS}")
            m = o.frames.shape[1]
            rng = np.random.default_rng(LOO_SEED)
            lower = np.tril_indices(m, -1)
            T = np.zeros((self.draws, m, m))
            T[:, np.arange(m), np.arange(m)] = np.sqrt(rng.chisquare(o.n - 1 - np.arange(m), (self.draws, m)))
            T[:, lower[0], lower[1]] = rng.standard_normal((self.draws, lower[0].size))
            self._bartlett, self._eta = T, rng.standard_normal((self.draws, m))

    def terms(self, values, index: int, with_clipping: bool) -> tuple[dict, dict]:
        """Pointwise log-likelihood of each release at posterior draw ``index`` (``{variable: array}``) and, with
        ``with_clipping``, the fitted population's share of curves beyond each τ."""
        from .population_parts import outside_tau

        o, part = self.o, self.o.mean_part
        stat, G, mu, Kt = values[:4]
        if self.mode == "conditional":
            resid = part["y"] - part["design"] @ stat
            ll = {o.variables["mean"]: part["law"].logp(resid[None, :], np.zeros((1, resid.size)), part["scale"],
                                                        pointwise=True)[0],
                  o.variables["components"]: o.likelihood.logp(G / o.n)}
        else:
            ll = self._integrated(values, index)
        share = {}
        if with_clipping:
            if part["tau_norm"] != "sup":
                share["mean"] = outside_tau(mu - part["offset"], Kt, part["view"].weights, part["tau"])
            share["components"] = outside_tau(mu, Kt, o.components_weights, o.components_tau)
        return ll, share

    def _integrated(self, values, index: int) -> dict:
        from scipy.linalg import cho_factor, cho_solve
        from scipy.special import logsumexp

        from .plan import _is_gaussian
        from .population_parts import loo_mean_terms

        o, part = self.o, self.o.mean_part
        stat, m_a, m_d, Caa, Cda, Cdd = values[0], *values[4:]
        y, SA, b, law, n = part["y"], part["design"], part["scale"], part["law"], o.n
        if _is_gaussian(law):
            noise_var = b**2
        else:
            noise_var = laplace_mixing_given(y - SA @ stat, b, np.random.default_rng([LOO_SEED, int(index)]))
        coef_mean, coef_cov = SA @ m_a, SA @ Caa @ SA.T / n
        mean_terms = loo_mean_terms(law, y, coef_mean, coef_cov, noise_var, b)
        # d̄ | y, θ: Gaussian conditioning of (x̄_τ, d̄) ~ N((m_a, m_d), C / n) on y = S A x̄_τ + noise
        S_y = 0.5 * (coef_cov + coef_cov.T) + np.diag(noise_var)
        cross = Cda @ SA.T / n                                             # Cov(d̄, y), (m, J)
        scatter = _psd_root(Cdd) @ self._bartlett                          # W = (L_c T)(L_c T)ᵀ, (R, m, m)
        scatter = scatter @ np.swapaxes(scatter, 1, 2)

        def frame_term(keep):   # log p(v | y_keep, θ) by Monte Carlo (the same draws for every keep), (F,), (F,)
            factor = cho_factor(S_y[np.ix_(keep, keep)])
            d_mean = m_d + cross[:, keep] @ cho_solve(factor, y[keep] - coef_mean[keep])
            d_cov = Cdd / n - cross[:, keep] @ cho_solve(factor, cross[:, keep].T)
            d = d_mean + self._eta @ _psd_root(d_cov).T                     # (R, m)
            G = n * d[:, :, None] * d[:, None, :] + scatter
            G *= np.minimum(1.0, n / np.maximum(np.trace(G, axis1=1, axis2=2), 1e-300))[:, None, None]
            lw = o.likelihood.logp(G / n)                                  # (R, F)
            w = np.exp(lw - lw.max(axis=0))
            return (logsumexp(lw, axis=0) - np.log(self.draws),
                    np.std(w, axis=0, ddof=1) / (np.sqrt(self.draws) * w.mean(axis=0)))

        every = np.ones(y.size, dtype=bool)
        comp, se = frame_term(every)
        self.mc_se.append(float(np.max(se)))
        if self.mode == "joint":   # log p(y_j | y_-j, v, θ) = log p(y_j | y_-j, θ) + log p(v | y, θ) − log p(v | y_-j, θ)
            correction = np.empty(y.size)
            for j in range(y.size):
                keep = every.copy()
                keep[j] = False
                correction[j] = np.sum(comp - frame_term(keep)[0])
            mean_terms = mean_terms + correction
            self.corrections.append(float(np.sum(np.abs(correction))))
        return {o.variables["mean"]: mean_terms, o.variables["components"]: comp}

    def record(self, attrs: dict) -> None:
        """Write what the terms are into the result's ``attrs`` (``<name>_log_likelihood``, and for
        ``"integrated"`` ``<name>_components_mc_se`` / ``_mc_se_max`` / ``_mc_draws``); warn when the Monte Carlo
        standard error exceeds :data:`LOO_MC_TOLERANCE`."""
        import warnings

        name = self.o.name
        if self.mode == "conditional":
            attrs[f"{name}_log_likelihood_mode"] = "conditional"
            attrs[f"{name}_log_likelihood"] = LOG_LIKELIHOOD + (
                " (clipping='records': the integrated terms need a closed law of the statistics given the "
                "population)" if not self.o.moments else "")
            return
        text = LOG_LIKELIHOOD_INTEGRATED + (LOG_LIKELIHOOD_JOINT if self.mode == "joint" else "")
        attrs[f"{name}_log_likelihood"] = text.format(R=self.draws, seed=LOO_SEED).replace(
            "<name>", name).replace("<mean>", self.o.variables["mean"]).replace(
            "<components>", self.o.variables["components"])
        attrs[f"{name}_components_mc_draws"] = self.draws
        attrs[f"{name}_log_likelihood_mode"] = self.mode
        if self.corrections:
            attrs[f"{name}_mean_frame_correction"] = float(np.mean(self.corrections))
        if self.mc_se:
            se = np.asarray(self.mc_se)
            attrs[f"{name}_components_mc_se"] = float(se.mean())
            attrs[f"{name}_components_mc_se_max"] = float(se.max())
            if se.max() > LOO_MC_TOLERANCE:
                warnings.warn(f"the Monte Carlo estimate of log p(v | y, theta) for {name!r} has a standard error up "
                              f"to {se.max():.2f} nats at posterior draws (mean {se.mean():.2f}): pass a larger "
                              "loo_draws= to population_result", JointLooWarning, stacklevel=3)


def laplace_mixing_given(residual, scale, rng) -> np.ndarray:
    """A draw of the Laplace noise's variance ``2b²E`` given the residual ``r = ξ`` it produced: the normal scale
    mixture ``ξ | E ~ N(0, 2b²E)``, ``E ~ Exp(1)`` has ``E | r ~ GIG(½, 2, r²/(2b²))``, i.e. ``1/E | r ~
    InverseGaussian(mean 2b/|r|, shape 2)`` (conjugacy of the scale mixture), drawn by the Laplace law's own
    :meth:`~fdp_ppl.noise.laws.Laplace.mixing_conditional_draws` (exact, ``r = 0`` included).

    Examples
    --------
    >>> import numpy as np
    >>> v = laplace_mixing_given(np.zeros(1), np.ones(1), np.random.default_rng(0))   # r = 0: E ~ Gamma(½, 1)
    >>> v.shape
    (1,)
    """
    from ..noise.laws import Laplace

    scale = np.asarray(scale, dtype=float)
    return 2 * scale**2 * Laplace().mixing_conditional_draws(residual, scale, rng)


class JointLooWarning(UserWarning):
    """The Monte Carlo standard error of a joint observation's integrated components term exceeds
    :data:`LOO_MC_TOLERANCE` nats."""


def _psd_root(C) -> np.ndarray:
    """A square root ``R`` with ``R Rᵀ = C`` of a symmetric positive semi-definite matrix (negative rounding
    eigenvalues set to zero)."""
    w, U = np.linalg.eigh(0.5 * (C + C.T))
    return U * np.sqrt(np.maximum(w, 0.0))


def joint_groups(o: JointObservation) -> tuple[xr.Dataset, xr.Dataset, dict]:
    """``observed_data``, ``constant_data`` and the log-likelihood dims of one joint observation."""
    part = o.mean_part
    d = {"mean": f"{o.name}_mean_basis", "frame": f"{o.name}_components_frame",
         "basis": f"{o.name}_components_basis", "t": f"{o.name}_t"}
    observed = xr.Dataset({o.variables["mean"]: ((d["mean"],), part["y"]),
                           o.variables["components"]: ((d["frame"], d["basis"]), o.frames)})
    constant = xr.Dataset({f"{o.name}_mean_noise_scale": ((d["mean"],), part["scale"]),
                           f"{o.name}_mean_design": ((d["mean"], d["t"]), part["design"]),
                           f"{o.name}_mean_offset": ((d["t"],), part["offset"]),
                           f"{o.name}_components_coefficient_map": ((d["basis"], d["t"]), o.coef_map),
                           f"{o.name}_components_sigma_inv": ((d["basis"], f"{d['basis']}2"), o.likelihood.sigma_inv),
                           f"{o.name}_components_scale": o.likelihood.scale}).assign_coords({d["t"]: o.t})
    return observed, constant, {o.variables["mean"]: d["mean"], o.variables["components"]: d["frame"]}


__all__ = ["APPROXIMATION", "APPROXIMATION_MOMENTS", "APPROXIMATION_RECORDS", "LOO_DRAWS", "LOO_MC_TOLERANCE",
           "LOO_SEED", "MIN_DOF", "RECORDS", "JointLoo", "JointLooWarning", "JointObservation",
           "laplace_mixing_given", "observe_joint"]
