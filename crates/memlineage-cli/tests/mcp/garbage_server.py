"""A downstream MCP server that misbehaves on purpose (plain Python, no SDK): it completes the
initialize handshake, lists two tools, and then answers `tools/call` with garbage — `bad_result`
gets a result that is not a tool result, `junk` gets a line that is not JSON and no answer.
"""

from __future__ import annotations

import json
import sys


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


TOOL = {"type": "object", "properties": {}}

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg or "method" not in msg:
        continue
    mid, method = msg["id"], msg["method"]
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": mid,
                "result": {
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "garbage", "version": "0"},
                },
            }
        )
    elif method == "tools/list":
        send(
            {
                "jsonrpc": "2.0",
                "id": mid,
                "result": {
                    "tools": [
                        {"name": "bad_result", "inputSchema": TOOL},
                        {"name": "junk", "inputSchema": TOOL},
                    ]
                },
            }
        )
    elif method == "tools/call" and msg["params"]["name"] == "bad_result":
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": 42, "isError": "maybe"}})
    elif method == "tools/call":
        sys.stdout.write("this is not JSON {{{\n")
        sys.stdout.flush()
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
