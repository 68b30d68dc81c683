"""The ``EcaPersona`` Jupyter AI loads from our ``jupyter_ai.personas`` entry point (see the package docstring).

Everything ACP is Jupyter AI's own: ``BaseAcpPersona`` starts the agent subprocess (shared by every chat of the
server), creates or loads one ACP session per chat with the chat's MCP servers, forwards messages and streams the
updates back; its permission endpoint answers our ``session/request_permission``. We only say what to run and how
the persona looks.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager import PersonaDefaults

from . import AVATAR, DESCRIPTION, NAME, agent_command

__all__ = ["EcaPersona"]


class EcaPersona(BaseAcpPersona):  # type: ignore[misc]  # untyped base (mypy has no Jupyter AI here)
    """eca-notebook as a Jupyter AI persona, over ACP."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=agent_command(), **kwargs)

    @property
    def defaults(self) -> PersonaDefaults:
        """Name, description and avatar Jupyter AI shows (users may override them in its settings)."""
        return PersonaDefaults(name=NAME, description=DESCRIPTION, avatar_path=str(AVATAR),
                               system_prompt="unused: eca-notebook builds its own system prompt")

    async def process_message(self, message: Any) -> None:
        """Jupyter AI's own handling, without the ``@ECA`` that routed the message here: it addresses the persona,
        it is not part of the request (the chat title began with it, and the embedded model repeated it back)."""
        body = without_mention(message.body, self.as_user().mention_name)
        if body != message.body:
            message = dataclasses.replace(message, body=body)
        await super().process_message(message)


def without_mention(body: str, mention_name: str) -> str:
    """`body` without a leading ``@<mention_name>`` (and the ``:`` or spaces after it); as it is otherwise, or when
    nothing else would be left."""
    rest = re.sub(rf"^\s*@{re.escape(mention_name)}(?![\w-]):?\s*", "", body, count=1)
    return rest if rest.strip() else body
