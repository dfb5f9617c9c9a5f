"""What the audit releases: the default public specs and the candidate neighbouring pairs per family.

A :class:`Target` holds a mechanism's claim (ε, δ), the candidate replace-one pairs (D, D′) built from
public structure only (eigenfunctions of the public kernel, ends of the public domain, label flips), and
how to release: ``release_one(dataset, rng)`` is one release call (the whole pipeline from the synthetic
dataset: fit, calibrate, draw; it is timed and its exceptions are failures) and, where the release path
can draw many releases of one fitted summary in one call, ``draw(dataset, size, rng)`` (same law, fast).
Every released object is reduced to a flat vector of public released numbers (``features``).

Families (``family=``): ``"mean"`` (the mechanisms of :data:`fdp_ppl.releasing.registry.MECHANISMS`, i.e.
``fdp-ppl release --mechanism NAME``), ``"kde"`` (``fdp-ppl kde``), ``"machine"`` (``fdp-ppl machine``; ``"svm"`` is read as ``"machine"`` and ``"release"`` as ``"mean"``, their former names) and
``"fpca"`` (``fdp-ppl fpca``, names ``FORM/SAMPLER``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._names import FPCA_MECHANISMS
from .._names import MACHINE_MECHANISMS as SVM_MECHANISMS
from ..errors import InputError
from ..releasing.families import ALIASES, BY_NAME
from ..releasing.families import FAMILIES as REGISTERED

#: former family names, still read (:data:`fdp_ppl.releasing.families.ALIASES`)
FAMILY_ALIASES = ALIASES
#: default releases per side of the FPCA audits (its exact samplers use a fixed, large proposal budget per frame)
FPCA_SAMPLES = 1000
#: frames per fp.release call of an FPCA fit when the audit draws many (each call is one exact batch of the sampler)
FPCA_CHUNK = 100

#: the keyword options of :func:`~fdp_ppl.auditing.core.audit`, in signature order
AUDIT_OPTIONS = ("family", "epsilon", "delta", "pairs", "samples", "confidence", "random_seed", "tests", "events",
                 "timing_calls", "options", "spec", "name", "train_fraction", "progressbar")
_EVERY = ("epsilon", "delta", "pairs", "samples", "confidence", "random_seed", "tests", "events")


@dataclass(frozen=True)
class AuditFamily:
    """What :func:`~fdp_ppl.auditing.core.audit` takes for one family of mechanisms.

    Attributes
    ----------
    family : str
        Key in :data:`AUDIT_FAMILIES`: ``"callable"`` (a release function) or a name of :data:`FAMILIES`.
    label : str
        The family in messages (``"<label> takes no ..."``).
    options : tuple of str
        The options of :func:`~fdp_ppl.auditing.core.audit` (:data:`AUDIT_OPTIONS`) the family uses; any other
        given, its default value included, is refused before any work.
    per_call : tuple of str
        Mechanisms that release one draw per call: every call is timed, so they take no ``timing_calls``.
    """

    family: str
    label: str
    options: tuple[str, ...]
    per_call: tuple[str, ...] = ()

    def takes(self, mechanism: str = "") -> tuple[str, ...]:
        """The options the audit of ``mechanism`` (a name of this family) takes."""
        if mechanism in self.per_call:
            return tuple(o for o in self.options if o != "timing_calls")
        return self.options


#: keys of ``options`` the kde and machine mechanisms read
_KDE_KEYS = {"gp": (), "sobolev": (), "iclp": ("eta",), "frl": ("M",), "bernstein": ("k",)}
_SVM_KEYS = {"gp": (), "iclp": ("eta",)}


def fpca_name(name: str) -> str:
    """An FPCA mechanism name with its sampler (``"gp-base"`` -> ``"gp-base/exact"``)."""
    return f"{name}/exact" if name in ("gp-base", "bingham") else name


def option_keys(mechanism: str, family: str, spec_given: bool = False) -> tuple[str, ...] | None:
    """The keys of ``options`` a named mechanism of a family reads, or None for an unknown name (the family's
    :attr:`AuditHook.keys`).

    ``"mean"``: the registry entry's mechanism options (``calibration``, ``nu``) and, when the audit builds
    the default spec, its summary options (``eta``, ``psi``, ``M``, ``k``); ``"kde"``: ``eta`` (iclp), ``M``
    (frl), ``k`` (bernstein); ``"machine"``: ``eta`` (iclp); ``"fpca"``: ``n`` (curves per dataset) and
    ``iterations`` (Gibbs and NUTS samplers; the exact samplers have none).
    """
    hook = _hook_or_none(family)
    return None if hook is None else hook.keys(mechanism, spec_given)


def _mean_keys(mechanism: str, spec_given: bool = False) -> tuple[str, ...] | None:
    from ..releasing.registry import MECHANISMS

    entry = MECHANISMS.get(mechanism)
    if entry is None:
        return None
    return tuple(entry.options) + (() if spec_given else tuple(entry.summary_options))


def _fpca_keys(mechanism: str, spec_given: bool = False) -> tuple[str, ...] | None:
    name = fpca_name(mechanism)
    if name not in FPCA_MECHANISMS:
        return None
    return ("n",) if name.endswith(("/exact", "/sequential")) else ("n", "iterations")


#: the default public specs (stated in every audit's attrs; :data:`DEFAULT_SPECS` per family)
_MEAN_SPEC = ("16-point uniform grid on [0, 1], Matern(rho=0.2, nu=1.5) eigenbasis, tau = 1 (L2; Bernstein: "
              "sup-norm tau = 1 and k = 6), n = 8 curves, nu = 5 for the t laws, summary defaults of the registry")
_KDE_SPEC = ("domain [0, 1], 24-point grid, bandwidth h = 0.15, n = 8 observations (iclp: eta = 1.25; frl: default "
             "M; bernstein: k = 6)")
_MACHINE_SPEC = ("hinge loss, Gaussian kernel (Hall convention) h = 0.2, lambda = 0.1, domain [0, 1], 16-point grid, "
                 "n = 8 labelled points (iclp: eta = 2)")
_FPCA_SPEC = ("the issue's design: 30-point uniform grid, Gaussian kernel exp(-d^2/rho) eigenbasis with rho = 1, "
              "m = 5, k = 1, tau = 1, n = 28 curves, default Sigma (operator eigenvalues)")


@dataclass
class Pair:
    """A replace-one neighbouring pair of synthetic datasets.

    Attributes
    ----------
    first, second : object
        The datasets D and D′ (arrays, or tuples ``(features, labels)`` for the SVM), identical except
        for one record.
    description : str
    """

    first: Any
    second: Any
    description: str


@dataclass
class Target:
    """A mechanism under audit (see the module docstring)."""

    mechanism: str
    family: str
    epsilon: float
    delta: float
    pairs: list[Pair]
    release_one: Callable[[Any, np.random.Generator], np.ndarray]
    draw: Callable[[Any, int, np.random.Generator], np.ndarray] | None = None
    spec: str = ""
    features: str = "the released vector"
    options: dict = field(default_factory=dict)
    default_samples: int | None = None
    #: what the release claims about its noise, for the white-box test (:mod:`~fdp_ppl.auditing.whitebox`)
    noise: Any = None
    #: why there is no white-box test, when ``noise`` is None
    noise_note: str = "not available for this mechanism (black-box bound only)"


class _NoSeedWarning:
    """Context: the audit seeds its releases on purpose (a study), so the seeded-release warning is muted, and so
    is the data holder's clipping warning (the audit's synthetic records sit at the public bound τ on purpose)."""

    def __enter__(self):
        from ..errors import SeededReleaseWarning
        from ..summaries.curves import TauTooSmallWarning

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", SeededReleaseWarning)
        warnings.simplefilter("ignore", TauTooSmallWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


# ----------------------------------------------------------------------------- release (registry)
def _release_target(name, epsilon, delta, options, spec=None):
    import fdp_ppl as fp
    from ..releasing.registry import MECHANISMS

    if name not in MECHANISMS:
        raise InputError(f"unknown mechanism {name!r} of family 'release'", f"choose one of {', '.join(MECHANISMS)}")
    entry = MECHANISMS[name]
    opts = dict(options or {})
    if "nu" in entry.options and opts.get("nu") is None:
        opts["nu"] = 5.0
    mech = entry.mechanism(epsilon, delta if entry.approximate else None,
                           **{k: v for k, v in opts.items() if k in entry.options})
    bernstein = entry.summary == "bernstein"
    if spec is None:
        K, n, tau = 16, 8, 1.0
        grid = fp.Grid.uniform(K)
        if bernstein:
            spec = entry.spec(grid, tau=tau, n=n, k=int(opts.get("k", 6)))
        else:
            basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
            spec = entry.spec(basis, tau=tau, n=n, **{k: v for k, v in opts.items() if k in entry.summary_options})
        spec_text = _MEAN_SPEC
    else:
        if not isinstance(spec, entry.spec_class):
            raise InputError(f"mechanism {name!r} releases a {entry.spec_class.__name__}, got {type(spec).__name__}",
                             f"pass spec={entry.spec_class.__name__}(...) or omit spec for the default")
        n, tau = int(spec.n), float(spec.tau)
        grid = spec.lattice_grid if bernstein and hasattr(spec, "lattice_grid") else spec.grid
        K = grid.size
        basis = None if bernstein else spec.basis
        spec_text = f"user spec {spec!r}"
    zeros = np.zeros((n, K))

    def one(first_row, other_rows=None):
        d = zeros.copy() if other_rows is None else np.tile(other_rows, (n, 1))
        d[0] = first_row
        return d

    pairs = []
    if bernstein:
        up, alt = np.full(K, tau), tau * np.where(np.arange(K) % 2 == 0, 1.0, -1.0)
        pairs += [Pair(one(up), one(-up), "records 0; record 0 = +tau_inf vs -tau_inf (extreme sup-norm curves)"),
                  Pair(zeros, one(up), "records 0 vs record 0 = +tau_inf"),
                  Pair(one(alt), one(-alt), "records 0; record 0 = alternating +-tau_inf vs its negative"),
                  Pair(one(up, -up), one(-up, -up), "records -tau_inf vs record 0 = +tau_inf")]
    else:
        phi = np.asarray(basis.eigenfunctions)
        lam = np.asarray(spec.eigenvalues) if hasattr(spec, "eigenvalues") else None
        lip = np.asarray(spec.fit(zeros).lipschitz)
        J = lip.size
        m = np.zeros(basis.size)
        if mech.norm == "cameron-martin":
            m[int(np.argmax(lip / np.sqrt(lam)))] = 1.0
        elif mech.norm == "1,C":
            m[:J] = lip / np.sqrt(lam)
        else:
            m[:J] = lip
        m /= np.linalg.norm(m)
        v = basis.reconstruct(m) if hasattr(basis, "reconstruct") else phi @ m
        v = np.asarray(v, float) * tau / max(float(grid.norm(np.asarray(v, float)[None])[0]), 1e-300)
        pairs.append(Pair(one(v), one(-v), f"records 0; record 0 = +tau v vs -tau v, v the direction attaining the "
                                           f"public {mech.norm} sensitivity"))
        for j in range(3):
            pairs.append(Pair(one(tau * phi[:, j]), one(-tau * phi[:, j]),
                              f"records 0; record 0 = +tau phi_{j + 1} vs -tau phi_{j + 1}"))
        pairs.append(Pair(zeros, one(tau * phi[:, 0]), "records 0 vs record 0 = tau phi_1"))
        pairs.append(Pair(np.tile(tau * phi[:, 1], (n, 1)), one(tau * phi[:, 0], tau * phi[:, 1]),
                          "records tau phi_2 vs record 0 replaced by tau phi_1"))

    if not bernstein and not getattr(spec, "linear", True):
        pairs.insert(0, _beyond_thresholds_pair(spec, v, tau, n, K, mech.norm))

    def fit(dataset):
        with _NoSeedWarning():
            return spec.fit(np.asarray(dataset, float))

    def draw(dataset, size, rng):
        with _NoSeedWarning():
            tree = fp.release(fit(dataset), mech, draws=int(size), random_seed=rng, study=True)
        return np.asarray(tree["posterior"]["coefficients"].values, float).reshape(int(size), -1)

    def release_one(dataset, rng):
        return draw(dataset, 1, rng)[0]

    spec_text = spec_text + f"; {spec.name} summary, J = {spec.n_components} released coefficients"
    noise = noise_claim(mech, spec, lambda d: np.asarray(fit(d).coefficients, float), lambda X: X)
    return Target(name, "mean", float(mech.epsilon), float(mech.delta), pairs, release_one, draw, spec_text,
                  "the released coefficients (chain, draw, basis)", opts, noise=noise)


def _beyond_thresholds_pair(spec, v, tau, n, K, norm) -> Pair:
    """The worst-case pair of a soft-thresholded (ICLP-AR) mean: the other n − 1 records all equal to a curve B
    whose coefficients put the mean beyond the soft thresholds (with the sign of the replaced record's direction)
    on both sides, so that thresholding is a translation and the summaries differ by the full ``2τv/n``; record 0
    is ``+τv`` vs ``−τv`` (v the direction attaining the public sensitivity). When no such B of norm ≤ τ exists
    the coefficients are kept in the order of their thresholds while the norm allows (a partial worst case)."""
    from ..summaries.mean import ar_thresholds

    basis = spec.basis
    J = spec.n_components
    cv = np.asarray(basis.coefficients(np.asarray(v, float)), float)[:J]
    thr = ar_thresholds(spec.eigenvalues, spec.eta, spec.psi)[:J] if hasattr(spec, "eta") else np.zeros(J)
    need = (thr + np.abs(cv) / n) * n / (n - 1) * 1.05  # (n−1)/n B_j − |v_j|τ/n ≥ thr_j, 5 % beyond
    sign = np.where(cv >= 0, 1.0, -1.0)
    b = np.zeros(basis.size)
    budget = (0.999 * tau) ** 2
    for j in np.argsort(need):
        if need[j] ** 2 <= budget:
            b[j] = sign[j] * need[j]
            budget -= need[j] ** 2
    if np.linalg.norm(b) > 0:  # spend what is left of the norm on the same coordinates (further beyond)
        b *= 0.999 * tau / np.linalg.norm(b)
    B = np.asarray(basis.reconstruct(b), float)
    rows = np.tile(B, (n, 1))
    first, second = rows.copy(), rows.copy()
    first[0], second[0] = v, -np.asarray(v, float)
    return Pair(first, second, "records B (mean beyond the soft thresholds); record 0 = +tau v vs -tau v, v the "
                               f"direction attaining the public {norm} sensitivity (worst case of a thresholded mean)")


def noise_claim(mech, spec, centre, coefficients):
    """The :class:`~fdp_ppl.auditing.whitebox.NoiseClaim` of a mechanism releasing a spec (None for a law the
    white-box test does not fit)."""
    from .whitebox import NoiseClaim

    law = mech.law.name
    kind = getattr(mech, "kind", None)
    if law == "laplace" or law == "normal":
        fitted = law
    elif law.startswith("elliptical"):
        fitted = "elliptical" if mech.family == "elliptical" else "elliptical-process"
    else:
        return None
    J = int(spec.n_components)
    lam = np.asarray(getattr(spec, "eigenvalues", np.ones(J)), float)[:J] if mech.norm != "l1" else np.ones(J)
    return NoiseClaim(fitted, mech.norm, lam, float(spec.sensitivity(mech.norm).value), float(mech.epsilon),
                      float(mech.delta), centre, coefficients, kind=kind, nu=getattr(mech, "nu", None),
                      description=f"{mech!r} on {spec.name}")


# ----------------------------------------------------------------------------- KDE
def _kde_target(name, epsilon, delta, options, spec=None):
    import fdp_ppl as fp
    from ..kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec
    from ..kde.baselines import bernstein_kde_spec, frl_kde_spec, kde_bumps
    from ..noise.mechanisms import FRL, ICLP, Bernstein, GaussianMechanism

    if name not in _kde_names():
        raise InputError(f"unknown mechanism {name!r} of family 'kde'", f"choose one of {', '.join(_kde_names())}")
    n, size, h, lo, hi = 8, 24, 0.15, 0.0, 1.0
    opts = dict(options or {})
    if spec is not None:
        raise InputError("the kde family audits its default spec", "audit your own KDE with a release function "
                         "release_fn(observations, rng) and pairs=...")
    approx = _kde_names()[name].approximate
    if name in ("frl", "bernstein"):
        pts = np.linspace(lo, hi, size)
        if name == "frl":
            spec, mech = frl_kde_spec(pts, h, n, M=opts.get("M")), FRL(epsilon)
        else:
            spec, mech = bernstein_kde_spec(pts, h, n, k=int(opts.get("k", 6))), Bernstein(epsilon)

        def fit(obs):
            return spec.fit(kde_bumps(np.asarray(obs, float), pts, h, (lo, hi)))

        def draw(obs, draws, rng):
            with _NoSeedWarning():
                tree = fp.release(fit(obs), mech, draws=int(draws), random_seed=rng, study=True)
            return np.asarray(tree["posterior"]["coefficients"].values, float).reshape(int(draws), -1)

        features = "the released coefficients"
    else:
        grid = CartesianGrid.uniform([(lo, hi)], size)
        if name == "iclp":
            spec, mech = ICLPKDESpec(grid=grid, bandwidth=h, n=n, eta=float(opts.get("eta", 1.25))), ICLP(epsilon)
        else:
            cls = KDESpec if name == "gp" else SobolevKDESpec
            spec, mech = cls(grid=grid, bandwidth=h, n=n), GaussianMechanism(epsilon, delta)

        def fit(obs):
            return spec.fit(np.asarray(obs, float))

        def draw(obs, draws, rng):
            with _NoSeedWarning():
                tree = fp.release(fit(obs), mech, draws=int(draws), random_seed=rng, study=True)
            return np.asarray(tree["posterior"]["density"].values, float).reshape(int(draws), -1)

        features = "the released density on the grid"

    def at(value, moved=None):
        x = np.full(n, float(value))
        if moved is not None:
            x[0] = moved
        return x

    pairs = [Pair(at(lo), at(lo, hi), "observations at 0 vs one moved to 1 (other end of the domain)"),
             Pair(at(lo), at(lo, 0.5), "observations at 0 vs one moved to 0.5 (middle)"),
             Pair(at(0.5), at(0.5, lo), "observations at 0.5 vs one moved to 0"),
             Pair(at(hi, lo), at(hi), "observations at 1, one at 0 vs all at 1")]

    def release_one(obs, rng):
        return draw(obs, 1, rng)[0]

    def centre(obs):
        with _NoSeedWarning():
            return np.asarray(fit(obs).coefficients, float)

    if name in ("frl", "bernstein"):
        noise = noise_claim(mech, spec, centre, lambda X: X)
    else:  # the released density on the grid back to the eigen-coefficients (a public linear map)
        noise = noise_claim(mech, spec, centre, lambda X: np.asarray(
            spec.basis.coefficients(np.asarray(X, float) / spec.release_scale), float).reshape(len(X), -1))
    if noise is not None:  # worst-case pair search: record 0 at x vs at y over the grid nodes
        xs = np.linspace(lo, hi, size)  # the grid nodes (the snapped KDEs and the ICLP attain Δ on node pairs)
        cs = np.array([centre(at(lo, x)) for x in xs])
        gap = noise.norm_of(cs[:, None, :] - cs[None, :, :])
        i, j = np.unravel_index(int(np.argmax(gap)), gap.shape)
        pairs.insert(0, Pair(at(lo, xs[i]), at(lo, xs[j]), f"observations at 0; one at {xs[i]:.4g} vs {xs[j]:.4g} "
                                                            f"(the farthest pair of {xs.size} positions in the "
                                                            f"{noise.norm} norm)"))
    return Target(name, "kde", float(epsilon), float(delta) if approx else 0.0, pairs, release_one, draw,
                  _KDE_SPEC, features, opts, noise=noise)


# ----------------------------------------------------------------------------- SVM (kernel machines)
def _svm_target(name, epsilon, delta, options, spec=None):
    from ..machine import ERMSpec
    import fdp_ppl as fp
    from ..noise.mechanisms import ICLP, GaussianMechanism
    from ..spaces import Gaussian

    if name not in SVM_MECHANISMS:
        raise InputError(f"unknown mechanism {name!r} of family 'svm'", f"choose one of {', '.join(SVM_MECHANISMS)}")
    n = 8
    opts = dict(options or {})
    if spec is not None:
        raise InputError("the machine family audits its default spec", "audit your own kernel machine with a release "
                         "function release_fn((features, labels), rng) and pairs=...")
    spec = ERMSpec(Gaussian(0.2, convention="hall"), lam=0.1, n=n, loss="hinge", domain=[[0.0, 1.0]], grid_size=16,
                   eta=float(opts.get("eta", 2.0)) if name == "iclp" else None)
    mech = GaussianMechanism(epsilon, delta) if name == "gp" else ICLP(epsilon)
    x = np.linspace(0.0, 1.0, n)
    y = np.where(x < 0.5, -1.0, 1.0)

    def flip(i):
        y2 = y.copy()
        y2[i] = -y2[i]
        return (x, y2)

    def moved(i, to):
        x2 = x.copy()
        x2[i] = to
        return (x2, y)

    pairs = [Pair((x, y), flip(0), "points on [0, 1] labelled by x > 0.5; label of the point at 0 flipped"),
             Pair((x, y), flip(n // 2), "the same; label of a middle point flipped"),
             Pair((x, y), moved(0, 1.0), "the same; the point at 0 (label -1) moved to 1"),
             Pair((np.zeros(n), np.ones(n)), (np.zeros(n), np.r_[-1.0, np.ones(n - 1)]),
                  "all points at 0 labelled +1; one label flipped")]

    def draw(data, draws, rng):
        fit = spec.fit(*data)
        with _NoSeedWarning():
            tree = fp.release(fit, mech, draws=int(draws), random_seed=rng, study=True)
        return np.asarray(tree["posterior"]["decision"].values, float).reshape(int(draws), -1)

    def release_one(data, rng):
        return draw(data, 1, rng)[0]

    return Target(name, "machine", float(epsilon), float(delta) if name == "gp" else 0.0, pairs, release_one, draw,
                  _MACHINE_SPEC, "the released decision function on the grid", opts,
                  noise=_machine_noise(spec, mech))


def _machine_noise(spec, mech):
    """The kernel machine's noise claim: GP noise ``σ√λ_j`` on the eigen-coefficients of ``K(grid, grid)``
    (Cameron–Martin Δ) or ICLP ``Δ√λ_j/ε`` on the spec's grid eigenbasis (``‖·‖_{1,C}`` Δ); the released decision
    function goes back to those coefficients through the public basis."""
    from ..machine.release import grid_basis

    if mech.law.name == "normal":
        basis, norm = grid_basis(spec), "cameron-martin"

        def centre(data):
            return np.asarray(basis.coefficients(spec.fit(*data).decision(spec.points)), float)
    else:
        basis, norm = spec.basis, "1,C"

        def centre(data):
            return np.asarray(spec.fit(*data).eigen_coefficients(), float)

    from .whitebox import NoiseClaim

    lam = np.asarray(basis.eigenvalues, float)
    return NoiseClaim("normal" if norm == "cameron-martin" else "laplace", norm, lam,
                      float(spec.sensitivity(norm).value), float(mech.epsilon), float(mech.delta), centre,
                      lambda X: np.asarray(basis.coefficients(np.asarray(X, float)), float).reshape(len(X), -1),
                      description=f"{mech!r} on the kernel machine's grid")


# ----------------------------------------------------------------------------- FPCA
def fpca_issue_design(epsilon: float = 1.0, form: str = "gp-base"):
    """The issue's FPCA design and its 5th-vs-1st neighbouring pair.

    Returns
    -------
    spec : FPCASpec
        30-point grid, Gaussian kernel ``exp(−d²/ρ)`` eigenbasis with ρ = 1, m = 5, k = 1, τ = 1.
    first, second : ndarray, shape (28, 30)
        28 curves along the 5th eigenfunction; the same with one curve replaced by the 1st.
    """
    from ..fpca import FPCASpec
    from ..spaces import Grid, eigenbasis, kernel_from_name

    grid = Grid.uniform(30)
    basis = eigenbasis(kernel_from_name("gaussian", 1.0), grid)
    spec = FPCASpec(grid=grid, m=5, k=1, epsilon=float(epsilon), tau=1.0, basis=basis, form=form)
    phi = np.asarray(basis.eigenfunctions)
    first = np.tile(phi[:, 4], (28, 1))
    second = first.copy()
    second[0] = phi[:, 0]
    return spec, first, second


def frame_features(frames) -> np.ndarray:
    """Upper triangle of the projection ``V Vᵀ`` of each released frame (sign and rotation free).

    Parameters
    ----------
    frames : ndarray, shape (N, m, k)

    Returns
    -------
    ndarray, shape (N, m (m + 1) / 2)
    """
    V = np.asarray(frames, float)
    P = np.einsum("nik,njk->nij", V, V)
    iu = np.triu_indices(V.shape[1])
    return P[:, iu[0], iu[1]]


def _fpca_target(name, epsilon, delta, options, spec=None):
    import fdp_ppl as fp

    name = fpca_name(name)
    if name not in FPCA_MECHANISMS:
        raise InputError(f"unknown mechanism {name!r} of family 'fpca'",
                         f"choose one of {', '.join(FPCA_MECHANISMS)} (FORM/SAMPLER)")
    form, sampler = name.split("/")
    opts = dict(options or {})
    if spec is None:
        spec, d5, d51 = fpca_issue_design(epsilon, form)
        spec_text = _FPCA_SPEC
    else:
        from ..fpca import FPCASpec

        if not isinstance(spec, FPCASpec) or spec.form != form:
            raise InputError(f"mechanism {name!r} needs an FPCASpec with form={form!r}",
                             f"pass spec=FPCASpec(..., form={form!r}) or omit spec for the issue's design")
        spec_text = f"user spec {spec!r}"
    phi = np.asarray(spec.basis_values) * spec.tau
    n = int(opts.get("n", 28))
    if spec.m < 2:
        raise InputError("the FPCA audit needs m >= 2 basis functions", "pass a spec with m >= 2")
    if spec_text != _FPCA_SPEC:
        d5, d51 = np.tile(phi[:, spec.m - 1], (n, 1)), None
        d51 = d5.copy()
        d51[0] = phi[:, 0]

    def along(i, j=None):
        d = np.tile(phi[:, i], (n, 1))
        if j is not None:
            d[0] = phi[:, j]
        return d

    last = spec.m
    pairs = [Pair(d5, d51, f"{n} curves along phi_{last} vs one replaced by phi_1"
                  + (" (the issue's pair)" if spec_text == _FPCA_SPEC else "")),
             Pair(along(0), along(0, last - 1), f"{n} curves along phi_1 vs one replaced by phi_{last}"),
             Pair(along(0), along(0, 1), f"{n} curves along phi_1 vs one replaced by phi_2"),
             Pair(along(1), along(1, 0), f"{n} curves along phi_2 vs one replaced by phi_1")]
    iterations = int(opts.get("iterations", 50))

    def release_one(curves, rng):
        with _NoSeedWarning():
            tree = fp.release(spec.fit(curves), fp.ExponentialMechanism(sampler=sampler, iterations=iterations),
                              draws=1, random_seed=rng, study=True)
        return frame_features(tree["posterior"]["frame"].values.reshape(1, spec.m, spec.k))[0]

    draw = None
    if sampler != "nuts":  # one call draws many frames (a sampler failure fails the whole call: see audit)
        from ..fpca.fpca_plan import DEFAULT_MAX_PROPOSALS, exact_plan

        try:  # frames per call: as many as the public proposal cap of one release allows
            per_frame = int(exact_plan(spec, n, sampler)["proposals"]) * (iterations if sampler == "gibbs" else 1)
            chunk = int(max(1, min(10 * FPCA_CHUNK, DEFAULT_MAX_PROPOSALS // max(per_frame, 1))))
        except (InputError, ValueError, OverflowError):
            chunk = FPCA_CHUNK

        def draw(curves, size, rng):
            fit, out = spec.fit(curves), []
            for start in range(0, int(size), chunk):  # chunks: the samplers cap proposals per call
                todo = min(chunk, int(size) - start)
                with _NoSeedWarning():
                    tree = fp.release(fit, fp.ExponentialMechanism(sampler=sampler, iterations=iterations), draws=todo,
                                      random_seed=rng, study=True)
                out.append(frame_features(tree["posterior"]["frame"].values.reshape(todo, spec.m, spec.k)))
            return np.concatenate(out)

    eps_claim, delta_claim = float(spec.epsilon), 0.0
    try:  # the release states its guarantee (epsilon_guaranteed, delta_guaranteed): that is the claim audited
        with _NoSeedWarning():
            at = fp.release(spec.fit(pairs[0].first), fp.ExponentialMechanism(sampler=sampler, iterations=iterations),
                            draws=1, random_seed=np.random.default_rng(0), study=True).attrs
        e, d = float(at.get("epsilon_guaranteed", np.nan)), float(at.get("delta_guaranteed", np.nan))
        eps_claim = e if np.isfinite(e) else eps_claim
        delta_claim = d if np.isfinite(d) else delta_claim
    except Exception:  # noqa: BLE001  (a refusal or failure is audited as an outcome)
        pass
    return Target(name, "fpca", eps_claim, delta_claim, pairs, release_one, draw, spec_text,
                  "the released subspace: upper triangle of V V^T", opts, default_samples=FPCA_SAMPLES,
                  noise_note="not available: the exponential mechanism is not additive noise (black-box bound only)")


@dataclass(frozen=True)
class AuditHook:
    """What :func:`~fdp_ppl.auditing.core.audit` needs of one release family, named by its registry line
    (``ReleaseEntry.audit``, :data:`fdp_ppl.releasing.families.FAMILIES`) and read on first use: a new family's
    hook lives in its own module of this folder and no table here names it.

    Attributes
    ----------
    build : callable
        ``build(mechanism, epsilon, delta, options, spec) -> Target``: the mechanism's claim, its default public
        spec (or ``spec``) and the candidate pairs; raises :class:`~fdp_ppl.errors.InputError` for an unknown
        mechanism or bad ε, δ.
    mechanisms : tuple of str or callable
        The family's mechanism names (``fp.audit(name, family=...)``, ``fdp-ppl audit --family``), or a function
        returning them (read from another registry).
    default_spec : str
        The default public spec in words (:data:`DEFAULT_SPECS`, every audit's attrs).
    keys : callable
        ``keys(mechanism, spec_given) -> tuple of str or None``: the keys of ``options`` a mechanism reads (None:
        an unknown name).
    approximate : callable
        ``approximate(mechanism) -> bool``: whether the mechanism is (ε, δ)-DP (it needs δ).
    takes_spec : bool
        Whether a caller's ``spec=`` is audited (else the default spec only).
    per_call : tuple of str
        Mechanisms that release one draw per call (every call timed: no ``timing_calls``).
    canonical_name : callable or None
        A name's canonical spelling (``"gp-base"`` -> ``"gp-base/exact"``); None: names as given.
    """

    build: Callable
    mechanisms: Any
    default_spec: str
    keys: Callable
    approximate: Callable
    takes_spec: bool = False
    per_call: tuple[str, ...] = ()
    canonical_name: Callable | None = None

    def canonical(self, name: str) -> str:
        """``name`` in its canonical spelling."""
        return self.canonical_name(name) if self.canonical_name is not None else name

    def names(self) -> tuple[str, ...]:
        """The family's mechanism names."""
        return tuple(self.mechanisms() if callable(self.mechanisms) else self.mechanisms)


def _mean_approximate(mechanism: str) -> bool:
    from ..releasing.registry import MECHANISMS

    return mechanism in MECHANISMS and MECHANISMS[mechanism].approximate


MEAN_AUDIT = AuditHook(_release_target, BY_NAME["mean"].names, _MEAN_SPEC, _mean_keys, _mean_approximate, takes_spec=True)
def _kde_names():
    from ..kde.options import MECHANISMS

    return MECHANISMS


KDE_AUDIT = AuditHook(_kde_target, BY_NAME["kde"].names, _KDE_SPEC,
                      lambda m, spec_given=False: _KDE_KEYS.get(m),
                      lambda m: m in _kde_names() and _kde_names()[m].approximate)
MACHINE_AUDIT = AuditHook(_svm_target, BY_NAME["machine"].names, _MACHINE_SPEC, lambda m, spec_given=False: _SVM_KEYS.get(m),
                          lambda m: m == "gp")
FPCA_AUDIT = AuditHook(_fpca_target, BY_NAME["fpca"].names, _FPCA_SPEC, _fpca_keys, lambda m: False, takes_spec=True,
                       per_call=("gp-base/nuts", "bingham/nuts"), canonical_name=fpca_name)


def _hook_or_none(family: str) -> AuditHook | None:
    entry = BY_NAME.get(family)
    return entry.load("audit") if entry is not None and entry.audit else None


def audit_hook(family: str) -> AuditHook:
    """The :class:`AuditHook` of a family (its registry line's ``audit``).

    Raises
    ------
    InputError
        A family that is not registered, or has no audit.
    """
    hook = _hook_or_none(family)
    if hook is None:
        raise InputError(f"unknown family {family!r}", f"choose one of {', '.join(FAMILIES)}")
    return hook


def build_target(mechanism: str, family: str, epsilon: float, delta: float | None, options=None,
                 spec=None) -> Target:
    """The :class:`Target` of a named mechanism of a family, with its default public spec and pairs.

    Raises
    ------
    InputError
        An unknown family or mechanism, bad ε or δ.
    """
    return audit_hook(family).build(mechanism, epsilon, delta, options, spec)


def mechanisms_of(family: str) -> tuple[str, ...]:
    """Mechanism names of a family (its registry line's ``mechanism_names``, through its audit hook)."""
    return audit_hook(family).names()


def approximate(mechanism: str, family: str) -> bool:
    """Whether a named mechanism is (ε, δ)-DP (it needs δ)."""
    return audit_hook(family).approximate(mechanism)


#: the audited families: the release families with an audit hook, in the registry's order
FAMILIES = tuple(e.family for e in REGISTERED if e.audit)
#: the options each family's audit takes (the one table :func:`~fdp_ppl.auditing.core.audit` checks): a release
#: function is audited on its own pairs and takes no family, spec or options, nor timing_calls (every call is
#: timed); a named mechanism takes no name; a family audits a caller's spec if its hook says so; mechanisms that
#: release one draw per call take no timing_calls
AUDIT_FAMILIES: dict[str, AuditFamily] = {
    "callable": AuditFamily("callable", "an audit of a release function",
                            _EVERY + ("name", "train_fraction", "progressbar")),
    **{name: AuditFamily(name, f"an audit of a {BY_NAME[name].label} mechanism",
                         ("family",) + _EVERY + ("timing_calls", "options")
                         + (("spec",) if audit_hook(name).takes_spec else ()) + ("train_fraction", "progressbar"),
                         per_call=audit_hook(name).per_call) for name in FAMILIES},
}
#: default public specs per family (stated in every audit's attrs)
DEFAULT_SPECS = {name: audit_hook(name).default_spec for name in FAMILIES}


__all__ = ["FAMILIES", "DEFAULT_SPECS", "Pair", "Target", "build_target", "fpca_issue_design", "frame_features",
           "mechanisms_of", "approximate", "AUDIT_OPTIONS", "AUDIT_FAMILIES", "AuditFamily", "option_keys",
           "fpca_name", "noise_claim", "AuditHook", "audit_hook"]
