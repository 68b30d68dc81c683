"""The session stream's automatic context: what becomes file contexts, what the "Editor context" block says, the
token budget, and paths outside the workspace."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from eca_notebook.server._stream_context import merge_context, render_context, render_update
from eca_notebook.server._stream_schema import EditorContext


def ctx(**fields: Any) -> EditorContext:
    return EditorContext.model_validate(fields)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (root / "src" / "lib.py").write_text("def helper():\n    return 1\n\n\ndef validate(x):\n    return x > 0\n")
    (tmp_path / "secret.txt").write_text("TOP-SECRET\n")
    return root


async def test_selection_and_mentions_are_file_contexts_the_rest_one_block(project: Path) -> None:
    context = ctx(
        active_editor={"file_path": "src/app.py", "language": "python", "visible_range": {"start": 1, "end": 40},
                       "selection": {"start": {"line": 10, "character": 0}, "end": {"line": 12, "character": 4}}},
        diagnostics=[{"file_path": "src/app.py", "severity": "warning", "line": 11, "message": "W-1"},
                     {"file_path": "src/app.py", "severity": "error", "line": 10, "character": 2, "message": "E-1",
                      "source": "pyright"}],
        mentions=[{"type": "file", "path": "src/lib.py"},
                  {"type": "symbol", "name": "validate", "file_path": "src/lib.py", "line": 5}],
        terminal_output={"command": "pytest", "exit_code": 1, "stdout": "T-1", "stderr": "T-2"},
        git_context={"branch": "b-1", "modified_files": ["src/app.py"],
                     "recent_commits": [{"sha": "abcdef1234567890", "message": "Fix it\nbody", "author": "K"}]},
        open_editors=[{"file_path": "src/lib.py", "is_dirty": True, "visible": False}],
    )
    out = await render_context(context, [project], 6000)
    assert out.contexts == [
        {"type": "file", "path": str(project / "src" / "app.py"), "linesRange": {"start": 10, "end": 12}},
        {"type": "file", "path": str(project / "src" / "lib.py")},
    ]
    text = out.text
    assert "Active editor: src/app.py (python), selection lines 10-12, visible lines 1-40" in text
    assert text.index("E-1") < text.index("W-1")  # errors first
    assert "- src/app.py:10:2 error [pyright]: E-1" in text
    assert "Symbol `validate` — src/lib.py lines 3-6" in text and "return x > 0" in text
    assert "of `pytest` (exit code 1)" in text and "T-1" in text and "T-2" in text
    assert "branch: b-1" in text and "commit abcdef123456 (K): Fix it" in text and "body" not in text
    assert "- src/lib.py (unsaved changes)" in text
    assert "Left out" not in text and not out.notes


async def test_paths_outside_the_workspace_are_dropped_unread(project: Path) -> None:
    context = ctx(active_editor={"file_path": "../secret.txt"},
                  mentions=[{"type": "file", "path": str(project.parent / "secret.txt")},
                            {"type": "symbol", "name": "s", "file_path": "../secret.txt", "line": 1}],
                  diagnostics=[{"file_path": "/etc/passwd", "severity": "error", "message": "x"}],
                  open_editors=[{"file_path": "../../x"}])
    out = await render_context(context, [project], 6000)
    assert out.contexts == []
    assert "TOP-SECRET" not in out.text
    assert len(out.notes) == 5 and all("outside the workspace" in note for note in out.notes)
    assert "Not included:" in out.text


async def test_budget_keeps_selection_and_diagnostics_first(project: Path) -> None:
    big = "".join(f"open_{i}.py\n" for i in range(400))
    context = ctx(active_editor={"file_path": "src/app.py",
                                 "selection": {"start": {"line": 1}, "end": {"line": 3}}},
                  diagnostics=[{"file_path": "src/app.py", "severity": "error", "message": "D-1"}],
                  terminal_output={"stdout": "x" * 3000},
                  git_context={"branch": "b", "modified_files": [f"f{i}.py" for i in range(100)]},
                  open_editors=[{"file_path": f"src/{name}"} for name in big.split()])
    out = await render_context(context, [project], 300)
    assert out.contexts and out.contexts[0]["linesRange"] == {"start": 1, "end": 3}
    assert "D-1" in out.text
    assert "Left out (over the editor-context budget of 300 tokens)" in out.text
    assert "open editors" in out.text.split("Left out")[1]
    assert len(out.text.encode()) < 300 * 4 + 600  # the budget, plus the sentence saying what was left out


async def test_symbol_definition_from_the_code_index(project: Path) -> None:
    class Index:
        async def search_symbols(self, name: str, limit: int = 20) -> list[Any]:
            return [SimpleNamespace(name="validate", path="src/lib.py", start_line=5, end_line=6)]

    out = await render_context(ctx(mentions=[{"type": "symbol", "name": "validate"}]), [project], 6000, Index())
    assert "Symbol `validate` — src/lib.py lines 5-6:\n```\ndef validate(x):\n    return x > 0\n```" in out.text

    class Broken:
        async def search_symbols(self, name: str, limit: int = 20) -> list[Any]:
            raise RuntimeError("index down")

    out = await render_context(ctx(mentions=[{"type": "symbol", "name": "helper", "file_path": "src/lib.py",
                                               "line": 1}]), [project], 6000, Broken())
    assert "def helper():" in out.text  # the lines around the given line instead


def test_updates_merge_and_render_without_reading_files(project: Path) -> None:
    base = ctx(diagnostics=[{"file_path": "src/app.py", "severity": "error", "message": "old"}],
               terminal_output={"stdout": "keep"})
    merged = merge_context(base, ctx(diagnostics=[{"file_path": "src/app.py", "severity": "hint", "message": "new"}]))
    assert [d.message for d in merged.diagnostics or []] == ["new"] and merged.terminal_output is not None
    cleared = merge_context(merged, EditorContext.model_validate({"terminal_output": None}))
    assert cleared.terminal_output is None
    note = render_update(ctx(active_editor={"file_path": "src/app.py"}, terminal_output={"stdout": "U-1"}),
                         [project], 6000)
    assert "changed during this turn" in note and "U-1" in note and "line 1" not in note
    assert render_update(ctx(), [project], 6000) == ""
