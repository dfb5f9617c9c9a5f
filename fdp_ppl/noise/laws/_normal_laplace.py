"""Compiled elementwise kernels of the Normal–Laplace convolution (:class:`~fdp_ppl.noise.laws.product.Laplace`):
its log-density, the weights and truncated-normal constants of the posterior of a Normal-prior centre, and the
posterior draw itself — each one pass over the elements with no temporaries, where the numpy path makes about
fourteen passes (two ``erfcx``, two ``exp``, two ``log`` and their ``where``/``add`` a half).

The arithmetic is the numpy path's, operation by operation and in the same order (see
:meth:`~fdp_ppl.noise.laws.product.Laplace._normal_terms`); ``erfcx``, ``ndtri_exp`` and ``expit`` are scipy's
own compiled functions (``scipy.special.cython_special``), ``exp``/``log``/``log1p`` the C library's. Where one
half of the convolution outweighs the other by more than ``exp`` or ``expit`` can register (a sampling sd far
below ``|x|``: most coefficients of the population target), the other half is not computed; the result is the
same bits (bounds in :func:`_convolved` and :func:`_draw`), at about half the cost of a full evaluation. The results
agree with the numpy path to a few units in the last place (numpy's vectorised ``exp``/``log`` may round
differently from the C library's in the last bit); the random stream is the caller's (uniforms drawn by numpy in
the same blocks), so a draw differs from the numpy path's only by that rounding. ``HAVE_KERNELS`` is False where
Numba or the scipy functions are missing (the numpy path is then used).
"""

from __future__ import annotations

import math

import numpy as np

from ..._numba import HAVE_NUMBA, njit
from .base import BLOCK


def _scipy_fn(name, symbol):
    """``double f(double, int)`` of ``scipy.special.cython_special`` registered with LLVM as ``symbol`` and declared
    to Numba as an external function (by name, not by address: the compiled kernels can be cached on disk), or
    None."""
    import ctypes

    import llvmlite.binding as llvm
    from numba import types
    from scipy.special import cython_special

    capsule = cython_special.__pyx_capi__.get(name)
    if capsule is None:
        return None
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    signature = get_name(capsule)
    if not signature.startswith(b"double (double, int"):
        return None
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    llvm.add_symbol(symbol, get_pointer(capsule, signature))
    return types.ExternalFunction(symbol, types.float64(types.float64, types.intc))


_erfcx = _ndtri_exp = _expit = None
if HAVE_NUMBA:
    try:
        _erfcx, _ndtri_exp, _expit = (_scipy_fn(n, "fdp_ppl_scipy_" + s) for n, s in
                                      (("__pyx_fuse_1erfcx", "erfcx"), ("ndtri_exp", "ndtri_exp"),
                                       ("__pyx_fuse_0expit", "expit")))
    except Exception:  # pragma: no cover - a scipy or llvmlite without these
        _erfcx = _ndtri_exp = _expit = None
HAVE_KERNELS = HAVE_NUMBA and None not in (_erfcx, _ndtri_exp, _expit)

if HAVE_KERNELS:
    _LOG2 = math.log(2.0)
    _SQRT2 = math.sqrt(2.0)
    #: above this ``z²``, ``exp(−z²)`` is 0.0 in double precision (below the smallest subnormal, e^-745.13), so
    #: ``log erfc(z) = log(2 − 0·erfcx(−z))`` is ``log 2`` exactly: the far side of y (most coefficients where the
    #: prior sd is far below the noise scale) costs no erfcx
    _NO_EXP = 746.0

    #: ``h₁ − h₂`` (in nats) beyond which one half of the convolution leaves no trace on the other: ``exp`` of
    #: minus it is 0.0 (below e^-745.13), so ``logaddexp(h₁, h₂)`` is the larger half exactly (760: a margin for
    #: the rounding of the bound below)
    _FAR = 760.0
    #: ``h₁ − h₂`` beyond which the weight ``expit(h₁ − h₂)`` of the piece below ``y`` is 1.0 exactly
    #: (``1 + e^-40`` rounds to 1); its mirror ``expit(−40) < 4.3e-18`` lies below :data:`_TINY_WEIGHT`
    _SURE = 40.0
    #: a uniform at least this large never falls below a weight ``expit(h₁ − h₂) < e^-40``
    _TINY_WEIGHT = 1e-17

    @njit(cache=True, nogil=True, inline="always")
    def _below(z, tilt):  # pragma: no cover - compiled
        """``(h, log erfc z)`` of a half with ``z < 0``: ``log erfc z + g²/(2b²) ∓ x/b`` (``tilt``)."""
        e = _LOG2 if z * z > _NO_EXP else math.log(2.0 - math.exp(-(z * z)) * _erfcx(-z, 0))
        return e + tilt, e

    @njit(cache=True, nogil=True, inline="always")
    def _above(z, quad):  # pragma: no cover - compiled
        """``(h, log erfc z)`` of a half with ``z ≥ 0``: ``log erfcx z − x²/(2g²)`` (``quad``)."""
        w = _erfcx(z, 0)
        return math.log(w) + quad, math.log(w) - z * z

    @njit(cache=True, nogil=True, inline="always")
    def _parts(x, g, b):  # pragma: no cover - compiled
        """``(z₁, z₂, tilt₁, tilt₂, quad)`` of one element: the arguments and the two branches' terms of
        ``Laplace._normal_terms``."""
        lift, width = g**2 / b, g * _SQRT2
        z1 = (lift - x) / width
        z2 = (lift + x) / width
        shift, slope, quad = g**2 / (2 * b**2), x / b, -(x**2) / (2 * g**2)
        return z1, z2, shift + -1.0 * slope, shift + 1.0 * slope, quad

    @njit(cache=True, nogil=True, inline="always")
    def _halves(x, g, b):  # pragma: no cover - compiled
        """``(h₁, h₂, log erfc z₁, log erfc z₂)`` of one element, as ``Laplace._normal_terms``."""
        z1, z2, t1, t2, quad = _parts(x, g, b)
        h1, e1 = _below(z1, t1) if z1 < 0 else _above(z1, quad)
        h2, e2 = _below(z2, t2) if z2 < 0 else _above(z2, quad)
        return h1, h2, e1, e2

    @njit(cache=True, nogil=True, inline="always")
    def _logaddexp(a, c):  # pragma: no cover - compiled
        """numpy's ``logaddexp`` (``npy_logaddexp``)."""
        if a == c:
            return a + _LOG2
        d = a - c
        if d > 0:
            return a + math.log1p(math.exp(-d))
        if d <= 0:
            return c + math.log1p(math.exp(d))
        return d

    @njit(cache=True, nogil=True, inline="always")
    def _convolved(x, g, b):  # pragma: no cover - compiled
        """``logaddexp(h₁, h₂)`` of one element. At most one ``z`` is negative (``z₁ + z₂ = √2 g/b > 0``); its
        half has ``h ≥ tilt`` (``erfc z ≥ 1``) and the other ``h ≤ quad`` (``erfcx ≤ 1`` on ``z ≥ 0``), so where
        ``tilt − quad`` exceeds :data:`_FAR` the sum is that half alone, bit for bit, and the other half's
        ``erfcx`` is not computed (a sampling sd far below ``|x|``: most coefficients of the population target)."""
        z1, z2, t1, t2, quad = _parts(x, g, b)
        if z1 < 0 and t1 - quad > _FAR:
            return _below(z1, t1)[0]
        if z2 < 0 and t2 - quad > _FAR:
            return _below(z2, t2)[0]
        h1, e1 = _below(z1, t1) if z1 < 0 else _above(z1, quad)
        h2, e2 = _below(z2, t2) if z2 < 0 else _above(z2, quad)
        return _logaddexp(h1, h2)

    @njit(cache=True, nogil=True)
    def convolved_logp(x, g, b, out):  # pragma: no cover - compiled
        """``−log(4b) + logaddexp(h₁, h₂)`` into ``out``; 2-d arrays of one shape (any strides)."""
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = -math.log(4 * b[i, j]) + _convolved(x[i, j], g[i, j], b[i, j])

    @njit(cache=True, nogil=True)
    def posterior_terms(x, g, b, w, e1, e2, shift):  # pragma: no cover - compiled
        """The weight ``expit(h₁ − h₂)`` of the piece below ``y``, ``log erfc z₁₂`` and the shift ``g²/b``."""
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                h1, h2, l1, l2 = _halves(x[i, j], g[i, j], b[i, j])
                w[i, j], e1[i, j], e2[i, j], shift[i, j] = _expit(h1 - h2, 0), l1, l2, g[i, j] ** 2 / b[i, j]

    @njit(cache=True, nogil=True, inline="always")
    def _piece(u1, u2, w, e1, e2, shift, m, p):  # pragma: no cover - compiled
        lower = u1 < w
        z = -_ndtri_exp(math.log(u2) + (e1 if lower else e2) - _LOG2, 0)
        return m + shift - p * z if lower else m - shift + p * z

    @njit(cache=True, nogil=True)
    def posterior_pieces(u1, u2, w, e1, e2, shift, m, p, out):  # pragma: no cover - compiled
        """A draw from the piece ``u1 < w`` (below ``y``) or above, by its inverse CDF at ``u2``."""
        for i in range(u1.shape[0]):
            for j in range(u1.shape[1]):
                out[i, j] = _piece(u1[i, j], u2[i, j], w[i, j], e1[i, j], e2[i, j], shift[i, j], m[i, j], p[i, j])

    @njit(cache=True, nogil=True, inline="always")
    def _draw(u1, u2, x, m, p, b):  # pragma: no cover - compiled
        """The terms of one element, then its draw. Where one half dominates by more than :data:`_SURE` nats (the
        bounds of :func:`_convolved`) the piece is known without the other half's ``erfcx``: below ``y`` when the
        weight is 1.0 exactly, above it when the uniform is at least :data:`_TINY_WEIGHT` (the same piece and the
        same bits as the full terms)."""
        z1, z2, t1, t2, quad = _parts(x, p, b)
        if z1 < 0 and t1 - quad > _SURE and u1 < 1.0:
            e = _below(z1, t1)[1]
            return _piece(u1, u2, 1.0, e, e, p**2 / b, m, p)
        if z2 < 0 and t2 - quad > _SURE and u1 >= _TINY_WEIGHT:
            e = _below(z2, t2)[1]
            return _piece(u1, u2, 0.0, e, e, p**2 / b, m, p)
        h1, l1 = _below(z1, t1) if z1 < 0 else _above(z1, quad)
        h2, l2 = _below(z2, t2) if z2 < 0 else _above(z2, quad)
        return _piece(u1, u2, _expit(h1 - h2, 0), l1, l2, p**2 / b, m, p)

    @njit(cache=True, nogil=True)
    def posterior_draws(u1, u2, x, m, p, b, out):  # pragma: no cover - compiled
        """:func:`posterior_terms` and :func:`posterior_pieces` fused: the terms of each element, then its draw."""
        for i in range(u1.shape[0]):
            for j in range(u1.shape[1]):
                out[i, j] = _draw(u1[i, j], u2[i, j], x[i, j], m[i, j], p[i, j], b[i, j])


if HAVE_NUMBA:
    @njit(cache=True, nogil=True, inline="always")
    def _mixing_scale(a, nu, u):  # pragma: no cover - compiled
        """One draw of ``E | ξ`` given ``a = |ξ|/(2b)``, ``ν = N²`` and a uniform ``u``: the arithmetic of
        :func:`mixing_scales` for one element."""
        if nu == 0.0:
            return a
        t = nu + math.sqrt(nu * nu + 8.0 * a * nu)
        x = 8.0 * nu / (t * t)
        return 1.0 / x if u * (1.0 + a * x) <= 1.0 else x * a * a

    @njit(cache=True, nogil=True)
    def mixing_draws(xi, b, nu, u, out):  # pragma: no cover - compiled
        """:func:`mixing_scales` of ``a = |ξ|/(2b)`` into ``out``; 2-d arrays of one shape."""
        for i in range(xi.shape[0]):
            for j in range(xi.shape[1]):
                out[i, j] = _mixing_scale(abs(xi[i, j]) / (2.0 * b[i, j]), nu[i, j], u[i, j])


    @njit(cache=True, nogil=True, inline="always")
    def _normal_posterior(y, m, g, s, z):  # pragma: no cover - compiled
        """One conjugate draw (the arithmetic of :func:`normal_posterior_draws`)."""
        s2, g2 = s**2, g**2
        prec = 1.0 / s2 + 1.0 / g2
        return (y / s2 + m / g2) / prec + z / math.sqrt(prec)

    @njit(cache=True, nogil=True)
    def normal_posterior_draws(y, m, g, s, z, out):  # pragma: no cover - compiled
        """The conjugate draw of :meth:`~fdp_ppl.noise.laws.product.Normal.centre_posterior_draws` (its numpy
        arithmetic, in its order): ``P = 1/s² + 1/g²``, ``(y/s² + m/g²)/P + z/√P``; 2-d arrays of one shape."""
        for i in range(y.shape[0]):
            for j in range(y.shape[1]):
                out[i, j] = _normal_posterior(y[i, j], m[i, j], g[i, j], s[i, j], z[i, j])


if HAVE_KERNELS:
    @njit(cache=True, nogil=True)
    def population_draws(u1, u2, z, nu, w, y, m, g, s, b, theta, xi, e):  # pragma: no cover - compiled
        """:meth:`~fdp_ppl.noise.laws.product.Laplace.population_posterior_draws` of one block in one pass: ``v``
        given ``y`` (:func:`_draw` at ``u1, u2``, prior sd ``√(g² + s²)``), the noise ``ξ = y − v``, ``θ`` given
        ``v`` (:func:`_normal_posterior` at ``z``) and the mixing scale given ``ξ`` (:func:`_mixing_scale` at
        ``ν = nu²`` and ``w``): the numpy path's arithmetic in its order; 2-d arrays of one shape."""
        for i in range(y.shape[0]):
            for j in range(y.shape[1]):
                mij, bij, gij, sij = m[i, j], b[i, j], g[i, j], s[i, j]
                v = _draw(u1[i, j], u2[i, j], y[i, j] - mij, mij, math.sqrt(gij * gij + sij * sij), bij)
                x = y[i, j] - v
                xi[i, j] = x
                theta[i, j] = _normal_posterior(v, mij, gij, sij, z[i, j])
                e[i, j] = _mixing_scale(abs(x) / (2.0 * bij), nu[i, j] * nu[i, j], w[i, j])


def mixing_scales(a, nu, u):
    """Draws of ``E ~ GIG(½, 2, 2a²)`` (density ∝ ``E^{-1/2} e^{−E − a²/E}``, ``a ≥ 0``) from ``ν = N²``
    (``N ~ N(0, 1)``) and ``u ~ U(0, 1)``, elementwise (numpy; the compiled :func:`mixing_draws` does the same
    arithmetic). ``1/E`` is inverse Gaussian with mean ``μ = 1/a`` and shape 2, drawn as Michael, Schucany & Haas
    (1976) (numpy's ``wald``): the root ``X = μ + μ²ν/4 − (μ/4)√(8μν + μ²ν²)`` kept with probability ``μ/(μ + X)``,
    else ``μ²/X``. Written in ``a``, with ``t = ν + √(ν² + 8aν)``, ``X = 8ν/t²`` (no cancellation, and finite at
    ``a = 0``, where ``μ = ∞`` and ``E = ν/2 ~ Gamma(½, 1)``): ``E = t²/(8ν)`` if ``u (1 + aX) ≤ 1``, else
    ``X a²``. ``ν = 0`` (probability 0) gives ``X = μ`` both ways: ``E = a``.

    Examples
    --------
    >>> import numpy as np
    >>> float(mixing_scales(np.array([0.0]), np.array([1.0]), np.array([0.5]))[0])   # a = 0: E = ν/2
    0.5
    """
    a, nu, u = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, nu, u)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = nu + np.sqrt(nu * nu + 8.0 * a * nu)
        x = 8.0 * nu / (t * t)
        e = np.where(u * (1.0 + a * x) <= 1.0, 1.0 / x, x * a * a)
    return np.where(nu == 0.0, a, e)


def _readonly(a):
    """A read-only view of ``a`` (the kernels' one compiled version takes read-only C-contiguous inputs)."""
    a = a.view()
    a.flags.writeable = False
    return a


def as_rows(*arrays):
    """The arrays broadcast to one shape and made 2-d ``(rows, last axis)`` views (a copy only where the reshape
    needs one), and that shape."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    shape = arrays[0].shape
    rows = (1, 1) if not shape else (int(np.prod(shape[:-1])), shape[-1])
    return [a.reshape(rows) for a in arrays], shape


def run(kernel, *arrays, outputs=1):
    """``kernel(*rows, *outs)`` on :func:`as_rows` of ``arrays`` with ``outputs`` new arrays of their shape, which it
    returns in that shape (one array, or a list). The kernels take C-contiguous read-only inputs (one compiled
    version serves every call): where an input is not contiguous (a parameter broadcast over the draws, stride 0),
    the kernel runs over blocks of rows (about :data:`~fdp_ppl.noise.laws.base.BLOCK` elements, a cache-sized
    copy of each such input a block) into the whole outputs, never a full-size copy of a broadcast input."""
    rows, shape = as_rows(*arrays)
    outs = [np.empty(rows[0].shape) for _ in range(outputs)]
    if all(a.flags.c_contiguous for a in rows):
        kernel(*(_readonly(a) for a in rows), *outs)
    else:
        n, k = rows[0].shape
        step = max(1, BLOCK // max(k, 1))
        for lo in range(0, n, step):
            kernel(*(_readonly(np.ascontiguousarray(a[lo:lo + step])) for a in rows), *(o[lo:lo + step] for o in outs))
    outs = [o.reshape(shape) for o in outs]
    return outs[0] if outputs == 1 else outs


__all__ = ["HAVE_KERNELS", "as_rows", "mixing_scales", "run"]
