"""Stationary covariance kernels on [0, 1].

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
  ``convention="mirshani"``: ``exp(-d²/ρ)`` (Mirshani et al. 2019, eq. 3);
  ``convention="hall"``: ``exp(-d²/(2ρ²))`` (Hall et al. 2013, ρ = h).
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


@dataclass(frozen=True)
class Gaussian(Kernel):
    """Gaussian (squared-exponential) kernel in one of two named conventions.

    ``convention="mirshani"``: ``exp(-d²/ρ)`` (Mirshani et al. 2019, eq. 3).
    ``convention="hall"``: ``exp(-d²/(2ρ²))`` (Hall et al. 2013; ρ is h).
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

    def __call__(self, d):
        d = np.asarray(d, dtype=float)
        if self.convention == "mirshani":
            return np.exp(-d * d / self.rho)
        return np.exp(-d * d / (2.0 * self.rho**2))

    def params(self):
        return {"kernel": self.name, "kernel_rho": self.rho, "kernel_convention": self.convention}


from .._names import KERNEL_NAMES  # noqa: E402  (a light module: the CLI lists them without numpy)


def kernel_from_name(name: str, rho: float, nu: float | None = None) -> Kernel:
    """Build a kernel from a short name used by the command line.

    Names: ``matern12``, ``matern32``, ``matern52``, ``matern`` (needs ``nu``),
    ``exponential``, ``gaussian`` (Mirshani convention), ``gaussian-hall``.

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
    if key == "gaussian":
        return Gaussian(rho=rho, convention="mirshani")
    if key in ("gaussian-hall", "gaussianhall"):
        return Gaussian(rho=rho, convention="hall")
    raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNEL_NAMES)}")


__all__ = ["Kernel", "Matern", "Exponential", "Gaussian", "kernel_from_name", "KERNEL_NAMES"]
