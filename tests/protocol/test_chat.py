from __future__ import annotations

import pytest
from pydantic import ValidationError

from eca_notebook.protocol import (
    ChatClearedParams,
    ChatCommand,
    ChatDeleteParams,
    ChatDeleteResult,
    ChatForkResult,
    ChatHistoryMeta,
    ChatListParams,
    ChatListResult,
    ChatOpenResult,
    ChatOpenSelection,
    ChatPromptParams,
    ChatPromptResult,
    ChatQueryCommandsResult,
    ChatQueryContextParams,
    ChatQueryContextResult,
    ChatSelectedBehaviorChangedParams,
    ChatSelectedModelChangedParams,
    ChatStatusChangedParams,
    ChatToolCallApproveParams,
    CursorContext,
    FileContext,
    UnknownContext,
)


def test_spec_prompt_round_trip() -> None:
    wire = {
        "chatId": "c1",
        "message": "Explain this",
        "model": "anthropic/claude-sonnet-4",
        "behavior": "agent",
        "contexts": [
            {"type": "file", "path": "/p/a.py"},
            {"type": "cursor", "path": "/p/a.py",
             "position": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}},
        ],
    }
    params = ChatPromptParams.model_validate(wire)
    assert [type(c) for c in params.contexts] == [FileContext, CursorContext]
    assert params.dump() == wire


def test_prompt_minimal() -> None:
    params = ChatPromptParams.model_validate({"message": "hi"})
    assert (params.chat_id, params.model, params.contexts) == (None, None, [])
    assert params.dump() == {"message": "hi", "contexts": []}


def test_prompt_real_client_extras() -> None:
    # What real clients put on the wire (eca-compat-notes.md): extra keys, nulls, dashed request id.
    wire = {"chatId": "client-made-id", "message": "hi", "request-id": "r-9", "agent": "plan", "model": None,
            "contexts": None, "behavior": "plan", "editorState": {"x": 1}}
    params = ChatPromptParams.model_validate(wire)
    assert params.request_id == "r-9"
    assert params.agent == "plan" and params.behavior == "plan"
    assert params.contexts == []
    dumped = params.dump()
    assert dumped["request-id"] == "r-9" and dumped["editorState"] == {"x": 1}


def test_prompt_early_request_id() -> None:
    assert ChatPromptParams.model_validate({"message": "m", "requestId": 3}).request_id == 3
    assert ChatPromptParams.model_validate({"message": "m", "requestId": "abc"}).dump()["requestId"] == "abc"


def test_prompt_unknown_context_does_not_invalidate_prompt() -> None:
    params = ChatPromptParams.model_validate(
        {"message": "m", "contexts": [{"type": "notebookCell", "cellId": "x"}, {"type": "web", "url": "https://a"}]}
    )
    assert isinstance(params.contexts[0], UnknownContext)
    assert params.contexts[0].dump() == {"type": "notebookCell", "cellId": "x"}


def test_prompt_requires_message() -> None:
    with pytest.raises(ValidationError) as info:
        ChatPromptParams.model_validate({"chatId": "c"})
    assert info.value.errors()[0]["loc"] == ("message",)


@pytest.mark.parametrize("status", ["prompting", "login", "error"])
def test_prompt_result(status: str) -> None:
    wire = {"chatId": "c1", "model": "openai/gpt-5", "status": status}
    assert ChatPromptResult.model_validate(wire).dump() == wire


def test_tool_call_approve() -> None:
    wire = {"chatId": "c", "toolCallId": "t", "save": "session"}
    assert ChatToolCallApproveParams.model_validate(wire).dump() == wire
    with pytest.raises(ValidationError):
        ChatToolCallApproveParams.model_validate({**wire, "save": "forever"})


def test_query_context() -> None:
    params = ChatQueryContextParams.model_validate({"chatId": "c", "query": "", "contexts": []})
    assert params.query == "" and params.contexts == []
    result = {"chatId": "c", "contexts": [{"type": "directory", "path": "/p"}, {"type": "repoMap"}]}
    assert ChatQueryContextResult.model_validate(result).dump() == result


def test_query_commands_result() -> None:
    wire = {
        "chatId": "c",
        "commands": [
            {"name": "doctor", "description": "Check setup", "type": "native", "arguments": []},
            {"name": "review", "description": "MCP prompt", "type": "mcp-prompt",
             "arguments": [{"name": "file", "description": "the file", "required": True}]},
        ],
    }
    result = ChatQueryCommandsResult.model_validate(wire)
    assert result.commands[1].arguments[0].required is True
    assert result.dump() == wire
    assert ChatCommand(name="x", description="", type="custom-prompt").arguments == []


def test_delete() -> None:
    assert ChatDeleteParams.model_validate({}).chat_id is None
    assert ChatDeleteResult().dump() == {}


def test_selected_changes() -> None:
    assert ChatSelectedBehaviorChangedParams.model_validate({"behavior": "plan"}).dump() == {"behavior": "plan"}
    wire = {"model": "ollama/qwen3", "chatId": "c"}
    assert ChatSelectedModelChangedParams.model_validate(wire).dump() == wire


def test_list_and_open() -> None:
    assert ChatListParams.model_validate({"limit": 10, "sortBy": "createdAt"}).sort_by == "createdAt"
    with pytest.raises(ValidationError):
        ChatListParams.model_validate({"sortBy": "title"})
    wire = {"chats": [{"id": "c1", "title": "T", "status": "idle", "createdAt": 1700000000000,
                       "updatedAt": 1700000001000, "model": "m", "messageCount": 4}]}
    assert ChatListResult.model_validate(wire).dump() == wire
    assert ChatListResult.model_validate({"chats": [{"id": "c2", "status": "running"}]}).chats[0].message_count == 0
    assert ChatOpenResult(found=False).dump() == {"found": False}


def test_open_answer_writes_its_nulls_in_place() -> None:
    """A nested model is dumped by its parent's rules (every null omitted): the answer to chat/open writes the nulls
    that are values — no stored model, no variant, a cursor at the end of the history — where they belong."""
    selection = ChatOpenSelection(model=None, agent="code", variant=None, variants=["low"], trust=False)
    answer = ChatOpenResult(found=True, chat_id="c", selection=selection,
                            meta=ChatHistoryMeta(total=3, returned=1, after_cursor="a"))
    wire = answer.dump()
    assert list(wire["selection"]) == ["model", "agent", "variant", "variants", "trust"]
    assert wire == {"found": True, "chatId": "c",
                    "selection": {"model": None, "agent": "code", "variant": None, "variants": ["low"],
                                  "trust": False},
                    "meta": {"total": 3, "returned": 1, "beforeCursor": None, "afterCursor": "a",
                             "compactionCursor": None}}
    assert list(wire["meta"]) == ["total", "returned", "beforeCursor", "afterCursor",
                                  "compactionCursor"]


def test_server_chat_notifications() -> None:
    assert ChatClearedParams(chat_id="c", messages=True).dump() == {"chatId": "c", "messages": True}
    assert ChatStatusChangedParams(chat_id="c", status="stopping").dump() == {"chatId": "c", "status": "stopping"}
    with pytest.raises(ValidationError):
        ChatStatusChangedParams.model_validate({"chatId": "c", "status": "paused"})


def test_fork_result() -> None:
    assert ChatForkResult.model_validate({"chatId": "new"}).chat_id == "new"


def test_prompt_result_always_sends_model_and_only_a_refusal_its_message() -> None:
    from eca_notebook.protocol import ChatPromptResult

    assert ChatPromptResult(chat_id="c", model=None, status="login").dump() == {
        "chatId": "c", "model": None, "status": "login"}
    refused = ChatPromptResult(chat_id="c", model="m", status="error", message="chatId is blank")
    assert refused.dump() == {"chatId": "c", "model": "m", "status": "error", "message": "chatId is blank"}
