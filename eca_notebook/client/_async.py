"""The asyncio client: ECA JSON-RPC over a message stream, with prompts as awaitable results.

:meth:`EcaClient.start` runs an engine in this process behind a :class:`~eca_notebook.serving.ServerConnection` on an
in-memory stream pair, and talks to it through an :class:`~eca_notebook.rpc.Endpoint` — the same protocol an editor
speaks over stdio, so :meth:`EcaClient.connect` works unchanged over any other stream (a WebSocket to a remote
engine, a subprocess's pipes). Nothing here reaches into the engine, except that ``client.engine`` is handed out
for plug-ins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ..protocol import ChatContentReceivedParams, ChatContext, JsonObject
from ._approval import ApprovalPolicy
from ._connection import START_TIMEOUT, STOP_WAIT, ClientConnection, new_chat_id
from ._executor import BatchPrompt, PromptOptions, StartOptions, batch_executor
from ._result import PromptResult
from ._stream import PROMPT_KEYS, PromptStream, batch_job

if TYPE_CHECKING:
    from ..engine import Engine
    from ..transports import MessageStream

__all__ = ["START_TIMEOUT", "STOP_WAIT", "EcaClient", "PromptStream"]

log = logging.getLogger(__name__)


class EcaClient(ClientConnection):
    """An ECA client. Create it with :meth:`start` (in-process engine) or :meth:`connect` (any message stream);
    close it with :meth:`aclose` or ``async with``.

    Attributes, updated from ``config/updated`` and ``tool/serverUpdated``: ``models``, ``default_model`` (the
    model used when a prompt names none), ``behaviors``, ``default_behavior``, ``welcome_message``, ``tools`` (the
    native tool list, each ``{"name", "description", "parameters", "disabled"?}``), ``messages`` (every
    ``$/showMessage``: config problems, missing keys); ``engine`` (in-process only, for plug-ins).
    """

    # -- creation ------------------------------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        *,
        workspace: str | Path | None = None,
        config: JsonObject | None = None,
        env: Mapping[str, str] | None = None,
        approval: ApprovalPolicy | None = None,
        engine: Engine | None = None,
        client_name: str = "eca-notebook-client",
        start_timeout: float = START_TIMEOUT,
        ask_question: Callable[[JsonObject], Any] | None = None,
    ) -> EcaClient:
        """Start an engine in this process and connect to it.

        ``workspace``: the project folder (default: the current directory). ``config``: a config layer, sent as
        ``initializationOptions`` (over the built-in defaults, under ``ECA_CONFIG`` and the config files — use
        ``{"pureConfig": True, ...}`` to ignore files on disk). ``env``: the environment the engine reads keys, URLs
        and ``XDG_*`` paths from, *instead of* ``os.environ``. ``approval``: the default policy for tool calls that
        ask (default :data:`DEFAULT_UNATTENDED_POLICY`). ``engine``: share an existing engine (then ``workspace``,
        ``config`` and ``env`` are the engine's own, and closing the client leaves it running). ``ask_question``:
        answers ``chat/askQuestion`` (the ``chatAskQuestion`` params as a dict → ``{"answer", "cancelled"}``, may be
        a coroutine function): the model's ``ask_user`` questions come here instead of into the chat as text.
        """
        from ..engine import Engine as _Engine
        from ..engine import EngineOptions
        from ..serving import ServerConnection, workspace_paths
        from ..transports import memory_pair

        if engine is not None:
            folders = list(engine.workspace_folders)
            shared = engine
            start_options: StartOptions = {"workspace": str(folders[0]) if folders else None,
                             "config": engine.options.initialization_options,
                             "env": dict(engine.options.env) if engine.options.env is not None else None}

            def factory(params: Any) -> _Engine:
                return shared
        else:
            folder = Path(workspace if workspace is not None else Path.cwd()).expanduser().resolve()
            if not folder.is_dir():
                raise NotADirectoryError(f"workspace is not a directory: {folder}")
            folders = [folder]
            start_options = {"workspace": str(folder), "config": config,
                             "env": dict(env) if env is not None else None}

            def factory(params: Any) -> _Engine:
                return _Engine(EngineOptions(workspace_folders=workspace_paths(params),
                                             initialization_options=params.initialization_options, env=env))

        server_side, client_side = memory_pair()
        connection = ServerConnection(server_side, factory, owns_engine=engine is None)
        client = cls(client_side, approval=approval, client_name=client_name)
        client.ask_question = ask_question
        client._server_task = asyncio.create_task(connection.run(), name="eca-client-engine")
        try:
            await client._handshake(folders, config, start_timeout)
        except BaseException:
            await client.aclose()
            raise
        client.engine = connection.engine
        client.start_options = start_options  # what a batch executor builds its workers' engines from
        return client

    @classmethod
    async def connect(
        cls,
        stream: MessageStream,
        *,
        workspace: str | Path | None = None,
        config: JsonObject | None = None,
        approval: ApprovalPolicy | None = None,
        client_name: str = "eca-notebook-client",
        start_timeout: float = START_TIMEOUT,
    ) -> EcaClient:
        """Connect to an ECA server over ``stream`` (any :class:`MessageStream`); ``engine`` stays None."""
        client = cls(stream, approval=approval, client_name=client_name)
        folders = [Path(workspace).expanduser().resolve()] if workspace is not None else []
        try:
            await client._handshake(folders, config, start_timeout)
        except BaseException:
            await client.aclose()
            raise
        return client

    async def __aenter__(self) -> EcaClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- prompts -------------------------------------------------------------------------------------------------

    async def prompt(
        self,
        message: str,
        *,
        chat_id: str | None = None,
        model: str | None = None,
        behavior: str | None = None,
        contexts: Sequence[ChatContext | JsonObject] | None = None,
        approval: ApprovalPolicy | None = None,
        timeout: float | None = None,
        variant: str | None = None,
    ) -> PromptResult:
        """Send a prompt and wait until the turn ends (tool calls included).

        ``chat_id``: continue that chat (default: a new one). ``variant``: the model's variant (e.g. ``"high"``
        reasoning effort), kept by the chat. ``approval``: the policy for this turn's tool calls
        (default: the client's). ``timeout``: seconds; when it passes the prompt is stopped and the result says so
        in ``error`` (nothing is raised). Errors of the model or provider come back in ``result.error`` too;
        cancelling the awaiting task stops the prompt.
        """
        turn = self._open_turn(message, chat_id, approval, streaming=False)
        return await self._run_turn(turn, self._prompt_params(turn.chat_id, message, model, behavior, contexts,
                                                              variant), timeout)

    def stream(
        self,
        message: str,
        *,
        chat_id: str | None = None,
        model: str | None = None,
        behavior: str | None = None,
        contexts: Sequence[ChatContext | JsonObject] | None = None,
        approval: ApprovalPolicy | None = None,
        timeout: float | None = None,
    ) -> PromptStream:
        """Like :meth:`prompt`, but iterate over this prompt's contents (typed) as they arrive::

            async for item in client.stream("Explain this repo"):
                if item.content.type == "text":
                    print(item.content.text, end="")

        The iteration ends after ``progress finished``; then ``stream.result`` holds the :class:`PromptResult`.
        ``stream.chat_id`` is known before the first item (e.g. for a Stop button). The prompt is sent on the first
        iteration; ``await stream.aclose()`` (or ``async with``) stops it if it is still running.
        """
        return PromptStream(self, message, chat_id=chat_id or new_chat_id(), model=model, behavior=behavior,
                            contexts=contexts, approval=approval, timeout=timeout)

    async def batch(
        self,
        prompts: Iterable[str | BatchPrompt],
        *,
        concurrency: int = 4,
        executor: Any = None,
        **defaults: Unpack[PromptOptions],
    ) -> list[PromptResult]:
        """Run prompts, each in its own new chat, at most ``concurrency`` at a time; results in input order.

        Each prompt is a message or a dict ``{"message": ..., "model"?, "behavior"?, "contexts"?, "approval"?,
        "timeout"?}`` overriding ``defaults`` (the same keywords as :meth:`prompt`, minus ``chat_id``). A prompt
        that fails — a provider error, a timeout, even an exception — has ``error`` set; the others go on.

        ``executor``: run them elsewhere — a ``dask.distributed.Client`` as it is (its cluster runs them, as
        ``DaskExecutor(dask_client)``), or any :class:`~eca_notebook.client.BatchExecutor`, e.g. those of
        :mod:`eca_notebook.batch`: ``DaskExecutor(dask_client, store=..., retries=..., rate_limit=..., budget=...,
        progress=...)`` for a results store, retries, rate limits and a budget, ``InProcessExecutor`` here; each
        worker with an engine built like this client's. ``approval`` is then ``"unattended"`` or ``"workspace"``
        and the results' ``contents`` are empty (they stay on the workers).
        """
        if "chat_id" in defaults:
            raise TypeError("batch() runs each prompt in its own chat: chat_id is not a default")
        unknown = set(defaults) - PROMPT_KEYS
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) for batch(): {', '.join(sorted(unknown))}")
        jobs = [batch_job(item, defaults, i) for i, item in enumerate(prompts)]
        if executor is not None:
            # the batch package sits above the client (it starts clients in workers): it is reached through the
            # executor object (the BatchExecutor protocol, _executor.py), never imported from here
            return await batch_executor(executor).run_client_batch(self, jobs)
        gate = asyncio.Semaphore(max(1, int(concurrency)))

        async def run(message: str, kwargs: PromptOptions) -> PromptResult:
            chat_id = kwargs.get("chat_id") or new_chat_id()
            async with gate:
                try:
                    return await self.prompt(message, chat_id=chat_id, model=kwargs.get("model"),
                                             behavior=kwargs.get("behavior"), contexts=kwargs.get("contexts"),
                                             approval=kwargs.get("approval"), timeout=kwargs.get("timeout"))
                except Exception as exc:
                    log.info("%s: batch prompt in chat %s failed: %r", self.client_name, chat_id, exc)
                    return PromptResult(chat_id=chat_id, prompt=message, error=f"{type(exc).__name__}: {exc}")

        return list(await asyncio.gather(*(run(message, kwargs) for message, kwargs in jobs)))

    # -- chats ---------------------------------------------------------------------------------------------------

    async def stop(self, chat_id: str) -> None:
        """Stop the prompt running in ``chat_id``; when this client sent it, wait (a little) until it has ended."""
        await self._endpoint.notify("chat/promptStop", {"chatId": chat_id})
        turn = self._turns.get(chat_id)
        if turn is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_WAIT):
                    await turn.done.wait()

    async def steer(self, chat_id: str, message: str) -> None:
        """Guide the prompt running in ``chat_id`` (``chat/promptSteer``): the text joins the model's input at the
        next round boundary — after the current response and its tool calls — and is then shown as a user message.
        A prompt that ends before that drops it (send it as a prompt then); nothing happens when none runs."""
        await self._endpoint.notify("chat/promptSteer", {"chatId": chat_id, "message": message})

    async def remove_steer(self, chat_id: str) -> None:
        """Take back the steer text not yet taken in (``chat/promptSteerRemove``); idempotent."""
        await self._endpoint.notify("chat/promptSteerRemove", {"chatId": chat_id})

    async def jobs(self) -> list[JsonObject]:
        """The background jobs (``jobs/list``): ``id``, ``status``, ``label`` (the command), ``summary``,
        ``elapsed``, ``exitCode``, ``chatId``… — running ones and those ended in the last half hour."""
        result = await self._endpoint.request("jobs/list", {}) or {}
        return list(result.get("jobs") or [])

    async def kill_job(self, job_id: str) -> bool:
        """Kill a background job and every process it started (``jobs/kill``); False when it was not running."""
        result = await self._endpoint.request("jobs/kill", {"jobId": job_id}) or {}
        return bool(result.get("killed"))

    async def job_output(self, job_id: str) -> JsonObject:
        """A snapshot of a job's last output lines (``jobs/readOutput``): ``lines`` (``text``, ``stream``),
        ``status``, ``exitCode``."""
        result: JsonObject = await self._endpoint.request("jobs/readOutput", {"jobId": job_id}) or {}
        return result

    async def delete(self, chat_id: str) -> None:
        """Delete a chat (stopping it first when it is running), from memory and from the saved chats."""
        await self._endpoint.request("chat/delete", {"chatId": chat_id})

    async def list_chats(self, *, limit: int | None = None, sort_by: str | None = None) -> list[JsonObject]:
        """Chat summaries (``id``, ``title``, ``status``, ``createdAt``, ``updatedAt``, ``model``, ``messageCount``),
        most recently updated first."""
        params: JsonObject = {}
        if limit is not None:
            params["limit"] = limit
        if sort_by is not None:
            params["sortBy"] = sort_by
        result = await self._endpoint.request("chat/list", params) or {}
        return list(result.get("chats") or [])

    async def open_chat(self, chat_id: str) -> list[ChatContentReceivedParams]:
        """A chat's contents as they were shown (``chat/open`` replays them); ``[]`` when there is no such chat."""
        if chat_id in self._openers:
            raise RuntimeError(f"chat {chat_id} is already being opened")
        if chat_id in self._turns:  # the replay would be mixed into the running prompt's contents
            raise RuntimeError(f"a prompt is running in chat {chat_id}: open it once the prompt has ended")
        collected: list[ChatContentReceivedParams] = []
        self._openers[chat_id] = collected
        try:
            result = await self._endpoint.request("chat/open", {"chatId": chat_id}) or {}
        finally:
            self._openers.pop(chat_id, None)
        return collected if result.get("found") else []

    async def rollback(self, chat_id: str, content_id: str, *, revert_files: bool = True) -> None:
        """Rewind a chat: remove the user message ``content_id`` (:attr:`PromptResult.content_id`) and everything
        after it, from the history the model sees and from what clients show; ``revert_files`` also reverts the file
        changes those turns made (a change that cannot be, is said in the chat). Raises
        :class:`~eca_notebook.protocol.errors.RpcError` for an unknown chat or message, or a chat still running."""
        include = ["messages", "tools"] if revert_files else ["messages"]
        await self._endpoint.request("chat/rollback", {"chatId": chat_id, "contentId": content_id,
                                                       "include": include})

    async def fork(self, chat_id: str, content_id: str) -> str:
        """Copy a chat up to and including a message — a user message's ``content_id`` (with its answer) or a tool
        call's id (with its result) — into a new chat, and return the new chat's id; prompting it continues from
        there, the original is untouched. Raises :class:`~eca_notebook.protocol.errors.RpcError` like
        :meth:`rollback`."""
        result = await self._endpoint.request("chat/fork", {"chatId": chat_id, "contentId": content_id}) or {}
        new_id = result.get("chatId")
        if not isinstance(new_id, str):
            raise RuntimeError(f"the server did not name the forked chat (answer: {result!r})")
        return new_id

    async def select_model(self, model: str, chat_id: str | None = None) -> None:
        """Make ``model`` the default for new prompts (and the model of ``chat_id``'s next ones); ValueError for a
        model the engine does not offer."""
        if self.models and model not in self.models:
            raise ValueError(f"unknown model {model!r}; available: {', '.join(self.models)}")
        params: JsonObject = {"model": model}
        if chat_id is not None:
            params["chatId"] = chat_id
        await self._endpoint.notify("chat/selectedModelChanged", params)
        self.default_model = model  # the engine makes it its selected model either way

    async def select_behavior(self, behavior: str, chat_id: str | None = None) -> None:
        """Make an agent (``code``, ``plan`` or a custom one) the default for new prompts; the deprecated id
        ``agent`` names ``code``."""
        if behavior == "agent" and "agent" not in self.behaviors and "code" in self.behaviors:
            behavior = "code"
        if self.behaviors and behavior not in self.behaviors:
            raise ValueError(f"unknown behavior {behavior!r}; available: {', '.join(self.behaviors)}")
        params: JsonObject = {"behavior": behavior}
        if chat_id is not None:
            params["chatId"] = chat_id
        await self._endpoint.notify("chat/selectedBehaviorChanged", params)
        self.default_behavior = behavior

    async def query_commands(self, query: str = "") -> list[JsonObject]:
        """Commands matching ``query`` (``/doctor``, custom ``.eca/commands``, plug-in commands)."""
        result = await self._endpoint.request("chat/queryCommands", {"query": query}) or {}
        return list(result.get("commands") or [])

    async def query_context(self, query: str) -> list[JsonObject]:
        """Contexts (files, directories, …) matching ``query``, ready to pass as ``contexts=`` to a prompt."""
        result = await self._endpoint.request("chat/queryContext", {"query": query}) or {}
        return list(result.get("contexts") or [])

    async def request(self, method: str, params: Any = None) -> Any:
        """Send any ECA request and return its raw result (the escape hatch for what has no method here)."""
        return await self._endpoint.request(method, params)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send any ECA notification."""
        await self._endpoint.notify(method, params)

    def add_plugin(self, plugin: Any) -> None:
        """Add an engine plug-in (tools, commands, contexts); only for an in-process engine."""
        if self.engine is None:
            raise RuntimeError("add_plugin needs an in-process engine (EcaClient.start)")
        self.engine.add_plugin(plugin)
