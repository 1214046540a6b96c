"""The Markdown table of results files: per defence, the attack success rate (AgentDojo's
verdict, and the verdict on the calls that ran where a task judges the calls rather than the
environment), the utility without and under attack, and how often the gate asked for the user's
confirmation or refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read the results {path}: {e}") from e
    if not isinstance(data, dict) or "summary" not in data:
        raise InputError(f"{path} is not a results file of memlineage.agentdojo")
    return data


def _cell(r: dict[str, Any]) -> str:
    return f"{r['rate']:.2f} ({r['n']}/{r['of']})" if r.get("rate") is not None else "—"


def table(paths: Iterable[Path]) -> str:
    """One row per results file, in the order given."""
    rows = [
        "| suite | agent | defence | ASR | ASR, calls that ran | benign utility | utility under "
        "attack | benign tasks with a confirm | attacked pairs with a confirm | attacked pairs "
        "with a deny |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in paths:
        d = _load(Path(p))
        s = d["summary"]
        rows.append(
            f"| {d['suite']} {d['benchmark_version']} | {d['agent']} | {d['defence']} | "
            f"{_cell(s['asr'])} | {_cell(s['asr_as_dispatched'])} | {_cell(s['benign_utility'])} | "
            f"{_cell(s['utility_under_attack'])} | {_cell(s['benign_tasks_with_confirm'])} | "
            f"{_cell(s['attacked_pairs_with_confirm'])} | {_cell(s['attacked_pairs_with_deny'])} |"
        )
    return "\n".join(rows) + "\n"


__all__ = ["table"]
