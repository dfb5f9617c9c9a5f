"""Releases stay private in practice (DESIGN invariant 8): the seed-regeneration attack, entropy, calibration that
spends what it claims, clear errors at numerical floors. The float-support attack is in noise/test_fp_safe.py,
the ledger in accounting/test_ledger.py, missing values in cli/test_private.py, threads in project/test_architecture.py."""

import warnings

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import SeededReleaseWarning
from fdp_ppl.noise.sampling import sampler_for, seed_sequence
from fdp_ppl.releasing.schema import read_release


@pytest.fixture(scope="module")
def summary():
    grid = fp.Grid.uniform(50)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    x = 0.5 * np.sin(2 * np.pi * grid.t) + 0.3 * np.random.default_rng(0).standard_normal((100, grid.size))
    return fp.iclp_qr_mean(x, basis, tau=1.0)


def _regenerate(tree, seed):
    """The attacker: the law, J and the noise scales are public; with the seed the noise is too."""
    view = read_release(tree)
    noise = sampler_for(view.law, view.n_components, "pymc").draw(np.zeros(view.n_components), view.noise_scale,
                                                                  1, seed, study=True)[0]
    return view.released(0) - noise


def test_seed_regeneration_attack_recovers_a_seeded_release_exactly(summary):
    with pytest.warns(SeededReleaseWarning, match="private only while the seed stays secret"):
        tree = fp.release(summary, fp.ICLP(1.0), random_seed=1, study=True)
    assert tree.attrs["noise_seeded"] == 1 and tree.attrs["noise_generator"] == "pymc" and tree.attrs["fp_safe"] == 0
    recovered = _regenerate(tree, 1)
    np.testing.assert_allclose(recovered, summary.coefficients, rtol=0, atol=1e-15)  # the non-private summary


def test_default_release_cannot_be_regenerated(summary):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededReleaseWarning)  # no seed: no warning
        a = fp.release(summary, fp.ICLP(1.0))
        b = fp.release(summary, fp.ICLP(1.0))
    for tree in (a, b):
        assert tree.attrs["noise_seeded"] == 0 and tree.attrs["noise_generator"] == "opendp"
        assert tree.attrs["fp_safe"] == 1
    ya, yb = read_release(a).released(0), read_release(b).released(0)
    assert not np.allclose(ya, yb)
    # guessing small seeds (the old default was 1) gives nothing: the error stays at the size of the noise
    scale = read_release(a).noise_scale
    for guess in range(5):
        err = np.abs(_regenerate(a, guess) - summary.coefficients)
        assert np.mean(err / scale) > 0.1


def test_unseeded_entropy_is_128_bits():
    entropies = {seed_sequence(None).entropy for _ in range(4)}
    assert len(entropies) == 4
    assert max(e.bit_length() for e in entropies) > 100  # SeedSequence() draws 128 bits from the OS


def test_analytic_is_the_default_and_spends_what_it_claims():
    eps, delta = 0.5, 1e-3
    classical, analytic = fp.classical_sigma(eps, delta, 1.0), fp.analytic_sigma(eps, delta, 1.0)
    assert fp.GaussianMechanism(eps, delta).calibration == "analytic"
    assert classical / analytic == pytest.approx(1.7, abs=0.05)
    assert fp.gaussian_delta(eps, 1.0, classical) < 5e-6               # the classical σ over-spends δ by ~500×
    assert fp.gaussian_delta(eps, 1.0, analytic) == pytest.approx(delta, rel=1e-6)


def test_sigma_for_delta_below_its_floor_is_a_clear_error():
    from fdp_ppl.noise.elliptical import mixing_law, sigma_for_delta

    with pytest.raises(fp.InputError, match="below what the exact delta"):
        sigma_for_delta(1.0, 1e-20, 1.0, mixing_law("laplace"))
    assert sigma_for_delta(1.0, 1e-6, 1.0, mixing_law("t", nu=5)) > 0


def test_data_derived_tau_is_refused_without_the_explicit_flag(summary):
    grid = summary.grid
    x = np.random.default_rng(1).standard_normal((30, grid.size))
    with pytest.warns(fp.PrivacyLeakWarning):
        tau = fp.data_tau(x, grid)
    s = fp.iclp_qr_mean(x, summary.basis, tau=tau)
    with pytest.raises(fp.InputError, match="allow_nonprivate"):
        fp.release(s, fp.ICLP(1.0))
    tree = fp.release(s, fp.ICLP(1.0), allow_nonprivate=True)
    assert tree.attrs["private"] == 0 and fp.release(summary, fp.ICLP(1.0)).attrs["private"] == 1
