"""The layout of the trees the package writes: one module, read and written only here.

A **release** (:func:`fdp_ppl.release`) is an ``xr.DataTree`` with

* ``posterior``: ``coefficients`` (chain, draw, basis) — the released
  coefficients — and ``curve`` (chain, draw, t); the ``t`` coordinate is the
  grid in its **original units** (ages, tract positions ...), so ArviZ labels
  rows and axes with it (``az.summary(tree)`` works unchanged);
* ``constant_data``: the public basis (``eigenvalues`` (basis),
  ``eigenfunctions`` (t, basis), or ``bernstein_design`` (t, basis) and
  ``lattice`` (basis)), ``quadrature_weights`` (t), ``t_unit`` (t: the grid
  rescaled to [0, 1], the kernels' domain), ``noise_scale`` (basis) and
  optionally ``public_offset`` (t: a public curve subtracted before clipping
  and added back to ``curve``);
* root attributes: :class:`ReleaseMetadata` (mechanism, noise law, ε, δ,
  sensitivity, summary, τ, n, draws, budget spent ...), plus
  :data:`KIND_ATTR` ``= "release"`` and :data:`SCHEMA_ATTR`.

An **inference result** (:func:`fdp_ppl.infer`) has :data:`KIND_ATTR`
``= "inference"``, the posterior of the true curve in ``posterior``, and the
release it conditioned on in ``observed_data`` (``released`` (basis)).

The released draws stay where ArviZ and external readers find them
(``posterior.coefficients``), as posterior-style draws. Files written before
the schema was versioned (no :data:`SCHEMA_ATTR`) are read as version 1 when
they carry the required attributes, and refused with a clear message otherwise.
Versions 1–2 had the rescaled grid as the ``t`` index and the original grid
as a ``t_original`` coordinate (which ArviZ's ``summary`` cannot combine
across variables); they are still read.

Examples
--------
>>> import fdp_ppl as fp
>>> curves = fp.datasets.load_dataset("growth")
>>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
>>> tree = fp.release(fp.iclp_qr_mean(curves, basis, tau=200.0), fp.ICLP(epsilon=1.0))
>>> view = fp.schema.read_release(tree)                    # what inference and plots read
>>> view.metadata.noise_law, view.metadata.sensitivity_norm, view.n_components
('laplace', '1,C', 31)
>>> [round(float(b), 4) for b in view.noise_scale[:2]]     # public Laplace scales b_j
[13.5379, 12.5846]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import xarray as xr

from .. import dims
from ..errors import SchemaError

SCHEMA_VERSION = 4
#: root attribute: what the tree is
KIND_ATTR = "fdp_ppl_kind"
#: root attribute: schema version of the tree
SCHEMA_ATTR = "fdp_ppl_schema_version"
INFERENCE = "inference"
#: file kinds, one per release family and spelled after it (:data:`fdp_ppl.releasing.families.FAMILIES`): a mean
#: curve, a density on a grid, a kernel machine's decision function on a grid, a frame of principal components
MEAN_RELEASE = "mean_release"
KDE_RELEASE = "kde_release"
MACHINE_RELEASE = "machine_release"
FPCA_RELEASE = "fpca_release"
#: former kinds, still read: a mean curve (schema <= 3), a kernel machine, principal components
RELEASE = "release"
ERM_RELEASE = "erm_release"
EXPMECH_FPCA = "expmech_fpca"

# groups
POSTERIOR = "posterior"
CONSTANT_DATA = "constant_data"
OBSERVED_DATA = "observed_data"
POSTERIOR_PREDICTIVE = "posterior_predictive"
LOG_LIKELIHOOD = "log_likelihood"
SAMPLE_STATS = "sample_stats"

# variables
COEFFICIENTS = "coefficients"
CURVE = "curve"
T_ORIGINAL = "t_original"  #: (schema <= 2) coordinate of the original grid
T_UNIT = "t_unit"  #: (schema >= 3) constant_data variable: the grid rescaled to [0, 1]
NOISE_SCALE = "noise_scale"
EIGENVALUES = "eigenvalues"
EIGENFUNCTIONS = "eigenfunctions"
BERNSTEIN_DESIGN = "bernstein_design"
LATTICE = "lattice"
QUADRATURE_WEIGHTS = "quadrature_weights"
PUBLIC_OFFSET = "public_offset"
RELEASED = "released"
# ε-DP FPCA releases: posterior ``components`` (chain, draw, component, t) and ``frame`` (chain, draw, basis,
# component); constant_data ``basis_functions`` (t, basis), ``quadrature_weights`` (t), ``sigma`` (basis, basis2)
COMPONENTS = "components"
FRAME = "frame"
BASIS_FUNCTIONS = "basis_functions"
SIGMA = "sigma"

#: public variables of ``constant_data`` that readers may use
CONSTANT_VARIABLES = (EIGENVALUES, EIGENFUNCTIONS, BERNSTEIN_DESIGN, LATTICE, QUADRATURE_WEIGHTS, NOISE_SCALE,
                      PUBLIC_OFFSET, T_UNIT)
#: public root attributes that readers may use (a whitelist: nothing else is read)
PUBLIC_ATTRS = ("mechanism", "noise_law", "summary", "eta", "psi", "n", "epsilon", "delta", "tau", "kernel",
                "kernel_rho", "kernel_nu", "M", "J_star", "lattice_k", "sensitivity", "sensitivity_norm",
                "sensitivity_bound", "draws", "budget_spent_epsilon", "budget_spent_delta", "data_source",
                "value_units", "value_name", "t_units", "t_name", "public_offset", "tau_applies_to", "nu",
                "elliptical_family", "calibration", "grid_size", "n_components", "private", "noise_seeded",
                "noise_generator", "fp_safe", "epsilon_guaranteed", "delta_guaranteed", "missing", "missing_rule",
                "tau_norm", "study")


def _clean(v):
    if type(v) in _PLAIN:
        return v
    if v is None:
        return "none"
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, (tuple, list)):
        return ",".join(str(x) for x in v)
    return v


_PLAIN = frozenset((str, float, int))


def clean_attrs(d: Mapping[str, Any]) -> dict:
    """Attributes netCDF can store: None → "none", bools → 0/1, numpy scalars → Python, sequences → "a,b"."""
    return {str(k): _clean(v) for k, v in d.items()}


@dataclass(frozen=True)
class ReleaseMetadata:
    """The public metadata of a release (root attributes), validated.

    Attributes
    ----------
    mechanism, noise_law, summary : str
    epsilon, delta : float
        Privacy parameters of one draw.
    sensitivity : float
        Δ in ``sensitivity_norm``.
    sensitivity_norm : str
    n : int
        Public number of records.
    tau : float
        Public clipping bound.
    draws : int
        Number of released draws (each one a publication).
    budget_spent_epsilon, budget_spent_delta : float
        ``draws × (ε, δ)`` by basic composition.
    extra : dict
        Every other public attribute (kernel, η, ψ, grid, sources ...).
    schema_version : int
    """

    mechanism: str
    noise_law: str
    summary: str
    epsilon: float
    delta: float
    sensitivity: float
    sensitivity_norm: str
    n: int
    tau: float
    draws: int
    budget_spent_epsilon: float
    budget_spent_delta: float
    extra: dict = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    _TYPES = {"mechanism": str, "noise_law": str, "summary": str, "epsilon": float, "delta": float,
              "sensitivity": float, "sensitivity_norm": str, "n": int, "tau": float, "draws": int,
              "budget_spent_epsilon": float, "budget_spent_delta": float}

    @property
    def law(self):
        """The :class:`~fdp_ppl.noise.laws.NoiseLaw` of the release."""
        from ..noise.laws import law_from_name

        return law_from_name(self.noise_law)

    def to_attrs(self) -> dict:
        """Root attributes (with :data:`KIND_ATTR` and :data:`SCHEMA_ATTR`); a new dict per call."""
        cached = self.__dict__.get("_attrs")  # the metadata is frozen: its attributes are computed once
        if cached is None:
            out = dict(self.extra)
            out.update({k: getattr(self, k) for k in self._TYPES})
            out[KIND_ATTR] = MEAN_RELEASE
            out[SCHEMA_ATTR] = self.schema_version
            cached = clean_attrs(out)
            object.__setattr__(self, "_attrs", cached)
        return dict(cached)

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> "ReleaseMetadata":
        """Validate and read root attributes.

        Raises
        ------
        SchemaError
            An inference result, a newer schema, missing or malformed required attributes.
        """
        attrs = dict(attrs)
        kind = attrs.get(KIND_ATTR, RELEASE)
        family = release_family_of_kind(kind)
        if family not in (None, "mean"):  # another release family (named by the registry, not here)
            from .families import BY_NAME

            entry = BY_NAME[family]
            raise SchemaError(f"this tree is a private {entry.label} release, not a mean-curve release",
                              f"fp.infer(release) gives its posterior ({entry.inference or entry.module}); "
                              "plot_release and the mean-curve readers take mean-curve releases")
        if family != "mean":
            raise SchemaError(f"this tree is an {kind} result, not a release",
                              "pass the release it was computed from (or read its observed_data)")
        version = int(attrs.get(SCHEMA_ATTR, 1))
        if version > SCHEMA_VERSION:
            raise SchemaError(f"the release was written with schema version {version}; this fdp_ppl reads up to "
                              f"{SCHEMA_VERSION}", "upgrade fdp_ppl")
        missing = [k for k in cls._TYPES if k not in attrs]
        if version == 1 and "draws" in missing:  # the first files always had one draw unless stated
            attrs.setdefault("draws", 1)
            missing.remove("draws")
        if missing:
            raise SchemaError(f"not an fdp_ppl release (schema version {version}): attributes {missing} are missing",
                              "pass a file written by fdp_ppl.release or `fdp-ppl release`")
        vals = {}
        for k, t in cls._TYPES.items():
            try:
                vals[k] = t(attrs[k])
            except (TypeError, ValueError) as err:
                raise SchemaError(f"release attribute {k}={attrs[k]!r} is not a {t.__name__}") from err
        extra = {k: v for k, v in attrs.items() if k not in cls._TYPES and k not in (KIND_ATTR, SCHEMA_ATTR)}
        return cls(**vals, extra=extra, schema_version=version)

    def public(self) -> dict:
        """The whitelisted public attributes (:data:`PUBLIC_ATTRS`)."""
        allattrs = {**self.extra, **{k: getattr(self, k) for k in self._TYPES}}
        return {k: allattrs[k] for k in PUBLIC_ATTRS if k in allattrs}


@dataclass(frozen=True)
class ReleaseView:
    """The public content of a release, as read by inference and plots.

    Attributes
    ----------
    metadata : ReleaseMetadata
    coefficients : xr.DataArray
        Released coefficients, dims (chain, draw, basis).
    curve : xr.DataArray
        Released curves, dims (chain, draw, t) (with the public offset if any).
    t, t_original : ndarray, shape (K,)
        Grid on [0, 1] and in original units.
    design : ndarray, shape (K, J)
        Coefficients → curve on the grid (eigenfunctions or Bernstein design).
    weights : ndarray, shape (K,)
    noise_scale : ndarray, shape (J,)
    eigenvalues : ndarray (J,) or None
        None for a Bernstein release.
    lattice : ndarray (J,) or None
    public_offset : ndarray (K,) or None
    """

    metadata: ReleaseMetadata
    coefficients: xr.DataArray
    curve: xr.DataArray
    t: np.ndarray
    t_original: np.ndarray
    design: np.ndarray
    weights: np.ndarray
    noise_scale: np.ndarray
    eigenvalues: np.ndarray | None = None
    lattice: np.ndarray | None = None
    public_offset: np.ndarray | None = None
    curve_attrs: dict = field(default_factory=dict)
    t_attrs: dict = field(default_factory=dict)

    @property
    def law(self):
        return self.metadata.law

    @property
    def n_draws(self) -> int:
        return int(self.coefficients.sizes[dims.CHAIN] * self.coefficients.sizes[dims.DRAW])

    @property
    def n_components(self) -> int:
        return int(self.noise_scale.size)

    def released(self, draw: int = 0) -> np.ndarray:
        """Released coefficients of one draw (chains then draws flattened), shape (J,).

        Raises
        ------
        InputError
            ``draw`` out of range.
        """
        from ..errors import InputError

        if not 0 <= int(draw) < self.n_draws:
            raise InputError(f"draw must lie in 0..{self.n_draws - 1}")
        flat = self.coefficients.stack(sample=(dims.CHAIN, dims.DRAW)).transpose("sample", dims.BASIS)
        return np.asarray(flat.isel(sample=int(draw)).values, dtype=float)

    def grid_to_coefficients(self) -> np.ndarray:
        """Linear map ``A`` (J, K) from a curve on the grid to the release's coefficients
        (:func:`coefficient_map`)."""
        return coefficient_map(self.t, self.weights, eigenfunctions=self.design if self.eigenvalues is not None
                               else None, lattice=self.lattice)

    def noise_sd(self) -> np.ndarray:
        """Pointwise sd of the noise on the released curve, shape (K,): ``sqrt(Σ_j design_j(t)² Var_j)``
        with the law's variance (coefficients' noises are uncorrelated for every law)."""
        from .accuracy import pointwise_sd

        return pointwise_sd(self.design, self.law.variance(self.noise_scale))


def coefficient_map(t, weights, *, eigenfunctions=None, lattice=None) -> np.ndarray:
    """Linear map ``A`` (J, K) from a curve on the grid ``t`` (K,) to a release's coefficients.

    In an eigenbasis ``A = Φᵀ W`` (``<f, φ_j>_w``, eigenfunctions (K, J),
    quadrature weights (K,)); for a Bernstein release, linear interpolation of
    the curve at the lattice points (J,).
    """
    if eigenfunctions is not None:
        return (np.asarray(eigenfunctions) * np.asarray(weights)[:, None]).T
    if lattice is None:
        raise SchemaError("a release needs eigenfunctions or a Bernstein lattice")
    t = np.asarray(t, dtype=float)
    eye = np.eye(t.size)
    return np.stack([np.interp(lattice, t, eye[:, k]) for k in range(t.size)], axis=1)


def read_release(tree: xr.DataTree) -> ReleaseView:
    """Read the public content of a release (never anything outside the schema).

    Raises
    ------
    SchemaError
        Not a release, or a release of an unknown schema or noise law.
    """
    if not isinstance(tree, xr.DataTree):
        raise SchemaError(f"expected an xr.DataTree release, got {type(tree).__name__}",
                          "pass the output of fdp_ppl.release or xr.open_datatree(path)")
    meta = ReleaseMetadata.from_attrs(tree.attrs)
    meta.law  # noqa: B018 - validates the noise law
    try:
        post = tree[POSTERIOR].to_dataset()
        const = tree[CONSTANT_DATA].to_dataset()
        coef = post[COEFFICIENTS]
    except KeyError as err:
        raise SchemaError(f"not an fdp_ppl release: {err.args[0]!r} is missing",
                          "pass the output of fdp_ppl.release") from err
    for name in (QUADRATURE_WEIGHTS, NOISE_SCALE):
        if name not in const:
            raise SchemaError(f"not an fdp_ppl release: constant_data/{name} is missing")
    if EIGENFUNCTIONS in const:
        design, eig, lattice = const[EIGENFUNCTIONS].values, const[EIGENVALUES].values, None
    elif BERNSTEIN_DESIGN in const:
        design, eig, lattice = const[BERNSTEIN_DESIGN].values, None, const[LATTICE].values
    else:
        raise SchemaError("not an fdp_ppl release: constant_data has neither eigenfunctions nor bernstein_design")
    if T_UNIT in const:  # schema >= 3: t is the original grid
        t_orig = np.asarray(post[dims.T].values, dtype=float)
        t = np.asarray(const[T_UNIT].values, dtype=float)
    else:  # schema <= 2: t is the rescaled grid, t_original a coordinate
        t = np.asarray(post[dims.T].values, dtype=float)
        t_orig = np.asarray(post[T_ORIGINAL].values, dtype=float) if T_ORIGINAL in post.coords else t
    curve = post[CURVE] if CURVE in post else None
    return ReleaseView(
        metadata=meta, coefficients=coef, curve=curve, t=t, t_original=t_orig,
        design=np.asarray(design, dtype=float), weights=np.asarray(const[QUADRATURE_WEIGHTS].values, dtype=float),
        noise_scale=np.asarray(const[NOISE_SCALE].values, dtype=float),
        eigenvalues=None if eig is None else np.asarray(eig, dtype=float),
        lattice=None if lattice is None else np.asarray(lattice, dtype=float),
        public_offset=np.asarray(const[PUBLIC_OFFSET].values, dtype=float) if PUBLIC_OFFSET in const else None,
        curve_attrs=dict(curve.attrs) if curve is not None else {},
        t_attrs=dict(post[T_ORIGINAL].attrs) if T_ORIGINAL in post.coords else dict(post[dims.T].attrs),
    )


def release_tree(metadata: ReleaseMetadata, coefficients: np.ndarray, curves: np.ndarray, t: np.ndarray,
                 t_original: np.ndarray, constant: xr.Dataset | None, posterior_attrs: Mapping[str, Any], *,
                 labels: Mapping[str, str] | None = None, offset: np.ndarray | None = None,
                 offset_source: str = "", template: "ReleaseTemplate | None" = None) -> xr.DataTree:
    """Assemble a release tree from its parts (the only writer of the layout).

    Parameters
    ----------
    coefficients : ndarray, shape (draws, J)
    curves : ndarray, shape (draws, K)
        Released curves without the offset.
    t, t_original : ndarray, shape (K,)
        Grid on [0, 1] and in original units (the ``t`` coordinate).
    constant : xr.Dataset
        Public basis and ``noise_scale`` (its ``t`` coordinate is replaced).
        Not needed when ``template`` is given.
    labels : dict, optional
        Public descriptions: ``value_name``, ``value_units``, ``t_name``, ``t_units``.
    offset : ndarray (K,), optional
        Public curve subtracted before clipping; added back to ``curve`` and
        stored as ``constant_data/public_offset``.
    offset_source : str
        Where the offset comes from (recorded in attrs).
    template : ReleaseTemplate, optional
        The public parts already assembled (:class:`ReleaseTemplate` built
        from ``constant``, ``t``, ``t_original``, ``labels``, ``offset``,
        ``offset_source``); the caller may keep one per public spec so that
        repeated releases only add their draws. Without it one is built.

    Notes
    -----
    The draws enter the tree without being copied (``coefficients[None]``
    is a view); the ``constant_data`` arrays are read-only views of the
    template's (the public basis is not copied into every release).
    """
    if template is None:
        template = ReleaseTemplate(constant, t, t_original, labels=labels, offset=offset,
                                   offset_source=offset_source)
    return template.tree(metadata, coefficients, curves, posterior_attrs)


class ReleaseTemplate:
    """The public, draw-independent parts of a release tree, assembled once.

    The layout is written here with xarray's public constructors, once per
    template (a reference tree with one draw); :meth:`tree` then puts a
    release's draws into a copy of that layout without re-running xarray's
    alignment and index machinery (about 2 ms per release otherwise, ten
    times the cost of drawing 100 releases). On the first use in a process
    the fast assembly is checked against the public constructors
    (``xarray.testing.assert_identical``); if they ever differ (a new xarray)
    the public constructors are used for every tree.

    Parameters
    ----------
    constant : xr.Dataset
        Public basis and ``noise_scale``.
    t, t_original, labels, offset, offset_source
        As for :func:`release_tree`.
    """

    def __init__(self, constant: xr.Dataset, t, t_original, *, labels: Mapping[str, str] | None = None,
                 offset=None, offset_source: str = ""):
        self.labels = {k: str(v) for k, v in (labels or {}).items() if v}
        self.offset = None if offset is None else np.array(offset, dtype=float)
        self.offset_source = offset_source
        self.t_original = np.array(t_original)
        self.constant = _frozen(_constant_group(constant, t, self.t_original, self.labels, self.offset,
                                                offset_source))
        j = int(self.constant.sizes[dims.BASIS])
        k = int(self.t_original.size)
        self._reference = _posterior_group(np.zeros((1, j)), np.zeros((1, k)), self.t_original, self.labels,
                                           self.offset is not None, {})
        self._draw_indexes: dict = {}
        self.root_extra = clean_attrs(self.labels)
        if self.offset is not None:
            self.root_extra["public_offset"] = offset_source or "public offset given by the caller"
            self.root_extra["tau_applies_to"] = "deviation of each curve from public_offset"

    def _root_attrs(self, metadata: ReleaseMetadata) -> dict:
        attrs = metadata.to_attrs()
        attrs.update(self.root_extra)
        return attrs

    def tree(self, metadata: ReleaseMetadata, coefficients: np.ndarray, curves: np.ndarray,
             posterior_attrs: Mapping[str, Any]) -> xr.DataTree:
        """A release tree with these draws: ``coefficients`` (draws, J), ``curves`` (draws, K) without the offset."""
        if self.offset is not None:
            curves = curves + self.offset[None, :]
        if _fast_assembly_ok():
            try:
                return self._fast_tree(metadata, coefficients, curves, posterior_attrs)
            except Exception:  # noqa: BLE001 - never fail a release on the fast path: use the public constructors
                _fast_state["ok"] = False
        return self._public_tree(metadata, coefficients, curves, posterior_attrs)

    # ---------------------------------------------------------------- the two assemblies
    def _public_tree(self, metadata, coefficients, curves, posterior_attrs) -> xr.DataTree:
        posterior = _posterior_group(coefficients, curves, self.t_original, self.labels, self.offset is not None,
                                     posterior_attrs)
        tree = xr.DataTree.from_dict({POSTERIOR: posterior, CONSTANT_DATA: self.constant.copy(deep=False)})
        tree.attrs = self._root_attrs(metadata)
        return tree

    def _fast_tree(self, metadata, coefficients, curves, posterior_attrs) -> xr.DataTree:
        import pandas as pd
        from xarray.core.indexes import PandasIndex

        ref = self._reference
        draws = int(coefficients.shape[0])
        draw = self._draw_indexes.get(draws)
        if draw is None:
            index = PandasIndex(pd.Index(np.arange(draws)), dims.DRAW)
            draw = self._draw_indexes[draws] = (index, index.create_variables()[dims.DRAW])
            if len(self._draw_indexes) > 16:
                self._draw_indexes.pop(next(iter(self._draw_indexes)))
        variables, indexes = {}, {}
        for name, var in ref._variables.items():
            if name == dims.DRAW:
                variables[name] = _index_variable(draw[1])
                indexes[name] = draw[0]
            elif name in ref._indexes:  # chain, basis, t: immutable index data, own attrs
                variables[name] = _index_variable(var)
                indexes[name] = ref._indexes[name]
            else:  # the draws, not copied (float64 arrays: the fast path of the Variable constructor applies)
                data = np.asarray(coefficients if name == COEFFICIENTS else curves, dtype=float)
                variables[name] = _raw_variable(xr.Variable, var.dims, data[None], dict(var.attrs))
        sizes = dict(ref._dims)
        sizes[dims.DRAW] = draws
        posterior = _node(variables, ref._coord_names, sizes, indexes, dict(posterior_attrs), POSTERIOR)
        const = self.constant
        # the public arrays are read-only views of the template's (not copied: the basis is 82 MB at K = 3200, and
        # copying it took 0.15 s of every release); no release can change another's, nor the template
        cvars = {name: (_index_variable(var) if name in const._indexes
                        else _raw_variable(xr.Variable, var.dims, var._data.view(), dict(var.attrs)))
                 for name, var in const._variables.items()}
        constant = _node(cvars, const._coord_names, dict(const._dims), dict(const._indexes), dict(const._attrs),
                         CONSTANT_DATA)
        root = _node({}, (), {}, {}, self._root_attrs(metadata), None)
        for child in (posterior, constant):
            child._parent = root
            root._children[child._name] = child
        return root


def _frozen(constant: xr.Dataset) -> xr.Dataset:
    """``constant`` with arrays of its own, made read-only: the template's public arrays, shared (as read-only
    views) by every release made from it, like a density's ``constant_data``."""
    constant = constant.copy(deep=True)
    for name, var in constant.variables.items():
        if name not in constant.indexes:
            var.values.flags.writeable = False
    return constant


def _index_variable(var):
    """A new coordinate variable sharing ``var``'s (immutable) index data, with its own attrs."""
    return _raw_variable(xr.IndexVariable, var.dims, var._data, dict(var.attrs))


def _raw_variable(cls, dims_: tuple, data, attrs: dict):
    """``cls(dims_, data, attrs)`` without the constructor's checks (``data`` is already what the
    constructor would store); :func:`_fast_assembly_ok` checks the result against the public constructors."""
    var = object.__new__(cls)
    var._dims = dims_
    var._data = data
    var._attrs = attrs
    var._encoding = None
    return var


def _node(variables: dict, coord_names, sizes: dict, indexes: dict, attrs: dict, name: str | None) -> xr.DataTree:
    """A DataTree node holding these variables (not copied: they must be the node's own), with no parent
    or children; what ``DataTree._set_node_data`` stores for the equivalent Dataset."""
    node = object.__new__(xr.DataTree)
    node._data_variables = {k: v for k, v in variables.items() if k not in coord_names}
    node._node_coord_variables = {k: v for k, v in variables.items() if k in coord_names}
    node._node_dims = sizes
    node._node_indexes = indexes
    node._encoding = None
    node._attrs = attrs
    node._close = None
    node._name = name
    node._parent = None
    node._children = {}
    return node


#: whether the fast assembly of :class:`ReleaseTemplate` gives the public constructors' tree (checked once)
_fast_state: dict = {}


def _fast_assembly_ok() -> bool:
    ok = _fast_state.get("ok")
    if ok is None:
        try:
            t = np.linspace(0.0, 1.0, 4)
            const = xr.Dataset({EIGENVALUES: ((dims.BASIS,), np.ones(2)), NOISE_SCALE: ((dims.BASIS,), np.ones(2)),
                                EIGENFUNCTIONS: ((dims.T, dims.BASIS), np.ones((4, 2)))},
                               coords={dims.T: t, dims.BASIS: np.arange(2)})
            tpl = ReleaseTemplate(const, t, t * 2, labels={"value_name": "v", "t_units": "s"}, offset=np.ones(4),
                                  offset_source="check")
            meta = ReleaseMetadata("m", "laplace", "s", 1.0, 0.0, 1.0, "1,C", 2, 1.0, 3, 3.0, 0.0)
            coef, curves = np.arange(6.0).reshape(3, 2), np.arange(12.0).reshape(3, 4)
            fast = tpl._fast_tree(meta, coef, curves + tpl.offset, {"a": 1})
            public = tpl._public_tree(meta, coef, curves + tpl.offset, {"a": 1})
            xr.testing.assert_identical(fast, public)
            ok = all(fast[g].dataset.equals(public[g].dataset) for g in (POSTERIOR, CONSTANT_DATA))
            ok = ok and fast.groups == public.groups and fast[POSTERIOR].parent is fast
        except Exception:  # noqa: BLE001 - any difference: use the public constructors
            ok = False
        _fast_state["ok"] = ok
    return ok


class TreeLayout:
    """A release tree's layout, made once with xarray's public constructors, that each release fills with its draws.

    The generic form of :class:`ReleaseTemplate`'s fast assembly for families whose tree is a root with groups
    (a density: ``posterior/density`` and its ``constant_data``): :meth:`tree` builds the nodes from the
    reference groups' variables, indexes and attributes with the release's arrays in place of the draw
    variables, without re-running xarray's alignment and index machinery (about 2 ms of a density release
    otherwise). The first tree of a layout is checked against the public constructors
    (``xarray.testing.assert_identical``); if they ever differ (a new xarray), or the fast assembly of
    :class:`ReleaseTemplate` is off, the public constructors are used for every tree of the layout.

    Parameters
    ----------
    groups : mapping of str to xr.Dataset
        The root's groups in order. The draw variables may hold placeholders of the release's shape (e.g.
        ``np.broadcast_to(0.0, shape)``); every other array is shared by the trees as a read-only view.
    draws : mapping of str to tuple of str
        Per group, the variables each release replaces.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"y": (("draw", "x"), np.broadcast_to(0.0, (1, 3)))}, coords={"draw": [0], "x": [1, 2, 3]})
    >>> layout = TreeLayout({"posterior": post}, {"posterior": ("y",)})
    >>> layout.tree({"posterior": {"y": np.ones((1, 3))}})["posterior"]["y"].values.tolist()
    [[1.0, 1.0, 1.0]]
    """

    def __init__(self, groups: Mapping[str, xr.Dataset], draws: Mapping[str, tuple]):
        self.groups = {g: ds.copy(deep=False) for g, ds in groups.items()}
        self.draws = {g: tuple(v) for g, v in draws.items()}
        self._ok: bool | None = None

    def tree(self, arrays: Mapping[str, Mapping[str, np.ndarray]]) -> xr.DataTree:
        """A tree with ``arrays[group][name]`` (float arrays of the placeholders' shapes, not copied) as its
        draw variables; the root has no attributes (:func:`fdp_ppl.releasing.draw.release` writes them)."""
        if self._ok is None:
            try:
                xr.testing.assert_identical(self._fast_tree(arrays), self._public_tree(arrays))
                self._ok = _fast_assembly_ok()
            except Exception:  # noqa: BLE001 - any difference: the public constructors for this layout
                self._ok = False
        if self._ok:
            try:
                return self._fast_tree(arrays)
            except Exception:  # noqa: BLE001 - never fail a release on the fast path
                self._ok = False
        return self._public_tree(arrays)

    def _public_tree(self, arrays) -> xr.DataTree:
        groups = {}
        for g, ds in self.groups.items():
            ds = ds.copy(deep=False)
            for name in self.draws.get(g, ()):
                ds[name] = xr.Variable(ds[name].dims, np.asarray(arrays[g][name], dtype=float), dict(ds[name].attrs))
            groups[g] = ds
        return xr.DataTree.from_dict(groups)

    def _fast_tree(self, arrays) -> xr.DataTree:
        root = _node({}, (), {}, {}, {}, None)
        for g, ds in self.groups.items():
            replaced = self.draws.get(g, ())
            variables = {}
            for name, var in ds._variables.items():
                if name in ds._indexes:  # immutable index data, own attrs
                    variables[name] = _index_variable(var)
                    continue
                if name in replaced:
                    data = np.asarray(arrays[g][name], dtype=float)
                    if data.shape != var.shape:
                        raise ValueError(f"{g}/{name} has shape {data.shape}, the layout {var.shape}")
                else:  # a public array: a read-only view (no tree can change another's, nor the layout)
                    data = np.asarray(var._data).view()
                    data.flags.writeable = False
                variables[name] = _raw_variable(xr.Variable, var.dims, data, dict(var._attrs or {}))
            child = _node(variables, ds._coord_names, dict(ds._dims), dict(ds._indexes), dict(ds._attrs or {}), g)
            child._parent = root
            root._children[g] = child
        return root


def _posterior_group(coefficients, curves, t_original, labels, has_offset: bool, posterior_attrs) -> xr.Dataset:
    """The posterior group with the public xarray constructors (curves already include the offset)."""
    draws, J = coefficients.shape
    coords = {dims.CHAIN: [0], dims.DRAW: np.arange(draws), dims.BASIS: np.arange(J), dims.T: t_original}
    posterior = xr.Dataset(
        {COEFFICIENTS: ((dims.CHAIN, dims.DRAW, dims.BASIS), coefficients[None]),
         CURVE: ((dims.CHAIN, dims.DRAW, dims.T), curves[None])},
        coords=coords, attrs=dict(posterior_attrs))
    posterior[COEFFICIENTS].attrs["description"] = "released coefficients <f~, phi_j>_w"
    if has_offset:
        posterior[CURVE].attrs["description"] = ("released curve: public_offset(t) + sum_j coefficients_j phi_j(t); "
                                                 "the coefficients are those of the deviation from the public offset")
    else:
        posterior[CURVE].attrs["description"] = "released curve sum_j coefficients_j phi_j(t)"
    if "value_name" in labels:
        posterior[CURVE].attrs["long_name"] = labels["value_name"]
    if "value_units" in labels:
        posterior[CURVE].attrs["units"] = labels["value_units"]
    posterior[dims.T].attrs.update(_t_attrs(labels))
    return posterior


def _t_attrs(labels) -> dict:
    t_attrs = {"long_name": labels.get("t_name", "t"), "description": "grid in its original units"}
    if "t_units" in labels:
        t_attrs["units"] = labels["t_units"]
    return t_attrs


def _constant_group(constant: xr.Dataset, t, t_original, labels, offset, offset_source) -> xr.Dataset:
    """The constant_data group: the public basis, noise scales, ``t_unit`` and the public offset."""
    t_attrs = _t_attrs(labels)
    constant = constant.assign_coords({dims.T: t_original}).assign({T_UNIT: ((dims.T,), np.asarray(t, dtype=float))})
    constant[T_UNIT].attrs["description"] = "grid rescaled to [0, 1] (the domain of the kernels and norms)"
    constant[dims.T].attrs.update(t_attrs)
    if offset is not None:
        constant[PUBLIC_OFFSET] = ((dims.T,), np.asarray(offset, dtype=float))
        constant[PUBLIC_OFFSET].attrs.update({"description": "public reference curve subtracted before clipping and "
                                                             "added back to the released curve",
                                              "source": offset_source or "public offset given by the caller"})
        if "value_units" in labels:
            constant[PUBLIC_OFFSET].attrs["units"] = labels["value_units"]
    return constant


def release_family_of_kind(kind) -> str | None:
    """The release family a file kind names (current or former kind; :data:`fdp_ppl.releasing.families.KINDS`),
    or None for anything else (an inference result, an unknown kind)."""
    from .families import KINDS

    return KINDS.get(str(kind)) if kind is not None else None


def release_family(tree) -> str | None:
    """The release family of a tree (``"mean"``, ``"kde"``, ``"machine"``, ``"fpca"``) read from its public root
    attributes, or None when it is not a release (an inference result, another object).

    Files without a kind are read by what they carry: a density without released coefficients and a KDE summary
    (or ``fdp-ppl kde``'s ``kde_mechanism``) is a density; one with a noise law, a mean curve.

    Examples
    --------
    >>> import xarray as xr
    >>> from fdp_ppl.releasing.schema import release_family
    >>> release_family(xr.DataTree.from_dict({}, name=None)) is None
    True
    """
    if not isinstance(tree, xr.DataTree):
        return None
    kind = tree.attrs.get(KIND_ATTR)
    family = release_family_of_kind(kind)
    if family not in (None, "mean"):
        return family
    if kind not in (None, RELEASE, MEAN_RELEASE):
        return None
    if POSTERIOR in tree.children:
        post = tree[POSTERIOR]
        if "density" in post.data_vars and COEFFICIENTS not in post.data_vars and (
                "kde_mechanism" in tree.attrs or str(tree.attrs.get("summary", "")) in KDE_SUMMARIES):
            return "kde"  # written before densities carried their kind (1-D FRL / Bernstein copied the mean's)
    if family == "mean" or "noise_law" in tree.attrs:
        return "mean"
    return None


def is_release(tree) -> bool:
    """True for a mean-curve release (kind ``mean_release``, or a former ``release`` / unversioned file with a noise
    law); False for a kernel density estimate (:func:`is_kde_release`), even one written before KDE files carried
    their kind."""
    return release_family(tree) == "mean" and "noise_law" in tree.attrs


#: ``summary`` attributes of the KDE specs (:mod:`fdp_ppl.kde`): files written before :data:`KDE_RELEASE` existed
KDE_SUMMARIES = ("kde", "kde-sobolev", "kde-iclp-qr", "kde-frl", "kde-bernstein")


def is_kde_release(tree) -> bool:
    """True for a private kernel density estimate (``fp.release`` of a KDE, ``fdp-ppl kde``): kind
    ``kde_release``, or a file written before the kind existed (:func:`release_family`)."""
    return release_family(tree) == "kde"


def is_machine_release(tree) -> bool:
    """True for a private kernel machine's decision function (kind ``machine_release``, formerly ``erm_release``)."""
    return release_family(tree) == "machine"


def is_inference(tree) -> bool:
    """True for an inference result of :func:`fdp_ppl.infer`."""
    return isinstance(tree, xr.DataTree) and tree.attrs.get(KIND_ATTR) == INFERENCE


def is_fpca_release(tree) -> bool:
    """True for an ε-DP FPCA release (kind ``fpca_release``, formerly ``expmech_fpca``)."""
    return release_family(tree) == "fpca"


def family_attrs(family: str) -> dict:
    """Root attributes that mark a release of ``family`` (its kind read from the family registry,
    :data:`fdp_ppl.releasing.families.BY_NAME`): what a family's draw hook puts on its tree, so a new family needs
    no constant here.

    Examples
    --------
    >>> from fdp_ppl.releasing.schema import family_attrs
    >>> family_attrs("kde")["fdp_ppl_kind"]
    'kde_release'
    """
    from .families import BY_NAME

    return {KIND_ATTR: BY_NAME[family].kind, SCHEMA_ATTR: SCHEMA_VERSION}


def is_family_release(tree, family: str) -> bool:
    """True for a release of ``family`` (:func:`release_family`, current and former kinds)."""
    return release_family(tree) == family


def machine_attrs() -> dict:
    """Root attributes that mark a private kernel-machine release (:func:`family_attrs`)."""
    return family_attrs("machine")


def kde_attrs() -> dict:
    """Root attributes that mark a private kernel density estimate (:func:`family_attrs`)."""
    return family_attrs("kde")


def fpca_attrs() -> dict:
    """Root attributes that mark an ε-DP FPCA release (:func:`family_attrs`)."""
    return family_attrs("fpca")


def inference_attrs() -> dict:
    """Root attributes that mark an inference result."""
    return {KIND_ATTR: INFERENCE, SCHEMA_ATTR: SCHEMA_VERSION}


__all__ = [n for n in dir() if n.isupper()] + ["ReleaseMetadata", "ReleaseView", "read_release", "release_tree",
                                                "ReleaseTemplate", "TreeLayout",
                                                "coefficient_map",
                                                "clean_attrs", "is_release", "is_inference", "inference_attrs",
                                                "is_fpca_release", "fpca_attrs", "machine_attrs", "is_kde_release", "is_machine_release",
                                                "release_family", "release_family_of_kind", "family_attrs", "is_family_release",
                                                "kde_attrs"]
