"""Approvals: a tool call that needs the user becomes ``session/request_permission``; the answer goes to
``engine.approve`` / ``engine.reject``.

"Always allow" approves the call and, through the engine's session-scoped save, the similar calls after it;
"always reject" is remembered per session and (server, tool), and answers those calls without asking again. Any
failure to get an answer (an error, a malformed response, the client gone) rejects the call: the engine never
waits on an approval that cannot come.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from ..protocol.errors import RpcError
from ._schema import ClientRequestParams, PermissionOption, PermissionResponse
from ._sessions import Session
from ._updates import PermissionAsk

__all__ = ["PERMISSION_OPTIONS", "ask_permission"]

log = logging.getLogger(__name__)

# The ids acp-messages.md's session/request_permission example offers (``once``, ``always``, ``reject``), so a client
# that answers as its Success Response does (``optionId: "once"``) is understood; ``reject_always`` is ours beside.
PERMISSION_OPTIONS: list[PermissionOption] = [
    {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow in this session", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject in this session", "kind": "reject_always"},
]
#: an answer's optionId → the kind it chose: our ids, and the kinds themselves (the ids we offered before, which
#: clients written against them still send)
_OPTION_KINDS = {**{o["kind"]: o["kind"] for o in PERMISSION_OPTIONS},
                 **{o["optionId"]: o["kind"] for o in PERMISSION_OPTIONS}}

#: ``request(method, params)``: one request to the client, its result.
Request = Callable[[str, ClientRequestParams], Awaitable[Any]]


async def ask_permission(session: Session, ask: PermissionAsk, request: Request) -> None:
    """Ask the client about one tool call and pass the answer to the engine."""
    engine = session.engine
    chat_id = ask.chat_id or session.id  # (a subagent's call is answered in the subagent's chat)
    if (ask.server, ask.tool) in session.rejected_always:
        engine.reject(chat_id, ask.call_id)
        return
    try:
        result = await request("session/request_permission", {
            "sessionId": session.id, "toolCall": ask.tool_call, "options": PERMISSION_OPTIONS,
        })
        answer = PermissionResponse.model_validate(result)
    except (RpcError, ConnectionError, ValidationError) as exc:
        log.warning("session/request_permission for %s failed (%s): rejecting the call", ask.call_id, exc)
        engine.reject(chat_id, ask.call_id)
        return
    kind = _OPTION_KINDS.get(answer.outcome.option_id or "") if answer.outcome.outcome == "selected" else None
    if kind == "allow_once":
        engine.approve(chat_id, ask.call_id)
    elif kind == "allow_always":
        engine.approve(chat_id, ask.call_id, save="session")
    else:  # reject_once, reject_always, cancelled, or an option we never offered
        if kind == "reject_always":
            session.rejected_always.add((ask.server, ask.tool))
        engine.reject(chat_id, ask.call_id)
