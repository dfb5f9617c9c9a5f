"""No arithmetic on a record takes the subnormal slow path (DESIGN invariant 9): tiny values are set to 0 by a
public record-by-record selection before the clipping pass of mean summaries and the density's binning pass."""

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.kde.accumulate import linear_binning
from fdp_ppl.spaces import Grid
from fdp_ppl.summaries.curves import clip_pass

TINY_NORMAL = np.finfo(float).tiny


def _subnormal(a) -> int:
    a = np.abs(np.asarray(a, dtype=float))
    return int(np.sum((a > 0) & (a < TINY_NORMAL)))


@pytest.mark.parametrize("norm", ["l2", "sup"])
def test_a_record_of_amplitude_1e_160_adds_exactly_nothing(norm):
    """Its squares (1e-320) would be subnormal: the record is flushed to 0 first, so the clipped sum of the
    dataset equals the sum without it, bit for bit, and the caller's array is not changed."""
    grid = Grid.uniform(25)
    rng = np.random.default_rng(0)
    base = rng.normal(size=(6, 25))
    tiny = np.vstack([base, np.full((1, 25), 1e-160)])
    keep = tiny.copy()
    da = xr.DataArray(tiny, dims=("curve", "t"))
    ref = xr.DataArray(np.vstack([base, np.zeros((1, 25))]), dims=("curve", "t"))
    a = clip_pass(da, grid, 1.0, norm=norm)
    b = clip_pass(ref, grid, 1.0, norm=norm)
    np.testing.assert_array_equal(np.asarray(a.total), np.asarray(b.total))
    np.testing.assert_array_equal(tiny, keep)
    lone = clip_pass(xr.DataArray(np.full((1, 25), 1e-160), dims=("curve", "t")), grid, 1.0, norm=norm)
    assert not np.any(np.asarray(lone.total))  # the previous pass gave 1e-160 here


def test_binning_a_record_next_to_the_lattice_edge_gives_no_subnormal_mass():
    """A record 5e-324 above the first node: its lattice fraction would be subnormal, and so the masses it
    enters; it is put on the node (within 2^-40 cells), as a record exactly there."""
    bins = (np.linspace(0.0, 1.0, 65),)
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 200)
    x[0] = 5e-324
    y = x.copy()
    y[0] = 0.0
    masses = linear_binning(bins, x)
    assert _subnormal(masses) == 0
    np.testing.assert_array_equal(masses, linear_binning(bins, y))
    assert masses.sum() == pytest.approx(200.0, rel=1e-12)
