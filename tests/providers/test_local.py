"""The embedded local provider: status messages, constrained-JSON tool calls, and real generations.

Tests marked ``local`` load the real SmolLM2-135M model through xllamacpp (each load is well under a second) and
skip with the install hint when the extra isn't installed. Settings are deterministic: temperature 0, a fixed seed,
few tokens. The rest needs no model.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from eca_notebook.providers import (
    AssistantMessage,
    Finished,
    ProviderError,
    ProviderRequest,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    local,
)
from eca_notebook.providers import _local_json as lj
from eca_notebook.providers.local import (
    INSTALL_HINT,
    MODEL_ID,
    LoadProgress,
    LocalOptions,
    LocalProvider,
    LocalRuntime,
    LocalRuntimeError,
    create_local_provider,
    get_local_runtime,
    local_model_status,
    shutdown_local_runtimes,
)

STATUS = local_model_status()
needs_model = [
    pytest.mark.local,
    pytest.mark.skipif(not STATUS.available, reason=STATUS.message),
]

READ_FILE = ToolSpec(
    "read_file",
    "Read a file from the workspace. Returns its text.",
    {"type": "object", "properties": {"path": {"type": "string", "description": "file path"}}, "required": ["path"]},
)
WRITE_FILE = ToolSpec(
    "write_file",
    "Write text to a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
DETERMINISTIC = LocalOptions(temperature=0.0, seed=7, max_tokens=24)


def request(text: str, **kw: Any) -> ProviderRequest:
    return ProviderRequest(model="smollm2-135m", messages=kw.pop("messages", [UserMessage(text)]), **kw)


async def collect(provider: Any, req: ProviderRequest) -> list[Any]:
    return [event async for event in provider.stream(req)]


def refuses(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as s:
        s.settimeout(2)
        try:
            s.connect((parts.hostname, parts.port))
        except ConnectionRefusedError:
            return True
    return False


def alive(pid: int) -> bool:
    """Whether a process still runs. A zombie leader whose other threads are still exiting counts as running
    (its sockets close only when the last thread is gone); a zombie with nothing left running does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z" or len(os.listdir(f"/proc/{pid}/task")) > 1
    except (OSError, IndexError):
        return True


# ---------------------------------------------------------------------------------------------------------------
# Status (no model needed)
# ---------------------------------------------------------------------------------------------------------------


def test_status_when_runtime_is_missing() -> None:
    status = local_model_status(runtime_module="eca_no_such_runtime")
    assert not status.available and not status.runtime_installed
    assert INSTALL_HINT in status.message
    assert "eca_no_such_runtime" in status.message
    assert "Traceback" not in status.message


def test_status_when_model_is_missing() -> None:
    status = local_model_status(model_module="eca_no_such_model")
    assert not status.available and not status.model_installed
    assert status.model_path is None and status.model_size is None
    assert INSTALL_HINT in status.message and "eca-no-such-model" in status.message


def test_status_when_a_module_is_not_a_package_has_no_model() -> None:
    status = local_model_status(model_module="json")  # importable, but no GGUF inside
    assert not status.model_installed and INSTALL_HINT in status.message


def test_status_reports_the_installed_model() -> None:
    if not STATUS.available:
        pytest.skip(STATUS.message)
    assert STATUS.model_path and STATUS.model_path.endswith(".gguf") and os.path.isfile(STATUS.model_path)
    assert STATUS.model_size == os.path.getsize(STATUS.model_path)
    assert MODEL_ID in STATUS.message and STATUS.model_path in STATUS.message and "xllamacpp" in STATUS.message


async def test_missing_extra_fails_the_request_with_the_hint() -> None:
    missing = local_model_status(runtime_module="eca_no_such_runtime")
    async with httpx.AsyncClient() as client:
        provider = LocalProvider(client, status=missing)
        with pytest.raises(ProviderError) as info:
            await collect(provider, request("hi"))
    assert INSTALL_HINT in info.value.message


def test_get_local_runtime_is_process_wide_and_lazy() -> None:
    if not STATUS.available:
        with pytest.raises(LocalRuntimeError, match="install eca-notebook"):
            get_local_runtime()
        return
    runtime = get_local_runtime()
    assert get_local_runtime() is runtime and get_local_runtime(STATUS.model_path) is runtime
    assert not runtime.running and runtime.url is None  # nothing starts until a request needs it


# ---------------------------------------------------------------------------------------------------------------
# Constrained JSON (no model needed)
# ---------------------------------------------------------------------------------------------------------------


def test_reply_schema_admits_one_tool_call_or_an_answer() -> None:
    schema = lj.reply_schema([READ_FILE, WRITE_FILE])
    branches = schema["anyOf"]
    assert [b["properties"].get("tool", {}).get("const") for b in branches] == ["read_file", "write_file", None]
    assert branches[0]["properties"]["arguments"]["required"] == ["path"]
    assert branches[2]["required"] == ["answer"]
    assert all(b["additionalProperties"] is False for b in branches)
    required = lj.reply_schema([READ_FILE], require_tool=True)
    assert required["properties"]["tool"] == {"const": "read_file"}  # one branch, no answer
    loose = lj.reply_schema([READ_FILE], loose=True)
    assert loose["anyOf"][0]["properties"]["arguments"] == {"type": "object"}


def test_parameter_schemas_are_made_self_contained() -> None:
    params = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "when": {"$ref": "#/definitions/Date", "description": "kept"},
            "tree": {"$ref": "#/definitions/Node"},
            "remote": {"$ref": "https://example.com/x.json"},
        },
        "definitions": {
            "Date": {"type": "string"},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/Node"}}},
        },
    }
    out = lj.parameters_schema(params)
    assert "$schema" not in out and "definitions" not in out
    assert out["properties"]["when"] == {"type": "string", "description": "kept"}
    assert out["properties"]["remote"] == {}
    assert "$ref" not in json.dumps(out)  # recursion is cut off rather than left dangling
    assert lj.parameters_schema({}) == {"type": "object"}


def test_tool_choice_from_the_extra_payload() -> None:
    tools = [READ_FILE, WRITE_FILE]
    assert lj.tool_choice({}, tools) == ("auto", tools)
    assert lj.tool_choice({"tool_choice": "required"}, tools) == ("required", tools)
    assert lj.tool_choice({"tool_choice": "none"}, tools) == ("none", tools)
    named = {"tool_choice": {"type": "function", "function": {"name": "write_file"}}}
    assert lj.tool_choice(named, tools) == ("required", [WRITE_FILE])


def test_history_renders_tool_turns_as_plain_turns() -> None:
    history = [
        UserMessage("read a.txt"),
        AssistantMessage(tool_calls=[ToolCall("c1", "read_file", '{"path": "a.txt"}')]),
        ToolResultMessage("c1", "read_file", "x" * 50),
        AssistantMessage(text="done", tool_calls=[ToolCall("c2", "write_file", "not json")]),
        ToolResultMessage("c2", "write_file", "boom", is_error=True),
        AssistantMessage(text=""),  # nothing to say: dropped
    ]
    out = lj.render_history(history, max_result_chars=20)
    assert [m.role for m in out] == ["user", "assistant", "user", "assistant", "user"]
    assert json.loads(out[1].text) == {"tool": "read_file", "arguments": {"path": "a.txt"}}
    assert out[2].text.startswith("Tool result (read_file):\n") and "characters omitted" in out[2].text
    assert out[3].text.splitlines()[0] == "done"
    assert json.loads(out[3].text.splitlines()[1]) == {"tool": "write_file", "arguments": "not json"}
    assert out[4].text == "Tool error (write_file):\nboom"


def feed_in_pieces(reader: lj.ReplyReader, text: str, size: int) -> list[Any]:
    events: list[Any] = []
    for i in range(0, len(text), size):
        events += reader.feed(text[i : i + size])
    return events


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_reader_streams_an_answer_across_split_escapes(size: int) -> None:
    answer = 'Hi "you"\\ — tab\there\nline 😀 \u00e9 / end'
    raw = '{\n  "answer": ' + json.dumps(answer) + "\n}"  # json.dumps escapes the emoji as a surrogate pair
    reader = lj.ReplyReader(["read_file"])
    streamed = feed_in_pieces(reader, raw, size)
    rest, stop = reader.finish()
    assert all(isinstance(e, TextDelta) for e in streamed + rest)
    assert "".join(e.text for e in streamed + rest) == answer
    assert rest == [] and stop is None  # everything was streamed before the end
    if size < len(raw):
        assert len(streamed) > 1


def test_reader_turns_a_tool_reply_into_a_call() -> None:
    reader = lj.ReplyReader(["read_file"])
    raw = '{\n  "tool": "read_file",\n  "arguments": {\n    "path": "README.md"\n  }\n}'
    assert feed_in_pieces(reader, raw, 4) == []  # nothing is shown before the call is complete
    events, stop = reader.finish()
    assert stop == "tool_calls"
    started, delta, finished = events
    assert isinstance(started, ToolCallStarted) and isinstance(delta, ToolCallDelta)
    assert isinstance(finished, ToolCallFinished)
    assert started.id == delta.id == finished.id and started.id.startswith("call_")
    assert started.name == finished.name == "read_file"
    assert delta.arguments_delta == finished.arguments and json.loads(finished.arguments) == {"path": "README.md"}
    assert lj.ReplyReader(["read_file"]).finish()[0] == []  # an empty reply yields nothing
    other = lj.ReplyReader(["read_file"])
    other.feed(raw)
    assert other.finish()[0][0].id != started.id  # a fresh id per call


def test_reader_reports_a_truncated_reply() -> None:
    call = lj.ReplyReader(["read_file"])
    call.feed('{"tool": "read_file", "arguments": {"pa')
    events, stop = call.finish()
    assert stop == "max_tokens" and events == [TextDelta(lj.TRUNCATED_CALL)]
    answer = lj.ReplyReader(["read_file"])
    streamed = answer.feed('{"answer": "half a sent')
    assert [e.text for e in streamed] == ["half a sent"]
    assert answer.finish() == ([], "max_tokens")


async def test_request_body_never_sends_tools_or_tool_roles() -> None:
    history = [
        UserMessage("read a.txt"),
        AssistantMessage(tool_calls=[ToolCall("c1", "read_file", '{"path": "a.txt"}')]),
        ToolResultMessage("c1", "read_file", "hello"),
    ]
    async with httpx.AsyncClient() as client:
        provider = LocalProvider(client, status=STATUS, options=DETERMINISTIC)
    body = provider.request_body(request("", messages=history, system="Be brief.", tools=[READ_FILE],
                                         extra={"tool_choice": "auto", "parallel_tool_calls": False}))
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body
    assert {m["role"] for m in body["messages"]} == {"system", "user", "assistant"}
    assert body["messages"][0]["content"].startswith("Be brief.\n\n# Tools")
    assert body["response_format"]["type"] == "json_schema"
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["max_tokens"] == 24
    plain = provider.request_body(request("hi", tools=[READ_FILE], extra={"tool_choice": "none"}))
    assert "response_format" not in plain and plain["messages"] == [{"role": "user", "content": "hi"}]


# ---------------------------------------------------------------------------------------------------------------
# The real model
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime() -> Iterator[LocalRuntime]:
    """One runtime for the module (its own, not the process-wide one, so tests here can't leak into others)."""
    if not STATUS.available:
        pytest.skip(STATUS.message)
    rt = LocalRuntime(STATUS.model_path)  # type: ignore[arg-type]
    yield rt
    rt.close()


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient() as c:
        yield c


def provider_on(rt: LocalRuntime, client: httpx.AsyncClient, **kw: Any) -> LocalProvider:
    return LocalProvider(client, runtime=rt, status=STATUS, options=kw.pop("options", DETERMINISTIC), **kw)


class TestRealModel:
    pytestmark = needs_model

    async def test_text_streams(self, runtime: LocalRuntime, client: httpx.AsyncClient) -> None:
        notices: list[LoadProgress] = []
        provider = provider_on(runtime, client, progress=notices.append)
        events = await collect(provider, request("Write a Python function that adds two numbers."))
        texts = [e for e in events if isinstance(e, TextDelta)]
        assert len(texts) >= 3 and "".join(t.text for t in texts).strip()
        assert isinstance(events[-1], Finished) and events[-1].stop_reason in ("end_turn", "max_tokens")
        usage = [e for e in events if isinstance(e, Usage)]
        assert usage and 0 < usage[0].output_tokens <= 24
        assert events.index(usage[0]) > events.index(texts[-1])
        if notices:  # the first test to run loads the model and hears about it
            assert [n.stage for n in notices] == ["loading", "ready"]

    async def test_same_request_gives_the_same_text(self, runtime: LocalRuntime, client: httpx.AsyncClient) -> None:
        provider = provider_on(runtime, client)
        first = await collect(provider, request("Name three colors."))
        second = await collect(provider, request("Name three colors."))
        text = ["".join(e.text for e in run if isinstance(e, TextDelta)) for run in (first, second)]
        assert text[0] and text[0] == text[1]

    async def test_required_tool_call_parses(self, runtime: LocalRuntime, client: httpx.AsyncClient) -> None:
        provider = provider_on(runtime, client, options=LocalOptions(temperature=0.0, seed=7, max_tokens=64))
        req = request("Show me the contents of README.md", tools=[READ_FILE, WRITE_FILE],
                      extra={"tool_choice": {"type": "function", "function": {"name": "read_file"}}})
        events = await collect(provider, req)
        kinds = [type(e) for e in events]
        assert kinds == [ToolCallStarted, ToolCallDelta, ToolCallFinished, Usage, Finished]
        finished = events[2]
        assert finished.name == "read_file"
        arguments = json.loads(finished.arguments)
        assert isinstance(arguments, dict) and isinstance(arguments["path"], str)
        assert events[-1].stop_reason == "tool_calls"

    async def test_auto_choice_is_always_well_formed(self, runtime: LocalRuntime, client: httpx.AsyncClient) -> None:
        provider = provider_on(runtime, client, options=LocalOptions(temperature=0.0, seed=7, max_tokens=64))
        for prompt in ("Say hello", "Write 'hi' to the file a.txt", "Read setup.py"):
            events = await collect(provider, request(prompt, tools=[READ_FILE, WRITE_FILE]))
            assert isinstance(events[-1], Finished)
            calls = [e for e in events if isinstance(e, ToolCallFinished)]
            texts = [e for e in events if isinstance(e, TextDelta)]
            assert bool(calls) != bool(texts)  # either a call or text, never a mix or nothing
            for call in calls:
                spec = {"read_file": READ_FILE, "write_file": WRITE_FILE}[call.name]
                assert set(spec.parameters["required"]) <= set(json.loads(call.arguments))
                assert events[-1].stop_reason == "tool_calls"

    async def test_a_path_pattern_and_an_enum_hold_in_the_grammar(
        self, runtime: LocalRuntime, client: httpx.AsyncClient
    ) -> None:
        """The small-model profile's path rules (engine/turn/_small_model.workspace_paths) go into the reply's
        grammar as they are: the runtime must accept them and sample only what they admit. (A pattern whose
        character class took a quote let the model close the JSON string early: the runtime failed that reply.)"""
        import re

        from eca_notebook.engine.turn._small_model import WORKSPACE_PATH_PATTERN
        from eca_notebook.tools.fs import ReadFileTool

        def with_path(rule: dict[str, Any]) -> ToolSpec:  # the real tool's schema and description
            tool = ReadFileTool()
            properties = tool.parameters["properties"]
            assert isinstance(properties, dict) and isinstance(properties["path"], dict)
            params = {**tool.parameters, "properties": {**properties, "path": {**properties["path"], **rule}}}
            return ToolSpec(tool.name, tool.description, params)

        required = {"tool_choice": {"type": "function", "function": {"name": "read_file"}}}
        # sampled (temperature 1, a seed each), on the prompt that got "/n/d/a-1/a-2.txt" without the pattern
        prompt = "Read the file notes.txt and tell me the secret number."
        for seed in range(16):  # seed 14 made the quote-taking pattern fail
            provider = provider_on(runtime, client, options=LocalOptions(temperature=1.0, seed=seed, max_tokens=64))
            rules = [({"pattern": WORKSPACE_PATH_PATTERN}, re.compile(WORKSPACE_PATH_PATTERN).fullmatch)]
            if seed < 4:  # an enum is a plain alternation: a few samples show the runtime takes it
                rules.append(({"enum": ["notes.txt", "sub/b.md"]}, {"notes.txt", "sub/b.md"}.__contains__))
            for rule, admitted in rules:
                events = await collect(provider, request(prompt, system="You are a coding assistant.",
                                                         tools=[with_path(rule)], extra=required))
                finished = [e for e in events if isinstance(e, ToolCallFinished)]
                assert len(finished) == 1, events
                assert admitted(json.loads(finished[0].arguments)["path"]), (rule, finished[0].arguments)

    async def test_tool_results_render_in_the_models_template(
        self, runtime: LocalRuntime, client: httpx.AsyncClient
    ) -> None:
        provider = provider_on(runtime, client)
        history = [
            UserMessage("What is in notes.txt?"),
            AssistantMessage(tool_calls=[ToolCall("c1", "read_file", '{"path": "notes.txt"}')]),
            ToolResultMessage("c1", "read_file", "buy milk"),
        ]
        req = request("", messages=history, tools=[READ_FILE])
        body = provider.request_body(req)
        url = await runtime.ensure_started()
        rendered = await client.post(f"{url}/apply-template", json={"messages": body["messages"]},
                                     headers={"authorization": f"Bearer {runtime.api_key}"})
        rendered.raise_for_status()
        prompt = rendered.json()["prompt"]
        roles = [line.removeprefix("<|im_start|>") for line in prompt.splitlines() if line.startswith("<|im_start|>")]
        assert roles == ["system", "user", "assistant", "user", "assistant"]  # last: the generation prompt
        assert '{"tool": "read_file", "arguments": {"path": "notes.txt"}}' in prompt
        assert "Tool result (read_file):\nbuy milk" in prompt
        events = await collect(provider, req)  # and the model answers from there
        assert isinstance(events[-1], Finished)

    async def test_runtime_is_reused_across_requests_and_loops(
        self, runtime: LocalRuntime, client: httpx.AsyncClient
    ) -> None:
        provider = provider_on(runtime, client)
        await collect(provider, request("Hi"))
        loads, pid, url = runtime.load_count, runtime.pid, runtime.url
        notices: list[LoadProgress] = []
        again = provider_on(runtime, client, progress=notices.append)  # a second chat: same runtime
        await collect(again, request("Hello"))
        assert (runtime.load_count, runtime.pid, runtime.url) == (loads, pid, url) and loads >= 1
        assert notices == []  # nothing to load, nothing to announce

        def other_loop() -> str | None:  # e.g. the kernel's loop vs the server's: still the same runtime
            return asyncio.run(runtime.ensure_started())

        assert await asyncio.to_thread(other_loop) == url and runtime.load_count == loads

    async def test_back_to_back_requests_on_one_client(
        self, runtime: LocalRuntime, client: httpx.AsyncClient
    ) -> None:
        # Regression: llama.cpp drops some kept-alive connections after a streamed reply; reusing one failed
        # about one request in five with "Server disconnected without sending a response".
        provider = provider_on(runtime, client, options=LocalOptions(temperature=0.0, seed=7, max_tokens=3))
        for i in range(15):
            events = await collect(provider, request(f"Count to {i}"))
            assert isinstance(events[-1], Finished)

    async def test_a_crashed_runtime_is_restarted(self, runtime: LocalRuntime, client: httpx.AsyncClient) -> None:
        provider = provider_on(runtime, client)
        await runtime.ensure_started()
        loads, pid = runtime.load_count, runtime.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        while runtime.running:  # until the crash is visible (the process reaped)
            await asyncio.sleep(0.01)
        events = await collect(provider, request("Hi"))
        assert isinstance(events[-1], Finished)
        assert runtime.load_count == loads + 1 and runtime.pid not in (None, pid)


@pytest.mark.local
@pytest.mark.skipif(not STATUS.available, reason=STATUS.message)
async def test_aclose_leaves_no_port_process_or_thread() -> None:
    threads_before = {t.ident for t in threading.enumerate()}
    rt = LocalRuntime(STATUS.model_path)  # type: ignore[arg-type]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    tick_task = asyncio.create_task(ticker())
    try:
        urls = await asyncio.gather(rt.ensure_started(), rt.ensure_started())  # two chats start at once
        load_ticks = ticks
    finally:
        tick_task.cancel()
    assert urls[0] == urls[1] and rt.load_count == 1  # loaded once for both
    assert load_ticks >= 3  # the event loop kept running while the model loaded
    assert urlsplit(urls[0]).hostname == "127.0.0.1"
    pid = rt.pid
    assert pid is not None and alive(pid) and not refuses(urls[0])
    async with httpx.AsyncClient() as client:
        unauthorized = await client.get(f"{urls[0]}/v1/models")
    assert unauthorized.status_code == 401  # other local users can't use our server without the key

    await rt.aclose()

    assert refuses(urls[0])
    assert not alive(pid) and rt.pid is None and not rt.running and rt.url is None
    assert rt.exit_code == 0  # it stopped when asked, it wasn't killed
    assert {t.ident for t in threading.enumerate()} <= threads_before
    await rt.aclose()  # idempotent


@pytest.mark.local
@pytest.mark.skipif(not STATUS.available, reason=STATUS.message)
async def test_aclose_during_a_load_abandons_it() -> None:
    rt = LocalRuntime(STATUS.model_path)  # type: ignore[arg-type]
    notices: list[LoadProgress] = []
    start = asyncio.create_task(rt.ensure_started(notices.append))
    await asyncio.sleep(0)  # the start thread is spawning the child
    await rt.aclose()
    with pytest.raises(LocalRuntimeError):
        await start
    assert not rt.running and rt.pid is None and [n.stage for n in notices] == ["loading", "failed"]
    url = await rt.ensure_started()  # and it can start again afterwards
    assert rt.running and not refuses(url)
    await rt.aclose()
    assert refuses(url)


@pytest.mark.local
@pytest.mark.skipif(not STATUS.available, reason=STATUS.message)
async def test_process_wide_provider_and_shutdown() -> None:
    async with httpx.AsyncClient() as client:
        provider = create_local_provider(client, options=DETERMINISTIC)
        events = await collect(provider, request("Hi"))
        assert isinstance(events[-1], Finished)
        runtime = get_local_runtime()
        url, pid = runtime.url, runtime.pid
        assert url and pid
        await provider.aclose()
        assert runtime.running  # the provider doesn't own the shared runtime
        await shutdown_local_runtimes()
        assert refuses(url) and not alive(pid)
        await shutdown_local_runtimes()  # nothing running: a no-op


@pytest.mark.local
@pytest.mark.skipif(not STATUS.available, reason=STATUS.message)
async def test_aclose_interrupts_a_stream_in_flight() -> None:
    rt = LocalRuntime(STATUS.model_path)  # type: ignore[arg-type]
    async with httpx.AsyncClient() as client:
        provider = provider_on(rt, client, options=LocalOptions(temperature=0.0, seed=7, max_tokens=4000))
        got_text = asyncio.Event()

        async def consume() -> list[Any]:
            events = []
            async for event in provider.stream(request("Tell me a very long story.", extra={"ignore_eos": True})):
                events.append(event)
                got_text.set()
            return events

        task = asyncio.create_task(consume())
        await got_text.wait()
        url, pid = rt.url, rt.pid
        await rt.aclose()
        with pytest.raises(ProviderError) as info:
            await task
    assert info.value.retryable
    assert rt.exit_code == 0  # the child stopped when asked; it didn't have to be killed
    assert refuses(url) and not alive(pid) and not rt.running  # and nothing restarted it


ORPHAN_SCRIPT = """
import asyncio, sys
from eca_notebook.providers.local import LocalRuntime

async def main():
    runtime = LocalRuntime(sys.argv[1])
    await runtime.ensure_started()
    print(runtime.pid, runtime.url, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


@pytest.mark.local
@pytest.mark.skipif(not STATUS.available, reason=STATUS.message)
async def test_the_runtime_never_outlives_its_parent() -> None:
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ORPHAN_SCRIPT, STATUS.model_path or "", stdout=asyncio.subprocess.PIPE
    )
    assert parent.stdout is not None
    line = (await parent.stdout.readline()).decode().split()
    child_pid, url = int(line[0]), line[1]
    assert alive(child_pid) and not refuses(url)
    parent.kill()  # no aclose, no atexit: the parent just dies
    await parent.wait()
    while alive(child_pid):  # the child sees its stdin close and exits (pytest's timeout bounds this)
        await asyncio.sleep(0.02)
    assert refuses(url)


def test_a_long_history_keeps_its_newest_turns_within_the_window() -> None:
    history = []
    for i in range(40):
        history += [UserMessage(f"question {i} " + "x" * 900), AssistantMessage(text=f"answer {i} " + "y" * 900)]
    history.append(UserMessage("the newest question"))
    kept = lj.fit_history(history, 10_000)
    assert sum(len(getattr(m, "text", "")) for m in kept) <= 10_000 + 200
    assert isinstance(kept[0], UserMessage) and kept[0].text.startswith("(Earlier messages of this chat were left out")
    assert kept[-1].text == "the newest question"
    assert "answer 39" in kept[-2].text
    assert lj.fit_history(history[:3], 10_000) == history[:3]  # short chats are sent whole
    # the request body the runtime gets stays within the window however long the chat
    provider = LocalProvider(httpx.AsyncClient(), status=local_model_status())
    body = provider.request_body(ProviderRequest(model="m", messages=history * 5))
    assert sum(len(m["content"]) for m in body["messages"]) < local.HISTORY_CHARS + 500
