"""Eigenbases at the cost of what is kept (DESIGN invariant 12): only the retained eigenpairs are computed.

What is checked
---------------
* Lanczos with FFT (Toeplitz) products on uniform grids and Lanczos on the dense kernel matrix on
  non-uniform grids give the dense decomposition's retained eigenpairs: the same count, eigenvalues to
  ``1e-12 λ_1`` and eigenfunctions up to sign to the accuracy the eigengap allows (``eps λ_1 / gap``).
* The privacy calibration is unchanged: the noise scale (and sensitivity) of an ICLP release built on either
  basis agree to rounding.
* ``method="auto"`` picks Lanczos only where few pairs are retained, and the memory check describes the path.
"""

from __future__ import annotations

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import InputError
from fdp_ppl.spaces.eigenbasis import Eigenbasis, retained_eigenpairs


def _nonuniform(m):
    s = np.linspace(0.0, 1.0, m)
    return fp.Grid.from_points(s + 0.3 * s * (1 - s))      # smooth, strictly increasing, not uniform


CASES = [
    ("fft-gauss", fp.Grid.uniform(600), fp.Gaussian(rho=0.1, convention="hall"), "lanczos-fft"),
    ("fft-mirshani", fp.Grid.uniform(500), fp.Gaussian(rho=0.01), "lanczos-fft"),
    ("dense-lanczos", _nonuniform(500), fp.Gaussian(rho=0.05, convention="hall"), "lanczos-dense"),
]


@pytest.mark.parametrize("name, grid, kernel, how", CASES, ids=[c[0] for c in CASES])
def test_lanczos_matches_dense(name, grid, kernel, how):
    fast = Eigenbasis(kernel, grid)
    dense = Eigenbasis(kernel, grid, method="dense")
    assert fast.method == how and dense.method == "dense"
    assert fast.size == dense.size and fast.n_dropped == dense.n_dropped and fast.size < grid.size // 8
    lam = dense.eigenvalues
    np.testing.assert_allclose(fast.eigenvalues, lam, rtol=0, atol=1e-12 * lam[0])
    gap = np.minimum(np.abs(np.diff(np.r_[np.inf, lam])), np.abs(np.diff(np.r_[lam, -np.inf])))
    phi_f, phi_d = fast.eigenfunctions, dense.eigenfunctions
    sign = np.sign(np.sum(grid.weights[:, None] * phi_f * phi_d, axis=0))
    assert np.all(sign != 0)
    err = np.sqrt(np.sum(grid.weights[:, None] * (phi_f * sign - phi_d) ** 2, axis=0))   # L2(w) distance
    np.testing.assert_array_less(err, 1e-12 + 1e-13 * lam[0] / gap)
    # the well-separated leading eigenfunctions agree outright, sign included (same sign convention)
    lead = gap > 1e-3 * lam[0]
    np.testing.assert_allclose(phi_f[:, lead], phi_d[:, lead], rtol=0, atol=1e-8)
    # orthonormal in the grid's inner product
    gram = (phi_f * grid.weights[:, None]).T @ phi_f
    np.testing.assert_allclose(gram, np.eye(fast.size), atol=1e-10)


@pytest.mark.parametrize("m, J, how", [(500, 30, "lanczos-fft"), (300, 100, "dense")])
def test_leading_components_only(m, J, how):
    """``n_components``: only the leading pairs are computed (Lanczos, or LAPACK's index subset), and they are
    the dense decomposition's leading pairs."""
    grid, kernel = fp.Grid.uniform(m), fp.Matern(rho=0.1, nu=1.5)
    part, full = Eigenbasis(kernel, grid, n_components=J), Eigenbasis(kernel, grid, method="dense")
    assert part.method == how and part.size == J and part.n_dropped == m - J
    np.testing.assert_allclose(part.eigenvalues, full.eigenvalues[:J], rtol=0, atol=1e-12 * full.eigenvalues[0])
    np.testing.assert_allclose(part.eigenfunctions, full.eigenfunctions[:, :J], rtol=0, atol=1e-8)
    assert fp.eigenbasis(kernel, grid, n_components=J) is fp.eigenbasis(kernel, grid, n_components=J)   # cached
    assert fp.eigenbasis(kernel, grid, n_components=J).size == J != fp.eigenbasis(kernel, grid).size


def test_release_calibration_unchanged():
    grid, kernel = fp.Grid.uniform(600), fp.Gaussian(rho=0.1, convention="hall")
    fast, dense = Eigenbasis(kernel, grid), Eigenbasis(kernel, grid, method="dense")
    rng = np.random.default_rng(0)
    X = 0.5 * np.sin(2 * np.pi * grid.t) + 0.2 * rng.standard_normal((50, grid.size))
    cal = [fp.ICLP(1.0).calibrate(fp.iclp_qr_mean(X, b, tau=1.0)) for b in (fast, dense)]
    # within rounding: the sensitivity sums terms in 1/sqrt(lambda_j) down to lambda_j ~ 1e-12 lambda_1, whose
    # relative rounding is ~1e-4; the dense path's own two LAPACK drivers (evr, evd) differ by 1.3e-6 here,
    # Lanczos and dense by 1.0e-6
    np.testing.assert_allclose(cal[0].scale, cal[1].scale, rtol=1e-5)
    assert cal[0].scale.size == dense.size
    # and a 1e-3 change of the basis (a different length-scale) is far outside that tolerance
    other = fp.ICLP(1.0).calibrate(fp.iclp_qr_mean(X, Eigenbasis(fp.Gaussian(rho=0.1001, convention="hall"), grid),
                                                   tau=1.0))
    assert np.max(np.abs(other.scale[:10] / cal[1].scale[:10] - 1)) > 1e-4


def test_auto_choice_and_memory_path(monkeypatch):
    # many retained pairs (Matérn 3/2): the dense path, split in its mirror-even and mirror-odd halves
    assert Eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(400)).method == "dense-mirror"
    # not mirror-symmetric (a non-uniform grid): one decomposition
    assert Eigenbasis(fp.Matern(rho=0.1, nu=1.5), _nonuniform(400)).method == "dense"
    # small grids stay dense
    assert Eigenbasis(fp.Gaussian(rho=0.1, convention="hall"), fp.Grid.uniform(100)).method == "dense"
    # the FFT path forms no m x m matrix: a memory limit that refuses the dense path lets it through
    import fdp_ppl.settings as settings

    monkeypatch.setattr(settings, "available_memory", lambda: 4.0 * 8.0 * 2000**2 / 2)
    lam, u, _, how = retained_eigenpairs(fp.Gaussian(rho=0.1, convention="hall"), np.linspace(0, 1, 2000),
                                         np.full(2000, 1 / 1999), method="lanczos")
    assert how == "lanczos-fft" and u.shape == (2000, lam.size)
    with pytest.raises(InputError, match="dense eigendecomposition"):
        retained_eigenpairs(fp.Matern(rho=0.1, nu=1.5), np.linspace(0, 1, 2000), np.full(2000, 1 / 1999))
    with pytest.raises(ValueError, match="method"):
        retained_eigenpairs(fp.Matern(rho=0.1), np.linspace(0, 1, 10), np.full(10, 0.1), method="fft")


def test_bench_scale_infer_rows_and_exponents():
    """The benchmark's helpers (``benchmarks/bench_scale_infer.py``): an eigenbasis row and the growth exponent."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scale_infer.py"
    spec = importlib.util.spec_from_file_location("bench_scale_infer", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = bench.eig_row("gaussian-hall", 400, repeats=1)
    assert row["method"] == "lanczos-fft" and row["seconds"] > 0 and row["baseline_seconds"] > 0
    assert row["ratio"] == pytest.approx(row["seconds"] / row["baseline_seconds"])
    fake = [{"what": "x", "size": n, "seconds": 1e-6 * n**2, "baseline_seconds": None, "ratio": None}
            for n in (100, 200, 400)]
    assert bench.exponents(fake)["x"] == pytest.approx(2.0)
    assert "| x | 400 |" in bench.markdown(fake)


@pytest.mark.parametrize("m", [400, 401])
def test_mirror_split_dense_path_matches_one_decomposition(m):
    """The dense path on a mirror-symmetric matrix (two half-size eigh) gives the pairs, the retained count and the
    ICLP calibration of one decomposition of the whole matrix, on even and odd grids."""
    grid, kernel = fp.Grid.uniform(m), fp.Matern(rho=0.1, nu=1.5)
    split, whole = Eigenbasis(kernel, grid), Eigenbasis(kernel, grid, method="dense")
    assert split.method == "dense-mirror" and whole.method == "dense"
    assert split.size == whole.size and split.size > m // 2
    lam = whole.eigenvalues
    np.testing.assert_allclose(split.eigenvalues, lam, rtol=0, atol=1e-12 * lam[0])
    # eigenfunctions of well-separated eigenvalues agree up to sign; the basis is orthonormal in the grid's inner product
    gap = np.minimum(np.abs(np.diff(np.r_[np.inf, lam])), np.abs(np.diff(np.r_[lam, -np.inf])))
    ok = gap > 1e-6 * lam[0]
    w = grid.weights[:, None]
    inner = np.sum(w * split.eigenfunctions * whole.eigenfunctions, axis=0)
    assert ok.sum() > 20 and np.all(np.abs(np.abs(inner[ok]) - 1) < 1e-8)
    gram = split.eigenfunctions.T @ (w * split.eigenfunctions)
    assert np.abs(gram - np.eye(split.size)).max() < 1e-10
    spec_s = fp.ICLPQRSpec(basis=split, tau=1.0, n=50)
    spec_w = fp.ICLPQRSpec(basis=whole, tau=1.0, n=50)
    np.testing.assert_allclose(fp.ICLP(1.0).calibrate(spec_s).scale, fp.ICLP(1.0).calibrate(spec_w).scale,
                               rtol=1e-6)
