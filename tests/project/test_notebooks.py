"""Execute every notebook top to bottom in fast mode (FDP_PPL_FAST=1), in memory.

The committed notebooks hold the outputs of a full-mode run (`make notebooks`, notebooks/execute.py); these tests
clear them, execute the copy in memory and never write it back.
"""

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_fast_mode(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("FDP_PPL_FAST", "1")
    monkeypatch.setenv("FDP_PPL_OUTPUT_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(path.parents[1]), str(path.parent),  # fdp_ppl, studies
                                                      os.environ.get("PYTHONPATH", ""))))
    committed = path.read_bytes()
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # the committed full-mode outputs are not inputs: run from a clean slate, in memory
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # every figure must name its axes and keep its legend entries apart (tests/project/figure_checks.py)
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


# --------------------------------------------------------------------------- prose against stored outputs
def _markdown(path) -> str:
    import json

    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")


def _results(name: str):
    import pandas as pd

    return pd.read_csv(NOTEBOOKS[0].parent / "results" / name)


def test_no_notebook_drops_incomplete_records():
    """Dropping incomplete records makes n depend on the data (the command line refuses it): no notebook may."""
    import json

    for path in NOTEBOOKS:
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert "drop_incomplete=True" not in code, path.name


def test_inference_notebook_prose_matches_its_stored_results():
    """Numbers and sampler names quoted in notebook 06's prose are those of its committed full-mode results."""
    import re

    nb = next(p for p in NOTEBOOKS if p.stem.startswith("06_"))
    text = " ".join(_markdown(nb).split())
    diag = _results("inference_diagnostics.csv").set_index(_results("inference_diagnostics.csv").columns[0])
    gp = next(i for i in diag.index if str(i).startswith("GP"))
    if diag.loc[gp, "sampler"] == "exact":  # the stored run drew the GP posterior exactly: the prose must say so
        assert "NUTS then samples" not in text and "exactly, without MCMC" in text
    reps = _results("inference_simulation_replicates.csv")
    iclp = reps[reps["prior"].str.startswith("ICLP")].sort_values("replicate")
    summ = _results("inference_simulation.csv").set_index("prior").loc[iclp["prior"].iloc[0]]
    m = re.search(r"from about ([\d.]+) to ([\d.]+) in the (\d+) full-mode replicates", text)
    assert m, "the range of the error ratio is quoted"
    assert float(m.group(1)) == pytest.approx(iclp["ratio"].min(), abs=0.01)
    assert float(m.group(2)) == pytest.approx(iclp["ratio"].max(), abs=0.05)
    assert int(m.group(3)) == len(iclp)
    m = re.search(r"full-mode ratios ([\d.]+), ([\d.]+), ([\d.]+)", text)
    assert m, "the fast mode's replicates are quoted"
    assert [float(x) for x in m.groups()] == pytest.approx(iclp["ratio"].iloc[:3].round(2).tolist(), abs=0.006)
    m = re.search(r"([\d.]+) ± ([\d.]+) over this notebook's (\d+) full-mode replicates \(median ([\d.]+), (\d+) of "
                  r"(\d+) below 1", text)
    assert m, "the notebook's mean error ratio is quoted"
    mean, se, k, median, below, k2 = m.groups()
    assert float(mean) == pytest.approx(summ["mean error ratio"], abs=0.006)
    assert float(se) == pytest.approx(summ["ratio se"], abs=0.006)
    assert int(k) == int(k2) == int(summ["replicates"])
    assert float(median) == pytest.approx(summ["median error ratio"], abs=0.006)
    assert int(below) == round(summ["share ratio < 1"] * summ["replicates"])
