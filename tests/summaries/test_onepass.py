"""One-pass summaries give the same numbers as the original xarray pipeline.

The reference values in ``data/summaries_onepass_reference.json`` were computed
by the package *before* the summaries were rewritten as one chunked pass
(clip factors and one matrix product instead of full-size temporaries); they
are the coefficients of every mean summary, the Bernstein lattice values, the
number of clipped records and the data-derived τ on the three real datasets
(DTI ``cca``, electricity, growth), for a τ that clips about half of the
records and one that clips none. Regenerate them (``python
tests/summaries/test_onepass.py``) only for an intended change of values.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

REFERENCE = Path(__file__).with_name("data") / "summaries_onepass_reference.json"

#: (dataset, variable, missing policy, two L2 bounds tau, two sup-norm bounds tau_inf)
CASES = {
    "dti": ("dti", "cca", "impute", (0.5, 1.0), (0.7, 1.0)),
    "electricity": ("electricity", "demand", "error", (1500.0, 3000.0), (2000.0, 3000.0)),
    "growth": ("growth", None, "error", (138.0, 200.0), (150.0, 200.0)),
}
MEANS = ("sample_mean", "frl_mean", "iclp_qr_mean", "rkhs_mean", "iclp_ar_mean")


def _load(key):
    from fdp_ppl.datasets import load_dataset

    name, var, missing, _, _ = CASES[key]
    return load_dataset(name, var, missing=missing)


def _basis(curves):
    import fdp_ppl as fp

    return fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))


def _offset(curves):
    """A public-looking offset (a straight line across the value range, not computed from the records)."""
    t = np.asarray(curves["t"].values, dtype=float)
    return np.linspace(0.0, 1.0, t.size)


def compute(key, curves=None) -> dict:
    """Every summary of one dataset: {case name: {"coefficients": [...], "n_clipped": int}}."""
    import fdp_ppl as fp
    from fdp_ppl.summaries import data_tau

    da = _load(key) if curves is None else curves
    basis = _basis(_load(key))
    _, _, _, taus, taus_inf = CASES[key]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tau in taus:
            for fn in MEANS:
                try:
                    s = getattr(fp, fn)(da, basis, tau=tau)
                except Exception as err:  # noqa: BLE001 - a refusal is part of the reference
                    out[f"{fn}/tau={tau:g}"] = {"error": type(err).__name__}
                    continue
                out[f"{fn}/tau={tau:g}"] = {"coefficients": s.coefficients.tolist(), "n_clipped": s.n_clipped}
            spec = fp.ICLPQRSpec(basis=basis, tau=tau, n=int(da.sizes["curve"]))
            s = spec.fit(da, offset=_offset(_load(key)) * taus[0] / 10.0, offset_source="test line")
            out[f"iclp_qr_offset/tau={tau:g}"] = {"coefficients": s.coefficients.tolist(), "n_clipped": s.n_clipped}
        for tau_inf in taus_inf:
            s = fp.bernstein_mean(da, tau_inf=tau_inf, k=20)
            out[f"bernstein/tau_inf={tau_inf:g}"] = {"coefficients": s.coefficients.tolist(), "n_clipped": s.n_clipped}
        out["data_tau"] = {"coefficients": [float(data_tau(da))], "n_clipped": 0}
    return out


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


def _compare(got: dict, ref: dict):
    assert set(got) == set(ref)
    for case, r in ref.items():
        g = got[case]
        if "error" in r:
            assert g.get("error") == r["error"], case
            continue
        assert g["n_clipped"] == r["n_clipped"], case
        want = np.asarray(r["coefficients"])
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        np.testing.assert_allclose(g["coefficients"], want, rtol=1e-12, atol=1e-12 * scale, err_msg=case)


@pytest.mark.parametrize("key", sorted(CASES))
def test_summaries_equal_the_reference(key, reference):
    _compare(compute(key), reference[key])


@pytest.mark.parametrize("key", sorted(CASES))
def test_dask_backed_curves_give_the_same_summaries(key, reference):
    pytest.importorskip("dask.array")
    da = _load(key).chunk({"curve": 97})
    _compare(compute(key, da), reference[key])


def test_numpy_input_equals_dataarray_input():
    import fdp_ppl as fp

    da = _load("growth")
    basis = _basis(da)
    a = fp.iclp_qr_mean(da, basis, tau=138.0)
    b = fp.iclp_qr_mean(np.asarray(da.values), basis, tau=138.0)
    np.testing.assert_array_equal(a.coefficients, b.coefficients)


def test_the_input_is_not_modified():
    import fdp_ppl as fp

    da = _load("electricity")
    before = da.copy(deep=True)
    fp.iclp_qr_mean(da, _basis(da), tau=1500.0)
    fp.bernstein_mean(da, tau_inf=2000.0)
    xr.testing.assert_identical(da, before)


def test_nan_is_refused_by_every_summary():
    import fdp_ppl as fp
    from fdp_ppl.errors import InputError

    da = _load("growth").copy(deep=True)
    da[3, 5] = np.nan
    with pytest.raises(InputError, match="NaN/inf values") as err:
        fp.iclp_qr_mean(da, _basis(da), tau=138.0)
    assert not any(ch.isdigit() for ch in str(err.value).split("(")[0])  # no data-dependent count in the text
    da[3, 5] = np.inf
    with pytest.raises(InputError, match="NaN/inf"):
        fp.bernstein_mean(da, tau_inf=150.0)


def test_chunking_along_curves_does_not_change_the_result(monkeypatch):
    """A tiny internal chunk (several passes) gives the one-chunk result."""
    import fdp_ppl as fp
    from fdp_ppl.summaries import curves as curves_mod

    da = _load("dti")
    basis = _basis(da)
    one = fp.iclp_qr_mean(da, basis, tau=0.5)
    if not hasattr(curves_mod, "CHUNK_BYTES"):
        pytest.skip("no internal chunking")
    monkeypatch.setattr(curves_mod, "CHUNK_BYTES", 8 * 93 * 7)  # 7 curves per chunk
    many = fp.iclp_qr_mean(da, basis, tau=0.5)
    np.testing.assert_allclose(many.coefficients, one.coefficients, rtol=1e-13, atol=1e-15)
    assert many.n_clipped == one.n_clipped


# --------------------------------------------------------------------------- release assembly (same pass)
def test_fast_release_tree_is_the_public_constructors_tree():
    """The release tree assembled from a cached template equals the one xarray's public constructors build."""
    import fdp_ppl as fp
    from fdp_ppl.releasing import schema

    da = _load("growth")
    basis = _basis(da)
    summary = fp.ICLPQRSpec(basis=basis, tau=138.0, n=int(da.sizes["curve"])).fit(
        da, offset=_offset(da) * 10.0, offset_source="a line")
    assert schema._fast_assembly_ok()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fp.release(summary, fp.ICLP(epsilon=1.0), draws=5, random_seed=3, study=True, generator="pymc")
    from fdp_ppl.releasing.draw import _TEMPLATES

    template = next(iter(_TEMPLATES[summary.spec].values()))
    meta = schema.ReleaseMetadata.from_attrs(tree.attrs)
    post = tree["posterior"]
    coef = post["coefficients"].values[0]
    curves = post["curve"].values[0] - template.offset
    public = template._public_tree(meta, coef, curves + template.offset, dict(post.attrs))
    xr.testing.assert_identical(tree, public)
    assert [tree[g].dataset.identical(public[g].dataset) for g in ("posterior", "constant_data")] == [True, True]


def test_no_release_can_change_another():
    """Two releases of one summary (one cached template) own their attrs and share the public constant arrays only
    as read-only views (the basis is not copied into each release): a change made through one release reaches
    neither the other nor the template."""
    import fdp_ppl as fp

    da = _load("growth")
    summary = fp.iclp_qr_mean(da, _basis(da), tau=200.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = (fp.release(summary, fp.ICLP(epsilon=1.0), random_seed=s, study=True, generator="pymc") for s in (1, 2))
    for name in ("eigenvalues", "eigenfunctions", "noise_scale", "quadrature_weights"):
        va, vb = a["constant_data"][name].values, b["constant_data"][name].values
        assert va is not vb and not va.flags.writeable and not vb.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            va[...] = -1.0
    a["constant_data"]["noise_scale"] = a["constant_data"]["noise_scale"] * -1.0  # a new array: this release only
    assert (a["constant_data"]["noise_scale"].values < 0).all()
    a["posterior"]["t"].attrs["long_name"] = "changed"
    assert (b["constant_data"]["noise_scale"].values > 0).all()
    assert b["posterior"]["t"].attrs["long_name"] != "changed"
    c = fp.release(summary, fp.ICLP(epsilon=1.0), random_seed=3, study=True, generator="pymc")
    assert (c["constant_data"]["noise_scale"].values > 0).all()



def test_cached_public_parts_follow_the_mechanism_parameters():
    """The calibration cached per spec and mechanism parameters follows a changed epsilon, mechanism or bound."""
    import fdp_ppl as fp

    da = _load("growth")
    summary = fp.iclp_qr_mean(da, _basis(da), tau=200.0)
    mech = fp.ICLP(epsilon=1.0)

    def scale(m, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = fp.release(summary, m, random_seed=1, study=True, generator="pymc", **kw)
        return tree.attrs, tree["constant_data"]["noise_scale"].values

    at1, s1 = scale(mech)
    mech.epsilon = 2.0  # the same object with a new epsilon: a new calibration
    at2, s2 = scale(mech)
    np.testing.assert_allclose(s2, s1 / 2, rtol=1e-12)
    assert (at1["epsilon"], at2["epsilon"]) == (1.0, 2.0)
    at3, s3 = scale(fp.ICLP(epsilon=1.0), bound="paper")
    assert at3["sensitivity_bound"] == "paper" and at3["sensitivity"] > at1["sensitivity"]
    assert np.all(s3 > s1)
    at4, _ = scale(fp.GaussianMechanism(epsilon=1.0, delta=1e-5))
    assert at4["noise_law"] == "normal" and at4["delta"] == 1e-5
    with pytest.raises(ValueError, match="read-only"):  # the cached calibration cannot be written through a release
        s2[:] = 0.0
    _, again = scale(mech)
    assert np.all(again > 0)


if __name__ == "__main__":  # regenerate the reference (only for an intended change of values)
    os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    REFERENCE.parent.mkdir(exist_ok=True)
    REFERENCE.write_text(json.dumps({k: compute(k) for k in sorted(CASES)}, indent=0, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}")
