"""Private release of a kernel machine's decision function: on a grid, and online.

Gaussian-process noise (Hall, Rinaldo & Wasserman 2013, Corollary 9, §4.3, §5 with
the squared batch scale of ``specs/gp-mechanism-hall.md`` §9): the release is
``f_D + σ G``, ``G ~ GP(0, K)`` with the machine's own kernel and
``σ = gaussian_sigma(ε, δ, Δ, calibration)`` of the package's
:class:`~fdp_ppl.mechanisms.GaussianMechanism` (analytic by default, classical
``√(2 log(2/δ)) Δ/ε`` for the paper, refused for ε > 1).

ICLP noise (Lin & Reimherr 2026, Theorem 18): coefficient ``j`` of the decision
function on the grid eigenbasis gets ``Laplace(0, b_j)``, ``b_j = Δ_{1,C} √λ_j/ε``
(the :class:`~fdp_ppl.mechanisms.ICLP` calibration), and the released function is
``Σ_j ỹ_j φ_j`` (estimate and noise on the same retained eigenpairs).

Predicted labels are the sign of the released function (post-processing).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ..accounting.calibration import gaussian_sigma
from ..errors import CompatibilityError, InputError, SeededReleaseWarning
from ..mechanisms.gaussian import GaussianMechanism
from ..mechanisms.laplace import ICLP
from ..sampling import seed_sequence
from ..schema import CONSTANT_DATA, ERM_RELEASE, POSTERIOR, clean_attrs, erm_attrs
from .gp import GPPath
from .machine import ERMFit, ERMSpec

KIND = ERM_RELEASE
#: largest grid released with a dense Cholesky factor of the noise kernel
MAX_GRID_POINTS = 6000
FP_SAFE_REASON = ("0: the Gaussian-process noise is drawn as float64 numpy normals through a Cholesky factor of "
                  "the kernel matrix (or the OU recursion), which keeps one path for online queries; ICLP noise goes "
                  "through OpenDP when unseeded")


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


def _charge(ledger, mechanism, k: int, label: str):
    cost = mechanism.budget * k  # basic composition; k·δ may reach 1 (a vacuous but valid statement)
    if ledger is not None:
        ledger.spend(cost, label=label)
    return cost


def _path(spec: ERMSpec, rng) -> GPPath:
    return GPPath(spec.kernel_matrix, spec.d, rng, ou_rho=spec.ou_rho)


def release_erm(fit: ERMFit, mechanism, *, draws: int = 1, chains: int = 1, random_seed=None, ledger=None,
                label: str = "kernel machine") -> xr.DataTree:
    """Release the decision function of a fitted kernel machine on the spec's grid.

    Parameters
    ----------
    fit : ERMFit
        From :meth:`ERMSpec.fit`.
    mechanism : GaussianMechanism or ICLP
        GP noise for ``eta=None`` specs, ICLP noise for ``eta > 1`` specs.
    draws, chains : int
        Independent releases arranged (chain, draw); each costs (ε, δ) (basic composition).
    random_seed : None, int, sequence, Generator or SeedSequence
        None (default): fresh OS entropy. A seed warns :class:`SeededReleaseWarning`.
    ledger : PrivacyLedger or FileLedger, optional
        Charged ``chains·draws·(ε, δ)`` before any noise is drawn.

    Returns
    -------
    xarray.DataTree
        ``posterior/decision`` (chain, draw, x) or (chain, draw, x1, x2), in label units;
        ``constant_data``: the grid axes (and for ICLP the eigenvalues and noise scales
        per component). Root attrs: ε, δ, n, λ, loss, kernel, sensitivity and its norm,
        noise kernel and scale, jitter, noise_seeded, fp_safe (0, with the reason),
        budget spent. Never the non-private fit or the clipping count.

    Raises
    ------
    InputError, CompatibilityError
        Wrong mechanism for the spec, draws or chains < 1, a GP grid above ``MAX_GRID_POINTS``
        (except the OU kernel in d = 1, sampled by its Markov recursion).
    BudgetExceededError
        From the ledger (nothing drawn).
    """
    spec = fit.spec
    if int(draws) < 1 or int(chains) < 1:
        raise InputError("draws and chains must be >= 1", "pass draws=1 for one release")
    sens, scale = _calibrate(spec, mechanism)
    k = int(chains) * int(draws)
    cost = _charge(ledger, mechanism, k, label)
    if random_seed is not None:
        warnings.warn("seeded kernel-machine release: private only while the seed stays secret",
                      SeededReleaseWarning, stacklevel=2)
    ss = seed_sequence(random_seed)
    pts = spec.points
    coords = dict(zip(spec.dims, spec.axes))
    const = {}
    if isinstance(mechanism, GaussianMechanism):
        if spec.ou_rho is None and len(pts) > MAX_GRID_POINTS:
            raise InputError(f"a grid of {len(pts)} points needs a {len(pts)}^2 Cholesky factor",
                             f"use at most {MAX_GRID_POINTS} grid points (e.g. grid_size=60 per feature)")
        mean = fit.decision(pts)
        values, jitters = [], []
        for child in ss.spawn(k):  # one independent path per release
            path = _path(spec, np.random.default_rng(child))
            values.append(mean + scale * path.sample(pts))
            jitters.append(max(path.jitter or 0.0, path.extra_jitter))
        values = np.asarray(values)
        noise_attrs = {"mechanism": "gp", "noise_law": "gaussian-process", "calibration": mechanism.calibration,
                       "noise_kernel": f"sigma^2 K(x, y), K = the machine's kernel ({spec.kernel.name}, rho = "
                                       f"{spec.kernel.rho:g}, euclidean distance)",
                       "noise_scale": scale, "sigma": scale, "noise_jitter": float(max(jitters)),
                       "noise_sampler": "OU Markov (AR(1)/bridge) updates" if spec.ou_rho else
                                        "Cholesky of K(grid, grid) + jitter I"}
    else:
        from ..sampling import resolve_generator, sampler_for

        b = scale * np.sqrt(spec.eigenvalues)
        h = fit.eigen_coefficients()
        # the package's release samplers: OpenDP's floating-point-safe Laplace on the whitened coefficients h_j/b_j
        # when unseeded, the compiled sampler for a seeded study (fdp_ppl.sampling)
        generator = resolve_generator(mechanism.law, None, random_seed)
        sampler = sampler_for(mechanism.law, b.size, generator)
        values = spec.basis.reconstruct(sampler.draw(h, b, k, None if sampler.fp_safe else ss))
        fp_safe = int(bool(sampler.fp_safe))
        const = {"eigenvalues": (("component",), np.asarray(spec.eigenvalues)),
                 "noise_scale": (("component",), b)}
        noise_attrs = {"mechanism": "iclp", "noise_law": "laplace",
                       "noise_kernel": f"ICLP: independent Laplace(0, Delta sqrt(lambda_j)/epsilon) on the eigenbasis "
                                       f"of {spec.kernel.name} (rho = {spec.kernel.rho:g}) on the grid",
                       "noise_scale": scale, "noise_jitter": 0.0, "noise_sampler": sampler.generator,
                       "noise_generator": sampler.generator, "fp_safe": fp_safe,
                       "fp_safe_reason": ("1: OpenDP Laplace on the whitened eigen-coefficients" if fp_safe else
                                          "0: a seeded study draws float64 noise from the compiled sampler")}
    decision = values.reshape((int(chains), int(draws)) + tuple(spec.grid_size))
    post = xr.Dataset({"decision": (("chain", "draw") + spec.dims, decision)},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws), **coords})
    cdata = xr.Dataset(const, coords=coords)
    attrs = {**erm_attrs(), **spec.attrs(), **sens.attrs(), **noise_attrs,
             "epsilon": float(mechanism.epsilon), "delta": float(mechanism.delta),
             "draws": int(draws), "chains": int(chains), "releases": k,
             "budget_spent_epsilon": cost.epsilon, "budget_spent_delta": cost.delta,
             "noise_seeded": int(random_seed is not None), "noise_generator": "numpy", "fp_safe": 0,
             "fp_safe_reason": FP_SAFE_REASON, "prediction": "sign of the released decision function",
             "source": sens.source}
    attrs.update({key: noise_attrs[key] for key in ("noise_generator", "fp_safe", "fp_safe_reason")
                  if key in noise_attrs})
    if ledger is not None:
        attrs.update(ledger.attrs())
    tree = xr.DataTree.from_dict({POSTERIOR: post, CONSTANT_DATA: cdata})
    tree.attrs.update(clean_attrs(attrs))
    return tree


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
    :class:`~fdp_ppl.erm.gp.GPPath`, conditioned on every value released so far; a
    repeat query returns the same value. The whole oracle is one (ε, δ) release
    (RKHS sensitivity covers any set of queries, Hall Prop. 8), charged to the
    ledger once, at construction, before any draw.

    Parameters
    ----------
    fit : ERMFit
        An ``eta=None`` fit (GP noise).
    mechanism : GaussianMechanism
    grid : bool
        Release the spec's grid first (as one block), then answer queries.
    random_seed, ledger, label
        As in :func:`release_erm`.

    Raises
    ------
    CompatibilityError
        ICLP or an ``eta`` spec (an eigen-coefficient release has no online mode here).
    """

    def __init__(self, fit: ERMFit, mechanism, *, grid: bool = False, random_seed=None, ledger=None,
                 label: str = "kernel machine (online)"):
        if not isinstance(mechanism, GaussianMechanism):
            raise CompatibilityError("online release uses Gaussian-process noise",
                                     "pass GaussianMechanism(epsilon, delta)")
        self.fit = fit
        self.sensitivity, self.sigma = _calibrate(fit.spec, mechanism)
        self.mechanism = mechanism
        self.cost = _charge(ledger, mechanism, 1, label)
        if random_seed is not None:
            warnings.warn("seeded online release: private only while the seed stays secret", SeededReleaseWarning,
                          stacklevel=2)
        self.seeded = random_seed is not None
        self.path = _path(fit.spec, np.random.default_rng(seed_sequence(random_seed)))
        self._answers: dict = {}
        if grid:
            self.query(fit.spec.points)

    def query(self, x) -> np.ndarray:
        """Released values at points (m, d) (or (m,) for d = 1), shape (m,)."""
        x = np.asarray(x, dtype=float)
        x = x.reshape(-1, self.fit.spec.d) if x.ndim <= 1 else x
        xi = self.path.sample(x)  # validates; new points drawn in order, repeats cached
        keys = [GPPath._key(p) for p in x]
        new = [i for i, k in enumerate(keys) if k not in self._answers]
        if new:
            values = self.fit.decision(x[new]) + self.sigma * xi[new]
            for i, v in zip(new, values):
                self._answers.setdefault(keys[i], float(v))
        return np.array([self._answers[k] for k in keys])

    def predict(self, x) -> np.ndarray:
        """Private labels ``sign(query(x))`` (post-processing)."""
        return np.sign(self.query(x))

    @property
    def n_released(self) -> int:
        return len(self.path)


__all__ = ["KIND", "OnlineRelease", "predict_labels", "release_erm"]
