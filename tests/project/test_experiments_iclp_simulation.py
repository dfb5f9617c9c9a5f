"""Tests of the Lin & Reimherr (2026) Section 6.1 / Appendix D simulation module."""

import warnings

import numpy as np
import pandas as pd
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import PrivacyLeakWarning
from studies import iclp_simulation as sim
from studies import iclp_simulation_checks as simc
from fdp_ppl.summaries import cv_score, noise_energy

CFG = sim.Config(n_grid=(40, 80), replicates=2, folds=5, n_psi=5, pilot_size=400)
V_GP = sim.Variant("gp", 1.5)
V_T5 = sim.Variant("t5", 2.5)


@pytest.fixture(scope="module")
def setting():
    return sim.make_setting(V_GP, "S-2", CFG, tau=2.5, tau_inf=6.0)


@pytest.fixture(scope="module")
def data():
    # n = 60 curves, some of them above tau = 2.5 so clipping is exercised
    return sim.simulate_dataset(V_GP, "S-2", 60, CFG, random_seed=11)


def _rows(rows, bound="paper"):
    return {(r["mechanism"], r["selection"]): r for r in rows if r["bound"] == bound}


def test_errors_match_library_summaries_and_noise_energy(setting, data):
    """The vectorised estimators equal the library's builders; privacy errors
    equal noise_energy of the library mechanism on the data-built summary."""
    x, mu0 = data
    assert np.any(setting.config.grid.norm(x) > setting.tau)  # clipping is active
    rows = sim.replicate_errors(x, mu0, setting, random_seed=3)
    lib = simc.library_summaries(x, setting)
    w = setting.config.grid.weights
    for bound in sim.BOUNDS:
        got = _rows(rows, bound)
        for mech, sel in [("ICLP-QR", "PSS"), ("GP-ADP", "PSS"), ("ICLP-AR", "PSS"), ("FRL", "PSS-max"),
                          ("Bernstein", "PSS")]:
            s = lib[mech]
            est = float(np.sum((s.design @ s.coefficients - mu0) ** 2 * w))
            ne = noise_energy(sim.mechanism_for(mech, CFG), s, bound)
            r = got[(mech, sel)]
            assert r["estimation"] == pytest.approx(est, rel=1e-9, abs=1e-12), mech
            assert r["privacy"] == pytest.approx(ne, rel=1e-12), (mech, bound)
            assert r["privacy_estimation"] == pytest.approx(est + ne, rel=1e-12)
    # the two bounds differ for the ICLP and FRL, not for GP-ADP and Bernstein
    p, t = _rows(rows, "paper"), _rows(rows, "tight")
    assert p[("ICLP-QR", "PSS")]["privacy"] > 5 * t[("ICLP-QR", "PSS")]["privacy"]
    assert p[("GP-ADP", "PSS")]["privacy"] == t[("GP-ADP", "PSS")]["privacy"]


def test_frl_pss_is_the_estimation_error_oracle(setting, data):
    x, mu0 = data
    rows = _rows(sim.replicate_errors(x, mu0, setting, random_seed=3))
    lo, hi = fp.pss(x.shape[0], 4.0).m_range
    errs = {}
    for M in range(lo, hi + 1):
        s = fp.frl_mean(x, setting.basis, tau=setting.tau, M=M)
        errs[M] = float(setting.config.grid.norm(s.design @ s.coefficients - mu0) ** 2)
    best = min(errs, key=errs.get)
    assert rows[("FRL", "PSS")]["param"] == best
    assert rows[("FRL", "PSS")]["estimation"] == pytest.approx(errs[best], rel=1e-9)
    assert not rows[("FRL", "PSS")]["privacy_safe"] and rows[("FRL", "PSS-max")]["privacy_safe"]


@pytest.mark.parametrize("mech", ["ICLP-QR", "ICLP-AR", "FRL", "GP-ADP"])
def test_pcv_scores_equal_library_cv_score(setting, data, mech):
    """Coefficient-space PCV = fdp_ppl.summaries.cv_score (same folds, exact noise average)."""
    x, _ = data
    cand, scores = sim.pcv_scores(x, setting, mech, bound="paper", random_seed=5)
    p = fp.pss(x.shape[0], 4.0)
    basis = setting.basis
    mechanism = sim.mechanism_for(mech, CFG)
    ref = []
    for c in cand:
        if mech == "FRL":
            build = lambda tr, M=int(c): fp.frl_mean(tr, basis, tau=setting.tau, M=M)  # noqa: E731
        elif mech == "ICLP-AR":
            build = lambda tr, s=float(c): fp.iclp_ar_mean(tr, basis, tau=setting.tau, psi=s)  # noqa: E731
        else:
            build = lambda tr, s=float(c): fp.iclp_qr_mean(tr, basis, tau=setting.tau, eta=p.eta_qr, psi=s)  # noqa: E731
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ref.append(cv_score(x, build, mechanism=mechanism, folds=CFG.folds, random_seed=5, bound="paper"))
    np.testing.assert_allclose(scores, ref, rtol=1e-9)


def test_exact_decomposition_matches_monte_carlo(setting, data):
    """E‖μ̃ − μ0‖² = ‖μ̂ − μ0‖² + noise_energy, checked with exact PyMC forward draws."""
    x, mu0 = data
    out = simc.monte_carlo_check(x, mu0, setting, draws=3000, bound="tight", random_seed=2)
    assert list(out["mechanism"]) == list(sim.MECHANISMS)
    assert np.all(np.abs(out["z"]) < 4.5), out
    zp = (out["mc_privacy"] - out["exact_privacy"]) / out["mc_privacy_se"]
    assert np.all(np.abs(zp) < 4.5), out
    # the check has power: a noise energy off by 20% would be detected
    assert np.all(out["mc_privacy_se"] < 0.05 * out["exact_privacy"])


@pytest.fixture(scope="module")
def small_run():
    return sim.run_simulation(CFG, variants=[V_GP, V_T5], designs=["S-1", "S-4"], random_seed=7)


def test_table_columns_shapes_and_consistency(small_run):
    raw = small_run
    tab = sim.summarise(raw)
    assert tuple(tab.columns) == sim.TABLE_COLUMNS
    combos = len(raw.drop_duplicates(["mechanism", "selection"]))
    assert combos == 10  # 5 PSS + FRL PSS-max + 4 PCV
    assert len(tab) == 2 * 2 * 2 * combos * len(sim.METRICS) * len(sim.BOUNDS)
    assert set(tab["kernel"]) == {"matern1.5", "matern2.5"} and set(tab["error_process"]) == {"gp", "t5"}
    assert np.all(np.isfinite(tab["value"])) and np.all(tab["value"] > 0) and np.all(tab["se"] >= 0)
    assert (tab["replicates"] == CFG.replicates).all()
    np.testing.assert_allclose(raw["privacy_estimation"], raw["estimation"] + raw["privacy"], rtol=1e-12)
    # PSS privacy errors are public (data-independent): zero spread over datasets
    pss_priv = tab[(tab.selection == "PSS") & (tab.metric == "privacy") & (tab.mechanism != "FRL")]
    assert (pss_priv["se"] == 0).all()
    # the privacy error falls with n
    qr = tab[(tab.mechanism == "ICLP-QR") & (tab.selection == "PSS") & (tab.metric == "privacy")]
    for _, g in qr.groupby(["error_process", "design", "bound"]):
        assert g.sort_values("n")["value"].is_monotonic_decreasing


def test_reproducible_and_cell_independent(small_run):
    again = sim.run_simulation(CFG, variants=[V_T5], designs=["S-4"], random_seed=7)
    sub = small_run[(small_run.error_process == "t5") & (small_run.design == "S-4")].reset_index(drop=True)
    pd.testing.assert_frame_equal(again.reset_index(drop=True), sub)
    other = sim.run_simulation(CFG, variants=[V_T5], designs=["S-4"], random_seed=8)
    assert not np.allclose(other["estimation"], sub["estimation"])


def test_public_bounds_from_design_law():
    tau, tau_inf = sim.public_bounds(V_GP, "S-1", CFG, random_seed=1)
    x, _ = sim.simulate_dataset(V_GP, "S-1", 2000, CFG, random_seed=99)
    frac = np.mean(CFG.grid.norm(x) > tau)
    assert 0.0 < frac < 0.03
    assert 0.0 < np.mean(np.abs(x).max(1) > tau_inf) < 0.03
    # t5 errors: E‖e‖² = (5/3)·100/K with the default scale 1/√K
    x, mu0 = sim.simulate_dataset(V_T5, "S-1", 4000, CFG, random_seed=3)
    assert np.mean(CFG.grid.norm(x - mu0) ** 2) == pytest.approx(5 / 3, rel=0.1)


def test_bad_input():
    with pytest.raises(ValueError, match="replicates"):
        sim.Config(replicates=1)
    with pytest.raises(ValueError, match="grid_size"):
        sim.Config(grid_size=50)
    with pytest.raises(ValueError, match="bounds"):
        sim.Config(bounds=("loose",))
    with pytest.raises(ValueError, match="designs"):
        sim.run_simulation(CFG, designs=["S-9"])
    with pytest.raises(ValueError, match="variant"):
        sim.run_simulation(CFG, variants=[sim.Variant("gp", 0.5)])
    with pytest.raises(ValueError, match="mechanism"):
        sim.mechanism_for("K-norm", CFG)
