"""The Nyström kernel machine with a smooth loss does no subnormal arithmetic on the records (DESIGN invariant 9).

Its solver iterates on the r feature weights ``w`` (flushed below ``TINY · κ/λ``) and forms the n margins ``Z w`` and
the gradient ``Zᵀ ℓ'`` on every step without flushing them. That is safe when every product of two nonzero factors is
normal: the features are flushed below ``TINY · κ`` and ``w`` below ``TINY · κ/λ``, so each product is at least
``2^-800 κ²/λ``, and a sum of such products is 0 or normal. Checked on records built to reach the slow path (subnormal
coordinates, records at a corner far from most landmarks, a bandwidth whose raw kernel values are subnormal): on every
solver step, the smallest nonzero feature times the smallest nonzero weight (and loss derivative) is normal, and no
margin, loss derivative, gradient, weight, feature or decision value is subnormal. (Without the distance cap and
flush of the kernel sections the product check fails on these records; the margins cannot reach the loss's clamp at
this λ, so the flushes of ``w`` and ``ℓ'`` are defence in depth here.)
"""

from __future__ import annotations

import numpy as np
import pytest

from fdp_ppl.machine import ERMSpec, solvers
from fdp_ppl.spaces import Gaussian

TINY_NORMAL = np.finfo(float).tiny


def _subnormal(a) -> int:
    a = np.abs(np.asarray(a, dtype=float))
    return int(np.sum((a > 0) & (a < TINY_NORMAL)))


def _min_nonzero(a) -> float:
    a = np.abs(np.asarray(a, dtype=float))
    return float(a[a > 0].min()) if np.any(a > 0) else np.inf


@pytest.fixture(scope="module")
def adversarial():
    n, h = 300, 0.02
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (n, 2))
    X[:75] = 5e-324                      # subnormal coordinates
    X[75:150] = 1.0                      # a corner: far from most landmarks
    y = np.where(X[:, 0] + 0.1 * rng.normal(size=n) > 0.5, 1.0, -1.0)
    spec = ERMSpec(Gaussian(h, convention="hall"), lam=0.01, n=n, domain=[[0, 1], [0, 1]], approximation="nystroem",
                   loss="logistic", solver_slack=1e-2, landmarks=12, grid_size=16)
    return spec, X, y


def test_nystroem_smooth_solver_has_no_subnormal_intermediate(adversarial, monkeypatch):
    spec, X, y = adversarial
    land = spec.landmark_points()
    d2 = ((X[:, None, :] - land[None, :, :]) ** 2).sum(-1)
    assert _subnormal(np.exp(-d2 / (2 * 0.02**2))) > 0   # the unprotected kernel would take the slow path
    steps = []
    real = solvers._features_gradient

    def checked(Z, w, yy, loss):
        g = Z @ w
        terms = solvers._gradient_terms(loss, g, yy)
        out = real(Z, w, yy, loss)
        steps.append({"w": _subnormal(w), "margins": _subnormal(g), "terms": _subnormal(terms),
                      "grad": _subnormal(out),
                      "products": min(_min_nonzero(Z) * _min_nonzero(w), _min_nonzero(Z) * _min_nonzero(terms))})
        return out
    monkeypatch.setattr(solvers, "_features_gradient", checked)
    fit = spec.fit(X, y)
    assert len(steps) == spec.solver_iterations + 1   # every step (and the certificate's gradient) was seen
    assert all(s["w"] == s["margins"] == s["terms"] == s["grad"] == 0 for s in steps)
    assert min(s["products"] for s in steps) >= TINY_NORMAL
    nmap = spec.nystroem_map()
    Xc = np.clip(X, 0.0, 1.0)
    assert _subnormal(nmap.features(Xc)) == 0
    assert _min_nonzero(nmap.sections(Xc)) * _min_nonzero(nmap.projection) >= TINY_NORMAL
    assert _subnormal(fit.coefficients) == 0 and _subnormal(fit.decision(spec.points)) == 0
