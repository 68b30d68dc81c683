"""Runs tests/jupyter_ai in ``.venv-jupyter-ai`` (see conftest.py): one test here per module there, so a failure
names the module, and its output is shown. That venv holds what a user of Jupyter AI installs
(``eca-notebook[lab,jupyter-ai]``), with mcp 1.x: our MCP tests (tests/mcp) run there too, on 1.x, while this venv
runs them on 2.x."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-jupyter-ai" / "bin" / "python"
MODULES = sorted(f"tests/jupyter_ai/{p.name}" for p in Path(__file__).parent.glob("test_*.py")
                 if p.name != Path(__file__).name)


#: tests/mcp module by module: a parallel run spreads them over its workers (the directory whole took ~9 min)
MCP_MODULES = sorted(f"tests/mcp/{p.name}" for p in (ROOT / "tests" / "mcp").glob("test_*.py"))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("target", [*MODULES, *MCP_MODULES])
def test_in_the_jupyter_ai_venv(target: str):
    if not PYTHON.exists():
        pytest.skip(".venv-jupyter-ai is absent: `make test` creates it (make .venv-jupyter-ai/.stamp)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "VIRTUAL_ENV"))}
    # serially, without pyproject's addopts (its -n asks for pytest-xdist there too): this test is already one of
    # the parallel run's, and its workers share the machine
    run = subprocess.run([str(PYTHON), "-m", "pytest", target, "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "-o", "addopts="], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1780)
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
