"""A real generation that loops is cut short: the embedded model forced into a loop by a grammar."""

from __future__ import annotations

import httpx
import pytest

from eca_notebook.engine.chats._chat import Chat
from eca_notebook.engine.config._providers import ModelInfo
from eca_notebook.engine.turn._turn import Turn
from eca_notebook.providers import local
from eca_notebook.providers.base import AssistantMessage, UserMessage

pytestmark = [
    pytest.mark.local,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not local.local_model_status().available, reason=local.local_model_status().message),
]


async def test_a_real_looping_generation_is_stopped_early():
    chat = Chat(id="loop", behavior="agent")
    chat.messages.append(UserMessage("Count."))
    seen: list[tuple[str, dict]] = []
    # llama.cpp's grammar makes the model emit "1.1.1.…" until its token cap (1,024 tokens: ~2,000 characters)
    info = ModelInfo(id=local.MODEL_ID, provider="local", name=local.MODEL_NAME,
                     extra_payload={"grammar": 'root ::= ("1.")+', "ignore_eos": True})
    async with httpx.AsyncClient() as http:
        provider = local.LocalProvider(http)
        try:
            turn = Turn(chat, provider, info, "", lambda _chat, role, content: seen.append(
                (role, content.dump() if hasattr(content, "dump") else content)),
                        stop_loops=True)
            assert await turn.run()
        finally:
            await local.shutdown_local_runtimes()
    streamed = "".join(c["text"] for role, c in seen if role == "assistant" and c["type"] == "text")
    assert streamed.startswith("1.1.1.")
    assert len(streamed) < 1000  # stopped soon after the loop was certain, not at the cap
    notes = [c["text"] for role, c in seen if role == "system" and c["type"] == "text"]
    assert any("kept repeating itself" in note for note in notes)
    [answer] = [m for m in chat.messages if isinstance(m, AssistantMessage)]
    assert len(answer.text) <= 2


# -- the newcomer's first contact (issue #30) -------------------------------------------------------------------------

def local_config() -> dict:
    return {"defaultModel": local.MODEL_ID}


async def test_a_large_notebook_attached_keeps_the_prompt_within_the_budget(workspace, env):
    """The panel attaches the active notebook to every prompt; the embedded model's requests stay within
    SMALL_MODEL_PROMPT_TOKENS as the model itself counts them (its usage), the history included — with notebook 05
    attached the first word took 22 s, and the fourth question ran a compaction first."""
    from eca_notebook.client import EcaClient
    from eca_notebook.engine.turn._window import SMALL_MODEL_PROMPT_TOKENS

    from .test_small_model import PANEL_PROMPTS, write_large_notebook

    write_large_notebook(workspace / "analysis.ipynb", cells=120)
    notebook = [{"type": "file", "path": "analysis.ipynb"}]
    eca = await EcaClient.start(workspace=workspace, config=local_config(), env=env, approval=lambda content: False)
    try:
        measured: list[int] = []
        for _ in range(3):  # a chat of two questions; again when no answer reported its usage
            chat_id = None
            for message in (PANEL_PROMPTS[0], PANEL_PROMPTS[3]):
                result = await eca.prompt(message, chat_id=chat_id, contexts=notebook, timeout=240)
                assert result.ok, result.error
                assert result.model == local.MODEL_ID
                chat_id = result.chat_id
                assert not any("compact" in note.lower() for note in result.system), result.system
                if result.usage is not None:  # (not reported when a looping answer is cut short)
                    measured.append(result.usage["messageInputTokens"])
            if len(measured) >= 2:
                break
        assert measured, "no answer reported its usage"
        assert all(0 < sent <= SMALL_MODEL_PROMPT_TOKENS + 32 for sent in measured), measured  # (+ the template)
    finally:
        await eca.aclose()
        await local.shutdown_local_runtimes()


async def test_the_embedded_model_says_what_it_is_once_per_chat(workspace, env):
    """A newcomer is told, once per chat, that this is a small offline demo model, and how to connect a real one
    — a system text every door shows (the panel adds its "Connect a model" button to it)."""
    from eca_notebook.client import EcaClient
    from eca_notebook.engine.turn._small_model import DEMO_NOTICE, DEMO_NOTICE_MARK

    eca = await EcaClient.start(workspace=workspace, config=local_config(), env=env, approval=lambda content: False)
    try:
        first = await eca.prompt("Say hi.", timeout=240)
        assert first.ok, first.error
        again = await eca.prompt("Say hi again.", chat_id=first.chat_id, timeout=240)
        other = await eca.prompt("Say hello.", timeout=240)
        assert again.ok and other.ok, (again.error, other.error)
        notices = lambda result: [n for n in result.system if DEMO_NOTICE_MARK in n]  # noqa: E731
        assert notices(first) == [DEMO_NOTICE] and notices(again) == [] and notices(other) == [DEMO_NOTICE]
        assert "Connect a model" in DEMO_NOTICE and "config.json" in DEMO_NOTICE
        # said before the answer, right after the prompt's echo
        kinds = [(c.role, c.content.type) for c in first.contents]
        assert kinds.index(("system", "text")) < kinds.index(("assistant", "text"))
    finally:
        await eca.aclose()
        await local.shutdown_local_runtimes()
