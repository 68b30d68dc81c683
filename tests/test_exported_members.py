"""Every public module says what it exports: ``__all__`` lists the module's public classes and functions, names
only things that exist, and is sorted the way ruff's RUF022 sorts it (so a diff that adds a name shows where it
goes, and duplicates stand out).

Like httpx's ``tests/test_exported_members.py``, for every public module of the package (no ``_`` in its path).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

import pytest

import eca_notebook

# Modules whose __all__ is not yet in order, owned by work in progress elsewhere: each entry fails today (strict
# xfail), so fixing a module makes this test fail until its entry is removed.
PENDING: dict[str, str] = {}


def public_modules() -> list[str]:
    names = ["eca_notebook"]
    for info in pkgutil.walk_packages(eca_notebook.__path__, "eca_notebook."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        if info.name.startswith("eca_notebook.server.labextension"):
            continue
        names.append(info.name)
    return sorted(names)


def isort_key(name: str) -> tuple[int, str]:
    """The order of ruff's RUF022 (isort style): CONSTANTS, then Classes, then functions and the rest."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def problems(module: types.ModuleType) -> list[str]:
    exported = getattr(module, "__all__", None)
    if exported is None:
        return ["no __all__"]
    found = []
    if list(exported) != sorted(exported, key=isort_key):
        found.append(f"__all__ not sorted (ruff check --select RUF022 --fix): {list(exported)}")
    if len(set(exported)) != len(exported):
        found.append("duplicates in __all__")
    missing = [name for name in exported if not hasattr(module, name)]
    if missing:
        found.append(f"__all__ names missing attributes: {missing}")
    defined = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == module.__name__
    ]
    unlisted = sorted(set(defined) - set(exported))
    if unlisted:
        found.append(f"public but not in __all__: {unlisted}")
    return found


def _params() -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(reason=PENDING[name], strict=True)) if name in PENDING else name
        for name in public_modules()
    ]


@pytest.mark.parametrize("name", _params())
def test_all_is_sorted_and_complete(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional dependency (the MCP SDK, jupyter_server) is not installed
        pytest.skip(f"{name}: {exc}")
    assert problems(module) == []


def test_package_is_marked_typed() -> None:
    """PEP 561: type checkers of projects that use the package read its annotations (hatch ships the file)."""
    from pathlib import Path

    assert (Path(eca_notebook.__file__).parent / "py.typed").is_file()
