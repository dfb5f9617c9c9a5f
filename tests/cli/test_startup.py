"""``fdp-ppl --help`` answers at once: building the parser imports no heavy library (timed in
benchmarks/bench_cli.py, not here)."""

import subprocess
import sys

#: importlib.metadata (0.1-0.2 s): the version is read only when asked for (fdp_ppl._version, --version)
HEAVY = ("numpy", "xarray", "scipy", "pymc", "pytensor", "pandas", "matplotlib", "opendp", "importlib.metadata")


def test_help_of_every_command_imports_nothing_heavy():
    code = ("import sys, contextlib, io\n"
            "from fdp_ppl.cli import COMMANDS, main\n"
            "for cmd in ([], *[[n] for n in COMMANDS]):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main([*cmd, '--help']) == 0, cmd\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]", f"--help imported {res.stdout.strip()}"


def test_the_command_line_is_a_package_with_one_module_per_command():
    """A reader finds a command by its name: ``fdp_ppl/cli/<command>.py`` with ``add_subparser`` and ``run``,
    over one shared module; no flat ``cli_*.py`` module is left at the package's top."""
    import importlib
    from pathlib import Path

    import fdp_ppl
    from fdp_ppl.cli import ALIASES, COMMANDS, build_parser

    top = Path(fdp_ppl.__file__).parent
    assert (top / "cli").is_dir() and not list(top.glob("cli*.py"))
    files = {p.stem for p in (top / "cli").glob("*.py")}
    assert files == {"__init__", "common", *COMMANDS}
    for name in COMMANDS:
        mod = importlib.import_module(f"fdp_ppl.cli.{name}")
        assert callable(mod.add_subparser) and callable(mod.run), name
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(COMMANDS) | set(ALIASES)  # a former name (svm) is an alias of its command
    assert set(ALIASES.values()) <= set(COMMANDS)


def test_the_version_is_read_only_when_asked_for():
    """``import fdp_ppl`` does not read the installed metadata; ``fp.__version__`` and ``fdp-ppl --version`` (first
    or after another flag) give the installed version."""
    code = ("import sys, fdp_ppl as fp\n"
            "assert 'importlib.metadata' not in sys.modules\n"
            "from importlib.metadata import version\n"
            "assert fp.__version__ == version('fdp-ppl'), fp.__version__\n"
            "from fdp_ppl._version import __version__\n"
            "assert __version__ == fp.__version__\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    from fdp_ppl import __version__

    for argv in (["--version"], ["--version", "--help"]):
        res = subprocess.run([sys.executable, "-m", "fdp_ppl", *argv], capture_output=True, text=True, timeout=60)
        assert (res.returncode, res.stdout.strip(), res.stderr) == (0, f"fdp-ppl {__version__}", ""), argv
