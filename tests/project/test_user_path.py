"""What a new user hits, run as a user would (the command line through
``fdp_ppl.cli.main`` or a subprocess, and the public Python API).

* Point 2 — the record dimension (the privacy unit: n is its size) comes from names, never from position.
* Point 5 — privacy hygiene: a τ far too small warns the data holder (stderr / ``TauTooSmallWarning``), never in
  the file; every data-holder line goes to stderr, the public table to stdout.
* Point 6 — your own data: a CSV, an empty file, a 1-D NetCDF variable, a scikit-fda object each get a one-line
  error that says what is expected.
* Point 7 — ``--version``; ``credible_band`` / ``plot_inference`` default to ArviZ's ``ci_prob`` / ``ci_kind``;
  notebook 06 says what its fast mode can and cannot show; ``--draws N`` states N × ε in the table.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.cli import main
from fdp_ppl.datasets import data_directory, load_dataset
from fdp_ppl.errors import InputError
from fdp_ppl.summaries.curves import TauTooSmallWarning
from tests.helpers import REPO, child_env

HAS_DTI = (data_directory() / "dti.nc").is_file()
ARGS = ["--mechanism", "iclp-qr", "--epsilon", "1", "--seed", "5", "--study"]


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fdp-ppl: error: "), err
    assert "Traceback" not in err
    return lines[0]


def _file_text(tree: xr.DataTree) -> str:
    """Every attribute value and variable name of a release (what is public)."""
    parts = []
    for node in tree.subtree:
        parts += [f"{k}={v}" for k, v in node.attrs.items()]
        for name, var in node.dataset.variables.items():
            parts += [str(name)] + [f"{k}={v}" for k, v in var.attrs.items()]
    return "\n".join(parts)


# ============================================================================ point 2: the record dim from names
@pytest.fixture
def time_subject_file(tmp_path):
    """A NetCDF variable with dims (time, subject), 20 time points and 7 subjects; only ``time`` has a coordinate."""
    rng = np.random.default_rng(0)
    values = 0.5 * np.sin(np.linspace(0, 3, 20))[:, None] + 0.1 * rng.standard_normal((20, 7))
    path = tmp_path / "mine.nc"
    xr.Dataset({"y": (("time", "subject"), values)}, coords={"time": np.linspace(0.0, 10.0, 20)}).to_netcdf(path)
    return path, values


def test_transposed_file_is_refused_or_released_with_n_subjects(tmp_path, capsys, time_subject_file):
    path, values = time_subject_file
    out = tmp_path / "release.nc"
    # no name says which dim is the record: refused in one line naming both dims and the fix; nothing written
    assert main(["release", "--data", str(path), *ARGS, "--tau", "3", "--out", str(out)]) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "('time', 'subject')" in line and "--record-dim subject" in line and "--record-dim time" in line
    assert not out.exists()
    # named: n is the number of subjects and the grid is the time coordinate (--curve-dim is an alias)
    for i, flag in enumerate(("--record-dim", "--curve-dim", "--t-dim")):
        value = "time" if flag == "--t-dim" else "subject"  # naming the grid dim works too
        out = tmp_path / f"release{i}.nc"
        assert main(["release", "--data", str(path), *ARGS, "--tau", "3", "--out", str(out), flag, value]) == 0
        capsys.readouterr()
        tree = xr.open_datatree(out)
        assert tree.attrs["n"] == 7
        np.testing.assert_allclose(tree["posterior"]["t"].values, np.linspace(0.0, 10.0, 20))
    # Python: the same refusal and the same fix
    with pytest.raises(InputError, match=r"\('time', 'subject'\).*record_dim=subject"):
        load_dataset(path)
    da = load_dataset(path, record_dim="subject")
    assert da.dims == ("curve", "t") and da.shape == (7, 20)
    np.testing.assert_allclose(da.values, values.T)


def test_dataarray_record_dim_from_names():
    growth = load_dataset("growth")
    grid = fp.Grid.from_points(growth["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    ref = fp.iclp_qr_mean(growth, basis, tau=1000.0)
    # a (t, curve) DataArray: transposed by name, same summary, n = 93 children
    flipped = fp.iclp_qr_mean(growth.transpose("t", "curve"), basis, tau=1000.0)
    assert flipped.n == ref.n == 93
    np.testing.assert_allclose(flipped.coefficients, ref.coefficients)
    spec = fp.ICLPQRSpec(basis=basis, tau=1000.0, n=93)
    np.testing.assert_allclose(spec.fit(growth.transpose("t", "curve")).coefficients, ref.coefficients)
    # (time, subject) with only time as coordinate: refused, or read with record_dim= / curve_dim=
    ts = xr.DataArray(growth.values.T, dims=("time", "subject"), coords={"time": growth["t"].values})
    for fit in (lambda **kw: fp.iclp_qr_mean(ts, basis, tau=1000.0, **kw), lambda **kw: spec.fit(ts, **kw)):
        with pytest.raises(InputError, match=r"\('time', 'subject'\).*record_dim=subject or record_dim=time"):
            fit()
    assert fp.iclp_qr_mean(ts, basis, tau=1000.0, record_dim="subject").n == 93
    np.testing.assert_allclose(spec.fit(ts, curve_dim="subject").coefficients, ref.coefficients)
    # a numpy array stays positional: rows are records
    np.testing.assert_allclose(fp.iclp_qr_mean(growth.values, basis, tau=1000.0).coefficients, ref.coefficients)


# ============================================================================ point 5: privacy hygiene
def test_tau_far_too_small_warns_the_data_holder_in_their_report_never_printed_or_in_the_file(tmp_path, capsys):
    out, report = tmp_path / "weather.nc", tmp_path / "holder.json"
    assert main(["release", "--data", "weather", *ARGS, "--tau", "1", "--out", str(out),
                 "--holder-report", str(report)]) == 0
    std = capsys.readouterr()
    # the public table on stdout; the data holder's count and warning only in the file they asked for
    assert "sensitivity" in std.out and "35 curves ×" in std.out
    assert "35 of 35" not in std.out + std.err and "far too small" not in std.out + std.err
    holder = json.loads(report.read_text())
    assert holder["clipped"] == holder["records"] == 35 and "far too small" in holder["warning"]
    text = _file_text(xr.open_datatree(out))
    assert "far too small" not in text and "35 of 35" not in text and "n_clipped" not in text


def test_tau_far_too_small_warns_in_python_at_fit_time():
    weather = load_dataset("weather")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(weather["t"].values))
    with pytest.warns(TauTooSmallWarning, match="35 of 35 curves exceeded tau = 1 .*far too small") as rec:
        summary = fp.iclp_qr_mean(weather, basis, tau=1.0)
    assert issubclass(TauTooSmallWarning, UserWarning)
    assert rec[0].filename == __file__  # attributed to the caller's line, not to the library
    with pytest.warns(TauTooSmallWarning):
        fp.ICLPQRSpec(basis=basis, tau=1.0, n=35).fit(weather)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TauTooSmallWarning)
        fp.iclp_qr_mean(weather, basis, tau=1e4)  # a sensible bound: no warning
        tree = fp.release(summary, fp.ICLP(1.0), random_seed=1, study=True)
    assert "far too small" not in _file_text(tree)
    # repr of a fitted summary shows the public spec, never the non-private coefficients
    text = repr(summary)
    assert "hidden" in text and not any(f"{c:.4g}" in text for c in summary.coefficients[:5])


@pytest.mark.skipif(not HAS_DTI, reason="dti.nc not found")
def test_every_data_holder_count_goes_to_their_report_only(tmp_path, capsys):
    report = tmp_path / "holder.json"
    assert main(["release", "--data", "dti", "--var", "cca", "--missing", "impute", *ARGS, "--tau", "1",
                 "--out", str(tmp_path / "dti.nc"), "--holder-report", str(report)]) == 0
    std = capsys.readouterr()
    holder = json.loads(report.read_text())
    assert (holder["records"], holder["clipped"], holder["imputed_curves"]) == (382, 0, 6)
    assert "data holder only" not in std.out + std.err and "of 382" not in std.err and "382 curves ×" in std.out


# ============================================================================ point 6: your own data
class FDataGrid:  # stands for skfda.FDataGrid when scikit-fda is not installed (same module and type name)
    __module__ = "skfda.representation.grid"


def _fdatagrid():
    try:
        import skfda
    except ImportError:
        return FDataGrid()
    return skfda.FDataGrid(np.zeros((3, 5)), np.linspace(0, 1, 5))


# the command line reads CSV tables (wide or long); a table whose headers are not grid points, and empty files, still
# end with one line that says what is expected
@pytest.mark.parametrize("name, content, expected", [
    ("mine.csv", b"id,t1,t2\n1,0.5,0.7\n2,0.4,0.6\n", "not grid points"),
    ("empty.nc", b"", "expected a NetCDF file (.nc) or Zarr store"),
    ("empty.csv", b"", "expected curves as an xr.DataArray")])
def test_csv_and_empty_files_say_what_is_expected(tmp_path, capsys, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["release", "--data", str(path), *ARGS, "--tau", "1", "--out", str(tmp_path / "r.nc")]) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert expected in line
    assert "IO backend" not in line and "engine" not in line
    assert ("is empty" in line) == (not content)
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")) as info:
        load_dataset(path)
    assert "IO backend" not in str(info.value)


def test_one_dimensional_variable_says_what_is_expected(tmp_path, capsys):
    path = tmp_path / "series.nc"
    xr.Dataset({"y": (("time",), np.arange(5.0))}, coords={"time": np.arange(5.0)}).to_netcdf(path)
    assert main(["release", "--data", str(path), *ARGS, "--tau", "1", "--out", str(tmp_path / "r.nc")]) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "no 2-D variable" in line and "y(time)" in line and "records x grid" in line
    assert "--var" not in line
    assert main(["release", "--data", str(path), "--var", "y", *ARGS, "--tau", "1",
                 "--out", str(tmp_path / "r.nc")]) == 2
    assert "exactly 2 dims (records, grid)" in _one_line_error(capsys.readouterr().err)


def test_scikit_fda_object_is_read():
    """An FDataGrid is read by the one converter (it was refused before)."""
    skfda = pytest.importorskip("skfda")
    fd = skfda.FDataGrid(np.arange(15.0).reshape(3, 5) / 20, np.linspace(0, 1, 5))
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(5))
    a = fp.iclp_qr_mean(fd, basis, tau=1.0)
    b = fp.ICLPQRSpec(basis=basis, tau=1.0, n=3).fit(fd)
    c = fp.iclp_qr_mean(fd.data_matrix[..., 0], basis, tau=1.0)
    assert np.array_equal(a.coefficients, c.coefficients) and np.array_equal(b.coefficients, c.coefficients)
    with pytest.raises(TypeError, match="already in memory"):
        load_dataset(fd)
    fake = FDataGrid()  # same module and type name, no data: one line saying what is expected
    with pytest.raises(InputError, match="expected a scikit-fda FDataGrid"):
        fp.iclp_qr_mean(fake, basis, tau=1.0)


# ============================================================================ point 7: small things
def test_version_flag():
    res = subprocess.run([sys.executable, "-m", "fdp_ppl", "--version"], capture_output=True, text=True, env=child_env(),
                         timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == f"fdp-ppl {fp.__version__}" and res.stderr == ""
    assert main(["--version"]) == 0


def test_credible_band_and_plot_inference_default_to_arviz_rcparams():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fdp_ppl.inference import ICLPPrior, credible_band, infer, summarize_functionals, functionals
    from fdp_ppl.plots import plot_inference

    grid = fp.Grid.uniform(12)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), grid)
    x = np.sin(2 * np.pi * grid.t) + 0.2 * np.random.default_rng(1).standard_normal((200, grid.size))
    release = fp.release(fp.iclp_qr_mean(x, basis, tau=3.0), fp.ICLP(1.0), random_seed=2, study=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: the diagnostics are not the point here
        post = infer(release, ICLPPrior(), draws=100, tune=100, chains=1, random_seed=3, progressbar=False, target="summary")
    band = credible_band(post)
    assert band.attrs["ci_prob"] == az.rcParams["stats.ci_prob"]
    assert band.attrs["ci_kind"] == az.rcParams["stats.ci_kind"]
    explicit = credible_band(post, ci_prob=az.rcParams["stats.ci_prob"], ci_kind=az.rcParams["stats.ci_kind"])
    xr.testing.assert_identical(band, explicit)
    with az.rc_context({"stats.ci_prob": 0.5}):  # read at call time
        assert credible_band(post).attrs["ci_prob"] == 0.5
    assert summarize_functionals(functionals(post)).attrs["ci_prob"] == az.rcParams["stats.ci_prob"]
    fig, ax = plot_inference(post, release)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"{az.rcParams['stats.ci_prob']:.0%} pointwise credible band ({az.rcParams['stats.ci_kind'].upper()})" \
        in labels
    plt.close(fig)


def test_draws_n_states_n_times_epsilon_in_the_table(tmp_path, capsys):
    out = tmp_path / "r.nc"
    assert main(["release", "--data", "growth", "--mechanism", "iclp-qr", "--epsilon", "0.1", "--tau", "1000",
                 "--draws", "500", "--seed", "1", "--study", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.strip().startswith("epsilon"))
    assert "0.1 per draw; spent 500 × 0.1 = 50 (500 draws)" in row
    assert xr.open_datatree(out).attrs["budget_spent_epsilon"] == pytest.approx(50.0)


FAST_MODE_LINE = ("fast mode: True", "mode: FAST", "mode: fast")
MACHINE_PATHS = ("/wor" + "k/", "../" + "shared", "/tmp/")  # spelled apart: no tracked file names these folders


def _output_texts(nb):
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.output_type == "stream":
                yield out.text
            elif out.output_type == "error":
                yield "\n".join(out.traceback)
            else:
                yield from (v for k, v in out.get("data", {}).items() if k.startswith("text/"))


def assert_output_clean(nb, name=""):
    """No error output, no fast-mode run, no path of the machine that executed it."""
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{name}: error outputs {[e.ename for e in errors]}"
    for text in _output_texts(nb):
        assert not any(s in text for s in FAST_MODE_LINE), f"{name}: outputs of a fast-mode run"
        assert not any(s in text for s in MACHINE_PATHS), f"{name}: an output names a machine path: {text[:200]!r}"


def assert_executed_in_full_mode(nb, name=""):
    """Committed notebooks hold the outputs of a full-mode run (`make notebooks`): every code cell ran, cleanly."""
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code and all(c.get("execution_count") for c in code), f"{name}: not executed top to bottom"
    assert any(c.get("outputs") for c in code)
    assert_output_clean(nb, name)


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem[:2])
def test_committed_notebook_outputs_are_clean(path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    if any(c.get("outputs") or c.get("execution_count") for c in nb.cells if c.cell_type == "code"):
        assert_executed_in_full_mode(nb, path.name)  # a notebook with outputs has all of them, from a full run
    else:
        assert_output_clean(nb, path.name)


def test_notebook_06_says_what_its_fast_mode_can_show():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(REPO / "notebooks" / "06_inference_from_release.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert_executed_in_full_mode(nb)  # committed with the outputs of `make notebooks`
    # the fast mode's few replicates are not evidence either way, and the text says what the full runs found
    assert "fast mode" in text.lower() and "not evidence" in text
    assert "0.91" in text and "S-2" in text and "does not beat the raw release" in text
