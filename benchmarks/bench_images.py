"""Images to the model: bytes sent for a notebook with 20 plots vs. the raw PNGs, after downscaling and the budget.

Draws 20 chart-like PNGs with Pillow (axes, grid, a few lines and dots — what matplotlib draws): half at 640 × 480
(matplotlib's default figure), half at 2400 × 1800 (a 300-dpi figure). Then, against the scripted LLM server, per
wire format (one run, so the figures compare like with like):

  contexts       all 20 attached as ``image`` contexts to one prompt (the panel's "Add output to chat" path): the
                 image bytes inside the request (base64 decoded) and the whole request body, vs. the raw PNGs;
  notebook_read  the notebook holding them read by the model's tool call: what the answering request carries;
  time           from chat/prompt to the request reaching the server with its 20 images (checking, downscaling,
                 encoding), best of ``--repeat``.

Usage: python benchmarks/bench_images.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from PIL import Image, ImageDraw

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.engine.test_vision import PATHS, VISION, sent_images  # noqa: E402  (the wire formats' readers)


def chart(width: int, height: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    im = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(im)
    left, top, right, bottom = width // 10, height // 10, width - width // 20, height - height // 8
    for i in range(11):  # grid
        x = left + (right - left) * i // 10
        y = top + (bottom - top) * i // 10
        draw.line([(x, top), (x, bottom)], fill=(230, 230, 230), width=max(1, width // 640))
        draw.line([(left, y), (right, y)], fill=(230, 230, 230), width=max(1, width // 640))
        draw.text((x - 5, bottom + 8), str(i), fill="black")
    draw.rectangle([left, top, right, bottom], outline="black", width=max(1, width // 400))
    for color in ((31, 119, 180), (255, 127, 14), (44, 160, 44)):
        points, y = [], rnd.uniform(top, bottom)
        for k in range(60):
            y = min(bottom, max(top, y + rnd.uniform(-1, 1) * (bottom - top) / 12))
            points.append((left + (right - left) * k / 59, y))
        draw.line(points, fill=color, width=max(2, width // 320))
        for x, y in points[::5]:
            r = max(3, width // 200)
            draw.ellipse([x - r, y - r, x + r, y + r], fill=color)
    out = io.BytesIO()
    im.save(out, format="PNG")
    return out.getvalue()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    plots = [chart(640, 480, i) if i % 2 else chart(2400, 1800, i) for i in range(20)]
    raw = sum(len(p) for p in plots)
    print(f"20 plots: {raw / 1024:.0f} KB of PNG ({sum(len(p) for p in plots[::2]) / 1024:.0f} KB in the ten "
          "2400x1800 ones)")
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLMServer() as llm:
        root = Path(tmp)
        nb = nbformat.v4.new_notebook()
        for i, p in enumerate(plots):
            cell = nbformat.v4.new_code_cell(f"df{i}.plot()", execution_count=i + 1)
            cell.outputs = [nbformat.v4.new_output("display_data", data={
                "image/png": base64.encodebytes(p).decode(), "text/plain": "<Figure>"})]
            nb.cells.append(cell)
        nbformat.write(nb, root / "plots.ipynb")
        env = {"HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/config", "XDG_CACHE_HOME": f"{tmp}/cache",
               "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_URL": llm.url,
               "ANTHROPIC_API_KEY": "sk-ant-x", "OLLAMA_API_URL": llm.url}
        options = {"localModel": False, "providers": {
            "openai": {"models": {"gpt-4.1": {}}}, "anthropic": {"models": {"claude-sonnet-4-5": {}}},
            "ollama": {"models": {"llava:7b": {}}},
            "vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen2.5-vl": {"imageInput": True}}}}}
        engine = Engine(EngineOptions(workspace_folders=[root], initialization_options=options, env=env))
        await engine.start()
        contexts = [{"type": "image", "mediaType": "image/png", "base64": base64.b64encode(p).decode()}
                    for p in plots]

        async def prompt(model: str, **kw: Any) -> float:
            start = time.perf_counter()
            result = await engine.prompt(ChatPromptParams(model=model, **kw))
            await asyncio.wait_for(asyncio.shield(engine.chats[result.chat_id].task), 300)
            return time.perf_counter() - start

        print(f"{'wire format':18} {'path':14} {'images':>6} {'image KB':>9} {'body KB':>8} {'vs raw':>7} "
              f"{'best s':>7}")
        for api, model in VISION.items():
            best = float("inf")
            for _ in range(args.repeat):
                llm.enqueue(Reply([Text("ok"), Usage(5, 1)]))
                best = min(best, await prompt(model, message="what is wrong?", contexts=contexts))
            req = [r for r in llm.requests if r.path == PATHS[api]][-1]
            body = len(json.dumps(req.body))
            sent = sent_images(api, req.body)
            size = sum(len(d) for _, d in sent)
            print(f"{api:18} {'contexts':14} {len(sent):6} {size / 1024:9.0f} {body / 1024:8.0f} "
                  f"{body / raw:7.2f} {best:7.2f}")
            llm.enqueue(Reply([ToolCall("c1", "eca__notebook_read", json.dumps({"path": "plots.ipynb"}), chunks=1),
                               Usage(5, 1)]), Reply([Text("ok"), Usage(5, 1)]))
            await prompt(model, message="read plots.ipynb")
            req = [r for r in llm.requests if r.path == PATHS[api]][-1]
            body = len(json.dumps(req.body))
            sent = sent_images(api, req.body)
            size = sum(len(d) for _, d in sent)
            print(f"{api:18} {'notebook_read':14} {len(sent):6} {size / 1024:9.0f} {body / 1024:8.0f} "
                  f"{body / raw:7.2f}")
        await engine.aclose()


if __name__ == "__main__":
    asyncio.run(main())
