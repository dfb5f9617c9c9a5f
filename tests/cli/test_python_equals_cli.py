"""Python equals command line, per release family: each command's file is the file the public API
writes for the same release.

For a mean release (``fdp-ppl release``), densities (``fdp-ppl kde``: 1-D gp, 2-D iclp, the 1-D frl and bernstein
baselines), a kernel machine (``fdp-ppl svm``) and principal components (``fdp-ppl fpca``): run the command with
``--seed N --study``, make the same release from Python with public names only (``fp.datasets.load_dataset``,
``fp.eigenbasis``, the specs, ``fp.release(..., random_seed=N, provenance=...)``), write it with
``tree.to_netcdf``, read both back with ``xr.open_datatree`` and compare: the same groups, the same attribute keys
on every node, every attribute value equal (``==``; NaN equal to NaN) except the creation stamp ``created_at``,
and every variable and coordinate equal value for value. The command line only parses, calls the library and
prints: anything it added or changed would show up here.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.cli import main

SEED = 3


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        yield


def _same_value(a, b) -> bool:
    """Exact equality of two attribute values (NaN equal to NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, np.floating) and isinstance(b, np.floating) and np.isnan(a) and np.isnan(b):
        return True
    return type(a) is type(b) and bool(a == b)


def _assert_same_file(cli_path, tree, tmp_path) -> None:
    py_path = tmp_path / "python.nc"
    tree.to_netcdf(py_path)
    a, b = xr.open_datatree(cli_path), xr.open_datatree(py_path)
    assert sorted(n.path for n in a.subtree) == sorted(n.path for n in b.subtree)
    assert len(a.attrs) > 10 and len(a["posterior"].data_vars) >= 1  # not vacuous
    for node in a.subtree:
        other = b[node.path]
        ka, kb = set(node.attrs) - {"created_at"}, set(other.attrs) - {"created_at"}
        assert ka == kb, (node.path, sorted(ka - kb), sorted(kb - ka))
        differ = {k: (node.attrs[k], other.attrs[k]) for k in sorted(ka) if not _same_value(node.attrs[k],
                                                                                             other.attrs[k])}
        assert not differ, (node.path, differ)
        assert set(node.variables) == set(other.variables), node.path
        for name, var in node.variables.items():
            theirs = other.variables[name]
            assert var.dims == theirs.dims, (node.path, name)
            kind = var.dtype.kind
            assert np.array_equal(var.values, theirs.values, equal_nan=kind in "fc"), (node.path, name)
            assert set(var.attrs) == set(theirs.attrs), (node.path, name)
            assert all(_same_value(var.attrs[k], theirs.attrs[k]) for k in var.attrs), (node.path, name)


def _run(argv) -> None:
    assert main([*map(str, argv), "--seed", str(SEED), "--study"]) == 0


# ------------------------------------------------------------------------------------------------ mean
def test_mean_release(tmp_path):
    out = tmp_path / "cli.nc"
    _run(["release", "--data", "growth", "--mechanism", "iclp-qr", "--epsilon", 1, "--tau", 200, "--out", out])
    curves = fp.datasets.load_dataset("growth")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summary = fp.iclp_qr_mean(curves, basis, tau=200.0)
    tree = fp.release(summary, fp.ICLP(1.0), random_seed=SEED, study=True, provenance={
        "data_source": "growth", "missing": "error",
        "missing_rule": "none: a record with a missing (NaN/inf) value stops the release before any noise is drawn"})
    _assert_same_file(out, tree, tmp_path)


# ------------------------------------------------------------------------------------------------ density
@pytest.fixture
def observations(tmp_path):
    rng = np.random.default_rng(0)
    x = np.append(rng.uniform(0.1, 0.9, 58), [-0.5, 1.7])  # two outside the public domain: clipped
    y = rng.uniform(0, 1, 60)
    path = tmp_path / "obs.csv"
    path.write_text("x,y\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in zip(x, y)) + "\n")
    return path, x, y


def _kde_provenance(mechanism, variables, **extra):
    return {"data_source": "obs.csv / " + variables, "kde_mechanism": mechanism, "kde_variables": variables,
            **extra, "bandwidth_rule": "public", "bandwidth_epsilon": 0.0}


def test_density_1d_gp(tmp_path, observations):
    path, x, _ = observations
    out = tmp_path / "cli.nc"
    _run(["kde", "--data", path, "--var", "x", "--mechanism", "gp", "--epsilon", 1, "--delta", 1e-5,
          "--domain", 0, 1, "--grid-size", 50, "--out", out])
    spec = fp.kde.KDESpec(grid=fp.kde.CartesianGrid.uniform([(0.0, 1.0)], 50), n=60)
    tree = fp.release(spec.fit(x), fp.GaussianMechanism(1.0, 1e-5), random_seed=SEED, study=True,
                      provenance=_kde_provenance("gp", "x"))
    _assert_same_file(out, tree, tmp_path)


def test_density_2d_iclp(tmp_path, observations):
    path, x, y = observations
    out = tmp_path / "cli.nc"
    _run(["kde", "--data", path, "--var", "x", "--var2", "y", "--mechanism", "iclp", "--epsilon", 1, "--eta", 1.05,
          "--domain", 0, 1, "--grid-size", 12, "--out", out])
    spec = fp.kde.ICLPKDESpec(grid=fp.kde.CartesianGrid.uniform([(0.0, 1.0)] * 2, 12), n=60, eta=1.05)
    tree = fp.release(spec.fit(np.column_stack([x, y])), fp.ICLP(1.0), random_seed=SEED, study=True,
                      provenance=_kde_provenance("iclp", "x, y", kde_normalised=0))
    _assert_same_file(out, tree, tmp_path)


@pytest.mark.parametrize("mechanism", ["frl", "bernstein"])
def test_density_1d_baselines(tmp_path, observations, mechanism):
    """The 1-D baselines release a mean of public bumps (fdp_ppl.kde.baselines) and read it as a density."""
    from fdp_ppl.kde.baselines import bernstein_kde_spec, bumps_density, frl_kde_spec, kde_bumps

    path, x, _ = observations
    out = tmp_path / "cli.nc"
    _run(["kde", "--data", path, "--var", "x", "--mechanism", mechanism, "--epsilon", 1, "--domain", 0, 1,
          "--grid-size", 50, "--out", out])
    points = np.linspace(0.0, 1.0, 50)
    h = float(fp.kde.bandwidth_rule(60, 1, 0.25)[0])  # the default rule on the public domain's width
    if mechanism == "frl":
        spec, mech = frl_kde_spec(points, h, 60), fp.FRL(1.0)
        extra = {"frl_M_source": "default floor(n^(1/3))", "frl_M": int(spec.n_components)}
    else:
        spec, mech = bernstein_kde_spec(points, h, 60, k=20), fp.Bernstein(1.0)
        extra = {"bernstein_k": 20, "bernstein_k_source": "default"}
    released = fp.release(spec.fit(kde_bumps(x, points, h, (0.0, 1.0))), mech, random_seed=SEED, study=True,
                          provenance=_kde_provenance(mechanism, "x", **extra))
    _assert_same_file(out, bumps_density(released, points, h, mechanism, (0.0, 1.0)), tmp_path)


# ------------------------------------------------------------------------------------------------ kernel machine
def test_kernel_machine_gp(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (40, 2))
    X[0, 0] = 5.0  # outside the public domain: clipped
    y = np.where(X[:, 0] > X[:, 1], 1.0, -1.0)
    path = tmp_path / "svm.csv"
    path.write_text("a,b,label\n" + "\n".join(f"{float(u)!r},{float(v)!r},{int(w)}" for (u, v), w in zip(X, y)) + "\n")
    out = tmp_path / "cli.nc"
    _run(["svm", "--data", path, "--features", "a,b", "--label", "label", "--lam", 0.05, "--bandwidth", 0.3,
          "--epsilon", 1, "--delta", 1e-5, "--grid-size", 12, "--out", out])
    spec = fp.machine.ERMSpec(fp.Gaussian(0.3, convention="hall"), lam=0.05, n=40, loss="hinge",
                          domain=[[0.0, 1.0]] * 2, grid_size=12)
    tree = fp.release(spec.fit(X, y), fp.GaussianMechanism(1.0, 1e-5), random_seed=SEED, study=True,
                      provenance={"data_source": "svm.csv", "features": "a,b", "label": "label"})
    _assert_same_file(out, tree, tmp_path)


# ------------------------------------------------------------------------------------------------ components
def test_principal_components(tmp_path):
    out = tmp_path / "cli.nc"
    _run(["fpca", "--data", "growth", "--k", 1, "--m", 5, "--basis", "matern32", "--epsilon", 0.5, "--tau", 200,
          "--out", out])
    curves = fp.datasets.load_dataset("growth")
    grid = fp.Grid.from_points(curves["t"].values)
    spec = fp.fpca.FPCASpec(grid=grid, m=5, k=1, epsilon=0.5, tau=200.0,
                               basis=fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), grid))
    tree = fp.release(spec.fit(curves), fp.ExponentialMechanism(), random_seed=SEED, study=True,
                      provenance={"data_source": "growth", "missing": "error", **fp.summaries.curve_labels(curves)})
    _assert_same_file(out, tree, tmp_path)


# ------------------------------------------------------------------------------------------------ no attribute edits
#: methods that change a mapping in place
_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _attrs_edits(source: str, filename: str = "<source>") -> list[str]:
    """Every place ``source`` writes or edits an ``attrs`` mapping: ``x.attrs[k] = v`` (also ``+=``, ``del``),
    ``x.attrs = {...}`` and ``x.attrs.update(...)`` (or another in-place method)."""
    import ast

    def is_attrs(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "attrs"

    found = []
    for node in ast.walk(ast.parse(source, filename)):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for target in targets:
            for t in ast.walk(target):
                if is_attrs(t) or (isinstance(t, ast.Subscript) and is_attrs(t.value)):
                    found.append((node.lineno, f"{filename}:{node.lineno}: {ast.unparse(node).splitlines()[0]}"))
                    break
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS \
                and is_attrs(node.func.value):
            found.append((node.lineno, f"{filename}:{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def test_the_attrs_check_finds_every_form():
    src = ("tree.attrs['a'] = 1\nt.attrs = {}\nt.attrs.update(a=1)\nx['posterior'].attrs['b'] += 1\n"
           "del t.attrs['a']\nt.attrs.setdefault('a', 1)\nt.attrs, y = {}, 1\n"
           "ok = t.attrs.get('a')\nz = dict(t.attrs)\nc = curves.assign_attrs(a=1)\n")
    assert [line.split(": ", 1)[0] for line in _attrs_edits(src)] == [f"<source>:{i}" for i in range(1, 8)]


def test_no_command_module_writes_attributes():
    """The command line passes its public descriptions to the library (``fp.release(provenance=...)``,
    ``fp.infer(provenance=...)``); no command module writes or edits an ``attrs`` mapping itself."""
    from pathlib import Path

    import fdp_ppl.cli

    files = sorted(Path(fdp_ppl.cli.__file__).parent.glob("*.py"))
    assert len(files) >= 10
    found = [hit for f in files for hit in _attrs_edits(f.read_text(), f.name)]
    assert not found, "\n".join(found)
