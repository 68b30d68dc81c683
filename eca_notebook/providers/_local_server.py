"""The child process that hosts the embedded model: llama.cpp's OpenAI-compatible server via ``xllamacpp``.

Why a child process rather than a thread: ``xllamacpp.Server(...)`` loads the model while holding the GIL, so even
from a worker thread it would freeze the event loop for the whole load; llama.cpp may also write to file descriptor
1, which is the protocol channel of the stdio server; and a native crash (a failed assertion in llama.cpp) would
take the whole engine down. In a child none of that can hurt us, and stopping it frees every byte and thread.

Run as a script (``python _local_server.py``) so it imports only the standard library and ``xllamacpp`` — not
``eca_notebook`` (no httpx/pydantic start-up cost). Protocol with the parent (:mod:`.local`):

* stdin, first line: a JSON object with the settings (the API key travels here, never in argv where ``ps`` shows it);
* stdout: exactly one JSON line — ``{"ok": true, "url": ..., "load_seconds": ...}`` once the model is loaded and the
  HTTP server listens, or ``{"ok": false, "error": ...}``. Anything native code prints goes to stderr instead;
* then the child waits for end-of-file on stdin and exits at once (``os._exit``: the OS closes the port and every
  connection). The parent closes stdin to stop it; if the parent dies, the operating system closes the pipe, so the
  child never outlives it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Required, TextIO, TypedDict


class _Reply(TypedDict, total=False):
    """The one line on stdout: ready (``ok``, ``url``, ``load_seconds``, ``pid``) or not (``error``)."""

    ok: Required[bool]
    url: str
    load_seconds: float
    pid: int
    error: str


def _send(channel: TextIO, message: _Reply) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


class Settings(TypedDict, total=False):
    """What the engine sends the server process (``local.py``): the model file and the llama.cpp options."""

    model_path: Required[str]
    n_ctx: int
    n_parallel: int
    verbosity: int
    api_key: str
    threads: int
    batch_threads: int


def _params(settings: Settings) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = settings["model_path"]
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port chosen by the OS; the server reports it in listening_address
    params.n_ctx = int(settings.get("n_ctx") or 0)
    params.n_parallel = int(settings.get("n_parallel") or 1)
    params.verbosity = int(settings.get("verbosity", 0))
    if hasattr(params, "ui"):  # no web UI (older xllamacpp releases call it `webui`)
        params.ui = False
    params.api_keys = [settings["api_key"]] if settings.get("api_key") else []
    if settings.get("threads"):
        params.cpuparams.n_threads = int(settings["threads"])
    if settings.get("batch_threads"):
        params.cpuparams_batch.n_threads = int(settings["batch_threads"])
    return params


def main() -> int:  # returns only on failure; success ends in os._exit(0)
    # Keep a private copy of stdout for the handshake, then point fd 1 at stderr so native prints can't corrupt it.
    handshake = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        settings = json.loads(sys.stdin.buffer.readline() or b"{}")
        params = _params(settings)
        import xllamacpp

        started = time.perf_counter()
        server = xllamacpp.Server(params)
        load_seconds = time.perf_counter() - started
    except BaseException as exc:  # report every failure to the parent as data, never as a traceback on a pipe
        _send(handshake, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    _send(handshake, {"ok": True, "url": server.listening_address, "load_seconds": load_seconds, "pid": os.getpid()})
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except (OSError, KeyboardInterrupt):
        pass
    # Exit right here, while ``server`` is still referenced: its destructor (~Server) would wait for in-flight
    # requests — seconds, or as long as a generation runs — and there is nothing to save. Exiting closes the
    # listening socket and every connection at once; the OS reclaims the rest.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)
