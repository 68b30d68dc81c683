"""Fixtures for provider tests: one real scripted LLM server per module, a real httpx client per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from eca_notebook.providers import make_http_client
from eca_notebook.testing import ScriptedLLMServer


@pytest.fixture(scope="module")
def _server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def llm(_server: ScriptedLLMServer) -> ScriptedLLMServer:
    _server.clear()
    return _server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with make_http_client() as c:
        yield c


