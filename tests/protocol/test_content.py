from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from eca_notebook.protocol import (
    ChatContent,
    ChatContentReceivedParams,
    FileChangeDetails,
    ImageContent,
    MetadataContent,
    PlanContent,
    ProgressContent,
    ReasonFinishedContent,
    ReasonStartedContent,
    ReasonTextContent,
    TextContent,
    ToolCalledContent,
    ToolCallOutput,
    ToolCallPrepareContent,
    ToolCallRejectedContent,
    ToolCallRunContent,
    ToolCallRunningContent,
    UnknownContent,
    UrlContent,
    UsageContent,
)

_CONTENT = TypeAdapter(ChatContent)

_DETAILS = {"type": "fileChange", "path": "/p/a.py", "diff": "@@ -1 +1 @@\n-a\n+b\n", "linesAdded": 1,
            "linesRemoved": 1}
_CALL = {"origin": "native", "id": "call-1", "name": "write_file", "server": "eca"}

# Wire shapes from shared/specs/eca-protocol.md (ChatContent); camelCase, optional fields present or absent.
WIRE = [
    ({"type": "text", "text": "Hello"}, TextContent),
    ({"type": "text", "text": "Hello", "contentId": "c-1"}, TextContent),
    ({"type": "url", "title": "Docs", "url": "https://example.com"}, UrlContent),
    ({"type": "progress", "state": "running", "text": "Waiting model"}, ProgressContent),
    ({"type": "progress", "state": "finished", "text": ""}, ProgressContent),
    ({"type": "usage", "sessionTokens": 1200}, UsageContent),
    (
        {
            "type": "usage",
            "sessionTokens": 1200,
            "lastMessageCost": "0.01",
            "sessionCost": "0.05",
            "limit": {"context": 200000, "output": 8192},
            "messageInputTokens": 1000,
            "messageOutputTokens": 200,
            "messageCost": "0.01",
        },
        UsageContent,
    ),
    ({"type": "reasonStarted", "id": "r1"}, ReasonStartedContent),
    ({"type": "reasonText", "id": "r1", "text": "thinking"}, ReasonTextContent),
    ({"type": "reasonFinished", "id": "r1", "totalTimeMs": 1500}, ReasonFinishedContent),
    ({"type": "toolCallPrepare", **_CALL, "argumentsText": '{"pa'}, ToolCallPrepareContent),
    (
        {"type": "toolCallPrepare", **_CALL, "argumentsText": "", "summary": "Writing", "details": _DETAILS,
         "manualApproval": True},
        ToolCallPrepareContent,
    ),
    (
        {"type": "toolCallRun", **_CALL, "arguments": {"path": "/p/a.py", "content": "b"}, "manualApproval": True,
         "summary": "Writing file", "details": _DETAILS},
        ToolCallRunContent,
    ),
    ({"type": "toolCallRunning", **_CALL, "arguments": {"path": "/p/a.py"}}, ToolCallRunningContent),
    (
        {"type": "toolCalled", **_CALL, "arguments": {"path": "/p/a.py"}, "error": False,
         "outputs": [{"type": "text", "text": "ok", "content": "ok"}], "totalTimeMs": 12},
        ToolCalledContent,
    ),
    (
        {"type": "toolCalled", **_CALL, "arguments": ["/p/a.py"], "error": True,
         "outputs": [{"type": "text", "text": "boom", "content": "boom"}], "totalTimeMs": 0, "details": _DETAILS},
        ToolCalledContent,
    ),
    (
        {"type": "toolCallRejected", **_CALL, "arguments": {"path": "/p/a.py"}, "reason": "user-choice"},
        ToolCallRejectedContent,
    ),
    ({"type": "metadata", "title": "Refactor parser"}, MetadataContent),
    ({"type": "plan", "steps": [{"description": "Read the code", "status": "completed"}]}, PlanContent),
    (
        {"type": "plan", "steps": [{"description": "Fix", "status": "in_progress", "files": ["a.py", "b.py"],
                                    "priority": "high"}], "explanation": "The bug is in a.py"},
        PlanContent,
    ),
    ({"type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo="}, ImageContent),  # ChatImageContent
]


@pytest.mark.parametrize(("wire", "model"), WIRE)
def test_round_trip(wire: dict, model: type) -> None:
    content = _CONTENT.validate_python(wire)
    assert type(content) is model
    assert content.dump() == wire
    # Serialising through the union picks the same model (no fallback, no warning).
    assert _CONTENT.dump_python(content, by_alias=True, exclude_none=True, mode="json") == wire


def test_every_defined_content_type_is_covered() -> None:
    from eca_notebook.protocol import CONTENT_TYPES

    assert {w["type"] for w, _ in WIRE} == set(CONTENT_TYPES)


def test_details_is_parsed_as_file_change() -> None:
    run = _CONTENT.validate_python(WIRE[12][0])
    assert isinstance(run, ToolCallRunContent)
    assert isinstance(run.details, FileChangeDetails)
    assert (run.details.lines_added, run.details.lines_removed) == (1, 1)
    assert run.manual_approval is True


def test_tool_output_early_content_only_is_sent_as_both() -> None:
    out = ToolCallOutput.model_validate({"type": "text", "content": "result"})
    assert out.text == "result"
    assert out.dump() == {"type": "text", "text": "result", "content": "result"}


def test_tool_output_newer_text_only_is_sent_as_both() -> None:
    assert ToolCallOutput(text="r").dump() == {"type": "text", "text": "r", "content": "r"}


def test_tool_output_needs_text_or_content() -> None:
    with pytest.raises(ValidationError):
        ToolCallOutput.model_validate({"type": "text"})


def test_early_tool_called_shape() -> None:
    # Early revision: outputs carry only `content`, and there is no totalTimeMs.
    wire = {"type": "toolCalled", **_CALL, "arguments": ["a"], "error": False,
            "outputs": [{"type": "text", "content": "x"}]}
    called = _CONTENT.validate_python(wire)
    assert isinstance(called, ToolCalledContent)
    assert called.total_time_ms == 0
    assert called.dump()["outputs"] == [{"type": "text", "text": "x", "content": "x"}]


def test_early_rejection_reason_user_is_accepted() -> None:
    wire = {"type": "toolCallRejected", **_CALL, "arguments": {}, "reason": "user"}
    rejected = _CONTENT.validate_python(wire)
    assert isinstance(rejected, ToolCallRejectedContent) and rejected.reason == "user"


def test_reason_finished_defaults_total_time() -> None:
    assert ReasonFinishedContent(id="r").dump() == {"type": "reasonFinished", "id": "r", "totalTimeMs": 0}


def test_unknown_content_type_falls_back() -> None:
    wire = {"type": "hookActionStarted", "id": "h1", "name": "lint"}
    content = _CONTENT.validate_python(wire)
    assert isinstance(content, UnknownContent)
    assert content.dump() == wire


def test_known_content_with_wrong_field_is_an_error() -> None:
    with pytest.raises(ValidationError) as info:
        _CONTENT.validate_python({"type": "progress", "state": "paused"})
    assert any("state" in err["loc"] for err in info.value.errors())


def test_bad_origin_is_an_error() -> None:
    with pytest.raises(ValidationError):
        _CONTENT.validate_python({**WIRE[13][0], "origin": "plugin"})


def test_content_received_round_trip() -> None:
    wire = {"chatId": "c1", "role": "assistant", "content": {"type": "text", "text": "Hi"}}
    params = ChatContentReceivedParams.model_validate(wire)
    assert isinstance(params.content, TextContent)
    assert params.dump() == wire
    sub = {**wire, "parentChatId": "c0"}
    assert ChatContentReceivedParams.model_validate(sub).dump() == sub


def test_content_received_built_in_python() -> None:
    params = ChatContentReceivedParams(chat_id="c", role="system", content=ProgressContent(state="finished"))
    assert params.dump() == {"chatId": "c", "role": "system",
                             "content": {"type": "progress", "state": "finished", "text": ""}}


def test_content_received_bad_role() -> None:
    with pytest.raises(ValidationError) as info:
        ChatContentReceivedParams.model_validate(
            {"chatId": "c", "role": "tool", "content": {"type": "text", "text": ""}})
    assert [err["loc"] for err in info.value.errors()] == [("role",)]
