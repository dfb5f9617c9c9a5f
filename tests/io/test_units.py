"""Privacy units (DESIGN invariant 10): the guarantee per person. Contribution bounding by a public rule (combine by the mean,
or keep k records padded with the public centre), sensitivities that hold against brute-force neighbours that
replace a whole unit, releases that record the unit, and the command line per person on DTI, growth and a
synthetic file with repeated ids."""

import numpy as np
import pytest
import xarray as xr

import fdp_ppl as fp
from fdp_ppl.cli import main
from fdp_ppl.errors import InputError
from fdp_ppl.io.units import PrivacyUnit, id_like_coordinates

K = 12
TAU = 1.0


@pytest.fixture(scope="module")
def basis():
    return fp.eigenbasis(fp.Matern(rho=0.2, nu=1.5), fp.Grid.uniform(K))


def _records(ids, rng, scale=0.5):
    x = scale * rng.standard_normal((len(ids), K))
    return xr.DataArray(x, dims=("curve", "t"), coords={"t": np.linspace(0, 1, K), "subject_id": ("curve", ids),
                                                        "visit": ("curve", np.arange(len(ids))[::-1])})


IDS = ["a", "a", "a", "b", "c", "c", "d", "e", "e", "e", "e", "f"]


def test_rules_and_their_errors():
    for bad in (dict(), dict(combine="mean", max_contributions=2), dict(combine="median"),
                dict(max_contributions=0), dict(combine="mean", order="visit")):
        with pytest.raises(InputError):
            PrivacyUnit("subject_id", **bad)
    assert PrivacyUnit("subject_id", combine="mean").contributions == 1
    assert PrivacyUnit("subject_id", max_contributions=3).contributions == 3


def test_apply_combines_and_truncates_in_a_public_order():
    rng = np.random.default_rng(0)
    x = _records(IDS, rng)
    mean = PrivacyUnit("subject_id", combine="mean").apply(x)
    assert mean.sizes["curve"] == 6 and list(mean["unit"].values) == ["a", "b", "c", "d", "e", "f"]
    np.testing.assert_allclose(mean.values[0], x.values[:3].mean(0))
    np.testing.assert_allclose(mean.values[4], x.values[7:11].mean(0))
    centre = np.full(K, 7.0)
    first2 = PrivacyUnit("subject_id", max_contributions=2).apply(x, centre=centre)
    assert first2.sizes["curve"] == 12
    np.testing.assert_allclose(first2.values[:2], x.values[:2])       # a: its first two records
    np.testing.assert_allclose(first2.values[3], centre)               # b: one record, padded with the centre
    by_visit = PrivacyUnit("subject_id", max_contributions=2, order="visit").apply(x)
    np.testing.assert_allclose(by_visit.values[:2], x.values[[2, 1]])  # smallest visit first
    assert "subject_id" not in by_visit.coords  # per-record coordinates of records that no longer exist are dropped


def _norm(spec, h, norm):
    lam = np.asarray(spec.eigenvalues)
    return float(np.sum(np.abs(h) / np.sqrt(lam))) if norm == "1,C" else float(np.sqrt(np.sum(h * h / lam)))


@pytest.mark.parametrize("unit", [PrivacyUnit("subject_id", combine="mean"),
                                  PrivacyUnit("subject_id", max_contributions=2),
                                  PrivacyUnit("subject_id", max_contributions=3, order="visit")])
@pytest.mark.parametrize("spec_cls, norm", [(fp.ICLPQRSpec, "1,C"), (fp.RKHSSpec, "cameron-martin")])
def test_sensitivity_holds_against_brute_force_unit_neighbours(basis, unit, spec_cls, norm):
    """Replace every record of one unit (random records of any size, or records aligned with an eigenfunction at
    ±τ, the worst case): the summaries differ by at most Δ in the mechanism's norm, and the aligned case comes
    close to Δ, so the unit-level Δ (k × the record-level one for max_contributions) is needed and enough."""
    rng = np.random.default_rng(1)
    x = _records(IDS, rng)
    n = unit.n_units(x) * unit.contributions
    spec = spec_cls(basis=basis, tau=TAU, n=n, privacy_unit=unit)
    delta = spec.sensitivity(norm).value
    record_level = spec_cls(basis=basis, tau=TAU, n=n).sensitivity(norm).value
    assert delta == pytest.approx(unit.contributions * record_level)
    base = spec.fit(x).coefficients
    worst = 0.0
    for trial in range(40):  # random replacements of one whole unit, records of any size
        y = x.copy(deep=True)
        victim = np.flatnonzero(np.asarray(IDS) == IDS[trial % len(IDS)])
        y.values[victim] = 50 * rng.standard_normal((victim.size, K))
        worst = max(worst, _norm(spec, spec.fit(y).coefficients - base, norm))
    # the attaining pair: every record of a unit with >= k records at +τ v against -τ v, v the direction where the
    # bound is tight (Σ_j m_j φ_j for the l1-type norm, the eigenfunction of the largest a_j/√λ_j for Cameron–Martin)
    a = np.asarray(spec.lipschitz) / np.sqrt(np.asarray(spec.eigenvalues))
    coef = a if norm == "1,C" else (np.arange(a.size) == np.argmax(a)).astype(float)
    v = np.asarray(basis.eigenfunctions) @ coef
    v = v / np.sqrt(np.sum(v * v * np.asarray(basis.grid.weights)))
    victim = np.flatnonzero(np.asarray(IDS) == "e")  # 4 records
    plus, minus = x.copy(deep=True), x.copy(deep=True)
    plus.values[victim], minus.values[victim] = TAU * v, -TAU * v
    attained = _norm(spec, spec.fit(plus).coefficients - spec.fit(minus).coefficients, norm)
    assert max(worst, attained) <= delta * (1 + 1e-9)
    assert attained >= 0.999 * delta  # tight: the unit-level Δ (k × a record's for max_contributions) is needed


def test_spec_checks_n_and_the_unit_coordinate(basis):
    rng = np.random.default_rng(2)
    x = _records(IDS, rng)
    unit = PrivacyUnit("subject_id", combine="mean")
    with pytest.raises(InputError, match="public n"):
        fp.ICLPQRSpec(basis=basis, tau=TAU, n=12, privacy_unit=unit).fit(x)
    with pytest.raises(InputError, match="no coordinate 'person'"):
        fp.ICLPQRSpec(basis=basis, tau=TAU, n=6, privacy_unit=PrivacyUnit("person", combine="mean")).fit(x)
    with pytest.raises(InputError, match="multiple"):
        fp.ICLPQRSpec(basis=basis, tau=TAU, n=7, privacy_unit=PrivacyUnit("subject_id", max_contributions=2))
    tree = fp.release(fp.ICLPQRSpec(basis=basis, tau=TAU, n=6, privacy_unit=unit).fit(x), fp.ICLP(1.0))
    assert tree.attrs["privacy_unit"] == "subject_id" and tree.attrs["n"] == 6
    assert "replace one subject_id" in tree.attrs["neighbouring"] and "by their mean" in tree.attrs["contribution_rule"]
    assert fp.release(fp.ICLPQRSpec(basis=basis, tau=TAU, n=12).fit(x), fp.ICLP(1.0)).attrs["privacy_unit"] == \
        "record"


def test_id_like_coordinates_depend_on_names_only():
    """DESIGN invariant 9: the record-level warning is decided from the schema, never from the values."""
    rng = np.random.default_rng(3)
    assert id_like_coordinates(_records(IDS, rng)) == ["subject_id"]
    assert id_like_coordinates(_records(list("abcdefghijkl"), rng)) == ["subject_id"]  # repeated or not
    x = _records(IDS, rng)
    for name in ("lipid", "patient_weight", "visit", "idx"):  # measurements, whatever their values
        assert id_like_coordinates(x.assign_coords({name: ("curve", np.zeros(x.sizes["curve"]))})) == ["subject_id"]
    for name in ("patientID", "child", "person_id", "participant_number"):
        y = x.drop_vars("subject_id").assign_coords({name: ("curve", np.arange(x.sizes["curve"]))})
        assert id_like_coordinates(y) == [name]


# ----------------------------------------------------------------------------- command line
def test_cli_dti_per_subject_and_the_record_level_warning(tmp_path, capsys):
    base = ["release", "--data", "dti", "--var", "cca", "--missing", "impute", "--mechanism", "iclp-qr",
            "--epsilon", "1", "--tau", "1"]
    assert main([*base, "--out", str(tmp_path / "scan.nc")]) == 0
    err = capsys.readouterr().err
    warning = [line for line in err.splitlines() if "repeats" in line]
    assert len(warning) == 1 and "--privacy-unit subject_id" in warning[0]
    assert not any(ch.isdigit() for ch in warning[0])  # no counts
    assert main([*base, "--privacy-unit", "subject_id", "--combine", "mean", "--out", str(tmp_path / "p.nc")]) == 0
    std = capsys.readouterr()
    assert "repeats" not in std.err and "one subject_id: each subject_id's records combined" in std.out
    tree = xr.open_datatree(tmp_path / "p.nc")
    assert tree.attrs["n"] == 142 and tree.attrs["privacy_unit"] == "subject_id"
    assert main([*base, "--privacy-unit", "subject_id", "--max-contributions", "2", "--unit-order", "visit",
                 "--out", str(tmp_path / "k.nc")]) == 0
    capsys.readouterr()
    tree = xr.open_datatree(tmp_path / "k.nc")
    assert tree.attrs["n"] == 284 and tree.attrs["contributions_per_unit"] == 2


def test_cli_growth_and_a_synthetic_file_per_person(tmp_path, capsys):
    assert main(["release", "--data", "growth", "--mechanism", "frl", "--epsilon", "1", "--tau", "200",
                 "--privacy-unit", "child_id", "--combine", "mean", "--out", str(tmp_path / "g.nc")]) == 0
    assert "repeats" not in capsys.readouterr().err
    assert xr.open_datatree(tmp_path / "g.nc").attrs["n"] == 93
    rows = ["person,0,0.5,1"] + [f"{p},{i},{i + 1},{i}" for i, p in enumerate("aabcccdde")]
    path = tmp_path / "rep.csv"
    path.write_text("\n".join(rows) + "\n")
    args = ["release", "--data", str(path), "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "20"]
    assert main([*args, "--out", str(tmp_path / "r.nc")]) == 0
    assert "'person' repeats across records" in capsys.readouterr().err
    assert main([*args, "--privacy-unit", "person", "--max-contributions", "1", "--out", str(tmp_path / "u.nc")]) == 0
    capsys.readouterr()
    assert xr.open_datatree(tmp_path / "u.nc").attrs["n"] == 5


@pytest.mark.parametrize("flags, fix", [(["--combine", "mean"], "--privacy-unit COLUMN"),
                                        (["--privacy-unit", "subject_id"], "exactly one contribution rule"),
                                        (["--privacy-unit", "subject_id", "--combine", "mean",
                                          "--max-contributions", "2"], "exactly one"),
                                        (["--privacy-unit", "subject_id", "--max-contributions", "0"], ">= 1"),
                                        (["--privacy-unit", "subject_id", "--combine", "mean", "--unit-order",
                                          "visit"], "--unit-order applies")])
def test_cli_unit_flag_errors(tmp_path, capsys, flags, fix):
    assert main(["release", "--data", "dti", "--var", "cca", "--missing", "impute", "--mechanism", "iclp-qr",
                 "--epsilon", "1", "--tau", "1", "--out", str(tmp_path / "x.nc"), *flags]) == 2
    err = capsys.readouterr().err
    assert fix in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "x.nc").exists()


# ----------------------------------------------------------------------------- densities
@pytest.mark.parametrize("kind", ["gp", "iclp", "frl2d", "bernstein2d"])
def test_kde_per_unit_brute_force(kind):
    """A unit's observations share one observation's weight (their bumps averaged): replacing every observation
    of one unit moves the fit by at most the record-level Δ with n = the number of units; the estimate equals
    the KDE of the units' averaged bumps."""
    from fdp_ppl.kde import CartesianGrid, ICLPKDESpec, KDESpec
    from fdp_ppl.kde.baselines import BernsteinKDESpec, FRLKDESpec

    rng = np.random.default_rng(4)
    d = 2 if kind.endswith("2d") else 1
    grid = CartesianGrid.uniform([(0.0, 1.0)] * d, 25 if d == 1 else 12)
    ids = np.array(IDS)
    obs = rng.uniform(0, 1, (ids.size, d))
    unit = PrivacyUnit("id", combine="mean")
    build = {"gp": lambda **kw: KDESpec(grid=grid, bandwidth=0.1, **kw),
             "iclp": lambda **kw: ICLPKDESpec(grid=grid, bandwidth=0.1, **kw),
             "frl2d": lambda **kw: FRLKDESpec(grid=grid, bandwidth=0.15, **kw),
             "bernstein2d": lambda **kw: BernsteinKDESpec(grid=grid, bandwidth=0.15, k=4, **kw)}[kind]
    spec = build(n=6, privacy_unit=unit)
    norm = {"gp": "cameron-martin", "iclp": "1,C", "frl2d": "l1", "bernstein2d": "l1"}[kind]
    sens = spec.sensitivity(norm)
    assert sens.value == pytest.approx(build(n=6).sensitivity(norm).value)  # one combined record per unit
    base = spec.fit(obs, units=ids).coefficients
    lam = np.asarray(spec.eigenvalues) if norm != "l1" else None

    def dist(c):
        h = c - base
        if norm == "l1":
            return float(np.sum(np.abs(h)))
        return float(np.sum(np.abs(h) / np.sqrt(lam))) if norm == "1,C" else float(np.sqrt(np.sum(h * h / lam)))

    worst = 0.0
    for trial in range(30):
        y = obs.copy()
        victim = ids == IDS[trial % len(IDS)]
        y[victim] = rng.uniform(0, 1, (victim.sum(), d)) if trial % 2 else rng.choice([0.0, 1.0], (victim.sum(), d))
        worst = max(worst, dist(spec.fit(y, units=ids).coefficients))
    assert worst <= sens.value * (1 + 1e-9)
    with pytest.raises(InputError, match="units="):
        spec.fit(obs)
    with pytest.raises(InputError, match="public n"):
        build(n=12, privacy_unit=unit).fit(obs, units=ids)
    with pytest.raises(InputError, match="combine='mean' or max_contributions=1"):
        build(n=12, privacy_unit=PrivacyUnit("id", max_contributions=2))
    if kind == "gp":  # the estimate is the KDE of averaged bumps
        first = build(n=6, privacy_unit=PrivacyUnit("id", max_contributions=1)).fit(obs, units=ids)
        keep = [list(ids).index(u) for u in dict.fromkeys(ids)]
        np.testing.assert_allclose(first.coefficients, build(n=6).fit(obs[keep]).coefficients, atol=1e-12)


# ----------------------------------------------------------------------------- kernel machines
def test_kernel_machine_keeps_one_record_per_unit(tmp_path, capsys):
    """A kernel machine is not linear in its records: a unit keeps its first record (n = units), and the fit is
    the record-level fit of those records, so the record-level sensitivity is the unit-level one."""
    from fdp_ppl.machine import ERMSpec
    from fdp_ppl.spaces import Gaussian

    rng = np.random.default_rng(5)
    ids = np.array(IDS)
    X = rng.uniform(0, 1, (ids.size, 1))
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    unit = PrivacyUnit("id", max_contributions=1)
    spec = ERMSpec(Gaussian(0.3, convention="hall"), lam=0.1, n=6, privacy_unit=unit)
    keep = [list(ids).index(u) for u in dict.fromkeys(ids)]
    plain = ERMSpec(Gaussian(0.3, convention="hall"), lam=0.1, n=6)
    np.testing.assert_allclose(spec.fit(X, y, units=ids).solution.coefficients,
                               plain.fit(X[keep], y[keep]).solution.coefficients, atol=1e-10)
    assert spec.sensitivity("cameron-martin").value == pytest.approx(plain.sensitivity("cameron-martin").value)
    assert spec.attrs()["privacy_unit"] == "id" and plain.attrs()["privacy_unit"] == "record"
    with pytest.raises(InputError, match="max_contributions=1"):
        ERMSpec(Gaussian(0.3, convention="hall"), lam=0.1, n=6, privacy_unit=PrivacyUnit("id", combine="mean"))
    with pytest.raises(InputError, match="units="):
        spec.fit(X, y)
    # the command line, with the record-level warning when the unit is not given
    path = tmp_path / "t.csv"
    path.write_text("patient_id,a,label\n" + "\n".join(f"{u},{x},{int(v)}" for u, x, v in zip(ids, X[:, 0], y)))
    argv = ["svm", "--data", str(path), "--features", "a", "--label", "label", "--lam", "0.1", "--bandwidth", "0.3",
            "--mechanism", "gp", "--delta", "1e-5", "--epsilon", "1", "--grid-size", "10"]
    assert main([*argv, "--out", str(tmp_path / "r.nc")]) == 0
    assert "'patient_id' repeats" in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "u.nc"), "--privacy-unit", "patient_id", "--max-contributions",
                 "1"]) == 0
    std = capsys.readouterr()
    assert "one patient_id: the first record of each patient_id" in std.out and "repeats" not in std.err
    tree = xr.open_datatree(tmp_path / "u.nc")
    assert tree.attrs["n"] == 6 and tree.attrs["privacy_unit"] == "patient_id"


def test_kde_command_line_per_person(tmp_path, capsys):
    rng = np.random.default_rng(6)
    ids = np.repeat(np.arange(20), 3)
    path = tmp_path / "obs.csv"
    path.write_text("person_id,x\n" + "\n".join(f"{i},{v}" for i, v in zip(ids, rng.uniform(0, 1, ids.size))))
    argv = ["kde", "--data", str(path), "--var", "x", "--mechanism", "iclp", "--epsilon", "1", "--domain", "0", "1",
            "--grid-size", "30"]
    assert main([*argv, "--out", str(tmp_path / "r.nc")]) == 0
    assert "'person_id' repeats" in capsys.readouterr().err
    for rule in (["--combine", "mean"], ["--max-contributions", "1"]):
        out = tmp_path / f"u{rule[0]}.nc"
        assert main([*argv, "--out", str(out), "--privacy-unit", "person_id", *rule]) == 0
        std = capsys.readouterr()
        assert "one person_id" in std.out and "repeats" not in std.err
        tree = xr.open_datatree(out)
        assert tree.attrs["n"] == 20 and tree.attrs["privacy_unit"] == "person_id"
    assert main([*argv, "--out", str(tmp_path / "k.nc"), "--privacy-unit", "person_id", "--max-contributions",
                 "2"]) == 2
    assert "--combine mean" in capsys.readouterr().err


# ----------------------------------------------------------------------------- principal components
@pytest.mark.parametrize("unit, delta", [(PrivacyUnit("id", combine="mean"), 1.0),
                                         (PrivacyUnit("id", max_contributions=2), 2.0)])
def test_fpca_scatter_per_unit_brute_force(unit, delta):
    """The objective tr(VᵀGV) moves by at most Δ over every frame when one unit's records are replaced (Ky Fan:
    the top-k absolute eigenvalues of G − G'): Δ = 1 for combine, k for max_contributions; the spec's
    sensitivity (and so its ε/(2Δ)) follows the unit."""
    from fdp_ppl.fpca import FPCASpec

    rng = np.random.default_rng(7)
    grid = fp.Grid.uniform(K)
    ids = np.array(IDS)
    spec = FPCASpec(grid=grid, m=4, k=2, epsilon=1.0, tau=1.0, privacy_unit=unit)
    assert spec.sensitivity == delta and spec.scale == pytest.approx(0.5 / delta)
    x = rng.standard_normal((ids.size, K))
    base = spec.fit(x, units=ids)
    assert base.n == 6 * unit.contributions
    worst = 0.0
    for trial in range(60):
        y = x.copy()
        victim = ids == IDS[trial % len(IDS)]
        y[victim] = 100 * rng.standard_normal((victim.sum(), K)) if trial % 2 else np.sin(3 * np.arange(K))
        ev = np.sort(np.abs(np.linalg.eigvalsh(spec.fit(y, units=ids).gram - base.gram)))[::-1]
        worst = max(worst, float(ev[:spec.k].sum()))
    assert worst <= delta * (1 + 1e-9)
    with pytest.raises(InputError, match="units="):
        spec.fit(x)
    with pytest.raises(InputError, match="public n"):
        spec.fit(x, units=ids, n=base.n + 1)


def test_fpca_command_line_per_subject(tmp_path, capsys):
    base = ["fpca", "--data", "dti", "--var", "cca", "--missing", "impute", "--k", "1", "--m", "5", "--epsilon", "1",
            "--tau", "1"]
    assert main([*base, "--out", str(tmp_path / "r.nc")]) == 0
    assert "'subject_id' repeats" in capsys.readouterr().err
    assert main([*base, "--privacy-unit", "subject_id", "--combine", "mean", "--out", str(tmp_path / "u.nc")]) == 0
    std = capsys.readouterr()
    assert "one subject_id" in std.out and "repeats" not in std.err
    tree = xr.open_datatree(tmp_path / "u.nc")
    assert tree.attrs["n"] == 142 and tree.attrs["privacy_unit"] == "subject_id" and tree.attrs["sensitivity"] == 1
