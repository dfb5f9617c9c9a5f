"""DESIGN invariant 12: the product eigenbasis computes only the retained pairs, and the exact ℓ¹ diameter is compiled.

The calibration is pinned against the dense path (``np.linalg.eigh`` of the same matrix, substituted for the
package's solver): same retained pairs, eigenvalues, eigenfunctions, noise scales and sensitivities.
"""

from __future__ import annotations

import numpy as np
import pytest

import fdp_ppl.spaces.tensor as st
from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec
from fdp_ppl.kde._l1 import l1_diameter
from fdp_ppl.kde.grid import ProductEigenbasis, clear_public_cache, max_pairwise_l1


def _dense_pairs(kernel, t, w, rel_tol, **_):
    """Reference: every eigenpair of W^½ G W^½ by np.linalg.eigh, then the retained ones (and the positive trace)."""
    sw = np.sqrt(w)
    lam, u = np.linalg.eigh(sw[:, None] * kernel.gram(t) * sw[None, :])
    lam, u = lam[::-1], u[:, ::-1]
    keep = lam > rel_tol * lam[0]
    return lam[keep], u[:, keep], int((~keep).sum()), "dense-reference", float(np.clip(lam, 0, None).sum())


def _dense(monkeypatch, build):
    """Build with the tensor basis' 1-D solver replaced by the dense reference (the replacement must take)."""
    clear_public_cache()  # specs share eigenbases per public configuration: build this one afresh, dense
    with monkeypatch.context() as mp:
        mp.setattr(st, "retained_eigenpairs", _dense_pairs)
        out = build()
    clear_public_cache()  # and keep the dense one out of later specs
    basis = getattr(out, "basis", out)
    assert set(basis.axis_methods) == {"dense-reference"}
    return out


def _same_basis(fast, ref):
    assert fast.index.size == ref.index.size and np.array_equal(fast.index, ref.index)
    lam, lam_ref = fast.eigenvalues, ref.eigenvalues
    assert np.max(np.abs(lam - lam_ref)) <= 1e-10 * lam_ref[0]
    big = lam_ref > 1e-6 * lam_ref[0]                       # where rounding of either solver is below 1e-10
    assert np.max(np.abs(lam[big] / lam_ref[big] - 1)) <= 1e-10
    for f, g, lv in zip(fast.axis_functions, ref.axis_functions, ref.axis_values):
        sep = np.r_[np.inf, -np.diff(lv)] / lv[0]            # well-separated pairs: vectors defined to rounding
        ok = (sep > 1e-6) & (np.r_[-np.diff(lv), np.inf] / lv[0] > 1e-6) & (lv > 1e-6 * lv[0])
        assert ok.sum() >= 10
        assert np.max(np.abs(f[:, ok] - g[:, ok])) <= 1e-7 * np.max(np.abs(g[:, ok]))


@pytest.mark.parametrize("size", [800, 801])   # even and odd: the mirror split has a middle node when odd
def test_product_eigenbasis_retained_pairs_equal_the_dense_path(monkeypatch, size):
    grid = CartesianGrid.uniform((-5.0, 5.0), size)
    fast = ProductEigenbasis(grid, [0.3])
    assert fast.axis_methods == ["lanczos-fft"]             # the fast path really ran
    ref = _dense(monkeypatch, lambda: ProductEigenbasis(grid, [0.3]))
    _same_basis(fast, ref)
    # GP KDE: noise scales sqrt(lambda_j) of the mechanism and the (RKHS) sensitivity are unchanged
    spec = KDESpec(grid=grid, bandwidth=0.3, n=1000)
    spec_ref = _dense(monkeypatch, lambda: KDESpec(grid=grid, bandwidth=0.3, n=1000))
    np.testing.assert_allclose(np.sqrt(spec.basis.eigenvalues), np.sqrt(spec_ref.basis.eigenvalues), rtol=0,
                               atol=1e-10 * np.sqrt(spec_ref.basis.eigenvalues[0]))
    assert spec.sensitivity().value == spec_ref.sensitivity().value


def test_iclp_kde_sensitivity_equals_the_dense_path_1d_and_2d(monkeypatch):
    for grid, h in [(CartesianGrid.uniform((-5.0, 5.0), 800), 0.3),
                    (CartesianGrid.uniform([(-3.0, 3.0), (-3.0, 3.0)], [30, 30]), 0.5)]:
        spec = ICLPKDESpec(grid=grid, bandwidth=h, n=500, kernel="gaussian")
        ref = _dense(monkeypatch, lambda g=grid, b=h: ICLPKDESpec(grid=g, bandwidth=b, n=500, kernel="gaussian"))
        _same_basis(spec.basis, ref.basis)
        d_fast, d_ref = spec.sensitivity().value, ref.sensitivity().value
        assert abs(d_fast / d_ref - 1) <= 1e-10


def _unit_l1(z):
    return z / np.abs(z).sum(1, keepdims=True)


def _brute(x):
    return float(np.abs(x[:, None, :] - x[None, :, :]).sum(-1).max())


@pytest.mark.parametrize("case", ["normal", "cauchy", "ties", "equal", "single", "antipodal", "shell", "binary"])
def test_max_pairwise_l1_is_the_brute_force_maximum(case):
    rng = np.random.default_rng(7)
    x = {"normal": lambda: rng.normal(size=(301, 17)),
         "cauchy": lambda: rng.standard_cauchy(size=(200, 5)),
         "ties": lambda: np.repeat(rng.normal(size=(20, 6)), 7, axis=0)[rng.permutation(140)],
         "equal": lambda: np.full((64, 9), 3.25),
         "single": lambda: rng.normal(size=(1, 4)),
         # the winning pair is x, -x for one x well inside the cloud's norm range
         "antipodal": lambda: np.vstack([rng.uniform(-1, 1, size=(150, 8)) * 0.4, [np.full(8, 0.5)],
                                         [np.full(8, -0.5)]])[rng.permutation(152)],
         # every row at the same distance from the centre: bounds cannot separate them
         "shell": lambda: _unit_l1(rng.normal(size=(250, 12))),
         "binary": lambda: rng.integers(0, 2, size=(180, 10)).astype(float)}[case]()
    got = max_pairwise_l1(x)
    want = _brute(x) if x.shape[0] > 1 else 0.0
    assert got == pytest.approx(want, rel=1e-12, abs=0.0)


def test_max_pairwise_l1_on_kde_rows_and_inputs_unchanged():
    spec = ICLPKDESpec(grid=CartesianGrid.uniform((-5.0, 5.0), 400), bandwidth=0.2, n=1000)
    rows = spec._node_rows()
    before = rows.copy()
    assert l1_diameter(rows) == pytest.approx(_brute(rows), rel=1e-12)
    assert np.array_equal(rows, before)


def test_own_kernel_check_products_equal_the_gram_matrix():
    from fdp_ppl.inference.plan import _kernel_times
    from fdp_ppl.spaces import Matern

    k = Matern(rho=0.1, nu=1.5)
    x = np.random.default_rng(3).normal(size=(700, 3))
    for t in (np.linspace(0.0, 1.0, 700), np.sort(np.random.default_rng(4).uniform(0, 1, 700))):
        got = _kernel_times(k, t, x)
        want = k.gram(t) @ x
        assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))
