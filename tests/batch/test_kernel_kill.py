"""The issue's "done when", as a notebook user lives it: a DataFrame through a prompt template on a LocalCluster in a
real kernel, a progress bar, the kernel killed halfway (SIGKILL of the kernel process alone, the worst case: no
shutdown message, no process-group kill), the same cell rerun in a new kernel — every row answered, none paid twice
beyond what was in flight at the kill, and no Dask worker outliving its kernel.

The scripted LLM server runs here, in the test, so it outlives both kernels and counts every request.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text, Usage
from tests._kernels import ipc_kernel_manager, remove_ipc_dir
from tests._waiting import wait_until

from .conftest import user_text

pytestmark = pytest.mark.slow

psutil = pytest.importorskip("psutil")  # (a dependency of distributed)
pytest.importorskip("distributed")
pytest.importorskip("ipywidgets")
pytest.importorskip("jupyter_client")

ROWS = int(os.environ.get("ECA_KILL_ROWS", "600"))  # the full size: ECA_KILL_ROWS=10000

#: what the user runs, twice (the second time in a new kernel)
CELL = """
import pandas as pd
from eca_notebook.batch import dataframe_batch, local_cluster

reviews = pd.DataFrame({{"text": [f"review {{i}}" for i in range({rows})]}})
with local_cluster(n_workers=2, threads_per_worker=4) as cluster:
    labelled = dataframe_batch(reviews, "Classify this review: {{text}}", executor=cluster, store={store!r},
                               workspace={workspace!r}, config={config!r}, env={env!r})
"""

#: what the test reads back from the second kernel
CHECK = """
import json
print(json.dumps({"rows": len(labelled), "status": labelled["status"].value_counts().to_dict(),
                  "answered": int((labelled["answer"] == "label: " + labelled["text"]).sum()),
                  "columns": list(labelled.columns)}))
"""


def label(body: Any) -> Reply:
    text = user_text(body).split(": ", 1)[-1]
    return Reply([Delay(0.1), Text(f"label: {text}"), Usage(20, 3)])


def stored_ids(store: Path) -> list[str]:
    if not store.exists():
        return []
    return [json.loads(line)["id"] for line in store.read_text().splitlines() if line.endswith("}")]


def stored_prompts(store: Path) -> set[str]:
    return {json.loads(line)["prompt"] for line in store.read_text().splitlines() if line.endswith("}")}


def alive(pids: list[int]) -> list[int]:
    living = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                living.append(pid)
        except psutil.NoSuchProcess:
            pass
    return living


class Kernel:
    """A kernel as a front end drives it: execute requests, iopub collected, widget states from comm messages."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.km = ipc_kernel_manager(kernel_name="python3")
        self.km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.iopub: list[dict[str, Any]] = []

    @property
    def pid(self) -> int:
        return int(self.km.provisioner.process.pid)

    def pump(self) -> None:
        import queue

        while True:
            try:
                self.iopub.append(self.kc.get_iopub_msg(timeout=0.01))
            except queue.Empty:
                return

    def send(self, code: str) -> str:
        return str(self.kc.execute(code))

    def reply(self, msg_id: str, timeout: float = 600) -> dict[str, Any]:
        import queue

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = self.kc.get_shell_msg(timeout=0.1)
            except queue.Empty:
                self.pump()
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                self.pump()
                return dict(reply["content"])
        raise AssertionError("the cell did not finish in time")

    def stdout(self, msg_id: str) -> str:
        self.pump()
        return "".join(m["content"]["text"] for m in self.iopub if m["msg_type"] == "stream"
                       and m["parent_header"].get("msg_id") == msg_id and m["content"]["name"] == "stdout")

    def errors(self) -> list[dict[str, Any]]:
        return [m["content"] for m in self.iopub if m["msg_type"] == "error"]

    def progress(self) -> tuple[dict[str, Any], str] | None:
        """The progress bar's state and the totals line next to it, as the front end would show them."""
        self.pump()
        states: dict[str, dict[str, Any]] = {}
        for m in self.iopub:
            if m["msg_type"] == "comm_open":
                states[m["content"]["comm_id"]] = dict(m["content"]["data"].get("state") or {})
            elif m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update":
                states.setdefault(m["content"]["comm_id"], {}).update(m["content"]["data"]["state"])
        bars = [s for s in states.values() if s.get("_model_name") == "IntProgressModel"]
        lines = [str(s.get("value")) for s in states.values() if s.get("_model_name") == "HTMLModel"]
        return (bars[0], lines[0]) if bars and lines else None

    def descendants(self) -> list[int]:
        try:
            return [p.pid for p in psutil.Process(self.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def cluster_processes(self) -> list[int]:
        """The kernel's processes but multiprocessing's resource tracker (which lives as long as the kernel)."""
        found = []
        for pid in alive(self.descendants()):
            try:
                if "resource_tracker" not in " ".join(psutil.Process(pid).cmdline()):
                    found.append(pid)
            except psutil.NoSuchProcess:
                pass
        return found

    def close(self) -> None:
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=True)
        else:
            self.km.cleanup_resources()
        remove_ipc_dir(self.km)


@pytest.fixture
def llm() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        server.respond_with(label)
        yield server


def test_kernel_killed_halfway_then_rerun_answers_every_row_once(llm: ScriptedLLMServer, tmp_path: Path):
    home = tmp_path / "home"
    for sub in (".config", ".cache"):
        (home / sub).mkdir(parents=True)
    workspace = tmp_path / "project"
    workspace.mkdir()
    store = workspace / "labels.jsonl"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
           "OLLAMA_API_URL": "http://127.0.0.1:9"}
    config = {"localModel": False, "defaultModel": "fake/m1",
              "providers": {"fake": {"api": "openai-chat", "url": llm.url,
                                     "models": {"m1": {"inputCost": 0.15, "outputCost": 0.6}}}}}
    cell = CELL.format(rows=ROWS, store=str(store), workspace=str(workspace), config=config, env=env)
    kernel_env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_URL"))
                  and k != "ECA_CONFIG"}
    kernel_env.update(env)

    # -- the first kernel: the cell runs, the bar moves, the kernel is killed a third of the way in ----------------
    first = Kernel(workspace, kernel_env)
    try:
        first.send(cell)
        wait_until(lambda: len(stored_ids(store)) >= ROWS // 3, timeout=180, what="a third of the rows stored")
        bar, line = wait_until(lambda: (p := first.progress()) and p[0].get("value", 0) > 0 and p,
                               timeout=180, what="the progress bar moving")
        assert bar["max"] == ROWS and f"/{ROWS}" in line and "tokens" in line and "est. $" in line
        workers = wait_until(lambda: len(first.cluster_processes()) >= 2 and first.descendants(),
                             timeout=180, what="the cluster's worker processes")
        first.pump()
        assert not first.errors()
        os.kill(first.pid, signal.SIGKILL)
        first.km.provisioner.process.wait()
        # nothing of the dead kernel's cluster lingers: its worker processes notice their parent is gone and exit
        wait_until(lambda: not alive(workers), timeout=120, what="the dead kernel's Dask workers exiting")
    finally:
        first.close()
    stored_at_kill = stored_prompts(store)
    sent_at_kill = Counter(user_text(r.body) for r in llm.requests)
    assert ROWS // 3 <= len(stored_at_kill) < ROWS
    assert all(count == 1 for count in sent_at_kill.values())  # nothing was sent twice before the kill
    in_flight = set(sent_at_kill) - stored_at_kill  # sent, but the answer never reached the store

    # -- a new kernel, the same cell: the rest is sent, the bar starts at what was resumed ------------------------
    second = Kernel(workspace, kernel_env)
    try:
        run = second.send(cell)
        assert second.reply(run)["status"] == "ok", second.errors()
        check = second.send(CHECK)
        assert second.reply(check)["status"] == "ok", second.errors()
        summary = json.loads(second.stdout(check))
        bar, line = wait_until(second.progress, timeout=180, what="the second progress bar")
        wait_until(lambda: not second.cluster_processes(), timeout=120,
                   what="the second cluster's workers closing with the `with` block")
    finally:
        second.close()

    assert summary["rows"] == ROWS and summary["status"] == {"done": ROWS} and summary["answered"] == ROWS
    assert summary["columns"][:4] == ["text", "status", "answer", "error"]
    assert bar["value"] == ROWS and bar["bar_style"] == "success"
    assert f"{ROWS}/{ROWS}" in line and f"{len(stored_at_kill)} resumed" in line
    sent = Counter(user_text(r.body) for r in llm.requests)
    assert set(sent) == {f"Classify this review: review {i}" for i in range(ROWS)}  # every row was asked
    twice = {prompt for prompt, count in sent.items() if count > 1}
    assert twice <= in_flight and max(sent.values()) == 2  # paid twice: only what was in flight at the kill
    assert not (stored_at_kill & {p for p, c in sent.items() if c > 1})
    lines = store.read_text().splitlines()
    assert len(lines) == len(set(stored_ids(store))) == ROWS  # each row's answer stored once
