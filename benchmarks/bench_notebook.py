"""The notebook door in a real kernel: what a streamed ``%eca`` answer costs the kernel, and whether it stays free.

Everything runs against the scripted LLM server on 127.0.0.1 and a real ipykernel (jupyter_client), in one run, so
the ratios compare like with like:

  * ``%load_ext eca_notebook``: time inside the kernel, and the execute round trip vs. a bare ``pass``;
  * a 5,000-chunk reply at full speed, (a) through the Python client in the kernel with no widget (the baseline:
    engine + client only) and (b) through ``%eca`` with the live widget: wall time, the kernel's CPU time (user +
    system, measured by the kernel itself), and the widget state updates sent over IOPub (coalesced: ≤ ~20/s);
  * responsiveness: while a paced 5,000-chunk answer streams for a few seconds, unrelated ``execute_request``s are
    sent one after another; their round trip vs. the same requests on an idle kernel.

  * cold start: the first ``%eca`` of a fresh kernel, ``--typing-seconds`` after ``%load_ext``, to its first
    visible output, against the same for the next ``%eca`` (replies that stream at once: the difference is the
    cold start's own cost).

Usage: python benchmarks/bench_notebook.py [--chunks 5000] [--paced-seconds 3] [--probes 20] [--repeat 3]
       [--typing-seconds 1.5]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text

CPU = "__import__('resource').getrusage(0).ru_utime + __import__('resource').getrusage(0).ru_stime"
SESSION = "__import__('eca_notebook.notebook', fromlist=['current_session']).current_session()"
# After "progress finished" the engine still saves the chat (5,000 contents): wait for that before the next
# measurement, or it would pay for this one's save.
SETTLE = (f"while any(c.running for c in {SESSION}.client.engine.chats.values()):\n"
          "    await __import__('asyncio').sleep(0.01)")


class Kernel:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        from jupyter_client import KernelManager

        self.km = KernelManager(kernel_name="python3")
        self.km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.iopub: list[dict[str, Any]] = []

    def pump(self, timeout: float = 0.0) -> None:
        while True:
            try:
                self.iopub.append(self.kc.get_iopub_msg(timeout=timeout))
            except queue.Empty:
                return

    def execute(self, code: str, timeout: float = 120) -> tuple[dict[str, Any], float]:
        """Run a cell; its reply and the round trip in seconds."""
        started = time.perf_counter()
        msg_id = self.kc.execute(code, allow_stdin=True)  # allow_stdin: a front-end with live widgets
        deadline = started + timeout
        while time.perf_counter() < deadline:
            try:
                reply = self.kc.get_shell_msg(timeout=0.01)
            except queue.Empty:
                self.pump()
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                elapsed = time.perf_counter() - started
                self.pump(0.01)
                if reply["content"]["status"] != "ok":
                    raise RuntimeError(f"{code!r} failed: {reply['content'].get('evalue')}")
                reply["msg_id"] = msg_id
                return reply, elapsed
        raise TimeoutError(code)

    def value(self, expression: str) -> Any:
        reply, _ = self.execute(f"print(repr({expression}))")
        out = [m["content"]["text"] for m in self.iopub if m["msg_type"] == "stream"
               and m["parent_header"].get("msg_id") == reply["msg_id"]]
        return eval("".join(out))  # noqa: S307 - our own kernel's repr of numbers

    def first_output(self, code: str, marker: str, timeout: float = 120) -> float:
        """Seconds from sending ``code`` to the first IOPub message that shows ``marker`` (widget state or output)."""
        started = time.perf_counter()
        self.kc.execute(code, allow_stdin=True)
        while time.perf_counter() - started < timeout:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.005)
            except queue.Empty:
                continue
            self.iopub.append(msg)
            if marker in json.dumps(msg["content"], default=str):
                return time.perf_counter() - started
        raise TimeoutError(code)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def chunks_reply(n: int, paced_seconds: float = 0.0) -> Reply:
    steps: list[Any] = []
    pauses = 50
    for i in range(n):
        steps.append(Text(f"w{i} "))
        if paced_seconds and i % (n // pauses) == n // pauses - 1:
            steps.append(Delay(paced_seconds / pauses))
    return Reply(steps)


def widget_updates(kernel: Kernel, start: int) -> tuple[int, int]:
    """(all widget state updates, markdown redraws) sent since iopub index ``start``."""
    updates = [m for m in kernel.iopub[start:] if m["msg_type"] == "comm_msg"
               and m["content"]["data"].get("method") == "update"]
    markdown = [m for m in updates if "outputs" in m["content"]["data"].get("state", {})]
    return len(updates), len(markdown)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--paced-seconds", type=float, default=3.0)
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--typing-seconds", type=float, default=1.5,
                        help="pause between %%load_ext and the first %%eca (the user typing the question)")
    args = parser.parse_args()
    n = args.chunks

    llm = ScriptedLLMServer().start()
    home = Path(tempfile.mkdtemp(prefix="eca-bench-notebook-"))
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_URL")) and k != "ECA_CONFIG"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               OLLAMA_API_URL="http://127.0.0.1:9", ECA_NOTEBOOK_DISPLAY="widget",
               ECA_CONFIG=json.dumps({"providers": {"bench": {"api": "openai-chat", "url": llm.url,
                                                              "models": {"m": {}}}},
                                      "defaultModel": "bench/m", "localModel": False}))
    kernel = Kernel(env, home)
    try:
        # -- %load_ext ---------------------------------------------------------------------------------------------
        bare = statistics.median(kernel.execute("pass")[1] for _ in range(5))
        kernel.execute("import time as _t")
        _, load_round_trip = kernel.execute("_s = _t.perf_counter(); get_ipython().run_line_magic('load_ext', "
                                            "'eca_notebook'); _load = _t.perf_counter() - _s")
        load_in_kernel = kernel.value("_load")
        print(f"%load_ext eca_notebook: {load_in_kernel * 1000:.1f} ms in the kernel; execute round trip "
              f"{load_round_trip * 1000:.1f} ms vs {bare * 1000:.1f} ms for a bare `pass` "
              f"({load_round_trip / bare:.1f}x)")

        # -- cold start: the first %eca of the kernel (imports, engine start) vs. the next one, to first output ----
        time.sleep(args.typing_seconds)
        llm.enqueue(Reply.text("ready-cold"))
        cold = kernel.first_output("%eca warm up", "ready-cold")
        kernel.execute(f"await {SESSION}.plans[-1].task")
        kernel.execute(SETTLE)
        llm.enqueue(Reply.text("ready-warm"))
        warm = kernel.first_output("%eca -n warm again", "ready-warm")
        kernel.execute(f"await {SESSION}.plans[-1].task")
        kernel.execute(SETTLE)
        print(f"first %eca ({args.typing_seconds:g} s after %load_ext) to first visible output: "
              f"cold {cold * 1000:.0f} ms, warm {warm * 1000:.0f} ms "
              f"(cold start costs {(cold - warm) * 1000:.0f} ms on top of the reply)")

        # -- (a) baseline: the Python client in the kernel, no widget; (b) %eca with the live widget ------------
        # alternated, best of --repeat each (the first big stream of a process pays for warming caches)
        api: list[tuple[float, float]] = []
        widget: list[tuple[float, float, int, int]] = []
        for _ in range(args.repeat):
            llm.enqueue(chunks_reply(n))
            kernel.execute(f"_c0 = {CPU}; _w0 = _t.perf_counter()")
            # started as a task like %eca does, awaited by the next cell like (b)
            kernel.execute(f"_task = __import__('asyncio').ensure_future({SESSION}.client.prompt('go'))")
            kernel.execute(f"_r = await _task; _w = _t.perf_counter() - _w0; _c = {CPU} - _c0")
            api.append(kernel.value("(_w, _c)"))
            kernel.execute(SETTLE)
            assert kernel.value("_r.text.count('w')") == n

            llm.enqueue(chunks_reply(n))
            start = len(kernel.iopub)
            kernel.execute(f"_c0 = {CPU}; _w0 = _t.perf_counter()")
            kernel.execute("%eca -n go")
            kernel.execute(f"await {SESSION}.plans[-1].task; _w = _t.perf_counter() - _w0; _c = {CPU} - _c0")
            wall, cpu = kernel.value("(_w, _c)")
            kernel.execute(SETTLE)
            assert kernel.value(f"{SESSION}.plans[-1].view.text.count('w')") == n
            time.sleep(0.3)
            kernel.pump(0.05)
            widget.append((wall, cpu, *widget_updates(kernel, start)))
        api_wall, api_cpu = min(api, key=lambda r: r[1])
        widget_wall, widget_cpu, updates, markdown = min(widget, key=lambda r: r[1])
        print(f"\n{n:,}-chunk reply at full speed:")
        print(f"  (a) Python client, no widget: {api_wall * 1000:8.1f} ms wall, kernel CPU {api_cpu * 1000:7.1f} ms "
              f"({api_cpu / n * 1e6:.1f} µs/chunk)")
        print(f"  (b) %eca with live widget:    {widget_wall * 1000:8.1f} ms wall, "
              f"kernel CPU {widget_cpu * 1000:7.1f} ms "
              f"({widget_cpu / n * 1e6:.1f} µs/chunk)  b/a CPU {widget_cpu / api_cpu:.2f}x")
        print(f"  widget state updates sent: {updates} for {n:,} chunks, of which {markdown} markdown redraws "
              f"({markdown / max(widget_wall, 1e-9):.1f}/s of stream; coalesced to <= ~20/s)")

        # -- responsiveness while streaming ----------------------------------------------------------------------
        kernel.execute(SETTLE)
        idle = [kernel.execute("1 + 1")[1] for _ in range(args.probes)]
        llm.enqueue(chunks_reply(n, args.paced_seconds))
        start = len(kernel.iopub)
        kernel.execute("%eca -n go slowly")
        busy = []
        streamed = 0.0
        began = time.perf_counter()
        while len(busy) < args.probes:
            busy.append(kernel.execute("1 + 1")[1])
            if time.perf_counter() - began > args.paced_seconds:
                break
        kernel.execute(f"await {SESSION}.plans[-1].task")
        streamed = time.perf_counter() - began
        kernel.pump(0.05)
        updates, markdown = widget_updates(kernel, start)
        print(f"\nwhile a {n:,}-chunk answer streams over ~{streamed:.1f} s ({len(busy)} unrelated execute_requests):")
        print(f"  round trip median {statistics.median(busy) * 1000:.1f} ms, max {max(busy) * 1000:.1f} ms; "
              f"idle kernel median {statistics.median(idle) * 1000:.1f} ms, max {max(idle) * 1000:.1f} ms "
              f"(median ratio {statistics.median(busy) / statistics.median(idle):.2f}x)")
        print(f"  widget state updates: {updates}, of which {markdown} markdown redraws = {markdown / streamed:.1f}/s")
    finally:
        kernel.close()
        llm.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
