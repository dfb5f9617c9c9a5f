"""The README's Python example runs as written (with fewer MCMC draws)."""

import re
from pathlib import Path


def test_readme_python_example_runs(tmp_path, monkeypatch):
    src = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", src, re.S).group(1)
    assert "fp.release(" in code and "fp.infer(" in code
    code = code.replace("random_seed=2)", "random_seed=2, draws=100, tune=100, chains=1, progressbar=False)")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "release.nc").is_file()
    assert namespace["mean_curve"].dims == ("chain", "draw", "t")
