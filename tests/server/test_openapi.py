"""The OpenAPI document: valid OpenAPI 3.1, every route documented, every documented operation answers as documented."""

from __future__ import annotations

import re

import jsonschema
import pytest

from eca_notebook.server.handlers import API_PREFIX, route_table
from eca_notebook.server.openapi import OPERATIONS, build_openapi


def templates(pattern: str) -> list[str]:
    """A tornado route pattern as OpenAPI path templates (alternations expanded)."""
    path = pattern[len(API_PREFIX):] if pattern.startswith(API_PREFIX) else pattern
    alternation = re.search(r"\(\?P<\w+>([\w|]+)\)", path)
    if alternation:
        return [t for option in alternation.group(1).split("|")
                for t in templates(API_PREFIX + path.replace(alternation.group(0), option))]
    return [re.sub(r"\(\?P<(\w+)>\[\^/\]\+\)", r"{\1}", path)]


def test_every_route_is_documented_and_every_documented_path_is_routed(state):
    routed = {t for pattern, _handler, _kwargs in route_table(state) for t in templates(pattern)}
    documented = {op.path for op in OPERATIONS}
    assert routed == documented


async def test_the_served_document_is_valid_openapi_3_1(api, jp_base_url, workspace):
    status, doc = await api("GET", "openapi.json")
    assert status == 200
    assert doc["openapi"] == "3.1.0"
    assert doc["servers"] == [{"url": f"{jp_base_url}{API_PREFIX}"}]
    assert "chatId" in doc["info"]["description"] and "toolCall.approval" in doc["info"]["description"]
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(doc)


def test_the_document_validates_without_a_server():
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(build_openapi())


EXAMPLES = {
    ("post", "/workspaces/register"): {"path": "sub"},
    ("put", "/workspaces/{workspace_id}/policy"): {"approval": {"byDefault": "ask"}},
    ("post", "/workspaces/{workspace_id}/index/incremental"): {"changes": [{"type": "created", "file_path": "x"}]},
    ("post", "/sessions"): {"title": "t"},
    ("put", "/models/current"): {"behavior": "plan"},
    ("put", "/providers/{provider_id}"): {"kind": "openai-compatible", "url": "http://127.0.0.1:9", "models": ["m"]},
    ("post", "/providers/{provider_id}/test"): {"kind": "openai-compatible", "url": "http://127.0.0.1:9", "model": "m"},
}


async def test_every_documented_operation_answers_as_documented(api, connect, workspace, state, jp_http_port,
                                                                 jp_base_url, jp_auth_header):
    (workspace / "sub").mkdir()
    _, doc = await api("GET", "openapi.json")
    _, session = await api("POST", "sessions", body={"session_id": "doc-session"})
    ids = {"workspace_id": state.manager.default.id, "session_id": "doc-session", "provider_id": "doc-server"}
    answered = 0
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if path == "/ws":
                sock = await connect()
                assert "models" in await sock.request("initialize", {"workspaceFolders": []})
                answered += 1
                continue
            if path == "/sessions/{session_id}/stream":  # the session stream: a hello is answered
                from ._stream_client import connect as stream_connect

                await api("POST", "sessions", body={"session_id": "doc-stream"})  # (doc-session may be deleted)
                stream = await stream_connect(jp_http_port, jp_base_url, "doc-stream", jp_auth_header)
                assert (await stream.hello())["session_id"] == "doc-stream"
                await stream.close()
                answered += 1
                continue
            parts = [ids.get(p[1:-1], p) if p.startswith("{") else p for p in path.strip("/").split("/")]
            status, body = await api(method.upper(), *parts, body=EXAMPLES.get((method, path)))
            documented = operation["responses"]
            assert str(status) in documented, (method, path, status, body)
            assert status < 400, (method, path, status, body)
            content = documented[str(status)].get("content")
            if content:
                schema = {**content["application/json"]["schema"], "components": doc["components"]}
                jsonschema.Draft202012Validator(schema).validate(body)
            else:
                assert body is None
            answered += 1
    assert answered == len(OPERATIONS)


async def test_documented_errors_match_the_error_schema(api, workspace):
    _, doc = await api("GET", "openapi.json")
    status, body = await api("POST", "workspaces", "register", body={"path": "../x"})
    assert status == 400
    schema = {**doc["paths"]["/workspaces/register"]["post"]["responses"]["400"]["content"]["application/json"]
              ["schema"], "components": doc["components"]}
    jsonschema.Draft202012Validator(schema).validate(body)
