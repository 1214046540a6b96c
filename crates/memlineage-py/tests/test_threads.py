"""Threads and processes: one Memory shared by many threads, the GIL released during native
work, closing under load, and several handles and processes on one store — never a lost or
corrupted entry (`verify` is the judge)."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memlineage import ClosedError, Memory, Policy, Session, TrustMap

from .conftest import ATTACKER_IBAN, BILL, PAYEE


def test_one_memory_shared_by_many_threads(disk: Memory, policy: Policy) -> None:
    bill = disk.add(BILL, principal="mail")
    request = disk.add("pay the rent", principal="user", kind="user_input")

    def work(t: int) -> list[str]:
        ids = []
        for i in range(25):
            e = disk.add(f"thread {t} note {i} about rent", parents=[(bill, 0.3)])
            ids.append(e.id)
            assert len(disk.search("rent", limit=8)) > 0
            if i % 5 == 0:
                d = disk.gate(
                    policy,
                    {
                        "name": "send_money",
                        "arguments": {"recipient": ATTACKER_IBAN, "amount": t * 100 + i},
                    },
                    [request, bill],
                )
                assert d.decision == "deny"
        return ids

    with ThreadPoolExecutor(8) as pool:
        written = [i for ids in pool.map(work, range(8)) for i in ids]
    assert len(set(written)) == 200
    assert all(disk.get(i).id == i for i in written)
    report = disk.verify()
    assert report.ok and report.entries == len(disk)


def test_the_gil_is_released_during_native_work(mem: Memory) -> None:
    # A store large enough that one audit takes a while.
    s = Session(mem, trust=TrustMap())
    for chunk in range(20):
        s._record([(f"row {chunk}.{i}", "agent", "observation", {}, None) for i in range(200)])
    started, done = threading.Event(), threading.Event()
    took: list[float] = []

    def audit() -> None:
        started.set()
        t0 = time.perf_counter()
        assert mem.verify().ok
        took.append(time.perf_counter() - t0)
        done.set()

    worker = threading.Thread(target=audit)
    worker.start()
    started.wait()
    wakeups = []
    while not done.is_set():
        time.sleep(0.001)
        wakeups.append(time.perf_counter())
    worker.join()
    gaps = [b - a for a, b in itertools.pairwise(wakeups)]
    # Held for the whole audit, the GIL would stop this thread for about as long as the audit.
    assert took[0] > 0.02, took
    assert len(wakeups) > 5 and max(gaps) < took[0] / 2, (max(gaps), took[0])


def test_closing_under_load_loses_nothing(disk: Memory, store_path: Path) -> None:
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(t: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                e = disk.add(f"writer {t} entry {i}")
            except ClosedError:
                return
            with lock:
                acknowledged.append(e.id)
            i += 1

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    while len(acknowledged) < 40:
        time.sleep(0.005)
    disk.close()
    stop.set()
    for t in threads:
        t.join()
    with Memory.open(store_path) as m:
        assert all(m.get(i).id == i for i in acknowledged)
        assert m.verify().ok


def test_two_handles_on_one_store(disk: Memory, store_path: Path) -> None:
    other = Memory.open(store_path)

    def write(m: Memory, tag: str) -> list[str]:
        return [m.add(f"{tag} {i}").id for i in range(40)]

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(write, (disk, other), ("first", "second"))
    other.close()
    assert len(set(a + b)) == 80
    assert disk.verify().ok and all(disk.get(i).id == i for i in a + b)


WRITER = """
import sys
from memlineage import Memory
with Memory.open(sys.argv[1]) as m:
    for i in range(30):
        print(m.add(f"process {sys.argv[2]} entry {i}").id, flush=True)
"""


def test_two_processes_on_one_store(disk: Memory, store_path: Path) -> None:
    disk.add(PAYEE, principal="user")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store_path), str(n)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    ids = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        ids += out.split()
    assert len(set(ids)) == 60
    assert all(disk.get(i).id == i for i in ids)
    report = disk.verify()
    assert report.ok and report.entries == len(disk)


def test_identical_concurrent_decisions_are_both_logged(mem: Memory, policy: Policy) -> None:
    """Two threads gating the same call against the same context in the same millisecond:
    both must get a decision (the store must not refuse the second identical record)."""
    request = mem.add("pay the rent", principal="user", kind="user_input")
    call = {"name": "send_money", "arguments": {"recipient": ATTACKER_IBAN}}
    barrier = threading.Barrier(4)

    def gate(_: int) -> str:
        barrier.wait()
        return mem.gate(policy, call, [request]).decision

    with ThreadPoolExecutor(4) as pool:
        for _ in range(20):
            assert list(pool.map(gate, range(4))) == ["deny"] * 4


OPENER = """
import sys
from memlineage import Memory
m = Memory.open(sys.argv[1])
print("created" if m.created else "opened", m.add(f"by process {sys.argv[2]}").id, flush=True)
"""


def test_processes_creating_one_store_at_once(tmp_path: Path) -> None:
    path = tmp_path / "new" / "store.db"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(path), str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.split())
    assert sorted(o[0] for o in outs) == ["created", "opened", "opened", "opened"]
    with Memory.open(path) as m:
        assert all(m.get(o[1]).id == o[1] for o in outs)
        assert m.verify().ok
        assert {p.name for p in m.principals} == {"operator", "agent", "web"}
