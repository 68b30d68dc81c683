"""``%eca`` in a real IPython shell against the scripted LLM server.

Synchronous tests run the shell as a terminal IPython does (no running loop: the turn runs to completion, the answer
is printed as Markdown). Async tests run cells the way ipykernel does (``run_cell`` helper: the cell is awaited on
the running loop), where ``%eca`` must return at once while the widget keeps streaming.
"""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

from eca_notebook.notebook._display import display_mode_for
from eca_notebook.testing.llm_server import Delay, Reasoning, Reply, Stall, Text, ToolCall, Usage
from tests._waiting import until

from .conftest import MODEL, run_cell


def last_user_message(llm) -> str:
    return llm.requests[-1].body["messages"][-1]["content"]


def posted(llm) -> list:
    return [r for r in llm.requests if r.method == "POST"]


# -- blocking (terminal IPython) ---------------------------------------------------------------------------------


def test_prompt_runs_to_completion_and_prints_markdown(shell, session, llm, capsys):
    llm.enqueue(Reply([Reasoning("hmm"), Text("The answer is "), Text("**42**."), Usage(12, 3)]))
    result = shell.run_cell("%eca what is the answer?")
    assert result.success
    out = capsys.readouterr().out
    assert "The answer is **42**." in out and "15 tokens this session" in out
    body = posted(llm)[-1].body
    assert body["model"] == "demo"
    assert body["messages"][-1]["content"] == "what is the answer?"  # the trailing ? did not become help syntax
    assert session.plans[-1].view.text == "The answer is **42**."


def test_interpolation_and_mentions_reach_the_model(shell, llm):
    llm.enqueue(Reply.text("ok"))
    shell.run_cell("rows = [3, 1, 2]\nlimit = 2\n")
    shell.run_cell("%eca sort {rows} and keep {limit}; see @rows, not me@example.com")
    message = last_user_message(llm)
    assert message.startswith("sort [3, 1, 2] and keep 2; see @rows, not me@example.com\n\n")
    assert "### `rows`\ntype: list\nlen: 3" in message


def test_cell_magic_with_in_and_out_history(shell, llm):
    shell.run_cell("21 * 2", store_history=True)
    n = shell.execution_count - 1
    llm.enqueue(Reply.text("ok"))
    shell.run_cell(f"%%eca\nExplain {{In[{n}]}} which gave {{Out[{n}]}}; @In[{n}]\n")
    message = last_user_message(llm)
    assert message.startswith("Explain 21 * 2 which gave 42;")
    assert "```python\n21 * 2\n```" in message


def test_code_format_fills_the_next_cell(shell, llm):
    llm.enqueue(Reply.text("Sure:\n```python\ndef add(a, b):\n    return a + b\n```\nDone."))
    shell.run_cell("%eca -o code write add")
    assert shell.rl_next_input == "def add(a, b):\n    return a + b"


def test_text_format(shell, llm, capsys):
    llm.enqueue(Reply.text("plain *answer*"))
    shell.run_cell("%eca -o text hi")
    assert "plain *answer*" in capsys.readouterr().out


def test_chats_continue_new_and_named(shell, session, llm):
    llm.enqueue(Reply.text("one"), Reply.text("two"), Reply.text("three"), Reply.text("four"))
    shell.run_cell("%eca first")
    first = session.chat_id
    shell.run_cell("%eca second")
    assert session.chat_id == first
    assert [m["content"] for m in posted(llm)[-1].body["messages"] if m["role"] == "user"] == ["first", "second"]
    shell.run_cell("%eca --new third")
    assert session.chat_id != first
    assert [m["content"] for m in posted(llm)[-1].body["messages"] if m["role"] == "user"] == ["third"]
    shell.run_cell("%eca -c analysis fourth")
    assert session.chat_id == "analysis"
    shell.run_cell("%eca new")
    assert session.chat_id not in (first, "analysis")


def test_fix_sends_the_traceback_and_the_failing_cell(shell, llm, capsys):
    shell.run_cell("%eca fix")
    assert "No exception to fix yet" in capsys.readouterr().out
    shell.run_cell("def ratio(a, b):\n    return a / b\n\nratio(1, 0)\n", store_history=True)
    failing = shell.execution_count - 1
    llm.enqueue(Reply.text("Division by zero: check b first."))
    shell.run_cell("%eca fix keep it short")
    message = last_user_message(llm)
    assert "raised the exception below" in message and "Note from the user: keep it short" in message
    assert "ZeroDivisionError: division by zero" in message and "return a / b" in message
    assert f"The cell In[{failing}] that raised it:" in message
    assert "Division by zero: check b first." in capsys.readouterr().out


def test_subcommands(shell, session, llm, capsys):
    shell.run_cell("%eca model")
    assert f"**{MODEL}** (selected)" in capsys.readouterr().out
    shell.run_cell("%eca model nope/missing")
    assert "unknown model" in capsys.readouterr().err
    shell.run_cell(f"%eca model {MODEL}")
    assert f"Model: {MODEL}" in capsys.readouterr().out
    shell.run_cell("%eca behavior plan")
    assert "Agent: plan" in capsys.readouterr().out
    shell.run_cell("%eca behavior")
    assert "**plan** (selected)" in capsys.readouterr().out
    shell.run_cell("%eca agent agent")  # the deprecated id of `code`
    assert "Agent: code" in capsys.readouterr().out
    shell.run_cell("%eca agent")
    assert "**code** (selected)" in capsys.readouterr().out
    shell.run_cell("%eca chats")
    assert "No chats yet." in capsys.readouterr().out
    llm.enqueue(Reply.text("hello"))
    shell.run_cell("%eca say hello")
    capsys.readouterr()
    shell.run_cell("%eca chats")
    out = capsys.readouterr().out
    assert f"| ▶ | `{session.chat_id}` | say hello |" in out
    shell.run_cell("%eca config")
    out = capsys.readouterr().out
    assert f"- model: `{MODEL}`" in out and "`run_python`" in out and "`list_variables`" in out
    shell.run_cell("%eca mcp")
    assert "No MCP servers" in capsys.readouterr().out
    shell.run_cell("%eca stop")
    assert "Nothing is running." in capsys.readouterr().out
    shell.run_cell("%eca help")
    assert "Subcommands:" in capsys.readouterr().out
    shell.run_cell("%eca --bogus")
    assert "unknown option --bogus" in capsys.readouterr().err


def test_mcp_lists_servers_from_status_updates(shell, session):
    session._on_notification("tool/serverUpdated", {"type": "mcp", "name": "github", "status": "running",
                                                    "command": "npx", "args": ["gh-mcp"],
                                                    "tools": [{"name": "search"}, {"name": "issue"}]})
    assert "| github | running | 2 | `npx gh-mcp` |" in session.describe_mcp()


def test_eca_commands_are_prompts(shell, llm, capsys):
    shell.run_cell("%eca /doctor")
    out = capsys.readouterr().out
    assert "eca-notebook" in out and "Selected model: scripted/demo" in out
    assert posted(llm) == []  # answered by the engine itself


def test_file_context(shell, llm, workspace):
    llm.enqueue(Reply.text("ok"))
    shell.run_cell("%eca -f data.csv what columns?")
    assert "a,b" in last_user_message(llm)


def test_unattended_policy_rejects_changes_and_yes_approves(shell, llm, workspace, capsys):
    args = json.dumps({"path": "new.txt", "content": "hi\n"})
    llm.enqueue(Reply([ToolCall("c1", "eca__write_file", args)]), Reply.text("I could not."))
    shell.run_cell("%eca write new.txt")
    out = capsys.readouterr().out
    assert not (workspace / "new.txt").exists()
    assert "write_file" in out and "rejected" in out and "+hi" in out  # the diff is in the record
    llm.enqueue(Reply([ToolCall("c2", "eca__write_file", args)]), Reply.text("Written."))
    shell.run_cell("%eca -y write new.txt")
    assert (workspace / "new.txt").read_text() == "hi\n"
    assert "Written." in capsys.readouterr().out


def test_kernel_tools_are_offered_and_run_python_runs_in_the_namespace(shell, llm):
    shell.run_cell("counter = 1\n")
    llm.enqueue(Reply([ToolCall("k1", "eca__list_variables", "{}")]),
                Reply([ToolCall("k2", "eca__run_python", json.dumps({"code": "counter += 41\nprint(counter)"}))]),
                Reply.text("counter is now 42"))
    shell.run_cell("%eca -y bump the counter")
    assert shell.user_ns["counter"] == 42
    offered = {t["function"]["name"] for t in posted(llm)[0].body["tools"]}
    assert {"eca__list_variables", "eca__inspect_variable", "eca__run_python", "eca__insert_cell",
            "eca__replace_cell"} <= offered
    tool_results = [m for m in posted(llm)[-1].body["messages"] if m["role"] == "tool"]
    assert "counter: int (value=1)" in tool_results[0]["content"] and tool_results[1]["content"] == "42"


def test_two_prompts_in_one_cell_run_in_order(shell, session, llm):
    llm.enqueue(Reply.text("A"), Reply.text("B"))
    shell.run_cell("%eca first\n%eca second\n")
    assert [p.view.text for p in session.plans[-2:]] == ["A", "B"]


def test_display_mode_detection(monkeypatch):
    assert display_mode_for(SimpleNamespace()) == "markdown"  # terminal IPython
    assert display_mode_for(SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=False))) == "markdown"  # nbclient
    assert display_mode_for(SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=True))) == "widget"  # JupyterLab
    monkeypatch.setenv("ECA_NOTEBOOK_DISPLAY", "widget")
    assert display_mode_for(SimpleNamespace()) == "widget"


# -- in a running loop (as in ipykernel) -------------------------------------------------------------------------


async def test_magic_returns_at_once_and_the_widget_streams(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([Text("Hel"), Delay(0.3), Text("lo"), Usage(5, 2)]))
    await run_cell(shell, "%eca hi")
    plan = session.plans[-1]
    assert not plan.task.done() and plan.view.running  # the cell is over, the answer is not
    result = await asyncio.wait_for(plan.task, 60)
    view = plan.view
    assert result.text == "Hello" and view.text == "Hello"
    markdown = [w for w in view.blocks_box.children if hasattr(w, "outputs")]
    assert markdown[0].outputs[0]["data"]["text/plain"] == "Hello"
    assert "7 tokens" in view.footer.value and not view.running


async def test_approve_click_runs_the_tool(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    shell.run_cell("x = 1\n")
    llm.enqueue(Reply([ToolCall("p1", "eca__run_python", json.dumps({"code": "x = 99"}))]), Reply.text("done"))
    await run_cell(shell, "%eca set x")
    view = session.plans[-1].view
    card = await until(lambda: view.cards.get("p1") if view.cards.get("p1") and
                       view.cards["p1"].status == "pending" and view.cards["p1"].buttons.layout.display is None
                       else None)
    assert shell.user_ns["x"] == 1  # nothing ran before the click
    card.approve_button.click()
    await asyncio.wait_for(session.plans[-1].task, 60)
    assert shell.user_ns["x"] == 99
    assert card.status == "done" and "done" in card.header.value


async def test_reject_click_does_not_run_the_tool(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    shell.run_cell("x = 1\n")
    llm.enqueue(Reply([ToolCall("p2", "eca__run_python", json.dumps({"code": "x = 99"}))]), Reply.text("ok, not"))
    await run_cell(shell, "%eca set x")
    view = session.plans[-1].view
    card = await until(lambda: view.cards.get("p2") if view.cards.get("p2") and view.cards["p2"].status == "pending"
                       else None)
    card.reject_button.click()
    result = await asyncio.wait_for(session.plans[-1].task, 60)
    assert shell.user_ns["x"] == 1
    assert card.status == "rejected" and result.tool_calls[0].status == "rejected"
    tool_message = [m for m in posted(llm)[-1].body["messages"] if m["role"] == "tool"][0]
    assert "rejected" in tool_message["content"]


async def test_insert_cell_applied_only_on_approval(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    source = "import math\nmath.tau\n"
    llm.enqueue(Reply([ToolCall("i1", "eca__insert_cell", json.dumps({"source": source}))]), Reply.text("added"))
    await run_cell(shell, "%eca add a cell")
    view = session.plans[-1].view
    card = await until(lambda: view.cards.get("i1") if view.cards.get("i1") and view.cards["i1"].status == "pending"
                       else None)
    await until(lambda: "eca-diff-add" in card.diff_view.value)
    assert "+import math" in card.diff_view.value.replace("&nbsp;", " ")
    assert not hasattr(shell, "rl_next_input")
    card.approve_button.click()
    await asyncio.wait_for(session.plans[-1].task, 60)
    assert shell.rl_next_input == source


async def test_stop_button_stops_the_answer(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([Text("partial "), Stall(30)]))
    await run_cell(shell, "%eca long answer")
    plan = session.plans[-1]
    await until(lambda: "partial" in plan.view.text)
    plan.view.stop_button.click()
    result = await asyncio.wait_for(plan.task, 60)
    assert result.stopped and plan.view.text == "partial " and not plan.view.running
    assert llm.wait_for_disconnect(timeout=30)


async def test_stop_subcommand(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([Text("partial "), Stall(30)]))
    await run_cell(shell, "%eca long answer")
    plan = session.plans[-1]
    await until(lambda: "partial" in plan.view.text)
    await run_cell(shell, "%eca stop")
    assert plan.task.done() and plan.result.stopped


async def test_wait_option_keeps_the_cell_until_the_answer(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([Text("slow"), Delay(0.2), Text(" answer")]))
    await run_cell(shell, "%eca --wait hi")
    plan = session.plans[-1]
    assert plan.task is None and plan.view.text == "slow answer" and not plan.view.running


async def test_two_prompts_at_once_queue_in_the_same_chat(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([Text("first"), Delay(0.2)]), Reply.text("second"))
    await run_cell(shell, "%eca one\n%eca two\n")
    first, second = session.plans[-2:]
    assert first.chat_id == second.chat_id
    assert "Queued" in second.view.transcript.progress
    await asyncio.wait_for(asyncio.gather(first.task, second.task), 60)
    assert (first.view.text, second.view.text) == ("first", "second")
    history = [m["content"] for m in posted(llm)[-1].body["messages"] if m["role"] == "user"]
    assert history == ["one", "two"]


async def test_a_new_prompt_rejects_the_call_an_earlier_one_waits_on_then_runs(shell, closing, llm):
    """A diff left unanswered never blocks the chat: under Run All in JupyterLab a `%eca` without -y leaves its card
    waiting, and the chat's next `%eca -w` (notebooks/03) would wait behind it forever."""
    session = closing
    session.display_mode = "widget"
    shell.run_cell("x = 1\n")
    llm.enqueue(Reply([ToolCall("p3", "eca__run_python", json.dumps({"code": "x = 99"}))]), Reply.text("left it"),
                Reply.text("second"))
    await run_cell(shell, "%eca set x")
    first = session.plans[-1]
    card = await until(lambda: first.view.cards.get("p3") if first.view.cards.get("p3")
                       and first.view.cards["p3"].status == "pending" else None)
    await asyncio.wait_for(run_cell(shell, "%eca -w something else"), 60)
    second = session.plans[-1]
    assert second.view.text == "second" and first.view.text == "left it"
    assert card.status == "rejected" and first.result.tool_calls[0].status == "rejected"
    assert shell.user_ns["x"] == 1


async def test_continue_from_the_input_box(shell, closing, llm):
    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply.text("first"), Reply.text("second"))
    await run_cell(shell, "%eca one")
    view = session.plans[-1].view
    await asyncio.wait_for(session.plans[-1].task, 60)
    view.input.value = "and @view_var?"
    shell.user_ns["view_var"] = 7
    view.send_button.click()
    await until(lambda: session.plans[-1].view is view and session.plans[-1].task is not None)
    await asyncio.wait_for(session.plans[-1].task, 60)
    assert view.text == "second"
    assert "### `view_var`" in last_user_message(llm)
    assert [b.kind for b in view.transcript.blocks] == ["user", "text", "user", "text"]


async def test_magic_from_a_thread_waits_on_the_session_loop(shell, closing, llm):
    session = closing
    session.display_mode = "markdown"
    llm.enqueue(Reply.text("warm"), Reply.text("from a thread"))
    await run_cell(shell, "%eca warm up")  # binds the session to this loop
    await asyncio.wait_for(session.plans[-1].task or asyncio.sleep(0), 60)
    seen = {}

    def worker():
        seen["thread"] = threading.current_thread().name
        shell.run_line_magic("eca", "hello from a thread")

    await asyncio.to_thread(worker)
    assert session.plans[-1].view.text == "from a thread"
    assert seen["thread"] != threading.main_thread().name


async def test_coalescing_bounds_markdown_updates(shell, closing, llm):
    """5,000 chunks streamed over ~1 s: at most ~20 redraws per second of stream time, plus the final one."""
    session = closing
    session.display_mode = "widget"
    steps = []
    for i in range(5000):
        steps.append(Text(f"w{i} "))
        if i % 500 == 499:
            steps.append(Delay(0.1))
    llm.enqueue(Reply(steps))
    loop = asyncio.get_running_loop()
    await run_cell(shell, "%eca stream a lot")
    plan = session.plans[-1]
    times = []
    original = plan.view._flush

    def counting_flush():
        times.append(loop.time())
        original()

    plan.view.coalescer._flush_cb = counting_flush
    started = loop.time()
    await asyncio.wait_for(plan.task, 60)
    elapsed = loop.time() - started
    assert plan.view.text.count("w") == 5000
    updates = plan.view.markdown_updates
    assert updates >= 2  # it did stream, not just render once at the end
    print(f"{updates} markdown updates in {elapsed:.2f} s")
    assert updates <= elapsed * 20 + 3, (updates, elapsed)


def test_variant_option_selects_the_models_variant_for_the_chat(shell, llm):
    llm.enqueue(Reply.text("ok"), Reply.text("ok"), Reply.text("ok"))
    assert shell.run_cell("%eca -v quick hello").success
    assert posted(llm)[-1].body["reasoning_effort"] == "low"  # the configured variant's payload
    assert shell.run_cell("%eca again").success  # the chat keeps its variant
    assert posted(llm)[-1].body["reasoning_effort"] == "low"
    assert shell.run_cell("%eca -n fresh").success  # a new chat starts without it
    assert "reasoning_effort" not in posted(llm)[-1].body
