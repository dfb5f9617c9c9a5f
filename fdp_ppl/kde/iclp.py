"""ICLP-QR kernel density estimate: estimator kernel ``K^η`` (operator power), ICLP (Laplace) noise.

Source: Lin & Reimherr (2026), §4.3 (eq. 12, Theorem 16, Remark 17) and §6.2;
``specs/iclp.md`` §2.3 errata: (a) the printed ``2M_K`` under-states Δ (the
proof gives ``2√M_K``), so the sensitivity is computed **exactly on the grid**;
(b) the ICLP covariance is the bandwidth-scaled kernel ``K_H(x, y) =
K(H^{-1/2}(x − y))`` restricted to the domain, and the estimator kernel is its
operator power ``K_H^η``; the bandwidth sign is ``h ≍ n^{-1/(4+d)}``.

Design
------
``K`` is a product of 1-D densities: the standard normal ``φ(u) = e^{-u²/2}/√(2π)``
(``kernel="gaussian"``, ``M_K = (2π)^{-d/2}``; the default in d = 1, the paper's Figure 3)
or the Laplace density ``L(u) = e^{-|u|}/2`` (``kernel="exponential"``, the L¹-exponential
product kernel ``exp(−Σ_k |x_k − y_k|/h_k)/2^d``, ``M_K = 2^{-d}``; the default in d >= 2,
the paper's Figure 4), so ``K_H(x, y) = Π_k φ((x_k − y_k)/h_k)`` (resp. ``L``); its
eigenpairs on the public Cartesian grid ``(λ_j, e_j)`` (quadrature-weighted,
Kronecker of 1-D pairs, :class:`~fdp_ppl.kde.ProductEigenbasis`). Each record
is snapped to its nearest grid node (a public, record-wise map), and

``f̂_D = 1/(n Π h_k) Σ_i K_H^η(·, x_i)``,   coefficient ``c_j = λ_j^η/(n Π h_k) Σ_i e_j(x_i)``

(η = 1 is the Gaussian KDE on the snapped records). Replacing one record
changes the coefficients by ``λ_j^η (e_j(a) − e_j(b))/(n Π h)``, so

``Δ = max_{a, b grid nodes} Σ_j λ_j^{η−1/2} |e_j(a) − e_j(b)| / (n Π h_k)``

in the ``‖·‖_{1,C}`` norm (C = K_H), attained by a pair of nodes: the exact
global sensitivity of the snapped estimator, never larger than the
Cauchy–Schwarz line of the proof of Theorem 16 nor than the corrected bound
``2√M_K √tr(K^{η−1})/(n Π h)``. The release is the ICLP mechanism,
``Laplace(c_j, Δ√λ_j/ε)`` on the retained eigenpairs.

Mass of the estimator
---------------------
Theorem 16 assumes ``∫ K^η = 1``. With the bandwidth-scaled kernel the operator
power does not integrate to one: one record's bump ``K_H^η(·, x)/(Π h_k)``
integrates to about ``λ^{η−1}`` of the leading eigenvalues (0.53 at η = 1.25,
h = 0.077 on [0, 1]), so ``f̂_D`` under-estimates the density everywhere (or
over-estimates it: the eigenvalues scale with h in data units, so the mass
depends on the unit; 1.59 at h = 6.42 on [140, 200]).
:meth:`ICLPKDESpec.public_mass` is that integral for a record at the centre of
the box (times n), a public constant; ``normalise=True`` divides the estimate
and every release by it. This is post-processing of the release: the
coefficients, the sensitivity and the noise are those of the unnormalised
estimator, so the privacy guarantee is unchanged (default ``False``: the
estimator of eq. 12 as printed).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..errors import InputError
from ..summaries.base import Sensitivity
from ._binning import compiled_node_counts, compiled_snap
from .gaussian import KDESpec, KDESummary
from .grid import DEFAULT_REL_TOL, CartesianGrid, max_pairwise_l1, public_cached
from .options import check_kde_options

ICLP_KDE_SOURCE = "Lin & Reimherr (2026), Section 4.3, eq. (12), Theorem 16; specs/iclp.md §2.3 (errata a, b)"
ICLP_KDE_BOUNDS = ("tight", "grid-cs", "corrected")
#: kernel K of the ICLP KDE: (product factor of ProductEigenbasis, per-axis K(0), name, covariance formula)
ICLP_KDE_KERNELS = {
    "gaussian": ("gaussian", 1.0 / np.sqrt(2 * np.pi), "gaussian-density^eta",
                 "ICLP covariance K_H(x, y) = prod_k phi((x_k - y_k)/h_k), phi = N(0,1) density"),
    "exponential": ("l1-exponential", 0.5, "laplace-density^eta",
                    "ICLP covariance K_H(x, y) = prod_k exp(-|x_k - y_k|/h_k)/2 (L1 exponential, Laplace density)"),
}


class ICLPKDESpec(KDESpec):
    """Public spec of the ICLP-QR KDE (Lin & Reimherr 2026, §4.3) on a Cartesian grid.

    Parameters
    ----------
    grid : CartesianGrid
        Public grid; its box is the public domain T; records are clipped to it
        and snapped to the nearest node.
    bandwidth : float or array (d,), or None
        ``h`` or per-axis ``h_k`` (data units); None: :func:`~fdp_ppl.kde.bandwidth_rule`.
    n : int
        Public number of records.
    eta : float
        Operator power of the estimator kernel, > 1 (the paper's Figure 3 uses
        1.25 and 1.5 in 1-D, Figure 4 1.01–1.2 in 2-D).
    kernel : {None, "gaussian", "exponential"}
        Per-axis density of K (module docstring). None: ``"gaussian"`` in d = 1,
        ``"exponential"`` (the paper's Figure 4) in d >= 2.
    rel_tol : float
        Eigenvalue cut-off (pairs dropped from estimate and noise alike).
    normalise : bool
        Default ``False`` (eq. 12 as printed). ``True``: divide the estimate
        (:attr:`KDESummary.density`) and every release by the public mass
        :meth:`public_mass` (module docstring). Post-processing with a public
        constant: coefficients, sensitivity and noise are those of the
        unnormalised estimator, so it costs no privacy. Recorded in the
        release attrs as ``normalise`` (0/1) and ``public_mass``.

    Raises
    ------
    InputError
        η <= 1, n < 2, h not finite and > 0, an unknown kernel.
    """

    name: ClassVar[str] = "kde-iclp-qr"
    kernel = "gaussian-density^eta"
    noise_kernel_kind = "gaussian"
    noise_kernel_formula = "ICLP covariance K_H(x, y) = prod_k phi((x_k - y_k)/h_k), phi = N(0,1) density"
    default_norm: ClassVar[str] = "1,C"
    norms: ClassVar[tuple] = ("1,C",)
    source: ClassVar[str] = ICLP_KDE_SOURCE
    mechanism_families: ClassVar[tuple] = ("iclp",)
    #: the ICLP mechanism accepts summaries in a kernel's eigenbasis
    eigenbasis_summary: ClassVar[bool] = True
    axis_variance = 1.0 / np.sqrt(2 * np.pi)

    def __init__(self, *, grid: CartesianGrid, bandwidth=None, n: int, eta: float = 1.25,
                 rel_tol: float = DEFAULT_REL_TOL, kernel: str | None = None, normalise: bool = False,
                 privacy_unit=None):
        eta = float(eta)
        check_kde_options("iclp", eta=eta)  # the one check of fdp-ppl kde and Python
        kind = kernel if kernel is not None else ("gaussian" if grid.d == 1 else "exponential")
        if kind not in ICLP_KDE_KERNELS:
            raise InputError(f"unknown ICLP KDE kernel {kernel!r}", f"use one of {tuple(ICLP_KDE_KERNELS)}")
        self.kernel_name = kind
        self.noise_kernel_kind, self.axis_variance, self.kernel, self.noise_kernel_formula = ICLP_KDE_KERNELS[kind]
        self.eta = eta
        self.normalise = bool(normalise)
        self._delta = None
        self._mass = None
        super().__init__(grid=grid, bandwidth=bandwidth, n=n, rel_tol=rel_tol, privacy_unit=privacy_unit)

    # ------------------------------------------------------------------ public structure
    @property
    def scale(self) -> float:
        """``1/(n Π h_k)`` (eq. 12 with ``√det H = Π h_k``)."""
        return 1.0 / (self.n * float(np.prod(self.bandwidths)))

    @property
    def params(self) -> dict:
        return {"eta": self.eta, "iclp_kernel": self.kernel_name, "normalise": int(self.normalise),
                "public_mass": self.public_mass()}

    def public_mass(self) -> float:
        """``n ∫ K_H^η(·, c)/(n Π h_k)`` for a record at the centre ``c`` of the box (public; cached).

        The mass of the estimator of eq. (12) (one record's bump times n). Theorem 16 assumes it is 1; with the
        bandwidth-scaled kernel it is about ``λ^{η−1}`` of the leading eigenvalues (module docstring).
        """
        if self._mass is None:
            def build():
                centre = self.grid.domain.mean(axis=1)
                coef = (self.basis.functions_at(self.snap(centre[None, :]))[0] * self.eigenvalues ** self.eta
                        * self.scale)
                return float(self.n * self.grid.integrate(self.basis.reconstruct(coef)))

            self._mass = public_cached(("iclp-mass", self._public_key, self.eta), build)
        return self._mass

    @property
    def release_scale(self) -> float:
        """Factor applied to the estimate and to every release: ``1/public_mass`` if ``normalise``, else 1."""
        return 1.0 / self.public_mass() if self.normalise else 1.0

    def _record_norm_bound(self) -> float:
        return float(self.sensitivity().value * self.n / 2)

    def _node_rows(self) -> np.ndarray:
        """``λ_j^{η−1/2} e_j(node) / (n Π h)`` at every grid node, shape (Π K_k, J)."""
        idx = np.stack(np.meshgrid(*[np.arange(k) for k in self.grid.shape], indexing="ij"), -1).reshape(-1, self.d)
        return self.basis.functions_at(idx) * (self.eigenvalues ** (self.eta - 0.5) * self.scale)

    def _exact_delta(self) -> float:
        if self._delta is None:  # public: once per configuration (grid.public_cached), O((Π K_k)² J) at worst
            self._delta = public_cached(("iclp-delta", self._public_key, self.eta),
                                        lambda: max_pairwise_l1(self._node_rows()))
        return self._delta

    def kernel_power_diagonal_and_max_gap(self) -> tuple[float, float]:
        """``M_K = max_a K^η(a, a)`` and ``max_{a,b} (K^η(a,a) − 2K^η(a,b) + K^η(b,b))`` over grid nodes."""
        idx = np.stack(np.meshgrid(*[np.arange(k) for k in self.grid.shape], indexing="ij"), -1).reshape(-1, self.d)
        e = self.basis.functions_at(idx) * self.eigenvalues ** (self.eta / 2)
        gram = e @ e.T
        diag = np.diag(gram)
        gap = diag[:, None] - 2 * gram + diag[None, :]
        return float(diag.max()), float(gap.max())

    def printed_bound(self) -> float:
        """Theorem 16 as printed, ``2 M_K √tr(K^{η−1}) / (n Π h)`` (under-states Δ when M_K < 1; comparison only)."""
        mk, _ = self.kernel_power_diagonal_and_max_gap()
        return 2 * mk * np.sqrt(np.sum(self.eigenvalues ** (self.eta - 1))) * self.scale

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """Sensitivity in the ``‖·‖_{1,C}`` norm, C = K_H.

        Parameters
        ----------
        norm : {"1,C"}
        bound : {"tight", "grid-cs", "corrected"}
            ``"tight"``: exact, ``max`` over pairs of grid nodes of
            ``Σ_j λ_j^{η−1/2}|e_j(a) − e_j(b)|/(n Π h)`` (attained);
            ``"grid-cs"``: the proof's Cauchy–Schwarz line evaluated exactly on
            the grid (``specs/iclp.md`` §2.3 a);
            ``"corrected"``: ``2√M_K √tr(K^{η−1})/(n Π h)``.

        Raises
        ------
        InputError
            Another norm or bound (the printed ``2M_K`` bound is not a valid calibration).
        """
        norm = norm or self.default_norm
        if norm != "1,C":
            raise InputError(f"the ICLP KDE spec has no {norm!r} sensitivity", "use norm='1,C' (ICLP mechanism)")
        tr = float(np.sum(self.eigenvalues ** (self.eta - 1)))
        if bound == "tight":
            value, src = self._exact_delta(), "exact on the grid (specs/iclp.md §2.3 a)"
        elif bound == "grid-cs":
            _, gap = self.kernel_power_diagonal_and_max_gap()
            value, src = np.sqrt(tr) * np.sqrt(gap) * self.scale, "Theorem 16 proof, middle line, max over grid"
        elif bound == "corrected":
            mk, _ = self.kernel_power_diagonal_and_max_gap()
            value, src = 2 * np.sqrt(mk) * np.sqrt(tr) * self.scale, "Theorem 16 with 2 sqrt(M_K) (specs/iclp.md §2.3 a)"
        else:
            raise InputError(f"unknown bound {bound!r} for the ICLP KDE",
                             f"use one of {ICLP_KDE_BOUNDS} (the printed 2 M_K bound under-states the sensitivity)")
        return Sensitivity(value=float(value), norm="1,C", bound=bound,
                           assumptions="records clipped to the public box and snapped to the nearest grid node; "
                                       "h, eta, grid fixed a priori",
                           source=f"{ICLP_KDE_SOURCE}; {src}")

    def estimator_attrs(self) -> dict:
        """Records are snapped to grid nodes and counted (exact; no binning approximation)."""
        return {"kde_estimator": "snapped (grid-node counts)"}

    def noise_covariance_text(self) -> str:
        return "ICLP: independent Laplace(0, b_j), b_j = sensitivity sqrt(lambda_j)/epsilon, on the eigenpairs of K_H"

    # ------------------------------------------------------------------ data
    def snap(self, points) -> np.ndarray:
        """Nearest grid-node indices of ``points`` (m, d) (already in the box), shape (m, d)."""
        pts = np.atleast_2d(np.asarray(points, dtype=float))
        out = np.empty(pts.shape, dtype=np.int64)
        for k, a in enumerate(self.grid.axes):  # O(m log K) memory O(m); ties go to the lower node
            x = pts[:, k]
            fast = compiled_snap(a, x)  # evenly spaced axis: one compiled O(m) pass, the same nodes
            if fast is not None:
                out[:, k] = fast
                continue
            i = np.clip(np.searchsorted(a, x, side="left"), 1, a.size - 1)
            out[:, k] = np.where(np.abs(x - a[i - 1]) <= np.abs(x - a[i]), i - 1, i)
        return out

    def record_coefficients(self, x) -> np.ndarray:
        """Coefficients (J,) of one record ``x`` (d,): ``λ_j^η e_j(node(x)) / (n Π h)``."""
        x = np.clip(np.asarray(x, dtype=float), self.grid.domain[:, 0], self.grid.domain[:, 1])
        return self.basis.functions_at(self.snap(x[None, :]))[0] * self.eigenvalues ** self.eta * self.scale

    def fit(self, observations, units=None) -> KDESummary:
        """Clip to the box, snap to the grid and compute ``f̂_D`` (non-private; grid values divided by the public
        mass when ``normalise``); ``units`` with a privacy unit (:meth:`KDESpec.fit`).

        Raises
        ------
        InputError
            Wrong shape, non-finite values or a count different from the public n.
        """
        from ..io.records import is_lazy

        if is_lazy(observations):  # records out of core: node counts reduced chunk by chunk on dask
            return self._fit_lazy(observations, units)
        self.check_size(n_records=np.shape(observations)[0] if np.ndim(observations) else None)
        # records snapped to the nearest node, which clamps them to the box as clipping does (no copy)
        obs, n_clipped = self._check_observations(observations, units, clip=False)
        obs, weights = self._unit_select(obs, units)
        return self.fit_counts(self._node_counts(obs, weights), n_clipped)

    def _node_counts(self, obs, weights=None) -> np.ndarray:
        """Grid-node counts (grid shape) of finite records (m, d), a unit weighing ``n × weight``: snapped (the
        nearest node of a record outside the box is that of its clipped value) and counted in one compiled pass
        on an evenly spaced grid (d <= 2), else clipped, :meth:`snap` and ``np.bincount``."""
        w = None if weights is None else self.n * np.asarray(weights, dtype=float)
        counts = np.zeros(self.grid.shape)
        if compiled_node_counts(self.grid.axes, obs, w, counts):
            return counts
        clipped, _ = self._clip(obs)
        flat = np.ravel_multi_index(tuple(self.snap(clipped).T), self.grid.shape)
        return np.bincount(flat, weights=w, minlength=counts.size).astype(float).reshape(self.grid.shape)

    @property
    def _sums_shape(self) -> tuple:
        return tuple(self.grid.shape)

    def chunk_sums(self, block) -> np.ndarray:
        """One chunk's grid-node counts, flat (data holder only): finite records (m, d) clipped to the box and
        snapped (:meth:`snap`); the last entry is the number of records clipped."""
        clipped, n_clipped = self._clip(np.asarray(block, dtype=float))
        return np.append(self._node_counts(clipped).ravel(), n_clipped)

    def _from_sums(self, part, n_clipped: int) -> KDESummary:
        return self.fit_counts(part, n_clipped)

    def fit_counts(self, counts, n_clipped: int = 0) -> KDESummary:
        """``f̂_D`` from grid-node counts (grid shape; a record or unit counts 1), e.g. summed over chunks of
        records read out of core (:meth:`chunk_sums`)."""
        total = self.basis.node_sums(np.asarray(counts, dtype=float))  # a unit weighs one record (1/n)
        coef = total * self.eigenvalues ** self.eta * self.scale
        # grid values divided by the public mass when normalise (the coefficients stay those of eq. 12)
        return KDESummary(self, coef, self.basis.reconstruct(coef) * self.release_scale, n_clipped)


def one_c_difference(spec: ICLPKDESpec, x, x_prime) -> np.ndarray:
    """``‖f̂_D − f̂_{D'}‖_{1,C} = Σ_j |c_j − c'_j|/√λ_j`` for replaced records ``x → x'`` (m, d); shape (m,)."""
    from .gaussian import _pair_norms

    return _pair_norms(spec, x, x_prime, lambda c: np.sum(np.abs(c) / np.sqrt(spec.eigenvalues)))


__all__ = ["ICLPKDESpec", "one_c_difference", "ICLP_KDE_SOURCE", "ICLP_KDE_BOUNDS", "ICLP_KDE_KERNELS"]
