"""ask_user against a real async callable standing in for the client's ``chat/askQuestion`` round trip."""

from __future__ import annotations

import asyncio
from pathlib import Path

from eca_notebook.protocol import ChatAskQuestionParams, ChatAskQuestionResult
from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.question import AskUserTool, question_text

from .conftest import call


class FakeUser:
    def __init__(self, answer: str | None = "yes", wait: bool = False) -> None:
        self.answer, self.wait = answer, wait
        self.asked: list[ChatAskQuestionParams] = []

    async def __call__(self, params: ChatAskQuestionParams) -> ChatAskQuestionResult:
        self.asked.append(params)
        if self.wait:
            await asyncio.Event().wait()
        return ChatAskQuestionResult(answer=self.answer, cancelled=self.answer is None)


def context(tmp_path: Path, user: FakeUser | None) -> ToolContext:
    return ToolContext(workspace_folders=[tmp_path], chat_id="c1", tool_call_id="t1", ask_question=user)


async def test_lenient_options_and_summary(tmp_path):
    user = FakeUser("Postgres")
    long = "Which of the many databases that exist should this project use from now on?"
    prepared, result = await call(AskUserTool(), {"question": long, "options": '["SQLite", {"label": "Postgres"}, ""]',
                                                  "allowFreeform": False}, context(tmp_path, user))
    assert prepared.summary.startswith("Q: Which") and prepared.summary.endswith("...") and len(prepared.summary) == 50
    [asked] = user.asked
    assert [o.label for o in asked.options or ()] == ["SQLite", "Postgres"]
    assert asked.chat_id == "c1" and asked.tool_call_id == "t1" and asked.allow_freeform is False
    assert result.output == "User answered: Postgres" and not result.error


async def test_blank_question_and_cancel_are_errors(tmp_path):
    _, blank = await call(AskUserTool(), {"question": "   "}, context(tmp_path, FakeUser()))
    _, cancelled = await call(AskUserTool(), {"question": "Go?"}, context(tmp_path, FakeUser(None)))
    assert blank.error and "question" in blank.output
    assert cancelled.error and "cancelled" in cancelled.output


async def test_unanswered_question_times_out(tmp_path):
    _, result = await call(AskUserTool(timeout=0.2), {"question": "Go?"}, context(tmp_path, FakeUser(wait=True)))
    assert result.error and "did not answer" in result.output


async def test_without_a_client_the_question_goes_in_the_chat(tmp_path):
    _, result = await call(AskUserTool(), {"question": "Which?", "options": [{"label": "A", "description": "first"}]},
                           context(tmp_path, None))
    assert not result.error and "next message" in result.output
    [text] = result.contents
    assert text.text == question_text(ChatAskQuestionParams.model_validate(
        {"chatId": "c1", "question": "Which?", "options": [{"label": "A", "description": "first"}]}))
    assert "**A** — first" in text.text and "own words" in text.text
