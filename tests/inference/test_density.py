"""Noise-aware posterior of a private KDE (fdp_ppl/inference/density.py) and the KDE schema kind."""

import sys
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.releasing import schema as S
from fdp_ppl.errors import InputError, SchemaError, SeededReleaseWarning
from fdp_ppl.inference.density import DensityPrior, density_bands, density_functionals, infer_density, read_kde_release

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_coverage_kde import make_mechanism, make_spec, population, population_truth, replicate

GRID_MECHANISMS = ("gp", "sobolev", "iclp", "frl", "bernstein")


def _release(mech, eps=1.0, n=200, grid=40, seed=1, d=1):
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec, SobolevKDESpec
    from fdp_ppl.kde.baselines import BernsteinKDESpec, FRLKDESpec

    rng = np.random.default_rng(seed)
    if d == 1:
        spec = make_spec(mech, n, grid)
        x = population(n, rng)
    else:
        g = CartesianGrid.uniform([(0, 1), (0, 1)], grid)
        spec = {"gp": KDESpec, "sobolev": SobolevKDESpec, "iclp": ICLPKDESpec, "frl": FRLKDESpec,
                "bernstein": BernsteinKDESpec}[mech](grid=g, n=n)
        x = np.stack([population(n, rng), population(n, rng)], -1)
    summary = spec.fit(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        rel = fp.release(summary, make_mechanism(mech, eps), random_seed=seed + 100, study=True, generator="pymc")
    return summary, rel


@pytest.fixture(scope="module")
def releases():
    return {m: _release(m) for m in GRID_MECHANISMS}


@pytest.mark.parametrize("mech", GRID_MECHANISMS)
def test_infer_serves_every_kde_mechanism(releases, mech):
    _, rel = releases[mech]
    assert S.is_kde_release(rel) and not S.is_release(rel)
    post = fp.infer(rel, draws=100, chains=2, random_seed=3)
    assert S.is_inference(post) and post.attrs["kde_mechanism"] == mech
    assert set(post.children) >= {"posterior", "posterior_predictive", "observed_data", "constant_data",
                                  "log_likelihood"}
    assert post["posterior"]["kde"].dims == ("chain", "draw", "x")
    assert post["posterior_predictive"]["density"].dims == ("chain", "draw", "x")
    assert post["observed_data"]["density"].dims == ("x",)
    np.testing.assert_allclose(post["observed_data"]["density"].values, rel["posterior"]["density"].values[0, 0])
    summ = az.summary(post, var_names=["kde"])
    assert summ.shape[0] == 40 and np.all(np.isfinite(summ["mean"].values))
    # the release's coefficients are read back exactly: reconstructing them gives the released density
    view = read_kde_release(rel)
    np.testing.assert_allclose(view.reconstruct(view.released), view.observed, atol=1e-12 * np.abs(view.observed).max())
    # pdf: a probability density per draw
    w = post["constant_data"]["weights_x"].values
    np.testing.assert_allclose(post["posterior"]["pdf"].values @ w, 1.0, rtol=1e-10)


@pytest.mark.parametrize("mech", ["frl", "bernstein"])
def test_infer_serves_cli_1d_baseline_files(tmp_path, mech):
    """fdp-ppl kde's 1-D FRL / Bernstein files copy a mean-curve release's kind: still recognised as densities."""
    from fdp_ppl.cli import main

    csv = tmp_path / "obs.csv"
    csv.write_text("x\n" + "\n".join(f"{v}" for v in np.random.default_rng(1).uniform(0, 1, 60)) + "\n")
    out = tmp_path / "kde.nc"
    assert main(["kde", "--data", str(csv), "--var", "x", "--mechanism", mech, "--epsilon", "1", "--domain", "0",
                 "1", "--grid-size", "30", "--seed", str(2**40), "--study", "--out",
                 str(out)]) == 0
    tree = xr.open_datatree(out).load()
    assert S.is_kde_release(tree) and not S.is_release(tree)
    post = fp.infer(tree, draws=50, random_seed=1)
    assert post["posterior"]["kde"].dims == ("chain", "draw", "x")
    view = read_kde_release(tree)
    np.testing.assert_allclose(view.reconstruct(view.released), view.observed, atol=1e-10 * np.abs(view.observed).max())


@pytest.mark.parametrize("mech", GRID_MECHANISMS)
def test_two_dimensional_release(mech):
    _, rel = _release(mech, grid=10, n=150, d=2)
    post = fp.infer(rel, draws=50, random_seed=2)
    assert post["posterior"]["kde"].dims == ("chain", "draw", "x1", "x2")
    bands = density_bands(post, functionals=False)
    assert bands["kde_lower"].dims == ("x1", "x2")
    with pytest.raises(InputError, match="1-D density"):
        density_functionals(post)
    view = read_kde_release(rel)
    np.testing.assert_allclose(view.reconstruct(view.released), view.observed, atol=1e-10 * np.abs(view.observed).max())


def test_normalised_iclp_release():
    """ICLPKDESpec(normalise=True) divides the release by its public mass: the posterior is on that scale."""
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec

    spec = ICLPKDESpec(grid=CartesianGrid.uniform((0, 1), 40), n=200, normalise=True)
    summary = spec.fit(population(200, np.random.default_rng(3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        rel = fp.release(summary, make_mechanism("iclp", 4.0), random_seed=4, study=True, generator="pymc")
    post = fp.infer(rel, draws=400, random_seed=1)
    err = np.abs(post["posterior"]["kde"].mean(("chain", "draw")).values - summary.density)
    assert np.mean(err) < 0.1 * np.max(summary.density)


def test_schema_kind_and_older_files(releases):
    _, rel = releases["gp"]
    assert rel.attrs[S.KIND_ATTR] == S.KDE_RELEASE
    old = rel.copy()
    for k in (S.KIND_ATTR, S.SCHEMA_ATTR):
        del old.attrs[k]
    assert S.is_kde_release(old) and not S.is_release(old)       # a file written before the kind existed
    with pytest.raises(SchemaError, match="kernel density estimate"):
        S.read_release(rel)
    curve = fp.release(fp.summaries.FRLSpec(basis=fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(20)),
                                            tau=1.0, n=5).fit(np.zeros((5, 20))),
                       fp.mechanisms.FRL(1.0), random_seed=1, study=True)
    assert S.is_release(curve) and not S.is_kde_release(curve)


def test_kde_release_refuses_mean_curve_arguments(releases):
    _, rel = releases["gp"]
    with pytest.raises(InputError, match="kernel density estimate"):
        fp.infer(rel, method="nuts")
    with pytest.raises(InputError, match="Gaussian-noise"):
        fp.infer(releases["iclp"][1], target="population")
    with pytest.raises(InputError, match="DensityPrior"):
        fp.infer(rel, prior="iclp")


@pytest.mark.parametrize("mech", ["iclp", "frl", "bernstein"])
def test_envelope_bounds_every_snapped_estimate(mech):
    """|c_j| <= e_j for any data (records snapped to nodes): the prior's scale is a public bound."""
    spec = make_spec(mech, 30, 25)
    _, rel = _release(mech, n=30, grid=25)
    env = read_kde_release(rel).envelope
    rng = np.random.default_rng(5)
    for data in (rng.uniform(-0.2, 1.2, 30), np.full(30, 0.0), np.full(30, 1.0), np.full(30, 0.5)):
        assert np.all(np.abs(spec.fit(data).coefficients) <= env * (1 + 1e-9))


def test_exact_conjugate_posterior_gp(releases):
    """Fixed amplitude, Normal noise: the draws match the conjugate posterior N(y g²/(g²+s²), g²s²/(g²+s²))."""
    _, rel = releases["gp"]
    post = infer_density(rel, DensityPrior(amplitude=0.3), draws=4000, chains=1, random_seed=7, predictive=False)
    view = read_kde_release(rel)
    g2, s2 = (0.3 * view.envelope) ** 2, view.scale**2
    coef = post["posterior"]["coefficients"].values[0]
    sd = np.sqrt(g2 * s2 / (g2 + s2))
    z = (coef.mean(0) - view.released * g2 / (g2 + s2)) / (sd / np.sqrt(4000))
    assert np.max(np.abs(z)) < 4.5
    np.testing.assert_allclose(coef.std(0), sd, rtol=0.08)


def test_bands_and_functionals(releases):
    _, rel = releases["gp"]
    post = fp.infer(rel, draws=200, random_seed=1)
    fn = density_functionals(post, probs=(0.1, 0.5, 0.9))
    assert fn["cdf"].dims == ("chain", "draw", "x") and np.allclose(fn["cdf"].values[..., -1], 1.0)
    q = fn["quantile"].values
    assert np.all(np.diff(q, axis=-1) > 0)
    b = density_bands(post, ci_prob=0.9)
    assert np.all(b["kde_lower"] <= b["kde_upper"]) and np.all(b["cdf_lower"] <= b["cdf_upper"])
    assert float(b["prob_n_modes"].sum()) == pytest.approx(1.0)
    # the study's population is bimodal (modes 0.35 and 0.7): the posterior says so
    assert float(b["prob_multimodal"]) > 0.5
    with pytest.raises(InputError):
        density_bands(post, ci_prob=1.5)


@pytest.mark.parametrize("mech", ["gp", "iclp"])
def test_coverage_fast(mech):
    """90% bands of the default posterior cover the non-private estimate pointwise at about 90% (fast variant of
    benchmarks/bench_coverage_kde.py: 12 data sets at epsilon 1)."""
    spec, m = make_spec(mech, 300, 50), make_mechanism(mech, 1.0)
    rng = np.random.default_rng([7, len(mech)])
    cover = np.mean([replicate(spec, m, rng, draws=300)[0] for _ in range(12)])
    assert 0.82 <= cover <= 0.97


@pytest.mark.parametrize("mech", ["gp", "iclp"])
def test_noise_scale_off_by_sqrt2_is_detected(mech):
    """With the flat prior every coefficient's 90% interval covers the truth at exactly 90%; a likelihood whose
    noise scale is sqrt(2) too large or too small moves it to about 98% or 76%, outside [0.85, 0.95]."""
    spec, m = make_spec(mech, 300, 50), make_mechanism(mech, 1.0)

    def coefficient_coverage(factor):
        pass

        rng = np.random.default_rng([11, len(mech)])
        hits = []
        for _ in range(6):
            summary = spec.fit(population(300, rng))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SeededReleaseWarning)
                rel = fp.release(summary, m, random_seed=int(rng.integers(2**62)), study=True, generator="pymc")
            rel["constant_data"]["noise_scale"] = rel["constant_data"]["noise_scale"] * factor
            coef = infer_density(rel, "flat", draws=1000, chains=1, random_seed=int(rng.integers(2**31)),
                                 predictive=False)["posterior"]["coefficients"].values[0]
            lo, hi = np.quantile(coef, [0.05, 0.95], axis=0)
            hits.append((summary.coefficients >= lo) & (summary.coefficients <= hi))
        return float(np.mean(np.concatenate(hits)))

    assert 0.85 <= coefficient_coverage(1.0) <= 0.95
    assert coefficient_coverage(np.sqrt(2)) > 0.95
    assert coefficient_coverage(1 / np.sqrt(2)) < 0.85


def test_population_target_is_the_conjugate_posterior(releases):
    """target='population': y ~ N(mu, Sigma/n + diag(b^2)), mu ~ N(0, (a e)^2): the draws match the formula."""
    from fdp_ppl.inference.density import sampling_covariance

    _, rel = releases["gp"]
    view = read_kde_release(rel)
    prior = DensityPrior(amplitude=0.3)
    post = fp.infer(rel, prior, target="population", draws=4000, chains=1, random_seed=3)
    assert post["posterior"]["population"].dims == ("chain", "draw", "x")
    centre = infer_density(rel, prior, draws=4000, chains=1, random_seed=3, predictive=False)
    centre = view.reconstruct(centre["posterior"]["coefficients"].values[0].mean(0))
    R = sampling_covariance(view, centre) / view.attrs["n"] + np.diag(view.scale**2)
    P = np.diag((0.3 * view.envelope) ** 2)
    mean, cov = P @ np.linalg.solve(P + R, view.released), P - P @ np.linalg.solve(P + R, P)
    mu = post["posterior"]["coefficients"].values[0]
    assert np.max(np.abs(mu.mean(0) - mean) / np.sqrt(np.diag(cov) / 4000)) < 4.5
    np.testing.assert_allclose(np.sqrt(np.diag(np.cov(mu.T))), np.sqrt(np.diag(cov)), rtol=0.08)


def test_population_coverage_fast():
    """At epsilon 4 the estimate's sampling error dominates: bands of the population target cover E[kde] near
    90%, bands of the estimate itself do not (fast variant: 10 data sets)."""
    spec, m = make_spec("gp", 500, 100), make_mechanism("gp", 4.0)
    truth = population_truth(spec, 100_000)
    rng = np.random.default_rng(21)
    pop = np.mean([replicate(spec, m, rng, draws=300, target="population", truth=truth)[0] for _ in range(10)])
    rng = np.random.default_rng(21)
    est = [replicate(spec, m, rng, draws=300, truth=truth)[0] for _ in range(10)]
    assert 0.82 <= pop <= 0.98 and np.mean(est) < 0.75


@pytest.mark.slow
@pytest.mark.parametrize("mech", ["gp", "sobolev"])
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_population_coverage_study(mech, eps):
    spec, m = make_spec(mech, 500, 100), make_mechanism(mech, eps)
    truth = population_truth(spec)
    rng = np.random.default_rng([2027, int(eps * 100)])
    cover = np.mean([replicate(spec, m, rng, target="population", truth=truth)[0] for _ in range(60)])
    assert 0.85 <= cover <= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("mech", GRID_MECHANISMS)
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_coverage_study(mech, eps):
    """The benchmark's cells: pointwise 90% coverage averaged over 60 data sets in [0.85, 0.95]."""
    spec, m = make_spec(mech, 500, 100), make_mechanism(mech, eps)
    rng = np.random.default_rng([2026, GRID_MECHANISMS.index(mech), int(eps * 100)])
    cover = np.mean([replicate(spec, m, rng)[0] for _ in range(60)])
    assert 0.85 <= cover <= 0.95


def test_release_with_several_draws_conditions_on_one(releases):
    summary, _ = releases["gp"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        rel = fp.release(summary, make_mechanism("gp", 1.0), draws=3, random_seed=9, study=True, generator="pymc")
    with pytest.warns(UserWarning, match="holds 3 draws"):
        post = fp.infer(rel, draw=2, draws=20, random_seed=1)
    np.testing.assert_allclose(post["observed_data"]["density"].values, rel["posterior"]["density"].values[0, 2])
    with pytest.raises(InputError, match="draw must lie"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp.infer(rel, draw=3)
