"""Imports only go down: each package of ``eca_notebook`` imports only from the layers below it, and a private module
(a ``_name`` inside a package) is imported only from inside that package.

The layers (the README's architecture section draws them)::

    0  _version, _redact, _logging, …   leaf helpers of the whole package (private root modules)
    1  protocol                          the wire models
    2  transports → rpc                  framing and streams; the JSON-RPC endpoint over a stream
    3  providers, tools → plugins → mcp  model back-ends; native tools; the plug-in contract; MCP as a plug-in
       retrieval                         the content index (symbols, full text, vectors) beside the tools
    4  engine                            chats, turns, config, the toolbox — in sub-packages ("rooms"), lowest
                                         first: config, models, index, contexts, chats, workspace, turn,
                                         completion; the façade (engine.py) and its wiring above them
    5  serving                           one ECA connection over any stream (stdio, WebSocket, in-process)
    6  client                            the Python client (in-process or over a stream)
    7  notebook, server, acp, cli, batch the doors (batch: prompts at scale, each worker with a client of its own)
       jupyter_ai                        the Jupyter AI persona (runs the ACP door as its agent)

Every import counts, including the ones inside functions (made lazy for start-up time) and under
``TYPE_CHECKING``: a lazy upward import is still an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "eca_notebook"

#: What each top-level part may import (besides itself and the private root modules of layer 0).
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "transports": {"protocol"},
    "rpc": {"protocol", "transports"},
    "providers": {"protocol"},
    "tools": {"protocol"},
    "retrieval": {"protocol", "tools"},
    "plugins": {"protocol", "tools"},
    "mcp": {"protocol", "tools", "plugins"},
    "testing": {"protocol", "transports", "rpc", "providers"},
}
ALLOWED["engine"] = {"protocol", "transports", "providers", "tools", "retrieval", "plugins", "mcp"}
ALLOWED["serving"] = ALLOWED["engine"] | {"rpc", "engine"}
ALLOWED["client"] = ALLOWED["serving"] | {"serving"}
DOORS = ALLOWED["client"] | {"client"}
ALLOWED["notebook"] = DOORS
ALLOWED["server"] = DOORS
ALLOWED["acp"] = DOORS
ALLOWED["jupyter_ai"] = DOORS  # the Jupyter AI persona: runs the ACP door as a subprocess, imports none of it
ALLOWED["batch"] = DOORS
ALLOWED["cli"] = DOORS | {"acp", "server"}
ALLOWED["__main__"] = {"cli"}
#: The package root only re-exports lazily (``load_ipython_extension`` and the Jupyter server hooks).
ALLOWED[""] = {"client", "notebook", "server"}

#: Private root modules: leaf helpers, importable from everywhere, importing only each other.
LEAVES = {p.stem for p in PACKAGE.glob("_*.py") if p.stem not in ("__init__", "__main__")} | {
    p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name.startswith("_") and p.name != "__pycache__"
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, name: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every ``eca_notebook`` import in the file of module ``name``, the names of
    ``from x import name`` included when they are modules (``from . import client`` imports ``client``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "eca_notebook"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "eca_notebook":
                continue
            found.append((node.lineno, target))
            for alias in node.names:
                where = PACKAGE.parent.joinpath(*f"{target}.{alias.name}".split("."))
                if where.with_suffix(".py").exists() or where.is_dir():
                    found.append((node.lineno, f"{target}.{alias.name}"))
    return found


def part(module: str) -> str:
    """The top-level part a module belongs to (``""`` for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(path: Path, name: str) -> list[str]:
    mine = part(name)
    wrong = []
    for line, target in imports(path, name):
        theirs = part(target)
        if theirs == mine or theirs in LEAVES:
            continue
        if mine in LEAVES:
            wrong.append(f"line {line}: leaf module imports {target}")
        elif theirs not in ALLOWED.get(mine, set()):
            wrong.append(f"line {line}: {mine or 'eca_notebook'} imports {target} (layer of {theirs!r})")
    return wrong


def private_imports(path: Path, name: str) -> list[str]:
    """Imports of ``a._b`` (or anything under it) from a module outside ``a``."""
    source = name.split(".")
    wrong = []
    for line, target in imports(path, name):
        parts = target.split(".")
        for i, piece in enumerate(parts[1:], start=1):
            if piece.startswith("_") and piece != "__init__":
                owner = parts[:i]
                if source[: len(owner)] != owner:
                    wrong.append(f"line {line}: imports the private {'.'.join(parts[: i + 1])}")
                break
    return wrong


def sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "labextension" not in p.parts)


def test_every_part_has_a_layer() -> None:
    parts = {part(module_name(p)) for p in sources()} - LEAVES
    assert parts <= set(ALLOWED), f"parts with no layer in tests/test_layers.py: {sorted(parts - set(ALLOWED))}"


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_go_down(path: Path) -> None:
    assert not (wrong := upward_imports(path, module_name(path))), "\n".join(wrong)


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_imports_across_packages(path: Path) -> None:
    assert not (wrong := private_imports(path, module_name(path))), "\n".join(wrong)


#: The engine's sub-packages, lowest first: each imports only the ones before it (the README draws them). The
#: modules directly under ``engine/`` (the façade ``engine.py`` and its wiring) sit above them all.
ENGINE_ORDER = ["config", "models", "index", "contexts", "chats", "workspace", "turn", "completion"]
#: Modules of the engine that still take the whole ``Engine`` (a typing import) instead of the narrow part they use.
#: Issue #32 emptied this list (each part now names the protocol it receives); the test below keeps it exact.
STILL_TAKE_ENGINE: set[str] = set()
FACADE = "eca_notebook.engine.engine"


def engine_room(module: str) -> str:
    """The engine sub-package a module lives in; ``""`` for the modules directly under ``engine/``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in ENGINE_ORDER else ""


def engine_upward_imports(path: Path, name: str) -> list[str]:
    """Imports from a higher engine sub-package (or from the façade level) by a module of a sub-package."""
    mine = engine_room(name)
    if part(name) != "engine" or not mine:
        return []
    wrong = []
    for line, target in imports(path, name):
        if part(target) != "engine" or target == "eca_notebook.engine" or target == FACADE:
            continue  # the façade import is checked on its own below
        theirs = engine_room(target)
        if not theirs or ENGINE_ORDER.index(theirs) > ENGINE_ORDER.index(mine):
            wrong.append(f"line {line}: engine.{mine} imports {target} (above it)")
    return wrong


def engine_sources() -> list[Path]:
    return [p for p in sources() if part(module_name(p)) == "engine"]


def test_every_engine_module_is_in_a_room_or_the_facade_level() -> None:
    rooms = {p.parent.name for p in engine_sources() if p.parent.name != "engine"}
    assert rooms == set(ENGINE_ORDER), f"not in ENGINE_ORDER: {sorted(rooms ^ set(ENGINE_ORDER))}"


@pytest.mark.parametrize("path", engine_sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engine_rooms_import_only_down(path: Path) -> None:
    assert not (wrong := engine_upward_imports(path, module_name(path))), "\n".join(wrong)


def test_only_the_facade_takes_the_engine() -> None:
    """No part of the engine imports ``Engine`` (TYPE_CHECKING included) but the package's ``__init__``: a part
    receives what it uses. The modules not yet narrowed are listed above; the list must stay exact."""
    takers = {
        module_name(p) for p in engine_sources()
        if module_name(p) not in ("eca_notebook.engine", FACADE)
        and any(t == FACADE for _, t in imports(p, module_name(p)))
    }
    assert takers <= STILL_TAKE_ENGINE, f"new modules taking the whole Engine: {sorted(takers - STILL_TAKE_ENGINE)}"
    assert takers == STILL_TAKE_ENGINE, f"narrowed: remove from STILL_TAKE_ENGINE {sorted(STILL_TAKE_ENGINE - takers)}"


def test_the_engine_checker_sees_an_upward_room_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from ..turn import Turn\nfrom ..config import Config\nfrom ..engine import Engine\n",
                     encoding="utf-8")
    assert engine_upward_imports(probe, "eca_notebook.engine.chats.probe") == [
        "line 1: engine.chats imports eca_notebook.engine.turn (above it)"]
    assert engine_upward_imports(probe, "eca_notebook.engine.completion.probe") == []


def test_the_checker_sees_upward_and_private_imports(tmp_path: Path) -> None:
    """The rules above are not vacuous: an upward, a lazy upward and a private import are all found."""
    probe = tmp_path / "probe.py"
    probe.write_text("from ..engine import Engine\n\ndef f():\n    from eca_notebook.client import EcaClient\n"
                     "from ..providers._http import deep_merge\n", encoding="utf-8")
    name = "eca_notebook.tools.probe"
    assert sorted(w.split(":")[0] for w in upward_imports(probe, name)) == ["line 1", "line 4", "line 5"]
    assert private_imports(probe, name) == ["line 5: imports the private eca_notebook.providers._http"]
    assert upward_imports(probe, "eca_notebook.notebook.probe") == []


def test_the_clients_adapter_table_points_up() -> None:
    """The one place a lower layer names a higher one: the client's executor adapters (``EcaClient.batch(executor=
    dask_client)``), imported by name on first need. Each must be a public name of a part allowed to import the
    client, so the dependency still only goes down in code."""
    from eca_notebook.client._executor import ADAPTERS

    for library, target in ADAPTERS.items():
        module, _, attribute = target.partition(":")
        assert module.startswith("eca_notebook.") and attribute and not attribute.startswith("_"), target
        assert not any(piece.startswith("_") for piece in module.split(".")[1:]), f"{library}: private {module}"
        assert "client" in ALLOWED[part(module)], f"{library}: {module} is not above the client"
        assert (PACKAGE.parent / module.replace(".", "/")).with_suffix(".py").exists() or (
            PACKAGE.parent / module.replace(".", "/")).is_dir(), target
