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


# ----------------------------------------------------------------------------- the peers table
#: the columns of the peers table (``bench_peers.py``, ``bench_peers_families.py``, ``bench_peers_all.py``)
PEER_COLUMNS = ("family", "size", "ours", "peer", "peer_value", "ratio", "growth_ours", "growth_peer", "peak_mb",
                "accuracy", "target", "met")


def peer_row(family: str, size: str, ours: float, peer: str, peer_value: float | None, *, target: str = "",
             op: str = "<=", bound: float | None = None, applies: bool = True, n: float | None = None,
             group=None, peak_mb: float | None = None, accuracy: str | None = None, unit: str = "s") -> dict:
    """One row of the peers table: ours against the peer (``ratio = ours / peer``); ``met`` from ``op`` and
    ``bound`` (None when the target does not apply at this size, or nothing was measured).

    ``n`` and ``group`` (rows of one configuration over sizes) feed :func:`growth_exponents`; ``unit`` says what
    ``ours`` and ``peer_value`` are (seconds, or ``"ESS/s"``: higher is better)."""
    ratio = ours / peer_value if ours is not None and peer_value else None
    met = None
    if applies and bound is not None and ratio is not None:
        met = bool(ratio <= bound if op == "<=" else ratio >= bound)
    return {"family": family, "size": size, "ours": ours, "peer": peer, "peer_value": peer_value, "ratio": ratio,
            "growth_ours": None, "growth_peer": None, "peak_mb": peak_mb, "accuracy": accuracy,
            "target": (target or (f"{op} {bound:g}x" if bound is not None else "")) if applies else "—",
            "met": met, "n": n, "group": group, "unit": unit}


def log_slope(xs, ys) -> float | None:
    """Least-squares slope of log(y) on log(x) over the positive pairs (None with fewer than 2)."""
    import math

    import numpy as np

    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x and y and x > 0 and y > 0]
    if len(pts) < 2 or len({p[0] for p in pts}) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def growth_exponents(rows: list) -> list:
    """Set ``growth_ours`` / ``growth_peer`` on every row of a group (same ``group``, several ``n``): the
    least-squares exponents of ours' and the peer's seconds in n over the group's sizes."""
    groups: dict = {}
    for r in rows:
        if r.get("group") is not None and r.get("n") and r.get("unit", "s") == "s":
            groups.setdefault(r["group"], []).append(r)
    for sub in groups.values():
        ns = [r["n"] for r in sub]
        ours, peer = log_slope(ns, [r["ours"] for r in sub]), log_slope(ns, [r["peer_value"] for r in sub])
        for r in sub:
            r["growth_ours"], r["growth_peer"] = ours, peer
    return rows


def _cell(v, spec: str = ".3g") -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def peer_table(rows: list) -> str:
    """The peers table in Markdown: family, size, ours, peer, the peer's value, ratio, growth exponents in n
    (ours / peer), peak memory, accuracy where the peers approximate, target, met."""
    head = ["family", "size", "ours", "peer", "peer's value", "ours / peer", "growth in n, ours / peer", "peak MB (ours)",
            "accuracy ours / peer", "target", "met"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        unit = "" if r.get("unit", "s") == "s" else f" {r['unit']}"
        g = ("—" if r.get("growth_ours") is None and r.get("growth_peer") is None
             else f"{_cell(r.get('growth_ours'), '.2f')} / {_cell(r.get('growth_peer'), '.2f')}")
        out.append("| " + " | ".join([
            r["family"], r["size"], _cell(r["ours"], ".3g") + unit, r["peer"], _cell(r["peer_value"], ".3g") + unit,
            _cell(r["ratio"], ".2f"), g, _cell(r.get("peak_mb"), ".0f"), _cell(r.get("accuracy")),
            r.get("target") or "—", _cell(r.get("met"))]) + " |")
    return "\n".join(out)


def size_label(n: int) -> str:
    """``10^6``, ``3·10^5`` for round sizes, else ``12,345``."""
    import math

    n = int(n)
    if n >= 1000:
        k = math.floor(math.log10(n))
        lead = n / 10**k
        if lead == int(lead):
            return f"10^{k}" if lead == 1 else f"{int(lead)}·10^{k}"
    return f"{n:,}"
