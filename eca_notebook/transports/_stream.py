"""The one interface between a transport and the JSON-RPC endpoint: whole messages in, whole messages out.

Why messages and not bytes: a WebSocket carries one message per frame and an in-memory pair carries no bytes at
all, so the endpoint must not know about framing. Byte-oriented transports decode with :mod:`.framing`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..protocol.errors import INVALID_REQUEST, RpcError
from .framing import FramingError, loads

__all__ = ["FrameWriter", "MessageStream", "decode_message"]


@runtime_checkable
class MessageStream(Protocol):
    """A bidirectional stream of JSON-RPC messages.

    ``read`` is called by one reader at a time (the endpoint's read loop). ``write`` may be called concurrently;
    implementations serialize writers so frames never interleave. After ``close`` (on either side), ``read``
    returns None and ``write`` drops messages.
    """

    async def read(self) -> Any | RpcError | None:
        """The next message (a dict, or a list for a batch); an :class:`RpcError` for a frame that could not be
        decoded (the endpoint answers it with ``id: null``); None at end of stream."""
        ...

    async def write(self, message: Any) -> None:
        """Send one message. Raises TypeError/ValueError when it is not JSON-serializable (before anything is
        sent) and ConnectionError when the peer is gone."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class FrameWriter(Protocol):
    """A byte stream that can also encode messages itself and write several encoded ones at once.

    Why: a reply streams as thousands of small notifications, and one write (one system call, one wait for the
    peer) per message costs more than the message. A writer holding several messages encodes each with
    :meth:`encode` — a message that cannot be serialized fails alone, before anything is written — and hands them
    over together with :meth:`write_frames`, in order, as :meth:`MessageStream.write` would one by one.
    """

    def encode(self, message: Any) -> bytes:
        """One message as the bytes :meth:`write_frames` takes; TypeError/ValueError when it is not serializable."""
        ...

    def frame(self, body: bytes) -> bytes:
        """A message already encoded as compact UTF-8 JSON (what :func:`~.framing.dumps` gives, no raw newline) as
        the bytes :meth:`write_frames` takes: ``encode(m) == frame(dumps(m))``."""
        ...

    async def write_frames(self, frames: list[bytes]) -> None:
        """Write encoded messages in order; ConnectionError when the peer is gone (dropped after ``close``)."""
        ...


def decode_message(body: bytes) -> dict[str, Any] | list[Any] | RpcError:
    """A body as :meth:`MessageStream.read` returns it.

    Only an object or an array is a message; any other JSON value (notably ``null``, which would read as end of
    stream) becomes an ``Invalid Request`` error, like undecodable bytes become a ``Parse error``.
    """
    try:
        message = loads(body)
    except FramingError as exc:
        return RpcError(exc.code, exc.message)
    if isinstance(message, (dict, list)):
        return message
    return RpcError(INVALID_REQUEST, "a message must be a JSON object or array")
