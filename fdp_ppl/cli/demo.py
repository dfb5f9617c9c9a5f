"""``fdp-ppl demo``: the end-to-end example, an ICLP-QR release (ε = 1, Matérn 3/2, ρ = 0.1) of the mean height
curve of the 93 Berkeley growth-study children, around a public growth reference (the CDC 2000 median height,
fixed in advance from published charts, :mod:`fdp_ppl.datasets.references`)."""

from __future__ import annotations

import argparse

from .. import dims
from .._progress import stage
from ..datasets.references import GROWTH_DEVIATION_TAU, GROWTH_RAW_TAU, GROWTH_REFERENCE_SOURCE, growth_reference
from .common import (DEFAULT_KERNEL, DEFAULT_RHO, SEED_HELP, add_ledger_args, add_output_args, check_ledger_args,
                     check_out, load_data, np, open_ledger, registry)
from .release import release_curves

def add_subparser(sub) -> None:
    d = sub.add_parser("demo", help="private mean growth curve of the Berkeley growth study",
                       description="ICLP-QR release (ε = 1, Matérn 3/2, ρ = 0.1) of the mean height curve of "
                                   "the 93 Berkeley growth-study children, around a public growth reference.")
    add_output_args(d, default_out="release.nc")
    d.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    d.add_argument("--raw", action="store_true",
                   help=f"no public reference: clip raw heights at tau = {GROWTH_RAW_TAU:g} cm (much noisier)")
    d.add_argument("--show-nonprivate", action="store_true",
                   help="draw the non-private estimate in the PNG (data holder only: do not publish that PNG)")
    d.add_argument("--data-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)
    add_ledger_args(d)


def run(a) -> int:
    check_out(a)
    check_ledger_args(a)
    ns = argparse.Namespace(mechanism="iclp-qr", epsilon=1.0, delta=None, nu=None, calibration=None, bound="tight",
                            draws=1, seed=a.seed, study=a.study, holder_report=a.holder_report, kernel=DEFAULT_KERNEL,
                            rho=DEFAULT_RHO, eta=None,
                            psi=None, M=None,
                            k=None, out=a.out, plot=a.plot, tau=GROWTH_RAW_TAU if a.raw else GROWTH_DEVIATION_TAU)
    mech = registry.MECHANISMS[ns.mechanism].mechanism(ns.epsilon)
    ledger = open_ledger(a, mech.budget)
    with stage("loading growth"):
        curves = load_data("growth", data_dir=a.data_dir)
    ages = np.asarray(curves[dims.T].values, dtype=float)
    labels = {"t": {"long_name": "age", "units": "years"}, "value": {"long_name": "mean height", "units": "cm"}}
    if a.raw:
        offset, src = None, ""
        print(f"demo: Berkeley growth heights, ICLP-QR, epsilon = 1, raw heights clipped at the public "
              f"tau = {GROWTH_RAW_TAU:g} cm")
    else:
        offset, src = growth_reference(ages), GROWTH_REFERENCE_SOURCE
        print("demo: Berkeley growth heights, ICLP-QR, epsilon = 1; deviations from the public CDC 2000 median "
              f"height clipped at the public tau = {GROWTH_DEVIATION_TAU:g} cm (run with --raw for tau = "
              f"{GROWTH_RAW_TAU:g} cm on raw heights: about 5x more noise)")
    return release_curves(curves, mech, ns, source="growth (Berkeley growth study, fdars)", ledger=ledger, labels=labels,
                offset=offset, offset_source=src, show_nonprivate=a.show_nonprivate)


__all__ = ["add_subparser", "run"]
