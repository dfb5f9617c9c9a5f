"""The kernel-machine family's audit hook (``fdp-ppl machine``): hinge-loss machines on a default public spec, with
label flips and a moved point as candidate neighbours, and the noise claim on the machine's grid for the white-box test.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..releasing.families import BY_NAME
from .._names import MACHINE_MECHANISMS as SVM_MECHANISMS
from .hooks import AuditHook, NoSeedWarning, Pair, Target

#: keys of ``options`` the machine mechanisms read
_SVM_KEYS = {"gp": (), "iclp": ("eta",)}
_MACHINE_SPEC = ("hinge loss, Gaussian kernel (Hall convention) h = 0.2, lambda = 0.1, domain [0, 1], 16-point grid, "
                 "n = 8 labelled points (iclp: eta = 2)")


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
        with NoSeedWarning():
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


MACHINE_AUDIT = AuditHook(_svm_target, BY_NAME["machine"].names, _MACHINE_SPEC, lambda m, spec_given=False: _SVM_KEYS.get(m),
                          lambda m: m == "gp")
