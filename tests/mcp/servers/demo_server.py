"""A small MCP server for the tests, written with the SDK's own server side.

Run as ``python demo_server.py`` (stdio), ``python demo_server.py --http`` (streamable HTTP) or ``--sse`` (the SDK's
older HTTP+SSE transport, at ``/sse``) on 127.0.0.1, an ephemeral port, or ``--port N``, printed as ``PORT <n>`` on
stdout). It offers tools that behave well and badly
(fail, crash, hang, malformed), a prompt with arguments, a resource, and a tool that adds another tool and says so
(``notifications/tools/list_changed``).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from typing import Any

# mcp 1.x's server imports jsonschema, whose format checkers import rfc3987_syntax when it is installed (Jupyter AI's
# venv has it): that builds a Lark grammar, 0.8 s of CPU in every server this file starts, for a format (IRI) no
# test's schema uses. Left out, jsonschema skips that one checker.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _Server
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.utilities.types import Image
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as _Server
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]
    from mcp.server.fastmcp.utilities.types import Image  # type: ignore[no-redef]

NAME = os.environ.get("DEMO_SERVER_NAME", "demo")
server = _Server(NAME, log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str = "it went wrong") -> str:
    """Always fails with the message (an MCP tool error, isError)."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """The server process dies in the middle of the call."""
    sys.stderr.write("demo server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "too late"


@server.tool()
def picture() -> Any:
    """A 12 KB PNG (non-text content) with a caption."""
    return ["a picture:", Image(data=b"\x89PNG" + b"\0" * (12 * 1024 - 4), format="png")]


# A real 16 × 12 PNG (written out, so the server needs no image library)
CHART_PNG = (b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x0c\x08\x02\x00\x00\x00\xe4\x85\xaa'
             b'\xd6\x00\x00\x00TIDATx\x9cc\xfc%"\xa2\x92\xb2\x85\x01/\xb83\xc7\x07\xae\x86I%e\xcb\x9d9>\xf85 \xabaB'
             b'\xe3\x13\xd4\xc3(Wq\x02\xd3^<nCh R\x0f\x13.\xb7\x12\xa5\x81\x18=\xe8\x1a\x08\xea\xc1\xa2\x01\xbf\x1e'
             b'\xec\x1a\xf0\xe8\xc1\xa9\x01\x97\x1e|\x1a\xb0\xea\x01\x00\x9c"0\xf4\x8b\xc0!J\x00\x00\x00\x00IEND\xaeB`\x82')


@server.tool()
def chart() -> Any:
    """A real PNG image (16 × 12 pixels) with a caption."""
    return ["the chart:", Image(data=CHART_PNG, format="png")]


@server.tool(name="text.upper")
def upper(text: str) -> str:
    """A tool whose name has a dot, which provider APIs do not accept in tool names."""
    return text.upper()


@server.tool()
def where() -> str:
    """The server's process id, working directory and DEMO_TOKEN environment variable."""
    return (f"pid={os.getpid()} cwd={os.getcwd()} token={os.environ.get('DEMO_TOKEN', '')} "
            f"path_set={bool(os.environ.get('PATH'))}")


@server.tool()
def header(ctx: Context) -> str:
    """The X-Demo-Token header of the HTTP request (streamable HTTP only)."""
    if hasattr(ctx, "headers"):  # mcp 2.x
        headers = ctx.headers or {}
    else:  # mcp 1.x: the Starlette request of the call
        request = ctx.request_context.request
        headers = request.headers if request is not None else {}
    return f"x-demo-token={headers.get('x-demo-token', '')}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and notifies the client that the tool list changed."""

    def extra() -> str:
        """A tool added at run time."""
        return "extra!"

    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "added"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a review of some code."""
    return f"Please review this {language} code:\n{code}"


@server.resource("notes://shopping", name="shopping-list", description="What to buy", mime_type="text/plain")
def shopping() -> str:
    return "Remember the milk"


def _stubborn() -> None:
    """Ignore the polite ways to stop (stdin closed, SIGTERM) and leave a child behind: only killing the whole
    process group ends it. Both pids go to the file named by DEMO_PID_FILE."""
    import signal
    import subprocess
    import time

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["DEMO_PID_FILE"], "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    server.run()
    while True:
        time.sleep(1)


def main() -> None:
    if "--stubborn" in sys.argv:
        _stubborn()
        return
    if os.environ.get("DEMO_PID_FILE"):
        with open(os.environ["DEMO_PID_FILE"], "w") as f:
            f.write(f"{os.getpid()}\n")
    if "--http" not in sys.argv and "--sse" not in sys.argv:
        server.run()
        return
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # --port N: a restarted server takes its old port
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.sse_app() if "--sse" in sys.argv else server.streamable_http_app()  # --sse: the older transport
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
