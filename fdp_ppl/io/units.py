"""Privacy units: the guarantee stated per person, not per record.

Curves are often longitudinal: the DTI data hold 382 scans of 142 subjects (``subject_id``), and a
per-scan guarantee protects a subject with four scans only at 4ε. A :class:`PrivacyUnit` names the
coordinate that identifies a person and a **public** rule that bounds each person's contribution
before the sensitivity is computed (OpenDP's ``unit_of(contributions=k)`` with
``truncate_per_group``; Tumult's ``AddRowsWithID`` + ``MaxRowsPerID(k)``):

* ``combine="mean"``: each unit's records are averaged into one record (before clipping at τ). The
  neighbouring relation replaces one unit, i.e. one combined record: n is the number of units and the
  record-level sensitivity applies unchanged. Every unit weighs the same, whatever its number of records.
* ``max_contributions=k``: each unit keeps its first k records in a public order (the record order of
  the file, or a named coordinate such as ``visit``) and a unit with fewer is padded to k with the
  **public centre** (the public offset, else 0: a record that contributes nothing beyond the centre).
  n is k × the number of units, and replacing one unit replaces up to k records, so the sensitivity is
  k times the record-level one (group privacy, exact for the linear summaries here: Δ is linear in the
  change of the records' mean).

The number of units is public under this relation (replacing a unit keeps it), as n is for records.
Which records belong to which unit is the data holder's knowledge and is never released; the release
records the unit's name, the rule and the guarantee per unit.

Examples
--------
>>> import fdp_ppl as fp
>>> fp.units.PrivacyUnit("subject_id", combine="mean").rule
"each subject_id's records combined by their mean into one record's contribution (combine = mean)"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import xarray as xr

from .. import dims
from ..errors import InputError

COMBINE = ("mean",)
#: names of coordinates that look like a person's identifier (a warning when they repeat and no unit is given)
ID_LIKE = ("id", "subject", "person", "patient", "participant", "individual", "household", "child")
_ID_SUFFIXES = ("number", "no", "code", "key", "label")


@dataclass(frozen=True)
class PrivacyUnit:
    """The unit a guarantee is stated for, and its public contribution-bounding rule.

    Parameters
    ----------
    column : str
        Coordinate along the record dimension that identifies a unit (e.g. ``"subject_id"``).
    max_contributions : int, optional
        Keep the first k records of each unit (public order) and pad to k with the public centre.
    combine : {"mean"}, optional
        Average each unit's records into one. Exactly one of ``max_contributions`` and ``combine``.
    order : str, optional
        Coordinate giving the public order in which ``max_contributions`` keeps records (default: the
        record order of the data).

    Raises
    ------
    InputError
        Neither or both rules, k < 1, an unknown combination.

    Examples
    --------
    A guarantee per subject who contributes up to 4 scans: the sensitivity is 4 times a record's.

    >>> import fdp_ppl as fp
    >>> unit = fp.PrivacyUnit("subject_id", max_contributions=4)
    >>> unit.contributions, unit.attrs()["privacy_unit"]
    (4, 'subject_id')
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50))
    >>> per_record = fp.ICLPQRSpec(basis=basis, tau=1.0, n=400).sensitivity().value
    >>> per_subject = fp.ICLPQRSpec(basis=basis, tau=1.0, n=400, privacy_unit=unit).sensitivity().value
    >>> round(per_subject / per_record, 6)
    4.0
    >>> fp.PrivacyUnit("subject_id", combine="mean").contributions   # one averaged record each
    1
    """

    column: str
    max_contributions: int | None = None
    combine: str | None = None
    order: str | None = None

    def __post_init__(self):
        if not isinstance(self.column, str) or not self.column:
            raise InputError("a privacy unit needs the name of the coordinate that identifies a unit",
                             "e.g. PrivacyUnit('subject_id', combine='mean')")
        if (self.max_contributions is None) == (self.combine is None):
            raise InputError("a privacy unit needs exactly one contribution rule",
                             "pass max_contributions=k (keep k records per unit) or combine='mean'")
        if self.combine is not None and self.combine not in COMBINE:
            raise InputError(f"unknown combination {self.combine!r}", f"use one of {COMBINE}")
        if self.max_contributions is not None:
            k = self.max_contributions
            if isinstance(k, bool) or int(k) != k or int(k) < 1:
                raise InputError(f"max_contributions must be an integer >= 1, got {k!r}", "e.g. max_contributions=1")
            object.__setattr__(self, "max_contributions", int(k))
        if self.order is not None and self.combine is not None:
            raise InputError("order applies to max_contributions only", "drop order")

    @property
    def contributions(self) -> int:
        """Records one unit can change after bounding: k, or 1 for ``combine``."""
        return 1 if self.combine is not None else int(self.max_contributions)

    @property
    def rule(self) -> str:
        """The contribution-bounding rule in words (recorded in releases)."""
        if self.combine is not None:
            return f"each {self.column}'s records combined by their mean into one record's contribution (combine = mean)"
        order = f"order of {self.order!r}" if self.order else "record order of the data"
        if self.max_contributions == 1:
            return f"the first record of each {self.column} ({order}) (max_contributions = 1)"
        return (f"the first {self.max_contributions} records of each {self.column} ({order}), padded to "
                f"{self.max_contributions} with the public centre (max_contributions = {self.max_contributions})")

    def records_per_unit(self) -> int:
        """Records per unit after bounding (n = this × the number of units)."""
        return self.contributions

    def attrs(self) -> dict:
        """Public release attributes: ``privacy_unit``, ``contribution_rule``, ``contributions_per_unit``."""
        return {"privacy_unit": self.column, "contribution_rule": self.rule,
                "contributions_per_unit": self.contributions}

    # ------------------------------------------------------------------ data holder
    def _coordinate(self, curves: xr.DataArray, record_dim: str) -> str | None:
        """The coordinate holding the unit: ``column`` itself, or a table's id column read as ``record_label``."""
        if self.column in curves.coords and curves[self.column].dims == (record_dim,):
            return self.column
        label = curves.coords.get("record_label")
        if label is not None and label.dims == (record_dim,) and label.attrs.get("long_name") == self.column:
            return "record_label"
        return None

    def _ids(self, curves: xr.DataArray, record_dim: str) -> np.ndarray:
        name = self._coordinate(curves, record_dim)
        if name is None:
            have = [c for c, v in curves.coords.items() if v.dims == (record_dim,) and c != record_dim]
            raise InputError(f"the curves have no coordinate {self.column!r} along the record dim {record_dim!r} "
                             f"(coordinates: {', '.join(have) or 'none'})",
                             "name the coordinate that identifies a person")
        ids = np.asarray(curves[name].values)
        if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
            raise InputError(f"the unit coordinate {self.column!r} has missing values",
                             "give every record its unit (a public rule decides units, not the release)")
        return ids

    def weights(self, ids, n_public: int) -> tuple[np.ndarray, np.ndarray]:
        """Records kept and their weights in a mean over records, for summaries linear in their records
        (KDE bumps): ``combine`` keeps all, each with ``1/(units × its unit's count)``; ``max_contributions=k``
        keeps each unit's first k (given order), each with ``1/(units × k)``.

        Parameters
        ----------
        ids : array_like, shape (n_records,)
            The unit of each record (data holder only).
        n_public : int
            The spec's public n, which must be ``contributions × the number of units``.

        Returns
        -------
        keep : ndarray of int, shape (m,)
        weights : ndarray, shape (m,)
            Summing to 1 for ``combine``, to (records kept)/(k × units) for ``max_contributions``.

        Raises
        ------
        InputError
            Missing ids, an ``order`` (a coordinate: not available for plain arrays), or n_public that does not
            match the number of units.
        """
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.size == 0:
            raise InputError("the unit ids must be one value per record", "pass units= of the records' length")
        if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
            raise InputError(f"the unit column {self.column!r} has missing values", "give every record its unit")
        if self.order is not None:
            raise InputError("order needs a per-record coordinate", "sort the records by it first, or drop order")
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        n_units = first.size
        if n_units * self.contributions != int(n_public):
            raise InputError(f"the data have {n_units} units ({self.contributions} record(s) each after bounding) but "
                             f"the spec was built for the public n={n_public}",
                             "n is public: build the spec with contributions x the number of units")
        inverse = inverse.ravel()
        counts = np.bincount(inverse, minlength=n_units)
        if self.combine is not None:
            return np.arange(ids.size), 1.0 / (n_units * counts[inverse])
        seen = np.zeros(n_units, dtype=int)
        keep = []
        for i, u in enumerate(inverse):
            if seen[u] < self.max_contributions:
                keep.append(i)
                seen[u] += 1
        keep = np.asarray(keep, dtype=int)
        return keep, np.full(keep.size, 1.0 / (n_units * self.max_contributions))

    def ids(self, curves: xr.DataArray, record_dim: str = dims.CURVE) -> np.ndarray:
        """The unit of each record of ``curves`` (data holder only).

        Raises
        ------
        InputError
            No unit coordinate along ``record_dim``, or missing unit values.
        """
        return self._ids(curves, record_dim)

    def n_units(self, curves: xr.DataArray, record_dim: str = dims.CURVE) -> int:
        """The number of units in ``curves`` (public under the unit-level relation)."""
        return int(np.unique(self._ids(curves, record_dim)).size)

    def apply(self, curves: xr.DataArray, *, record_dim: str = dims.CURVE, centre=None) -> xr.DataArray:
        """Bound each unit's contribution (data holder only).

        Parameters
        ----------
        curves : xr.DataArray, dims (record_dim, ...)
            Records with the unit coordinate along ``record_dim``.
        record_dim : str
        centre : array_like, optional
            The public centre used to pad (shape of one record; the public offset of the summary);
            default 0.

        Returns
        -------
        xr.DataArray
            dims (record_dim, ...): one record per unit (``combine``) or k per unit, in the order of
            the units' first appearance; coordinate ``unit`` holds the unit of each record. Other
            per-record coordinates are dropped (they would describe a record that no longer exists).

        Raises
        ------
        InputError
            No unit coordinate, missing unit values, an unknown ``order`` coordinate.
        """
        ids = self._ids(curves, record_dim)
        keys, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        ranked = np.argsort(first, kind="stable")  # units in order of first appearance
        rank_of = np.empty_like(ranked)
        rank_of[ranked] = np.arange(ranked.size)
        unit_of_record = rank_of[inverse.ravel()]
        x = curves.transpose(record_dim, ...)
        values = np.asarray(x.values, dtype=float)
        other = values.shape[1:]
        n_units = ranked.size
        if self.combine is not None:
            sums = np.zeros((n_units, *other))
            np.add.at(sums, unit_of_record, values)
            counts = np.bincount(unit_of_record, minlength=n_units).reshape((n_units,) + (1,) * len(other))
            out = sums / counts
            unit_labels = keys[ranked]
        else:
            k = self.max_contributions
            if self.order is not None:
                if self.order not in curves.coords or curves[self.order].dims != (record_dim,):
                    raise InputError(f"no coordinate {self.order!r} along {record_dim!r} to order records by",
                                     "pass a per-record coordinate (e.g. visit) or no order")
                key = np.asarray(curves[self.order].values)
                within = np.lexsort((np.arange(ids.size), key, unit_of_record))
            else:
                within = np.lexsort((np.arange(ids.size), unit_of_record))
            pad = np.zeros(other) if centre is None else np.broadcast_to(np.asarray(centre, dtype=float), other)
            out = np.empty((n_units * k, *other))
            out[...] = pad
            slot = np.zeros(n_units, dtype=int)
            for i in within:
                u = unit_of_record[i]
                if slot[u] < k:
                    out[u * k + slot[u]] = values[i]
                    slot[u] += 1
            unit_labels = np.repeat(keys[ranked], k)
        coords = {name: c for name, c in x.coords.items() if record_dim not in c.dims}
        result = xr.DataArray(out, dims=x.dims, coords=coords, name=curves.name, attrs=dict(curves.attrs))
        result = result.assign_coords({record_dim: np.arange(out.shape[0]), "unit": (record_dim, unit_labels)})
        result.attrs.update({"privacy_unit": self.column, "contributions_per_unit": self.contributions})
        return result


def id_like_coordinates(curves, record_dim: str = dims.CURVE) -> list[str]:
    """Per-record coordinates whose *name* says they identify a person: decided from the schema alone.

    A name is id-like when one of its words (split at ``_``, ``-``, spaces, dots and camelCase) is ``id``, or
    its last word is one of :data:`ID_LIKE`, or it is one of them followed by ``number``, ``no``, ``code``, ``key``
    or ``label`` (``subject_id``, ``patientID``, ``child``, ``participant_number``; not ``lipid`` or
    ``patient_weight``); a table's id column (``record_label``) is judged by its header. The values are never
    read, nor the dtype (a CSV table's dtypes are inferred from its values, so a neighbouring file could change
    them): every dataset with the same names gets the same answer, and a warning about these may go to stdout
    or stderr before the charge (DESIGN invariant 9).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> da = xr.DataArray(np.zeros((3, 2)), dims=("curve", "t"),
    ...                   coords={"subject_id": ("curve", [1, 2, 3]), "lipid": ("curve", [1.0, 1.0, 2.0])})
    >>> id_like_coordinates(da)
    ['subject_id']
    """
    if not isinstance(curves, xr.DataArray) or record_dim not in curves.dims:
        return []
    out = []
    for name, c in curves.coords.items():
        if name == record_dim or c.dims != (record_dim,):
            continue
        shown = str(c.attrs.get("long_name", name)) if name == "record_label" else str(name)
        words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", shown)]
        if words and ("id" in words or words[-1] in ID_LIKE or (words[0] in ID_LIKE and words[-1] in _ID_SUFFIXES)):
            out.append(shown)
    return out


__all__ = ["PrivacyUnit", "id_like_coordinates", "COMBINE"]
