"""``check_spec_sensitivity``: brute-force neighbouring datasets against a summary spec's claimed sensitivity.

A :class:`~fdp_ppl.summaries.SummarySpec` states ``Δ = sup_{D ~ D'} ‖f_D − f_{D'}‖`` without data
(``spec.sensitivity(norm, bound)``); every mechanism calibrates its noise on it. :func:`check_spec_sensitivity`
builds pairs of neighbouring datasets of the spec's public size n (one record replaced — or, for a spec with a
``privacy_unit``, every record of one person replaced), fits both with ``spec.fit`` (clip to τ, average,
transform) and measures the distance between the two coefficient vectors in the spec's norm:

* ``"1,C"``: ``Σ_j |h_j|/√λ_j`` (ICLP; Lin & Reimherr 2026, Theorem 12);
* ``"cameron-martin"``: ``(Σ_j h_j²/λ_j)^{1/2}`` (Gaussian mechanism; Mirshani et al. 2019, Theorem 4.1);
* ``"l1"``: ``Σ_j |h_j|`` over the released coefficients (FRL, Bernstein).

The replacements are random curves (at the clipping boundary ``‖X‖ = τ``, inside it, far outside it so that
clipping acts, in the span of the design, rough), eigenfunction-aligned curves ``±τφ_j`` (design columns), the
direction where the spec's bound is tight (``Σ_j m_j φ_j`` for the ℓ¹-type norms, ``φ_{j*}`` for
Cameron–Martin; ``±τ_∞`` constants for the sup-norm Bernstein spec), and a hill climb that perturbs the worst
pair to increase the distance. Every dataset of the pool differs from every other in the same record (or
person) only, so every pair of the pool is a neighbouring pair.

**Add/remove** (a spec built with ``neighbouring="add-remove"``, ``n_lower = n₀``): the pairs are a dataset D
of size m and D with one record (or person) added, for m around n₀ (``n₀ − 2 .. n₀ + 4``, where the divisor
``max(m, n₀)`` changes from n₀ to m), a removal being the same pair read backwards; D is random, or m copies
of ``−x`` with x one of the adversarial records added (the worst case: attained at m = n₀); a hill climb moves
the added record.

Fails (``AssertionError``, one line) when any pair exceeds ``Δ (1 + 1e-9)``; returns a
:class:`SensitivityReport` whose ``max_ratio`` lets a caller assert that the bound is attained where it should
be tight (linear specs, ``bound="tight"``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from ..errors import InputError

#: relative slack allowed above the claimed Δ (rounding in the fits)
RTOL = 1e-9


@dataclass(frozen=True)
class SensitivityReport:
    """What :func:`check_spec_sensitivity` found.

    Attributes
    ----------
    spec : str
        ``repr`` of the spec.
    norm, bound : str
        The sensitivity checked (``spec.sensitivity(norm, bound)``).
    sensitivity : float
        The claimed Δ.
    max_distance : float
        Largest distance between the fits of a neighbouring pair.
    max_ratio : float
        ``max_distance / sensitivity`` (<= 1 + 1e-9, else the check failed; close to 1 where Δ is attained).
    pairs_tried : int
        Neighbouring pairs compared.
    worst : str
        The replacements of the worst pair (e.g. ``"attain:1,C+ vs attain:1,C-"``).
    neighbouring : str
        The neighbouring relation (``spec.neighbouring_text()``).
    """

    spec: str
    norm: str
    bound: str
    sensitivity: float
    max_distance: float
    max_ratio: float
    pairs_tried: int
    worst: str
    neighbouring: str


# ---------------------------------------------------------------------------------------------------- distances
def _distance_function(spec, norm: str, distance: Callable | None) -> Callable:
    """``f(H (..., J)) -> (...)``: the distance of coefficient differences in ``norm``."""
    if distance is not None:
        return lambda H: np.apply_along_axis(lambda h: float(distance(spec, h)), -1, np.asarray(H, dtype=float))
    if norm == "l1":
        return lambda H: np.sum(np.abs(H), axis=-1)
    if norm in ("1,C", "cameron-martin"):
        try:
            lam = np.asarray(spec.eigenvalues, dtype=float)
        except AttributeError as err:
            raise InputError(f"the {norm!r} norm needs the spec's eigenvalues, and {type(spec).__name__} has none",
                             "pass distance=lambda spec, h: ... or another norm") from err
        if norm == "1,C":
            return lambda H: np.sum(np.abs(H) / np.sqrt(lam), axis=-1)
        return lambda H: np.sqrt(np.sum(np.asarray(H) ** 2 / lam, axis=-1))
    raise InputError(f"check_spec_sensitivity does not know the norm {norm!r}",
                     "pass distance=lambda spec, h: ... (h: the difference of two fits' coefficients, shape (J,))")


# ---------------------------------------------------------------------------------------------------- records
class _Records:
    """Replacement records at the spec's clipping bound τ, in its record norm (grid L², or sup)."""

    def __init__(self, spec, record_norm: str, rng):
        self.spec, self.rng, self.norm = spec, rng, record_norm
        self.grid = spec.grid
        self.K = self.grid.size
        self.tau = float(spec.tau)
        self.design = np.asarray(spec.design, dtype=float)

    def size(self, r) -> np.ndarray:
        r = np.asarray(r, dtype=float)
        return np.max(np.abs(r), axis=-1) if self.norm == "sup" else self.grid.norm(r)

    def scaled(self, r, size: float = 1.0) -> np.ndarray:
        """``r`` scaled to ``size · τ`` in the record norm (rows of a 2-D array each)."""
        r = np.asarray(r, dtype=float)
        s = self.size(r)
        s = np.where(s > 0, s, 1.0)
        return size * self.tau * r / (s[..., None] if r.ndim > 1 else s)

    def smooth(self) -> np.ndarray:
        """A random curve in the span of the design, with a little roughness."""
        J = self.design.shape[1]
        v = self.design @ (self.rng.standard_normal(J) / np.sqrt(1.0 + np.arange(J)))
        return v / max(self.size(v), 1e-300) + 0.1 * self.rng.standard_normal(self.K) / np.sqrt(self.K)

    def random(self, m: int) -> tuple[str, np.ndarray]:
        """Kind ``m % 5``: rough at τ, smooth at τ, signs at τ (sup) or smooth at τ/2, smooth at 3τ (clipped),
        rough at 3τ (clipped)."""
        kind = m % 5
        if kind == 0:
            return "rough", self.scaled(self.rng.standard_normal(self.K))
        if kind == 1:
            return "smooth", self.scaled(self.smooth())
        if kind == 2:
            if self.norm == "sup":
                return "signs", self.scaled(np.sign(self.rng.standard_normal(self.K)))
            return "inside", self.scaled(self.smooth(), 0.5)
        if kind == 3:
            return "smooth-3tau", self.scaled(self.smooth(), 3.0)
        return "rough-3tau", self.scaled(self.rng.standard_normal(self.K), 3.0)

    def adversarial(self, norm: str) -> list[tuple[str, np.ndarray]]:
        """``±τ`` times: design columns (eigenfunctions φ_j), the direction where the spec's bound is tight,
        and constants (sup-norm specs)."""
        out = []
        J = self.design.shape[1]
        for j in np.unique(np.linspace(0, J - 1, min(J, 16)).round().astype(int)):
            out.append((f"phi_{j}", self.design[:, j]))
        if self.norm == "sup":
            out.append(("constant", np.ones(self.K)))
        try:
            a = np.asarray(self.spec.lipschitz, dtype=float)
            lam = np.asarray(self.spec.eigenvalues, dtype=float)
        except (AttributeError, NotImplementedError):
            a = lam = None
        if a is not None and a.shape == lam.shape == (J,):
            if norm == "cameron-martin":
                j = int(np.argmax(a / np.sqrt(lam)))
                out.append((f"attain:{norm}", self.design[:, j]))
            elif norm in ("1,C", "l1"):
                m = a / np.sqrt(lam) if norm == "1,C" else a
                out.append((f"attain:{norm}", self.design @ (m / np.linalg.norm(m))))
        pairs = []
        for label, r in out:
            r = self.scaled(r)
            pairs += [(f"{label}+", r), (f"{label}-", -r)]
        return pairs

    def perturbed(self, records, step: float) -> np.ndarray:
        """``records`` (m, K) moved by one random direction (design span plus roughness) of size ``step · τ``,
        then back on the boundary ``‖X‖ = τ`` (all rows the same move: copies stay copies)."""
        v = 0.8 * self.smooth() + 0.2 * self.rng.standard_normal(self.K) / np.sqrt(self.K)
        v = step * self.tau * v / max(float(self.size(v)), 1e-300)
        return self.scaled(records + v[None])


# ---------------------------------------------------------------------------------------------------- datasets
class _Datasets:
    """Neighbouring datasets of size n that differ in one record, or in every record of one person."""

    def __init__(self, spec, records: _Records, rng):
        self.spec, self.rng = spec, rng
        K = records.K
        unit = spec.privacy_unit
        self.unit = unit
        t = np.asarray(spec.grid.t, dtype=float)
        if unit is None:
            n_units, counts = spec.n, np.ones(spec.n, dtype=int)
        elif unit.combine is not None:
            n_units = spec.n
            counts = rng.integers(1, 4, n_units)
        else:
            k = unit.contributions
            n_units = spec.n // k
            counts = rng.integers(1, k + 2, n_units)  # fewer than k (padded), k, and more (truncated)
        total = int(np.sum(counts))
        shape = np.sin(2 * np.pi * t)[None] * rng.uniform(-1, 1, (total, 1)) + rng.standard_normal((total, K)) / 3
        base = records.scaled(shape) * rng.uniform(0.2, 1.4, (total, 1))  # about a third beyond τ
        ids = np.repeat(np.arange(n_units), counts)
        victim = int(rng.integers(n_units))
        self.victim_records = base[ids == victim]
        self.others, self.other_ids = base[ids != victim], ids[ids != victim]
        self.victim, self.position = victim, int(np.flatnonzero(ids == victim)[0])

    def copies(self) -> int:
        """How many copies of an adversarial record replace the victim (k for ``max_contributions=k``)."""
        if self.unit is None:
            return 1
        return 2 if self.unit.combine is not None else self.unit.contributions

    def random_count(self) -> int:
        if self.unit is None:
            return 1
        return int(self.rng.integers(1, (4 if self.unit.combine is not None else self.unit.contributions + 2)))

    def dataset(self, records):
        """The dataset with the victim's records replaced by ``records`` (m, K) (m = 1 for records)."""
        records = np.atleast_2d(records)
        if self.unit is None:
            out = np.insert(self.others, self.position, records[0], axis=0)
            return out
        import xarray as xr

        from .. import dims

        x = np.concatenate([self.others[: self.position], records, self.others[self.position:]])
        ids = np.concatenate([self.other_ids[: self.position], np.full(len(records), self.victim),
                              self.other_ids[self.position:]])
        coords = {dims.T: np.asarray(self.spec.grid.t, dtype=float),
                  self.unit.column: (dims.CURVE, np.array([f"person-{i}" for i in ids]))}
        if self.unit.order is not None:
            coords[self.unit.order] = (dims.CURVE, np.arange(len(ids)))
        return xr.DataArray(x, dims=(dims.CURVE, dims.T), coords=coords)

    def fit(self, records) -> np.ndarray:
        from ..summaries.curves import TauTooSmallWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TauTooSmallWarning)
            return np.asarray(self.spec.fit(self.dataset(records)).coefficients, dtype=float)


# ---------------------------------------------------------------------------------------------------- add/remove
def _add_remove_pairs(spec, dist, records: _Records, rng, norm: str, n_pairs: int, n_search: int):
    """``(best distance, worst pair, pairs tried)`` over add/remove pairs (module docstring)."""
    import xarray as xr

    from .. import dims
    from ..summaries.curves import TauTooSmallWarning

    n0, unit, K = int(spec.n_lower), spec.privacy_unit, records.K
    t = np.asarray(spec.grid.t, dtype=float)

    def dataset(people):  # people: list of (m_i, K) arrays, one per record (or person)
        x = np.concatenate(people)
        if unit is None:
            return x
        ids = np.repeat(np.arange(len(people)), [len(p) for p in people])
        coords = {dims.T: t, unit.column: (dims.CURVE, np.array([f"person-{i}" for i in ids]))}
        return xr.DataArray(x, dims=(dims.CURVE, dims.T), coords=coords)

    def fit(people):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TauTooSmallWarning)
            return np.asarray(spec.fit(dataset(people)).coefficients, dtype=float)

    def person(r):  # one record, or a person of 1 to 3 records (combined by their mean)
        r = np.atleast_2d(r)
        return r if unit is None else np.repeat(r, int(rng.integers(1, 4)), axis=0)

    added = [(label, r) for label, r in records.adversarial(norm)]
    added += [records.random(m) for m in range(2 * int(n_pairs))]
    sizes = sorted({max(1, n0 - 2), n0 - 1, n0, n0 + 1, n0 + 4})
    best, worst, tried, climb = -1.0, "", 0, None
    for m in sizes:
        shape = np.sin(2 * np.pi * t)[None] * rng.uniform(-1, 1, (m, 1)) + rng.standard_normal((m, K)) / 3
        base = records.scaled(shape) * rng.uniform(0.2, 1.4, (m, 1))
        bases = [(f"random m={m}", [person(r) for r in base])]
        worst_cases = [(label, r) for label, r in records.adversarial(norm) if label.startswith("attain")]
        bases += [(f"{m} copies of -{label}", [person(-r) for _ in range(m)])
                  for label, r in (worst_cases or records.adversarial(norm)[:2])]
        for base_label, people in bases:
            c0 = fit(people)
            for label, r in added:
                d = float(dist(fit([*people, person(r)]) - c0))
                tried += 1
                if d > best:
                    best, worst, climb = d, f"{base_label} vs {label} added", (people, c0, r, base_label, label)
    people, c0, r, base_label, label = climb
    step = 0.3
    for _ in range(int(n_search)):  # move the added record to increase the distance
        moved = records.perturbed(r[None], step)[0]
        d = float(dist(fit([*people, person(moved)]) - c0))
        tried += 1
        if d > best:
            best, r, worst = d, moved, f"{base_label} vs {label} added (searched)"
            step = min(step * 1.5, 1.0)
        else:
            step = max(step * 0.6, 1e-4)
    return best, worst, tried


# ---------------------------------------------------------------------------------------------------- entry point
def check_spec_sensitivity(spec, *, norm: str | None = None, bound: str = "tight", n_pairs: int = 40,
                           n_search: int = 40, random_seed=0, min_ratio: float | None = None,
                           distance: Callable | None = None, record_norm: str | None = None) -> SensitivityReport:
    """Brute-force neighbouring datasets against ``spec.sensitivity(norm, bound)`` (see the module docstring).

    Parameters
    ----------
    spec : SummarySpec or LinearSummary
        The public spec under test (its grid, τ, n, design, fit; a fitted summary's spec is used).
    norm : str, optional
        ``"1,C"``, ``"cameron-martin"`` or ``"l1"``; default the spec's natural norm.
    bound : str
        Which of the spec's bounds to check ("tight", "paper", "closed-form").
    n_pairs : int
        Random neighbouring pairs: ``2 n_pairs`` random replacements of the same record (or person), each
        compared with every other replacement, the adversarial ones and the original.
    n_search : int
        Steps of the hill climb that perturbs the worst pair found to increase its distance.
    random_seed : int
        Seeds the dataset, the replacements and the search: a call is deterministic.
    min_ratio : float, optional
        Also fail unless the worst pair reaches ``min_ratio · Δ`` (e.g. ``1 - 1e-6`` where Δ should be tight).
    distance : callable, optional
        ``distance(spec, h (J,)) -> float`` for a norm the kit does not know.
    record_norm : {"l2", "sup"}, optional
        The norm τ bounds; default ``"sup"`` for specs whose attrs say ``tau_norm="sup"`` (Bernstein), else the
        grid L² norm.

    Returns
    -------
    SensitivityReport
        ``max_ratio`` (worst distance / Δ), ``pairs_tried`` and the worst pair.

    Raises
    ------
    AssertionError
        A neighbouring pair differs by more than ``Δ (1 + 1e-9)``, Δ is not finite and > 0, or (with
        ``min_ratio``) no pair reaches ``min_ratio · Δ``.
    InputError
        An unknown norm or bound, or a norm that needs eigenvalues on a spec without them.

    Notes
    -----
    The neighbouring relation is the spec's own, since its Δ is stated for it. Person-level neighbours: a spec
    built with ``privacy_unit=PrivacyUnit(column, combine="mean")`` or
    ``max_contributions=k`` (:class:`fdp_ppl.io.units.PrivacyUnit`) is checked on datasets whose persons have
    1 to 3 (``combine``) or 1 to k + 1 (``max_contributions``) records, one person's records all replaced (by
    any number of records: k copies of an adversarial curve, or random ones), against the spec's unit-level Δ.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.testing import check_spec_sensitivity
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(30))
    >>> spec = fp.ICLPQRSpec(basis=basis, tau=1.0, n=20)
    >>> report = check_spec_sensitivity(spec, norm="1,C", n_pairs=10, n_search=10)
    >>> round(report.max_ratio, 6)     # the tight bound is attained, never exceeded
    1.0

    Add/remove with a public lower bound n₀ = 20 (Δ of ``2τ/(n₀ + 1)``), attained at m = n₀:

    >>> members = fp.ICLPQRSpec(basis=basis, tau=1.0, neighbouring="add-remove", n_lower=20)
    >>> round(check_spec_sensitivity(members, n_pairs=5, n_search=5).max_ratio, 6)
    1.0
    """
    from ..summaries.base import as_spec

    spec = as_spec(spec)
    sens = spec.sensitivity(norm, bound)
    norm = sens.norm
    delta = float(sens.value)
    if not (np.isfinite(delta) and delta > 0):
        raise AssertionError(f"{spec!r}: the claimed sensitivity in the {norm} norm ({bound}) is {delta!r}, not a "
                             "finite value > 0")
    if record_norm is None:
        record_norm = "sup" if spec.attrs().get("tau_norm") == "sup" else "l2"
    if record_norm not in ("l2", "sup"):
        raise InputError(f"record_norm must be 'l2' or 'sup', got {record_norm!r}", "pass record_norm='l2'")
    dist = _distance_function(spec, norm, distance)
    rng = np.random.default_rng(random_seed)
    records = _Records(spec, record_norm, rng)
    if getattr(spec, "neighbouring", "replace-one") == "add-remove":
        best, worst, pairs_tried = _add_remove_pairs(spec, dist, records, rng, norm, n_pairs, n_search)
        return _report(spec, norm, bound, delta, best, pairs_tried, worst, min_ratio)
    data = _Datasets(spec, records, rng)
    # the pool: the original, adversarial replacements, random ones; each fitted once
    pool = [("original", data.victim_records)]
    pool += [(label, np.repeat(r[None], data.copies(), axis=0)) for label, r in records.adversarial(norm)]
    for m in range(2 * int(n_pairs)):
        drawn = [records.random(m + i) for i in range(data.random_count())]
        pool.append(("random-" + "+".join(sorted({k for k, _ in drawn})), np.array([r for _, r in drawn])))
    coef = np.array([data.fit(r) for _, r in pool])
    D = dist(coef[:, None, :] - coef[None, :, :])
    iu = np.triu_indices(len(pool), 1)
    pairs_tried = iu[0].size
    k = int(np.argmax(D[iu]))
    a, b = int(iu[0][k]), int(iu[1][k])
    best = float(D[a, b])
    worst = f"{pool[a][0]} vs {pool[b][0]}"
    # hill climb from the worst pair: move one side at a time, keep a move that increases the distance
    sides = [[pool[a][1], coef[a], pool[a][0]], [pool[b][1], coef[b], pool[b][0]]]
    step = 0.3
    for s in range(int(n_search)):
        me, other = sides[s % 2], sides[1 - s % 2]
        moved = records.perturbed(me[0], step)
        c = data.fit(moved)
        d = float(dist(c - other[1]))
        pairs_tried += 1
        if d > best:
            me[0], me[1] = moved, c
            me[2] = me[2].split(" (")[0] + " (searched)"
            best, worst = d, f"{sides[0][2]} vs {sides[1][2]}"
            step = min(step * 1.5, 1.0)
        else:
            step = max(step * 0.6, 1e-4)
    return _report(spec, norm, bound, delta, best, pairs_tried, worst, min_ratio)


def _report(spec, norm, bound, delta, best, pairs_tried, worst, min_ratio) -> SensitivityReport:
    ratio = best / delta
    report = SensitivityReport(spec=repr(spec), norm=norm, bound=bound, sensitivity=delta, max_distance=best,
                               max_ratio=ratio, pairs_tried=int(pairs_tried), worst=worst,
                               neighbouring=spec.neighbouring_text())
    if ratio > 1.0 + RTOL:
        raise AssertionError(f"{spec!r}: neighbouring datasets ({worst}; {spec.neighbouring_text()}) differ by {best:.9g} "
                             f"in the {norm} norm, above the claimed sensitivity Δ = {delta:.9g} ({bound}) by a "
                             f"factor {ratio:.6f}")
    if min_ratio is not None and ratio < min_ratio:
        raise AssertionError(f"{spec!r}: the claimed sensitivity Δ = {delta:.9g} in the {norm} norm ({bound}) is not "
                             f"attained: the worst of {pairs_tried} neighbouring pairs reaches {ratio:.6f} Δ < "
                             f"{min_ratio:g} Δ")
    return report


__all__ = ["check_spec_sensitivity", "SensitivityReport"]
