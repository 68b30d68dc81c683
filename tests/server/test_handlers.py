"""Authentication, authorization and origin checks, for the WebSocket and the REST API alike."""

from __future__ import annotations

import json
from http.cookies import SimpleCookie

import pytest
from jupyter_server.auth import Authorizer
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from .conftest import ws_url

EVIL = "http://evil.example"


async def ws_status(port: int, base_url: str, headers: dict[str, str], query: str = "") -> int:
    """101 when the upgrade succeeds, else the HTTP status of the refusal."""
    request = HTTPRequest(ws_url(port, base_url, query), headers=headers, connect_timeout=60, request_timeout=60)
    try:
        conn = await websocket_connect(request)
    except HTTPClientError as exc:
        return exc.code
    conn.close()
    return 101


@pytest.fixture
async def login_cookie(jp_fetch, jp_serverapp) -> str:
    """A browser's login cookie, as set by a first request carrying ``?token=``."""
    response = await jp_fetch("api", "eca", "v1", "health", params={"token": jp_serverapp.identity_provider.token},
                              headers={"Authorization": ""})
    cookie = SimpleCookie()
    for header in response.headers.get_list("Set-Cookie"):
        cookie.load(header)
    login = [f"{k}={v.value}" for k, v in cookie.items() if k.startswith("username-")]
    assert login, response.headers
    return login[0]


async def test_websocket_requires_authentication(jp_http_port, jp_base_url, http_server_client, workspace):
    assert await ws_status(jp_http_port, jp_base_url, {}) == 403
    assert await ws_status(jp_http_port, jp_base_url, {"Authorization": "token wrong-token"}) == 403
    assert await ws_status(jp_http_port, jp_base_url, {}, "token=wrong-token") == 403


async def test_websocket_accepts_a_token_in_the_header_or_the_url(jp_http_port, jp_base_url, http_server_client,
                                                                  jp_serverapp, workspace):
    token = jp_serverapp.identity_provider.token
    assert await ws_status(jp_http_port, jp_base_url, {"Authorization": f"token {token}"}) == 101
    assert await ws_status(jp_http_port, jp_base_url, {}, f"token={token}") == 101


async def test_websocket_checks_the_origin_of_cookie_authenticated_requests(
    jp_http_port, jp_base_url, http_server_client, login_cookie, workspace
):
    host = f"127.0.0.1:{jp_http_port}"
    assert await ws_status(jp_http_port, jp_base_url, {"Cookie": login_cookie, "Origin": EVIL}) == 403
    assert await ws_status(jp_http_port, jp_base_url, {"Cookie": login_cookie, "Origin": f"http://{host}"}) == 101
    assert await ws_status(jp_http_port, jp_base_url, {"Cookie": login_cookie}) == 101  # not a browser


async def test_rest_requires_authentication(api, workspace):
    for headers in ({"Authorization": ""}, {"Authorization": "token wrong-token"}):
        for method, path in (("GET", ("health",)), ("GET", ("workspaces",)), ("POST", ("sessions",)),
                             ("GET", ("openapi.json",))):
            status, body = await api(method, *path, headers=headers)
            assert status == 403, (method, path, body)
            assert body["status"] == 403  # a JSON error, not an HTML page


async def test_rest_refuses_cross_origin_requests_with_403(api, login_cookie, jp_http_port, workspace):
    same = f"http://127.0.0.1:{jp_http_port}"
    cookie_only = {"Authorization": "", "Cookie": login_cookie}
    status, body = await api("GET", "health", headers={**cookie_only, "Origin": EVIL})
    assert status == 403 and body["message"] == "cross-origin request refused"
    status, body = await api("GET", "health", headers={**cookie_only, "Origin": same})
    assert status == 200 and body["status"] == "ok"
    # a state-changing request from another site: refused before any XSRF consideration
    xsrf = {**cookie_only, "Cookie": login_cookie + "; _xsrf=abc", "X-XSRFToken": "abc"}
    status, body = await api("POST", "sessions", body={}, headers={**xsrf, "Origin": EVIL})
    assert status == 403, body
    # same origin, but no XSRF token: refused by the XSRF check
    status, body = await api("POST", "sessions", body={}, headers={**cookie_only, "Origin": same})
    assert status == 403, body
    status, body = await api("POST", "sessions", body={}, headers={**xsrf, "Origin": same})
    assert status == 201, body
    # a token proves the caller: no origin check (jupyter_server's rule)
    status, _ = await api("GET", "health", headers={"Origin": EVIL})
    assert status == 200


class RecordingAuthorizer(Authorizer):
    """Allows everything except what a test denies; records every (action, resource) asked about."""

    calls: list[tuple[str, str]] = []
    deny: set[str] = set()

    def is_authorized(self, handler, user, action, resource):
        type(self).calls.append((action, resource))
        return resource not in self.deny


@pytest.fixture
def authorizer():
    RecordingAuthorizer.calls = []
    RecordingAuthorizer.deny = set()
    yield RecordingAuthorizer


@pytest.mark.parametrize("server_app_config", [{"authorizer_class": RecordingAuthorizer}])
async def test_authorization_uses_the_eca_resource(api, authorizer, jp_http_port, jp_base_url, jp_auth_header,
                                                   jp_fetch, workspace, server_app_config):
    assert (await api("GET", "workspaces"))[0] == 200
    assert (await api("PUT", "models", "current", body={"behavior": "plan"}))[0] == 200
    assert await ws_status(jp_http_port, jp_base_url, jp_auth_header) == 101
    asked = [call for call in authorizer.calls if call[1] == "eca"]
    assert ("read", "eca") in asked and ("write", "eca") in asked and ("execute", "eca") in asked

    authorizer.deny = {"eca"}
    status, body = await api("GET", "workspaces")
    assert status == 403 and body["status"] == 403
    assert (await api("DELETE", "sessions", "x"))[0] == 403
    assert await ws_status(jp_http_port, jp_base_url, jp_auth_header) == 403
    response = await jp_fetch("api", "status")  # the rest of Jupyter is not affected
    assert json.loads(response.body)["connections"] == 0
