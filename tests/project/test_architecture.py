"""Architecture checks: the package's seams hold for every registered component.

* the import graph of ``fdp_ppl`` has no cycle and every internal import names a module that exists;
* nothing in ``fdp_ppl`` imports the reproductions (the package ``studies`` in ``notebooks/``, not shipped);
* releases from several threads at once are each exactly what they are alone (one shared compiled sampler);
* every spec of :data:`fdp_ppl.releasing.registry.SUMMARIES` calibrates every compatible mechanism of
  :data:`fdp_ppl.releasing.registry.MECHANISMS` without data, exactly as its fit does;
* brute-force neighbouring datasets never exceed any registered spec's sensitivity, and linear specs
  attain it;
* releases of every registered mechanism round-trip through NetCDF and :func:`fdp_ppl.releasing.schema.read_release`;
  other trees are refused with a clear message.

The loops read the registries, so a new mechanism or summary is covered without editing this file
(a spec that needs non-default options for a small test dataset adds them to :data:`SPEC_OPTIONS`).
"""

from __future__ import annotations

import ast
import dataclasses
import os
import importlib.util
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.releasing import registry
from fdp_ppl.releasing import schema as S
from fdp_ppl.errors import CompatibilityError, InputError, SchemaError
from fdp_ppl.noise.sampling import sampler_for
from fdp_ppl.settings import RELEASE_CHUNK

TAU = 1.0
PACKAGE = Path(fp.__file__).parent


# ====================================================================================== import graph
def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is_package) for every module of fdp_ppl."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _is_type_checking(test) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(tree):
    """ast.walk without the bodies of ``if TYPE_CHECKING:`` (not imported at run time)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imports(name: str, path: Path, is_pkg: bool, modules) -> list[tuple[str, int, str]]:
    """(imported fdp_ppl module, line, statement) for every import of a module: module level and inside
    functions, relative imports resolved, ``from pkg import name`` -> ``pkg.name`` if that module exists
    else ``pkg``, and ``importlib.import_module("fdp_ppl....")`` with a literal name."""
    package = name if is_pkg else name.rpartition(".")[0]
    out = []
    for node in _walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, f"import {a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub if sub in modules else target, node.lineno,
                            f"from {'.' * node.level}{node.module or ''} import {a.name}"))
        elif isinstance(node, ast.Call):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                lit = str(node.args[0].value)
                out.append((lit, node.lineno, f"importlib.import_module({lit!r})"))
    return [(t, line, how) for t, line, how in out if t == "fdp_ppl" or t.startswith("fdp_ppl.")]


def _graph():
    modules = _modules()
    edges = {m: {} for m in modules}
    for m, (path, is_pkg) in modules.items():
        for target, line, how in _imports(m, path, is_pkg, modules):
            if target != m:
                edges[m].setdefault(target, (line, how))
    return modules, edges


def _cycles(edges) -> list[list[str]]:
    """One cycle (as a closed path) per strongly connected component with more than one module."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(set(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    cycles = []
    for comp in comps:  # a shortest closed path through the component's first module (BFS)
        start = min(comp)
        prev, frontier = {start: None}, [start]
        while frontier and start not in [w for v in frontier for w in edges[v] if w == start]:
            nxt = []
            for v in frontier:
                for w in sorted(edges[v]):
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        last = next(v for v in sorted(prev) if start in edges[v])
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        cycles.append(path[::-1] + [start])
    return cycles


def test_import_graph_has_no_cycle():
    """Edges: every import inside fdp_ppl (see :func:`_imports`); a package's ``__init__`` importing its
    children is an edge, so a child importing from its own package ``__init__`` closes a cycle."""
    modules, edges = _graph()
    assert len(modules) > 30 and "fdp_ppl.noise.laws.base" in modules
    assert "fdp_ppl.noise.laws" in edges["fdp_ppl.noise.sampling"]  # edges are found
    cycles = _cycles(edges)
    report = "\n".join(" -> ".join(c) + "\n    " + "\n    ".join(
        f"{a} -> {b}: line {edges[a][b][0]}: {edges[a][b][1]}" for a, b in zip(c[:-1], c[1:])) for c in cycles)
    assert not cycles, f"import cycles in fdp_ppl:\n{report}"


def test_cycle_finder_finds_a_cycle():
    edges = {"a": {"b": (1, "")}, "b": {"c": (1, "")}, "c": {"a": (1, "")}, "d": {"a": (1, "")}}
    assert _cycles(edges) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": (1, "")}, "b": {}}) == []


def test_every_internal_import_names_a_module():
    """``from fdp_ppl.x import y`` / ``import_module("fdp_ppl.x")`` must name a module that exists
    (``fdp_ppl.release`` is the function; the module is ``fdp_ppl.releasing.draw``)."""
    modules, edges = _graph()
    missing = sorted(f"{m}: line {line}: {how}" for m, es in edges.items() for t, (line, how) in es.items()
                     if t not in modules)
    assert not missing, "imports of modules that do not exist:\n" + "\n".join(missing)


def _top_level_imports(source: str) -> set[str]:
    """First component of every absolute import of a module's source, run-time ``importlib.import_module``
    literals included (relative imports stay inside ``fdp_ppl``)."""
    names = set()
    for node in _walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            fn = node.func
            if (fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")) == "import_module":
                names.add(str(node.args[0].value).partition(".")[0])
    return names


def test_the_library_imports_no_study():
    """The studies import ``fdp_ppl``; ``fdp_ppl`` never imports them (they are not installed with it)."""
    studies = {p.name for p in (Path(__file__).resolve().parents[2] / "notebooks" / "studies").glob("*.py")}
    assert "__init__.py" in studies  # the check below looks at the right package
    offenders = sorted(f"{m}: {sorted(names)}" for m, (path, _) in _modules().items()
                       if (names := _top_level_imports(path.read_text()) & {"studies", "notebooks"}))
    assert not offenders, "fdp_ppl imports the studies:\n" + "\n".join(offenders)
    assert not (PACKAGE / "experiments").exists()  # moved to notebooks/studies


def test_study_import_finder_finds_study_imports():
    found = _top_level_imports("import studies.fpca\nfrom studies import kde\nfrom . import x\n"
                               "def f():\n    import importlib\n    importlib.import_module('notebooks.studies')\n")
    assert found == {"studies", "importlib", "notebooks"}


# ====================================================================================== threads
def _coefficients(tree):
    return tree[S.POSTERIOR][S.COEFFICIENTS].values


def test_eight_threads_release_their_own_summaries(curves, matern_basis):
    """8 threads release 8 different summaries at once (same law and J, so one shared compiled sampler;
    more draws than one chunk so the calls interleave) and each gets exactly its result alone."""
    rng = np.random.default_rng(9)
    mech = fp.ICLP(1.0)
    summaries = [fp.iclp_qr_mean(curves * rng.uniform(0.5, 2.0) + rng.standard_normal(curves.shape) * 0.2,
                                 matern_basis, tau=TAU) for _ in range(8)]
    seeds = [1000 + 17 * i for i in range(8)]
    draws = RELEASE_CHUNK + 300
    J = summaries[0].n_components
    shared = sampler_for(mech.law, J)
    alone = [_coefficients(fp.release(s, mech, draws=draws, random_seed=seed, study=True)) for s, seed in zip(summaries, seeds)]
    barrier = threading.Barrier(8)

    def job(i):
        barrier.wait()
        return _coefficients(fp.release(summaries[i], mech, draws=draws, random_seed=seeds[i], study=True))

    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(job, range(8)))
    assert sampler_for(mech.law, J) is shared
    for i in range(8):
        np.testing.assert_array_equal(together[i], alone[i])
        # centred on its own summary: no summary leaks into another thread's draws
        scale = mech.calibrate(summaries[i]).scale
        z = (together[i].mean(axis=(0, 1)) - summaries[i].coefficients) / (scale * np.sqrt(2.0 / draws))
        assert np.abs(z).max() < 6
    assert len({a.tobytes() for a in together}) == 8


def test_threads_with_different_laws(curves, matern_basis):
    """Threads that need different compiled samplers (built concurrently) also get their own results."""
    entries = [registry.MECHANISMS[n] for n in ("iclp-qr", "gaussian", "t-process", "knorm", "frl", "bernstein")]
    jobs = []
    for k, e in enumerate(entries):
        spec = _entry_spec(e, curves, matern_basis)
        jobs.append((spec.fit(curves), _entry_mechanism(e), 50 + k))
    alone = [_coefficients(fp.release(s, m, draws=40, random_seed=seed, study=True)) for s, m, seed in jobs]
    barrier = threading.Barrier(len(jobs))

    def job(i):
        barrier.wait()
        s, m, seed = jobs[i]
        return _coefficients(fp.release(s, m, draws=40, random_seed=seed, study=True))

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        together = list(pool.map(job, range(len(jobs))))
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a, b)


# ====================================================================================== specs from the registry
#: options for a small dataset (n = 40, tau = 1) where a spec's defaults do not fit it (e.g. ICLP-AR
#: thresholds everything away at its PSS defaults); a new spec without an entry uses its defaults
SPEC_OPTIONS = {"iclp-qr": {"eta": 1.5, "psi": 0.025}, "iclp-ar": {"eta": 1.1, "psi": 0.01}, "frl": {"M": 6},
                "rkhs": {"psi": 0.025}, "bernstein": {"k": 10}}


def _fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _make_spec(cls, curves, basis, n=None, tau=TAU):
    """A spec of class ``cls`` for ``curves`` on the conftest grid (an Eigenbasis or the grid itself)."""
    public = {"basis": basis} if "basis" in _fields(cls) else {"lattice_grid": basis.grid}
    return cls(**public, tau=tau, n=len(curves) if n is None else n, **SPEC_OPTIONS.get(cls.name, {}))


def _entry_spec(entry, curves, basis):
    opts = {k: v for k, v in SPEC_OPTIONS.get(entry.summary, {}).items() if k in entry.summary_options}
    where = basis if "basis" in _fields(entry.spec_class) else basis.grid
    return entry.spec(where, tau=TAU, n=len(curves), **opts)


def _entry_mechanism(entry, epsilon=1.0):
    return entry.mechanism(epsilon, 1e-3 if entry.approximate else None, **({"nu": 4.0} if "nu" in entry.options
                                                                            else {}))


@pytest.mark.parametrize("entry", list(registry.MECHANISMS.values()), ids=list(registry.MECHANISMS))
def test_registry_entry_builds_its_spec_and_calibrates_without_data(entry, curves, matern_basis):
    spec = _entry_spec(entry, curves, matern_basis)
    assert isinstance(spec, entry.spec_class) and spec.name == entry.summary in registry.SUMMARIES
    mech = _entry_mechanism(entry)
    assert (mech.delta > 0) == entry.approximate
    cal = mech.calibrate(spec)  # no data anywhere
    fitted = spec.fit(curves)
    cal_fit = mech.calibrate(fitted)
    np.testing.assert_array_equal(cal.scale, cal_fit.scale)
    assert cal.sigma == cal_fit.sigma and cal.sensitivity == cal_fit.sensitivity
    assert cal.scale.shape == (spec.n_components,) and np.all(cal.scale > 0)
    assert mech.noise_energy(spec) == mech.noise_energy(fitted) > 0


@pytest.mark.parametrize("bound", ["tight", pytest.param("paper", marks=pytest.mark.slow),
                                   pytest.param("closed-form", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(registry.SUMMARIES))
def test_every_spec_calibrates_without_data(name, bound, curves, matern_basis):
    """``mechanism.calibrate(spec) == mechanism.calibrate(spec.fit(curves))`` for every compatible registered
    mechanism (there must be one for the tight bound); the other bounds are slow (process calibrations)."""
    spec = _make_spec(registry.SUMMARIES[name], curves, matern_basis)
    fitted = spec.fit(curves)
    seen, compatible = set(), 0
    for entry in registry.MECHANISMS.values():
        mech = _entry_mechanism(entry)
        if repr(mech) in seen:  # e.g. ICLP serves two entries
            continue
        seen.add(repr(mech))
        try:
            cal = mech.calibrate(spec, bound)
        except (CompatibilityError, InputError):
            continue
        compatible += 1
        cal_fit = mech.calibrate(fitted, bound)
        np.testing.assert_array_equal(cal.scale, cal_fit.scale)
        assert cal.sigma == cal_fit.sigma and cal.sensitivity == cal_fit.sensitivity
        assert cal.sensitivity == spec.sensitivity(mech.norm, bound)
    assert compatible or bound != "tight", f"no registered mechanism can release the {name!r} summary"


@pytest.mark.parametrize("name", list(registry.SUMMARIES))
def test_fit_refuses_a_different_n(name, curves, matern_basis):
    spec = _make_spec(registry.SUMMARIES[name], curves, matern_basis)
    for other in (curves[:-1], np.concatenate([curves, curves[:3]])):
        with pytest.raises(InputError, match="public n"):
            spec.fit(other)
    assert spec.fit(curves).n_components == spec.n_components
    # the spec itself holds no data: it is the same object for any dataset of size n
    assert not any(isinstance(getattr(spec, f.name), np.ndarray) and getattr(spec, f.name).shape == curves.shape
                   for f in dataclasses.fields(spec))


# ====================================================================================== brute-force sensitivity
def _record_norm(spec) -> str:
    """"sup" for specs clipped pointwise (Bernstein), else the grid L² norm."""
    return "sup" if spec.attrs().get("tau_norm") == "sup" else "l2"


def _distance(spec, h, norm):
    if norm == "1,C":
        return float(np.sum(np.abs(h) / np.sqrt(spec.eigenvalues)))
    if norm == "cameron-martin":
        return float(np.sqrt(np.sum(h**2 / spec.eigenvalues)))
    return float(np.sum(np.abs(h)))


def _with_record(curves, i, record):
    out = curves.copy()
    out[i] = record
    return out


def _random_records(spec, rng, k):
    """Random records at or beyond the clipping bound: random directions scaled to τ (L²) or random
    curves with sup norm τ, some rough, some in the span of the design, some 3τ (clipped)."""
    grid = spec.grid
    K = grid.size
    for m in range(k):
        if m % 3 == 0:
            v = rng.standard_normal(K)
        else:
            v = spec.design @ rng.standard_normal(spec.n_components) + 0.1 * rng.standard_normal(K)
        size = spec.tau * (3.0 if m % 5 == 4 else 1.0)
        if _record_norm(spec) == "sup":
            if m % 4 == 1:
                v = np.sign(rng.standard_normal(K))
            yield size * v / np.max(np.abs(v))
        else:
            yield size * v / grid.norm(v)


def _adversarial_pairs(spec, norms):
    """(name, record, record') replacing record 0: ±τφ_j, ±τu with u the direction that attains the tight
    ℓ¹-type bound of each norm (L² specs), or ±τ constants (sup-norm specs)."""
    tau = float(spec.tau)
    if _record_norm(spec) == "sup":
        one = np.ones(spec.grid.size)
        yield "constant", tau * one, -tau * one
        return
    basis = spec.basis
    for j in range(0, spec.n_components, max(1, spec.n_components // 8)):
        yield f"phi_{j}", tau * basis.eigenfunctions[:, j], -tau * basis.eigenfunctions[:, j]
    a = np.asarray(spec.lipschitz, dtype=float)
    for norm in norms:
        if norm == "cameron-martin":
            j = int(np.argmax(a / np.sqrt(spec.eigenvalues)))
            yield f"attain:{norm}", tau * basis.eigenfunctions[:, j], -tau * basis.eigenfunctions[:, j]
        else:
            m = a / np.sqrt(spec.eigenvalues) if norm == "1,C" else a
            u = spec.design @ (m / np.linalg.norm(m))
            u = u / spec.grid.norm(u)
            yield f"attain:{norm}", tau * u, -tau * u


@pytest.mark.parametrize("name", list(registry.SUMMARIES))
def test_brute_force_sensitivity_of_every_registered_spec(name, curves, matern_basis):
    """Random and adversarial neighbours (replace one record) never exceed ``spec.sensitivity(norm,
    "tight")`` <= "paper" in any norm the spec supports; for linear specs the adversarial pair attains
    the tight bound (the sup-norm Bernstein bound by ±τ_∞ constants)."""
    spec = _make_spec(registry.SUMMARIES[name], curves, matern_basis)
    norms = {}
    for norm in spec.norms:
        try:
            norms[norm] = spec.sensitivity(norm, "tight").value
        except InputError:
            continue
        paper = spec.sensitivity(norm, "paper").value
        assert norms[norm] <= paper * (1 + 1e-12), norm
    assert norms, f"{name}: no sensitivity in any of {spec.norms}"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    base = spec.fit(curves).coefficients
    worst = dict.fromkeys(norms, 0.0)
    for k, record in enumerate(_random_records(spec, rng, 60)):
        h = spec.fit(_with_record(curves, k % len(curves), record)).coefficients - base
        for norm in norms:
            worst[norm] = max(worst[norm], _distance(spec, h, norm))
    # both records replaced by random ones
    for k, (r1, r2) in enumerate(zip(_random_records(spec, rng, 20), _random_records(spec, rng, 20))):
        h = spec.fit(_with_record(curves, k, r1)).coefficients - spec.fit(_with_record(curves, k, r2)).coefficients
        for norm in norms:
            worst[norm] = max(worst[norm], _distance(spec, h, norm))
    attained = {}
    for label, r1, r2 in _adversarial_pairs(spec, norms):
        h = spec.fit(_with_record(curves, 0, r1)).coefficients - spec.fit(_with_record(curves, 0, r2)).coefficients
        for norm in norms:
            d = _distance(spec, h, norm)
            worst[norm] = max(worst[norm], d)
            if label in (f"attain:{norm}", "constant"):
                attained[norm] = d
    for norm, tight in norms.items():
        assert 0 < worst[norm] <= tight * (1 + 1e-9), (norm, worst[norm], tight)
        if spec.linear:
            assert attained[norm] == pytest.approx(tight, rel=1e-9), norm


# ====================================================================================== schema
@pytest.fixture(scope="module")
def releases():
    """One small release per registered mechanism (module scope: built once)."""
    grid = fp.Grid.uniform(60)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid)
    rng = np.random.default_rng(3)
    t = grid.t
    curves = np.sin(2 * np.pi * t) * 0.6 + 0.5 * rng.standard_normal((40, t.size))
    out = {}
    for i, (name, entry) in enumerate(registry.MECHANISMS.items()):
        spec = _entry_spec(entry, curves, basis)
        out[name] = fp.release(spec.fit(curves), _entry_mechanism(entry), draws=3, random_seed=i, study=True)
    return out


@pytest.mark.parametrize("name", list(registry.MECHANISMS))
def test_release_round_trips_through_netcdf(name, releases, tmp_path):
    tree = releases[name]
    assert tree.attrs[S.KIND_ATTR] == S.MEAN_RELEASE and tree.attrs[S.SCHEMA_ATTR] == S.SCHEMA_VERSION
    assert S.is_release(tree) and not S.is_inference(tree)
    path = tmp_path / f"{name}.nc"
    tree.to_netcdf(path)
    with xr.open_datatree(path) as back:
        a, b = S.read_release(tree), S.read_release(back)
        for f in ("mechanism", "noise_law", "summary", "epsilon", "delta", "sensitivity", "sensitivity_norm", "n",
                  "tau", "draws", "budget_spent_epsilon", "budget_spent_delta", "schema_version"):
            assert getattr(a.metadata, f) == getattr(b.metadata, f), f
        assert a.law == b.law == fp.laws.law_from_name(tree.attrs["noise_law"])
        assert a.metadata.public().keys() == b.metadata.public().keys()
        np.testing.assert_array_equal(a.coefficients.values, b.coefficients.values)
        np.testing.assert_array_equal(a.curve.values, b.curve.values)
        for f in ("t", "t_original", "design", "weights", "noise_scale", "eigenvalues", "lattice", "public_offset"):
            x, y = getattr(a, f), getattr(b, f)
            assert (x is None) == (y is None), f
            if x is not None:
                np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(a.released(2), b.released(2))
        np.testing.assert_allclose(a.noise_sd(), b.noise_sd())
        assert np.all(np.isfinite(a.noise_sd())) or a.law.name.startswith("elliptical-t")
        assert a.grid_to_coefficients().shape == (a.n_components, a.t.size)


def _copy(tree):
    out = tree.copy(deep=True)
    out.attrs = dict(tree.attrs)
    return out


def test_an_inference_tree_is_not_a_release(releases):
    tree = _copy(releases["iclp-qr"])
    tree.attrs.update(S.inference_attrs())
    assert S.is_inference(tree) and not S.is_release(tree)
    with pytest.raises(SchemaError, match="inference result, not a release"):
        S.read_release(tree)


def test_a_tree_without_its_noise_law_is_refused(releases):
    tree = _copy(releases["iclp-qr"])
    del tree.attrs["noise_law"]
    with pytest.raises(SchemaError, match="noise_law"):
        S.read_release(tree)
    tree.attrs["noise_law"] = "cauchy"
    with pytest.raises(SchemaError, match="unknown noise law 'cauchy'"):
        S.read_release(tree)


def test_missing_groups_and_wrong_types_are_refused(releases):
    tree = _copy(releases["frl"])
    with pytest.raises(SchemaError, match="DataTree"):
        S.read_release(tree[S.POSTERIOR].to_dataset())
    bad = xr.DataTree.from_dict({S.POSTERIOR: tree[S.POSTERIOR].to_dataset()})
    bad.attrs = dict(tree.attrs)
    with pytest.raises(SchemaError, match="not an fdp_ppl release"):
        S.read_release(bad)
    tree.attrs["epsilon"] = "one"
    with pytest.raises(SchemaError, match="epsilon"):
        S.read_release(tree)


@pytest.mark.parametrize("drop_kind", [False, True], ids=["no-version", "no-version-no-kind"])
def test_an_old_release_without_schema_version_still_loads(drop_kind, releases, tmp_path):
    tree = _copy(releases["bernstein"])
    del tree.attrs[S.SCHEMA_ATTR]
    if drop_kind:
        del tree.attrs[S.KIND_ATTR]
    path = tmp_path / "old.nc"
    tree.to_netcdf(path)
    with xr.open_datatree(path) as back:
        assert S.SCHEMA_ATTR not in back.attrs
        view = S.read_release(back)
        assert view.metadata.schema_version == 1
        np.testing.assert_array_equal(view.coefficients.values, releases["bernstein"][S.POSTERIOR][S.COEFFICIENTS])
        assert view.law == fp.laws.Laplace()
    # the first files had one draw unless they said otherwise
    del tree.attrs["draws"]
    assert S.read_release(tree).metadata.draws == 1


def test_a_newer_schema_version_is_refused(releases):
    tree = _copy(releases["t-process"])
    tree.attrs[S.SCHEMA_ATTR] = S.SCHEMA_VERSION + 1
    with pytest.raises(SchemaError, match=f"schema version {S.SCHEMA_VERSION + 1}.*upgrade fdp_ppl"):
        S.read_release(tree)


def test_schema_module_is_the_only_writer():
    """The release layout's names are constants of fdp_ppl.releasing.schema; releasing writes through release_tree."""
    src = (PACKAGE / "releasing" / "draw.py").read_text()
    assert "release_tree(" in src and "xr.DataTree.from_dict" not in src
    assert importlib.util.find_spec("fdp_ppl.release") is None  # the function, not a module
    assert callable(fp.release)


def test_stages_import_one_way():
    """The import-linter contracts of pyproject.toml (``[tool.importlinter]``): the stages' layers, the families'
    independence and a foundation that imports no stage. A broken contract names the import that runs back up."""
    import subprocess
    import sys

    root = PACKAGE.parent
    out = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                          "lint_imports_command()", "--no-cache"], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout and "KEPT" in out.stdout


def _stage_contract():
    """The ``stage_layers`` contract of pyproject.toml, built as import-linter builds it."""
    import tomllib

    from tests.project.import_contracts import StageLayersContract

    cfg = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]
    (options,) = [c for c in cfg["contracts"] if c["type"] == "stage_layers"]
    return StageLayersContract(name=options["name"], session_options={"root_packages": ["fdp_ppl"]},
                               contract_options={k: v for k, v in options.items() if k not in {"name", "type"}})


def test_every_family_folder_is_on_the_families_layer():
    """The families' layer of the stage contract (the layer ``*``: every subpackage no other layer names) is exactly
    the registered families' folders (``ReleaseEntry.folder``), so a family added in its own folder is checked with no
    edit of pyproject.toml, and a subpackage that is neither a stage nor a registered family is named."""
    import grimp

    from fdp_ppl.releasing.families import FAMILIES

    contract = _stage_contract()
    assert contract.check(grimp.build_graph("fdp_ppl", cache_dir=None), verbose=False).kept
    folders = {e.folder for e in FAMILIES if e.folder != "fdp_ppl.releasing"}  # the mean family is releasing's own
    assert folders == {"fdp_ppl.kde", "fdp_ppl.machine", "fdp_ppl.fpca"}
    stray = sorted(contract.families - folders)
    assert not stray, f"{stray} is neither a stage of [tool.importlinter] nor a registered family's folder"
    assert contract.families == folders


def _graph_with_two_unnamed_families(importer: str, imported: str):
    import grimp

    graph = grimp.ImportGraph()
    stages = ["cli", "testing", "plots", "auditing", "inference", "releasing", "noise", "accounting", "summaries",
              "datasets", "spaces", "io"]
    foundation = ["errors", "dims", "settings", "_backend", "_names", "_progress", "_version", "_numba", "_options"]
    for m in ["fdp_ppl", *(f"fdp_ppl.{s}" for s in stages + foundation), "fdp_ppl.fam_a", "fdp_ppl.fam_b"]:
        graph.add_module(m)
    for s in stages + ["fam_a", "fam_b"]:
        graph.add_module(f"fdp_ppl.{s}.mod")  # a stage or family is a package: it has a child
    graph.add_import(importer=importer, imported=imported)
    return graph


@pytest.mark.parametrize("importer, imported, kept", [
    ("fdp_ppl.fam_a.mod", "fdp_ppl.releasing.mod", True),   # a family uses the release protocol
    ("fdp_ppl.inference.mod", "fdp_ppl.fam_a.mod", True),   # inference uses a family
    ("fdp_ppl.fam_a.mod", "fdp_ppl.inference.mod", False),  # a family imports inference: upwards
    ("fdp_ppl.releasing.mod", "fdp_ppl.fam_b.mod", False),  # the protocol imports a family: upwards
    ("fdp_ppl.fam_a.mod", "fdp_ppl.fam_b.mod", False),      # families are independent
    ("fdp_ppl.errors", "fdp_ppl.fam_a.mod", False),         # the foundation imports no stage
    ("fdp_ppl.errors", "fdp_ppl.io.mod", False),
])
def test_the_families_layer_holds_folders_pyproject_never_names(importer, imported, kept):
    """On a made-up graph with two families pyproject.toml never names, the stage contract keeps the allowed imports and
    breaks on a family importing upwards, the protocol importing a family, one family importing another and the
    foundation importing any stage."""
    contract = _stage_contract()
    check = contract.check(_graph_with_two_unnamed_families(importer, imported), verbose=False)
    assert contract.families == {"fdp_ppl.fam_a", "fdp_ppl.fam_b"}
    assert check.kept is kept
