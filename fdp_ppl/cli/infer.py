"""``fdp-ppl infer``: the posterior of the true curve given one release file (no privacy cost).

Reads a mean-curve release (``fdp-ppl release``, :func:`fdp_ppl.release`) with ``xr.open_datatree``,
runs :func:`fdp_ppl.infer` with a GP or ICLP prior built from the flags, and writes the inference result
(``posterior/curve`` (chain, draw, t), ``coefficients``, hyperparameters, ``observed_data``, ``log_likelihood``)
with the package's atomic :func:`~fdp_ppl.cli.common.write_release`, optionally with a posterior band plot
(:func:`fdp_ppl.plots.plot_inference`). Inference reads only the public release, so it is post-processing:
it costs no privacy, needs no ledger and may be seeded freely.

A release of another family (a density, a kernel machine, principal components, any family of
:data:`fdp_ppl.releasing.families.FAMILIES`) gets its family's posterior through :func:`fdp_ppl.infer`, the flags its
inference does not take (``ReleaseEntry.infer_options``) refused with one line; an inference result is refused with
one line that names what the file is.

This module imports only :mod:`argparse` at import time.
"""

from __future__ import annotations

import argparse  # noqa: F401  (the only import at module import time)

NAME = "infer"
PRIORS = ("gp", "iclp")
#: :data:`fdp_ppl.inference.infer.TARGETS` and :data:`fdp_ppl.inference.plan.METHODS` (repeated here so that
#: ``--help`` imports nothing heavy; tests/cli/test_infer.py checks they agree)
TARGETS = ("summary", "population")
METHODS = ("auto", "exact", "nuts", "marginal", "whitened", "mixture", "dense", "gibbs", "quadrature")
NUS = (0.5, 1.5, 2.5)
#: prior flags -> the priors that take them
#: the library's keyword names in :func:`fdp_ppl.infer`'s messages -> the flags (messages of the inference step only)
_INFER_FLAGS = (("method='auto' or 'nuts'", "--method auto or nuts"), ("method='auto'", "--method auto"),
                ("method='exact' or 'auto'", "--method exact or auto"), ("method=", "--method "),
                ("target='summary'", "--target summary"), ("target='population'", "--target population"),
                ("fix lengthscale, amplitude and mean", "pass --lengthscale, --amplitude and --mean"),
                ("pass sampling_sd", "pass --sampling-sd"),
                ("(fix both)", "(pass --amplitude and --smoothness)"), ("draws/tune", "--draws / --tune"),
                ("raise target_accept", "raise --target-accept"),
                ("use a GP prior", "use --prior gp"), ("draws=", "--draws "))
_PRIOR_FLAGS = {"nu": ("gp",), "lengthscale": ("gp",), "mean": ("gp",), "mean_loc": ("gp",), "mean_scale": ("gp",),
                "amplitude": ("gp", "iclp"), "amplitude_scale": ("gp", "iclp"), "smoothness": ("iclp",)}


def add_subparser(sub) -> None:
    """Add ``infer`` to the sub-command parsers of ``fdp-ppl``."""
    p = sub.add_parser(
        NAME, help="posterior of the true curve given a release file (no privacy cost)",
        description="Noise-aware Bayesian inference from one private mean-curve release: the posterior of the\n"
                    "underlying curve given the released coefficients, with the mechanism's public noise law as\n"
                    "the likelihood (fdp_ppl.infer). Exact independent draws when every hyperparameter is fixed\n"
                    "and the model allows it, NUTS otherwise. It reads only the public release, so it is\n"
                    "post-processing: no privacy cost, no ledger.",
        epilog="examples:\n"
               "  fdp-ppl infer release.nc --prior iclp --smoothness 2 --amplitude 5 --out post.nc --plot post.png\n"
               "  fdp-ppl infer release.nc --prior gp --lengthscale 0.1 --out post.nc   (amplitude, level learned: "
               "NUTS)\n"
               "A flag left out leaves that hyperparameter free (a hyperprior); fixing all of them gives exact\n"
               "draws without MCMC where the prior is diagonal in the release's basis.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("release", metavar="RELEASE", help="release file (netCDF) written by fdp-ppl release / fp.release")
    g = p.add_argument_group("prior (a flag left out: the hyperparameter is learned)")
    g.add_argument("--prior", default=None, choices=PRIORS,
                   help="gp: Gaussian-process prior on the curve (Matern covariance); iclp: ICLP prior on the "
                        "release's eigen-coefficients, Laplace with covariance C^s (eigenbasis releases only); "
                        "required for a mean-curve release; a density (kde) or kernel-machine (svm) release has "
                        "its family's own prior (leave it out)")
    g.add_argument("--nu", type=float, default=None, choices=NUS, help="gp: Matern smoothness (default 1.5)")
    g.add_argument("--lengthscale", type=float, default=None, metavar="RHO",
                   help="gp: fixed length-scale on the [0, 1] grid scale (default: LogNormal(log 0.2, 1) hyperprior)")
    g.add_argument("--amplitude", type=float, default=None, metavar="A",
                   help="gp: fixed marginal sd of the curve; iclp: fixed amplitude a (units of the curves; default: "
                        "HalfNormal(--amplitude-scale) hyperprior)")
    g.add_argument("--amplitude-scale", type=float, default=None, metavar="S",
                   help="scale of the amplitude hyperprior (default: twice the released curve's spread (gp) or L2 "
                        "norm (iclp), public quantities)")
    g.add_argument("--smoothness", type=float, default=None, metavar="S",
                   help="iclp: fixed power s >= 1 of the prior covariance C^s (default: s = 1 + HalfNormal(2))")
    g.add_argument("--mean", type=float, default=None, metavar="M",
                   help="gp: fixed constant mean level (default: Normal(--mean-loc, --mean-scale) hyperprior); "
                        "with a public offset in the release, the level of the deviation from it")
    g.add_argument("--mean-loc", type=float, default=None, metavar="M",
                   help="gp: location of the mean-level hyperprior (default: the released curve's level)")
    g.add_argument("--mean-scale", type=float, default=None, metavar="S",
                   help="gp: scale of the mean-level hyperprior (default: twice the released curve's spread)")
    m = p.add_argument_group("inference")
    m.add_argument("--target", choices=TARGETS, default=None,
                   help="population: the population mean, undoing the summary's public shrinkage and adding the "
                        "sampling error of the mean (default where the release allows it: independent noise "
                        "coefficients and a summary linear in the sample mean); summary: the released summary "
                        "itself, shrunk toward its centre (the default otherwise)")
    m.add_argument("--sampling-sd", type=float, default=None, metavar="SD",
                   help="--target population: public/assumed sd of one curve's coefficients (default: learned)")
    m.add_argument("--method", choices=METHODS, default="auto",
                   help="auto (default): exact where the model allows, else an exactly targeted Gibbs sampler or the "
                        "cheapest NUTS model (said on stderr); exact: refuse if exact draws are impossible; nuts: force the latent-scale NUTS model; the others pick a "
                        "model of fdp_ppl.inference.build_model")
    m.add_argument("--release-draw", type=int, default=0, metavar="K",
                   help="which released draw to condition on (default 0; each draw is a separate publication)")
    m.add_argument("--draws", type=int, default=1000, metavar="N", help="posterior draws per chain (default 1000)")
    m.add_argument("--tune", type=int, default=None, metavar="N", help="NUTS tuning steps per chain (default 1000; unused by exact "
                                                          "draws)")
    m.add_argument("--chains", type=int, default=2, metavar="N", help="chains (default 2)")
    m.add_argument("--target-accept", type=float, default=None, metavar="P",
                   help="NUTS target acceptance (default 0.9; 0.95 when NUTS samples the noise's latent mixing scales)")
    m.add_argument("--ci-prob", type=float, default=None, metavar="P",
                   help="probability of the credible band summarised in the table and drawn in the plot (default "
                        "0.9, every family)")
    m.add_argument("--seed", type=int, default=None, metavar="S",
                   help="seed of the posterior draws (reproducible results; any value: inference reads only the "
                        "public release, so no privacy is at stake); default: fresh entropy")
    o = p.add_argument_group("output")
    o.add_argument("--out", required=True, metavar="PATH", help="netCDF file for the inference result (DataTree)")
    o.add_argument("--plot", default=None, metavar="PNG",
                   help="also write a PNG of the posterior mean and credible band over the release")
    o.add_argument("--force", action="store_true",
                   help="replace an existing --out / --plot file (the old file stays intact until the new one is "
                        "completely written; the release file is never replaced)")


def _check(a) -> None:
    """Public checks of the flags and the outputs, before the release is read."""
    from .common import CLIError, check_outputs, finite

    for key, priors in _PRIOR_FLAGS.items():
        if getattr(a, key) is not None and a.prior is not None and a.prior not in priors:
            flag = "--" + key.replace("_", "-")
            raise CLIError(f"{flag} applies to --prior {' / '.join(priors)} only (got --prior {a.prior})",
                           f"drop {flag}")
    positive = ("lengthscale", "amplitude", "amplitude_scale", "mean_scale", "sampling_sd")
    for key in positive:
        v = getattr(a, key)
        if v is not None and not (finite(v) and v > 0):
            flag = "--" + key.replace("_", "-")
            raise CLIError(f"{flag} must be a finite number > 0 (got {v})", f"pass e.g. {flag} 1")
    for key in ("mean", "mean_loc"):
        v = getattr(a, key)
        if v is not None and not finite(v):
            flag = "--" + key.replace("_", "-")
            raise CLIError(f"{flag} must be a finite number (got {v})", f"pass e.g. {flag} 0")
    if a.smoothness is not None and not (finite(a.smoothness) and a.smoothness >= 1):
        raise CLIError(f"--smoothness must be a finite number >= 1 (got {a.smoothness})", "pass e.g. --smoothness 2")
    if a.sampling_sd is not None and a.target == "summary":
        raise CLIError("--sampling-sd applies to --target population only", "drop --sampling-sd")
    if a.draws < 1:
        raise CLIError(f"--draws must be >= 1 (got {a.draws})", "pass e.g. --draws 1000")
    if a.tune is not None and a.tune < 0:
        raise CLIError(f"--tune must be >= 0 (got {a.tune})", "pass e.g. --tune 1000")
    if a.chains < 1:
        raise CLIError(f"--chains must be >= 1 (got {a.chains})", "pass e.g. --chains 2")
    if a.target_accept is not None and not (finite(a.target_accept) and 0 < a.target_accept < 1):
        raise CLIError(f"--target-accept must lie in (0, 1) (got {a.target_accept})", "pass e.g. --target-accept 0.9")
    if a.ci_prob is not None and not (finite(a.ci_prob) and 0 < a.ci_prob < 1):
        raise CLIError(f"--ci-prob must lie in (0, 1) (got {a.ci_prob})", "pass e.g. --ci-prob 0.9")
    if a.release_draw < 0:
        raise CLIError(f"--release-draw must be >= 0 (got {a.release_draw})", "pass e.g. --release-draw 0")
    if a.seed is not None and a.seed < 0:
        raise CLIError("--seed must be a non-negative integer", "pass e.g. --seed 1, or omit it")
    # the package's one output guard (directories, --out / --plot distinct, never the release file or a ledger,
    # --force); the seed rule for releases does not apply here (no privacy at stake)
    check_outputs(a)


def _family(tree) -> tuple[str, str] | None:
    """What a tree is when :func:`fdp_ppl.infer` cannot read it (None: it may be a release of a family it serves)."""
    from ..releasing.schema import INFERENCE, KIND_ATTR

    kind = tree.attrs.get(KIND_ATTR)
    if kind == INFERENCE:
        return ("an inference result (fdp-ppl infer / fp.infer), not a release",
                "pass the release it was computed from")
    return None


#: flags that describe a mean-curve prior or model, refused for the other families (their priors are their own)
_MEAN_ONLY = (("nu", "--nu"), ("lengthscale", "--lengthscale"), ("mean", "--mean"), ("mean_loc", "--mean-loc"),
              ("mean_scale", "--mean-scale"), ("smoothness", "--smoothness"), ("sampling_sd", "--sampling-sd"))


def _other_family(tree) -> str | None:
    """The family of a release of any family but the mean curve's (a density, a kernel machine, principal
    components, or any family the registry names: served by its own inference hook), else None."""
    from ..releasing.schema import release_family

    family = release_family(tree)
    return family if family not in (None, "mean") else None


def _read(a):
    """The release in memory, checked to be a mean-curve release :func:`fdp_ppl.infer` reads."""
    from pathlib import Path

    import xarray as xr

    from .common import CLIError, os_message
    from ..errors import SchemaError
    from ..releasing.schema import read_release

    path = Path(str(a.release)).expanduser()
    if not path.exists():
        raise CLIError(f"release file {a.release} does not exist", "pass the path of a file written by fdp-ppl release")
    if path.is_dir():
        raise CLIError(f"{a.release} is a directory, not a release file", "pass a netCDF file written by fdp-ppl release")
    try:
        with xr.open_datatree(path) as tree:
            tree = tree.load()
    except OSError as err:
        raise CLIError(f"cannot read {a.release} as a netCDF release: {os_message(err)}",
                       "pass a netCDF file written by fdp-ppl release") from None
    except (ValueError, TypeError, KeyError):
        raise CLIError(f"cannot read {a.release}: it is not a netCDF file",
                       "pass a netCDF file written by fdp-ppl release") from None
    family = _family(tree)
    if family is not None:
        raise CLIError(f"{a.release} is {family[0]}", family[1])
    if _other_family(tree) is not None:
        return tree, None
    try:
        view = read_release(tree)
    except SchemaError as err:
        raise CLIError(f"{a.release} is not a mean-curve release: {err.message}",
                       err.fix or "pass a file written by fdp-ppl release / fp.release") from None
    if a.release_draw >= view.n_draws:
        raise CLIError(f"--release-draw {a.release_draw} is out of range: {a.release} holds {view.n_draws} draw(s)",
                       f"pass --release-draw between 0 and {view.n_draws - 1}")
    return tree, view


def _flags(text: str) -> str:
    """A library message about :func:`fdp_ppl.infer`'s keywords, in terms of this command's flags."""
    import re

    for py, flag in _INFER_FLAGS:
        text = text.replace(py, flag)
    names = r"(?:lengthscale|amplitude|mean|smoothness)"   # "fix amplitude and mean" -> "pass --amplitude and --mean"
    return re.sub(rf"\bfix ({names}(?:(?:, | and ){names})*)\b",
                  lambda mt: "pass " + re.sub(rf"\b({names})\b", r"--\1", mt.group(1)), text)


def _prior(a):
    from ..inference import GPPrior, ICLPPrior

    if a.prior == "gp":
        kw = {k: getattr(a, k) for k in ("lengthscale", "amplitude", "amplitude_scale", "mean", "mean_loc",
                                         "mean_scale")}
        return GPPrior(nu=1.5 if a.nu is None else a.nu, **kw)
    return ICLPPrior(amplitude=a.amplitude, amplitude_scale=a.amplitude_scale, smoothness=a.smoothness)


def _prior_text(a, prior) -> str:
    def val(v, learned):
        return f"{v:g}" if v is not None else learned

    if a.prior == "gp":
        amp = ("learned (HalfNormal" + (f"({a.amplitude_scale:g}))" if a.amplitude_scale is not None else ")")
               if a.amplitude is None else f"{a.amplitude:g}")
        mean = ("learned (Normal" + (f", loc {a.mean_loc:g}" if a.mean_loc is not None else "")
                + (f", scale {a.mean_scale:g}" if a.mean_scale is not None else "") + ")"
                if a.mean is None else f"{a.mean:g}")
        return (f"GP, Matern nu = {prior.nu:g}; length-scale {val(a.lengthscale, 'learned (LogNormal(log 0.2, 1))')}; "
                f"amplitude {amp}; mean level {mean}")
    amp = ("learned (HalfNormal" + (f"({a.amplitude_scale:g}))" if a.amplitude_scale is not None else ")")
           if a.amplitude is None else f"{a.amplitude:g}")
    return (f"ICLP on the release's eigen-coefficients, covariance C^s; smoothness s "
            f"{val(a.smoothness, 'learned (1 + HalfNormal(2))')}; amplitude {amp}")


def run(a) -> int:
    """Run ``fdp-ppl infer`` with parsed arguments; returns the exit code."""
    import contextlib
    import logging
    import sys
    import warnings

    from .._progress import progress_mode, stage
    from .common import CLIError, write_release
    from ..errors import FdpPplError

    _check(a)
    with stage(f"reading {a.release}"):
        release, view = _read(a)
    if view is None:
        return _run_other(a, release, _other_family(release))
    if a.prior is None:
        raise CLIError("a mean-curve release needs --prior", "pass --prior gp or --prior iclp (with its "
                       "hyperparameters: see fdp-ppl infer --help)")
    prior = _prior(a)

    import fdp_ppl as fp

    from ..inference import InferenceWarning

    bars = progress_mode() == "spinner"  # on a terminal: PyMC's own progress bar for NUTS (one live display)
    pymc_log = logging.getLogger("pymc")
    level = pymc_log.level
    if not bars:
        pymc_log.setLevel(logging.WARNING)
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught, \
                (contextlib.nullcontext() if bars else stage("computing the posterior")):
            warnings.simplefilter("always", InferenceWarning)
            warnings.simplefilter("always", UserWarning)
            result = fp.infer(release, prior, target=a.target, draw=a.release_draw, sampling_sd=a.sampling_sd,
                              method=a.method, draws=a.draws, chains=a.chains, **_nuts_options(a), random_seed=a.seed,
                              progressbar=bars,
                              provenance={"release_file": str(a.release)})
    except FdpPplError as err:  # the library's message, in terms of flags
        raise CLIError(_flags(err.message), _flags(err.fix)) from None
    finally:
        pymc_log.setLevel(level)
    notes = [_flags(" ".join(str(w.message).split())) for w in caught
             if issubclass(w.category, (InferenceWarning, UserWarning)) and "BLAS" not in str(w.message)]
    failed = [n for n in notes if n.startswith("MCMC diagnostics failed")]

    from .common import plotter

    draw_plot = plotter("plot_inference", release_tree=release, ci_prob=a.ci_prob)
    out = write_release(result, a.out, a.plot, draw_plot, charged=False)  # inference charges nothing
    _print_table(a, release, view, result, prior, out, failed)
    for note in notes:
        print(f"fdp-ppl: warning: {note}", file=sys.stderr)
    return 0


def _nuts_options(a) -> dict:
    """The NUTS options given on the command line (``fp.infer`` keeps its own defaults for the others)."""
    return {key: value for key, value in (("tune", a.tune), ("target_accept", a.target_accept)) if value is not None}


#: families whose posterior ``--plot`` draws (:func:`fdp_ppl.plots.plot_inference`), beside the mean curve
_PLOTTED = ("kde", "machine")
#: families whose prior the amplitude flags set: family -> qualified name of the prior class (its keywords
#: ``amplitude``, ``amplitude_scale``)
_AMPLITUDE_PRIORS = {"kde": "fdp_ppl.inference.density.DensityPrior"}


def _run_other(a, release, family: str) -> int:
    """``fdp-ppl infer`` on a release of another family than the mean curve's: the family's posterior (its
    inference hook, ``ReleaseEntry.inference``, through :func:`fdp_ppl.infer`), written atomically, and its table.
    The flags the family's inference does not take (``ReleaseEntry.infer_options``) are refused with one line."""

    from ..errors import FdpPplError
    from ..releasing.families import BY_NAME, load
    from .common import CLIError

    entry = BY_NAME[family]
    takes = entry.infer_options
    name = entry.label
    for attr, flag in _MEAN_ONLY:
        if getattr(a, attr, None) is not None:
            raise CLIError(f"{flag} describes a mean-curve prior; a {name} release has its own prior",
                           f"drop {flag}")
    if a.prior not in (None, "gp"):
        raise CLIError(f"--prior {a.prior} is a mean-curve prior; a {name} release takes the default --prior gp "
                       "(its family's own prior)", "drop --prior")
    if a.method not in ("auto", "exact"):
        raise CLIError(f"--method {a.method} does not apply: a {name} release's posterior is drawn exactly",
                       "drop --method")
    for flag, key, value in (("--tune", "tune", a.tune), ("--target-accept", "target_accept", a.target_accept)):
        if value is not None and key not in takes:
            raise CLIError(f"{flag} tunes NUTS; a {name} release's posterior is drawn exactly, without NUTS",
                           f"drop {flag}")
    if a.plot and family not in _PLOTTED:
        plotted = ", ".join(["curve"] + [BY_NAME[f].label for f in _PLOTTED[:-1]])
        raise CLIError(f"--plot is drawn for {plotted} and {BY_NAME[_PLOTTED[-1]].label} posteriors; for a {name} "
                       "release use the intervals in the result file", "drop --plot")
    amplitude = a.amplitude is not None or a.amplitude_scale is not None
    if (a.target is not None and "target" not in takes) or (a.release_draw and "draw" not in takes) or (
            amplitude and family not in _AMPLITUDE_PRIORS):
        raise CLIError(f"a {name} release is inferred from all its frames (every released draw) with its family's "
                       "own prior", "drop --target, --release-draw and --amplitude*")
    options = {"target": a.target, "draw": a.release_draw, "method": a.method, "draws": a.draws,
               "chains": a.chains, "random_seed": a.seed, **_nuts_options(a)}
    if amplitude:
        options["prior"] = load(_AMPLITUDE_PRIORS[family])(amplitude=a.amplitude,
                                                          amplitude_scale=a.amplitude_scale or 1.0)
    import sys
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            result = _infer_other(a, release, {k: v for k, v in options.items() if k in takes},
                                  nuts="tune" in takes)
    except FdpPplError as err:
        raise CLIError(_flags(err.message), _flags(err.fix)) from None
    notes = [_flags(" ".join(str(w.message).split())) for w in caught
             if issubclass(w.category, UserWarning) and "BLAS" not in str(w.message)]
    out = _write_other(a, result, family, release)
    for note in notes:
        print(f"fdp-ppl: warning: {note}", file=sys.stderr)
    return out


def _infer_other(a, release, options: dict, nuts: bool):
    """The family's posterior (``fp.infer`` dispatches on the release's kind) with the options it takes."""
    import contextlib

    import fdp_ppl as fp

    from .._progress import progress_mode, stage

    provenance = {"release_file": str(a.release)}
    if nuts:  # a family sampled with NUTS (the principal components' covariance): PyMC's bar on a terminal
        bars = progress_mode() == "spinner"
        with (contextlib.nullcontext() if bars else stage("computing the posterior (NUTS)")):
            return fp.infer(release, **options, progressbar=bars, provenance=provenance)
    with stage("computing the posterior (exact draws)"):
        return fp.infer(release, **options, provenance=provenance)


def _machine_rows(result, ci) -> list:
    from ..inference import describe_machine_inference

    return describe_machine_inference(result, ci_prob=ci)


def _fpca_rows(result, ci) -> list:
    evr = result["posterior"]["explained_variance_ratio"]
    top = evr.isel({d: 0 for d in evr.dims if d not in ("chain", "draw")}) if evr.ndim > 2 else evr
    lo, hi = (float(top.quantile(q)) for q in ((1 - ci) / 2, (1 + ci) / 2))
    return _generic_rows(result, ci) + [
        ("explained", f"top component explains {float(top.mean()):.2f} of the second moment ({ci:.0%} "
                      f"interval {lo:.2f}-{hi:.2f})")]


def _kde_rows(result, ci) -> list:
    from ..inference import density_bands

    name_var = "population" if "population" in result["posterior"].data_vars else "kde"
    one_d = result["posterior"][name_var].ndim == 3
    bands = density_bands(result, ci_prob=ci, functionals=one_d)
    width = bands[f"{name_var}_upper"] - bands[f"{name_var}_lower"]
    rows = [("target", "the smoothed population density E[kde]" if name_var == "population" else
             "the non-private density estimate the release is centred on"),
            ("method", str(result.attrs.get("inference_description", "exact draws"))),
            ("band", f"{ci:.0%} ETI of the density: mean width {float(width.mean()):.3g}, largest "
                     f"{float(width.max()):.3g}")]
    if one_d:
        rows.append(("modes", f"P(more than one mode) = {float(bands['prob_multimodal']):.2f}"))
    return rows


def _generic_rows(result, ci) -> list:
    """What every inference result records (a family without rows of its own in :data:`_ROWS` prints these)."""
    at = result.attrs
    rows = [("target", str(at.get("target", ""))), ("prior", str(at.get("prior_description", ""))),
            ("method", str(at.get("inference_description", "")))]
    if "release_frames" in at:
        rows.append(("frames", f"{int(at['release_frames'])} released frame(s), each an independent observation"))
    if "diagnostic_max_rhat" in at:
        rows.append(("diagnostics", f"max R-hat {float(at['diagnostic_max_rhat']):.3f}, min ESS bulk "
                                    f"{float(at.get('diagnostic_min_ess_bulk', float('nan'))):.0f}, "
                                    f"{int(at.get('diagnostic_divergences', 0))} divergences"))
    return rows


#: the table rows of a family's posterior (family -> rows(result, ci_prob)); any other family: :func:`_generic_rows`
_ROWS = {"kde": _kde_rows, "machine": _machine_rows, "fpca": _fpca_rows}


def _write_other(a, result, family, release) -> int:
    """Write another family's posterior atomically (with its band plot for ``--plot``) and print its table."""
    from .common import plotter, print_table, write_release

    draw_plot = plotter("plot_inference", release_tree=release, ci_prob=a.ci_prob) if a.plot else None
    out = write_release(result, a.out, a.plot, draw_plot, charged=False)  # inference charges nothing
    from ..inference.bands import ci_defaults

    ci = ci_defaults(a.ci_prob)[0]
    rows = _ROWS.get(family, _generic_rows)(result, ci)
    rows = [("release", str(a.release)),
            ("privacy cost", "none: post-processing of the public release (nothing charged, no ledger)"),
            *rows, ("seed", "given (reproducible; no privacy at stake)" if a.seed is not None else
                    "none (fresh entropy)"), ("posterior", str(out))] + ([("plot", str(a.plot))] if a.plot else [])
    print_table(f"infer {a.release}", rows)
    return 0


def _print_table(a, release, view, result, prior, out, failed) -> None:
    import numpy as np

    from ..releasing import registry
    from .common import print_table
    from ..inference import credible_band

    meta = view.metadata
    at = result.attrs
    privacy = (f"epsilon {meta.epsilon:g}, delta {meta.delta:g}" if meta.delta > 0
               else f"epsilon {meta.epsilon:g} (pure epsilon-DP)")
    privacy += (f" per draw; {meta.draws} draw{'s' if meta.draws > 1 else ''} released, spent epsilon "
                f"{meta.budget_spent_epsilon:g}" + (f", delta {meta.budget_spent_delta:g}" if meta.delta > 0 else ""))
    exact = at.get("inference") == "exact"
    sampler = str(at.get("inference_sampler", ""))
    method = (f"{at.get('inference')} ({at.get('inference_model')} model"
              + ((", Gibbs sampler" if sampler == "gibbs" else f", {sampler} NUTS") if not exact and sampler not in ("", "none") else "") + "): "
              + str(at.get("inference_description", "")))
    draws = (f"{a.chains} chain{'s' if a.chains > 1 else ''} × {a.draws} draws"
             + ("" if exact else f" after {1000 if a.tune is None else a.tune} tuning steps each"))
    if exact:
        diag = "exact independent draws: R-hat 1 and ESS = number of draws by construction"
    else:
        rhat = float(at["diagnostic_max_rhat"])
        diag = ((f"max R-hat {rhat:.3f}" if np.isfinite(rhat) else "R-hat n/a"
                                                                     + (" (one chain: pass --chains 2 or more)"
                                                                        if a.chains == 1 else ""))
                + ", min ESS bulk "
                f"{float(at['diagnostic_min_ess_bulk']):.0f} / tail {float(at['diagnostic_min_ess_tail']):.0f}, "
                f"{int(at['diagnostic_divergences'])} divergences"
                + ("; FAILED: run longer (--draws, --tune), raise --target-accept or fix hyperparameters"
                   if failed else "; passed"))
    band = credible_band(result, ci_prob=a.ci_prob)
    width = np.asarray(band["upper"].values - band["lower"].values, dtype=float)
    units = result["posterior"]["curve"].attrs.get("units")
    u = f" {units}" if units and " " not in str(units) and len(str(units)) <= 12 else ""
    band_text = (f"{band.attrs['ci_prob']:.0%} pointwise credible band ({str(band.attrs['ci_kind']).upper()}): mean "
                 f"width {width.mean():.4g}{u} over {width.size} grid points (min {width.min():.4g}, max "
                 f"{width.max():.4g})")
    rows = [
        ("release", str(a.release) + (f" (draw {a.release_draw} of {meta.draws})" if meta.draws > 1 else "")),
        ("mechanism", f"{registry.label(meta.mechanism)} ({registry.label(meta.noise_law, 'law')} noise) on the "
                      f"{registry.label(meta.summary, 'summary')}"),
        ("release privacy", privacy),
        ("privacy cost", "none: post-processing of the public release (nothing charged, no ledger)"),
        ("prior", _prior_text(a, prior)),
        ("target", ("the released summary (shrunk toward its centre)" if result.attrs["target"] == "summary" else
                    "the population mean (the summary's shrinkage undone, sampling error of the mean added)")
         + ("" if a.target else " — the default for this release")),
        ("inference", method),
        ("because", _flags(str(at.get("inference_reason", "")))),
        ("draws", draws),
        ("diagnostics", diag),
        ("band", band_text),
        ("seed", "given (reproducible; no privacy at stake)" if a.seed is not None else "none (fresh entropy)"),
        ("posterior", str(out)),
    ]
    if a.plot:
        rows.append(("plot", str(a.plot)))
    print_table(f"infer {a.release}", rows)


__all__ = ["add_subparser", "run"]
