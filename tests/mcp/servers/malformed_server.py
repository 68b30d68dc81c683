"""An MCP server that answers ``tools/call`` for ``bad`` with a malformed result (``content`` is not a list).

Hand-written JSON-RPC over stdio on purpose: the SDK's own server side validates what it sends, so it cannot
produce the broken results real-world servers sometimes do. ``good`` answers properly.
"""

from __future__ import annotations

import json
import sys


def reply(message_id, result) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, message_id = message.get("method"), message.get("id")
        if message_id is None:
            continue  # notifications
        if method == "initialize":
            reply(message_id, {"protocolVersion": message["params"]["protocolVersion"],
                               "capabilities": {"tools": {}}, "serverInfo": {"name": "malformed", "version": "1"}})
        elif method == "tools/list":
            schema = {"type": "object", "properties": {}}
            reply(message_id, {"tools": [{"name": "bad", "inputSchema": schema},
                                         {"name": "good", "inputSchema": schema}]})
        elif method == "tools/call":
            if message["params"]["name"] == "bad":
                reply(message_id, {"content": "this should be a list"})
            else:
                reply(message_id, {"content": [{"type": "text", "text": "fine"}]})
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id,
                                         "error": {"code": -32601, "message": "method not found"}}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
