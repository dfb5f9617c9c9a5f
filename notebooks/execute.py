"""Execute notebooks in full mode and store their outputs in place (``make notebooks``).

    python notebooks/execute.py                      # every notebooks/*.ipynb
    python notebooks/execute.py notebooks/03_*.ipynb # only some

Each notebook runs top to bottom in its full mode (``FDP_PPL_FAST`` unset, ``PYTENSOR_FLAGS=mode=CVM``) with the
notebook directory as working directory, so it rewrites its committed results (``notebooks/results``) and figures
(``notebooks/figures``). Figures are kept as inline PNG outputs: the kernel uses matplotlib's inline backend, which
like ``Agg`` needs no display (``MPLBACKEND=Agg`` would make ``plt.show()`` display nothing).

The executed notebook is written back only when every cell succeeded; on a cell error the file is left untouched
and the script exits non-zero. Before writing, outputs are stripped of machine-specific noise: ANSI escapes,
carriage-return progress bars, widget outputs and execution timestamps; absolute paths of the repository are
replaced by relative ones (the notebooks already print relative paths: this is a safety net).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NB_DIR = Path(__file__).resolve().parent
ROOT = NB_DIR.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
CELL_FILE = re.compile(r"/tmp/ipykernel_\d+/\d+\.py")  # where a warning raised in a cell says it came from
WIDGET = "application/vnd.jupyter.widget-view+json"
SIZE_WARNING = 2_000_000  # bytes per notebook


def full_mode_environment() -> None:
    """Environment the kernel inherits: full mode, compiled-free PyTensor, headless inline figures."""
    for var in ("FDP_PPL_FAST", "FDP_PPL_OUTPUT_DIR"):
        os.environ.pop(var, None)
    os.environ["PYTENSOR_FLAGS"] = os.environ.get("PYTENSOR_FLAGS") or "mode=CVM"
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ["PYTHONPATH"] = os.pathsep.join(  # this checkout's fdp_ppl and studies (notebooks/studies)
        p for p in (str(ROOT), str(ROOT / "notebooks"), os.environ.get("PYTHONPATH")) if p)


def _clean_text(text: str, nb_dir: Path) -> str:
    text = CELL_FILE.sub("<cell>", ANSI.sub("", text))
    # a progress bar redraws its line with '\r': keep what the line finally showed
    text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.replace("\r\n", "\n").split("\n"))
    for absolute in (str(nb_dir), str(ROOT)):
        rel = os.path.relpath(absolute, nb_dir)
        text = text.replace(absolute + os.sep, "" if rel == "." else rel + os.sep).replace(absolute, rel)
    return text


def clean(nb, nb_dir: Path) -> None:
    """Strip volatile, machine-specific parts of the outputs in place."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        outputs = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                out.text = _clean_text(out.text, nb_dir)
                if not out.text.strip():
                    continue
            elif out.output_type in ("display_data", "execute_result"):
                data = out.get("data", {})
                if WIDGET in data:  # a progress-bar widget: nothing to see without a live kernel
                    data.pop(WIDGET)
                    data.pop("text/plain", None)
                    if not data:
                        continue
                for mime in ("text/plain", "text/html", "text/markdown"):
                    if mime in data:
                        data[mime] = _clean_text(data[mime], nb_dir)
            elif out.output_type == "error":
                out.traceback = [ANSI.sub("", line) for line in out.traceback]
            outputs.append(out)
        cell.outputs = outputs


def execute(path: Path, timeout: int | None) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t0
    clean(nb, path.parent)
    tmp = path.with_name(path.name + ".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(path)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--timeout", type=int, default=None, help="seconds per cell (default: no limit)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(NB_DIR.glob("*.ipynb"))
    full_mode_environment()
    total, failed = 0.0, []
    for path in paths:
        print(f"{path.relative_to(ROOT)}: running (full mode) ...", flush=True)
        t0 = time.perf_counter()
        try:
            elapsed = execute(path, args.timeout)
        except CellExecutionError as err:
            elapsed = time.perf_counter() - t0
            print(f"{path.relative_to(ROOT)}: FAILED after {elapsed:.0f} s, left unchanged\n{ANSI.sub('', str(err))}",
                  file=sys.stderr, flush=True)
            failed.append(path.name)
            total += elapsed
            continue
        total += elapsed
        size = path.stat().st_size
        note = f"  (warning: over {SIZE_WARNING / 1e6:g} MB)" if size > SIZE_WARNING else ""
        print(f"{path.relative_to(ROOT)}: {elapsed:.0f} s ({elapsed / 60:.1f} min), {size / 1e3:.0f} kB{note}",
              flush=True)
    print(f"total: {total:.0f} s ({total / 60:.1f} min) for {len(paths)} notebook(s)"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
