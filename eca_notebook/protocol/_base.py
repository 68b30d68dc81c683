"""The base every ECA message model derives from.

Python attributes are snake_case, the wire is camelCase (LSP style); both spellings are accepted on input so code
and tests can build models by attribute name. Unknown keys are *kept*, not rejected: real clients send extra keys
(``"request-id"``, ``agent``, future fields) and a server that refused them would break those clients, while a
proxy or recorder that dropped them would lose data.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, GetPydanticSchema
from pydantic.alias_generators import to_camel
from pydantic_core import core_schema

__all__ = ["ChatId", "EcaModel", "JsonObject", "JsonValue", "NoneAsEmptyList"]

#: Any JSON value (pydantic's ``JsonValue``: a dict of str to JSON values, a list of them, str, int, float, bool or
#: ``None``), for data whose shape is genuinely open: a tool's arguments, a JSON schema, a peer's params before they
#: are validated, a notebook cell's outputs. mypy checks what code does with it (narrow with ``isinstance`` before
#: indexing). A model field of this type is validated and dumped as ``Any`` is — the value kept as it is, not walked
#: (``JsonValue``'s own validator would cost a walk per message and refuse values built in process, e.g. a tuple,
#: that the JSON dump turns into a list anyway).
JsonValue: TypeAlias = Annotated[pydantic.JsonValue, GetPydanticSchema(lambda _s, _h: core_schema.any_schema())]

#: Any JSON object: its keys are strings, its values :data:`JsonValue`. For the open shapes only; where the shape is
#: ours or the spec's, a model or a TypedDict says it.
JsonObject: TypeAlias = dict[str, JsonValue]


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
    """Base model: camelCase aliases, populate by name or alias, extra keys tolerated and preserved.

    ``defer_build``: a model's validator is built on its first use, not at import — a process uses a few of the
    protocol's models, and ``python -m eca_notebook server`` answered ``initialize`` for 0.49 s of CPU instead of 0.52
    (every editor start, and the suite starts ~270 servers and agents)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True)

    def dump(self) -> JsonObject:
        """The wire form: camelCase keys, ``None`` fields omitted (the spec's ``field?``), JSON-safe values."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

