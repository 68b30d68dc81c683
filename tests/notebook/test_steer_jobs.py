"""Steering and background jobs from a notebook: the widget's box steers the running answer (its button reads
"Steer"; the text waits, removable, until the engine takes it in after the current tool call), ``%eca steer <text>``
does the same, and ``%eca jobs`` lists, shows and kills the jobs the model started. A real IPython shell, the
scripted LLM server and real processes."""

from __future__ import annotations

import asyncio
import json

from eca_notebook.testing.llm_server import Reply, ToolCall
from tests._waiting import until

from .conftest import run_cell


def posted(llm) -> list:
    return [r for r in llm.requests if r.method == "POST"]


async def pending_card(view, call_id: str):
    return await until(lambda: view.cards.get(call_id) if view.cards.get(call_id)
                       and view.cards[call_id].status == "pending" else None)


async def test_the_widget_box_steers_the_running_answer(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([ToolCall("p1", "eca__run_python", json.dumps({"code": "x = 1"}))]), Reply.text("done"))
    await run_cell(shell, "%eca set x")
    view = session.plans[-1].view
    card = await pending_card(view, "p1")
    assert view.send_button.description == "Steer" and not view.send_button.disabled
    view.input.value = "take it back"
    view.send_button.click()
    await until(lambda: session.client.engine.chats[view.chat_id].steer == "take it back")
    assert view.steer_pending == "take it back" and "take it back" in view.steer_note.value
    view.take_back_button.click()  # removable until it is taken in
    await until(lambda: session.client.engine.chats[view.chat_id].steer is None)
    assert view.input.value == "take it back" and view.steer_pending is None
    view.input.value = "use pandas"
    view.send_button.click()
    await until(lambda: session.client.engine.chats[view.chat_id].steer == "use pandas")
    card.approve_button.click()
    await asyncio.wait_for(session.plans[-1].task, 60)
    first, second = posted(llm)[-2:]
    assert "use pandas" not in json.dumps(first.body) and "take it back" not in json.dumps(second.body)
    assert second.body["messages"][-1] == {"role": "user", "content": "use pandas"}
    assert [b.text for b in view.transcript.blocks if b.kind == "user"][-1] == "➡ use pandas"
    assert view.steer_pending is None and view.send_button.description == "Send"


async def test_eca_steer_subcommand(shell, closing, llm, capsys):
    session = closing
    session.display_mode = "widget"
    await run_cell(shell, "%eca steer too early")
    await until(lambda: "Nothing is running" in capsys.readouterr().out)
    llm.enqueue(Reply([ToolCall("p2", "eca__run_python", json.dumps({"code": "y = 2"}))]), Reply.text("ok"))
    await run_cell(shell, "%eca set y")
    view = session.plans[-1].view
    card = await pending_card(view, "p2")
    await run_cell(shell, "%eca steer use polars")
    await until(lambda: session.client.engine.chats[view.chat_id].steer == "use polars")
    card.approve_button.click()
    await asyncio.wait_for(session.plans[-1].task, 60)
    assert posted(llm)[-1].body["messages"][-1] == {"role": "user", "content": "use polars"}


def test_eca_jobs_lists_shows_and_kills(shell, session, llm, capsys):
    command = "echo serving; sleep 300"
    llm.enqueue(Reply([ToolCall("b1", "eca__shell_command", json.dumps({"command": command,
                                                                          "background": "server"}))]),
                Reply.text("It runs."))
    shell.run_cell("%eca -y start the server")
    capsys.readouterr()
    shell.run_cell("%eca jobs")
    out = capsys.readouterr().out
    assert "| `job-1 server` | running |" in out and "echo serving; sleep 300" in out
    registry = session.client.engine.jobs
    job = registry.get("job-1")
    for _ in range(500):
        shell.run_cell("%eca jobs output job-1")
        out = capsys.readouterr().out
        if "serving" in out:
            break
    assert out.startswith("job-1: running") and "serving" in out
    shell.run_cell("%eca jobs kill job-1")
    assert "Killed job-1." in capsys.readouterr().out
    assert job.status == "killed"
    shell.run_cell("%eca jobs kill job-1")
    assert "job-1 is not running." in capsys.readouterr().out
