"""The code-search tools through a real ``eca-notebook server`` over stdio: the model's tool results and the
``retrieval`` details a client sees."""

from __future__ import annotations

import pytest

from eca_notebook.testing.llm_server import Reply

from ..retrieval.conftest import make_workspace
from .test_server_chat import completion_requests
from .test_server_tools import call, of_type, prompt, tool_results_sent

pytestmark = pytest.mark.e2e


async def test_search_symbols_then_text_over_stdio(spawn, llm, workspace):
    make_workspace(workspace / "app")
    llm.enqueue(
        Reply([call("search_symbols", {"query": "Circle", "kind": "class"})]),
        Reply([call("search_text", {"query": "\"blue green\"", "limit": 5}, "call_2")]),
        Reply.text("Circle is in app/web/shapes.ts."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "Where is Circle?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id, timeout=120)  # the first search builds the index

    bodies = [r.body for r in completion_requests(llm)]
    assert len(bodies) == 3
    assert tool_results_sent("openai-responses", bodies[1]) == [
        'Found 1 symbol for "Circle":\n'
        "app/web/shapes.ts:9  class Circle — export class Circle implements Shape"]
    text = tool_results_sent("openai-responses", bodies[2])[-1]
    assert text == ('Found 1 place for ""blue green"":\napp/notes.md:1-3\n'
                    "  3: The deployment uses a blue green strategy.")
    called = of_type(eca.contents(chat_id), "toolCalled")
    assert [c["details"]["stage"] for c in called] == ["symbol_search", "text_search"]
    assert [c["details"]["resultsCount"] for c in called] == [1, 1]
    assert all(c["error"] is False for c in called)
