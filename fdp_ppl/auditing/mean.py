"""The mean family's audit hook: the mechanisms of :data:`fdp_ppl.releasing.registry.MECHANISMS` (``fdp-ppl release
--mechanism NAME``) on a default public spec or the caller's, with the candidate neighbouring pairs (the direction
attaining the public sensitivity, eigenfunctions at ±τ, and the worst case of a soft-thresholded mean).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..releasing.families import BY_NAME
from .hooks import AuditHook, NoSeedWarning, Pair, Target, noise_claim

_MEAN_SPEC = ("16-point uniform grid on [0, 1], Matern(rho=0.2, nu=1.5) eigenbasis, tau = 1 (L2; Bernstein: "
              "sup-norm tau = 1 and k = 6), n = 8 curves, nu = 5 for the t laws, summary defaults of the registry")


def _mean_keys(mechanism: str, spec_given: bool = False) -> tuple[str, ...] | None:
    from ..releasing.registry import MECHANISMS

    entry = MECHANISMS.get(mechanism)
    if entry is None:
        return None
    return tuple(entry.options) + (() if spec_given else tuple(entry.summary_options))


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
        with NoSeedWarning():
            return spec.fit(np.asarray(dataset, float))

    def draw(dataset, size, rng):
        with NoSeedWarning():
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


def _mean_approximate(mechanism: str) -> bool:
    from ..releasing.registry import MECHANISMS

    return mechanism in MECHANISMS and MECHANISMS[mechanism].approximate


MEAN_AUDIT = AuditHook(_release_target, BY_NAME["mean"].names, _MEAN_SPEC, _mean_keys, _mean_approximate, takes_spec=True)
