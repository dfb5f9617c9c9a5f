"""Private release of a kernel machine's decision function: on a grid, and online.

Gaussian-process noise (Hall, Rinaldo & Wasserman 2013, Corollary 9, §4.3, §5 with
the squared batch scale of ``specs/gp-mechanism-hall.md`` §9): the release is
``f_D + σ G``, ``G ~ GP(0, K)`` with the machine's own kernel and
``σ = gaussian_sigma(ε, δ, Δ, calibration)`` of the package's
:class:`~fdp_ppl.noise.mechanisms.GaussianMechanism` (analytic by default, classical
``√(2 log(2/δ)) Δ/ε`` for the paper, refused for ε > 1).

On the grid ``P`` the GP noise is drawn on the retained eigenpairs ``(λ_j, u_j)`` of
``K(P, P)`` (:class:`~fdp_ppl.machine.gp.GridEigenbasis`): the released coefficients are
``c̃_j = u_jᵀ f_D(P) + σ √λ_j ζ_j`` with ``ζ_j`` i.i.d. N(0, 1), drawn by the package's
release sampler on the whitened coefficients ``c_j/√λ_j`` (OpenDP's floating-point-safe
Gaussian when unseeded, whose privacy map may raise σ; the compiled sampler when
seeded), and the grid values ``Σ_j c̃_j u_j`` are post-processing. The whitened ℓ²
sensitivity is at most the RKHS bound Δ (projection is a contraction, and
``vᵀ K(P, P)⁻¹ v <= ‖g‖²_H`` for ``v = g(P)``; see ``GridEigenbasis``). The OU kernel in
d = 1 on a grid above ``MAX_GRID_POINTS`` is released the same way on its AR(1) innovations
(:class:`~fdp_ppl.machine.gp.OUInnovations`: the same law, whitened ℓ² sensitivity
``vᵀ K(P, P)⁻¹ v`` exactly, no eigendecomposition), and the recursion back to the grid is
post-processing: floating-point safe too.

Large grids: when the kernel is a product over coordinates (:attr:`ERMSpec.product_kernel`:
the Gaussian kernel in d >= 2) the grid is Cartesian, so ``K(P, P) = K_1 ⊗ K_2`` and the
eigenpairs are computed from the 1-D factors (:class:`~fdp_ppl.machine.gp.KroneckerEigenbasis`;
same cut-off on the products, same law) without forming the ``m × m`` matrix: grids up to
``MAX_KRONECKER_POINTS`` with at most ``MAX_COMPONENTS`` retained pairs. Attr
``noise_structure`` records ``"kronecker"``, ``"dense"`` or ``"markov"``.

ICLP noise (Lin & Reimherr 2026, Theorem 18): coefficient ``j`` of the decision
function on the grid eigenbasis gets ``Laplace(0, b_j)``, ``b_j = Δ_{1,C} √λ_j/ε``
(the :class:`~fdp_ppl.noise.mechanisms.ICLP` calibration), and the released function is
``Σ_j ỹ_j φ_j`` (estimate and noise on the same retained eigenpairs).

Predicted labels are the sign of the released function (post-processing).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..accounting.calibration import gaussian_sigma
from ..errors import CompatibilityError, InputError
from ..noise.mechanisms.base import Calibration
from ..noise.mechanisms.gaussian import GaussianMechanism
from ..noise.mechanisms.laplace import ICLP
from ..noise.sampling import (
    check_study,
    generator_attrs,
    generator_sigma,
    resolve_generator,
    sampler_for,
    seed_sequence,
)
from ..releasing.schema import CONSTANT_DATA, MACHINE_RELEASE, POSTERIOR, machine_attrs
from .gp import ANSWER_VAR_FLOOR, EIGEN_REL_TOL, GPPath, GridEigenbasis, InnovationPath, KroneckerEigenbasis, OUInnovations
from .machine import ERMFit, ERMSpec

KIND = MACHINE_RELEASE
#: largest grid released with a dense eigendecomposition of the noise kernel (m x m)
MAX_GRID_POINTS = 6000
#: largest Cartesian grid released through the Kronecker eigenbasis of a product kernel: memory is O(m) per
#: draw (grid values) plus the 1-D factors; the m x m matrix is never formed
MAX_KRONECKER_POINTS = 1_000_000
#: largest number r of retained eigenpairs of a Kronecker basis (the release sampler's dimension, (k, r) draws,
#: and the r x r prefix factor of an online grid release)
MAX_COMPONENTS = 6000
#: most points an online oracle answers (grid points included): the public cap behind its lattice slack
#: (:func:`fdp_ppl.noise.opendp.adaptive_lattice_slack`)
MAX_ONLINE_ANSWERS = 10**8
#: most answered quantities of a generic (non-Markov) online path, whose dense Cholesky factor holds their square
#: (20,000: 3.2 GB in float64); the OU kernel in d = 1 (Markov, O(n) memory) goes to MAX_ONLINE_ANSWERS
MAX_DENSE_ONLINE_ANSWERS = 20_000
FP_SAFE_REASON = {
    "opendp": ("1: OpenDP's exact discrete Gaussian (make_gaussian, lattice 2^-1074) on the whitened eigen-coefficients "
               "u_j^T f(P)/sqrt(lambda_j) of the noise kernel on the grid; the L2 sensitivity there is at most the "
               "RKHS bound (projection on retained eigenpairs is a contraction); rescaling and the map to the grid "
               "are post-processing"),
    "pymc": ("0: a seeded study draws the whitened eigen-coefficient noise as float64 normals from the compiled "
             "sampler (reproducible, not floating-point safe)"),
    "opendp-markov": ("1: OpenDP's exact discrete Gaussian (make_gaussian, lattice 2^-1074) on the whitened AR(1) "
                      "innovations (f_i - r_i f_(i-1))/sqrt(1 - r_i^2) of the OU path on the grid (above "
                      "MAX_GRID_POINTS, no eigendecomposition); their L2 sensitivity is the Mahalanobis norm under "
                      "K(grid, grid), at most the RKHS bound; the recursion back to the grid is post-processing"),
    "online": "0: a seeded study draws every answer by GP conditioning with float64 numpy normals",
    "opendp-online": ("1: OpenDP's exact discrete Gaussian (make_gaussian, lattice 2^-1074) on each answer's whitened "
                      "innovation (f_D(x) minus its conditional mean given the answered functionals, over the "
                      "conditional sd); the squared innovations of f_D - f_D' sum to its Mahalanobis norm over every "
                      "answered functional, at most the RKHS bound, in any order; the answer is the released "
                      "innovation mapped back by the public conditional mean and sd (post-processing); at most "
                      "MAX_ONLINE_ANSWERS answers, lattice slack adaptive_lattice_slack in epsilon"),
}


def _calibrate(spec: ERMSpec, mechanism):
    """(sensitivity, σ or Δ/ε) for the mechanism, refusing mismatched spaces."""
    if isinstance(mechanism, GaussianMechanism):
        if spec.eta is not None:
            raise CompatibilityError("Gaussian-process noise needs the kernel's own RKHS",
                                     "build the ERMSpec with eta=None, or release with ICLP(epsilon)")
        sens = spec.sensitivity("cameron-martin")
        return sens, float(gaussian_sigma(mechanism.epsilon, mechanism.delta, sens.value, mechanism.calibration))
    if isinstance(mechanism, ICLP):
        if spec.eta is None:
            raise CompatibilityError("ICLP noise needs the C^eta space on the grid eigenbasis",
                                     "build the ERMSpec with eta > 1 (e.g. eta=2), or use GaussianMechanism")
        sens = spec.sensitivity("1,C")
        return sens, float(mechanism._sigma(sens.value, spec))
    raise InputError(f"kernel machines are released with GaussianMechanism or ICLP, not {type(mechanism).__name__}",
                     "use GaussianMechanism(epsilon, delta) or ICLP(epsilon)")


def _path(spec: ERMSpec, rng) -> GPPath:
    return GPPath(spec.kernel_matrix, spec.d, rng, ou_rho=spec.ou_rho)


_BASES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def grid_basis(spec: ERMSpec, rel_tol: float = EIGEN_REL_TOL):
    """Retained eigenpairs of ``K(P, P)`` on the spec's grid (public; cached per spec and cut-off).

    Product kernels (:attr:`ERMSpec.product_kernel`) get a
    :class:`~fdp_ppl.machine.gp.KroneckerEigenbasis` built from the 1-D factors (never the
    ``m × m`` matrix); other kernels a dense :class:`~fdp_ppl.machine.gp.GridEigenbasis`. Both
    have the same interface (``eigenvalues``, ``size``, ``n_points``, ``complete``,
    ``rel_tol``, ``dropped_trace``, ``coefficients``, ``reconstruct``, ``whitened_norm``,
    ``vectors``, ``covariance``, ``structure``) and the same retained eigenpairs (Hall et al.
    2013, §4.3: the noise ``σ √λ_j ζ_j`` on ``u_jᵀ f_D(P)``).

    Returns
    -------
    GridEigenbasis or KroneckerEigenbasis

    Raises
    ------
    InputError
        A spec with ``eta`` (its noise lives on the ``C`` eigenbasis); a dense grid above
        ``MAX_GRID_POINTS`` points; a product-kernel grid above ``MAX_KRONECKER_POINTS`` points
        or with more than ``MAX_COMPONENTS`` retained eigenpairs.
    """
    if spec.eta is not None:
        raise InputError("an eta spec is released on its own C eigenbasis", "use spec.basis")
    m = int(np.prod(spec.grid_size))
    kron = spec.product_kernel
    if kron and m > MAX_KRONECKER_POINTS:
        raise InputError(f"a grid of {m} points exceeds the Kronecker release limit",
                         f"use at most {MAX_KRONECKER_POINTS} grid points")
    if not kron and m > MAX_GRID_POINTS:
        raise InputError(f"a grid of {m} points needs a {m}^2 eigendecomposition ({spec.kernel.name} kernel of the "
                         "Euclidean distance is not a product over coordinates)",
                         f"use at most {MAX_GRID_POINTS} grid points, or the Gaussian kernel (Kronecker structure)")
    cache = _BASES.setdefault(spec, {})
    if float(rel_tol) not in cache:
        if kron:
            basis = KroneckerEigenbasis(spec.kernel_factors(), rel_tol)
            if basis.size > MAX_COMPONENTS:
                raise InputError(f"the grid keeps {basis.size} eigenpairs of K(grid, grid), above {MAX_COMPONENTS}",
                                 "use a coarser grid or a larger bandwidth")
        else:
            pts = spec.points
            basis = GridEigenbasis(spec.kernel_matrix(pts, pts), rel_tol)
        cache[float(rel_tol)] = basis
    return cache[float(rel_tol)]


@dataclass(eq=False)
class GPGridDraws:
    """Draws of the GP grid release (data holder only: ``zeta`` and the centre are non-private).

    Attributes
    ----------
    values : ndarray, shape (k, m)
        Released grid values ``Σ_j c̃_j u_j`` (public).
    coefficients : ndarray, shape (k, r)
        Released eigen-coefficients ``c̃_j`` (public).
    zeta : ndarray, shape (k, r)
        Whitened unit noise ``(c̃_j − c_j)/(σ √λ_j)`` (non-private: it reveals the centre).
    basis : GridEigenbasis or KroneckerEigenbasis
    calibration : Calibration
        Sensitivity (Cameron–Martin = RKHS), σ used, per-coefficient sd ``σ √λ_j``.
    sampler : object
        The release sampler (``generator``, ``fp_safe``).
    """

    values: np.ndarray
    coefficients: np.ndarray
    zeta: np.ndarray
    basis: "GridEigenbasis | KroneckerEigenbasis"
    calibration: Calibration
    sampler: object


def noise_basis(spec: ERMSpec):
    """The whitened coordinates of a GP grid release: :func:`grid_basis`, or, for the OU kernel in d = 1 on a grid
    above ``MAX_GRID_POINTS``, its AR(1) innovations (:class:`~fdp_ppl.machine.gp.OUInnovations`; O(m), same law).
    Either way the whitened ℓ² sensitivity is at most the RKHS bound (Hall, Rinaldo & Wasserman 2013, §4.3 and
    Prop. 8), so both share :func:`gp_calibration`.

    Returns
    -------
    GridEigenbasis, KroneckerEigenbasis or OUInnovations

    Raises
    ------
    InputError
        As :func:`grid_basis`.
    """
    if spec.ou_rho is not None and int(np.prod(spec.grid_size)) > MAX_GRID_POINTS:
        return OUInnovations(spec.axes[0], spec.ou_rho)
    return grid_basis(spec)


def gp_calibration(spec: ERMSpec, mechanism: GaussianMechanism, random_seed=None,
                   generator: str | None = None, basis=None) -> tuple[Calibration, str]:
    """Public calibration of the GP grid release on the retained eigenpairs, and its generator.

    ``σ`` is the mechanism's (``gaussian_sigma``) for the compiled sampler; for OpenDP it is
    ``max(σ, σ_opendp)`` with ``σ_opendp`` the smallest σ whose privacy map
    (zCDP → approximate DP) guarantees the claimed (ε, δ) at the RKHS sensitivity Δ
    (:func:`fdp_ppl.noise.sampling.generator_sigma`). Per-coefficient sd ``σ √λ_j``. ``basis``: the
    whitened coordinates (default :func:`grid_basis`; :func:`noise_basis` for the OU kernel's AR(1) innovations).

    Raises
    ------
    CompatibilityError, InputError
        As :func:`fdp_ppl.release`; a seed with ``generator="opendp"``.
    """
    sens, sigma = _calibrate(spec, mechanism)
    basis = grid_basis(spec) if basis is None else basis
    gen = resolve_generator(mechanism.law, generator, random_seed)
    source = "mechanism"
    if gen != "pymc":
        needed = generator_sigma(gen, mechanism.law, sens, mechanism.epsilon, mechanism.delta, basis.size, sigma)
        if needed > sigma:
            sigma, source = needed, gen
    cal = Calibration(sensitivity=sens, scale=sigma * np.sqrt(basis.eigenvalues), sigma=float(sigma),
                      generator=gen, sigma_source=source)
    return cal, gen


def gp_grid_draws(fit: ERMFit, mechanism: GaussianMechanism, k: int = 1, random_seed=None, *,
                  generator: str | None = None, study: bool = False) -> GPGridDraws:
    """``k`` GP grid releases drawn on the whitened eigen-coefficients (module docstring; no ledger).

    The centre is the decision function projected on the retained eigenpairs,
    ``c_j = u_jᵀ f_D(P)``; the release sampler of :mod:`fdp_ppl.noise.sampling` draws
    ``c_j + σ √λ_j ζ_j`` (OpenDP Gaussian on ``c_j/√λ_j`` when unseeded, the compiled
    sampler when seeded); mapping to the grid is post-processing.

    Parameters
    ----------
    fit : ERMFit
        An ``eta=None`` fit.
    mechanism : GaussianMechanism
    k : int
        Independent releases.
    random_seed : None, int, sequence, Generator or SeedSequence
        None: fresh OS entropy and OpenDP's floating-point-safe sampler. A seed needs ``study=True``: the
        draws are releases of a fit to real records (:func:`fdp_ppl.noise.sampling.check_study`).
    generator : {None, "opendp", "pymc"}
        Override the default generator (:func:`fdp_ppl.noise.sampling.resolve_generator`).
    study : bool
        A study (not private): the only way to pass a ``random_seed``.

    Returns
    -------
    GPGridDraws

    Raises
    ------
    InputError
        A ``random_seed`` without ``study=True`` (before anything is drawn).
    """
    check_study(random_seed, study)
    cal, gen = gp_calibration(fit.spec, mechanism, random_seed, generator)
    basis = grid_basis(fit.spec)
    sampler = sampler_for(mechanism.law, basis.size, gen)
    centre = basis.coefficients(fit.decision(fit.spec.points))
    coef = sampler.draw(centre, cal.scale, int(k), None if sampler.fp_safe else random_seed, calibration=cal,
                        study=study)
    zeta = (coef - centre) / cal.scale
    return GPGridDraws(basis.reconstruct(coef), coef, zeta, basis, cal, sampler)


def _gp_attrs(spec: ERMSpec, mechanism, sigma: float, sampler_text: str, generator: str,
              structure: str = "dense") -> dict:
    safe, numpy = generator == "opendp", generator == "online"
    return {"noise_structure": structure,"mechanism": "gp", "noise_law": "gaussian-process", "calibration": mechanism.calibration,
            "noise_kernel": f"sigma^2 K(x, y), K = the machine's kernel ({spec.kernel.name}, rho = "
                            f"{spec.kernel.rho:g}, euclidean distance)"
                            + ("" if numpy or structure == "markov" else ", restricted to the retained eigenpairs of "
                                                                 "K(grid, grid)"),
            "noise_scale": float(sigma), "sigma": float(sigma), "noise_jitter": 0.0, "noise_sampler": sampler_text,
            "noise_generator": "numpy" if numpy else generator, "fp_safe": int(safe),
            "fp_safe_reason": FP_SAFE_REASON.get(f"{generator}-{structure}", FP_SAFE_REASON[generator])}


def plan_release(spec_or_fit, mechanism, *, draws: int = 1, seeded: bool = False, chains: int = 1):
    """The kernel machine's plan hook: the public plan of releasing its decision function on the spec's grid.

    GP noise for ``eta=None`` specs (Hall et al. 2013, Corollary 9, §4.3: the whitened eigen-coefficients of
    ``K(grid, grid)`` through the release sampler, OpenDP's floating-point-safe Gaussian when unseeded, whose
    privacy map may raise σ; the OU kernel in d = 1 above ``MAX_GRID_POINTS`` points on its AR(1) innovations,
    :func:`noise_basis`, the same way), ICLP noise for ``eta > 1`` specs (Lin & Reimherr 2026, Theorem 18).

    Parameters
    ----------
    spec_or_fit : ERMSpec or ERMFit
    mechanism : GaussianMechanism or ICLP
    draws, chains : int
        Independent releases arranged (chain, draw); each costs (ε, δ) (basic composition).
    seeded : bool
        A seeded study (the compiled float64 sampler; not floating-point safe).

    Returns
    -------
    ReleasePlan
        ``output``: ``decision`` (chain, draw, x) or (chain, draw, x1, x2), in label units; ``attrs``: ε, δ, n,
        λ, loss, kernel, sensitivity and its norm, noise kernel and scale, ``fp_safe`` with its reason, the
        budget spent.

    Raises
    ------
    InputError, CompatibilityError
        Wrong mechanism for the spec, draws or chains < 1, a GP grid above ``MAX_GRID_POINTS`` (except the OU
        kernel in d = 1), draws that do not fit in memory.
    """
    return _plan(_spec_of(spec_or_fit), mechanism, draws, chains, seeded)


def _spec_of(spec_or_fit) -> ERMSpec:
    spec = spec_or_fit.spec if isinstance(spec_or_fit, ERMFit) else spec_or_fit
    if not isinstance(spec, ERMSpec):
        raise CompatibilityError("a kernel-machine plan needs an ERMSpec or its fit", "pass ERMSpec(...) or its fit")
    return spec


def online_calibration(spec: ERMSpec, mechanism: GaussianMechanism, sens, sigma: float, answers: int):
    """σ, generator, sampler and guarantee attrs of an unseeded online oracle (OpenDP on whitened innovations).

    σ is raised, as on the grid, to OpenDP's lattice profile (:meth:`~fdp_ppl.noise.opendp.OpenDPSampler.
    calibrate_sigma`) at ``answers`` coordinates; the stated ε adds ``2γ`` of
    :func:`~fdp_ppl.noise.opendp.adaptive_lattice_slack` (the adaptive sequence against the continuous path; about
    1e-160, below float resolution, recorded as ``lattice_slack``).

    Parameters
    ----------
    spec : ERMSpec
    mechanism : GaussianMechanism
    sens : Sensitivity
        The RKHS (Cameron–Martin) sensitivity of the spec.
    sigma : float
        The mechanism's own σ (label units).
    answers : int
        The oracle's public cap on answered coordinates.

    Returns
    -------
    (Calibration, str, sampler, dict)
        The calibration (σ, its source), ``"opendp"``, the sampler whose guarantee it states, and the release
        attrs of :func:`~fdp_ppl.noise.sampling.generator_attrs` with ``lattice_slack``.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.machine import ERMSpec
    >>> spec = ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=50, grid_size=16)
    >>> mech = fp.GaussianMechanism(1.0, 1e-5)
    >>> cal, gen, _, attrs = online_calibration(spec, mech, spec.sensitivity("cameron-martin"), 1.0, 10**8)
    >>> gen, attrs["fp_safe"], attrs["lattice_slack"] < 1e-100
    ('opendp', 1, True)
    """
    from ..noise.opendp import adaptive_lattice_slack

    gen = resolve_generator(mechanism.law, None, None)
    needed = generator_sigma(gen, mechanism.law, sens, mechanism.epsilon, mechanism.delta, answers, sigma)
    sigma, source = (needed, gen) if needed > sigma else (float(sigma), "mechanism")
    cal = Calibration(sensitivity=sens, scale=np.atleast_1d(sigma), sigma=float(sigma), generator=gen,
                      sigma_source=source)
    sampler = sampler_for(mechanism.law, int(answers), gen)
    gattrs = generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta)
    gamma = adaptive_lattice_slack(answers, min(float(sigma), 1.0))  # the grid's lattice is in σ units, answers' in 1
    gattrs["epsilon_guaranteed"] = float(gattrs["epsilon_guaranteed"] + 2.0 * gamma)
    gattrs["lattice_slack"] = gamma
    gattrs["fp_safety"] = ("floating-point safe: every answer's whitened innovation is exact discrete Gaussian noise "
                           "on the lattice 2^-1074 (OpenDP); the answer is the public conditional mean plus the "
                           "conditional sd times it (post-processing)")
    return cal, gen, sampler, gattrs


def online_plan(spec_or_fit, mechanism, *, grid: bool = False, seeded: bool = False):
    """The public plan of an :class:`OnlineRelease`: one GP release of the whole path (Hall et al. 2013, §5).

    Every answer is a linear functional of one path ``f_D + σ ξ``, so the oracle is one (ε, δ) release
    (``draws = 1``) whatever the number of queries. With ``grid=True`` it is the grid release's plan
    (:func:`plan_release` with one draw: the same σ, raised by OpenDP's privacy map when unseeded); without,
    σ is the mechanism's raised by OpenDP's map at ``MAX_ONLINE_ANSWERS`` coordinates (:func:`online_calibration`)
    when unseeded, and the mechanism's own for a seeded study (float64 GP conditioning, not floating-point safe).
    The plan's ``event`` and ``cost`` are what the ledger is charged.

    Parameters
    ----------
    spec_or_fit : ERMSpec or ERMFit
        An ``eta=None`` spec (GP noise).
    mechanism : GaussianMechanism
    grid : bool
        The grid is released first (as one block), then the queries.
    seeded : bool
        A seeded study.

    Returns
    -------
    ReleasePlan
        Family ``"machine"``, mechanism ``"gp"``, ``draws = 1``, label ``"kernel machine (online)"``.

    Raises
    ------
    CompatibilityError
        Another mechanism than GaussianMechanism, or an ``eta`` spec.
    InputError
        ``grid=True`` on a grid :func:`grid_basis` refuses.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.machine import ERMSpec
    >>> from fdp_ppl.machine.release import online_plan
    >>> spec = ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=50, grid_size=16)
    >>> p = online_plan(spec, fp.GaussianMechanism(1.0, 1e-5))
    >>> p.mechanism, p.draws, p.event.count, p.cost.epsilon, p.fp_safe
    ('gp', 1, 1, 1.0, False)
    """
    from dataclasses import replace

    if not isinstance(mechanism, GaussianMechanism):
        raise CompatibilityError("online release uses Gaussian-process noise", "pass GaussianMechanism(epsilon, delta)")
    spec = _spec_of(spec_or_fit)
    if grid:
        grid_basis(spec)  # the grid block conditions the path on its eigenpairs (no Markov grid release here)
    return replace(_plan(spec, mechanism, 1, 1, seeded, online=not grid),
                   label="kernel machine (online)")


def _plan(spec: ERMSpec, mechanism, draws, chains, seeded: bool, online: bool = False):
    """The machine's plan (:func:`plan_release`); ``online``: the GP path answered by conditioning, no grid."""
    from ..releasing.plans import ReleasePlan, check_draws, check_scale

    draws, chains = check_draws(draws, chains)
    sens, scale = _calibrate(spec, mechanism)
    k = chains * draws
    check_scale(np.atleast_1d(scale))
    m = 0 if online else int(np.prod(spec.grid_size))
    const: dict = {}
    if online and seeded:  # every answer by float GP conditioning on the path's earlier answers (GPPath)
        mode, cal, basis, sampler, sigma = "online", None, None, None, float(scale)
        noise_attrs = _gp_attrs(spec, mechanism, scale, "GP conditioning on the answers so far", "online", "online")
        eps_g, dlt_g, generator, noise_scale = mechanism.epsilon, mechanism.delta, "numpy", np.atleast_1d(scale)
    elif online:  # every answer's whitened innovation through OpenDP (InnovationPath)
        mode, basis = "online", None
        cal, generator, sampler, gattrs = online_calibration(spec, mechanism, sens, scale, MAX_ONLINE_ANSWERS)
        sigma, noise_scale = float(cal.sigma), np.atleast_1d(cal.sigma)
        noise_attrs = _gp_attrs(spec, mechanism, sigma, "whitened innovations of the GP conditional given the "
                                "answers so far, via OpenDP", "opendp", "online")
        noise_attrs.update(gattrs)
        noise_attrs.update({"sigma_mechanism": scale, "noise_sigma_source": cal.sigma_source,
                            "max_answers": MAX_ONLINE_ANSWERS, "answer_var_floor": ANSWER_VAR_FLOOR})
        eps_g, dlt_g = gattrs["epsilon_guaranteed"], gattrs["delta_guaranteed"]
    elif isinstance(mechanism, GaussianMechanism):
        mode = "gp"
        basis = noise_basis(spec)
        markov = basis.structure == "markov"
        cal, generator = gp_calibration(spec, mechanism, 0 if seeded else None, basis=basis)
        sampler = sampler_for(mechanism.law, basis.size, generator)
        sigma, noise_scale = float(cal.sigma), cal.scale
        if not markov:  # (the AR(1) innovations are rebuilt from the public spec: nothing to store)
            const = {"eigenvalues": (("component",), basis.eigenvalues), "noise_scale": (("component",), cal.scale)}
        noise_attrs = _gp_attrs(spec, mechanism, cal.sigma,
                                "AR(1) innovations of the OU path on the grid via the release sampler" if markov else
                                "whitened eigen-coefficients of K(grid, grid) via the release sampler"
                                + (" (eigenpairs from the Kronecker factors K_1 x K_2 of the product kernel)"
                                   if basis.structure == "kronecker" else ""), sampler.generator, basis.structure)
        gattrs = generator_attrs(sampler, cal, mechanism.epsilon, mechanism.delta)
        noise_attrs.update(gattrs)
        noise_attrs.update({"n_components": basis.size, "eigen_rel_tol": basis.rel_tol,
                            "noise_dropped_trace": basis.dropped_trace,
                            "sigma_mechanism": scale, "noise_sigma_source": cal.sigma_source,
                            "estimate": ("decision function on the grid (its AR(1) innovations: nothing dropped)"
                                         if markov else
                                         "decision function projected on the retained eigenpairs of K(grid, grid)"),
                            "sensitivity_whitened": (
                                "L2 norm of the innovations (f_i - r_i f_(i-1))/sqrt(1 - r_i^2) is the Mahalanobis "
                                "norm f(P)^T K(P, P)^-1 f(P) <= the RKHS bound (exact AR(1) factorisation)" if markov
                                else "L2 norm of u_j^T f(P)/sqrt(lambda_j) over retained j is <= the RKHS bound "
                                     "(projection is a contraction)")})
        eps_g, dlt_g = gattrs["epsilon_guaranteed"], gattrs["delta_guaranteed"]
    else:
        mode, basis, cal = "iclp", None, None
        b = scale * np.sqrt(spec.eigenvalues)
        generator = resolve_generator(mechanism.law, None, 0 if seeded else None)
        sampler = sampler_for(mechanism.law, b.size, generator)
        sigma, noise_scale = float(scale), b
        fp_safe = int(bool(sampler.fp_safe))
        const = {"eigenvalues": (("component",), np.asarray(spec.eigenvalues)), "noise_scale": (("component",), b)}
        noise_attrs = {"mechanism": "iclp", "noise_law": "laplace",
                       "noise_kernel": f"ICLP: independent Laplace(0, Delta sqrt(lambda_j)/epsilon) on the eigenbasis "
                                       f"of {spec.kernel.name} (rho = {spec.kernel.rho:g}) on the grid",
                       "noise_scale": scale, "noise_jitter": 0.0, "noise_sampler": sampler.generator,
                       "noise_generator": sampler.generator, "fp_safe": fp_safe,
                       "fp_safe_reason": ("1: OpenDP Laplace on the whitened eigen-coefficients" if fp_safe else
                                          "0: a seeded study draws float64 noise from the compiled sampler")}
        eps_g, dlt_g = mechanism.epsilon, mechanism.delta
    from ..accounting.events import PrivacyEvent

    spec_attrs = spec.attrs()
    neighbouring = spec_attrs["neighbouring"] if spec.privacy_unit is not None else sens.neighbouring
    attrs = {**machine_attrs(), **spec_attrs, **sens.attrs(), **noise_attrs, "chains": chains, "releases": k,
             "prediction": "sign of the released decision function", "source": sens.source}
    out = ReleasePlan(
        family="machine", mechanism=noise_attrs["mechanism"], noise_law=mechanism.law.name,
        epsilon=float(mechanism.epsilon), delta=float(mechanism.delta), draws=draws,
        sensitivity=float(sens.value), sensitivity_norm=sens.norm, noise_scale=noise_scale,
        noise_multiplier=sigma,
        event=PrivacyEvent.for_noise(mechanism.law.name, mechanism.epsilon, mechanism.delta, sigma, sens.value, k),
        cost=mechanism.budget * k, privacy_unit=str(spec_attrs["privacy_unit"]), neighbouring=neighbouring,
        guarantee=f"({float(eps_g):.6g}, {float(dlt_g):.3g})-DP per draw for {neighbouring}",
        fp_safe=bool(noise_attrs["fp_safe"]), certified=True, seeded=seeded, generator=generator,
        output={"chain": chains, "draw": draws,
                **({} if online else dict(zip(spec.dims, (int(v) for v in spec.grid_size))))},
        variable="decision", coords={} if online else dict(zip(spec.dims, spec.axes)),
        units="decision value (its sign is the predicted label)",
        memory_bytes=3.0 * 8.0 * k * 2 * m, label="kernel machine", attrs=attrs,
        state=(spec, mechanism, mode, cal, basis, sampler, sigma, const))
    out.check_memory()
    return out


#: default stated margins of :func:`accuracy_release`, in label units (1: the hinge loss's margin), capped at the
#: public bound on ``sup |f|``
DEFAULT_MARGINS = (0.1, 0.25, 0.5, 1.0)


def decision_bound(spec: ERMSpec) -> float:
    """Public bound on ``sup_x |f(x)|`` of every fitted decision function: ``κ R`` (reproducing property,
    :attr:`ERMSpec.kappa`, :attr:`ERMSpec.norm_bound`), in label units.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.machine import ERMSpec
    >>> round(decision_bound(ERMSpec(fp.Gaussian.from_bandwidth(0.2), lam=0.25, n=100)), 2)  # sqrt(1/0.25) + rho
    2.0
    """
    return float(spec.kappa * spec.norm_bound)


def accuracy_release(plan, *, margin=None, **options) -> xr.Dataset:
    """The kernel machine's accuracy hook (:meth:`fdp_ppl.ReleasePlan.accuracy`): the noise bands of the released
    decision function on the grid and the sign agreement of the released classifier with the non-private one, from
    the public plan only (:func:`fdp_ppl.releasing.accuracy.noise_accuracy`).

    The noise on the grid is linear in the noise coefficients (``Σ_j ξ_j u_j`` on the retained eigenpairs of
    ``K(grid, grid)``, or ``Σ_j ξ_j φ_j`` on the ``C^η`` eigenbasis for ICLP) and symmetric, so at a grid point
    where the non-private decision value is ``±γ`` the released sign agrees with probability ``P(ξ(x) > −γ)``.

    **Assumption (stated, not checked: it is about the private fit).** The margin ``γ`` is a lower bound on
    ``|f_D(x)|`` at the grid points that matter; the figures are exact where ``|f_D(x)| = γ`` and lower bounds
    where ``|f_D(x)| >= γ``; nothing is said about points closer to the decision boundary. No fit has
    ``|f_D(x)| > κ R`` (:func:`decision_bound`), so larger margins are not offered.

    Parameters
    ----------
    plan : ReleasePlan
        A kernel-machine plan.
    margin : float or sequence of float, optional
        Stated margins ``γ > 0`` in the decision function's (label) units. Default: :data:`DEFAULT_MARGINS`
        capped at :func:`decision_bound`.
    **options
        ``level``, ``samples``, ``seed`` of :func:`fdp_ppl.releasing.accuracy.accuracy`.

    Returns
    -------
    xr.Dataset
        Dims ``x`` (or ``x1, x2``) and ``margin``: ``noise_sd``, ``pointwise_halfwidth``, ``simultaneous_halfwidth``
        (the margin above which every grid sign is kept with probability ``level``), ``rms_l2_error`` (L² over the
        feature box), ``sign_agreement`` (margin, grid), ``mean_sign_agreement`` and ``all_signs_kept`` (margin);
        attr ``decision_bound``.

    Raises
    ------
    InputError
        A margin that is not finite and > 0; the OU kernel's Markov release above ``MAX_GRID_POINTS`` points (no
        eigenbasis to plan on).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.machine import ERMSpec
    >>> spec = ERMSpec(fp.Gaussian.from_bandwidth(0.2), lam=0.1, n=500, domain=[[0, 1]], grid_size=30)
    >>> acc = fp.plan(spec, fp.GaussianMechanism(1.0, 1e-6)).accuracy(margin=[0.5, 1.0], samples=500)
    >>> acc["sign_agreement"].dims, bool((acc["mean_sign_agreement"].diff("margin") >= 0).all())
    (('margin', 'x'), True)
    """
    from ..releasing.accuracy import noise_accuracy, public_map

    spec, mechanism, mode, cal, basis, _, _, _ = plan.state
    if mode == "gp" and basis.structure == "markov":
        raise InputError(f"the accuracy of an OU release above {MAX_GRID_POINTS} grid points is not planned (its "
                         "noise is drawn by a Markov recursion, without an eigenbasis)",
                         f"plan on at most {MAX_GRID_POINTS} grid points: the noise law per point is the same")
    if mode == "gp":
        design = basis.vectors
    else:
        J = int(np.asarray(plan.noise_scale).size)
        design = np.asarray(spec.basis.reconstruct(np.eye(J)), dtype=float).reshape(J, -1).T
    bound = decision_bound(spec)
    if margin is None:
        margin = sorted({min(g, bound) for g in DEFAULT_MARGINS})
    m = int(np.prod(spec.grid_size))
    volume = float(np.prod(np.diff(np.asarray(spec.domain, dtype=float), axis=1)))
    pub = public_map(design, np.full(m, volume / m), dict(zip(spec.dims, spec.axes)), mechanism.law, n=int(spec.n),
                     margins=margin)
    acc = noise_accuracy(plan, pub, **options)
    acc.attrs["decision_bound"] = bound
    acc.attrs["assumption"] = ("|f_D(x)| >= margin at the grid points counted (a statement about the private fit, "
                               "not checked); exact where |f_D(x)| = margin")
    return acc


def draw_release(fit: ERMFit, plan, *, random_seed=None, progressbar: bool = False) -> xr.DataTree:
    """The kernel machine's draw hook (called by :func:`fdp_ppl.release` after the charge).

    ``posterior/decision`` (chain, draw, x) or (chain, draw, x1, x2), in label units; ``constant_data``: the
    grid axes (and the eigenvalues and noise scales per component). Never the non-private fit or the
    clipping count.
    """
    spec, mechanism, mode, cal, basis, sampler, sigma, const = plan.state
    chains, draws = plan.output["chain"], plan.output["draw"]
    k = chains * draws
    ss = seed_sequence(random_seed)
    pts = spec.points
    if mode == "gp":
        centre = basis.coefficients(fit.decision(pts))
        coef = sampler.draw(centre, cal.scale, k, None if sampler.fp_safe else random_seed, calibration=cal,
                            study=plan.study)
        values = basis.reconstruct(coef)
    else:
        values = spec.basis.reconstruct(sampler.draw(fit.eigen_coefficients(), plan.noise_scale, k,
                                                     None if sampler.fp_safe or random_seed is None else ss,
                                                     study=plan.study))
    coords = dict(zip(spec.dims, spec.axes))
    decision = values.reshape((chains, draws) + tuple(spec.grid_size))
    post = xr.Dataset({"decision": (("chain", "draw") + spec.dims, decision)},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws), **coords})
    return xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: xr.Dataset(const, coords=coords)})


def erm_model(fit: ERMFit, mechanism):
    """A ``pm.Model`` whose forward draws are releases of the kernel machine's decision function.

    The same law as :func:`fdp_ppl.release` (exact forward draws, ``pm.draw``): GP noise
    ``coefficients ~ Normal(u_jᵀ f_D(P), σ √λ_j)`` on the retained eigenpairs of
    ``K(P, P)`` (Hall et al. 2013, §4.3, Corollary 9; σ of the mechanism, as the seeded
    release uses), or ICLP noise ``Laplace(h_j, Δ_{1,C} √λ_j/ε)`` on the grid eigenbasis
    (Lin & Reimherr 2026, Theorem 18); ``decision`` is the Deterministic map to the grid.

    The centre enters as ``pm.Data("summary_coefficients")`` and is **non-private**: do not
    publish this model's prior predictive (it copies data into ``constant_data``); use
    :func:`fdp_ppl.release`.

    Parameters
    ----------
    fit : ERMFit
    mechanism : GaussianMechanism or ICLP

    Returns
    -------
    pm.Model
        coords ``component`` (0..r−1) and the grid axes ``x`` (d = 1) or ``x1``, ``x2``;
        variables ``coefficients`` (component) and ``decision`` (x) or (x1, x2).

    Raises
    ------
    CompatibilityError, InputError
        As :func:`fdp_ppl.release`; a Kronecker basis whose dense ``m × r`` design exceeds
        ``fdp_ppl.machine.gp.MAX_DENSE_ENTRIES`` (the model holds the eigenvectors as one matrix).
    """
    import pymc as pm
    import pytensor.tensor as pt

    spec = fit.spec
    if isinstance(mechanism, GaussianMechanism):
        cal, _ = gp_calibration(spec, mechanism, random_seed=0, generator="pymc")
        basis = grid_basis(spec)
        design = basis.vectors
        centre = basis.coefficients(fit.decision(spec.points))
        scale = cal.scale
    else:
        _, sigma = _calibrate(spec, mechanism)
        J = spec.basis.size
        design = spec.basis.reconstruct(np.eye(J)).T
        centre = fit.eigen_coefficients()
        scale = sigma * np.sqrt(spec.eigenvalues)
    coords = {"component": np.arange(len(scale)), **dict(zip(spec.dims, spec.axes))}
    with pm.Model(coords=coords) as model:
        c = pm.Data("summary_coefficients", centre, dims="component")
        phi = pm.Data("eigenvectors", design)
        coef = mechanism.law.pymc("coefficients", mu=c, scale=np.asarray(scale, dtype=float), dims="component")
        pm.Deterministic("decision", pt.dot(phi, coef).reshape(tuple(spec.grid_size)), dims=spec.dims)
    return model


def predict_labels(tree: xr.DataTree, points) -> np.ndarray:
    """Private labels at new points: the sign of the released decision function (post-processing).

    The released grid values are interpolated linearly (``scipy.interpolate.RegularGridInterpolator``);
    points outside the grid box are clamped to it.

    Parameters
    ----------
    points : array_like, shape (m, d) or (m,)

    Returns
    -------
    ndarray, shape (chain, draw, m), values in {−1, 0, +1}
    """
    from scipy.interpolate import RegularGridInterpolator

    dec = tree[POSTERIOR]["decision"]
    dims = [d for d in dec.dims if d not in ("chain", "draw")]
    axes = [np.asarray(dec[d].values) for d in dims]
    p = np.asarray(points, dtype=float).reshape(-1, len(dims))
    p = np.clip(p, [a[0] for a in axes], [a[-1] for a in axes])
    vals = dec.values
    out = np.empty(vals.shape[:2] + (len(p),))
    for c in range(vals.shape[0]):
        for d in range(vals.shape[1]):
            out[c, d] = RegularGridInterpolator(axes, vals[c, d])(p)
    return np.sign(out)


class OnlineRelease:
    """Answer arbitrary query points, one at a time, from one released GP path (Hall et al. 2013, §5).

    The answer at ``x`` is ``f_D(x) + σ ξ(x)`` with ``ξ`` the unit path of
    :class:`~fdp_ppl.machine.gp.GPPath`, conditioned on every quantity released so far; a
    repeat query returns the same value. The whole oracle is one (ε, δ) release
    (every answer is a linear functional of one path ``f_D + σ ξ``, and the RKHS
    sensitivity covers any finite set of them, Hall Prop. 8), charged to the ledger
    once, at construction, before any draw.

    With ``grid=True`` the grid is released first exactly as :func:`fdp_ppl.release` does
    (whitened eigen-coefficients of ``K(grid, grid)`` through the release sampler:
    OpenDP, floating-point safe, when unseeded; same σ), grid queries return those
    released values, and later points are drawn from the GP conditional given the
    released coefficients and every earlier answer.

    Unseeded (the default), every answer is exact (``fp_safe = 1``): the whitened innovation
    ``(f_D(x) − E[f_D(x) | answered functionals])/sd`` goes through OpenDP's discrete Gaussian of scale σ and
    the answer is the public conditional mean of the released values plus ``sd`` times it
    (:class:`~fdp_ppl.machine.gp.InnovationPath`). Privacy [D]: write each released innovation as the
    rounding of ``c_t + Y_t + U_t`` (``U_t`` uniform on the lattice cell); with Gaussian ``V_t`` in place of
    ``Y_t + U_t`` the answers are exactly those of the continuous path ``f_D + σ ξ`` asked adaptively,
    which is post-processing of one (ε, δ) release (Hall Prop. 8: the squared innovations of ``f_D − f_D'``
    sum to its Mahalanobis norm over the answered functionals, at most Δ², whatever is asked); the lattice
    law's joint density is within ``e^{±γ}`` of that one for at most ``MAX_ONLINE_ANSWERS`` answers
    (:func:`~fdp_ppl.noise.opendp.adaptive_lattice_slack`, γ ≈ 10⁻¹⁶⁰), so the oracle is
    ``(ε + 2γ, e^γ δ + 10⁻³⁰⁰)``-DP. Every answer's conditional variance is at least
    ``ANSWER_VAR_FLOOR · K(x, x)`` (a nugget, or a refused OU point), which bounds how much the float
    rounding of the centre is amplified; as everywhere in the package, that rounding is outside Δ.
    A seeded study draws the unit path in float64 (:class:`~fdp_ppl.machine.gp.GPPath`; ``fp_safe = 0``).

    Parameters
    ----------
    fit : ERMFit
        An ``eta=None`` fit (GP noise).
    mechanism : GaussianMechanism
    grid : bool
        Release the spec's grid first (as one block), then answer queries.
    random_seed, ledger, label, dataset, records_per_unit, allow_large_delta, study
        As in :func:`fdp_ppl.release` (a seed needs ``study=True``; a study takes no ledger): the ledger is
        charged by the protocol's one charge step (:func:`fdp_ppl.releasing.draw.charge`) with ``plan.cost`` and
        ``plan.event``, after every public refusal and the seed warning, before any draw.

    Attributes
    ----------
    plan : ReleasePlan
        The oracle's public plan (:func:`online_plan`): what the ledger was charged.
    cost : PrivacyBudget
        ``plan.cost``.
    ledger_attrs : dict
        The group-privacy record of the charge (a record-level plan on a person-level ledger), else empty.
    sigma : float
        The noise scale of every answer (OpenDP's σ when the grid went through OpenDP).
    grid_values : ndarray, shape (m,) or None
        The released grid values (``grid=True``).
    fp_safe : int
        1 unseeded (OpenDP on the grid's coefficients and on every answer's innovation), 0 for a study.
    fp_safe_reason : str
        Why (or why not).
    epsilon_guaranteed : float or None
        ε of the whole oracle at the mechanism's δ by OpenDP's lattice profile plus ``2γ`` (unseeded).
    exact : bool
        Unseeded: answers through :class:`~fdp_ppl.machine.gp.InnovationPath`.

    Raises
    ------
    CompatibilityError
        ICLP or an ``eta`` spec (an eigen-coefficient release has no online mode here).
    InputError
        ``grid=True`` on a grid :func:`grid_basis` refuses; a δ above 1/n without ``allow_large_delta``; what
        the ledger refuses (:func:`fdp_ppl.release`).
    BudgetExceededError
        The ledger cannot pay; nothing is drawn.
    """

    def __init__(self, fit: ERMFit, mechanism, *, grid: bool = False, random_seed=None, ledger=None,
                 label: str = "", dataset: str = "", records_per_unit: int | None = None,
                 allow_large_delta: bool = False, study: bool = False):
        from ..releasing.draw import charge, warn_seeded
        from ..releasing.plans import as_study, check_study

        check_study(random_seed, study, ledger)  # a seed only for a study, and a study on no ledger
        # the protocol of fdp_ppl.release: plan (every public refusal) -> warn -> charge -> draw
        self.plan = as_study(online_plan(fit.spec, mechanism, grid=grid, seeded=random_seed is not None), study)
        self.plan.check_delta(allow_large_delta or self.plan.study)
        self.fit = fit
        self.mechanism = mechanism
        self.sigma = float(self.plan.noise_multiplier)
        if random_seed is not None:
            warn_seeded("kernel-machine (online)")
        self.ledger_attrs = charge(self.plan, ledger, label=label, dataset=dataset, records_per_unit=records_per_unit)
        self.cost = self.plan.cost
        self.seeded = random_seed is not None
        ss = seed_sequence(random_seed)
        grid_ss, path_ss = ss.spawn(2)
        spec = fit.spec
        self.exact = random_seed is None
        self._answers: dict = {}
        self.grid_values = None
        self.generator = self.plan.generator
        if self.exact:  # every answer's whitened innovation through OpenDP (InnovationPath)
            self.path = InnovationPath(spec.kernel_matrix, spec.d, fit.decision, self._innovations, ou_rho=spec.ou_rho)
            self.fp_safe, self.fp_safe_reason = 1, FP_SAFE_REASON["opendp-online"]
            self.epsilon_guaranteed = None if grid else float(self.plan.attrs["epsilon_guaranteed"])  # grid: below
        else:
            self.path = _path(spec, np.random.default_rng(path_ss))
            self.fp_safe, self.fp_safe_reason = 0, FP_SAFE_REASON["online"]
            self.epsilon_guaranteed = None
        if grid:
            draw = gp_grid_draws(fit, mechanism, 1, None if random_seed is None else grid_ss, study=study)
            self.sigma = float(draw.calibration.sigma)
            pts = spec.points
            if self.exact:
                centre = draw.basis.coefficients(fit.decision(pts))
                self.path.condition_on_release(pts, draw.basis, draw.coefficients[0], centre)
                cal = online_calibration(spec, mechanism, draw.calibration.sensitivity, self.sigma,
                                         MAX_ONLINE_ANSWERS)[3]
                self.epsilon_guaranteed = float(cal["epsilon_guaranteed"])
                self.fp_safe_reason = FP_SAFE_REASON["opendp"] + "; answers: " + FP_SAFE_REASON["opendp-online"]
            else:
                self.path.condition_on_coefficients(pts, draw.basis, draw.zeta[0])
                self._answers.update({GPPath._key(p): float(v) for p, v in zip(pts, draw.values[0])})
                self.fp_safe_reason = (FP_SAFE_REASON[draw.sampler.generator] + "; off-grid answers: "
                                       + FP_SAFE_REASON["online"])
            self.grid_values = draw.values[0]
            self.generator = draw.sampler.generator

    def _innovations(self, centre) -> np.ndarray:
        """Released whitened innovations: OpenDP's exact Gaussian of scale σ around ``centre`` (J,)."""
        centre = np.asarray(centre, dtype=float)
        return sampler_for(self.mechanism.law, centre.size, "opendp").draw(centre, np.full(centre.size, self.sigma))[0]

    def query(self, x) -> np.ndarray:
        """Released values at points (m, d) (or (m,) for d = 1), shape (m,).

        Raises
        ------
        InputError
            Points that are not finite or have the wrong number of coordinates; more than
            ``MAX_ONLINE_ANSWERS`` answered points (``MAX_DENSE_ONLINE_ANSWERS`` answered quantities for a generic,
            non-Markov kernel, checked before anything is drawn); an OU point too close to an answered one for an exact answer
            (:class:`~fdp_ppl.machine.gp.InnovationPath`).
        """
        x = np.asarray(x, dtype=float)
        x = x.reshape(-1, self.fit.spec.d) if x.ndim <= 1 else x
        keys = {GPPath._key(p) for p in x} if x.shape[-1] == self.fit.spec.d else set()
        fresh = sum(k not in self.path._cache for k in keys)
        if len(self.path) + fresh > MAX_ONLINE_ANSWERS:
            raise InputError(f"the oracle answers at most MAX_ONLINE_ANSWERS = {MAX_ONLINE_ANSWERS} points "
                             f"({len(self.path)} answered, {fresh} new asked)",
                             "ask again at answered points, or plan a new release")
        held = len(self.path._L) + fresh  # the dense factor's size after this query (0 on a Markov path)
        if not self.path.markov and held > MAX_DENSE_ONLINE_ANSWERS:
            raise InputError(f"a {self.fit.spec.kernel.name} online path holds a dense factor of every answered "
                             f"quantity: {held} would exceed MAX_DENSE_ONLINE_ANSWERS = {MAX_DENSE_ONLINE_ANSWERS} "
                             f"({8 * held**2 / 1e9:.1f} GB)", "release the decision function on a grid, or use the "
                             "exponential (OU) kernel in d = 1, whose online path is Markov")
        values = self.path.sample(x)  # validates; new points drawn in order, repeats cached
        if self.exact:  # the path holds the released answers
            return values
        keys = [GPPath._key(p) for p in x]  # a study: answers are f_D + σ ξ, the grid's its released values
        new = [i for i, k in enumerate(keys) if k not in self._answers]
        if new:
            for i, v in zip(new, self.fit.decision(x[new]) + self.sigma * values[new]):
                self._answers.setdefault(keys[i], float(v))
        return np.array([self._answers[k] for k in keys])

    def predict(self, x) -> np.ndarray:
        """Private labels ``sign(query(x))`` (post-processing)."""
        return np.sign(self.query(x))

    @property
    def n_released(self) -> int:
        """Number of points answered so far (grid and queries; repeats counted once)."""
        return len(self.path)


__all__ = ["DEFAULT_MARGINS", "KIND", "MAX_COMPONENTS", "MAX_GRID_POINTS", "MAX_KRONECKER_POINTS", "GPGridDraws",
           "OnlineRelease", "accuracy_release", "decision_bound", "erm_model", "gp_calibration", "gp_grid_draws",
           "grid_basis", "online_plan", "predict_labels"]
