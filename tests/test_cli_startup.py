"""``fdp-ppl --help`` answers at once: building the parser imports no heavy library (timed in
benchmarks/bench_cli.py, not here)."""

import subprocess
import sys

HEAVY = ("numpy", "xarray", "scipy", "pymc", "pytensor", "pandas", "matplotlib", "opendp")


def test_help_of_every_command_imports_nothing_heavy():
    code = ("import sys, contextlib, io\n"
            "from fdp_ppl.cli import main, _SUBCOMMANDS\n"
            "for cmd in ([], ['release'], ['demo'], ['ledger'], *[[n] for n, _ in _SUBCOMMANDS]):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main([*cmd, '--help']) == 0, cmd\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]", f"--help imported {res.stdout.strip()}"
