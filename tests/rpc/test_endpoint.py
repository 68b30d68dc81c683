"""The JSON-RPC endpoint over an in-memory pair: dispatch, errors with exact codes and ids, concurrency, shutdown.

Two styles: endpoint ↔ endpoint (both directions through the public API), and endpoint ↔ raw stream (we write
arbitrary JSON, even invalid, and read exactly what went on the wire).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eca_notebook.protocol.errors import (
    CONNECTION_LOST,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
    RpcError,
)
from eca_notebook.rpc import Endpoint
from eca_notebook.transports import MemoryStream, memory_pair

GUARD = 30  # seconds: only a guard against hangs, never asserted on


async def recv(stream: MemoryStream) -> Any:
    return await asyncio.wait_for(stream.read(), GUARD)


async def call(peer: MemoryStream, id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    await peer.write(message)
    return await recv(peer)


async def assert_still_serving(peer: MemoryStream) -> None:
    """The next thing on the wire is the answer to a fresh ping: nothing else was sent before it."""
    assert await call(peer, "still-alive", "ping") == {"jsonrpc": "2.0", "id": "still-alive", "result": "pong"}


class PromptParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    chat_id: str = Field(alias="chatId")
    count: int = 1

    @field_validator("chat_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("chatId must not be blank")
        return value


class PromptResult(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    chat_id: str = Field(alias="chatId")
    model: str | None = None


def parse(method: str, params: Any) -> Any:
    return PromptParams.model_validate(params) if method == "typed" else params


class Harness:
    def __init__(self) -> None:
        self.stream, self.peer = memory_pair()
        self.endpoint = Endpoint(self.stream, name="server", params_parser=parse)
        self.seen: list[Any] = []
        e = self.endpoint
        e.register("ping", lambda params: "pong")
        e.register("echo", self.echo)
        e.register("none", lambda params: None)
        e.register("typed", self.typed)
        e.register("note", self.seen.append)
        e.register("boom", self.boom)
        e.register("fail", self.fail)
        e.register("unserializable", lambda params: {"x": object()})

    async def echo(self, params: Any) -> Any:
        await asyncio.sleep(0)
        return params

    def typed(self, params: PromptParams) -> PromptResult:
        return PromptResult(chat_id=params.chat_id)

    def boom(self, params: Any) -> None:
        raise ValueError("kaboom: secret-path/x.py")

    def fail(self, params: Any) -> None:
        raise RpcError(-31900, "Session not found", {"sessionId": "s1"})


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = Harness()
    task = asyncio.create_task(harness.endpoint.run())
    yield harness
    await harness.peer.close()
    await asyncio.wait_for(task, GUARD)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Endpoint, Endpoint]]:
    a, b = memory_pair()
    server, client = Endpoint(a, name="server"), Endpoint(b, name="client")
    tasks = [asyncio.create_task(server.run()), asyncio.create_task(client.run())]
    yield server, client
    await client.close()
    await asyncio.wait_for(asyncio.gather(*tasks), GUARD)


# -- requests and notifications ---------------------------------------------------------------------------------------


async def test_requests_both_ways(pair):
    server, client = pair
    server.register("add", lambda p: p["a"] + p["b"])

    @client.method("editor/ask")
    async def ask(params: Any) -> dict[str, Any]:
        return {"answer": params[0] * 2}

    assert await client.request("add", {"a": 2, "b": 3}) == 5
    assert await server.request("editor/ask", [21]) == {"answer": 42}


async def test_notifications_both_ways_arrive_in_order(pair):
    server, client = pair
    got_server: list[int] = []
    got_client: list[int] = []
    server.register("n", lambda p: got_server.append(p["i"]))
    client.register("n", lambda p: got_client.append(p["i"]))
    for i in range(20):
        await client.notify("n", {"i": i})
        await server.notify("n", {"i": i})
    server.register("sync", lambda p: None)
    client.register("sync", lambda p: None)
    await client.request("sync")  # both sides have read everything sent before
    await server.request("sync")
    assert got_server == list(range(20))
    assert got_client == list(range(20))


async def test_async_notification_handlers_run_in_order(h):
    order: list[int] = []

    async def slow_first(params: Any) -> None:
        if params == [0]:
            await asyncio.sleep(0.01)
        order.append(params[0])

    h.endpoint.register("ordered", slow_first)
    for i in range(3):
        await h.peer.write({"jsonrpc": "2.0", "method": "ordered", "params": [i]})
    await assert_still_serving(h.peer)
    assert order == [0, 1, 2]


async def test_wire_shapes_of_results(h):
    assert await call(h.peer, 1, "none") == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert await call(h.peer, 2, "echo", [1, "x"]) == {"jsonrpc": "2.0", "id": 2, "result": [1, "x"]}
    assert await call(h.peer, 3, "typed", {"chatId": "c1"}) == {"jsonrpc": "2.0", "id": 3, "result": {"chatId": "c1"}}


@pytest.mark.parametrize("params", [None, {}, []])
async def test_absent_null_or_empty_params_are_accepted(h, params):
    message = {"jsonrpc": "2.0", "id": 7, "method": "echo"}
    if params is not None:
        message["params"] = params
    await h.peer.write(message)
    assert await recv(h.peer) == {"jsonrpc": "2.0", "id": 7, "result": params}
    await h.peer.write({"jsonrpc": "2.0", "method": "note", "params": params})
    await assert_still_serving(h.peer)
    assert h.seen == [params]


@pytest.mark.parametrize("id", [0, 1, 2**53 + 1, -4, "", "0", "7f9c4c0e-6b1a-4e0e-9d59-3c1e7f3e2a11", None])
async def test_request_ids_are_echoed_exactly(h, id):
    response = await call(h.peer, id, "ping")
    assert response == {"jsonrpc": "2.0", "id": id, "result": "pong"}
    assert type(response["id"]) is type(id)


async def test_outgoing_ids_are_ints_from_one_and_results_are_matched_by_id(h):
    first = asyncio.create_task(h.endpoint.request("client/a", {"x": 1}))
    second = asyncio.create_task(h.endpoint.request("client/b"))
    assert await recv(h.peer) == {"jsonrpc": "2.0", "id": 1, "method": "client/a", "params": {"x": 1}}
    assert await recv(h.peer) == {"jsonrpc": "2.0", "id": 2, "method": "client/b"}
    await h.peer.write({"jsonrpc": "2.0", "id": 2, "result": "B"})  # out of order
    await h.peer.write({"jsonrpc": "2.0", "id": 99, "result": "nobody asked"})  # unknown id: ignored
    await h.peer.write({"jsonrpc": "2.0", "id": 1, "result": "A"})
    assert await asyncio.wait_for(asyncio.gather(first, second), GUARD) == ["A", "B"]
    await assert_still_serving(h.peer)


async def test_error_response_raises_rpc_error_in_the_caller(h):
    task = asyncio.create_task(h.endpoint.request("client/x"))
    request = await recv(h.peer)
    await h.peer.write({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -31700, "message": "File not found", "data": {"p": 1}}})
    with pytest.raises(RpcError) as info:
        await asyncio.wait_for(task, GUARD)
    assert (info.value.code, info.value.message, info.value.data) == (-31700, "File not found", {"p": 1})


async def test_pydantic_params_are_dumped_by_alias_without_none(h):
    task = asyncio.create_task(h.endpoint.request("client/x", PromptResult(chat_id="c9")))
    assert (await recv(h.peer))["params"] == {"chatId": "c9"}
    await h.endpoint.notify("client/n", [PromptResult(chat_id="c1", model="m")])
    assert (await recv(h.peer))["params"] == [{"chatId": "c1", "model": "m"}]
    await h.peer.write({"jsonrpc": "2.0", "id": 1, "result": PromptResult(chat_id="r").model_dump(by_alias=True)})
    assert await asyncio.wait_for(task, GUARD) == {"chatId": "r", "model": None}


# -- concurrency -------------------------------------------------------------------------------------------------------


async def test_a_slow_request_does_not_block_the_next_one(pair):
    server, client = pair
    release = asyncio.Event()
    completed: list[str] = []

    async def slow(params: Any) -> str:
        await release.wait()
        completed.append("slow")
        return "slow"

    async def fast(params: Any) -> str:
        completed.append("fast")
        return "fast"

    server.register("slow", slow)
    server.register("fast", fast)
    slow_call = asyncio.create_task(client.request("slow"))
    assert await client.request("fast") == "fast"
    assert completed == ["fast"]
    release.set()
    assert await asyncio.wait_for(slow_call, GUARD) == "slow"
    assert completed == ["fast", "slow"]


async def test_a_request_handlers_synchronous_prefix_runs_before_the_next_message(h):
    chats: set[str] = set()
    stops: list[bool] = []
    gate = asyncio.Event()

    async def prompt(params: Any) -> str:
        chats.add(params["chatId"])  # before the first await
        await gate.wait()
        return "done"

    h.endpoint.register("chat/prompt", prompt)
    h.endpoint.register("chat/promptStop", lambda p: (stops.append(p["chatId"] in chats), gate.set()))
    # Both messages are queued before the endpoint reads either of them.
    await h.peer.write({"jsonrpc": "2.0", "id": 1, "method": "chat/prompt", "params": {"chatId": "c"}})
    await h.peer.write({"jsonrpc": "2.0", "method": "chat/promptStop", "params": {"chatId": "c"}})
    assert await recv(h.peer) == {"jsonrpc": "2.0", "id": 1, "result": "done"}
    assert stops == [True]


async def test_sync_handlers_work_for_requests(pair):
    server, client = pair
    server.register("sync", lambda p: {"got": p})
    assert await client.request("sync", {"a": 1}) == {"got": {"a": 1}}


# -- timeouts and cancellation -----------------------------------------------------------------------------------------


async def test_outgoing_request_timeout_sends_cancel_and_raises(h):
    with pytest.raises(TimeoutError):
        await h.endpoint.request("client/never", {"q": 1}, timeout=0.05)
    assert await recv(h.peer) == {"jsonrpc": "2.0", "id": 1, "method": "client/never", "params": {"q": 1}}
    assert await recv(h.peer) == {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}
    await h.peer.write({"jsonrpc": "2.0", "id": 1, "result": "too late"})  # ignored
    await assert_still_serving(h.peer)


async def test_timeout_cancels_the_handler_on_a_peer_endpoint(pair):
    server, client = pair
    cancelled = asyncio.Event()

    async def never(params: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    client.register("editor/never", never)
    with pytest.raises(TimeoutError):
        await server.request("editor/never", timeout=0.05)
    await asyncio.wait_for(cancelled.wait(), GUARD)


async def test_cancelling_the_caller_sends_cancel_request(h):
    task = asyncio.create_task(h.endpoint.request("client/slow"))
    await recv(h.peer)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await recv(h.peer) == {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}


@pytest.mark.parametrize("id", [5, "req-5", 0])
async def test_cancel_request_cancels_the_handler_and_answers_request_cancelled(h, id):
    started, saw_cancel = asyncio.Event(), asyncio.Event()

    async def slow(params: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.set()
            raise
        return "unreachable"

    h.endpoint.register("slow", slow)
    await h.peer.write({"jsonrpc": "2.0", "id": id, "method": "slow"})
    await asyncio.wait_for(started.wait(), GUARD)
    await h.peer.write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})
    response = await recv(h.peer)
    assert response["id"] == id and type(response["id"]) is type(id)
    assert response["error"]["code"] == REQUEST_CANCELLED
    assert saw_cancel.is_set()
    await assert_still_serving(h.peer)


async def test_cancel_for_unknown_or_finished_requests_is_ignored(h):
    assert await call(h.peer, 1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": "pong"}
    for params in ({"id": 1}, {"id": 12345}, {}, None, [1], {"id": [1]}):
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": "$/cancelRequest"}
        if params is not None:
            message["params"] = params
        await h.peer.write(message)
    await assert_still_serving(h.peer)


def test_cancel_request_cannot_be_overridden():
    a, _ = memory_pair()
    with pytest.raises(ValueError):
        Endpoint(a).register("$/cancelRequest", lambda p: None)


# -- errors: exact codes, ids echoed, and the endpoint keeps serving ---------------------------------------------------


@pytest.mark.parametrize(
    "message, id, code",
    [
        (42, None, INVALID_REQUEST),
        ("a string", None, INVALID_REQUEST),
        (None, None, INVALID_REQUEST),
        ({"foo": "bar"}, None, INVALID_REQUEST),
        ({"id": 3, "method": "ping"}, 3, INVALID_REQUEST),  # no jsonrpc
        ({"jsonrpc": "1.0", "id": "v", "method": "ping"}, "v", INVALID_REQUEST),
        ({"jsonrpc": 2.0, "id": 4, "method": "ping"}, 4, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 5, "method": 17}, 5, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "method": 17}, None, INVALID_REQUEST),  # a broken notification is still answered
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 6, "method": "ping", "params": "bar"}, 6, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": 3}, 7, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 8}, 8, INVALID_REQUEST),  # neither method nor result
        ({"jsonrpc": "2.0", "id": 9, "method": "nope"}, 9, METHOD_NOT_FOUND),
        ({"jsonrpc": "2.0", "id": "s", "method": "boom"}, "s", INTERNAL_ERROR),
        ({"jsonrpc": "2.0", "id": 0, "method": "fail"}, 0, -31900),
        ({"jsonrpc": "2.0", "id": 10, "method": "typed", "params": {"count": "x"}}, 10, INVALID_PARAMS),
        ({"jsonrpc": "2.0", "id": 11, "method": "unserializable"}, 11, INTERNAL_ERROR),
    ],
)
async def test_error_codes_and_ids(h, message, id, code):
    await h.peer.write(message)
    response = await recv(h.peer)
    assert response["jsonrpc"] == "2.0"
    assert response["id"] == id and type(response["id"]) is type(id)
    assert response["error"]["code"] == code
    assert "result" not in response
    await assert_still_serving(h.peer)


@pytest.mark.parametrize("raw", [b"{", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"\xff\xfe", b"NaN", b""])
async def test_parse_errors_are_answered_with_id_null(h, raw):
    h.peer.write_raw(raw)
    response = await recv(h.peer)
    assert response["id"] is None and response["error"]["code"] == PARSE_ERROR
    await assert_still_serving(h.peer)


async def test_method_not_found_names_the_method(h):
    response = await call(h.peer, 1, "chat/unknown")
    assert response["error"] == {"code": METHOD_NOT_FOUND, "message": "Method not found: chat/unknown",
                                 "data": {"method": "chat/unknown"}}


async def test_handler_rpc_error_is_sent_as_is(h):
    response = await call(h.peer, "e", "fail")
    assert response["error"] == {"code": -31900, "message": "Session not found", "data": {"sessionId": "s1"}}


async def test_internal_error_is_short_and_has_no_traceback(h, caplog):
    with caplog.at_level(logging.ERROR, logger="eca_notebook.rpc"):
        response = await call(h.peer, 1, "boom")
    error = response["error"]
    assert error["code"] == INTERNAL_ERROR
    assert error["message"] == "ValueError: kaboom: secret-path/x.py"
    assert "Traceback" not in str(error) and "data" not in error
    assert any(r.exc_info for r in caplog.records)  # the traceback goes to the log instead


async def test_validation_error_becomes_invalid_params_with_json_safe_data(h):
    response = await call(h.peer, 1, "typed", {"chatId": "  ", "count": "many"})
    error = response["error"]
    assert error["code"] == INVALID_PARAMS
    by_field = {tuple(e["loc"]): e for e in error["data"]}
    assert set(by_field) == {("chatId",), ("count",)}
    assert by_field[("count",)]["type"] == "int_parsing"
    assert "chatId must not be blank" in by_field[("chatId",)]["msg"]
    assert isinstance(by_field[("chatId",)]["ctx"]["error"], str)  # the ValueError object was made JSON-safe
    assert all("url" not in e for e in error["data"])


async def test_validation_error_raised_inside_a_handler_is_invalid_params(h):
    def handler(params: Any) -> None:
        PromptParams.model_validate(params)

    h.endpoint.register("inner", handler)
    response = await call(h.peer, 1, "inner", {})
    assert response["error"]["code"] == INVALID_PARAMS
    assert response["error"]["data"][0]["loc"] == ["chatId"]


async def test_unknown_notifications_get_no_reply(h, caplog):
    with caplog.at_level(logging.DEBUG, logger="eca_notebook.rpc"):
        await h.peer.write({"jsonrpc": "2.0", "method": "chat/unknownNotification", "params": {}})
        await h.peer.write({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}})
        await assert_still_serving(h.peer)
    messages = [r.getMessage() for r in caplog.records]
    assert any("chat/unknownNotification" in m for m in messages)
    assert not any("$/setTrace" in m for m in messages)  # "$/" notifications are ignored silently


async def test_failing_notification_handlers_are_logged_and_never_answered(h, caplog):
    h.endpoint.register("bad-note", lambda p: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="eca_notebook.rpc"):
        await h.peer.write({"jsonrpc": "2.0", "method": "bad-note"})
        await h.peer.write({"jsonrpc": "2.0", "method": "typed", "params": {"count": "x"}})  # invalid params
        await assert_still_serving(h.peer)
    assert any("bad-note" in r.getMessage() for r in caplog.records)


async def test_a_notification_handler_fails_the_same_whether_it_raises_before_or_after_awaiting(h, caplog):
    """The read loop awaits only what an async handler left to do: a failure there is reported as one raised at
    once — a bug with its traceback, the peer's mistakes (invalid params, an RpcError) one line each."""
    async def late(params: Any) -> None:
        await asyncio.sleep(0)
        if params == ["bug"]:
            raise ZeroDivisionError("late bug")
        if params == ["invalid"]:
            PromptParams.model_validate({})
        raise RpcError(-32602, "late refusal")

    for method in ("late-bug", "late-invalid", "late-refused"):
        h.endpoint.register(method, late)
    h.endpoint.register("early", lambda params: PromptParams.model_validate({}))
    with caplog.at_level(logging.INFO, logger="eca_notebook.rpc"):
        for what in ("bug", "invalid", "refused"):
            await h.peer.write({"jsonrpc": "2.0", "method": f"late-{what}", "params": [what]})
        await h.peer.write({"jsonrpc": "2.0", "method": "early"})
        await assert_still_serving(h.peer)
    by_message = {r.getMessage(): r for r in caplog.records}
    assert by_message["server: notification handler for late-bug failed"].exc_info[1].args == ("late bug",)
    assert by_message["server: notification late-invalid has invalid params (1 errors)"].exc_info is None
    assert by_message["server: notification late-refused refused: late refusal"].exc_info is None
    assert "server: notification early has invalid params (1 errors)" in by_message


async def test_params_are_never_logged(h, caplog):
    with caplog.at_level(logging.DEBUG):
        await call(h.peer, 1, "boom", {"apiKey": "sk-secret-123"})
        await call(h.peer, 2, "typed", {"chatId": "", "key": "sk-secret-123"})
        await call(h.peer, 3, "nope", {"key": "sk-secret-123"})
        await h.peer.write({"jsonrpc": "2.0", "method": "unknown", "params": {"key": "sk-secret-123"}})
        await assert_still_serving(h.peer)
    assert "sk-secret-123" not in caplog.text


# -- batches -------------------------------------------------------------------------------------------------------


async def test_batch_is_answered_with_an_array(h):
    await h.peer.write(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": [1]},
            {"jsonrpc": "2.0", "method": "note", "params": {"n": 1}},
            {"jsonrpc": "2.0", "id": "two", "method": "nope"},
            {"foo": "boo"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
            [],
        ]
    )
    responses = await recv(h.peer)
    assert isinstance(responses, list)
    by_id = {}
    for r in responses:
        by_id.setdefault(r["id"], []).append(r)
    assert by_id[1] == [{"jsonrpc": "2.0", "id": 1, "result": [1]}]
    assert by_id[3] == [{"jsonrpc": "2.0", "id": 3, "result": "pong"}]
    assert by_id["two"][0]["error"]["code"] == METHOD_NOT_FOUND
    assert [r["error"]["code"] for r in by_id[None]] == [INVALID_REQUEST, INVALID_REQUEST]
    assert len(responses) == 5
    assert h.seen == [{"n": 1}]
    await assert_still_serving(h.peer)


async def test_batch_of_notifications_gets_no_answer(h):
    await h.peer.write([{"jsonrpc": "2.0", "method": "note", "params": [i]} for i in range(3)])
    await assert_still_serving(h.peer)
    assert h.seen == [[0], [1], [2]]


async def test_empty_batch_is_invalid_request(h):
    await h.peer.write([])
    response = await recv(h.peer)
    assert response == {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "empty batch"}}
    await assert_still_serving(h.peer)


async def test_batch_of_responses_resolves_our_requests(h):
    first = asyncio.create_task(h.endpoint.request("client/a"))
    second = asyncio.create_task(h.endpoint.request("client/b"))
    await recv(h.peer), await recv(h.peer)
    await h.peer.write([{"jsonrpc": "2.0", "id": 1, "result": "A"},
                        {"jsonrpc": "2.0", "id": 2, "error": {"code": 1, "message": "no"}}])
    assert await asyncio.wait_for(first, GUARD) == "A"
    with pytest.raises(RpcError):
        await asyncio.wait_for(second, GUARD)
    await assert_still_serving(h.peer)


async def test_a_batch_entry_can_be_cancelled(h):
    started = asyncio.Event()

    async def slow(params: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    h.endpoint.register("slow", slow)
    await h.peer.write([{"jsonrpc": "2.0", "id": "a", "method": "slow"},
                        {"jsonrpc": "2.0", "id": "b", "method": "ping"}])
    await asyncio.wait_for(started.wait(), GUARD)
    await h.peer.write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "a"}})
    responses = await recv(h.peer)
    assert {r["id"]: r.get("error", {}).get("code") for r in responses} == {"a": REQUEST_CANCELLED, "b": None}


# -- guard -------------------------------------------------------------------------------------------------------------


async def test_guard_refuses_requests_with_its_error_and_drops_notifications():
    stream, peer = memory_pair()
    state = {"initialized": False}
    calls: list[str] = []

    def guard(method: str) -> None:
        if method != "initialize" and not method.startswith("$/") and not state["initialized"]:
            raise RpcError(SERVER_NOT_INITIALIZED, f"'{method}' before 'initialize'")

    endpoint = Endpoint(stream, guard=guard)
    endpoint.register("initialize", lambda p: state.update(initialized=True) or {"ok": True})
    endpoint.register("work", lambda p: calls.append("work") or "worked")
    endpoint.register("note", lambda p: calls.append("note"))
    runner = asyncio.create_task(endpoint.run())

    response = await call(peer, 1, "work")
    assert response == {"jsonrpc": "2.0", "id": 1,
                        "error": {"code": SERVER_NOT_INITIALIZED, "message": "'work' before 'initialize'"}}
    assert (await call(peer, 2, "unknown-method"))["error"]["code"] == SERVER_NOT_INITIALIZED
    await peer.write({"jsonrpc": "2.0", "method": "note"})
    assert (await call(peer, 3, "initialize"))["result"] == {"ok": True}
    await peer.write({"jsonrpc": "2.0", "method": "note"})
    assert (await call(peer, 4, "work"))["result"] == "worked"
    assert calls == ["note", "work"]
    await peer.close()
    await asyncio.wait_for(runner, GUARD)


async def test_a_guard_that_crashes_is_an_internal_error():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, guard=lambda m: {}["x"])
    endpoint.register("ping", lambda p: "pong")
    runner = asyncio.create_task(endpoint.run())
    assert (await call(peer, 1, "ping"))["error"]["code"] == INTERNAL_ERROR
    await peer.close()
    await asyncio.wait_for(runner, GUARD)


# -- closing -----------------------------------------------------------------------------------------------------------


async def test_eof_fails_pending_requests_and_cancels_handlers():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, name="srv")
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def forever(params: Any) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    endpoint.register("forever", forever)
    runner = asyncio.create_task(endpoint.run())
    await peer.write({"jsonrpc": "2.0", "id": 1, "method": "forever"})
    await asyncio.wait_for(started.wait(), GUARD)
    outgoing = asyncio.create_task(endpoint.request("client/x"))
    await recv(peer)
    await peer.close()
    await asyncio.wait_for(runner, GUARD)  # run() returns at EOF
    assert cancelled.is_set()
    with pytest.raises(RpcError) as info:
        await outgoing
    assert info.value.code == CONNECTION_LOST
    assert endpoint.closed


async def test_after_close_writes_are_dropped_and_requests_fail(pair):
    server, client = pair
    await server.close()
    await server.close()  # idempotent
    assert server.closed
    await server.notify("anything", {"x": 1})  # dropped silently
    with pytest.raises(RpcError) as info:
        await server.request("anything")
    assert info.value.code == CONNECTION_LOST
    with pytest.raises(RpcError) as info:  # the other side sees the connection end too
        await asyncio.wait_for(client.request("ping"), GUARD)
    assert info.value.code == CONNECTION_LOST


async def test_close_from_a_notification_handler_ends_run():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream)
    endpoint.register("exit", lambda p: asyncio.ensure_future(endpoint.close()))

    async def exit_now(params: Any) -> None:
        await endpoint.close()

    endpoint.register("exit-now", exit_now)
    runner = asyncio.create_task(endpoint.run())
    await peer.write({"jsonrpc": "2.0", "method": "exit-now"})
    await asyncio.wait_for(runner, GUARD)
    assert endpoint.closed
    assert await recv(peer) is None  # our close reached the peer as EOF


async def test_a_handler_can_close_its_own_endpoint_and_the_response_is_dropped():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream)

    async def shutdown(params: Any) -> str:
        await endpoint.close()
        return "bye"

    endpoint.register("shutdown", shutdown)
    runner = asyncio.create_task(endpoint.run())
    await peer.write({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
    assert await recv(peer) is None
    await asyncio.wait_for(runner, GUARD)


async def test_run_twice_is_an_error(pair):
    server, _ = pair
    with pytest.raises(RuntimeError):
        await server.run()


async def test_cancelling_run_closes_the_endpoint():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream)
    runner = asyncio.create_task(endpoint.run())
    await asyncio.sleep(0)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert endpoint.closed
    assert await recv(peer) is None


async def test_non_serializable_outgoing_params_fail_loudly(pair):
    server, _ = pair
    with pytest.raises(TypeError):
        await server.notify("x", {"bad": object()})
    with pytest.raises(TypeError):
        await server.request("x", {"bad": object()})


def test_validation_error_type_is_pydantic():
    # The endpoint maps pydantic.ValidationError, the one params_parser raises: keep the two in sync.
    with pytest.raises(ValidationError):
        PromptParams.model_validate({})


# -- bounds per peer ---------------------------------------------------------------------------------------------------


async def test_requests_beyond_the_concurrency_bound_are_refused_at_once_and_the_rest_still_complete():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, name="server", max_concurrent_requests=3)
    gate = asyncio.Event()

    async def slow(params: Any) -> str:
        await gate.wait()
        return "done"

    endpoint.register("slow", slow)
    endpoint.register("ping", lambda params: "pong")
    task = asyncio.create_task(endpoint.run())
    for i in range(5):
        await peer.write({"jsonrpc": "2.0", "id": i, "method": "slow"})
    busy = [await recv(peer), await recv(peer)]  # ids 3 and 4, answered while 0-2 still run
    assert [m["id"] for m in busy] == [3, 4]
    assert all(m["error"]["code"] == INTERNAL_ERROR and "busy" in m["error"]["message"] for m in busy)
    gate.set()
    assert sorted([(await recv(peer))["id"] for _ in range(3)]) == [0, 1, 2]
    assert await call(peer, "after", "ping") == {"jsonrpc": "2.0", "id": "after", "result": "pong"}
    await peer.close()
    await asyncio.wait_for(task, GUARD)
