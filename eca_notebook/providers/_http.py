"""What all four wire APIs share: settings, the HTTP request/retry loop, error mapping, secret redaction.

Each API module subclasses :class:`HttpProvider` and supplies only three things — how to build the JSON body,
which auth headers to send, and how to turn the response stream into events. Everything a user can run into
regardless of the API (wrong key, rate limits, a dropped or silent connection, a refused port) is handled here
once, so the error messages read the same whichever provider produced them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

import httpx

from .._merge import deep_merge
from .._redact import redact, secrets_of_url
from ..protocol import JsonObject
from ._retry import backoff_delay, is_retryable_status, parse_retry_after
from .base import ProviderError, ProviderRequest, StreamEvent

log = logging.getLogger(__name__)

ApiKind = Literal["openai-responses", "openai-chat", "anthropic", "ollama"]


@dataclass
class Timeouts:
    """Seconds. ``read`` is the idle timeout: the longest silence allowed between two bytes of a stream."""

    connect: float = 10.0
    read: float = 120.0
    write: float = 30.0


@dataclass
class ProviderSettings:
    id: str  # config id, e.g. "openai", "my-vllm"
    api: ApiKind
    url: str  # base URL, e.g. "https://api.openai.com" or "http://127.0.0.1:8080/v1"
    key: str | None = None
    completion_path: str | None = None  # config completionUrlRelativePath; None = the API's default path
    headers: dict[str, str] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_retries: int = 3
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0  # a server asking to wait longer than this fails at once instead
    think_tag_start: str = "<think>"  # openai-chat: reasoning inline in the content
    think_tag_end: str = "</think>"
    # anthropic: how long a cache breakpoint's prefix is kept — "short" (5 min, writes at 1.25× the input price) or
    # "long" (1 h, ``ttl: "1h"``, writes at 2×): the reference's ``cacheRetention``
    cache_retention: Literal["short", "long"] = "short"
    # openai-*: send ``prompt_cache_key`` (a stable key per chat). None: only to OpenAI's own API — a compatible
    # server may reject the unknown field; config ``promptCacheKey`` turns it on or off
    prompt_cache_key: bool | None = None

    def __repr__(self) -> str:  # never show the key in tracebacks or logs
        key = "***" if self.key else None
        return f"ProviderSettings(id={self.id!r}, api={self.api!r}, url={redact(self.url)!r}, key={key!r})"


def make_http_client(timeouts: Timeouts | None = None) -> httpx.AsyncClient:
    """The shared client for all providers.

    ``trust_env`` makes corporate setups work without config: HTTP(S)_PROXY / NO_PROXY, and SSL_CERT_FILE /
    SSL_CERT_DIR for private CAs. HTTP/1.1 only: streaming over it is the best-supported path on every server.
    """
    t = timeouts or Timeouts()
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.connect),
        trust_env=True,
        http1=True,
        http2=False,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=30.0),
    )


def endpoint_url(url: str, completion_path: str | None, default_path: str) -> str:
    """Base URL + path. A default ``/v1/...`` path is not doubled when the base URL already ends in ``/v1``."""
    base = url.rstrip("/")
    if completion_path:
        if completion_path.startswith(("http://", "https://")):
            return completion_path
        return base + ("" if completion_path.startswith("/") else "/") + completion_path
    path = default_path
    if base.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    return base + path


def key_env_var(provider_id: str) -> str:
    """``my-vllm`` → ``MY_VLLM_API_KEY``: the variable the config layer reads keys from."""
    return re.sub(r"[^A-Za-z0-9]", "_", provider_id).upper() + "_API_KEY"


def error_details(raw: bytes) -> tuple[str, str | None]:
    """(message, code) from an error body in any of the APIs' shapes; plain text when it isn't JSON."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        text = raw.decode("utf-8", "replace").strip()
        return (text[:500] or "(empty response body)"), None
    return _details_from_json(data)


def _details_from_json(data: Any) -> tuple[str, str | None]:
    if isinstance(data, list) and data:
        return _details_from_json(data[0])
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            message = err.get("message") or err.get("type") or json.dumps(err)[:500]
            code = err.get("code") or err.get("type")
            return str(message), (str(code) if code else None)
        if isinstance(err, str) and err:
            return err, None
        for key in ("message", "detail"):
            if data.get(key):
                return str(data[key]), None
    return json.dumps(data)[:500], None


class HttpProvider:
    """Base of every provider: POST a JSON body, stream the answer, retry what is worth retrying."""

    api: ClassVar[str]
    default_path: ClassVar[str]
    accept: ClassVar[str] = "text/event-stream"
    terminal_event: ClassVar[str]  # named in "stream ended unexpectedly" errors

    def __init__(self, settings: ProviderSettings, client: httpx.AsyncClient) -> None:
        self.settings = settings
        self.id = settings.id
        self._client = client
        self.endpoint = endpoint_url(settings.url, settings.completion_path, self.default_path)
        t = settings.timeouts
        self._timeout = httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.connect)
        self._secrets = [s for s in [settings.key, *settings.headers.values(), *secrets_of_url(settings.url)]
                         if s and len(s) >= 6]

    # -- what subclasses provide -------------------------------------------------------------------------------

    def build_body(self, request: ProviderRequest) -> JsonObject:
        raise NotImplementedError

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.settings.key}"} if self.settings.key else {}

    def official_openai(self) -> bool:
        """Whether the endpoint is OpenAI's own API (which knows fields compatible servers may reject)."""
        host = (urlsplit(self.endpoint).hostname or "").lower()
        return host == "api.openai.com"

    def cache_key_field(self, request: ProviderRequest) -> dict[str, str]:
        """``{"prompt_cache_key": …}`` for a chat's request where the provider takes it (see ProviderSettings)."""
        wanted = self.settings.prompt_cache_key
        if wanted is None:
            wanted = self.official_openai()
        return {"prompt_cache_key": request.cache_key} if wanted and request.cache_key else {}

    def parse(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        """Yield events from a 2xx response; raise :class:`ProviderError` for in-stream errors and truncation."""
        raise NotImplementedError

    async def parse_batches(self, response: httpx.Response) -> AsyncIterator[list[StreamEvent]]:
        """:meth:`parse` a network read at a time: the events each read completes, in order. A provider whose
        stream carries thousands of chunks decodes them so (see :meth:`stream_batches`); by default, one event each."""
        events = self.parse(response)
        try:
            async for event in events:
                yield [event]
        finally:
            await events.aclose()  # type: ignore[attr-defined]  # parse() is an async generator

    # -- the request ---------------------------------------------------------------------------------------------

    def request_body(self, request: ProviderRequest) -> JsonObject:
        body = self.build_body(request)
        if request.extra:
            # ``null`` in extraPayload removes the key: a config can drop a field a strict server rejects (e.g.
            # ``{"stream_options": null}``)
            body = deep_merge(body, request.extra, none_deletes=True)
        return body

    def request_headers(self, request: ProviderRequest) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": self.accept, "user-agent": "eca-notebook"}
        headers.update(self.auth_headers())
        headers.update(self.settings.headers)
        headers.update(request.extra_headers)
        return headers

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        batches = self.stream_batches(request)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            await batches.aclose()  # type: ignore[attr-defined]  # stream_batches() is an async generator

    async def stream_batches(self, request: ProviderRequest) -> AsyncIterator[list[StreamEvent]]:
        """:meth:`stream`, the events of each network read in one list: the engine's turn reads a reply so, one
        step of the async-generator chain per read instead of one per chunk (the streaming hot path)."""
        body = self.request_body(request)
        headers = self.request_headers(request)
        max_retries = max(0, self.settings.max_retries)
        attempt = 0
        while True:
            try:
                async with self._client.stream(
                    "POST", self.endpoint, json=body, headers=headers, timeout=self._timeout
                ) as response:
                    if response.status_code >= 400:
                        error, delay = await self._status_failure(response, attempt, max_retries)
                        if delay is None:
                            raise error
                    else:
                        batches = self.parse_batches(response)
                        try:
                            async for batch in batches:
                                yield batch
                        except httpx.ReadTimeout:
                            raise self._idle_timeout() from None
                        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                            raise self.ended_unexpectedly(type(exc).__name__) from None
                        finally:
                            await batches.aclose()  # type: ignore[attr-defined]  # an async generator
                        return
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                error = self._connect_error(exc)
                if attempt >= max_retries:
                    if max_retries:
                        error = self.error(f"{error.message} (gave up after {max_retries} retries)", retryable=True)
                    raise error from None
                delay = backoff_delay(attempt, self.settings.retry_base_delay, self.settings.retry_max_delay)
            except httpx.ReadTimeout:
                raise self._idle_timeout() from None
            except httpx.WriteTimeout:
                raise self.error(
                    f"timed out sending the request to {self.id} ({self.settings.timeouts.write:g} s)", retryable=True
                ) from None
            except httpx.PoolTimeout:
                raise self.error(f"too many concurrent requests to {self.id}; try again", retryable=True) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                raise self.error(
                    f"{self.id} closed the connection before answering ({type(exc).__name__}) at {self.endpoint}",
                    retryable=True,
                ) from None
            except httpx.UnsupportedProtocol:
                raise self.error(
                    f"{self.id}: unsupported URL {self.endpoint!r} (expected http:// or https://)"
                ) from None
            except httpx.InvalidURL:
                raise self.error(f"{self.id}: invalid URL {self.endpoint!r}") from None
            except httpx.HTTPError as exc:
                raise self.error(f"{self.id}: request failed: {exc}", retryable=True) from None
            log.info(
                "%s: %s; retrying in %.2f s (retry %d of %d)",
                self.id,
                error.message,
                delay,
                attempt + 1,
                max_retries,
            )
            attempt += 1
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """The shared httpx client belongs to the engine; a provider owns no connections of its own."""

    # -- errors -------------------------------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """This provider's own secrets, every registered one (an error body may echo another provider's key) and
        secret-shaped fragments (the password in ``http://user:pw@host``)."""
        return redact(text, self._secrets)

    def error(self, message: str, *, status: int | None = None, retryable: bool = False,
              code: str | None = None) -> ProviderError:
        return ProviderError(self.redact(message), status=status, retryable=retryable, code=code)

    def ended_unexpectedly(self, detail: str | None = None) -> ProviderError:
        extra = f", {detail}" if detail else ""
        return self.error(
            f"{self.id}: stream ended unexpectedly (connection closed before {self.terminal_event}{extra}); "
            "try again",
            retryable=True,
        )

    def stream_error(self, message: str, *, status: int | None = None, retryable: bool = False,
                     code: str | None = None) -> ProviderError:
        return self.error(f"{self.id} reported an error: {message}", status=status, retryable=retryable, code=code)

    def _idle_timeout(self) -> ProviderError:
        seconds = self.settings.timeouts.read
        return self.error(
            f"no data from {self.id} for {seconds:g} s; the server may be overloaded or stuck — try again "
            "(or raise the request timeout)",
            retryable=True,
        )

    def _connect_error(self, exc: Exception) -> ProviderError:
        if isinstance(exc, httpx.ConnectTimeout):
            reason = f"timed out after {self.settings.timeouts.connect:g} s"
        elif _caused_by(exc, ConnectionRefusedError) or "refused" in str(exc).lower():
            reason = "connection refused — is the server running?"
        else:
            reason = str(exc) or type(exc).__name__
        return self.error(f"cannot connect to {self.id} at {self.endpoint}: {reason}", retryable=True)

    async def _status_failure(
        self, response: httpx.Response, attempt: int, max_retries: int
    ) -> tuple[ProviderError, float | None]:
        """The error for an HTTP error status, and how long to wait before retrying (``None``: don't retry)."""
        try:
            raw = await response.aread()
        except httpx.HTTPError:
            raw = b""
        status = response.status_code
        message, code = error_details(raw)
        error = self._status_error(status, message)
        error.code = code  # e.g. context_length_exceeded: the engine compacts the chat and retries
        if code == "insufficient_quota":  # OpenAI's 429 for an exhausted account: waiting won't help
            return self.error(error.message, status=status, retryable=False), None
        if not is_retryable_status(status):
            return error, None
        wait = parse_retry_after(response.headers)
        if wait is not None and wait > self.settings.retry_max_delay:
            return (
                self.error(f"{error.message} — the server asks to wait {wait:.0f} s; try again later", status=status,
                           retryable=True),
                None,
            )
        if attempt >= max_retries:
            suffix = f" (gave up after {max_retries} retries)" if max_retries else ""
            return self.error(error.message + suffix, status=status, retryable=True), None
        if wait is None:
            wait = backoff_delay(attempt, self.settings.retry_base_delay, self.settings.retry_max_delay)
        return error, wait

    def _status_error(self, status: int, message: str) -> ProviderError:
        if status == 401:
            text = (
                f"{self.id}: authentication failed (HTTP 401): {message}. Check the API key: "
                f"providers.{self.id}.key in the config or the {key_env_var(self.id)} environment variable."
            )
        elif status == 429:
            text = f"{self.id}: rate limited (HTTP 429): {message}"
        elif status == 404:
            text = f"{self.id}: HTTP 404: {message} (URL {self.endpoint}; check the model name and the provider URL)"
        else:
            text = f"{self.id}: HTTP {status}: {message}"
        return self.error(text, status=status, retryable=is_retryable_status(status))


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``kind`` is anywhere in the exception's cause/context chain (anyio hides the refusal there)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


_raw_decode = json.JSONDecoder().raw_decode


def parse_json(data: str) -> Any:
    """JSON from one stream frame, or ``None`` (logged) for a frame that isn't JSON — skip it, don't die."""
    try:
        if data[:1] == "{" and data[-1:] == "}":  # a chunk as servers write it: no whitespace to skip around it
            value, end = _raw_decode(data)
            if end == len(data):
                return value
        return json.loads(data)  # (and its error for anything after the value)
    except ValueError:
        log.warning("skipping a stream frame that is not JSON (%d chars)", len(data))
        return None
