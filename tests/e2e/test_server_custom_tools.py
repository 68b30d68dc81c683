"""Custom tools through a real ``eca-notebook server``: the reference's documented example in the user's global config
(its ``${file:}`` description too) is listed in the native ``tool/serverUpdated``, asks, runs on approval and its
output goes back to the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer

from .test_server_tools import call, of_type, prompt, tool_results_sent, wait_tool_run

pytestmark = pytest.mark.e2e

# The reference's docs/config/tools.md, "Custom Tools", Example 2, verbatim.
REFERENCE_EXAMPLE_2 = """
{
  "customTools": {
    "file-search": {
      "description": "${file:tools/my-tool.md}",
      "command": "find {{directory}} -name {{pattern}}",
      "schema": {
        "properties": {
          "directory": {
            "type": "string",
            "description": "The directory to start the search from."
          },
          "pattern": {
            "type": "string",
            "description": "The search pattern for the filename (e.g., '*.clj')."
          }
        },
        "required": ["directory", "pattern"]
      }
    }
  }
}
"""


async def test_the_reference_example_from_the_global_config(spawn: Any, llm: ScriptedLLMServer, workspace: Path,
                                                            home: Path) -> None:
    config_dir = home / ".config" / "eca"
    (config_dir / "tools").mkdir(parents=True)
    (config_dir / "config.json").write_text(REFERENCE_EXAMPLE_2)
    (config_dir / "tools" / "my-tool.md").write_text("Finds files by name below a directory.")
    (workspace / "src").mkdir()
    (workspace / "src" / "core.clj").write_text("(ns core)")
    (workspace / "top.clj").write_text("")  # a glob the shell expanded would find this one instead
    llm.enqueue(Reply([call("file-search", {"directory": "src", "pattern": "*.clj"})]), Reply.text("Found it."))

    eca = await spawn()
    await eca.initialize(workspace)
    native = next(p for p in eca.of("tool/serverUpdated") if p.get("type") == "native")
    [tool] = [t for t in native["tools"] if t["name"] == "file-search"]
    assert tool["description"] == "Finds files by name below a directory."
    assert tool["parameters"]["required"] == ["directory", "pattern"] and not tool.get("disabled")
    assert tool["custom"] is True and all("custom" not in t for t in native["tools"] if t["name"] != "file-search")

    chat_id = await prompt(eca, "where is the clojure code?", model="openai/gpt-4.1")
    run = await wait_tool_run(eca)
    assert run["manualApproval"] is True and run["name"] == "file-search"
    assert run["summary"] == "file-search: $ find src -name '*.clj'" and run["risk"]["level"] == "medium"
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_idle(chat_id)
    [called] = of_type(eca.contents(chat_id), "toolCalled")
    assert called["error"] is False
    [sent] = tool_results_sent("openai-responses", llm.requests[-1].body)
    assert sent == "Exit code: 0\n\nsrc/core.clj\n"
    first = next(r for r in llm.requests if r.body and "input" in r.body)
    assert "eca__file-search" in json.dumps(first.body["tools"])  # offered to the model
