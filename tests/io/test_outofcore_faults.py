"""Out-of-core (``--chunks``) releases under faults (DESIGN invariant 11): a disk that fills after the pre-charge
space check ends the command with one error line and exit 2 (HDF5 writing onto it crashed the process: exit 139),
and a successful release prints no ``distributed`` traceback."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.accounting import PrivacyLedger
from tests.helpers import REPO, child_env

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytest.importorskip("zarr")

K, N = 20, 600


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 1.0, K)
    path = tmp_path_factory.mktemp("ooc") / "curves.zarr"
    ds = xr.Dataset({"y": (("subject", "age"), np.sin(t)[None] + 0.3 * rng.standard_normal((N, K)))},
                    coords={"age": t})
    ds.chunk({"subject": 200}).to_zarr(path, mode="w")
    return path


@pytest.fixture(scope="module")
def cluster():
    # tcp, as between processes: over inproc comms the lock xarray took by the in-memory buffer was found again
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None) as c:
        yield c


def _argv(store, out, led, *extra):
    return ["release", "--data", str(store), "--record-dim", "subject", "--chunks", "200", "--mechanism", "iclp-qr",
            "--epsilon", "1", "--tau", "1", "--out", str(out), "--ledger", str(led), "--budget", "10", *extra]


def test_a_successful_out_of_core_release_prints_no_traceback(store, cluster, tmp_path, capfd):
    """Nothing on stderr but the data holder's line, and no error logged by ``distributed`` (its handlers print
    those with their tracebacks: two on every release before, from a lock the scheduler did not know)."""
    import logging

    from fdp_ppl.cli import main

    class Keep(logging.Handler):
        def __init__(self):
            super().__init__(logging.ERROR)
            self.records = []

        def emit(self, record):
            self.records.append(record)

    keep = Keep()
    logging.getLogger("distributed").addHandler(keep)
    try:
        out = tmp_path / "r.nc"
        assert main(_argv(store, out, tmp_path / "led.sqlite", "--scheduler", cluster.scheduler_address)) == 0
    finally:
        logging.getLogger("distributed").removeHandler(keep)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ERROR" not in err, err
    assert [r.getMessage() for r in keep.records] == []
    assert int(xr.open_datatree(out).attrs["n"]) == N


def test_a_disk_full_during_the_out_of_core_write_is_one_line_and_exit_2(store, cluster, tmp_path, capfd,
                                                                          monkeypatch):
    """The temporary takes part of the file, then the device is full (ENOSPC from write(2)); the budget was
    charged once and the line says so; no temporary and no output are left."""
    from fdp_ppl.cli import main

    real_write = os.write
    temp = re.compile(r"/\.r\.nc\.\d+-[0-9a-f]{12}\.tmp\.nc$")

    def fills_up(fd, data):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if temp.search(target):
            written = real_write(fd, bytes(data)[: max(len(data) // 2, 1)])
            if written and os.fstat(fd).st_size > 1000:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return written
        return real_write(fd, data)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to tell the temporary's descriptor")
    monkeypatch.setattr(os, "write", fills_up)
    out, led = tmp_path / "r.nc", tmp_path / "led.sqlite"
    assert main(_argv(store, out, led, "--scheduler", cluster.scheduler_address)) == 2
    monkeypatch.undo()
    err = capfd.readouterr().err.strip()
    assert err.startswith("fdp-ppl: error: could not write") and "\n" not in err, err
    assert "No space left on device" in err and "was charged epsilon 1" in err and "Traceback" not in err
    assert PrivacyLedger.open(led).spent.epsilon == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["led.sqlite"]


def _unshare_tmpfs_works(mount: str) -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    res = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=1m none {mount}"],
                         capture_output=True, timeout=30)
    return res.returncode == 0


#: fills the --out directory right after the pre-charge space check, leaving LEAVE bytes: the file's header fits,
#: its data do not
_FILL = """
import os, sys
if __name__ == "__main__":
    import fdp_ppl.cli.common as common
    import fdp_ppl.cli.release as release
    check = common.check_output_space

    def check_then_fill(a, nbytes):
        check(a, nbytes)
        with open(os.path.join(os.path.dirname(os.path.abspath(a.out)), "filler"), "wb") as fh:
            try:
                while True:
                    fh.write(b"\\0" * 65536)
                    fh.flush()
            except OSError:
                pass
            fh.truncate(max(fh.tell() - 4096, 0))

    release.check_output_space = check_then_fill
    from fdp_ppl.cli import main
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_real_full_disk_under_a_local_cluster_exits_2_with_one_line(store, tmp_path):
    """On a real 8 MiB tmpfs (a user namespace, no root needed) that fills after the space check, with the
    command's own local cluster of worker processes: the error line, exit 2 (139 before), nothing left."""
    mount = tmp_path / "small"
    mount.mkdir()
    if not _unshare_tmpfs_works(str(mount)):
        pytest.skip("cannot mount a small tmpfs in a user namespace here")
    script = tmp_path / "fill.py"
    script.write_text(_FILL)
    led = tmp_path / "led.sqlite"
    argv = " ".join(_argv(store, mount / "r.nc", led))
    shell = (f"mount -t tmpfs -o size=8m none {mount} && {sys.executable} {script} {argv}; rc=$?; "
             f"ls -A {mount}; exit $rc")
    res = subprocess.run(["unshare", "-rm", "sh", "-c", shell], capture_output=True, text=True, cwd=REPO,
                         env=child_env(), timeout=600)
    assert res.returncode == 2, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0] and "Traceback" not in res.stderr, res.stderr
    assert res.stdout.split() == ["filler"]  # no temporary, no output on the full device
    assert PrivacyLedger.open(led).spent.epsilon == 1.0
