"""``chat/askQuestion`` end to end: the model's ``ask_user`` call reaches a real stdio client that answers it (or
that cannot, and gets the question as text), and the chat's Stop ends a question nobody answered."""

from __future__ import annotations

import asyncio

from eca_notebook.protocol import ChatAskQuestionParams
from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_tools import call, of_type, prompt

CAPABLE = {"codeAssistant": {"chat": True, "chatCapabilities": {"askQuestion": True}}}
QUESTION = {"question": "Which database should I use?",
            "options": [{"label": "SQLite (Recommended)", "description": "a file, no server"}, "Postgres"]}


async def test_question_answered_by_the_client(spawn, llm, workspace):
    llm.enqueue(Reply([call("ask_user", QUESTION)]), Reply.text("SQLite it is."))
    eca = await spawn()
    asked: list[ChatAskQuestionParams] = []

    def answer(params):
        asked.append(ChatAskQuestionParams.model_validate(params))
        return {"answer": "Postgres", "cancelled": False}

    eca.endpoint.register("chat/askQuestion", answer)
    await eca.initialize(workspace, capabilities=CAPABLE)
    chat_id = await prompt(eca, "set up a database", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    [question] = asked
    assert question.chat_id == chat_id and question.tool_call_id == "call_1" and question.allow_freeform
    assert question.question == "Which database should I use?"
    assert [(o.label, o.description) for o in question.options or ()] == [
        ("SQLite (Recommended)", "a file, no server"), ("Postgres", None)]
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is False and called["outputs"][0]["text"] == "User answered: Postgres"
    assert "User answered: Postgres" in str(completion_requests(llm)[-1])


async def test_cancelled_question_is_an_error_for_the_model(spawn, llm, workspace):
    llm.enqueue(Reply([call("ask_user", {"question": "Go on?", "allowFreeform": False,
                                         "options": ["yes", "no"]})]), Reply.text("Stopping."))
    eca = await spawn()
    eca.endpoint.register("chat/askQuestion", lambda params: {"answer": None, "cancelled": True})
    await eca.initialize(workspace, capabilities=CAPABLE)
    chat_id = await prompt(eca, "work", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is True and "cancelled" in called["outputs"][0]["text"]


async def test_client_without_the_capability_gets_the_question_as_text(spawn, llm, workspace):
    llm.enqueue(Reply([call("ask_user", QUESTION)]), Reply.text("Tell me when you have decided."))
    eca = await spawn()
    await eca.initialize(workspace)  # no chatCapabilities: nobody can answer during the turn
    chat_id = await prompt(eca, "set up a database", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    texts = [c["text"] for role, c in eca.contents(chat_id) if role == "assistant" and c["type"] == "text"]
    shown = next(t for t in texts if "Which database should I use?" in t)
    assert "SQLite (Recommended)" in shown and "Postgres" in shown
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is False and "next message" in called["outputs"][0]["text"]


async def test_stop_ends_a_waiting_question(spawn, llm, workspace):
    llm.enqueue(Reply([call("ask_user", {"question": "Still there?"})]))
    eca = await spawn()
    asked = asyncio.Event()
    cancelled = asyncio.Event()

    async def never_answer(params):
        asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # the server's $/cancelRequest after the Stop
            cancelled.set()
            raise

    eca.endpoint.register("chat/askQuestion", never_answer)
    await eca.initialize(workspace, capabilities=CAPABLE)
    chat_id = await prompt(eca, "work", model="openai/gpt-4.1")
    await asyncio.wait_for(asked.wait(), 60)
    await eca.notify("chat/promptStop", {"chatId": chat_id})
    await eca.wait_idle(chat_id, timeout=60)
    await asyncio.wait_for(cancelled.wait(), 60)
