"""Fixtures for eca_notebook.batch: a scripted LLM server answering every prompt from its text (so answers do not
depend on arrival order across processes), an isolated HOME/XDG, a config with prices, one LocalCluster per module.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text, ToolCall, Usage

MODEL = "fake/m1"
#: USD per 1M tokens: the scripted usages below make cents
PRICES = {"inputCost": 100.0, "outputCost": 1000.0}


def user_text(body: Any) -> str:
    """The last user message of an openai-chat request."""
    for message in reversed((body or {}).get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def spaced(arrivals: list[float], burst: int, per_second: float, slack: float = 1.0) -> list[tuple[int, float]]:
    """The requests (index, seconds after the first) that came sooner than a token bucket of ``burst`` refilled at
    ``per_second`` lets them: the k-th lease is granted ≥ (k - burst + 1) / rate after the first, and the first
    request arrives at most ``slack`` after its own lease (lower bounds only: a busy machine only adds time)."""
    first = arrivals[0]
    return [(k, at - first) for k, at in enumerate(arrivals)
            if k >= burst and at - first < (k - burst + 1) / per_second - slack]


def tool_round(body: Any) -> bool:
    """The request carries a tool result: the model's second round."""
    messages = (body or {}).get("messages") or []
    return bool(messages) and messages[-1].get("role") == "tool"


class Echo:
    """Answers ``echo: <first line of the prompt>`` with a usage from its length; a prompt containing ``[write
    NAME]`` first writes NAME in the workspace (then answers ``wrote NAME``); one containing ``[json k=v]`` answers
    that JSON object. ``delay``: seconds before each answer."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def __call__(self, body: Any) -> Reply:
        text = user_text(body)
        first = text.splitlines()[0] if text else ""
        steps: list[Any] = [Delay(self.delay)] if self.delay else []
        write = re.search(r"\[write ([^\]]+)\]", text)
        if write and not tool_round(body):
            name = write.group(1)
            args = json.dumps({"path": name, "content": f"feedback for {first}\n"})
            return Reply([*steps, ToolCall(f"call-{abs(hash(text)) % 10**8}", "eca__write_file", args), Usage(50, 10)])
        if write:
            return Reply([*steps, Text(f"wrote {write.group(1)}"), Usage(60, 5)])
        structured = re.search(r"\[json ([^\]]+)\]", text)
        if structured:
            data = dict(pair.split("=", 1) for pair in structured.group(1).split(","))
            data = {k: (int(v) if v.isdigit() else v) for k, v in data.items()}
            return Reply([*steps, Text("```json\n" + json.dumps(data) + "\n```"), Usage(40, 12)])
        return Reply([*steps, Text(f"echo: {first}"), Usage(10 + len(first), 5)])


@pytest.fixture(scope="module")
def llm():
    server = ScriptedLLMServer().start()
    server.respond_with(Echo())
    yield server
    server.stop()


@pytest.fixture
def echo(llm: ScriptedLLMServer):
    """The module's server, cleared, answering with a fresh :class:`Echo` (set its ``delay``)."""
    llm.clear()
    responder = Echo()
    llm.respond_with(responder)
    return responder


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    (home / ".config").mkdir()
    (home / ".cache").mkdir()
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
            "OLLAMA_API_URL": "http://127.0.0.1:9"}


def batch_config(server: ScriptedLLMServer, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "localModel": False,
        "providers": {"fake": {"api": "openai-chat", "url": server.url, "models": {"m1": dict(PRICES), "m2": {}}}},
        "defaultModel": MODEL,
    }
    config.update(extra)
    return config


@pytest.fixture
def config(llm: ScriptedLLMServer) -> dict[str, Any]:
    return batch_config(llm)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "README.md").write_text("# demo\n")
    return folder


@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("distributed")
    from eca_notebook.batch import local_cluster

    # An in-process IPython shell of another test module (tests/notebook) puts its user module, which has no
    # ``__spec__``, in sys.modules["__main__"]; multiprocessing's spawn reads that attribute to start the workers.
    main = sys.modules["__main__"]
    if not hasattr(main, "__spec__"):
        main.__spec__ = None
    client = local_cluster(n_workers=2, threads_per_worker=4, silence_logs=50)
    yield client
    client.close()
