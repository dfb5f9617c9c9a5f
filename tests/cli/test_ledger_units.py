"""The command line keeps one privacy unit per ledger (``--records-per-unit K`` charges a per-record release to a
per-person ledger by group privacy), refuses a δ above 1/n without ``--allow-large-delta`` and an ε whose e^ε
overflows, each with one line and exit 2, before anything is charged (DESIGN invariants 10 and 11)."""

import pytest
import xarray as xr

from fdp_ppl.accounting import PrivacyLedger
from fdp_ppl.cli import main


def _one_line(err: str) -> str:
    """The one error line (the schema-only id-like-name warning may precede it)."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("fdp-ppl: warning: ")]
    assert len(lines) == 1 and lines[0].startswith("fdp-ppl: error:") and "Traceback" not in err, err
    return lines[0]


def test_dti_per_scan_release_on_a_per_subject_ledger(tmp_path, capsys):
    led = tmp_path / "dti.sqlite"
    base = ["release", "--data", "dti", "--missing", "impute", "--mechanism", "iclp-qr", "--epsilon", "1",
            "--tau", "2", "--ledger", str(led)]
    assert main([*base, "--budget", "10", "--privacy-unit", "subject_id", "--combine", "mean",
                 "--out", str(tmp_path / "subject.nc")]) == 0
    assert "(protects each subject_id)" in capsys.readouterr().out
    assert main([*base, "--out", str(tmp_path / "scan.nc")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "protects each subject_id, but this release is per record" in line and "--records-per-unit K" in line
    assert PrivacyLedger.open(led).spent.epsilon == 1.0 and not (tmp_path / "scan.nc").exists()
    assert main([*base, "--records-per-unit", "8", "--out", str(tmp_path / "scan.nc")]) == 0
    out = capsys.readouterr().out
    assert "charged to the ledger as epsilon 8 by group privacy for <= 8 records per subject_id" in out
    assert "spent epsilon 9 of 10" in out
    assert xr.open_datatree(tmp_path / "scan.nc").attrs["ledger_charged_epsilon"] == 8.0
    assert main(["ledger", str(led)]) == 0
    shown = capsys.readouterr().out
    assert "protects   each subject_id" in shown and "group 8" in shown and "presence is not protected" in shown


def test_records_per_unit_needs_a_ledger(tmp_path, capsys):
    assert main(["release", "--data", "growth", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "200",
                 "--records-per-unit", "8", "--out", str(tmp_path / "r.nc")]) == 2
    assert "--records-per-unit needs --ledger" in _one_line(capsys.readouterr().err)


def test_fpca_delta_one_half_is_refused_without_allow_large_delta(tmp_path, capsys):
    led = tmp_path / "fpca.sqlite"
    argv = ["fpca", "--data", "growth", "--k", "1", "--m", "5", "--basis", "gaussian", "--rho", "0.1", "--epsilon",
            "0.5", "--tau", "200", "--delta", "0.5", "--ledger", str(led), "--budget", "3,0.9"]
    assert main([*argv, "--out", str(tmp_path / "a.nc")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "above 1/n = 1/93" in line and line.endswith("or --allow-large-delta to release with it anyway")
    assert PrivacyLedger.open(led).events == [] and not (tmp_path / "a.nc").exists()
    assert main([*argv, "--allow-large-delta", "--out", str(tmp_path / "b.nc")]) == 0
    assert PrivacyLedger.open(led).spent.delta > 1 / 93


@pytest.mark.parametrize("mechanism", ["gaussian", "rkhs-gaussian"])
def test_gaussian_at_epsilon_1e308_is_one_line(tmp_path, capsys, mechanism):
    led = tmp_path / "g.sqlite"
    assert main(["release", "--data", "growth", "--mechanism", mechanism, "--epsilon", "1e308", "--delta", "1e-5",
                 "--tau", "200", "--out", str(tmp_path / "g.nc"), "--ledger", str(led), "--budget", "1e308,1e-3"]) == 2
    err = capsys.readouterr().err
    line = [x for x in err.strip().splitlines() if "error" in x]
    assert len(line) == 1 and "too large" in line[0] and "Traceback" not in err and "OverflowError" not in err
    assert PrivacyLedger.open(led).events == [] and not (tmp_path / "g.nc").exists()


def test_ledger_command_shows_uncertified_releases_apart(tmp_path, capsys):
    from fdp_ppl.accounting import PrivacyBudget, PrivacyEvent

    path = tmp_path / "m.sqlite"
    led = PrivacyLedger.open(path, PrivacyBudget(5.0, 1e-5))
    lap = PrivacyEvent("laplace", 1.0, 0.0, 1.0)
    led.spend(lap.basic, "iclp", event=lap)
    mcmc = PrivacyEvent("approx", 1.0, 0.0, certified=False)
    led.spend(mcmc.basic, "gibbs k=2", event=mcmc)
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "uncertified epsilon 1, delta 0 in 1 release with no proved guarantee" in out
    assert "guaranteed: epsilon 1, delta 0" in out and "UNCERTIFIED" in out
    assert "not used to accept" in out  # a Laplace ledger's PLD total is shown, never used to accept


def test_ledger_create_records_its_unit_before_any_release(tmp_path, capsys):
    """``fdp-ppl ledger FILE --create --budget E --privacy-unit UNIT``: the first per-scan release is already refused
    (or converted with --records-per-unit); add/remove and a second --create are refused in one line."""
    led = tmp_path / "dti.sqlite"
    assert main(["ledger", str(led), "--create", "--budget", "10", "--privacy-unit", "subject_id"]) == 0
    assert "protects   each subject_id" in capsys.readouterr().out
    assert PrivacyLedger.open(led).privacy_unit == "subject_id"
    assert main(["ledger", str(led), "--verify"]) == 0
    assert "each subject_id (replace-one" in capsys.readouterr().out
    base = ["release", "--data", "dti", "--missing", "impute", "--mechanism", "iclp-qr", "--epsilon", "1",
            "--tau", "2", "--ledger", str(led)]
    assert main([*base, "--out", str(tmp_path / "scan.nc")]) == 2
    assert "protects each subject_id, but this release is per record" in _one_line(capsys.readouterr().err)
    assert main([*base, "--records-per-unit", "8", "--out", str(tmp_path / "scan.nc")]) == 0
    assert "spent epsilon 8 of 10" in capsys.readouterr().out
    assert main(["ledger", str(led), "--create", "--budget", "10"]) == 2
    assert "never re-created" in _one_line(capsys.readouterr().err)
    assert main(["ledger", str(tmp_path / "x.sqlite"), "--create", "--budget", "1", "--neighbouring", "swap"]) == 2
    assert "unknown neighbouring relation" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "x.sqlite").exists()
    assert main(["ledger", str(led), "--privacy-unit", "record"]) == 2
    assert "apply to --create" in _one_line(capsys.readouterr().err)


def test_add_remove_release_on_ledgers_of_each_relation(tmp_path, capsys):
    """Membership protection from the command line (DESIGN, "What a release protects"): ``--neighbouring
    add-remove --n-lower N`` releases a mean that divides by max(n, N) with n private (the file's n is N, the
    table says n is private); an add-remove ledger refuses a replace-one release and a replace-one ledger charges
    an add-remove one by its two steps (2 epsilon), each refusal one line, nothing charged."""
    ar, rep = tmp_path / "ar.sqlite", tmp_path / "rep.sqlite"
    assert main(["ledger", str(ar), "--create", "--budget", "3", "--neighbouring", "add-remove"]) == 0
    assert main(["ledger", str(rep), "--create", "--budget", "3", "--neighbouring", "replace-one"]) == 0
    capsys.readouterr()
    base = ["release", "--data", "growth", "--mechanism", "iclp-qr", "--epsilon", "1", "--tau", "200"]
    members = [*base, "--neighbouring", "add-remove", "--n-lower", "80"]
    assert main([*members, "--ledger", str(ar), "--out", str(tmp_path / "ar.nc")]) == 0
    out = capsys.readouterr().out
    assert "private (add/remove), public lower bound n_lower = 80" in out and "membership protected" in out
    tree = xr.open_datatree(tmp_path / "ar.nc", engine="h5netcdf")
    assert (tree.attrs["n"], tree.attrs["n_lower"], tree.attrs["n_private"]) == (80, 80, 1)
    assert "93" not in str(tree.attrs["neighbouring"]) and "add or remove one record" in tree.attrs["neighbouring"]
    tree.close()
    led = PrivacyLedger.open(ar)
    assert led.spent.epsilon == 1.0 and led.events[0].neighbouring == "add-remove"
    assert main([*base, "--ledger", str(ar), "--out", str(tmp_path / "r1.nc")]) == 2
    assert "protects membership" in _one_line(capsys.readouterr().err)
    assert PrivacyLedger.open(ar).spent.epsilon == 1.0 and not (tmp_path / "r1.nc").exists()
    assert main([*members, "--ledger", str(rep), "--out", str(tmp_path / "conv.nc")]) == 0
    assert "(2 eps, (1 + e^eps) delta)" in capsys.readouterr().out
    assert PrivacyLedger.open(rep).spent.epsilon == 2.0
    for flags, words in (([*base, "--n-lower", "80"], "n_lower applies to neighbouring='add-remove'"),
                         ([*base, "--neighbouring", "add-remove"], "n_lower must be an integer >= 2"),
                         (["release", "--data", "growth", "--mechanism", "bernstein", "--epsilon", "1", "--tau", "200",
                           "--neighbouring", "add-remove", "--n-lower", "80"], "no add/remove sensitivity")):
        assert main([*flags, "--out", str(tmp_path / "no.nc")]) == 2
        assert words in _one_line(capsys.readouterr().err)
        assert not (tmp_path / "no.nc").exists()
