"""Search tools: grep (ripgrep when available, a pure-Python fallback otherwise) and directory_tree.

Both backends of grep give the *same* output — same files (``.gitignore`` rules, hidden entries and binary files
skipped, symlinks not followed), same order (path components, then line number), same format — so what the model
learns from one run holds on any machine. Results are sorted rather than streamed because ripgrep's parallel walk
has no stable order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pathspec import GitIgnoreSpec
from pydantic import Field

from .._fileio import SNIFF_BYTES, looks_binary
from ._args import ToolArgs
from ._output import truncate_for_llm
from ._paths import display, is_inside, resolve, workspace_of
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult
from .ignore import IgnoreMatcher, iter_entries

__all__ = ["DirectoryTreeArgs", "DirectoryTreeTool", "GrepArgs", "GrepBackend", "GrepTool", "expand_braces"]

log = logging.getLogger(__name__)

GrepBackend = Literal["auto", "rg", "python"]
OutputMode = Literal["files_with_matches", "content", "count"]

DEFAULT_MAX_RESULTS = 1000
MAX_LINE_CHARS = 500  # content mode: longer matching lines are cut (minified files would flood the context)
_MAX_COLLECTED = 200_000  # ripgrep records kept before we stop reading (the output gets cut far earlier anyway)
_BIG_FILE = 32 * 1024 * 1024  # the Python backend streams files above this instead of loading them


def expand_braces(glob: str) -> list[str]:
    """``*.{py,pyi}`` → ``["*.py", "*.pyi"]`` (nested and multiple groups too); other text is left alone."""
    m = re.search(r"\{([^{}]*)\}", glob)
    if not m:
        return [glob]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(glob[: m.start()] + alt + glob[m.end() :]))
    return out


def _sort_key(shown: str) -> tuple[str, ...]:
    return tuple(shown.split("/"))


class _Include:
    """The `include` glob, with git wildmatch semantics: no "/" → matches the file name at any depth; with "/" →
    matched against the path relative to the searched directory."""

    def __init__(self, glob: str) -> None:
        self.globs = expand_braces(glob)
        self.basename_only = "/" not in glob
        self.spec = GitIgnoreSpec.from_lines(self.globs)

    def matches(self, rel: str) -> bool:
        return bool(self.spec.match_file(rel))


# ---------------------------------------------------------------------------------------------------------------
# grep


class GrepArgs(ToolArgs):
    path: str = Field(min_length=1, description="Directory (or file) to search: absolute or workspace-relative.")
    pattern: str = Field(
        min_length=1, description="Regular expression to look for in file contents (one line at a time)."
    )
    include: str | None = Field(
        None, description='Only search files matching this glob, e.g. "*.py" or "*.{ts,tsx}" or "src/**/*.py".'
    )
    max_results: int | None = Field(None, ge=1, description="Maximum number of result lines (default 1000).")
    output_mode: OutputMode = Field(
        "files_with_matches",
        description="files_with_matches (default): matching file paths; content: matching lines as "
        "path:line:text; count: path:number of matching lines.",
    )


class _Search:
    """One grep run's parameters, shared by both backends."""

    def __init__(self, target: Path, args: GrepArgs, ctx: ToolContext, include_hidden: bool) -> None:
        self.target = target
        self.pattern = args.pattern
        self.mode: OutputMode = args.output_mode
        self.max_results = args.max_results or DEFAULT_MAX_RESULTS
        self.include = _Include(args.include) if args.include else None
        self.include_hidden = include_hidden
        self.ctx = ctx
        self.root = ctx.root.resolve()
        # Results are shown as the target's display path + the path below it: computed once, as strings, because a
        # broad pattern yields tens of thousands of results.
        self.target_shown = display(target, ctx)
        self.target_is_dir = target.is_dir()

    def shown_for(self, rel: str) -> str:
        if not self.target_is_dir:
            return self.target_shown
        return rel if self.target_shown == "." else f"{self.target_shown}/{rel}"

    def rel_of(self, shown: str) -> str:
        return shown if self.target_shown == "." else shown[len(self.target_shown) + 1 :]

    def fmt(self, shown: str, line_no: int | None = None, line: str | None = None, count: int = 0) -> str:
        if self.mode == "files_with_matches":
            return shown
        if self.mode == "count":
            return f"{shown}:{count}"
        text = (line or "").removesuffix("\r")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + " [... line cut]"
        return f"{shown}:{line_no}:{text}"


class GrepTool(NativeTool[GrepArgs]):
    name = "grep"
    description = (
        "Search file contents with a regular expression (ripgrep syntax, one line at a time).\n\n"
        "- `path`: directory or file to search (absolute, or relative to the workspace root; use \".\" for the "
        "whole workspace). Files ignored by .gitignore, hidden files and binary files are skipped.\n"
        "- `include`: optional glob to restrict the files, e.g. \"*.py\", \"*.{ts,tsx}\", \"src/**/*.py\".\n"
        "- `output_mode`: \"files_with_matches\" (default) lists matching files; \"content\" shows "
        "`path:line:text` for each matching line; \"count\" shows `path:count`.\n"
        "- `max_results`: cap on result lines (default 1000). Results are sorted by path.\n"
        "- Start broad with files_with_matches, then use content on a narrower path or include."
    )
    Args = GrepArgs
    path_args = ("path",)
    generic_summary = "Searching files"

    def __init__(
        self, backend: GrepBackend = "auto", *, include_hidden: bool = False, rg_path: str | None = None
    ) -> None:
        """`backend`: "rg" requires ripgrep, "python" never uses it, "auto" uses it when found on PATH."""
        super().__init__()
        self.backend = backend
        self.include_hidden = include_hidden
        self._rg_path = rg_path

    def _rg(self) -> str | None:
        if self.backend == "python":
            return None
        found = self._rg_path or shutil.which("rg")
        if found is None and self.backend == "rg":
            raise self.fail("ripgrep (rg) is not installed")
        return found

    def _prepare(self, args: GrepArgs, ctx: ToolContext) -> Prepared:
        target = resolve(args.path, ctx)
        if not target.exists():
            raise self.fail(f"path not found: {display(target, ctx)}")
        rg = self._rg()
        try:
            re.compile(args.pattern)
        except re.error as exc:
            if rg is None:  # with ripgrep, its own (slightly different) syntax decides
                raise self.fail(f"invalid regular expression {args.pattern!r}: {exc}") from None
        if args.include is not None and not args.include.strip():
            raise self.fail("argument 'include' must not be blank")
        shown_pattern = args.pattern if len(args.pattern) <= 40 else args.pattern[:40] + "..."
        return Prepared(
            args=args.model_dump(),
            summary=f"Searching for '{shown_pattern}' in \"{display(target, ctx)}\"",
            paths=[target],
            outside_workspace=not is_inside(target, ctx.workspace_folders),
            state={"rg": rg},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        args = GrepArgs.model_validate(prepared.args)
        search = _Search(prepared.paths[0], args, ctx, self.include_hidden)
        results: list[str] | None = None
        more = False
        if prepared.state["rg"]:
            got = await self._run_rg(prepared.state["rg"], search)
            if got is not None:
                results, more = got
        if results is None:
            try:
                re.compile(search.pattern)
            except re.error as exc:
                return ToolResult(output=f"grep: invalid regular expression {search.pattern!r}: {exc}", error=True)
            stop = threading.Event()
            try:
                results, more = await asyncio.to_thread(_python_grep, search, stop)
            except asyncio.CancelledError:
                stop.set()
                raise
        return ToolResult(output=self._render(search, results or [], more))

    def _render(self, search: _Search, results: list[str], more: bool) -> str:
        ctx = search.ctx
        if not results:
            what = f" (include {search.include.globs})" if search.include else ""
            return f"No matches found for pattern {search.pattern!r} in {display(search.target, ctx)}{what}"
        body = "\n".join(results)
        notes: list[str] = []
        if more:
            notes.append(
                f"[results limited to max_results={search.max_results}; there are more - narrow the path, pattern or "
                "include, or raise max_results]"
            )
        body = truncate_for_llm(
            body, ctx.max_output_lines, ctx.max_output_bytes, hint="narrow the path, pattern or include"
        )
        return body + ("\n\n" + "\n".join(notes) if notes else "")

    # -- ripgrep ---------------------------------------------------------------------------------------------------

    async def _run_rg(self, rg: str, s: _Search) -> tuple[list[str], bool] | None:
        """Results via ripgrep, or None when ripgrep rejected the pattern (the Python backend then tries it)."""
        root = s.root
        if s.target == root or s.target.is_relative_to(root):
            cwd, target_arg = root, (s.target.relative_to(root).as_posix() if s.target != root else ".")
        else:
            cwd, target_arg = (s.target if s.target.is_dir() else s.target.parent), str(s.target)
        cmd = [
            rg, "--no-config", "--no-messages", "--color=never", "--no-require-git", "--no-ignore-dot",
            "--no-ignore-global", "--null", "--with-filename", "--no-heading",
            # lines are cut to MAX_LINE_CHARS anyway; this keeps a minified megabyte-long line out of the pipe
            "--max-columns=4096", "--max-columns-preview",
        ]  # fmt: skip
        cmd += {"files_with_matches": ["--files-with-matches"], "count": ["--count"], "content": ["--line-number"]}[
            s.mode
        ]
        if s.include_hidden:
            cmd += ["--hidden", "--glob=!.git"]
        if s.include and s.include.basename_only:
            for glob in s.include.globs:
                cmd += ["--type-add", f"ecainclude:{glob}"]
            cmd += ["--type", "ecainclude"]
        cmd += ["-e", s.pattern, "--", target_arg]
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        records: list[tuple[tuple[str, ...], int, str]] = []
        try:
            assert proc.stdout is not None and proc.stderr is not None
            stderr_task = asyncio.ensure_future(proc.stderr.read())
            partial: list[bytes] = []  # pieces of a record split across reads (joined once: no quadratic copying)
            sep = b"\0" if s.mode == "files_with_matches" else b"\n"
            while len(records) < _MAX_COLLECTED:
                chunk = await proc.stdout.read(1 << 16)
                if not chunk:
                    break
                if sep not in chunk:
                    partial.append(chunk)
                    continue
                first, *complete, tail = chunk.split(sep)
                partial.append(first)
                self._add_rg_record(s, b"".join(partial), records)
                for rec in complete:
                    self._add_rg_record(s, rec, records)
                partial = [tail]
            if partial:
                self._add_rg_record(s, b"".join(partial), records)
            if len(records) >= _MAX_COLLECTED:
                proc.kill()
            code = await proc.wait()
            err = (await stderr_task).decode("utf-8", errors="replace")
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise
        if code == 2 and "regex" in err and not records:
            log.debug("ripgrep rejected the pattern, trying Python's re: %s", err.strip())
            return None
        records.sort(key=lambda r: (r[0], r[1]))
        out = [r[2] for r in records[: s.max_results]]
        return out, len(records) > s.max_results

    def _add_rg_record(self, s: _Search, rec: bytes, records: list[tuple[tuple[str, ...], int, str]]) -> None:
        if not rec:
            return
        path_b, _, rest = rec.partition(b"\0")
        shown = path_b.decode("utf-8", errors="replace")
        if shown.startswith("./"):
            shown = shown[2:]
        if s.target_is_dir:
            # ripgrep prints the target as we passed it (root-relative, or absolute outside the root) + the rest
            rel = s.rel_of(shown)
            # ripgrep lets type-matched hidden files through and has no path globs: filter like the Python backend
            if not s.include_hidden and (rel.startswith(".") or "/." in rel):
                return
            if s.include and not s.include.basename_only and not s.include.matches(rel):
                return
            shown = s.shown_for(rel)
        else:
            shown = s.target_shown
        if s.mode == "files_with_matches":
            records.append((_sort_key(shown), 0, s.fmt(shown)))
            return
        rest_s = rest.decode("utf-8", errors="replace")
        if s.mode == "count":
            records.append((_sort_key(shown), 0, s.fmt(shown, count=int(rest_s.strip() or 0))))
            return
        num, _, line = rest_s.partition(":")
        try:
            line_no = int(num)
        except ValueError:
            return
        records.append((_sort_key(shown), line_no, s.fmt(shown, line_no, line)))


# -- the Python backend ------------------------------------------------------------------------------------------


def _files_to_search(s: _Search, stop: threading.Event) -> Iterator[tuple[str, str]]:
    """``(path to open, shown path)`` in walk order (which is the sorted order of the results)."""
    if not s.target_is_dir:
        yield str(s.target), s.target_shown
        return
    folder = workspace_of(s.target, s.ctx.workspace_folders) or s.target
    matcher = IgnoreMatcher.for_root(folder)
    for entry, rel, _depth, is_dir in iter_entries(s.target, matcher=matcher, skip_hidden=not s.include_hidden):
        if stop.is_set():
            return
        if is_dir or entry.is_symlink():
            continue
        if s.include and not s.include.matches(rel):
            continue
        yield entry.path, s.shown_for(rel)


def _matching_lines(rx: re.Pattern[str], text: str) -> Iterator[tuple[int, str]]:
    for i, line in enumerate(text.split("\n"), 1):
        if rx.search(line):
            yield i, line


def _read_for_grep(path: str) -> str | None:
    """The file's text, or None to skip it (unreadable, binary)."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
            if looks_binary(head):
                return None
            size = os.fstat(f.fileno()).st_size
            if size > _BIG_FILE:
                chunks = [head]
                while chunk := f.read(1 << 20):
                    if b"\0" in chunk:
                        return None
                    chunks.append(chunk)
                data = b"".join(chunks)
            else:
                data = head + f.read()
                if b"\0" in data:
                    return None
    except OSError:
        return None
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _python_grep(s: _Search, stop: threading.Event) -> tuple[list[str], bool]:
    rx = re.compile(s.pattern)
    # Whole-text search first (one C call per file); lines are checked only in files that can match.
    anchored = any(tok in s.pattern for tok in ("\\A", "\\Z", "\\z"))
    prefilter = None if anchored else re.compile(s.pattern, re.MULTILINE)
    records: list[tuple[tuple[str, ...], int, str]] = []
    for path, shown in _files_to_search(s, stop):
        if stop.is_set():
            break
        text = _read_for_grep(path)
        if text is None:
            continue
        if prefilter is not None:
            first = prefilter.search(text)
            if first is None:
                continue
        key = _sort_key(shown)
        if s.mode == "files_with_matches":
            # A prefilter match inside one line is a line match; one spanning lines needs the line-by-line check.
            if (prefilter is not None and first is not None and "\n" not in first.group()) or next(
                _matching_lines(rx, text), None
            ) is not None:
                records.append((key, 0, s.fmt(shown)))
        elif s.mode == "count":
            n = sum(1 for _ in _matching_lines(rx, text))
            if n:
                records.append((key, 0, s.fmt(shown, count=n)))
        else:
            for line_no, line in _matching_lines(rx, text):
                records.append((key, line_no, s.fmt(shown, line_no, line)))
                if len(records) > s.max_results:
                    break
        if len(records) > s.max_results:  # the walk is already in sorted order: the first N are the answer
            break
    records.sort(key=lambda r: (r[0], r[1]))
    results = [r[2] for r in records[: s.max_results]]
    return results, len(records) > s.max_results


# ---------------------------------------------------------------------------------------------------------------
# directory_tree


class DirectoryTreeArgs(ToolArgs):
    path: str = Field(min_length=1, description="Directory to list: absolute, or relative to the workspace root.")
    max_depth: int | None = Field(None, ge=1, description="How many levels deep to list (default 10).")


DEFAULT_TREE_DEPTH = 10
_MAX_WALK = 1_000_000  # stop counting past this many entries


class DirectoryTreeTool(NativeTool[DirectoryTreeArgs]):
    name = "directory_tree"
    description = (
        "Show the files and sub-directories of a directory as an indented tree (directories end with \"/\").\n\n"
        "- `path`: absolute, or relative to the workspace root (\".\" for the root).\n"
        "- `max_depth`: levels to descend (default 10).\n"
        "- Entries ignored by .gitignore, hidden entries (names starting with \".\") and .git are left out; long "
        "listings are cut with a note - then list a sub-directory."
    )
    Args = DirectoryTreeArgs
    path_args = ("path",)
    generic_summary = "Listing file tree"

    def __init__(self, *, include_hidden: bool = False) -> None:
        super().__init__()
        self.include_hidden = include_hidden

    def _prepare(self, args: DirectoryTreeArgs, ctx: ToolContext) -> Prepared:
        target = resolve(args.path, ctx)
        if not target.exists():
            raise self.fail(f"directory not found: {display(target, ctx)}")
        if not target.is_dir():
            raise self.fail(f"{display(target, ctx)} is a file, not a directory (use read_file to read it)")
        return Prepared(
            args=args.model_dump(),
            summary=f'Listing file tree "{display(target, ctx)}"',
            paths=[target],
            outside_workspace=not is_inside(target, ctx.workspace_folders),
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        stop = threading.Event()
        try:
            return ToolResult(output=await asyncio.to_thread(self._tree, prepared, ctx, stop))
        except asyncio.CancelledError:
            stop.set()
            raise

    def _tree(self, prepared: Prepared, ctx: ToolContext, stop: threading.Event) -> str:
        target = prepared.paths[0]
        max_depth = prepared.args.get("max_depth") or DEFAULT_TREE_DEPTH
        folder = workspace_of(target, ctx.workspace_folders) or target
        matcher = IgnoreMatcher.for_root(folder)
        cap = max(10, ctx.max_output_lines - 10)
        header = display(target, ctx)
        lines = [header if header.endswith("/") else header + "/"]
        dirs = files = 0
        budget = ctx.max_output_bytes - 512
        used = len(lines[0])
        shown = 0
        for entry, _rel, depth, is_dir in iter_entries(
            target, matcher=matcher, max_depth=max_depth, skip_hidden=not self.include_hidden
        ):
            if stop.is_set() or dirs + files >= _MAX_WALK:
                break
            if is_dir:
                dirs += 1
            else:
                files += 1
            if shown >= cap or used > budget:
                continue
            name = entry.name + ("/" if is_dir else "")
            if entry.is_symlink():
                with contextlib.suppress(OSError):
                    name += f" -> {os.readlink(entry.path)}"
            line = "  " * depth + name
            lines.append(line)
            used += len(line) + 1
            shown += 1
        total = dirs + files
        if total == 0:
            lines.append("  (empty)")
        out = "\n".join(lines)
        counted = f"{dirs} {'directory' if dirs == 1 else 'directories'}, {files} {'file' if files == 1 else 'files'}"
        if total >= _MAX_WALK:
            counted = "more than " + counted
        out += f"\n\n{counted}"
        if shown < total:
            out += (
                f"\n[tree truncated: showing {shown} of {total} entries; list a sub-directory or use a smaller "
                "max_depth]"
            )
        return out
