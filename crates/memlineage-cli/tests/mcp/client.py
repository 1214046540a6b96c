"""Drives an MCP server with the official MCP Python SDK (PyPI `mcp`) as the client, for the
MemLineage MCP tests: reads a plan (a JSON list of steps) from argv[1], runs it, and prints one
JSON line per step.

The server is a command (`{"command": [...]}`, stdio) or a URL (`{"url": "http://..."}`).
Steps:
  {"op": "list"}                                        -> {"tools": [names], "schemas": {name: inputSchema}}
  {"op": "call", "name": N, "args": {...}, "meta": {...}} -> {"is_error", "text", "meta", "structured"}
  {"op": "cancel", "name": N, "args": {...}, "after": s}  -> {"cancelled": true} (the call is abandoned)
  {"op": "sleep", "seconds": s}                          -> {}
An exception in a step (a JSON-RPC error) is printed as {"error": message} and the plan goes on.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def result_json(r: Any) -> dict[str, Any]:
    texts = [getattr(c, "text", None) for c in r.content]
    return {
        "is_error": bool(r.is_error),
        "text": "\n".join(t for t in texts if t is not None),
        "meta": r.meta,
        "structured": r.structured_content,
    }


async def run(plan: dict[str, Any]) -> None:
    if "url" in plan:
        server: Any = plan["url"]
    else:
        cmd = plan["command"]
        server = StdioServerParameters(command=cmd[0], args=cmd[1:], env=plan.get("env"))
    async with Client(server, mode=plan.get("mode", "auto")) as client:
        for step in plan["steps"]:
            op = step["op"]
            try:
                if op == "list":
                    tools = await client.list_tools()
                    out: dict[str, Any] = {
                        "tools": sorted(t.name for t in tools.tools),
                        "schemas": {t.name: t.input_schema for t in tools.tools},
                    }
                elif op == "call":
                    r = await client.call_tool(step["name"], step.get("args", {}), meta=step.get("meta"))
                    out = result_json(r)
                elif op == "cancel":
                    with anyio.move_on_after(step["after"]):
                        await client.call_tool(step["name"], step.get("args", {}), meta=step.get("meta"))
                    out = {"cancelled": True}
                elif op == "sleep":
                    await anyio.sleep(step["seconds"])
                    out = {}
                else:
                    raise ValueError(f"unknown op {op}")
            except Exception as e:  # noqa: BLE001 - the test reads the message
                out = {"error": f"{type(e).__name__}: {e}"}
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        anyio.run(run, json.load(f))
