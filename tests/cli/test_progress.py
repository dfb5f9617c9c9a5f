"""Progress of the command line's long steps: shown to the person at a terminal, named steps only."""

import io

import pytest

from fdp_ppl import _progress
from fdp_ppl.cli import main


class _TTY(io.StringIO):
    def isatty(self):
        return True


def test_mode_follows_the_terminal_and_the_environment(monkeypatch):
    monkeypatch.delenv(_progress.PROGRESS_ENV, raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert _progress.progress_mode() is None  # a pipe or a log: nothing
    monkeypatch.setattr("sys.stderr", _TTY())
    assert _progress.progress_mode() == "spinner"
    monkeypatch.setenv(_progress.PROGRESS_ENV, "0")
    assert _progress.progress_mode() is None
    monkeypatch.setenv(_progress.PROGRESS_ENV, "1")
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert _progress.progress_mode() == "lines"


def test_spinner_leaves_a_line_for_a_slow_step_only(monkeypatch):
    monkeypatch.delenv(_progress.PROGRESS_ENV, raising=False)
    err = _TTY()
    monkeypatch.setattr("sys.stderr", err)
    with _progress.stage("quick step", after=60.0):
        pass
    with _progress.stage("slow step", after=0.0):
        pass
    text = err.getvalue()
    assert "slow step:" in text and "quick step:" not in text


def test_release_progress_names_steps_and_no_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(_progress.PROGRESS_ENV, "1")
    out = tmp_path / "r.nc"
    rc = main(["release", "--data", "dti", "--var", "cca", "--missing", "impute", "--mechanism", "iclp-qr",
               "--epsilon", "1", "--tau", "1", "--seed", "1", "--study", "--out", str(out)])
    std = capsys.readouterr()
    assert rc == 0, std.err
    progress = [line for line in std.err.splitlines() if line.startswith("fdp-ppl: ") and "warning:" not in line]
    steps = {line.split(":")[1].strip().removesuffix(" ...") for line in progress}
    assert {"loading dti", "fitting the summary (basis, clipping at tau)", "drawing the release",
            f"writing {out}"} <= steps
    for line in progress:  # a step's name and its duration in seconds: nothing computed from the data
        tail = line.split(":", 2)[-1].strip()
        assert tail.endswith(" ...") or (tail.endswith(" s") and float(tail[:-2]) >= 0), line
    others = [line for line in std.err.splitlines() if not line.startswith("fdp-ppl: ")]
    assert not others, others  # no data holder's line either: their counts go only to --holder-report
    # n and the counts stay in the data holder's lines: no step name holds n (a duration may: "0.382 s" was one)
    assert not any("382" in step for step in steps)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
