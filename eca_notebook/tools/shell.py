"""shell_command: run a command through ``/bin/sh -c`` inside the workspace.

The command runs in its own session (so its own process group): a timeout or a cancelled tool call kills the
*group* — the shell, and whatever it started in the background, which would otherwise outlive the chat and keep the
output pipe open. stdin is closed so nothing can wait for input; stdout and stderr are merged in arrival order.

Before anything runs, the command line is parsed (:mod:`._shell_parse`): a command that names a path outside the
workspace or ``cd``s out of it is flagged ``outside_workspace`` (so it always asks, like any outside call), and one
whose paths cannot be known before it runs (``$(...)`` output as an argument, variables set by ``read``, syntax the
parser cannot follow…) gets ``must_ask``: it asks even under ``byDefault: "allow"`` or an ``allow`` rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import time
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from .._text import visible
from ..protocol import JsonObject, JsonValue, ToolCallRisk
from ._args import ToolArgs
from ._output import truncate_for_llm
from ._paths import display, is_inside, resolve
from ._tool import NativeTool
from .base import CommandOutcome, CommandRequest, Prepared, ToolContext, ToolResult

__all__ = ["DEFAULT_TIMEOUT_MS", "MAX_TIMEOUT_MS", "ShellCommandArgs", "ShellCommandTool", "files_named"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 600_000
_SUMMARY_CHARS = 80


def _flag_as_text(value: object) -> object:
    return "true" if value is True else None if value is False else value


class ShellCommandArgs(ToolArgs):
    command: str = Field(min_length=1, description="The shell command line to run (POSIX sh syntax).")
    working_directory: str | None = Field(
        None, description="Directory to run in, inside the workspace (default: the workspace root)."
    )
    timeout: int = Field(
        DEFAULT_TIMEOUT_MS, ge=1, description="Timeout in milliseconds (default 60000, maximum 600000)."
    )
    # a string, as in the reference; ``true`` (what a model may send for a flag) reads as "true", ``false`` as unset
    background: Annotated[str | None, BeforeValidator(_flag_as_text)] = Field(
        None, description="A brief description (e.g. 'dev-server', 'training') to run the command in the background: "
                          "it returns a job id at once; read its output, wait for it or kill it with bg_job. For "
                          "commands that run long or never end on their own. No timeout applies.")


class _Capture:
    """Keeps the head of a stream (bounded memory) and counts what it did not keep."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.total = 0
        self.newlines = 0
        self.last = b""

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.last = chunk[-1:]
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.total and self.last != b"\n" else 0)


class ShellCommandTool(NativeTool[ShellCommandArgs]):
    name = "shell_command"
    description = (
        "Run a shell command (POSIX /bin/sh) and return its exit code and combined stdout/stderr.\n\n"
        "- `working_directory`: where to run, inside the workspace (absolute or relative to the workspace root; "
        "default: the root). Do not prefix commands with `cd <workspace>`.\n"
        "- `timeout`: milliseconds (default 60000, max 600000); on timeout the command and everything it started "
        "are killed.\n"
        "- stdin is closed: never run interactive programs (editors, pagers, prompts); pass flags like `--yes` or "
        "`--no-pager`. Run servers and watchers with `background`, or they time out.\n"
        "- `background`: a brief description (e.g. \"dev-server\") runs a long command as a background job and "
        "returns its id at once; use bg_job to read its output, wait for it or kill it.\n"
        "- Output is cut at 2000 lines / 50 KB; for big outputs redirect to a file and grep/read it.\n"
        "- Prefer the dedicated tools for reading, searching and editing files."
    )
    Args = ShellCommandArgs
    mutates = False  # it may change files, but it is not a file-edit tool; the approval policy asks by default
    default_approval = "ask"
    generic_summary = "Running shell command"

    def __init__(self, *, shell: str = "/bin/sh", kill_grace: float = 2.0, drain_timeout: float = 1.0) -> None:
        """`kill_grace`: seconds between SIGTERM and SIGKILL; `drain_timeout`: how long to keep reading output after
        the shell exits while a background child still holds the pipe."""
        super().__init__()
        self.shell = shell
        self.kill_grace = kill_grace
        self.drain_timeout = drain_timeout

    def _prepare(self, args: ShellCommandArgs, ctx: ToolContext) -> Prepared:
        cwd = resolve(args.working_directory or ".", ctx)
        folders = ctx.workspace_folders or [ctx.root]
        if not is_inside(cwd, folders):
            raise self.fail(f"working_directory must be inside the workspace (got {display(cwd, ctx)})")
        if not cwd.is_dir():
            raise self.fail(f"working_directory not found or not a directory: {display(cwd, ctx)}")
        normalised = args.model_dump()
        normalised["timeout"] = min(args.timeout, MAX_TIMEOUT_MS)
        # runs of blanks shown as one; a newline (a second command) and any control or bidi character written out
        one_line = visible(re.sub(r"[ \t]+", " ", args.command.strip(" \t\n")))
        if len(one_line) > _SUMMARY_CHARS:
            one_line = one_line[: _SUMMARY_CHARS - 3] + "..."
        from ._shell_parse import analyse_paths, parse  # lazy: tree-sitter loads on the first shell command

        parsed = parse(args.command)
        report = analyse_paths(parsed, cwd, folders, self._env())
        must_ask = "; ".join(report.unknown[:3]) if report.unknown else None
        if report.needs_asking:
            log.debug("shell command must be approved: %s", "; ".join(report.reasons()[:5]))
        background = args.background
        if background is None or not background.strip():
            del normalised["background"]  # (a foreground call's arguments stay as they were)
        return Prepared(
            args=normalised,
            summary=f"$ {one_line}" + ("  (background)" if "background" in normalised else ""),
            paths=[cwd, *report.outside, *report.cd_outside],
            outside_workspace=bool(report.outside or report.cd_outside),
            must_ask=must_ask,
            details=_breakdown(parsed, background="background" in normalised),
        )

    #: What the tool sets in the command's environment (on top of the server's, or of the client's terminal's).
    SET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}

    @classmethod
    def _env(cls) -> dict[str, str]:
        """The environment the command gets (also what ``$VAR``s are analysed with)."""
        env = dict(os.environ)
        env.update(cls.SET_ENV)
        return env

    def assess_risk(self, prepared: Prepared, ctx: ToolContext) -> ToolCallRisk:
        """How risky the prepared command line is, read off its parse (:mod:`._shell_risk`): the engine shows it
        with the call and ``toolCall.approval.risk`` may act on it."""
        from ._shell_risk import classify_shell  # lazy, like the parse

        risk = classify_shell(prepared.args["command"], prepared.paths[0], ctx.workspace_folders or [ctx.root],
                              self._env())
        return ToolCallRisk(level=risk.level, reason=risk.reason)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        if prepared.args.get("background"):
            return await self._run_background(prepared, ctx)
        if ctx.run_command is not None:  # a door runs it elsewhere (the user's own terminal)
            return await self._run_elsewhere(prepared, ctx)
        cwd = prepared.paths[0]
        timeout_ms: int = prepared.args["timeout"]
        env = self._env()
        # Our own pipe rather than asyncio's: a background child may keep its write end open after the shell exits,
        # and we must be able to stop listening and close our end without waiting for it.
        read_fd, write_fd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                self.shell,
                "-c",
                prepared.args["command"],
                *_positional(prepared),
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        capture = _Capture(keep=2 * ctx.max_output_bytes + 4096)
        transport: asyncio.BaseTransport | None = None
        reader: asyncio.Future[None] | None = None
        timed_out = False
        try:
            try:
                stream = asyncio.StreamReader(limit=1 << 16)
                transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(stream), pipe
                )
                reader = asyncio.ensure_future(self._read(stream, capture))
                await asyncio.wait_for(asyncio.shield(proc.wait()), timeout_ms / 1000)
            except TimeoutError:
                timed_out = True
                await self._kill_group(proc)
            # Background children may still hold the pipe: read what they wrote for a moment, then stop listening.
            if reader is not None:
                await asyncio.wait({reader}, timeout=self.drain_timeout)
        except BaseException:  # cancelled (or broken): nothing the command started may outlive the call
            try:
                await self._kill_group(proc)
            finally:
                self._sigkill(proc)
            raise
        finally:
            if reader is not None and not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            if transport is not None:
                transport.close()
            else:
                pipe.close()
        text = capture.head.decode("utf-8", errors="replace")
        body = truncate_for_llm(
            text,
            ctx.max_output_lines,
            ctx.max_output_bytes,
            hint="redirect the output to a file and grep or read it",
            total_lines=capture.lines,
            total_bytes=capture.total,
        ) if text else "(no output)"
        if timed_out:
            head = f"Command timed out after {timeout_ms} ms; it was killed with its whole process group."
            return ToolResult(output=f"{head}\nOutput so far:\n{body}", error=True)
        code = proc.returncode
        assert code is not None
        status = f"Exit code: {code}"
        if code < 0:
            with contextlib.suppress(ValueError):
                status += f" (killed by {signal.Signals(-code).name})"
        return ToolResult(output=f"{status}\n\n{body}", error=code != 0)

    async def _run_background(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        """Start the command as a background job (``tools/jobs.py``) and answer with its id at once — after its
        first output, or its early end, or a second, whichever comes first."""
        from .jobs import START_WAIT_SECONDS, JobLimitError

        if ctx.run_command is not None:
            return ToolResult(output="shell_command: background jobs cannot run where this session runs commands "
                                     "(the client's terminal); run it without `background`.", error=True)
        if ctx.jobs is None or ctx.chat_id is None:
            return ToolResult(output="shell_command: background jobs are not available here.", error=True)
        background = prepared.args["background"]
        try:
            job = await ctx.jobs.start(prepared.args["command"], cwd=str(prepared.paths[0]), env=self._env(),
                                       chat_id=ctx.chat_id,
                                       summary=None if background.strip() == "true" else background.strip())
        except JobLimitError as exc:
            return ToolResult(output=f"shell_command: {exc}", error=True)
        waiters = [asyncio.ensure_future(job.done.wait()), asyncio.ensure_future(job.output_seen.wait())]
        try:
            await asyncio.wait(waiters, timeout=START_WAIT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if job.done.is_set():
            await asyncio.sleep(0)  # the last output of a command that ended at once
        data, _, end = job.read(0, ctx.max_output_bytes)
        job.cursor = end
        first = data.decode("utf-8", "replace")
        if job.done.is_set() and job.exit_code:
            return ToolResult(output=f"Background job {job.id} failed at once (exit code {job.exit_code}).\n"
                                     f"Output:\n{first or '(no output)'}", error=True)
        lines = [f"Background job {job.id} started" + (" and already ended (exit code 0)." if job.done.is_set()
                                                        else "."),
                 f"Command: {job.command}",
                 f'Use bg_job with action "read_output" and job_id "{job.id}" to read its output, "wait" to wait for '
                 'it, "kill" to stop it.']
        if first:
            lines.append(f"\nOutput so far (next offset {end}):\n{first}")
        return ToolResult(output="\n".join(lines))

    async def _run_elsewhere(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        """Through ``ctx.run_command``; the outcome reaches the model as a local run's would (exit code first,
        stdout then stderr, the same truncation)."""
        assert ctx.run_command is not None
        timeout_ms: int = prepared.args["timeout"]
        request = CommandRequest(command=prepared.args["command"], cwd=str(prepared.paths[0]), env=dict(self.SET_ENV),
                                 reason=None, timeout=timeout_ms / 1000, chat_id=ctx.chat_id,
                                 tool_call_id=ctx.tool_call_id)
        try:
            outcome: CommandOutcome = await ctx.run_command(request)
        except TimeoutError:
            return ToolResult(output=f"Command timed out after {timeout_ms} ms: no result came back from where it "
                                     "runs.", error=True)
        except PermissionError as exc:
            return ToolResult(output=f"The command was not run: {exc}", error=True)
        text = outcome.stdout
        if outcome.stderr:
            text = f"{text}\n{outcome.stderr}" if text and not text.endswith("\n") else text + outcome.stderr
        body = truncate_for_llm(text, ctx.max_output_lines, ctx.max_output_bytes,
                                hint="redirect the output to a file and grep or read it") if text else "(no output)"
        code = outcome.exit_code
        return ToolResult(output=f"Exit code: {code}\n\n{body}", error=code != 0)

    @staticmethod
    async def _read(stream: asyncio.StreamReader, capture: _Capture) -> None:
        while chunk := await stream.read(1 << 16):
            capture.feed(chunk)

    @staticmethod
    def _group_alive(pgid: int) -> bool:
        """Whether a live (non-zombie) process is left in the group. Orphaned children are reaped by init — or, in
        some containers, never — so ``killpg(pgid, 0)`` alone would wait out the whole grace period on zombies."""
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        try:
            names = os.listdir("/proc")
        except OSError:
            return True
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # after the command name: state, ppid, pgrp, ...
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
                return True
        return False

    def _sigkill(self, proc: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    async def _kill_group(self, proc: asyncio.subprocess.Process) -> None:
        """SIGTERM the whole group, give it `kill_grace` seconds to go, then SIGKILL whatever is left."""
        pgid = proc.pid  # start_new_session: the shell leads its own group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.kill_grace
        while time.monotonic() < deadline:
            if proc.returncode is not None and not self._group_alive(pgid):
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), 0.05)
        self._sigkill(proc)
        await proc.wait()


def files_named(command: str) -> list[str]:
    """The words of a shell command line that may name a file it runs or reads — each command's program and
    arguments, redirection targets, and ``-m module`` also as ``module.py``, ``module/__main__.py`` and
    ``module/__init__.py`` — as written (not resolved; options left out). For workspace trust (workspace/_trust.py):
    the repository's files a hook's ``shell`` line names are part of what the user trusts. A line the parser cannot
    follow gives what it did find; no parser gives nothing."""
    try:
        from ._shell_parse import parse  # lazy: tree-sitter loads on first use

        parsed = parse(command)
    except Exception:  # noqa: BLE001 - no grammar (or a parser bug): the caller keeps the command text itself
        log.debug("cannot parse a command line for the files it names", exc_info=True)
        return []
    names: list[str] = []
    bases = [""]  # where a relative name may be: after ``cd scripts``, also below scripts/
    for cmd in parsed.commands:
        words = ([cmd.name] if cmd.name is not None else []) + list(cmd.args)
        found: list[str] = []
        for i, word in enumerate(words):
            value = word.static
            if not value or value.startswith("-"):
                continue
            found.append(value)
            previous = words[i - 1].static if i else None
            if previous == "-m":
                module = value.replace(".", "/")
                found += [f"{module}.py", f"{module}/__main__.py", f"{module}/__init__.py"]
        names += [n if not base or n.startswith(("/", "~")) else f"{base}/{n}" for base in bases for n in found]
        if cmd.program in ("cd", "pushd") and len(found) == 2 and not found[1].startswith(("/", "~")):
            bases = list(dict.fromkeys([*bases, *(f"{b}/{found[1]}" if b else found[1] for b in bases)]))[:8]
    names += [r.target.static for r in parsed.redirects if r.target is not None and r.target.static]
    return list(dict.fromkeys(names))


def _positional(prepared: Prepared) -> list[str]:
    """``$0`` and the positional parameters the script gets after ``-c`` (``state["argv"]``): a custom tool's
    arguments (tools/custom.py), passed as the shell's arguments so they are never read as code; nothing for a model's
    own command line."""
    argv = prepared.state.get("argv") if isinstance(prepared.state, dict) else None
    return [str(a) for a in argv] if isinstance(argv, list) else []


def _breakdown(parsed: Any, *, background: bool) -> JsonObject:
    """The reference's ``ShellCommandDetails``: each command the line runs (chains and pipes split; not those run
    from a string by ``sh -c`` or ``eval``), words unquoted where they are plain text. The engine adds what
    approving would remember (``approvalKey``, ``remembered``)."""
    def word(w: Any) -> str:
        parts = getattr(w, "parts", ())
        return "".join(p.value for p in parts) if parts and all(p.kind == "literal" for p in parts) else w.text

    commands: list[JsonValue] = [{"command": visible(word(c.name)), "args": [visible(word(a)) for a in c.args]}
                for c in parsed.commands if c.name is not None and c.via is None]
    details: JsonObject = {"type": "shellCommand", "commands": commands}
    if background:
        details["background"] = True
    return details
