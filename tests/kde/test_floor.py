"""Densities at the floor: one-pass binning, FFT smoothing and public work cached per public configuration.

DESIGN invariant 2 (the estimate and the noise on the same retained pairs) and the binned estimator's
sensitivity (a record's contribution is a convex combination of kernel sections at bin centres): the fast
paths compute the same estimator (to rounding) and the same noise law; what is cached is public.
"""

from __future__ import annotations

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec
from fdp_ppl.kde import grid as kgrid
from fdp_ppl.kde._binning import clip_to_box, compiled_snap
from fdp_ppl.kde.accumulate import (
    _axis_factor,
    _cells,
    _refinement,
    bin_axes,
    binned_error_bound,
    kde_values_chunked,
    linear_binning,
)


def _per_corner_binning(bins, obs, weights=None):
    """Reference: the searched cell and one bincount per corner (the numpy path before the compiled pass)."""
    obs = np.atleast_2d(obs)
    n, d = obs.shape
    shape = tuple(b.size for b in bins)
    idx, frac = [], []
    for k, b in enumerate(bins):
        x = np.clip(obs[:, k], b[0], b[-1])
        i = np.clip(np.searchsorted(b, x, side="right") - 1, 0, b.size - 2)
        idx.append(i)
        frac.append((x - b[i]) / (b[i + 1] - b[i]))
    out = np.zeros(int(np.prod(shape)))
    for corner in range(2**d):
        flat = np.zeros(n, dtype=np.int64)
        mass = np.ones(n) if weights is None else np.array(weights, dtype=float)
        for k in range(d):
            up = (corner >> k) & 1
            mass = mass * (frac[k] if up else 1.0 - frac[k])
            flat = flat * shape[k] + idx[k] + up
        out += np.bincount(flat, weights=mass, minlength=out.size)
    return out.reshape(shape)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_one_pass_binning_equals_the_per_corner_bincount(rng, d):
    bins = tuple(np.linspace(-1.0, 2.0, m) for m in (301, 77, 9)[:d])
    obs = rng.normal(0.5, 1.0, size=(20001, d))  # some outside the lattice: clamped
    obs[:40] = [b[5] for b in bins]               # on bin centres and the last node
    obs[40:50] = [b[-1] for b in bins]
    w = rng.dirichlet(np.ones(obs.shape[0]))
    for weights in (None, w):
        ref = _per_corner_binning(bins, obs, weights)
        got = linear_binning(bins, obs, weights, chunk=7000)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * ref.max())
        assert got.min() >= 0 and got.sum() == pytest.approx(ref.sum(), rel=1e-12)


def test_uneven_lattice_and_the_numpy_cells(rng):
    """An uneven lattice is binned by the searched path; the numpy cells of an even one (no Numba, d > 2) are
    the searched cells exactly, on the nodes too."""
    bins = (np.sort(np.r_[0.0, rng.uniform(0, 1, 40), 1.0]),)
    obs = rng.uniform(-0.1, 1.1, size=(3001, 1))
    np.testing.assert_allclose(linear_binning(bins, obs), _per_corner_binning(bins, obs), rtol=0, atol=1e-10)
    even = np.linspace(-1.0, 2.0, 97)
    x = np.concatenate([rng.uniform(-1, 2, 5000), even, np.nextafter(even, 3)[:-1], np.nextafter(even, -3)[1:]])
    np.testing.assert_array_equal(_cells(even, x), np.clip(np.searchsorted(even, x, side="right") - 1, 0, 95))


@pytest.mark.parametrize("d", [1, 2])
def test_fft_smoothing_equals_the_kernel_sum(rng, d):
    """On a lattice that refines the grid, the FFT convolution is the direct kernel sum to rounding."""
    axes = tuple(np.linspace(-1.0, 2.0, k) for k in (101, 20)[:d])
    h = np.array([0.05, 0.2])[:d]
    bins = bin_axes(np.array([[-1.0, 2.0]] * d), h, 1e-3, grid_axes=axes)
    assert all(_refinement(a, b) >= 1 for a, b in zip(axes, bins))
    mass = linear_binning(bins, rng.normal(0.5, 0.6, size=(5000, d)))
    out = mass
    for k in range(d):
        out = np.moveaxis(np.tensordot(_axis_factor(axes[k], bins[k], h[k]), out, axes=([1], [k])), 0, k)
    ref = out / ((2 * np.pi) ** (d / 2) * np.prod(h) * 5000)
    got = fp.kde.accumulate.smooth_bin_masses(axes, mass, h, bins, n=5000)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * ref.max())


@pytest.mark.parametrize("K, h", [(200, 0.0168), (3200, 0.0168), (120, 0.3)])
def test_grid_aligned_lattice_keeps_the_error_bound(rng, K, h):
    """Every grid point is a bin centre and the spacing is at most the requested one: the stated bound holds."""
    grid = CartesianGrid.uniform((0.0, 1.0), K)
    spec = KDESpec(grid=grid, bandwidth=h, n=2000, estimator="binned")
    b = spec.bins[0]
    r = _refinement(grid.axes[0], b)
    assert r >= 1
    np.testing.assert_allclose(b[::r], grid.axes[0], rtol=0, atol=1e-12)
    assert binned_error_bound(spec.bins, spec.bandwidths) <= 1e-3 / (np.sqrt(2 * np.pi) * h) * (1 + 1e-12)
    obs = np.clip(rng.beta(2, 5, 2000), 0, 1)
    err = np.abs(spec.fit(obs).values - kde_values_chunked(grid.axes, obs[:, None], spec.bandwidths)).max()
    assert err <= binned_error_bound(spec.bins, spec.bandwidths)


def test_compiled_snap_and_clip_equal_numpy(rng):
    for K in (3, 4, 57, 3200):
        a = np.linspace(-1.0, 2.0, K)
        mids = 0.5 * (a[1:] + a[:-1])  # ties go to the lower node
        x = np.concatenate([rng.uniform(-1, 2, 20000), a, mids, np.nextafter(mids, 3), np.nextafter(mids, -3)])
        i = np.clip(np.searchsorted(a, x, side="left"), 1, K - 1)
        ref = np.where(np.abs(x - a[i - 1]) <= np.abs(x - a[i]), i - 1, i)
        np.testing.assert_array_equal(compiled_snap(a, x), ref)
    obs = rng.normal(size=(1000, 2)) * 2
    lo, hi = np.array([-1.0, -2.0]), np.array([1.0, 2.0])
    clipped, moved = clip_to_box(obs, lo, hi)
    ref = np.clip(obs, lo, hi)
    np.testing.assert_array_equal(clipped, ref)
    assert moved == int(np.sum(np.any(ref != obs, axis=1))) > 0


def test_public_pieces_are_computed_once_per_public_configuration(monkeypatch, rng):
    """A second spec (and release) on the same public configuration reuses the eigenbasis, the exact ICLP
    sensitivity and the calibration; another n or bandwidth does not; the cache is bounded."""
    kgrid.clear_public_cache()
    grid = CartesianGrid.uniform((0.0, 1.0), 64)
    calls = {"l1": 0, "cal": 0}
    real_l1 = kgrid.max_pairwise_l1

    def counting_l1(rows, block=64):
        calls["l1"] += 1
        return real_l1(rows, block)

    monkeypatch.setattr("fdp_ppl.kde.iclp.max_pairwise_l1", counting_l1)
    a = ICLPKDESpec(grid=grid, bandwidth=0.1, n=500)
    b = ICLPKDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 64), bandwidth=0.1, n=500)
    assert a.basis is b.basis and a.sensitivity().value == b.sensitivity().value and calls["l1"] == 1
    c = ICLPKDESpec(grid=grid, bandwidth=0.1, n=600)  # another n: another sensitivity, the same eigenbasis
    assert c.basis is a.basis and calls["l1"] == 2
    assert c.sensitivity().value == pytest.approx(a.sensitivity().value * 500 / 600, rel=1e-12)
    assert KDESpec(grid=grid, bandwidth=0.11, n=500).basis is not KDESpec(grid=grid, bandwidth=0.1, n=500).basis
    with pytest.raises(ValueError):  # shared between specs: read-only
        a.basis.eigenvalues[0] = 0.0

    mech = fp.GaussianMechanism(1.0, 1e-5)
    real = type(mech).calibrate

    def counting_calibrate(self, *args, **kwargs):
        calls["cal"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(mech), "calibrate", counting_calibrate)
    trees = []
    for data in (rng.beta(2, 5, 300), rng.beta(5, 2, 300)):  # other data, the same public configuration
        spec = KDESpec(grid=grid, bandwidth=0.1, n=300, estimator="binned")
        with pytest.warns(Warning):
            trees.append(fp.release(spec.fit(data), mech, random_seed=1, study=True))
    assert calls["cal"] == 1
    assert trees[0].attrs["sigma"] == trees[1].attrs["sigma"]
    assert not np.allclose(trees[0]["posterior"]["density"].values, trees[1]["posterior"]["density"].values)
    for i in range(kgrid.PUBLIC_CACHE_SIZE + 3):
        KDESpec(grid=grid, bandwidth=0.05 + 0.01 * i, n=300)
    assert len(kgrid._PUBLIC) <= kgrid.PUBLIC_CACHE_SIZE
    kgrid.clear_public_cache()


def test_cached_release_has_the_same_law(rng):
    """The same seed gives the same release with the public pieces cached or computed afresh (same law)."""
    grid = CartesianGrid.uniform((0.0, 1.0), 80)
    obs = rng.beta(2, 5, 400)
    mech = fp.GaussianMechanism(1.0, 1e-5)
    out = []
    for clear in (True, False):
        if clear:
            kgrid.clear_public_cache()
        spec = KDESpec(grid=grid, bandwidth=0.08, n=400, estimator="binned")
        with pytest.warns(Warning):
            out.append(fp.release(spec.fit(obs), mech, draws=3, random_seed=7, study=True))
    np.testing.assert_array_equal(out[0]["posterior"]["density"].values, out[1]["posterior"]["density"].values)
    np.testing.assert_array_equal(out[0]["constant_data"]["noise_scale"].values,
                                  out[1]["constant_data"]["noise_scale"].values)


@pytest.mark.parametrize("d", [1, 2])
def test_density_tree_from_the_cached_layout_is_the_public_constructors_tree(rng, d):
    """A density release assembled from its cached layout (:class:`~fdp_ppl.releasing.schema.TreeLayout`) is the
    tree xarray's public constructors build, and no release can change another or the layout: each owns its
    density and attrs; the public constant arrays are read-only."""
    import xarray as xr

    from fdp_ppl.kde.release import _layout
    from fdp_ppl.releasing.schema import CONSTANT_DATA, POSTERIOR

    grid = CartesianGrid.uniform([(0.0, 1.0), (-1.0, 1.0)][:d], [30, 20][:d])
    spec = KDESpec(grid=grid, bandwidth=0.15, n=200, estimator="binned")
    mech = fp.GaussianMechanism(1.0, 1e-5)
    fit = spec.fit(rng.uniform(0.0, 1.0, size=(200, d)))
    with pytest.warns(Warning):
        a, b = (fp.release(fit, mech, draws=2, chains=2, random_seed=s, study=True) for s in (1, 2))
    layout = _layout(spec, fp.plan(spec, mech, draws=2, chains=2, seeded=True, study=True).state[1], mech, 2, 2)
    assert layout._ok
    arrays = {POSTERIOR: {"density": a[POSTERIOR]["density"].values}}
    fast, public = layout.tree(arrays), layout._public_tree(arrays)
    xr.testing.assert_identical(fast, public)  # the attrs a release adds (_record) did not reach the layout
    assert fast.groups == public.groups == a.groups and fast[POSTERIOR].parent is fast
    xr.testing.assert_identical(a[CONSTANT_DATA], public[CONSTANT_DATA])
    assert not np.shares_memory(a[POSTERIOR]["density"].values, b[POSTERIOR]["density"].values)
    const = a[CONSTANT_DATA]["noise_scale"].values
    assert not const.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        const[...] = -1.0
    a[POSTERIOR]["density"].attrs["long_name"] = "changed"
    a[CONSTANT_DATA]["noise_scale"].attrs["description"] = "changed"
    for tree in (b, layout.tree({POSTERIOR: {"density": b[POSTERIOR]["density"].values}})):
        assert tree[POSTERIOR]["density"].attrs["long_name"] == "private density estimate"
        assert tree[CONSTANT_DATA]["noise_scale"].attrs["description"] != "changed"


@pytest.mark.parametrize("cls", ["binned", "iclp"])
@pytest.mark.parametrize("d", [1, 2])
def test_records_outside_the_box_count_as_clipped(rng, cls, d):
    """The binned and snapped fits clamp records to the box in their one pass: the same estimate as the records
    clipped first, and the same count of clipped records (data holder only)."""
    grid = CartesianGrid.uniform([(0.0, 1.0), (-1.0, 1.0)][:d], [41, 33][:d])
    obs = rng.normal(0.4, 0.6, size=(3000, d))
    lo, hi = grid.domain[:, 0], grid.domain[:, 1]
    make = ((lambda: KDESpec(grid=grid, bandwidth=0.1, n=3000, estimator="binned")) if cls == "binned"
            else (lambda: ICLPKDESpec(grid=grid, bandwidth=0.1, n=3000)))
    spec = make()
    raw, clipped = spec.fit(obs), spec.fit(np.clip(obs, lo, hi))
    assert raw.n_clipped == int(np.sum(np.any((obs < lo) | (obs > hi), axis=1))) > 0 and clipped.n_clipped == 0
    np.testing.assert_allclose(raw.coefficients, clipped.coefficients, rtol=0,
                               atol=1e-12 * np.abs(clipped.coefficients).max())


@pytest.mark.parametrize("cls", ["binned", "iclp"])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_one_pass_fits_refuse_records_that_are_not_finite(cls, d, bad):
    """The binned and snapped fits check finiteness in the pass that counts the records outside the box: a NaN or
    an infinity on any axis (inside or outside the box otherwise) is refused, as by the exact fit."""
    grid = CartesianGrid.uniform([(0.0, 1.0), (-1.0, 1.0)][:d], [21, 17][:d])
    spec = (KDESpec(grid=grid, bandwidth=0.1, n=50, estimator="binned") if cls == "binned"
            else ICLPKDESpec(grid=grid, bandwidth=0.1, n=50))
    obs = np.random.default_rng(3).uniform(-0.5, 1.5, size=(50, d))
    for row, axis in ((0, 0), (49, d - 1)):
        x = obs.copy()
        x[row, axis] = bad
        with pytest.raises(fp.errors.InputError, match="finite"):
            spec.fit(x)
