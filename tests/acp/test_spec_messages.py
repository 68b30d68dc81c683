"""Every example message of acp-messages.md sent to ``eca-notebook acp`` as the spec writes it, over real pipes, and
the answer the spec describes checked.

The messages are copied from the spec verbatim (as text, each under the name of its section); what the test
changes is said where it does: a session id the spec invented (``session-abc123``) becomes the one ``session/new``
answered, a ``/path/to/project`` the folder the test made, a ``[...]`` the text the spec's flow sends. The agent's
own requests (``fs/*``, ``session/request_permission``) are answered with the spec's responses, verbatim but for
the ``id``, which is the one of the request they answer.

No client library here: a library would fill in defaults and reshape what is sent; the spec's text is sent byte
for byte (one NDJSON line each).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.acp._schema import FILE_NOT_FOUND, FILE_TOO_LARGE, PERMISSION_DENIED, SESSION_NOT_FOUND
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer
from eca_notebook.transports.framing import NdjsonDecoder

from .conftest import acp_env, agent_log_problems, completion_bodies, sent_tool_results
from .test_connection import call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

GUARD = 120.0  # seconds: a ceiling for any one answer on a busy machine, never a expected duration

# -- the spec's messages, verbatim --------------------------------------------------------------------------------

# "Client-to-Agent Messages" / "1. initialize", Request and Success Response.
INITIALIZE = """{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "initialize",
  "params": {
    "protocolVersion": 1,
    "clientCapabilities": {
      "fs": {
        "readTextFile": true,
        "writeTextFile": true
      },
      "terminal": true
    },
    "clientInfo": {
      "name": "zed",
      "version": "0.1.0"
    }
  }
}"""
INITIALIZE_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "protocolVersion": 1,
    "agentCapabilities": {
      "loadSession": true,
      "mcpCapabilities": {
        "http": true,
        "sse": true
      },
      "promptCapabilities": {
        "embeddedContext": true,
        "image": true
      }
    },
    "agentInfo": {
      "name": "opencode",
      "version": "0.1.0"
    },
    "authMethods": []
  }
}"""

# "2. session/new", Success Response (the request is in test_spec_examples.py, with its MCP server run for real).
SESSION_NEW_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 2,
  "result": {
    "sessionId": "session-abc123",
    "models": {
      "currentModelId": "anthropic/claude-3-5-sonnet-20241022",
      "availableModels": [
        {
          "modelId": "anthropic/claude-3-5-sonnet-20241022",
          "name": "Claude 3.5 Sonnet"
        }
      ]
    },
    "modes": {
      "availableModes": [
        {
          "id": "build",
          "name": "Build",
          "description": "General purpose coding assistant"
        }
      ],
      "currentModeId": "build"
    }
  }
}"""

# "3. session/load", Request.
SESSION_LOAD = """{
  "jsonrpc": "2.0",
  "id": 3,
  "method": "session/load",
  "params": {
    "sessionId": "session-abc123",
    "cwd": "/path/to/project",
    "mcpServers": []
  }
}"""

# "4. session/prompt", Request and Success Response.
SESSION_PROMPT = """{
  "jsonrpc": "2.0",
  "id": 4,
  "method": "session/prompt",
  "params": {
    "sessionId": "session-abc123",
    "prompt": [
      {
        "type": "text",
        "text": "Create a function to calculate fibonacci numbers"
      }
    ]
  }
}"""
SESSION_PROMPT_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 4,
  "result": {
    "stopReason": "end_turn"
  }
}"""

# "5. session/set_mode", Request and Success Response.
SET_MODE = """{
  "jsonrpc": "2.0",
  "id": 5,
  "method": "session/set_mode",
  "params": {
    "sessionId": "session-abc123",
    "modeId": "architect"
  }
}"""
SET_MODE_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 5,
  "result": {}
}"""

# "6. session/set_model", Request (the spec gives no response).
SET_MODEL = """{
  "jsonrpc": "2.0",
  "id": 6,
  "method": "session/set_model",
  "params": {
    "sessionId": "session-abc123",
    "modelId": "openai/gpt-4"
  }
}"""

# "Client-to-Agent Messages" / "Notifications" / "1. session/cancel".
SESSION_CANCEL = """{
  "jsonrpc": "2.0",
  "method": "session/cancel",
  "params": {
    "sessionId": "session-abc123"
  }
}"""

# "Testing Message Examples" / "Complete Conversation Flow": what the client sends, one line each.
FLOW_INITIALIZE = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
FLOW_SESSION_NEW = '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp"}}'
FLOW_PROMPT = ('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"session-123","prompt":'
               '[{"type":"text","text":"Hello"}]}}')
FLOW_UPDATE = ('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"session-123","update":'
               '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi there!"}}}}')
FLOW_ANSWER = '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}'

# "Testing Message Examples" / "Error Scenarios" (the ``[...]`` of the first is the flow's prompt).
INVALID_SESSION = ('{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"invalid","prompt":'
                   '[...]}}').replace("[...]", '[{"type":"text","text":"Hello"}]')
INVALID_SESSION_ANSWER = '{"jsonrpc":"2.0","id":4,"error":{"code":-31900,"message":"Session not found"}}'
FILE_NOT_FOUND_REQUEST = ('{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{"sessionId":"session-123",'
                          '"path":"/nonexistent"}}')
FILE_NOT_FOUND_ANSWER = '{"jsonrpc":"2.0","id":5,"error":{"code":-31700,"message":"File not found"}}'

# "Agent-to-Client Messages": the client's answers to the agent's requests, and the requests as the spec shows them.
READ_REQUEST = """{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "fs/read_text_file",
  "params": {
    "sessionId": "session-123",
    "path": "src/main.js",
    "limit": 1000,
    "line": 1
  }
}"""
READ_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "content": "console.log('Hello World');\\n"
  }
}"""
READ_ERROR = """{
  "jsonrpc": "2.0",
  "id": 1,
  "error": {
    "code": -31700,
    "message": "File not found",
    "data": {
      "path": "src/main.js"
    }
  }
}"""
WRITE_REQUEST = """{
  "jsonrpc": "2.0",
  "id": 2,
  "method": "fs/write_text_file",
  "params": {
    "sessionId": "session-123",
    "path": "src/main.js",
    "content": "console.log('Updated content');\\n"
  }
}"""
WRITE_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 2,
  "result": {}
}"""
PERMISSION_REQUEST = """{
  "jsonrpc": "2.0",
  "id": 3,
  "method": "session/request_permission",
  "params": {
    "sessionId": "session-123",
    "toolCall": {
      "toolCallId": "tool-456",
      "title": "Run npm install",
      "status": "pending",
      "kind": "execute",
      "locations": []
    },
    "options": [
      {
        "optionId": "once",
        "kind": "allow_once",
        "name": "Allow once"
      },
      {
        "optionId": "always",
        "kind": "allow_always",
        "name": "Always allow"
      },
      {
        "optionId": "reject",
        "kind": "reject_once",
        "name": "Reject"
      }
    ]
  }
}"""
PERMISSION_ANSWER = """{
  "jsonrpc": "2.0",
  "id": 3,
  "result": {
    "outcome": {
      "outcome": "selected",
      "optionId": "once"
    }
  }
}"""
# "Notifications" / "1. session/update", "Update Types".
UPDATE_TOOL_CALL = """{
  "sessionUpdate": "tool_call",
  "toolCallId": "tool-456",
  "title": "Execute command",
  "kind": "execute",
  "status": "pending",
  "locations": []
}"""
UPDATE_TOOL_CALL_UPDATE = """{
  "sessionUpdate": "tool_call_update",
  "toolCallId": "tool-456",
  "status": "completed",
  "content": [
    {
      "type": "content",
      "content": {
        "type": "text",
        "text": "Command completed successfully"
      }
    }
  ]
}"""
UPDATE_PLAN = """{
  "sessionUpdate": "plan",
  "entries": [
    {
      "content": "Create React component",
      "priority": "high",
      "status": "pending"
    }
  ]
}"""
UPDATE_COMMANDS = """{
  "sessionUpdate": "available_commands_update",
  "availableCommands": [
    {
      "name": "init",
      "description": "Initialize project"
    }
  ]
}"""


def spec(text: str, **params: Any) -> dict[str, Any]:
    """One of the messages above, with *params* replaced where the spec's values name things it made up."""
    message = json.loads(text)
    if params:
        message["params"] = {**message["params"], **params}
    return message


def answering(spec_answer: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The spec's answer to an agent request, verbatim but for the id (a response carries its request's id)."""
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {**json.loads(spec_answer), "id": request["id"]}
    return answer


def same_shape(spec_value: Any, ours: Any, where: str = "") -> list[str]:
    """Where *ours* lacks a key the spec's example has, or holds another JSON type there (values are ours)."""
    if isinstance(spec_value, dict):
        if not isinstance(ours, dict):
            return [f"{where or '<root>'}: {ours!r} is not an object"]
        return [p for key, value in spec_value.items() for p in (
            same_shape(value, ours[key], f"{where}.{key}") if key in ours else [f"{where}.{key}: missing"])]
    if isinstance(spec_value, list):
        if not isinstance(ours, list):
            return [f"{where}: {ours!r} is not an array"]
        return [p for item in ours for p in same_shape(spec_value[0], item, f"{where}[]")] if spec_value else []
    kinds = (bool,) if isinstance(spec_value, bool) else (int, float) if isinstance(spec_value, int | float) else (str,)
    if spec_value is not None and (not isinstance(ours, kinds) or (isinstance(ours, bool) and kinds != (bool,))):
        return [f"{where}: {ours!r} is not a {type(spec_value).__name__}"]
    return []


# -- a client that sends text ---------------------------------------------------------------------------------------

class RawClient:
    """``eca-notebook acp`` on real pipes: sends messages as given, routes answers by id, records notifications,
    and answers the agent's requests with :attr:`answers` (method → the response to send)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.answers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self.responses: dict[str, dict[str, Any]] = {}
        self.received: list[dict[str, Any]] = []  # every message from the agent, in order
        self.lines: list[str] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder = NdjsonDecoder()
        while chunk := await self.proc.stdout.read(65536):
            for item in decoder.feed(chunk):
                message = json.loads(item)
                self.received.append(message)
                if "method" in message and "id" in message:
                    answer = self.answers.get(message["method"])
                    reply = answer(message) if answer else {
                        "jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
                    await self.write(json.dumps(reply))
                elif "id" in message:
                    self.responses[json.dumps(message["id"])] = message
                self._arrived.set()

    async def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.lines.append(line)
        self.proc.stdin.write(line.replace("\n", "").encode() + b"\n")  # NDJSON: one message per line
        await self.proc.stdin.drain()

    async def send(self, message: dict[str, Any] | str) -> dict[str, Any] | None:
        """Send one message (a spec text as written, or a dict); for a request, wait for and return its answer."""
        text = message if isinstance(message, str) else json.dumps(message)
        parsed = json.loads(text)
        key = json.dumps(parsed.get("id"))
        self.responses.pop(key, None)
        await self.write(text if isinstance(message, str) else json.dumps(message))
        if "id" not in parsed:
            return None
        await self.wait(lambda: key in self.responses)
        return self.responses.pop(key)

    async def wait(self, condition: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GUARD
        while not (value := condition()):
            self._arrived.clear()
            assert loop.time() < deadline, f"no such message from the agent: {self.received[-5:]}"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), 1.0)
        return value

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.received if m.get("method") == "session/update"
                and (kind is None or m["params"]["update"].get("sessionUpdate") == kind)]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method and "id" in m]

    async def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


@pytest.fixture
def raw_agent(home: Path, llm: ScriptedLLMServer, workspace: Path, tmp_path: Path):
    logs: list[Path] = []

    @contextlib.asynccontextmanager
    async def spawn(env: dict[str, str] | None = None, cwd: Path | None = None) -> AsyncIterator[RawClient]:
        log = tmp_path / f"agent-{len(logs)}.log"
        logs.append(log)
        with open(log, "wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "eca_notebook", "acp", "--log-level", "info", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=stderr.fileno(), env=env or acp_env(home, llm),
                cwd=str(cwd or workspace))
            client = RawClient(proc)
            try:
                yield client
            finally:
                await client.close()

    yield spawn
    for log in logs:
        text = log.read_text(errors="replace") if log.exists() else ""
        assert not agent_log_problems(text), f"the agent logged errors:\n{text}"


# -- the tests ------------------------------------------------------------------------------------------------------

async def test_initialize_as_written_answers_the_spec_capabilities(raw_agent):
    async with raw_agent() as client:
        answer = await client.send(INITIALIZE)
    expected = json.loads(INITIALIZE_ANSWER)
    assert answer is not None and answer["id"] == expected["id"] and "error" not in answer, answer
    result = answer["result"]
    assert not same_shape(expected["result"], result), same_shape(expected["result"], result)
    # every capability the spec's answer claims, ours claims too (the agent's name and version are its own)
    assert result["protocolVersion"] == 1 and result["authMethods"] == []
    capabilities = expected["result"]["agentCapabilities"]
    assert result["agentCapabilities"]["loadSession"] is capabilities["loadSession"]
    assert {k: result["agentCapabilities"]["mcpCapabilities"][k] for k in ("http", "sse")} == capabilities[
        "mcpCapabilities"]
    for key, value in capabilities["promptCapabilities"].items():
        assert result["agentCapabilities"]["promptCapabilities"][key] is value, key


async def test_the_complete_conversation_flow_as_written(raw_agent, llm, home):
    """"Complete Conversation Flow": initialize with only ``protocolVersion``, ``session/new`` with only ``cwd``
    (``/tmp``, no ``mcpServers``), a prompt answered by ``agent_message_chunk`` updates and then ``end_turn``."""
    llm.enqueue(Reply.text("Hi there!"))
    async with raw_agent() as client:
        init = await client.send(FLOW_INITIALIZE)
        assert init is not None and init["result"]["protocolVersion"] == 1 and "agentCapabilities" in init["result"]
        new = await client.send(FLOW_SESSION_NEW)
        assert new is not None and "error" not in new, new
        session_id = new["result"]["sessionId"]
        assert isinstance(session_id, str) and session_id
        # "session-123" is the id the flow's session/new answered: here, ours
        answer = await client.send(FLOW_PROMPT.replace("session-123", session_id))
    assert answer == {**json.loads(FLOW_ANSWER)}
    chunks = [m for m in client.received if m.get("method") == "session/update"
              and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]
    expected = json.loads(FLOW_UPDATE.replace("session-123", session_id))
    assert chunks and all(not same_shape(expected, m) for m in chunks)
    assert "".join(m["params"]["update"]["content"]["text"] for m in chunks) == "Hi there!"
    # the updates precede the answer ("Completion notifications after all chunks")
    assert client.received.index(chunks[-1]) < next(i for i, m in enumerate(client.received) if m.get("id") == 3)


async def test_session_requests_as_written(raw_agent, llm, home, workspace):
    """``session/new``'s answer has the spec's shape; ``session/prompt``, ``session/set_mode`` (``architect``),
    ``session/set_model`` (``openai/gpt-4``), ``session/cancel`` and ``session/load`` as written, with the spec's
    ``session-abc123`` and ``/path/to/project`` being the session and folder this test made. The user's config
    offers the spec's model (``openai/gpt-4`` is no model of ours until a config names it)."""
    llm.enqueue(Reply.text("def fib(n): ..."))
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["providers"]["openai"] = {"models": {"gpt-4": {}}}
    env["ECA_CONFIG"] = json.dumps(config)
    async with raw_agent(env) as client:
        await client.send(INITIALIZE)
        new = await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                 "params": {"cwd": str(workspace), "mcpServers": []}})
        assert new is not None
        result = new["result"]
        assert not same_shape(json.loads(SESSION_NEW_ANSWER)["result"], result), same_shape(
            json.loads(SESSION_NEW_ANSWER)["result"], result)
        sid = result["sessionId"]

        def ours(text: str) -> str:
            return text.replace("session-abc123", sid).replace("/path/to/project", str(workspace))

        assert await client.send(ours(SESSION_PROMPT)) == json.loads(SESSION_PROMPT_ANSWER)
        assert await client.send(ours(SET_MODE)) == json.loads(SET_MODE_ANSWER)
        model = await client.send(ours(SET_MODEL))
        assert model is not None and model.get("result") == {}, model
        assert await client.send(ours(SESSION_CANCEL)) is None  # a notification: no answer, nothing running
        loaded = await client.send(ours(SESSION_LOAD))
        assert loaded is not None and "error" not in loaded, loaded
        assert loaded["result"]["modes"]["currentModeId"] == "plan"
        assert loaded["result"]["models"]["currentModelId"] == "openai/gpt-4"
        # as written, the spec's ids name no session here
        unknown = await client.send(SESSION_LOAD.replace("/path/to/project", str(workspace)))
        assert unknown is not None and unknown["error"]["code"] == SESSION_NOT_FOUND


async def test_set_model_to_a_model_no_config_offers_names_those_it_does(raw_agent, workspace):
    async with raw_agent() as client:
        await client.send(INITIALIZE)
        new = await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                 "params": {"cwd": str(workspace), "mcpServers": []}})
        assert new is not None
        refused = await client.send(SET_MODEL.replace("session-abc123", new["result"]["sessionId"]))
    assert refused is not None and refused["error"]["code"] == -32602
    assert "openai/gpt-4.1" in refused["error"]["message"]  # what the user may pick instead


async def test_the_error_scenarios_as_written(raw_agent, workspace):
    async with raw_agent() as client:
        await client.send(INITIALIZE)
        new = await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                 "params": {"cwd": str(workspace), "mcpServers": []}})
        assert new is not None
        sid = new["result"]["sessionId"]
        invalid = await client.send(INVALID_SESSION)
        expected = json.loads(INVALID_SESSION_ANSWER)
        assert invalid is not None and invalid["id"] == expected["id"]
        assert invalid["error"]["code"] == expected["error"]["code"]
        assert invalid["error"]["message"].startswith(expected["error"]["message"])
        # "session-123" is the flow's session: here, ours
        missing = await client.send(FILE_NOT_FOUND_REQUEST.replace("session-123", sid))
        expected = json.loads(FILE_NOT_FOUND_ANSWER)
        assert missing is not None and missing["id"] == expected["id"]
        assert missing["error"]["code"] == expected["error"]["code"] == FILE_NOT_FOUND
        assert missing["error"]["message"].startswith(expected["error"]["message"])
        # the same request for a file that is there answers its text (the editor's view of the agent's folder)
        (workspace / "src").mkdir()
        (workspace / "src" / "main.js").write_text("one\ntwo\nthree\n")
        read = await client.send(READ_REQUEST.replace("session-123", sid).replace("src/main.js",
                                                                                  str(workspace / "src/main.js")))
        assert read is not None and read.get("result") == {"content": "one\ntwo\nthree\n"}, read
        window = spec(READ_REQUEST, sessionId=sid, path=str(workspace / "src/main.js"), line=2, limit=1)
        assert (await client.send(window) or {}).get("result") == {"content": "two\n"}
        # as written (a relative path): the spec's parameters say absolute
        relative = await client.send(READ_REQUEST.replace("session-123", sid))
        assert relative is not None and relative["error"]["code"] == -32602
        # outside the session's folder: not the agent's to show
        outside = await client.send(spec(FILE_NOT_FOUND_REQUEST, sessionId=sid, path="/etc/hostname"))
        assert outside is not None and outside["error"]["code"] == PERMISSION_DENIED
        (workspace / "huge.txt").write_bytes(b"x" * (11 * 1024 * 1024))
        huge = await client.send(spec(FILE_NOT_FOUND_REQUEST, sessionId=sid, path=str(workspace / "huge.txt")))
        assert huge is not None and huge["error"]["code"] == FILE_TOO_LARGE
        wrong = await client.send(FILE_NOT_FOUND_REQUEST)  # as written: session-123 is no session here
        assert wrong is not None and wrong["error"]["code"] == SESSION_NOT_FOUND


async def test_the_agents_requests_answered_as_the_spec_answers_them(raw_agent, llm, workspace):
    """The agent reads a file through the client (answered with the spec's ``content``), asks permission to write
    (answered with the spec's ``optionId: "once"``), writes through the client (answered ``{}``); its requests and
    updates have the spec's shapes."""
    (workspace / "src").mkdir()
    (workspace / "src" / "main.js").write_text("on disk\n")
    main = str(workspace / "src" / "main.js")
    llm.enqueue(Reply([call("read_file", {"path": main})]),
                Reply([call("write_file", {"path": main, "content": "console.log('Updated content');\n"},
                            "call_2")]),
                Reply.text("Updated."))
    async with raw_agent() as client:
        client.answers = {"fs/read_text_file": answering(READ_ANSWER),
                          "session/request_permission": answering(PERMISSION_ANSWER),
                          "fs/write_text_file": answering(WRITE_ANSWER)}
        await client.send(INITIALIZE)
        new = await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                 "params": {"cwd": str(workspace), "mcpServers": []}})
        assert new is not None
        sid = new["result"]["sessionId"]
        answer = await client.send(SESSION_PROMPT.replace("session-abc123", sid))
        assert answer == json.loads(SESSION_PROMPT_ANSWER)
    # the model saw the client's text, not the disk's
    assert "console.log('Hello World');" in sent_tool_results(completion_bodies(llm)[1])[0]
    # "once" allowed the write; the client's {} was taken as done (the disk is the editor's to save)
    assert (workspace / "src" / "main.js").read_text() == "on disk\n"
    [write] = client.requests("fs/write_text_file")
    assert not same_shape(json.loads(WRITE_REQUEST)["params"], write["params"])
    assert write["params"]["content"] == "console.log('Updated content');\n"
    reads = client.requests("fs/read_text_file")
    assert reads and all(not same_shape({"sessionId": "", "path": ""}, r["params"]) for r in reads)
    assert all(Path(r["params"]["path"]).is_absolute() for r in reads)
    [ask] = client.requests("session/request_permission")
    spec_ask = json.loads(PERMISSION_REQUEST)["params"]
    assert not same_shape(spec_ask, ask["params"]), same_shape(spec_ask, ask["params"])
    # the spec's options are offered under the spec's ids
    offered = {(o["optionId"], o["kind"]) for o in ask["params"]["options"]}
    assert {(o["optionId"], o["kind"]) for o in spec_ask["options"]} <= offered
    calls = client.updates("tool_call")
    assert calls and all(not same_shape(json.loads(UPDATE_TOOL_CALL), u) for u in calls)
    done = [u for u in client.updates("tool_call_update") if u.get("status") == "completed"]
    assert len(done) == 2
    spec_done = json.loads(UPDATE_TOOL_CALL_UPDATE)
    assert all(not same_shape({k: spec_done[k] for k in ("sessionUpdate", "toolCallId", "status")}, u) for u in done)
    with_content = [u for u in done if u.get("content")]
    assert with_content
    [commands] = client.updates("available_commands_update")
    assert not same_shape(json.loads(UPDATE_COMMANDS), commands)


async def test_the_clients_file_not_found_answer_is_taken_as_the_spec_means_it(raw_agent, llm, workspace):
    """``fs/read_text_file`` answered with the spec's error (-31700, File not found): the file does not exist for
    the editor, and the tool says so to the model instead of failing the turn."""
    llm.enqueue(Reply([call("read_file", {"path": str(workspace / "src" / "main.js")})]), Reply.text("No file."))
    async with raw_agent() as client:
        client.answers = {"fs/read_text_file": answering(READ_ERROR)}
        await client.send(INITIALIZE)
        new = await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                 "params": {"cwd": str(workspace), "mcpServers": []}})
        assert new is not None
        sid = new["result"]["sessionId"]
        answer = await client.send(SESSION_PROMPT.replace("session-abc123", sid))
        assert answer == json.loads(SESSION_PROMPT_ANSWER)
    [result] = sent_tool_results(completion_bodies(llm)[1])
    assert "not found" in result.lower() or "no such file" in result.lower() or "does not exist" in result.lower()


def test_the_agents_plan_update_has_the_spec_shape(tmp_path: Path):
    """The ``plan`` update the agent sends for ``update_plan``'s plan (driven end to end in test_plan.py) has the
    spec's example's fields, the same values for the same step."""
    from eca_notebook.acp._updates import SessionUpdates

    updates, _ = SessionUpdates(tmp_path).translate("assistant", {
        "type": "plan", "steps": [{"description": "Create React component", "priority": "high"}]}, live=True)
    assert updates == [json.loads(UPDATE_PLAN)]


async def test_a_null_id_is_a_notification_as_the_message_structure_says(raw_agent, llm, workspace):
    """"Message Structure": ``"id": null, // Number, String, or null for notifications`` and "Notifications have no
    ID (null)": a ``session/cancel`` or ``session/set_mode`` with ``"id": null`` is acted on and answered with
    nothing (JSON-RPC 2.0 would answer it; a client following the spec would then read a response to nothing)."""
    async with raw_agent() as client:
        await client.send(INITIALIZE)
        new = await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                 "params": {"cwd": str(workspace), "mcpServers": []}})
        assert new is not None
        sid = new["result"]["sessionId"]
        await client.write(SESSION_CANCEL.replace("session-abc123", sid).replace(
            '"method"', '"id": null,\n  "method"'))
        await client.write(json.dumps({"jsonrpc": "2.0", "id": None, "method": "session/set_mode",
                                       "params": {"sessionId": sid, "modeId": "architect"}}))
        answered = await client.send({"jsonrpc": "2.0", "id": 9, "method": "session/set_mode",
                                      "params": {"sessionId": sid, "modeId": "code"}})
    assert answered == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert not [m for m in client.received if "id" in m and m["id"] is None]
    assert [u["configOptions"][0]["currentValue"] for u in client.updates("config_option_update")] == ["plan",
                                                                                                      "code"]
