from __future__ import annotations

from eca_notebook.protocol import EcaModel


class _Sample(EcaModel):
    chat_id: str
    tool_call_id: str | None = None


def test_accepts_camel_case_and_snake_case() -> None:
    assert _Sample.model_validate({"chatId": "a"}).chat_id == "a"
    assert _Sample(chat_id="b").chat_id == "b"


def test_dump_is_camel_case_without_none() -> None:
    assert _Sample(chat_id="a").dump() == {"chatId": "a"}
    assert _Sample(chat_id="a", tool_call_id="t").dump() == {"chatId": "a", "toolCallId": "t"}


def test_unknown_keys_are_kept_verbatim() -> None:
    model = _Sample.model_validate({"chatId": "a", "request-id": 7, "someFutureField": {"x": [1]}})
    assert model.dump() == {"chatId": "a", "request-id": 7, "someFutureField": {"x": [1]}}
