"""Harness for the ACP door: ``eca-notebook acp`` subprocesses driven by real third-party ACP clients.

* :func:`acp_env` isolates HOME/XDG (never the real ~/.config or ~/.cache) and points the providers at the scripted
  LLM server, with the embedded model off and ``openai/gpt-4.1`` as the default model.
* :class:`StrictSchema` checks every message our agent sends against the ``agent-client-protocol`` package's schema
  models *strictly*: the message must validate and survive a round trip unchanged. (The package's models silently
  drop unknown keys and "salvage" invalid optional fields to defaults; a round trip catches both.)
* :class:`ClientErrors` collects what the Python client logs at ERROR (it logs, rather than raises, when a
  notification of ours fails to parse): a test fails on any.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import schema as S
from acp.connection import StreamDirection, StreamEvent

from eca_notebook.testing.llm_server import ScriptedLLMServer

from ..e2e.conftest import server_env

DEFAULT_MODEL = "openai/gpt-4.1"


def acp_env(home: Path, llm: ScriptedLLMServer, **extra: str) -> dict[str, str]:
    env = server_env(home, llm, **extra)
    config = json.loads(env["ECA_CONFIG"])
    config.update(defaultModel=DEFAULT_MODEL, localModel=False)
    env["ECA_CONFIG"] = json.dumps(config)
    return env


def completion_bodies(llm: ScriptedLLMServer) -> list[Any]:
    return [r.body for r in llm.requests if r.method == "POST" and not r.path.startswith("/_scripted")]


def sent_tool_results(body: dict[str, Any]) -> list[str]:
    """Tool results an OpenAI Responses request carried back to the model."""
    return [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]


def sent_tools(body: dict[str, Any]) -> list[str]:
    return [t.get("name") for t in body.get("tools") or []]


# -- strict schema check -------------------------------------------------------------------------------------------

RESULT_MODELS: dict[str, type] = {
    "initialize": S.InitializeResponse,
    "session/new": S.NewSessionResponse,
    "session/load": S.LoadSessionResponse,
    "session/list": S.ListSessionsResponse,
    "session/prompt": S.PromptResponse,
    "session/set_mode": S.SetSessionModeResponse,
    "session/set_config_option": S.SetSessionConfigOptionResponse,
}
AGENT_MESSAGES: dict[str, type] = {
    "session/update": S.SessionNotification,
    "session/request_permission": S.RequestPermissionRequest,
    "fs/read_text_file": S.ReadTextFileRequest,
    "fs/write_text_file": S.WriteTextFileRequest,
    "terminal/create": S.CreateTerminalRequest,
    "terminal/output": S.TerminalOutputRequest,
    "terminal/wait_for_exit": S.WaitForTerminalExitRequest,
    "terminal/kill": S.KillTerminalRequest,
    "terminal/release": S.ReleaseTerminalRequest,
}
# Keys the schema version in the package does not model but ACP clients read: the legacy model selector
# (``models``, answered by ``session/set_model``), which acp-messages.md and acpx still use.
ALLOWED_EXTRA = {("session/new", "models"), ("session/load", "models")}


def _compare(raw: Any, dumped: Any, where: str, method: str, problems: list[str]) -> None:
    if isinstance(raw, dict) and isinstance(dumped, dict):
        for key in raw:
            if key not in dumped:
                if not (where == "" and (method, key) in ALLOWED_EXTRA):
                    problems.append(f"{method}: {where}.{key} is not in the schema (dropped by the client)")
                continue
            _compare(raw[key], dumped[key], f"{where}.{key}", method, problems)
        for key in dumped:
            if key not in raw:
                problems.append(f"{method}: {where}.{key} appeared in the round trip")
    elif isinstance(raw, list) and isinstance(dumped, list) and len(raw) == len(dumped):
        for i, (a, b) in enumerate(zip(raw, dumped, strict=False)):
            _compare(a, b, f"{where}[{i}]", method, problems)
    elif raw != dumped:
        problems.append(f"{method}: {where or '<root>'} = {raw!r} became {dumped!r} (invalid, salvaged by the client)")


def strict_problems(model: type, raw: Any, method: str) -> list[str]:
    try:
        parsed = model.model_validate(raw)
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return [f"{method}: does not validate as {model.__name__}: {exc}"]
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    problems: list[str] = []
    _compare(raw, dumped, "", method, problems)
    return problems


@dataclass
class StrictSchema:
    """Observes a client connection: checks every agent → client message, and records them in order."""

    problems: list[str] = field(default_factory=list)
    incoming: list[dict[str, Any]] = field(default_factory=list)
    _requests: dict[Any, str] = field(default_factory=dict)

    def check(self, message: dict[str, Any], request_method: str | None = None) -> None:
        method = message.get("method")
        if method is not None:
            model = AGENT_MESSAGES.get(method)
            if model is None:
                self.problems.append(f"unexpected agent message {method}")
            else:
                self.problems += strict_problems(model, message.get("params"), method)
        elif "result" in message and request_method in RESULT_MODELS:
            self.problems += strict_problems(RESULT_MODELS[request_method], message["result"], request_method)

    def observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self._requests[message["id"]] = message["method"]
            return
        self.incoming.append(message)
        self.check(message, self._requests.get(message.get("id")) if "method" not in message else None)

    def index(self, predicate: Any) -> list[int]:
        return [i for i, m in enumerate(self.incoming) if predicate(m)]


class ClientErrors(logging.Handler):
    """ERROR records from the client library (it logs failures to handle our messages instead of raising)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("eca_notebook"):
            return  # our own in-process helpers (the scripted LLM server)
        self.records.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def strict():
    checker = StrictSchema()
    errors = ClientErrors()
    logging.getLogger().addHandler(errors)
    try:
        yield checker
    finally:
        logging.getLogger().removeHandler(errors)
    assert not errors.records, f"the ACP client logged errors about our messages: {errors.records}"
    assert not checker.problems, "messages off the ACP schema:\n" + "\n".join(checker.problems)


def agent_log_problems(text: str) -> list[str]:
    return [line for line in text.splitlines() if "Traceback" in line or " ERROR " in line or " CRITICAL " in line]


@pytest.fixture
def spawn_agent(home: Path, llm: ScriptedLLMServer, workspace: Path, strict: StrictSchema, tmp_path: Path):
    """``async with spawn_agent(client) as (conn, proc)``: ``eca-notebook acp`` under the package's client side."""
    from acp import spawn_agent_process

    logs: list[Path] = []

    @asynccontextmanager
    async def spawn(client: Any, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
                    ) -> AsyncIterator[Any]:
        log = tmp_path / f"agent-{len(logs)}.log"
        logs.append(log)
        with open(log, "wb") as stderr:
            async with spawn_agent_process(
                client, sys.executable, "-m", "eca_notebook", "acp", "--log-level", "info", *args,
                env=env or acp_env(home, llm), cwd=workspace, transport_kwargs={"stderr": stderr.fileno()},
                observers=[strict.observe],
            ) as (conn, proc):
                yield conn, proc

    yield spawn
    for log in logs:
        text = log.read_text(errors="replace") if log.exists() else ""
        assert not agent_log_problems(text), f"the agent logged errors:\n{text}"
