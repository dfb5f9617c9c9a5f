"""Faults around the command line lose nothing, buy nothing and say what happened (DESIGN invariants 9, 11, 12):
every output of every command passes one guard (never an existing file without --force, never an input or a
ledger even with it), every count a user types has a public upper bound checked before any work, temporaries of
killed runs are removed by the next run in their directory, and SIGINT / SIGTERM end with one line saying
whether the ledger was charged."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

from fdp_ppl.accounting import PrivacyLedger
from fdp_ppl.cli import build_parser, main
from fdp_ppl.cli.common import COUNT_LIMITS, UNBOUNDED_INTS, check_counts, count_limit, remove_orphans
from tests.helpers import REPO, child_env

K = 8


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(3)
    values = np.cos(np.linspace(0, 2, K))[None, :] + 0.2 * rng.standard_normal((6, K))
    path = tmp_path / "toy.nc"
    xr.Dataset({"y": (("curve", "s"), values)}, coords={"s": np.linspace(0.0, 1.0, K)}).to_netcdf(path)
    return path


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return parser, sub.choices


def _minimal_argv(command: str, subparser, tmp_path, **given) -> list[str]:
    """``command`` with every required argument filled by a placeholder (the guard and the count check run before
    the command reads anything, so placeholders never get read), the ``given`` ones by their value."""
    argv = [command]
    for act in subparser._actions:
        if act.dest in given:
            continue
        if not act.option_strings and act.dest != "help":  # a positional: a file the command would read
            argv.append(str(tmp_path / f"placeholder-{act.dest}.nc"))
        elif act.required:
            value = (act.choices and list(act.choices)[0]) or ("1" if act.type in (int, float) else "x")
            argv += [act.option_strings[0], *([str(value)] * (act.nargs if isinstance(act.nargs, int) else 1))]
    for dest, value in given.items():
        flag = "--" + dest.replace("_", "-")
        positional = next((a for a in subparser._actions if a.dest == dest and not a.option_strings), None)
        argv += [str(value)] if positional is not None else [flag, str(value)]
    return argv


def _one_line(err: str) -> str:
    assert err.startswith("fdp-ppl: error:") and "\n" not in err.strip() and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------------------- one guard for every output
def test_every_command_with_an_output_refuses_an_existing_file_a_ledger_and_its_input(tmp_path, capsys):
    """Every command (audit included) is checked: without --force an existing file is kept; a SQLite ledger and
    the command's own input are never replaced, even with --force; the file's bytes are unchanged."""
    _, commands = _subparsers()
    led = tmp_path / "led.sqlite"
    PrivacyLedger.open(led, __import__("fdp_ppl").PrivacyBudget(3.0))
    ledger_bytes = led.read_bytes()
    existing = tmp_path / "old.nc"
    existing.write_bytes(b"keep me")
    with_out = {name for name, sp in commands.items() if any(a.dest == "out" for a in sp._actions)}
    assert {"release", "demo", "infer", "kde", "machine", "fpca", "audit"} <= with_out
    for name in sorted(with_out):
        sp = commands[name]
        cases = [({"out": existing}, "already exists"), ({"out": led, "force": ""}, "ledger")]
        inputs = [a.dest for a in sp._actions if a.dest in ("data", "release")]
        if inputs:
            cases.append(({"out": existing, inputs[0]: existing, "force": ""}, "input data"))
        for given, needle in cases:
            force = given.pop("force", None) is not None
            argv = _minimal_argv(name, sp, tmp_path, **given) + (["--force"] if force else [])
            assert main(argv) == 2, (name, argv)
            err = _one_line(capsys.readouterr().err)
            assert needle in err, (name, err)
    assert existing.read_bytes() == b"keep me" and led.read_bytes() == ledger_bytes
    PrivacyLedger.open(led).verify()  # still a valid ledger


def test_audit_out_onto_a_ledger_is_refused_and_the_ledger_still_opens(tmp_path, capsys):
    led = tmp_path / "led.sqlite"
    PrivacyLedger.open(led, __import__("fdp_ppl").PrivacyBudget(3.0))
    before = led.read_bytes()
    for extra in ([], ["--force"]):
        assert main(["audit", "--mechanism", "frl", "--samples", "20", "--out", str(led), *extra]) == 2
        assert "ledger" in _one_line(capsys.readouterr().err)
    assert led.read_bytes() == before
    with sqlite3.connect(led) as con:  # "file is not a database" after the old audit replaced it
        con.execute("select count(*) from sqlite_master").fetchone()


def test_a_further_output_named_like_one_passes_the_same_guard(tmp_path):
    """A dest ending in ``_out`` (a file for the data holder, say) is an output too: the rules need no list."""
    import argparse

    from fdp_ppl.cli.common import CLIError, check_outputs

    led = tmp_path / "led.sqlite"
    PrivacyLedger.open(led, __import__("fdp_ppl").PrivacyBudget(3.0))
    kept = tmp_path / "counts.txt"
    kept.write_text("x")
    for value, force, needle in ((kept, False, "already exists"), (led, True, "ledger"),
                                 (tmp_path / "r.nc", False, "same file")):
        with pytest.raises(CLIError, match=needle):
            check_outputs(argparse.Namespace(out=tmp_path / "r.nc", plot=None, holder_out=value, force=force))
    check_outputs(argparse.Namespace(out=tmp_path / "r.nc", plot=None, holder_out=kept, force=True))


# ----------------------------------------------------------------------------- sizes
def test_every_integer_option_has_a_public_bound_stated_and_checked_before_any_work(tmp_path, capsys):
    """A sweep of the parser: each integer option is bounded (its help says so), and its bound plus one is refused
    at once with one line naming the limit (placeholders for the data: nothing is read)."""
    _, commands = _subparsers()
    swept = 0
    for name, sp in commands.items():
        for act in sp._actions:
            if act.type is not int:
                continue
            limit = count_limit({"svm": "machine"}.get(name, name), act.dest)
            if act.dest in UNBOUNDED_INTS:
                assert limit is None
                continue
            assert limit is not None, f"fdp-ppl {name} {act.option_strings[0]} has no public upper bound"
            assert f"at most {limit:,}" in act.help, (name, act.dest, act.help)
            argv = _minimal_argv(name, sp, tmp_path, **{act.dest: limit + 1})
            start = time.perf_counter()
            assert main(argv) == 2, argv
            err = _one_line(capsys.readouterr().err)
            assert act.option_strings[0] in err and f"{limit:,}" in err, err
            assert time.perf_counter() - start < 30.0  # refused before any work (loose: a first import under load)
            swept += 1
    assert swept >= 25  # release 6, kde 6, machine 4 (+ svm 4), fpca 6, infer 4, audit 3
    assert set(COUNT_LIMITS) >= {"chains", "samples", "timing_calls", "draws"}


def test_the_bound_itself_is_accepted_and_the_reported_hangs_are_refused(tmp_path, capsys):
    import argparse

    for dest, limit in COUNT_LIMITS.items():
        check_counts(argparse.Namespace(**{dest: limit}), "release", [dest])  # at the bound: not refused
    for argv, flag in ((["infer", str(tmp_path / "r.nc"), "--chains", "1000000000", "--out", str(tmp_path / "p.nc")],
                        "--chains"),
                       (["audit", "--mechanism", "frl", "--timing-calls", str(10**12)], "--timing-calls"),
                       (["audit", "--mechanism", "frl", "--samples", str(10**12)], "--samples")):
        assert main(argv) == 2
        err = _one_line(capsys.readouterr().err)
        assert flag in err and "limit" in err and "consistent" not in err


# ----------------------------------------------------------------------------- temporaries of killed runs
def _dead_pid() -> int:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def test_temporaries_of_dead_writers_are_removed_whatever_their_target(tmp_path, data, capsys):
    import fcntl

    pid = _dead_pid()
    out_dir = tmp_path / "outs"
    out_dir.mkdir()
    orphans = [out_dir / f".other.nc.{pid}-abcdef012345.tmp.nc", out_dir / f".fig.png.{pid}-0123456789ab.tmp.png",
               out_dir / f".noext.{pid}-0123456789ab.tmp"]
    alive = out_dir / f".r.nc.{os.getppid()}-abcdef012345.tmp.nc"  # a live process's: kept
    locked = out_dir / f".s.nc.{pid}-abcdef012345.tmp.nc"  # a writer whose pid we cannot see, holding its lock
    not_ours = [out_dir / ".other.nc.tmp", out_dir / f"other.nc.{pid}-abcdef012345.tmp.nc",
                out_dir / f".other.nc.{pid}-xyz.tmp.nc", out_dir / f".a.nc.{pid}-abcdef012345.tmp.png"]
    for p in (*orphans, alive, locked, *not_ours):
        p.write_bytes(b"half")
    fd = os.open(locked, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert main(["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "3",
                     "--out", str(out_dir / "r.nc")]) == 0
    finally:
        os.close(fd)
    capsys.readouterr()
    assert not any(p.exists() for p in orphans)
    assert alive.exists() and locked.exists() and all(p.exists() for p in not_ours)
    assert remove_orphans(out_dir) == [locked]  # its lock released: now it is an orphan too


def test_a_sigkilled_write_leaves_a_temporary_that_the_next_run_removes(tmp_path, data, capsys):
    """A real kill -9 while the file is being written (the write is held open), then another command writing
    another file in the same directory."""
    script = ("import sys, time\n"
              "import fdp_ppl.cli.common as c\n"
              "def slow(tree):\n"
              "    print('WRITING', file=sys.stderr, flush=True); time.sleep(120)\n"
              "c._netcdf_bytes = slow\n"
              "from fdp_ppl.cli import main\n"
              f"sys.exit(main(['release', '--data', {str(data)!r}, '--mechanism', 'iclp-qr', '--epsilon', '1', "
              f"'--tau', '3', '--out', {str(tmp_path / 'killed.nc')!r}]))\n")
    p = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=child_env(), stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if "WRITING" in line:
                break
        left = [q for q in tmp_path.iterdir() if q.name.startswith(".killed.nc.")]
        assert len(left) == 1
        p.kill()
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert left[0].exists()  # SIGKILL runs no cleanup
    assert main(["release", "--data", str(data), "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "3",
                 "--out", str(tmp_path / "another.nc")]) == 0
    capsys.readouterr()
    assert not left[0].exists() and not (tmp_path / "killed.nc").exists()
    assert not [q for q in tmp_path.iterdir() if ".tmp" in q.name]


# ----------------------------------------------------------------------------- Ctrl-C and SIGTERM
def _interrupt(tmp_path, data, where: str, sig: int):
    """A release whose data loading (before the charge) or writing (after it) is held open, then ``sig``."""
    target = {"load": "import fdp_ppl.cli.release as m\nm.load_data = slow\n",
              "write": "import fdp_ppl.cli.common as m\nm._netcdf_bytes = slow\n"}[where]
    led, out = tmp_path / "led.sqlite", tmp_path / "r.nc"
    script = ("import sys, time\n"
              "def slow(*args, **kwargs):\n"
              "    print('HELD', file=sys.stderr, flush=True); time.sleep(120)\n"
              f"{target}"
              "from fdp_ppl.cli import main\n"
              f"sys.exit(main(['release', '--data', {str(data)!r}, '--mechanism', 'iclp-qr', '--epsilon', '1', "
              f"'--tau', '3', '--out', {str(out)!r}, '--ledger', {str(led)!r}, '--budget', '3']))\n")
    p = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=child_env(), stderr=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if "HELD" in line:
                break
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, stdout, stderr, PrivacyLedger.open(led).spent.epsilon, out


@pytest.mark.parametrize("where, sig", [("write", signal.SIGINT), ("load", signal.SIGTERM)])
def test_an_interrupted_release_says_in_one_line_whether_it_was_charged(tmp_path, data, where, sig):
    code, stdout, stderr, spent, out = _interrupt(tmp_path, data, where, sig)
    assert code == 128 + sig  # 130 for Ctrl-C, 143 for SIGTERM
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr and stdout == "", stderr
    assert lines[0].startswith("fdp-ppl: " + ("interrupted (Ctrl-C)" if sig == signal.SIGINT else "terminated"))
    if where == "write":  # after the charge: charged, nothing published, no temporary left
        assert spent == 1.0 and "was charged epsilon 1" in lines[0]
    else:
        assert spent == 0.0 and "nothing was charged" in lines[0]
    assert "nothing was written" in lines[0] and not out.exists()
    assert not [q for q in tmp_path.iterdir() if ".tmp" in q.name]
