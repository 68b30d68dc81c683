"""Long chats and the context window: estimates, trimming, overflow errors (unit), and a chat driven past a model's
window through a real connection and the scripted LLM server — it compacts, says so, and goes on."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.config import ModelInfo
from eca_notebook.engine.turn._window import (
    COMPACT_PREFIX,
    ContextFull,
    ContextWindow,
    clip_messages,
    estimate_messages,
    estimate_request,
    estimate_text,
    is_overflow,
    overflow_numbers,
    shrink_messages,
    tail_start,
    trim_tool_outputs,
)
from eca_notebook.providers.base import (
    AssistantMessage,
    Message,
    ProviderError,
    ProviderRequest,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from eca_notebook.providers.local import HISTORY_CHARS
from eca_notebook.rpc import Endpoint
from eca_notebook.serving import ServerConnection
from eca_notebook.testing.llm_server import Error, Reply, ScriptedLLMServer, Text, Usage
from eca_notebook.testing.llm_server import ToolCall as ScriptedCall
from eca_notebook.transports.memory import memory_pair

from ...serving.test_server_connection import Harness

# -- estimates ---------------------------------------------------------------------------------------------------


def test_estimates_count_about_four_characters_per_token():
    assert estimate_text("") == 0
    assert estimate_text("x" * 400) == 100
    assert estimate_text("x" * 300, chars_per_token=3) == 100
    history: list[Message] = [UserMessage("x" * 400), AssistantMessage("y" * 40, tool_calls=[ToolCall("1", "f", "{}")]),
                              ToolResultMessage("1", "f", "z" * 800)]
    assert 100 + 11 + 201 <= estimate_messages(history) <= 100 + 11 + 201 + 3 * 8
    tool = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    bare = estimate_request(ProviderRequest("m", history))
    assert estimate_request(ProviderRequest("m", history, system="s" * 4000, tools=[tool])) > bare + 1000 + 10


def test_the_window_is_the_context_minus_the_output_and_learns_from_usage():
    model = ModelInfo("p/m", "p", "m", context_limit=10_000)
    window = ContextWindow(model, 2_000)
    assert window.allowance() == 8_000 and window.output_tokens == 2_000
    request = ProviderRequest("m", [UserMessage("x" * 4_000)])
    assert window.estimate(request) == window.raw(request) == 1_004
    window.measured(1_004, 1_506)  # code and JSON: more tokens per character than prose
    assert window.ratio == pytest.approx(1.5) and window.estimate(request) == 1_506
    window.measured(1_004, 500)  # a provider that shortened the history itself never makes the estimate optimistic
    assert window.ratio == 1.0
    window.measured(1_004, 100_000)
    assert window.ratio == 3.0  # capped
    assert ContextWindow(ModelInfo("p/x", "p", "x"), 2_000).allowance() is None  # unknown window
    small = ModelInfo("local/s", "local", "s", context_limit=8192, compact=True)
    assert ContextWindow(small, 1024).chars_per_token == 3.0  # a small model's tokenizer is coarser
    # the embedded model's provider drops old messages itself past HISTORY_CHARS: compacting comes before that
    local = ContextWindow(small, 1024)
    assert local.trigger * (local.allowance() or 0) * local.chars_per_token < HISTORY_CHARS


def test_the_calibration_stays_with_the_chat_for_its_model():
    from eca_notebook.engine.chats._chat import Chat

    chat = Chat(id="c")
    model = ModelInfo("p/m", "p", "m", context_limit=10_000)
    ContextWindow(model, 1_000, chat).measured(1_000, 1_300)
    assert ContextWindow(model, 1_000, chat).ratio == pytest.approx(1.3)  # the next turn starts calibrated
    assert ContextWindow(ModelInfo("p/o", "p", "o"), 1_000, chat).ratio == 1.0  # another model starts afresh


# -- overflow errors ---------------------------------------------------------------------------------------------

OVERFLOWS = [
    ProviderError("openai: HTTP 400: This model's maximum context length is 128000 tokens. However, your messages "
                  "resulted in 130512 tokens. Please reduce the length of the messages.", status=400,
                  code="context_length_exceeded"),
    ProviderError("openai: HTTP 400: Your input exceeds the context window of this model.", status=400),
    ProviderError("openai reported an error: something", code="context_length_exceeded"),
    ProviderError("anthropic: HTTP 400: prompt is too long: 210345 tokens > 200000 maximum", status=400),
    ProviderError("anthropic: HTTP 400: input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, "
                  "decrease input length or `max_tokens` and try again", status=400),
    ProviderError("local-llama: HTTP 400: the request exceeds the available context size, try increasing it",
                  status=400),
    ProviderError("ollama reported an error: input length exceeds the context length"),
    ProviderError("my-vllm: HTTP 400: This model's maximum context length is 4096 tokens. However, you requested "
                  "5000 tokens (3976 in the messages, 1024 in the completion).", status=400),
    ProviderError("proxy: HTTP 413: Request Entity Too Large", status=413),
]
NOT_OVERFLOWS = [
    ProviderError("openai: rate limited (HTTP 429): Request too large for gpt-4o in organization org-x on tokens per "
                  "min (TPM): Limit 30000, Requested 50000.", status=429, retryable=True),
    ProviderError("openai: authentication failed (HTTP 401): invalid key", status=401),
    ProviderError("openai: HTTP 400: max_tokens is too large: 100000. This model supports at most 16384 completion "
                  "tokens.", status=400),
    ProviderError("cannot connect to x at http://127.0.0.1:9: connection refused", retryable=True),
    ProviderError("openai: HTTP 500: internal error", status=500, retryable=True),
]


@pytest.mark.parametrize("error", OVERFLOWS, ids=lambda e: e.message[:40])
def test_overflow_errors_are_recognised_in_every_api_s_words(error: ProviderError):
    assert is_overflow(error)


@pytest.mark.parametrize("error", NOT_OVERFLOWS, ids=lambda e: e.message[:40])
def test_other_errors_are_not_overflows(error: ProviderError):
    assert not is_overflow(error)


def test_the_numbers_an_overflow_error_names():
    assert overflow_numbers(OVERFLOWS[0].message) == (128_000, 130_512)
    assert overflow_numbers(OVERFLOWS[3].message) == (200_000, 210_345)
    assert overflow_numbers(OVERFLOWS[4].message) == (200_000, 195_000)
    assert overflow_numbers(OVERFLOWS[7].message) == (4096, 3976)
    assert overflow_numbers('{"n_prompt_tokens": 9000, "n_ctx": 8192}') == (8192, 9000)
    assert overflow_numbers(OVERFLOWS[5].message) == (None, None)


def test_an_overflow_error_teaches_the_window():
    window = ContextWindow(ModelInfo("p/m", "p", "m"), 8192)
    window.learn(OVERFLOWS[7], 3_000)
    assert window.context == 4096 and window.ratio == pytest.approx(3976 / 3000)
    assert window.output_tokens == 2048  # 8192 cannot fit a 4096 window: half of it
    guessed = ContextWindow(ModelInfo("p/n", "p", "n"), 1_000)
    guessed.learn(OVERFLOWS[5], 10_000)  # no numbers: somewhat less than what was sent
    assert guessed.context is not None and guessed.context < 11_000
    configured = ContextWindow(ModelInfo("p/o", "p", "o", context_limit=100_000), 1_000)
    configured.learn(OVERFLOWS[1], 50_000)  # the estimate was optimistic: it was really over the allowance
    assert configured.estimate(ProviderRequest("m", [], system="x" * 200_000)) > 99_000


def test_context_full_names_the_window():
    assert "context window of 8,192 tokens" in str(ContextFull(8192))
    assert "/compact" in str(ContextFull(None)) and "None" not in str(ContextFull(None))


# -- making a history smaller ------------------------------------------------------------------------------------


def tool_round(n: int, size: int, name: str = "eca__read_file") -> list[Message]:
    return [AssistantMessage(tool_calls=[ToolCall(f"c{n}", name, json.dumps({"path": f"f{n}"}))]),
            ToolResultMessage(f"c{n}", name, f"{n}" * size)]


def test_the_oldest_tool_outputs_are_trimmed_first_and_the_latest_kept():
    history: list[Message] = [UserMessage("read them all"), *tool_round(1, 4000), *tool_round(2, 4000),
                              *tool_round(3, 40), *tool_round(4, 4000), *tool_round(5, 4000)]
    original = list(history)
    trimmed, count = trim_tool_outputs(history, save_tokens=500)
    assert count == 1 and history == original  # a new list; the history given is untouched
    outputs = [m.output for m in trimmed if isinstance(m, ToolResultMessage)]
    assert outputs[0] == "[output of read_file trimmed to save context]"
    assert outputs[1:] == [m.output for m in original if isinstance(m, ToolResultMessage)][1:]
    everything, count = trim_tool_outputs(history, save_tokens=10**9)
    outputs = [m.output for m in everything if isinstance(m, ToolResultMessage)]
    # 1 and 2 trimmed; 3 is too short to bother; 4 is one of the latest two; 5 the model has not seen yet
    assert count == 2 and outputs[2:] == ["3" * 40, "4" * 4000, "5" * 4000]
    again, count = trim_tool_outputs(everything, save_tokens=10**9)
    assert count == 0 and again == everything  # never trimmed twice


def test_an_old_tool_results_images_are_trimmed_with_its_output():
    from eca_notebook._images import ImagePart

    plot = ImagePart("image/png", b"\x89PNG plot", 640, 480, "cell 1 image 1")
    history: list[Message] = [UserMessage("plot it"), *tool_round(1, 10), *tool_round(2, 4000), *tool_round(3, 4000),
                              *tool_round(4, 10)]
    history[2] = dataclasses.replace(history[2], images=[plot])  # a short output with a plot: worth trimming
    trimmed, count = trim_tool_outputs(history, save_tokens=1000)
    assert count == 1
    first = trimmed[2]
    assert isinstance(first, ToolResultMessage) and first.images == [] and "trimmed" in first.output


def test_a_compaction_keeps_the_recent_messages_and_never_splits_a_call_from_its_result():
    history: list[Message] = [UserMessage("first"), AssistantMessage("one"), UserMessage("second"),
                              *tool_round(1, 4000), *tool_round(2, 400), AssistantMessage("done")]
    start = tail_start(history, tail_tokens=200)
    assert not isinstance(history[start], ToolResultMessage)
    assert history[start:] == [*tool_round(2, 400), AssistantMessage("done")]
    assert tail_start(history, tail_tokens=10**6) == 1  # everything fits, yet something is summarised
    assert tail_start(history, tail_tokens=1) == len(history) - 1  # at least the last message is kept
    assert tail_start([UserMessage("only")], tail_tokens=1) == 0  # nothing before it: nothing to summarise


def test_long_texts_are_shortened_keeping_their_start_and_end():
    text = "START " + "m" * 20_000 + " END"
    clipped = clip_messages([UserMessage("short"), UserMessage(text)], target_tokens=1000)
    assert clipped[0] == UserMessage("short")
    long = clipped[1]
    assert isinstance(long, UserMessage) and long.text.startswith("START ") and long.text.endswith(" END")
    assert "characters cut to fit the context window" in long.text
    assert estimate_messages(clipped) <= 1000


def test_a_history_shrinks_to_any_size_for_one_request():
    history: list[Message] = [UserMessage("a" * 8000), AssistantMessage("b" * 8000), *tool_round(1, 8000),
                              UserMessage("c" * 800), AssistantMessage("d" * 800), UserMessage("Summarize")]
    shrunk, omitted = shrink_messages(history, target_tokens=1200)
    assert estimate_messages(shrunk) <= 1200 and shrunk[-1] == UserMessage("Summarize") and omitted == 0
    # the tool output trimmed, the two long texts shortened to a quarter of the target each: everything is there
    assert [type(m) for m in shrunk] == [type(m) for m in history]
    assert shrunk[3] == ToolResultMessage("c1", "eca__read_file", "[output of read_file trimmed to save context]")
    assert shrunk[0].text.startswith("aaa") and len(shrunk[0].text) < 1300  # type: ignore[union-attr]
    tight, omitted = shrink_messages(history, target_tokens=700)  # too little even for that: the oldest go
    assert estimate_messages(tight) <= 700 and omitted >= 1 and tight[-1] == UserMessage("Summarize")
    assert isinstance(tight[0], UserMessage) and "left out" in tight[0].text
    same, omitted = shrink_messages(history, target_tokens=10**6)
    assert same == history and omitted == 0


# -- through a real connection -----------------------------------------------------------------------------------

SUMMARY_REQUEST = "Summarize our conversation so far"  # what only a summary request contains


@contextlib.asynccontextmanager
async def session(tmp_path: Path, llm: ScriptedLLMServer, models: dict[str, Any], api: str = "openai-chat"):
    """An engine behind a real connection (in-memory streams), with provider ``p`` serving *models*."""
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "OLLAMA_API_URL": "http://127.0.0.1:9"}
    options = {"providers": {"p": {"api": api, "url": llm.url, "key": "k-test-12345678", "models": models}}}
    server_side, client_side = memory_pair()
    connection = ServerConnection(server_side, lambda params: Engine(EngineOptions(
        workspace_folders=[tmp_path], initialization_options=options, env=env)))
    client = Endpoint(client_side, name="test-client")
    harness = Harness(client)
    for method in ("chat/contentReceived", "chat/statusChanged", "tool/serverUpdated"):
        client.register(method, lambda params, _m=method: harness.record(_m, params))
    tasks = [asyncio.create_task(connection.run()), asyncio.create_task(client.run())]
    await client.request("initialize", {"processId": None, "capabilities": {},
                                        "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}]})
    await client.notify("initialized")
    await harness.until(lambda m, p: m == "tool/serverUpdated")
    try:
        yield harness
    finally:
        await client.close()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)


async def prompt(harness: Harness, message: str, model: str, chat_id: str = "c") -> list[dict[str, Any]]:
    """Send a prompt and wait for its end; the contents it produced."""
    start = len(harness.contents(chat_id))
    await harness.client.request("chat/prompt", {"chatId": chat_id, "message": message, "model": model})
    finished = {"type": "progress", "state": "finished", "text": ""}
    await harness.until(lambda m, p: finished in harness.contents(chat_id)[start:], timeout=120)
    return harness.contents(chat_id)[start:]


def notes(contents: list[dict[str, Any]]) -> list[str]:
    return [c["text"] for c in contents if c["type"] == "text" and "text" in c and c["text"].strip()]


def sent_chars(request: Any) -> int:
    """The characters a Chat Completions request sends: messages and tool schemas."""
    body = request.body
    messages = sum(len(json.dumps(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or ""))
                   for m in body["messages"])
    return messages + len(json.dumps(body.get("tools") or []))


def is_summary(request: Any) -> bool:
    return SUMMARY_REQUEST in json.dumps(request.body)


def completions(llm: ScriptedLLMServer) -> list[Any]:
    return [r for r in llm.requests if r.method == "POST"]


async def test_a_tool_loop_past_the_window_compacts_then_trims_and_goes_on(tmp_path: Path,
                                                                          llm: ScriptedLLMServer):
    # a long prompt, then eight files to read in one prompt: together about twice the model's window
    window, allowance = 24_000, 22_000
    for n in range(8):
        (tmp_path / f"part{n}.txt").write_text(f"line {n} of the data\n" * 700)  # 14k characters, ~3.5k tokens
    calls = [Reply([ScriptedCall(f"r{n}", "eca__read_file", json.dumps({"path": f"part{n}.txt"}))]) for n in range(8)]
    llm.enqueue(*calls, Reply.text("All eight parts read."))
    llm.enqueue_when(SUMMARY_REQUEST, *[Reply.text(f"SUMMARY {n}: the user wants the parts read; parts so far read.")
                                        for n in range(6)])
    request = "Read part0.txt to part7.txt one by one, then compare them with this: " + "some data. " * 2200
    async with session(tmp_path, llm, {"m": {"contextLimit": window, "outputLimit": 2000}}) as harness:
        contents = await prompt(harness, request, "p/m")

    said = "\n".join(notes(contents))
    assert "All eight parts read." in said and "Error" not in said
    assert "Context was nearly full: compacted the earlier conversation" in said
    assert "Context nearly full: trimmed the output of" in said
    requests = completions(llm)
    summaries = [i for i, r in enumerate(requests) if is_summary(r)]
    assert summaries, "a summary request reached the model"
    assert len(requests) == 9 + len(summaries)  # every scripted round was asked for, nothing failed
    assert all(sent_chars(r) / 4 < allowance for r in requests)  # (unmanaged, the last would be ~37k tokens)
    after = requests[summaries[0] + 1]  # the turn goes on from the summary, and its next request is small
    assert not is_summary(after) and COMPACT_PREFIX in json.dumps(after.body)
    assert sent_chars(after) / 4 < 0.7 * allowance
    assert "some data. some data." not in json.dumps(after.body)  # the long prompt is in the summary now
    # the loop went on: the last request ends with the latest call's result, earlier outputs trimmed
    last = requests[-1].body["messages"]
    assert last[-1]["role"] == "tool" and "line 7 of the data" in last[-1]["content"]
    assert any("trimmed to save context" in (m.get("content") or "") for m in last if m["role"] == "tool")


async def test_a_long_chat_with_a_small_model_leaves_old_turns_out_and_continues(tmp_path: Path,
                                                                                llm: ScriptedLLMServer):
    """A small model (``compact``: the embedded model's profile) with an 8k window is never compacted: each request
    keeps to SMALL_MODEL_PROMPT_TOKENS, the oldest turns left out (silently) and a prompt alone over the budget
    shortened, start and end kept."""
    from eca_notebook.engine.turn._window import SMALL_MODEL_PROMPT_TOKENS

    llm.enqueue(*[Reply.text(f"Answer {n}: noted.") for n in range(6)])
    async with session(tmp_path, llm, {"tiny": {"contextLimit": 8192, "outputLimit": 1024, "compact": True}}) as h:
        for n in range(6):
            contents = await prompt(h, f"Note {n}: " + "the data has many values. " * 250, "p/tiny")  # ~6.5k chars
            assert f"Answer {n}: noted." in "".join(notes(contents))
        said = "\n".join(t for t in notes(h.contents("c")))
    assert "compact" not in said and "context" not in said.lower() and "Error" not in said
    requests = completions(llm)
    assert len(requests) == 6 and not any(is_summary(r) for r in requests)
    assert all(sent_chars(r) / 3 <= SMALL_MODEL_PROMPT_TOKENS for r in requests)
    last = requests[-1].body["messages"]
    assert last[-1]["content"].startswith("Note 5") and "cut to fit the context window" in last[-1]["content"]
    assert "Note 0" not in json.dumps(last) and COMPACT_PREFIX not in json.dumps(last)


OVERFLOW_REPLIES = {
    "openai-chat": Error(400, "This model's maximum context length is 16000 tokens. However, your messages resulted "
                              "in 19000 tokens. Please reduce the length of the messages.",
                         code="context_length_exceeded"),
    "anthropic": Error(400, "prompt is too long: 19000 tokens > 16000 maximum"),
}


@pytest.mark.parametrize("api", sorted(OVERFLOW_REPLIES))
async def test_a_provider_overflow_error_compacts_and_retries(tmp_path: Path, llm: ScriptedLLMServer, api: str):
    llm.enqueue(Reply.text("Long answer one."), Reply.text("Long answer two."), Reply([OVERFLOW_REPLIES[api]]),
                Reply([Text("The answer after compacting."), Usage(3000, 10)]))
    llm.enqueue_when(SUMMARY_REQUEST, Reply.text("SUMMARY: two long notes about the data."))
    async with session(tmp_path, llm, {"m": {}}, api=api) as harness:  # no window configured: only the error says
        await prompt(harness, "First: " + "facts about the data. " * 1500, "p/m")
        await prompt(harness, "Second: " + "more facts about the data. " * 1500, "p/m")
        contents = await prompt(harness, "And now?", "p/m")
    said = "\n".join(notes(contents))
    assert "The answer after compacting." in said
    assert "did not fit the model's context window: compacted the earlier conversation" in said
    assert "maximum" not in said and "{" not in said and "Error" not in said  # never the provider's own words
    requests = completions(llm)
    assert [is_summary(r) for r in requests] == [False, False, False, True, False]
    retried = json.dumps(requests[-1].body)
    assert "SUMMARY: two long notes" in retried and "facts about the data. facts" not in retried


async def test_when_even_the_retry_does_not_fit_the_chat_says_so_and_keeps_its_history(tmp_path: Path,
                                                                                       llm: ScriptedLLMServer):
    overflow = Reply([OVERFLOW_REPLIES["openai-chat"]])
    llm.enqueue(Reply.text("Noted."), overflow, overflow, Reply.text("Still here."))
    llm.enqueue_when(SUMMARY_REQUEST, Reply.text("SUMMARY: a long note."))
    async with session(tmp_path, llm, {"m": {}}) as harness:
        await prompt(harness, "Note: " + "facts about the data. " * 1500, "p/m")
        contents = await prompt(harness, "And now?", "p/m")
        said = "\n".join(notes(contents))
        assert "The conversation no longer fits the model's context window of 16,000 tokens" in said
        assert "maximum context length" not in said and "{" not in said and "Error" not in said
        contents = await prompt(harness, "Hello?", "p/m")  # the chat goes on
        assert "Still here." in "".join(notes(contents))
    last = completions(llm)[-1].body["messages"]
    assert [m["content"] for m in last if m["role"] == "user"][-2:] == ["And now?", "Hello?"]


async def test_compact_of_a_history_larger_than_the_window_still_summarises_it(tmp_path: Path,
                                                                              llm: ScriptedLLMServer):
    """``/compact`` itself is never compacted: its request is shortened to fit (here after the provider's error)."""
    llm.enqueue(Reply.text("Noted."), Reply.text("Fine."))
    llm.enqueue_when(SUMMARY_REQUEST, Reply([Error(400, "This model's maximum context length is 8000 tokens. However,"
                                                        " your messages resulted in 20000 tokens.",
                                                   code="context_length_exceeded")]),
                     Reply.text("SUMMARY: a huge note about the data."))
    async with session(tmp_path, llm, {"m": {}}) as harness:
        await prompt(harness, "START " + "facts about the data. " * 2700 + " END", "p/m")
        contents = await prompt(harness, "/compact", "p/m")
        said = "\n".join(notes(contents))
        assert "Chat compacted" in said and "Error" not in said and "maximum" not in said
        await prompt(harness, "Next?", "p/m")
    requests = completions(llm)
    assert [is_summary(r) for r in requests] == [False, True, True, False]
    retried = json.dumps(requests[2].body)
    assert "characters cut to fit the context window" in retried and "START" in retried and "END" in retried
    assert sent_chars(requests[2]) < sent_chars(requests[1]) / 4
    users = [m["content"] for m in requests[-1].body["messages"] if m["role"] == "user"]
    assert len(users) == 2 and "SUMMARY: a huge note" in users[0] and users[1] == "Next?"


def test_an_image_counts_about_1600_tokens_in_the_estimate():
    """A screenshot is not free: 20 of them are ~32k tokens, which a small window must see coming."""
    from eca_notebook._images import ImagePart
    from eca_notebook.providers.base import ToolResultMessage, UserMessage

    image = ImagePart("image/png", b"\x89PNG fake bytes", 800, 600, "shot.png")
    plain = estimate_messages([UserMessage("look"), ToolResultMessage("c1", "read_file", "ok")])
    with_images = estimate_messages([UserMessage("look", images=[image, image]),
                                     ToolResultMessage("c1", "read_file", "ok", images=[image])])
    assert with_images - plain == 3 * 1600
