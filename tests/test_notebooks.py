"""Execute every notebook top to bottom in fast mode (FDP_PPL_FAST=1), in memory.

The committed notebooks hold the outputs of a full-mode run (`make notebooks`, notebooks/execute.py); these tests
clear them, execute the copy in memory and never write it back.
"""

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_fast_mode(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("FDP_PPL_FAST", "1")
    monkeypatch.setenv("FDP_PPL_OUTPUT_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", str(path.parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    committed = path.read_bytes()
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # the committed full-mode outputs are not inputs: run from a clean slate, in memory
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # every figure must name its axes and keep its legend entries apart (tests/figure_checks.py)
    checks = Path(__file__).with_name("figure_checks.py")
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        f"import importlib.util as _u\n_s = _u.spec_from_file_location('figure_checks', {str(checks)!r})\n"
        "_m = _u.module_from_spec(_s); _s.loader.exec_module(_m); _m.install()"))
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    assert path.read_bytes() == committed  # fast mode never writes the notebook back
