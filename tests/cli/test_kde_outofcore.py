"""``fdp-ppl kde --chunks/--scheduler`` and Zarr stores (fdp_ppl/cli/kde.py, out of core): the KDE summed chunk by
chunk on a dask cluster releases what the in-memory command releases with the same seed, and what cannot run out
of core is refused in one line before the ledger is touched."""

from __future__ import annotations

import json
import hashlib

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytest.importorskip("zarr")

from fdp_ppl.cli import main

N = 523  # not a multiple of the chunks: the last chunk is short
CHUNKS = "50"


@pytest.fixture(scope="module")
def columns():
    rng = np.random.default_rng(28)
    x = np.concatenate([rng.normal(0.5, 0.15, N - 7), rng.uniform(-1.0, 2.0, 7)])  # some outside [0, 1]
    y = rng.beta(2.0, 3.0, N)
    return x, y


@pytest.fixture(scope="module")
def files(columns, tmp_path_factory):
    """The same observations as a NetCDF file (in memory or lazily) and a Zarr store (always lazily)."""
    x, y = columns
    root = tmp_path_factory.mktemp("kde_ooc")
    ds = xr.Dataset({"x": (("obs",), x), "y": (("obs",), y), "xy": (("obs", "coord"), np.stack([x, y], -1))})
    nc, store = root / "obs.nc", root / "obs.zarr"
    ds.to_netcdf(nc)
    ds.chunk({"obs": 100}).to_zarr(store, mode="w")
    return {"nc": nc, "zarr": store}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None) as c:
        yield c


def _kde(tmp_path, name, data, *extra):
    out = tmp_path / f"{name}.nc"
    seed = [] if "--ledger" in extra else ["--seed", "7", "--study"]  # a study is charged to no ledger
    code = main(["kde", "--data", str(data), "--var", "x", *extra, "--domain", "0", "1", *seed,
                 "--out", str(out), "--holder-report", str(tmp_path / f"{name}.json")])
    return code, out


MECHS = {"gp": ["--mechanism", "gp", "--delta", "1e-5"], "iclp": ["--mechanism", "iclp", "--eta", "1.1"],
         "gp-binned": ["--mechanism", "gp", "--delta", "1e-5", "--kde-estimator", "binned"],
         "sobolev": ["--mechanism", "sobolev", "--delta", "1e-5"]}


@pytest.mark.parametrize("mech, d", [("gp", 1), ("iclp", 1), ("gp", 2), ("iclp", 2), ("gp-binned", 1),
                                     ("sobolev", 2)])
def test_out_of_core_release_equals_in_memory(tmp_path, files, cluster, capsys, mech, d):
    """Same seed, same file: the chunked fit on the cluster gives the released draws of the in-memory command; the
    table (stdout) and stderr are the same, and the data holder's report holds the same count."""
    grid = ["--grid-size", "40" if d == 1 else "12"]
    pair = ["--var2", "y"] if d == 2 else []
    args = [*MECHS[mech], *pair, *grid, "--epsilon", "1", "--draws", "2"]
    code, mem = _kde(tmp_path, "memory", files["nc"], *args)
    cap_mem = capsys.readouterr()
    assert code == 0, cap_mem.err
    code, ooc = _kde(tmp_path, "lazy", files["nc"], *args, "--chunks", CHUNKS, "--scheduler",
                     cluster.scheduler_address)
    cap_ooc = capsys.readouterr()
    assert code == 0, cap_ooc.err
    want = xr.open_datatree(mem)["posterior"]["density"].values
    got_tree = xr.open_datatree(ooc)
    got = got_tree["posterior"]["density"].values
    assert got.shape == want.shape == (1, 2) + (40,) * (d == 1) + (12, 12) * (d == 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    assert not np.array_equal(got[0, 0], got[0, 1])  # two independent draws, not a constant
    assert int(got_tree.attrs["n"]) == N  # from the file's metadata
    assert cap_ooc.out.replace("lazy.nc", "memory.nc") == cap_mem.out
    assert cap_ooc.err == cap_mem.err and "data holder only" not in cap_mem.err
    reports = [json.loads((tmp_path / f"{name}.json").read_text()) for name in ("memory", "lazy")]
    assert reports[0] == reports[1] and reports[0]["records"] == N
    assert reports[0]["clipped"] > 0  # some records are outside the domain: the count is the real one


def test_zarr_store_with_chunks_only_runs_on_a_local_cluster(tmp_path, files, capsys, monkeypatch):
    """A Zarr store is read lazily even without --chunks; --chunks alone starts the command's own local cluster
    (threads here, to keep the test fast) and releases what the in-memory command releases."""
    import fdp_ppl.io.stores as dist

    started = []
    real = dist.dask_client

    def quick(scheduler=None, **kw):
        started.append(scheduler)
        return real(scheduler, n_workers=1, processes=False)

    monkeypatch.setattr(dist, "dask_client", quick)
    args = ["--mechanism", "iclp", "--var2", "y", "--grid-size", "10", "--epsilon", "0.5"]
    code, mem = _kde(tmp_path, "memory", files["nc"], *args)
    assert code == 0
    for name, extra in (("store", []), ("store_chunks", ["--chunks", CHUNKS])):
        code, ooc = _kde(tmp_path, name, files["zarr"], *args, *extra)
        assert code == 0, capsys.readouterr().err
        want = xr.open_datatree(mem)["posterior"]["density"].values
        np.testing.assert_allclose(xr.open_datatree(ooc)["posterior"]["density"].values, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())
    assert started == [None, None]  # the lazy path ran on a cluster both times


@pytest.mark.parametrize("extra, data, message", [
    (["--mechanism", "gp", "--delta", "1e-5", "--bandwidth-epsilon", "0.1"], "nc", "--bandwidth-epsilon"),
    (["--mechanism", "frl"], "nc", "--mechanism frl"),
    (["--mechanism", "bernstein"], "zarr", "--mechanism bernstein"),
    (["--mechanism", "iclp", "--privacy-unit", "obs", "--combine", "mean"], "nc", "--privacy-unit"),
    (["--mechanism", "iclp"], "csv", "Zarr store or a NetCDF"),
    (["--mechanism", "iclp", "--var2", "xy"], "nc", "1-D variable"),
    (["--mechanism", "iclp", "--var2", "nope"], "nc", "nope"),
])
def test_refusals_are_one_line_and_charge_nothing(tmp_path, files, columns, capsys, extra, data, message):
    from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger

    if data == "csv":
        path = tmp_path / "obs.csv"
        x, y = columns
        path.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in zip(x, y)) + "\n")
    else:
        path = files[data]
    led = tmp_path / "led.sqlite"
    PrivacyLedger.open(led, PrivacyBudget(10.0, 1e-3))
    before = hashlib.sha256(led.read_bytes()).hexdigest()
    code, out = _kde(tmp_path, "refused", path, *extra, "--epsilon", "1", "--chunks", CHUNKS, "--ledger", str(led))
    cap = capsys.readouterr()
    assert code == 2 and not out.exists()
    assert cap.err.count("\n") == 1 and message in cap.err and "Traceback" not in cap.err
    text = cap.err.split("error:", 1)[1].replace(str(path), "").replace("1-D", "").replace("--var2", "").replace(CHUNKS, "")
    assert not any(ch.isdigit() for ch in text)  # no count of anything in the data (n is not even read yet)
    assert PrivacyLedger.open(led).entries == [] and hashlib.sha256(led.read_bytes()).hexdigest() == before


def test_incomplete_records_refused_out_of_core_without_a_count(tmp_path, columns, capsys, monkeypatch):
    """A NaN found while summing the chunks stops the release with the in-memory message's meaning and no count,
    only after the charge (DESIGN invariant 9: whether a value is missing depends on the data)."""
    import contextlib

    import dask

    import fdp_ppl.io.stores as dist
    from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger

    x = columns[0].copy()
    x[[3, 400]] = np.nan
    path = tmp_path / "nan.nc"
    xr.Dataset({"x": (("obs",), x)}).to_netcdf(path)
    led = tmp_path / "led.sqlite"
    PrivacyLedger.open(led, PrivacyBudget(10.0, 1e-3))
    monkeypatch.setattr(dist, "dask_client", lambda scheduler=None: contextlib.nullcontext())  # dask in-process
    with dask.config.set(scheduler="synchronous"):
        code, out = _kde(tmp_path, "nan_release", path, "--mechanism", "iclp", "--epsilon", "1", "--chunks", CHUNKS,
                         "--ledger", str(led))
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and err.count("\n") == 1 and "finite" in err
    assert "refused after the charge" in err
    assert "2" not in err.split("error:", 1)[1]  # how many records are incomplete is private
    assert PrivacyLedger.open(led).spent.epsilon == pytest.approx(1.0)


def test_help_names_the_out_of_core_options(capsys):
    assert main(["kde", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--chunks N" in text and "--scheduler ADDRESS" in text and "sum the KDE" in text
