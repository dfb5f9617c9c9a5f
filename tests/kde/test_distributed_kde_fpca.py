"""KDE and FPCA fits from dask arrays: chunk-by-chunk reductions equal to the in-memory fits."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

dsa = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

N = 2503  # not a multiple of the chunks: the last chunk is short
CHUNK = 400


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(11)


@pytest.fixture(scope="module")
def obs1(rng):
    # some records outside the box [-2, 2]: clipping is per record
    return np.concatenate([rng.normal(0.0, 0.8, N - 40), rng.uniform(-4.0, 4.0, 40)])


@pytest.fixture(scope="module")
def obs2(rng):
    return rng.normal(0.0, 0.9, (N, 2))


def _close(got, want):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("kind", ["gp", "gp-binned", "sobolev", "iclp"])
def test_kde_fit_of_a_dask_array_equals_memory(kind, obs1):
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec

    grid = CartesianGrid.uniform([[-2.0, 2.0]], 41)
    cls = {"gp": KDESpec, "gp-binned": KDESpec, "sobolev": SobolevKDESpec, "iclp": ICLPKDESpec}[kind]
    kw = {"estimator": "binned"} if kind == "gp-binned" else {}
    spec = cls(grid=grid, bandwidth=0.3, n=N, **kw)
    want = spec.fit(obs1)
    lazy = dsa.from_array(obs1, chunks=CHUNK)
    with dask.config.set(scheduler="synchronous"):
        got = spec.fit(lazy)
    _close(got.values, want.values)
    _close(got.coefficients, want.coefficients)
    assert got.n_clipped == want.n_clipped > 0


def test_kde_2d_from_a_dask_backed_dataarray(obs2):
    from fdp_ppl.kde import CartesianGrid, KDESpec

    spec = KDESpec(grid=CartesianGrid.uniform([[-2.0, 2.0], [-2.5, 2.5]], [15, 17]), bandwidth=[0.4, 0.5], n=N)
    want = spec.fit(obs2)
    lazy = xr.DataArray(obs2, dims=("record", "coord")).chunk({"record": CHUNK, "coord": 1})
    with dask.config.set(scheduler="synchronous"):
        got = spec.fit(lazy)
    _close(got.values, want.values)
    assert got.n_clipped == want.n_clipped


def test_fpca_fit_of_a_dask_array_equals_memory(rng):
    import fdp_ppl as fp
    from fdp_ppl.fpca import FPCASpec

    k = 30
    t = np.linspace(0, 1, k)
    curves = rng.uniform(0.5, 2.0, (N, 1)) * np.sin(2 * np.pi * t) + 0.5 * rng.standard_normal((N, k))
    spec = FPCASpec(grid=fp.Grid.uniform(k), m=6, k=2, epsilon=1.0, tau=1.0)
    want = spec.fit(curves)
    lazy = xr.DataArray(curves, dims=("curve", "t")).chunk({"curve": CHUNK})
    with dask.config.set(scheduler="synchronous"):
        got = spec.fit(lazy, n=N)
    _close(got.gram, want.gram)
    assert got.n == want.n == N and got.n_clipped == want.n_clipped > 0


def test_the_records_are_never_gathered_whole(obs1):
    """Every task that touches records sees one chunk; what reaches the client is the small reduced vector."""
    from fdp_ppl.kde import CartesianGrid, KDESpec

    spec = KDESpec(grid=CartesianGrid.uniform([[-2.0, 2.0]], 41), bandwidth=0.3, n=N)
    seen = []

    def spy(block):
        if block.size:  # dask may call it once on an empty array to learn the output type
            seen.append(block.shape[0])
        return block

    lazy = dsa.from_array(obs1, chunks=CHUNK).map_blocks(spy, dtype=float)
    with dask.config.set(scheduler="synchronous"):
        got = spec.fit(lazy)
    assert sorted(seen) == sorted(lazy.chunks[0]) and max(seen) == CHUNK  # one call per chunk, no concatenation
    assert got.values.shape == (41,)


def test_lazy_inputs_are_refused_like_memory(obs1):
    import fdp_ppl as fp
    from fdp_ppl.errors import InputError
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.kde import CartesianGrid, KDESpec

    spec = KDESpec(grid=CartesianGrid.uniform([[-2.0, 2.0]], 21), bandwidth=0.3, n=N + 1)
    with pytest.raises(InputError, match="public n is 2504"):
        spec.fit(dsa.from_array(obs1, chunks=CHUNK))
    bad = obs1.copy()
    bad[[5, 2000]] = np.nan
    spec = KDESpec(grid=CartesianGrid.uniform([[-2.0, 2.0]], 21), bandwidth=0.3, n=N)
    with dask.config.set(scheduler="synchronous"), pytest.raises(InputError, match="must be finite") as err:
        spec.fit(dsa.from_array(bad, chunks=CHUNK))
    assert "2" not in str(err.value)  # the refusal names no count: how many records are incomplete is private
    with pytest.raises(InputError, match="privacy unit"):
        spec.fit(dsa.from_array(obs1, chunks=CHUNK), units=np.arange(N))
    fspec = FPCASpec(grid=fp.Grid.uniform(8), m=3, k=1, epsilon=1.0, tau=1.0)
    with pytest.raises(InputError, match="public n is 7"):
        fspec.fit(dsa.zeros((10, 8), chunks=4), n=7)
    curves = np.ones((10, 8))
    curves[3, 2] = np.inf
    with dask.config.set(scheduler="synchronous"), pytest.raises(InputError, match="NaN or infinite") as err:
        fspec.fit(dsa.from_array(curves, chunks=4))
    assert "1 curve" not in str(err.value)  # no count of the incomplete curves (private)


def test_open_records_reads_a_zarr_store_lazily(tmp_path, obs1):
    pytest.importorskip("zarr")
    from fdp_ppl.io.records import is_lazy, open_records

    path = tmp_path / "x.zarr"
    xr.Dataset({"x": (("subject",), obs1)}).chunk({"subject": 1000}).to_zarr(path, mode="w")
    da = open_records(path, chunks=CHUNK)
    assert is_lazy(da) and da.shape == (N,) and da.data.chunks[0][0] == CHUNK
    np.testing.assert_array_equal(da.values, obs1)


def test_kde_and_fpca_on_a_two_worker_cluster(obs1, rng):
    distributed = pytest.importorskip("distributed")
    import fdp_ppl as fp
    from fdp_ppl.io.stores import dask_client
    from fdp_ppl.fpca import FPCASpec
    from fdp_ppl.kde import CartesianGrid, KDESpec

    spec = KDESpec(grid=CartesianGrid.uniform([[-2.0, 2.0]], 41), bandwidth=0.3, n=N)
    curves = rng.standard_normal((N, 12))
    fspec = FPCASpec(grid=fp.Grid.uniform(12), m=4, k=1, epsilon=1.0, tau=2.0)
    want_kde, want_fpca = spec.fit(obs1), fspec.fit(curves)
    with dask_client(n_workers=2, processes=False) as client, distributed.get_task_stream(client) as stream:
        got_kde = spec.fit(dsa.from_array(obs1, chunks=CHUNK))
        got_fpca = fspec.fit(dsa.from_array(curves, chunks=(CHUNK, 12)))
    assert len({task["worker"] for task in stream.data}) == 2
    _close(got_kde.values, want_kde.values)
    _close(got_fpca.gram, want_fpca.gram)
