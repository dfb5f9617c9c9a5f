"""What an observer of a command sees besides the file: the seed is never printed and seeds need --study,
outputs never destroy the input, the ledger or an existing file, outputs are written atomically, and messages
computed from the data before the charge name no count (DESIGN invariant 9)."""

import os

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.accounting import PrivacyLedger
from fdp_ppl.cli import main
from fdp_ppl.cli.common import SEEDED_TEXT

K = 8
BIG_SEED = 2**32 + 123_456_789  # above 2^32: once accepted without --study (and drawn with the float sampler)


def _curves(path, n=6, nan_rows=()):
    rng = np.random.default_rng(3)
    values = np.cos(np.linspace(0, 2, K))[None, :] + 0.2 * rng.standard_normal((n, K))
    for r in nan_rows:
        values[r, 1] = np.nan
    xr.Dataset({"y": (("curve", "s"), values)}, coords={"s": np.linspace(0.0, 1.0, K)}).to_netcdf(path)
    return path


@pytest.fixture
def data(tmp_path):
    return _curves(tmp_path / "toy.nc")


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(0, 1, 30), rng.uniform(0, 1, 30)
    y = np.where(x1 > x2, 1, -1)
    path = tmp_path / "svm.csv"
    path.write_text("a,b,label\n" + "\n".join(f"{u},{v},{w}" for u, v, w in zip(x1, x2, y)) + "\n")
    return path


def _release(data, out, *extra):
    return ["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "3",
            "--out", str(out), *map(str, extra)]


def _commands(tmp_path, data, table, out):
    """One argv per command that writes a release (fpca is tested in cli/test_fpca.py)."""
    return {
        "release": _release(data, out),
        "demo": ["demo", "--out", str(out)],
        "kde": ["kde", "--data", str(table), "--var", "a", "--mechanism", "iclp", "--epsilon", "1", "--domain", "0",
                "1", "--grid-size", "20", "--out", str(out)],
        "svm": ["svm", "--data", str(table), "--features", "a", "--label", "label", "--lam", "0.1", "--bandwidth",
                "0.3", "--mechanism", "iclp", "--epsilon", "1", "--grid-size", "20", "--out", str(out)],
    }


# ----------------------------------------------------------------------------- seeds (part 2)
@pytest.mark.parametrize("command", ["release", "demo", "kde", "svm"])
def test_seed_never_printed_and_every_seed_needs_study(tmp_path, data, table, capsys, command):
    """DESIGN invariant 8: a seed is for studies only; a study says so and is charged to no ledger."""
    led = tmp_path / "led.sqlite"
    missing = tmp_path / "no-such-data.nc"  # a run that opened its data first would fail on this path instead
    for seed in ("123", str(BIG_SEED), "4294967300"):  # a small seed, and seeds above 2^32
        argv = _commands(tmp_path, missing if command != "demo" else data, missing.with_suffix(".csv"),
                         tmp_path / "seeded.nc")[command]
        # refused before anything is read, drawn or charged, whatever its size
        assert main([*argv, "--seed", seed, "--ledger", str(led), "--budget", "5"]) == 2
        err = capsys.readouterr().err
        assert "--study" in err and seed not in err and "no-such-data" not in err
        assert not (tmp_path / "seeded.nc").exists() and not led.exists()
    # --study is never charged to a ledger as private spending
    argv = _commands(tmp_path, data, table, tmp_path / "seeded.nc")[command]
    assert main([*argv, "--seed", str(BIG_SEED), "--study", "--ledger", str(led), "--budget", "5"]) == 2
    assert "--ledger" in capsys.readouterr().err and not led.exists() and not (tmp_path / "seeded.nc").exists()
    # a study may use any seed; it is marked not private in the file and the table, and never printed
    for seed, name in (("987654", "study.nc"), (str(BIG_SEED), "big.nc")):
        argv = _commands(tmp_path, data, table, tmp_path / name)[command]
        assert main([*argv, "--seed", seed, "--study"]) == 0
        std = capsys.readouterr()
        assert SEEDED_TEXT in std.out and seed not in std.out + std.err
        assert any(line.split()[:3] == ["study", "not", "private"] for line in std.out.splitlines())
        tree = xr.open_datatree(tmp_path / name)
        assert int(tree.attrs["noise_seeded"]) == 1 and tree.attrs["study"] == "not private"
        assert seed not in str(tree.attrs) and seed not in str(tree.to_dict())
    # a real release (no seed) is not a study
    argv = _commands(tmp_path, data, table, tmp_path / "real.nc")[command]
    assert main(argv) == 0
    assert "not private" not in capsys.readouterr().out and "study" not in xr.open_datatree(tmp_path / "real.nc").attrs


def test_seeded_release_reproduces_only_with_the_same_seed(tmp_path, data, capsys):
    a, b, c = (tmp_path / f"{x}.nc" for x in "abc")
    assert main(_release(data, a, "--seed", BIG_SEED, "--study")) == 0
    assert main(_release(data, b, "--seed", BIG_SEED, "--study")) == 0
    assert main(_release(data, c, "--seed", BIG_SEED + 1, "--study")) == 0
    capsys.readouterr()
    ca, cb, cc = (xr.open_datatree(p)["posterior"]["coefficients"].values for p in (a, b, c))
    assert np.array_equal(ca, cb) and not np.allclose(ca, cc)


# ----------------------------------------------------------------------------- outputs (part 6)
def test_out_equal_to_the_input_is_refused_and_the_input_survives(tmp_path, data, capsys):
    before = data.read_bytes()
    for extra in ([], ["--force"]):
        assert main(_release(data, data, *extra)) == 2
        err = capsys.readouterr().err
        assert "is the input data" in err and len(err.strip().splitlines()) == 1
        assert data.read_bytes() == before
    # the same file under another spelling, and through a hard link
    alias = tmp_path / "sub" / ".." / "toy.nc"
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.nc"
    os.link(data, link)
    for target in (alias, link):
        assert main(_release(data, target, "--force")) == 2
        assert "is the input data" in capsys.readouterr().err
    assert data.read_bytes() == before
    # --plot onto the input, and --out onto the ledger
    assert main([*_release(data, tmp_path / "r.nc"), "--plot", str(data)]) == 2
    assert "--plot" in capsys.readouterr().err and data.read_bytes() == before
    led = tmp_path / "led.sqlite"
    assert main([*_release(data, tmp_path / "r.nc"), "--ledger", str(led), "--budget", "3"]) == 0
    ledger_bytes = led.read_bytes()
    capsys.readouterr()
    assert main([*_release(data, led, "--force"), "--ledger", str(led)]) == 2
    assert "is the ledger" in capsys.readouterr().err and led.read_bytes() == ledger_bytes


def test_existing_output_needs_force(tmp_path, data, capsys):
    out = tmp_path / "r.nc"
    out.write_bytes(b"keep me")
    assert main(_release(data, out)) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err and out.read_bytes() == b"keep me"
    assert main(_release(data, out, "--force")) == 0
    assert xr.open_datatree(out).attrs["n"] == 6
    png = tmp_path / "r.png"
    png.write_bytes(b"old png")
    assert main([*_release(data, tmp_path / "s.nc"), "--plot", str(png)]) == 2
    assert png.read_bytes() == b"old png" and not (tmp_path / "s.nc").exists()


def test_a_failing_plot_publishes_nothing_and_leaves_no_temporary(tmp_path, data, capsys, monkeypatch):
    import fdp_ppl.plots as plots

    out, png = tmp_path / "r.nc", tmp_path / "r.png"
    out.write_bytes(b"previous release")

    def broken(*args, **kwargs):
        raise RuntimeError("the plot broke")

    monkeypatch.setattr(plots, "plot_release", broken)
    assert main([*_release(data, out, "--force"), "--plot", str(png)]) == 2
    err = capsys.readouterr().err
    assert "nothing was written" in err and len(err.strip().splitlines()) == 1
    assert out.read_bytes() == b"previous release" and not png.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["r.nc", "toy.nc"])


def test_a_failing_netcdf_write_leaves_the_previous_file_intact(tmp_path, data, capsys, monkeypatch):
    out = tmp_path / "r.nc"
    out.write_bytes(b"previous release")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # the temporary file is written, then the disk fills
    assert main(_release(data, out, "--force")) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "nothing was written" in err
    assert out.read_bytes() == b"previous release"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc", "toy.nc"]


# ----------------------------------------------------------------------------- before the charge (part 3)
def test_missing_value_message_names_no_count(tmp_path, capsys):
    errors = []
    for rows in ((0,), (0, 1, 2, 3)):
        path = _curves(tmp_path / "toy.nc", nan_rows=rows)
        assert main(_release(path, tmp_path / "r.nc")) == 2
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and "data holder only" in errors[0]
    assert not any(ch.isdigit() for ch in errors[0].split("values")[0].replace("2^32", ""))


def test_svm_missing_values_message_names_no_count(tmp_path, capsys):
    errors = []
    for bad in (1, 7):
        rows = ["a,label"] + [f"{'nan' if i < bad else i / 30},{1 if i % 2 else -1}" for i in range(30)]
        path = tmp_path / "t.csv"
        path.write_text("\n".join(rows) + "\n")
        assert main(["svm", "--data", str(path), "--features", "a", "--label", "label", "--lam", "0.1",
                     "--bandwidth", "0.3", "--mechanism", "iclp", "--epsilon", "1", "--out",
                     str(tmp_path / "s.nc")]) == 2
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and "data holder only" in errors[0] and "30" not in errors[0]


def test_svm_charges_the_ledger_before_the_solver_runs(tmp_path, table, capsys, monkeypatch):
    from fdp_ppl.machine import machine
    from fdp_ppl.errors import InputError

    led = tmp_path / "led.sqlite"
    seen = {}

    def failing_solver(*args, **kwargs):
        seen["spent"] = PrivacyLedger.open(led).spent.epsilon  # what the ledger holds when the solver runs
        raise InputError("data holder only: the solver did not converge", "raise lam")

    monkeypatch.setattr(machine, "solve_erm", failing_solver)
    argv = _commands(tmp_path, None, table, tmp_path / "s.nc")["svm"]
    assert main([*argv, "--ledger", str(led), "--budget", "3"]) == 2
    assert seen["spent"] == pytest.approx(1.0)
    assert PrivacyLedger.open(led).spent.epsilon == pytest.approx(1.0)  # a failure is never free
    assert not (tmp_path / "s.nc").exists()
    capsys.readouterr()


def test_solver_cannot_fail_on_the_data():
    """The kernel-machine solver runs a public number of iterations and has no data-dependent failure (so no
    failure bit and no message about the accuracy reached): labels that made the previous solver fail its
    target run the same count and return; only public parameters are refused (DESIGN invariant 9)."""
    from fdp_ppl.machine.solvers import iteration_count, solve_erm
    from fdp_ppl.errors import InputError

    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 60)
    K = np.exp(-np.subtract.outer(x, x) ** 2 / 0.02)
    kw = dict(lam=1e-3, rho_target=0.05, kappa=1.0)
    for loss in ("hinge", "logistic"):
        counts = {solve_erm(K, y, loss=loss, **kw).iterations for y in
                  (np.where(rng.uniform(size=60) < 0.5, 1.0, -1.0), np.where(x < 0.5, -1.0, 1.0), -np.ones(60))}
        assert counts == {iteration_count(loss, **kw, loss_at_zero=1.0 if loss == "hinge" else np.log(2))}
    with pytest.raises(InputError, match="rho_target"):
        solve_erm(K, np.ones(60), loss="hinge", lam=1e-3, rho_target=0.0, kappa=1.0)


def test_a_full_filesystem_is_refused_before_the_charge(tmp_path, data, capsys):
    """A real 64 KiB tmpfs (root only): the release is refused before the ledger is charged, exit 2, one line,
    no segfault, nothing at the target."""
    import subprocess
    import sys

    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        led = tmp_path / "led.sqlite"
        argv = [sys.executable, "-m", "fdp_ppl", *_release(data, small / "r.nc", "--draws", "100"),
                "--ledger", str(led), "--budget", "200"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert res.returncode == 2 and "free" in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert list(small.iterdir()) == [] and PrivacyLedger.open(led).spent.epsilon == 0
        # the space check passed, the disk fills while writing: a clean error, no crash, nothing left behind
        (small / "fill").write_bytes(b"\0" * 60 * 1024)
        code = ("import sys, fdp_ppl.cli as c, fdp_ppl.cli.release as r; r.check_output_space = lambda a, n: None; "
                f"sys.exit(c.main({_release(data, small / 'r.nc', '--draws', '10')!r}))")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert res.returncode == 2 and "No space left on device" in res.stderr and "Traceback" not in res.stderr
        assert sorted(p.name for p in small.iterdir()) == ["fill"]
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)


# ------------------------------------------------------------------------------------------------ consistency
def test_a_pure_budget_refusing_a_gaussian_release_names_delta(tmp_path, data, capsys):
    led = tmp_path / "led.sqlite"
    argv = ["release", "--data", str(data), "--mechanism", "gaussian", "--delta", "1e-5", "--epsilon", "0.5",
            "--tau", "3", "--out", str(tmp_path / "r.nc"), "--ledger", str(led), "--budget", "3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "delta=0" in err and "--budget EPSILON,DELTA" in err and len(err.strip().splitlines()) == 1


def test_a_very_large_epsilon_warns(tmp_path, data, capsys):
    assert main(_release(data, tmp_path / "r.nc")[:-2] + ["--out", str(tmp_path / "big.nc")]) == 0
    assert "little privacy" not in capsys.readouterr().err
    argv = _release(data, tmp_path / "r2.nc")
    argv[argv.index("--epsilon") + 1] = "50"
    assert main(argv) == 0
    warn = [line for line in capsys.readouterr().err.splitlines() if "little privacy" in line]
    assert len(warn) == 1 and "epsilon = 50" in warn[0]


def test_credible_band_refuses_a_release(data):
    import fdp_ppl as fp
    from fdp_ppl.errors import SchemaError
    from fdp_ppl.inference import credible_band

    curves = xr.open_dataarray(data)
    basis = fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.uniform(K))
    tree = fp.release(fp.ICLPQRSpec(basis=basis, tau=3.0, n=6).fit(curves.values), fp.ICLP(1.0))
    with pytest.raises(SchemaError, match="fp.infer"):
        credible_band(tree)


def test_kde_reads_parquet(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "obs.parquet"
    pd.DataFrame({"x": np.linspace(0.1, 0.9, 30)}).to_parquet(path)
    assert main(["kde", "--data", str(path), "--var", "x", "--mechanism", "iclp", "--epsilon", "1", "--domain", "0",
                 "1", "--grid-size", "20", "--out", str(tmp_path / "k.nc")]) == 0
    assert main(["kde", "--data", str(path), "--var", "nope", "--mechanism", "iclp", "--epsilon", "1", "--domain",
                 "0", "1", "--out", str(tmp_path / "k2.nc")]) == 2
    err = capsys.readouterr().err
    assert "column 'nope' is not in" in err and "Traceback" not in err


def test_fpca_states_units_and_names_from_the_data(tmp_path, capsys):
    out = tmp_path / "f.nc"
    assert main(["fpca", "--data", "growth", "--k", "1", "--m", "4", "--epsilon", "1", "--tau", "200", "--out",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "tau              200 cm" in text
    tree = xr.open_datatree(out)
    assert (tree.attrs["t_name"], tree.attrs["t_units"], tree.attrs["value_units"]) == ("age", "years", "cm")
    from fdp_ppl.plots import _x_label

    assert _x_label(tree, tree["posterior"]["t"]).startswith("age (years)")


def test_ledger_piped_into_head_is_not_an_error(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "l.sqlite"
    led = PrivacyLedger.open(path, fp_budget(1000.0))
    for i in range(120):  # about 108 KB of table: more than a pipe's 64 KB buffer, so the writer meets the closed end
        led.spend(fp_budget(0.1), f"release {i} " + "x" * 800)
    code = f"import sys; from fdp_ppl.cli import main; sys.exit(main(['ledger', {str(path)!r}]))"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as head -1 does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and first.startswith(b"fdp-ppl ledger") and "Broken pipe" not in err


def fp_budget(eps):
    from fdp_ppl.accounting import PrivacyBudget

    return PrivacyBudget(eps)


# ------------------------------------------------------------------------------------------------ public centre
def test_release_takes_a_public_offset_and_states_the_shrinkage(tmp_path, capsys):
    base = ["release", "--data", "growth", "--mechanism", "iclp-qr", "--epsilon", "9"]
    assert main([*base, "--tau", "200", "--out", str(tmp_path / "raw.nc")]) == 0
    std = capsys.readouterr()
    warn = [line for line in std.err.splitlines() if "shrinks toward 0" in line]
    assert len(warn) == 1 and "--offset" in warn[0]
    assert "keeps 62%–93% of a constant curve" in std.out
    raw = xr.open_datatree(tmp_path / "raw.nc")["posterior"]["curve"].values[0, 0]
    # the same release around a public constant centre: shrinkage acts on deviations, no warning
    assert main([*base, "--tau", "60", "--offset", "150", "--out", str(tmp_path / "c.nc")]) == 0
    std = capsys.readouterr()
    assert "shrinks toward 0" not in std.err and "of a constant deviation" in std.out
    tree = xr.open_datatree(tmp_path / "c.nc")
    assert "--offset 150" in tree.attrs["public_offset"]
    centred = tree["posterior"]["curve"].values[0]
    from fdp_ppl.datasets import load_dataset

    truth = load_dataset("growth").mean("curve").values
    assert abs(centred[0, -1] - truth[-1]) < abs(raw[-1] - truth[-1]) / 3  # age 18: 172 cm, not 107
    # a public curve from a file, on the data's grid
    t = load_dataset("growth")["t"].values
    path = tmp_path / "ref.csv"
    path.write_text("t,value\n" + "\n".join(f"{a},{80 + 5 * a}" for a in t))
    assert main([*base, "--tau", "60", "--offset", str(path), "--out", str(tmp_path / "f.nc")]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.csv"
    bad.write_text("t,value\n0,1\n")
    for offset in (str(bad), "nan", str(tmp_path / "none.csv")):
        assert main([*base, "--tau", "60", "--offset", offset, "--out", str(tmp_path / "x.nc")]) == 2
        err = capsys.readouterr().err
        assert "--offset" in err and len(err.strip().splitlines()) == 1


def test_a_killed_runs_temporaries_are_removed_by_the_next_write(tmp_path, data, capsys):
    import subprocess
    import sys

    out = tmp_path / "r.nc"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / f".r.nc.{dead.pid}-abcdef012345.tmp.nc"  # what a run killed mid-write leaves
    orphan.write_bytes(b"half")
    alive = tmp_path / f".r.nc.{os.getppid()}-abcdef012345.tmp.nc"  # a run still writing: kept
    alive.write_bytes(b"busy")
    other = tmp_path / f".other.nc.{dead.pid}-abcdef012345.tmp.nc"  # another target's, killed too: removed as well
    other.write_bytes(b"x")
    assert main(_release(data, out)) == 0
    capsys.readouterr()
    assert not orphan.exists() and alive.exists() and not other.exists() and out.exists()


def test_fpca_delta_is_refused_for_uncertified_mcmc(tmp_path, capsys):
    argv = ["fpca", "--data", "growth", "--k", "2", "--m", "4", "--epsilon", "1", "--tau", "200", "--sampler", "gibbs",
            "--delta", "1e-10", "--out", str(tmp_path / "f.nc")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "uncertified MCMC" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "f.nc").exists()


def test_a_memory_error_is_one_line_not_a_traceback(monkeypatch, capsys):
    """A size no public check foresaw ends with one line and exit code 2."""
    import fdp_ppl.cli.ledger as ledger_cmd

    def boom(a):
        raise MemoryError

    monkeypatch.setattr(ledger_cmd, "run", boom)
    assert main(["ledger", "x.sqlite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fdp-ppl: error: not enough memory") and len(err.strip().splitlines()) == 1
