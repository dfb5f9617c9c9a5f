import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.summaries import cv_grid, cv_score, noise_energy


def test_pcv_closed_form_matches_monte_carlo(curves, matern_basis):
    build = lambda tr: fp.iclp_qr_mean(tr, matern_basis, tau=1.0, eta=1.5, psi=0.02)  # noqa: E731
    mech = fp.ICLP(1.0)
    with pytest.warns(fp.PrivacyLeakWarning):
        cv = cv_score(curves, build, folds=5, random_seed=1)
    with pytest.warns(fp.PrivacyLeakWarning):
        closed = cv_score(curves, build, mechanism=mech, folds=5, random_seed=1)
    with pytest.warns(fp.PrivacyLeakWarning):
        mc = cv_score(curves, build, mechanism=mech, folds=5, random_seed=1, draws=3000)
    assert closed > cv
    assert mc == pytest.approx(closed, rel=0.03)


def test_noise_energy_matches_trace_formula(curves, matern_basis):
    s = fp.iclp_qr_mean(curves, matern_basis, tau=1.0, eta=1.5, psi=0.02)
    delta = s.sensitivity("1,C").value
    # E||xi||^2 = 2 Delta^2 tr(C) / eps^2 for ICLP (specs/iclp.md §1.5)
    assert noise_energy(fp.ICLP(2.0), s) == pytest.approx(2 * delta**2 * matern_basis.trace() / 4, rel=1e-9)


def test_cv_grid_labels_and_argmin(curves, small_grid):
    def build(tr, psi, rho):
        return fp.rkhs_mean(tr, fp.eigenbasis(fp.Matern(rho=rho, nu=1.5), small_grid), tau=1.0, psi=psi)

    with pytest.warns(fp.PrivacyLeakWarning):
        da = cv_grid(curves, build, {"psi": [1e-3, 1e-1, 10.0], "rho": [0.05, 0.2]}, folds=4, random_seed=0)
    assert da.dims == ("psi", "rho") and da.attrs["privacy_safe"] == 0
    best = da.where(da == da.min(), drop=True)
    assert da.attrs["best_psi"] == best["psi"].item()
    # a huge penalty shrinks to zero and must lose against moderate smoothing
    assert da.sel(psi=10.0).min() > da.sel(psi=1e-3).min()
    with pytest.warns(fp.PrivacyLeakWarning):
        pcv = cv_grid(curves, build, {"psi": [1e-3, 1e-1], "rho": [0.05]}, folds=4, random_seed=0,
                      mechanism=fp.GaussianMechanism(1.0, 0.1))
    assert pcv.attrs["criterion"] == "pcv"
    assert np.all(pcv.values > da.sel(psi=[1e-3, 1e-1], rho=[0.05]).values)
