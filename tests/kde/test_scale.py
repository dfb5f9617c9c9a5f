"""KDE in bounded memory: chunked exact sums, the binned estimator and its sensitivity, size refusals."""

import numpy as np
import pytest

from fdp_ppl.errors import InputError
from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec, cameron_martin_difference
import fdp_ppl as fp
from fdp_ppl.kde.accumulate import (
    bin_axes,
    binned_error_bound,
    binned_kde_values,
    check_kde_size,
    kde_chunk_size,
    kde_values_chunked,
    linear_binning,
)
from fdp_ppl.kde.grid import gaussian_kernel_1d
from fdp_ppl.noise.mechanisms.gaussian import GaussianMechanism


def dense_kde(axes, obs, h, weights=None):
    """The one-shot (K × n) sum, as the package computed it before chunking."""
    obs = np.atleast_2d(obs.T).T if obs.ndim == 1 else obs
    n, d = obs.shape
    f = [gaussian_kernel_1d(axes[k], obs[:, k], h[k]) for k in range(d)]
    if weights is not None:
        f[0] = f[0] * weights[None, :]
    expr = ",".join(f"{'ab'[k]}z" for k in range(d)) + "->" + "ab"[:d]
    norm = (2 * np.pi) ** (d / 2) * np.prod(h) * (n if weights is None else 1)
    return np.einsum(expr, *f) / norm


@pytest.mark.parametrize("d", [1, 2])
def test_chunked_equals_dense_to_rounding(rng, d):
    axes = tuple(np.linspace(-1, 2, k) for k in (57, 43)[:d])
    obs = rng.normal(0.5, 0.4, size=(1003, d))
    h = np.array([0.11, 0.17])[:d]
    w = rng.dirichlet(np.ones(1003))
    for weights in (None, w):
        ref = dense_kde(axes, obs, h, weights)
        for chunk in (1, 7, 250, 5000):
            got = kde_values_chunked(axes, obs, h, weights, chunk=chunk)
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14 * ref.max())


def test_chunk_size_follows_the_public_budget():
    assert kde_chunk_size((200,), 200 * 16 * 10) == 10
    assert kde_chunk_size((3200,), 64 * 2**20) * 3200 * 16 <= 64 * 2**20
    assert kde_chunk_size((10**9,), 1.0) == 1


@pytest.mark.parametrize("d", [1, 2])
def test_binned_within_stated_error(rng, d):
    grid = CartesianGrid.uniform([(0.0, 1.0)] * d, [80, 60][:d])
    obs = np.clip(rng.beta(2, 3, size=(4000, d)), 0, 1)
    h = np.array([0.05, 0.08])[:d]
    exact = kde_values_chunked(grid.axes, obs, h)
    for rel in (1e-2, 1e-3):
        bins = bin_axes(grid.domain, h, rel)
        bound = binned_error_bound(bins, h)
        fmax = 1 / ((2 * np.pi) ** (d / 2) * np.prod(h))
        assert bound <= rel * fmax * (1 + 1e-12)
        err = np.abs(binned_kde_values(grid.axes, obs, h, bins=bins) - exact).max()
        assert err <= bound
        assert err >= 1e-3 * bound  # the estimators do differ: the bound is not vacuous nor the test trivial


def test_linear_binning_is_a_convex_combination(rng):
    bins = (np.linspace(0, 1, 11), np.linspace(-1, 1, 5))
    obs = rng.uniform([-0.2, -1.5], [1.2, 1.5], size=(500, 2))
    mass = linear_binning(bins, obs)
    assert mass.min() >= 0 and mass.sum() == pytest.approx(500)
    one = linear_binning(bins, np.array([[0.33, 0.2]]))
    assert np.count_nonzero(one) == 4 and one.sum() == pytest.approx(1)
    # the first moment is preserved inside the lattice (linear binning)
    inside = np.array([[0.33, 0.2], [0.71, -0.42]])
    m = linear_binning(bins, inside)
    assert np.einsum("ij,i->", m, bins[0]) == pytest.approx(inside[:, 0].sum())


def brute_force(spec, cand):
    a = np.repeat(cand, len(cand), axis=0)
    b = np.tile(cand, (len(cand), 1))
    return cameron_martin_difference(spec, a, b).max()


@pytest.mark.parametrize("cls", [KDESpec, SobolevKDESpec])
def test_binned_sensitivity_on_brute_force_neighbours(cls):
    """Replacing one record moves the binned estimate by at most the exact estimator's Δ (both noises)."""
    grid = CartesianGrid.uniform((0.0, 1.0), 120)
    exact = cls(grid=grid, bandwidth=0.08, n=50)
    binned = cls(grid=grid, bandwidth=0.08, n=50, estimator="binned", bin_rel_error=0.05)  # coarse bins
    assert binned.sensitivity().value == exact.sensitivity().value
    mids = 0.5 * (binned.bins[0][1:] + binned.bins[0][:-1])  # records between bin centres (worst mixing)
    cand = np.concatenate([np.linspace(0, 1, 41), mids[::3], [0.0, 1.0]])[:, None]
    worst = brute_force(binned, cand)
    delta = binned.sensitivity().value
    assert worst <= delta * (1 + 1e-9)
    if cls is KDESpec:
        assert worst >= delta * (1 - 1e-3)  # far-apart records on bin centres still attain the Gaussian bound
    # a binned record's contribution really differs from the exact bump
    assert np.abs(binned.record_values(mids[4:5]) - exact.record_values(mids[4:5])).max() > 1e-6


def test_binned_sensitivity_2d():
    grid = CartesianGrid.uniform([(0.0, 1.0), (0.0, 1.0)], [25, 30])
    spec = KDESpec(grid=grid, bandwidth=(0.15, 0.2), n=40, estimator="binned", bin_rel_error=0.05)
    xs = np.linspace(0, 1, 5)
    mids = 0.5 * (spec.bins[0][2] + spec.bins[0][3])
    cand = np.array([(u, v) for u in np.append(xs, mids) for v in xs])
    assert brute_force(spec, cand) <= spec.sensitivity().value * (1 + 1e-9)


def test_binned_release_has_the_same_calibration(rng):
    grid = CartesianGrid.uniform((0.0, 1.0), 100)
    obs = rng.beta(2, 5, 300)
    mech = GaussianMechanism(1.0, 1e-5)
    trees = {}
    for est in ("exact", "binned"):
        spec = KDESpec(grid=grid, bandwidth=0.06, n=300, estimator=est)
        with pytest.warns(Warning):
            trees[est] = fp.release(spec.fit(obs), mech, draws=2, random_seed=3, study=True)
    a, b = trees["exact"].attrs, trees["binned"].attrs
    assert a["sigma"] == b["sigma"] and a["sensitivity"] == b["sensitivity"]
    assert a["kde_estimator"] == "exact" and b["kde_estimator"] == "binned"
    assert b["kde_binned_error_bound"] > 0
    np.testing.assert_array_equal(trees["exact"]["constant_data"]["noise_scale"].values,
                                  trees["binned"]["constant_data"]["noise_scale"].values)


def test_unknown_estimator_refused():
    with pytest.raises(InputError, match="estimator"):
        KDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 20), bandwidth=0.1, n=10, estimator="fft")


def test_iclp_node_counts_equal_the_per_record_path(rng):
    grid = CartesianGrid.uniform([(0.0, 1.0), (0.0, 2.0)], [15, 21])
    spec = ICLPKDESpec(grid=grid, bandwidth=(0.1, 0.2), n=400, eta=1.2)
    obs = rng.uniform([0, 0], [1, 2], size=(400, 2))
    obs[:5, 0] = grid.axes[0][3] + 0.5 * np.diff(grid.axes[0])[3]  # exact ties between two nodes
    idx = spec.snap(obs)
    ref_idx = np.stack([np.abs(obs[:, k, None] - a[None, :]).argmin(1) for k, a in enumerate(grid.axes)], -1)
    np.testing.assert_array_equal(idx, ref_idx)
    ref = spec.basis.functions_at(ref_idx).sum(0) * spec.eigenvalues ** spec.eta * spec.scale
    np.testing.assert_allclose(spec.fit(obs).coefficients, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_sizes_refused_before_any_work(monkeypatch):
    import fdp_ppl.settings as settings

    monkeypatch.setattr(settings, "available_memory", lambda: 2**30)  # a 1 GiB machine
    check_kde_size((200,), 10**6)  # fits: the chunk is bounded, the records are the caller's
    with pytest.raises(InputError, match="KDE") as err:
        check_kde_size((200,), 10**8)  # the clipped copy of 10^8 records does not
    assert "dask" in str(err.value)
    with pytest.raises(InputError, match="grid"):
        check_kde_size((3200, 3200), 10, draws=100)
    spec = KDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 50), bandwidth=0.1, n=10**8)
    with pytest.raises(InputError):
        spec.fit(np.zeros(10))  # refused from the sizes before the records are read


def test_planned_memory_of_the_issue_sizes():
    from fdp_ppl.kde.accumulate import kde_memory

    # n = 10^6 records on 3200 grid points: the plan (beyond the caller's records) stays far below 4 GB
    assert kde_memory((3200,), 10**6, 1) < 2**30
    assert kde_memory((3200,), 10**6, 1, estimator="binned") < 2**30
