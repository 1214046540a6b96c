"""What the Python binding costs: `Memory.add`, `Memory.search` (8 results) and `Memory.gate`
from Python, beside the same library calls timed in a loop in Rust (`memlineage._native`'s
`bench_*`, compiled into the same wheel), on the same store, in the same process, in alternating
rounds. The ratio of the medians is the binding's overhead: argument conversion, the result
objects, and (for `add`) reading the stored entry back.

    python crates/memlineage-py/bench/python_vs_rust.py [--quick] [--store memory:|file] [--json]

Targets (issue 14): add and gate within 1.5x of Rust, search of 8 within 1.3x. The output is the
table in docs/performance.md ("Python").
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlineage import Memory, Policy, _native

POLICY = """
[tools.send_money.params]
recipient = { type = "iban",   require = "DERIVED_TRUSTED", unjustified = "deny" }
amount    = { type = "amount", require = "DERIVED_TRUSTED", unjustified = "allow" }
date      = { type = "date",   require = "DERIVED_TRUSTED", unjustified = "allow" }
subject   = { type = "free_text", require = "DERIVED_TRUSTED", unjustified = "allow" }
"""
TARGETS = {"add": 1.5, "gate": 1.5, "search_8": 1.3}
WORDS = [f"w{i:04d}" for i in range(2000)]


def zipf_text(rng: random.Random, n: int = 28) -> str:
    """About 180 bytes of Zipf-distributed words, like the Rust bench's workload."""
    return " ".join(WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)] for _ in range(n))


def populate(m: Memory, n: int, rng: random.Random) -> list[str]:
    m.principals.add("user", "trusted")
    m.principals.add("email", "external")
    ids: list[str] = []
    while len(ids) < n:
        batch: list[dict[str, Any]] = []
        for _ in range(min(256, n - len(ids))):
            r = rng.random()
            if r < 0.2 or len(ids) < 2:
                batch.append({"content": zipf_text(rng), "principal": "user", "kind": "user_input"})
            elif r < 0.5:
                batch.append({"content": zipf_text(rng), "principal": "email"})
            else:
                a, b = rng.sample(ids[-200:], 2)
                w = rng.choice(["0.2", "0.6", "0.9"])
                batch.append({"content": zipf_text(rng), "parents": [(a, w), (b, "0.4")]})
        ids += [e.id for e in m.add_many(batch)]
    m.checkpoint()
    return ids


def median_us(ns: list[float]) -> float:
    return statistics.median(ns) / 1000


def timed(n: int, f: Callable[[int], Any]) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter_ns()
        f(i)
        out.append(float(time.perf_counter_ns() - t))
    return out


def run(store: str, rounds: int, per_round: int) -> dict[str, Any]:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = "memory:" if store == "memory:" else str(Path(tmp) / "store.db")
        m = Memory.open(path)
        ids = populate(m, 4096, rng)
        h = m._h
        policy = Policy.from_toml(POLICY)
        request = m.add(
            "Please pay 1100.00 to GB29 NWBK 6016 1331 9268 19 on 2026-01-05 for rent",
            principal="user",
            kind="user_input",
        )
        context = [request.id, *rng.sample(ids, 7)]
        parents = rng.sample(ids, 2)
        query = "w0040 w0090"
        assert len(m.search(query)) == 8, "the query must find 8 entries"
        samples: dict[str, dict[str, list[float]]] = {
            op: {"python": [], "rust": []} for op in TARGETS
        }
        serial = 0

        def call(i: int) -> dict[str, Any]:
            return {
                "name": "send_money",
                "arguments": {
                    "recipient": "GB29NWBK60161331926819",
                    "amount": 1000 + i,
                    "date": "2026-01-05",
                    "subject": "rent",
                },
            }

        for r in range(rounds):
            base = serial
            serial += 2 * per_round

            def add(i: int, r: int = r) -> object:
                return m.add(f"python round {r} note {i}", parents=parents)

            def search(i: int) -> object:
                return m.search(query, limit=8)

            def gate(i: int, b: int = base) -> object:
                return m.gate(policy, call(b + per_round + i), context)

            # add: a derived entry with two parents.
            rust = _native.bench_write(h, per_round, f"rust round {r} note", "agent", parents)
            samples["add"]["rust"] += map(float, rust)
            samples["add"]["python"] += timed(per_round, add)
            # search of 8, verified and rendered.
            rust = _native.bench_search(h, per_round, query, "default", 8)
            samples["search_8"]["rust"] += map(float, rust)
            samples["search_8"]["python"] += timed(per_round, search)
            # gate: four checked parameters, 8 context entries, the decision logged.
            calls = [json.dumps(call(base + i)) for i in range(per_round)]
            rust = _native.bench_gate(h, policy._native, calls, context, "agent")
            samples["gate"]["rust"] += map(float, rust)
            samples["gate"]["python"] += timed(per_round, gate)
        assert m.verify().ok
        m.close()
    rows = []
    for op, s in samples.items():
        py, rs = median_us(s["python"]), median_us(s["rust"])
        rows.append(
            {
                "op": op,
                "store": store,
                "python_us": round(py, 1),
                "rust_us": round(rs, 1),
                "ratio": round(py / rs, 3),
                "target": TARGETS[op],
                "met": py / rs <= TARGETS[op],
                "samples": len(s["python"]),
            }
        )
    return {
        "machine": f"{platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}",
        "rows": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument(
        "--store",
        choices=["file", "memory:"],
        action="append",
        help="file (the default SQLite store, durable) and/or memory: (default both)",
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rounds, per = (4, 50) if a.quick else (10, 100)
    results = [run(s, rounds, per) for s in (a.store or ["file", "memory:"])]
    if a.json:
        print(json.dumps(results, indent=1))
    else:
        print("| call | store | Python median | Rust median | ratio | target | met |")
        print("|---|---|---|---|---|---|---|")
        for res in results:
            for row in res["rows"]:
                print(
                    f"| `{row['op']}` | {row['store']} | {row['python_us']} µs | "
                    f"{row['rust_us']} µs | {row['ratio']:.2f}× | ≤ {row['target']}× | "
                    f"{'yes' if row['met'] else 'NO'} |"
                )
        print(f"\n{results[0]['machine']}; {results[0]['rows'][0]['samples']} calls per row")
    return 0 if all(r["met"] for res in results for r in res["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
