"""The ECA connection's chunk rules: a text chunk's notification written from a template must be, byte for byte,
what the outbox writes for any notification (built, ``to_json``, the connection's ``redact_json``, ``dumps``) —
whatever the text, whatever secrets are registered — and anything it cannot write so is left to that path."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eca_notebook import _redact
from eca_notebook._redact import add_secrets, redact_json
from eca_notebook.rpc import Endpoint, to_json
from eca_notebook.serving._chunks import encode_text_chunk
from eca_notebook.transports import ContentLengthDecoder, PipeStream, dumps, loads

from ..rpc.test_outbox import RecordingWriter

METHOD = "chat/contentReceived"
CHAT = "0a1b2c3d-1234-5678-9abc-def012345678"


def generic(method: str, params: Any) -> bytes:
    """What the outbox writes for a notification when no shortcut answers (Outbox._notification, then dumps)."""
    return dumps(redact_json({"jsonrpc": "2.0", "method": method, "params": to_json(params)}))


def chunk(text: str, chat: str = CHAT, role: str = "assistant") -> dict[str, Any]:
    return {"chatId": chat, "role": role, "content": {"type": "text", "text": text}}


@pytest.fixture
def registry() -> Iterator[Callable[[list[str]], None]]:
    """Secrets registered in a test are forgotten after it (the registry is process-wide): the state before comes
    back as a new version (a version number never stands for two states)."""
    saved = _redact._secrets, _redact._ordered, _redact._memo
    yield add_secrets
    _redact._secrets, _redact._ordered, _redact._memo = saved
    _redact._version += 1


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), chat=st.sampled_from([CHAT, str(uuid.uuid4()), "c", 'a"b\\c']),
       role=st.sampled_from(["assistant", "system", "user", "r\u00e9le"]))
def test_a_text_chunk_is_written_as_the_outbox_writes_any_notification(text, chat, role):
    params = chunk(text, chat, role)
    assert encode_text_chunk(METHOD, params) == generic(METHOD, params)


@pytest.mark.parametrize("text", [
    'quotes " and \\ backslashes, a tab\t, a newline\n, a NUL \x00, U+2028 \u2028, an emoji \U0001f600',
    "Authorization: Bearer abcdef0123456789abcdef",  # patterns, short and long (past the memo's bound)
    "see https://user:pw@example.com/x?token=abc123def456 and sk-proj-abcdefghij0123456789 " * 4,
    "",
])
def test_texts_that_need_escaping_or_redacting_come_out_the_same(text):
    params = chunk(text)
    assert encode_text_chunk(METHOD, params) == generic(METHOD, params)


def test_a_registered_secret_is_masked_in_the_text_and_the_chat_id_as_the_outbox_masks_it(registry):
    secret, chat = "chunk-secret-9X9X-q7", "chat-with-a-secret-9X9X"
    before = encode_text_chunk(METHOD, chunk(f"the key is {secret}", chat))
    registry([secret, chat])  # (registered after a first write: nothing remembered from before may show it)
    params = chunk(f"the key is {secret}", chat)
    body = encode_text_chunk(METHOD, params)
    assert body == generic(METHOD, params)
    assert before is not None and secret.encode() in before
    assert body is not None and secret.encode() not in body and chat.encode() not in body
    assert loads(body)["params"] == {"chatId": "***", "role": "assistant", "content": {"type": "text",
                                                                                       "text": "the key is ***"}}


def test_chats_and_roles_past_the_bound_of_remembered_prefixes_still_come_out_the_same():
    for i in range(2500):
        params = chunk(f"chunk {i}", chat=f"chat-{i % 1500}", role=("assistant", "system")[i % 2])
        assert encode_text_chunk(METHOD, params) == generic(METHOD, params)


def test_a_secret_that_would_redact_the_template_s_own_strings_leaves_the_chunk_to_the_outbox(registry):
    registry(["contentReceived"])
    params = chunk("hello")
    assert encode_text_chunk(METHOD, params) is None
    assert loads(generic(METHOD, params))["method"] == "chat/***"  # what the outbox writes instead


@pytest.mark.parametrize(("method", "params"), [
    ("chat/statusChanged", chunk("x")),
    (METHOD, None),
    (METHOD, {**chunk("x"), "parentChatId": CHAT}),  # a subagent's chunk
    (METHOD, {**chunk("x"), "chatId": 7}),  # a client's numeric chat id
    (METHOD, {"role": "assistant", "chatId": CHAT, "content": {"type": "text", "text": "x"}}),  # another key order
    (METHOD, {**chunk("x"), "content": {"text": "x", "type": "text"}}),
    (METHOD, {**chunk("x"), "content": {"type": "reasonText", "id": "r1", "text": "x"}}),
    (METHOD, {**chunk("x"), "content": {"type": "text", "text": 5}}),
    (METHOD, {**chunk("x"), "content": "text"}),
    (METHOD, chunk("a lone surrogate \ud800 (the generic path escapes it)")),
])
def test_anything_else_is_left_to_the_outbox(method, params):
    assert encode_text_chunk(method, params) is None
    generic(method, params)  # which can write it


async def test_over_a_pipe_the_client_reads_the_chunks_the_connection_queued_with_the_others_in_order(registry):
    """The shortcut as the connection plugs it in (outgoing=redact_json): chunks and other notifications, merged
    chunks included, reach the pipe in queue order and decode to what the generic path sends."""
    registry(["pipe-secret-5T5T-k2"])
    writer = RecordingWriter()
    endpoint = Endpoint(PipeStream(asyncio.StreamReader(), writer), name="server", outgoing=redact_json,
                        encode_notification=encode_text_chunk)
    sent = [(METHOD, chunk(f"t{i} ")) for i in range(300)]
    sent.insert(150, ("chat/statusChanged", {"chatId": CHAT, "status": "pipe-secret-5T5T-k2"}))
    sent.append((METHOD, chunk("and pipe-secret-5T5T-k2")))
    for method, params in sent:
        endpoint.notify_nowait(method, params)
    await asyncio.wait_for(endpoint.drain(), 5)
    bodies = ContentLengthDecoder().feed(b"".join(writer.writes))
    assert bodies == [generic(method, params) for method, params in sent]
    await endpoint.close()
