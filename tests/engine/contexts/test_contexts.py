"""Prompt contexts: rendering every context type (web against a real local HTTP server), caps, problems, and
``chat/queryContext`` answers."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from eca_notebook.engine.contexts import (
    DIRECTORY_MAX_ENTRIES,
    WEB_MAX_BYTES,
    RenderedContexts,
    html_to_text,
    query_context,
    render_contexts,
)
from eca_notebook.engine.index._index import WorkspaceIndex
from eca_notebook.protocol import JsonObject
from eca_notebook.protocol.context import (
    ChatContext,
    CursorContext,
    DirectoryContext,
    FileContext,
    LinesRange,
    McpResourceContext,
    Position,
    Range,
    RepoMapContext,
    WebContext,
)

PAGE = """<!doctype html>
<html><head><title>The  Guide</title>
<style>body { color: red; } .secret-style {}</style>
<script>var secretScript = "do not show";</script>
</head><body>
<nav><a href="/home">Home</a> | <a href="/secret-nav">NavSecret</a></nav>
<h1>Getting started</h1>
<p>Install the   package
   and <a href="/docs">read the docs</a>.</p>
<ul><li>first item</li><li>second item</li></ul>
<h2>Example</h2>
<pre>def f():
    return 1</pre>
<noscript>enable js</noscript>
<p>Caf&eacute; &amp; more</p>
</body></html>"""


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, ctype: str, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/page.html":
            self._send(200, "text/html; charset=utf-8", PAGE.encode())
        elif self.path == "/plain.txt":
            self._send(200, "text/plain", b"just   text\n  indented\n")
        elif self.path == "/image.png":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
        elif self.path == "/big.txt":
            self._send(200, "text/plain; charset=utf-8", b"0123456789\n" * 60_000)  # 660 KB
        elif self.path == "/redirect":
            self._send(302, "text/plain", b"", {"Location": "/page.html"})
        elif self.path == "/latin1.html":
            body = '<html><head><meta charset="iso-8859-1"></head><body><p>Gr\xfc\xdfe</p></body></html>'
            self._send(200, "text/html", body.encode("latin-1"))
        elif self.path == "/slow":
            time.sleep(2)
            self._send(200, "text/plain", b"late")
        else:
            self._send(404, "text/html", b"<h1>nope</h1>")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
async def http() -> Iterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "components").mkdir(parents=True)
    (root / "src" / "app.py").write_text("line1\nline2\nline3\nline4\nline5\n")
    (root / "src" / "components" / "Button.tsx").write_text("export const Button = 1;\n")
    (root / "README.md").write_text("# Readme\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("generated")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / "debug.log").write_text("noise")
    return root


async def render(contexts, ws: Path, http: httpx.AsyncClient, **kw) -> RenderedContexts:
    kw.setdefault("index", None)
    return await render_contexts(contexts, folders=[ws], http=http, **kw)


def element(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}\b[^>]*>.*?</{tag}>", text, re.S)
    assert m, f"no <{tag}> in {text!r}"
    return m.group(0)


# -- files ---------------------------------------------------------------------------------------------------------


async def test_whole_file(ws: Path, http) -> None:
    out = await render([FileContext(path="src/app.py")], ws, http)
    assert out.problems == []
    assert out.text.startswith("<contexts") and out.text.endswith("</contexts>")
    el = element(out.text, "file")
    assert f'<file path="{ws / "src" / "app.py"}">' in el
    assert "line1\nline2\nline3\nline4\nline5\n" in el


async def test_a_notebooks_outputs_arrive_without_terminal_escapes(ws: Path, http) -> None:
    """A notebook attached as context (the panel attaches the active one) is a file anyone may have written."""
    stream = ("\x1b[31mTOTAL\x1b[0m 42\n\x1b]8;;https://evil.example/x\x07see the docs\x1b]8;;\x07\n"
              "\x1b]52;c;cm0K\x07ok\n")
    cell = {"cell_type": "code", "execution_count": 1, "id": "a1", "metadata": {}, "source": "print(total)",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": stream},
                        {"output_type": "error", "ename": "E", "evalue": "\x1b[1mbad\x1b[0m\x08", "traceback": []}]}
    (ws / "n.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    out = await render([FileContext(path="n.ipynb")], ws, http)
    el = element(out.text, "file")
    assert "[stdout] TOTAL 42\nsee the docs\nok" in el and "[error] E: bad\\x08" in el
    assert "\x1b" not in out.text and "evil.example" not in out.text


async def test_lines_range(ws: Path, http) -> None:
    ctx = FileContext(path=str(ws / "src" / "app.py"), lines_range=LinesRange(start=2, end=3))
    el = element((await render([ctx], ws, http)).text, "file")
    assert 'line-start="2" line-end="3"' in el
    assert "line2\nline3\n" in el and "line1" not in el and "line4" not in el
    clamped = FileContext(path="src/app.py", lines_range=LinesRange(start=4, end=99))
    el = element((await render([clamped], ws, http)).text, "file")
    assert 'line-start="4" line-end="5"' in el and "line4\nline5\n" in el
    past = await render([FileContext(path="src/app.py", lines_range=LinesRange(start=50, end=60))], ws, http)
    assert past.text == "" and "past the end" in past.problems[0]


async def test_missing_and_binary_files_are_problems(ws: Path, http) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    out = await render([FileContext(path="nope.py"), FileContext(path="blob.bin"), FileContext(path="README.md")],
                       ws, http)
    assert out.problems[0] == "file not found: nope.py"
    assert out.problems[1].startswith("binary file skipped:")
    assert "<file" in out.text and "# Readme" in out.text and "blob.bin" not in out.text
    assert (await render([FileContext(path="nope.py")], ws, http)).text == ""


async def test_special_files_are_not_read(ws: Path, http) -> None:
    os.mkfifo(ws / "pipe")  # opening it would block until a writer appears
    position = Range(start=Position(line=1, character=0), end=Position(line=1, character=0))
    out = await render([FileContext(path="pipe"), CursorContext(path="pipe", position=position)], ws, http)
    assert out.problems == ["not a regular file: pipe", "cursor is not in a regular file: pipe"]


async def test_paths_are_shown_resolved(ws: Path, http, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("outside the workspace")
    (ws / "inner.txt").symlink_to(ws / "README.md")
    out = await render([FileContext(path="src/../README.md"), FileContext(path="inner.txt"),
                        FileContext(path=f"file://{outside}"), FileContext(path="../elsewhere.txt")], ws, http)
    assert out.problems == []
    assert out.text.count(f'path="{ws / "README.md"}"') == 2 and ".." not in out.text
    assert out.text.count(f'path="{outside}"') == 2  # named by the user outside the workspace: read


async def test_a_workspace_path_that_a_symlink_leads_out_of_is_refused(ws: Path, http, tmp_path: Path) -> None:
    """A cloned repository's file (or folder) that is a symlink to a file of the user's: picking it is not asking
    for the user's file."""
    secret = tmp_path / "home" / ".netrc"
    secret.parent.mkdir()
    secret.write_text("machine example.com login me password pw-LEAK-123\n")
    (ws / "config.txt").symlink_to(secret)
    (ws / "home").symlink_to(secret.parent)
    position = Range(start=Position(line=1, character=0), end=Position(line=1, character=0))
    out = await render([FileContext(path="config.txt"), FileContext(path=str(ws / "home" / ".netrc")),
                        DirectoryContext(path="home"), CursorContext(path="config.txt", position=position)],
                       ws, http)
    assert out.text == "" and len(out.problems) == 4
    assert out.problems[0] == (f"config.txt skipped: symlink points outside the workspace (to {secret}); attach "
                               "that file by its own path to send it")
    assert all("symlink points outside the workspace" in p for p in out.problems)


async def test_huge_file_is_truncated_with_a_note(ws: Path, http) -> None:
    (ws / "huge.txt").write_text("".join(f"row {i}\n" for i in range(100_000)))
    out = await render([FileContext(path="huge.txt")], ws, http, per_context_bytes=5_000)
    el = element(out.text, "file")
    assert out.problems == []  # a per-context cut is a note, not a problem
    assert "row 0\n" in el and "row 99999" not in el
    assert re.search(r"\[truncated: showing the first \d+ of \d+ bytes; use the read_file tool", el)
    assert len(el.encode()) < 5_600


async def test_max_bytes_caps_the_whole_block(ws: Path, http) -> None:
    for name in ("a", "b", "c"):
        (ws / f"{name}.txt").write_text(name * 3_000 + "\n")
    contexts = [FileContext(path=f"{n}.txt") for n in ("a", "b", "c")]
    out = await render(contexts, ws, http, max_bytes=5_000)
    assert len(out.text.encode()) <= 5_000
    assert "aaaa" in out.text
    assert any("c.txt" in p and "skipped" in p for p in out.problems)
    assert any("size limit" in p for p in out.problems)


async def test_later_contexts_get_a_smaller_share(ws: Path, http) -> None:
    """A small model's budget: the first context (what the user picked) whole up to per_context_bytes, every later
    one (the panel's automatic active-notebook context comes last) cut at later_context_bytes."""
    for name in ("a", "b", "c"):
        (ws / f"{name}.txt").write_text("".join(f"{name} row {i}\n" for i in range(500)))
    contexts = [FileContext(path=f"{n}.txt") for n in ("a", "b", "c")]
    out = await render(contexts, ws, http, per_context_bytes=4_000, later_context_bytes=800)
    first, *later = re.findall(r"<file\b[^>]*>.*?</file>", out.text, re.S)
    assert 3_500 < len(first.encode()) < 4_600 and len(later) == 2, out.text
    assert all(len(el.encode()) < 1_400 for el in later) and "b row 0\n" in later[0] and "c row 0\n" in later[1]
    alone = await render(contexts[1:2], ws, http, per_context_bytes=4_000, later_context_bytes=800)
    assert len(element(alone.text, "file").encode()) > 3_500  # alone, it is the first


# -- directories ---------------------------------------------------------------------------------------------------


async def test_directory_listing_respects_gitignore(ws: Path, http) -> None:
    out = await render([DirectoryContext(path=str(ws))], ws, http)
    el = element(out.text, "directory")
    assert f'path="{ws}"' in el
    lines = el.splitlines()
    assert "src/" in lines and "  components/" in lines and "    Button.tsx" in lines and "  app.py" in lines
    assert "README.md" in lines
    assert "build" not in el and "debug.log" not in el and ".git/" not in lines
    missing = await render([DirectoryContext(path="nowhere")], ws, http)
    assert missing.problems == ["directory not found: nowhere"]


async def test_directory_listing_is_capped_shallow_first(ws: Path, http) -> None:
    big = ws / "big"
    (big / "a_sub").mkdir(parents=True)
    (big / "a_sub" / "deep.txt").write_text("x")
    for i in range(DIRECTORY_MAX_ENTRIES + 20):
        (big / f"f{i:04}.txt").write_text("x")
    el = element((await render([DirectoryContext(path="big")], ws, http)).text, "directory")
    assert f"listing stopped at {DIRECTORY_MAX_ENTRIES} entries" in el
    assert "a_sub/" in el and "deep.txt" not in el  # the second level did not fit
    assert el.count(".txt\n") == DIRECTORY_MAX_ENTRIES - 1


async def test_ignored_directory_attached_on_purpose_is_listed(ws: Path, http) -> None:
    el = element((await render([DirectoryContext(path="build")], ws, http)).text, "directory")
    assert "out.txt" in el


# -- web -----------------------------------------------------------------------------------------------------------


async def test_web_page_reduced_to_readable_text(ws: Path, http, server: str) -> None:
    out = await render([WebContext(url=f"{server}/page.html")], ws, http)
    assert out.problems == []
    el = element(out.text, "web")
    assert f'url="{server}/page.html"' in el and 'title="The Guide"' in el
    assert "# Getting started" in el and "## Example" in el
    assert "Install the package and read the docs." in el
    assert "- first item" in el and "- second item" in el
    assert "def f():\n    return 1" in el  # <pre> keeps its indentation
    assert "Café & more" in el
    for hidden in ("secretScript", "secret-style", "NavSecret", "color: red", "enable js"):
        assert hidden not in el


async def test_web_plain_text_redirect_and_charset(ws: Path, http, server: str) -> None:
    out = await render([WebContext(url=f"{server}/plain.txt"), WebContext(url=f"{server}/redirect"),
                        WebContext(url=f"{server}/latin1.html")], ws, http)
    assert out.problems == []
    assert "just   text\n  indented\n" in out.text
    assert f'final-url="{server}/page.html"' in out.text
    assert "Grüße" in out.text


async def test_web_errors_are_problems(ws: Path, http, server: str) -> None:
    out = await render([WebContext(url=f"{server}/missing"), WebContext(url=f"{server}/image.png"),
                        WebContext(url="ftp://example.com/x"), WebContext(url="http://127.0.0.1:1/refused")],
                       ws, http)
    assert out.text == ""
    assert "HTTP 404" in out.problems[0]
    assert "not a text page (image/png)" in out.problems[1]
    assert "unsupported URL" in out.problems[2]
    assert out.problems[3].startswith("could not fetch http://127.0.0.1:1/refused")


async def test_web_timeout_is_a_problem(ws: Path, http, server: str) -> None:
    out = await render([WebContext(url=f"{server}/slow")], ws, http, web_timeout=0.3)
    assert out.text == "" and "timed out" in out.problems[0]


async def test_oversized_page_is_cut(ws: Path, http, server: str) -> None:
    out = await render([WebContext(url=f"{server}/big.txt")], ws, http, per_context_bytes=1_000_000,
                       max_bytes=2_000_000)
    el = element(out.text, "web")
    assert f"page larger than {WEB_MAX_BYTES // 1000} KB" in el
    assert WEB_MAX_BYTES - 20 <= el.count("0123456789") * 11 <= WEB_MAX_BYTES
    capped = element((await render([WebContext(url=f"{server}/big.txt")], ws, http)).text, "web")
    assert "[truncated: showing the first" in capped


def test_html_to_text_handles_broken_markup() -> None:
    title, text = html_to_text("<p>one<p>two <b>bold<div>three</span><script>x=1")
    assert title is None
    assert text.split() == ["one", "two", "bold", "three"]


# -- repo map, cursor, MCP resources, unknown ----------------------------------------------------------------------


async def test_repo_map(ws: Path, http) -> None:
    index = WorkspaceIndex([ws])
    out = await render([RepoMapContext()], ws, http, index=index)
    assert out.text == "" and "still being built" in out.problems[0]
    await index.build()
    el = element((await render([{"type": "repoMap"}], ws, http, index=index)).text, "repoMap")
    assert "  src/" in el and "    app.py" in el and "build" not in el
    assert "no workspace folder" in (await render([RepoMapContext()], ws, http)).problems[0]


async def test_cursor_shows_surrounding_lines_with_the_selection_marked(ws: Path, http) -> None:
    (ws / "long.py").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    sel = CursorContext(path="long.py", position=Range(start=Position(line=50, character=2),
                                                      end=Position(line=51, character=4)))
    el = element((await render([sel], ws, http)).text, "cursor")
    assert 'start="50:2" end="51:4" lines="30-71"' in el
    assert f'path="{ws / "long.py"}"' in el
    assert "30| line 30" in el and "71| line 71" in el and "29| line 29" not in el and "line 72" not in el
    assert "50| li<|selection|>ne 50" in el and "51| line<|/selection|> 51" in el
    empty = CursorContext(path="long.py", position=Range(start=Position(line=1, character=0),
                                                        end=Position(line=1, character=0)))
    el = element((await render([empty], ws, http)).text, "cursor")
    assert " 1| <|cursor|>line 1" in el and "21| line 21" in el and "line 22" not in el
    missing = await render([CursorContext(path="gone.py", position=empty.position)], ws, http)
    assert missing.problems == ["file not found: gone.py"]


async def test_mcp_resources(ws: Path, http) -> None:
    res = McpResourceContext(uri="file:///notes.md", name="notes", server="docs")
    out = await render([res], ws, http)
    assert out.problems == ["MCP resources are not available yet"] and out.text == ""

    async def reader(ctx: McpResourceContext) -> str:
        if ctx.uri.endswith("bad"):
            raise RuntimeError("server went away")
        return f"content of {ctx.uri}"

    bad = McpResourceContext(uri="file:///bad", server="docs")
    out = await render([res, bad], ws, http, mcp_reader=reader)
    assert '<resource uri="file:///notes.md" name="notes" server="docs">' in out.text
    assert "content of file:///notes.md" in out.text
    assert out.problems == ["could not read MCP resource file:///bad: server went away"]


async def test_unknown_contexts_are_ignored_and_order_is_kept(ws: Path, http, server: str) -> None:
    out = await render([{"type": "futureThing", "x": 1}, {"type": "web", "url": f"{server}/plain.txt"},
                        {"type": "file", "path": "README.md"}], ws, http)
    assert out.problems == []
    assert out.text.index("<web") < out.text.index("<file")
    assert "futureThing" not in out.text


async def test_attribute_values_are_escaped(ws: Path, http) -> None:
    weird = ws / 'say "hi" <now>.txt'
    weird.write_text("hello")
    out = await render([FileContext(path=weird.name)], ws, http)
    assert 'say &quot;hi&quot; &lt;now&gt;.txt"' in out.text


# -- chat/queryContext ---------------------------------------------------------------------------------------------

_ADAPTER = TypeAdapter(ChatContext)


async def offered(query: str, **kwargs: Any) -> list[JsonObject]:
    """``query_context``'s offers as ``chat/queryContext`` answers them (each model's wire form)."""
    return [c.dump() for c in await query_context(query, **kwargs)]


async def indexed(ws: Path) -> WorkspaceIndex:
    index = WorkspaceIndex([ws])
    await index.build()
    return index


async def test_query_context_blank_offers_repo_map_then_top_level(ws: Path) -> None:
    index = await indexed(ws)
    out = await offered("", index=index, already=[])
    assert out[0] == {"type": "repoMap"}
    models = [_ADAPTER.validate_python(c) for c in out]
    assert all(isinstance(m, (RepoMapContext, FileContext, DirectoryContext)) for m in models)
    assert {"type": "directory", "path": str(ws / "src")} in out
    assert {"type": "file", "path": str(ws / "README.md")} in out
    assert all(os.path.isabs(c["path"]) for c in out[1:])


async def test_query_context_matches_and_excludes_attached(ws: Path) -> None:
    index = await indexed(ws)
    out = await offered("app", index=index, already=[])
    assert out[0] == {"type": "file", "path": str(ws / "src" / "app.py")}
    assert {"type": "repoMap"} not in out
    for already in ([FileContext(path=str(ws / "src" / "app.py"))], [{"type": "file", "path": "src/app.py"}]):
        out = await offered("app", index=index, already=already)
        assert {"type": "file", "path": str(ws / "src" / "app.py")} not in out
    ranged = [FileContext(path="src/app.py", lines_range=LinesRange(start=1, end=2))]
    out = await offered("app", index=index, already=ranged)
    assert out[0]["path"] == str(ws / "src" / "app.py")  # part of a file attached: the whole file is still offered
    comp = await offered("compon", index=index, already=[])
    assert comp[0] == {"type": "directory", "path": str(ws / "src" / "components")}


async def test_query_context_repo_map_rules(ws: Path) -> None:
    index = await indexed(ws)
    assert (await offered("repo", index=index, already=[]))[0] == {"type": "repoMap"}
    assert (await offered("repo-m", index=index, already=[]))[0] == {"type": "repoMap"}
    out = await offered("", index=index, already=[{"type": "repoMap"}])
    assert {"type": "repoMap"} not in out


async def test_query_context_extra_and_limit(ws: Path) -> None:
    index = await indexed(ws)
    extra = [McpResourceContext(uri="mem://design-notes", name="design notes", server="mem"),
             McpResourceContext(uri="mem://other", name="unrelated", server="mem")]
    out = await offered("design", index=index, already=[], extra=extra)
    assert out[-1]["type"] == "mcpResource" and out[-1]["name"] == "design notes"
    assert all(c.get("name") != "unrelated" for c in out)
    assert isinstance(_ADAPTER.validate_python(out[-1]), McpResourceContext)
    attached = await offered("design", index=index, already=[extra[0]], extra=extra)
    assert all(c["type"] != "mcpResource" for c in attached)
    assert len(await offered("", index=index, already=[], limit=3)) == 3


async def test_query_context_absolute_path_outside_the_workspace(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "sub").mkdir(parents=True)
    (other / "notes.txt").write_text("x")
    (other / "nothing.md").write_text("x")
    index = await indexed(ws)
    listed = await offered(f"{other}/", index=index, already=[])
    assert {"type": "directory", "path": str(other.resolve() / "sub")} in listed
    assert {"type": "file", "path": str(other.resolve() / "notes.txt")} in listed
    prefixed = await offered(f"{other}/no", index=index, already=[])
    assert [c["path"] for c in prefixed] == [str(other.resolve() / "notes.txt"),
                                            str(other.resolve() / "nothing.md")]
    inside = await offered(str(ws / "src" / "app"), index=index, already=[])
    assert inside[0] == {"type": "file", "path": str(ws / "src" / "app.py")}


# -- secrets in what files send the model --------------------------------------------------------------------------

ENV_FILE = """\
FOO_API_KEY=plain-looking-value-4821
export DEPLOY_TOKEN="abcDEF123456ghiJKL"
SESSION=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ
-----END OPENSSH PRIVATE KEY-----
the env's own key: env-value-of-MY_API_KEY-77
the one from netrc is netrc-pw-nobody-configured-51 here
"""
LEAKS = ("plain-looking-value-4821", "abcDEF123456ghiJKL", "eyJhbGciOiJIUzI1NiJ9", "b3BlbnNzaC1rZXkt",
         "env-value-of-MY_API_KEY-77", "netrc-pw-nobody-configured-51")


async def test_secrets_in_a_file_never_reach_the_model(workspace: Path, env: dict[str, str], llm) -> None:
    """A file context, read_file and grep of a .env-like file: what the scripted provider receives has every
    secret masked — credential assignments, a JWT, a private key, the value of a credential-named variable, a password
    of the user's ~/.netrc."""
    from eca_notebook.client import EcaClient
    from eca_notebook.testing.llm_server import Reply, ToolCall

    (workspace / "settings.env").write_text(ENV_FILE)
    netrc = Path(env["HOME"]) / ".netrc"
    netrc.write_text("machine git.example.com login me password netrc-pw-nobody-configured-51\n")
    netrc.chmod(0o600)
    config = {"localModel": False, "defaultModel": "fake/m1",
              "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}}
    grep = {"path": ".", "pattern": "KEY|TOKEN|SESSION|env-value", "output_mode": "content"}
    llm.enqueue(Reply([ToolCall("r1", "eca__read_file", '{"path": "settings.env"}'),
                       ToolCall("g1", "eca__grep", json.dumps(grep))]),
                Reply.text("done"))
    eca = await EcaClient.start(workspace=workspace, config=config, env={**env, "MY_API_KEY": LEAKS[-2]},
                                approval=lambda content: True)
    try:
        result = await eca.prompt("what is in it?", contexts=[{"type": "file", "path": "settings.env"}])
        assert result.ok, result.error
    finally:
        await eca.aclose()
    assert len(llm.requests) == 2
    sent = llm.requests[-1].body["messages"]
    everything = json.dumps(sent)
    assert "settings.env" in everything and "FOO_API_KEY=***" in everything
    tools = [m["content"] for m in sent if m["role"] == "tool"]
    assert len(tools) == 2 and all("***" in t for t in tools), tools
    for leak in LEAKS:
        assert leak not in everything, leak
