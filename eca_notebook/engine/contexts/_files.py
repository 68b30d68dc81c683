"""Reading what the user attached from the disk: files (whole, a line range, or a notebook's cells), directories
and the lines around the cursor, each as a :class:`~._context_blocks.Block`.

Blocking file I/O: the caller runs these in a thread. A file that cannot be attached (missing, binary, not a regular
file, a range past its end) raises :class:`~._context_blocks.ContextProblem` with the message the user sees. Paths
are shown as their *real* path (``..`` and symlinks resolved): the user may attach files outside the workspace on
purpose, but the model and the user should both see where the content really came from.

On purpose means named as such: a path the user gave *inside* the workspace that a symlink leads out of it (a cloned
repository's ``config.txt`` pointing at ``~/.netrc``, picked from the ``@`` completion) is refused — the user chose a
workspace file, not the file of theirs it leads to. ``~/.netrc`` attached by its own name is read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..._fileio import SNIFF_BYTES, looks_binary
from ..._text import strip_controls
from ..._workspace_paths import is_inside, resolved_folders
from ...protocol import JsonObject
from ...protocol.context import CursorContext
from ...tools.ignore import IgnoreMatcher
from ..index import _fold
from ._blocks import (
    CURSOR_MAX_FILE_BYTES,
    CURSOR_RADIUS,
    DIRECTORY_MAX_ENTRIES,
    NOTEBOOK_MAX_BYTES,
    NOTEBOOK_OUTPUT_CHARS,
    Block,
    ContextProblem,
)

__all__ = ["render_cursor", "render_directory", "render_file", "resolve_path"]


def resolve_path(raw: str, folders: list[Path]) -> Path:
    """An attached path as its real absolute path: ``file://`` URIs and ``~`` accepted, relative paths looked up in
    each workspace folder (the first that has it, else the first folder). A path inside the workspace as given
    that symlinks lead out of it raises :class:`ContextProblem` (see the module's docstring)."""
    text = raw
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        bases = folders or [Path.cwd()]
        path = next((b / path for b in bases if os.path.lexists(b / path)), bases[0] / path)
    real = path.resolve()
    if folders and not is_inside(real, folders):
        given = Path(os.path.normpath(path))
        if any(given == f or given.is_relative_to(f) for f in [*map(Path, folders), *resolved_folders(folders)]):
            raise ContextProblem(f"{raw} skipped: symlink points outside the workspace (to {real}); attach that "
                                 "file by its own path to send it")
    return real


def render_file(raw: str, path: Path, rng: tuple[int, int] | None, folders: list[Path], cap: int) -> Block:
    """The file at `path` (attached as `raw`): whole (cut at `cap` bytes), its 1-based line range `rng`, or a
    notebook's cells; a directory is listed instead."""
    if path.is_dir():
        return render_directory(raw, path, folders)
    if path.exists() and not path.is_file():
        raise ContextProblem(f"not a regular file: {raw}")  # a FIFO or a device would block or never end
    if path.suffix.lower() == ".ipynb" and rng is None:
        notebook = _render_notebook(path)
        if notebook is not None:
            return notebook
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
            if looks_binary(head):
                raise ContextProblem(f"binary file skipped: {path}")
            if rng is None:
                size = os.fstat(f.fileno()).st_size
                data = head + f.read(max(0, cap + 4 - len(head)))  # a few bytes more: a cut char is not "more"
                text = data.decode("utf-8", errors="replace")
                return Block("file", {"path": path}, text, total=size,
                             more_hint="use the read_file tool with line_offset for the rest")
            f.seek(0)
            return _file_lines(f, path, rng, cap)
    except FileNotFoundError:
        raise ContextProblem(f"file not found: {raw}") from None
    except PermissionError:
        raise ContextProblem(f"permission denied: {raw}") from None
    except IsADirectoryError:
        return render_directory(raw, path, folders)


def _render_notebook(path: Path) -> Block | None:
    """A notebook as its cells — source in full, outputs summarised (text and errors kept short, images and HTML
    described by type and size) — instead of its JSON, where outputs (base64 images!) would fill the budget.
    ``None`` when it isn't a readable notebook (then it is attached as text)."""
    try:
        if path.stat().st_size > NOTEBOOK_MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    language = ((data.get("metadata") or {}).get("kernelspec") or {}).get("language") or "python"
    parts = [f"Notebook with {len(cells)} cells ({language}), numbered from 0; outputs are summarised."]
    for number, cell in enumerate(c for c in cells if isinstance(c, dict)):
        kind = cell.get("cell_type", "code")
        count = cell.get("execution_count")
        head = f"--- cell {number}: {kind}" + (f", In[{count}]" if count else "")
        if cell.get("id"):
            head += f", id {cell['id']}"
        parts.append(head + " ---")
        parts.append(_joined(cell.get("source")).rstrip("\n"))
        for output in cell.get("outputs") or ():
            if isinstance(output, dict):
                # a notebook anyone may have written: its outputs' ANSI colours, OSC 8 links and OSC 52 clipboard
                # writes go no further (the model would echo them to a terminal client), as notebook_read does
                parts.append(strip_controls(_output_summary(output)))
    body = "\n".join(parts) + "\n"
    return Block("file", {"path": path, "format": "notebook"}, body,
                 more_hint="use the read_file tool for the raw JSON")


def _joined(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def _output_summary(output: JsonObject) -> str:
    kind = output.get("output_type")
    if kind == "error":
        return f"[error] {output.get('ename', 'Error')}: {_short(str(output.get('evalue', '')))}"
    if kind == "stream":
        return f"[{output.get('name', 'stdout')}] {_short(_joined(output.get('text')))}"
    data = output.get("data")
    if not isinstance(data, dict):  # (a notebook is a file anyone may have written)
        data = {}
    pieces = []
    if "text/plain" in data:
        pieces.append(_short(_joined(data["text/plain"])))
    for mime, value in data.items():
        if mime != "text/plain":
            size = len(_joined(value)) if not isinstance(value, dict) else len(json.dumps(value))
            pieces.append(f"({mime}, {size / 1024:.0f} KB)" if size >= 1024 else f"({mime}, {size} bytes)")
    return "[output] " + " ".join(pieces)


def _short(text: str) -> str:
    text = text.rstrip("\n")
    if len(text) <= NOTEBOOK_OUTPUT_CHARS:
        return text
    return text[:NOTEBOOK_OUTPUT_CHARS] + f"… [{len(text) - NOTEBOOK_OUTPUT_CHARS} more characters]"


def _file_lines(f: Any, path: Path, rng: tuple[int, int], cap: int) -> Block:
    start, end = rng
    start = max(1, start)
    if end < start:
        raise ContextProblem(f"invalid line range {rng[0]}-{rng[1]} for {path}")
    lines: list[str] = []
    size = 0
    number = 0
    cut = False
    for number, raw_line in enumerate(f, 1):
        if number < start:
            continue
        if number > end:
            break
        if size > cap:
            cut = True
            break
        lines.append(raw_line.decode("utf-8", errors="replace"))
        size += len(raw_line)
    if not lines:
        raise ContextProblem(f"lines {start}-{end} are past the end of {path} ({number} lines)")
    last = start + len(lines) - 1
    block = Block("file", {"path": path, "line-start": start, "line-end": last}, "".join(lines),
                  more_hint="use the read_file tool for the rest")
    if cut:
        block.notes.append(f"lines {last + 1}-{end} left out: size limit")
    return block


def render_directory(raw: str, path: Path, folders: list[Path]) -> Block:
    """The directory as an indented tree, shallowest entries first, what git ignores left out (unless the directory
    itself is ignored: then it was attached on purpose)."""
    if not path.exists():
        raise ContextProblem(f"directory not found: {raw}")
    if not path.is_dir():
        raise ContextProblem(f"not a directory: {raw}")
    root = next((f.resolve() for f in folders if path == f.resolve() or f.resolve() in path.parents), None)
    matcher = IgnoreMatcher.for_root(root or path)
    if matcher.ignored(path, True):
        matcher = IgnoreMatcher.only_git(path)  # attached on purpose: list it even though git ignores it
    found, truncated = _list_breadth_first(path, matcher, DIRECTORY_MAX_ENTRIES)
    found.sort(key=lambda e: [_fold(p) for p in e[0].split("/")])
    lines = ["  " * rel.count("/") + rel.rpartition("/")[2] + ("/" if is_dir else "") for rel, is_dir in found]
    block = Block("directory", {"path": path}, "\n".join(lines) + ("\n" if lines else "(empty)\n"))
    if truncated:
        block.notes.append(f"listing stopped at {DIRECTORY_MAX_ENTRIES} entries (shallowest first)")
    return block


def _list_breadth_first(root: Path, matcher: IgnoreMatcher, cap: int) -> tuple[list[tuple[str, bool]], bool]:
    """Up to `cap` (relative path, is_dir) under `root`, level by level, so a truncated listing keeps the top."""
    found: list[tuple[str, bool]] = []
    level: list[tuple[Path, str]] = [(root, "")]
    while level:
        next_level: list[tuple[Path, str]] = []
        for directory, rel_dir in level:
            try:
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if matcher.ignored(Path(entry.path), is_dir):
                    continue
                if len(found) >= cap:
                    return found, True
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                found.append((rel, is_dir))
                if is_dir:
                    next_level.append((Path(entry.path), rel))
        level = next_level
    return found, False


def render_cursor(ctx: CursorContext, path: Path) -> Block:
    """The lines around the cursor, numbered, with the selection marked ``<|selection|>…<|/selection|>`` (or a
    ``<|cursor|>`` for an empty one). Lines are 1-based (as ECA clients send them), characters 0-based."""
    if path.exists() and not path.is_file():
        raise ContextProblem(f"cursor is not in a regular file: {ctx.path}")
    try:
        if path.stat().st_size > CURSOR_MAX_FILE_BYTES:
            raise ContextProblem(f"file too large for a cursor context: {ctx.path}")
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ContextProblem(f"file not found: {ctx.path}") from None
    except PermissionError:
        raise ContextProblem(f"permission denied: {ctx.path}") from None
    if looks_binary(data[:SNIFF_BYTES]):
        raise ContextProblem(f"binary file skipped: {path}")
    # Split on "\n" only (str.splitlines also splits on form feeds and Unicode separators: editors don't).
    lines = [ln.removesuffix("\r") for ln in data.decode("utf-8", errors="replace").split("\n")]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    start, end = ctx.position.start, ctx.position.end
    if (end.line, end.character) < (start.line, start.character):
        start, end = end, start
    s_line = min(max(start.line, 1), len(lines))
    e_line = min(max(end.line, 1), len(lines))
    s_char = min(max(start.character, 0), len(lines[s_line - 1]))
    e_char = min(max(end.character, 0), len(lines[e_line - 1]))
    marked = list(lines)
    if (s_line, s_char) == (e_line, e_char):
        text = marked[s_line - 1]
        marked[s_line - 1] = text[:s_char] + "<|cursor|>" + text[s_char:]
    else:
        text = marked[e_line - 1]
        marked[e_line - 1] = text[:e_char] + "<|/selection|>" + text[e_char:]
        text = marked[s_line - 1]
        marked[s_line - 1] = text[:s_char] + "<|selection|>" + text[s_char:]
    first = max(1, s_line - CURSOR_RADIUS)
    last = min(len(lines), e_line + CURSOR_RADIUS)
    width = len(str(last))
    body = "".join(f"{n:>{width}}| {marked[n - 1]}\n" for n in range(first, last + 1))
    attrs = {"path": path, "start": f"{start.line}:{start.character}", "end": f"{end.line}:{end.character}",
             "lines": f"{first}-{last}"}
    return Block("cursor", attrs, body)
