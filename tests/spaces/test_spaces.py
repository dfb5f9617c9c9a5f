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


# ----------------------------------------------------------------------------------------- one vocabulary
def test_trapezoid_rule_is_one_function_used_by_every_grid():
    from fdp_ppl.kde import CartesianGrid as KdeGrid
    from fdp_ppl.spaces.grid import CartesianGrid, trapezoid_weights

    t = np.array([0.0, 0.1, 0.35, 0.4, 1.0, 2.5])
    w = trapezoid_weights(t)
    np.testing.assert_allclose(w, [0.05, 0.175, 0.15, 0.325, 1.05, 0.75], rtol=1e-14)
    assert w.sum() == pytest.approx(t[-1] - t[0]) and w @ (3 * t - 1) == pytest.approx(1.5 * t[-1] ** 2 - t[-1])
    g = fp.Grid.from_points(t)
    np.testing.assert_array_equal(g.weights, trapezoid_weights(g.t) / trapezoid_weights(g.t).sum())
    assert KdeGrid is CartesianGrid                         # one definition, re-exported by the KDE
    box = CartesianGrid((t, np.linspace(-1, 1, 4)))
    np.testing.assert_array_equal(box.weights[0], w)
    # no private copy of the rule is left in the families (the reader of a KDE release included)
    import fdp_ppl.inference.density as dens
    import fdp_ppl.kde.grid as kg

    assert not hasattr(dens, "_trapezoid") and not hasattr(kg, "_trapezoid")


def test_cartesian_grid_points_weights_and_quadratures():
    from fdp_ppl.errors import InputError
    from fdp_ppl.spaces.grid import CartesianGrid

    g = CartesianGrid.uniform([(0, 1), (-2, 2)], [3, 5])
    assert g.d == 2 and g.shape == (3, 5) and g.size == 15 and g.dims == ("x1", "x2")
    P = g.points
    assert P.shape == (15, 2) and np.array_equal(P[1], [0.0, -1.0]) and np.array_equal(P[5], [0.5, -2.0])  # C order
    assert g.product_weights.shape == (3, 5) and g.product_weights.sum() == pytest.approx(4.0)
    assert g.integrate(np.ones(g.shape)) == pytest.approx(4.0)
    u = CartesianGrid.uniform([(0, 1), (-2, 2)], [3, 5], quadrature="unit")
    assert np.array_equal(u.product_weights, np.ones((3, 5))) and np.array_equal(u.points, P)
    with pytest.raises(InputError, match="quadrature"):
        CartesianGrid.uniform((0, 1), 4, quadrature="simpson")
    with pytest.raises(InputError, match="increasing"):
        CartesianGrid((np.array([0.0, 0.0, 1.0]),))
    # the kernel machine's grid is one of them (unit weights), its points those of the spec
    from fdp_ppl.machine import ERMSpec

    spec = ERMSpec(fp.Gaussian.from_bandwidth(0.3), lam=0.1, n=10, domain=[[0, 1], [-2, 2]], grid_size=(3, 5))
    assert spec.grid.quadrature == "unit" and np.array_equal(spec.points, P) and spec.dims == g.dims


def test_gaussian_bump_conventions_are_named():
    from fdp_ppl.spaces import gaussian_bump, kernel_from_name

    d = np.linspace(-2, 2, 41)
    h, rho = 0.3, 0.07
    np.testing.assert_allclose(fp.Gaussian(rho)(d), np.exp(-d**2 / rho), rtol=1e-15)            # Mirshani
    np.testing.assert_allclose(fp.Gaussian.from_bandwidth(h)(d), np.exp(-d**2 / (2 * h * h)), rtol=1e-15)  # Hall
    assert fp.Gaussian.from_bandwidth(h) == fp.Gaussian(h, convention="hall")
    np.testing.assert_allclose(fp.Gaussian(2 * h * h)(d), fp.Gaussian.from_bandwidth(h)(d), rtol=1e-14)
    assert kernel_from_name("gaussian-mirshani", rho) == kernel_from_name("gaussian", rho) == fp.Gaussian(rho)
    assert kernel_from_name("gaussian-hall", h) == fp.Gaussian.from_bandwidth(h)
    # in place (the kernel machine's Gram path) and allocating agree to rounding; the density integrates to 1
    buf = d * d
    np.testing.assert_allclose(gaussian_bump(buf, h, squared=True, out=buf), gaussian_bump(d, h), rtol=1e-13)
    x = np.linspace(-10 * h, 10 * h, 4001)
    assert np.trapezoid(gaussian_bump(x, h, density=True), x) == pytest.approx(1.0, rel=1e-10)
    with pytest.raises(ValueError):
        gaussian_bump(d, h, rho=rho)
    with pytest.raises(ValueError):
        gaussian_bump(d, rho=rho, density=True)


def test_no_copy_of_the_gaussian_bump_outside_spaces():
    """The bump exp(-d²/(2h²)) / exp(-d²/ρ) is written once (spaces/kernels.py); the families call it."""
    import pathlib
    import re

    root = pathlib.Path(fp.__file__).parent
    pattern = re.compile(r"\b(np|xp|math)\.exp\((?=.*(\*\*\s*2|-\s*0\.5|\bd\s*\*\s*d\b|\bsq\b))")
    hits = [f"{p.relative_to(root)}:{i}" for folder in ("kde", "machine", "inference", "spaces")
            for p in (root / folder).rglob("*.py") if p.name != "kernels.py"
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if pattern.search(line) and not line.lstrip().startswith("#")]
    assert not hits, hits


def test_kernels_compose_over_coordinates():
    from fdp_ppl.spaces import ProductKernel, SumKernel

    k1, k2 = fp.Gaussian.from_bandwidth(0.3), fp.Matern(rho=0.2, nu=1.5)
    prod, add = k1 * k2, k1 + k2
    assert isinstance(prod, ProductKernel) and isinstance(add, SumKernel) and prod.d == add.d == 2
    a1, a2 = np.linspace(0, 1, 4), np.linspace(-1, 1, 5)
    P = np.stack([m.ravel() for m in np.meshgrid(a1, a2, indexing="ij")], -1)
    np.testing.assert_allclose(prod.gram(P), np.kron(k1.gram(a1), k2.gram(a2)), rtol=1e-15)
    np.testing.assert_allclose(add.gram(P), np.add.outer(k1.gram(a1), k2.gram(a2)).transpose(0, 2, 1, 3).reshape(20, 20))
    assert (prod * fp.Exponential(0.5)).d == 3 and (add + k1).d == 3
    # the Gaussian of the Euclidean distance is a product over coordinates, in both conventions
    for g in (fp.Gaussian(0.2), fp.Gaussian.from_bandwidth(0.2)):
        from scipy.spatial.distance import cdist

        np.testing.assert_allclose((g * g).gram(P), g(cdist(P, P)), rtol=1e-13)
    with pytest.raises(TypeError):
        prod + k1
    with pytest.raises(TypeError):
        ProductKernel((k1, "gaussian"))


def _dense_reference(grams, weights, rel_tol):
    """Every eigenpair of W^½ (⊗ K_k) W^½ by one dense eigh of the full Kronecker matrix, then the retained ones."""
    from scipy import linalg

    K, w = grams[0], weights[0]
    for G, v in zip(grams[1:], weights[1:]):
        K, w = np.kron(K, G), np.multiply.outer(w, v).ravel()
    sw = np.sqrt(w)
    lam, U = linalg.eigh(sw[:, None] * K * sw[None, :])
    lam, U = lam[::-1], U[:, ::-1]
    keep = lam > rel_tol * lam[0]
    return lam[keep], U[:, keep] / sw[:, None], w


def _gap_tol(lam):
    """A cut-off in the widest spectral gap between 1e-6 and 1e-3 of the top: the retained span is then defined to
    ~ε λ_max/gap, below 1e-12, in the dense reference too (dozens of pairs retained)."""
    r = lam / lam[0]
    i = [j for j in range(len(r) - 1) if 1e-6 < r[j + 1] and r[j] < 1e-3]
    j = max(i, key=lambda j: r[j] - r[j + 1])
    return float(np.sqrt(r[j] * r[j + 1]))


@pytest.mark.parametrize("case", ["kde-1d", "kde-2d", "kde-2d-ties", "machine-2d"])
def test_tensor_eigenbasis_equals_the_dense_kronecker_eigh(case):
    """Same eigenvalues, noise covariance Σ λ_j φ_j φ_jᵀ and projections as one eigh of the full Kronecker matrix,
    to 1e-12 of the largest (KDE: trapezoid weights; kernel machine: unit weights, the matrix K(P, P))."""
    from fdp_ppl.machine import ERMSpec, KroneckerEigenbasis
    from fdp_ppl.machine.release import grid_basis
    from fdp_ppl.kde import CartesianGrid, KDESpec

    rng = np.random.default_rng(3)
    if case == "machine-2d":
        spec = ERMSpec(fp.Gaussian(0.2), lam=0.1, n=10, domain=[[0, 1], [0, 2]], grid_size=(11, 13))
        grams, weights = spec.kernel_factors(), [np.ones(11), np.ones(13)]
        build = lambda tol: KroneckerEigenbasis(grams, tol)
        basis = grid_basis(spec)
        assert isinstance(basis, KroneckerEigenbasis) and basis.rel_tol == 1e-10
        K = spec.kernel_matrix(spec.points, spec.points)
        np.testing.assert_allclose(np.kron(*grams), K, rtol=1e-13, atol=1e-15)
        values = rng.standard_normal((3, 143))
        shape = (143,)
    else:
        grid = {"kde-1d": CartesianGrid.uniform((0, 1), 60),
                "kde-2d": CartesianGrid.uniform([(0, 1), (0, 1.5)], [14, 17]),
                "kde-2d-ties": CartesianGrid.uniform([(0, 1), (0, 1)], [15, 15])}[case]
        h = {"kde-1d": 0.1, "kde-2d": [0.15, 0.25], "kde-2d-ties": 0.2}[case]
        spec = KDESpec(grid=grid, bandwidth=h, n=50)
        basis = spec.basis
        grams = basis.product_kernel.factor_grams(grid.axes)
        weights = list(grid.weights)
        build = lambda tol: type(basis)(grid, spec.bandwidths, tol)
        values = rng.standard_normal((3,) + grid.shape)
        shape = grid.shape
    for tol in (basis.rel_tol, None):
        b = basis if tol == basis.rel_tol else None
        lam, phi, w = _dense_reference(grams, weights, tol if tol is not None else 1.0)
        if b is None:   # a cut in a spectral gap: the retained span is defined to rounding, so are its projections
            tol = _gap_tol(_dense_reference(grams, weights, 1e-15)[0])
            lam, phi, w = _dense_reference(grams, weights, tol)
            b = build(tol)
            v = values.reshape(3, -1)
            proj_ref = (v * w) @ phi @ phi.T
            proj = b.reconstruct(b.coefficients(values)).reshape(3, -1)
            assert np.max(np.abs(proj - proj_ref)) <= 1e-12 * np.max(np.abs(proj_ref))
            assert b.size > 10
        top = lam[0]
        assert b.size == lam.size and 0 < b.size
        assert np.max(np.abs(b.eigenvalues - lam)) <= 1e-12 * top                      # noise variances σ² λ_j
        big = lam > 1e-3 * top
        assert np.max(np.abs(b.eigenvalues[big] / lam[big] - 1)) <= 1e-12
        assert np.all(np.diff(b.eigenvalues) <= 0)
        # the noise covariance the release draws (σ² Σ_j λ_j φ_j φ_jᵀ on the grid) and the basis' orthonormality
        cov = b.covariance()
        assert np.max(np.abs(cov - (phi * lam) @ phi.T)) <= 1e-12 * np.max(np.abs(cov)) * 10
        F = b.functions
        np.testing.assert_allclose((F.T * w) @ F, np.eye(b.size), atol=1e-12)
        c = b.coefficients(values)
        assert c.shape == (3, b.size) and b.reconstruct(c).shape == (3,) + shape
        np.testing.assert_allclose(c, (values.reshape(3, -1) * w) @ F, atol=1e-12 * np.abs(c).max())
        assert b.dropped_trace >= 0


def _old_machine_basis(factors, rel_tol):
    """The kernel machine's Kronecker algorithm before the tensor basis (scipy eigh per factor, LAPACK signs,
    stable order): what its seeded releases were drawn with."""
    from scipy import linalg

    mus, vecs, full = [], [], []
    for K in factors:
        mu, V = linalg.eigh(0.5 * (K + K.T))
        mu, V = mu[::-1], V[:, ::-1]
        keep = mu > rel_tol * mu[0]
        full.append(np.clip(mu, 0.0, None))
        mus.append(mu[keep])
        vecs.append(V[:, keep])
    prod = np.multiply.outer(*mus).ravel()
    sel = np.flatnonzero(prod > rel_tol * mus[0][0] * mus[1][0])
    index = sel[np.argsort(-prod[sel], kind="stable")]
    dropped = max(float(np.prod([np.sum(m) for m in full])) - float(np.sum(prod[index])), 0.0)
    return prod[index], index, vecs, dropped


def _old_kde_basis(grid, h, rel_tol, variance=1.0):
    """The KDE's product algorithm before the tensor basis (per-axis eigh of W^½ K W^½ on these small grids, sign
    convention, reversed numpy argsort)."""
    from scipy import linalg

    from fdp_ppl.spaces.eigenbasis import _sign_convention

    vals, funs = [], []
    for a, w, hk in zip(grid.axes, grid.weights, h):
        sw = np.sqrt(w)
        lam, u = linalg.eigh(sw[:, None] * fp.Gaussian.from_bandwidth(hk).gram(a) * sw[None, :])
        lam, u = lam[::-1], u[:, ::-1]
        keep = lam > rel_tol * lam[-1 if False else 0]
        lam, u = lam[keep], u[:, keep]
        vals.append(variance * lam)
        funs.append(u * _sign_convention(u) / sw[:, None])
    flat = vals[0]
    for extra in vals[1:]:
        flat = np.multiply.outer(flat, extra)
    flat = flat.ravel()
    order = np.argsort(flat)[::-1]
    order = order[flat[order] > rel_tol * flat[order[0]]]
    return flat[order], order, funs


def test_tensor_bases_reproduce_the_algorithms_releases_were_drawn_with():
    """Bitwise: the kernel machine's basis (and its noise_dropped_trace attr) and the KDE's (sign convention and the
    order of tied eigenvalues on a square grid with one bandwidth) are those before the common tensor basis, so
    seeded releases do not change."""
    from fdp_ppl.machine import ERMSpec, KroneckerEigenbasis
    from fdp_ppl.kde import CartesianGrid, KDESpec

    spec = ERMSpec(fp.Gaussian.from_bandwidth(0.3), lam=0.1, n=10, domain=[[0, 1], [0, 2]], grid_size=(12, 15))
    kb = KroneckerEigenbasis(spec.kernel_factors(), 1e-10)
    lam, index, vecs, dropped = _old_machine_basis(spec.kernel_factors(), 1e-10)
    assert np.array_equal(kb.eigenvalues, lam) and np.array_equal(kb.index, index) and kb.dropped_trace == dropped
    assert all(np.array_equal(a, b) for a, b in zip(kb.factor_vectors, vecs))
    grid = CartesianGrid.uniform([(0, 1), (0, 1)], [15, 15])
    kde = KDESpec(grid=grid, bandwidth=0.2, n=50).basis
    lam, order, funs = _old_kde_basis(grid, [0.2, 0.2], 1e-12)
    assert np.sum(np.diff(lam) == 0) > 10                   # ties: the order among them is pinned too
    assert np.array_equal(kde.eigenvalues, lam) and np.array_equal(kde.index, order)
    assert all(np.array_equal(a, b) for a, b in zip(kde.axis_functions, funs))


def test_every_basis_satisfies_the_basis_protocol():
    from fdp_ppl.machine import ERMSpec, GridEigenbasis, KroneckerEigenbasis
    from fdp_ppl.kde import CartesianGrid, KDESpec
    from fdp_ppl.spaces import Basis, TensorEigenbasis

    spec = ERMSpec(fp.Gaussian(0.2), lam=0.1, n=10, domain=[[0, 1], [0, 1]], grid_size=(6, 7))
    grid = CartesianGrid.uniform([(0, 1), (0, 1)], [8, 9])
    bases = [fp.eigenbasis(fp.Matern(rho=0.2), fp.Grid.uniform(30)),
             TensorEigenbasis(fp.Gaussian.from_bandwidth(0.2) * fp.Matern(rho=0.3, nu=2.5), grid),
             KDESpec(grid=grid, bandwidth=0.2, n=10).basis,
             KroneckerEigenbasis(spec.kernel_factors()),
             GridEigenbasis(spec.kernel_matrix(spec.points, spec.points))]
    for b in bases:
        assert isinstance(b, Basis), type(b)
        assert b.size == b.eigenvalues.size > 0
        v = np.ones(np.shape(b.weights))
        assert b.reconstruct(b.coefficients(v)).shape == v.shape
    assert not isinstance(object(), Basis) and not isinstance(fp.Grid.uniform(5), Basis)
    assert isinstance(bases[2], TensorEigenbasis) and isinstance(bases[3], TensorEigenbasis)


def test_tensor_eigenbasis_refuses_mismatched_factors():
    from fdp_ppl.errors import InputError
    from fdp_ppl.spaces import TensorEigenbasis
    from fdp_ppl.spaces.grid import CartesianGrid

    grid = CartesianGrid.uniform([(0, 1), (0, 1)], [5, 6])
    with pytest.raises(InputError, match="ProductKernel of 2"):
        TensorEigenbasis(fp.Gaussian(0.2) * fp.Gaussian(0.2) * fp.Gaussian(0.2), grid)
    with pytest.raises(InputError, match="shape"):
        TensorEigenbasis(None, grid, grams=[np.eye(5), np.eye(5)])
    b = TensorEigenbasis(fp.Gaussian(0.2) * fp.Gaussian(0.2), grid)
    with pytest.raises(InputError):
        b.coefficients(np.zeros((6, 5)))
    with pytest.raises(InputError):
        b.reconstruct(np.zeros(b.size + 1))
    with pytest.raises(ValueError, match="ties"):
        TensorEigenbasis(fp.Gaussian(0.2) * fp.Gaussian(0.2), grid, ties="random")
    n = b.size
    assert b.truncate(3) is b and b.size == 3 and b.eigenvalues.size == 3 and n > 3
    with pytest.raises(InputError):
        b.truncate(4)


def test_svm_and_release_name_their_gaussian_convention(capsys):
    from argparse import Namespace

    from fdp_ppl.cli import main
    from fdp_ppl.cli.machine import _kernel

    hall = fp.Gaussian.from_bandwidth(0.4)
    assert _kernel(Namespace(kernel="gaussian", bandwidth=0.4)) == hall           # svm: Hall, as before
    assert _kernel(Namespace(kernel="gaussian-hall", bandwidth=0.4)) == hall
    assert _kernel(Namespace(kernel="gaussian-mirshani", bandwidth=0.4)) == fp.Gaussian(0.4)
    assert main(["svm", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "gaussian: exp(-d^2/(2h^2)), Hall's convention" in out and "gaussian-mirshani" in out
    assert main(["release", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "gaussian = gaussian-mirshani: exp(-d²/ρ)" in out and "gaussian-hall: exp(-d²/(2ρ²))" in out
