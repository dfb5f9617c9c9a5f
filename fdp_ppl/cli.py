"""``fdp-ppl`` command line: private releases of mean curves from files or bundled data.

Commands
--------
``fdp-ppl release``
    Load curves (a bundled dataset name or a netCDF path), compute a mean
    summary clipped at a public τ, release it with one mechanism, write the
    release (``xarray.DataTree`` as netCDF) and optionally a PNG, and print a
    table of the public parameters.
``fdp-ppl demo``
    The end-to-end example on the bundled Berkeley growth curves.

Bad input ends with one line ``fdp-ppl: error: ...`` on stderr naming the fix
and exit code 2 (argparse's own usage errors also exit with 2).

Privacy notes
-------------
Everything written to the output file is public: released draws, the public
basis and noise scales, and the parameters. The number of curves clipped at τ
is printed for the data holder only and never written to the file. A public
reference curve subtracted before clipping (the demo's growth reference) is
fixed in advance from published growth charts, not computed from the data,
and adding it back to the release is post-processing.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

PROG = "fdp-ppl"
MECHANISMS = ("iclp-qr", "iclp-ar", "frl", "gaussian", "rkhs-gaussian")
GAUSSIAN_MECHANISMS = ("gaussian", "rkhs-gaussian")

from .datasets.references import (CDC2000_MEDIAN_HEIGHT_CM, GROWTH_DEVIATION_TAU, GROWTH_RAW_TAU,  # noqa: E402
                                  GROWTH_REFERENCE_SOURCE, growth_reference)


# --------------------------------------------------------------------------- errors
class CLIError(ValueError):
    """Bad command-line input; the message names the fix."""


#: library wording -> command-line wording in error messages
_CLI_WORDING = (
    ("drop_incomplete=True", "--drop-incomplete"),
    ("pass data_dir=... to load_dataset", "pass --data-dir DIR"),
    ("data_dir=...", "--data-dir DIR"),
    ("calibration='analytic'", "--calibration analytic"),
    ("choose one with var=...", "choose one with --var NAME"),
    ("curve_dim=", "--curve-dim "),
    ("t_dim=", "--t-dim "),
    ("M must lie in", "--M must lie in"),
)


def _one_line(msg) -> str:
    text = " ".join(str(msg).split())
    for old, new in _CLI_WORDING:
        text = text.replace(old, new)
    return text


def _fail(msg) -> int:
    print(f"{PROG}: error: {_one_line(msg)}", file=sys.stderr)
    return 2


# --------------------------------------------------------------------------- parser
def _add_output_args(p, default_out=None):
    p.add_argument("--out", default=default_out, required=default_out is None, metavar="PATH",
                   help="netCDF file for the release (xarray DataTree)" + (f"; default {default_out}" if default_out else ""))
    p.add_argument("--plot", default=None, metavar="PNG", help="also write a PNG of the release")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Differentially private releases of functional data (mean curves).")
    sub = parser.add_subparsers(dest="command", metavar="{release,demo}")
    sub.required = True

    r = sub.add_parser("release", help="release a private mean curve of a dataset",
                       description="Release a differentially private mean curve.")
    g = r.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="PATH_OR_NAME",
                   help="bundled dataset name (growth, weather, dti, electricity) or a netCDF path")
    g.add_argument("--var", default=None, help="variable to use (e.g. cca for dti, demand for electricity)")
    g.add_argument("--data-dir", default=None, metavar="DIR",
                   help="directory with the data files (default: $FDP_PPL_DATA_DIR or ../shared/data)")
    g.add_argument("--drop-incomplete", action="store_true",
                   help="drop curves with missing values (n then counts complete curves)")
    g.add_argument("--curve-dim", default=None, help="name of the record dimension in the file")
    g.add_argument("--t-dim", default=None, help="name of the grid dimension in the file")
    m = r.add_argument_group("mechanism")
    m.add_argument("--mechanism", required=True, choices=MECHANISMS,
                   help="iclp-qr / iclp-ar (ICLP, ε-DP), frl (ε-DP), gaussian / rkhs-gaussian ((ε, δ)-DP)")
    m.add_argument("--epsilon", required=True, type=float, help="privacy parameter ε > 0 per draw")
    m.add_argument("--delta", type=float, default=None, help="δ in (0, 1); required by the Gaussian mechanisms")
    m.add_argument("--calibration", choices=("classical", "analytic"), default=None,
                   help="Gaussian noise calibration (default classical, valid for ε <= 1)")
    m.add_argument("--bound", choices=("tight", "paper"), default="tight",
                   help="sensitivity bound calibrating the noise (default tight)")
    m.add_argument("--draws", type=int, default=1,
                   help="number of independent releases; N draws spend N × ε (default 1)")
    m.add_argument("--seed", type=int, default=None, help="random seed")
    s = r.add_argument_group("summary")
    s.add_argument("--tau", required=True, type=float,
                   help="public bound on each curve's L² norm on the rescaled domain [0, 1]; curves are clipped to it")
    s.add_argument("--kernel", default="matern32", help="noise kernel: matern12, matern32, matern52, exponential, gaussian (exp(-d²/ρ)), "
                        "gaussian-hall (exp(-d²/(2ρ²))); default matern32")
    s.add_argument("--rho", type=float, default=0.1, help="kernel length scale on [0, 1] (default 0.1)")
    s.add_argument("--eta", type=float, default=None, help="penalty power η (default: privacy-safe selection)")
    s.add_argument("--psi", type=float, default=None, help="penalty weight ψ (default 1/n)")
    s.add_argument("--M", type=int, default=None, help="number of components for frl (default floor(n^(1/3)))")
    _add_output_args(r)

    d = sub.add_parser("demo", help="private mean growth curve of the Berkeley growth study",
                       description="ICLP-QR release (ε = 1, Matérn 3/2, ρ = 0.1) of the mean height curve of "
                                   "the 93 Berkeley growth-study children, around a public growth reference.")
    _add_output_args(d, default_out="release.nc")
    d.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    d.add_argument("--raw", action="store_true",
                   help=f"no public reference: clip raw heights at tau = {GROWTH_RAW_TAU:g} cm (much noisier)")
    d.add_argument("--show-nonprivate", action="store_true",
                   help="draw the non-private estimate in the PNG (data holder only: do not publish that PNG)")
    d.add_argument("--data-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)
    return parser


# --------------------------------------------------------------------------- validation
def _check_args(a) -> None:
    def finite(x):
        return x is not None and math.isfinite(x)

    if not (finite(a.epsilon) and a.epsilon > 0):
        raise CLIError(f"--epsilon must be a finite number > 0 (got {a.epsilon}); pass e.g. --epsilon 1")
    if not (finite(a.tau) and a.tau > 0):
        raise CLIError(f"--tau must be a finite number > 0 (got {a.tau}); pass a public bound on the curves' "
                       "L2 norm, e.g. --tau 1 for curves with values in [-1, 1]")
    if not (finite(a.rho) and a.rho > 0):
        raise CLIError(f"--rho must be > 0 (got {a.rho}); e.g. --rho 0.1")
    if a.draws < 1:
        raise CLIError(f"--draws must be >= 1 (got {a.draws})")
    gaussian = a.mechanism in GAUSSIAN_MECHANISMS
    if gaussian:
        if a.delta is None:
            raise CLIError(f"--mechanism {a.mechanism} is (epsilon, delta)-DP and needs --delta, e.g. --delta 1e-5")
        if not (finite(a.delta) and 0 < a.delta < 1):
            raise CLIError(f"--delta must lie strictly between 0 and 1 (got {a.delta}); pass e.g. --delta 1e-5")
        if (a.calibration or "classical") == "classical" and a.epsilon > 1:
            raise CLIError(f"the classical Gaussian calibration is valid only for epsilon <= 1 (got {a.epsilon:g}); "
                           "pass --calibration analytic or a smaller --epsilon")
    else:
        if a.delta is not None:
            raise CLIError(f"--mechanism {a.mechanism} is pure epsilon-DP and takes no --delta; drop --delta or "
                           "use --mechanism gaussian")
        if a.calibration is not None:
            raise CLIError(f"--calibration applies only to the Gaussian mechanisms, not to {a.mechanism}; drop it")
    if a.M is not None and a.mechanism != "frl":
        raise CLIError("--M applies only to --mechanism frl; drop --M or use --eta/--psi")
    if a.mechanism == "frl" and (a.eta is not None or a.psi is not None):
        raise CLIError("--eta/--psi do not apply to --mechanism frl; use --M")
    if a.psi is not None and not (finite(a.psi) and a.psi > 0):
        raise CLIError(f"--psi must be > 0 (got {a.psi}); omit it for the privacy-safe default 1/n")
    if a.eta is not None and not finite(a.eta):
        raise CLIError(f"--eta must be a finite number (got {a.eta})")
    _check_out(a)


def _check_out(a) -> None:
    for flag, path in (("--out", a.out), ("--plot", a.plot)):
        if path is None:
            continue
        parent = Path(path).expanduser().resolve().parent
        if not parent.is_dir():
            raise CLIError(f"the directory of {flag} {path} does not exist; create it or choose another path")


# --------------------------------------------------------------------------- core
def _summary_and_mechanism(kind, curves, basis, a):
    import fdp_ppl as fp

    if kind == "iclp-qr":
        return fp.iclp_qr_mean(curves, basis, tau=a.tau, eta=a.eta, psi=a.psi), fp.ICLP(a.epsilon)
    if kind == "iclp-ar":
        return fp.iclp_ar_mean(curves, basis, tau=a.tau, eta=a.eta, psi=a.psi), fp.ICLP(a.epsilon)
    if kind == "frl":
        return fp.frl_mean(curves, basis, tau=a.tau, M=a.M), fp.FRL(a.epsilon)
    cal = a.calibration or "classical"
    mech = fp.GaussianMechanism(a.epsilon, a.delta, calibration=cal)
    if kind == "gaussian":
        return fp.iclp_qr_mean(curves, basis, tau=a.tau, eta=a.eta, psi=a.psi), mech
    eta = 1.0 if a.eta is None else a.eta
    return fp.rkhs_mean(curves, basis, tau=a.tau, eta=eta, psi=a.psi), mech


def _noise_energy(tree) -> float:
    """E‖ξ‖² of the noise on the released curve (grid L² norm), from public metadata."""
    scale = np.asarray(tree["constant_data"]["noise_scale"].values, dtype=float)
    var = 2.0 * scale**2 if tree.attrs.get("noise_law") == "laplace" else scale**2
    return float(np.sum(var))


def _annotate(tree, curves, labels: dict, offset=None, offset_source: str = ""):
    """Public descriptive metadata (names, units) and an optional public offset added back to the curve."""
    ca = curves.attrs
    t_attrs = {"long_name": ca.get("t_name"), "units": ca.get("t_units")}
    t_attrs.update(labels.get("t", {}))
    v_attrs = {"long_name": ca.get("long_name") or ca.get("variable") or curves.name, "units": ca.get("units")}
    v_attrs.update(labels.get("value", {}))
    t_attrs = {k: str(v) for k, v in t_attrs.items() if v}
    v_attrs = {k: str(v) for k, v in v_attrs.items() if v}
    post = tree["posterior"].to_dataset()
    curve = post["curve"]
    if offset is not None:
        curve = curve + _xr_line(offset, post)
        curve.attrs["description"] = ("released curve: public_offset(t) + sum_j coefficients_j phi_j(t); the "
                                      "coefficients are those of the released deviation from the public offset")
    else:
        curve.attrs["description"] = post["curve"].attrs.get("description", "")
    curve.attrs.update(v_attrs)
    post = post.assign(curve=curve)
    post["t_original"].attrs.update(t_attrs)
    tree["posterior"].dataset = post
    if offset is not None:
        const = tree["constant_data"].to_dataset()
        const["public_offset"] = (("t",), np.asarray(offset, dtype=float))
        const["public_offset"].attrs.update({"description": "public reference curve subtracted before clipping "
                                             "and added back to the released curve", "source": offset_source,
                                             **{k: v for k, v in v_attrs.items() if k == "units"}})
        tree["constant_data"].dataset = const
        tree.attrs["public_offset"] = offset_source
        tree.attrs["tau_applies_to"] = "deviation of each curve from public_offset"
    if "units" in v_attrs:
        tree.attrs["value_units"] = v_attrs["units"]
    if "units" in t_attrs:
        tree.attrs["t_units"] = t_attrs["units"]
    return tree


def _xr_line(values, post):
    import xarray as xr

    return xr.DataArray(np.asarray(values, dtype=float), dims=("t",), coords={"t": post["t"].values})


def _run(curves, kind, a, *, source: str, labels: dict | None = None, offset=None, offset_source: str = "",
         show_nonprivate: bool = False) -> int:
    """Summary -> release -> files -> table. Returns the exit code."""
    import fdp_ppl as fp

    labels = labels or {}
    grid = fp.Grid.from_points(np.asarray(curves["t"].values, dtype=float))
    basis = fp.eigenbasis(fp.kernel_from_name(a.kernel, a.rho), grid)
    x = curves if offset is None else curves - _xr_line(offset, curves)
    summary, mech = _summary_and_mechanism(kind, x, basis, a)
    tree = fp.release(summary, mech, draws=a.draws, random_seed=a.seed, bound=a.bound)
    tree.attrs["data_source"] = source
    _annotate(tree, curves, labels, offset, offset_source)
    out = Path(a.out).expanduser()
    tree.to_netcdf(out)
    if a.plot:
        _write_plot(tree, a.plot, offset=offset, offset_source=offset_source,
                    nonprivate=(summary.curve().values + (0 if offset is None else np.asarray(offset)))
                    if show_nonprivate else None)
    _print_table(tree, summary, out, a.plot, n_dropped=int(curves.attrs.get("n_dropped", 0) or 0))
    return 0


def _write_plot(tree, path, *, offset=None, offset_source="", nonprivate=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plots import plot_release

    ref_label = "public reference" + (" (CDC 2000 median)" if "CDC 2000" in offset_source else "")
    fig, ax = plot_release(tree, reference=offset, reference_label=ref_label,
                           truth=nonprivate, truth_label="non-private estimate (data holder only)")
    fig.savefig(Path(path).expanduser(), dpi=150)
    plt.close(fig)


_NAMES = {"iclp": "ICLP", "frl": "FRL", "gaussian": "Gaussian", "iclp-qr": "ICLP-QR", "iclp-ar": "ICLP-AR",
          "rkhs": "RKHS"}


def _print_table(tree, summary, out, plot, n_dropped: int = 0):
    at = tree.attrs
    energy = _noise_energy(tree)
    units = at.get("value_units")
    if units and (" " in str(units) or len(str(units)) > 12):
        units = None  # long descriptive units stay in the file and the plot labels
    u = f" {units}" if units else ""
    delta = float(at.get("delta", 0.0))
    norm = {"1,C": "‖·‖_{1,C}", "cameron-martin": "Cameron–Martin ‖·‖_C", "l1": "ℓ¹ of coefficients"}.get(
        at.get("sensitivity_norm"), at.get("sensitivity_norm"))
    tuning = ", ".join(f"{k}={summary.params[k]:.4g}" for k in ("eta", "psi", "M", "J_star") if k in summary.params)
    draws = int(at.get("draws", 1))
    rows = [
        ("mechanism", f"{_NAMES.get(at['mechanism'], at['mechanism'])} ({at['noise_law']} noise) on the "
                      f"{_NAMES.get(at['summary'], at['summary'])} mean"),
        ("epsilon", f"{float(at['epsilon']):g} per draw; spent {float(at['budget_spent_epsilon']):g} "
                    f"({draws} draw{'s' if draws > 1 else ''})"),
        ("delta", f"{delta:g}" + (f" per draw; spent {float(at['budget_spent_delta']):g}" if delta > 0 else " (pure ε-DP)")),
        ("sensitivity", f"{float(at['sensitivity']):.4g} in {norm} ({at['sensitivity_bound']} bound)"),
        ("tau", f"{float(at['tau']):g}{u}" + (" (deviation from the public reference)" if "public_offset" in at else "")),
        ("n", f"{int(at['n'])} curves × {int(at['grid_size'])} grid points"),
        ("kernel", f"{at['kernel']}, rho = {float(at['kernel_rho']):g}" + (f"; {tuning}" if tuning else "")),
        ("J components", f"{int(at['n_components'])}"),
        ("noise E‖ξ‖²", f"{energy:.4g}" + (f" {units}²" if units else "") + f"  (rms ‖ξ‖ = {math.sqrt(energy):.3g}{u})"),
        ("release", str(out)),
    ]
    if plot:
        rows.append(("plot", str(plot)))
    w = max(len(k) for k, _ in rows)
    print(f"{PROG} {at.get('data_source', '')}".rstrip())
    for k, v in rows:
        print(f"  {k:<{w}}  {v}")
    print(f"data holder only (not written to the file): {summary.n_clipped} of {summary.n} curves had L2 norm "
          f"above tau and were clipped")
    if n_dropped:
        print(f"data holder only: {n_dropped} incomplete curves were dropped before the release (n = {summary.n} "
              "counts complete curves)")


# --------------------------------------------------------------------------- commands
def _cmd_release(a) -> int:
    _check_args(a)
    from .datasets import load_dataset

    with warnings.catch_warnings():  # the count of dropped curves is printed with the table instead
        warnings.filterwarnings("ignore", message=".*incomplete curves.*", category=UserWarning)
        curves = load_dataset(a.data, a.var, data_dir=a.data_dir, drop_incomplete=a.drop_incomplete,
                              curve_dim=a.curve_dim, t_dim=a.t_dim)
    name = Path(str(a.data)).name
    source = f"{name}" + (f" / {a.var}" if a.var else "")
    return _run(curves, a.mechanism, a, source=source)


def _cmd_demo(a) -> int:
    _check_out(a)
    from .datasets import load_dataset

    curves = load_dataset("growth", data_dir=a.data_dir)
    ages = np.asarray(curves["t"].values, dtype=float)
    ns = argparse.Namespace(epsilon=1.0, delta=None, calibration=None, bound="tight", draws=1, seed=a.seed,
                            kernel="matern32", rho=0.1, eta=None, psi=None, M=None, out=a.out, plot=a.plot,
                            tau=GROWTH_RAW_TAU if a.raw else GROWTH_DEVIATION_TAU)
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
    return _run(curves, "iclp-qr", ns, source="growth (Berkeley growth study, fdars)", labels=labels,
                offset=offset, offset_source=src, show_nonprivate=a.show_nonprivate)


def main(argv=None) -> int:
    """Entry point of ``fdp-ppl`` and ``python -m fdp_ppl``; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse usage errors (exit 2) and --help (exit 0)
        return int(e.code) if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        if args.command == "release":
            return _cmd_release(args)
        return _cmd_demo(args)
    except CLIError as e:
        return _fail(e)
    except FileNotFoundError as e:
        msg = e.args[-1] if e.args else str(e)
        fname = getattr(e, "filename", None)
        return _fail(f"{msg}: {fname}" if fname and str(fname) not in str(msg) else msg)
    except (ValueError, TypeError, KeyError) as e:
        return _fail(e.args[0] if e.args else repr(e))
    except OSError as e:
        return _fail(f"cannot read or write a file: {e}")


__all__ = ["main", "build_parser", "growth_reference", "CDC2000_MEDIAN_HEIGHT_CM"]
