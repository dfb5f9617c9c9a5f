#!/usr/bin/env python
"""Benchmark (issue 28): ``fp.infer`` and the eigenbasis at growing grid sizes, with growth exponents.

Rows (one BLAS thread, ``threadpoolctl``; each size in a fresh process unless ``--same-process``):

* ``infer own kernel``: ``fp.infer`` (2 chains × 1000 draws) on an ICLP(ε = 1) release of the ICLP-QR mean
  (Matérn 3/2, ρ = 0.1 eigenbasis, τ = 1, n = 200 synthetic curves) with a GP prior of the release's own kernel
  and fixed hyperparameters (amplitude 0.1, level 0.5): exact draws. The release and its basis are built
  before the clock starts. Baseline: none (there is no non-private computation to compare with).
* ``infer other kernel (Gibbs)``: the same with a Matérn 5/2, ρ = 0.2 prior (not diagonal in the release's
  basis): the split Gibbs sampler (1000 tuning + 1000 kept iterations, 2 chains). The row also records the
  minimum bulk ESS of the curve.
* ``eigenbasis <kernel>``: :class:`fdp_ppl.Eigenbasis` (only the retained pairs; Lanczos with FFT products
  where few are retained) against the dense ``scipy.linalg.eigh`` of the same ``W^{½} G W^{½}`` matrix
  (Gram matrix formed in both), timed alternately, minimum of 3 (1 in quick mode). ``matern32`` keeps all
  pairs above ``rel_tol`` (all m: the dense path, the row's baseline is that same computation);
  ``matern32:100`` keeps the leading 100 (``n_components=100``).

Growth exponents: least-squares slope of log(seconds) on log(size) per row kind.

Usage::

    python benchmarks/bench_scale_infer.py            # sizes 50..3200
    python benchmarks/bench_scale_infer.py --quick    # sizes up to 800, eigenbasis at 800 and 3200 (Gaussian)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_info  # noqa: E402

INFER_SIZES = (50, 200, 400, 800, 3200)
QUICK_INFER_SIZES = (50, 200, 400, 800)
GIBBS_SIZES = (50, 200, 400, 800)
QUICK_GIBBS_SIZES = (50, 200)
EIG_SIZES = (800, 3200)
EIG_KERNELS = ("gaussian-hall", "matern32", "matern32:100")
QUICK_EIG_KERNELS = ("gaussian-hall", "matern32:100")


def _release(m: int, seed: int = 1):
    import numpy as np
    import xarray as xr

    import fdp_ppl as fp

    grid = fp.Grid.uniform(m)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    rng = np.random.default_rng(seed)
    t = grid.t
    curves = 0.5 + 0.3 * np.sin(2 * np.pi * t)[None] + 0.1 * rng.standard_normal((200, 1)) * np.cos(np.pi * t)[None]
    s = fp.iclp_qr_mean(xr.DataArray(curves, dims=("curve", "t"), coords={"t": t}), basis, tau=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fp.release(s, fp.ICLP(epsilon=1.0), random_seed=seed, study=True)


def infer_row(kind: str, m: int, draws: int = 1000, chains: int = 2) -> dict:
    """One ``fp.infer`` timing (own kernel: exact; other: Gibbs)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    import fdp_ppl as fp
    from fdp_ppl.inference import GPPrior

    prior = (GPPrior(nu=1.5, lengthscale=0.1, amplitude=0.1, mean=0.5) if kind == "own" else
             GPPrior(nu=2.5, lengthscale=0.2, amplitude=0.1, mean=0.5))
    with threadpool_limits(1):
        rel = _release(m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            post = fp.infer(rel, prior, draws=draws, tune=draws, chains=chains, random_seed=0, progressbar=False)
            seconds = time.perf_counter() - t0
    row = {"what": "infer own kernel (exact)" if kind == "own" else "infer other kernel (Gibbs)", "size": m,
           "seconds": seconds, "baseline_seconds": None, "ratio": None, "inference": post.attrs["inference"],
           "model": post.attrs["inference_model"]}
    if kind != "own":
        import arviz as az

        ess = az.ess(post["posterior"].to_dataset()[["curve"]], method="bulk")["curve"].values
        row["curve_ess_min"] = float(np.min(ess))
        row["max_rhat"] = float(post.attrs["diagnostic_max_rhat"])
    return row


def eig_row(kernel_name: str, m: int, repeats: int = 3) -> dict:
    """The eigenbasis (retained pairs only) against the dense ``eigh`` of the same matrix."""
    import numpy as np
    from scipy import linalg
    from threadpoolctl import threadpool_limits

    import fdp_ppl as fp
    from fdp_ppl.spaces.eigenbasis import Eigenbasis
    from fdp_ppl.spaces.kernels import kernel_from_name

    name, _, keep = kernel_name.partition(":")
    n_components = int(keep) if keep else None
    kernel = kernel_from_name(name, 0.1, None)
    grid = fp.Grid.uniform(m)
    sw = np.sqrt(grid.weights)
    fast, dense, basis = [], [], None
    with threadpool_limits(1):
        for _ in range(repeats):
            t0 = time.perf_counter()
            basis = Eigenbasis(kernel, grid, n_components=n_components)
            fast.append(time.perf_counter() - t0)
            if n_components is None and basis.method == "dense":
                dense.append(fast[-1])   # the same computation: no second O(m³) run on a shared machine
                continue
            t0 = time.perf_counter()
            linalg.eigh(sw[:, None] * kernel.gram(grid.t) * sw[None, :])
            dense.append(time.perf_counter() - t0)
    s, b = min(fast), min(dense)
    return {"what": f"eigenbasis {kernel_name}", "size": m, "seconds": s, "baseline_seconds": b, "ratio": s / b,
            "retained": basis.size, "method": basis.method}


def _one(spec: dict) -> dict:
    if spec["kind"] in ("own", "other"):
        return infer_row(spec["kind"], spec["size"])
    return eig_row(spec["kernel"], spec["size"], spec.get("repeats", 3))


def _specs(quick: bool) -> list[dict]:
    out = [{"kind": "own", "size": m} for m in (QUICK_INFER_SIZES if quick else INFER_SIZES)]
    out += [{"kind": "other", "size": m} for m in (QUICK_GIBBS_SIZES if quick else GIBBS_SIZES)]
    out += [{"kind": "eig", "kernel": k, "size": m, "repeats": 1 if quick else 3}
            for k in (QUICK_EIG_KERNELS if quick else EIG_KERNELS) for m in EIG_SIZES]
    return out


def rows(quick: bool, fresh_process: bool = False) -> list[dict]:
    """Every row (``what``, ``size``, ``seconds``, ``baseline_seconds`` or None, ``ratio`` or None, extras)."""
    out = []
    for spec in _specs(quick):
        if fresh_process:
            res = subprocess.run([sys.executable, __file__, "--one", json.dumps(spec)], capture_output=True,
                                 text=True, env={**os.environ, "PYTENSOR_FLAGS": os.environ.get("PYTENSOR_FLAGS",
                                                                                                 "mode=CVM")})
            if res.returncode != 0:
                raise RuntimeError(res.stderr[-2000:])
            out.append(json.loads(res.stdout.strip().splitlines()[-1]))
        else:
            out.append(_one(spec))
        r = out[-1]
        print(f"  {r['what']:32} {r['size']:6d} {r['seconds']:8.3f} s", file=sys.stderr, flush=True)
    return out


def exponents(table: list[dict]) -> dict:
    """Growth exponent per ``what``: slope of log(seconds) on log(size) (None with fewer than two sizes)."""
    import numpy as np

    out = {}
    for what in dict.fromkeys(r["what"] for r in table):
        pts = [(r["size"], r["seconds"]) for r in table if r["what"] == what]
        if len(pts) >= 2:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            out[what] = float(np.polyfit(x, y, 1)[0])
        else:
            out[what] = None
    return out


def markdown(table: list[dict]) -> str:
    exps = exponents(table)
    lines = ["| what | size | seconds | baseline s | ratio | growth exponent | notes |", "|---|---|---|---|---|---|---|"]
    for r in table:
        base = "—" if r["baseline_seconds"] is None else f"{r['baseline_seconds']:.3f}"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        e = exps.get(r["what"])
        notes = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
                          if k not in ("what", "size", "seconds", "baseline_seconds", "ratio"))
        lines.append(f"| {r['what']} | {r['size']} | {r['seconds']:.3f} | {base} | {ratio} | "
                     f"{'—' if e is None else f'{e:.2f}'} | {notes} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes (see the module docstring)")
    p.add_argument("--same-process", action="store_true", help="all sizes in this process (default: fresh ones)")
    p.add_argument("--out", default=None, help="JSON file (default results/bench_scale_infer[_quick].json)")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(_one(json.loads(a.one))))
        return 0
    table = rows(a.quick, fresh_process=not a.same_process)
    print(markdown(table))
    out = Path(a.out) if a.out else HERE / "results" / f"bench_scale_infer{'_quick' if a.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_info(), "command": " ".join(sys.argv), "rows": table,
                               "exponents": exponents(table)}, indent=2, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    sys.exit(main())
