"""One release entry for every family: ``fp.release`` dispatches through ``fdp_ppl.releasing.registry.RELEASES``.

Each family's release through :func:`fdp_ppl.release` equals the one its family function makes
(same seed: same values, same attrs); a wrong mechanism or an option the family does not take is
refused before the ledger is charged.
"""

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.errors import CompatibilityError, InputError
from fdp_ppl.releasing.registry import RELEASES

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning")

#: attrs that record when a tree was made (differ between two calls by construction)
_CLOCK = {"created_at"}


def _family(fitted_class: str):
    """The family release function the registry names for a fitted class (imported through the registry)."""
    (entry,) = [e for key, e in RELEASES.items() if key.endswith("." + fitted_class)]
    return entry.resolve()


def _same(a, b):
    """Two release trees hold the same variables, values, dims and attrs (creation times aside)."""
    attrs_a, attrs_b = ({k: v for k, v in t.attrs.items() if k not in _CLOCK} for t in (a, b))
    assert attrs_a.keys() == attrs_b.keys()
    np.testing.assert_equal(attrs_a, attrs_b)  # NaN equals NaN here (e.g. eta of an (epsilon, delta) FPCA plan)
    assert set(a.groups) == set(b.groups)
    for group in a.groups:
        da, db = a[group].to_dataset(), b[group].to_dataset()
        assert set(da.data_vars) == set(db.data_vars), group
        for name in da.data_vars:
            assert da[name].dims == db[name].dims
            np.testing.assert_array_equal(da[name].values, db[name].values)


def _curves(n=30, K=25, seed=0):
    import xarray as xr

    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, K)
    values = np.sin(2 * np.pi * t)[None] + 0.3 * rng.standard_normal((n, 1)) * np.cos(np.pi * t)[None]
    return xr.DataArray(values, dims=("curve", "t"), coords={"t": t})


@pytest.fixture(scope="module")
def mean_summary():
    curves = _curves()
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.from_points(curves["t"].values))
    return fp.iclp_qr_mean(curves, basis, tau=2.0)


@pytest.fixture(scope="module")
def kde_fit():
    from fdp_ppl.kde import CartesianGrid, KDESpec

    x = np.random.default_rng(1).uniform(0.2, 0.8, 40)
    return KDESpec(grid=CartesianGrid.uniform((0.0, 1.0), 50), bandwidth=0.15, n=40).fit(x)


@pytest.fixture(scope="module")
def erm_fit():
    from fdp_ppl.erm import ERMSpec

    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, (12, 1))
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    return ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=1.0, n=12, grid_size=20).fit(X, y)


@pytest.fixture(scope="module")
def fpca_fit():
    from fdp_ppl.expmech import FPCASpec

    curves = _curves(n=20, K=30, seed=3).values
    return FPCASpec(grid=fp.Grid.uniform(30), m=5, k=1, epsilon=1.0, tau=2.0).fit(curves)


# ---------------------------------------------------------------------- same release as the family function
def test_mean_release_equals_family_function(mean_summary):
    release_linear = _family("LinearSummary")

    mech = fp.ICLP(1.0)
    _same(fp.release(mean_summary, mech, draws=3, random_seed=5, bound="paper"),
          release_linear(mean_summary, mech, draws=3, random_seed=5, bound="paper"))


def test_elliptical_release_equals_family_function(mean_summary):
    from fdp_ppl.noise.elliptical.process import EllipticalMechanism
    release_linear = _family("LinearSummary")

    mech = EllipticalMechanism(1.0, family="t", nu=5.0)
    a = fp.release(mean_summary, mech, draws=2, random_seed=6)
    _same(a, release_linear(mean_summary, mech, draws=2, random_seed=6))
    assert a.attrs["mechanism"] == "elliptical"


def test_kde_release_equals_family_function(kde_fit):
    family = _family("KDESummary")

    mech = fp.GaussianMechanism(0.5, 1e-5)
    a = fp.release(kde_fit, mech, draws=2, chains=2, random_seed=7, generator="pymc", label="k", dataset="d")
    _same(a, family(kde_fit, mech, draws=2, chains=2, random_seed=7, generator="pymc", label="k", dataset="d"))
    assert a.posterior["density"].shape[:2] == (2, 2)


def test_erm_release_equals_family_function(erm_fit):
    family = _family("ERMFit")

    mech = fp.GaussianMechanism(1.0, 1e-5)
    a = fp.release(erm_fit, mech, draws=2, chains=2, random_seed=8)
    _same(a, family(erm_fit, mech, draws=2, chains=2, random_seed=8))
    assert a.posterior["decision"].shape[:2] == (2, 2)


def test_fpca_equals_family_function(fpca_fit):
    family = _family("FPCAFit")

    mech = fp.ExponentialMechanism("exact", delta=1e-10)
    a = fp.release(fpca_fit, mech, draws=3, random_seed=9)
    _same(a, family(fpca_fit, mech, draws=3, random_seed=9))
    assert a.attrs["delta_target"] == 1e-10 and a.posterior["frame"].shape[:2] == (1, 3)


def test_ledger_label_and_dataset_reach_each_family(tmp_path, mean_summary, kde_fit, erm_fit, fpca_fit):
    cases = {"mean": (mean_summary, fp.ICLP(1.0)), "kde": (kde_fit, fp.GaussianMechanism(0.5, 1e-5)),
             "erm": (erm_fit, fp.GaussianMechanism(1.0, 1e-6)), "fpca": (fpca_fit, fp.ExponentialMechanism())}
    for family, (fitted, mech) in cases.items():
        ledger = PrivacyLedger.open(tmp_path / f"{family}.sqlite", PrivacyBudget(10.0, 1e-3))
        fp.release(fitted, mech, random_seed=1, ledger=ledger, label=f"lab-{family}", dataset=f"toy-{family}")
        (row,) = ledger.records()
        assert row["label"] == f"lab-{family}" and row["dataset"] == f"toy-{family}", family
        assert ledger.spent.epsilon > 0


# ---------------------------------------------------------------------- the FPCA mechanism: ε stays in the spec
def test_exponential_mechanism_carries_no_epsilon(fpca_fit):
    mech = fp.ExponentialMechanism("exact")
    assert not hasattr(mech, "epsilon")
    with pytest.raises(InputError, match="FPCASpec"):
        fp.ExponentialMechanism(epsilon=1.0)
    with pytest.raises(InputError, match="sampler"):
        fp.ExponentialMechanism("metropolis")
    with pytest.raises(InputError, match="delta"):
        fp.ExponentialMechanism(delta=1.5)
    # the charged ε is the spec's guarantee: doubling the spec's ε raises the charge, the mechanism is unchanged
    from fdp_ppl.expmech import FPCASpec

    spec2 = FPCASpec(grid=fp.Grid.uniform(30), m=5, k=1, epsilon=2.0, tau=2.0)
    fit2 = spec2.fit(_curves(n=20, K=30, seed=3).values)
    spent = []
    for fitted in (fpca_fit, fit2):
        ledger = PrivacyLedger(PrivacyBudget(10.0))
        tree = fp.release(fitted, mech, random_seed=0, ledger=ledger)
        spent.append(ledger.spent.epsilon)
        assert tree.attrs["epsilon"] == fitted.spec.epsilon
    assert spent[0] >= 1.0 and spent[1] >= 2.0 and spent[1] > spent[0]


# ---------------------------------------------------------------------- refusals cost nothing
@pytest.mark.parametrize("case", ["kde+exp", "erm+frl", "fpca+iclp", "mean+exp", "kde+iclp", "not-fitted"])
def test_wrong_mechanism_refused_before_charge(case, mean_summary, kde_fit, erm_fit, fpca_fit):
    fitted, mech = {"kde+exp": (kde_fit, fp.ExponentialMechanism()), "erm+frl": (erm_fit, fp.FRL(1.0)),
                    "fpca+iclp": (fpca_fit, fp.ICLP(1.0)), "mean+exp": (mean_summary, fp.ExponentialMechanism()),
                    "kde+iclp": (kde_fit, fp.ICLP(1.0)), "not-fitted": (np.zeros(3), fp.ICLP(1.0))}[case]
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-3))
    with pytest.raises((CompatibilityError, InputError)) as info:
        fp.release(fitted, mech, ledger=ledger)
    assert info.value.fix and "\n" not in str(info.value)
    assert ledger.spent.epsilon == 0.0 and ledger.spent.delta == 0.0


@pytest.mark.parametrize("case", [("erm", "bound", "paper"), ("erm", "generator", "pymc"), ("fpca", "chains", 2),
                                  ("mean", "chains", 2), ("kde", "allow_nonprivate", True),
                                  ("fpca", "bound", "tight"), ("erm", "allow_nonprivate", True)])
def test_unsupported_option_refused_before_charge(case, mean_summary, kde_fit, erm_fit, fpca_fit):
    family, option, value = case
    fitted, mech = {"mean": (mean_summary, fp.ICLP(1.0)), "kde": (kde_fit, fp.GaussianMechanism(0.5, 1e-5)),
                    "erm": (erm_fit, fp.GaussianMechanism(1.0, 1e-5)),
                    "fpca": (fpca_fit, fp.ExponentialMechanism())}[family]
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-3))
    with pytest.raises(InputError, match=option) as info:
        fp.release(fitted, mech, ledger=ledger, random_seed=0, **{option: value})
    assert info.value.fix and "\n" not in str(info.value)
    assert ledger.spent.epsilon == 0.0 and ledger.spent.delta == 0.0


def test_family_functions_are_not_exported():
    """The registered family functions are what fp.release calls, not a second public path."""
    import importlib

    for entry in RELEASES.values():
        module, _, name = entry.function.partition(":")
        package = importlib.import_module(module.rsplit(".", 1)[0])
        assert name not in getattr(package, "__all__", ()) and not hasattr(package, name), entry.function
        assert name not in fp.__all__
    assert "ExponentialMechanism" in fp.__all__
    assert fp.ExponentialMechanism is importlib.import_module("fdp_ppl.expmech").ExponentialMechanism


def test_releasing_does_not_import_the_families():
    """The families import fdp_ppl.releasing.draw, never the reverse: the registry resolves them on first use."""
    import subprocess
    import sys

    code = ("import sys, fdp_ppl.releasing.draw, fdp_ppl.releasing.registry; "
            "print(sorted(m for m in ('fdp_ppl.kde', 'fdp_ppl.erm', 'fdp_ppl.expmech') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_seeded_release_warns_at_the_callers_line(mean_summary, kde_fit, erm_fit, fpca_fit):
    """The seed warning of every family names the line that called fp.release (this file), not the dispatcher."""
    import warnings

    from fdp_ppl.errors import SeededReleaseWarning

    cases = [(mean_summary, fp.ICLP(1.0)), (kde_fit, fp.GaussianMechanism(1.0, 1e-3)),
             (erm_fit, fp.GaussianMechanism(1.0, 1e-3)), (fpca_fit, fp.ExponentialMechanism("exact", delta=1e-10))]
    for fitted, mech in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fp.release(fitted, mech, random_seed=1)
        seeded = [w for w in caught if issubclass(w.category, SeededReleaseWarning)]
        assert seeded and {w.filename for w in seeded} == {__file__}, (type(fitted).__name__,
                                                                        [w.filename for w in seeded])
