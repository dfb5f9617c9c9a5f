"""A seeded mean-curve release gives the same bits as before the data pass was made faster.

The reference in ``data/seeded_mean_release.json`` (``float.hex`` of every value) was computed by the package
*before* the clipping pass flushed tiny values in one compiled loop into a reused block and before numpy curves
skipped the DataArray wrapper: the seeded release (``study=True``, the PyMC generator) of the ICLP-QR mean of
6000 synthetic curves on 100 grid points (three blocks of the pass, about half of the curves clipped) given as a
C-ordered array (by NumPy's flush and ``einsum``, and by the compiled loop a process's later passes use), as a
DataArray stored (t, curve) (a strided block: NumPy's flush), with a public offset, and
under add/remove; and the Bernstein coefficients (sup-norm clipping) of the same curves. The flush is a
selection and every block keeps its layout, order and products, so the values are equal bit for bit
(DESIGN invariant 9: the flush that keeps subnormals out of the arithmetic changes no value of a normal
record). Regenerate (``python tests/releasing/test_seeded_mean_pinned.py``) only for an intended change of
values. The stored values are this platform's bits (its BLAS's order of summation), compared to 1e-10 relative
so that another CPU's kernels pass; the two paths are compared with each other bit for bit in one process.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

REFERENCE = Path(__file__).with_name("data") / "seeded_mean_release.json"
N, K, TAU, SEED = 6000, 100, 1.0, 7


def _curves() -> np.ndarray:
    rng = np.random.default_rng(11)
    t = np.linspace(0.0, 1.0, K)
    return rng.uniform(0.5, 1.5, (N, 1)) * 1.2 * np.sin(2 * np.pi * t) + 0.3 * rng.standard_normal((N, K))


def compute() -> dict:
    """{case: list of float.hex}: released coefficients and curve of each seeded release, Bernstein coefficients."""
    import fdp_ppl as fp

    x = _curves()
    grid = fp.Grid.uniform(K)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    stored_tc = xr.DataArray(np.ascontiguousarray(x.T), dims=("t", "curve"), coords={"t": grid.t})
    fits = {
        "c_order": fp.iclp_qr_mean(x, basis, tau=TAU),
        "dataarray_t_curve": fp.iclp_qr_mean(stored_tc, basis, tau=TAU),
        "offset": fp.ICLPQRSpec(basis=basis, tau=TAU, n=N).fit(x, offset=0.2 * np.sin(np.pi * grid.t),
                                                                offset_source="a public curve"),
        "add_remove": fp.iclp_qr_mean(x, basis, tau=TAU, neighbouring="add-remove", n_lower=5000),
    }
    out = {}
    for case, fit in fits.items():
        tree = fp.release(fit, fp.ICLP(epsilon=1.0), random_seed=SEED, study=True, generator="pymc")
        post = tree["posterior"]
        out[case] = [float(v).hex() for v in np.concatenate([post["coefficients"].values.ravel(),
                                                               post["curve"].values.ravel()])]
    out["bernstein"] = [float(v).hex() for v in fp.bernstein_mean(x, grid, tau_inf=2.0, k=20).coefficients]
    return out


def compute_on(path: str) -> dict:
    """:func:`compute` by NumPy's flush and einsum (``"numpy"``) or by the compiled loop a process's later passes
    use (``"compiled"``), checked to have run (not vacuous); the module's switches are restored."""
    from fdp_ppl._numba import HAVE_NUMBA
    from fdp_ppl.summaries import curves

    saved, passes = dict(curves._COMPILED), curves._PASSES[0]
    if path == "numpy":
        curves._COMPILED["flush_and_square"] = False
    else:
        curves._COMPILED.pop("flush_and_square", None)
        curves._PASSES[0] = max(1, passes)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = compute()
        assert bool(curves._COMPILED.get("flush_and_square")) == (path == "compiled" and HAVE_NUMBA)
    finally:
        curves._COMPILED.clear()
        curves._COMPILED.update(saved)
        curves._PASSES[0] = max(passes, curves._PASSES[0])
    return out


@pytest.fixture(scope="module", params=["numpy", "compiled"])
def computed(request):
    """The values by NumPy's flush and einsum, and by the compiled loop (a process's later passes)."""
    return compute_on(request.param)


CASES = ["c_order", "dataarray_t_curve", "offset", "add_remove", "bernstein"]


@pytest.mark.parametrize("case", CASES)
def test_a_seeded_mean_release_keeps_its_values(case, computed):
    """Against the stored reference: equal to 1e-10 relative (the reference holds this platform's bits; another
    CPU's BLAS kernels or LAPACK may sum in another order, which moves the last bits, not the 11th digit)."""
    ref = np.array([float.fromhex(v) for v in json.loads(REFERENCE.read_text())[case]])
    got = np.array([float.fromhex(v) for v in computed[case]])
    assert got.size == ref.size > 20
    bad = np.flatnonzero(~np.isclose(got, ref, rtol=1e-10, atol=1e-12 * np.max(np.abs(ref))))
    assert bad.size == 0, f"{bad.size} values differ, first at {bad[0]}: {got[bad[0]]!r} vs {ref[bad[0]]!r}"


def test_numpy_and_compiled_passes_give_the_same_bits():
    """The compiled loop and NumPy's flush and einsum give the same bits in one process (same BLAS): the flush is a
    selection and the compiled loop sums each row in einsum's order."""
    from fdp_ppl._numba import HAVE_NUMBA

    if not HAVE_NUMBA:
        pytest.skip("numba not installed: only the NumPy path exists")
    numpy_path, compiled = compute_on("numpy"), compute_on("compiled")
    for case in CASES:
        assert numpy_path[case] == compiled[case], case


if __name__ == "__main__":  # regenerate the reference (only for an intended change of values)
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    REFERENCE.parent.mkdir(exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        REFERENCE.write_text(json.dumps(compute(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}")
