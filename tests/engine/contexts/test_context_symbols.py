"""Code symbols in ``chat/queryContext`` answers (``query_context`` with the content index): offered after the
files only once the index can answer without building — the first keystroke starts opening it instead of waiting."""

from __future__ import annotations

import asyncio
from pathlib import Path

from eca_notebook.engine.index._index import WorkspaceIndex
from eca_notebook.retrieval import CodeIndex

from ...e2e.test_symbol_context import make_shapes
from .test_contexts import offered


async def test_the_first_keystroke_starts_opening_the_index_and_later_ones_get_symbols(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shapes = make_shapes(ws)
    (ws / "circle_notes.md").write_text("Circle notes\n")
    files = WorkspaceIndex([ws])
    await files.build()
    code = CodeIndex([ws], tmp_path / "cache" / "content.sqlite")
    try:
        first = await offered("Circle", index=files, already=[], code_index=code)
        assert [c for c in first if c.get("description")] == []  # not open yet: no wait, no symbols
        assert any(c["path"].endswith("circle_notes.md") for c in first)
        for _ in range(1200):  # the background opening, with a generous guard (120 s)
            if code.ready:
                break
            await asyncio.sleep(0.1)
        answer = await offered("Circle", index=files, already=[], code_index=code)
        symbol = {"type": "file", "path": str(shapes), "linesRange": {"start": 8, "end": 15},
                  "description": "class Circle"}
        assert answer[-1] == symbol
        assert answer.index(symbol) > max(i for i, c in enumerate(answer) if "description" not in c)  # files first
        assert await offered("Circle.area", index=files, already=[], code_index=code) == [
            {"type": "file", "path": str(shapes), "linesRange": {"start": 14, "end": 15},
             "description": "method Circle.area"}]
        # a full answer keeps room for the symbols; none for a one-letter or non-identifier query
        assert (await offered("Circle", index=files, already=[], code_index=code, limit=1)) == [symbol]
        for query in ("C", "geometry/", "-x", ""):
            answer = await offered(query, index=files, already=[], code_index=code)
            assert not [c for c in answer if c.get("description", "").startswith("class")]
    finally:
        await code.close()


async def test_without_a_content_index_there_are_only_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_shapes(ws)
    files = WorkspaceIndex([ws])
    await files.build()
    answer = await offered("shapes", index=files, already=[])
    assert answer and all("description" not in c for c in answer)
