"""Out-of-core curves: a Zarr store read lazily and reduced on a dask.distributed LocalCluster."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytest.importorskip("zarr")

K = 40
N = 3001  # not a multiple of the chunks: the last chunk is short


@pytest.fixture(scope="module")
def raw():
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 1.0, K)
    return np.sin(2 * np.pi * t)[None, :] * rng.uniform(0.5, 1.5, (N, 1)) + 0.4 * rng.standard_normal((N, K))


@pytest.fixture(scope="module")
def store(raw, tmp_path_factory):
    path = tmp_path_factory.mktemp("zarr") / "curves.zarr"
    ds = xr.Dataset({"y": (("subject", "age"), raw)}, coords={"age": np.linspace(2.0, 20.0, K)})
    ds["y"].attrs["units"] = "cm"
    ds.chunk({"subject": 500}).to_zarr(path, mode="w")
    return path


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def basis():
    import fdp_ppl as fp

    return fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(np.linspace(2.0, 20.0, K)))


def _in_memory(raw):
    return xr.DataArray(raw, dims=("curve", "t"), coords={"t": np.linspace(2.0, 20.0, K)})


def test_open_curves_is_lazy_and_takes_n_from_the_metadata(store):
    from fdp_ppl.io.stores import open_curves

    da = open_curves(store, chunks=700, record_dim="subject")
    assert da.dims == ("curve", "t") and da.shape == (N, K)
    assert hasattr(da.data, "dask") and da.data.chunks[0][0] == 700 and da.data.numblocks[1] == 1
    assert da.attrs["units"] == "cm" and da.attrs["curve_name"] == "subject" and da.attrs["t_name"] == "age"
    np.testing.assert_allclose(da["t"].values, np.linspace(2.0, 20.0, K))


def test_summaries_on_a_two_worker_cluster_agree_with_memory(store, raw, cluster, basis):
    import fdp_ppl as fp
    from fdp_ppl.io.stores import dask_client, open_curves

    mem = _in_memory(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_qr = fp.iclp_qr_mean(mem, basis, tau=0.8)
        want_b = fp.bernstein_mean(mem, tau_inf=1.5)
        with dask_client(cluster.scheduler_address) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            lazy = open_curves(store, chunks=700, record_dim="subject")
            with distributed.get_task_stream(client) as stream:
                got_qr = fp.iclp_qr_mean(lazy, basis, tau=0.8)
                got_b = fp.bernstein_mean(lazy, tau_inf=1.5)
    workers = {task["worker"] for task in stream.data}
    assert len(workers) == 2  # the chunks were reduced on both workers of the cluster
    for got, want in ((got_qr, want_qr), (got_b, want_b)):
        np.testing.assert_allclose(got.coefficients, want.coefficients, rtol=1e-12,
                                   atol=1e-12 * np.abs(want.coefficients).max())
    assert got_qr.n == want_qr.n == N and got_qr.n_clipped == want_qr.n_clipped > 0
    assert got_b.n_clipped == want_b.n_clipped


def test_nan_in_the_store_is_found_in_the_same_pass(tmp_path, raw, basis):
    import fdp_ppl as fp
    from fdp_ppl.io.stores import open_curves
    from fdp_ppl.errors import InputError

    bad = raw.copy()
    bad[17, 3] = np.nan
    bad[2900, :2] = np.inf
    path = tmp_path / "bad.zarr"
    xr.Dataset({"y": (("curve", "t"), bad)}, coords={"t": np.linspace(2.0, 20.0, K)}).to_zarr(path, mode="w")
    with pytest.raises(InputError, match="NaN/inf values") as err:
        fp.iclp_qr_mean(open_curves(path, chunks=1000), basis, tau=0.8)
    assert " 3 " not in str(err.value) and " 2 " not in str(err.value)  # no data-dependent count in the text
    # imputed lazily: n stays the length of the record dim, nothing is dropped
    imputed = open_curves(path, chunks=1000, missing="impute")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = fp.iclp_qr_mean(imputed, basis, tau=0.8)
    assert s.n == N and "missing_rule" in imputed.attrs
    fixed = np.where(np.isfinite(bad), bad, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fp.iclp_qr_mean(_in_memory(fixed), basis, tau=0.8)
    np.testing.assert_allclose(s.coefficients, want.coefficients, rtol=1e-12, atol=1e-12 * np.abs(want.coefficients).max())


def test_netcdf_is_read_lazily_too(tmp_path, raw, basis):
    import fdp_ppl as fp
    from fdp_ppl.io.stores import open_curves

    path = tmp_path / "c.nc"
    xr.Dataset({"y": (("curve", "t"), raw)}, coords={"t": np.linspace(2.0, 20.0, K)}).to_netcdf(path)
    lazy = open_curves(path, chunks=1000)
    assert hasattr(lazy.data, "dask")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fp.sample_mean(_in_memory(raw), basis, tau=0.8).coefficients
        np.testing.assert_allclose(fp.sample_mean(lazy, basis, tau=0.8).coefficients, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())


def test_bad_requests_are_refused(store, tmp_path):
    from fdp_ppl.io.stores import open_curves
    from fdp_ppl.errors import InputError

    with pytest.raises(InputError, match="no store"):
        open_curves(tmp_path / "missing.zarr")
    with pytest.raises(InputError, match="record_dim"):
        open_curves(store)  # dims (subject, age): which one is the record dim is not guessed
    with pytest.raises(InputError, match="chunks"):
        open_curves(store, chunks=0, record_dim="subject")
    with pytest.raises(InputError, match="unknown variable"):
        open_curves(store, "z", record_dim="subject")


def test_cli_release_from_a_store_on_a_scheduler(store, cluster, tmp_path, raw):
    from fdp_ppl.cli import main

    out = tmp_path / "r.nc"
    code = main(["release", "--data", str(store), "--record-dim", "subject", "--chunks", "1000",
                 "--scheduler", cluster.scheduler_address, "--mechanism", "iclp-qr", "--epsilon", "1",
                 "--tau", "0.8", "--out", str(out), "--seed", "3", "--study"])
    assert code == 0
    tree = xr.open_datatree(out)
    assert int(tree.attrs["n"]) == N  # from the store's metadata
    assert tree["posterior"]["curve"].shape == (1, 1, K)
    assert tree["posterior"]["curve"].attrs.get("units") == "cm"


def test_cli_fpca_from_a_store_on_a_scheduler(store, cluster, tmp_path, raw, capsys):
    """fdp-ppl fpca on a Zarr store: the Gram is summed chunk by chunk on the cluster, n from the metadata, and the
    fit equals the in-memory one (same seed, same release)."""
    from fdp_ppl.cli import main

    outs = []
    for name, data in (("lazy", str(store)), ("memory", None)):
        out = tmp_path / f"{name}.nc"
        if data is None:  # the same curves as a NetCDF file read into memory
            data = str(tmp_path / "curves.nc")
            xr.open_zarr(store).load().to_netcdf(data)
            extra = []
        else:
            extra = ["--chunks", "700", "--scheduler", cluster.scheduler_address]
        code = main(["fpca", "--data", data, "--record-dim", "subject", "--t-dim", "age", *extra, "--k", "1", "--m",
                     "4", "--epsilon", "1", "--tau", "3", "--seed", str(2**40), "--study",
                     "--out", str(out)])
        assert code == 0, capsys.readouterr().err
        outs.append(xr.open_datatree(out))
    lazy, memory = outs
    assert int(lazy.attrs["n"]) == N
    np.testing.assert_allclose(lazy["posterior"]["frame"].values, memory["posterior"]["frame"].values, atol=1e-12)
