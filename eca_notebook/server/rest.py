"""REST endpoints under ``<base_url>api/eca/v1/`` (shapes and mapping documented in :mod:`.openapi`).

Thin on purpose: each handler validates its input, asks the workspace's engine, and shapes the answer. Changes made
here reach the workspace's WebSockets the way ECA would tell them: a new session is ``chat/opened``, a deleted one
``chat/deleted``, a model/behavior change ``config/updated``, a policy change ``tool/serverUpdated``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized

from .._version import __version__
from .._workspace_paths import is_inside
from ..engine import Engine
from ..engine.chats import Chat
from ..engine.config import ApprovalConfig
from ..protocol import ChatPromptParams, ChatSummary
from ..retrieval import FileChange
from ._policy import PolicyFileError, persist_approval, policy_file
from ._schemas import (
    ContentIndexStatus,
    CreateSession,
    CurrentModel,
    Health,
    HistoryItem,
    IndexIncremental,
    IndexResult,
    ModelEntry,
    ModelList,
    Policy,
    PolicyUpdate,
    RegisterWorkspace,
    Session,
    SessionDetail,
    SessionList,
    SetCurrentModel,
    WorkspaceInfo,
    WorkspaceList,
)
from ._workspaces import Workspace, WorkspaceError
from .handlers import ApiHTTPError, EcaApiHandler, Problem

__all__ = [
    "CurrentModelHandler",
    "HealthHandler",
    "IndexActionHandler",
    "IndexStatusHandler",
    "ModelsHandler",
    "PolicyHandler",
    "RegisterWorkspaceHandler",
    "SessionHandler",
    "SessionsHandler",
    "WorkspaceHandler",
    "WorkspacesHandler",
]


def _info(handler: EcaApiHandler, workspace: Workspace) -> WorkspaceInfo:
    return WorkspaceInfo.model_validate(workspace.describe(default=workspace is handler.state.manager.default))


# -- health and workspaces ---------------------------------------------------------------------------------------


class HealthHandler(EcaApiHandler):
    @authorized
    def get(self) -> None:
        manager = self.state.manager
        self.send(Health(version=__version__, workspaces=len(manager.list()), engines=len(manager.started()),
                         connections=len(self.state.sockets)))


class WorkspacesHandler(EcaApiHandler):
    @authorized
    def get(self) -> None:
        self.send(WorkspaceList(workspaces=[_info(self, w) for w in self.state.manager.list()]))


class RegisterWorkspaceHandler(EcaApiHandler):
    @authorized
    async def post(self) -> None:
        body = self.parse_body(RegisterWorkspace)
        manager = self.state.manager
        try:
            folder = manager.resolve(body.path)
        except WorkspaceError as exc:
            raise ApiHTTPError(400, str(exc),
                               details=[{"loc": ["path"], "msg": str(exc), "type": "value_error"}]) from exc
        known = {w.id for w in manager.list()}
        workspace = manager.register([folder])
        if body.start:
            await self.engine(workspace)
        created = workspace.id not in known
        if created:
            self.set_header("Location", self.request.path.rsplit("/", 1)[0] + "/" + workspace.id)
        self.send(_info(self, workspace), status=201 if created else 200)


class WorkspaceHandler(EcaApiHandler):
    @authorized
    def get(self, workspace_id: str) -> None:
        self.send(_info(self, self.workspace(workspace_id)))


# -- approval policy ---------------------------------------------------------------------------------------------


class PolicyHandler(EcaApiHandler):
    """``toolCall.approval`` of the workspace's running engine; PUT replaces it there and in the config file."""

    @staticmethod
    def _policy(workspace: Workspace, engine: Engine, persisted: bool | None = None) -> Policy:
        approval = engine.config.tool_call.approval.model_dump(by_alias=True, mode="json")
        config_file = Path(os.path.relpath(policy_file(workspace.folders), workspace.root)).as_posix()
        return Policy(workspace_id=workspace.id, approval=approval, config_file=config_file, persisted=persisted)

    @authorized
    async def get(self, workspace_id: str) -> None:
        workspace = self.workspace(workspace_id)
        engine = await self.engine(workspace)
        self.send(self._policy(workspace, engine))

    @authorized
    async def put(self, workspace_id: str) -> None:
        workspace = self.workspace(workspace_id)
        body = self.parse_body(PolicyUpdate)
        engine = await self.engine(workspace)
        approval = body.approval.model_dump(mode="json")
        persisted = False
        if not engine.config.pure_config:
            trusted = engine.trust.trusted_now()
            try:
                await asyncio.to_thread(persist_approval, engine, workspace.folders, approval)
            except PolicyFileError as exc:
                raise ApiHTTPError(409, str(exc)) from None
            persisted = True
            # The user's own policy is now in the workspace file: reload it at once and keep a trusted workspace
            # trusted, or its allow rules would be held as the workspace's own (engine/workspace/_trust.py).
            await engine.reload_config()
            engine.trust.keep_trusted(trusted)
        engine.config.tool_call.approval = ApprovalConfig.model_validate(approval)
        engine.tools_changed()  # a bare deny hides a tool: clients get the native tool list again
        self.send(self._policy(workspace, engine, persisted=persisted))


# -- index -------------------------------------------------------------------------------------------------------


def _index_status(workspace: Workspace, engine: Engine, **extra: Any) -> IndexResult:
    assert engine.index is not None  # a workspace always has a folder
    status = engine.index.status()
    content = None
    if engine.code_index is not None:
        c = engine.code_index.status()
        content = ContentIndexStatus(state=c["state"], files=c["files"], symbols=c["symbols"], chunks=c["chunks"],
                                     vectors=c["vectors"], disk_bytes=c["disk_bytes"],
                                     vectors_available=c["vectors_available"], built_at=c["built_at"],
                                     refreshed_at=c["refreshed_at"])
    return IndexResult(
        workspace_id=workspace.id, state=status["state"], files=status["files"], dirs=status["dirs"],
        built_at=status["builtAt"], duration_ms=status["durationMs"], refreshed_at=status["refreshedAt"],
        truncated=status["truncated"], content=content, **extra,
    )


class IndexStatusHandler(EcaApiHandler):
    @authorized
    async def get(self, workspace_id: str) -> None:
        workspace = self.workspace(workspace_id)
        engine = await self.engine(workspace)
        self.send(_index_status(workspace, engine))


class IndexActionHandler(EcaApiHandler):
    """``rebuild`` walks every folder again; ``refresh`` rescans what changed (directory mtimes); ``incremental``
    takes file-watcher events, checks their paths and runs the same refresh (the file-name index tracks names, so
    ``created``/``deleted`` are picked up by the rescan). The content index (``engine.code_index``) gets the events
    themselves: ``modified`` re-indexes the file unless its ``content_hash`` is the one already indexed."""

    @authorized
    async def post(self, workspace_id: str, action: str) -> None:
        workspace = self.workspace(workspace_id)
        extra: dict[str, int | None] = {}
        body = self.parse_body(IndexIncremental) if action == "incremental" else None
        if body is not None:
            problems: list[Problem] = []
            for i, change in enumerate(body.changes):
                try:
                    self._inside(workspace, change.file_path)
                except WorkspaceError as exc:
                    problems.append({"loc": ["changes", i, "file_path"], "msg": str(exc), "type": "value_error"})
            if problems:
                raise ApiHTTPError(400, f"{len(problems)} file path(s) outside the workspace", details=problems)
            extra["accepted"] = len(body.changes)
        engine = await self.engine(workspace)
        index = engine.index
        assert index is not None
        if action == "rebuild":
            await index.build()
        else:
            if not index.ready:
                await index.build()  # nothing to refresh yet: the first build picks everything up
                extra["changed"] = 0
            else:
                extra["changed"] = await asyncio.to_thread(index.refresh)
        extra["reindexed"] = await self._content(engine, action, body)
        self.send(_index_status(workspace, engine, **extra))

    @staticmethod
    async def _content(engine: Engine, action: str, body: IndexIncremental | None) -> int | None:
        """The content index's part: ``rebuild`` rebuilds it; ``refresh`` and ``incremental`` update it only once
        it exists (it is built lazily, by the first search or a rebuild, which picks every change up anyway)."""
        code = engine.code_index
        if code is None:
            return None
        if action == "rebuild":
            return await code.rebuild()
        if not code.ready:
            return 0
        if body is not None:
            return await code.apply_changes(FileChange(type=c.type, path=c.file_path, content_hash=c.content_hash)
                                            for c in body.changes)
        return await code.refresh()

    @staticmethod
    def _inside(workspace: Workspace, file_path: str) -> None:
        path = Path(file_path)
        candidates = [path] if path.is_absolute() else [folder / path for folder in workspace.folders]
        if not any(is_inside(candidate, workspace.folders) for candidate in candidates):
            raise WorkspaceError(f"{file_path!r} is outside the workspace")


# -- sessions ----------------------------------------------------------------------------------------------------


def _session(workspace: Workspace, summary: ChatSummary, **extra: Any) -> Session:
    return Session(
        id=summary.id, workspace_id=workspace.id, title=summary.title, status=summary.status,
        created_at=summary.created_at, updated_at=summary.updated_at, model=summary.model,
        message_count=summary.message_count, **extra,
    )


def _chat_summary(chat: Chat) -> ChatSummary:
    return ChatSummary(id=chat.id, title=chat.title, status="running" if chat.running else "idle",
                       created_at=chat.created_at, updated_at=chat.updated_at, model=chat.model,
                       message_count=chat.message_count)


class SessionsHandler(EcaApiHandler):
    @authorized
    async def get(self) -> None:
        workspace = self.query_workspace()
        engine = await self.engine(workspace)
        summaries = engine.list_chats()
        listed = {s.id for s in summaries}
        # sessions created empty through POST are listed too, even without a chat store (pureConfig)
        summaries += [_chat_summary(c) for c in engine.chats.values() if c.id not in listed]
        self.send(SessionList(workspace_id=workspace.id, sessions=[_session(workspace, s) for s in summaries]))

    @authorized
    async def post(self) -> None:
        body = self.parse_body(CreateSession)
        workspace = self.workspace(body.workspace_id)
        engine = await self.engine(workspace)
        problems: list[Problem] = []
        if body.model is not None and body.model not in engine.registry.models():
            problems.append({"loc": ["model"], "msg": f"unknown model {body.model!r}", "type": "value_error"})
        behavior = engine.agents.canonical(body.behavior) or body.behavior  # (the deprecated ``agent`` is ``code``)
        if behavior is not None and behavior not in engine.behaviors():
            problems.append({"loc": ["behavior"], "msg": f"unknown behavior {body.behavior!r}", "type": "value_error"})
        if problems:
            raise ApiHTTPError(400, "invalid body: " + "; ".join(p["msg"] for p in problems), details=problems)
        chat_id = body.session_id or str(uuid.uuid4())
        if engine.get_chat(chat_id) is not None:
            raise ApiHTTPError(409, f"session {chat_id!r} already exists")
        prompt_status = None
        if body.message is None or body.title is not None:
            engine.create_chat(chat_id, title=body.title, model=body.model, behavior=behavior)
        if body.message is not None:
            params = ChatPromptParams(chat_id=chat_id, message=body.message, model=body.model, behavior=behavior)
            result = await engine.prompt(params)
            prompt_status = result.status
        chat = engine.get_chat(chat_id)
        assert chat is not None
        self.set_header("Location", f"{self.request.path.rstrip('/')}/{chat_id}")
        self.send(_session(workspace, _chat_summary(chat), prompt_status=prompt_status), status=201)


class SessionHandler(EcaApiHandler):
    async def _find(self, session_id: str) -> tuple[Workspace, Engine, Chat]:
        """The session in ``?workspace_id=``'s engine, else in the root's, else in any running engine."""
        query = self.get_query_argument("workspace_id", None)
        if query:
            candidates = [self.workspace(query)]
        else:
            manager = self.state.manager
            candidates = [manager.default, *(w for w in manager.started() if w is not manager.default)]
        for workspace in candidates:
            engine = await self.engine(workspace)
            chat = engine.get_chat(session_id)
            if chat is not None:
                return workspace, engine, chat
        raise ApiHTTPError(404, f"unknown session {session_id!r}")

    @authorized
    async def get(self, session_id: str) -> None:
        workspace, _engine, chat = await self._find(session_id)
        summary = _chat_summary(chat)
        base = _session(workspace, summary).model_dump()
        history = [HistoryItem.model_validate(item) for item in chat.contents]
        self.send(SessionDetail(**base, behavior=chat.behavior, history=history))

    @authorized
    async def delete(self, session_id: str) -> None:
        _workspace, engine, _chat = await self._find(session_id)
        await engine.delete(session_id)
        self.set_status(204)
        self.finish()


# -- models ------------------------------------------------------------------------------------------------------


class ModelsHandler(EcaApiHandler):
    @authorized
    async def get(self) -> None:
        workspace = self.query_workspace()
        engine = await self.engine(workspace)
        registry = engine.registry
        models = [
            ModelEntry(id=info.id, provider=info.provider, name=info.name, context_limit=info.context_limit,
                       output_limit=info.output_limit, input_cost=info.input_cost, output_cost=info.output_cost,
                       reasoning=info.reasoning)
            for info in registry.model_infos().values()
        ]
        self.send(ModelList(workspace_id=workspace.id, models=models, default=registry.default_model(),
                            current=engine.selected_model or registry.default_model()))


class CurrentModelHandler(EcaApiHandler):
    def _current(self, workspace: Workspace, engine: Engine) -> CurrentModel:
        default = engine.registry.default_model()
        return CurrentModel(workspace_id=workspace.id, model=engine.selected_model or default, default=default,
                            behavior=engine.selected_behavior, behaviors=engine.behaviors())

    @authorized
    async def get(self) -> None:
        workspace = self.query_workspace()
        self.send(self._current(workspace, await self.engine(workspace)))

    @authorized
    async def put(self) -> None:
        workspace = self.query_workspace()
        body = self.parse_body(SetCurrentModel)
        engine = await self.engine(workspace)
        problems: list[Problem] = []
        if body.model is not None and body.model not in engine.registry.models():
            available = ", ".join(engine.registry.models()) or "none"
            problems.append({"loc": ["model"], "msg": f"unknown model {body.model!r} (available: {available})",
                             "type": "value_error"})
        if body.behavior is not None and engine.agents.canonical(body.behavior) not in engine.behaviors():
            problems.append({"loc": ["behavior"], "msg": f"unknown behavior {body.behavior!r} (available: "
                                                         f"{', '.join(engine.behaviors())})", "type": "value_error"})
        if problems:
            raise ApiHTTPError(400, "invalid body: " + "; ".join(p["msg"] for p in problems), details=problems)
        if body.model is not None:
            engine.select_model(body.model)
        if body.behavior is not None:
            engine.select_behavior(body.behavior)
        engine.broadcast("config/updated", engine.config_updated().dump())  # every panel's pickers follow
        self.send(self._current(workspace, engine))

