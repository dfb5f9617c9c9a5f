"""Private kernel machines and online GP release (fdp_ppl.machine): sensitivity, privacy, noise, online updates."""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger
from fdp_ppl.accounting.calibration import gaussian_delta
from fdp_ppl.machine import (ERMSpec, GPPath, GridEigenbasis, KroneckerEigenbasis, OnlineRelease, chol_jitter, erm_model,
                         gaussian_conditional, grid_basis, ou_conditional, predict_labels, rkhs_distance)
import fdp_ppl as fp
from fdp_ppl.machine.gp import EIGEN_REL_TOL
from fdp_ppl.errors import (
    BudgetExceededError,
    CompatibilityError,
    InputError,
    SeededReleaseWarning,
)
from fdp_ppl.noise.laws import Laplace
from fdp_ppl.noise.mechanisms import ICLP, GaussianMechanism
from fdp_ppl.spaces import Exponential, Gaussian, Matern
from tests.helpers import labelled_points

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.errors.SeededReleaseWarning")
HALL = Gaussian(0.3, convention="hall")


def _neighbour(X, y, i, x_new, y_new):
    X2, y2 = X.copy(), y.copy()
    X2[i], y2[i] = x_new, y_new
    return X2, y2


@pytest.mark.parametrize("loss", ["hinge", "huber", "logistic", "squared"])
@pytest.mark.parametrize("d", [1, 2])
def test_sensitivity_brute_force_random_neighbours(loss, d):
    n, lam = 8, 0.05
    X, y = labelled_points(n, d, 1)
    spec = ERMSpec(HALL, lam=lam, n=n, loss=loss, domain=[[0, 1]] * d, grid_size=5)
    fit = spec.fit(X, y)
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(40):
        i = rng.integers(n)
        X2, y2 = _neighbour(X, y, i, rng.uniform(0, 1, d), rng.choice([-1.0, 1.0]))
        worst = max(worst, rkhs_distance(spec, fit, spec.fit(X2, y2)))
    assert worst <= spec.sensitivity().value
    assert worst <= spec.delta_rkhs_exact * (1 + 1e-6) + 2 * spec.rho_target
    assert worst > 0.02 * spec.delta_rkhs_exact  # the search moves the fit (the squared-loss M is loose)


def test_hinge_sensitivity_attained_by_adversarial_search():
    # λ = 1: every point stays inside the margin, a_i = C for all i, and flipping the label
    # of one point at the same x changes f_D by 2C K(x, .): RKHS norm 1/(λn) = Δ_0.
    n = 8
    X, y = labelled_points(n, 2, 3)
    spec = ERMSpec(HALL, lam=1.0, n=n, domain=[[0, 1], [0, 1]], grid_size=5)
    fit = spec.fit(X, y)
    cands = [(i, X[i], -y[i]) for i in range(n)] + [(0, np.array([u, v]), s) for u in (0, 1) for v in (0, 1)
                                                     for s in (-1.0, 1.0)]
    worst = max(rkhs_distance(spec, fit, spec.fit(*_neighbour(X, y, i, x, s))) for i, x, s in cands)
    assert worst >= 0.99 * spec.delta_rkhs_exact
    assert worst <= spec.sensitivity().value


def test_iclp_space_sensitivity_brute_force():
    n = 8
    X, y = labelled_points(n, 1, 4)
    spec = ERMSpec(Matern(0.2, nu=1.5), lam=0.5, n=n, grid_size=40, eta=2.0)
    fit = spec.fit(X, y)
    h = fit.eigen_coefficients()
    worst_1c, worst_h = 0.0, 0.0
    for i in range(n):
        for x_new in (0.0, 0.37, 1.0, X[i, 0]):
            f2 = spec.fit(*_neighbour(X, y, i, [x_new], -y[i]))
            worst_1c = max(worst_1c, float(spec.basis.norm_1c(h - f2.eigen_coefficients())))
            worst_h = max(worst_h, rkhs_distance(spec, fit, f2))
    assert worst_h <= spec.delta_rkhs and worst_h >= 0.95 * spec.delta_rkhs_exact
    assert worst_1c <= spec.sensitivity("1,C").value
    # ICLP privacy loss (Laplace, exact log-density ratio) at a far point: Σ|Δh_j|/b_j <= ε
    eps = 1.0
    tree = fp.release(fit, ICLP(eps), random_seed=0, study=True)
    b = tree["constant_data"]["noise_scale"].values
    f2 = spec.fit(*_neighbour(X, y, 0, [1.0], -y[0]))
    h2 = f2.eigen_coefficients()
    far = h + 1e6 * np.sign(h - h2) * b
    loss = float(Laplace().privacy_loss(far, h, h2, b))
    assert 0.2 * eps < loss <= eps * (1 + 1e-9)
    assert np.isclose(loss, eps * spec.basis.norm_1c(h - h2) / spec.sensitivity("1,C").value)


def _adversarial_pair_1d(loss="hinge"):
    n = 8
    X, y = labelled_points(n, 1, 5)
    spec = ERMSpec(HALL, lam=1.0, n=n, loss=loss, grid_size=30)
    return spec, spec.fit(X, y), spec.fit(*_neighbour(X, y, 0, X[0], -y[0]))


@pytest.mark.parametrize("calibration", ["analytic", "classical"])
def test_grid_release_privacy_loss_within_epsilon_delta(calibration):
    eps, delta = 1.0, 1e-3
    spec, fa, fb = _adversarial_pair_1d()
    mech = GaussianMechanism(eps, delta, calibration)
    tree = fp.release(fa, mech, draws=300, random_seed=7, study=True)
    sigma = tree.attrs["sigma"]
    assert tree.attrs["noise_generator"] == "pymc" and tree.attrs["fp_safe"] == 0  # seeded study
    pts = spec.points
    basis = grid_basis(spec)
    dmu = fa.decision(pts) - fb.decision(pts)
    # whitened (retained eigenpairs) <= full discrete Cameron–Martin <= RKHS distance <= Δ
    r = float(basis.whitened_norm(dmu))
    lam_all, U_all = np.linalg.eigh(spec.kernel_matrix(pts, pts))
    pos = lam_all > 0
    r_full = float(np.sqrt(np.sum((U_all[:, pos].T @ dmu) ** 2 / lam_all[pos])))
    assert r <= r_full * (1 + 1e-9)
    assert r <= rkhs_distance(spec, fa, fb) * (1 + 1e-6) <= spec.sensitivity().value
    assert tree.attrs["sensitivity"] == pytest.approx(spec.sensitivity().value)
    # exact Gaussian privacy-loss distribution L ~ N(r²/2σ², r²/σ²): δ(ε) = E[(1 − e^{ε−L})_+]
    m, s = r**2 / (2 * sigma**2), r / sigma
    pld = integrate.quad(lambda l: -np.expm1(eps - l) * stats.norm.pdf(l, m, s), eps, m + 40 * s)[0]
    assert np.isclose(pld, gaussian_delta(eps, r, sigma), rtol=1e-6, atol=1e-15)
    assert pld <= delta
    if calibration == "analytic":  # the adversarial pair nearly spends the whole δ
        assert pld >= 0.3 * delta
    # the drawn releases have that privacy-loss law (noise σ² U_r Λ_r U_rᵀ on the whitened coefficients)
    y = tree["posterior"]["decision"].values.reshape(-1, len(pts))
    sq = np.sqrt(basis.eigenvalues)
    wa = (basis.coefficients(y) - basis.coefficients(fa.decision(pts))) / sq
    wb = (basis.coefficients(y) - basis.coefficients(fb.decision(pts))) / sq
    L = (np.sum(wb**2, axis=1) - np.sum(wa**2, axis=1)) / (2 * sigma**2)
    assert abs(L.mean() - m) < 4 * s / np.sqrt(len(L))
    assert 0.8 < L.std() / s < 1.2
    # the release lies in the span of the retained eigenvectors (estimate projected, not only the noise)
    assert np.allclose(basis.reconstruct(basis.coefficients(y)), y, atol=1e-10)


def test_truncation_never_increases_the_whitened_sensitivity():
    """Projection on fewer retained eigenpairs is a contraction of the whitened ℓ² norm, and every
    brute-force neighbour stays within the RKHS bound Δ = M√k(0)/(λn) (Hall §4.3)."""
    n = 10
    rng = np.random.default_rng(3)
    for kernel, d, g in ((HALL, 1, 40), (Exponential(0.3), 1, 40), (Gaussian(0.4, convention="hall"), 2, (9, 8))):
        dom = [[0, 1]] * d
        spec = ERMSpec(kernel, lam=0.5, n=n, grid_size=g, domain=dom)
        X, y = labelled_points(n, d, 4)
        fa = spec.fit(X, y)
        pts = spec.points
        bases = [GridEigenbasis(spec.kernel_matrix(pts, pts), tol) for tol in (1e-14, 1e-10, 1e-6, 1e-3)]
        assert [b.size for b in bases] == sorted((b.size for b in bases), reverse=True)
        worst = 0.0
        for _ in range(8):
            i = int(rng.integers(n))
            fb = spec.fit(*_neighbour(X, y, i, rng.uniform(0, 1, d), -y[i]))
            dmu = fa.decision(pts) - fb.decision(pts)
            norms = [float(b.whitened_norm(dmu)) for b in bases]
            assert all(a >= b * (1 - 1e-9) for a, b in zip(norms, norms[1:]))  # fewer pairs: never larger
            assert norms[0] <= rkhs_distance(spec, fa, fb) * (1 + 1e-6)
            worst = max(worst, norms[1] / spec.sensitivity().value)
        assert 0 < worst <= 1.0


def test_noise_covariance_matches_kernel():
    spec = ERMSpec(HALL, lam=0.1, n=8, grid_size=12)
    pts = spec.points
    xi = np.array([GPPath(spec.kernel_matrix, 1, np.random.default_rng(s)).sample(pts) for s in range(3000)])
    emp = np.cov(xi.T)
    assert np.max(np.abs(emp - spec.kernel_matrix(pts, pts))) < 0.1
    ou = ERMSpec(Exponential(0.3), lam=0.1, n=8, grid_size=12)  # Markov (AR(1)) sampler, no jitter
    xi = np.array([GPPath(ou.kernel_matrix, 1, np.random.default_rng(s), ou_rho=ou.ou_rho).sample(pts)
                   for s in range(3000)])
    assert np.max(np.abs(np.cov(xi.T) - ou.kernel_matrix(pts, pts))) < 0.1
    # deterministic: the sequential sampler is ξ = chol(K + jI) z with z the generator's normals in order
    path = GPPath(spec.kernel_matrix, 1, np.random.default_rng(11))
    extra = np.array([[0.013], [0.5013], [0.9]])
    xi_all = np.concatenate([path.sample(pts), path.sample(extra[:1]), path.sample(extra[1:])])
    P = np.vstack([pts, extra])
    Lfull = np.linalg.cholesky(spec.kernel_matrix(P, P) + path.jitter * np.eye(len(P)))
    z = np.random.default_rng(11).standard_normal(len(P))
    assert np.allclose(xi_all, Lfull @ z, atol=1e-8)


@pytest.mark.slow
def test_gp_release_noise_covariance_is_the_kernel_on_retained_eigenpairs():
    """GP grid release: noise on the retained eigenpairs through the release sampler, covariance σ² U_r Λ_r U_rᵀ;
    conditioning later points on the released coefficients keeps the joint GP law."""
    spec = ERMSpec(HALL, lam=0.1, n=8, grid_size=12)
    pts = spec.points
    X, y = labelled_points(8, 1, 2)
    fit = spec.fit(X, y)
    mech = GaussianMechanism(1.0, 1e-3)
    tree = fp.release(fit, mech, draws=4000, random_seed=5, study=True)
    basis = grid_basis(spec)
    sigma = tree.attrs["sigma"]
    noise = (tree["posterior"]["decision"].values.reshape(-1, len(pts))
             - basis.reconstruct(basis.coefficients(fit.decision(pts)))) / sigma
    emp = np.cov(noise.T)
    err = np.max(np.abs(emp - basis.covariance()))
    assert err < 0.08, err
    assert np.max(np.abs(basis.covariance() - spec.kernel_matrix(pts, pts))) < 1e-8  # dropped part negligible
    assert abs(noise.mean(axis=0)).max() < 4 / np.sqrt(4000) * 1.2
    # conditioning on released coefficients keeps the GP law jointly with later points
    extra = np.array([[0.05], [0.5], [0.93]])
    P = np.vstack([pts, extra])
    rows = []
    for seed in range(2500):
        g = np.random.default_rng(seed)
        path = GPPath(spec.kernel_matrix, 1, g)
        grid_xi = path.condition_on_coefficients(pts, basis, g.standard_normal(basis.size))
        rows.append(np.concatenate([grid_xi, path.sample(extra)]))
    err = np.max(np.abs(np.cov(np.array(rows).T) - spec.kernel_matrix(P, P)))
    assert err < 0.1, err


def test_chol_jitter_adds_noise_never_clips():
    spec = ERMSpec(Gaussian(0.5, convention="hall"), lam=0.1, n=8, grid_size=200)
    K = spec.kernel_matrix(spec.points, spec.points)
    L, j = chol_jitter(K)
    assert j > 0
    assert np.allclose(L @ L.T, K + j * np.eye(len(K)), atol=1e-10)
    assert np.min(np.linalg.eigvalsh(L @ L.T - K)) > -1e-10  # covariance ⪰ K


def test_ou_markov_update_equals_generic_conditioning():
    rho = 0.3
    kern = Exponential(rho)
    kfn = lambda a, b: kern(np.abs(np.asarray(a).reshape(-1, 1) - np.asarray(b).reshape(1, -1)))
    rng = np.random.default_rng(0)
    path = GPPath(kfn, 1, rng, ou_rho=rho)
    pts = rng.uniform(-0.5, 1.5, 25)
    path.sample(pts)
    P, xi = path.released()
    P = P[:, 0]
    assert np.all(np.diff(P) > 0) and len(P) == 25
    for x in np.concatenate([rng.uniform(-1, 2, 30), [P[0] - 0.1, P[-1] + 0.2]]):
        i = np.searchsorted(P, x)
        left = (P[i - 1], xi[i - 1]) if i > 0 else None
        right = (P[i], xi[i]) if i < len(P) else None
        m1, v1 = ou_conditional(x, left, right, rho)
        m2, v2 = gaussian_conditional(kfn, P[:, None], xi, [[x]])
        assert abs(m1 - m2[0]) < 1e-10 and abs(v1 - v2[0, 0]) < 1e-10


def test_online_release_repeat_queries_and_grid_consistency():
    X, y = labelled_points(20, 1, 6)
    mech = GaussianMechanism(1.0, 1e-5)
    for kernel in (Exponential(0.2), HALL):
        spec = ERMSpec(kernel, lam=0.1, n=20, grid_size=25)
        fit = spec.fit(X, y)
        online = OnlineRelease(fit, mech, grid=True, random_seed=1, study=True)
        assert online.path.markov == isinstance(kernel, Exponential)
        first = online.query([0.1234, 0.77, 0.1234])
        assert first[0] == first[2]
        assert np.array_equal(online.query([0.77, 0.1234]), first[[1, 0]])
        g = online.query(spec.points[:, 0])
        assert np.array_equal(g, online.query(spec.points))
        assert np.array_equal(g, online.grid_values)  # grid queries return the released grid path
        assert online.n_released == 25 + 2
        assert set(np.unique(online.predict([0.1234, 0.5]))) <= {-1.0, 1.0}
        again = OnlineRelease(fit, mech, grid=True, random_seed=1, study=True)
        assert np.array_equal(again.query(spec.points), g)


@pytest.mark.parametrize("grid", [False, True])
def test_online_release_is_charged_what_its_plan_says(grid):
    """The online oracle runs the release protocol's one charge step (DESIGN: the plan is what the ledger is
    charged): the ledger's row is the plan's cost, event (law, σ, Δ, count 1, privacy unit) and label; with the
    grid first, the plan and σ are the grid release's (fp.plan with one draw)."""
    from fdp_ppl.io.units import PrivacyUnit
    from fdp_ppl.machine.release import online_plan

    X, y = labelled_points(20, 1, 6)
    mech = GaussianMechanism(1.0, 1e-5)
    spec = ERMSpec(HALL, lam=0.1, n=20, grid_size=25)
    ledger = PrivacyLedger(PrivacyBudget(3.0, 1e-3))
    online = OnlineRelease(spec.fit(X, y), mech, grid=grid, ledger=ledger, dataset="points")
    plan = online.plan
    assert plan.event == online_plan(spec, mech, grid=grid).event and plan.cost == online_plan(spec, mech).cost
    assert ledger.entries == [(plan.label, plan.cost)] and plan.label == "kernel machine (online)"
    assert ledger.events == [plan.event] and plan.event.count == 1 and plan.event.unit == "record"
    assert plan.event.law == "gaussian" and plan.event.noise_multiplier == pytest.approx(online.sigma / plan.sensitivity)
    assert online.cost == plan.cost == PrivacyBudget(1.0, 1e-5) and online.ledger_attrs == {}
    if grid:  # the grid block is the grid release: the same plan as fp.plan's (σ raised by OpenDP's map)
        assert plan.event == fp.plan(spec, mech).event and online.sigma == pytest.approx(fp.plan(spec, mech).noise_multiplier)
    else:
        assert online.sigma == pytest.approx(plan.noise_multiplier) and plan.fp_safe and online.fp_safe == 1
    # a person-level spec: the event is stated for its unit, as fp.release states it
    units = np.repeat(np.arange(10), 2)
    per_person = ERMSpec(HALL, lam=0.1, n=10, grid_size=25, privacy_unit=PrivacyUnit("subject", max_contributions=1))
    people = PrivacyLedger(PrivacyBudget(3.0, 1e-3), privacy_unit="subject")
    online = OnlineRelease(per_person.fit(X, y, units=units), mech, grid=grid, ledger=people)
    assert people.events == [online.plan.event] and online.plan.event.unit == "subject"
    assert online.plan.event == fp.plan(per_person, mech).event or not grid
    # a record-level oracle on a person-level ledger: refused without a public bound, group privacy with one
    with pytest.raises(InputError):
        OnlineRelease(spec.fit(X, y), mech, grid=grid, ledger=PrivacyLedger(PrivacyBudget(9.0, 1e-2),
                                                                              privacy_unit="subject"))
    grouped = PrivacyLedger(PrivacyBudget(9.0, 1e-2), privacy_unit="subject")
    online = OnlineRelease(spec.fit(X, y), mech, grid=grid, ledger=grouped, records_per_unit=2)
    assert grouped.spent.epsilon == pytest.approx(2.0) and online.ledger_attrs["ledger_records_per_unit"] == 2
    # more than the ledger holds: refused at the charge, nothing drawn
    with pytest.raises(BudgetExceededError):
        OnlineRelease(spec.fit(X, y), GaussianMechanism(0.9, 1e-5), grid=grid,
                      ledger=PrivacyLedger(PrivacyBudget(0.5, 1e-3)))
    if grid:  # a grid the eigenbasis refuses (the OU kernel's Markov grid release is not an online prefix): no charge
        big = ERMSpec(Exponential(0.2), lam=0.1, n=20, grid_size=7000)
        untouched = PrivacyLedger(PrivacyBudget(3.0, 1e-3))
        with pytest.raises(InputError, match="7000 points"):
            OnlineRelease(big.fit(X, y), mech, grid=True, ledger=untouched)
        assert untouched.entries == []


def test_release_tree_ledger_and_predictions(tmp_path):
    X, y = labelled_points(30, 2, 8)
    spec = ERMSpec(HALL, lam=0.05, n=30, domain=[[0, 1], [0, 1]], grid_size=(8, 9))
    fit = spec.fit(X, y)
    ledger = PrivacyLedger(PrivacyBudget(1.5, 1e-4))
    tree = fp.release(fit, GaussianMechanism(0.5, 1e-5), draws=3, ledger=ledger)
    dec = tree["posterior"]["decision"]
    assert dec.dims == ("chain", "draw", "x1", "x2") and dec.shape == (1, 3, 8, 9)
    at = tree.attrs
    assert at["budget_spent_epsilon"] == pytest.approx(1.5) and ledger.spent.epsilon == pytest.approx(1.5)
    assert at["fp_safe"] == 1 and at["noise_seeded"] == 0 and at["lam"] == 0.05 and at["n"] == 30
    assert at["sensitivity"] == pytest.approx(1.01 / (0.05 * 30))
    assert "n_clipped" not in at
    # one more release fits by tight composition (the ledger composes the Gaussian events' privacy-loss
    # distributions); 40 more fit by neither: refused, charged before any draw, so nothing is released
    with pytest.raises(BudgetExceededError):
        fp.release(fit, GaussianMechanism(0.5, 1e-5), ledger=ledger, draws=40)
    assert ledger.spent.epsilon == pytest.approx(1.5)
    path = tmp_path / "svm.nc"
    tree.to_netcdf(path)
    import xarray as xr

    back = xr.open_datatree(path)
    assert np.allclose(back["posterior"]["decision"].values, dec.values)
    labels = predict_labels(tree, X)
    assert labels.shape == (1, 3, 30)
    with pytest.warns(SeededReleaseWarning):
        fp.release(fit, GaussianMechanism(0.5, 1e-5), random_seed=1, study=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = fp.release(fit, GaussianMechanism(0.5, 1e-5))  # fresh OS entropy, no warning
        b = fp.release(fit, GaussianMechanism(0.5, 1e-5))
    assert not np.array_equal(a["posterior"]["decision"].values, b["posterior"]["decision"].values)


def test_bad_inputs_refused():
    X, y = labelled_points(10, 1, 9)
    spec = ERMSpec(HALL, lam=0.1, n=10)
    with pytest.raises(InputError):
        spec.fit(X, y * 2)  # labels must be ±1
    with pytest.raises(InputError):
        spec.fit(X[:5], y[:5])
    with pytest.raises(InputError):
        spec.fit(np.where(np.arange(10)[:, None] == 0, np.nan, X), y)
    with pytest.raises(InputError):
        ERMSpec(HALL, lam=0.0, n=10)
    with pytest.raises(InputError):
        ERMSpec(HALL, lam=0.1, n=10, eta=1.0)
    with pytest.raises(InputError):
        GaussianMechanism(2.0, 1e-5, "classical")
    fit = spec.fit(X, y)
    with pytest.raises(CompatibilityError):
        fp.release(fit, ICLP(1.0))
    ispec = ERMSpec(Matern(0.2), lam=0.1, n=10, eta=2.0)
    with pytest.raises(CompatibilityError):
        fp.release(ispec.fit(X, y), GaussianMechanism(1.0, 1e-5))
    # clipping to the public domain
    Xo = X.copy()
    Xo[0] = 3.0
    assert spec.fit(Xo, y).n_clipped == 1


def test_many_draws_compose_even_when_k_delta_reaches_one():
    """Basic composition of 20 draws at δ = 0.1 is (20ε, 2): vacuous but valid; it must not raise."""
    from fdp_ppl.noise.mechanisms import GaussianMechanism

    spec = ERMSpec(HALL, lam=0.1, n=30, grid_size=10)
    cost = fp.plan(spec, GaussianMechanism(1.0, 0.1, calibration="classical"), draws=20).cost
    assert cost.epsilon == pytest.approx(20.0) and cost.delta == pytest.approx(2.0)


def test_erm_release_follows_the_schema():
    import fdp_ppl as fp
    from fdp_ppl.releasing import schema
    from fdp_ppl.machine import ERMSpec
    from fdp_ppl.errors import SchemaError
    from fdp_ppl.noise.mechanisms import GaussianMechanism

    X, y = labelled_points(30, 1, 5)
    spec = ERMSpec(HALL, lam=0.1, n=30, domain=[[0, 1]], grid_size=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fp.release(spec.fit(X, y), GaussianMechanism(1.0, 1e-3), random_seed=6, study=True)
    assert tree.attrs[schema.KIND_ATTR] == schema.MACHINE_RELEASE
    assert tree.attrs[schema.SCHEMA_ATTR] == schema.SCHEMA_VERSION
    post = fp.infer(tree, draws=50)  # kernel machines have their own exact posterior (fdp_ppl.inference.machine)
    assert post.attrs[schema.KIND_ATTR] == schema.INFERENCE and post["posterior"]["decision"].shape == (2, 50, 20)
    with pytest.raises(SchemaError, match="kernel-machine release"):
        schema.read_release(tree)  # but it is no mean-curve release


def test_unseeded_iclp_machine_noise_is_floating_point_safe():
    """ICLP kernel-machine releases draw through the package's samplers: OpenDP unseeded, compiled when seeded."""
    X, y = labelled_points(20, 1, 8)
    spec = ERMSpec(Matern(0.2, nu=1.5), lam=0.5, n=20, grid_size=30, eta=2.0)
    fit = spec.fit(X, y)
    tree = fp.release(fit, ICLP(1.0), draws=2)
    a = tree.attrs
    assert a["fp_safe"] == 1 and a["noise_generator"] == "opendp" and a["noise_seeded"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seeded = fp.release(fit, ICLP(1.0), random_seed=3, study=True)
        again = fp.release(fit, ICLP(1.0), random_seed=3, study=True)
    assert seeded.attrs["fp_safe"] == 0 and seeded.attrs["noise_generator"] == "pymc"
    assert np.array_equal(seeded["posterior"]["decision"].values, again["posterior"]["decision"].values)


def test_unseeded_gp_machine_noise_is_floating_point_safe():
    """GP kernel-machine releases: OpenDP Gaussian on the whitened eigen-coefficients when unseeded (fp_safe = 1,
    σ raised to OpenDP's map if needed), the compiled sampler when seeded (fp_safe = 0, reproducible)."""
    X, y = labelled_points(20, 1, 8)
    spec = ERMSpec(HALL, lam=0.5, n=20, grid_size=30)
    fit = spec.fit(X, y)
    mech = GaussianMechanism(1.0, 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gp = fp.release(fit, mech, draws=2)
    a = gp.attrs
    assert a["fp_safe"] == 1 and a["noise_generator"] == "opendp" and a["noise_seeded"] == 0
    assert a["fp_safe_reason"].startswith("1: OpenDP") and "contraction" in a["fp_safe_reason"]
    assert a["epsilon_guaranteed"] <= 1.0 + 1e-12 and a["sigma"] >= a["sigma_mechanism"]
    assert a["n_components"] == grid_basis(spec).size
    g = gp["constant_data"]
    assert np.allclose(g["noise_scale"].values, a["sigma"] * np.sqrt(g["eigenvalues"].values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s1 = fp.release(fit, mech, random_seed=4, study=True)
        s2 = fp.release(fit, mech, random_seed=4, study=True)
    assert s1.attrs["fp_safe"] == 0 and s1.attrs["noise_generator"] == "pymc"
    assert s1.attrs["fp_safe_reason"].startswith("0: a seeded study")
    assert np.array_equal(s1["posterior"]["decision"].values, s2["posterior"]["decision"].values)
    # online oracle: the grid block is the same fp-safe release; off-grid answers condition on it
    online = OnlineRelease(fit, mech, grid=True)
    assert online.generator == "opendp" and online.sigma == pytest.approx(a["sigma"])
    assert np.array_equal(online.query(spec.points), online.grid_values)
    assert online.fp_safe == 1 and "answers: 1" in online.fp_safe_reason
    assert online.epsilon_guaranteed == pytest.approx(a["epsilon_guaranteed"], rel=1e-12)


def test_ou_grid_above_the_dense_limit_is_released_on_its_ar1_innovations(monkeypatch):
    """OU kernel, d = 1, grid above MAX_GRID_POINTS (lowered to 40 here): the release goes through the same protocol as
    the dense eigenbasis (OpenDP Gaussian on whitened coordinates, fp_safe = 1 unseeded), on the AR(1) innovations.
    Their whitened norm is the Mahalanobis norm exactly (the sensitivity argument), and the law is the GP's: seeded
    draws have mean f_D(P) and covariance sigma^2 K(P, P) within Monte Carlo error, like the dense release's."""
    import fdp_ppl.machine.release as rel_mod
    from fdp_ppl.machine.gp import OUInnovations

    X, y = labelled_points(40, 1, 9)
    spec = ERMSpec(Exponential(0.3), lam=0.2, n=40, grid_size=60)
    fit = spec.fit(X, y)
    K = spec.kernel_matrix(spec.points, spec.points)
    ar = OUInnovations(spec.axes[0], spec.ou_rho)
    f = fit.decision(spec.points)
    a = ar.coefficients(f) / np.sqrt(ar.eigenvalues)
    assert a @ a == pytest.approx(f @ np.linalg.solve(K, f), rel=1e-8)          # whitened norm = Mahalanobis
    assert np.allclose(ar.reconstruct(ar.coefficients(f)), f)
    mech = GaussianMechanism(1.0, 1e-3)
    dense = fp.plan(fit, mech).attrs
    monkeypatch.setattr(rel_mod, "MAX_GRID_POINTS", 40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = fp.release(fit, mech)
    at = tree.attrs
    assert at["noise_structure"] == "markov" and at["fp_safe"] == 1 and at["noise_generator"] == "opendp"
    assert "AR(1) innovations" in at["fp_safe_reason"] and at["fp_safe_reason"].startswith("1: OpenDP")
    assert at["sigma"] == pytest.approx(dense["sigma"]) and at["epsilon_guaranteed"] <= 1.0 + 1e-12
    assert "eigenvalues" not in tree["constant_data"] and "retained eigenpairs" not in at["noise_kernel"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = fp.release(fit, mech, draws=4000, random_seed=11, study=True)
    d = study["posterior"]["decision"].values.reshape(4000, -1) - f
    sigma = float(study.attrs["sigma"])
    assert study.attrs["fp_safe"] == 0 and study.attrs["noise_structure"] == "markov"
    np.testing.assert_array_less(np.abs(d.mean(0)), 5 * sigma / np.sqrt(4000))
    np.testing.assert_allclose(np.cov(d.T), sigma**2 * K, atol=6 * sigma**2 * np.sqrt(2 / 4000))


@pytest.mark.parametrize("case", ["gp-1d", "gp-2d", "iclp"])
def test_pymc_model_fragment_matches_the_release_law(case):
    """pm.draw of the kernel machine's PyMC model has the release's noise law: mean = projected decision
    function, covariance σ² U_r Λ_r U_rᵀ (GP) or Σ_j 2 b_j² φ_j φ_jᵀ (ICLP Laplace)."""
    import pymc as pm

    if case == "iclp":
        X, y = labelled_points(15, 1, 3)
        spec = ERMSpec(Matern(0.2, nu=1.5), lam=0.5, n=15, grid_size=10, eta=2.0)
        mech = ICLP(1.0)
    else:
        d = 1 if case == "gp-1d" else 2
        X, y = labelled_points(15, d, 3)
        spec = ERMSpec(HALL, lam=0.5, n=15, grid_size=10 if d == 1 else (4, 3), domain=[[0, 1]] * d)
        mech = GaussianMechanism(1.0, 1e-3)
    fit = spec.fit(X, y)
    model = erm_model(fit, mech)
    assert tuple(model.named_vars_to_dims["decision"]) == spec.dims
    n = 6000
    dec = pm.draw(model["decision"], draws=n, random_seed=8).reshape(n, -1)
    pts = spec.points
    if case == "iclp":
        _, sigma = __import__("fdp_ppl.machine.release", fromlist=["_calibrate"])._calibrate(spec, mech)
        b = sigma * np.sqrt(spec.eigenvalues)
        Phi = spec.basis.reconstruct(np.eye(spec.basis.size)).T
        mean, cov = Phi @ fit.eigen_coefficients(), (Phi * 2 * b**2) @ Phi.T
    else:
        basis = grid_basis(spec)
        sigma = fp.release(fit, mech, random_seed=1, study=True).attrs["sigma"]  # the seeded release's σ
        mean = basis.reconstruct(basis.coefficients(fit.decision(pts)))
        cov = sigma**2 * basis.covariance()
        assert np.max(np.abs(cov / sigma**2 - spec.kernel_matrix(pts, pts))) < 1e-8
    sd = np.sqrt(np.diag(cov))
    assert np.max(np.abs(dec.mean(axis=0) - mean) / sd) < 4.5 / np.sqrt(n)
    rel = np.max(np.abs(np.cov(dec.T) - cov)) / np.max(np.diag(cov))
    assert rel < 0.06, rel


# ---------------------------------------------------------------------- Kronecker structure (product kernels)
KRON_SPEC = {"lam": 0.1, "n": 10, "domain": [[0, 1], [0, 2]], "grid_size": (12, 15)}


@pytest.mark.parametrize("kernel", [Gaussian(0.3, convention="hall"), Gaussian(0.2, convention="mirshani"),
                                    Exponential(0.3), Matern(0.3, nu=0.5), Matern(0.3, nu=1.5),
                                    Matern(0.3, nu=2.5)], ids=lambda k: k.name + str(k.params()))
def test_product_kernel_classification_matches_the_kronecker_factorisation(kernel):
    """A kernel is treated as a product iff K(grid, grid) = K_1 ⊗ K_2 to 1e-12 (a misclassification fails here)."""
    spec = ERMSpec(kernel, lam=0.1, n=10, domain=[[0, 1], [0, 2]], grid_size=(4, 5))
    pts = spec.points
    K = spec.kernel_matrix(pts, pts)
    ax = spec.axes
    factors = [kernel(np.abs(a[:, None] - a[None, :])) for a in ax]
    err = float(np.max(np.abs(K - np.kron(*factors))))
    assert spec.product_kernel == (err <= 1e-12), err
    assert spec.product_kernel == isinstance(kernel, Gaussian)
    if spec.product_kernel:
        assert np.max(np.abs(K - np.kron(*spec.kernel_factors()))) <= 1e-12
        assert grid_basis(spec).structure == "kronecker"
    else:
        assert err > 1e-3  # Euclidean exponential / Matérn: far from a product
        with pytest.raises(InputError):
            spec.kernel_factors()
        assert grid_basis(spec).structure == "dense"
    one_d = ERMSpec(kernel, lam=0.1, n=10, grid_size=7)  # d = 1: the dense path
    assert not one_d.product_kernel and grid_basis(one_d).structure == "dense"


def _kron_and_dense(rel_tol=None):
    spec = ERMSpec(Gaussian(0.3, convention="hall"), **KRON_SPEC)
    pts = spec.points
    tol = EIGEN_REL_TOL if rel_tol is None else rel_tol
    return spec, KroneckerEigenbasis(spec.kernel_factors(), tol), GridEigenbasis(spec.kernel_matrix(pts, pts), tol)


def test_kronecker_basis_equals_the_dense_eigenbasis():
    """Same retained eigenvalues, same projector onto the retained span, same noise covariance σ² U_r Λ_r U_rᵀ."""
    spec, kb, db = _kron_and_dense()
    assert kb.structure == "kronecker" and db.structure == "dense"
    assert grid_basis(spec).structure == "kronecker"
    assert kb.size == db.size and 0 < kb.size < kb.n_points == 180  # truncating at the default cut-off
    lam_max = db.eigenvalues[0]
    assert np.max(np.abs(np.sort(kb.eigenvalues) - np.sort(db.eigenvalues))) <= 1e-10 * lam_max
    assert np.all(np.diff(kb.eigenvalues) <= 0)
    assert np.isclose(kb.dropped_trace, db.dropped_trace, rtol=1e-4, atol=1e-12 * lam_max)
    # noise covariance law (what a release draws): identical to 1e-10 relative to λ_max
    assert np.max(np.abs(kb.covariance() - db.covariance())) <= 1e-10 * lam_max
    U = kb.vectors
    assert np.allclose(U.T @ U, np.eye(kb.size), atol=1e-12)
    assert np.allclose(kb.reconstruct(np.eye(kb.size)), U.T, atol=1e-14)
    v = np.random.default_rng(0).standard_normal((6, kb.n_points))
    assert np.allclose(kb.coefficients(v), v @ U, atol=1e-12)
    # projector onto the retained span: 1e-10 where the cut lies in a spectral gap (1e-4: 57 of 180 pairs); at the
    # default cut the dense eigh's vectors next to it carry round-off eps·λ_max/gap (~1e-7), the Kronecker ones not
    for tol, atol in ((1e-4, 1e-10), (None, 1e-6)):
        _, kb2, db2 = _kron_and_dense(tol)
        assert kb2.size == db2.size
        proj_err = np.max(np.abs(kb2.reconstruct(kb2.coefficients(v)) - db2.reconstruct(db2.coefficients(v))))
        assert proj_err <= atol, (tol, proj_err)
    with pytest.raises(InputError):
        kb.coefficients(np.zeros(7))
    with pytest.raises(InputError):
        kb.reconstruct(np.zeros(kb.size + 1))


def test_seeded_release_law_is_the_same_through_both_bases():
    """A seeded release through the Kronecker basis and through the dense basis: same σ, same centre
    (projected decision function) and same noise covariance σ² Σ_j λ_j u_j u_jᵀ (Hall et al. 2013, §4.3)."""
    from fdp_ppl.machine import release as rel

    spec, kb, db = _kron_and_dense()
    fit = spec.fit(*labelled_points(10, 2, 12))
    mech = GaussianMechanism(1.0, 1e-3)
    out = {}
    for name, basis in (("kronecker", kb), ("dense", db)):
        rel._BASES[spec] = {float(EIGEN_REL_TOL): basis}
        tree = fp.release(fit, mech, draws=3, random_seed=2, study=True)
        assert tree.attrs["noise_structure"] == name
        assert tree["posterior"]["decision"].shape == (1, 3, 12, 15)
        centre = basis.reconstruct(basis.coefficients(fit.decision(spec.points)))
        out[name] = (tree.attrs["sigma"], tree.attrs["n_components"], centre,
                     tree.attrs["sigma"] ** 2 * basis.covariance())
    rel._BASES.pop(spec, None)
    (sk, rk, ck, Ck), (sd, rd, cd, Cd) = out["kronecker"], out["dense"]
    assert sk == sd and rk == rd
    assert np.max(np.abs(ck - cd)) <= 1e-10 * np.max(np.abs(cd))
    assert np.max(np.abs(Ck - Cd)) <= 1e-10 * np.max(np.abs(Cd))


def test_kronecker_whitened_sensitivity_brute_force():
    """‖Λ^{-1/2} Uᵀ (f_D − f_D')‖ over retained Kronecker pairs <= ‖f_D − f_D'‖_H <= Δ on brute-force neighbours."""
    n = 10
    spec = ERMSpec(Gaussian(0.3, convention="hall"), lam=0.5, n=n, domain=[[0, 1], [0, 2]], grid_size=(12, 15))
    basis = grid_basis(spec)
    assert basis.structure == "kronecker"
    X, y = labelled_points(n, 2, 4)
    X[:, 1] *= 2
    fa = spec.fit(X, y)
    pts = spec.points
    rng = np.random.default_rng(5)
    cands = [(i, X[i], -y[i]) for i in range(n)] + [(int(rng.integers(n)), rng.uniform(0, 1, 2) * [1, 2],
                                                     rng.choice([-1.0, 1.0])) for _ in range(10)]
    worst = 0.0
    for i, x, s in cands:
        fb = spec.fit(*_neighbour(X, y, i, x, s))
        dmu = fa.decision(pts) - fb.decision(pts)
        w = float(basis.whitened_norm(dmu))
        assert w <= rkhs_distance(spec, fa, fb) * (1 + 1e-6)
        worst = max(worst, w / spec.sensitivity().value)
    assert 0.3 < worst <= 1.0, worst


def test_non_product_large_grid_still_refused_and_online_grid_through_kronecker():
    with pytest.raises(InputError, match="not a product"):
        grid_basis(ERMSpec(Matern(0.3, nu=1.5), lam=0.1, n=10, domain=[[0, 1], [0, 1]], grid_size=(80, 80)))
    spec = ERMSpec(Gaussian(0.3, convention="hall"), **KRON_SPEC)
    fit = spec.fit(*labelled_points(10, 2, 3))
    online = OnlineRelease(fit, GaussianMechanism(1.0, 1e-3), grid=True, random_seed=3, study=True)
    assert grid_basis(spec).structure == "kronecker"
    assert np.array_equal(online.query(spec.points), online.grid_values)
    a = online.query([[0.31, 0.77], [0.5, 1.5]])
    assert np.array_equal(online.query([[0.5, 1.5], [0.31, 0.77]]), a[::-1]) and np.all(np.isfinite(a))


def test_large_kronecker_grid_release_200x200():
    """200 × 200 = 40,000 grid points (7× the dense cap): OpenDP and seeded GP releases in seconds."""
    import time

    spec = ERMSpec(Gaussian(0.3, convention="hall"), lam=0.1, n=30, domain=[[0, 1], [0, 1]], grid_size=(200, 200))
    fit = spec.fit(*labelled_points(30, 2, 7))
    mech = GaussianMechanism(1.0, 1e-3)
    t0 = time.perf_counter()
    basis = grid_basis(spec)
    t_basis = time.perf_counter() - t0
    assert basis.structure == "kronecker" and basis.n_points == 40_000
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = fp.release(fit, mech, draws=2)  # OpenDP, fresh entropy
    t_opendp = time.perf_counter() - t0
    t0 = time.perf_counter()
    seeded = fp.release(fit, mech, draws=2, random_seed=1, study=True)
    t_seeded = time.perf_counter() - t0
    for tr, gen in ((tree, "opendp"), (seeded, "pymc")):
        dec = tr["posterior"]["decision"]
        assert dec.dims == ("chain", "draw", "x1", "x2") and dec.shape == (1, 2, 200, 200)
        assert np.all(np.isfinite(dec.values))
        at = tr.attrs
        assert at["noise_structure"] == "kronecker" and at["noise_generator"] == gen
        assert at["n_components"] == basis.size and "Kronecker" in at["noise_sampler"]
        assert tr["constant_data"]["eigenvalues"].size == basis.size
    assert tree.attrs["fp_safe"] == 1 and seeded.attrs["fp_safe"] == 0
    print(f"200x200: r = {basis.size}, basis {t_basis:.2f}s, opendp {t_opendp:.2f}s, seeded {t_seeded:.2f}s")


def test_gp_grid_draws_take_a_seed_only_for_a_study():
    """Invariant 8 at every level: ``gp_grid_draws`` releases a fit to real records, so a seed needs
    ``study=True`` (refused before anything is drawn); with it the draws are reproducible."""
    from fdp_ppl.machine import gp_grid_draws

    X, y = labelled_points(20, 1, 6)
    fit = ERMSpec(HALL, lam=0.1, n=20, grid_size=25).fit(X, y)
    mech = GaussianMechanism(1.0, 1e-5)
    with pytest.raises(InputError, match="study=True"):
        gp_grid_draws(fit, mech, 2, 4294967300)
    a = gp_grid_draws(fit, mech, 2, 4294967300, study=True)
    b = gp_grid_draws(fit, mech, 2, 4294967300, study=True)
    assert a.values.shape == (2, 25) and np.array_equal(a.values, b.values)
    assert gp_grid_draws(fit, mech, 1).sampler.fp_safe  # unseeded: OpenDP, no study needed


def _recording_path(spec, f, draw, grid=False):
    """An InnovationPath of ``spec``'s kernel answering ``f`` with ``draw``; records every whitened centre it is given."""
    from fdp_ppl.machine.gp import InnovationPath

    seen = []

    def record(c):
        seen.append(np.array(c, dtype=float))
        return draw(np.asarray(c, dtype=float))

    path = InnovationPath(spec.kernel_matrix, spec.d, f, record, ou_rho=spec.ou_rho)
    if grid:
        basis = grid_basis(spec)
        centre = basis.coefficients(f(spec.points))
        path.condition_on_release(spec.points, basis, centre, centre)
        seen.append(centre / np.sqrt(basis.eigenvalues))
    return path, seen


@pytest.mark.parametrize("kernel,grid", [(HALL, False), (HALL, True), (Exponential(0.2), False),
                                         (Exponential(0.2), True)])
def test_innovation_path_answers_f_exactly_without_noise_and_its_whitened_norm_is_the_mahalanobis_norm(kernel, grid):
    """The exact online oracle's sensitivity argument. With the identity as its draw (no noise), the innovation path
    answers f itself; the squared whitened centres it hands to the sampler, over every block and in any order, sum to
    the Mahalanobis norm of f over all answered functionals (grid eigen-coefficients, then points) under their
    covariance (nugget included): at most the RKHS norm whatever is asked. A wrong conditional mean or sd breaks
    either equality."""
    spec = ERMSpec(kernel, lam=0.1, n=20, grid_size=9)
    f = lambda x: np.sin(3.0 * x[:, 0]) + 0.3 * x[:, 0]
    path, seen = _recording_path(spec, f, lambda c: c, grid=grid)
    asks = [np.array([0.13, 0.71]), np.array([0.42]), np.array([0.9, 0.05, 0.55])]
    for q in asks:
        assert np.allclose(path.sample(q), f(q[:, None]), atol=1e-7)
    pts = np.concatenate(asks)[:, None]
    K = spec.kernel_matrix
    if grid:  # functionals: retained eigen-coefficients u_j^T f(P), then the points
        basis = grid_basis(spec)
        U = basis.coefficients(np.eye(basis.n_points))  # (m, r): u_j as columns
        F = np.concatenate([U.T @ f(spec.points), f(pts)])
        C = np.block([[np.diag(basis.eigenvalues), U.T @ K(spec.points, pts)], [K(pts, spec.points) @ U, K(pts, pts)]])
    else:
        F, C = f(pts), K(pts, pts)
    n_pts = len(pts)
    C[-n_pts:, -n_pts:] += path.jitter * np.eye(n_pts)
    total = sum(float(c @ c) for c in seen)
    assert total == pytest.approx(float(F @ np.linalg.solve(C, F)), rel=1e-6)


def test_innovation_path_answers_follow_the_gp_law():
    """Exact innovations drawn as c + σ z give answers with mean f and covariance σ²(K + nugget) (Monte Carlo, 2000
    paths, margins from the sample size); the blocks are asked in two steps, so the conditional factors are used."""
    spec = ERMSpec(HALL, lam=0.1, n=20, grid_size=9)
    f = lambda x: np.cos(2.0 * x[:, 0])
    rng = np.random.default_rng(5)
    sigma, n = 0.7, 2000
    pts = np.array([0.1, 0.3, 0.35, 0.8])
    ans = np.empty((n, 4))
    for i in range(n):
        path, _ = _recording_path(spec, f, lambda c: c + sigma * rng.standard_normal(c.shape))
        ans[i, :2] = path.sample(pts[:2])
        ans[i, 2:] = path.sample(pts[2:])
    cov = sigma**2 * (spec.kernel_matrix(pts[:, None], pts[:, None]) + path.jitter * np.eye(4))
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(ans.mean(0) - f(pts[:, None])) < 4.5 * se)
    emp = np.cov(ans.T)
    sd = np.sqrt(np.outer(np.diag(cov), np.diag(cov)) + cov**2) / np.sqrt(n)  # sd of a sample covariance entry
    assert np.all(np.abs(emp - cov) < 4.5 * sd)


def test_unseeded_online_oracle_is_floating_point_safe_and_its_answers_follow_the_law():
    """Default (unseeded) oracle without a grid: every answer through OpenDP's exact Gaussian (fp_safe = 1, the plan's
    σ raised by OpenDP's map, ε guaranteed within the claim); repeats return the answered value; 400 one-point oracles
    answer with mean f(x) and variance σ²(K(x, x) + nugget) within Monte Carlo error. The OU path refuses a point too
    close to an answered one (a public refusal, after the charge)."""
    X, y = labelled_points(20, 1, 6)
    mech = GaussianMechanism(1.0, 1e-5)
    fit = ERMSpec(HALL, lam=0.1, n=20, grid_size=25).fit(X, y)
    online = OnlineRelease(fit, mech)
    assert online.fp_safe == 1 and online.generator == "opendp" and online.plan.fp_safe
    assert online.epsilon_guaranteed <= mech.epsilon * (1 + 1e-9)
    a = online.query([0.2, 0.6])
    assert np.array_equal(online.query([0.6, 0.2]), a[::-1]) and online.n_released == 2
    x = np.array([[0.37]])
    ans = np.array([OnlineRelease(fit, mech).query(x)[0] for _ in range(400)])
    var = online.sigma**2 * (1.0 + online.path.jitter)
    assert abs(ans.mean() - fit.decision(x)[0]) < 4.5 * np.sqrt(var / 400)
    assert abs(ans.var(ddof=1) / var - 1.0) < 4.5 * np.sqrt(2.0 / 399)
    ou = OnlineRelease(ERMSpec(Exponential(0.2), lam=0.1, n=20, grid_size=25).fit(X, y), mech, grid=True)
    assert ou.path.markov and np.all(np.isfinite(ou.query([0.123, 0.5])))
    with pytest.raises(InputError, match="too close"):
        ou.query([0.123 + 1e-13])


def test_online_oracle_refuses_a_dense_path_it_cannot_hold(monkeypatch):
    """A generic kernel's online path holds a dense factor of every answered quantity: past the public cap
    (lowered to 6 here) a query is refused with one line, before anything is drawn; the OU path (Markov) is not
    capped by it."""
    import fdp_ppl.machine.release as rel_mod

    monkeypatch.setattr(rel_mod, "MAX_DENSE_ONLINE_ANSWERS", 6)
    X, y = labelled_points(20, 1, 6)
    mech = GaussianMechanism(1.0, 1e-5)
    online = OnlineRelease(ERMSpec(HALL, lam=0.1, n=20, grid_size=25).fit(X, y), mech)
    online.query(np.linspace(0.1, 0.5, 5))
    with pytest.raises(InputError, match="MAX_DENSE_ONLINE_ANSWERS"):
        online.query([0.61, 0.62])
    assert online.n_released == 5 and online.query([0.3])[0] == online.query([0.3])[0]
    ou = OnlineRelease(ERMSpec(Exponential(0.2), lam=0.1, n=20, grid_size=25).fit(X, y), mech)
    assert np.all(np.isfinite(ou.query(np.linspace(0.05, 0.95, 10))))
