"""Noise laws (:mod:`fdp_ppl.noise.laws`) checked the way PyMC checks its distributions.

Every law of :data:`fdp_ppl.releasing.registry.LAWS` (with the example parameters of
:data:`EXAMPLES` for laws that take parameters) goes through the same sweep, in
the spirit of ``pymc.testing.check_logp``: over a grid of values × centres ×
scales (several J for joint laws)

* the numpy log-density equals an independent reference density
  (:data:`REFERENCES`: scipy, the J-variate families of
  :mod:`fdp_ppl.noise.elliptical.families`, and the Gaussian scale-mixture integral);
* the PyTensor log-density (``xp=backend("pt")``) and the PyMC variable
  ``law.pymc(..., observed=)`` give the same numbers; ``pointwise=True`` sums
  to the joint;
* the density integrates to one (d = 1, 2), ``privacy_loss`` is the log-density
  difference, ``variance`` matches Monte Carlo draws of the compiled sampler,
  and the draws (compiled sampler and ``pm.draw`` of the PyMC variable) follow
  the law (Kolmogorov–Smirnov against the CDF integrated from ``law.logp``);
* invalid parameters are rejected (scale <= 0 or not finite, ν <= 0, unknown
  kinds, shapes that do not match), and names and attributes round-trip.

A new law registered in :data:`fdp_ppl.releasing.registry.LAWS` is swept without edits
here, except that it must add its reference density to :data:`REFERENCES`
(and, if its constructor takes parameters, examples to :data:`EXAMPLES`).
"""

from __future__ import annotations

import inspect
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

from fdp_ppl.releasing import registry
from fdp_ppl._backend import backend
from fdp_ppl.noise.elliptical.families import EllipticalFamily, KNorm, log_sphere_area
from fdp_ppl.errors import InputError, SchemaError
from fdp_ppl.noise.laws import Elliptical, Laplace, NoiseLaw, Normal, law_from_attrs, law_from_name
from fdp_ppl.noise.sampling import CompiledSampler, sampler_for

PT = backend("pt")

#: degrees of freedom of the t laws in the sweep (heavy to nearly Gaussian)
NUS = (0.5, 1.0, 3.0, 7.5, 30.0)

#: constructor parameters of the registered law classes that take any
EXAMPLES: dict[str, list[dict]] = {
    "elliptical": [{"kind": "t", "nu": nu} for nu in NUS] + [{"kind": k} for k in ("laplace", "knorm", "gaussian")],
}


def _laws() -> list[NoiseLaw]:
    out = []
    for name, cls in registry.LAWS.items():
        if name in EXAMPLES:
            out += [cls(**kw) for kw in EXAMPLES[name]]
        else:
            out.append(cls())
    return out


LAWS = _laws()


def _cases():
    """(law, J): product laws in J = 1, 3; joint laws in J = 1, 2, 5."""
    return [pytest.param(law, J, id=f"{law.name}-J{J}") for law in LAWS for J in ((1, 3) if law.product else (1, 2, 5))]


def _ids(laws):
    return [law.name for law in laws]


# ---------------------------------------------------------------------------------------------------- references
# A reference is ``ref(law)(y, mu, scale) -> (N,)`` for values y (N, J) at one centre mu (J,) and scale (J,).
def _gsm_logpdf(mixing_logpdf):
    """log ∫ N_J(y; μ, w·diag(s²)) p_W(w) dw by the trapezoid rule in log w (the Gaussian scale-mixture form)."""

    def logpdf(y, mu, s):
        J = y.shape[-1]
        q = np.sum(((y - mu) / s) ** 2, axis=-1)[:, None]
        logw = np.linspace(-80.0, 80.0, 40001)
        w = np.exp(logw)
        with np.errstate(divide="ignore"):
            f = -0.5 * J * np.log(2 * np.pi * w) - 0.5 * q / w + mixing_logpdf(w, J) + logw  # dw = w dlog w
        return special.logsumexp(f, axis=-1) + np.log(logw[1] - logw[0]) - np.sum(np.log(s))

    return logpdf


def _elliptical_laplace(law):
    def ref(y, mu, s):
        if y.shape[-1] == 1:  # the univariate member is a Laplace law with variance s² (b = s/√2)
            return stats.gennorm.logpdf(y[:, 0], 1.0, mu[0], s[0] / np.sqrt(2.0))
        return _gsm_logpdf(lambda w, J: stats.expon.logpdf(w))(y, mu, s)

    return ref


#: independent reference log-densities by law name (the part before "(")
REFERENCES = {
    # scipy's laplace.logpdf underflows to -inf beyond |z| ≈ 745; gennorm(β = 1) is the same law in log form
    "laplace": lambda law: lambda y, mu, s: np.sum(stats.gennorm.logpdf(y, 1.0, mu, s), axis=-1),
    "normal": lambda law: lambda y, mu, s: np.sum(stats.norm.logpdf(y, mu, s), axis=-1),
    "elliptical-t": lambda law: lambda y, mu, s: np.atleast_1d(
        stats.multivariate_t(loc=mu, shape=np.diag(s**2), df=law.nu).logpdf(y)),
    "elliptical-gaussian": lambda law: lambda y, mu, s: np.atleast_1d(
        stats.multivariate_normal(mean=mu, cov=np.diag(s**2)).logpdf(y)),
    "elliptical-laplace": _elliptical_laplace,
    # the ℓ² K-norm mechanism exp(−‖z‖₂) (Hardt & Talwar) in whitened coordinates
    "elliptical-knorm": lambda law: lambda y, mu, s: KNorm(y.shape[-1], "l2").logpdf((y - mu) / s, s=1.0)
    - np.sum(np.log(s)),
}

#: mixing laws of W (ξ = √W · scale ⊙ z) for the scale-mixture reference of the elliptical laws
MIXING = {
    "t": lambda law: lambda w, J: stats.invgamma.logpdf(w, law.nu / 2, scale=law.nu / 2),
    "laplace": lambda law: lambda w, J: stats.expon.logpdf(w),
    "knorm": lambda law: lambda w, J: stats.chi2.logpdf(w, J + 1),
}


def _reference(law):
    key = law.name.split("(")[0]
    if key not in REFERENCES:
        pytest.fail(f"law {law.name!r} has no independent reference density: "
                    "add one to REFERENCES in tests/noise/test_laws.py")
    return REFERENCES[key](law)


# ---------------------------------------------------------------------------------------------------- the grid
VALUES = (-40.0, -2.5, -0.3, 0.0, 1.0, 7.0)


def _grid(J: int):
    """Values × centres × scales: a list of groups ``(y (n, J), mu (J,), scale (J,))``
    (the values include the centre itself)."""
    rng = np.random.default_rng(1000 + J)
    if J <= 3:
        ys = np.array(list(itertools.product(VALUES, repeat=J)))
    else:
        ys = np.concatenate([np.outer(VALUES, np.ones(J)), np.outer(VALUES, np.eye(J)[0]),
                             rng.standard_normal((40, J)) * np.exp(rng.uniform(-3, 4, (40, 1)))])
    mus = [np.zeros(J), np.linspace(-1.5, 2.0, J), np.full(J, 40.0)]
    scales = [np.ones(J), np.geomspace(0.01, 25.0, J), np.full(J, 0.3)]
    return [(np.concatenate([ys, m[None]]), m, s) for m in mus for s in scales]


def _rows(groups):
    """The groups flattened to rows y, mu, scale, each (N, J)."""
    y = np.concatenate([g[0] for g in groups])
    mu = np.concatenate([np.tile(g[1], (len(g[0]), 1)) for g in groups])
    s = np.concatenate([np.tile(g[2], (len(g[0]), 1)) for g in groups])
    return y, mu, s


def _compiled_logp(law, J):
    import pytensor
    import pytensor.tensor as pt

    y, mu, s = (pt.matrix(n, shape=(None, J)) for n in ("y", "mu", "scale"))
    return pytensor.function([y, mu, s], [law.logp(y, mu, s, xp=PT), law.logp(y, mu, s, xp=PT, pointwise=True)])


def _pymc_logp(law, y, mu, s):
    """Pointwise log-probability of ``observed=y`` under ``law.pymc`` in a model (rows (N, J) or (N,))."""
    import pymc as pm

    with pm.Model() as model:
        law.pymc("released", mu, s, observed=y)
    return model.compile_logp(sum=False)({})[0]


def _close(a, b, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------------- the sweep
@pytest.mark.parametrize("law,J", _cases())
def test_logp_sweep_numpy_reference_pytensor_pymc(law, J):
    groups = _grid(J)
    y, mu, s = _rows(groups)
    lp = law.logp(y, mu, s)
    lpp = law.logp(y, mu, s, pointwise=True)
    assert lp.shape == (y.shape[0],)
    assert lpp.shape == ((y.shape[0], J) if law.product else (y.shape[0], 1))
    assert not np.any(np.isnan(lp)) and np.all(lp < np.inf)
    # pointwise terms sum to the joint log-density
    _close(lpp.sum(-1), lp, 1e-12)
    # independent reference, group by group (the multivariate Laplace has a pole at its centre for J >= 2)
    ref = _reference(law)
    start = 0
    for yg, mg, sg in groups:
        got = lp[start:start + len(yg)]
        start += len(yg)
        # one (mu, scale) broadcast over many values, as a release is scored
        _close(law.logp(yg, mg, sg), got, 1e-13)
        ok = ~np.all(yg == mg, axis=-1) if law.name == "elliptical-laplace" and J >= 2 else slice(None)
        _close(got[ok], ref(yg[ok], mg, sg), 1e-8, 1e-8)
    # the same formula in PyTensor
    f = _compiled_logp(law, J)
    pt_joint, pt_point = f(y, mu, s)
    _close(pt_joint, lp)
    _close(pt_point, lpp)
    # the PyMC variable with observed= is the same likelihood
    _close(_pymc_logp(law, y, mu, s), lpp if law.product else lp)


@pytest.mark.parametrize("law", [law for law in LAWS if not law.product], ids=_ids([law for law in LAWS
                                                                                     if not law.product]))
@pytest.mark.parametrize("J", [1, 2, 5])
def test_elliptical_logp_equals_family_and_scale_mixture(law, J):
    """The J-variate density of :mod:`fdp_ppl.noise.elliptical.families` (dispersion diag(scale²)) and the
    Gaussian scale-mixture integral ∫ N(y; μ, w·diag(scale²)) p_W(w) dw of the law's documented mixing law."""
    fam = law.family(J)
    for y, mu, s in _grid(J)[::2]:
        y = y[~np.all(y == mu, axis=-1)][::3]
        lp = law.logp(y, mu, s)
        _close(lp, fam.logpdf(y, loc=mu, sigma=1.0, dispersion=np.diag(s**2)), 1e-8, 1e-8)
        if law.kind in MIXING:
            _close(lp, _gsm_logpdf(MIXING[law.kind](law))(y, mu, s), 1e-6, 1e-6)
    assert law.mixing_law(J).mean == pytest.approx(fam.mean_mixing)


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
@pytest.mark.parametrize("d", [1, 2])
def test_density_integrates_to_one(law, d):
    """∫ p = 1 in d = 1, 2: the radial integral |S^{d−1}| ∫ r^{d−1} p(r e₁) dr for joint
    (elliptical) laws; the product of d one-dimensional integrals for product laws."""
    scale = np.array([0.7, 2.0])[:d]
    if law.product:  # p(y) = Π_j p_j(y_j) (pointwise terms, checked by the sweep)
        total = 1.0
        for sj in scale:
            one = lambda x: math.exp(float(law.logp(np.array([x]), np.zeros(1), np.array([sj]))))  # noqa: E731
            total *= sum(integrate.quad(one, a, b, limit=200)[0] for a, b in ((-np.inf, 0.0), (0.0, np.inf)))
    else:
        e1 = np.eye(d)[0]  # whitened coordinates z = y/scale: dy = Π_j scale_j dz
        c = math.exp(log_sphere_area(d)) * float(np.prod(scale))
        radial = lambda r: c * r ** (d - 1) * math.exp(  # noqa: E731
            float(law.logp(r * e1 * scale, np.zeros(d), scale)))
        total = sum(integrate.quad(radial, a, b, limit=400)[0] for a, b in ((0.0, 0.7), (0.7, 7.0), (7.0, np.inf)))
    assert total == pytest.approx(1.0, abs=2e-6)


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
def test_privacy_loss_is_the_logp_difference(law):
    rng = np.random.default_rng(7)
    J = 4
    s = np.geomspace(0.05, 3.0, J)
    c = rng.standard_normal(J)
    cp = c + rng.standard_normal(J) * s
    y = c + rng.standard_normal((200, J)) * s * np.exp(rng.uniform(-2, 3, (200, 1)))
    loss = law.privacy_loss(y, c, cp, s)
    assert loss.shape == (200,)
    _close(loss, law.logp(y, c, s) - law.logp(y, cp, s), 1e-9)
    np.testing.assert_allclose(law.privacy_loss(y, c, c, s), 0.0, atol=1e-12)
    _close(law.privacy_loss(y, cp, c, s), -loss, 1e-12)


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
def test_variance_matches_monte_carlo_of_the_compiled_sampler(law):
    J = 3
    scale = np.array([0.5, 1.0, 4.0])
    centre = np.array([1.0, -2.0, 0.0])
    var = law.variance(scale)
    assert var.shape == (J,)
    if getattr(law, "nu", None) is not None and law.nu <= 2:
        assert np.all(np.isinf(var))  # no variance
        return
    np.testing.assert_allclose(var / scale**2, var[0] / scale[0] ** 2)  # proportional to scale²
    if getattr(law, "nu", None) is not None and law.nu <= 4:
        return  # finite variance but an infinite fourth moment: Monte Carlo is not a test
    draws = CompiledSampler(law, J).draw(centre, scale, 40_000, random_seed=11, study=True)
    assert draws.shape == (40_000, J)
    np.testing.assert_allclose(draws.mean(0) / scale, centre / scale, atol=0.05)
    np.testing.assert_allclose(draws.var(0) / var, 1.0, atol=0.06)


def _cdf_from_logp(logpdf, x):
    """CDF on the increasing grid ``x`` by the trapezoid rule of ``exp(logpdf)`` (mass left of x[0] ignored)."""
    p = np.exp(logpdf(x))
    return np.concatenate([[0.0], np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(x))])


def _pymc_draws(law, centre, scale, n, seed):
    import pymc as pm

    with pm.Model():
        v = law.pymc("released", centre, scale)
    return pm.draw(v, draws=n, random_seed=seed)


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
def test_draws_follow_the_law(law):
    """Kolmogorov–Smirnov: standardised draws (product laws) or the whitened radius (joint laws)
    of the compiled sampler and of ``pm.draw(law.pymc(...))`` against the CDF integrated from
    ``law.logp`` — and, for Laplace / Normal, against scipy."""
    J = 3
    scale = np.array([0.2, 1.0, 3.0])
    centre = np.array([0.5, -1.0, 2.0])
    n = 3000
    samples = {"compiled": sampler_for(law, J).draw(centre, scale, n, random_seed=21, study=True),
               "pm.draw": _pymc_draws(law, centre, scale, n, seed=22)}
    if law.product:
        x = np.concatenate([-np.geomspace(1e4, 1e-8, 6000), [0.0], np.geomspace(1e-8, 1e4, 6000)])
        cdf = _cdf_from_logp(lambda v: law.logp(v[:, None], np.zeros(1), np.ones(1)), x)
        scipy_ref = {"laplace": stats.laplace.cdf, "normal": stats.norm.cdf}.get(law.name)
        for source, d in samples.items():
            z = ((d - centre) / scale).ravel()
            assert stats.kstest(z, lambda v: np.interp(v, x, cdf)).pvalue > 1e-3, source
            if scipy_ref is not None:
                assert stats.kstest(z, scipy_ref).pvalue > 1e-3, source
                # a √2-too-small scale is detected
                assert stats.kstest(z * np.sqrt(2.0), scipy_ref).pvalue < 1e-6, source
    else:
        r_grid = np.concatenate([[0.0], np.geomspace(1e-8, 1e8, 12000)])
        e1 = np.eye(J)[0]
        with np.errstate(divide="ignore"):
            cdf = _cdf_from_logp(lambda r: log_sphere_area(J) + (J - 1) * np.log(r)
                                 + law.logp(r[:, None] * e1, np.zeros(J), np.ones(J)), r_grid)
        fam = law.family(J)
        for source, d in samples.items():
            radius = np.linalg.norm((d - centre) / scale, axis=1)
            assert stats.kstest(radius, lambda r: np.interp(r, r_grid, cdf)).pvalue > 1e-3, source
            assert stats.kstest(radius * 1.5, lambda r: np.interp(r, r_grid, cdf)).pvalue < 1e-6, source
            if type(fam).radius_cdf is not EllipticalFamily.radius_cdf:  # a closed form (F, chi, gamma)
                assert stats.kstest(radius, fam.radius_cdf).pvalue > 1e-3, source


@pytest.mark.parametrize("law", [law for law in LAWS if law.product], ids=_ids([law for law in LAWS if law.product]))
def test_convolution_with_gaussian_sampling_error(law):
    """``convolved_logp`` is the log-density of N(0, g²) + ξ (numerical convolution)."""
    b, g = 0.8, 0.35
    x = np.array([-6.0, -1.0, 0.0, 0.4, 3.0, 12.0])
    pdf = lambda u: math.exp(float(law.logp(np.array([u]), np.zeros(1), np.array([b]))))  # noqa: E731
    ref = []
    for xi in x:  # the integrand lives within 12 g of xi; the law may have a kink at 0
        lo, hi = xi - 12 * g, xi + 12 * g
        cuts = [lo, *([0.0] if lo < 0.0 < hi else []), hi]
        ref.append(math.log(sum(integrate.quad(lambda u: stats.norm.pdf(xi - u, 0, g) * pdf(u), a, c,
                                               epsabs=0.0, epsrel=1e-12, limit=200)[0]
                                for a, c in zip(cuts[:-1], cuts[1:]))))
    got = law.convolved_logp(x[:, None], np.array([g]), np.array([b]))[:, 0]
    np.testing.assert_allclose(got, ref, rtol=1e-7)
    got_pt = law.convolved_logp(x[:, None], np.array([g]), np.array([b]), xp=PT).eval()[:, 0]
    np.testing.assert_allclose(got_pt, got, rtol=1e-10)


def test_joint_laws_have_no_closed_form_convolution():
    for law in LAWS:
        if not law.product:
            with pytest.raises(NotImplementedError, match="target='summary'"):
                law.convolved_logp(np.zeros(2), np.ones(2), np.ones(2))


# ---------------------------------------------------------------------------------------------------- invalid input
BAD_SCALES = [0.0, -1.0, np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
@pytest.mark.parametrize("bad", BAD_SCALES, ids=str)
def test_invalid_scale_is_rejected(law, bad):
    J = 3
    s = np.array([1.0, bad, 0.5])
    y, c = np.zeros(J), np.ones(J)
    with pytest.raises(InputError, match="finite and > 0"):
        law.logp(y, c, s)
    with pytest.raises(InputError, match="finite and > 0"):
        law.logp(y, c, s, pointwise=True)
    with pytest.raises(InputError, match="finite and > 0"):
        law.privacy_loss(y, c, -c, s)
    with pytest.raises(InputError, match="finite and > 0"):
        law.variance(s)
    with pytest.raises(InputError):
        sampler_for(law, J).draw(c, s, 2, random_seed=0, study=True)


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
def test_invalid_scale_in_pytensor_and_pymc(law):
    """PyTensor: a ``check_parameters``-style guard (-inf in a PyMC model, an error when evaluated directly)."""
    from pymc.logprob.utils import ParameterValueError

    J = 3
    s = np.array([1.0, -1.0, 0.5])
    y, c = np.zeros(J), np.ones(J)
    with pytest.raises(ParameterValueError):
        law.logp(y, c, s, xp=PT).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for bad in (-1.0, 0.0, np.nan):
            s = np.array([1.0, bad, 0.5])
            assert _pymc_logp(law, y[None], c[None], s[None]).sum() == -np.inf, bad
    # a valid scale is not affected by the guard
    assert np.isfinite(_pymc_logp(law, y[None], c[None], np.ones((1, J))).sum())


@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
def test_mismatched_shapes_are_rejected(law):
    with pytest.raises(InputError, match="J = 2"):
        law.logp(np.zeros(3), np.zeros(3), np.ones(2))
    with pytest.raises(InputError, match="J = 3"):
        law.logp(np.zeros((5, 3)), np.zeros(2), np.ones(3))
    with pytest.raises(InputError, match="J = 3"):
        law.privacy_loss(np.zeros(3), np.zeros(3), np.zeros(4), np.ones(3))
    with pytest.raises(InputError, match="broadcast"):
        law.logp(np.zeros((5, 3)), np.zeros((4, 3)), np.ones(3))
    with pytest.raises(InputError, match="one entry per coefficient"):
        law.logp(np.zeros(3), np.zeros(3), 1.0)
    with pytest.raises(InputError, match="one entry per coefficient"):
        law.variance(2.0)
    with pytest.raises(InputError):
        sampler_for(law, 3).draw(np.zeros(2), np.ones(3), 1, random_seed=0, study=True)


@pytest.mark.parametrize("nu", [0.0, -1.0, np.nan, np.inf, None])
def test_t_law_needs_positive_finite_nu(nu):
    with pytest.raises(InputError, match="nu"):
        Elliptical("t", nu=nu)


@pytest.mark.parametrize("kind", ["cauchy", "T", "", "normal"])
def test_unknown_elliptical_kind(kind):
    with pytest.raises(InputError, match="unknown elliptical law"):
        Elliptical(kind)


@pytest.mark.parametrize("name", ["student", "elliptical-cauchy", "elliptical-", "laplace-process", ""])
def test_unknown_law_names_are_schema_errors(name):
    with pytest.raises(SchemaError, match="unknown noise law"):
        law_from_name(name)


@pytest.mark.parametrize("name", ["elliptical-t", "elliptical-t(nu=0)", "elliptical-t(nu=-2)"])
def test_t_law_names_without_a_valid_nu_are_refused(name):
    with pytest.raises(ValueError, match="nu"):
        law_from_name(name)


def test_law_from_attrs_needs_the_noise_law():
    with pytest.raises(SchemaError, match="noise_law"):
        law_from_attrs({"mechanism": "iclp"})


# ---------------------------------------------------------------------------------------------------- metadata
@pytest.mark.parametrize("law", LAWS, ids=_ids(LAWS))
def test_name_and_attrs_round_trip(law):
    assert law_from_name(law.name) == law
    assert law_from_name(law.name.upper()) == law
    assert law_from_attrs(law.attrs()) == law
    assert hash(law_from_attrs(law.attrs())) == hash(law)
    assert type(law)(**law.params()) == law if law.params() else type(law)() == law
    assert law.name in repr(law) or type(law).__name__ in repr(law)
    assert registry.label(law.name, "law")
    assert isinstance(law.describe_scale(), str) and law.describe_scale()


def test_laws_differ_by_parameters():
    assert Elliptical("t", nu=3) != Elliptical("t", nu=4)
    assert Elliptical("t", nu=3) != Elliptical("laplace")
    assert Laplace() != Normal() and Laplace() == Laplace()
    assert len(set(LAWS)) == len(LAWS)
    assert sampler_for(Elliptical("t", nu=3), 2) is sampler_for(law_from_name("elliptical-t(nu=3)"), 2)


def test_every_registered_law_is_swept():
    """Each class of registry.LAWS is a NoiseLaw and has cases here (a class whose
    constructor needs arguments must add them to EXAMPLES)."""
    swept = {type(law) for law in LAWS}
    for name, cls in registry.LAWS.items():
        assert issubclass(cls, NoiseLaw), name
        assert cls in swept, name
        required = [p for p in inspect.signature(cls).parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        assert not required or name in EXAMPLES, f"add example parameters of {name!r} to EXAMPLES"


def test_laplace_convolved_logp_in_blocks_equals_row_by_row():
    """The Normal–Laplace density of a large array (evaluated in cache-sized blocks) equals its rows one at a time."""
    from fdp_ppl.noise.laws.base import BLOCK

    rng = np.random.default_rng(0)
    rows, J = 3 * BLOCK // 500 + 7, 500
    x, g, b = rng.normal(0, 2, (rows, J)), rng.uniform(1e-3, 2, (rows, J)), rng.uniform(0.1, 1, J)
    whole = Laplace().convolved_logp(x, g, b)
    assert whole.shape == (rows, J)
    np.testing.assert_array_equal(whole, np.stack([Laplace().convolved_logp(x[i], g[i], b) for i in range(rows)]))
