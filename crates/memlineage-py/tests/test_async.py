"""AsyncMemory: the same calls, awaitable, run in a thread pool; the event loop keeps running
while they work."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from memlineage import AsyncMemory, ClosedError, Label, Policy

from .conftest import ATTACKER_IBAN, BANKING_POLICY, BILL, PAYEE


def test_async_memory_round_trip(store_path: Path) -> None:
    async def main() -> None:
        async with await AsyncMemory.open(store_path) as m:
            await m.principals.add("mail", "external")
            await m.principals.add("user", "trusted")
            assert "mail" in [p.name for p in await m.principals.list()]
            bill = await m.add(BILL, principal="mail")
            payee = await m.add(PAYEE, principal="user", kind="user_input")
            note = await m.add(f"pay {ATTACKER_IBAN}", parents=[(bill, 0.9)])
            assert note.label is Label.DERIVED_UNTRUSTED
            assert (await m.get(note.id)) == note
            assert note.id in (await m.search("pay")).ids
            assert [e.id for e in (await m.recall([payee, note]))] == [payee.id, note.id]
            assert (await m.history(note)).path == (note.id, bill.id)
            d = await m.gate(
                Policy.from_toml(BANKING_POLICY),
                {"name": "send_money", "arguments": {"recipient": ATTACKER_IBAN}},
                [payee, note],
            )
            assert d.decision == "deny"
            await m.distrust(payee)
            await m.delete(bill)
            assert len(await m.log(0, 3)) == 3
            assert (await m.checkpoint()).size > 0
            assert (await m.verify()).ok
            change = await m.principals.rotate("user")
            assert change.key_id
            await m.principals.revoke("user", "done")
            assert (await m.principals.get("user")) is not None
        assert m.closed
        with pytest.raises(ClosedError):
            await m.add("after close")

    asyncio.run(main())


def test_the_loop_runs_while_memory_works() -> None:
    async def main() -> int:
        m = await AsyncMemory.open("memory:")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        await asyncio.gather(*(m.add(f"entry {i}") for i in range(50)))
        assert (await m.verify()).ok
        t.cancel()
        await m.close()
        return ticks

    assert asyncio.run(main()) > 10
