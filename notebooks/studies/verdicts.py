"""The "reproduction at a glance" table that opens every reproduction notebook.

One row per printed number (or claim) of a paper: the paper's value, ours and a
verdict — "matches within x%", "differs by x%: why", or "not reproducible: why".
The verdict is computed from the numbers, never typed in, so a notebook whose
results move cannot keep a stale verdict.
"""

from __future__ import annotations

import math

import pandas as pd

#: Relative difference under which a number "matches" unless a caller passes another tolerance.
DEFAULT_TOLERANCE = 0.05


def relative_difference(ours: float, paper: float) -> float:
    """``ours / paper − 1`` (NaN when either is missing or the paper's value is 0)."""
    try:
        ours, paper = float(ours), float(paper)
    except (TypeError, ValueError):
        return math.nan
    if not (math.isfinite(ours) and math.isfinite(paper)) or paper == 0:
        return math.nan
    return ours / paper - 1.0


def verdict(ours, paper, *, tolerance: float = DEFAULT_TOLERANCE, why: str = "") -> str:
    """Verdict on one number.

    Parameters
    ----------
    ours, paper : float or None
        Our value and the paper's printed value (None/NaN: the paper prints none).
    tolerance : float
        Largest relative difference called a match (default 5%).
    why : str
        Reason appended to a "differs" or "not reproducible" verdict.

    Returns
    -------
    str
        ``"matches within x%"``, ``"differs by x%"`` (+ why), or
        ``"not reproducible"`` (+ why) when the paper prints no number.
    """
    r = relative_difference(ours, paper)
    if math.isnan(r):
        return "not reproducible" + (f": {why}" if why else "")
    pct = 100.0 * abs(r)
    if abs(r) <= tolerance:
        return f"matches within {max(pct, 0.1):.1f}%" if pct >= 0.05 else "matches (< 0.1%)"
    return f"differs by {100.0 * r:+.0f}%" + (f": {why}" if why else "")


def range_verdict(rel_diffs, *, tolerance: float = DEFAULT_TOLERANCE, why: str = "") -> str:
    """Verdict on a group of cells from their relative differences ``ours/paper − 1``:
    "matches within x%" when every cell is within ``tolerance`` (x the largest), else
    "differs: a% to b%" with the range of the differences."""
    vals = [float(v) for v in rel_diffs if v is not None and math.isfinite(float(v))]
    if not vals:
        return "not reproducible" + (f": {why}" if why else "")
    worst = max(abs(v) for v in vals)
    if worst <= tolerance:
        return f"matches within {max(100 * worst, 0.1):.1f}%"
    return f"differs: {100 * min(vals):+.0f}% to {100 * max(vals):+.0f}%" + (f": {why}" if why else "")


def glance(rows) -> pd.DataFrame:
    """The opening table of a reproduction notebook.

    Parameters
    ----------
    rows : iterable of dict
        Keys ``item`` (what is compared, with the paper's table/figure), ``paper``
        (printed value or text), ``ours`` and ``verdict``.

    Returns
    -------
    pandas.DataFrame
        Columns ``item, paper, ours, verdict``; index 1..n.
    """
    df = pd.DataFrame(list(rows), columns=["item", "paper", "ours", "verdict"])
    df.index = range(1, len(df) + 1)
    return df


def fmt(x, digits: int = 4) -> str:
    """A number for the glance table (``—`` for missing)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(x):
        return "—"
    return f"{x:.{digits}g}"


__all__ = ["DEFAULT_TOLERANCE", "relative_difference", "verdict", "range_verdict", "glance", "fmt"]
