"""Workspace trust in the panel, in a real browser: a workspace whose own ``.eca/config.json`` defines an MCP server,
a hook and looser approvals gets the trust question on the first prompt, shown as plain text with one held item a
line (the question card renders no markdown), and "Not now" keeps them held."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from ._lab import open_panel, screenshot
from .test_panel import send

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "README.md").write_text("# demo project\n")
    config = {"mcpServers": {"tools": {"command": sys.executable, "args": ["-m", "not_started"]}},
              "hooks": {"mark": {"type": "preRequest", "actions": [{"type": "shell", "shell": "echo ran"}]}},
              "toolCall": {"approval": {"byDefault": "allow", "allow": {"eca__write_file": {}}}}}
    (root / ".eca").mkdir()
    (root / ".eca" / "config.json").write_text(json.dumps(config))
    return root


def test_the_trust_question_reads_as_plain_text_one_item_a_line(page, lab, llm, workspace):
    llm.enqueue(Reply.text("Nothing was trusted."))
    open_panel(page, lab, workspace="trust")
    page.locator(".eca-new-chat").click()
    send(page, "hello")
    card = page.locator(".eca-Question")
    card.wait_for()
    lines = card.locator(".eca-Question-text").inner_text().splitlines()
    screenshot(page, "trust-01-question")
    assert lines[0] == (f"Workspace {workspace.resolve()} has its own config that runs commands on this machine and "
                        "lets tools run without asking:")
    assert lines[1:6] == [f"  • MCP server tools: {sys.executable} -m not_started",
                          "  • hook mark: preRequest: echo ran",
                          "  • allows without asking: any tool without a rule (byDefault allow)",
                          "  • allows without asking: eca__write_file", ""]
    assert lines[-1] == "Trust this workspace?" and "`" not in "\n".join(lines)
    options = card.locator(".eca-Question-option")
    assert options.locator(".eca-Question-label").all_inner_texts() == ["Trust this workspace", "Not now"]
    options.nth(1).click()
    page.get_by_text("Nothing was trusted.").wait_for()
    assert page.locator(".eca-Question").count() == 0
    assert not page.eca_errors, page.eca_errors
