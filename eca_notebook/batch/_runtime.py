"""Running one work unit in whatever process it landed in: the process's own engine loop, the item's workspace and
approval policy, the limits, the retries — and a plain :class:`ItemResult` back.

Why a loop of its own per process: a Dask worker runs tasks on threads and has its own event loop for its
heartbeats; the engines (HTTP pools, chats) must live on a loop that outlives one task and never blocks the
worker's, and nothing may depend on the driver's loop, which is on another machine. So each process lazily starts
one background loop thread, keeps an engine per workspace/settings there (items with a workspace of their own get
a fresh engine, closed after the item), and tasks block their worker thread on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from ..client import DEFAULT_UNATTENDED_POLICY, EcaClient, PromptResult
from ..protocol import JsonObject
from ._limits import Lease, Limiter, estimate_tokens
from ._models import EngineSpec, FileDiff, ItemResult, RateLimit, ToolCallSummary, WorkItem
from ._structured import parse_structured, schema_instructions

__all__ = ["WorkspacePolicy", "default_model", "limit_for", "run_item", "runtime"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: tools that run code: never approved unattended, whatever the workspace
_RUNS_CODE = frozenset({"shell_command", "run_python", "notebook_run_cells"})
_PATH_ARGUMENTS = ("path", "source", "destination", "notebook_path", "notebook")


class WorkspacePolicy:
    """Approve file changes inside one folder only: a call is approved when it carries a ``fileChange`` diff and
    every path it names is inside ``root``; commands, code, MCP tools and anything else that asks are rejected."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def _inside(self, raw: Any) -> bool:
        if not isinstance(raw, str) or not raw:
            return False
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = self.root / path
        try:
            return Path(os.path.normpath(path)).resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False

    def __call__(self, content: JsonObject) -> bool:
        if content.get("origin") == "mcp" or str(content.get("server") or "eca") != "eca":
            return False
        if str(content.get("name") or "") in _RUNS_CODE:
            return False
        details = content.get("details")
        if not isinstance(details, dict) or details.get("type") != "fileChange":
            return False
        given = content.get("arguments")
        arguments: JsonObject = given if isinstance(given, dict) else {}
        paths = [details.get("path")] + [arguments[k] for k in _PATH_ARGUMENTS if k in arguments]
        return all(self._inside(p) for p in paths)

    def __repr__(self) -> str:
        return f"WorkspacePolicy({str(self.root)!r})"


class _Runtime:
    """This process's engine loop and the engines on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="eca-batch-runtime", daemon=True)
        self._thread.start()
        self._clients: dict[str, EcaClient] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the runtime loop and wait (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def client(self, spec: EngineSpec, folder: Path, *, shared: bool) -> EcaClient:
        if not shared:
            return await _start(spec, folder)
        key = spec.key(str(folder))
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            client = self._clients.get(key)
            if client is None or client.closed:
                client = await _start(spec, folder)
                self._clients[key] = client
            return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):
                await client.aclose()


async def _start(spec: EngineSpec, folder: Path) -> EcaClient:
    """An engine of the batch's own (nobody else talks to it). Unless chats are kept, it saves none: every item's
    chat would otherwise be written to disk (fsync'd, and the chat index rewritten) only to be deleted once the
    item's result is taken — the largest cost of an item after the model's own time. The results store is the
    batch's record."""
    client = await EcaClient.start(workspace=folder, config=spec.config, env=spec.env)
    if client.engine is not None:
        if not spec.keep_chats:
            client.engine.store = None
        if client.engine.index is not None:
            # no file-name watcher: it serves @-completion of an interactive client, and the runtime keeps its
            # engines for the process's life — in a kernel it would rescan the workspace every 2 s for ever
            await client.engine.index.stop()
    return client


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def runtime() -> _Runtime:
    """This process's runtime, started on first use."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _Runtime()
        return _runtime


def default_model(spec: EngineSpec) -> str | None:
    """The model the engine ``spec`` describes answers with when an item names none (asked of the engine: it may
    come from the user's own config files, not only ``spec.config``)."""
    rt = runtime()
    target = Path(spec.workspace).expanduser().resolve()

    async def ask() -> str | None:
        client = await rt.client(spec, target.parent if target.is_file() else target, shared=True)
        return client.default_model

    return rt.call(ask())


def limit_for(item: WorkItem, limits: dict[str, RateLimit], default: str | None = None) -> tuple[str, RateLimit] | None:
    """The limit an item runs under: its provider's (the part of its model — or of ``default``, the engine's
    default model, when it names none — before ``/``), else ``"*"``."""
    model = item.model or default
    provider = model.split("/", 1)[0] if model and "/" in model else None
    if provider is not None and provider in limits:
        return provider, limits[provider]
    if "*" in limits:
        return "*", limits["*"]
    return None


def _rate_limited(error: str | None) -> bool:
    return error is not None and ("HTTP 429" in error or "rate limit" in error.lower())


def run_item(item: WorkItem, spec: EngineSpec, *, limits: dict[str, RateLimit], limiter: Limiter, retries: int,
             worker: str = "local", retry_delay: float = 1.0) -> ItemResult:
    """Run one work unit to its end (blocking; any thread but the runtime's): acquire the limits, prompt, release
    with the tokens used, and retry a failure up to ``retries`` more times with exponential backoff. Never raises for
    a failing prompt: the result says what failed."""
    started = time.monotonic()
    chosen = limit_for(item, limits, spec.default_model)
    reserve = float(estimate_tokens(item.message))
    attempts = 0
    while True:
        attempts += 1
        lease: Lease | None = None
        if chosen is not None:
            lease = limiter.acquire(chosen[0], chosen[1], reserve)
        used: float | None = None
        penalty = 0.0
        try:
            result = runtime().call(_prompt_once(item, spec))
            used = float(result.tokens) if result.tokens is not None else None
            if chosen is not None and result.status == "failed" and _rate_limited(result.error):
                penalty = chosen[1].penalty_seconds
        except Exception as exc:  # the runtime itself failed: still a result, never a lost item
            log.exception("batch item %s failed", item.id)
            result = ItemResult(id=item.id, prompt=item.message, status="failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            if chosen is not None:
                limiter.release(lease, used, penalty)
        if result.ok or attempts > retries:
            break
        delay = min(30.0, retry_delay * (2.0 ** (attempts - 1))) * (0.5 + 0.5 * random.random())
        log.info("batch item %s failed (%s); retry %d of %d in %.1f s", item.id, result.error, attempts, retries,
                 delay)
        time.sleep(delay)
    return result.model_copy(update={"attempts": attempts, "worker": worker,
                                     "seconds": round(time.monotonic() - started, 3)})


async def _prompt_once(item: WorkItem, spec: EngineSpec) -> ItemResult:
    rt = runtime()
    target = Path(item.workspace or spec.workspace).expanduser().resolve()
    folder = target.parent if target.is_file() else target
    own = item.workspace is not None
    policy: Any = WorkspacePolicy(folder) if item.approval_mode() == "workspace" else DEFAULT_UNATTENDED_POLICY
    message = item.message
    if item.output_schema is not None:
        message = f"{message}\n\n{schema_instructions(item.output_schema)}"
    try:
        client = await rt.client(spec, folder, shared=not own)
    except Exception as exc:
        return ItemResult(id=item.id, prompt=item.message, status="failed", workspace=item.workspace,
                          error=f"could not start the engine for {folder}: {type(exc).__name__}: {exc}")
    try:
        prompt = await client.prompt(message, model=item.model, behavior=item.behavior, contexts=item.contexts,
                                     approval=policy, timeout=item.timeout)
        if not spec.keep_chats:
            with contextlib.suppress(Exception):
                await client.delete(prompt.chat_id)
    finally:
        if own:
            with contextlib.suppress(Exception):
                await client.aclose()
    return _item_result(item, prompt, folder)


def _item_result(item: WorkItem, prompt: PromptResult, folder: Path) -> ItemResult:
    inputs = outputs = 0
    seen = False
    for content in prompt.contents:
        if content.content.type == "usage":
            seen = True
            inputs += getattr(content.content, "message_input_tokens", None) or 0
            outputs += getattr(content.content, "message_output_tokens", None) or 0
    usage = prompt.usage or {}
    cost: float | None = None
    with contextlib.suppress(TypeError, ValueError):
        session_cost = usage.get("sessionCost")
        cost = float(session_cost) if isinstance(session_cost, (int, float, str)) else None
    files = []
    for call in prompt.tool_calls:
        details = call.details or {}
        if call.status == "done" and details.get("type") == "fileChange":
            path = Path(str(details.get("path") or ""))
            with contextlib.suppress(ValueError):
                path = path.resolve().relative_to(folder)
            files.append(FileDiff(path=path.as_posix(), diff=str(details.get("diff") or ""), tool=call.name))
    error = prompt.error or ("stopped" if prompt.stopped else None)
    tokens = usage.get("sessionTokens")
    data = None
    if error is None and item.output_schema is not None:
        data, problem = parse_structured(prompt.text, item.output_schema)
        if problem is not None:
            error = problem
    return ItemResult(
        id=item.id, prompt=item.message, status="failed" if error else "done", text=prompt.text, error=error,
        model=prompt.model, tokens=tokens if isinstance(tokens, int) else None, input_tokens=inputs if seen else None,
        output_tokens=outputs if seen else None, cost=cost, data=data, files=files, workspace=item.workspace,
        tool_calls=[ToolCallSummary(id=c.id, name=c.name, server=c.server, arguments=c.arguments, status=c.status,
                                    output=c.output, details=c.details, reason=c.reason) for c in prompt.tool_calls],
    )
