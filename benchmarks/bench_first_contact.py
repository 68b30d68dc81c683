"""First contact on the embedded model: the newcomer's questions in the panel with a notebook open (issue #30).

What a user meets after ``make lab`` with no key: the embedded 135M model answers in the side panel while
``notebooks/05-data-analysis.ipynb`` is open and has been run. This is the panel's real path minus the browser: a
real ``jupyter server`` (subprocess, the eca_notebook server extension, token auth, every provider key removed so
the embedded model is the default, preloaded as in ``make lab``) and a WebSocket client that sends ``chat/prompt``
exactly as the panel does — ``{chatId, message, contexts}`` with the panel's automatic context, the active notebook
as ``{"type": "file", "path": "<notebook path relative to the lab root>"}`` (``extension/src/jupyterContext.ts``).

The workspace is a copy of ``notebooks/`` (the folder ``make lab`` opens), notebook 05 executed and saved first (by
nbclient in a real kernel, errors allowed: its cell 15 raises ``KeyError: 'sale'``, the error the last question is
about). Measured, in one run on one server:

  notebook — the four questions of the issue, one after another in one chat (as the user asked them), each with
             the notebook attached: time to the first assistant text and to the end of the turn ("progress
             finished"), the answer, and every system note and tool call shown.
  baseline — the same questions in another chat with nothing attached (what the issue saw answered "in about a
             second").

Printed per question: first-text and total seconds for both, the ratios notebook/baseline, then the answers (at
least on topic is the bar: read them). Nothing is asserted on time.

Usage: python benchmarks/bench_first_contact.py [--timeout 300] [--questions N]
Needs the embedded model (``make lab`` installs it) and nbclient/ipykernel (the test extras).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "05-data-analysis.ipynb"
TOKEN = "bench-token"
QUESTIONS = [
    "What does this notebook do?",
    "Write a Python function is_prime(n) that returns True when n is a prime number.",
    "Plot the distribution of the first numeric column of df.",
    "My last cell raises an error. Explain it and fix it.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare_workspace(workspace: Path, home: Path) -> None:
    """``notebooks/`` copied, notebook 05 run top to bottom in a real kernel and saved with its outputs."""
    import nbformat
    from nbclient import NotebookClient

    shutil.copytree(ROOT / "notebooks", workspace, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    path = workspace / NOTEBOOK
    notebook = nbformat.read(path, as_version=4)
    env = kernel_env(home)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits it: no key, an isolated home
    try:
        NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(workspace)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    nbformat.write(notebook, path)
    errors = [i + 1 for i, c in enumerate(notebook.cells)
              if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    print(f"executed {NOTEBOOK}: {len(notebook.cells)} cells, errors in cells {errors} (numbered from 1), "
          f"{path.stat().st_size:,} bytes on disk", flush=True)


def kernel_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.endswith("_API_URL") and not k.startswith("JUPYTER")}
    env.pop("ECA_CONFIG", None)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), OLLAMA_API_URL="http://127.0.0.1:9",
               JUPYTER_CONFIG_DIR=str(home / "jupyter-config"), JUPYTER_DATA_DIR=str(home / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"), IPYTHONDIR=str(home / "ipython"),
               JUPYTER_PLATFORM_DIRS="0", PYTHONPATH=str(ROOT))
    return env


async def start_jupyter(home: Path, root: Path) -> tuple[asyncio.subprocess.Process, int]:
    port = free_port()
    env = kernel_env(home)
    config_dir = Path(env["JUPYTER_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"eca_notebook": True}}}))
    log = open(home / "jupyter.log", "wb")  # noqa: SIM115 - closed with the process
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_server", f"--port={port}", "--ServerApp.port_retries=0", "--no-browser",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}", "--ServerApp.log_level=WARN",
        *(["--allow-root"] if os.geteuid() == 0 else []),
        env=env, stdout=log, stderr=log, cwd=str(root),
    )
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            try:
                response = await http.get(f"http://127.0.0.1:{port}/api/eca/v1/health",
                                          headers={"Authorization": f"token {TOKEN}"})
                if response.status_code == 200:
                    return proc, port
            except httpx.HTTPError:
                pass
            if proc.returncode is not None:
                raise RuntimeError("jupyter server exited:\n" + (home / "jupyter.log").read_text()[-3000:])
            await asyncio.sleep(0.1)
    raise RuntimeError("jupyter server did not start")


@dataclass
class Answer:
    question: str
    first_text: float | None = None  # seconds from sending to the first assistant text
    total: float | None = None  # seconds to "progress finished"
    text: str = ""
    notes: list[str] = field(default_factory=list)  # system texts shown
    tools: list[str] = field(default_factory=list)  # tool calls shown
    model: str = ""


class PanelSocket:
    """The panel's side of the WebSocket: requests, and a chat's notifications until its prompt finishes."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.next_id = 0
        self.pending: list[dict] = []  # tool calls waiting for approval, to reject

    @classmethod
    async def connect(cls, port: int) -> PanelSocket:
        request = HTTPRequest(f"ws://127.0.0.1:{port}/api/eca/v1/ws", headers={"Authorization": f"token {TOKEN}"})
        client = cls(await websocket_connect(request))
        await client.request("initialize", {"capabilities": {}, "workspaceFolders": [],
                                            "clientInfo": {"name": "jupyterlab-eca-panel", "version": "bench"}})
        await client.notify("initialized", {})
        return client

    async def request(self, method: str, params: dict, answer: Answer | None = None, t0: float = 0.0) -> dict:
        self.next_id += 1
        rid = self.next_id
        await self.conn.write_message(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        while True:
            message = await self._read()
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]
            if answer is not None:
                self._see(message, answer, t0)

    async def _read(self) -> dict:
        text = await self.conn.read_message()
        if text is None:
            raise RuntimeError("socket closed")
        return json.loads(text)

    def _see(self, message: dict, answer: Answer, t0: float) -> bool:
        """Fold a notification into ``answer``; True when the prompt is over."""
        if message.get("method") != "chat/contentReceived":
            return False
        params = message["params"]
        if params.get("parentChatId"):
            return False
        role, content = params.get("role"), params.get("content") or {}
        kind = content.get("type")
        if role == "assistant" and kind == "text" and content.get("text"):
            if answer.first_text is None:
                answer.first_text = time.perf_counter() - t0
            answer.text += content["text"]
        elif role == "system" and kind == "text":
            answer.notes.append(content["text"])
        elif kind == "toolCallRun":
            call = f"{content.get('name')}({json.dumps(content.get('arguments'))[:80]})"
            if content.get("manualApproval"):  # the bench declines what a user would have to approve
                call += " — asked for approval: rejected by the bench"
                self.pending.append({"chatId": params["chatId"], "toolCallId": content["id"]})
            answer.tools.append(call)
        elif kind == "progress" and content.get("state") == "finished":
            answer.total = time.perf_counter() - t0
            return True
        return False

    async def ask(self, chat_id: str | None, question: str, contexts: list[dict], timeout: float) -> tuple[
            Answer, str]:
        answer = Answer(question)
        t0 = time.perf_counter()
        params: dict = {"message": question, "contexts": contexts}
        if chat_id is not None:
            params["chatId"] = chat_id
        result = await self.request("chat/prompt", params, answer, t0)
        chat_id = result["chatId"]
        answer.model = result.get("model", "")
        if answer.total is None:
            try:
                await asyncio.wait_for(self._until_finished(answer, t0), timeout)
            except TimeoutError:
                answer.notes.append(f"[bench] stopped after {timeout:.0f} s")
                await self.notify("chat/promptStop", {"chatId": chat_id})
                await asyncio.wait_for(self._until_finished(answer, t0), 60)
                answer.total = None
        return answer, chat_id

    async def _until_finished(self, answer: Answer, t0: float) -> None:
        while not self._see(await self._read(), answer, t0):
            while self.pending:
                await self.notify("chat/toolCallReject", self.pending.pop())

    async def notify(self, method: str, params: dict) -> None:
        await self.conn.write_message(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))


def seconds(value: float | None) -> str:
    return f"{value:7.1f}" if value is not None else "      —"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:7.1f}" if a is not None and b else "      —"


async def run(args: argparse.Namespace) -> None:
    questions = QUESTIONS[: args.questions]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        workspace = Path(tmp) / "notebooks"
        started = time.perf_counter()
        prepare_workspace(workspace, home)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
        proc, port = await start_jupyter(home, workspace)
        try:
            socket_ = await PanelSocket.connect(port)
            # the model loads in the background as the server starts (make lab): a first prompt waits for it, so a
            # throwaway chat takes that wait out of the measurements
            warm, _ = await socket_.ask(None, "Hi", [], args.timeout)
            print(f"warm-up on {warm.model}: {seconds(warm.total).strip()} s", flush=True)
            attached = [{"type": "file", "path": NOTEBOOK}]  # what the panel sends while the notebook is active
            results: dict[str, list[Answer]] = {}
            for label, contexts in (("notebook", attached), ("baseline", [])):
                chat_id = None
                results[label] = []
                for question in questions:
                    answer, chat_id = await socket_.ask(chat_id, question, contexts, args.timeout)
                    results[label].append(answer)
                    print(f"  {label}: {question[:40]!r}: first text {seconds(answer.first_text).strip()} s, "
                          f"total {seconds(answer.total).strip()} s", flush=True)
            socket_.conn.close()
        finally:
            proc.terminate()
            await proc.wait()

    print()
    print(f"Embedded model, {os.cpu_count()} cores; seconds from chat/prompt sent (one chat per column)")
    print(f"{'question':<42} {'nb first':>8} {'nb total':>8} {'bl first':>8} {'bl total':>8} "
          f"{'first ×':>7} {'total ×':>7}")
    for nb, bl in zip(results["notebook"], results["baseline"], strict=True):
        print(f"{nb.question[:42]:<42} {seconds(nb.first_text):>8} {seconds(nb.total):>8} "
              f"{seconds(bl.first_text):>8} {seconds(bl.total):>8} {ratio(nb.first_text, bl.first_text)} "
              f"{ratio(nb.total, bl.total)}")
    for label in ("notebook", "baseline"):
        print()
        print(f"==== answers: {label} ====")
        for answer in results[label]:
            print(f"--- {answer.question}")
            for note in answer.notes:
                print(f"[system] {note.strip()}")
            for tool in answer.tools:
                print(f"[tool] {tool}")
            print(answer.text.strip() or "(no text)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a question is stopped")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
