"""The model's questions (``ask_user`` → ``chat/askQuestion``) in the notebook: the question card on its own, and a
``%eca`` turn whose question is answered by clicking an option, by typing, or ended by the chat's Stop."""

from __future__ import annotations

import asyncio
import json

from eca_notebook.notebook.widgets import ChatView, QuestionCard
from eca_notebook.testing.llm_server import Reply, ToolCall
from tests._waiting import until

from .conftest import run_cell

PARAMS = {"chatId": "c1", "question": "Which database?", "toolCallId": "q1", "allowFreeform": True,
          "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres"}]}


def test_card_answers_once_with_an_option():
    answers: list = []
    card = QuestionCard(PARAMS, answers.append)
    assert "Which database?" in card.title.value and "a file" in card.title.value
    assert [b.description for b in card.option_buttons] == ["SQLite", "Postgres"]
    card.option_buttons[1].click()
    card.option_buttons[0].click()  # done: ignored
    card.skip_button.click()
    assert answers == ["Postgres"] and card.done and "Answered: Postgres" in card.status.value
    assert all(b.disabled for b in card.option_buttons) and card.text.disabled


def test_card_typed_answer_skip_and_withdraw():
    answers: list = []
    typed = QuestionCard(PARAMS, answers.append)
    typed.send_button.click()  # blank: nothing
    typed.text.value = "  DuckDB  "
    typed.send_button.click()
    skipped = QuestionCard(PARAMS, answers.append)
    skipped.skip_button.click()
    withdrawn = QuestionCard({**PARAMS, "allowFreeform": False}, answers.append)
    assert withdrawn.free_box.layout.display == "none"
    withdrawn.withdraw()
    assert answers == ["DuckDB", None]
    assert withdrawn.done and "No longer waiting" in withdrawn.status.value


def test_chat_view_shows_questions_under_the_transcript():
    view = ChatView()
    card = view.ask(PARAMS, lambda answer: None)
    assert view.questions.children == (card.widget,)
    assert view.widget.children.index(view.questions) > view.widget.children.index(view.blocks_box)


def ask(question: dict) -> Reply:
    return Reply([ToolCall("q1", "eca__ask_user", json.dumps(question))])


async def test_option_click_answers_the_model(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(ask({"question": "Which database?", "options": ["SQLite", "Postgres"]}), Reply.text("Postgres it is."))
    await run_cell(shell, "%eca set up a database")
    plan = session.plans[-1]
    view = plan.view
    await until(lambda: view.questions.children)
    [card] = [c for c in view.questions.children]
    buttons = [b for b in card.children[1].children]
    assert [b.description for b in buttons] == ["SQLite", "Postgres"]
    buttons[1].click()
    result = await asyncio.wait_for(plan.task, 60)
    assert result.text == "Postgres it is."
    tool_message = [m for m in llm.requests[-1].body["messages"] if m["role"] == "tool"][0]
    assert tool_message["content"] == "User answered: Postgres"


async def test_stop_withdraws_the_question(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(ask({"question": "Still there?"}))
    await run_cell(shell, "%eca work")
    plan = session.plans[-1]
    view = plan.view
    await until(lambda: view.questions.children)
    plan.view.stop_button.click()
    result = await asyncio.wait_for(plan.task, 60)
    assert result.stopped and not view.running
    status = view.questions.children[0].children[-1].children[1]
    await until(lambda: "No longer waiting" in status.value)


async def test_markdown_output_cannot_answer(shell, closing, llm):
    session = closing
    session.display_mode = "markdown"
    llm.enqueue(ask({"question": "Which one?"}), Reply.text("I will wait for your choice."))
    await run_cell(shell, "%eca --wait pick")
    tool_message = [m for m in llm.requests[-1].body["messages"] if m["role"] == "tool"][0]
    assert "cancelled" in tool_message["content"]
