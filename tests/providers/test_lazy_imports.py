"""The provider and tool packages load their modules on first use: importing the engine (or a layer that only needs
the contracts) does not pay for every wire API, the tools' pathspec or the shell parser's tree-sitter grammar."""

from __future__ import annotations

import subprocess
import sys

import eca_notebook.providers as providers
import eca_notebook.tools as tools


def _loaded_after(statement: str, modules: list[str]) -> list[str]:
    code = f"import sys\n{statement}\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])  # a printed list of str


def test_package_imports_load_nothing_they_do_not_need():
    wire = ["eca_notebook.providers.anthropic", "eca_notebook.providers.openai_responses", "httpx"]
    assert _loaded_after("import eca_notebook.providers", wire) == []
    tool_modules = ["eca_notebook.tools.shell", "pathspec", "tree_sitter"]
    assert _loaded_after("import eca_notebook.tools.base", tool_modules) == []
    assert _loaded_after("from eca_notebook.tools import native_tools; native_tools()", ["tree_sitter"]) == []
    # images are checked with Pillow, imported only when an image comes (eca_notebook/_images.py)
    assert _loaded_after("import eca_notebook, eca_notebook.engine, eca_notebook.providers.anthropic", ["PIL"]) == []


def test_lazy_names_resolve_and_are_listed():
    for package in (providers, tools):
        for name in package.__all__:
            assert getattr(package, name) is not None, name
            assert name in dir(package), name
    assert providers.create_provider.__module__ == providers.__name__


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError):
        providers.NoSuchThing  # noqa: B018
    with pytest.raises(AttributeError):
        tools.NoSuchThing  # noqa: B018
