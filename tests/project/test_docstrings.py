"""Every public name of ``fdp_ppl`` teaches by example: its docstring has a numpydoc ``Examples`` section, and the
examples run (doctest) and emit no warning.

Each example is self-contained: it imports ``fdp_ppl as fp`` (and numpy, if it needs it) itself, and runs with empty
globals, as a reader who copies it would. Outputs are exact and stable (rounded, or shapes and public attributes);
nothing depends on random draws.
"""

from __future__ import annotations

import doctest
import inspect
import io
import re
import warnings

import pytest

import fdp_ppl as fp

#: names whose docstrings are being rewritten elsewhere (remove a name here once its Examples section is in); a name
#: listed here before it reaches ``fp.__all__`` skips nothing
BEING_REWRITTEN: dict[str, str] = {}
#: names that are not documented objects
NOT_DOCUMENTED = {"__version__": "a version string"}
NAMES = [name for name in fp.__all__ if name not in BEING_REWRITTEN and name not in NOT_DOCUMENTED]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
EXAMPLES = re.compile(r"^Examples\n-{8,}$", re.MULTILINE)


def test_every_public_name_is_checked_or_listed():
    """Every public name is either checked or skipped for a stated reason; most are checked."""
    assert set(NOT_DOCUMENTED) <= set(fp.__all__)
    assert set(NAMES) | (set(fp.__all__) & (set(BEING_REWRITTEN) | set(NOT_DOCUMENTED))) == set(fp.__all__)
    assert all(BEING_REWRITTEN.values()) and all(NOT_DOCUMENTED.values())
    assert len(NAMES) > 60


@pytest.mark.parametrize("name", NAMES)
def test_examples_run(name):
    obj = getattr(fp, name)
    doc = inspect.getdoc(obj) or ""
    assert EXAMPLES.search(doc), f"fp.{name}: the docstring has no numpydoc 'Examples' section"
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, f"fp.{name}", globs={}) if t.examples]
    assert tests, f"fp.{name}: the Examples section has no '>>>' example"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for test in tests:
            runner.run(test, out=out.write)
    assert runner.failures == 0, f"fp.{name}: {runner.failures} example(s) failed\n{out.getvalue()}"
    assert runner.tries > 0
    shown = [f"{w.category.__name__}: {w.message}" for w in caught]
    assert not shown, f"fp.{name}: the examples emit warnings: {shown}"


def test_no_docstring_has_a_stray_substitution_reference():
    """Sphinx reads ``|x|`` outside inline literals as a substitution reference and the docs build fails on it
    (``-W``): write absolute values and norms inside double backquotes (or as ‖x‖). Every docstring of the package is
    checked, rendered or not, so that a docstring that becomes public later cannot break the build."""
    import ast
    from pathlib import Path

    literal = re.compile(r"``.*?``|:math:`[^`]*`|`[^`]*`", re.S)
    reference = re.compile(r"(?:(?<=^)|(?<=[\s(\['\"/:<{-]))\|(?=\S)([^|\n]*?\S)\|(?=$|[\s)\]'\".,;:!?/}>\\_-])", re.M)
    root = Path(fp.__file__).parent
    hits = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for line in literal.sub("``x``", ast.get_docstring(node) or "").splitlines():
                if line.lstrip().startswith((">>>", "...", "|", "+")):   # doctest code, grid tables
                    continue
                hits += [f"{path.relative_to(root)}:{getattr(node, 'lineno', 1)} {m.group(0)}" for m in reference.finditer(line)]
    assert not hits, hits
