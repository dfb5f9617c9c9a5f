"""Helpers shared by the benchmark scripts: machine info, timing, memory."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import threading
import time
import tracemalloc
from pathlib import Path

#: The checkout's root. Importing this module puts the root (this checkout's ``fdp_ppl``) and ``notebooks/``
#: (the package ``studies``, which is not installed) first on ``sys.path``, so ``python benchmarks/bench_x.py``
#: imports the same code as the tests and notebooks. Scripts import ``_common`` before ``studies``.
ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "notebooks", ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def write_results(name: str, res: dict, *, quick: bool = False, out=None) -> None:
    """Write ``{"machine": machine_info(), **res}`` to ``out`` or ``results/<name>[_quick].json``; say where."""
    import json

    path = Path(out) if out else Path(__file__).resolve().parent / "results" / f"{name}{'_quick' if quick else ''}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine_info(), **res}, indent=2, default=str))
    print(f"wrote {path}")


def machine_info() -> dict:
    """Python, library versions, CPU, BLAS and load average (for the JSON of a benchmark)."""
    import numpy as np

    info = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "numpy": np.__version__,
        "pytensor_flags": os.environ.get("PYTENSOR_FLAGS", ""),
    }
    for mod in ("scipy", "xarray", "pymc", "pytensor", "arviz", "dask", "distributed", "zarr", "fdp_ppl"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional libraries
            info[mod] = None
    try:
        with open("/proc/cpuinfo") as fh:
            info["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
    except OSError:
        pass
    try:
        import psutil

        info["memory_total_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # noqa: BLE001
        pass
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [{k: d.get(k) for k in ("internal_api", "version", "num_threads")} for d in threadpool_info()]
    except Exception:  # noqa: BLE001
        pass
    if hasattr(os, "getloadavg"):
        info["load_average"] = list(os.getloadavg())
    return info


def best_time(fn, repeats: int = 3) -> float:
    """Minimum wall time of ``fn()`` over ``repeats`` calls (the least disturbed run on a shared machine)."""
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def paired_times(fns: dict, repeats: int = 3, stat=min) -> dict:
    """Minimum (or ``stat``, e.g. ``statistics.median``) wall time of each callable, the callables alternating
    within each repeat (same machine load)."""
    times = {k: [] for k in fns}
    for _ in range(max(1, repeats)):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: stat(v) for k, v in times.items()}


def peak_traced_bytes(fn) -> int:
    """Peak of the memory allocated during ``fn()`` (tracemalloc: Python objects and numpy buffers)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return max(0, tracemalloc.get_traced_memory()[1] - base)
    finally:
        tracemalloc.stop()


class RSSSampler:
    """Peak resident memory of processes (by pid), sampled every ``interval`` seconds in a thread."""

    def __init__(self, pids_fn, interval: float = 0.1):
        self._pids_fn = pids_fn
        self.interval = interval
        self.peak: dict = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil

        while not self._stop.is_set():
            for pid in self._pids_fn():
                try:
                    rss = psutil.Process(pid).memory_info().rss
                except Exception:  # noqa: BLE001 - the process may be gone
                    continue
                self.peak[pid] = max(self.peak.get(pid, 0), rss)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def median(xs):
    return statistics.median(xs)
