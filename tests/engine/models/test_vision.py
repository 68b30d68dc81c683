"""Images reach the model in each provider's own wire format — from an ``image`` context, an attached ``.png`` file,
a notebook output (``notebook_read``), ``read_file`` on an image — and a model that cannot see gets a description
and the chat a note; bad images are refused with a clear note and the chat goes on. Real requests to the scripted
LLM server, parsed as each API documents them."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from PIL import Image

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage

PATHS = {"openai-responses": "/v1/responses", "openai-chat": "/v1/chat/completions", "anthropic": "/v1/messages",
         "ollama": "/api/chat"}
# A vision model per wire format, and models that cannot see.
VISION = {"openai-responses": "openai/gpt-4.1", "openai-chat": "vllm/qwen2.5-vl", "anthropic":
          "anthropic/claude-sonnet-4-5", "ollama": "ollama/llava:7b"}
BLIND = {"openai-chat": "vllm/qwen3", "ollama": "ollama/llama3.2:1b"}


def png(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()


def jpeg(width: int = 64, height: int = 48) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, format="JPEG")
    return out.getvalue()


class Recorder:
    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.messages.append((method, params))

    def contents(self, chat_id: str) -> list[dict[str, Any]]:
        return [p["content"] for m, p in self.messages if m == "chat/contentReceived" and p["chatId"] == chat_id]


@pytest.fixture
async def engine(tmp_path: Path, llm: ScriptedLLMServer):
    env = {
        "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-openai-0000",
        "ANTHROPIC_API_URL": llm.url, "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "OLLAMA_API_URL": llm.url,
    }
    options = {
        "localModel": False,
        "providers": {
            "openai": {"models": {"gpt-4.1": {}}},
            "anthropic": {"models": {"claude-sonnet-4-5": {}}},
            "ollama": {"models": {"llava:7b": {}, "llama3.2:1b": {}}},
            "vllm": {"api": "openai-chat", "url": llm.url,
                     "models": {"qwen2.5-vl": {"imageInput": True}, "qwen3": {}}},
        },
    }
    eng = Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options=options, env=env))
    eng.recorder = Recorder()  # type: ignore[attr-defined]
    eng.add_listener(eng.recorder)  # type: ignore[attr-defined]
    await eng.start()
    try:
        yield eng
    finally:
        await eng.aclose()


async def run(engine: Engine, model: str, message: str = "what is wrong with this chart?",
              contexts: list[dict[str, Any]] | None = None) -> tuple[str, list[dict[str, Any]]]:
    result = await engine.prompt(ChatPromptParams(message=message, model=model, contexts=contexts or []))
    assert result.status == "prompting", result
    chat = engine.chats[result.chat_id]
    await asyncio.wait_for(asyncio.shield(chat.task), 60)
    return chat.id, engine.recorder.contents(chat.id)  # type: ignore[attr-defined]


def bodies(llm: ScriptedLLMServer, api: str) -> list[dict[str, Any]]:
    return [r.body for r in llm.requests if r.path == PATHS[api]]


def sent_images(api: str, body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Every image in a request body, read exactly where and how the API documents it: (media type, bytes)."""
    found: list[tuple[str, bytes]] = []

    def data_url(url: str) -> tuple[str, bytes]:
        head, _, data = url.partition(",")
        assert head.startswith("data:") and head.endswith(";base64"), url[:60]
        return head[5:-7], base64.b64decode(data, validate=True)

    if api == "openai-responses":
        for item in body["input"]:
            if item.get("type") == "message" and isinstance(item["content"], list):
                for part in item["content"]:
                    if part["type"] == "input_image":
                        assert set(part) == {"type", "image_url"}
                        found.append(data_url(part["image_url"]))
                    else:
                        assert part["type"] == "input_text" and isinstance(part["text"], str)
    elif api == "openai-chat":
        for message in body["messages"]:
            if isinstance(message.get("content"), list):
                assert message["role"] == "user"
                for part in message["content"]:
                    if part["type"] == "image_url":
                        assert set(part["image_url"]) == {"url"}
                        found.append(data_url(part["image_url"]["url"]))
                    else:
                        assert part["type"] == "text"
    elif api == "anthropic":
        for message in body["messages"]:
            blocks = [b for b in message["content"] if isinstance(b, dict)]
            inner = [c for b in blocks if b["type"] == "tool_result" and isinstance(b["content"], list)
                     for c in b["content"]]
            for block in blocks + inner:
                if block["type"] == "image":
                    source = block["source"]
                    assert source["type"] == "base64" and set(source) == {"type", "media_type", "data"}
                    found.append((source["media_type"], base64.b64decode(source["data"], validate=True)))
    else:
        for message in body["messages"]:
            for data in message.get("images") or []:
                raw = base64.b64decode(data, validate=True)
                kind = Image.open(io.BytesIO(raw)).format
                found.append(({"PNG": "image/png", "JPEG": "image/jpeg"}[kind], raw))
    return found


def notes(contents: list[dict[str, Any]]) -> str:
    return "\n".join(c.get("text", "") for c in contents if c["type"] == "text")


# -- images in: contexts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", list(VISION))
async def test_image_context_and_png_file_reach_a_vision_model(engine: Engine, llm: ScriptedLLMServer,
                                                               tmp_path: Path, api: str):
    pasted, chart = jpeg(), png()
    (tmp_path / "chart.png").write_bytes(chart)
    llm.enqueue(Reply([Text("the x axis is unsorted"), Usage(5, 1)]))
    _, contents = await run(engine, VISION[api], contexts=[
        {"type": "image", "mediaType": "image/jpeg", "base64": base64.b64encode(pasted).decode()},
        {"type": "file", "path": "chart.png"},
    ])
    [body] = bodies(llm, api)
    assert sent_images(api, body) == [("image/jpeg", pasted), ("image/png", chart)]
    assert "cannot see" not in notes(contents)
    assert "unsorted" in notes(contents)


@pytest.mark.parametrize("model", list(BLIND.values()))
async def test_a_model_that_cannot_see_gets_a_description_and_the_chat_a_note(engine: Engine, llm: ScriptedLLMServer,
                                                                             tmp_path: Path, model: str):
    (tmp_path / "chart.png").write_bytes(png(64, 48))
    llm.enqueue(Reply([Text("I cannot see it"), Usage(5, 1)]))
    _, contents = await run(engine, model, contexts=[{"type": "file", "path": "chart.png"}])
    api = "ollama" if model.startswith("ollama/") else "openai-chat"
    [body] = bodies(llm, api)
    assert sent_images(api, body) == []
    assert "images" not in json.dumps(body["messages"])
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    assert "[image: chart.png, image/png, 64×48 px" in user["content"]
    assert f"{model} cannot see images: it was given a description of chart.png instead" in notes(contents)
    assert "I cannot see it" in notes(contents)  # no provider error: the turn went on


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims width × height pixels, with no pixel data: a decompression bomb's start."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


async def test_bad_images_are_refused_with_a_clear_note_and_the_chat_goes_on(engine: Engine, llm: ScriptedLLMServer,
                                                                             tmp_path: Path):
    good = png()
    b64 = base64.b64encode(good).decode()
    bmp = io.BytesIO()
    Image.new("RGB", (8, 8)).save(bmp, format="BMP")
    (tmp_path / "big.png").write_bytes(b"\0" * (20 * 1024 * 1024 + 1))
    (tmp_path / "fake.png").write_bytes(b"this is text pretending to be a png")
    llm.enqueue(Reply([Text("seen one image"), Usage(5, 1)]))
    _, contents = await run(engine, VISION["anthropic"], contexts=[
        {"type": "image", "mediaType": "image/png", "base64": b64[: len(b64) // 2 - 3], "name": "cut.png"},
        {"type": "image", "mediaType": "image/png", "base64": b64[: len(b64) // 2 // 4 * 4], "name": "half.png"},
        {"type": "image", "mediaType": "image/png", "base64": base64.b64encode(jpeg()).decode(), "name": "liar.png"},
        {"type": "image", "mediaType": "image/bmp", "base64": base64.b64encode(bmp.getvalue()).decode(),
         "name": "old.bmp"},
        {"type": "image", "mediaType": "image/png", "base64": base64.b64encode(_png_header(60_000, 60_000)).decode(),
         "name": "bomb.png"},
        {"type": "image", "mediaType": "image/png", "base64": base64.b64encode(_png_header(6000, 5000)).decode(),
         "name": "bomb2.png"},
        {"type": "image", "mediaType": "image/png", "base64": "A" * (28 * 1024 * 1024), "name": "huge.png"},
        {"type": "file", "path": "big.png"},
        {"type": "file", "path": "fake.png"},
        {"type": "image", "mediaType": "image/png", "base64": b64, "name": "fine.png"},
    ])
    text = notes(contents)
    assert "cut.png is not valid base64 (truncated?)" in text
    assert "half.png is truncated or corrupt" in text
    assert "liar.png says it is image/png but its bytes are image/jpeg" in text
    assert "old.bmp: unsupported media type 'image/bmp'" in text
    assert "bomb.png is refused: it has more than the 25 million pixels allowed (a decompression bomb?)" in text
    assert "bomb2.png is refused: 6000×5000 pixels is more than the 25 million allowed" in text
    assert "huge.png is too large" in text
    assert "big.png is too large (20 MB; images are limited to 20 MB)" in text
    assert "fake.png is not a PNG, JPEG, GIF or WebP image" in text
    [body] = bodies(llm, "anthropic")
    assert sent_images("anthropic", body) == [("image/png", good)]  # the good one still went
    assert "seen one image" in text


async def test_a_large_image_is_downscaled_to_the_providers_limit(engine: Engine, llm: ScriptedLLMServer,
                                                                  tmp_path: Path):
    (tmp_path / "wide.png").write_bytes(png(3000, 1000))
    for api in ("anthropic", "openai-responses"):
        llm.enqueue(Reply([Text("ok"), Usage(5, 1)]))
        await run(engine, VISION[api], contexts=[{"type": "file", "path": "wide.png"}])
        [(kind, data)] = sent_images(api, bodies(llm, api)[-1])
        assert Image.open(io.BytesIO(data)).size == ((1568, 523) if api == "anthropic" else (2048, 683))


# -- images from tools: notebook outputs, read_file, an MCP tool ---------------------------------------------------

DEMO = Path(__file__).parents[2] / "mcp" / "servers" / "demo_server.py"


@pytest.fixture
async def tool_engine(tmp_path: Path, llm: ScriptedLLMServer):
    import sys

    env = {
        "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-openai-0000",
        "ANTHROPIC_API_URL": llm.url, "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "OLLAMA_API_URL": llm.url,
    }
    (tmp_path / "home").mkdir()
    options = {
        "localModel": False,
        "mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}},
        "toolCall": {"approval": {"allow": {"demo": {}}}},
        "providers": {
            "openai": {"models": {"gpt-4.1": {}}},
            "anthropic": {"models": {"claude-sonnet-4-5": {}}},
            "ollama": {"models": {"llava:7b": {}}},
            "vllm": {"api": "openai-chat", "url": llm.url,
                     "models": {"qwen2.5-vl": {"imageInput": True}, "qwen3": {}}},
        },
    }
    eng = Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options=options, env=env))
    eng.recorder = Recorder()  # type: ignore[attr-defined]
    eng.add_listener(eng.recorder)  # type: ignore[attr-defined]
    await eng.start()
    try:
        yield eng
    finally:
        await eng.aclose()


def tool_round(name: str, arguments: dict[str, Any]) -> list[Reply]:
    return [Reply([ToolCall("call_1", name, json.dumps(arguments), chunks=1), Usage(5, 1)]),
            Reply([Text("I see it"), Usage(5, 1)])]


def after_tool(api: str, body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The images of the request answering a tool call, where each API takes them: Anthropic inside the
    ``tool_result``; the others in the user message right after the tool results (their tool results are text)."""
    if api == "anthropic":
        last = body["messages"][-1]
        [result] = [b for b in last["content"] if b["type"] == "tool_result"]
        assert result["tool_use_id"] == "call_1" and isinstance(result["content"], list)
        assert result["content"][0]["type"] == "text"
    elif api == "openai-responses":
        kinds = [item.get("type") for item in body["input"]]
        assert kinds[-2:] == ["function_call_output", "message"], kinds
        assert isinstance(body["input"][-2]["output"], str)
    elif api == "openai-chat":
        roles = [m["role"] for m in body["messages"]]
        assert roles[-2:] == ["tool", "user"], roles
    else:
        roles = [m["role"] for m in body["messages"]]
        assert roles[-2:] == ["tool", "user"], roles
        assert "images" not in body["messages"][-2]
    return sent_images(api, body)


@pytest.mark.parametrize("source", ["read_file", "notebook_read"])
async def test_a_tools_image_reaches_a_vision_model_in_each_wire_format(tool_engine: Engine, llm: ScriptedLLMServer,
                                                                        tmp_path: Path, source: str):
    chart = png(80, 60)
    (tmp_path / "chart.png").write_bytes(chart)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("df.plot()", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "image/png": base64.encodebytes(chart).decode(), "text/plain": "<Figure size 640x480>"})]
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "plots.ipynb")
    call = ("eca__read_file", {"path": "chart.png"}) if source == "read_file" else (
        "eca__notebook_read", {"path": "plots.ipynb"})
    for api, model in VISION.items():
        llm.enqueue(*tool_round(*call))
        _, contents = await run(tool_engine, model, message="what is wrong with my chart?")
        assert "I see it" in notes(contents), notes(contents)
        assert after_tool(api, bodies(llm, api)[-1]) == [("image/png", chart)], api
        called = [c for c in contents if c["type"] == "toolCalled"][-1]
        assert not called["error"], called
    # a model that cannot see gets the description in the tool result, and no image
    llm.enqueue(*tool_round(*call))
    _, contents = await run(tool_engine, BLIND["openai-chat"], message="what is wrong with my chart?")
    body = bodies(llm, "openai-chat")[-1]
    assert sent_images("openai-chat", body) == []
    assert body["messages"][-1]["role"] == "tool" and "image/png, 80×60 px" in body["messages"][-1]["content"]
    assert "vllm/qwen3 cannot see images" in notes(contents)


async def test_an_mcp_tools_image_reaches_the_model_and_the_chat(tool_engine: Engine, llm: ScriptedLLMServer):
    import sys

    sys.path.insert(0, str(DEMO.parent))
    try:
        from demo_server import CHART_PNG  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(DEMO.parent))
    for _ in range(900):  # up to 90 s for the MCP server to start on a busy machine
        if tool_engine.mcp.status("demo").status == "running":
            break
        await asyncio.sleep(0.1)
    assert tool_engine.mcp.status("demo").status == "running", tool_engine.mcp.status("demo")
    for api, model in VISION.items():
        llm.enqueue(*tool_round("demo__chart", {}))
        _, contents = await run(tool_engine, model, message="draw the chart")
        assert after_tool(api, bodies(llm, api)[-1]) == [("image/png", CHART_PNG)], api
        # and the chat shows it: the reference's ChatImageContent, right after the call's toolCalled
        kinds = [c["type"] for c in contents]
        called = kinds.index("toolCalled")
        assert kinds[called + 1] == "image", kinds
        image = contents[called + 1]
        assert image == {"type": "image", "mediaType": "image/png", "base64": base64.b64encode(CHART_PNG).decode()}


# -- saved chats: image bytes in side files ----------------------------------------------------------------------


async def test_a_saved_chat_keeps_its_images_in_side_files_and_reopens_with_them(workspace: Path, env: dict[str, str],
                                                                                  llm: ScriptedLLMServer):
    from eca_notebook.client import EcaClient
    from eca_notebook.engine.chats.store import chats_dir_for

    shots = [png(40 + i, 30, (i * 20, 50, 90)) for i in range(10)]  # ten screenshots
    config = {"localModel": False, "defaultModel": "anthropic/claude-sonnet-4-5",
              "providers": {"anthropic": {"url": llm.url, "key": "sk-ant-test-0000",
                                          "models": {"claude-sonnet-4-5": {}}}}}
    contexts = [{"type": "image", "mediaType": "image/png", "base64": base64.b64encode(s).decode(), "name": f"s{i}"}
                for i, s in enumerate(shots)]
    llm.enqueue(Reply.text("ten screenshots"))
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
        first = await eca.prompt("compare them", contexts=contexts)
        assert first.ok, first.error
    root = chats_dir_for([workspace], env)
    [saved] = [p for p in root.glob("*.json") if p.name != "index.json"]
    text = saved.read_text()
    assert all(base64.b64encode(s).decode()[:200] not in text for s in shots)  # no image bytes in the JSON
    assert len(text) < 20_000, len(text)
    files = sorted((root / "images").iterdir())
    assert sorted(f.read_bytes() for f in files) == sorted(shots)  # one side file per image, the bytes as sent
    assert {f.suffix for f in files} == {".png"} and all(f.stat().st_mode & 0o777 == 0o600 for f in files)

    llm.enqueue(Reply.text("still ten"))
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
        replayed = await eca.open_chat(first.chat_id)
        assert any("compare them" in getattr(i.content, "text", "") for i in replayed)
        # the prompt's images are shown again, as the user's (the reference's ChatImageContent), from the side files
        shown = [(i.role, base64.b64decode(i.content.base64)) for i in replayed if i.content.type == "image"]
        assert shown == [("user", s) for s in shots]
        again = await eca.prompt("and now?", chat_id=first.chat_id)
        assert again.ok, again.error
    # the reopened chat's history still holds the images: the next request sends them again
    assert sent_images("anthropic", llm.requests[-1].body) == [("image/png", s) for s in shots]
    assert sorted((root / "images").iterdir()) == files  # content-addressed: saved again, written once


# -- the per-request budget -----------------------------------------------------------------------------------------


def test_the_largest_images_are_left_out_first_to_fit_the_request_budget():
    from eca_notebook._images import load_image
    from eca_notebook.engine.models._vision import ImagePolicy, prepare_images
    from eca_notebook.providers.base import ToolResultMessage, UserMessage

    small = [load_image(png(10 + i, 10), name=f"small{i}") for i in range(3)]
    big = load_image(png(900, 900), name="big")  # the largest in bytes
    history = [UserMessage("old", images=[small[0]]), ToolResultMessage("c1", "read_file", "x", images=[big]),
               UserMessage("new", images=[small[1], small[2]])]
    policy = ImagePolicy.for_model("anthropic", True, "anthropic/claude-sonnet-4-5")
    fitted, notes = prepare_images(history, dataclasses.replace(policy, max_images=3), old={small[0].sha256})
    assert [len(m.images) for m in fitted] == [1, 0, 2]  # type: ignore[union-attr]
    assert "[image: big, image/png, 900×900 px" in fitted[1].output and "left out" in fitted[1].output  # type: ignore[union-attr]
    assert notes == ["Left out of the request, largest first, to stay within 3 images and 15 MB: big (described to "
                     "the model instead)."]
    # by bytes too; and an image already in the chat before this turn gets no second note
    tight = dataclasses.replace(policy, budget_bytes=sum(len(s.data) for s in small))
    fitted, notes = prepare_images(history, tight, old={big.sha256})
    assert [len(m.images) for m in fitted] == [1, 0, 2] and notes == []  # type: ignore[union-attr]
    # a model that cannot see: every image described, one note naming the new ones only
    blind, notes = prepare_images(history, ImagePolicy(sees=False, model="vllm/qwen3"), old={small[0].sha256})
    assert all(not m.images for m in blind)  # type: ignore[union-attr]
    assert notes == ["vllm/qwen3 cannot see images: it was given a description of big, small1, small2 instead (set "
                     "imageInput: true in the model's config if it can)."]


async def test_an_exported_chat_carries_its_images_and_an_import_checks_them(workspace: Path, env: dict[str, str],
                                                                             llm: ScriptedLLMServer):
    from eca_notebook.client import EcaClient

    shot = png(33, 22)
    config = {"localModel": False, "defaultModel": "anthropic/claude-sonnet-4-5",
              "providers": {"anthropic": {"url": llm.url, "key": "sk-ant-test-0000",
                                          "models": {"claude-sonnet-4-5": {}}}}}
    llm.enqueue(Reply.text("a small red image"), Reply.text("still red"))
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
        first = await eca.prompt("what is it?", contexts=[
            {"type": "image", "mediaType": "image/png", "base64": base64.b64encode(shot).decode(), "name": "s.png"}])
        await eca.prompt("/export exports/chat.json", chat_id=first.chat_id)
        target = workspace / "exports" / "chat.json"
        data = json.loads(target.read_text())
        [image] = data["chat"]["messages"][0]["images"]
        assert base64.b64decode(image["base64"]) == shot and "data" not in image  # one portable file
        # a crafted export: its image is a decompression bomb claiming to be 10 × 10
        bomb = base64.b64encode(_png_header(60_000, 60_000)).decode()
        data["chat"]["messages"][0]["images"].append({**image, "base64": bomb, "width": 10, "height": 10})
        target.write_text(json.dumps(data))
        await eca.prompt(f"/import {target}")
        assert eca.engine is not None
        [imported] = [c for c in eca.engine.chats.values() if c.id != first.chat_id and c.title == "what is it?"]
        again = await eca.prompt("and now?", chat_id=imported.id)
        assert again.ok, again.error
    assert sent_images("anthropic", llm.requests[-1].body) == [("image/png", shot)]  # the bomb was dropped


async def test_image_input_in_config_overrides_the_default_by_name(tmp_path: Path, llm: ScriptedLLMServer):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-openai-0000", "OLLAMA_API_URL": llm.url}
    options = {"localModel": False, "providers": {
        "openai": {"models": {"gpt-4o": {"imageInput": False}, "my-finetune": {"imageInput": True}}},
        "ollama": {"models": {"gemma3:4b": {}, "gemma3:1b": {}, "llama3.2:1b": {}}}}}
    eng = Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options=options, env=env))
    await eng.start()
    try:
        sees = {k: v.image_input for k, v in eng.registry.model_infos().items()}
    finally:
        await eng.aclose()
    assert sees["openai/gpt-4o"] is False and sees["openai/my-finetune"] is True  # the config wins
    assert sees["openai/gpt-4.1"] and sees["openai/gpt-5"] and sees["openai/o4-mini"]  # the catalog's, by name
    assert sees["ollama/gemma3:4b"] and not sees["ollama/gemma3:1b"] and not sees["ollama/llama3.2:1b"]


@pytest.mark.parametrize("content", [
    {"type": "text", "text": "key sk-live-chunk-0123456789abcdef here"},
    {"type": "text", "text": "chunk-secret-4K4K"},
    {"type": "text", "text": "pw=Zq9x8w7v6u"},
    {"type": "text", "text": "ab"},
    {"type": "reasonText", "id": "r1", "text": "chunk-secret-4K4K"},
    {"type": "text", "text": "chunk-secret-4K4K", "contentId": "chunk-secret-4K4K"},
])
def test_a_streamed_chunk_is_redacted_as_every_content_is(content: dict[str, Any]) -> None:
    """Text chunks take a short way past the JSON walk (they are most of what is sent): the same answer, secrets
    masked, the chunk itself untouched."""
    from eca_notebook._redact import add_secrets, redact_json
    from eca_notebook.engine.models import redact_content

    add_secrets(["chunk-secret-4K4K"])
    before = dict(content)
    clean = redact_content(content)
    assert clean == redact_json(content)
    assert "chunk-secret-4K4K" not in json.dumps(clean) and "0123456789abcdef" not in json.dumps(clean)
    assert content == before
