"""Noise-aware posterior of a private kernel machine's decision function, from its release alone.

A kernel-machine release (:func:`fdp_ppl.release`, ``fdp-ppl machine``; kind
:data:`fdp_ppl.releasing.schema.MACHINE_RELEASE`) is one draw of ``f̃ = f̂ + noise`` on a public grid, where
``f̂`` is the regularised minimiser of Hall, Rinaldo & Wasserman (2013), eq. 11:

* GP noise (Hall et al. 2013, §4.3 and Corollary 9): on the retained eigenpairs ``(λ_j, u_j)`` of
  ``K(P, P)`` (:func:`fdp_ppl.machine.grid_basis`), ``c̃_j = u_jᵀ f̂(P) + σ √λ_j ζ_j`` with ``ζ_j``
  i.i.d. N(0, 1); ``σ √λ_j`` is the release's ``constant_data/noise_scale``.
* ICLP noise (Lin & Reimherr 2026, Theorem 18; ``eta`` specs): ``h̃_j = <f̂, φ_j>_w + Laplace(b_j)``
  on the grid eigenbasis of ``C``, ``b_j`` the release's ``noise_scale``.

Prior. The minimiser lies in a ball of its function space whose radius is public:
``‖f̂‖_H <= R = √(sup_y ℓ(0, y)/λ) + ρ`` (:attr:`fdp_ppl.machine.ERMSpec.norm_bound`; ``ℓ(0, y)`` is 1
for the hinge and Huber hinge losses, ``log 2`` for the logistic loss, ``B²`` for the squared loss; ``ρ`` the
solver's certified accuracy). The default prior ``"rkhs-ball"`` is the centred Gaussian whose
one-standard-deviation ellipsoid *is* that ball, ``f̂ ~ N(0, R² K)`` on the grid (for ``eta``
specs ``N(0, R² C^η)``): along every linear functional ``L`` its prior sd ``R ‖L‖_{H*}`` equals the
largest value ``|L f|`` takes on the ball; in particular the prior sd of ``f̂(x)`` is
``R √K(x, x)``, the bound ``|f̂(x)| <= R √K(x, x)`` of the reproducing property. It needs only
public quantities (loss, λ, kernel, solver slack) and is wide (the minimiser's norm is usually well
inside the ball), so the posterior is driven by the release. ``"flat"`` is the improper limit
``R → ∞`` (the posterior is the release ± its noise); a float is a radius of your own.
[D]: the choice of prior is the project's; the papers give the release law only.

Posterior. In the release's basis the prior and the noise are both diagonal, so the posterior
factorises over coefficients and is drawn exactly: GP noise gives the conjugate Normal posterior
(:meth:`fdp_ppl.noise.laws.Normal.centre_posterior_draws`), ICLP noise two truncated normals per
coefficient (:meth:`fdp_ppl.noise.laws.Laplace.centre_posterior_draws`). The one factorisation is the
grid eigendecomposition the release itself used (cached per spec). The posterior's target is the
minimiser projected on the retained eigenpairs (what the release centres on); the dropped part has
prior variance at most ``R² · noise_dropped_trace`` (release attr), negligible at the default cut-off.

OU releases drawn by the Markov recursion (exponential kernel, d = 1, grid above
``MAX_GRID_POINTS``; no eigenbasis stored): prior ``R² K`` and noise ``σ² K`` are proportional, so the
posterior is ``N(w f̃, w σ² K)``, ``w = R²/(R² + σ²)``, drawn by the same AR(1) recursion (:class:`OUGridPath`).

Costs no privacy: post-processing of a release with public parameters (DESIGN.md, Data flow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from .. import dims as D
from ..releasing import schema as S
from ..errors import InputError, SchemaError
from .comparison import (LOO_GROUP, LOO_IMPROPER, RELEASE_ID, STANDARDISED, loo_dataset, release_identity,
                         standardised)

#: named priors of :func:`infer_machine`
MACHINE_PRIORS = ("rkhs-ball", "flat")
#: variable name of the decision function (as in the release)
DECISION = "decision"
COMPONENT = "component"


@dataclass(eq=False)
class MachinePosterior:
    """Exact posterior of a kernel machine's decision function in the release's basis (numpy core).

    Attributes
    ----------
    spec : fdp_ppl.machine.ERMSpec
        Public spec rebuilt from the release (:meth:`~fdp_ppl.machine.ERMSpec.from_attrs`).
    basis : GridEigenbasis, KroneckerEigenbasis or fdp_ppl.spaces.Eigenbasis
        The release's basis (``coefficients`` (..., m) -> (..., r), ``reconstruct`` back).
    law : fdp_ppl.noise.laws.Normal or fdp_ppl.noise.laws.Laplace
        The noise law per coefficient.
    released : ndarray, shape (m,)
        The released decision function on the grid (C order).
    y : ndarray, shape (r,)
        Released coefficients.
    noise_scale : ndarray, shape (r,)
        Noise sd (Normal) or Laplace scale per coefficient.
    prior_scale : ndarray, shape (r,) or None
        Prior sd per coefficient (None: flat prior).
    radius : float or None
        Prior radius ``R`` (None: flat).
    """

    spec: object
    basis: object
    law: object
    released: np.ndarray
    y: np.ndarray
    noise_scale: np.ndarray
    prior_scale: np.ndarray | None
    radius: float | None

    @property
    def gaussian(self) -> bool:
        """True when the posterior is Gaussian (GP noise)."""
        return self.law.name == "normal"

    @property
    def markov(self) -> bool:
        """True for an OU release drawn by its Markov recursion (coordinates = grid values)."""
        return isinstance(self.basis, OUGridPath)

    def _shrinkage(self) -> float:
        """``w = R²/(R² + σ²)`` (1 for the flat prior): prior ``R² K`` and noise ``σ² K`` are proportional."""
        s2 = float(self.noise_scale[0]) ** 2
        return 1.0 if self.radius is None else self.radius**2 / (self.radius**2 + s2)

    def draw_coefficients(self, k: int, rng) -> np.ndarray:
        """``k`` exact posterior draws of the coefficients, shape (k, r)."""
        from ..noise.laws import Normal

        if self.markov:  # posterior N(w f~, w σ² K): the shrunk release plus a scaled OU path
            w = self._shrinkage()
            return w * self.y + np.sqrt(w) * float(self.noise_scale[0]) * self.basis.unit_paths(k, rng)
        y = np.broadcast_to(self.y, (int(k), self.y.size))
        if self.prior_scale is None:  # flat prior: the noise law reflected about the release
            return y - self.draw_noise(int(k), rng)
        return self.law.centre_posterior_draws(y, self.noise_scale, Normal(), 0.0, self.prior_scale, rng)

    def draw_noise(self, k: int, rng) -> np.ndarray:
        """``k`` draws of the release noise on the coefficients, shape (k, r)."""
        if self.markov:
            return float(self.noise_scale[0]) * self.basis.unit_paths(k, rng)
        if self.gaussian:
            return rng.standard_normal((int(k), self.y.size)) * self.noise_scale
        return rng.laplace(0.0, 1.0, (int(k), self.y.size)) * self.noise_scale

    def _precision(self):
        """Diagonal (m,) and off-diagonal (m−1,) of the tridiagonal precision ``K⁻¹`` of the unit OU kernel on the
        grid (Markov releases): the AR(1) chain ``x_0 ~ N(0, 1)``, ``x_{i+1} = r_i x_i + √v_i z``."""
        r, v = self.basis.r, self.basis.innovation_sd**2
        diag = np.zeros(self.y.size)
        diag[0] = 1.0
        diag[:-1] += r**2 / v
        diag[1:] += 1.0 / v
        return diag, -r / v

    def _loo_markov(self, resid, var: float) -> np.ndarray:
        """``log p(x_i | x_{-i})`` (..., m) for ``x = resid ~ N(0, var · K)`` (tridiagonal precision)."""
        diag, off = self._precision()
        Qx = diag * resid
        Qx[..., :-1] += off * resid[..., 1:]
        Qx[..., 1:] += off * resid[..., :-1]
        prec = diag / var
        r = Qx / var
        return -0.5 * np.log(2 * np.pi) + 0.5 * np.log(prec) - 0.5 * r**2 / prec

    def pointwise_loglik(self, coefficients) -> np.ndarray:
        """Log-likelihood of each released coefficient given posterior draws (k, r) of the coefficients: the law's
        density per coefficient; for a Markov release (correlated noise ``σ²K`` on the grid values)
        ``log p(y_i | y_{-i}, f)``, the pointwise term of a non-factorised Gaussian (Bürkner, Gabry & Vehtari 2021)."""
        coefficients = np.asarray(coefficients, dtype=float)
        if self.markov:
            return self._loo_markov(self.y - coefficients, float(self.noise_scale[0]) ** 2)
        return np.asarray(self.law.logp(self.y[None, :], coefficients, self.noise_scale[None, :], pointwise=True))

    def exact_loo(self) -> np.ndarray | None:
        """Exact ``log p(y_j | y_{-j})`` (r,) of the released coefficients (None for the flat prior, improper): the
        law's one-dimensional marginal under the diagonal prior; for a Markov release ``y ~ N(0, (R² + σ²) K)``
        by its tridiagonal precision."""
        from ..noise.laws import Normal

        if self.prior_scale is None:
            return None
        if self.markov:
            return self._loo_markov(self.y, self.radius**2 + float(self.noise_scale[0]) ** 2)
        return np.asarray(self.law.marginal_logp(self.y, self.noise_scale, Normal(), 0.0, self.prior_scale))

    def decision(self, coefficients) -> np.ndarray:
        """Grid values (..., m) of coefficients (..., r)."""
        return self.basis.reconstruct(coefficients)

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact posterior mean and sd of the decision function at each grid point, each (m,) (GP noise).

        Mean ``Σ_j μ_j u_j(x)``, variance ``Σ_j v_j u_j(x)²`` with the conjugate ``μ_j = w_j c̃_j``,
        ``v_j = w_j s_j²``, ``w_j = g_j²/(g_j² + s_j²)`` (``g_j`` prior sd, ``s_j`` noise sd; ``w = 1``
        for the flat prior).

        Raises
        ------
        InputError
            ICLP (Laplace) noise: the posterior is not Gaussian (use the draws).
        """
        if not self.gaussian:
            raise InputError("the posterior under Laplace (ICLP) noise is not Gaussian", "use the posterior draws")
        if self.markov:  # K(x, x) = 1
            w = self._shrinkage()
            return w * self.y, np.full(self.y.size, np.sqrt(w) * float(self.noise_scale[0]))
        s2 = self.noise_scale**2
        w = np.ones_like(s2) if self.prior_scale is None else self.prior_scale**2 / (self.prior_scale**2 + s2)
        mean = self.decision(w * self.y)
        U = self.basis.vectors
        return mean, np.sqrt(np.maximum((U**2) @ (w * s2), 0.0))

    def sign_agreement(self) -> np.ndarray:
        """Exact ``P(sign f̂(x) = sign f̃(x) | release)`` at each grid point, (m,) (GP noise):
        ``Φ(sign(f̃(x)) · mean(x)/sd(x))`` from :meth:`moments`."""
        from scipy.special import ndtr

        mean, sd = self.moments()
        return ndtr(np.sign(self.released) * mean / sd)


class OUGridPath:
    """Grid values as coordinates, with unit OU noise ``exp(−|s − t|/ρ)`` (d = 1, sorted grid): the releases
    ``fdp_ppl.release`` draws on the AR(1) innovations (OU kernel on a grid above
    ``MAX_GRID_POINTS``; no eigenbasis is stored). ``coefficients`` and ``reconstruct`` are the identity;
    :meth:`unit_paths` draws ``G ~ GP(0, K)`` on the grid by the AR(1) steps of
    :class:`fdp_ppl.machine.gp.OUInnovations` (O(m) per path, exact)."""

    structure = "markov"

    def __init__(self, points, rho: float):
        from ..machine.gp import OUInnovations

        self.ar = OUInnovations(points, rho)  # the release's own AR(1) steps
        self.points, self.r = self.ar.points, self.ar.r
        self.innovation_sd = np.sqrt(self.ar.eigenvalues[1:])
        self.eigenvalues = None

    def coefficients(self, values):
        return np.asarray(values, dtype=float)

    def reconstruct(self, coefficients):
        return np.asarray(coefficients, dtype=float)

    def unit_paths(self, k: int, rng) -> np.ndarray:
        """``k`` unit OU paths on the grid, (k, m)."""
        z = rng.standard_normal((int(k), self.points.size))
        return self.ar.reconstruct(z * np.sqrt(self.ar.eigenvalues))


#: grid eigenbases rebuilt from releases, by (mechanism, kernel, domain, grid, eta, cut-off); a few kept
_BASES: dict = {}
_MAX_CACHED = 8


def _prior_radius(prior, spec) -> float | None:
    if isinstance(prior, str):
        if prior == "rkhs-ball":
            return spec.norm_bound
        if prior == "flat":
            return None
        raise InputError(f"unknown prior {prior!r} for a kernel-machine release",
                         f"use one of {MACHINE_PRIORS} or a positive radius (float)")
    if isinstance(prior, (int, float, np.floating, np.integer)) and not isinstance(prior, bool) \
            and np.isfinite(prior) and prior > 0:
        return float(prior)
    raise InputError(f"a kernel-machine prior is {MACHINE_PRIORS} or a positive finite radius, got {prior!r}",
                     "e.g. prior='rkhs-ball' (radius from the loss and lambda)")


def machine_posterior(release: xr.DataTree, prior="rkhs-ball", *, draw: int = 0) -> MachinePosterior:
    """The exact posterior of :func:`infer_machine` as a numpy object (no draws yet).

    Parameters
    ----------
    release : xr.DataTree
        Kind :data:`fdp_ppl.releasing.schema.MACHINE_RELEASE` (``fdp-ppl machine``, :func:`fdp_ppl.release`), in memory
        or read back from netCDF.
    prior : {"rkhs-ball", "flat"} or float
        See the module docstring; a float is the radius ``R`` of ``N(0, R² K)``.
    draw : int
        Which released function to condition on (flat index over (chain, draw); one draw = one publication).

    Returns
    -------
    MachinePosterior

    Raises
    ------
    SchemaError
        Not a kernel-machine release, attributes that do not rebuild its spec, no stored eigenbasis (and not
        an OU Markov release), a basis that does not match the release's stored eigenvalues.
    InputError
        An unknown prior, ``draw`` out of range.
    """
    from ..machine import ERMSpec, grid_basis
    from ..noise.laws import Laplace, Normal

    if not S.is_machine_release(release):
        raise SchemaError("not a kernel-machine release (fdp_ppl_kind is not 'machine_release')",
                          "pass a file written by fdp-ppl machine / fdp_ppl.release")
    attrs = dict(release.attrs)
    spec = ERMSpec.from_attrs(attrs)
    post = release[S.POSTERIOR].to_dataset()
    if DECISION not in post:
        raise SchemaError("the kernel-machine release has no posterior/decision", "pass the file fdp-ppl machine wrote")
    dec = post[DECISION].transpose(D.CHAIN, D.DRAW, *spec.dims)
    values = np.asarray(dec.values, dtype=float).reshape(-1, int(np.prod(spec.grid_size)))
    if not 0 <= int(draw) < values.shape[0]:
        raise InputError(f"draw={draw} is out of range: the release holds {values.shape[0]} draws",
                         "pass draw=0 for the first released function")
    released = values[int(draw)]
    if values.shape[0] > 1:
        import warnings

        warnings.warn(f"the release holds {values.shape[0]} draws; inference uses draw {draw} only (each draw is a "
                      "separate publication)", UserWarning, stacklevel=3)
    const = release[S.CONSTANT_DATA].to_dataset() if S.CONSTANT_DATA in release.children else xr.Dataset()
    if attrs.get("noise_structure") == "markov" and attrs.get("mechanism") == "gp" and spec.ou_rho is not None:
        sigma = float(attrs["sigma"])
        if not (np.isfinite(sigma) and sigma > 0 and np.all(np.isfinite(released))):
            raise SchemaError("the release's noise scale or values are not finite and positive",
                              "pass an unmodified release file")
        basis = OUGridPath(spec.axes[0], spec.ou_rho)
        radius = _prior_radius(prior, spec)
        m = released.size
        return MachinePosterior(spec, basis, Normal(), released, released.copy(), np.full(m, sigma),
                                None if radius is None else np.full(m, radius), radius)
    if S.EIGENVALUES not in const or S.NOISE_SCALE not in const:
        raise SchemaError("the kernel-machine release stores no eigenbasis (constant_data eigenvalues and "
                          "noise_scale) and is no OU Markov release", "pass the file fdp-ppl machine wrote")
    eig = np.asarray(const[S.EIGENVALUES].values, dtype=float)
    scale = np.asarray(const[S.NOISE_SCALE].values, dtype=float)
    mechanism = attrs.get("mechanism")
    if mechanism not in ("gp", "iclp"):
        raise SchemaError(f"unknown kernel-machine mechanism {mechanism!r}", "expected 'gp' or 'iclp'")
    rel_tol = float(attrs.get("eigen_rel_tol", 1e-10))
    key = (mechanism, repr(spec.kernel), spec.domain.tobytes(), spec.grid_size, spec.eta, rel_tol)
    if key not in _BASES:  # public: one factorisation per grid and kernel, reused across releases
        basis = grid_basis(spec, rel_tol) if mechanism == "gp" else spec.basis
        while len(_BASES) >= _MAX_CACHED:
            _BASES.pop(next(iter(_BASES)))
        _BASES[key] = basis
    basis = _BASES[key]
    law, power = (Normal(), 1.0) if mechanism == "gp" else (Laplace(), float(spec.eta))
    if basis.eigenvalues.shape != eig.shape or not np.allclose(basis.eigenvalues, eig, rtol=1e-6,
                                                                 atol=1e-12 * float(eig.max())):
        raise SchemaError("the release's stored eigenvalues do not match the basis rebuilt from its public "
                          "attributes", "read the release with the fdp_ppl version that wrote it")
    if not (np.all(np.isfinite(scale)) and np.all(scale > 0) and np.all(np.isfinite(released))):
        raise SchemaError("the release's noise scales or values are not finite and positive",
                          "pass an unmodified release file")
    radius = _prior_radius(prior, spec)
    prior_scale = None if radius is None else radius * np.sqrt(basis.eigenvalues**power)
    return MachinePosterior(spec, basis, law, released, basis.coefficients(released), scale, prior_scale, radius)


def infer_machine(release: xr.DataTree, prior="rkhs-ball", *, draw: int = 0, draws: int = 1000, chains: int = 2,
                  random_seed=None) -> xr.DataTree:
    """Posterior of the non-private decision function given one kernel-machine release (exact, no MCMC).

    Parameters
    ----------
    release : xr.DataTree
        A kernel-machine release (``fdp-ppl machine`` / :func:`fdp_ppl.release`; kind
        :data:`fdp_ppl.releasing.schema.MACHINE_RELEASE`), GP or ICLP noise. Only public content is read.
    prior : {"rkhs-ball", "flat"} or float
        ``"rkhs-ball"`` (default): ``f̂ ~ N(0, R² K)`` with ``R`` the public norm bound of the regularised
        minimiser (:attr:`fdp_ppl.machine.ERMSpec.norm_bound`; module docstring for why); a float is ``R``;
        ``"flat"``: improper uniform prior.
    draw : int
        Which released function to condition on (one draw = one publication).
    draws, chains : int
        Exact independent posterior draws, laid out (chain, draw) like MCMC output.
    random_seed : int, sequence, Generator or None
        Seeds the draws (no privacy at stake).

    Returns
    -------
    xr.DataTree
        ``posterior/decision`` (chain, draw, x) or (chain, draw, x1, x2): the non-private decision function
        (label units); ``posterior_predictive/decision``: replicated releases ``f̂ + noise`` per draw;
        ``observed_data/decision`` (grid dims): the conditioned release; ``constant_data``: ``eigenvalues``,
        ``noise_scale`` and ``prior_scale`` (component). Root attrs: kind ``inference``, the prior and its
        radius, ``inference = "exact"``, the release's public attributes prefixed ``release_``.
        Bands: :func:`decision_band`; classifier agreement: :func:`sign_agreement`.

    Raises
    ------
    SchemaError, InputError
        As :func:`machine_posterior`; ``draws`` or ``chains`` < 1; more memory than the machine has.
    """
    from ..settings import blas_threads

    if int(draws) < 1 or int(chains) < 1:
        raise InputError(f"draws and chains must be >= 1 (got draws={draws}, chains={chains})", "e.g. draws=1000")
    with blas_threads():  # small dense products: one BLAS thread is faster on shared cores
        return _infer_machine(release, prior, draw, int(draws), int(chains), random_seed)


def _infer_machine(release, prior, draw, draws, chains, random_seed):
    from ..settings import check_memory

    mp = machine_posterior(release, prior, draw=draw)
    spec = mp.spec
    k = int(draws) * int(chains)
    m = int(np.prod(spec.grid_size))
    check_memory(8.0 * k * (2 * m + 2 * mp.y.size), f"{k} posterior draws of a {m}-point decision function",
                 "ask for fewer draws")
    rng = np.random.default_rng(random_seed)
    coefs = mp.draw_coefficients(k, rng)
    shape = (int(chains), int(draws)) + tuple(spec.grid_size)
    post_vals = mp.decision(coefs).reshape(shape)
    rep_coefs = coefs + mp.draw_noise(k, rng)
    pred_vals = mp.decision(rep_coefs).reshape(shape)
    grid = dict(zip(spec.dims, spec.axes))
    cd = {D.CHAIN: np.arange(chains), D.DRAW: np.arange(draws), **grid}
    vdims = (D.CHAIN, D.DRAW) + spec.dims
    src = release[S.POSTERIOR][DECISION]
    var_attrs = {k_: v for k_, v in src.attrs.items() if k_ in ("long_name", "units")}
    post = xr.Dataset({DECISION: (vdims, post_vals, {**var_attrs, "description": (
        "posterior of the non-private decision function (regularised minimiser, projected on the release's basis)")})},
        coords=cd)
    pred = xr.Dataset({DECISION: (vdims, pred_vals, {**var_attrs, "description": (
        "replicated releases: a posterior draw plus fresh mechanism noise")})}, coords=cd)
    obs = xr.Dataset({DECISION: (spec.dims, mp.released.reshape(spec.grid_size),
                                 {**var_attrs, "description": f"the conditioned release (draw {draw})"})},
                     coords=grid)
    if mp.markov:  # coordinates are the grid values; noise sd sigma and prior sd R at every point
        const = {S.NOISE_SCALE: (spec.dims, mp.noise_scale)}
        if mp.prior_scale is not None:
            const["prior_scale"] = (spec.dims, mp.prior_scale)
        constant = xr.Dataset(const, coords=grid)
    else:
        const = {S.EIGENVALUES: ((COMPONENT,), mp.basis.eigenvalues),
                 S.NOISE_SCALE: ((COMPONENT,), mp.noise_scale)}
        if mp.prior_scale is not None:
            const["prior_scale"] = ((COMPONENT,), mp.prior_scale)
        constant = xr.Dataset(const, coords={COMPONENT: np.arange(mp.y.size), **grid})
    cdims = (D.CHAIN, D.DRAW, COMPONENT)
    ccoords = {D.CHAIN: np.arange(chains), D.DRAW: np.arange(draws), COMPONENT: np.arange(mp.y.size)}
    std_obs, std_rep = standardised(mp.y, rep_coefs.reshape(int(chains), int(draws), -1),
                                    np.sqrt(mp.law.variance(mp.noise_scale)), COMPONENT)
    pred = pred.assign({S.RELEASED: (cdims, rep_coefs.reshape(int(chains), int(draws), -1)), STANDARDISED: std_rep})
    obs = obs.assign({S.RELEASED: ((COMPONENT,), mp.y), STANDARDISED: std_obs})
    loglik = xr.Dataset({S.RELEASED: (cdims, mp.pointwise_loglik(coefs).reshape(int(chains), int(draws), -1))},
                        coords=ccoords)
    groups = {S.POSTERIOR: post, S.POSTERIOR_PREDICTIVE: pred, S.LOG_LIKELIHOOD: loglik, S.OBSERVED_DATA: obs,
              S.CONSTANT_DATA: constant}
    exact_loo = mp.exact_loo()
    if exact_loo is not None:
        groups[LOO_GROUP] = loo_dataset(exact_loo, COMPONENT)
    tree = xr.DataTree.from_dict(groups)
    prior_text = ("flat (improper)" if mp.radius is None else
                  f"N(0, R^2 K) on the grid, R = {mp.radius:.6g}" + (
                      " (public norm bound sqrt(sup_y loss(0, y)/lambda) + solver rho: the ball's 1-sd ellipsoid)"
                      if prior == "rkhs-ball" else " (given)"))
    noise = ("Gaussian OU noise (Markov release): N(w f~, w sigma^2 K) drawn by the AR(1) recursion" if mp.markov
             else "Gaussian, conjugate Normal posterior per eigen-coefficient" if mp.gaussian else
             "Laplace (ICLP), two truncated normals per eigen-coefficient")
    attrs = {f"release_{k_}": v for k_, v in release.attrs.items() if k_ not in (S.KIND_ATTR, S.SCHEMA_ATTR)}
    attrs.update({"prior": prior if isinstance(prior, str) else "radius", "prior_description": prior_text,
                  "prior_radius": "none" if mp.radius is None else mp.radius, "target": "summary",
                  "release_draw": int(draw), "inference": "exact", "inference_model": "machine-conjugate",
                  "inference_sampler": "none",
                  "inference_description": f"exact: Gaussian prior x {noise}, independent draws in the release's basis",
                  "privacy_cost": "none (post-processing of a release)",
                  "diagnostic_max_rhat": 1.0, "diagnostic_min_ess_bulk": float(k), "diagnostic_min_ess_tail": float(k),
                  "diagnostic_divergences": 0, "source": "Hall, Rinaldo & Wasserman (2013), Section 4.3, Corollary 9",
                  RELEASE_ID: release_identity(release, draw),
                  "loo_method": "exact" if exact_loo is not None else LOO_IMPROPER if mp.radius is None else "psis",
                  "log_likelihood": "log p(y_j | coefficients)" + ("" if not mp.markov else
                                                                   ", y_-j (correlated noise on the grid)")})
    tree.attrs.update(S.clean_attrs(attrs))
    tree.attrs.update(S.inference_attrs())
    return tree


def infer_machine_dispatch(release: xr.DataTree, prior="gp", *, target: str | None = "summary", method: str = "auto",
                           draw: int = 0, draws: int = 1000, chains: int = 2, random_seed=None) -> xr.DataTree:
    """:func:`fdp_ppl.infer` on a kernel-machine release: its arguments mapped onto :func:`infer_machine`.

    ``prior="gp"`` (``infer``'s default) means the default ``"rkhs-ball"`` prior; the NUTS-only arguments
    (``tune``, ``cores``, ``target_accept``, ``nuts_sampler``, ``progressbar``) do not apply (exact draws).

    Raises
    ------
    InputError
        ``target`` other than ``"summary"`` or None (the population minimiser has no sampling model here), ``method``
        other than ``"auto"``/``"exact"``, or a mean-curve prior object (GPPrior, ICLPPrior, callable).
    """
    if target not in (None, "summary"):
        raise InputError(f"a kernel-machine release supports target='summary' only (got {target!r})",
                         "infer the released minimiser: target='summary'")
    if method not in ("auto", "exact"):
        raise InputError(f"a kernel-machine posterior is drawn exactly; method={method!r} does not apply",
                         "use method='auto' or 'exact'")
    if isinstance(prior, str) and prior == "gp":
        prior = "rkhs-ball"
    elif not isinstance(prior, (str, int, float, np.floating, np.integer)):
        raise InputError(f"a kernel-machine release takes prior {MACHINE_PRIORS} or a radius, not "
                         f"{type(prior).__name__}", "e.g. prior='rkhs-ball'")
    return infer_machine(release, prior, draw=draw, draws=draws, chains=chains, random_seed=random_seed)


def _check_machine_inference(tree) -> None:
    if not (S.is_inference(tree) and S.POSTERIOR in tree.children and DECISION in tree[S.POSTERIOR].data_vars
            and S.OBSERVED_DATA in tree.children):
        raise SchemaError("needs the result of infer_machine / fp.infer on a kernel-machine release",
                          "run fp.infer(release) first (a release is one draw: it has no band)")


def decision_band(tree: xr.DataTree, *, ci_prob: float | None = None, ci_kind: str | None = None) -> xr.Dataset:
    """Pointwise credible band of the decision function (:func:`fdp_ppl.inference.credible_band` on ``decision``).

    Parameters
    ----------
    tree : xr.DataTree
        Result of :func:`infer_machine`.
    ci_prob, ci_kind
        As :func:`~fdp_ppl.inference.credible_band` (ArviZ's ``stats.ci_prob`` and
        ``stats.ci_kind`` when None).

    Returns
    -------
    xr.Dataset
        ``mean``, ``lower``, ``upper`` over the grid dims (``x`` or ``x1``, ``x2``).

    Raises
    ------
    SchemaError
        Not a kernel-machine inference result.
    """
    from .bands import credible_band

    _check_machine_inference(tree)
    return credible_band(tree, ci_prob=ci_prob, ci_kind=ci_kind, var=DECISION)


def _at_points(da: xr.DataArray, points) -> xr.DataArray:
    """``da`` (..., grid dims) linearly interpolated at points (p, d) or (p,) -> (..., point); points outside the
    grid box are clamped to it (as :func:`fdp_ppl.machine.predict_labels` does)."""
    from scipy.interpolate import RegularGridInterpolator

    grid_dims = [d for d in da.dims if d not in (D.CHAIN, D.DRAW)]
    lead = [d for d in da.dims if d in (D.CHAIN, D.DRAW)]
    axes = [np.asarray(da[d].values, dtype=float) for d in grid_dims]
    p = np.asarray(points, dtype=float).reshape(-1, len(grid_dims))
    if not np.all(np.isfinite(p)):
        raise InputError("points must be finite", "pass feature values inside the release's grid box")
    p = np.clip(p, [a[0] for a in axes], [a[-1] for a in axes])
    vals = np.moveaxis(da.transpose(*lead, *grid_dims).values, list(range(len(lead))),
                       list(range(len(grid_dims), len(grid_dims) + len(lead))))
    out = RegularGridInterpolator(axes, vals)(p)  # (p, *lead)
    coords = {f"point_{d}": ("point", p[:, i]) for i, d in enumerate(grid_dims)}
    return xr.DataArray(np.moveaxis(out, 0, -1), dims=(*lead, "point"),
                        coords={**{d: da[d] for d in lead}, **coords})


def _decisions(tree: xr.DataTree, points=None) -> tuple[xr.DataArray, xr.DataArray]:
    """Posterior draws and the released decision function of a kernel-machine inference result, on the grid or
    interpolated at ``points`` (:func:`_at_points`)."""
    _check_machine_inference(tree)
    post, obs = tree[S.POSTERIOR][DECISION], tree[S.OBSERVED_DATA][DECISION]
    if points is not None:
        post, obs = _at_points(post, points), _at_points(obs, points)
    return post, obs


def sign_agreement(tree: xr.DataTree, points=None) -> xr.DataArray:
    """Posterior probability that the non-private classifier agrees with the released one, per point.

    ``P(sign f̂(x) = sign f̃(x) | release)``, estimated by the fraction of posterior draws whose sign
    matches the conditioned release's (``observed_data/decision``); Monte Carlo standard error at most
    ``0.5/√(chains·draws)`` (in ``attrs["mcse_max"]``).

    Calibration: a posterior probability is calibrated on average over its prior. The default prior is wide
    (the whole RKHS ball), while typical minimisers sit near 0 over much of the domain, so where the noise
    dominates this probability overstates agreement (``benchmarks/bench_coverage_svm.py``: mean 0.77 against
    a realised 0.68 at ε = 0.5, 0.82 against 0.81 at ε = 1, 0.96 against 0.97 at ε = 4); the bands of
    :func:`decision_band` keep their nominal coverage.

    Parameters
    ----------
    tree : xr.DataTree
        Result of :func:`infer_machine`.
    points : array_like, shape (p, d) or (p,), optional
        Feature values (data units) off the grid: the posterior draws and the release are interpolated
        linearly between grid points (post-processing; points outside the grid box are clamped to it).
        Default: the grid.

    Returns
    -------
    xr.DataArray
        Over the grid dims, or over ``point`` (with the points as coordinates); values in [0, 1].

    Raises
    ------
    SchemaError
        Not a kernel-machine inference result.
    InputError
        Non-finite points.
    """
    post, obs = _decisions(tree, points)
    agree = (np.sign(post) == np.sign(obs)).mean((D.CHAIN, D.DRAW))
    n = post.sizes[D.CHAIN] * post.sizes[D.DRAW]
    agree.name = "sign_agreement"
    agree.attrs = {"description": "posterior probability that sign(non-private decision) = sign(released decision)",
                   "mcse_max": 0.5 / np.sqrt(n)}
    return agree


def positive_probability(tree: xr.DataTree, points=None) -> xr.DataArray:
    """``P(f̂(x) > 0 | release)`` per point: the posterior probability that the non-private classifier
    predicts +1 (fraction of posterior draws; same MC error and ``points`` as :func:`sign_agreement`).

    Raises
    ------
    SchemaError
        Not a kernel-machine inference result.
    InputError
        Non-finite points.
    """
    post, _ = _decisions(tree, points)
    p = (post > 0).mean((D.CHAIN, D.DRAW))
    p.name = "positive_probability"
    p.attrs = {"description": "posterior probability that the non-private decision function is > 0"}
    return p


def describe_machine_inference(tree: xr.DataTree, *, ci_prob: float | None = None) -> list[tuple[str, str]]:
    """Rows ``(label, text)`` summarising a kernel-machine posterior for a printed table (``fdp-ppl infer``).

    Rows: ``prior``, ``method``, ``draws``, ``band`` (mean and largest width of the ``ci_prob`` ETI band),
    ``classifier`` (share of grid points where the posterior probability that the non-private classifier
    agrees with the released one is at least 0.95, and the smallest such probability), ``boundary``
    (share of grid points whose band contains 0: the side of the boundary is uncertain there).

    Raises
    ------
    SchemaError
        Not a kernel-machine inference result.
    """
    _check_machine_inference(tree)
    at = tree.attrs
    band = decision_band(tree, ci_prob=ci_prob, ci_kind="eti")
    ci_prob = band.attrs["ci_prob"]
    width = band["upper"] - band["lower"]
    agree = sign_agreement(tree)
    post = tree[S.POSTERIOR][DECISION]
    straddle = float(((band["lower"] < 0) & (band["upper"] > 0)).mean())
    return [("prior", str(at.get("prior_description", at.get("prior", "")))),
            ("method", str(at.get("inference_description", ""))),
            ("draws", f"{post.sizes[D.CHAIN]} chains x {post.sizes[D.DRAW]} exact independent draws"),
            ("band", (f"{ci_prob:.0%} ETI of the decision function: mean width {float(width.mean()):.3g}, "
                      f"largest {float(width.max()):.3g}")),
            ("classifier", (f"P(non-private sign = released sign) >= 0.95 at {float((agree >= 0.95).mean()):.0%} "
                            f"of grid points; smallest {float(agree.min()):.2f}")),
            ("boundary", f"the band contains 0 at {straddle:.0%} of grid points (side of the boundary uncertain)")]


__all__ = ["MACHINE_PRIORS", "describe_machine_inference", "MachinePosterior", "OUGridPath", "decision_band", "infer_machine", "infer_machine_dispatch", "machine_posterior",
           "positive_probability", "sign_agreement"]
