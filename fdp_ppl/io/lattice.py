"""Records on a public lattice, so that no arithmetic on them takes the CPU's subnormal slow path.

Why: on x86 (and most CPUs) an operation whose input or result is *subnormal* (``0 < |x| < 2^-1022``) is
handled by a microcode assist that is 10–100× slower than a normal one (Andrysco et al. 2015, "On subnormal
floating point and abnormal timing", IEEE S&P). One record of amplitude ``1e-160`` makes every product of
it with itself ``1e-320`` (subnormal); a sampler that evaluates ``tr(QᵀGQ)`` on the scatter matrix of
such records then runs measurably slower, which an observer of the run time sees (DESIGN invariant 9).
Flush-to-zero modes of the CPU are not reachable from NumPy, so the records themselves are made safe.

What: :func:`to_lattice` maps a value ``x`` (already clipped to a public bound ``scale``) to
``q · trunc(x / q)`` with the public quantum ``q = scale · 2^-LATTICE_BITS``: a record-by-record public map
(neighbours stay neighbours, the sensitivity argument is unchanged), which rounds towards zero (norms never
grow, so clipped records stay within their bound) and changes each value by less than ``q``. Every
non-zero lattice value has ``|x| >= q``; products of two have ``|x y| >= q²`` and the rounding unit of
a sum of such products is at least ``2^-52 q²``, so a sum of products of lattice values is exactly 0 or at
least ``2^-52 q²`` in magnitude (a float sum is a multiple of the smallest ulp of its terms) — normal for
every ``scale >= 2^-400`` (``2^-52 · 2^-880 · 2^-80 > 2^-1022``). :func:`flush_tiny` sets values below a
public threshold to 0 where a computed quantity (a kernel value ``exp(−d²/(2h²))`` of far-apart records,
a solver iterate) could itself become subnormal; the threshold ``TINY = 2^-400`` relative to the public
scale is far below the rounding error already in every such value (relative ``2^-53``).

Both are branch-free passes of fixed cost per element; they select (compare, copy) and never compute
with a value below the threshold, so a subnormal input does not slow them either. :func:`flush_tiny` runs as
one compiled loop (Numba, once loaded; a compare and a blend per element, no temporary) on a float64 array
laid out in C order, else as NumPy passes (abs, compare, copy): the same selection, the same bits.
"""

from __future__ import annotations

import sys

import numpy as np

#: bits of the lattice below the public bound: quantum ``q = scale · 2^-LATTICE_BITS``
LATTICE_BITS = 40
#: values below ``TINY · scale`` are set to 0 by :func:`flush_tiny` (``2^-400 ≈ 3.9e-121``)
TINY = 2.0**-400


def to_lattice(x, scale: float = 1.0) -> np.ndarray:
    """Round values towards zero onto the public lattice ``q Z``, ``q = scale · 2^-LATTICE_BITS``.

    Parameters
    ----------
    x : array_like, any shape
        Values already clipped to ``|x| <= scale`` (e.g. coefficient rows of norm <= 1, scale 1).
    scale : float
        The public bound (> 0): the lattice is relative to it.

    Returns
    -------
    ndarray, same shape, float64
        ``q · trunc(x / q)``: ``|result| <= |x|`` elementwise, ``|x − result| < q``, and every non-zero
        value has magnitude ``>= q`` (never subnormal for ``scale >= 2^-900``). A new array; the input is
        not changed.

    Source: Andrysco et al. (2015), "On subnormal floating point and abnormal timing" (why); module docstring.

    Examples
    --------
    >>> to_lattice([1e-160, 0.5, -0.25 - 2.0**-60]).tolist()
    [0.0, 0.5, -0.25]
    """
    q = float(scale) * 2.0**-LATTICE_BITS
    x = np.asarray(x, dtype=float)
    x = np.where(np.abs(x) >= q, x, 0.0)  # a selection, not arithmetic: values below q never reach the division
    return np.trunc(x / q) * q


def flush_tiny(x, scale: float = 1.0, out=None) -> np.ndarray:
    """Set values with ``|x| < TINY · scale`` to 0 (a fixed-cost pass, no data-dependent branch).

    Parameters
    ----------
    x : array_like, any shape
    scale : float
        Public scale of the values (e.g. ``k(0)`` for kernel values).
    out : ndarray, optional
        Written in place when given (may be ``x`` itself).

    Returns
    -------
    ndarray, same shape, float64

    Examples
    --------
    >>> flush_tiny([1e-300, 1e-100, 0.3]).tolist()
    [0.0, 1e-100, 0.3]
    """
    x = np.asarray(x, dtype=float)
    threshold = TINY * float(scale)
    kernel = _compiled_flush() if x.flags.c_contiguous else None
    if kernel is not None and (out is None or (
            out.dtype == np.float64 and out.shape == x.shape and out.flags.c_contiguous and out.flags.writeable)):
        # one pass, no temporaries: 4 NumPy passes (abs, compare, where) cost 2x a norm and product of the same
        # cache-sized block of curves (the mean's data pass)
        out = np.empty_like(x) if out is None else out
        kernel(x.reshape(-1), threshold, out.reshape(-1))
        return out
    small = np.abs(x) < threshold  # abs and compare are not slowed by subnormal inputs; no arithmetic
    if out is None:
        return np.where(small, 0.0, x)
    if out is not x:
        out[...] = x
    np.copyto(out, 0.0, where=small)
    return out


#: the compiled :func:`_flush_into` once made (False: Numba missing)
_COMPILED: dict = {}


def _compiled_flush():
    """The compiled :func:`_flush_into` when Numba is already loaded, else None: loading it costs more (1-3 s)
    than the loop saves on the flushes of a process that does not use Numba otherwise."""
    kernel = _COMPILED.get("flush")
    if kernel is None and "numba" in sys.modules:
        from .._numba import HAVE_NUMBA, njit

        kernel = _COMPILED["flush"] = njit(cache=True, nogil=True)(_flush_into) if HAVE_NUMBA else False
    return kernel or None


def _flush_into(x, threshold, out):  # pragma: no cover - compiled (_compiled_flush)
    """``out[i] = 0 if |x[i]| < threshold else x[i]`` (1-D, C order; ``out`` may be ``x``): a compare and a
    select, vectorised by LLVM to a blend (no branch on the data); NaN is kept (its compare is false)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = 0.0 if abs(v) < threshold else v


__all__ = ["LATTICE_BITS", "TINY", "flush_tiny", "to_lattice"]
