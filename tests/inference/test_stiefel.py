"""The matrix Bingham normaliser ₁F₁(k/2; m/2; A) on the Stiefel manifold and the sequential (deflation) Bingham
law's normaliser (fdp_ppl.inference.stiefel), and the frame laws that use them (fdp_ppl.inference.frame_laws).

Monte Carlo margins are 4 standard errors of the estimate (from its own sample), plus the approximation's
documented tolerance where the method is not exact."""

import numpy as np
import pytest

from fdp_ppl.errors import InputError
from fdp_ppl.inference import bingham as B
from fdp_ppl.inference import stiefel as St
from fdp_ppl.inference.components import ComponentsPrior, FrameLikelihood
from fdp_ppl.inference.frame_laws import FRAME_LAWS, frame_law


def _sym(rng, m, scale):
    A = rng.normal(size=(m, m)) * scale
    return A + A.T


def _mechanism_parameter(rng, m, n, eps=1.0):
    """A = s(nS − Σ⁻¹) with S from the default prior, Fourier Σ_ii = i⁻³ (the release's parameter)."""
    return eps / 2 * (n * ComponentsPrior().draw(m, 1, rng)[0] - np.diag(np.arange(1, m + 1.0) ** 3))


@pytest.mark.parametrize("m,scale", [(3, 0.5), (3, 3.0), (4, 1.0)])
def test_complement_identity_is_exact_against_brute_force(m, scale):
    """k = m − 1: e^{tr A} C_1(−A) against plain Monte Carlo over Haar frames (300 000 QR draws)."""
    rng = np.random.default_rng(m * 10 + int(scale))
    A = _sym(rng, m, scale)
    exact = St.stiefel_log_constant(A, m - 1, "complement")
    mc, se = St.stiefel_log_constant(A, m - 1, "uniform-monte-carlo", draws=150_000, random_seed=1)
    assert se < 0.02
    assert abs(exact - mc) < 4 * se


@pytest.mark.parametrize("m,k,scale", [(4, 2, 0.5), (5, 2, 0.7)])
def test_nested_approximation_against_brute_force(m, k, scale):
    """Small spreads, where plain Monte Carlo over Haar frames is accurate: nested within its tolerance for k = 2
    (at k = 3, m = 6 and all |a_i| below about 1.5 its error reaches 0.33 nats: stiefel's module docstring)."""
    rng = np.random.default_rng(m + k)
    A = _sym(rng, m, scale)
    mc, se = St.stiefel_log_constant(A, k, "uniform-monte-carlo", draws=100_000, random_seed=2)
    assert se < 0.02
    assert abs(St.stiefel_log_constant(A, k, "nested") - mc) < St.NESTED_TOLERANCE + 4 * se


def test_importance_sampling_agrees_with_the_exact_constant():
    """The matrix-ACG importance sampler (the reference at large spreads) against the complement identity."""
    rng = np.random.default_rng(3)
    for scale in (1.0, 10.0, 30.0):
        A = _sym(rng, 4, scale)
        mc, se = St.stiefel_log_constant(A, 3, "monte-carlo", draws=40_000, random_seed=4)
        assert se < 0.05
        assert abs(St.stiefel_log_constant(A, 3, "complement") - mc) < 4 * se


@pytest.mark.parametrize("m,k,n", [(4, 2, 100), (5, 2, 30), (6, 3, 100)])
def test_nested_approximation_on_mechanism_parameters(m, k, n):
    """The release's own parameters (spreads of tens): nested within its tolerance of importance sampling."""
    rng = np.random.default_rng(m * k + n)
    for _ in range(2):
        A = _mechanism_parameter(rng, m, n)
        mc, se = St.stiefel_log_constant(A, k, "monte-carlo", draws=40_000, random_seed=int(rng.integers(1000)))
        assert se < 0.08
        assert abs(St.stiefel_log_constant(A, k, "nested") - mc) < St.NESTED_TOLERANCE + 4 * se


def test_exact_cases_and_invariances():
    rng = np.random.default_rng(5)
    A = _sym(rng, 5, 2.0)
    # k = 1 is the vector constant; k = m is e^{tr A}; rotation invariance; shift adds k c
    assert St.stiefel_log_constant(A, 1) == pytest.approx(B.bingham_log_constant(A, "series"), abs=1e-12)
    assert St.stiefel_log_constant(A, 1, "nested") == pytest.approx(B.bingham_log_constant(A, "series"), abs=1e-10)
    assert St.stiefel_log_constant(A, 5) == pytest.approx(np.trace(A))
    assert St.stiefel_log_constant(A, 5, "nested") == pytest.approx(np.trace(A), abs=1e-10)
    Q = np.linalg.qr(rng.normal(size=(5, 5)))[0]
    base = St.stiefel_log_constant(A, 2)
    assert St.stiefel_log_constant(Q @ A @ Q.T, 2) == pytest.approx(base, abs=1e-9)
    assert St.stiefel_log_constant(A + 3.0 * np.eye(5), 2) == pytest.approx(base + 6.0, abs=1e-9)
    assert St.stiefel_log_constant(2.5 * np.eye(4), 2, "nested") == pytest.approx(5.0, abs=1e-12)


@pytest.mark.parametrize("m,k,method", [(5, 2, "nested"), (6, 3, "nested"), (4, 3, "complement")])
def test_gradient_is_the_derivative(m, k, method):
    """The gradient (E[VVᵀ] of the approximated law) against central differences; trace k."""
    rng = np.random.default_rng(m + 7 * k)
    A = _sym(rng, m, 3.0)
    _, g = St.stiefel_log_constant(A, k, method, grad=True)
    assert np.trace(g) == pytest.approx(k, abs=1e-9)
    E = _sym(rng, m, 1.0)
    h = 1e-5
    fd = (St.stiefel_log_constant(A + h * E, k, method) - St.stiefel_log_constant(A - h * E, k, method)) / (2 * h)
    assert np.sum(g * E) == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_sequential_constant_is_the_product_of_step_constants():
    rng = np.random.default_rng(6)
    m, k = 5, 3
    A = _sym(rng, m, 3.0)
    V = np.linalg.qr(rng.normal(size=(m, k)))[0]
    w = np.array([0.5, 0.3, 0.2])
    total = 0.0
    for i in range(k):
        P = np.linalg.qr(V[:, :i], mode="complete")[0][:, i:] if i else np.eye(m)
        total += B.bingham_log_constant(w[i] * P.T @ A @ P, "series")
    lc, g = St.sequential_log_constant(V, A, w, "series", grad=True)
    assert lc == pytest.approx(total, abs=1e-10)
    E = _sym(rng, m, 1.0)
    h = 1e-5
    fd = (St.sequential_log_constant(V, A + h * E, w, "series")
          - St.sequential_log_constant(V, A - h * E, w, "series")) / (2 * h)
    assert np.sum(g * E) == pytest.approx(fd, rel=1e-5)


def test_sequential_law_density_integrates_to_one():
    """The sequential law's density w.r.t. the Haar law, exp(Σ w_i v_iᵀAv_i − log normaliser), has mean 1 over
    Haar frames (Monte Carlo, 4 standard errors): the likelihood is normalised."""
    rng = np.random.default_rng(8)
    m, k = 4, 2
    A = _sym(rng, m, 1.0)
    w = np.array([0.6, 0.4])
    V = np.linalg.qr(rng.normal(size=(1_500, m, k)))[0]
    dens = np.exp(np.einsum("bik,k,ij,bjk->b", V, w, A, V)
                  - np.array([St.sequential_log_constant(v, A, w, "series") for v in V]))
    assert abs(dens.mean() - 1.0) < 4 * dens.std(ddof=1) / np.sqrt(dens.size)


def test_op_value_and_gradient():
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(9)
    A = _sym(rng, 5, 2.0)
    x = pt.dmatrix("A")
    logc, _ = St.stiefel_log_constant_op(2, "nested")(x)
    f = pytensor.function([x], [logc, pytensor.grad(logc, x)])
    val, grad = f(A)
    ref, g = St.stiefel_log_constant(A, 2, "nested", grad=True, vector_method="series")
    assert float(val) == pytest.approx(ref, abs=1e-12)
    np.testing.assert_allclose(grad, g, atol=1e-12)
    V = np.linalg.qr(rng.normal(size=(2, 5, 2)))[0]
    lc, _ = St.sequential_log_constant_op("series")(x, pt.as_tensor_variable(V), pt.as_tensor_variable(np.ones(2)))
    f2 = pytensor.function([x], [lc, pytensor.grad(lc, x)])
    v2, g2 = f2(A)
    assert float(v2) == pytest.approx(sum(St.sequential_log_constant(v, A, None, "series") for v in V), abs=1e-10)
    np.testing.assert_allclose(g2, sum(St.sequential_log_constant(v, A, None, "series", grad=True)[1] for v in V),
                               atol=1e-12)


def test_frame_law_hook_is_keyed_on_the_release_attrs():
    assert frame_law({"sampler": "gibbs"}) is FRAME_LAWS["matrix-bingham"]
    assert frame_law({"sampler": "exact"}) is FRAME_LAWS["matrix-bingham"]
    assert frame_law({"sampler": "sequential"}) is FRAME_LAWS["sequential-bingham"]
    assert frame_law({"sampler": "gibbs", "frame_law": "sequential-bingham"}) is FRAME_LAWS["sequential-bingham"]
    with pytest.raises(InputError, match="sampler"):
        frame_law({"sampler": "rejection-from-gp-base"})
    seq = FRAME_LAWS["sequential-bingham"]
    np.testing.assert_allclose(seq.weights({"epsilon": 1.0}, 2), [0.5, 0.5])
    np.testing.assert_allclose(seq.weights({"epsilon": 2.0, "epsilon_steps": "1.5, 0.5"}, 2), [0.75, 0.25])


def test_likelihoods_of_both_laws():
    """k = 2 frames: the matrix law's log-likelihood is tr(VᵀAV) − log C_2(A) and depends on V only through VVᵀ;
    the sequential law's is the sum of its steps' vector Bingham log-densities and depends on the column order."""
    rng = np.random.default_rng(10)
    m, n, s = 4, 50, 0.5
    sigma = np.diag(np.arange(1, m + 1.0) ** -3)
    V = np.linalg.qr(rng.normal(size=(3, m, 2)))[0]
    S_ = ComponentsPrior().draw(m, 1, rng)[0]
    mat = FrameLikelihood.build(V, sigma, s, n)
    assert mat.method == "nested" and mat.k == 2
    A = mat.parameter(S_)
    ref = np.einsum("fik,ij,fjk->f", V, A, V) - St.stiefel_log_constant(A, 2, "nested")
    np.testing.assert_allclose(mat.logp(S_), ref, atol=1e-10)
    R = np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])
    np.testing.assert_allclose(FrameLikelihood.build(V @ R, sigma, s, n).logp(S_), ref, atol=1e-9)
    seq = FrameLikelihood.build(V, sigma, s, n, law="sequential-bingham", weights=[0.5, 0.5])
    assert seq.method == "series"
    lp = seq.logp(S_)
    for f in range(3):
        v1, v2 = V[f, :, 0], V[f, :, 1]
        P = np.linalg.qr(v1[:, None], mode="complete")[0][:, 1:]
        want = (0.5 * v1 @ A @ v1 - B.bingham_log_constant(0.5 * A, "series")
                + 0.5 * v2 @ A @ v2 - B.bingham_log_constant(0.5 * P.T @ A @ P, "series"))
        assert lp[f] == pytest.approx(want, abs=1e-10)
    swapped = FrameLikelihood.build(V[:, :, ::-1], sigma, s, n, law="sequential-bingham", weights=[0.5, 0.5])
    assert np.max(np.abs(swapped.logp(S_) - lp)) > 1e-3


def test_bad_inputs_are_refused():
    A = np.eye(3)
    with pytest.raises(InputError, match="k = 4"):
        St.stiefel_log_constant(A, 4)
    with pytest.raises(InputError, match="complement"):
        St.stiefel_log_constant(np.eye(5), 2, "complement")
    with pytest.raises(InputError, match="gradient"):
        St.stiefel_log_constant(A, 2, "monte-carlo", grad=True)
    with pytest.raises(InputError, match="unknown method"):
        St.stiefel_log_constant(A, 2, "bogus")
    with pytest.raises(InputError, match="orthonormal"):
        FrameLikelihood.build(np.ones((1, 3, 2)), np.eye(3), 0.5, 10)


# ---------------------------------------------------------------------------- exact zonal series (small spreads)
@pytest.mark.parametrize("m,k", [(3, 2), (4, 3), (4, 1), (3, 3)])
def test_zonal_series_equals_the_exact_identities(m, k):
    """The zonal-polynomial series (Jack recursion, α = 2) against the exact constants it must reproduce: the
    vector series (k = 1), the complement identity (k = m − 1) and e^{tr A} (k = m), value and gradient, to 1e-9
    (its stated truncation tolerance)."""
    rng = np.random.default_rng(10 * m + k)
    A = _sym(rng, m, 0.15)
    z, gz = St.stiefel_log_constant(A, k, "zonal", grad=True)
    ref, gr = St.stiefel_log_constant(A, k, "complement" if k >= m - 1 else "auto", grad=True)
    assert abs(z - ref) < St.ZONAL_TOLERANCE
    np.testing.assert_allclose(gz, gr, atol=1e-8)


def test_zonal_series_against_brute_force_where_nested_is_poor():
    """m = 6, k = 3, all |a_i| <= 0.5 (k < m - 1: no identity applies): the zonal series against plain Monte Carlo
    over Haar frames (4 standard errors), where the nested approximation is off by more than 8 of them (0.011
    nats); 'auto' takes the series there and its bound reports a degree within the cap."""
    a = 0.5 * np.array([1.0, 0.6, 0.2, -0.3, -0.7, -1.0])
    A = np.diag(a)
    assert St.zonal_degree(np.ptp(a), 6, 3) is not None
    z = St.stiefel_log_constant(A, 3, "zonal")
    mc, se = St.stiefel_log_constant(A, 3, "uniform-monte-carlo", draws=100_000, random_seed=3)
    assert se < 0.002 and abs(z - mc) < 4 * se
    assert abs(St.stiefel_log_constant(A, 3, "nested") - mc) > 8 * se
    assert St.stiefel_log_constant(A, 3) == z
    assert St.zonal_degree(200.0, 6, 3) is None          # mechanism-sized spreads: beyond the series
    with pytest.raises(InputError, match="zonal"):
        St.stiefel_log_constant(400.0 * A, 3, "zonal")


def test_likelihood_takes_the_zonal_series_when_the_public_spread_bound_allows():
    """Σ = I and s·n small: the public bound s(n + range Σ⁻¹) = 0.5 admits the exact series for the run; the
    mechanism's Fourier Σ (range of Σ⁻¹ = m³ − 1) does not."""
    V = np.eye(5)[:, :2][None]
    lik = FrameLikelihood.build(V, np.eye(5), 0.25, 2)
    assert lik.method == "zonal"
    S = np.diag([0.4, 0.3, 0.1, 0.1, 0.1])
    A = lik.parameter(S)
    assert lik.logp(S)[0] == pytest.approx(np.trace(V[0].T @ A @ V[0]) - St.stiefel_log_constant(A, 2, "zonal"))
    assert FrameLikelihood.build(V, np.diag(np.arange(1, 6.0) ** -3), 0.5, 100).method == "nested"
