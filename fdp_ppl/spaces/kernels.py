"""Stationary covariance kernels on [0, 1], and their products and sums over coordinates.

Each kernel is a frozen dataclass, callable on distances ``d = |s - t| >= 0``
and on pairs of grids. All kernels here have unit variance, ``k(0) = 1``, so
the integral operator on [0, 1] has trace 1.

Parametrisations (ρ is always the length-scale parameter ``rho``):

* :class:`Matern` — standard form
  ``k(d) = 2^{1-ν}/Γ(ν) (√(2ν) d/ρ)^ν K_ν(√(2ν) d/ρ)``, with closed forms for
  ν = 1/2 (``exp(-d/ρ)``), 3/2 (``(1 + r) e^{-r}``, ``r = √3 d/ρ``) and 5/2
  (``(1 + r + r²/3) e^{-r}``, ``r = √5 d/ρ``); other ν use ``scipy.special.kv``.
  (The ICLP paper's printed formula mixes ν and α; this is the standard form,
  ``specs/iclp.md`` §2.6.)
* :class:`Exponential` — ``exp(-d/ρ)`` (Matérn ν = 1/2).
* :class:`Gaussian` — two conventions, named explicitly:
  ``convention="mirshani"``: ``exp(-d²/ρ)`` (Mirshani et al. 2019, eq. 3; ``Gaussian(rho)``);
  ``convention="hall"``: ``exp(-d²/(2h²))`` (Hall et al. 2013; ``Gaussian.from_bandwidth(h)``, ρ = h).
  Both are :func:`gaussian_bump`, the package's one Gaussian bump.

On ``R^d``, kernels compose over coordinates: ``k_1 * k_2`` is the :class:`ProductKernel`
``K(x, y) = k_1(x_1 − y_1) k_2(x_2 − y_2)`` (whose eigenpairs on a Cartesian grid are Kronecker
products, :class:`fdp_ppl.spaces.tensor.TensorEigenbasis`), ``k_1 + k_2`` the :class:`SumKernel`
``k_1(x_1 − y_1) + k_2(x_2 − y_2)`` (additive).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from .._backend import NP
from ..errors import check_positive


@dataclass(frozen=True)
class Kernel:
    """Base class: a unit-variance stationary kernel with length-scale ``rho``."""

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", check_positive(self.rho, "rho", "the kernel length-scale must be > 0"))

    def __call__(self, d) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def gram(self, s, t=None) -> np.ndarray:
        """Matrix ``k(|s_a - t_b|)``, shape (len(s), len(t))."""
        s = np.asarray(s, dtype=float)
        t = s if t is None else np.asarray(t, dtype=float)
        return self(np.abs(s[:, None] - t[None, :]))

    @property
    def name(self) -> str:
        return type(self).__name__.lower()

    @property
    def eigen_decay(self) -> float | None:
        """Theoretical polynomial decay β of the eigenvalues, ``λ_j ≍ j^{-β}`` on
        [0, 1] (None for super-polynomial decay)."""
        return None

    def params(self) -> dict:
        """Kernel name and parameters for release metadata."""
        return {"kernel": self.name, "kernel_rho": self.rho}

    def __mul__(self, other) -> "ProductKernel":
        """``self * other``: the product over coordinates (this kernel on the first, ``other`` on the next)."""
        return ProductKernel(_factors(self, ProductKernel) + _factors(other, ProductKernel))

    def __add__(self, other) -> "SumKernel":
        """``self + other``: the sum over coordinates (this kernel on the first, ``other`` on the next)."""
        return SumKernel(_factors(self, SumKernel) + _factors(other, SumKernel))


HALF_INTEGER_NU = (0.5, 1.5, 2.5)


def matern_half_integer(d, rho, nu: float, xp=NP):
    """Matérn correlation for ν ∈ {1/2, 3/2, 5/2} in closed form, written once for
    numpy and PyTensor (``xp``; ``rho`` may be a PyTensor variable):
    ``exp(−r)``, ``(1 + r) exp(−r)`` with ``r = √3 d/ρ``, ``(1 + r + r²/3) exp(−r)`` with ``r = √5 d/ρ``.

    Raises
    ------
    ValueError
        Another ν.
    """
    if nu == 0.5:
        return xp.exp(-d / rho)
    if nu == 1.5:
        r = np.sqrt(3.0) * d / rho
        return (1.0 + r) * xp.exp(-r)
    if nu == 2.5:
        r = np.sqrt(5.0) * d / rho
        return (1.0 + r + r * r / 3.0) * xp.exp(-r)
    raise ValueError(f"closed-form Matérn needs nu in {HALF_INTEGER_NU}, got {nu}")


@dataclass(frozen=True)
class Matern(Kernel):
    """Matérn kernel with smoothness ``nu`` and length-scale ``rho`` (standard form).

    ``k(d) = 2^{1-ν}/Γ(ν) (√(2ν) d/ρ)^ν K_ν(√(2ν) d/ρ)``; eigenvalues on [0, 1]
    decay as ``j^{-(2ν+1)}`` (Lin & Reimherr 2026, Section 6.1), so
    ν = 3/2 gives β = 4 and ν = 5/2 gives β = 6.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> kernel = fp.Matern(rho=0.1, nu=1.5)
    >>> kernel.name, kernel.eigen_decay          # eigenvalues decay as j^-4
    ('matern32', 4.0)
    >>> round(float(kernel(0.1)), 4)             # correlation at distance ρ
    0.4834
    >>> kernel.params()                          # what a release records
    {'kernel': 'matern32', 'kernel_rho': 0.1, 'kernel_nu': 1.5}

    See Also
    --------
    eigenbasis : the kernel's eigenvalues and eigenfunctions on a grid.
    kernel_from_name : the same kernel from a short name (``"matern32"``).
    """

    nu: float = 1.5

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "nu", check_positive(self.nu, "nu", "Matérn smoothness must be > 0"))

    def __call__(self, d):
        d = np.abs(np.asarray(d, dtype=float))
        nu, rho = self.nu, self.rho
        if nu in HALF_INTEGER_NU:
            return matern_half_integer(d, rho, nu)
        r = np.sqrt(2.0 * nu) * d / rho
        with np.errstate(invalid="ignore"):
            out = (2.0 ** (1.0 - nu) / special.gamma(nu)) * r**nu * special.kv(nu, r)
        return np.where(r == 0, 1.0, np.nan_to_num(out, nan=0.0))

    @property
    def name(self):
        return {0.5: "matern12", 1.5: "matern32", 2.5: "matern52"}.get(self.nu, f"matern(nu={self.nu:g})")

    @property
    def eigen_decay(self):
        return 2.0 * self.nu + 1.0

    def params(self):
        return {"kernel": self.name, "kernel_rho": self.rho, "kernel_nu": self.nu}


@dataclass(frozen=True)
class Exponential(Kernel):
    """Exponential kernel ``exp(-d/ρ)`` (Matérn ν = 1/2; β = 2).

    Rough sample paths; its eigenvalues decay slowly (``λ_j ≍ j^{-2}``), so a summary needs more components.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> kernel = fp.Exponential(rho=0.2)
    >>> kernel.name, kernel.eigen_decay
    ('exponential', 2.0)
    >>> round(float(kernel(0.2)), 4)             # exp(-1) at distance ρ
    0.3679

    See Also
    --------
    Matern : the smoother family it belongs to (ν = 1/2).
    """

    def __call__(self, d):
        return np.exp(-np.abs(np.asarray(d, dtype=float)) / self.rho)

    @property
    def eigen_decay(self):
        return 2.0


def gaussian_bump(d, h: float | None = None, *, rho: float | None = None, squared: bool = False,
                  density: bool = False, out: np.ndarray | None = None, xp=np) -> np.ndarray:
    """The Gaussian bump, unnormalised: ``exp(-d²/(2h²))`` (bandwidth ``h``, Hall et al. 2013) or
    ``exp(-d²/ρ)`` (``rho=``, Mirshani et al. 2019, eq. 3); the same function with ``ρ = 2h²``.

    The package's one Gaussian bump: the :class:`Gaussian` kernel in both conventions, the KDE's kernel
    sections (``density=True`` for the normal density) and the kernel machine's Gram matrices.

    Parameters
    ----------
    d : array_like
        Differences (or, with ``squared=True``, squared distances ``d²``), any shape.
    h, rho : float
        Exactly one: the bandwidth ``h`` > 0 or the Mirshani scale ``ρ`` > 0.
    squared : bool
        ``d`` already holds squared distances.
    density : bool
        Divide by ``√(2π) h``: the ``N(0, h²)`` density (with ``h`` only).
    out : ndarray, optional
        Written in place (may be ``d`` itself: no temporary of ``d``'s size); the exponent is then ``d²``
        times ``−1/c`` (one multiplication per entry, as a large Gram matrix wants) instead of ``−d²/c``
        (``c = 2h²`` or ``ρ``): the two agree to rounding, and each path's values are those the package's
        releases were drawn with.
    xp : module
        The array module (``numpy``, or ``pytensor.tensor`` for a differentiable graph of ``d``; no ``out``).

    Returns
    -------
    ndarray, the shape of ``d``

    Raises
    ------
    ValueError
        Neither or both of ``h`` and ``rho``; ``density`` with ``rho``.
    """
    if (h is None) == (rho is None) or (density and h is None):
        raise ValueError("pass exactly one of h (exp(-d²/(2h²))) and rho (exp(-d²/ρ)); density needs h")
    c = float(rho) if rho is not None else 2.0 * float(h) ** 2
    if xp is not np:   # a symbolic d (a model's likelihood): the same formula, no in-place work
        value = xp.exp(-(d if squared else d * d) / c)
        return value / (np.sqrt(2 * np.pi) * float(h)) if density else value
    if out is None:
        d = np.asarray(d, dtype=float)
        out = np.exp(-(d if squared else d * d) / c)
    else:
        if not squared:
            np.multiply(d, d, out=out)
        elif out is not d:
            out[...] = d
        out *= -(1.0 / c)
        np.exp(out, out=out)
    if density:
        out /= np.sqrt(2 * np.pi) * float(h)
    return out


@dataclass(frozen=True)
class Gaussian(Kernel):
    """Gaussian (squared-exponential) kernel in one of two named conventions (:func:`gaussian_bump`).

    ``Gaussian(rho)`` = ``Gaussian(rho, convention="mirshani")``: ``exp(-d²/ρ)`` (Mirshani et al. 2019, eq. 3).
    ``Gaussian.from_bandwidth(h)`` = ``Gaussian(h, convention="hall")``: ``exp(-d²/(2h²))`` (Hall et al.
    2013; ρ is h). The two describe the same kernel when ``ρ_mirshani = 2h²``.
    Eigenvalues decay faster than any power (``eigen_decay`` is None).

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> kernel = fp.Gaussian(rho=0.1)             # exp(-d²/ρ), Mirshani et al. (2019)
    >>> round(float(kernel(0.1)), 4), kernel.eigen_decay   # exp(-0.1²/0.1); no polynomial decay
    (0.9048, None)
    >>> grid = fp.Grid.uniform(50)
    >>> basis = fp.eigenbasis(kernel, grid)       # numerically zero eigenvalues are dropped
    >>> basis.size < grid.size
    True
    >>> fp.Gaussian(rho=0.1, convention="hall").params()["kernel_convention"]
    'hall'
    """

    convention: str = "mirshani"

    def __post_init__(self):
        super().__post_init__()
        if self.convention not in ("mirshani", "hall"):
            raise ValueError("Gaussian convention must be 'mirshani' (exp(-d²/ρ)) or 'hall' (exp(-d²/(2ρ²)))")

    @classmethod
    def from_bandwidth(cls, h: float) -> "Gaussian":
        """``exp(-d²/(2h²))`` (Hall et al. 2013's convention), bandwidth ``h`` > 0."""
        return cls(rho=h, convention="hall")

    def bump(self, d, *, squared: bool = False, out: np.ndarray | None = None) -> np.ndarray:
        """:func:`gaussian_bump` in this kernel's convention (``squared``, ``out`` as there)."""
        if self.convention == "mirshani":
            return gaussian_bump(d, rho=self.rho, squared=squared, out=out)
        return gaussian_bump(d, self.rho, squared=squared, out=out)

    def __call__(self, d):
        return self.bump(d)

    def params(self):
        return {"kernel": self.name, "kernel_rho": self.rho, "kernel_convention": self.convention}


from .._names import KERNEL_NAMES  # noqa: E402  (a light module: the CLI lists them without numpy)


def kernel_from_name(name: str, rho: float, nu: float | None = None) -> Kernel:
    """Build a kernel from a short name used by the command line.

    Names: ``matern12``, ``matern32``, ``matern52``, ``matern`` (needs ``nu``),
    ``exponential``, ``gaussian`` and ``gaussian-mirshani`` (``exp(-d²/ρ)``), ``gaussian-hall``
    (``exp(-d²/(2ρ²))``).

    Raises
    ------
    ValueError
        Unknown name.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> fp.kernel_from_name("matern52", rho=0.2)
    Matern(rho=0.2, nu=2.5)
    >>> fp.kernel_from_name("gaussian-hall", rho=0.1)
    Gaussian(rho=0.1, convention='hall')
    >>> fp.kernel_from_name("matern", rho=0.1, nu=0.8).eigen_decay
    2.6
    """
    key = name.lower().replace("_", "").replace("é", "e")
    table = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}
    if key in table:
        return Matern(rho=rho, nu=table[key])
    if key == "matern":
        if nu is None:
            raise ValueError("kernel 'matern' needs nu")
        return Matern(rho=rho, nu=nu)
    if key == "exponential":
        return Exponential(rho=rho)
    if key in ("gaussian", "gaussian-mirshani", "gaussianmirshani"):
        return Gaussian(rho=rho, convention="mirshani")
    if key in ("gaussian-hall", "gaussianhall"):
        return Gaussian(rho=rho, convention="hall")
    raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNEL_NAMES)}")


def _factors(kernel, cls) -> tuple:
    """The 1-D kernels of ``kernel`` as factors (``cls`` ProductKernel) or terms (SumKernel) of a composition."""
    if isinstance(kernel, Kernel):
        return (kernel,)
    if type(kernel) is cls and getattr(kernel, "factor_variance", 1.0) == 1.0:
        return kernel.factors
    raise TypeError("kernels compose over coordinates: products or sums of 1-D fdp_ppl kernels (one each), "
                    "e.g. Gaussian(0.1) * Matern(0.2)")


def _coordinates(a, d: int) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    a = a.reshape(-1, 1) if (a.ndim == 1 and d == 1) else np.atleast_2d(a)
    if a.shape[-1] != d:
        raise ValueError(f"points must have {d} coordinates, shape (m, {d}) (got shape {a.shape})")
    return a


@dataclass(frozen=True)
class _OverCoordinates:
    """Kernels on ``R^d``, one 1-D kernel per coordinate (base of :class:`ProductKernel`, :class:`SumKernel`)."""

    factors: tuple

    def __post_init__(self):
        factors = tuple(self.factors)
        if not factors or not all(isinstance(k, Kernel) for k in factors):
            raise TypeError("factors must be a non-empty sequence of 1-D fdp_ppl kernels, one per coordinate")
        object.__setattr__(self, "factors", factors)

    @property
    def d(self) -> int:
        """Number of coordinates."""
        return len(self.factors)

    def __call__(self, a, b=None) -> np.ndarray:
        return self.gram(a, b)


@dataclass(frozen=True)
class ProductKernel(_OverCoordinates):
    """``K(x, y) = Π_k s · k_k(x_k − y_k)``: a product of 1-D kernels over coordinates (``k_1 * k_2``).

    On a Cartesian grid its Gram matrix is the Kronecker product of the 1-D ones, so its eigenpairs are
    products of 1-D eigenpairs (:class:`fdp_ppl.spaces.tensor.TensorEigenbasis` takes its factors from it).
    The Gaussian kernel of the Euclidean distance is one: ``exp(-‖x − y‖²/c) = Π_k exp(-(x_k − y_k)²/c)``.

    Parameters
    ----------
    factors : sequence of Kernel
        One 1-D kernel per coordinate.
    factor_variance : float
        ``s`` > 0, multiplying every factor (``1/√(2π)`` makes a Gaussian factor of bandwidth 1 the standard
        normal density); ``K(x, x) = s^d``.

    Raises
    ------
    TypeError
        Factors that are not 1-D fdp_ppl kernels.
    """

    factor_variance: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "factor_variance", check_positive(self.factor_variance, "factor_variance"))

    def gram(self, a, b=None) -> np.ndarray:
        """``K(a_i, b_j)``; points ``a`` (m, d), ``b`` (p, d) (or (m,) when d = 1) -> (m, p)."""
        a = _coordinates(a, self.d)
        b = a if b is None else _coordinates(b, self.d)
        out = 1.0
        for k, kern in enumerate(self.factors):
            out = out * self.factor_variance * kern.gram(a[:, k], b[:, k])
        return out

    def factor_grams(self, axes) -> list:
        """The 1-D Gram matrices ``s · k_k(A_k, A_k)`` (G_k, G_k) on grid axes: ``K(P, P) = ⊗_k`` of them on
        their Cartesian grid ``P`` in C order."""
        return [self.factor_variance * k.gram(np.asarray(a, dtype=float)) for k, a in zip(self.factors, axes)]

    def __mul__(self, other) -> "ProductKernel":
        return ProductKernel(_factors(self, ProductKernel) + _factors(other, ProductKernel))

    def params(self) -> dict:
        """Name and parameters of every factor for metadata."""
        out = {"kernel": "product(" + ",".join(k.name for k in self.factors) + ")",
               "kernel_rho": [float(k.rho) for k in self.factors]}
        if self.factor_variance != 1.0:
            out["kernel_factor_variance"] = float(self.factor_variance)
        return out


@dataclass(frozen=True)
class SumKernel(_OverCoordinates):
    """``K(x, y) = Σ_k k_k(x_k − y_k)``: an additive kernel over coordinates (``k_1 + k_2``).

    Raises
    ------
    TypeError
        Factors that are not 1-D fdp_ppl kernels.
    """

    def gram(self, a, b=None) -> np.ndarray:
        """``K(a_i, b_j)``; points ``a`` (m, d), ``b`` (p, d) (or (m,) when d = 1) -> (m, p)."""
        a = _coordinates(a, self.d)
        b = a if b is None else _coordinates(b, self.d)
        return sum(kern.gram(a[:, k], b[:, k]) for k, kern in enumerate(self.factors))

    def __add__(self, other) -> "SumKernel":
        return SumKernel(self.factors + _factors(other, SumKernel))

    def params(self) -> dict:
        """Name and parameters of every term for metadata."""
        return {"kernel": "sum(" + ",".join(k.name for k in self.factors) + ")",
                "kernel_rho": [float(k.rho) for k in self.factors]}


__all__ = ["Kernel", "Matern", "Exponential", "Gaussian", "ProductKernel", "SumKernel", "gaussian_bump",
           "kernel_from_name", "KERNEL_NAMES"]
