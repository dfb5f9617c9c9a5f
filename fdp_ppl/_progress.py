"""Progress of the command line's long steps, for the person at the terminal.

:func:`stage` wraps one step (loading, fitting, compiling and drawing, writing,
plotting). On a terminal it shows a spinner with the step's name while it runs
and, for a step that took longer than ``after`` seconds, leaves one dim line
with its duration. Elsewhere (a pipe, a log, the tests) it prints nothing,
unless ``FDP_PPL_PROGRESS=1`` asks for plain lines (``fdp-ppl: <step> ...`` at
the start and ``fdp-ppl: <step>: <seconds> s`` at the end);
``FDP_PPL_PROGRESS=0`` turns it off everywhere.

Progress goes to stderr and names steps only: it never contains a number
computed from the data (the data holder's lines are printed separately).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

PROGRESS_ENV = "FDP_PPL_PROGRESS"
PROG = "fdp-ppl"


def progress_mode() -> str | None:
    """``"spinner"`` on a terminal, ``"lines"`` with ``FDP_PPL_PROGRESS=1``, None otherwise (or with ``=0``)."""
    value = os.environ.get(PROGRESS_ENV, "").strip()
    if value == "0":
        return None
    if value == "1":
        return "lines"
    stream = sys.stderr
    try:
        return "spinner" if stream is not None and stream.isatty() else None
    except (AttributeError, ValueError):  # a closed or replaced stream
        return None


@contextlib.contextmanager
def stage(message: str, *, after: float = 1.0):
    """Show ``message`` while the block runs (see the module docstring).

    Parameters
    ----------
    message : str
        The step, e.g. ``"drawing the release"``; no data-derived numbers.
    after : float
        Seconds: on a terminal, a step that took longer leaves a line with its duration.
    """
    mode = progress_mode()
    if mode is None:
        yield
        return
    t0 = time.perf_counter()
    if mode == "lines":
        print(f"{PROG}: {message} ...", file=sys.stderr, flush=True)
        yield
        print(f"{PROG}: {message}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(stderr=True)
    with console.status(Text(f"{message} ...")):
        yield
    elapsed = time.perf_counter() - t0
    if elapsed >= after:
        console.print(Text(f"{message}: {elapsed:.1f} s", style="dim"))


__all__ = ["stage", "progress_mode", "PROGRESS_ENV"]
