"""Public specification and fit of a regularised kernel machine (kernel SVM, ridge, logistic).

Sources: Hall, Rinaldo & Wasserman (2013), §4.3 (eq. 11, Def. 10, the bound
``Δ = M √(sup_x K(x, x)) / (λ n)``; Bousquet & Elisseeff 2002); Lin & Reimherr (2026),
§4.3, eq. 13 with the squared penalty and Theorem 18 (``specs/iclp.md`` §2.4).

Two function spaces, fixed by the public spec before any data are seen:

* ``eta=None`` (Hall): the RKHS of the kernel ``K`` itself on ``R^d`` (d = 1 or 2),
  ``K(x, y) = k(‖x − y‖₂)`` with the package's stationary kernels
  (:mod:`fdp_ppl.spaces.kernels`; e.g. ``Gaussian(h, convention="hall")`` is
  ``exp(−‖x − y‖²/(2h²))``). Released with Gaussian-process noise of covariance
  ``σ² K`` (:class:`~fdp_ppl.noise.mechanisms.GaussianMechanism`); Δ is in the RKHS
  (= Cameron–Martin) norm.
* ``eta > 1`` (Lin & Reimherr): d = 1, the domain rescaled to [0, 1] and the grid's
  eigenbasis of ``C`` (:func:`fdp_ppl.spaces.eigenbasis`, weighted convention of
  DESIGN.md); the machine is fitted in the RKHS of the operator power ``C^η``
  (kernel ``Σ_j λ_j^η φ_j(s) φ_j(t)``), features rounded to the nearest grid point
  (a public, record-by-record map: neighbours stay neighbours). Released with ICLP
  noise; ``Δ_{1,C} = Δ_{C^η} √tr(C^{η−1})`` (Theorem 18 via ``‖h‖_{1,C} <= ‖h‖_{C^η}
  √tr(C^{η−1})``).

Losses and their admissibility constant M (Lipschitz constant in the prediction):
hinge ``(1 − y g)_+``, M = 1; Huber hinge (the hinge with its corner replaced by a parabola of half-width
h = 1/2 in the margin ``y g``, Chaudhuri, Monteleoni & Sarwate 2011, §3.4.2), M = 1, smooth, so its solver's public
iteration count does not grow with n; logistic ``log(1 + e^{−y g})``, M = 1 (labels ±1);
squared ``(y − g)²`` with labels clipped to ``[−B, B]``: on the ball
``‖g‖_H <= B/√λ`` that contains every minimiser (``λ‖f_D‖² <= P(0) <= B²``),
``|∂ℓ/∂g| <= 2(B + κB/√λ)``, so M = ``2B(1 + κ/√λ)``, κ = √sup K(x, x) [D].

Solver slack: the solver runs a public number of iterations :attr:`ERMSpec.solver_iterations`
(from the loss, λ, κ, n and the slack only) after which the fit is within ``ρ = solver_slack · Δ_0/2``
of the exact minimiser for *every* dataset (an a-priori bound, :mod:`fdp_ppl.machine.solvers`: FISTA
on the hinge dual, accelerated gradient for the smooth losses), with ``Δ_0`` the paper's bound; the
released sensitivity is ``Δ = Δ_0 + 2ρ = (1 + solver_slack) Δ_0`` (both neighbours' fits are within
ρ of their minimisers). No early stop and no failure: the run time does not depend on the records
(DESIGN invariant 9). Features are rounded to a public lattice and kernel values too small to matter are
set to 0 before any product (:mod:`fdp_ppl.io.lattice`), so no arithmetic takes the subnormal slow path.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from ..errors import InputError, check_positive
from ..io.lattice import TINY, flush_tiny, to_lattice
from ..spaces import Grid, eigenbasis
from ..spaces.grid import CARTESIAN_DIMS as DIMS
from ..spaces.grid import CartesianGrid
from ..spaces.kernels import Exponential, Gaussian, Kernel, Matern, ProductKernel
from ..summaries.base import Sensitivity, public_n
from .solvers import LOSSES, Solution, error_bound, iteration_count, solve_erm

HALL_SOURCE = "Hall, Rinaldo & Wasserman (2013), Section 4.3 (eq. 11), Corollary 9; Bousquet & Elisseeff (2002)"
ICLP_SOURCE = "Lin & Reimherr (2026), Section 4.3, eq. 13 (squared penalty), Theorem 18"
NEIGHBOURING = "replace one labelled record (x, y); n public"
#: kernel-machine solvers: the exact RKHS, or its Nyström subspace on public landmarks
APPROXIMATIONS = ("auto", "exact", "nystroem")
#: ``approximation="auto"``: the exact machine up to this many records (one n x n float64 Gram: 5 GB), Nyström above
EXACT_MAX_N = 25_000
#: most Nyström landmarks a default lattice takes (features are n x r, r <= landmarks)
MAX_LANDMARKS = 1024
#: most floating-point operations a fit's solver may take (its public iteration count times the work of one);
#: larger fits are refused before the charge (about 10 minutes at a few GFLOP/s)
MAX_SOLVER_FLOPS = 2e12


@dataclass(frozen=True, eq=False)
class ERMSpec:
    """Public spec of a regularised kernel machine (no data); see the module docstring.

    Parameters
    ----------
    kernel : Kernel
        Stationary kernel ``k`` on the Euclidean distance of features, in the
        features' units (``rho`` is the bandwidth h).
    lam : float
        Penalty λ > 0 of ``λ‖g‖²_H`` (Hall eq. 11; ψ of Lin & Reimherr eq. 13).
    n : int
        Public number of labelled records.
    loss : {"hinge", "huber", "logistic", "squared"}
    domain : array_like, shape (d, 2) or (2,)
        Public box ``[lo_k, hi_k]``; features are clipped to it; it is also the grid's box.
    grid_size : int or sequence of int
        Grid points per axis of the released decision function.
    eta : float or None
        None: Hall's RKHS of ``K`` (GP noise). ``> 1``: the RKHS of ``C^η`` on the
        grid's eigenbasis (ICLP noise; d = 1 only).
    label_bound : float
        B: squared-loss labels are clipped to ``[−B, B]``.
    solver_slack : float
        Relative inflation of Δ paying for the solver's certified accuracy (default 1 %).
    rel_tol : float
        Eigenvalue cut-off of the eigenbasis (``eta`` only).
    approximation : {"auto", "exact", "nystroem"}
        How the machine is solved (public; recorded in the release attrs as ``kernel_approximation``).
        ``"exact"``: the RKHS of K, on the n × n Gram matrix (one n × n float64 array for the hinge loss,
        about three for the smooth losses). ``"nystroem"``: the span of kernel sections at public
        landmarks, an isometric subspace of the same RKHS, solved on n × r features
        (:mod:`fdp_ppl.machine.nystroem`); same sensitivity, same noise. ``"auto"`` (default): exact up to
        ``n = EXACT_MAX_N`` records, Nyström above (a rule on the public n only).
    landmarks : int or sequence of int, optional
        Nyström landmarks per axis, an evenly spaced lattice on the public box (default: the release grid,
        thinned to at most ``MAX_LANDMARKS`` points). ``eta`` specs always use the grid nodes (the records
        are snapped to them, so the subspace is the whole space there).

    Raises
    ------
    InputError
        λ <= 0, n < 2, unknown loss, a bad domain or grid, d not 1 or 2, η <= 1,
        ``eta`` with d > 1, solver_slack outside (0, 1).
    """

    kernel: Kernel
    lam: float
    n: int
    loss: str = "hinge"
    domain: np.ndarray = dataclasses.field(default_factory=lambda: np.array([[0.0, 1.0]]))
    grid_size: int | tuple = 50
    eta: float | None = None
    label_bound: float = 1.0
    solver_slack: float = 1e-2
    rel_tol: float = 1e-12
    privacy_unit: object = None
    approximation: str = "auto"
    landmarks: int | tuple | None = None

    def __post_init__(self):
        if self.approximation not in APPROXIMATIONS:
            raise InputError(f"unknown kernel approximation {self.approximation!r}", f"use one of {APPROXIMATIONS}")
        if self.privacy_unit is not None:
            from ..io.units import PrivacyUnit

            if not isinstance(self.privacy_unit, PrivacyUnit) or self.privacy_unit.max_contributions != 1:
                raise InputError("a kernel machine takes privacy_unit=PrivacyUnit(column, max_contributions=1): it is "
                                 "not linear in its records, so records cannot be combined, and k > 1 records per "
                                 "unit would need a group-privacy bound", "keep one record per unit")
        if not isinstance(self.kernel, Kernel):
            raise InputError("kernel must be an fdp_ppl kernel", "e.g. Gaussian(rho=0.2, convention='hall')")
        object.__setattr__(self, "lam", check_positive(self.lam, "lam", "pass a public penalty, e.g. lam=0.1"))
        object.__setattr__(self, "n", public_n(self.n))
        if self.loss not in LOSSES:
            raise InputError(f"unknown loss {self.loss!r}", f"use one of {LOSSES}")
        dom = np.atleast_2d(np.asarray(self.domain, dtype=float))
        if dom.ndim != 2 or dom.shape[1] != 2 or dom.shape[0] not in (1, 2) or not np.all(np.isfinite(dom)) \
                or np.any(dom[:, 1] <= dom[:, 0]):
            raise InputError(f"domain must be 1 or 2 intervals lo < hi (got {self.domain!r})",
                             "pass e.g. domain=[[0, 1], [0, 1]]")
        object.__setattr__(self, "domain", dom)
        sizes = np.broadcast_to(np.asarray(self.grid_size), (dom.shape[0],)).astype(int)
        if np.any(sizes < 2):
            raise InputError(f"grid_size must be >= 2 per axis (got {self.grid_size})", "e.g. grid_size=50")
        object.__setattr__(self, "grid_size", tuple(int(s) for s in sizes))
        object.__setattr__(self, "label_bound", check_positive(self.label_bound, "label_bound"))
        if not 0 < float(self.solver_slack) < 1:
            raise InputError(f"solver_slack must lie in (0, 1) (got {self.solver_slack})", "e.g. solver_slack=0.01")
        if self.eta is not None:
            if not float(self.eta) > 1:
                raise InputError(f"eta must be > 1 (got {self.eta})", "e.g. eta=2 (Lin & Reimherr eq. 13)")
            if self.d != 1:
                raise InputError("the ICLP (eta) kernel machine is implemented for one feature",
                                 "use eta=None (Gaussian-process noise) for two features")
            lo, hi = dom[0]
            grid = Grid.from_points(self.axes[0])
            unit_kernel = dataclasses.replace(self.kernel, rho=self.kernel.rho / (hi - lo))
            basis = eigenbasis(unit_kernel, grid, self.rel_tol)
            object.__setattr__(self, "_basis", basis)
            power = basis.power_kernel(float(self.eta))  # public; entries the records select are never subnormal
            object.__setattr__(self, "_power_gram", flush_tiny(power, float(np.max(np.abs(np.diag(power))))))

    # ------------------------------------------------------------------ public geometry
    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.domain.shape[0])

    @property
    def dims(self) -> tuple:
        """Grid dims of the released decision function: ``("x",)`` or ``("x1", "x2")``."""
        return DIMS[self.d]

    @property
    def grid(self) -> CartesianGrid:
        """The release grid on the public box, unit weights (the noise is of point evaluations: the
        eigenpairs are those of the matrix ``K(P, P)``)."""
        return CartesianGrid.uniform(self.domain, self.grid_size, quadrature="unit")

    axes = property(lambda self: self.grid.axes, doc="Grid axes, one (G_k,) array per feature, in data units.")
    points = property(lambda self: self.grid.points, doc="Grid points (Π G_k, d), C order (the last axis fastest).")

    @property
    def basis(self):
        """The eigenbasis of ``C`` on the grid (``eta`` only).

        Raises
        ------
        InputError
            A spec without ``eta`` (GP noise has no ``C`` eigenbasis).
        """
        if self.eta is None:
            raise InputError("this spec has no eigenbasis (eta=None)", "pass eta > 1 for ICLP noise")
        return self._basis

    @property
    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues (J,) of ``C`` on the grid (``eta`` only)."""
        return self.basis.eigenvalues

    @property
    def ou_rho(self) -> float | None:
        """Length-scale if the kernel is exponential (OU) in d = 1 (Markov online updates)."""
        k = self.kernel
        if self.d == 1 and (type(k) is Exponential or (type(k) is Matern and k.nu == 0.5)):
            return float(k.rho)
        return None

    # ------------------------------------------------------------------ kernels
    @property
    def product_kernel(self) -> bool:
        """True when ``K(x, y) = Π_k k(|x_k − y_k|)`` exactly and there is more than one factor.

        Only the Gaussian (squared-exponential) kernel of the Euclidean distance factorises
        over coordinates: ``exp(−‖x − y‖²/c) = Π_k exp(−(x_k − y_k)²/c)`` in both
        conventions. The exponential and Matérn kernels of the *Euclidean* distance
        (this spec's only distance) do not (they would with the L¹ distance, which the
        spec does not use). In d = 1 the single "factor" is the dense kernel matrix, so
        False. Checked against ``kernel_matrix`` in ``tests/machine/test_machine.py``.
        """
        return self.d >= 2 and self.eta is None and type(self.kernel) is Gaussian

    def kernel_factors(self) -> list:
        """1-D Gram matrices ``k(|a_i − a_j|)`` on each grid axis, shapes (G_k, G_k) (product kernels).

        ``K(P, P) = K_1 ⊗ … ⊗ K_d`` on the grid ``P`` (C order) when :attr:`product_kernel`.

        Raises
        ------
        InputError
            A kernel that does not factorise over coordinates.
        """
        if not self.product_kernel:
            raise InputError(f"the {self.kernel.name} kernel of the Euclidean distance in d = {self.d} is not a "
                             "product over coordinates", "use the dense kernel matrix")
        return ProductKernel((self.kernel,) * self.d).factor_grams(self.axes)

    def kernel_matrix(self, a, b) -> np.ndarray:
        """``K(a_i, b_j) = k(‖a_i − b_j‖₂)`` (Hall space), shapes (m, d), (p, d) -> (m, p)."""
        a = np.asarray(a, dtype=float).reshape(-1, self.d)
        b = np.asarray(b, dtype=float).reshape(-1, self.d)
        D = np.minimum(cdist(a, b), self.distance_cap)  # no kernel value below 2·TINY·k(0) is ever computed
        return flush_tiny(self.kernel(D), 2.0 * self.kappa**2)

    @property
    def distance_cap(self) -> float:
        """Public distance beyond which the kernel is below ``2 · TINY · k(0)`` (``TINY = 2^-400``).

        Distances are clamped to it before the kernel is evaluated and values below ``2 · TINY · k(0)`` are
        then set to 0 (:func:`~fdp_ppl.io.lattice.flush_tiny`): no kernel evaluation produces a subnormal
        number (``exp(−d²/(2h²))`` of far-apart records would, and takes the slow path; Andrysco et al.
        2015), and the change is below ``2^-399`` per entry, far under the rounding of every entry.
        Found once by bisection on the public kernel (all kernels here decrease with the distance)."""
        cached = self.__dict__.get("_distance_cap")
        if cached is None:
            k0 = float(self.kernel(np.zeros(1))[0])
            target = 2.0 * TINY * k0
            lo, hi = 0.0, float(self.kernel.rho)
            while float(self.kernel(np.array([hi]))[0]) > target:
                lo, hi = hi, 2.0 * hi
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if float(self.kernel(np.array([mid]))[0]) > target:
                    lo = mid
                else:
                    hi = mid
            cached = lo  # k(lo) > 2·TINY·k(0): the clamped values stay normal
            object.__setattr__(self, "_distance_cap", cached)
        return cached

    def grid_index(self, x) -> np.ndarray:
        """Nearest grid index of each 1-D feature (``eta`` spaces), shape (m,)."""
        ax = self.axes[0]
        x = np.asarray(x, dtype=float).reshape(-1)
        return np.clip(np.rint((x - ax[0]) / (ax[-1] - ax[0]) * (ax.size - 1)).astype(int), 0, ax.size - 1)

    def gram(self, a, b) -> np.ndarray:
        """Reproducing kernel of the spec's space between feature sets (m, d) and (p, d)."""
        if self.eta is None:
            return self.kernel_matrix(a, b)
        return self._power_gram[np.ix_(self.grid_index(a), self.grid_index(b))]

    @property
    def kappa(self) -> float:
        """``√sup_x K(x, x)`` (Hall: ``√k(0)``; ICLP: ``√max_t C^η(t, t)`` on the grid)."""
        if self.eta is None:
            return float(np.sqrt(self.kernel(np.zeros(1))[0]))
        return float(np.sqrt(np.max(np.diag(self._power_gram))))

    # ------------------------------------------------------------------ sensitivity
    @property
    def admissibility(self) -> float:
        """M of the loss (module docstring)."""
        if self.loss == "squared":
            return 2.0 * self.label_bound * (1.0 + self.kappa / np.sqrt(self.lam))
        return 1.0

    @property
    def delta_rkhs_exact(self) -> float:
        """``Δ_0 = M κ/(λ n)``: bound on ``‖f_D − f_{D'}‖_H`` for exact minimisers (Hall §4.3)."""
        return self.admissibility * self.kappa / (self.lam * self.n)

    @property
    def rho_target(self) -> float:
        """Public solver accuracy ``ρ = solver_slack · Δ_0 / 2`` in RKHS norm."""
        return float(self.solver_slack) * self.delta_rkhs_exact / 2.0

    @property
    def solver_iterations(self) -> int:
        """Public number of solver iterations ``T`` (:func:`~fdp_ppl.machine.solvers.iteration_count`): after
        ``T`` iterations every fit is within :attr:`rho_target` of its exact minimiser. Hinge: ``⌈n/s⌉ − 1``
        (``s`` the slack); smooth losses: ``⌈√Q log((1 + Q) ℓ_0/(λρ²))⌉``."""
        return iteration_count(self.loss, lam=self.lam, kappa=self.kappa, rho_target=self.rho_target,
                               loss_at_zero=self.loss_at_zero)

    @property
    def solver_error_bound(self) -> float:
        """A-priori bound on ``‖g_T − f_D‖_H`` after :attr:`solver_iterations` (``<= rho_target``; public)."""
        return error_bound(self.loss, self.solver_iterations, lam=self.lam, kappa=self.kappa,
                           loss_at_zero=self.loss_at_zero)

    @property
    def delta_rkhs(self) -> float:
        """``Δ = Δ_0 + 2ρ``: RKHS sensitivity of the fitted (approximate) decision functions."""
        return self.delta_rkhs_exact + 2.0 * self.rho_target

    @property
    def loss_at_zero(self) -> float:
        """``sup_y ℓ(0, y)``: hinge and Huber hinge 1, logistic ``log 2``, squared ``B²`` (labels clipped to ``[−B, B]``)."""
        return {"hinge": 1.0, "huber": 1.0, "logistic": float(np.log(2.0)),
                "squared": self.label_bound**2}[self.loss]

    @property
    def norm_bound(self) -> float:
        """Public bound ``R`` on ``‖f‖_H`` of every fitted decision function (no data).

        The exact minimiser has ``λ‖f_D‖²_H <= P(f_D) <= P(0) = (1/n) Σ_i ℓ(0, y_i) <= sup_y ℓ(0, y)``
        (Hall, Rinaldo & Wasserman 2013, eq. 11 compared with ``g = 0``; the squared-loss case is
        the module docstring's ball), and the fit is certified within ``ρ`` of it, so
        ``R = √(sup_y ℓ(0, y)/λ) + ρ`` (:attr:`loss_at_zero`, :attr:`rho_target`). The norm is
        that of the spec's space (RKHS of ``K``, or of ``C^η`` for ``eta`` specs) [D].
        """
        return float(np.sqrt(self.loss_at_zero / self.lam) + self.rho_target)

    @classmethod
    def from_attrs(cls, attrs) -> "ERMSpec":
        """The public spec a kernel-machine release was made with, rebuilt from its root attributes.

        Reads ``kernel``, ``kernel_rho`` (and ``kernel_nu`` / ``kernel_convention``), ``lam``, ``n``,
        ``loss``, ``domain``, ``grid_size``, ``eta``, ``label_bound``, ``solver_slack``,
        ``eigen_rel_tol`` (``eta`` specs) and ``kernel_approximation`` / ``nystroem_landmark_grid`` (exact
        when absent) as :meth:`attrs` writes them (lists as ``"a,b"`` strings
        after :func:`fdp_ppl.releasing.schema.clean_attrs`). No privacy unit is attached (it does not change the
        function space).

        Raises
        ------
        SchemaError
            A required attribute missing or unreadable.
        """
        from ..errors import SchemaError
        from ..spaces.kernels import kernel_from_name

        def floats(v):
            if isinstance(v, str):
                return [float(p) for p in v.split(",") if p.strip()]
            return [float(p) for p in np.atleast_1d(v)]

        try:
            name = str(attrs["kernel"])
            rho = float(attrs["kernel_rho"])
            if name == "gaussian":
                kernel = Gaussian(rho, convention=str(attrs.get("kernel_convention", "hall")))
            elif name.startswith("matern("):
                kernel = Matern(rho, nu=float(attrs["kernel_nu"]))
            else:
                kernel = kernel_from_name(name, rho)
            eta = attrs.get("eta")
            eta = None if eta is None or str(eta) == "none" else float(eta)
            dom = np.asarray(floats(attrs["domain"])).reshape(-1, 2)
            extra = {"rel_tol": float(attrs["eigen_rel_tol"])} if eta is not None and "eigen_rel_tol" in attrs else {}
            approximation = str(attrs.get("kernel_approximation", "exact"))  # releases before Nyström: exact
            if approximation == "nystroem":
                extra["landmarks"] = tuple(int(g) for g in floats(attrs["nystroem_landmark_grid"]))
            extra["approximation"] = approximation
            return cls(kernel, lam=float(attrs["lam"]), n=int(attrs["n"]), loss=str(attrs["loss"]), domain=dom,
                       grid_size=tuple(int(g) for g in floats(attrs["grid_size"])), eta=eta,
                       label_bound=float(attrs.get("label_bound", 1.0)),
                       solver_slack=float(attrs.get("solver_slack", 1e-2)), **extra)
        except (KeyError, ValueError, TypeError) as err:
            raise SchemaError(f"the kernel-machine release's attributes do not describe its spec ({err})",
                              "pass a file written by fdp-ppl machine / fdp_ppl.release") from None

    def sensitivity(self, norm: str | None = None) -> Sensitivity:
        """Sensitivity of the fitted decision function.

        ``"cameron-martin"`` (= RKHS norm of K, Hall §4.3): ``(1 + slack) M κ/(λ n)``;
        ``"1,C"`` (``eta`` spaces, Lin & Reimherr Theorem 18): that bound in ``‖·‖_{C^η}``
        times ``√tr(C^{η−1})``.

        Raises
        ------
        InputError
            A norm this space has no bound in.
        """
        norm = norm or ("cameron-martin" if self.eta is None else "1,C")
        assumptions = (f"{self.loss} loss is M-admissible with M = {self.admissibility:g}"
                       + ("" if self.loss != "squared" else f" (labels clipped to [-{self.label_bound:g}, "
                                                            f"{self.label_bound:g}])")
                       + f"; kernel bounded, kappa^2 = {self.kappa**2:g}; no unpenalised intercept; solver runs a "
                         f"public {self.solver_iterations} iterations, a-priori within {self.rho_target:.3g} of the "
                         "minimiser in RKHS norm for every dataset (adds 2x that)"
                       + ("" if self.method == "exact" else "; Nystroem: minimiser over the span of kernel sections at "
                          "public landmarks, an isometric subspace of the RKHS with kappa~ <= kappa, so the same "
                          "bound holds in the same norm (fdp_ppl.machine.nystroem)"))
        if self.eta is None and norm == "cameron-martin":
            return Sensitivity(self.delta_rkhs, norm, "paper+solver", NEIGHBOURING, assumptions, HALL_SOURCE)
        if self.eta is not None and norm == "1,C":
            value = self.delta_rkhs * np.sqrt(self.basis.trace(float(self.eta) - 1.0))
            return Sensitivity(float(value), norm, "paper+solver", NEIGHBOURING, assumptions, ICLP_SOURCE)
        raise InputError(f"no {norm!r} sensitivity for this kernel machine (eta={self.eta})",
                         "eta=None: 'cameron-martin' (GaussianMechanism); eta > 1: '1,C' (ICLP)")

    def attrs(self) -> dict:
        """Public metadata of the spec (release attrs)."""
        out = {"summary": f"kernel-machine-{self.loss}", "loss": self.loss, "lam": self.lam, "n": self.n,
               "d": self.d, "domain": [float(v) for v in self.domain.ravel()], "grid_size": list(self.grid_size),
               **self.kernel.params(), "kernel_distance": "euclidean (features in data units)",
               "admissibility_M": self.admissibility, "kappa": self.kappa,
               "sensitivity_exact_minimiser": self.delta_rkhs_exact, "solver_slack": float(self.solver_slack),
               "solver_rho_target": self.rho_target, "solver_iterations": self.solver_iterations,
               "solver": "FISTA on the dual (Beck & Teboulle 2009)" if self.loss == "hinge" else
                         "accelerated gradient (Nesterov; Bubeck 2015, Thm 3.18)",
               "intercept": "none (not covered by the bound)",
               "space": "RKHS of K (Hall 2013)" if self.eta is None else "RKHS of C^eta on the grid eigenbasis",
               "kernel_approximation": self.method}
        if self.method == "nystroem":
            out.update(nystroem_landmarks=int(len(self.landmark_points())),
                       nystroem_landmark_grid=list(self.landmark_sizes()),
                       nystroem_space="span of K(., l) at public landmarks (isometric subspace of the RKHS; same "
                                      "sensitivity and noise)")
        if self.loss == "squared":
            out["label_bound"] = self.label_bound
        if self.eta is not None:
            out.update(eta=float(self.eta), n_components=int(self.basis.size), eigen_rel_tol=self.rel_tol)
        if self.privacy_unit is not None:
            out.update(self.privacy_unit.attrs(), neighbouring=f"replace one {self.privacy_unit.column} (its first "
                                                               "record kept); the number of units public")
        else:
            out["privacy_unit"] = "record"
        return out

    @property
    def method(self) -> str:
        """``"exact"`` or ``"nystroem"``: :attr:`approximation` with ``"auto"`` resolved from the public n."""
        if self.approximation != "auto":
            return self.approximation
        return "exact" if self.n <= EXACT_MAX_N else "nystroem"

    def landmark_sizes(self) -> tuple:
        """Landmarks per axis of the Nyström lattice (public): ``landmarks``, else the grid halved until at most
        ``MAX_LANDMARKS`` points (``eta`` specs: the grid).

        Raises
        ------
        InputError
            ``landmarks`` < 1 on an axis.
        """
        if self.eta is not None:
            return tuple(self.grid_size)
        if self.landmarks is None:
            sizes = np.asarray(self.grid_size)
            while np.prod(sizes) > MAX_LANDMARKS:
                sizes = np.maximum(2, sizes // 2)
        else:
            sizes = np.broadcast_to(np.asarray(self.landmarks, dtype=int), (self.d,))
            if np.any(sizes < 1):
                raise InputError(f"landmarks must be >= 1 per axis (got {self.landmarks})", "e.g. landmarks=32")
        return tuple(int(k) for k in sizes)

    def landmark_points(self) -> np.ndarray:
        """Public Nyström landmarks (m, d): the grid nodes (``eta``), else a lattice on the box (``landmarks``)."""
        if self.eta is not None:
            return self.axes[0][:, None]
        mesh = np.meshgrid(*self._landmark_axes(), indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)

    def _landmark_axes(self) -> list:
        """Per-axis coordinates of the landmark lattice (non-``eta`` specs): evenly spaced on the box."""
        return [np.linspace(lo, hi, int(k)) if k > 1 else np.array([(lo + hi) / 2]) for (lo, hi), k in
                zip(self.domain, self.landmark_sizes())]

    def nystroem_map(self):
        """The public :class:`~fdp_ppl.machine.nystroem.NystroemMap` of this spec (cached)."""
        cached = self.__dict__.get("_nystroem")
        if cached is None:
            from .nystroem import NystroemMap

            cached = NystroemMap(self._fit_gram, self.landmark_points(), kappa=self.kappa,
                                 sections=self._lattice_sections if self.product_kernel else None)
            object.__setattr__(self, "_nystroem", cached)
        return cached

    def memory_needed(self) -> float:
        """Bytes a fit plans to hold, from public sizes only: the exact hinge machine one n × n Gram matrix
        plus a block of rows, the exact smooth losses about three n × n arrays (Gram, Jacobian, factor), the
        Nyström machine the n × m features and kernel slab and the m × m landmark Gram (m landmarks)."""
        n = float(self.n)
        if self.method == "exact":
            return 8.0 * n * n * (1.0 if self.loss == "hinge" else 3.0) + 8.0 * 2 * 1024 * n
        from .nystroem import FEATURE_BLOCK

        m = float(len(self.landmark_points()))
        return 8.0 * n * m + 8.0 * 2 * FEATURE_BLOCK * m + 4 * 8.0 * m * m + 8.0 * 4 * n * self.d

    def check_size(self) -> None:
        """Refuse a fit that cannot fit in memory, from public sizes alone (:meth:`memory_needed`), before any
        budget is charged; the message says what to do instead.

        Raises
        ------
        InputError
            Not enough memory (:func:`fdp_ppl.settings.check_memory`).
        """
        from ..settings import check_memory

        if self.method == "exact":
            check_memory(self.memory_needed(), f"an exact kernel machine on n = {self.n} records (n x n Gram "
                                               "matrix)",
                         "use approximation='nystroem' (public landmarks, same sensitivity and noise), fewer records "
                         "(a public subsample rule) or a larger machine")
        else:
            check_memory(self.memory_needed(), f"a Nystroem kernel machine on n = {self.n} records with "
                                               f"{len(self.landmark_points())} landmarks",
                         "use fewer landmarks (landmarks=...), fewer records, or a larger machine")
        if self.solver_work() > MAX_SOLVER_FLOPS:
            raise InputError(f"the {self.loss}-loss solver's public iteration count ({self.solver_iterations}, fixed "
                             f"so that every fit is within the accuracy the sensitivity pays for) on n = {self.n} "
                             f"records is about {self.solver_work():.2g} floating-point operations, more than the "
                             f"{MAX_SOLVER_FLOPS:.0e} this command runs",
                             "raise solver_slack (the hinge count is n/solver_slack), use loss='huber' (the hinge with a "
                             "smoothed corner) or 'logistic' (their counts do not grow with n), or fewer records")

    def solver_work(self) -> float:
        """Floating-point operations of the solver, from public sizes: :attr:`solver_iterations` products with the
        Gram matrix (2n² each) or with the features (4nr, r <= landmarks)."""
        n = float(self.n)
        per = 2.0 * n * n if self.method == "exact" else 4.0 * n * float(len(self.landmark_points()))
        return float(self.solver_iterations) * per

    # ------------------------------------------------------------------ fit
    def fit(self, features, labels, units=None) -> ERMFit:
        """Clip features to the domain (and squared-loss labels to ±B), then solve the ERM.

        Parameters
        ----------
        features : array_like, shape (n, d) or (n,) for d = 1
        labels : array_like, shape (n,)
            ±1 (hinge, Huber hinge, logistic), real (squared).
        units : array_like, shape (n,), optional
            The unit of each record, required with a ``privacy_unit``: each unit's first record is kept and
            n is the number of units.

        Raises
        ------
        InputError
            Wrong shapes, non-finite values, a count other than the public n, labels not ±1, units missing
            or given without a privacy unit.
        """
        self.check_size()
        X = np.asarray(features, dtype=float)
        X = X[:, None] if X.ndim == 1 else X
        y = np.asarray(labels, dtype=float).reshape(-1)
        if (self.privacy_unit is None) != (units is None):
            raise InputError("units= goes with a privacy_unit in the spec, and a privacy_unit needs units=",
                             "pass both or neither")
        if units is not None:
            if len(units) != X.shape[0]:
                raise InputError("units= needs one id per record", "pass the unit column along the records")
            keep, _ = self.privacy_unit.weights(units, self.n)
            X, y = X[keep], y[keep]
        if X.ndim != 2 or X.shape[1] != self.d:
            raise InputError(f"features must have shape (n, {self.d}) (got {X.shape})", "pass one column per feature")
        if X.shape[0] != self.n or y.size != self.n:
            raise InputError(f"the spec says n = {self.n} but {X.shape[0]} features and {y.size} labels were given",
                             "build the spec with the public n")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise InputError("features and labels must be finite", "drop or impute missing values before release")
        if self.loss != "squared" and not np.all(np.isin(y, (-1.0, 1.0))):
            raise InputError(f"{self.loss} loss needs labels -1 or +1", "recode the label column to -1/+1")
        Xc = np.clip(X, self.domain[:, 0], self.domain[:, 1])
        n_clipped = int(np.sum(np.any(Xc != X, axis=1)))
        # a public lattice relative to the box (no subnormal coordinate reaches any arithmetic), then the box again
        Xc = np.clip(to_lattice(Xc, float(np.max(np.abs(self.domain)))), self.domain[:, 0], self.domain[:, 1])
        yc = to_lattice(np.clip(y, -self.label_bound, self.label_bound), self.label_bound) \
            if self.loss == "squared" else y
        if self.method == "nystroem":
            from .nystroem import nystroem_solution

            nmap = self.nystroem_map()
            sol = nystroem_solution(nmap, Xc, yc, loss=self.loss, lam=self.lam, rho_target=self.rho_target,
                                    kappa=self.kappa, loss_at_zero=self.loss_at_zero)
            return ERMFit(self, nmap.landmarks, sol, n_clipped)
        sol = solve_erm(self._gram_blocks(Xc), yc, loss=self.loss, lam=self.lam, rho_target=self.rho_target,
                        kappa=self.kappa, loss_at_zero=self.loss_at_zero)
        return ERMFit(self, Xc, sol, n_clipped)

    def _gram_blocks(self, X, block: int = 1024) -> np.ndarray:
        """``gram(X, X)`` filled by blocks of rows (one n × n array, no n × n temporaries), symmetric by
        construction (upper block triangle computed, mirrored), diagonal exactly ``k(0)``."""
        n = X.shape[0]
        out = np.empty((n, n))
        buf = np.empty(block * n) if self._gaussian_fast else None
        for s in range(0, n, block):
            e = min(s + block, n)
            self._fit_gram(X[s:e], X[s:], out=out[s:e, s:], buf=buf)
            out[e:, s:e] = out[s:e, e:].T
        if self.eta is None:
            np.fill_diagonal(out, float(self.kernel(np.zeros(1))[0]))
        return out

    def _lattice_sections(self, a) -> np.ndarray:
        """``K(a_i, l_j)`` (n, m) on the landmark lattice of a product kernel (:attr:`product_kernel`), from the
        per-axis factors: ``exp(−‖x − l‖²/c) = Π_k exp(−(x_k − l_k)²/c)``, so d · n · G exponentials and one product
        per entry instead of an exponential per entry. Each factor's squared difference is capped at
        :attr:`distance_cap`² (every factor stays above ``2 · TINY · k(0)``, their product normal), then values
        below ``2 · TINY · κ²`` are set to 0, as in :meth:`_fit_gram`; equal to it up to rounding."""
        a = np.asarray(a, dtype=float).reshape(-1, self.d)
        out = None
        for k, ax in enumerate(self._landmark_axes()):  # C order of the lattice (landmark_points: meshgrid "ij", ravelled)
            f = np.subtract.outer(a[:, k], ax)
            f *= f
            np.minimum(f, self.distance_cap**2, out=f)
            self.kernel.bump(f, squared=True, out=f)
            out = f if out is None else (out[:, :, None] * f[:, None, :]).reshape(a.shape[0], -1)
        return flush_tiny(out, 2.0 * self.kappa**2, out=out)

    @property
    def _gaussian_fast(self) -> bool:
        return self.eta is None and type(self.kernel) is Gaussian

    def _fit_gram(self, a, b, out=None, buf=None) -> np.ndarray:
        """:meth:`gram` for the fit: the Gaussian kernel from squared coordinate differences and one in-place
        exponential, written into ``out`` (no square root, no distance matrix, no fresh block-sized arrays
        when ``out`` and ``buf`` are given); other kernels :meth:`gram`. Equal to :meth:`gram` up to rounding."""
        if not self._gaussian_fast:
            res = self.gram(a, b)
            if out is None:
                return res
            out[...] = res
            return out
        a = np.asarray(a, dtype=float).reshape(-1, self.d)
        b = np.asarray(b, dtype=float).reshape(-1, self.d)
        sq = np.empty((a.shape[0], b.shape[0])) if out is None else out
        np.subtract.outer(a[:, 0], b[:, 0], out=sq)
        sq *= sq
        if self.d > 1:
            tmp = (np.empty(sq.shape) if buf is None else buf[:sq.size].reshape(sq.shape))
            for k in range(1, self.d):
                np.subtract.outer(a[:, k], b[:, k], out=tmp)
                tmp *= tmp
                sq += tmp
        np.minimum(sq, self.distance_cap**2, out=sq)  # distance cap and flush as in kernel_matrix
        self.kernel.bump(sq, squared=True, out=sq)
        return flush_tiny(sq, 2.0 * self.kappa**2, out=sq)


@dataclass(eq=False)
class ERMFit:
    """A fitted kernel machine (data holder only: never written to a release).

    Attributes
    ----------
    spec : ERMSpec
    support : ndarray, shape (n, d) or (m, d)
        The clipped features (exact machine), or the public landmarks (Nyström).
    solution : Solution
        Representer coefficients and the certificate.
    n_clipped : int
        Records with a feature outside the domain (reported to the data holder only).
    """

    spec: ERMSpec
    support: np.ndarray
    solution: Solution
    n_clipped: int

    @property
    def coefficients(self) -> np.ndarray:
        """Non-private representer coefficients ``c_i`` (n_support,) of ``f_D``."""
        return self.solution.coefficients

    def decision(self, points) -> np.ndarray:
        """Non-private ``f_D(x) = Σ_i c_i K(x_i, x)`` at points (m, d) -> (m,)."""
        return self.spec.gram(points, self.support) @ self.coefficients

    def rkhs_norm(self) -> float:
        """``‖f_D‖_H = √(cᵀ K c)``."""
        c = self.coefficients
        return float(np.sqrt(max(c @ self.spec.gram(self.support, self.support) @ c, 0.0)))

    def eigen_coefficients(self) -> np.ndarray:
        """``h_j = <f_D, φ_j>_w`` (J,) on the grid eigenbasis (``eta`` specs)."""
        return self.spec.basis.coefficients(self.decision(self.spec.points))


def rkhs_distance(spec: ERMSpec, fit_a: ERMFit, fit_b: ERMFit) -> float:
    """``‖f_a − f_b‖_H`` of two fits (RKHS of the spec's space), from their representers."""
    pts = np.vstack([fit_a.support, fit_b.support])
    c = np.concatenate([fit_a.coefficients, -fit_b.coefficients])
    return float(np.sqrt(max(c @ spec.gram(pts, pts) @ c, 0.0)))


__all__ = ["DIMS", "ERMFit", "ERMSpec", "rkhs_distance"]
