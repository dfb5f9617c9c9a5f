import numpy as np
import pytest
import xarray as xr
from scipy import stats

import fdp_ppl as fp
from fdp_ppl.accounting import gaussian_delta

TAU = 1.0


def qr(c, b):
    return fp.iclp_qr_mean(c, b, tau=TAU, eta=1.5, psi=0.025)


def adversarial(curves, basis, summary_fn, norm):
    """Neighbouring datasets whose summaries differ by the full tight sensitivity in `norm`."""
    s = summary_fn(curves, basis)
    lam = s.eigenvalues
    if norm == "cameron-martin":
        m = np.zeros(s.n_components)
        m[np.argmax(s.lipschitz / np.sqrt(lam))] = 1.0
    else:
        m = s.lipschitz / np.sqrt(lam) if norm == "1,C" else s.lipschitz.copy()
        m /= np.linalg.norm(m)
    direction = basis.reconstruct(m)
    d1, d2 = curves.copy(), curves.copy()
    d1[0], d2[0] = TAU * direction, -TAU * direction
    return summary_fn(d1, basis), summary_fn(d2, basis)


LAPLACE_CASES = [
    ("iclp", qr, lambda e: fp.ICLP(e)),
    ("iclp-ar", lambda c, b: fp.iclp_ar_mean(c, b, tau=TAU, eta=1.1, psi=0.01), lambda e: fp.ICLP(e)),
    ("iclp-frl-summary", lambda c, b: fp.frl_mean(c, b, tau=TAU, M=6), lambda e: fp.ICLP(e)),
    ("frl", lambda c, b: fp.frl_mean(c, b, tau=TAU, M=6), lambda e: fp.FRL(e)),
]


@pytest.mark.parametrize("name,summary_fn,make", LAPLACE_CASES, ids=[c[0] for c in LAPLACE_CASES])
@pytest.mark.parametrize("bound", ["tight", "paper"])
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_laplace_privacy_loss_within_epsilon_on_adversarial_pairs(name, summary_fn, make, bound, eps, curves,
                                                                   matern_basis, rng):
    mech = make(eps)
    s1, s2 = adversarial(curves, matern_basis, summary_fn, mech.norm)
    cal = mech.calibrate(s1, bound)
    np.testing.assert_allclose(cal.scale, mech.calibrate(s2, bound).scale)  # public scale
    c1, c2 = s1.coefficients, s2.coefficients
    # releases under D (exact draws) and adversarial far-away points
    draws = c1 + rng.laplace(0.0, cal.scale, size=(4000, c1.size))
    far = c1 + 1e3 * np.sign(c1 - c2) * cal.scale
    for y in (draws, far[None], (c1 + c2)[None] / 2):
        loss = mech.privacy_loss(y, c1, c2, cal.scale)
        assert np.all(np.abs(loss) <= eps * (1 + 1e-9))
    # the supremum of the loss is attained far away and equals eps times ||f_D - f_D'|| / Delta
    sup = mech.privacy_loss(far[None], c1, c2, cal.scale)[0]
    if bound == "tight" and name != "iclp-ar":  # linear summaries attain the tight bound
        assert sup == pytest.approx(eps, rel=1e-9)  # tight: a scale sqrt(2) too small would give sqrt(2) eps
    else:
        assert sup <= eps


def test_iclp_scale_is_delta_sqrt_lambda_over_epsilon(curves, matern_basis):
    s = qr(curves, matern_basis)
    cal = fp.ICLP(2.0).calibrate(s)
    delta = s.sensitivity("1,C", "tight").value
    np.testing.assert_allclose(cal.scale, delta * np.sqrt(s.eigenvalues) / 2.0)
    cal_frl = fp.FRL(2.0).calibrate(fp.frl_mean(curves, matern_basis, tau=TAU, M=4), "paper")
    np.testing.assert_allclose(cal_frl.scale, 2 * 4 * TAU / 40 / 2.0)


@pytest.mark.parametrize("calibration", ["classical", "analytic"])
@pytest.mark.parametrize("eps,delta", [(1.0, 0.1), (0.5, 1e-5), (1.0, 0.01)])
def test_gaussian_privacy_loss_distribution_gives_delta(calibration, eps, delta, curves, matern_basis, rng):
    mech = fp.GaussianMechanism(eps, delta, calibration=calibration)
    s1, s2 = adversarial(curves, matern_basis, qr, mech.norm)
    cal = mech.calibrate(s1)
    c1, c2 = s1.coefficients, s2.coefficients
    d = matern_basis.norm_cameron_martin(c1 - c2)
    assert d == pytest.approx(cal.sensitivity.value, rel=1e-9)  # the pair is worst case
    # privacy-loss distribution under P_D: N(d²/(2σ²), d²/σ²) (specs/gaussian-banach.md §1.6)
    y = c1 + rng.standard_normal((20000, c1.size)) * cal.scale
    loss = mech.privacy_loss(y, c1, c2, cal.scale)
    r = d / cal.sigma
    assert loss.mean() == pytest.approx(r**2 / 2, abs=5 * r / np.sqrt(20000))
    assert loss.std() == pytest.approx(r, rel=0.03)
    # exact delta(eps) of the worst pair is within delta
    true_delta = gaussian_delta(eps, d, cal.sigma)
    assert true_delta <= delta * (1 + 1e-9)
    if calibration == "analytic":
        assert true_delta == pytest.approx(delta, rel=1e-6)
    # hockey-stick divergence estimated from the draws agrees with the formula
    mc = np.mean(np.maximum(0.0, 1 - np.exp(eps - loss)))
    assert mc == pytest.approx(true_delta, abs=5 * np.sqrt(true_delta / 20000) + 1e-4)


def test_gaussian_calibration_values_and_refusals():
    assert fp.classical_sigma(1.0, 0.1, 1.0) == pytest.approx(np.sqrt(2 * np.log(20)))
    assert fp.analytic_sigma(1.0, 0.1, 1.0) == pytest.approx(1.0859, abs=1e-4)
    assert gaussian_delta(1.0, 1.0, fp.classical_sigma(1.0, 0.1, 1.0)) == pytest.approx(1.56e-3, rel=0.01)
    # DESIGN invariant 4: the default calibration is the analytic one; the classical one is still refused for ε > 1
    with pytest.raises(ValueError, match="analytic"):
        fp.GaussianMechanism(2.0, 0.01, calibration="classical")
    assert fp.GaussianMechanism(2.0, 0.01).calibration == "analytic"
    assert fp.GaussianMechanism(2.0, 0.01, calibration="analytic").epsilon == 2.0
    # Thm 4.1 closed-form sensitivity also accepted
    for bad in [(0.0, 0.1), (-1, 0.1), (1.0, 0.0), (1.0, 1.0), (1.0, -0.1), (np.nan, 0.1)]:
        with pytest.raises(ValueError):
            fp.GaussianMechanism(*bad)
    for bad in [0, -0.5, np.inf, "1"]:
        with pytest.raises(ValueError):
            fp.ICLP(bad)


@pytest.mark.parametrize("mech", [fp.ICLP(1.0), fp.FRL(0.7), fp.GaussianMechanism(1.0, 0.05)], ids=str)
def test_release_draws_match_the_calibrated_law(mech, curves, matern_basis):
    s = fp.frl_mean(curves, matern_basis, tau=TAU, M=8) if mech.family == "frl" else qr(curves, matern_basis)
    tree = fp.release(s, mech, draws=3000, random_seed=7, study=True)
    scale = tree["constant_data"]["noise_scale"].values
    np.testing.assert_allclose(scale, mech.calibrate(s).scale)
    coef = tree["posterior"]["coefficients"].values[0]
    z = ((coef - s.coefficients) / scale).ravel()
    ref = stats.laplace if mech.noise_law == "laplace" else stats.norm
    assert stats.kstest(z, ref.cdf).pvalue > 1e-3
    # moments per coefficient: variance 2b² (Laplace) or sd² (Normal)
    var = 2 * scale**2 if mech.noise_law == "laplace" else scale**2
    np.testing.assert_allclose(coef.var(0) / var, 1, atol=0.15)
    # noise energy E||xi||² = sum var (privacy error)
    energy = np.sum((coef - s.coefficients) ** 2, axis=1).mean()
    assert energy == pytest.approx(var.sum(), rel=0.1)
    # a sqrt(2)-too-small ICLP scale would be rejected by the KS test
    if mech.family == "iclp":
        assert stats.kstest(((coef - s.coefficients) / (scale / np.sqrt(2))).ravel(), ref.cdf).pvalue < 1e-6


@pytest.mark.parametrize("mech", [fp.ICLP(1.0), fp.GaussianMechanism(0.8, 0.05)], ids=str)
def test_pymc_model_logp_matches_scipy(mech, curves, matern_basis, rng):
    s = qr(curves, matern_basis)
    model = mech.model(s)
    scale = mech.calibrate(s).scale
    assert model.named_vars_to_dims["coefficients"] == ("basis",)
    assert model.named_vars_to_dims["curve"] == ("t",)
    logp = model.compile_logp()
    y = s.coefficients + rng.standard_normal(s.n_components) * scale
    ref = (stats.laplace.logpdf(y, s.coefficients, scale) if mech.noise_law == "laplace"
           else stats.norm.logpdf(y, s.coefficients, scale)).sum()
    assert logp({"coefficients": y}) == pytest.approx(ref, rel=1e-10)
    assert mech.log_density(y, s.coefficients, scale) == pytest.approx(ref, rel=1e-10)


def test_release_structure_attrs_and_roundtrip(curves, matern_basis, tmp_path):
    s = qr(curves, matern_basis)
    tree = fp.release(s, fp.ICLP(1.0), draws=4, random_seed=3, study=True)
    post = tree["posterior"]
    assert post["coefficients"].dims == ("chain", "draw", "basis")
    assert post["curve"].dims == ("chain", "draw", "t")
    attrs = tree.attrs
    for key in ["mechanism", "epsilon", "delta", "sensitivity", "sensitivity_norm", "neighbouring", "tau", "n",
                "kernel", "kernel_rho", "kernel_nu", "eta", "psi", "quadrature", "fdp_ppl_version",
                "budget_spent_epsilon"]:
        assert key in attrs, key
    assert attrs["budget_spent_epsilon"] == pytest.approx(4.0)
    assert attrs["sensitivity"] == pytest.approx(s.sensitivity("1,C").value)
    path = tmp_path / "release.nc"
    tree.to_netcdf(path)
    back = xr.open_datatree(path)
    xr.testing.assert_allclose(back["posterior"].to_dataset(), post.to_dataset())
    assert back.attrs["mechanism"] == "iclp"
    # curves are the eigen-expansion of the released coefficients
    np.testing.assert_allclose(post["curve"].values[0], post["coefficients"].values[0] @ s.eigenfunctions.T)


@pytest.mark.parametrize("mech,summary", [(fp.ICLP(1.0), "qr"), (fp.FRL(1.0), "frl"),
                                          (fp.GaussianMechanism(1.0, 0.1), "rkhs")], ids=["iclp", "frl", "gauss"])
def test_release_never_contains_the_nonprivate_summary(mech, summary, curves, matern_basis):
    s = {"qr": qr(curves, matern_basis), "frl": fp.frl_mean(curves, matern_basis, tau=TAU, M=5),
         "rkhs": fp.rkhs_mean(curves, matern_basis, tau=TAU)}[summary]
    tree = fp.release(s, mech, draws=2, random_seed=1, study=True)
    secret_c, secret_f = s.coefficients, s.curve().values
    for node in tree.subtree:
        for name, var in node.variables.items():
            assert "noise" != name and "summary" not in name
            vals = np.asarray(var.values)
            if vals.dtype.kind != "f":
                continue
            for secret in (secret_c, secret_f):
                if vals.shape[-1] == secret.size:
                    assert not np.any(np.all(np.isclose(vals.reshape(-1, secret.size), secret, rtol=1e-6,
                                                        atol=1e-12), axis=-1)), name
    for v in tree.attrs.values():
        assert np.ndim(v) == 0
    assert "n_clipped" not in tree.attrs


def test_estimate_and_noise_share_the_retained_eigenpairs(curves, matern_basis):
    s = fp.frl_mean(curves, matern_basis, tau=TAU, M=5)
    tree = fp.release(s, fp.FRL(1.0), draws=3, random_seed=2, study=True)
    curve = tree["posterior"]["curve"].values[0]
    # the released curve has no component beyond the M retained eigenfunctions
    resid = matern_basis.coefficients(curve)[:, 5:]
    assert np.abs(resid).max() < 1e-10
    assert tree["constant_data"]["noise_scale"].size == s.n_components == 5


def test_random_seed_reproducibility(curves, matern_basis):
    s = qr(curves, matern_basis)
    a = fp.release(s, fp.ICLP(1.0), draws=3, random_seed=11, study=True)["posterior"]["curve"].values
    b = fp.release(s, fp.ICLP(1.0), draws=3, random_seed=11, study=True)["posterior"]["curve"].values
    c = fp.release(s, fp.ICLP(1.0), draws=3, random_seed=12, study=True)["posterior"]["curve"].values
    d = fp.release(s, fp.ICLP(1.0), draws=3, random_seed=np.random.default_rng(5), study=True)["posterior"]["curve"].values
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c) and d.shape == a.shape


def test_ledger_refuses_before_drawing(curves, matern_basis):
    s = qr(curves, matern_basis)
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(2.0))
    fp.release(s, fp.ICLP(1.0), ledger=ledger)
    with pytest.raises(fp.BudgetExceededError, match="remain"):
        fp.release(s, fp.ICLP(1.0), draws=2, ledger=ledger)
    assert ledger.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(fp.InputError, match="ledger"):  # a seeded study is never charged to a ledger
        fp.release(s, fp.ICLP(1.0), ledger=ledger, random_seed=1, study=True)
    tree = fp.release(s, fp.ICLP(1.0), ledger=ledger)
    assert tree.attrs["ledger_remaining_epsilon"] == pytest.approx(0.0)
    with pytest.raises(fp.BudgetExceededError):
        fp.release(s, fp.ICLP(0.01), ledger=ledger)
    g = fp.PrivacyLedger(fp.PrivacyBudget(1.0, 1e-5))
    # a Gaussian release at (0.5, 1e-4) is also (0.66, 1e-5)-DP: its privacy-loss distribution fits the budget
    # although its stated delta alone does not; one at (0.9, 1e-4) fits by neither
    rkhs = fp.rkhs_mean(curves, matern_basis, tau=TAU)
    fp.release(rkhs, fp.GaussianMechanism(0.5, 1e-4), ledger=g)
    assert g.tight_epsilon() < 1.0 < g.spent.epsilon + 0.9
    with pytest.raises(fp.BudgetExceededError):
        fp.release(rkhs, fp.GaussianMechanism(0.9, 1e-4), ledger=g)
    assert len(g.events) == 1


def test_budget_validation_and_composition():
    b = fp.PrivacyBudget(0.5, 1e-6) + fp.PrivacyBudget(0.25)
    assert (b.epsilon, b.delta) == (0.75, 1e-6)
    assert (3 * fp.PrivacyBudget(1.0)).epsilon == 3.0
    for bad in [(0.0,), (1.0, 1.0), (1.0, -1e-9), (-2.0,)]:
        with pytest.raises(ValueError):
            fp.PrivacyBudget(*bad)


def test_release_rejects_wrong_types(curves, matern_basis):
    with pytest.raises(fp.CompatibilityError):
        fp.release(curves, fp.ICLP(1.0))
    with pytest.raises(fp.CompatibilityError):
        fp.release(qr(curves, matern_basis), "iclp")
    with pytest.raises(ValueError):
        fp.release(qr(curves, matern_basis), fp.ICLP(1.0), draws=0)


def test_simulation_helpers_take_a_seed_only_for_a_study(curves, matern_basis):
    """Invariant 8 at every level: the draws of ``Mechanism.simulate`` and ``draw_releases`` are releases of a
    summary that may come from real records, so a seed (any size, 2**32 + 4 included) needs ``study=True`` and
    is refused before anything is drawn, with the one error text of :func:`fdp_ppl.release`."""
    from fdp_ppl.noise.sampling import draw_releases

    s = qr(curves, matern_basis)
    mech = fp.ICLP(1.0)
    scale = mech.calibrate(s).scale
    for seed in (0, 4294967300, np.random.default_rng(1), [1, 2]):
        with pytest.raises(fp.InputError, match="study=True") as simulate:
            mech.simulate(s, 2, seed)
        with pytest.raises(fp.InputError, match="study=True") as draw:
            draw_releases(mech, s, scale, 2, seed)
        with pytest.raises(fp.InputError, match="study=True") as release:
            fp.release(s, mech, random_seed=seed)
        assert str(simulate.value) == str(draw.value) == str(release.value)
    a = mech.simulate(s, 3, 4294967300, study=True)
    b = draw_releases(mech, s, scale, 3, 4294967300, study=True)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)  # same law, same seed: the same study numbers
    assert a[0].shape == (3, s.n_components) and a[1].shape == (3, s.grid.size)
    assert not np.allclose(mech.simulate(s, 3)[0], a[0])  # unseeded: fresh entropy, no study needed
