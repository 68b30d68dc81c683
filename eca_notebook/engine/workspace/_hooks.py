"""Hooks: the user's shell commands run at events of the engine, as the reference server's ``hooks`` config has them.

Why here, in one place: a hook is someone else's program run by us at a point of the engine the user cannot see —
before a tool call, before a prompt goes to the model. Running it safely (never blocking the event loop, never
hanging a turn, never leaking a secret it prints) is the same for every event, so the events' call sites only ask
:meth:`Hooks.run` and read the :class:`HookOutcome`.

Config (``docs/config/hooks.md`` of the reference server)::

    "hooks": {"check": {"type": "preToolCall", "matcher": "eca__write_file", "description": "…",
                        "visible": true, "runOnError": false,
                        "actions": [{"type": "shell", "shell": "…"} | {"type": "shell", "file": "…",
                                     "timeout": 30000}]}}

Each action gets the event as JSON on stdin (``hook_name``, ``hook_type``, ``workspaces``, ``cwd``, and for chat
events ``chat_id``, ``agent``, ``behavior``, ``full_model``, plus the event's own fields — ``tool_name``,
``tool_input`` …) and runs in the first workspace folder. Exit ``0``: stdout may be a JSON object whose fields are
applied (``additionalContext``, ``replacedPrompt``, ``updatedInput``, ``approval``, ``replacedOutput``,
``systemMessage``, ``continue``/``stopReason``). Exit ``2``: the event's intervention, stderr its payload (a blocked
tool call's reason). Any other exit, or a timeout (``timeout`` ms per action, default 30 s as the reference), is
reported in the log and the run goes on. Hooks of an event run alphabetically by name; ``continue: false`` stops
the rest of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..._redact import redact
from ...protocol import JsonObject, JsonValue, TextContent
from ._chat_status import ChatStatusHooks

if TYPE_CHECKING:
    from ..._tasks import BackgroundTasks
    from ...protocol import WireContent
    from ..chats import Chat
    from ._trust import WorkspaceTrust

__all__ = ["BLOCK_EXIT", "DEFAULT_TIMEOUT_MS", "HOOK_TYPES", "HookOutcome", "HookResult", "Hooks", "HooksHost",
           "RequestHooks", "hooks_listing", "run_action"]

log = logging.getLogger(__name__)

BLOCK_EXIT = 2
DEFAULT_TIMEOUT_MS = 30_000
OUTPUT_LIMIT = 64 * 1024  # what is kept of a hook's stdout/stderr: a chatty hook must not fill a chat

#: The reference's events, in the order ``/hooks`` lists them.
HOOK_TYPES = ("sessionStart", "sessionEnd", "chatStart", "chatEnd", "chatStatusChanged", "subagentStart",
              "preRequest", "postRequest", "subagentPostRequest", "preToolCall", "postToolCall", "preCompact",
              "postCompact")
_LEGACY = {"prePrompt": "preRequest", "postPrompt": "postRequest"}


@dataclass(frozen=True)
class HookResult:
    """One action's run: its exit code, stdout/stderr (redacted, trimmed) and stdout as a JSON object if it was."""

    name: str
    exit: int
    stdout: str = ""
    stderr: str = ""
    parsed: JsonObject | None = None
    timed_out: bool = False

    @property
    def effects(self) -> JsonObject:
        """The JSON fields to apply: only on exit 0, as the reference."""
        return self.parsed if self.exit == 0 and self.parsed is not None else {}


@dataclass
class HookOutcome:
    """What the hooks of one event decided, merged in run order."""

    results: list[HookResult] = field(default_factory=list)
    blocked_by: str | None = None  # the first hook that exited 2
    block_reason: str = ""  # its stderr
    stopped_by: str | None = None  # a hook that answered ``continue: false``
    stop_reason: str = ""
    additional_context: list[str] = field(default_factory=list)
    replaced_prompt: str | None = None
    updated_input: JsonObject = field(default_factory=dict)
    approval: str | None = None  # "allow" | "ask" | "deny", merged deny > ask > allow
    replaced_output: str | None = None
    system_messages: list[str] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        """A hook refused the action (exit code 2 or ``continue: false``)."""
        return self.blocked_by is not None


async def run_action(action: Mapping[str, Any], name: str, data: Mapping[str, Any], *, cwd: Path,
                     env: Mapping[str, str] | None = None) -> HookResult:
    """Run one ``{"type": "shell", "shell"|"file": …, "timeout": ms}`` action with ``data`` as JSON on stdin.

    Never raises for the hook's sake: a missing file, a crash or a timeout is a non-zero result (a timed-out hook's
    process group is killed). stdout and stderr are redacted before anyone sees them."""
    shell, file = action.get("shell"), action.get("file")
    if action.get("type", "shell") != "shell":
        return HookResult(name, 1, stderr=f"unknown hook action type '{action.get('type')}'")
    if bool(shell) == bool(file):
        return HookResult(name, 1, stderr="a hook action needs exactly one of 'shell' and 'file'")
    if file:
        path = Path(os.path.expanduser(str(file)))
        path = path if path.is_absolute() else cwd / path
        if not path.exists():
            return HookResult(name, 1, stderr=f"hook file not found: {path}")
        command = _quote(str(path))
    else:
        command = str(shell)
    timeout_ms = action.get("timeout")
    timeout = (timeout_ms if isinstance(timeout_ms, (int, float)) and timeout_ms > 0 else DEFAULT_TIMEOUT_MS) / 1000
    payload = json.dumps(data, default=str).encode()
    try:
        proc = await asyncio.create_subprocess_shell(
            command, cwd=str(cwd), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=dict(env) if env is not None else None,
            start_new_session=sys.platform != "win32")
    except OSError as exc:
        return HookResult(name, 1, stderr=redact(f"could not start the hook: {exc}"))
    try:
        out, err = await asyncio.wait_for(proc.communicate(payload), timeout)
    except TimeoutError:
        _kill(proc)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 5)
        log.warning("hook %s timed out after %g s", name, timeout)
        return HookResult(name, 1, stderr=f"Hook timed out after {timeout:g} seconds", timed_out=True)
    except asyncio.CancelledError:
        _kill(proc)
        raise
    stdout = redact(out[:OUTPUT_LIMIT].decode(errors="replace")).strip()
    stderr = redact(err[:OUTPUT_LIMIT].decode(errors="replace")).strip()
    code = proc.returncode if proc.returncode is not None else 1
    if code not in (0, BLOCK_EXIT):
        log.warning("hook %s exited %s: %s", name, code, stderr[:500])
    return HookResult(name, code, stdout, stderr, _json_object(stdout))


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if sys.platform != "win32":
            os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
        else:
            proc.kill()


def _json_object(text: str) -> JsonObject | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _hook_type(hook: Mapping[str, Any]) -> str:
    kind = str(hook.get("type", ""))
    return _LEGACY.get(kind, kind)


def _regex(pattern: Any, value: str) -> bool:
    try:
        return re.fullmatch(str(pattern), value) is not None
    except re.error:
        log.warning("invalid hook matcher regex: %r", pattern)
        return False


def _matches(hook: Mapping[str, Any], hook_type: str, data: Mapping[str, Any]) -> bool:
    """The reference's matcher: a regex over ``server__tool`` or a tool-selector map with ``argsMatchers`` for tool
    hooks, the trigger (``manual``/``auto``) for compaction hooks; other events ignore it."""
    if _hook_type(hook) != hook_type:
        return False
    matcher = hook.get("matcher")
    if hook_type == "postToolCall" and data.get("error") and not hook.get("runOnError", False):
        return False
    if hook_type in ("preToolCall", "postToolCall"):
        server, tool = str(data.get("server", "")), str(data.get("tool_name", ""))
        if matcher is None:
            return True
        if isinstance(matcher, str):
            return _regex(matcher, f"{server}__{tool}")
        if isinstance(matcher, Mapping):
            args = data.get("tool_input") or {}
            for selector, rule in matcher.items():
                if selector not in (f"{server}__{tool}", server) and not (server == "eca" and selector == tool):
                    continue
                wanted = (rule or {}).get("argsMatchers") if isinstance(rule, Mapping) else None
                if not wanted:
                    return True
                if isinstance(wanted, Mapping) and all(
                        isinstance(alts, list) and name in args and any(_regex(p, str(args[name])) for p in alts)
                        for name, alts in wanted.items()):
                    return True
        return False
    if hook_type in ("preCompact", "postCompact") and matcher is not None:
        return isinstance(matcher, str) and matcher == data.get("triggered")
    return True


class HooksHost(Protocol):
    """What the hooks use of their owner (the engine): the trust (the config that applies, where a command runs),
    the workspace folders and environment a command gets, the background tasks an advisory hook runs in, and the
    chat a hook's ``systemMessage`` is shown in."""

    @property
    def trust(self) -> WorkspaceTrust: ...
    @property
    def workspace_folders(self) -> Sequence[Path]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def background(self) -> BackgroundTasks: ...
    def emit_content(self, chat: Chat, role: str, content: WireContent) -> None: ...


class Hooks:
    """The engine's hooks: reads ``hooks`` from the current config at each event (a reload applies at once)."""

    def __init__(self, host: HooksHost) -> None:
        self.host = host
        self.chat = RequestHooks(self)
        self.status = ChatStatusHooks(self)  # chatStatusChanged, fed by the engine's contents and status changes
        self.session_started: set[str] = set()  # sessionStart hooks run this session (once each, see _trust.py)

    def configured(self) -> dict[str, Mapping[str, Any]]:
        """The valid hook entries, by name (an entry that is not an object, or has no actions, is left out)."""
        # While a workspace is untrusted its config without its hooks applies (_trust.py): the user's own hooks run
        # as they configured them, whatever the workspace removes or replaces. Asked at each event, so an edited
        # workspace hook script holds its hooks again at once.
        config = self.host.trust.effective_config()
        raw = (config.model_extra or {}).get("hooks") or {}
        if not isinstance(raw, Mapping):
            return {}
        return {str(name): hook for name, hook in raw.items()
                if isinstance(hook, Mapping) and isinstance(hook.get("actions"), list) and hook["actions"]}

    def has(self, hook_type: str) -> bool:
        """Whether any hook listens to this event (call sites skip building its data otherwise)."""
        return any(_hook_type(h) == hook_type for h in self.configured().values())

    def base_data(self, chat: Chat | None = None) -> JsonObject:
        """The reference's base input; with ``chat``, its chat fields too."""
        folders: list[JsonValue] = [str(f) for f in self.host.workspace_folders]
        data: JsonObject = {"workspaces": folders, "cwd": folders[0] if folders else os.getcwd(),
                            "eca_executable": sys.executable}
        if chat is not None:
            data.update(chat_id=chat.id, agent=chat.behavior, behavior=chat.behavior, full_model=chat.model)
        return data

    async def run(self, hook_type: str, data: Mapping[str, Any] | None = None, *,
                  chat: Chat | None = None, names: Collection[str] | None = None) -> HookOutcome:
        """Run the hooks of ``hook_type`` (alphabetically, actions in order) and merge what they answered.

        With ``chat``, a hook's ``systemMessage`` is shown in that chat as ``Hook '<name>': <text>``. With
        ``names``, only those hooks (a workspace's ``sessionStart`` hooks, run late once it is trusted)."""
        outcome = HookOutcome()
        hooks = sorted((name, hook) for name, hook in self.configured().items()
                       if _matches(hook, hook_type, data or {}) and (names is None or name in names))
        if hook_type == "sessionStart":
            self.session_started.update(name for name, _ in hooks)
        if not hooks:
            return outcome
        base = self.base_data(chat)
        for name, hook in hooks:
            actions = hook["actions"]
            for i, action in enumerate(actions):
                if not isinstance(action, Mapping):
                    continue
                action_name = f"{name}-{i + 1}" if len(actions) > 1 else name
                payload = {**base, **(data or {}), "hook_name": action_name, "hook_type": hook_type}
                result = await run_action(action, action_name, payload, cwd=self._cwd(action, hook, base),
                                          env=self.host.env)
                outcome.results.append(result)
                if self._merge(outcome, result, hook_type, chat):
                    return outcome
        return outcome

    def _cwd(self, action: Mapping[str, Any], hook: Mapping[str, Any], base: Mapping[str, Any]) -> Path:
        """Where an action runs: its (or its hook's) ``cwd`` if set, else the first workspace folder once trusted,
        else the home directory (_trust.py: a repository's files must not be picked up by the user's command before
        the user trusts it). The event's ``cwd`` field stays the workspace folder."""
        return self.host.trust.process_cwd(action.get("cwd") or hook.get("cwd")) or Path(base["cwd"])

    def _merge(self, outcome: HookOutcome, result: HookResult, hook_type: str, chat: Chat | None) -> bool:
        """Fold one result into ``outcome``; True when it said ``continue: false`` (the rest do not run)."""
        if result.exit == BLOCK_EXIT and outcome.blocked_by is None:
            outcome.blocked_by, outcome.block_reason = result.name, result.stderr
        effects = result.effects
        context = effects.get("additionalContext")
        if isinstance(context, str) and context.strip():
            outcome.additional_context.append(context.strip())
        replaced_prompt = effects.get("replacedPrompt")
        if isinstance(replaced_prompt, str):
            outcome.replaced_prompt = replaced_prompt
        updated_input = effects.get("updatedInput")
        if isinstance(updated_input, Mapping):
            outcome.updated_input.update(updated_input)
        approval = effects.get("approval")
        order = {"allow": 0, "ask": 1, "deny": 2}
        if approval in order and (outcome.approval is None or order[approval] > order[outcome.approval]):
            outcome.approval = approval
        replaced_output = effects.get("replacedOutput")
        if isinstance(replaced_output, str):
            outcome.replaced_output = replaced_output
        message = effects.get("systemMessage")
        if isinstance(message, str) and message.strip():
            outcome.system_messages.append(f"Hook '{result.name}': {message.strip()}")
            if chat is not None:
                self.host.emit_content(chat, "system", TextContent(text=outcome.system_messages[-1]))
        if effects.get("continue") is False:
            outcome.stopped_by = result.name
            reason = effects.get("stopReason")
            outcome.stop_reason = reason if isinstance(reason, str) else ""
            return True
        return False

    def spawn(self, hook_type: str, data: Mapping[str, Any] | None = None, *, chat: Chat | None = None) -> None:
        """Run an advisory event's hooks in the background (``chatEnd``, ``postRequest``…): nobody waits on them."""
        if self.has(hook_type):
            self.host.background.spawn(self.run(hook_type, data, chat=chat), f"eca-hook-{hook_type}")

    def listing(self) -> str:
        """``/hooks``: the configured hooks by event."""
        return hooks_listing(self.configured())


def hooks_listing(hooks: Mapping[str, Mapping[str, Any]]) -> str:
    """The reference's ``/hooks`` text: hooks grouped by event, each with its description, visibility and matcher."""
    if not hooks:
        return 'No hooks configured. Add hooks to your config under the "hooks" key.'
    by_type: dict[str, list[str]] = {}
    for name in sorted(hooks):
        hook = hooks[name]
        line = f"  - {name}"
        if hook.get("description"):
            line += f" — {hook['description']}"
        if hook.get("visible", True) is False:
            line += " (hidden)"
        matcher = hook.get("matcher")
        if matcher is not None:
            line += f" matcher: {matcher if isinstance(matcher, str) else json.dumps(matcher)}"
        by_type.setdefault(_hook_type(hook), []).append(line)
    order = [*HOOK_TYPES, *sorted(t for t in by_type if t not in HOOK_TYPES)]
    parts = ["Hooks active:\n"]
    for kind in order:
        if kind in by_type:
            parts.append(f"{kind}:\n" + "\n".join(by_type[kind]) + "\n")
    return "\n".join(parts)


class RequestHooks:
    """The chat-side events, for the prompt pipeline: one call per place, so its edits stay one line each."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    async def before_request(self, chat: Chat, prompt: str, *, new_chat: bool) -> tuple[str | None, str | None]:
        """``chatStart`` (a new chat's first prompt) then ``preRequest``: (the prompt to send, or None when a hook
        blocked it or stopped the turn; what the user is told why). ``additionalContext`` is appended to the prompt,
        ``replacedPrompt`` replaces it."""
        hooks = self.hooks
        extra: list[str] = []
        if new_chat and hooks.has("chatStart"):
            started = await hooks.run("chatStart", {"resumed": False}, chat=chat)
            if started.stopped_by:
                return None, _stopped(started)
            extra += started.additional_context
        if hooks.has("preRequest"):
            outcome = await hooks.run("preRequest", {"prompt": prompt}, chat=chat)
            if outcome.blocked:
                why = f": {outcome.block_reason}" if outcome.block_reason else "."
                return None, f"Request blocked by hook '{outcome.blocked_by}'{why}"
            if outcome.stopped_by:
                return None, _stopped(outcome)
            if outcome.replaced_prompt is not None:
                prompt = outcome.replaced_prompt
            extra += outcome.additional_context
        for context in extra:
            prompt += f"\n\n<additionalContext>\n{context}\n</additionalContext>"
        return prompt, None

    def after_request(self, chat: Chat) -> None:
        """``postRequest``, in the background once the turn is over, with the model's last answer."""
        if not self.hooks.has("postRequest"):
            return
        last = chat.messages[-1] if chat.messages else None
        self.hooks.spawn("postRequest", {"response": getattr(last, "text", "") or "", "follow_up_active": False},
                         chat=chat)

    def tool_hooks(self, chat: Chat) -> Callable[[str, JsonObject], Awaitable[HookOutcome | None]]:
        """The tool-call runner's ``hooks``: runs ``preToolCall``/``postToolCall`` of this chat (None: none)."""
        async def run(hook_type: str, data: JsonObject) -> HookOutcome | None:
            if not self.hooks.has(hook_type):
                return None
            return await self.hooks.run(hook_type, data, chat=chat)

        return run

    async def before_compact(self, chat: Chat, trigger: str, instructions: str = "") -> str | None:
        """``preCompact``: None to go on, else why compaction is not done (exit 2 or ``continue: false``)."""
        if not self.hooks.has("preCompact"):
            return None
        outcome = await self.hooks.run("preCompact", {"triggered": trigger, "custom_instructions": instructions},
                                       chat=chat)
        if outcome.blocked:
            return f"Compaction blocked by hook '{outcome.blocked_by}'."
        return _stopped(outcome) if outcome.stopped_by else None

    def after_compact(self, chat: Chat, trigger: str, summary: str) -> None:
        """``postCompact``, in the background, with the summary."""
        self.hooks.spawn("postCompact", {"triggered": trigger, "compact_summary": summary}, chat=chat)

    def auto_compact(self, chat: Chat) -> tuple[Callable[[], Awaitable[tuple[str, bool] | None]],
                                                Callable[[str], Awaitable[tuple[str, str | None]]]]:
        """The turn's hooks for its *automatic* compaction (``_context_window.ContextKeeper``), ``triggered: auto``.

        Before: None to go on, else (what the user is told, whether the turn stops): exit 2 blocks only the
        compaction (the model goes on with the full context), ``continue: false`` stops the turn too. After: waited
        for (unlike ``/compact``'s), so a hook's ``additionalContext`` is appended to the summary the turn goes on
        from; ``continue: false`` stops the turn there."""
        hooks = self.hooks

        async def before() -> tuple[str, bool] | None:
            if not hooks.has("preCompact"):
                return None
            outcome = await hooks.run("preCompact", {"triggered": "auto", "custom_instructions": ""}, chat=chat)
            if outcome.stopped_by:
                return _stopped(outcome), True
            if outcome.blocked:
                return f"Compaction blocked by hook '{outcome.blocked_by}'.", False
            return None

        async def after(summary: str) -> tuple[str, str | None]:
            if not hooks.has("postCompact"):
                return "", None
            outcome = await hooks.run("postCompact", {"triggered": "auto", "compact_summary": summary}, chat=chat)
            extra = "".join(f"\n\n<additionalContext>\n{c}\n</additionalContext>" for c in outcome.additional_context)
            return extra, _stopped(outcome) if outcome.stopped_by else None

        return before, after


def _stopped(outcome: HookOutcome) -> str:
    return f"Turn stopped by hook '{outcome.stopped_by}'" + (f": {outcome.stop_reason}" if outcome.stop_reason
                                                             else ".")
