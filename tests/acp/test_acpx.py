"""``eca-notebook acp`` driven by ``acpx``, the headless ACP client from the npm registry (a TypeScript client on
the official ``@agentclientprotocol/sdk``), against the scripted LLM server.

acpx is installed into ``tests/acp/node/node_modules`` from the committed lockfile (``npm ci``) the first time it
is needed. With ``--format json`` it prints the raw ACP traffic, so the tests check every message our agent sent
against the schema too; its stderr must carry no error (the SDK logs "Error handling notification …" there when a
message of ours does not parse).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Reply, Stall, Text, ToolCall

from .conftest import AGENT_MESSAGES, RESULT_MODELS, acp_env, completion_bodies, sent_tool_results, strict_problems

pytestmark = pytest.mark.e2e

NODE_DIR = Path(__file__).parent / "node"
ACPX_BIN = NODE_DIR / "node_modules" / ".bin" / "acpx"
AGENT = shlex.join([sys.executable, "-m", "eca_notebook", "acp", "--log-level", "info"])


@pytest.fixture(scope="session")
def acpx_bin() -> Path:
    """acpx from the registry (tests/acp/node), installed once. Each xdist worker has its own session, so the install
    is under a file lock: two workers running ``npm ci`` in the same folder at once broke each other's install on a
    fresh clone (esbuild's install.js gone mid-run); a worker waits for the other's install to end, not just begin."""
    npm = shutil.which("npm")
    if not ACPX_BIN.exists() and (npm is None or shutil.which("node") is None):
        pytest.skip("node/npm are not installed: cannot install the acpx ACP client (tests/acp/node)")
    lock = Path(tempfile.gettempdir()) / f"eca-acpx-{hashlib.sha256(str(NODE_DIR).encode()).hexdigest()[:16]}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        if not ACPX_BIN.exists():  # another worker may have installed it while this one waited
            assert npm is not None
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, f"npm ci in {NODE_DIR} failed:\n{done.stdout}\n{done.stderr}"
    return ACPX_BIN


class Acpx:
    def __init__(self, binary: Path, env: dict[str, str], cwd: Path) -> None:
        self.binary = binary
        self.env = env
        self.cwd = cwd

    def argv(self, *args: str, ttl: str = "1") -> list[str]:
        return [str(self.binary), "--agent", AGENT, "--cwd", str(self.cwd), "--format", "json", "--ttl", ttl,
                "--timeout", "60", *args]

    def run(self, *args: str) -> Run:
        done = subprocess.run(self.argv(*args), env=self.env, cwd=self.cwd, capture_output=True, text=True,
                              timeout=120)
        return Run(done.returncode, done.stdout, done.stderr)

    def wait_idle(self, within: float = 20) -> None:
        """Until the queue owner (and with it our agent process) has shut down after its 1 s idle TTL."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            status = self.run("status")
            states = [json.loads(line).get("status") for line in status.stdout.splitlines() if line.startswith("{")]
            if states and all(state in ("idle", "no-session", "dead", "stopped") for state in states):
                return
            time.sleep(0.25)
        raise AssertionError(f"acpx queue owner still alive after {within} s: {status.stdout}")


class Run:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.messages: list[dict[str, Any]] = []
        for line in stdout.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and value.get("jsonrpc") == "2.0":
                self.messages.append(value)

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.messages if m.get("method") == "session/update"
                and (kind is None or m["params"]["update"]["sessionUpdate"] == kind)]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("method") == method and "id" in m]

    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.updates("agent_message_chunk"))

    def stop_reasons(self) -> list[str]:
        return [m["result"]["stopReason"] for m in self.messages
                if isinstance(m.get("result"), dict) and "stopReason" in m["result"]]

    def problems(self) -> list[str]:
        """Schema problems in what our agent sent, and errors acpx reported."""
        out: list[str] = []
        client_requests: dict[Any, str] = {}
        agent_requests: set[Any] = set()
        for message in self.messages:
            method = message.get("method")
            if method is not None:
                if method in AGENT_MESSAGES:
                    out += strict_problems(AGENT_MESSAGES[method], message.get("params"), method)
                    if "id" in message:
                        agent_requests.add(message["id"])
                elif "id" in message:
                    client_requests[message["id"]] = method
                continue
            id_ = message.get("id")
            if "error" in message and id_ in client_requests and id_ not in agent_requests:
                out.append(f"the agent answered {client_requests[id_]} with an error: {message['error']}")
            if "result" in message and id_ in client_requests and id_ not in agent_requests:
                method = client_requests.pop(id_)
                if method in RESULT_MODELS:
                    out += strict_problems(RESULT_MODELS[method], message["result"], method)
            elif id_ in agent_requests:
                agent_requests.discard(id_)
        out += [f"acpx stderr: {line}" for line in self.stderr.splitlines()
                if "error" in line.lower() or "invalid" in line.lower() or "warn" in line.lower()]
        return out


@pytest.fixture
def acpx(acpx_bin: Path, home: Path, llm, workspace: Path):
    client = Acpx(acpx_bin, acp_env(home, llm), workspace)
    yield client
    client.wait_idle()  # leave no queue owner or agent behind


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> ToolCall:
    return ToolCall(call_id, f"eca__{name}", json.dumps(args), chunks=2)


def test_acpx_exec_streams_and_applies_an_approved_edit_through_its_fs(acpx, llm, workspace):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    llm.enqueue(Reply([Text("Let me "), Text("fix it."), call("edit_file", {
        "path": "hello.py", "original_content": "print('hi')", "new_content": "print('hello')"})]),
        Reply.text("Fixed."))
    run = acpx.run("--approve-all", "exec", "greet properly")
    assert run.returncode == 0, run.stderr
    assert run.problems() == []
    assert run.text() == "Let me fix it.Fixed."
    [tool] = run.updates("tool_call")
    assert tool["kind"] == "edit" and tool["content"][0]["type"] == "diff"
    assert [u["status"] for u in run.updates("tool_call_update")] == ["in_progress", "completed"]
    assert len(run.requests("session/request_permission")) == 1
    # acpx advertises fs: the edit read and wrote the file through it
    assert [r["params"]["path"] for r in run.requests("fs/read_text_file")][0] == str(target)
    [write] = run.requests("fs/write_text_file")
    assert write["params"] == {"sessionId": write["params"]["sessionId"], "path": str(target),
                               "content": "print('hello')\n"}
    assert target.read_text() == "print('hello')\n"
    assert run.stop_reasons() == ["end_turn"]


def test_acpx_deny_all_leaves_the_file_alone(acpx, llm, workspace):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    llm.enqueue(Reply([call("write_file", {"path": "hello.py", "content": "print('bye')\n"})]),
                Reply.text("Leaving it as is."))
    run = acpx.run("--deny-all", "exec", "rewrite it")
    assert run.returncode == 5, run.stderr  # acpx's PERMISSION_DENIED: every permission asked was denied
    assert run.problems() == []
    assert target.read_text() == "print('hi')\n"
    assert run.updates("tool_call_update")[-1]["status"] == "failed"
    assert run.requests("fs/write_text_file") == []
    assert "rejected" in sent_tool_results(completion_bodies(llm)[1])[0].lower()
    assert run.stop_reasons() == ["end_turn"]


def test_acpx_session_is_loaded_by_the_next_agent_process_and_can_be_cancelled(acpx, llm, workspace):
    created = acpx.run("sessions", "new")
    assert created.returncode == 0, created.stderr
    llm.enqueue(Reply.text("The answer is 42."))
    first = acpx.run("prompt", "what is the answer?")
    assert first.returncode == 0 and first.problems() == []
    assert first.text() == "The answer is 42."
    acpx.wait_idle()  # the agent process exits; the next prompt starts a new one that must load the session

    llm.enqueue(Reply([Text("Thinking it over"), Stall(30)]))
    proc = subprocess.Popen(acpx.argv("prompt", "and why?"), env=acpx.env, cwd=acpx.cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "Thinking it over" in line:
                break
        cancel = acpx.run("cancel")
        assert cancel.returncode == 0, cancel.stderr
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    second = Run(proc.returncode, "".join(seen) + rest, err)
    assert second.problems() == []
    [load] = second.requests("session/load")
    assert load["params"]["sessionId"] == first.requests("session/prompt")[0]["params"]["sessionId"]
    assert second.stop_reasons() == ["cancelled"]
    assert second.requests("session/new") == []
    # the loaded session carried its history to the model
    history = json.dumps(completion_bodies(llm)[-1]["input"])
    assert "what is the answer?" in history and "The answer is 42." in history


def test_acpx_model_and_mode_selection(acpx, llm, workspace):
    llm.enqueue(Reply.text("From the other model."))
    run = acpx.run("--model", "openai/gpt-4o", "exec", "hello")
    assert run.returncode == 0, run.stderr
    assert run.problems() == []
    assert run.text() == "From the other model."
    assert completion_bodies(llm)[-1]["model"] == "gpt-4o"

    assert acpx.run("sessions", "new").returncode == 0
    mode = acpx.run("set-mode", "plan")
    assert mode.returncode == 0 and mode.problems() == [], mode.stdout + mode.stderr
    llm.enqueue(Reply.text("Here is a plan."))
    planned = acpx.run("prompt", "plan the work")
    assert planned.returncode == 0 and planned.problems() == []
    body = completion_bodies(llm)[-1]
    assert "plan mode" in body["instructions"]
    assert "eca__write_file" not in [t.get("name") for t in body.get("tools") or []]
