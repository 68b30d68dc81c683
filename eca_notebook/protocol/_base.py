"""The base every ECA message model derives from.

Python attributes are snake_case, the wire is camelCase (LSP style); both spellings are accepted on input so code
and tests can build models by attribute name. Unknown keys are *kept*, not rejected: real clients send extra keys
(``"request-id"``, ``agent``, future fields) and a server that refused them would break those clients, while a
proxy or recorder that dropped them would lose data.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ChatId", "EcaModel", "NoneAsEmptyList"]


def _none_as_empty_list(value: Any) -> Any:
    return [] if value is None else value


#: Marker for list fields that some clients send as ``null`` (``contexts: null``, ``workspaceFolders: null``):
#: ``Annotated[list[X], NoneAsEmptyList]`` reads ``null`` as ``[]`` instead of failing the whole message.
NoneAsEmptyList = BeforeValidator(_none_as_empty_list)


def _number_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: A chat id: a string, or a number from clients that number their chats (a Neovim client sends its tab number).
#: The server answers such a client with the same number (the connection maps it to a chat of its own, see
#: ``serving/_connection.py``); here a number validates as its text, so both directions validate with these models.
ChatId = Annotated[str, BeforeValidator(_number_as_text)]


class EcaModel(BaseModel):
    """Base model: camelCase aliases, populate by name or alias, extra keys tolerated and preserved."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def dump(self) -> dict[str, Any]:
        """The wire form: camelCase keys, ``None`` fields omitted (the spec's ``field?``), JSON-safe values."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

