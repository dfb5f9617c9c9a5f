"""The compiled Normal–Laplace kernels (``fdp_ppl.noise.laws._normal_laplace``) against the numpy path they replace.

What is checked
---------------
* ``Laplace.convolved_logp`` and ``Laplace.centre_posterior_draws`` with a Normal prior (per-row and shared-row
  parameters) give, from the same seed, the numpy path's values over twelve decades of ``x``, ``g`` and ``b``:
  the kernels do the same operations in the same order on the same uniforms, so the values agree to the rounding
  of the C library's ``exp``/``log`` against numpy's (equal where numpy calls the C library, as on x86-64 without
  AVX-512): a relative 1e-12 allows about 30 roundings amplified by a condition number of 100 (the arguments of
  the logs and of ``ndtri_exp`` are well away from their singular points here). A wrong law fails the
  distributional tests of ``tests/inference/test_exact.py``, which run on the kernels (DESIGN: exact draws).
"""

from __future__ import annotations

import numpy as np
import pytest

from fdp_ppl.noise.laws import Laplace, Normal
from fdp_ppl.noise.laws import _normal_laplace as nl

pytestmark = pytest.mark.skipif(not nl.HAVE_KERNELS, reason="numba or scipy's cython_special functions missing")

L = Laplace()


def _wide(rng, shape):
    n = int(np.prod(shape))
    x = rng.standard_normal(n) * 10 ** rng.uniform(-3, 3, n)
    g = 10 ** rng.uniform(-4, 3, n)
    b = 10 ** rng.uniform(-3, 2, n)
    return x.reshape(shape), g.reshape(shape), b.reshape(shape)


def _both(monkeypatch, fn):
    """``fn()`` with the kernels, then with the numpy path."""
    got = fn()
    monkeypatch.setattr(nl, "HAVE_KERNELS", False)
    ref = fn()
    monkeypatch.setattr(nl, "HAVE_KERNELS", True)
    return got, ref


def test_convolved_logp_kernel_equals_numpy_path(monkeypatch):
    x, g, b = _wide(np.random.default_rng(0), (300, 400))
    got, ref = _both(monkeypatch, lambda: L.convolved_logp(x, g, b))
    assert got.shape == ref.shape == x.shape and np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    # broadcast parameters (the pointwise log-likelihood's per-coefficient scale) and a 1-d call
    got, ref = _both(monkeypatch, lambda: L.convolved_logp(x, g, b[0]))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    got, ref = _both(monkeypatch, lambda: L.convolved_logp(x[0], g[0], b[0]))
    assert got.shape == (400,)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shared", [False, True])
def test_normal_prior_posterior_draws_kernel_equal_numpy_path(monkeypatch, shared):
    rng = np.random.default_rng(1)
    y, p, b = _wide(rng, (300, 400))      # 120 000 elements: two blocks of the numpy path
    m = rng.standard_normal((300, 400))
    if shared:   # one posterior for every row (fixed prior): stride-0 rows
        y, m, p = (np.broadcast_to(a[0], a.shape) for a in (y, m, p))
    got, ref = _both(monkeypatch, lambda: L.centre_posterior_draws(y, b[0], Normal(), m, p, np.random.default_rng(5)))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(ref))))


def test_gaussian_posterior_and_mixing_kernels_equal_numpy_path(monkeypatch):
    """The conjugate Normal draw and the mixing scales ``E | ξ`` (square roots and divisions only: equal to
    rounding), per-row and broadcast parameters, ``ξ = 0`` included."""
    rng = np.random.default_rng(2)
    y, g, s = _wide(rng, (300, 400))
    m = np.broadcast_to(rng.standard_normal(400), y.shape)
    got, ref = _both(monkeypatch, lambda: Normal().centre_posterior_draws(y, s, Normal(), m, g[0],
                                                                         np.random.default_rng(6)))
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=0)
    y[0, :10] = 0.0
    got, ref = _both(monkeypatch, lambda: L.mixing_conditional_draws(y, s[0], np.random.default_rng(7)))
    assert got.shape == y.shape and np.all(np.isfinite(got)) and np.all(got >= 0)
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=0)


def _far(rng, shape):
    """Elements where one half of the convolution dominates: ``g`` down to ``1e-20 |x|`` (the population target's
    sampling sd of the high coefficients), with the near-tie ``|x| ≈ g²/b`` and ``x = 0`` mixed in."""
    n = int(np.prod(shape))
    x = rng.standard_normal(n) * 10 ** rng.uniform(-8, 1, n)
    g = np.abs(x) * 10 ** rng.uniform(-20, 1, n) + 1e-30
    b = 10 ** rng.uniform(-7, 0, n)
    x[::7] = rng.choice([-1.0, 1.0], x[::7].size) * g[::7] ** 2 / b[::7] * rng.uniform(0.5, 1.5, x[::7].size)
    x[::11] = 0.0
    return x.reshape(shape), g.reshape(shape), b.reshape(shape)


def test_one_dominant_half_gives_the_same_bits():
    """Where one half of the Normal–Laplace convolution dominates, the kernels skip the other half's ``erfcx``:
    the log-density equals the numpy path's, and the fused draw equals, bit for bit, the unfused kernels (every
    term computed) on the same uniforms, a uniform of 0 (the one value below a weight of e^-40) included."""
    rng = np.random.default_rng(8)
    x, g, b = _far(rng, (200, 300))
    got = np.empty(x.shape)
    nl.convolved_logp(x, g, b, got)
    h1, h2, _, _ = L._normal_terms(x, g, b)
    ref = -np.log(4 * b) + np.logaddexp(h1, h2)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    u1, u2, m = rng.random(x.shape), rng.random(x.shape), rng.standard_normal(x.shape)
    u1[:, ::5] = 0.0
    fused, pieces = np.empty(x.shape), np.empty(x.shape)
    nl.posterior_draws(u1, u2, x, m, g, b, fused)
    terms = [np.empty(x.shape) for _ in range(4)]
    nl.posterior_terms(x, g, b, *terms)
    nl.posterior_pieces(u1, u2, *terms, m, g, pieces)
    assert np.mean(terms[0] == 1.0) > 0.2 and np.mean(terms[0] < 1e-17) > 0.2   # both shortcuts are exercised
    np.testing.assert_array_equal(fused, pieces)


@pytest.mark.parametrize("make", [_wide, _far])
def test_population_posterior_draws_kernel_equals_numpy_path(monkeypatch, make):
    """``Laplace.population_posterior_draws`` (``v | y``, ``ξ = y − v``, ``θ | v``, ``E | ξ`` in one compiled pass
    over blocks) equals its numpy path on the same stream: ``θ``, ``ξ`` and ``E``, with per-row sampling sds and a
    centre and prior sd shared by every row (stride 0, as the population target passes them), 120 000 elements
    (two blocks), dominant halves included (``_far``)."""
    rng = np.random.default_rng(9)
    y, g, b = make(rng, (300, 400))
    s = g * 10 ** rng.uniform(-3, 1, g.shape)
    m, g = (np.broadcast_to(a[0], a.shape) for a in (rng.standard_normal(y.shape), g))
    got, ref = _both(monkeypatch, lambda: L.population_posterior_draws(y[0], b[0], m, g, s, np.random.default_rng(3)))
    for a, r in zip(got, ref):
        assert a.shape == y.shape and np.all(np.isfinite(a))
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(r))))
    assert np.all(got[2] >= 0)


def test_population_posterior_draws_follow_the_stepwise_law():
    """The fused draws follow the law of the steps one at a time (``_ProductLaw.population_posterior_draws``: ``v | y``
    by ``centre_posterior_draws``, ``θ | v`` conjugate, ``E | ξ`` by ``mixing_conditional_draws``): two-sample
    Kolmogorov–Smirnov per coefficient and output, 20 000 draws each, four coefficients from a likelihood-dominated
    one to a prior-dominated one. Twelve tests at a Bonferroni level of 1e-3 in all: the statistic may reach about
    0.023 (2.3·√(2/n)); leaving out the sampling error in ``v``'s prior sd moves it to 0.05–0.3."""
    from scipy.stats import ks_2samp

    from fdp_ppl.noise.laws.product import _ProductLaw

    n = 20_000
    y, b = np.array([1.5, -0.4, 3.0, 0.2]), np.array([0.3, 1.0, 0.5, 2.0])
    g, s = np.array([2.0, 0.5, 0.05, 1e-3]), np.array([0.5, 0.2, 0.05, 1e-3])
    m = np.array([0.0, 0.3, -0.2, 0.1])
    args = (y, b, np.broadcast_to(m, (n, 4)), np.broadcast_to(g, (n, 4)), np.broadcast_to(s, (n, 4)))
    fused = L.population_posterior_draws(*args, np.random.default_rng(11))
    steps = _ProductLaw.population_posterior_draws(L, *args, np.random.default_rng(12))
    p = [ks_2samp(a[:, j], r[:, j]).pvalue for a, r in zip(fused, steps) for j in range(4)]
    assert min(p) > 1e-3 / len(p), p
