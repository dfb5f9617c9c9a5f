"""The "reproduction at a glance" tables that open the reproduction notebooks."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studies import real_data as rd
from studies import real_data_diagnostics as rdd
from studies import timing
from studies.verdicts import glance, range_verdict, relative_difference, verdict

RESULTS = Path(__file__).resolve().parents[2] / "notebooks" / "results"


def test_verdict_words_follow_the_numbers():
    assert verdict(1.02, 1.0).startswith("matches within 2.0%")
    assert verdict(1.2, 1.0, why="tau differs") == "differs by +20%: tau differs"
    assert verdict(0.5, 1.0).startswith("differs by -50%")
    assert verdict(1.0, None, why="no number printed") == "not reproducible: no number printed"
    assert verdict(1.0, float("nan")).startswith("not reproducible")
    assert math.isnan(relative_difference(1.0, 0.0))
    assert range_verdict([0.01, -0.03]).startswith("matches within 3.0%")
    assert range_verdict([0.01, -0.3], why="x") == "differs: -30% to +1%: x"
    assert list(glance([{"item": "a", "paper": 1, "ours": 1, "verdict": "v"}]).columns) == \
        ["item", "paper", "ours", "verdict"]


def test_paper_floor_and_noise_inverts_a_plus_b_over_eps_squared():
    # a column that is exactly a + b/eps^2 on the doubling grid is read back exactly
    a, b = 0.1, 0.002
    eps = np.array([0.125, 0.25, 0.5, 1, 2, 4])
    vals = tuple(a + b / eps**2)
    saved = rd.PAPER_TABLE2["electricity"]["C1.5"]["frl"]
    rd.PAPER_TABLE2["electricity"]["C1.5"]["frl"] = (vals, saved[1])
    try:
        fa, fb = rdd.paper_floor_and_noise("electricity", "C1.5", "frl")
    finally:
        rd.PAPER_TABLE2["electricity"]["C1.5"]["frl"] = saved
    assert fa == pytest.approx(a, rel=1e-12) and fb == pytest.approx(b, rel=1e-12)


def test_calibration_search_finds_the_known_best_and_pss():
    s = rdd.calibration_search(("iclp-qr",), etas=[1.15, 1.5, 2.5], psis=[1e-5, 1 / 508, 0.1],
                              bounds=("tight",), datasets=("electricity",), kernels=("C1.5",))
    assert set(s.tuning) == {"PSS", "grid"}
    pss = s[s.tuning == "PSS"].iloc[0]
    assert pss.n_psi == pytest.approx(1.0) and pss.eta == pytest.approx(1.5)
    best = rdd.best_calibrations(s)
    row = best[best.cell == "electricity C1.5: best"].iloc[0]
    assert row.log_error == pytest.approx(s[s.tuning == "grid"].log_error.min())
    # the tight bound with light smoothing gets within a factor 1.5 of the printed column; PSS does not
    assert math.exp(row.log_error) < 1.5 < math.exp(pss.log_error)


def test_table2_glance_from_committed_results():
    df = pd.read_csv(RESULTS / "iclp_table2_real_data.csv")
    cal = pd.read_csv(RESULTS / "iclp_table2_calibration.csv")
    g = rdd.reproduction_summary(df, cal)
    v = dict(zip(g["item"], g["verdict"]))
    frl = [k for k in v if k.startswith("dti: FRL")][0]
    assert v[frl].startswith("matches")
    qr = [k for k in v if k.startswith("iclp-qr: one (eta, psi)") and "paper sensitivity" in k][0]
    assert v[qr].startswith("cannot reproduce")
    qr_tight = [k for k in v if k.startswith("iclp-qr: one (eta, psi)") and "tight" in k][0]
    assert v[qr_tight].startswith("reproduces")


def test_table1_glance_from_committed_results():
    g = timing.reproduction_summary(pd.read_csv(RESULTS / "iclp_table1_timing.csv"))
    assert len(g) == 9 and g["verdict"].str.len().min() > 0


def test_simulation_glance_from_committed_results():
    from studies import iclp_simulation_checks as simc

    g = simc.reproduction_summary(pd.read_csv(RESULTS / "iclp_simulation_claims.csv"))
    v = dict(zip(g["item"], g["verdict"]))
    # the committed numbers: with the paper's bounds ICLP-QR is not the best mechanism, GP-ADP beats it
    assert v["Fig. 2, Theorem 12 bounds: ICLP-QR is the best eps-DP mechanism at every n"] == "does not hold"
    assert v["Fig. 2, Theorem 12 bounds: GP-ADP ((eps, delta)-DP) beats ICLP-QR, largest n"] == "holds"


def test_mirshani_glance_says_sigma2_is_not_printed():
    from studies import mirshani as M

    g = M.reproduction_summary(pd.read_csv(RESULTS / "mirshani_comparison.csv"),
                               pd.read_csv(RESULTS / "mirshani_sanity.csv"))
    assert g.iloc[0]["verdict"].startswith("not reproducible")
    assert g.iloc[2]["verdict"].startswith("matches")


def test_elliptical_glance_and_theorem5_statement():
    from studies import elliptical as E

    g = E.reproduction_summary(RESULTS)
    assert "corrected M_W is above the true delta for every law" in g.iloc[-1]["verdict"]
    thm5 = pd.DataFrame({"process": ["a", "b"], "printed_MV": [1e-3, 3e-8], "exact_mixture": [2e-3, 2e-8],
                         "corrected_MW": [1e-2, 1e-9]})
    s = E.theorem5_statement(thm5)
    assert "below (anti-conservative)" in s[0] and "above (valid)" in s[0]
    assert "is above the true" in s[1] and "BELOW (invalid)" in s[1]
