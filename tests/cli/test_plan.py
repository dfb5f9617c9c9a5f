"""``fdp-ppl plan`` and ``fdp-ppl release --dry-run`` print the plan and its accuracy from public flags and a file's
metadata only: no data values read, nothing drawn, charged or written (DESIGN invariant 11)."""

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::fdp_ppl.summaries.curves.TauTooSmallWarning")

FLAGS = ["--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "1", "--samples", "300"]


def test_plan_needs_no_data_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["plan", *FLAGS, "--n", "100", "--grid", "41", "--width", "0.5"]) == 0
    out = capsys.readouterr().out
    for row in ("RMS L2 error (noise)", "simultaneous 95% half-width", "bias of constant 1",
                "smallest epsilon for half-width 0.5", "largest tau for half-width 0.5", "spent by this plan"):
        assert row in out
    assert list(tmp_path.iterdir()) == []  # no ledger, no file


def test_plan_and_dry_run_read_only_metadata(tmp_path, capsys):
    # every value is NaN: a release refuses the file, a plan never looks at the values
    t = np.linspace(0, 1, 41)
    path = tmp_path / "nan.nc"
    xr.Dataset({"y": (("curve", "t"), np.full((30, t.size), np.nan))}, coords={"t": t}).to_netcdf(path)
    assert main(["plan", *FLAGS, "--data", str(path)]) == 0
    planned = capsys.readouterr().out
    assert "n                    " in planned and " 30\n" in planned and "41 points" in planned
    out = tmp_path / "r.nc"
    rc = main(["release", "--dry-run", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "1", "--data", str(path),
               "--out", str(out)])
    assert rc == 0 and not out.exists()
    assert "simultaneous 95% half-width" in capsys.readouterr().out
    assert main(["release", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "1", "--data", str(path),
                 "--out", str(out)]) == 2
    assert "NaN" in capsys.readouterr().err and not out.exists()


def test_plan_without_n_is_refused(capsys):
    assert main(["plan", *FLAGS]) == 2
    assert "--n" in capsys.readouterr().err


def test_plan_reads_a_bundled_file_dataset_by_its_metadata(capsys):
    assert main(["plan", *FLAGS, "--data", "dti"]) == 0
    out = capsys.readouterr().out
    assert " 382\n" in out and "93 points" in out


def test_kde_dry_run_reads_no_data_and_prints_the_sup_error(tmp_path, capsys):
    out = tmp_path / "k.nc"
    rc = main(["kde", "--dry-run", "--data", str(tmp_path / "absent.csv"), "--var", "x", "--mechanism", "gp",
               "--epsilon", "1", "--delta", "1e-5", "--domain", "0", "1", "--n", "500", "--out", str(out)])
    assert rc == 0 and not out.exists()
    text = capsys.readouterr().out
    assert "simultaneous 95% half-width" in text and "(sup over x)" in text


def _dry_runs(tmp_path, capsys, command, write, flags):
    """stdout of ``command --dry-run`` on two files of the same shape whose values differ (one all NaN), with a
    ledger named: it must stay unopened (no row), and no output is written."""
    outputs = []
    for name, values in (("a", "random"), ("b", "nan")):
        path = tmp_path / f"{name}.nc"
        write(path, values)
        ledger, out = tmp_path / f"{name}.ledger", tmp_path / f"{name}-release.nc"
        rc = main([command, "--dry-run", "--data", str(path), *flags, "--out", str(out), "--ledger", str(ledger),
                   "--budget", "10"])
        assert rc == 0 and not out.exists() and not ledger.exists()
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]  # the values never reach the plan
    return outputs[0]


def test_machine_dry_run_reads_only_metadata_and_charges_nothing(tmp_path, capsys):
    def write(path, values):
        rng = np.random.default_rng(0)
        x = rng.uniform(size=120) if values == "random" else np.full(120, np.nan)
        y = np.sign(rng.normal(size=120)) if values == "random" else np.full(120, np.nan)
        xr.Dataset({"x": ("record", x), "y": ("record", y)}).to_netcdf(path)

    text = _dry_runs(tmp_path, capsys, "machine", write,
                     ["--features", "x", "--label", "y", "--lam", "0.1", "--bandwidth", "0.2", "--epsilon", "1",
                      "--delta", "1e-6", "--grid-size", "30", "--margin", "0.2", "1"])
    for row in ("n                            120", "simultaneous 95% half-width", "signs kept at margin 0.2",
                "signs kept at margin 1", "spent by this plan"):
        assert row in text


def test_fpca_dry_run_reads_only_metadata_and_charges_nothing(tmp_path, capsys):
    t = np.linspace(0, 1, 41)

    def write(path, values):
        y = (np.random.default_rng(0).normal(size=(60, t.size)) if values == "random"
             else np.full((60, t.size), np.nan))
        xr.Dataset({"y": (("curve", "t"), y)}, coords={"t": t}).to_netcdf(path)

    text = _dry_runs(tmp_path, capsys, "fpca", write, ["--k", "1", "--m", "4", "--epsilon", "1", "--tau", "2",
                                                       "--eigengap", "0.05", "0.2", "--samples", "200"])
    for row in (" 60\n", "41 points", "angle at eigengap 0.05", "angle at eigengap 0.2", "spent by this plan"):
        assert row in text


def _write_columns(path, values):
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(size=(2, 80)) if values == "random" else np.full((2, 80), np.nan))
    xr.Dataset({"x": ("record", x), "y": ("record", y)}).to_netcdf(path)


@pytest.mark.parametrize("mechanism, flags", [
    ("gp", ["--delta", "1e-5"]), ("iclp", ["--normalise"]), ("frl", []),
    ("bernstein", ["--var2", "y", "--grid-size", "12"])])
def test_kde_dry_run_serves_every_mechanism_without_reading_charging_or_writing(tmp_path, capsys, mechanism, flags):
    """Each kind of ``fdp-ppl kde`` plan (a GP and an ICLP density, a 1-D baseline planned as the mean of its bumps,
    a 2-D tensor baseline) is the library's (fdp_ppl.kde.release.plan_kde: the spec the release draws from), its
    values unread, no ledger row, no file (DESIGN invariant 11)."""
    flags = ["--var", "x", "--mechanism", mechanism, "--epsilon", "1", "--domain", "0", "1", "--n", "80",
             "--grid-size", "40", *flags]
    text = _dry_runs(tmp_path, capsys, "kde", _write_columns, flags)
    assert "simultaneous 95% half-width" in text and "spent by this plan" in text


def test_kde_plan_refusals_are_the_library_s_in_python_and_on_the_command_line(tmp_path, capsys):
    """One wording: what fdp_ppl.kde.release.plan_kde refuses, the command refuses, its keywords named as flags."""
    from fdp_ppl.errors import InputError
    from fdp_ppl.kde.release import plan_kde

    base = ["kde", "--dry-run", "--data", str(tmp_path / "absent.nc"), "--var", "x", "--mechanism", "gp",
            "--epsilon", "1", "--delta", "1e-5", "--domain", "0", "1", "--out", str(tmp_path / "k.nc")]
    for extra, kwargs, flag in (([], {"n": None}, "--n 500"),
                                (["--n", "80", "--bandwidth-epsilon", "0.5"], {"n": 80, "bandwidth_epsilon": 0.5},
                                 "--bandwidth 0.1")):
        with pytest.raises(InputError) as err:
            plan_kde("gp", 1.0, 1e-5, domain=(0, 1), **kwargs)
        assert main([*base, *extra]) == 2
        line = capsys.readouterr().err.strip()
        assert line.startswith(f"fdp-ppl: error: {err.value.message}; pass {flag}") and "\n" not in line
    assert list(tmp_path.iterdir()) == []


def test_release_dry_run_opens_no_ledger_and_writes_nothing(tmp_path, capsys):
    t = np.linspace(0, 1, 41)

    def write(path, values):
        y = np.random.default_rng(0).normal(size=(30, t.size)) if values == "random" else np.full((30, t.size), np.nan)
        xr.Dataset({"y": (("curve", "t"), y)}, coords={"t": t}).to_netcdf(path)

    text = _dry_runs(tmp_path, capsys, "release", write, FLAGS[:-2])
    assert " 30\n" in text and "simultaneous 95% half-width" in text and "spent by this plan" in text


def test_fpca_dry_run_of_a_bundled_table_names_a_fix_that_works(tmp_path, capsys):
    """A bundled dataset stored as a table has no metadata a dry run may read: the fix it names (public --n and
    --grid, keeping the required --data) is one the command accepts."""
    flags = ["fpca", "--dry-run", "--data", "growth", "--k", "1", "--m", "4", "--epsilon", "1", "--tau", "40",
             "--out", str(tmp_path / "f.nc")]
    assert main(flags) == 2
    err = capsys.readouterr().err
    assert "pass --n N and --grid K" in err and "instead of --data" not in err
    assert main([*flags, "--n", "93", "--grid", "31"]) == 0
    assert not (tmp_path / "f.nc").exists()


def test_a_printed_plan_shows_the_charge_to_the_digit_a_ledger_compares():
    """A pure exact FPCA plan charges epsilon'' = 1 + 4e-11 for epsilon 1: the printed charge must not round it to
    the 1 asked (a ledger with exactly 1 left refuses it)."""
    import fdp_ppl as fp
    from fdp_ppl.fpca import FPCASpec

    spec = FPCASpec(grid=fp.Grid.uniform(31), m=5, k=1, epsilon=1.0, tau=1.0, form="gp-base")
    rows = dict(fp.plan(spec, fp.ExponentialMechanism(), n=93).table())
    assert rows["asked per draw"] == "(1, 0)"
    charged = float(rows["charged"].strip("()").split(",")[0])
    assert 1.0 < charged < 1.0 + 1e-9
