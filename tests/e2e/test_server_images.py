"""Images through a real ``eca-notebook server`` process: an ``image`` context and a ``.png`` file context reach a
vision model as image parts; a text-only model gets their description and the chat a note; a bad image is refused
with a note and the prompt goes on."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from eca_notebook.testing.llm_server import Reply, Text, Usage

from .conftest import API_MODELS

pytestmark = pytest.mark.e2e


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (250, 10, 10)).save(out, format="PNG")
    return out.getvalue()


def system_texts(contents: list[tuple[str, dict]]) -> str:
    return "\n".join(c.get("text", "") for role, c in contents if role == "system" and c["type"] == "text")


async def test_images_over_stdio(spawn, llm, workspace):
    pasted, plot = png(20, 10), png(30, 15)
    (workspace / "plot.png").write_bytes(plot)
    contexts = [{"type": "image", "mediaType": "image/png", "base64": base64.b64encode(pasted).decode()},
                {"type": "file", "path": str(workspace / "plot.png")},
                {"type": "image", "mediaType": "image/png", "base64": base64.b64encode(pasted[:-20]).decode(),
                 "name": "cut.png"}]
    eca = await spawn()
    await eca.initialize(workspace)

    llm.enqueue(Reply([Text("a red square"), Usage(10, 3)]))
    result = await eca.request("chat/prompt", {"message": "what is this?", "model": API_MODELS["anthropic"],
                                               "contexts": contexts})
    await eca.wait_idle(result["chatId"])
    body = llm.requests[-1].body
    [user] = body["messages"]
    images = [b for b in user["content"] if b["type"] == "image"]
    assert [(b["source"]["media_type"], base64.b64decode(b["source"]["data"])) for b in images] == [
        ("image/png", pasted), ("image/png", plot)]
    assert user["content"][-1]["type"] == "text" and user["content"][-1]["text"].startswith("what is this?")
    notes = system_texts(eca.contents(result["chatId"]))
    assert "cut.png is truncated or corrupt" in notes

    # a model that cannot see (a custom OpenAI-compatible one, unknown to the catalog): text, and a note
    llm.enqueue(Reply([Text("I cannot see"), Usage(10, 3)]))
    result = await eca.request("chat/prompt", {"message": "and this?", "model": API_MODELS["openai-chat"],
                                               "contexts": contexts[:2]})
    await eca.wait_idle(result["chatId"])
    [user] = [m for m in llm.requests[-1].body["messages"] if m["role"] == "user"]
    assert isinstance(user["content"], str)
    assert "[image: image 1, image/png, 20×10 px" in user["content"]
    assert "[image: plot.png, image/png, 30×15 px" in user["content"]
    assert "local-vllm/qwen3 cannot see images: it was given a description of image 1, plot.png instead" in \
        system_texts(eca.contents(result["chatId"]))
