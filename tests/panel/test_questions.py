"""The model's questions in the panel, in a real browser: ``ask_user`` reaches the panel as ``chat/askQuestion``
over its WebSocket, the question card answers it with an option's button and then with typed text, and the answers
are what the model reads back."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_questions_are_answered_with_an_option_and_with_text(page, lab, llm):
    first = {"question": "Which database should I use?",
             "options": [{"label": "SQLite (Recommended)", "description": "a file, no server"},
                         {"label": "Postgres", "description": "a server"}]}
    llm.enqueue(Reply([ToolCall("q_1", "eca__ask_user", json.dumps(first))]),
                Reply([ToolCall("q_2", "eca__ask_user", json.dumps({"question": "Name of the database?"}))]),
                Reply.text("Setting up Postgres as inventory."))
    open_panel(page, lab, workspace="questions")
    page.locator(".eca-new-chat").click()
    send(page, "set up a database")
    card = page.locator(".eca-Question")
    card.wait_for()
    assert card.locator(".eca-Question-text").inner_text() == "Which database should I use?"
    options = card.locator(".eca-Question-option")
    assert options.locator(".eca-Question-label").all_inner_texts() == ["SQLite (Recommended)", "Postgres"]
    assert "a server" in options.nth(1).inner_text()
    screenshot(page, "questions-01-options")
    options.nth(1).click()

    page.locator(".eca-Question-text", has_text="Name of the database?").wait_for()
    assert page.locator(".eca-Question-option").count() == 0
    field = page.locator(".eca-Question-input")
    field.fill("inventory")
    field.press("Enter")
    page.get_by_text("Setting up Postgres as inventory.").wait_for()
    assert page.locator(".eca-Question").count() == 0, "answered questions leave the panel"
    told = [json.dumps(r.body) for r in llm.requests if r.method == "POST"]
    assert "User answered: Postgres" in told[-2] and "User answered: inventory" in told[-1]
    screenshot(page, "questions-02-answered")
    assert not page.eca_errors, page.eca_errors
