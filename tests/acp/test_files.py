"""File tools through the client's view of files (``ctx.fs``), and :class:`ClientFiles` (ACP ``fs/*``)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.acp._files import CURRENT_SESSION, ClientFiles
from eca_notebook.protocol.errors import RpcError
from eca_notebook.tools.base import Prepared, ToolContext
from eca_notebook.tools.fs import EditFileTool, ReadFileTool, WriteFileTool


class Editor:
    """An editor's buffers: what ``fs/read_text_file`` would serve (None: not open, use the disk)."""

    def __init__(self, files: dict[str, str], *, handles_writes: bool = True, fail_writes: bool = False) -> None:
        self.files = files
        self.handles_writes = handles_writes
        self.fail_writes = fail_writes
        self.reads: list[Path] = []
        self.writes: list[tuple[Path, str]] = []

    async def read_text(self, path: Path) -> str | None:
        self.reads.append(path)
        return self.files.get(str(path))

    async def write_text(self, path: Path, content: str) -> bool:
        if self.fail_writes:
            raise RuntimeError("read-only buffer")
        if not self.handles_writes:
            return False
        self.writes.append((path, content))
        self.files[str(path)] = content
        return True


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def prepare(tool: Any, args: dict[str, Any], ctx: ToolContext) -> Prepared:
    prepared = tool.prepare(args, ctx)
    assert inspect.isawaitable(prepared)  # with ctx.fs the engine awaits prepare
    return await prepared


async def test_read_file_sees_the_editor_buffer(ws: Path):
    (ws / "a.py").write_text("on disk\n")
    editor = Editor({str(ws / "a.py"): "line 1\nline 2\nline 3\n"})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    tool = ReadFileTool()
    prepared = await prepare(tool, {"path": "a.py"}, ctx)
    assert (await tool.run(prepared, ctx)).output == "line 1\nline 2\nline 3"
    window = await prepare(tool, {"path": "a.py", "line_offset": 1, "limit": 1}, ctx)
    result = await tool.run(window, ctx)
    assert result.output.startswith("line 2\n\n[content truncated") and "of 3" in result.output
    assert editor.reads == [ws / "a.py", ws / "a.py"]


async def test_read_file_an_unsaved_new_buffer_and_the_disk_fallback(ws: Path):
    editor = Editor({str(ws / "new.py"): "fresh\n"})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    tool = ReadFileTool()
    assert (await tool.run(await prepare(tool, {"path": "new.py"}, ctx), ctx)).output == "fresh"
    (ws / "disk.py").write_text("from disk\n")
    assert (await tool.run(await prepare(tool, {"path": "disk.py"}, ctx), ctx)).output == "from disk"
    missing = await prepare(tool, {"path": "nope.py"}, ctx)
    assert missing.error == f"read_file: file not found: nope.py (relative paths start at the workspace folder {ws})"
    bad = await prepare(tool, {"path": 5}, ctx)
    assert bad.error is not None and "path" in bad.error


async def test_edit_file_diffs_against_the_buffer_and_writes_through_the_editor(ws: Path):
    (ws / "m.py").write_text("x = 'disk'\n")
    editor = Editor({str(ws / "m.py"): "x = 'buffer'\n"})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    tool = EditFileTool()
    prepared = await prepare(tool, {"path": "m.py", "original_content": "buffer", "new_content": "edited"}, ctx)
    assert prepared.error is None
    assert "-x = 'buffer'" in prepared.details["diff"] and "+x = 'edited'" in prepared.details["diff"]
    result = await tool.run(prepared, ctx)
    assert result.error is False and result.output == "Replaced 1 occurrence in m.py"
    assert editor.writes == [(ws / "m.py", "x = 'edited'\n")]
    assert (ws / "m.py").read_text() == "x = 'disk'\n"
    not_there = await prepare(tool, {"path": "m.py", "original_content": "disk", "new_content": "y"}, ctx)
    assert not_there.error is not None and "not found in m.py" in not_there.error


async def test_edit_refused_when_the_buffer_changed_after_the_diff_was_shown(ws: Path):
    editor = Editor({str(ws / "m.py"): "a = 1\n"})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    tool = EditFileTool()
    prepared = await prepare(tool, {"path": "m.py", "original_content": "a = 1", "new_content": "a = 2"}, ctx)
    editor.files[str(ws / "m.py")] = "a = 1\nb = 2\n"  # the user typed meanwhile
    result = await tool.run(prepared, ctx)
    assert result.error is True and "changed since the diff was shown" in result.output
    assert editor.writes == []


async def test_write_file_goes_through_the_editor_or_the_disk(ws: Path):
    editor = Editor({})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    tool = WriteFileTool()
    created = await prepare(tool, {"path": "n.txt", "content": "new\n"}, ctx)
    assert created.summary == 'Creating file "n.txt"'
    assert (await tool.run(created, ctx)).output == "Created n.txt (1 line)"
    assert editor.writes == [(ws / "n.txt", "new\n")] and not (ws / "n.txt").exists()

    disk_only = ToolContext(workspace_folders=[ws], fs=Editor({}, handles_writes=False))
    prepared = await prepare(tool, {"path": "d.txt", "content": "disk\n"}, disk_only)
    await tool.run(prepared, disk_only)
    assert (ws / "d.txt").read_text() == "disk\n"

    broken = ToolContext(workspace_folders=[ws], fs=Editor({str(ws / "b.txt"): "old\n"}, fail_writes=True))
    prepared = await prepare(tool, {"path": "b.txt", "content": "new\n"}, broken)
    assert prepared.summary == 'Overwriting file "b.txt"' and "-old" in prepared.details["diff"]
    result = await tool.run(prepared, broken)
    assert result.error is True and "client could not write" in result.output and "read-only buffer" in result.output
    assert not (ws / "b.txt").exists()


async def test_outside_paths_are_not_read_through_the_client_before_approval(ws: Path, tmp_path: Path):
    """Issue #12, 7: prepare (before the user is asked) must not send ``fs/read_text_file`` for an outside path."""
    secret = tmp_path / "secret.txt"
    secret.write_text("on disk\n")
    editor = Editor({str(secret): "in the editor\n"})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    read = await prepare(ReadFileTool(), {"path": str(secret)}, ctx)
    write = await prepare(WriteFileTool(), {"path": str(secret), "content": "new\n"}, ctx)
    edit = await prepare(EditFileTool(), {"path": str(secret), "original_content": "on disk",
                                          "new_content": "x"}, ctx)
    assert read.outside_workspace and write.outside_workspace and edit.outside_workspace  # so the user is asked
    assert editor.reads == []
    # approved: only now is the client asked, and its view is what the model gets
    assert (await ReadFileTool().run(read, ctx)).output == "in the editor"
    assert editor.reads == [secret]


async def test_client_writes_are_re_checked_when_they_happen(ws: Path, tmp_path: Path):
    """Issue #12, 1: the client writes by name, so the path is re-resolved just before asking it to."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "sub").mkdir()
    editor = Editor({})
    ctx = ToolContext(workspace_folders=[ws], fs=editor)
    tool = WriteFileTool()
    prepared = await prepare(tool, {"path": "sub/x.txt", "content": "x"}, ctx)
    assert prepared.summary == 'Creating file "sub/x.txt"'
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    result = await tool.run(prepared, ctx)
    assert result.error is True and "refused" in result.output and "outside the workspace" in result.output
    assert editor.writes == [] and list(outside.iterdir()) == []


async def test_buffers_with_nul_bytes_are_refused_for_edits(ws: Path):
    ctx = ToolContext(workspace_folders=[ws], fs=Editor({str(ws / "bin"): "a\0b"}))
    prepared = await prepare(WriteFileTool(), {"path": "bin", "content": "x"}, ctx)
    assert prepared.error is not None and "binary" in prepared.error


def test_without_a_client_view_prepare_stays_synchronous(ws: Path):
    (ws / "a.txt").write_text("a\n")
    prepared = ReadFileTool().prepare({"path": "a.txt"}, ToolContext(workspace_folders=[ws]))
    assert isinstance(prepared, Prepared) and prepared.error is None


class Recorder:
    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any], float]] = []
        self.answer = answer
        self.error = error

    async def __call__(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        self.calls.append((method, params, timeout))
        if self.error is not None:
            raise self.error
        return self.answer


async def test_client_files_name_the_session_of_the_running_turn():
    request = Recorder({"content": "buffer"})
    files = ClientFiles(request, can_read=True, can_write=True)
    assert await files.read_text(Path("/ws/a.py")) is None  # no session in this context: use the disk
    token = CURRENT_SESSION.set("sess-1")
    try:
        assert await files.read_text(Path("/ws/a.py")) == "buffer"
        assert await files.write_text(Path("/ws/a.py"), "new") is True
    finally:
        CURRENT_SESSION.reset(token)
    assert [(m, p) for m, p, _ in request.calls] == [
        ("fs/read_text_file", {"sessionId": "sess-1", "path": "/ws/a.py"}),
        ("fs/write_text_file", {"sessionId": "sess-1", "path": "/ws/a.py", "content": "new"}),
    ]


async def test_client_files_failures():
    token = CURRENT_SESSION.set("sess-1")
    try:
        missing = ClientFiles(Recorder(error=RpcError(-31700, "File not found")), can_read=True, can_write=True)
        assert await missing.read_text(Path("/ws/x")) is None
        with pytest.raises(OSError, match="File not found"):
            await missing.write_text(Path("/ws/x"), "y")
        read_only = ClientFiles(Recorder({"content": "c"}), can_read=True, can_write=False)
        assert await read_only.write_text(Path("/ws/x"), "y") is False
        assert await ClientFiles(Recorder({"nothing": 1}), can_read=True, can_write=False).read_text(Path("/x")) is None
    finally:
        CURRENT_SESSION.reset(token)


async def test_client_write_refusals_carry_the_clients_reason_redacted():
    """Jupyter AI 3.2 refuses a raw ``.ipynb`` write with its reason in ``error.data`` (as its client sends it):
    the reason reaches the model; a secret in it does not."""
    reason = {"path": "writing .ipynb files directly is not allowed; use the Jupyter notebook MCP tools (e.g. "
                      "insert_cell, edit_cell) instead"}
    token = CURRENT_SESSION.set("sess-1")
    try:
        refused = ClientFiles(Recorder(error=RpcError(-32602, "Invalid params", reason)), can_read=True,
                              can_write=True)
        with pytest.raises(OSError) as raised:
            await refused.write_text(Path("/ws/n.ipynb"), "{}")
        assert "Invalid params (-32602)" in str(raised.value) and reason["path"] in str(raised.value)
        secret = {"error": "token sk-abcdef1234567890abcdef rejected"}
        leaky = ClientFiles(Recorder(error=RpcError(-32603, "Internal error", secret)), can_read=True, can_write=True)
        with pytest.raises(OSError) as raised:
            await leaky.write_text(Path("/ws/a.py"), "x")
        assert "rejected" in str(raised.value) and "sk-abcdef1234567890abcdef" not in str(raised.value)
    finally:
        CURRENT_SESSION.reset(token)


async def test_as_a_guest_notebooks_are_never_written_as_json(ws: Path):
    """A host that owns notebooks (Jupyter AI) refuses raw ``.ipynb`` writes: after one refusal the client files say
    so, and with ``notebook_hint`` set the file tools refuse even a new, valid notebook, naming the tools to use."""
    token = CURRENT_SESSION.set("sess-1")
    try:
        files = ClientFiles(Recorder(error=RpcError(-32602, "Invalid params", {"path": "use the MCP tools"})),
                            can_read=True, can_write=True)
        assert files.refuses_notebooks is False
        with pytest.raises(OSError, match="use the MCP tools"):
            await files.write_text(ws / "n.ipynb", "{}")
        assert files.refuses_notebooks is True
    finally:
        CURRENT_SESSION.reset(token)
    notebook = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    hint = "the host edits notebooks itself: use insert_cell"
    ctx = ToolContext(workspace_folders=[ws], notebook_hint=hint)
    for tool, args in ((WriteFileTool(), {"path": "new.ipynb", "content": notebook}),
                       (EditFileTool(), {"path": "new.ipynb", "original_content": "", "new_content": notebook})):
        prepared = tool.prepare(args, ctx)
        assert prepared.error is not None and hint in prepared.error
    assert not (ws / "new.ipynb").exists()
    assert WriteFileTool().prepare({"path": "new.ipynb", "content": notebook}, ToolContext(workspace_folders=[ws])
                                   ).error is None  # not a guest: a new valid notebook may be created


# -- fs/read_text_file sent to the agent: only the session's folders, checked at the moment of the read -------------


def _code(roots: list[Path], path: str) -> int | dict[str, Any]:
    from eca_notebook.acp._files import read_for_client

    try:
        return read_for_client(roots, path)
    except RpcError as exc:
        return exc.code


def test_a_client_read_outside_the_folders_is_refused(tmp_path: Path) -> None:
    """-31701 for a file outside the session's folders however it is named: by itself, through ``..``, through a
    symlink in a folder, ``/proc``. (A missing path is -31700, the spec's ``/nonexistent``.)"""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    (ws / "out").symlink_to(tmp_path / "secret.txt")
    (ws / "dangling").symlink_to(tmp_path / "nowhere.txt")
    assert _code([ws], str(tmp_path / "secret.txt")) == -31701
    assert _code([ws], str(ws / ".." / "secret.txt")) == -31701
    assert _code([ws], str(ws / "out")) == -31701
    assert _code([ws], str(ws / "dangling")) == -31700  # leads out, to nothing
    assert _code([ws], str(ws / "missing.txt")) == -31700  # inside: missing is missing
    assert _code([ws], "/proc/self/environ") == -31701


def test_a_client_read_of_a_fifo_or_a_huge_file_answers_at_once(tmp_path: Path) -> None:
    import os
    import threading

    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe")
    with open(ws / "sparse", "wb") as f:
        f.truncate(64 * 1024 * 1024 * 1024)  # 64 GB, sparse: refused by its size, never read
    answers: list[Any] = []
    reader = threading.Thread(target=lambda: answers.extend([_code([ws], str(ws / "pipe")),
                                                              _code([ws], str(ws / "sparse"))]), daemon=True)
    reader.start()
    reader.join(60)
    assert answers == [-31700, -31702]


def test_a_client_read_never_follows_a_folder_swapped_for_a_symlink_out(tmp_path: Path) -> None:
    """The path is checked, then opened: a folder of it swapped for a symlink out of the workspace in between (by
    another process) must not make the read answer the outside file. Another process swaps it as fast as it can
    while the client reads; every answer is the inside text or a refusal."""
    import subprocess
    import sys
    import time

    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("inside")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.txt").write_text("SECRET")
    swapper = subprocess.Popen([sys.executable, "-c", (
        "import os, sys\n"
        "ws, out = sys.argv[1], sys.argv[2]\n"
        "os.symlink(out, ws + '/link')\n"
        "while True:\n"
        "    os.rename(ws + '/d', ws + '/real')\n"
        "    os.rename(ws + '/link', ws + '/d')\n"
        "    os.rename(ws + '/d', ws + '/link')\n"
        "    os.rename(ws + '/real', ws + '/d')\n"), str(ws), str(tmp_path / "outside")])
    try:
        seen: set[Any] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(seen) < 3 and "SECRET" not in str(seen):
            for _ in range(200):
                answer = _code([ws], str(ws / "d" / "f.txt"))
                seen.add(answer["content"] if isinstance(answer, dict) else answer)
    finally:
        swapper.kill()
        swapper.wait()
    assert "SECRET" not in seen
    assert "inside" in seen  # the race was really run: the file was read between the swaps
