"""A real generation that loops is cut short: the embedded model forced into a loop by a grammar."""

from __future__ import annotations

import httpx
import pytest

from eca_notebook.engine._chat import Chat
from eca_notebook.engine._providers_config import ModelInfo
from eca_notebook.engine._turn import Turn
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
