"""The chat-handling built-in commands: ``/init``, ``/model``, ``/fork``, ``/export`` and ``/import``.

They follow the reference server's commands of the same names. ``/init`` is not answered here: it becomes a prompt
(:func:`init_prompt`) asking the model to write ``AGENTS.md`` with its ordinary ``write_file`` tool, so the file is
an ordinary tool call the user approves (and can undo), not a write behind the user's back. The others answer at
once with a system text, like ``/doctor``.

``/export`` writes the chat as JSON (importable: the saved-chat record, wrapped with a format marker) or as Markdown
(readable: what the chat showed), picked by the file's suffix; without a path, a JSON file named after the chat goes
into the first workspace folder. The file is written atomically and redacted (an export is made to be shared, and a
tool's output may have shown a secret to the model). Exports stay inside the workspace folders: a command typed by
the user never writes elsewhere. ``/import`` reads such a file (or a saved-chat record) into a new chat with a fresh
id, announced with ``chat/opened`` and replayed to every client as ``/fork`` (``_rewind.py``) does.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

from ..._fileio import atomic_write
from ..._redact import redact_json
from ...protocol import ChatOpenedParams, ConfigUpdatedParams, MetadataContent, TextContent
from ...protocol.errors import RpcError
from . import _rewind
from ._chat import Chat, ChatRecord
from ._host import ChatHost

if TYPE_CHECKING:
    from ..models import ModelRegistry

EXPORT_FORMAT = "eca-notebook.chat"
MAX_IMPORT_BYTES = 64 * 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9]+")

INIT_PROMPT = """\
Analyze this codebase and create or update an AGENTS.md file containing the essential information an AI coding \
agent needs to work effectively in this repository.

Create or update it at the repository root. The workspace roots are: {roots}. If there are several, inspect them and \
ask which root should receive AGENTS.md before writing.

## Step 1: Explore the codebase

Read the actual contents of files like these (skip any that don't exist — this is not an exhaustive list):
- Manifest/package files: pyproject.toml, setup.cfg, package.json, Cargo.toml, go.mod, environment.yml, etc.
- Build/task runner configs: Makefile, Justfile, tox.ini, noxfile.py, package.json scripts, etc.
- CI config: .github/workflows/*, .gitlab-ci.yml, etc.
- Existing AI instructions: AGENTS.md, CLAUDE.md, .cursor/rules/, .cursorrules, .github/copilot-instructions.md, etc.
- README, CONTRIBUTING or developer docs; linter/formatter configs (ruff.toml, .pre-commit-config.yaml, etc.).
- Notebooks: how they are organised, run and tested, and what data or kernels they need.

Do not guess from file names — read the files. From what you read, identify: build, test (including how to run a \
single test) and lint commands; project structure; code style rules that differ from the language's defaults; \
non-obvious gotchas (environment variables, setup steps); repository conventions; architectural constraints.

Do not invent missing conventions: ask targeted questions (the ask_user tool, when you have it) if missing \
information is essential, otherwise leave unknown conventions out.

## Step 2: Write AGENTS.md

Write it with the write_file tool. Keep it concise: every line must pass the test "would removing it make an agent \
make mistakes or work less efficiently?". Include non-standard commands, style rules that differ from defaults, \
testing quirks, repository etiquette, required setup, gotchas and short architecture notes that file names do not \
show. Leave out file-by-file listings, standard conventions, generic advice and anything that changes often. Use \
short sections with bullet points.

If AGENTS.md already exists, read it first and improve it: fill gaps, remove what is outdated, keep what is correct.
"""


class CommandHost(_rewind.RewindHost, Protocol):
    """What the chat commands use beyond the chats: the workspace folders (``/init``, ``/export``, ``/import``) and
    the models with the selection (``/model``)."""

    @property
    def workspace_folders(self) -> Sequence[Path]:
        """The workspace roots (an export is written inside them)."""
        ...

    @property
    def registry(self) -> ModelRegistry:
        """The models there are."""
        ...

    @property
    def selected_model(self) -> str | None:
        """The model of new prompts."""
        ...

    def select_model(self, model: str, chat_id: str | None = None) -> None:
        """Select the model of new prompts and of the chat; ValueError for an unknown one."""
        ...

    def config_updated(self) -> ConfigUpdatedParams:
        """``config/updated``: what a client's model picker shows."""
        ...


# -- /init ---------------------------------------------------------------------------------------------------------


def init_prompt(engine: CommandHost) -> str:
    """The prompt ``/init`` sends to the model in the user's place."""
    roots = ", ".join(str(p) for p in engine.workspace_folders) or "(none: the server's working directory)"
    return INIT_PROMPT.format(roots=roots)


# -- /model --------------------------------------------------------------------------------------------------------


def model(engine: CommandHost, chat: Chat, argument: str) -> str:
    """``/model`` lists the models; ``/model <provider/model>`` switches this chat (and new prompts) to one."""
    available = engine.registry.models()
    listing = "\n".join(f"- {m}" for m in available)
    wanted = argument.strip()
    current = chat.model or engine.selected_model or engine.registry.default_model() or "(none)"
    if not wanted:
        if not available:
            return f"Current model: {current}\n\nNo models available: configure a provider (see /doctor)."
        return (f"Current model: {current}\n\nAvailable models:\n{listing}\n\n"
                "Run /model <provider/model> to switch this chat's model.")
    try:
        engine.select_model(wanted, chat.id)
    except ValueError:
        return f"Unknown model: {wanted}" + (f"\n\nAvailable models:\n{listing}" if available else "")
    engine.broadcast("config/updated", engine.config_updated().dump())  # every client's model picker follows
    return f"Selected model: {wanted}"


# -- /fork ---------------------------------------------------------------------------------------------------------


def _previous_prompt_id(chat: Chat) -> str | None:
    """The ``contentId`` of the prompt before this command's own echo (the chat's last exchange)."""
    echoes = [item for item in chat.contents if item.get("role") == "user"
              and (item.get("content") or {}).get("type") == "text"]
    if len(echoes) < 2:
        return None
    value = echoes[-2]["content"].get("contentId")
    return value if isinstance(value, str) and value else None


def fork(engine: ChatHost, chat: Chat) -> str | None:
    """``/fork``: a new chat continuing from this one's last message (``chat/fork`` at the last prompt, which
    announces and replays it and notes the fork here). None when done; else why not."""
    content_id = _previous_prompt_id(chat)
    if content_id is None:
        return "Nothing to fork yet: this chat has no earlier message (or was saved before messages had ids)."
    try:
        _rewind.fork(engine, chat.id, content_id)
    except RpcError as exc:
        return f"Could not fork this chat: {exc.message}"
    return None


# -- /export -------------------------------------------------------------------------------------------------------


def _slug(text: str | None) -> str:
    return _SLUG.sub("-", text or "").strip("-").lower()[:40] or "chat"


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def export_target(workspace_folders: Sequence[Path], chat: Chat, argument: str) -> Path:
    """Where ``/export`` writes: a file (``.json`` or ``.md``) or a folder (then a JSON file named after the chat
    goes in it); relative to the first workspace folder. ValueError (in words for the user) when it cannot be."""
    folders = [Path(f).resolve() for f in workspace_folders]
    if not folders:
        raise ValueError("there is no workspace folder to export into")
    default_name = f"eca-chat-{_slug(chat.title)}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    raw = argument.strip().strip("'\"")
    target = folders[0] / default_name if not raw else (folders[0] / Path(raw).expanduser()).resolve()
    if raw and (target.is_dir() or raw.endswith(("/", "\\"))):
        target = target / default_name
    if not _inside(target, folders):
        raise ValueError(f"{target} is outside the workspace folders ({', '.join(map(str, folders))})")
    if target.suffix.lower() not in (".json", ".md", ".markdown"):
        raise ValueError(f"{target.name}: the file must end in .json (importable) or .md (readable)")
    return target


class ChatExport(TypedDict):
    """What an exported chat's file holds (``/export``): a format marker and the saved-chat record, redacted, its
    images inline."""

    format: str
    version: int
    exportedAt: int
    chat: ChatRecord


def export_record(chat: Chat) -> ChatExport:
    """The JSON an export holds: the saved-chat record with a format marker, redacted."""
    record: ChatRecord = redact_json(chat.to_record())
    for message in record["messages"]:  # an export is one portable file: its images inline, as base64
        images = message.get("images")
        for image in images if isinstance(images, list) else []:
            if not isinstance(image, dict):
                continue
            data = image.pop("data", None)
            if isinstance(data, bytes):
                image["base64"] = base64.b64encode(data).decode("ascii")
    return {"format": EXPORT_FORMAT, "version": 1, "exportedAt": int(time.time() * 1000), "chat": record}


def _fence(text: str, info: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def export_markdown(chat: Chat) -> str:
    """The chat as it was shown: prompts, answers, tool calls with their arguments and outputs, system notes."""
    lines = [f"# {chat.title or 'Chat'}", "", f"- Chat: {chat.id}", f"- Model: {chat.model or '(default)'}", ""]
    for item in redact_json(chat.contents):
        role, content = item.get("role"), item.get("content") or {}
        kind = content.get("type")
        if kind == "text" and content.get("text", "").strip():
            text = content["text"].strip()
            if role == "user":
                lines += ["## User", "", text, ""]
            elif role == "assistant":
                lines += ["## Assistant", "", text, ""]
            else:
                lines += ["\n".join(f"> {line}" for line in text.splitlines()), ""]
        elif kind == "toolCalled":
            outputs = "\n".join(str(o.get("text", "")) for o in content.get("outputs") or [] if isinstance(o, dict))
            lines += [f"**Tool call** `{content.get('name', '')}`" + (" (error)" if content.get("error") else ""), "",
                      _fence(json.dumps(content.get("arguments") or {}, indent=2, ensure_ascii=False), "json"), ""]
            if outputs.strip():
                lines += [_fence(outputs), ""]
        elif kind == "toolCallRejected":
            lines += [f"**Tool call rejected** `{content.get('name', '')}`", ""]
        elif kind == "image":  # (the bytes are in the JSON export, not here)
            lines += [f"*[image: {content.get('mediaType', 'image')}]*", ""]
    return "\n".join(lines).rstrip() + "\n"


def export(engine: CommandHost, chat: Chat, argument: str) -> str:
    """``/export [path]``: the chat to a JSON or Markdown file in the workspace; the answer says where."""
    try:
        target = export_target(engine.workspace_folders, chat, argument)
    except ValueError as exc:
        return f"Could not export the chat: {exc}."
    # this command's own echo is not part of what is exported
    own = chat.contents[-1:] if chat.contents and chat.contents[-1].get("role") == "user" else []
    snapshot = Chat(id=chat.id, title=chat.title, model=chat.model, behavior=chat.behavior,
                    created_at=chat.created_at, updated_at=chat.updated_at, messages=chat.messages,
                    contents=chat.contents[:len(chat.contents) - len(own)], usage=chat.usage)
    if target.suffix.lower() == ".json":
        text = json.dumps(export_record(snapshot), indent=1, ensure_ascii=False) + "\n"
    else:
        text = export_markdown(snapshot)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)
    except OSError as exc:
        return f"Could not export the chat to {target}: {exc.strerror or exc}."
    importable = f"\n\nImport it with /import {target}" if target.suffix.lower() == ".json" else ""
    return f"Chat exported to {target} ({len(snapshot.messages)} messages).{importable}"


# -- /import -------------------------------------------------------------------------------------------------------


def _read_import(workspace_folders: Sequence[Path], argument: str) -> Chat:
    raw = argument.strip().strip("'\"")
    if not raw:
        raise ValueError("give the file to import: /import <path to an exported .json>")
    base = Path(workspace_folders[0]) if workspace_folders else Path.cwd()
    path = (base / Path(raw).expanduser()).resolve()
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise ValueError(f"{path} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path} ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg}, line {exc.lineno}); only .json exports can be "
                         "imported") from None
    record = data.get("chat") if isinstance(data, dict) and data.get("format") == EXPORT_FORMAT else data
    if not isinstance(record, dict) or not isinstance(record.get("messages", []), list) or (
            "messages" not in record and "contents" not in record):
        raise ValueError(f"{path} is not an exported chat")
    try:
        # an exported chat is a file anyone may have written (a repository's "session.json"): its trust mode would
        # auto-approve the writes and commands its forged history steers the model to — the user turns it on
        return Chat.from_record(cast(ChatRecord, {**record, "id": str(uuid.uuid4()), "trust": False}))
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ValueError(f"{path} is not an exported chat ({exc})") from None


def import_chat(engine: CommandHost, chat: Chat, argument: str) -> str:
    """``/import <path>``: the exported chat becomes a new chat (fresh id), announced and replayed to every client;
    the answer (in this chat) says its title."""
    try:
        new = _read_import(engine.workspace_folders, argument)
    except ValueError as exc:
        return f"Could not import the chat: {exc}."
    new.title = new.title or "Imported chat"
    engine.chats[new.id] = new
    engine.chat_book.save(new)
    engine.broadcast("chat/opened", ChatOpenedParams(chat_id=new.id, title=new.title).dump())
    for item in new.contents:  # as chat/open would replay them
        engine.broadcast("chat/contentReceived", {"chatId": new.id, "role": item["role"], "content": item["content"]})
    engine.emit_content(new, "system", MetadataContent(title=new.title))
    note = f"Imported from {argument.strip()}."
    if new.model and new.model not in engine.registry.models():
        note += f" Its model {new.model} is not available here: the selected model answers (switch with /model)."
        new.model = None
    engine.emit_content(new, "system", TextContent(text=note))
    engine.chat_book.save(new)
    return f"Imported chat to: {new.title} ({len(new.messages)} messages)."
