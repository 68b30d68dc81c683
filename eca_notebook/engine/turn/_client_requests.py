"""What the engine asks its clients: ``editor/getDiagnostics``, ``chat/askQuestion``, ``editor/getDefinition`` and
``editor/getReferences``, each of the first connected client that says it can answer (``supports_…``).

Split from the toolbox because it needs only the listeners: the toolbox hands these requests to the tools (the
:class:`~eca_notebook.tools.base.ToolContext`) and hides a tool no client can serve; the workspace trust asks its
one question with :meth:`ClientRequests.questions`. Each method answers ``None`` when no client can answer, so the
caller can say so instead of waiting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ...protocol import (
    ChatAskQuestionParams,
    ChatAskQuestionResult,
    EcaModel,
    EditorGetDefinitionParams,
    EditorGetDefinitionResult,
    EditorGetReferencesParams,
    EditorGetReferencesResult,
    JsonObject,
)
from ...protocol.errors import RpcError

if TYPE_CHECKING:
    from ._host import Listener

__all__ = ["DIAGNOSTICS_TIMEOUT", "ClientRequests", "Definitions", "Diagnostics", "Questions", "References"]

DIAGNOSTICS_TIMEOUT = 30.0

R = TypeVar("R", bound=EcaModel)

Diagnostics = Callable[[str | None], Awaitable[list[JsonObject]]]
Questions = Callable[[ChatAskQuestionParams], Awaitable[ChatAskQuestionResult]]
Definitions = Callable[[EditorGetDefinitionParams], Awaitable[EditorGetDefinitionResult]]
References = Callable[[EditorGetReferencesParams], Awaitable[EditorGetReferencesResult]]


class ClientRequests:
    """Requests to the first connected client that can answer them; ``listeners`` gives the clients connected now
    (the engine's, read at each call: a client may connect or leave between two calls)."""

    def __init__(self, listeners: Callable[[], Sequence[Listener]]) -> None:
        self._listeners = listeners

    def _first(self, capability: str) -> Any:
        return next((item for item in self._listeners() if getattr(item, capability, False)), None)

    def diagnostics(self) -> Diagnostics | None:
        """Ask the first listener that can answer ``editor/getDiagnostics``; None when none can."""
        listener = self._first("supports_diagnostics")
        if listener is None:
            return None

        async def request(uri: str | None) -> list[JsonObject]:
            params = {"uri": uri} if uri else {}
            try:
                result = await listener.request("editor/getDiagnostics", params, timeout=DIAGNOSTICS_TIMEOUT)
            except RpcError as exc:  # the client's reason (error.data included) reaches the model
                raise OSError(f"the editor refused editor/getDiagnostics: {exc.describe()}") from None
            return list((result or {}).get("diagnostics") or [])

        return request

    def questions(self) -> Questions | None:
        """Ask the first listener that can answer ``chat/askQuestion`` (``supports_questions``); None when none can.
        No timeout here: the ``ask_user`` tool bounds the wait, and cancelling it (Stop) cancels the request."""
        return self._untimed("supports_questions", "chat/askQuestion", ChatAskQuestionResult, {"cancelled": True})

    def definitions(self) -> Definitions | None:
        """Ask the first listener that answers ``editor/getDefinition`` (``supports_definition``); None when none
        can. No timeout here: the ``editor_definition`` tool bounds the wait (and retries a ``starting`` answer)."""
        return self._untimed("supports_definition", "editor/getDefinition", EditorGetDefinitionResult,
                             {"status": "error"})

    def references(self) -> References | None:
        """Ask the first listener that answers ``editor/getReferences`` (``supports_references``); None when none
        can. The ``editor_references`` tool bounds the wait."""
        return self._untimed("supports_references", "editor/getReferences", EditorGetReferencesResult,
                             {"status": "error"})

    def _untimed(self, capability: str, method: str, result: type[R], empty: JsonObject,
                 ) -> Callable[[EcaModel], Awaitable[R]] | None:
        """A request of the first listener with *capability*, its answer read as *result* (*empty* when the client
        answers nothing); no timeout of its own (its tool bounds the wait). None when no listener can answer."""
        listener = self._first(capability)
        if listener is None:
            return None

        async def request(params: EcaModel) -> R:
            answer = await listener.request(method, params.dump(), timeout=None)
            return result.model_validate(answer or empty)

        return request
