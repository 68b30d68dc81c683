"""The panel's build artefacts stay honest: the generated ``protocol.ts`` matches the pydantic models, the committed
lab extension was built from the current sources, the front-end type check and lint (``npm run typecheck``,
``npm run lint``) are clean, and the front-end unit tests (node's test runner) pass.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import eca_notebook

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"
LABEXTENSION = ROOT / "eca_notebook" / "server" / "labextension"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"eca_panel_{name}", EXTENSION / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_protocol_ts_is_generated_from_the_current_models():
    gen = _script("gen_protocol")
    expected = gen.generate()
    current = (EXTENSION / "src" / "protocol.ts").read_text(encoding="utf-8")
    assert current == expected, (
        "extension/src/protocol.ts is stale: run .venv/bin/python extension/scripts/gen_protocol.py"
    )


def test_protocol_ts_covers_every_method_and_content_type():
    from eca_notebook.protocol import CONTENT_TYPES, METHODS

    text = (EXTENSION / "src" / "protocol.ts").read_text(encoding="utf-8")
    for name in METHODS:
        assert f'"{name}"' in text, name
    union = text.split("export type ChatContent =", 1)[1].split(";", 1)[0]
    members = re.findall(r"\|\s*(\w+)", union)
    tags = set()
    for member in members:
        body = text.split(f"export interface {member} {{", 1)[1].split("\n}", 1)[0]
        tags.add(re.search(r'type: "(\w+)";', body).group(1))
    assert tags == set(CONTENT_TYPES)


def test_the_committed_lab_extension_was_built_from_the_current_sources():
    build = _script("build")
    stamp = build.read_stamp()
    assert (LABEXTENSION / "package.json").is_file(), "no build in eca_notebook/server/labextension"
    assert stamp.get("sourceHash") == build.source_hash(), (
        "eca_notebook/server/labextension is stale: run `npm ci` in extension/, then "
        ".venv/bin/python extension/scripts/build.py, and commit the result"
    )


def test_the_source_hash_notices_a_changed_source(tmp_path, monkeypatch):
    build = _script("build")
    copy = tmp_path / "extension"
    for name in build.INPUTS:
        src = EXTENSION / name
        if src.is_dir():
            shutil.copytree(src, copy / name)
        elif src.is_file():
            copy.mkdir(exist_ok=True)
            shutil.copy2(src, copy / name)
    monkeypatch.setattr(build, "EXTENSION", copy)
    before = build.source_hash()
    assert before == _script("build").source_hash(), "the copy hashes like the original"
    target = copy / "src" / "model.ts"
    target.write_text(target.read_text() + "\n// changed\n")
    assert build.source_hash() != before


def test_the_built_package_matches_the_python_package_and_its_entry_points():
    from eca_notebook.server import labextension_paths

    package = json.loads((LABEXTENSION / "package.json").read_text())
    assert package["name"] == "eca-notebook" and package["version"] == eca_notebook.__version__
    assert (LABEXTENSION / package["jupyterlab"]["_build"]["load"]).is_file()
    [path] = labextension_paths()
    assert (ROOT / "eca_notebook" / "server" / path["src"] / "package.json").is_file()
    assert path["dest"] == package["name"]
    source = json.loads((EXTENSION / "package.json").read_text())
    assert source["version"] == eca_notebook.__version__, "extension/package.json and eca_notebook.__version__ differ"


def _node_ready() -> bool:
    return shutil.which("node") is not None and (EXTENSION / "node_modules" / ".bin" / "tsc").exists()


needs_node = pytest.mark.skipif(not _node_ready() and not os.environ.get("CI"),
                                reason="node or extension/node_modules missing (run `npm ci` in extension/)")


def _npm_script(name: str) -> None:
    """``npm run <name>`` in extension/, failing with the tool's own output."""
    assert _node_ready(), "CI must run `npm ci` in extension/ (node and extension/node_modules are missing)"
    npm = shutil.which("npm")
    assert npm is not None, "npm is missing (it comes with node)"
    run = subprocess.run([npm, "run", "--silent", name], cwd=EXTENSION, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"`npm run {name}` failed:\n{run.stdout[-8000:]}{run.stderr[-4000:]}"


@needs_node
def test_typecheck():
    """``npm run typecheck``: tsc --noEmit over the sources and the unit tests."""
    _npm_script("typecheck")


@needs_node
def test_lint():
    """``npm run lint``: ESLint with the rule set stated in extension/eslint.config.mjs, warnings included."""
    _npm_script("lint")


@needs_node
def test_front_end_unit_tests():
    assert _node_ready(), "CI must run `npm ci` in extension/ (node and extension/node_modules are missing)"
    tsc = str(EXTENSION / "node_modules" / ".bin" / "tsc")
    compiled = subprocess.run([tsc, "-p", "tsconfig.test.json"], cwd=EXTENSION, capture_output=True, text=True,
                              timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    run = subprocess.run(["node", "--test", "build-test/test/"], cwd=EXTENSION, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)", run.stdout, re.M).group(1))
    failed = int(re.search(r"^# fail (\d+)", run.stdout, re.M).group(1))
    assert failed == 0 and passed >= 25, run.stdout[-2000:]
