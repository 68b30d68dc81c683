"""File tools: read_file, write_file, edit_file, move_file, delete_file.

The three writers compute their unified diff in ``prepare`` (so the user approves exactly what will be written),
keep a fingerprint of what they read, and refuse in ``run`` when the file changed in between — the approved diff
would otherwise no longer describe the write.

With ``ctx.fs`` set (a door whose client serves files, e.g. ACP's ``fs/read_text_file``) read_file, write_file and
edit_file read the client's view — unsaved editor buffers included — and the writers write through it; ``prepare``
then returns an awaitable (the engine awaits it). Whatever the client does not handle falls back to the disk, and
without ``ctx.fs`` nothing changes: ``prepare`` stays synchronous.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import io
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from pydantic import Field

from .._fileio import SNIFF_BYTES, looks_binary
from .._git import GitError, run_git
from .._images import ImageError, image_from_file, is_image_path
from .._text import human_size
from ..protocol import JsonObject
from ._args import ChangeArgs, ToolArgs, change_args, parse_args, with_reasons
from ._diff import diff_label, file_change_details, hunk_details, unified_diff
from ._files import (
    ANY,
    MAX_EDIT_BYTES,
    FileChanged,
    TargetMoved,
    check_text,
    client_text,
    fingerprint,
    fingerprint_at,
    open_directory,
    read_text,
    text_fingerprint,
    write_through,
)
from ._hunks import Hunk, apply_hunks, describe, diff_hunks
from ._paths import display, is_inside, not_found, resolve
from ._tool import AsyncNativeTool, NativeTool, ToolError
from .base import Approval, Prepared, ToolContext, ToolResult

__all__ = [
    "DeleteFileArgs",
    "DeleteFileTool",
    "EditFileArgs",
    "EditFileTool",
    "MoveFileArgs",
    "MoveFileTool",
    "ReadFileArgs",
    "ReadFileTool",
    "WriteFileArgs",
    "WriteFileTool",
]

_COUNT_LIMIT = 1 << 30  # count the remaining lines of files up to 1 GiB (streamed); bigger ones say "more"


class _ClientView:
    """``prepare`` through the client's view of the file (``ctx.fs``) when there is one, the disk otherwise.

    Mixed into a :class:`NativeTool` whose arguments have a ``path``; the tool implements ``_prepare_text(args, ctx,
    path, text)`` for a file the client served."""

    def prepare(self, args: Any, ctx: ToolContext) -> Any:
        if ctx.fs is None:
            return super().prepare(args, ctx)  # type: ignore[misc]
        return self._prepare_via_client(args, ctx)

    async def _prepare_via_client(self, args: Any, ctx: ToolContext) -> Prepared:
        tool: Any = self
        parsed, _ = parse_args(tool.name, tool.Args, args)
        text = None
        if parsed is not None:
            try:
                path = resolve(parsed.path, ctx)
                if not is_inside(path, ctx.workspace_folders):
                    # Asking the client for an outside file would show it the path — and us the content — before
                    # the user approved anything: prepare from the disk (the diff stays local until approved);
                    # read_file asks the client after the approval, in run.
                    prepared: Prepared = super().prepare(args, ctx)  # type: ignore[misc]
                    if prepared.error is None:
                        prepared.state = {**(prepared.state or {}), "client_after_approval": True}
                    return prepared
                if not path.is_dir():
                    text = await client_text(ctx.fs, path)
            except OSError:
                text = None
        if parsed is None or text is None:
            from_disk: Prepared = super().prepare(args, ctx)  # type: ignore[misc]
            return from_disk
        try:
            from_client: Prepared = tool._prepare_text(parsed, ctx, path, text)
            return from_client
        except ToolError as exc:
            return Prepared(args=parsed.model_dump(), summary=tool.generic_summary or tool.name, error=str(exc))


async def _current_fingerprint(path: Path, ctx: ToolContext, via_client: bool) -> str | None:
    """What the file is now, from the same source the approved diff was computed from."""
    if via_client:
        text = await client_text(ctx.fs, path)
        if text is not None:
            return text_fingerprint(text)
    return fingerprint(path)


def _remaining_bytes(f: Any) -> int:
    try:
        return os.fstat(f.fileno()).st_size - int(f.tell())
    except (OSError, AttributeError, io.UnsupportedOperation):  # an in-memory buffer (the client's text)
        here = f.tell()
        end: int = f.seek(0, io.SEEK_END)
        f.seek(here)
        return end - int(here)


# ---------------------------------------------------------------------------------------------------------------
# read_file


class ReadFileArgs(ToolArgs):
    path: str = Field(
        min_length=1, description="Path of the file to read: absolute, or relative to the workspace root."
    )
    line_offset: int = Field(0, ge=0, description="0-based line to start reading at (default 0).")
    limit: int | None = Field(None, ge=1, description="Maximum number of lines to return (default and cap: 2000).")


def _iter_lines(f: Any, max_line: int):  # type: ignore[no-untyped-def]
    """Yield ``(line bytes, was_cut)`` without ever holding more than `max_line` bytes of one line."""
    while True:
        chunk = f.readline(max_line)
        if not chunk:
            return
        if chunk.endswith(b"\n") or len(chunk) < max_line:
            yield chunk, False
            continue
        while True:  # an over-long line: skip the rest of it
            rest = f.readline(1 << 20)
            if not rest or rest.endswith(b"\n"):
                break
        yield chunk, True


def _count_rest(f: Any) -> int:
    count = 0
    last = b"\n"
    while chunk := f.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


class ReadFileTool(_ClientView, NativeTool[ReadFileArgs]):
    name = "read_file"
    description = (
        "Read the content of a text file.\n\n"
        "- `path`: absolute, or relative to the workspace root.\n"
        "- Returns the file's text as is (no line numbers). Long files are cut at 2000 lines / 50 KB with a note "
        "saying which lines you got; continue with `line_offset` (0-based first line) and `limit` (number of "
        "lines).\n"
        "- Prefer one read of the part you need over many small reads. Binary files and directories are refused "
        "(use directory_tree to list a folder); an image (.png, .jpg, .jpeg, .gif, .webp) is returned as the "
        "image."
    )
    Args = ReadFileArgs
    path_args = ("path",)
    generic_summary = "Reading file"

    def _prepare(self, args: ReadFileArgs, ctx: ToolContext) -> Prepared:
        path = resolve(args.path, ctx)
        if not path.exists():
            raise self.fail(not_found(path, ctx))
        if path.is_dir():
            raise self.fail(f"{display(path, ctx)} is a directory, not a file (use directory_tree to list it)")
        return Prepared(
            args=args.model_dump(),
            summary=f'Reading file "{display(path, ctx)}"',
            paths=[path],
            outside_workspace=not is_inside(path, [*ctx.workspace_folders, *ctx.read_roots]),
        )

    def _prepare_text(self, args: ReadFileArgs, ctx: ToolContext, path: Path, text: str) -> Prepared:
        return Prepared(
            args=args.model_dump(),
            summary=f'Reading file "{display(path, ctx)}"',
            paths=[path],
            outside_workspace=not is_inside(path, [*ctx.workspace_folders, *ctx.read_roots]),
            state={"text": text},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        state = prepared.state or {}
        if state.get("client_after_approval"):  # an outside path: the client is asked only now, after approval
            text = await client_text(ctx.fs, prepared.paths[0])
            if text is not None:
                state = {"text": text}
        if "text" in state:  # served by the client
            return await asyncio.to_thread(self._read_from, io.BytesIO(state["text"].encode("utf-8")), prepared, ctx)
        if is_image_path(prepared.paths[0]):
            return await asyncio.to_thread(self._image, prepared, ctx)
        return await asyncio.to_thread(self._read, prepared, ctx)

    def _image(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        """An image file, for the model to see (checked like any image: eca_notebook/_images.py); a model that
        cannot see gets its description instead (engine/models/_vision.py)."""
        shown = display(prepared.paths[0], ctx)
        try:
            image = image_from_file(prepared.paths[0], name=shown)
        except ImageError as exc:
            raise self.fail(str(exc)) from None
        return ToolResult(output=f"{shown} is an image, attached: {image.describe()}", images=[image])

    def _read(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        with open(prepared.paths[0], "rb") as f:
            return self._read_from(f, prepared, ctx)

    def _read_from(self, f: Any, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        path = prepared.paths[0]
        shown = display(path, ctx)
        offset: int = prepared.args["line_offset"]
        limit = min(prepared.args["limit"] or ctx.max_output_lines, ctx.max_output_lines)
        budget = ctx.max_output_bytes
        out: list[str] = []
        used = 0
        if looks_binary(f.read(SNIFF_BYTES)):
            raise self.fail(f"{shown} looks like a binary file (it contains NUL bytes); it cannot be shown as text")
        f.seek(0)
        lines = _iter_lines(f, max(budget, 1024))
        skipped = 0
        for _ in range(offset):
            if next(lines, None) is None:
                break
            skipped += 1
        if skipped < offset:
            return ToolResult(output=f"[{shown} has {skipped} lines; line_offset={offset} is past the end]")
        stop: str | None = None
        pending = 0  # a line read but not shown
        for raw, was_cut in lines:
            text = raw.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")
            if was_cut:
                text += f" [... line cut at {human_size(len(raw))}]"
            size = len(text.encode("utf-8")) + 1
            if out and used + size > budget:
                stop, pending = "size", 1
                break
            out.append(text)
            used += size
            if len(out) >= limit:
                stop = "limit"
                break
        rest: int | None = 0
        if stop is not None:  # how many lines after the window (streamed, never loaded)
            if _remaining_bytes(f) > _COUNT_LIMIT:
                rest = None if (pending or f.read(1)) else 0
            else:
                rest = pending + _count_rest(f)
        if not out:
            if offset == 0:
                return ToolResult(output="[empty file]")
            return ToolResult(output=f"[{shown} has {offset} lines; line_offset={offset} is past the end]")
        content = "\n".join(out)
        if rest == 0:
            return ToolResult(output=content)
        first, last = offset + 1, offset + len(out)
        total = f"{last + rest}" if rest is not None else "more than " + str(last)
        reason = f"{human_size(budget)} output limit" if stop == "size" else f"{limit} line limit"
        note = (
            f"[content truncated ({reason}): showing lines {first}-{last} of {total}; "
            f"use line_offset={last} to read more]"
        )
        return ToolResult(output=f"{content}\n\n{note}")


# ---------------------------------------------------------------------------------------------------------------
# write_file


class WriteFileArgs(ChangeArgs):
    path: str = Field(
        min_length=1, description="Path of the file to create or overwrite (absolute or workspace-relative)."
    )
    content: str = Field(description="The complete new content of the file.")


def _old_text(path: Path, tool: NativeTool[Any], ctx: ToolContext) -> str:
    try:
        text, _ = read_text(path)
    except ValueError as exc:
        raise tool.fail(f"cannot change {display(path, ctx)}: {exc}") from None
    return text


_NOTEBOOK_HINT = ("notebooks are changed cell by cell: use notebook_read, then notebook_edit_cell, "
                  "notebook_insert_cell or notebook_delete_cell (editing the .ipynb JSON directly can corrupt it, and "
                  "bypasses the open notebook)")


def _guard_notebook(tool: NativeTool[Any], path: Path, ctx: ToolContext, new_content: str | None = None) -> None:
    """The file tools never rewrite an existing notebook's JSON; a new ``.ipynb`` must be a valid notebook."""
    if path.suffix != ".ipynb":
        return
    if ctx.notebook_hint:  # a guest of a host that owns notebooks: not even a new one is written as JSON
        raise tool.fail(f"{display(path, ctx)}: {ctx.notebook_hint}")
    if new_content is None or path.exists():
        raise tool.fail(f"{display(path, ctx)}: {_NOTEBOOK_HINT}")
    try:
        import nbformat

        nbformat.validate(nbformat.reads(new_content, as_version=4))  # type: ignore[no-untyped-call]
    except Exception as exc:  # noqa: BLE001 - any parse or schema failure
        raise tool.fail(f"{display(path, ctx)} would not be a valid notebook: {str(exc).splitlines()[0][:200]}"
                        ) from None


def _check_unchanged(tool: NativeTool[Any], path: Path, expected: str | None, ctx: ToolContext) -> None:
    if fingerprint(path) != expected:
        raise tool.fail(f"{display(path, ctx)}: file changed since the diff was shown; re-read it and try again")


async def _check_unchanged_now(tool: NativeTool[Any], path: Path, state: _WriteState, ctx: ToolContext) -> None:
    """Like :func:`_check_unchanged`, asking the client again when the diff came from the client's view."""
    if not state.get("via_client"):
        _check_unchanged(tool, path, state["fingerprint"], ctx)
        return
    if await _current_fingerprint(path, ctx, True) != state["fingerprint"]:
        raise tool.fail(f"{display(path, ctx)}: file changed since the diff was shown; re-read it and try again")


def _refusal(tool: NativeTool[Any] | AsyncNativeTool[Any], path: Path, exc: TargetMoved, ctx: ToolContext,
             what: str) -> ToolError:
    where = f" to {exc.target}" if exc.target is not None else ""
    scope = ", outside the workspace" if exc.outside else ""
    return tool.fail(
        f"refused to {what} {display(path, ctx)}: {display(exc.link, ctx)} has become a symbolic link{where}{scope} "
        "since the change was shown, so it would land somewhere else than what was approved; nothing was changed"
    )


async def _write_approved(tool: NativeTool[Any], path: Path, content: str, state: _WriteState,
                          ctx: ToolContext) -> None:
    """The approved write, re-checked now: same file content as the diff, same place (no symlink swapped in)."""
    try:
        if state.get("via_client"):
            await _check_unchanged_now(tool, path, state, ctx)
            expected: Any = ANY
        else:
            expected = state["fingerprint"]
        await write_through(ctx.fs, path, content, ctx.workspace_folders, expected)
    except FileChanged:
        raise tool.fail(f"{display(path, ctx)}: file changed since the diff was shown; re-read it and try again") \
            from None
    except TargetMoved as exc:
        raise _refusal(tool, path, exc, ctx, "write") from None


def _check_client_text(tool: NativeTool[Any], path: Path, text: str, ctx: ToolContext) -> None:
    try:
        check_text(text)
    except ValueError as exc:
        raise tool.fail(f"cannot change {display(path, ctx)}: {exc}") from None


class _WriteState(TypedDict, total=False):
    """What write_file and edit_file's ``prepare`` hands their ``run`` and the undo (``Prepared.state``)."""

    fingerprint: str | None  # the file's when prepared (None: it did not exist), checked again before writing
    content: str  # the text to write
    old: str  # the text it replaces
    via_client: bool  # the client serves the file (its fingerprint is of the client's text)
    count: int  # edit_file: how many occurrences are replaced
    applied: list[Hunk]  # the hunks the user approved, when only some
    left_out: list[Hunk]


class _DeletionState(TypedDict):
    """What delete_file's ``prepare`` hands its ``run`` and the undo: the file as it was."""

    fingerprint: str | None
    data: bytes
    mode: int
    tracked: bool


class _HunkWriter:
    """A whole-file write that can be narrowed to some hunks of its diff (``chat/toolCallApprove`` with ``hunks``)
    and undone. Mixed into write_file and edit_file, whose prepared state holds the ``old`` and new ``content``."""

    def select_hunks(self, prepared: Prepared, ids: list[str], ctx: ToolContext) -> Prepared:
        """The call narrowed to the hunks *ids*: the content written keeps the old lines of every other hunk, the
        diff shown is what will be written, and each hunk says whether it is applied."""
        path = prepared.paths[0]
        old, new = prepared.state["old"], prepared.state["content"]
        hunks = diff_hunks(old, new)
        chosen = {h.id for h in hunks} & set(ids)
        partial = apply_hunks(old, new, hunks, chosen)
        details = file_change_details(path, old, partial, ctx)
        details["hunks"] = [*hunk_details(hunks, chosen)]
        for key in ("rationale", "acceptanceCriteria"):  # the model's reasons stay with the narrowed change
            if (prepared.details or {}).get(key):
                details[key] = prepared.details[key]  # type: ignore[index]
        state = {**prepared.state, "content": partial, "count": prepared.state.get("count", 1),
                 "applied": [h for h in hunks if h.id in chosen], "left_out": [h for h in hunks if h.id not in chosen]}
        return dataclasses.replace(prepared, details=details, state=state)


def _written(what: str, prepared: Prepared, ctx: ToolContext) -> ToolResult:
    """The result of an approved write: what was done (and, when the user took only some hunks, exactly which —
    the model must not assume the rest is in the file), undoable while the file stays as written."""
    state = prepared.state
    output = what
    if state.get("left_out"):
        output += (f". The user approved only part of this change. Applied: {describe(state['applied'])}. "
                   f"Not applied (the file keeps its previous text there): {describe(state['left_out'])}. "
                   "Re-read the file before changing it further.")
    details = dict(prepared.details or {}, undoable=True)
    return ToolResult(output=output, details=details, undo=_file_undoer(prepared.paths[0], state, ctx))


def _file_undoer(path: Path, state: _WriteState, ctx: ToolContext) -> Callable[[], Awaitable[str]]:
    """Put the file back as it was before the write (remove it if the write created it) — only while it is still
    exactly what was written: a later edit, by the user or another call, is never overwritten."""
    written: str = state["content"]
    before: str | None = state.get("old") if state.get("fingerprint") is not None else None
    shown = display(path, ctx)

    async def undo() -> str:
        current = await _current_fingerprint(path, ctx, bool(state.get("via_client")))
        if current != text_fingerprint(written):
            raise ValueError(f"{shown} was changed after this edit; nothing was reverted")
        if before is None:
            await asyncio.to_thread(path.unlink)
            return f"Undone: {shown} was created by this change and has been removed."
        # via the client: it was just compared in the client's view (the disk may lag behind an unsaved buffer)
        expected = ANY if state.get("via_client") else text_fingerprint(written)
        try:
            await write_through(ctx.fs, path, before, ctx.workspace_folders, expected)
        except FileChanged:
            raise ValueError(f"{shown} was changed after this edit; nothing was reverted") from None
        except TargetMoved:
            raise ValueError(f"{shown} now leads somewhere else through a symbolic link; nothing was reverted"
                             ) from None
        return f"Undone: {shown} is back as it was before this change."

    return undo


class WriteFileTool(_HunkWriter, _ClientView, NativeTool[WriteFileArgs]):
    name = "write_file"
    description = (
        "Create a file, or replace a file's entire content.\n\n"
        "- `path`: absolute, or relative to the workspace root; missing parent directories are created.\n"
        "- `content`: the complete text of the file.\n"
        "- For changes to part of an existing file use edit_file instead: it is safer and shows a smaller diff.\n"
        "- The user sees the diff and may reject the change."
    )
    Args = WriteFileArgs
    path_args = ("path",)
    mutates = True
    default_approval: ClassVar[Approval] = "ask"
    generic_summary = "Writing file"

    def _prepare(self, args: WriteFileArgs, ctx: ToolContext) -> Prepared:
        path = resolve(args.path, ctx)
        if path.is_dir():
            raise self.fail(f"{display(path, ctx)} is a directory")
        _guard_notebook(self, path, ctx, args.content)
        exists = path.exists()
        old = _old_text(path, self, ctx) if exists else ""
        verb = "Overwriting" if exists else "Creating"
        return Prepared(
            args=change_args(args),
            summary=f'{verb} file "{display(path, ctx)}"',
            details=with_reasons(file_change_details(path, old, args.content, ctx, hunks=exists), args),
            paths=[path],
            outside_workspace=not is_inside(path, ctx.workspace_folders),
            state={"fingerprint": fingerprint(path), "content": args.content, "old": old},
        )

    def _prepare_text(self, args: WriteFileArgs, ctx: ToolContext, path: Path, old: str) -> Prepared:
        _guard_notebook(self, path, ctx)  # the client has it: it exists
        _check_client_text(self, path, old, ctx)
        return Prepared(
            args=change_args(args),
            summary=f'Overwriting file "{display(path, ctx)}"',
            details=with_reasons(file_change_details(path, old, args.content, ctx, hunks=True), args),
            paths=[path],
            outside_workspace=not is_inside(path, ctx.workspace_folders),
            state={"fingerprint": text_fingerprint(old), "content": args.content, "via_client": True, "old": old},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        path = prepared.paths[0]
        content: str = prepared.state["content"]
        await _write_approved(self, path, content, prepared.state, ctx)
        n = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Overwrote" if prepared.state["fingerprint"] is not None else "Created"
        lines = "1 line" if n == 1 else f"{n} lines"
        return _written(f"{verb} {display(path, ctx)} ({lines})", prepared, ctx)


# ---------------------------------------------------------------------------------------------------------------
# edit_file


class EditFileArgs(ChangeArgs):
    path: str = Field(min_length=1, description="Path of the file to edit (absolute or workspace-relative).")
    original_content: str = Field(
        description="The exact text to replace, copied verbatim from the file (whitespace and indentation included), "
        "with enough surrounding lines to be unique."
    )
    new_content: str = Field(description="The replacement text (empty string to delete).")
    all_occurrences: bool = Field(
        False, description="Replace every occurrence instead of requiring exactly one (default false)."
    )


class EditFileTool(_HunkWriter, _ClientView, NativeTool[EditFileArgs]):
    name = "edit_file"
    description = (
        "Replace an exact piece of text in a file.\n\n"
        "- Read the file first (read_file): `original_content` must be copied exactly from it, including "
        "whitespace and indentation. Do not retype it from memory.\n"
        "- It must occur exactly once: include a few surrounding lines to make it unique, or set "
        "`all_occurrences` to true to replace every occurrence.\n"
        "- `new_content` replaces it; use an empty string to delete. To insert, include the original text in "
        "`new_content` together with the addition.\n"
        "- Prefer several small edits over one huge one. If an edit fails, re-read the file before retrying.\n"
        "- With an empty `original_content` on a path that does not exist yet, the file is created.\n"
        "- The user sees the diff and may reject the change."
    )
    Args = EditFileArgs
    path_args = ("path",)
    mutates = True
    default_approval: ClassVar[Approval] = "ask"
    generic_summary = "Editing file"

    def _prepare(self, args: EditFileArgs, ctx: ToolContext) -> Prepared:
        path = resolve(args.path, ctx)
        shown = display(path, ctx)
        if path.is_dir():
            raise self.fail(f"{shown} is a directory, not a file")
        _guard_notebook(self, path, ctx, args.new_content if args.original_content == "" else None)
        summary = f'Editing file "{shown}"'
        if not path.exists():
            if args.original_content != "":
                raise self.fail(not_found(path, ctx))
            old, new, count = "", args.new_content, 1
            summary = f'Creating file "{shown}"'
        else:
            old = _old_text(path, self, ctx)
            new, count = self._replace(old, args, shown)
        return Prepared(
            args=change_args(args),
            summary=summary,
            details=with_reasons(file_change_details(path, old, new, ctx, hunks=bool(old)), args),
            paths=[path],
            outside_workspace=not is_inside(path, ctx.workspace_folders),
            state={"fingerprint": fingerprint(path), "content": new, "count": count, "old": old},
        )

    def _prepare_text(self, args: EditFileArgs, ctx: ToolContext, path: Path, old: str) -> Prepared:
        _guard_notebook(self, path, ctx)
        shown = display(path, ctx)
        _check_client_text(self, path, old, ctx)
        new, count = self._replace(old, args, shown)
        return Prepared(
            args=change_args(args),
            summary=f'Editing file "{shown}"',
            details=with_reasons(file_change_details(path, old, new, ctx, hunks=True), args),
            paths=[path],
            outside_workspace=not is_inside(path, ctx.workspace_folders),
            state={"fingerprint": text_fingerprint(old), "content": new, "count": count, "via_client": True,
                   "old": old},
        )

    def _replace(self, text: str, args: EditFileArgs, shown: str) -> tuple[str, int]:
        original, replacement = args.original_content, args.new_content
        if original == "":
            raise self.fail("original_content is empty; copy the text to replace from the file (use write_file to "
                            "replace the whole file)")
        count = text.count(original)
        if count == 0 and "\r\n" in text and "\r\n" not in original and "\n" in original:
            # The model saw the file with "\n" line ends; the file uses CRLF. Match (and write) in the file's style.
            original = original.replace("\n", "\r\n")
            replacement = replacement.replace("\r\n", "\n").replace("\n", "\r\n")
            count = text.count(original)
        if count == 0:
            raise self.fail(
                f"original_content was not found in {shown}; re-read the file and copy the exact text "
                "(including whitespace and indentation)"
            )
        if count > 1 and not args.all_occurrences:
            raise self.fail(
                f"original_content occurs {count} times in {shown}; add surrounding lines to make it unique, "
                "or set all_occurrences to true to replace all of them"
            )
        new = text.replace(original, replacement) if args.all_occurrences else text.replace(original, replacement, 1)
        if new == text:
            raise self.fail("new_content is the same as original_content; nothing to change")
        return new, count if args.all_occurrences else 1

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        path = prepared.paths[0]
        await _write_approved(self, path, prepared.state["content"], prepared.state, ctx)
        if prepared.state["fingerprint"] is None:
            return _written(f"Created {display(path, ctx)}", prepared, ctx)
        n = prepared.state["count"]
        what = "1 occurrence" if n == 1 else f"{n} occurrences"
        return _written(f"Replaced {what} in {display(path, ctx)}", prepared, ctx)


# ---------------------------------------------------------------------------------------------------------------
# move_file


class MoveFileArgs(ToolArgs):
    source: str = Field(
        min_length=1, description="Path of the file or directory to move (absolute or workspace-relative)."
    )
    destination: str = Field(min_length=1, description="New path; it must not exist yet.")


def _resolve_entry(path: str, ctx: ToolContext) -> Path:
    """Like resolve(), but a symlink itself is what moves, so only its parent is resolved."""
    p = Path(os.path.expanduser(path))
    if not p.is_absolute():
        p = ctx.root / p
    if p.is_symlink():
        return resolve(str(p.parent), ctx) / p.name
    return resolve(str(p), ctx)


def _entry_inside(p: Path, ctx: ToolContext) -> bool:
    """A symlink that moves stays a link: only where its directory entry lives matters."""
    return is_inside(p.parent if p.is_symlink() else p, ctx.workspace_folders)


class MoveFileTool(NativeTool[MoveFileArgs]):
    name = "move_file"
    description = (
        "Move or rename a file or directory.\n\n"
        "- `source` and `destination`: absolute, or relative to the workspace root.\n"
        "- Fails if `destination` already exists (it never overwrites); missing parent directories are created.\n"
        "- The user is asked to approve the move."
    )
    Args = MoveFileArgs
    path_args = ("source", "destination")
    mutates = True
    default_approval: ClassVar[Approval] = "ask"
    generic_summary = "Moving file"

    def _prepare(self, args: MoveFileArgs, ctx: ToolContext) -> Prepared:
        src = _resolve_entry(args.source, ctx)
        dst = _resolve_entry(args.destination, ctx)
        if not src.exists() and not src.is_symlink():
            raise self.fail(f"source not found: {display(src, ctx)}")
        if dst.exists() or dst.is_symlink():
            raise self.fail(f"destination already exists: {display(dst, ctx)}")
        if src.is_dir() and not src.is_symlink() and dst.is_relative_to(src):
            raise self.fail("cannot move a directory inside itself")
        header = f"--- {diff_label(src, ctx, 'a/')}\n+++ {diff_label(dst, ctx, 'b/')}\n"
        details: JsonObject = {"type": "fileChange", "path": str(dst), "diff": header, "linesAdded": 0,
                               "linesRemoved": 0}
        return Prepared(
            args=args.model_dump(),
            summary=f'Moving "{display(src, ctx)}" to "{display(dst, ctx)}"',
            details=details,
            paths=[src, dst],
            outside_workspace=not (_entry_inside(src, ctx) and _entry_inside(dst, ctx)),
            state={"fingerprint": fingerprint(src) if not src.is_symlink() else "link"},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        src, dst = prepared.paths
        folders = ctx.workspace_folders
        # Both directories are reached again without following symlinks, and the rename happens relative to those
        # handles: a parent swapped for a link since the approval cannot redirect the move.
        try:
            with contextlib.ExitStack() as stack:
                try:
                    sfd = stack.enter_context(open_directory(src.parent, folders))
                except FileNotFoundError:
                    raise self.fail(f"source not found: {display(src, ctx)}") from None
                except TargetMoved as exc:
                    raise _refusal(self, src, exc, ctx, "move") from None
                now = fingerprint_at(sfd, src.name)
                if now != prepared.state["fingerprint"]:
                    raise self.fail(
                        f"{display(src, ctx)}: file changed since the move was shown; re-read it and try again")
                try:
                    dfd = stack.enter_context(open_directory(dst.parent, folders, create=True))
                except TargetMoved as exc:
                    raise _refusal(self, dst, exc, ctx, "move to") from None
                if fingerprint_at(dfd, dst.name) is not None:
                    raise self.fail(f"destination already exists: {display(dst, ctx)}")
                try:
                    os.rename(src.name, dst.name, src_dir_fd=sfd, dst_dir_fd=dfd)
                except OSError as exc:
                    if exc.errno != errno.EXDEV:
                        raise
                    # across file systems: copy then delete, still through the checked directory handles
                    shutil.move(_via_fd(sfd, src), _via_fd(dfd, dst))
        except OSError as exc:
            if exc.filename is None:
                exc.filename = str(src)
            raise
        return ToolResult(output=f"Moved {display(src, ctx)} to {display(dst, ctx)}", details=prepared.details)


def _via_fd(dir_fd: int, path: Path) -> str:
    """A name for `path` that goes through the already checked directory handle (Linux ``/proc/self/fd``); the
    plain path elsewhere."""
    proc = f"/proc/self/fd/{dir_fd}"
    return f"{proc}/{path.name}" if os.path.isdir(proc) else str(path)


# ---------------------------------------------------------------------------------------------------------------
# delete_file


class DeleteFileArgs(ChangeArgs):
    path: str = Field(min_length=1, description="Path of the file to delete (absolute or workspace-relative).")


_GIT_TRACKED_TIMEOUT = 5.0  # seconds to ask git whether the file is tracked (a slow repository reads as untracked)


async def _tracked(path: Path) -> bool:
    """Whether git tracks *path* (its repository can give it back). Asked through :func:`run_git`, which runs none of
    the repository's programs; no repository, no git or a slow one: untracked (the riskier answer)."""
    try:
        out, _ = await asyncio.wait_for(run_git(path.parent, "ls-files", "-z", "--", path.name),
                                        _GIT_TRACKED_TIMEOUT)
    except (TimeoutError, GitError, OSError):
        return False
    return bool(out.strip("\0"))


class DeleteFileTool(AsyncNativeTool[DeleteFileArgs]):
    """Deletes one regular file: the user approves a deletion diff (every line removed, ``+++ /dev/null``), the
    delete happens only if the file is still exactly what was shown, through directory handles reached without
    following symlinks (README "Outside the workspace"), and it is undoable — the bytes (and mode) are kept, and
    undo puts the file back unless something else has taken its place. Symlinks and directories are refused: a
    link's target or a tree is not what one approved diff can show."""

    name = "delete_file"
    description = (
        "Delete a file.\n\n"
        "- `path`: absolute, or relative to the workspace root; one regular file (not a directory or a symlink).\n"
        "- The user sees the deletion as a diff and may reject it; a deletion can be undone.\n"
        "- Only delete what the task requires (generated leftovers, files you replaced); never to \"clean up\" "
        "unasked."
    )
    Args = DeleteFileArgs
    path_args = ("path",)
    mutates = True
    default_approval: ClassVar[Approval] = "ask"
    generic_summary = "Deleting file"

    async def _prepare(self, args: DeleteFileArgs, ctx: ToolContext) -> Prepared:
        raw = Path(os.path.expanduser(args.path))
        raw = raw if raw.is_absolute() else ctx.root / raw
        if raw.is_symlink():
            raise self.fail(f"{display(raw, ctx)} is a symbolic link: delete_file deletes regular files only")
        path = resolve(args.path, ctx)
        shown = display(path, ctx)
        if path.is_dir():
            raise self.fail(f"{shown} is a directory: delete_file deletes one file at a time")
        if not path.exists():
            raise self.fail(not_found(path, ctx))
        if not path.is_file():
            raise self.fail(f"{shown} is not a regular file")
        size = path.stat().st_size
        if size > MAX_EDIT_BYTES:
            raise self.fail(f"{shown} is {human_size(size)}: larger than delete_file keeps for undo "
                            f"({human_size(MAX_EDIT_BYTES)}); ask the user to delete it")
        data = await asyncio.to_thread(path.read_bytes)
        try:
            old = data.decode("utf-8")
            binary = looks_binary(data[:SNIFF_BYTES])
        except UnicodeDecodeError:
            old, binary = "", True
        label = diff_label(path, ctx, "a/")
        if binary:
            diff, removed = f"--- {label}\n+++ /dev/null\nBinary file {shown} deleted ({human_size(size)})\n", 0
        else:
            diff, _, removed = unified_diff(old, "", label, "/dev/null")
            diff = diff or f"--- {label}\n+++ /dev/null\n"  # an empty file: no hunk, still a deletion
        details = with_reasons({"type": "fileChange", "path": str(path), "diff": diff, "linesAdded": 0,
                                "linesRemoved": removed, "deleted": True}, args)
        inside = is_inside(path, ctx.workspace_folders)
        tracked = inside and await _tracked(path)  # (no git run outside the workspace before the user approved)
        return Prepared(
            args=change_args(args),
            summary=f'Deleting file "{shown}"',
            details=details,
            paths=[path],
            outside_workspace=not inside,
            state={"fingerprint": fingerprint(path), "data": data, "mode": path.stat().st_mode & 0o7777,
                   "tracked": tracked},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        path = prepared.paths[0]
        try:
            with open_directory(path.parent, ctx.workspace_folders) as dir_fd:
                if fingerprint_at(dir_fd, path.name) != prepared.state["fingerprint"]:
                    raise self.fail(f"{display(path, ctx)}: file changed since the deletion was shown; re-read it "
                                    "and try again")
                os.unlink(path.name, dir_fd=dir_fd)
        except FileNotFoundError:
            raise self.fail(f"file not found: {display(path, ctx)}") from None
        except TargetMoved as exc:
            raise _refusal(self, path, exc, ctx, "delete") from None
        details = dict(prepared.details or {}, undoable=True)
        return ToolResult(output=f"Deleted {display(path, ctx)}", details=details,
                          undo=_deletion_undoer(path, prepared.state, ctx))


def _deletion_undoer(path: Path, state: _DeletionState, ctx: ToolContext) -> Callable[[], Awaitable[str]]:
    """Put a deleted file back, byte for byte with its mode — only while nothing else has been put in its place."""
    data: bytes = state["data"]
    mode: int = state.get("mode") or 0o644
    shown = display(path, ctx)

    def restore() -> None:
        with open_directory(path.parent, ctx.workspace_folders, create=True) as dir_fd:
            fd = os.open(path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         mode, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), mode)  # (os.open's mode is cut by the umask)
                f.write(data)

    async def undo() -> str:
        try:
            await asyncio.to_thread(restore)
        except FileExistsError:
            raise ValueError(f"{shown} exists again (created after this deletion); nothing was restored") from None
        except TargetMoved:
            raise ValueError(f"{shown} now leads somewhere else through a symbolic link; nothing was restored"
                             ) from None
        return f"Undone: {shown} has been restored."

    return undo
