"""SyncEcaClient and prompt(): blocking calls from plain code and from inside a running event loop; clean close."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import SyncEcaClient, prompt, results_table
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Stall, Text, Usage


def client_threads() -> list[threading.Thread]:
    """Threads a client may own: its loop thread and its loop's executor workers (asyncio.to_thread)."""
    return [t for t in threading.enumerate()
            if t.name.startswith("eca-client-loop") or t.name.startswith("asyncio_")]


def test_sync_client_from_plain_code(workspace: Path, env, config, llm: ScriptedLLMServer):
    before = set(client_threads())
    llm.enqueue(Reply([Text("sync "), Text("answer"), Usage(4, 2)]))
    with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:
        assert eca.models == ["fake/m1", "fake/m2"] and eca.default_model == "fake/m1"
        assert eca.engine is not None and eca.welcome_message
        result = eca.prompt("hello")
        assert result.text == "sync answer" and result.usage["sessionTokens"] == 6
        assert [c["id"] for c in eca.list_chats()] == [result.chat_id]
        replay = eca.open_chat(result.chat_id)
        assert "".join(i.content.text for i in replay if i.role == "assistant" and i.content.type == "text") == \
            "sync answer"
        assert "doctor" in {c["name"] for c in eca.query_commands()}
        eca.delete(result.chat_id)
        assert eca.list_chats() == []
        assert eca.request("chat/list", {}) == {"chats": []}
    assert eca.closed
    assert set(client_threads()) - before == set()  # loop thread and executor workers are gone
    with pytest.raises(RuntimeError):
        eca.prompt("after close")
    eca.close()  # idempotent


def test_sync_stream_is_a_blocking_iterator(workspace: Path, env, config, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("a"), Text("b"), Text("c")]))
    with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:
        stream = eca.stream("letters")
        assert stream.chat_id
        texts = [i.content.text for i in stream if i.role == "assistant" and i.content.type == "text"]
        assert texts == ["a", "b", "c"]
        assert stream.result is not None and stream.result.text == "abc"


def test_sync_stream_close_stops_the_prompt(workspace: Path, env, config, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("first"), Stall(60)]))
    with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:
        with eca.stream("long") as stream:
            for item in stream:
                if item.role == "assistant" and item.content.type == "text":
                    break
        assert stream.result is not None and stream.result.stopped and stream.result.text == "first"
    assert llm.wait_for_disconnect(5.0)


def test_sync_batch_and_table(workspace: Path, env, config, llm: ScriptedLLMServer):
    llm.enqueue(*[Reply([Text("same | answer"), Usage(1, 1)]) for _ in range(3)])
    with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:
        results = eca.batch(["q1", "q2", "q3"], concurrency=3)
    assert [r.prompt for r in results] == ["q1", "q2", "q3"] and all(r.ok for r in results)
    table = results_table(results)
    lines = table.splitlines()
    assert len(lines) == 5 and lines[0].startswith("| # | prompt | model |")
    assert "same \\| answer" in lines[2] and lines[2].endswith("| 2 | ok |")


def test_sync_client_inside_a_running_event_loop(workspace: Path, env, config, llm: ScriptedLLMServer):
    """As in a Jupyter cell: blocking calls while the caller's own loop is running, without nest_asyncio."""
    llm.enqueue(Reply.text("from inside"), Reply.text("one-shot"))

    async def main() -> tuple[str, str, bool]:
        caller_loop = asyncio.get_running_loop()
        with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:
            assert eca.loop is not caller_loop
            text = eca.prompt("hi").text
        other = prompt("again", workspace=workspace, config=config, env=env).text
        return text, other, caller_loop.is_running()

    text, other, was_running = asyncio.run(main())
    assert (text, other, was_running) == ("from inside", "one-shot", True)


def test_subscribe_runs_on_the_client_thread_and_blocking_there_is_refused(workspace: Path, env, config,
                                                                           llm: ScriptedLLMServer):
    seen: list[tuple[str, str]] = []
    errors: list[Exception] = []
    with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:

        def callback(method: str, params: Any) -> None:
            seen.append((method, threading.current_thread().name))
            if method == "chat/opened":
                try:
                    eca.list_chats()
                except RuntimeError as exc:
                    errors.append(exc)

        unsubscribe = eca.subscribe(callback)
        llm.enqueue(Reply.text("x"), Reply.text("y"))
        eca.prompt("x")
        unsubscribe()
        eca.list_chats()  # a round trip on the loop: the unsubscribe has run
        count = len(seen)
        eca.prompt("y")
    assert seen and {name for _, name in seen} == {eca._thread.name}
    assert len(seen) == count
    assert len(errors) == 1 and "deadlock" in str(errors[0])


def test_one_shot_prompt(workspace: Path, env, config, llm: ScriptedLLMServer):
    before = set(client_threads())
    llm.enqueue(Reply.text("quick"))
    result = prompt("quick question", workspace=workspace, config=config, env=env, model="fake/m2")
    assert result.text == "quick" and result.model == "fake/m2"
    assert llm.requests[-1].body["model"] == "m2"
    assert set(client_threads()) - before == set()


def test_start_failure_leaves_no_thread(workspace: Path, env):
    before = set(client_threads())
    with pytest.raises(TimeoutError):
        SyncEcaClient(workspace=workspace, env=env, start_timeout=0.000001)
    assert set(client_threads()) - before == set()


def test_interrupting_a_blocking_prompt_stops_it(workspace: Path, env, config, llm: ScriptedLLMServer,
                                                  request: pytest.FixtureRequest):
    """Ctrl-C / "interrupt kernel" while prompt() blocks: KeyboardInterrupt for the caller, the prompt is stopped."""
    import signal

    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    assert main is not None
    llm.enqueue(Reply([Text("x"), Stall(60)]), Reply.text("after"))
    # Python leaves SIGINT ignored when it starts ignored (a shell's background job, e.g. `make test &`): Ctrl-C is
    # what is tested here, so give this test the handler an interactive Python has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    with SyncEcaClient(workspace=workspace, config=config, env=env) as eca:
        statuses: list[str] = []
        sent = threading.Event()

        def on_message(method: str, params: Any) -> None:
            if method == "chat/statusChanged":
                statuses.append(params["status"])
            if method == "chat/contentReceived" and params["role"] == "assistant" and not sent.is_set():
                sent.set()
                signal.pthread_kill(main, signal.SIGINT)

        eca.subscribe(on_message)
        try:
            result = eca.prompt("long", chat_id="interrupted")
        except KeyboardInterrupt:
            pass
        else:  # say what happened instead (the reply stalls for 60 s: only an interrupt ends it sooner)
            pytest.fail(f"prompt() returned without KeyboardInterrupt: {result!r}; signal sent: {sent.is_set()}; "
                        f"statuses {statuses}")
        assert llm.wait_for_disconnect(5.0)  # the model's stream was closed: the prompt was stopped
        assert eca.prompt("again", chat_id="interrupted").text == "after"
        assert "stopping" in statuses
