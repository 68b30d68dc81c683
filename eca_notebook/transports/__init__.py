"""Transports: bytes (or in-process objects) ↔ JSON-RPC messages, behind the :class:`MessageStream` interface.

Layer 1: knows JSON and framing, nothing about ECA or ACP methods.
"""

from __future__ import annotations

from ._stream import FrameWriter, MessageStream, decode_message
from .framing import (
    DEFAULT_MAX_FRAME_SIZE,
    ContentLengthDecoder,
    FramingError,
    NdjsonDecoder,
    dumps,
    encode_content_length,
    encode_ndjson,
    loads,
)
from .memory import MemoryStream, memory_pair
from .stdio import PipeStream, open_stdio

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "ContentLengthDecoder",
    "FrameWriter",
    "FramingError",
    "MemoryStream",
    "MessageStream",
    "NdjsonDecoder",
    "PipeStream",
    "decode_message",
    "dumps",
    "encode_content_length",
    "encode_ndjson",
    "loads",
    "memory_pair",
    "open_stdio",
]
