"""What the gateway costs per call, with the official MCP Python SDK over stdio: N calls of the
bank server's `echo` with a new text each time, straight to the server and through `memlineage
mcp gateway` (each result recorded: an entry and a session record, two signed durable writes),
and N calls of `send_money` to the landlord through the gateway (sensitive: gated, the decision
logged; its identical result is recorded once per session). Prints medians in milliseconds.

    python overhead.py MEMLINEAGE_BINARY STORE_DIR [N]

STORE_DIR must not exist; it is created with the banking principals (docs/mcp.md).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).resolve().parent


async def timed(server: StdioServerParameters, name: str, args: dict[str, Any], n: int, meta: Any = None) -> float:
    async with Client(server) as client:
        await client.list_tools()
        await client.call_tool(name, args, meta=meta)  # warm up (starts the downstream)
        times = []
        for i in range(n):
            call = {k: (f"{v} {i}" if k == "text" else v) for k, v in args.items()}
            t = time.perf_counter()
            r = await client.call_tool(name, call, meta=meta)
            times.append(time.perf_counter() - t)
            assert not r.is_error, r
    return statistics.median(times) * 1000


def main() -> None:
    binary, store, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 200
    db = str(store / "store.db")
    store.mkdir(parents=True)

    def run(*a: str) -> None:
        subprocess.run([binary, "--store", db, *a], check=True, capture_output=True)

    run("init")
    for name, cls in [("user", "trusted"), ("bank", "trusted"), ("senders", "external")]:
        run("principal", "add", name, "--class", cls)
    (store / "policy.toml").write_text(
        '[tools.send_money.params]\nrecipient = { type = "iban", require = "DERIVED_TRUSTED", unjustified = "deny" }\n'
    )
    (store / "gateway.toml").write_text(
        f'[gateway]\nuser = "user"\n[servers.bank]\ncommand = {json.dumps(sys.executable)}\n'
        f'args = [{json.dumps(str(HERE / "bank_server.py"))}]\nprincipal = "bank"\npolicy = "policy.toml"\n'
    )
    bank = StdioServerParameters(command=sys.executable, args=[str(HERE / "bank_server.py")])
    gateway = StdioServerParameters(
        command=binary, args=["--store", db, "mcp", "gateway", "--config", str(store / "gateway.toml")]
    )
    meta = {"io.memlineage/user_request": "Pay 1100.00 to my landlord GB29 NWBK 6016 1331 9268 19"}
    send = {"recipient": "GB29NWBK60161331926819", "amount": 1100.0, "subject": "Rent", "date": "2026-04-01"}
    out = {
        "calls": n,
        "direct_echo_ms": anyio.run(timed, bank, "echo", {"text": "call"}, n),
        "gateway_echo_recorded_ms": anyio.run(timed, gateway, "bank__echo", {"text": "call"}, n),
        "gateway_send_money_gated_ms": anyio.run(timed, gateway, "bank__send_money", send, n, meta),
    }
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
