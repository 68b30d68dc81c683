"""Chat titles from the user's own words (``_text.user_words``, ``engine._chat.title_from``): what a host put before
them is skipped — Jupyter AI's notebook guidance, a resent history, a ``<system-…>`` element."""

from __future__ import annotations

import pytest

from eca_notebook._text import is_host_guidance, strip_controls, user_words, visible
from eca_notebook.acp._prompt import EmbeddedResources, prompt_input
from eca_notebook.acp._schema import TextBlock
from eca_notebook.engine.chats._chat import title_from

#: Exactly what Jupyter AI 3.2.0 (jupyter-ai-acp-client 0.3.3, ``BaseAcpPersona.NOTEBOOK_EDITING_GUIDANCE``) puts
#: before the first prompt of a session, joined to it with a blank line (tests/jupyter_ai checks it is still so).
JUPYTER_AI_GUIDANCE = (
    "System note: When creating or editing Jupyter notebooks (.ipynb), use "
    "the Jupyter notebook MCP tools (for example insert_cell, edit_cell, "
    "delete_cell, read_notebook). Do not write or edit .ipynb files directly "
    "with generic file-write/edit tools — direct writes are blocked to "
    "prevent notebook corruption."
)


def test_jupyter_ai_guidance_is_skipped():
    assert title_from(JUPYTER_AI_GUIDANCE + "\n\n" + "Plot the monthly sales") == "Plot the monthly sales"


def test_a_resent_history_is_skipped():
    message = ("The previous ACP session could not be loaded. Use this recent chat transcript as historical context "
               "for continuity.\n<conversation_history>\nalice: hi\nECA: hello\n</conversation_history>\n\n"
               "Current user message:\n" + JUPYTER_AI_GUIDANCE + "\n\nfix the failing test")
    assert title_from(message) == "fix the failing test"


@pytest.mark.parametrize("message, title", [
    ("<system-reminder>be brief\n\nreally</system-reminder>\nrename foo", "rename foo"),
    ("[System] You run inside Jupyter.\n\nwhat is in data.csv?", "what is in data.csv?"),
    ("System: you are a guest here\n\nSystem note: no raw writes\n\nexplain cell 3", "explain cell 3"),
])
def test_other_host_preambles_are_skipped(message: str, title: str):
    assert title_from(message) == title


@pytest.mark.parametrize("message", ["System: reboot the cluster", "system note: one paragraph only",
                                     "Explain the system: how does it work?\n\nand why"])
def test_the_users_own_words_stay(message: str):
    assert user_words(message) == message.strip()


def test_guidance_is_recognised_only_at_the_start():
    assert is_host_guidance(JUPYTER_AI_GUIDANCE)
    assert not is_host_guidance("Please read the system note: it matters")


def test_acp_guidance_block_then_the_users_block():
    """The generic ACP form: the host's guidance as the first text block, the user's words in a later one."""
    resources = EmbeddedResources()
    prompt = prompt_input([TextBlock(type="text", text=JUPYTER_AI_GUIDANCE),
                           TextBlock(type="text", text="Summarise notes.md")], resources)
    assert prompt.message == JUPYTER_AI_GUIDANCE + "\n\nSummarise notes.md"  # the model still gets both
    assert title_from(prompt.message) == "Summarise notes.md"
    plain = prompt_input([TextBlock(type="text", text="one"), TextBlock(type="text", text="two")], resources)
    assert plain.message == "one two"  # ordinary blocks join as before


@pytest.mark.parametrize(("text", "shown"), [
    ("evil\u202efdp.sh", "evil\\u202efdp.sh"),  # shows as "evilhs.pdf" when left as itself
    ("a\u2066b\u2069c\u200e\u200f\u061c", "a\\u2066b\\u2069c\\u200e\\u200f\\u061c"),
    ("ls\nrm -rf ~", "ls\\nrm -rf ~"),
    ("x\r\t\x1b[31my\x7f", "x\\r\\t\\x1b[31my\\x7f"),
    ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
    ("café → ok", "café → ok"),
])
def test_visible_writes_out_controls_and_bidi_characters(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert visible(shown) == shown  # showing twice changes nothing


def test_strip_controls_removes_terminal_sequences_and_shows_other_controls():
    """Tool output quoting a hostile file or file name: no colour, hyperlink, title or clipboard sequence survives,
    a stray control shows as \\xNN, tabs, newlines and ordinary text stay."""
    text = ("a\x1b[31mred\x1b[0m b \x1b]8;;https://evil.example\x07click\x1b]8;;\x07 c\x1b]0;title\x1b\\ "
            "\x1b]52;c;ZXZpbA==\x07d\x07e\x00f\ttab\nnl \x9b31m x\x1bc y")
    assert strip_controls(text) == "ared b click c d\\x07e\\x00f\ttab\nnl  x y"
    assert strip_controls("plain text\r\n") == "plain text\r\n"
