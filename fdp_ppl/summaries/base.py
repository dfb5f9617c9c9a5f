"""Public summary specifications and fitted summaries.

A :class:`SummarySpec` is the public half of a summary: basis (or lattice),
clipping bound τ, the public number of records n and the tuning parameters
(η, ψ, M, k). It gives the sensitivity, the shrinkage, the public
``constant_data`` and attributes of a release **without any data**, so a
budget can be planned (``mechanism.calibrate(spec)``) before the curves are
seen, in the spirit of OpenDP's transformations.

``spec.fit(curves)`` clips the records to τ, averages them and returns a
:class:`LinearSummary`: the spec, the non-private coefficients and a
data-holder :class:`DataHolderReport` (how many records were clipped) that
never enters a release.

The sensitivity of every mean summary rests on one fact: for neighbouring
datasets (replace one record, n public) the clipped sample mean changes by
``h = (X_1 − X_1')/n`` with ``‖h‖ <= 2τ/n``, and coefficient ``j`` of the
summary changes by at most ``lipschitz[j] · |h_j|``.

**Add/remove** (``neighbouring="add-remove"``, membership protected, n private): a mean spec with a public
lower bound ``n_lower = n₀`` averages by ``S/max(n, n₀)`` (S the sum of the clipped records), which moves by
at most ``2τ/(n₀ + 1)`` when one record is added or removed, whatever n (docs/DESIGN.md, "What a release
protects"; :meth:`SummarySpec.mean_step`). Every bound below uses only ``‖h‖``, so each holds with ``2τ/n``
replaced by ``2τ/(n₀ + 1)``; the public defaults that the replace-one specs take from n (ψ = 1/n, M) are
taken from n₀.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from .. import dims
from .._names import ADD_REMOVE, REPLACE_ONE, canonical_relation
from ..errors import InputError, check_positive
from .curves import DataDerived, curves_and_grid, record_and_grid_dims

#: Sensitivity norms understood by :meth:`SummarySpec.sensitivity`.
NORMS = ("1,C", "cameron-martin", "l1")
NEIGHBOURING = "replace-one record; n public"


@dataclass(frozen=True)
class Sensitivity:
    """Global sensitivity of a summary, with what it rests on.

    Attributes
    ----------
    value : float
        ``Δ = sup_{D ~ D'} ‖f_D − f_{D'}‖`` in ``norm``.
    norm : {"1,C", "cameron-martin", "l1"}
        ``"1,C"``: ``Σ_j |h_j|/√λ_j`` (ICLP); ``"cameron-martin"``:
        ``(Σ_j h_j²/λ_j)^{1/2}`` (Gaussian mechanism); ``"l1"``: ``Σ_j |h_j|``
        over the retained coefficients (FRL).
    bound : str
        Which bound gave ``value`` ("tight", "paper", "closed-form").
    neighbouring : str
        The neighbouring relation (replace one record, n public).
    assumptions : str
        What the bound assumes, e.g. the public clipping bound τ.
    source : str
        Paper, theorem or equation.
    data_dependent : bool
        True when a quantity behind the bound was computed from private data
        (a :class:`~fdp_ppl.errors.PrivacyLeakWarning` was raised).

    Examples
    --------
    The Cameron–Martin sensitivity of an RKHS mean, from public quantities only:

    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> sens = fp.RKHSSpec(basis=basis, tau=1.0, n=100).sensitivity()
    >>> round(sens.value, 4), sens.norm, sens.bound
    (0.0999, 'cameron-martin', 'tight')
    >>> sens.source
    'Mirshani et al. (2019), Theorem 4.1 (sup_j form)'
    >>> sens.attrs()["sensitivity_data_dependent"]    # τ was public
    0

    See Also
    --------
    SummarySpec.sensitivity : the bounds (tight, paper, closed form) in each norm.
    """

    value: float
    norm: str
    bound: str
    neighbouring: str = NEIGHBOURING
    assumptions: str = ""
    source: str = ""
    data_dependent: bool = False

    def attrs(self) -> dict:
        return {
            "sensitivity": float(self.value),
            "sensitivity_norm": self.norm,
            "sensitivity_bound": self.bound,
            "neighbouring": self.neighbouring,
            "sensitivity_assumptions": self.assumptions,
            "sensitivity_source": self.source,
            "sensitivity_data_dependent": int(self.data_dependent),
        }


def public_tau(tau, name: str = "tau", fix: str = "pass a public bound on the curves' L2 norm") -> float:
    """Check τ > 0, keeping the :class:`DataDerived` label if it has one."""
    if isinstance(tau, DataDerived):
        return DataDerived(check_positive(tau, name))
    return check_positive(tau, name, fix)


def public_n(n, name: str = "n", what: str = "the public number of records") -> int:
    """Check the public number of records n (an integer >= 2)."""
    try:
        ok = not isinstance(n, bool) and float(n).is_integer() and int(n) >= 2
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise InputError(f"{name} must be an integer >= 2 ({what}), got {n!r}",
                         "pass the number of records the release is for" if name == "n" else
                         f"pass {name}=N, a public lower bound on the number of records")
    return int(n)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class SummarySpec:
    """Public specification of a summary (no data): see the module docstring.

    Subclasses set the class attributes and implement :attr:`n_components`,
    :attr:`lipschitz`, :attr:`design`, :attr:`grid`, :meth:`public_dataset`,
    :meth:`basis_attrs` and :meth:`_coefficients`.

    Attributes
    ----------
    tau : float
        Public clipping bound (L² norm on the grid; sup norm for Bernstein).
    n : int
        Public number of records after contribution bounding: the number of units (``combine``) or
        k × the number of units (``max_contributions=k``) when ``privacy_unit`` is given. Under
        ``neighbouring="add-remove"`` n is private: omit it (it is then ``n_lower``, the only n the
        release knows, used for the public defaults, the δ check and the file's ``n``).
    privacy_unit : PrivacyUnit, optional
        The unit the guarantee is stated for (:class:`fdp_ppl.io.units.PrivacyUnit`): :meth:`fit`
        bounds each unit's contribution by its public rule, and the sensitivity is that of
        replacing one unit (``contributions`` records). Default: one record.
    neighbouring : {"replace-one", "add-remove"}
        ``"replace-one"`` (default): one unit replaced, n public. ``"add-remove"``: one unit added or
        removed, n private (membership protected); mean curves only (:attr:`add_remove`), with ``n_lower``
        and, for a person unit, ``combine="mean"`` (docs/DESIGN.md, "What a release protects").
    n_lower : int, optional
        Under add/remove, a public lower bound n₀ >= 2 on the number of records (units): the summary
        averages by ``max(n, n₀)``, so a dataset below n₀ is shrunk toward 0 (never refused), and the
        sensitivity is that of ``2τ/(n₀ + 1)`` (:meth:`mean_step`).

    Examples
    --------
    Every spec answers the same public questions before any data are seen:

    >>> import fdp_ppl as fp
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=100)
    >>> isinstance(spec, fp.SummarySpec), spec.n_components, spec.default_norm
    (True, 50, '1,C')
    >>> round(spec.sensitivity().value, 4), round(spec.sensitivity("cameron-martin").value, 4)
    (0.1376, 0.0489)
    >>> spec.attrs()["summary"], spec.attrs()["privacy_unit"]
    ('iclp-qr', 'record')

    See Also
    --------
    ICLPQRSpec, RKHSSpec, ICLPARSpec, FRLSpec, SampleMeanSpec, BernsteinSpec : the concrete specs.
    """

    tau: float
    n: int | None = None
    privacy_unit: object = None
    neighbouring: str = REPLACE_ONE
    n_lower: int | None = None

    #: short name recorded in releases ("iclp-qr", "frl", ...)
    name: ClassVar[str] = ""
    #: the norm the summary's natural mechanism uses
    default_norm: ClassVar[str] = "1,C"
    #: paper and equation
    source: ClassVar[str] = ""
    #: norms the spec has a sensitivity in
    norms: ClassVar[tuple[str, ...]] = NORMS
    #: whether coefficients are ``shrinkage * X̄_j`` (linear in the clipped mean)
    linear: ClassVar[bool] = True
    #: whether the spec derives an add/remove sensitivity (``neighbouring="add-remove"`` with ``n_lower``)
    add_remove: ClassVar[bool] = False

    @classmethod
    def check_tau(cls, tau) -> float:
        """The spec's check of its public bound τ, without data (a command line runs it before reading any).

        Raises
        ------
        InputError
            τ not finite and > 0.

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> fp.ICLPQRSpec.check_tau(2)
        2.0
        """
        return public_tau(tau)

    def __post_init__(self):
        object.__setattr__(self, "tau", self.check_tau(self.tau))
        self._check_relation()
        if self.privacy_unit is not None:
            from ..io.units import PrivacyUnit

            if not isinstance(self.privacy_unit, PrivacyUnit):
                raise InputError("privacy_unit must be an fdp_ppl.io.units.PrivacyUnit",
                                 "e.g. privacy_unit=PrivacyUnit('subject_id', combine='mean')")
            if self.n % self.privacy_unit.contributions:
                raise InputError(f"n = {self.n} is not a multiple of the {self.privacy_unit.contributions} records "
                                 "each unit contributes", "pass n = contributions x the number of units")

    def _check_relation(self) -> None:
        """Set the relation, n and n_lower (:attr:`neighbouring`); refuse add/remove where no sensitivity is derived."""
        relation = canonical_relation(self.neighbouring)
        if relation is None:
            raise InputError(f"unknown neighbouring relation {self.neighbouring!r}",
                             "use neighbouring='replace-one' (n public) or neighbouring='add-remove' (membership "
                             "protected, with n_lower=N)")
        object.__setattr__(self, "neighbouring", relation)
        if relation == REPLACE_ONE:
            if self.n_lower is not None:
                raise InputError("n_lower applies to neighbouring='add-remove' (n private); under replace-one n is "
                                 "public", "drop n_lower, or pass neighbouring='add-remove' without n")
            object.__setattr__(self, "n", public_n(self.n))
            return
        if not self.add_remove:
            raise InputError(f"the {self.name or type(self).__name__} summary has no add/remove sensitivity (it is "
                             "derived for replace-one with n public)", "for membership protection release a mean "
                             "curve (ICLPQRSpec, RKHSSpec, ICLPARSpec, FRLSpec, SampleMeanSpec; --mechanism iclp-qr, "
                             "iclp-ar, frl, gaussian, rkhs-gaussian, t-process) with neighbouring='add-remove', "
                             "n_lower=N")
        n_lower = public_n(self.n_lower, "n_lower", "a public lower bound on the number of records under add/remove")
        if self.n is not None and (isinstance(self.n, bool) or self.n != n_lower):
            raise InputError(f"n={self.n!r} was given with neighbouring='add-remove': n is private under add/remove",
                             "pass only n_lower=N (a public lower bound on the number of records)")
        if self.privacy_unit is not None and getattr(self.privacy_unit, "contributions", 1) != 1:
            raise InputError("add/remove with max_contributions > 1 (padded units) has no derived sensitivity",
                             "pass privacy_unit=PrivacyUnit(column, combine='mean') (one combined record per unit)")
        object.__setattr__(self, "n_lower", n_lower)
        object.__setattr__(self, "n", n_lower)  # the only n the release knows (defaults, δ check, the file's n)

    @property
    def contributions(self) -> int:
        """Records one neighbouring change replaces: 1, or k with ``PrivacyUnit(max_contributions=k)``."""
        return 1 if self.privacy_unit is None else self.privacy_unit.contributions

    def mean_step(self) -> float:
        """The most the averaged clipped records move for neighbouring data, in the record norm: ``2τ/n``
        (replace-one, n public) or ``2τ/(n₀ + 1)`` (add/remove with ``n_lower = n₀``).

        Add/remove: the summary averages by ``f(D) = S(D)/max(n, n₀)`` (S the sum of records, ‖x‖ <= τ).
        Adding x to D of size n changes f by ``x/n₀`` when ``n + 1 <= n₀`` (both divisors are n₀; this covers
        n + 1 = n₀, where n reaches n₀), and by ``(x − S/n)/(n + 1)`` when ``n >= n₀``, of norm at most
        ``2τ/(n + 1) <= 2τ/(n₀ + 1)`` (‖S/n‖ <= τ); removing is the same pair read backwards. So
        ``Δ = max(τ/n₀, 2τ/(n₀ + 1)) = 2τ/(n₀ + 1)`` for n₀ >= 1, attained at n = n₀ by n₀ copies of −x
        and x added, with ‖x‖ = τ. An upper bound on n bounds nothing (f moves most when n is small).

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(20))
        >>> fp.SampleMeanSpec(basis=basis, tau=1.0, n=100).mean_step()
        0.02
        >>> round(fp.SampleMeanSpec(basis=basis, tau=1.0, neighbouring="add-remove", n_lower=99).mean_step(), 6)
        0.02
        """
        if self.neighbouring == ADD_REMOVE:
            return 2.0 * self.tau / (self.n_lower + 1)
        return 2.0 * self.tau / self.n

    def divisor(self, n_records: int) -> int:
        """What the fit divides the sum of clipped records by: n (replace-one, where it must equal the public n),
        or ``max(n, n_lower)`` (add/remove)."""
        return max(int(n_records), self.n_lower) if self.neighbouring == ADD_REMOVE else int(n_records)

    def neighbouring_text(self) -> str:
        """The neighbouring relation in words (recorded in the sensitivity and the release)."""
        if self.neighbouring == ADD_REMOVE:
            who = "record" if self.privacy_unit is None else f"{self.privacy_unit.column} (its records combined by the mean)"
            return (f"add or remove one {who}; n private (the mean divides by max(n, n_lower), n_lower = "
                    f"{self.n_lower} public)")
        if self.privacy_unit is None:
            return NEIGHBOURING
        u = self.privacy_unit
        return (f"replace one {u.column} ({u.contributions} record{'s' if u.contributions > 1 else ''} after "
                f"bounding: {'combined by the mean' if u.combine else f'at most {u.contributions} kept, padded'}); "
                "the number of units public")

    def _unit_sensitivity(self, sens: Sensitivity) -> Sensitivity:
        """``sens`` of one record scaled to one unit (× contributions; group privacy, exact for linear summaries)."""
        k = self.contributions
        if self.privacy_unit is None:
            return sens
        return dataclasses.replace(
            sens, value=sens.value * k, neighbouring=self.neighbouring_text(),
            assumptions=sens.assumptions + (f"; one unit replaces up to {k} records: sensitivity x {k}" if k > 1
                                            else "; one unit is one combined record"))

    # ------------------------------------------------------------------ structure
    def public_key(self) -> tuple | None:
        """The spec's public configuration as a hashable key (its class and its fields: basis, τ, n, unit,
        tuning), under which the public work of releasing it (calibration, release template) is cached across
        specs; None when τ comes from the data or a field is not hashable (nothing is then shared).

        Examples
        --------
        >>> import fdp_ppl as fp
        >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(20))
        >>> key = fp.ICLPQRSpec(basis=basis, tau=1, n=50).public_key()
        >>> key == fp.ICLPQRSpec(basis=basis, tau=1.0, n=50).public_key(), key == fp.RKHSSpec(basis=basis, tau=1, n=50).public_key()
        (True, False)
        """
        cached = self.__dict__.get("_public_key_cache")
        if cached is not None:  # the fields are frozen: computed once per spec (twice a release otherwise)
            return cached[0]
        key = None
        if not self.data_dependent:
            values = tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self))
            try:
                hash(values)
                key = (type(self), values)
            except TypeError:
                key = None
        object.__setattr__(self, "_public_key_cache", (key,))
        return key

    @property
    def data_dependent(self) -> bool:
        """True if τ was computed from the private data (:func:`~fdp_ppl.summaries.data_tau`)."""
        return isinstance(self.tau, DataDerived)

    @property
    def params(self) -> dict[str, Any]:
        """Tuning parameters recorded in releases (η, ψ, M, J*, lattice k)."""
        return {}

    @property
    def n_components(self) -> int:
        """Number J of released coefficients."""
        raise NotImplementedError

    @property
    def lipschitz(self) -> np.ndarray:
        """Per-coefficient Lipschitz constants ``a_j`` with respect to the clipped mean, shape (J,)."""
        raise NotImplementedError

    @property
    def grid(self):
        """The evaluation grid of the curves."""
        raise NotImplementedError

    @property
    def design(self) -> np.ndarray:
        """Map from the J coefficients to the curve on the grid, shape (K, J)."""
        raise NotImplementedError

    @property
    def eigenvalues(self) -> np.ndarray:
        """Retained eigenvalues λ_1..λ_J, shape (J,)."""
        raise AttributeError(f"the {self.name} summary has no eigenvalues")

    @property
    def shrinkage(self) -> np.ndarray:
        """``s_j`` with ``coefficient_j = s_j · X̄_j`` for linear summaries, shape (J,).

        Raises
        ------
        InputError
            For summaries that are not linear in the clipped mean (ICLP-AR).
        """
        if not self.linear:
            raise InputError(f"the {self.name} summary is not linear in the sample mean",
                             "use target='summary' for inference, or a linear summary (FRL, ICLP-QR, RKHS, Bernstein)")
        return np.asarray(self.lipschitz, dtype=float)

    def public_dataset(self) -> xr.Dataset:
        """Public description of the basis, copied into a release's ``constant_data``."""
        raise NotImplementedError

    def basis_attrs(self) -> dict:
        """Kernel / lattice metadata for releases."""
        raise NotImplementedError

    # ------------------------------------------------------------------ privacy
    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """Global sensitivity in ``norm`` from public quantities (τ, n, λ_j, tuning).

        Parameters
        ----------
        norm : {"1,C", "cameron-martin", "l1"}, optional
            Defaults to the summary's natural norm.
        bound : {"tight", "paper", "closed-form"}
            For the ℓ¹-type norms ("1,C", "l1") with multipliers
            ``m_j = a_j/√λ_j`` (resp. ``a_j``):
            ``"paper"`` is ``(2τ/n) Σ_j m_j`` (Lin & Reimherr 2026, Theorem 12,
            each coefficient bounded separately);
            ``"tight"`` is ``(2τ/n) (Σ_j m_j²)^{1/2}`` (Cauchy–Schwarz with
            Bessel's inequality, ``specs/iclp.md`` §2.2; attained by
            ``X_1 − X_1' ∝ Σ_j m_j φ_j``).
            For "cameron-martin": ``"tight"`` (also "paper") is
            ``(2τ/n) max_j a_j/√λ_j`` (Mirshani et al. 2019, Theorem 4.1,
            first form; attained by ``X_1 = τφ_{j*} = −X_1'``) and
            ``"closed-form"`` is the ridge closed form (:meth:`_closed_form`).

        Returns
        -------
        Sensitivity

        Raises
        ------
        InputError
            Unknown norm or bound, or a closed form that does not apply.
        """
        norm = norm or self.default_norm
        if norm not in NORMS:
            raise InputError(f"unknown sensitivity norm {norm!r}", f"use one of {NORMS}")
        a = np.asarray(self.lipschitz, dtype=float)
        scale = self.mean_step()
        assumptions = f"each record clipped to L2 norm <= tau={self.tau:g} on the grid; " + (
            f"n={self.n}" if self.neighbouring != ADD_REMOVE else
            f"add/remove with n private, divided by max(n, n_lower={self.n_lower}): 2 tau/(n_lower + 1)")
        if norm in ("1,C", "l1"):
            m = a / np.sqrt(self.eigenvalues) if norm == "1,C" else a
            if bound == "paper":
                value = scale * float(np.sum(m))
                src = "Lin & Reimherr (2026), Theorem 12 (coefficient-wise bound)"
            elif bound == "tight":
                value = scale * float(np.sqrt(np.sum(m * m)))
                src = "specs/iclp.md §2.2 (Cauchy–Schwarz + Bessel; tight under ‖X‖ <= tau)"
            else:
                raise InputError(f"bound {bound!r} is not available for norm {norm!r}", "use 'tight' or 'paper'")
        else:
            if bound in ("tight", "paper"):
                value = scale * float(np.max(a / np.sqrt(self.eigenvalues)))
                src = "Mirshani et al. (2019), Theorem 4.1 (sup_j form)"
            elif bound == "closed-form":
                value = self._closed_form()
                src = "Mirshani et al. (2019), Theorem 4.1 (closed form)"
            else:
                raise InputError(f"unknown bound {bound!r}", "use 'tight', 'paper' or 'closed-form'")
        if self.neighbouring == ADD_REMOVE:
            src += "; add/remove: docs/DESIGN.md, \"What a release protects\""
        return self._unit_sensitivity(Sensitivity(value=value, norm=norm, bound=bound, assumptions=assumptions,
                                                  source=src, data_dependent=self.data_dependent,
                                                  neighbouring=self.neighbouring_text()))

    def _closed_form(self) -> float:
        raise InputError("the closed-form Cameron–Martin bound applies only to ridge (RKHS) means with eta >= 1",
                         "use bound='tight'")

    def attrs(self) -> dict:
        """Public metadata of the summary."""
        out = {"summary": self.name, "tau": float(self.tau), "n": int(self.n),
               "n_components": self.n_components, "summary_source": self.source,
               **(self.privacy_unit.attrs() if self.privacy_unit is not None else {"privacy_unit": "record"})}
        if self.neighbouring == ADD_REMOVE:  # n is the public lower bound: the number of records is not released
            out.update(n_lower=int(self.n_lower), n_private=1)
        out.update(self.params)
        return out

    # ------------------------------------------------------------------ data
    def _coefficients(self, curves, curve_dim=None, t_dim=None, offset=None) -> tuple[np.ndarray, int, int]:
        """(non-private coefficients (J,), number of records, number clipped); a public ``offset`` (K,)
        is subtracted from every record before clipping."""
        raise NotImplementedError

    def fit(self, curves, *, record_dim: str | None = None, t_dim: str | None = None, offset=None,
            offset_source: str = "", curve_dim: str | None = None) -> "LinearSummary":
        """Clip ``curves`` (minus a public ``offset``) to τ and compute the summary (non-private).

        Parameters
        ----------
        curves : xr.DataArray (curve, t) or ndarray (n, K) on :attr:`grid`
            A DataArray's ``units`` / ``long_name`` (and ``t_units`` / ``t_name``,
            or its grid coordinate's attrs) are public descriptions carried to the
            release.
        record_dim, t_dim : str, optional
            Names of the record and grid dims of a DataArray (see
            :func:`~fdp_ppl.summaries.curves.record_and_grid_dims`); ``curve_dim``
            is an alias of ``record_dim``.
        offset : array_like, shape (K,), optional
            A **public** curve (e.g. a published reference chart, never computed
            from these records) subtracted from every record before clipping; τ
            then bounds the deviations, and releases add the offset back.
        offset_source : str
            Where the offset comes from (recorded in releases).

        Returns
        -------
        LinearSummary
            This spec with the coefficients, the public offset and labels, and a
            data-holder report.

        Raises
        ------
        InputError
            NaN/inf curves or offset, an offset of the wrong length, a grid that
            differs from the spec's, or a number of records different from the public n.
        """
        curve_dim = record_dim or curve_dim
        labels = curve_labels(curves, curve_dim, t_dim)
        if self.privacy_unit is not None:
            curves, curve_dim = self._bound_units(curves, curve_dim, t_dim, offset)
        if self.neighbouring == ADD_REMOVE:  # any n, 0 and 1 included: two public records of zero deviation
            curves, curve_dim, t_dim = self._with_pads(curves, curve_dim, t_dim, offset)
        if offset is not None:
            offset = np.asarray(offset, dtype=float).ravel()
            if offset.shape != (self.grid.size,) or not np.all(np.isfinite(offset)):
                raise InputError(f"offset must be {self.grid.size} finite values (one per grid point), got shape "
                                 f"{offset.shape}", "pass a public curve on the curves' grid")
            da, _ = curves_and_grid(curves, self.grid if not hasattr(curves, "dims") else None,
                                    curve_dim=curve_dim, t_dim=t_dim)
            curves, curve_dim, t_dim = da, None, None
        # the offset is subtracted block by block inside the one pass over the data (no copy of the curves)
        coef, n, n_clipped = self._coefficients(curves, curve_dim, t_dim, offset=offset)
        if self.neighbouring == ADD_REMOVE:
            n -= self.PADS  # _coefficients divided the sum by max(n, n_lower) for the n without the pads
        elif n != self.n:
            raise InputError(f"the data have {n} records but the spec was built for the public n={self.n}",
                             "n is public: build the spec with the number of records the release is for")
        return LinearSummary(self, np.asarray(coef, dtype=float), DataHolderReport(n_records=n, n_clipped=n_clipped),
                             offset=offset, offset_source=str(offset_source), labels=labels)

    #: public records of zero deviation (the offset, or 0) a fit under add/remove appends, so that a dataset of any
    #: size, 0 and 1 included, is averaged (by n_lower) rather than refused; they add nothing to the sum
    PADS: ClassVar[int] = 2

    def _with_pads(self, curves, curve_dim, t_dim, offset):
        """``(curves with PADS public rows of zero deviation appended, record dim, grid dim)`` (add/remove)."""
        K = self.grid.size
        row = np.zeros(K) if offset is None else np.asarray(offset, dtype=float).ravel()
        if row.shape != (K,):
            return curves, curve_dim, t_dim  # fit refuses the offset with its own message
        pads = np.repeat(row[None], self.PADS, axis=0)
        if isinstance(curves, xr.DataArray):
            rec, t = record_and_grid_dims(curves.dims, record_dim=curve_dim, t_dim=t_dim)
            da = curves.transpose(rec, t).reset_coords(drop=True)
            da = da.drop_vars([c for c in da.coords if c != t])
            pad = xr.DataArray(pads, dims=(rec, t), coords={t: da[t].values} if t in da.coords else None)
            return xr.concat([da, pad], dim=rec), rec, t
        from .curves import as_record_array

        arr = np.asarray(curves, dtype=float)
        arr = arr.reshape(0, K) if arr.size == 0 else as_record_array(curves)
        return np.concatenate([arr, pads]), curve_dim, t_dim

    def _bound_units(self, curves, curve_dim, t_dim, offset):
        """The records after the privacy unit's contribution bounding (data holder only)."""
        if not isinstance(curves, xr.DataArray):
            raise InputError(f"a privacy unit needs curves with the coordinate {self.privacy_unit.column!r}",
                             "pass an xr.DataArray (curve, t) with the unit coordinate along the record dim")
        from .curves import record_and_grid_dims

        rec, _ = record_and_grid_dims(curves.dims, record_dim=curve_dim, t_dim=t_dim)
        centre = None
        if offset is not None:
            centre = np.asarray(offset, dtype=float).ravel()
            if curves.dims.index(rec) != 0:
                curves = curves.transpose(rec, ...)
        return self.privacy_unit.apply(curves, record_dim=rec, centre=centre), rec

    def constant_gain(self) -> np.ndarray | None:
        """The share of a constant curve the noise-free summary keeps at each grid point, shape (K,) (see
        :meth:`fdp_ppl.summaries.mean.EigenSpec.constant_gain`); ones here (a summary that reproduces
        constants, e.g. Bernstein polynomials)."""
        return np.ones(self.grid.size)

    @classmethod
    def shrinkage_from_public(cls, eigenvalues: np.ndarray, attrs: dict) -> np.ndarray:
        """Shrinkage ``s_j`` rebuilt from a release's public eigenvalues and attributes."""
        return np.ones(np.asarray(eigenvalues).size)

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        n = f"n={self.n}" if self.neighbouring != ADD_REMOVE else f"add-remove, n_lower={self.n_lower}"
        return f"{type(self).__name__}(tau={float(self.tau):g}, {n}, J={self.n_components}" + (f", {p})" if p else ")")


@dataclass(frozen=True)
class DataHolderReport:
    """What only the data holder sees about a fit: never written to a release.

    Attributes
    ----------
    n_records : int
    n_clipped : int
        Records whose norm exceeded τ and were scaled down.
    """

    n_records: int
    n_clipped: int


@dataclass(frozen=True, eq=False, repr=False)
class LinearSummary:
    """A fitted summary: its public :class:`SummarySpec`, the **non-private**
    coefficients and a data-holder report. An input to a mechanism, never part
    of a release; its ``repr`` does not show the coefficients.

    Every public attribute (sensitivity, grid, design, eigenvalues, params,
    attrs ...) is the spec's.

    Attributes
    ----------
    spec : SummarySpec
    coefficients : ndarray, shape (J,)
        Non-private coefficients.
    report : DataHolderReport
    offset : ndarray (K,) or None
        Public curve subtracted before clipping (added back by releases).
    offset_source : str
    labels : dict
        Public descriptions of the curves (``value_name``, ``value_units``,
        ``t_name``, ``t_units``) from the input's attributes.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> curves = fp.datasets.load_dataset("growth")        # 93 children, height (cm) at 31 ages
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> summary = fp.ICLPQRSpec(basis=basis, tau=200.0, n=93).fit(curves)
    >>> summary                                             # the repr hides the non-private values
    LinearSummary(ICLPQRSpec(tau=200, n=93, J=31, eta=1.5, psi=0.01075); non-private coefficients hidden)
    >>> summary.coefficients.shape, summary.n_clipped       # data holder only: never released
    ((31,), 0)
    >>> summary.labels["value_units"], round(summary.sensitivity().value, 4)
    ('cm', 28.8703)

    See Also
    --------
    fdp_ppl.release : the only way its coefficients leave the data holder (with noise).
    """

    spec: SummarySpec
    coefficients: np.ndarray
    report: DataHolderReport = field(default_factory=lambda: DataHolderReport(0, 0))
    offset: np.ndarray | None = None
    offset_source: str = ""
    labels: dict = field(default_factory=dict)

    def __getattr__(self, name):  # the public side is the spec's
        if name.startswith("__") or name in ("spec", "coefficients", "report", "offset", "offset_source", "labels"):
            raise AttributeError(name)
        return getattr(self.spec, name)

    @property
    def n_clipped(self) -> int:
        """Records clipped to τ (data holder only)."""
        return self.report.n_clipped

    @property
    def n_components(self) -> int:
        return int(self.coefficients.size)

    @property
    def eigenfunctions(self) -> np.ndarray:
        """Retained eigenfunctions on the grid, shape (K, J)."""
        return self.spec.design

    def curve(self) -> xr.DataArray:
        """The non-private summary as a curve over ``t`` (plus the public offset; never released)."""
        values = self.spec.design @ self.coefficients + (0.0 if self.offset is None else self.offset)
        return xr.DataArray(values, dims=(dims.T,), coords={dims.T: self.spec.grid.t},
                            name=f"{self.spec.name}_nonprivate")

    def sensitivity(self, norm: str | None = None, bound: str = "tight") -> Sensitivity:
        """The spec's sensitivity (:meth:`SummarySpec.sensitivity`)."""
        return self.spec.sensitivity(norm, bound)

    def __repr__(self) -> str:
        return f"LinearSummary({self.spec!r}; non-private coefficients hidden)"


def curve_labels(curves, record_dim: str | None = None, t_dim: str | None = None) -> dict:
    """Public descriptions of curves from a DataArray's attributes: ``value_name``,
    ``value_units``, ``t_name``, ``t_units`` (empty for anything else, e.g. numpy input).

    A linear summary records them itself; for a release whose fit takes plain arrays (principal components)
    pass them as ``fp.release(..., provenance={**curve_labels(curves), ...})``, as ``fdp-ppl fpca`` does.

    Parameters
    ----------
    curves : xr.DataArray, shape (records, grid)
        Curves with their public names and units in ``attrs`` (``long_name`` or ``variable``, ``units``,
        ``t_name``, ``t_units``) or on the grid coordinate.
    record_dim, t_dim : str, optional
        Names of the record and grid dims (default: from the dims' names).

    Returns
    -------
    dict of str to str
        Only the descriptions that are set; names and units, never values.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> fp.summaries.curve_labels(fp.datasets.load_dataset("growth"))
    {'value_name': 'height', 'value_units': 'cm', 't_name': 'age', 't_units': 'years'}
    """
    if not isinstance(curves, xr.DataArray) or curves.ndim != 2:
        return {}
    attrs = curves.attrs
    try:
        _, grid_dim = record_and_grid_dims(curves.dims, record_dim=record_dim, t_dim=t_dim)
    except InputError:
        return {}  # the fit raises the one-line error
    coord_attrs = curves[grid_dim].attrs if grid_dim in curves.coords else {}
    out = {"value_name": attrs.get("long_name") or attrs.get("variable") or curves.name,
           "value_units": attrs.get("units"),
           "t_name": attrs.get("t_name") or coord_attrs.get("long_name") or (grid_dim if grid_dim != dims.T else None),
           "t_units": attrs.get("t_units") or coord_attrs.get("units")}
    return {k: str(v) for k, v in out.items() if v}


def as_spec(summary) -> SummarySpec:
    """The public spec of a spec or a fitted summary.

    Raises
    ------
    CompatibilityError
        Anything else.
    """
    from ..errors import CompatibilityError

    if isinstance(summary, SummarySpec):
        return summary
    if isinstance(summary, LinearSummary):
        return summary.spec
    raise CompatibilityError(f"expected a summary spec or a fitted summary, got {type(summary).__name__}",
                             "e.g. iclp_qr_mean(curves, basis, tau=1) or ICLPQRSpec(basis, tau=1, n=100)")


__all__ = ["Sensitivity", "SummarySpec", "LinearSummary", "DataHolderReport", "DataDerived", "curve_labels", "NORMS",
           "NEIGHBOURING", "as_spec", "public_tau", "public_n"]
