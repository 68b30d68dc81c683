"""Native tools: the file, search, shell and editor tools the agent can call (as ``eca__<name>``).

Each tool follows the two-step contract of :mod:`eca_notebook.tools.base`: ``prepare`` validates and computes the
summary and diff shown for approval, ``run`` does the work. A tool is written one way, here and above this layer
(the ``%eca`` kernel's tools): a :class:`NativeTool` whose arguments are a :class:`ToolArgs` pydantic model, which
gives the JSON schema the model sees and validates its calls, its mistakes told back in one sentence.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import Approval, Prepared, Tool, ToolContext, ToolResult

if TYPE_CHECKING:  # imported on first use (module __getattr__): see _LAZY
    from ._args import ToolArgs
    from ._tool import NativeTool
    from .editor import EditorDiagnosticsTool
    from .fs import DeleteFileTool, EditFileTool, MoveFileTool, ReadFileTool, WriteFileTool
    from .navigation import EditorDefinitionTool, EditorReferencesTool
    from .notebook import NotebookAccess
    from .plan import UpdatePlanTool
    from .question import AskUserTool
    from .retrieval import SearchSymbolsTool, SearchTextTool, VectorSearchTool
    from .search import DirectoryTreeTool, GrepTool
    from .shell import ShellCommandTool

# Why lazy: ``tools.base`` is imported by every layer above (importing it runs this file), while the tools
# themselves (pathspec, the shell parser's tree-sitter grammar) are needed only once an engine lists them.
_LAZY: dict[str, str] = {
    "AskUserTool": ".question",
    "DeleteFileTool": ".fs",
    "EditorDefinitionTool": ".navigation",
    "EditorDiagnosticsTool": ".editor",
    "EditorReferencesTool": ".navigation",
    "EditFileTool": ".fs",
    "MoveFileTool": ".fs",
    "ReadFileTool": ".fs",
    "WriteFileTool": ".fs",
    "NativeTool": "._tool",
    "NotebookAccess": ".notebook",
    "UpdatePlanTool": ".plan",
    "SearchSymbolsTool": ".retrieval",
    "SearchTextTool": ".retrieval",
    "VectorSearchTool": ".retrieval",
    "DirectoryTreeTool": ".search",
    "GrepTool": ".search",
    "ShellCommandTool": ".shell",
    "ToolArgs": "._args",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Approval",
    "AskUserTool",
    "DeleteFileTool",
    "DirectoryTreeTool",
    "EditFileTool",
    "EditorDefinitionTool",
    "EditorDiagnosticsTool",
    "EditorReferencesTool",
    "GrepTool",
    "MoveFileTool",
    "NativeTool",
    "NotebookAccess",
    "Prepared",
    "ReadFileTool",
    "SearchSymbolsTool",
    "SearchTextTool",
    "ShellCommandTool",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolResult",
    "UpdatePlanTool",
    "VectorSearchTool",
    "WriteFileTool",
    "get_native_tool",
    "native_tools",
]


def native_tools() -> list[Tool]:
    """A fresh instance of every native tool. ``editor_diagnostics`` is included; the engine hides it when the
    client did not advertise ``editor.diagnostics``. The ``notebook_*`` tools work on any ``.ipynb`` (through the
    front end that has it open, else on the file)."""
    from .editor import EditorDiagnosticsTool
    from .fs import DeleteFileTool, EditFileTool, MoveFileTool, ReadFileTool, WriteFileTool
    from .jobs import BgJobTool
    from .navigation import navigation_tools
    from .notebook import notebook_tools
    from .plan import UpdatePlanTool
    from .question import AskUserTool
    from .retrieval import retrieval_tools
    from .search import DirectoryTreeTool, GrepTool
    from .shell import ShellCommandTool

    return [
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
        MoveFileTool(),
        DeleteFileTool(),
        GrepTool(),
        DirectoryTreeTool(),
        *retrieval_tools(),
        ShellCommandTool(),
        BgJobTool(),
        EditorDiagnosticsTool(),
        *navigation_tools(),
        UpdatePlanTool(),
        AskUserTool(),
        *notebook_tools(),
    ]


def get_native_tool(name: str) -> Tool | None:
    """The native tool called `name` (also accepts the LLM-facing ``eca__name`` and the older ``eca_name``)."""
    for prefix in ("eca__", "eca_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    for tool in native_tools():
        if tool.name == name:
            return tool
    return None
