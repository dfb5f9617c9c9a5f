"""The density family's audit hook (``fdp-ppl kde``): its mechanisms on a default public spec (domain [0, 1], 24-point
grid), with observations at the ends and the middle of the domain and the farthest pair of positions in the noise's
norm as candidate neighbours.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..releasing.families import BY_NAME
from .hooks import AuditHook, NoSeedWarning, Pair, Target, noise_claim

#: keys of ``options`` the kde mechanisms read
_KDE_KEYS = {"gp": (), "sobolev": (), "iclp": ("eta",), "frl": ("M",), "bernstein": ("k",)}
_KDE_SPEC = ("domain [0, 1], 24-point grid, bandwidth h = 0.15, n = 8 observations (iclp: eta = 1.25; frl: default "
             "M; bernstein: k = 6)")


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
            with NoSeedWarning():
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
            with NoSeedWarning():
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
        with NoSeedWarning():
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


def _kde_names():
    from ..kde.options import MECHANISMS

    return MECHANISMS


KDE_AUDIT = AuditHook(_kde_target, BY_NAME["kde"].names, _KDE_SPEC,
                      lambda m, spec_given=False: _KDE_KEYS.get(m),
                      lambda m: m in _kde_names() and _kde_names()[m].approximate)
