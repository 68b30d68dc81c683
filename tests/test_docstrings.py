"""The public API of the client, the engine and the protocol explains itself: every class and function a public
module exports, and every public method of those classes, has a docstring.

Inherited members are checked where they are defined; pydantic's and the standard library's own members are not
ours to document.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

PACKAGES = ["eca_notebook.client", "eca_notebook.engine", "eca_notebook.protocol"]


def public_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        names.append(package)
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return sorted(names)


def undocumented(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    missing = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not (obj.__module__ or "").startswith("eca_notebook"):
            continue
        if not inspect.getdoc(obj) or (inspect.isclass(obj) and obj.__doc__ is None):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if inspect.isfunction(function) and not function.__doc__:
                    missing.append(f"{name}.{attr}")
    return missing


@pytest.mark.parametrize("module_name", public_modules())
def test_public_api_has_docstrings(module_name: str) -> None:
    missing = undocumented(module_name)
    assert not missing, f"{module_name}: no docstring on {', '.join(missing)}"
