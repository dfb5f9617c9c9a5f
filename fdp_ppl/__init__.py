"""fdp_ppl: differential privacy for functional data, as PyMC generative models.

Quick start::

    import fdp_ppl as fp
    curves = fp.datasets.load_dataset("growth")          # xr.DataArray (curve, t)
    grid = fp.Grid.from_points(curves["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    summary = fp.iclp_qr_mean(curves, basis, tau=200.0)
    tree = fp.release(summary, fp.ICLP(epsilon=1.0))       # fresh OS entropy

The flow is curves → public spec (:mod:`fdp_ppl.summaries`) → fit →
mechanism and its noise law (:mod:`fdp_ppl.noise.mechanisms`, :mod:`fdp_ppl.noise.laws`)
→ release (:mod:`fdp_ppl.releasing`) → inference (:mod:`fdp_ppl.inference`).
"""

# Names are imported on first use (PEP 562), so ``import fdp_ppl`` and ``fdp-ppl --help`` / ``--version``
# do not load PyMC; ``fp.release`` etc. import their modules when asked for.
#: attribute -> module: the package's folders by stage, and the short names the docs and notebooks use
_SUBMODULES = {"datasets": "datasets", "dims": "dims", "settings": "settings", "errors": "errors", "io": "io",
               "units": "io.units", "spaces": "spaces", "summaries": "summaries", "tuning": "summaries.tuning",
               "noise": "noise", "laws": "noise.laws", "mechanisms": "noise.mechanisms",
               "elliptical": "noise.elliptical", "sampling": "noise.sampling", "accounting": "accounting",
               "releasing": "releasing", "schema": "releasing.schema", "registry": "releasing.registry",
               "inference": "inference", "auditing": "auditing",
               "plots": "plots", "testing": "testing"}
_NAMES = {
    "auditing": ("audit",),
    "accounting": ("PrivacyBudget", "PrivacyLedger", "PrivacyEvent", "analytic_sigma", "classical_sigma",
                   "gaussian_delta"),
    "accounting.curves": ("privacy_profile", "trade_off_curve", "privacy_in_words"),
    "io.units": ("PrivacyUnit",),
    "errors": ("BudgetExceededError", "CompatibilityError", "FdpPplError", "InputError", "PrivacyLeakWarning",
               "SchemaError", "SeededReleaseWarning"),
    "noise.mechanisms": ("FRL", "ICLP", "Bernstein", "GaussianMechanism", "Mechanism"),
    "inference": ("infer",),
    "inference.population": ("observe",),
    "releasing": ("release",),
    "releasing.plans": ("plan", "ReleasePlan"),
    "noise.sampling": ("CompiledSampler",),
    "spaces": ("Eigenbasis", "Exponential", "Gaussian", "Grid", "Matern", "eigenbasis", "kernel_from_name"),
    "summaries": ("BernsteinSpec", "FRLSpec", "ICLPARSpec", "ICLPQRSpec", "LinearSummary", "RKHSSpec",
                  "SampleMeanSpec", "Sensitivity", "SummarySpec", "bernstein_mean", "data_tau", "frl_mean",
                  "iclp_ar_mean", "iclp_qr_mean", "pss", "rkhs_mean", "sample_mean"),
}

def _families() -> None:
    """Each release family's folder (``fp.kde``) and public names (``fp.ExponentialMechanism``), read from the
    family registry (:data:`fdp_ppl.releasing.families.FAMILIES`, a standard-library leaf): a new family is
    reachable as ``fp.<folder>`` without editing this file."""
    from .releasing.families import FAMILIES

    for entry in FAMILIES:
        folder = entry.folder.partition(".")[2]
        _SUBMODULES.setdefault(folder, folder)
        _NAMES.setdefault(folder, ())
        _NAMES[folder] += tuple(n for n in entry.public if n not in _NAMES[folder])


_families()
_WHERE = {name: module for module, names in _NAMES.items() for name in names}


def __getattr__(name):
    import importlib

    if name == "__version__":  # read on first use: importlib.metadata is not imported by ``import fdp_ppl``
        from . import _version

        value = _version.__version__
    elif name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{_SUBMODULES[name]}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | set(_SUBMODULES) | {"__version__"})


__all__ = ["__version__", *_SUBMODULES, *_WHERE]
