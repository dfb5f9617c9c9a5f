# Two commands for a fresh clone:  `make demo`  and  `make test`.
# Both create .venv with Python 3.12 (found through pyenv if needed) and install the package.
VENV := .venv
PY := $(VENV)/bin/python
PYTHON312 ?= $(shell for c in python3.12 "env PYENV_VERSION=3.12 python3.12" $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12; do \
	if $$c -c 'import sys; assert sys.version_info[:2]==(3,12)' >/dev/null 2>&1; then echo $$c; break; fi; done)
export PYTENSOR_FLAGS ?= mode=CVM
export MPLBACKEND ?= Agg

.PHONY: demo test test-slow bench bench-quick venv clean

$(VENV)/.installed: pyproject.toml
	@if [ -z "$(PYTHON312)" ]; then echo "Python 3.12 not found: install it (pyenv install 3.12) or pass PYTHON312=/path/to/python3.12"; exit 1; fi
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/fdp-ppl demo --out release.nc --plot release.png

test: $(VENV)/.installed
	FDP_PPL_FAST=1 $(PY) -m pytest -q -n 2 --durations=15

test-slow: $(VENV)/.installed
	FDP_PPL_SLOW=1 $(PY) -m pytest -q -n 2

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_suite.py $(BENCH_ARGS)

bench-quick: $(VENV)/.installed
	$(PY) benchmarks/bench_suite.py --quick

clean:
	rm -rf $(VENV) release.nc release.png
