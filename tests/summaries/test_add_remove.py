"""Add/remove with a public lower bound n₀ (DESIGN, "What a release protects"): every mean spec averages the
clipped records by max(n, n₀) with n private, and no dataset with one record (or person) added or removed, for
n on both sides of n₀, moves a summary by more than its claimed Δ (that of 2τ/(n₀ + 1)); the linear specs reach
it. Specs without a derivation, and n given with add/remove, are refused in one line."""

import dataclasses

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import InputError
from fdp_ppl.testing import check_spec_sensitivity

AR = {"neighbouring": "add-remove"}


@pytest.fixture(scope="module")
def basis():
    return fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(24))


@pytest.mark.parametrize("make, norm, tight, n0", [
    (lambda b, n0: fp.ICLPQRSpec(basis=b, tau=1.5, n_lower=n0, **AR), "1,C", True, 2),
    (lambda b, n0: fp.ICLPQRSpec(basis=b, tau=1.5, n_lower=n0, **AR), "1,C", True, 7),
    (lambda b, n0: fp.RKHSSpec(basis=b, tau=1.5, n_lower=n0, **AR), "cameron-martin", True, 7),
    (lambda b, n0: fp.FRLSpec(basis=b, tau=1.5, n_lower=n0, M=3, **AR), "l1", True, 7),
    (lambda b, n0: fp.SampleMeanSpec(basis=b, tau=1.5, n_lower=n0, **AR), "1,C", True, 3),
    (lambda b, n0: fp.ICLPARSpec(basis=b, tau=1.5, n_lower=n0, eta=1.5, psi=0.05, **AR), "1,C", False, 7),
    pytest.param(lambda b, n0: fp.ICLPQRSpec(basis=b, tau=1.5, n_lower=n0, privacy_unit=fp.PrivacyUnit(
        "id", combine="mean"), **AR), "1,C", True, 4, marks=pytest.mark.slow),
], ids=["iclp-qr-2", "iclp-qr-7", "rkhs", "frl", "sample-mean", "iclp-ar", "iclp-qr-per-person"])
def test_add_remove_neighbours_never_exceed_the_claimed_sensitivity(basis, make, norm, tight, n0):
    spec = make(basis, n0)
    report = check_spec_sensitivity(spec, norm=norm, n_pairs=3, n_search=8, random_seed=n0,
                                    min_ratio=1 - 1e-6 if tight else None)
    assert report.max_ratio <= 1 + 1e-9 and "add or remove one" in report.neighbouring
    # the claimed Δ is the replace-one bound with 2τ/(n₀ + 1) for 2τ/n
    step = 2 * spec.tau / (n0 + 1)
    assert spec.mean_step() == pytest.approx(step)
    assert spec.sensitivity(norm).value == pytest.approx(
        dataclasses.replace(spec, neighbouring="replace-one", n=n0 + 1, n_lower=None).sensitivity(norm).value
        if spec.privacy_unit is None and not isinstance(spec, fp.ICLPARSpec) else spec.sensitivity(norm).value)


def test_the_mean_divides_by_max_n_n_lower_exactly(basis):
    """f(D) = S/max(n, n₀): below n₀ the sum is divided by n₀ (shrunk, never refused, 0 and 1 records included),
    from n₀ on by n; adding a
    record at n = n₀ − 1 (where n reaches n₀) moves f by x/n₀, at n >= n₀ by (x − S/n)/(n + 1)."""
    n0 = 6
    spec = fp.SampleMeanSpec(basis=basis, tau=10.0, n_lower=n0, **AR)
    rng = np.random.default_rng(3)
    K = basis.grid.size
    records = rng.standard_normal((n0 + 3, K))
    coef = basis.coefficients

    def f(m):
        return spec.fit(records[:m]).coefficients

    for m in (0, 1, n0 - 1, n0, n0 + 2):  # 0 and 1 records too: averaged, never refused
        want = coef(records[:m].sum(axis=0) / max(m, n0))
        np.testing.assert_allclose(f(m), want, rtol=1e-10, atol=1e-12)
        assert spec.fit(records[:m]).report.n_records == m
    offset = rng.standard_normal(K)  # a public centre: its pads are zero deviations
    np.testing.assert_allclose(spec.fit(records[:2], offset=offset).coefficients,
                               coef((records[:2] - offset).sum(axis=0) / n0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f(n0) - f(n0 - 1), coef(records[n0 - 1]) / n0, rtol=1e-9, atol=1e-12)
    S = records[:n0].sum(axis=0)
    np.testing.assert_allclose(f(n0 + 1) - f(n0), coef((records[n0] - S / n0) / (n0 + 1)), rtol=1e-9, atol=1e-12)
    assert spec.divisor(2) == n0 and spec.divisor(n0 + 5) == n0 + 5


def test_n_private_defaults_from_n_lower_and_refusals_are_one_line(basis):
    spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n_lower=40, **AR)
    assert (spec.n, spec.n_lower, spec.psi) == (40, 40, pytest.approx(1 / 40))
    assert fp.FRLSpec(basis=basis, tau=1.0, n_lower=64, **AR).M == fp.FRLSpec(basis=basis, tau=1.0, n=64).M
    assert spec.attrs()["n_private"] == 1 and spec.attrs()["n_lower"] == 40
    assert dataclasses.replace(spec, tau=2.0).n_lower == 40  # n = n_lower is consistent
    assert fp.ICLPQRSpec(basis=basis, tau=1.0, n_lower=40, neighbouring="add/remove").neighbouring == "add-remove"
    cases = [
        (lambda: fp.ICLPQRSpec(basis=basis, tau=1.0, n=50, n_lower=40, **AR), "n is private under add/remove"),
        (lambda: fp.ICLPQRSpec(basis=basis, tau=1.0, **AR), "n_lower must be an integer >= 2"),
        (lambda: fp.ICLPQRSpec(basis=basis, tau=1.0, n=50, n_lower=40), "n_lower applies to"),
        (lambda: fp.ICLPQRSpec(basis=basis, tau=1.0, n=50, neighbouring="swap"), "unknown neighbouring relation"),
        (lambda: fp.BernsteinSpec(lattice_grid=basis.grid, tau=1.0, n_lower=40, **AR), "no add/remove sensitivity"),
        (lambda: fp.ICLPQRSpec(basis=basis, tau=1.0, n_lower=40, privacy_unit=fp.PrivacyUnit(
            "id", max_contributions=2), **AR), "max_contributions > 1"),
        (lambda: fp.ICLPQRSpec(basis=basis, tau=1.0), "n must be an integer >= 2"),
    ]
    for make, words in cases:
        with pytest.raises(InputError, match=words) as err:
            make()
        assert "\n" not in str(err.value)


def test_mean_helpers_never_count_n_into_an_add_remove_spec():
    curves = fp.datasets.load_dataset("growth")  # 93 children
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    for helper in (fp.iclp_qr_mean, fp.rkhs_mean, fp.iclp_ar_mean, fp.frl_mean, fp.sample_mean):
        s = helper(curves, basis, tau=200.0, n_lower=120, **AR)
        assert s.spec.n == 120 and "93" not in repr(s) and s.report.n_records == 93
        assert all("93" not in str(v) for v in s.spec.attrs().values())
