"""Fixtures shared by every test directory. A directory that needs something different (a module-scoped server,
another workspace layout) defines its own fixture of the same name, which overrides these."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import ScriptedLLMServer

# jsonschema (imported by nbformat, jupyter_events, the mcp SDK) builds rfc3987_syntax's Lark grammar at import when
# that package is installed: 0.8 s of CPU in every test process, for an IRI format no schema in these tests uses.
# Left out, jsonschema skips that one format checker. (The labs the panel tests start do the same: panel/_lab.py.)
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

#: Our fixtures of these scopes are shared by the tests of a module (a JupyterLab and its browser, a kernel, a Dask
#: cluster, a scripted server): in a parallel run such a module must run whole on one worker.
_SHARED_SCOPES = {"module", "package", "session"}


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses one of our (tests.*) fixtures shared beyond the test itself."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for defs in info.name2fixturedefs.values():
        fixture = defs[-1]
        if fixture.scope in _SHARED_SCOPES and getattr(fixture.func, "__module__", "").startswith("tests."):
            return True
    return False


def _cost_rank(item: pytest.Item) -> int:
    """Long work first: ``slow`` tests (browser, kernels, clusters), then the other groups, then single tests."""
    if item.get_closest_marker("slow") is not None:
        return 0
    return 1 if item.get_closest_marker("xdist_group") is not None else 2


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Parallel runs (pytest-xdist with ``--dist loadgroup``, as ``make test`` runs them): a module whose tests share a
    module-scoped fixture of ours becomes one group, run whole on one worker in its order, so its JupyterLab or kernel
    starts once and its tests see the state they see in a serial run; every other test is scheduled on its own. A
    module of independent tests may say so (``SPREAD_OVER_WORKERS = True``): each worker then sets up the module's
    fixtures for its share. Slow work is handed out first (the scheduler keeps this order, see
    ``--no-loadscope-reorder``), so a long browser test does not start last while the other workers idle."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers for --dist loadgroup
        return
    for item in items:
        module = getattr(item, "module", None)
        if _shares_a_fixture(item) and not getattr(module, "SPREAD_OVER_WORKERS", False):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    items.sort(key=_cost_rank)  # stable: each module keeps its order


@pytest.fixture
def llm():
    """The scripted LLM server: a real HTTP server on 127.0.0.1 speaking every provider's wire format."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An isolated HOME (tests never read or write the real ~/.config or ~/.cache)."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "README.md").write_text("# demo project\n")
    return ws
