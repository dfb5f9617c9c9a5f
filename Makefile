# Two commands for a fresh clone:  `make demo`  and  `make test`.
# Both create .venv with Python >= 3.12 (3.12 preferred: the version CI runs; then 3.13 ...), found on PATH or
# through pyenv; pass PYTHON=/path/to/python3.x to choose another. The chosen interpreter is printed.
VENV := .venv
PY := $(VENV)/bin/python
PYTHON ?= $(shell for v in 3.12 3.13 3.14; do for c in python$$v "env PYENV_VERSION=$$v python$$v" \
	$$HOME/.pyenv/versions/$$v*/bin/python$$v /usr/bin/python$$v /usr/local/bin/python$$v; do \
	if $$c -c 'import sys; assert sys.version_info[:2] >= (3, 12)' >/dev/null 2>&1; then echo $$c; exit 0; fi; done; done; \
	for c in python3 python; do if $$c -c 'import sys; assert sys.version_info[:2] >= (3, 12)' >/dev/null 2>&1; then \
	echo $$c; exit 0; fi; done)
export PYTENSOR_FLAGS ?= mode=CVM
export MPLBACKEND ?= Agg

.PHONY: demo test test-slow bench bench-quick bench-peers venv clean docs docs-check constraints

$(VENV)/.installed: pyproject.toml constraints.txt
	@if [ -z "$(PYTHON)" ]; then echo "Python >= 3.12 not found: install it (pyenv install 3.12) or pass PYTHON=/path/to/python3.12"; exit 1; fi
	@echo "creating $(VENV) with $$($(PYTHON) -c 'import sys; print(f"Python {sys.version.split()[0]} at {sys.executable}")')"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[test]"
	touch $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/fdp-ppl demo --out release.nc --plot release.png --force

test: $(VENV)/.installed
	FDP_PPL_FAST=1 $(PY) -m pytest -q -n 2 --durations=15

test-slow: $(VENV)/.installed
	FDP_PPL_SLOW=1 $(PY) -m pytest -q -n 2

# the benchmarks' peers (KDEpy): their own install stamp, so `make test` installs nothing more
$(VENV)/.bench-installed: $(VENV)/.installed pyproject.toml constraints.txt
	$(PY) -m pip install -q -c constraints.txt -e ".[test,bench]"
	touch $@

bench: $(VENV)/.bench-installed
	$(PY) benchmarks/bench_suite.py $(BENCH_ARGS)

bench-quick: $(VENV)/.bench-installed
	$(PY) benchmarks/bench_suite.py --quick

# every family against its strongest peer: one table, written into README.md (BENCH_PEERS_ARGS= for the issue's sizes)
BENCH_PEERS_ARGS ?= --quick
bench-peers: $(VENV)/.bench-installed
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/bench_peers_all.py $(BENCH_PEERS_ARGS) --readme

# execute notebooks in full mode and store their outputs (NOTEBOOKS=notebooks/03_*.ipynb for some)
.PHONY: notebooks
notebooks: $(VENV)/.installed
	$(PY) notebooks/execute.py $(NOTEBOOKS)

# Documentation (Sphinx + MyST-NB + PyData theme): its own install stamp, so `make test` installs nothing more.
# `make docs` writes docs/_build/html/index.html; `make docs-check` also screenshots pages in headless Chromium
# (Debian package `chromium`) into docs/_build/screenshots/ and fails on a missing or blank page.
$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml constraints.txt
	$(PY) -m pip install -q -c constraints.txt -e ".[test,docs]"
	touch $@

docs: $(VENV)/.docs-installed
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "documentation: docs/_build/html/index.html"

docs-check: docs
	$(PY) docs/screenshots.py docs/_build/html

# Re-pin constraints.txt on purpose (never done by make test): a fresh venv installs what the registry serves today
# for pyproject's ranges, and its pip freeze becomes the new constraints; then run `make test` and commit both.
constraints:
	rm -rf .venv-constraints
	$(PYTHON) -m venv .venv-constraints
	.venv-constraints/bin/python -m pip install -q --upgrade pip
	.venv-constraints/bin/python -m pip install -q -e ".[test,docs,bench]"
	{ echo "# Exact versions that make test, make demo, make docs and CI install (pip install -c constraints.txt)."; \
	  echo "# Updated on purpose only: make constraints (a fresh venv without constraints, then pip freeze), then run make test."; \
	  .venv-constraints/bin/python -m pip freeze --exclude-editable --all | grep -v '^setuptools==\|^wheel==' | sort -f; } > constraints.txt
	rm -rf .venv-constraints

clean:
	rm -rf $(VENV) release.nc release.png docs/_build docs/_generated
