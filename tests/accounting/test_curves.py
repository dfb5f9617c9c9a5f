"""Privacy profiles and trade-off curves (fdp_ppl.accounting.curves): equal to the closed forms where they exist,
to dp-accounting's composition for a ledger, and a valid bound (never above the exact curve) everywhere."""

import math

import numpy as np
import pytest
from scipy.stats import norm

import fdp_ppl as fp
from fdp_ppl.accounting import curves as C
from fdp_ppl.accounting.calibration import gaussian_delta
from fdp_ppl.accounting.events import PrivacyEvent
from fdp_ppl.errors import InputError


def _gaussian(noise_multiplier, count=1):
    eps = 1.0
    return PrivacyEvent("gaussian", eps, gaussian_delta(eps, 1.0, noise_multiplier) * 1.0001, noise_multiplier, count)


def _laplace_closed_form(alpha, mu):
    """Dong, Roth & Su (2022), Example (Laplace mechanism): f for Lap(0, 1) against Lap(mu, 1)."""
    a = np.asarray(alpha, float)
    with np.errstate(divide="ignore"):
        middle = np.exp(-mu) / (4 * a)
    return np.where(a < np.exp(-mu) / 2, 1 - np.exp(mu) * a, np.where(a <= 0.5, middle, np.exp(-mu) * (1 - a)))


@pytest.fixture(scope="module")
def six_laplace_four_gaussian():
    return [PrivacyEvent("laplace", 0.5, 0.0, 2.0, 6), _gaussian(4.0, 4)]


def test_gaussian_release_curve_is_g_mu():
    alpha = np.linspace(0.0, 1.0, 501)
    got = C.trade_off_curve(_gaussian(2.5, 3), alpha)
    mu = math.sqrt(3) / 2.5
    np.testing.assert_allclose(got.values, norm.cdf(norm.ppf(1 - alpha) - mu), atol=1e-6)
    assert got.dims == ("alpha",) and got.name == "beta" and "G_mu" in got.attrs["method"]


def test_gaussian_through_the_privacy_loss_distribution_agrees_with_g_mu():
    """The conjugate of the pessimistic profile (the path of every mixed ledger), for a Gaussian alone: a lower
    bound of G_mu, within the discretisation of the losses."""
    event = _gaussian(2.0)
    pld = C._pld([event])
    eps = C._epsilon_grid(pld)
    delta = C._hockey_stick(pld, eps)
    alpha = np.linspace(0.0, 1.0, 401)
    lines = np.maximum(1 - delta[None] - np.exp(eps)[None] * alpha[:, None],
                       np.exp(-eps)[None] * (1 - delta[None] - alpha[:, None])).max(axis=1)
    exact = norm.cdf(norm.ppf(1 - alpha) - 0.5)
    assert np.all(lines <= exact + 1e-12) and np.max(exact - lines) < 1e-3


@pytest.mark.parametrize("noise_multiplier", [0.25, 0.5, 1.0, 2.0])
def test_laplace_release_curve_is_the_closed_form_and_never_above_it(noise_multiplier):
    alpha = np.linspace(0.0, 1.0, 1001)
    got = C.trade_off_curve(PrivacyEvent("laplace", 1 / noise_multiplier, 0.0, noise_multiplier), alpha).values
    exact = _laplace_closed_form(alpha, 1 / noise_multiplier)
    assert np.all(got <= exact + 1e-12)  # a valid bound: no attacker does better than the curve says
    assert np.max(exact - got) < 1e-5  # ε-grid of 2001 points and 1e-3 loss discretisation: measured 1.1e-7


def test_profile_is_dp_accountings_composition(six_laplace_four_gaussian):
    from dp_accounting.pld import privacy_loss_distribution as pld

    reference = pld.from_laplace_mechanism(2.0, value_discretization_interval=1e-4).self_compose(6).compose(
        pld.from_gaussian_mechanism(2.0, value_discretization_interval=1e-4))  # 4 draws of σ = 4: one of σ = 2
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 4.5])
    got = C.privacy_profile(six_laplace_four_gaussian, eps)
    np.testing.assert_allclose(got.values, reference.get_delta_for_epsilon(eps), atol=2e-4)
    assert np.all(np.diff(got.values) <= 1e-15) and got.dims == ("epsilon",)


def test_hockey_stick_equals_dp_accounting_on_its_own_pld(six_laplace_four_gaussian):
    """The cumulative-sum δ(ε) reads dp-accounting's pmf internals: equal to its own get_delta_for_epsilon."""
    pld = C._pld(six_laplace_four_gaussian)
    eps = np.linspace(0.0, 6.0, 41)
    np.testing.assert_allclose(C._hockey_stick(pld, eps), pld.get_delta_for_epsilon(eps), atol=1e-12)


def test_a_ledger_in_words(six_laplace_four_gaussian):
    """6 Laplace (ε = 0.5) and 4 Gaussian (σ = 4) releases: at 1 % false positives an attacker finds at most
    13 % of the people it is after (power), while the summed (ε, δ) alone would allow 99.9 %."""
    ledger = fp.PrivacyLedger(fp.PrivacyBudget(10.0, 1e-3))
    for event in six_laplace_four_gaussian:
        ledger.spend(event.basic, "release", event=event)
    power = C.attacker_power(ledger)
    assert 0.125 < power < 0.14
    assert C.largest_advantage(ledger) == pytest.approx(0.469, abs=0.002)
    spent = ledger.spent
    basic = 1 - max(0.0, 1 - spent.delta - math.exp(spent.epsilon) * 0.01,
                    math.exp(-spent.epsilon) * (1 - spent.delta - 0.01))
    assert basic > 0.999
    words = fp.privacy_in_words(ledger)
    assert "at 1% false positives, has at most 13% power" in words and "0.47" in words


def test_largest_advantage_is_the_total_variation_distance():
    assert C.largest_advantage(PrivacyEvent("laplace", 1.0, 0.0, 1.0)) == pytest.approx(1 - math.exp(-0.5),
                                                                                        abs=1e-6)
    assert C.largest_advantage(_gaussian(5.0)) == pytest.approx(2 * norm.cdf(0.1) - 1, abs=1e-12)


def test_a_plan_and_its_release_file_read_the_same_event():
    curves = fp.datasets.load_dataset("growth")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summary = fp.iclp_qr_mean(curves, basis, tau=200.0)
    plan = fp.plan(summary.spec, fp.ICLP(1.0), draws=2)
    tree = fp.release(summary, fp.ICLP(1.0), draws=2)
    assert C._events(tree) == C._events(plan) == [plan.event]
    assert C.attacker_power(tree) == C.attacker_power(plan)


def test_refusals():
    with pytest.raises(InputError, match="alphas"):
        C.trade_off_curve(_gaussian(2.0), [1.5])
    with pytest.raises(InputError, match="no privacy events"):
        C.trade_off_curve([])
    with pytest.raises(InputError, match="epsilons"):
        C.privacy_profile(_gaussian(2.0), [-1.0])
    with pytest.raises(InputError, match="cannot read privacy events"):
        C.privacy_profile(3.0)


def test_uncertified_releases_have_no_curve_and_are_left_out_of_a_ledgers():
    import dataclasses

    exact = PrivacyEvent("laplace", 1.0, 0.0, 1.0)
    mcmc = dataclasses.replace(PrivacyEvent("approx", 2.0, 0.0), certified=False)
    with pytest.raises(InputError, match="uncertified"):
        C.trade_off_curve(mcmc)
    assert C.attacker_power([exact, mcmc]) == C.attacker_power(exact)
