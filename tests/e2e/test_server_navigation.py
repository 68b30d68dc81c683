"""``editor/getDefinition`` and ``editor/getReferences`` end to end: the model's navigation calls reach a real stdio
client that answers them from "its language server", and the model receives the locations; a ``starting`` answer
is asked again; a client without the capability gets answers from the content index."""

from __future__ import annotations

import pytest

from eca_notebook.protocol import EditorGetDefinitionParams, EditorGetReferencesParams
from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_tools import call, of_type, prompt, tool_results_sent

pytestmark = pytest.mark.e2e

CAPABLE = {"codeAssistant": {"chat": True, "editor": {"definition": True, "references": True}}}
LIB = "def greet(name):\n    return 'hi ' + name\n"
APP = "from lib import greet\n\n\nprint(greet('x'))\nprint(greet('y'))\n"


def _location(uri: str, line: int, character: int) -> dict:
    return {"uri": uri, "range": {"start": {"line": line, "character": character},
                                  "end": {"line": line, "character": character + 5}}}


async def test_definition_and_references_answered_by_the_client(spawn, llm, workspace):
    (workspace / "lib.py").write_text(LIB)
    (workspace / "app.py").write_text(APP)
    llm.enqueue(
        Reply([call("editor_definition", {"path": "app.py", "line": 4, "symbol": "greet"})]),
        Reply([call("editor_references", {"path": "lib.py", "line": 1, "symbol": "greet",
                                          "include_declaration": False}, "call_2")]),
        Reply.text("greet is defined in lib.py and used twice in app.py."),
    )
    eca = await spawn()
    definitions: list[EditorGetDefinitionParams] = []
    references: list[EditorGetReferencesParams] = []
    lib_uri, app_uri = (workspace / "lib.py").resolve().as_uri(), (workspace / "app.py").resolve().as_uri()

    def definition(params):
        definitions.append(EditorGetDefinitionParams.model_validate(params))
        if len(definitions) == 1:  # the language server is still starting: the server must ask again
            return {"status": "starting"}
        return {"status": "success", "locations": [_location(lib_uri, 1, 5)]}

    def reference(params):
        references.append(EditorGetReferencesParams.model_validate(params))
        return {"status": "success", "locations": [_location(app_uri, 4, 7), _location(app_uri, 5, 7)]}

    eca.endpoint.register("editor/getDefinition", definition)
    eca.endpoint.register("editor/getReferences", reference)
    await eca.initialize(workspace, capabilities=CAPABLE)
    chat_id = await prompt(eca, "where is greet?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id, timeout=90)

    assert len(definitions) == 2
    asked = definitions[-1]
    assert asked.uri == app_uri and (asked.position.line, asked.position.character) == (4, 7)  # 1-based, resolved
    [ref] = references
    assert ref.uri == lib_uri and (ref.position.line, ref.position.character) == (1, 5)
    assert ref.include_declaration is False
    bodies = [r.body for r in completion_requests(llm)]
    assert tool_results_sent("openai-responses", bodies[1]) == ["lib.py:1:5: def greet(name):"]
    assert tool_results_sent("openai-responses", bodies[2])[-1] == (
        "app.py:4:7: print(greet('x'))\napp.py:5:7: print(greet('y'))")
    called = of_type(eca.contents(chat_id), "toolCalled")
    assert [c["error"] for c in called] == [False, False]


async def test_without_the_capability_the_index_answers(spawn, llm, workspace):
    (workspace / "lib.py").write_text(LIB)
    (workspace / "app.py").write_text(APP)
    llm.enqueue(
        Reply([call("editor_definition", {"path": "app.py", "line": 4, "symbol": "greet"})]),
        Reply.text("In lib.py."),
    )
    eca = await spawn()
    await eca.initialize(workspace)  # no editor.definition: the content index answers
    chat_id = await prompt(eca, "where is greet?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id, timeout=90)
    bodies = [r.body for r in completion_requests(llm)]
    [result] = tool_results_sent("openai-responses", bodies[1])
    assert result.startswith("lib.py:1:5: def greet(name)") and "content index" in result
