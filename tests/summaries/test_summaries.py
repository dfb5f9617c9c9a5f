import numpy as np
import pytest
import xarray as xr
from scipy import optimize

import fdp_ppl as fp
from fdp_ppl.summaries import ar_j_star, clip_curves, pss
from fdp_ppl.summaries.curves import as_curves

TAU = 1.0


def _neighbour_pairs(curves, rng, k=200):
    """Random neighbouring datasets: replace record i by a random curve (norm up to 3 tau)."""
    n, K = curves.shape
    for _ in range(k):
        i = rng.integers(n)
        other = curves.copy()
        other[i] = rng.standard_normal(K) * rng.uniform(0.1, 3.0) + rng.standard_normal() * np.cos(
            np.pi * rng.integers(1, 10) * np.linspace(0, 1, K))
        yield curves, other


def _adversarial_pairs(curves, basis, tau, js):
    for j in js:
        phi = basis.eigenfunctions[:, j]
        a, b = curves.copy(), curves.copy()
        a[0], b[0] = tau * phi, -tau * phi
        yield a, b


def test_clipping_bounds_norms_and_counts(curves, small_grid):
    da = as_curves(curves, small_grid)
    before = curves.copy()
    clipped, was = clip_curves(da, small_grid, TAU)
    norms = small_grid.norm(clipped.values)
    assert np.all(norms <= TAU * (1 + 1e-12))
    raw = small_grid.norm(curves)
    assert int(was.sum()) == int((raw > TAU).sum()) > 0
    np.testing.assert_array_equal(clipped.values[raw <= TAU], curves[raw <= TAU])
    np.testing.assert_array_equal(curves, before)  # input not mutated


def test_qr_closed_form_matches_direct_minimisation(curves, matern_basis):
    b = matern_basis
    eta, psi = 1.5, 0.05
    s = fp.iclp_qr_mean(curves, b, tau=TAU, eta=eta, psi=psi)
    clipped = clip_curves(as_curves(curves, b.grid), b.grid, TAU)[0].values
    X = b.coefficients(clipped)  # (n, J): every record in the (complete) eigenbasis
    lam = b.eigenvalues

    def objective(theta):
        return np.mean(np.sum((X - theta) ** 2, axis=1)) + psi * np.sum(theta**2 / lam**eta)

    res = optimize.minimize(objective, np.zeros(b.size), method="trust-exact",
                            jac=lambda th: -2 * (X.mean(0) - th) + 2 * psi * th / lam**eta,
                            hess=lambda th: np.diag(2 + 2 * psi / lam**eta), options={"gtol": 1e-12})
    np.testing.assert_allclose(s.coefficients, res.x, atol=1e-6)
    rk = fp.rkhs_mean(curves, b, tau=TAU, eta=eta, psi=psi)
    np.testing.assert_allclose(rk.coefficients, s.coefficients)


def test_ar_closed_form_matches_coordinatewise_minimisation(curves, matern_basis):
    b = matern_basis
    eta, psi = 1.2, 0.02
    s = fp.iclp_ar_mean(curves, b, tau=TAU, eta=eta, psi=psi)
    clipped = clip_curves(as_curves(curves, b.grid), b.grid, TAU)[0].values
    X = b.coefficients(clipped)
    lam = b.eigenvalues
    J = s.n_components
    for j in range(J):
        f = lambda th: np.mean((X[:, j] - th) ** 2) + psi * abs(th) / lam[j] ** (eta / 2)  # noqa: E731
        r = optimize.minimize_scalar(f, bounds=(-2, 2), method="bounded", options={"xatol": 1e-10})
        assert abs(r.x - s.coefficients[j]) < 1e-6
    # every coefficient at j >= J* is zero for every dataset with norms <= tau
    thr = psi / (2 * lam ** (eta / 2))
    assert np.all(np.abs(X.mean(0))[J:] <= thr[J:])
    assert s.params["J_star"] == J + 1 == ar_j_star(b, TAU, eta, psi)


def test_frl_is_projection(curves, matern_basis):
    s = fp.frl_mean(curves, matern_basis, tau=TAU, M=5)
    assert s.n_components == 5
    assert s.sensitivity("l1", "paper").value == pytest.approx(2 * 5 * TAU / 40)
    assert s.sensitivity("l1", "tight").value == pytest.approx(2 * np.sqrt(5) * TAU / 40)
    with pytest.raises(ValueError, match="M must"):
        fp.frl_mean(curves, matern_basis, tau=TAU, M=0)


SUMMARIES = {
    "frl": lambda c, b: fp.frl_mean(c, b, tau=TAU, M=6),
    "iclp-qr": lambda c, b: fp.iclp_qr_mean(c, b, tau=TAU, eta=1.5, psi=0.025),
    "iclp-ar": lambda c, b: fp.iclp_ar_mean(c, b, tau=TAU, eta=1.1, psi=0.01),
    "rkhs": lambda c, b: fp.rkhs_mean(c, b, tau=TAU, eta=1.0, psi=0.025),
}


def _distance(b, ca, cb, norm):
    J = max(ca.size, cb.size)
    h = np.zeros(J)
    h[: ca.size] += ca
    h[: cb.size] -= cb
    if norm == "1,C":
        return b.norm_1c(h)
    if norm == "cameron-martin":
        return b.norm_cameron_martin(h)
    return np.sum(np.abs(h))


@pytest.mark.parametrize("name", list(SUMMARIES))
@pytest.mark.parametrize("norm", ["1,C", "cameron-martin", "l1"])
def test_sensitivity_never_exceeded_by_brute_force_neighbours(name, norm, curves, matern_basis, rng):
    b = matern_basis
    make = SUMMARIES[name]
    ref = make(curves, b)
    tight = ref.sensitivity(norm, "tight").value
    paper = ref.sensitivity(norm, "paper").value
    assert tight <= paper * (1 + 1e-12)
    worst = 0.0
    pairs = list(_neighbour_pairs(curves, rng, 60)) + list(_adversarial_pairs(curves, b, TAU, range(0, b.size, 3)))
    for d1, d2 in pairs:
        s1, s2 = make(d1, b), make(d2, b)
        worst = max(worst, _distance(b, s1.coefficients, s2.coefficients, norm))
    assert worst <= tight * (1 + 1e-9)
    assert worst > 0


@pytest.mark.parametrize("name", ["iclp-qr", "rkhs"])
def test_cameron_martin_bound_attained_by_adversarial_pair(name, curves, matern_basis):
    b = matern_basis
    make = SUMMARIES[name]
    s = make(curves, b)
    a = s.lipschitz / np.sqrt(s.eigenvalues)
    j_star = int(np.argmax(a))
    (d1, d2), = _adversarial_pairs(curves, b, TAU, [j_star])
    dist = _distance(b, make(d1, b).coefficients, make(d2, b).coefficients, "cameron-martin")
    assert dist == pytest.approx(s.sensitivity("cameron-martin").value, rel=1e-9)
    closed = s.sensitivity("cameron-martin", "closed-form").value
    assert closed >= dist * (1 - 1e-12)


def test_tight_1c_bound_attained(curves, matern_basis):
    b = matern_basis
    s = SUMMARIES["iclp-qr"](curves, b)
    m = s.lipschitz / np.sqrt(s.eigenvalues)
    direction = b.reconstruct(m / np.linalg.norm(m))
    d1, d2 = curves.copy(), curves.copy()
    d1[0], d2[0] = TAU * direction, -TAU * direction
    dist = _distance(b, SUMMARIES["iclp-qr"](d1, b).coefficients, SUMMARIES["iclp-qr"](d2, b).coefficients, "1,C")
    assert dist == pytest.approx(s.sensitivity("1,C", "tight").value, rel=1e-9)


def test_paper_qr_bound_formula(curves, matern_basis):
    s = fp.iclp_qr_mean(curves, matern_basis, tau=TAU, eta=1.5, psi=0.025)
    lam = matern_basis.eigenvalues
    expected = 2 * TAU / 40 * np.sum(lam**1.0 / (lam**1.5 + 0.025))
    assert s.sensitivity("1,C", "paper").value == pytest.approx(expected)
    ar = fp.iclp_ar_mean(curves, matern_basis, tau=TAU, eta=1.1, psi=0.01)
    J = ar.n_components
    assert ar.sensitivity("1,C", "paper").value == pytest.approx(2 * TAU / 40 * np.sum(lam[:J] ** -0.5))


def test_pss_values():
    p = pss(100, 4.0)
    assert p.psi == 0.01 and p.eta_qr == 1.5 and p.eta_ar == 3.0
    assert p.m_range == (int(np.ceil(100 ** (1 / 6))), 4)
    with pytest.raises(ValueError):
        pss(100, 1.0)


def test_dask_backed_curves_give_the_same_summary(curves, small_grid, matern_basis):
    dask = pytest.importorskip("dask.array")
    da = xr.DataArray(curves, dims=("curve", "t"), coords={"t": small_grid.t})
    lazy = da.copy(data=dask.from_array(curves, chunks=(7, -1)))
    a = fp.iclp_qr_mean(da, matern_basis, tau=TAU)
    b = fp.iclp_qr_mean(lazy, matern_basis, tau=TAU)
    np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=1e-10, atol=1e-14)
    assert a.n_clipped == b.n_clipped


def test_dataarray_input_with_other_dim_names(curves, small_grid, matern_basis):
    da = xr.DataArray(curves.T, dims=("loc", "subject"), coords={"loc": small_grid.t})
    s = fp.iclp_qr_mean(da, matern_basis, tau=TAU, curve_dim="subject", t_dim="loc")
    ref = fp.iclp_qr_mean(curves, matern_basis, tau=TAU)
    np.testing.assert_allclose(s.coefficients, ref.coefficients)
    with pytest.raises(ValueError, match="grid"):
        fp.iclp_qr_mean(curves[:, :30], matern_basis, tau=TAU)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_curves_are_rejected(curves, matern_basis, bad):
    c = curves.copy()
    c[3, 4] = bad
    with pytest.raises(ValueError, match="drop incomplete"):
        fp.iclp_qr_mean(c, matern_basis, tau=TAU)


@pytest.mark.parametrize("tau", [0.0, -1.0, np.nan])
def test_bad_tau(curves, matern_basis, tau):
    with pytest.raises(ValueError, match="tau"):
        fp.iclp_qr_mean(curves, matern_basis, tau=tau)


def test_data_derived_tau_warns_and_is_labelled(curves, matern_basis):
    with pytest.warns(fp.PrivacyLeakWarning):
        tau = fp.data_tau(curves, matern_basis.grid)
    s = fp.iclp_qr_mean(curves, matern_basis, tau=tau)
    assert s.n_clipped == 0
    assert s.sensitivity().data_dependent
    assert not fp.iclp_qr_mean(curves, matern_basis, tau=1.0).sensitivity().data_dependent


def test_qr_needs_eta_above_one(curves, matern_basis):
    with pytest.raises(ValueError, match="eta"):
        fp.iclp_qr_mean(curves, matern_basis, tau=TAU, eta=1.0)


def test_explicit_eta_psi_do_not_need_a_polynomial_eigen_decay(curves):
    # Gaussian kernel: super-polynomial decay, fitted beta < 1 on a coarse grid; PSS is not needed here
    b = fp.eigenbasis(fp.Gaussian(rho=0.001), fp.Grid.uniform(60))
    s = fp.rkhs_mean(curves, b, tau=TAU, eta=1.0, psi=0.01)
    assert s.params == {"eta": 1.0, "psi": 0.01}


@pytest.mark.parametrize("name", list(SUMMARIES))
def test_sensitivity_depends_on_public_quantities_only(name, curves, matern_basis, rng):
    """Two unrelated datasets with the same n and tau get the same sensitivity in every norm."""
    other = rng.standard_normal(curves.shape) * 3.0
    a, b = SUMMARIES[name](curves, matern_basis), SUMMARIES[name](other, matern_basis)
    for norm in ("1,C", "cameron-martin", "l1"):
        for bound in ("tight", "paper"):
            assert a.sensitivity(norm, bound).value == b.sensitivity(norm, bound).value
    assert not a.sensitivity().data_dependent


def test_clipping_uses_the_basis_quadrature_for_dataarrays():
    """Curves given as a DataArray are clipped in the norm of the basis grid (here uniform weights),
    not in a grid rebuilt from their coordinate: the norm the sensitivity is stated in."""
    import xarray as xr

    grid = fp.Grid.uniform(30, quadrature="uniform")
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20, grid.size))
    tau = float(np.median(grid.norm(x)))
    da = xr.DataArray(x, dims=("curve", "t"), coords={"t": grid.t})
    a = fp.sample_mean(da, basis, tau=tau)
    b = fp.sample_mean(x, basis, tau=tau)
    np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=1e-12, atol=1e-15)
    assert a.n_clipped == b.n_clipped == int(np.sum(grid.norm(x) > tau))
