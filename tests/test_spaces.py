import numpy as np
import pytest
from scipy import integrate, optimize, special

import fdp_ppl as fp
from fdp_ppl.spaces import DEFAULT_REL_TOL


def test_grid_rescales_and_records_domain():
    g = fp.Grid.from_points(np.array([1.0, 2.0, 4.0, 18.0]))
    assert g.t[0] == 0 and g.t[-1] == 1
    np.testing.assert_allclose(g.points, [1, 2, 4, 18])
    assert (g.lower, g.upper) == (1.0, 18.0)
    np.testing.assert_allclose(g.weights.sum(), 1.0)
    # trapezoid on a non-uniform grid integrates linear functions exactly
    np.testing.assert_allclose(g.inner(g.t, np.ones(4)), 0.5)
    u = fp.Grid.uniform(10, quadrature="uniform")
    np.testing.assert_allclose(u.weights, 0.1)


@pytest.mark.parametrize("bad", [[0.0], [0.0, 0.0, 1.0], [1.0, 0.0], [0.0, np.nan]])
def test_grid_rejects_bad_points(bad):
    with pytest.raises(ValueError):
        fp.Grid.from_points(bad)


def test_grid_rejects_unknown_quadrature():
    with pytest.raises(ValueError, match="quadrature"):
        fp.Grid.uniform(5, quadrature="simpson")


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_closed_forms_match_bessel_form(nu):
    d = np.linspace(0, 1, 101)
    closed = fp.Matern(rho=0.2, nu=nu)(d)
    r = np.sqrt(2 * nu) * d[1:] / 0.2
    bessel = 2 ** (1 - nu) / special.gamma(nu) * r**nu * special.kv(nu, r)
    np.testing.assert_allclose(closed[1:], bessel, rtol=1e-10)
    assert closed[0] == 1.0
    # general-nu branch agrees with the closed form when nu is nudged
    np.testing.assert_allclose(fp.Matern(rho=0.2, nu=nu + 1e-9)(d), closed, atol=1e-6)


def test_kernel_conventions_are_distinct():
    d = np.array([0.0, 0.1, 0.5])
    np.testing.assert_allclose(fp.Gaussian(rho=0.01)(d), np.exp(-d**2 / 0.01))
    np.testing.assert_allclose(fp.Gaussian(rho=0.1, convention="hall")(d), np.exp(-d**2 / (2 * 0.01)))
    np.testing.assert_allclose(fp.Exponential(rho=0.3)(d), fp.Matern(rho=0.3, nu=0.5)(d))
    with pytest.raises(ValueError):
        fp.Gaussian(rho=0.1, convention="other")
    with pytest.raises(ValueError):
        fp.Matern(rho=0.0)
    with pytest.raises(ValueError, match="unknown kernel"):
        fp.kernel_from_name("rbf2", 0.1)
    assert fp.kernel_from_name("matern52", 0.1) == fp.Matern(rho=0.1, nu=2.5)


def exponential_kernel_eigenvalues(rho, n):
    """Exact eigenvalues of exp(-|s-t|/rho) on [0, 1]: lambda = 2c/(w^2 + c^2), c = 1/rho,
    w the positive roots of (w^2 - c^2) sin w - 2 c w cos w = 0."""
    c = 1.0 / rho
    f = lambda w: (w * w - c * c) * np.sin(w) - 2 * c * w * np.cos(w)  # noqa: E731
    xs = np.linspace(1e-9, (n + 2) * np.pi, 200000)
    v = f(xs)
    roots = [optimize.brentq(f, xs[i], xs[i + 1]) for i in np.nonzero(np.sign(v[:-1]) != np.sign(v[1:]))[0]]
    w = np.array(roots[:n])
    return np.sort(2 * c / (w * w + c * c))[::-1]


def test_eigenvalues_match_closed_form_exponential_kernel():
    exact = exponential_kernel_eigenvalues(0.5, 8)
    b = fp.eigenbasis(fp.Exponential(rho=0.5), fp.Grid.uniform(1500))
    np.testing.assert_allclose(b.eigenvalues[:8], exact, rtol=2e-3)


def test_eigenpairs_orthonormal_trace_one_and_converge():
    g = fp.Grid.uniform(400)
    b = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g)
    gram = b.eigenfunctions.T @ (g.weights[:, None] * b.eigenfunctions)
    np.testing.assert_allclose(gram, np.eye(b.size), atol=1e-9)
    assert abs(b.trace() - 1.0) < 1e-9
    assert np.all(np.diff(b.eigenvalues) <= 0)
    coarse = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(100))
    np.testing.assert_allclose(coarse.eigenvalues[:5], b.eigenvalues[:5], rtol=5e-3)
    # eigen-equation against high-resolution quadrature of the integral operator
    k = fp.Matern(rho=0.1, nu=1.5)
    phi1 = lambda s: np.interp(s, g.t, b.eigenfunctions[:, 0])  # noqa: E731
    for s0 in (0.2, 0.5):
        val = integrate.quad(lambda s: k(abs(s0 - s)) * phi1(s), 0, 1, limit=400, points=[s0])[0]
        assert abs(val - b.eigenvalues[0] * phi1(s0)) < 2e-3


def test_matern_eigen_decay_exponents():
    g = fp.Grid.uniform(500)
    assert abs(fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), g).decay_exponent() - 4) < 0.15
    assert abs(fp.eigenbasis(fp.Matern(rho=0.1, nu=2.5), g).decay_exponent() - 6) < 0.3


def test_eigenbasis_is_cached_and_drops_numerically_zero_pairs():
    g = fp.Grid.uniform(200)
    k = fp.Gaussian(rho=0.05)
    b = fp.eigenbasis(k, g)
    assert fp.eigenbasis(k, fp.Grid.uniform(200)) is b
    assert b.n_dropped > 0 and b.size + b.n_dropped == 200
    assert np.all(b.eigenvalues > DEFAULT_REL_TOL * b.eigenvalues[0])
    with pytest.raises(TypeError):
        fp.eigenbasis("matern", g)


def test_norms_projection_and_power(matern_basis):
    b = matern_basis
    c = np.zeros(b.size)
    c[[0, 3]] = [0.5, -0.2]
    x = b.reconstruct(c)
    np.testing.assert_allclose(b.coefficients(x), c, atol=1e-12)
    np.testing.assert_allclose(b.grid.norm(x), np.sqrt(0.29))
    lam = b.eigenvalues
    np.testing.assert_allclose(b.norm_1c(c), 0.5 / np.sqrt(lam[0]) + 0.2 / np.sqrt(lam[3]))
    np.testing.assert_allclose(b.norm_cameron_martin(c), np.sqrt(0.25 / lam[0] + 0.04 / lam[3]))
    np.testing.assert_allclose(b.norm_cs(c, 2.0), np.sqrt(0.25 / lam[0] ** 2 + 0.04 / lam[3] ** 2))
    np.testing.assert_allclose(b.project(x, 1), b.reconstruct(c[:1]))
    ck = b.power_kernel(1.0)
    np.testing.assert_allclose(ck, b.kernel.gram(b.grid.t), atol=1e-8)
    ds = b.to_dataset()
    assert ds["eigenfunctions"].dims == ("t", "basis")


def test_eigenfunction_signs_do_not_depend_on_rounding():
    """Odd eigenfunctions on a symmetric grid have two peaks equal up to rounding: the sign rule must not
    pick between them by the last bits (which differ between BLAS builds)."""
    import numpy as np

    from fdp_ppl.spaces.eigenbasis import _sign_convention

    grid = fp.Grid.uniform(93)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    u = np.array(basis._u)
    assert (_sign_convention(u) == 1).all()
    for j in range(u.shape[1]):
        a = np.abs(u[:, j])
        top2 = np.argsort(a)[::-1][:2]
        v = u.copy()
        # nudge the runner-up peak a few ulps above the top one: argmax alone would now flip the sign
        v[top2[1], j] = np.sign(v[top2[1], j]) * np.nextafter(a[top2[0]], np.inf) * (1 + 4e-16)
        assert _sign_convention(v)[j] == _sign_convention(u)[j] or abs(a[top2[0]] - a[top2[1]]) > 1e-9 * a[top2[0]]
