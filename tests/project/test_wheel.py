"""The built wheel holds only what users call: the package ``fdp_ppl`` (every module, the shipped datasets) and
its dist-info; never the studies, notebooks, tests or benchmarks of the checkout.

The wheel is built from a copy of the checkout (without ``.git`` and build leftovers, so a stale ``build/``
directory can neither hide nor add a file) with the environment's setuptools and no network
(``pip wheel --no-build-isolation``). About 3-10 s.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fdp_ppl"
#: names that must not appear as any component of a path in the wheel
NOT_SHIPPED = {"studies", "experiments", "notebooks", "tests", "benchmarks", "models", "docs"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools")
    tmp = tmp_path_factory.mktemp("wheel")
    src, out = tmp / "src", tmp / "dist"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__",
                                                              ".pytest_cache", "_build", "_generated"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                          "--no-index", "-q", "-w", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    (path,) = out.glob("fdp_ppl-*.whl")
    return path


@pytest.fixture(scope="module")
def wheel_files(wheel) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def _offenders(names) -> list[str]:
    """Wheel entries outside ``fdp_ppl/`` and the dist-info, or with a path component that is not shipped."""
    return [n for n in names if not (n.startswith("fdp_ppl/") or n.split("/")[0].endswith(".dist-info"))
            or NOT_SHIPPED & set(n.split("/")[:-1])]


def test_offender_finder_finds_what_must_not_ship():
    names = ["fdp_ppl/__init__.py", "fdp_ppl-0.1.0.dist-info/RECORD", "studies/fpca.py",
             "fdp_ppl/experiments/fpca.py", "notebooks/studies/kde.py", "tests/test_x.py", "fdp_ppl/tests/x.py"]
    assert _offenders(names) == names[2:]


def test_wheel_holds_only_the_package_and_its_metadata(wheel_files):
    assert not _offenders(wheel_files), "not for users:\n" + "\n".join(_offenders(wheel_files))
    assert {n.split("/")[0] for n in wheel_files} == {"fdp_ppl", "fdp_ppl-0.1.0.dist-info"}


def test_wheel_holds_every_module_and_the_shipped_datasets(wheel_files):
    shipped = set(wheel_files)
    modules = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert modules and not modules - shipped, sorted(modules - shipped)
    data = {p.relative_to(ROOT).as_posix() for p in (PACKAGE / "datasets" / "data").iterdir()
            if p.suffix == ".nc" or p.name in ("README.md", "LICENSE")}
    assert {"fdp_ppl/datasets/data/dti.nc", "fdp_ppl/datasets/data/LICENSE"} <= data
    assert not data - shipped, sorted(data - shipped)
    assert "fdp_ppl/py.typed" in shipped


def test_wheel_declares_the_command_line(wheel, wheel_files):
    (name,) = [n for n in wheel_files if n.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(wheel) as z:
        entry_points = configparser.ConfigParser()
        entry_points.read_string(z.read(name).decode())
    assert entry_points["console_scripts"]["fdp-ppl"] == "fdp_ppl.cli:main"
