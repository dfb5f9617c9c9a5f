"""One BLAS thread limit (fdp_ppl.settings.blas_threads): in this process, and for processes it starts."""

import os
import subprocess
import sys

import numpy as np  # noqa: F401 - loads the BLAS library the limit applies to
import pytest

from fdp_ppl.settings import blas_threads

threadpoolctl = pytest.importorskip("threadpoolctl")

_CHILD = ("import numpy, threadpoolctl; "
          "print(max(i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'))")


def _blas_threads_here():
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")


def test_limit_applies_inside_and_is_restored():
    before = _blas_threads_here()
    with blas_threads(1, rescan=True):
        assert _blas_threads_here() == 1
    assert _blas_threads_here() == before


def test_children_start_with_the_limit_and_the_environment_is_restored(monkeypatch):
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    with blas_threads(1, children=True):
        out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) == 1
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["OMP_NUM_THREADS"] == "7"


def test_none_changes_nothing():
    before = _blas_threads_here()
    with blas_threads(None, children=True):
        assert _blas_threads_here() == before


def test_rescan_looks_again_only_after_new_imports(monkeypatch):
    """The scan for BLAS libraries (milliseconds, on every fp.infer call) is repeated only when modules were
    imported since the last one (a library loads with the extension module that links it)."""
    import types

    calls = []
    real = threadpoolctl.ThreadpoolController

    def counting():
        calls.append(1)
        return real()
    def here():   # not counted
        return max(i["num_threads"] for i in real().info() if i["user_api"] == "blas")
    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", counting)
    here()   # its own first call may import modules
    for name, scans in (("_fdp_ppl_new_a", 1), (None, 1), ("_fdp_ppl_new_b", 2)):
        if name:   # a module imported since the last scan
            monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
        with blas_threads(1, rescan=True):
            assert here() == 1
        assert len(calls) == scans
