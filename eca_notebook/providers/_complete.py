"""Raw text completion over HTTP: the part of inline completion that is the same for every API that has it.

Fill-in-the-middle (or a plain continuation of the text before the cursor) is what editor completion models are
trained for, and it is far cheaper than a chat turn: no system prompt, no chat template, a few dozen tokens out. Two
wire shapes exist and both stream:

* OpenAI-compatible legacy completions, ``POST /v1/completions`` with ``prompt`` and ``suffix`` (llama.cpp's server,
  vLLM, DeepSeek, LM Studio…), SSE chunks ``{"choices": [{"text": …}]}`` ending with ``data: [DONE]``;
* Ollama's ``POST /api/generate`` with ``prompt`` and ``suffix`` (the model's template does the FIM), or ``raw``
  for a plain continuation; NDJSON lines ``{"response": …, "done": false}``.

Unlike a chat turn there are **no retries** (a suggestion that arrives late is worth nothing; the next keystroke asks
again) and the caller may stop reading at any moment — when the suggestion's block ended — which closes the
response, so the server stops generating.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import httpx

from ..protocol import JsonObject
from ._http import error_details, parse_json
from ._sse import sse_batches

if TYPE_CHECKING:
    from ._http import HttpProvider

__all__ = ["completions_url", "openai_completion_pieces", "post_completion"]


def completions_url(chat_endpoint: str) -> str:
    """The legacy completions URL next to a chat completions URL (``…/v1/chat/completions`` → ``…/v1/completions``;
    a custom ``completionUrlRelativePath`` keeps its prefix)."""
    base = chat_endpoint.rstrip("/")
    for tail in ("/chat/completions", "/completions"):
        if base.endswith(tail):
            return base[: -len(tail)] + "/completions"
    return base + "/v1/completions"


async def post_completion(
    provider: HttpProvider,
    url: str,
    body: JsonObject,
    headers: dict[str, str],
    pieces: Callable[[HttpProvider, httpx.Response], AsyncIterator[str]],
) -> AsyncIterator[str]:
    """POST ``body`` and yield the text pieces ``pieces`` reads from the 2xx stream; every failure is a
    :class:`~.base.ProviderError` in the provider's own words (secrets redacted)."""
    t = provider.settings.timeouts
    timeout = httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.connect)
    try:
        async with provider._client.stream("POST", url, json=body, headers=headers, timeout=timeout) as response:
            if response.status_code >= 400:
                try:
                    raw = await response.aread()
                except httpx.HTTPError:
                    raw = b""
                message, code = error_details(raw)
                status = response.status_code
                raise provider.error(f"{provider.id}: HTTP {status} from {url}: {message}", status=status,
                                     retryable=status == 429 or status >= 500, code=code)
            reader = pieces(provider, response)
            try:
                async for piece in reader:
                    if piece:
                        yield piece
            finally:
                await reader.aclose()  # type: ignore[attr-defined]  # an async generator
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise provider._connect_error(exc) from None
    except httpx.ReadTimeout:
        raise provider._idle_timeout() from None
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise provider.ended_unexpectedly(type(exc).__name__) from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL):
        raise provider.error(f"{provider.id}: invalid URL {url!r}") from None
    except httpx.HTTPError as exc:
        raise provider.error(f"{provider.id}: request failed: {exc}", retryable=True) from None


async def openai_completion_pieces(provider: HttpProvider, response: httpx.Response) -> AsyncIterator[str]:
    """``/v1/completions`` SSE: ``choices[0].text`` of each chunk until ``[DONE]`` (read even after the finish
    reason: a response read to its end leaves the connection reusable, and a new TLS handshake costs more than a
    suggestion's whole budget)."""
    finished = False
    async for batch in sse_batches(response.aiter_text()):
        for sse in batch:
            if sse.data.strip() == "[DONE]":
                return
            chunk = parse_json(sse.data)
            if not isinstance(chunk, dict):
                continue
            error = chunk.get("error")
            if error:
                message = error.get("message") if isinstance(error, dict) else error
                raise provider.stream_error(str(message or error))
            for choice in chunk.get("choices") or ():
                if isinstance(choice, dict) and choice.get("index", 0) == 0:
                    text = choice.get("text")
                    if isinstance(text, str):
                        yield text
                    if choice.get("finish_reason"):
                        finished = True
    if not finished:
        raise provider.ended_unexpectedly()

