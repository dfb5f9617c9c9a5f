"""Sphinx configuration of the fdp_ppl documentation (MyST-NB + PyData theme).

The notebooks stay in ``notebooks/``; at build time they are copied, with the figures they
write (``notebooks/figures``), into ``docs/_generated/notebooks`` (git-ignored), so their
stored outputs and relative image paths render unchanged; they are not executed. The figures of
``choosing.md`` are made by the package at build time (``docs/choosing_figures.py``: public plans only).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GENERATED = DOCS / "_generated"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")


def _copy_notebooks() -> None:
    """Copy notebooks/*.ipynb and notebooks/figures into _generated/notebooks (only when changed)."""
    src, dst = ROOT / "notebooks", GENERATED / "notebooks"
    dst.mkdir(parents=True, exist_ok=True)
    wanted = {p.name for p in src.glob("*.ipynb")}
    for old in dst.glob("*.ipynb"):
        if old.name not in wanted:
            old.unlink()
    for nb in sorted(src.glob("*.ipynb")):
        target = dst / nb.name
        if not target.exists() or target.read_bytes() != nb.read_bytes():
            shutil.copy2(nb, target)
    if (src / "figures").is_dir():
        shutil.copytree(src / "figures", dst / "figures", dirs_exist_ok=True)


def _cli_help() -> None:
    """Write the ``--help`` text of the command line and of each subcommand to _generated/cli/."""
    out = GENERATED / "cli"
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, COLUMNS="100")
    for name in ("", "release", "plan", "demo", "ledger", "fpca", "kde", "svm", "infer", "audit"):
        cmd = [sys.executable, "-m", "fdp_ppl", *([name] if name else []), "--help"]
        text = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
        (out / f"{name or 'main'}.txt").write_text(text)


def _choosing_figures() -> None:
    """Make the figures of choosing.md with the package (docs/choosing_figures.py, ~15 s of CPU) into
    _generated/choosing/, again only when the script or the package's accuracy module is newer than them."""
    out = GENERATED / "choosing"
    script = DOCS / "choosing_figures.py"
    names = ("width_vs_epsilon.png", "tau_and_basis.png", "families.png")
    sources = (script, ROOT / "fdp_ppl" / "releasing" / "accuracy.py")
    newest = max(p.stat().st_mtime for p in sources)
    if all((out / n).exists() and (out / n).stat().st_mtime >= newest for n in names):
        return
    env = dict(os.environ, FDP_PPL_FAST="1", PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, str(script), str(out)], cwd=ROOT, env=env, check=True)


_copy_notebooks()
_cli_help()
_choosing_figures()

from fdp_ppl import __version__  # noqa: E402

project = "fdp_ppl"
author = "fdp_ppl contributors"
copyright = "fdp_ppl contributors"
release = version = __version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_design",
    "sphinx_copybutton",
]

# .rst first: autosummary writes its stub pages (reStructuredText) with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "_templates",
                    "specs"]  # implementation notes for contributors, read as files (docs/DESIGN.md)
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["custom.css"]

# --- MyST / MyST-NB: render stored outputs, never execute ---------------------------------------------
nb_execution_mode = "off"
nb_render_image_options = {"width": "100%"}
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist", "smartquotes", "substitution"]
myst_heading_anchors = 3

# --- API reference --------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_class_signature = "separated"
autodoc_preserve_defaults = True
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
napoleon_preprocess_types = False
# An attribute name shared by several documented classes (``shape``, ``d``, ``grid``) makes napoleon's ``:ivar:``
# types ambiguous cross-references; ambiguity is not an error (a missing target still is, with -W)
suppress_warnings = ["ref.python"]

# --- HTML -----------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"fdp_ppl {version}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_context = {"default_mode": "light"}
html_show_sourcelink = False
