#!/usr/bin/env python
"""Benchmark: CPU time of one exact lattice K-norm or t draw (``generator="lattice"``) against its peers in this run.

For J = 10, 30, 100 (whitened lattice 2^-32, the generator's design) this draws ``--draws`` releases one at a time
(a release of one vector is the unit of work; the centre is a fixed N(0, 1) vector, unit scales) with

* ``lattice``: :class:`fdp_ppl.noise.lattice.LatticeSampler` (exact, floating-point safe, pure ε; the K-norm law,
  or with ``--law t`` the multivariate t of ``--nu`` degrees of freedom);
* ``pymc``: the compiled float64 sampler (not floating-point safe), the strongest peer (fastest);
* ``snapped``: the dithered lattice (floating-point safe, but (ε, δ_fp) for a pure mechanism).

It reports the CPU time per draw (``time.process_time``, OPENBLAS_NUM_THREADS=1), its ratio to ``pymc``, the
measured mean number of proposal rounds and the design's predicted ``1/acceptance``, and the design's build time.

    OPENBLAS_NUM_THREADS=1 PYTENSOR_FLAGS=mode=CVM python benchmarks/bench_lattice_knorm.py [--draws 200] [--quick]
        [--law t --nu 5]   (results/bench_lattice_knorm.json, or bench_lattice_t.json)
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import _common  # noqa: E402,F401  (puts this checkout first on sys.path)

import numpy as np  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--dims", default="10,30,100")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--law", choices=("knorm", "t"), default="knorm")
    ap.add_argument("--nu", type=float, default=5.0)
    args = ap.parse_args(argv)
    draws = 20 if args.quick else args.draws
    import fdp_ppl as fp
    from fdp_ppl.noise.lattice import KNormLattice, LatticeSampler, TLattice
    from fdp_ppl.noise.sampling import sampler_for

    law = fp.laws.Elliptical("knorm") if args.law == "knorm" else fp.laws.Elliptical("t", nu=args.nu)
    load0 = os.getloadavg()
    rows = []
    for J in [int(x) for x in args.dims.split(",")]:
        t = time.process_time()
        design = KNormLattice(J) if args.law == "knorm" else TLattice(J, args.nu)
        build = time.process_time() - t
        centre, scale = np.random.default_rng(J).standard_normal(J), np.ones(J)
        row = {"J": J, "law": law.name, "design_build_cpu_s": build, "predicted_rounds": 1.0 / design.acceptance,
               "components": len(design.weights)}
        for name in ("pymc", "snapped", "lattice"):
            s = sampler_for(law, J, name)
            s.draw(centre, scale, 2)  # warm (compilation, OpenDP measurements)
            if name == "lattice":  # the rounds of the noise alone (untimed), then whole releases (timed)
                counts = []
                s.design.sample(draws, counts=counts)
                row["rounds_mean"] = float(np.mean(counts))
            t = time.process_time()
            for _ in range(draws):
                s.draw(centre, scale, 1)
            row[f"{name}_cpu_ms_per_draw"] = 1e3 * (time.process_time() - t) / draws
        row["lattice_over_pymc"] = row["lattice_cpu_ms_per_draw"] / row["pymc_cpu_ms_per_draw"]
        row["lattice_over_snapped"] = row["lattice_cpu_ms_per_draw"] / row["snapped_cpu_ms_per_draw"]
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    res = {"draws": draws, "rows": rows, "load_start": load0, "load_end": os.getloadavg(),
           "lattice_step": LatticeSampler(law, 2).step}
    name = "bench_lattice_knorm" if args.law == "knorm" else "bench_lattice_t"
    _common.write_results(name, res, quick=args.quick, out=args.out)
    return res


if __name__ == "__main__":
    main()
