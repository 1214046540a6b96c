"""What people read of the results: the Markdown table of results files — per defence, the
attack success rate (AgentDojo's verdict, and the verdict on the calls that ran where a task
judges the calls rather than the environment), the utility without and under attack, and how
often the gate asked for the user's confirmation or refused — and the per-task explanation of
one file: for every run, its verdicts and, for every call the gate did not simply allow, what
became of it and why, in the words the model was given.
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


def explain(path: Path, task: str | None = None) -> str:
    """The per-task explanation of one results file (of ``task`` only, when given: a user or
    injection task id) as Markdown."""
    d = _load(Path(path))
    s = d["summary"]
    out = [
        f"# {d['suite']} {d['benchmark_version']} · {d['agent']} · defence {d['defence']}",
        "",
        f"ASR {_cell(s['asr'])} (calls that ran: {_cell(s['asr_as_dispatched'])}) · benign "
        f"utility {_cell(s['benign_utility'])} · utility under attack "
        f"{_cell(s['utility_under_attack'])}. Entries are named by their position in the run's "
        "context (`e1` the system prompt, `e2` the user's request).",
    ]
    sections = (
        ("Benign runs (no attack)", d["benign"]),
        ("Injection tasks as the user's own request", d["injection_tasks_as_user_tasks"]),
        ("Attacked runs", d["attacked"]),
    )
    for title, rows in sections:
        picked = [
            r for r in rows if task is None or task in (r["user_task"], r.get("injection_task"))
        ]
        if not picked:
            continue
        out += ["", f"## {title}", ""]
        for r in picked:
            out += _run_lines(r)
    return "\n".join(out) + "\n"


def _run_lines(r: dict[str, Any]) -> list[str]:
    name = r["user_task"]
    verdicts = ["utility kept" if r["utility"] else "**utility lost**"]
    if "injection_task" in r:
        name += f" × {r['injection_task']}"
        won = r["attack_success"]
        verdict = "**attack succeeded**" if won else "attack failed"
        ran = r.get("attack_success_as_dispatched")
        if ran is not None:
            verdict += f" (over the calls that ran: {'succeeded' if ran else 'failed'})"
        verdicts.insert(0, verdict)
    lines = [f"- `{name}`: {', '.join(verdicts)}."]
    for c in r["calls"]:
        if c["decision"] in ("allow", "not_sensitive", "none"):
            continue
        head = f"  - `{c['tool']}`: {c['decision']}"
        if "gate_decision" in c:
            head += f" (the gate signed {c['gate_decision']})"
        head += ", dispatched" if c["dispatched"] else ", not dispatched"
        said = c.get("shown_to_model") or c.get("summary") or ""
        lines.append(head + (":" if said else "."))
        lines += [f"    > {line}" for line in said.splitlines()]
    return lines


__all__ = ["explain", "table"]
