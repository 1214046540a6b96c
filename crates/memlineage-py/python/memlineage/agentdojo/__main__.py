"""``python -m memlineage.agentdojo``: run an AgentDojo suite through the bridge, or print the
table of results already written (``docs/agentdojo.md``).

    python -m memlineage.agentdojo run --suite banking --defence all
    python -m memlineage.agentdojo run --suite banking --defence deny --agent openai \\
        --model gpt-4o-2024-05-13
    python -m memlineage.agentdojo table results/agentdojo/banking-scripted-*.json
    python -m memlineage.agentdojo explain results/agentdojo/banking-scripted-deny.json \\
        --task user_task_0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import Error
from .agents import OpenAIConfig, openai_agent
from .config import DEFAULT_BENCHMARK_VERSION, load_config, shipped_suites
from .report import explain, table
from .run import DEFENCES, DefenceName, results_json, results_path, run_suite


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m memlineage.agentdojo",
        description="MemLineage as a defence in AgentDojo's own pipeline (docs/agentdojo.md).",
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a suite's user tasks, without and with every injection")
    r.add_argument("--suite", required=True, help=f"shipped: {', '.join(shipped_suites())}")
    r.add_argument(
        "--defence",
        "--defense",
        required=True,
        choices=[*DEFENCES, "all"],
        help="none: AgentDojo's plain pipeline; deny/repair: the MemLineage gate",
    )
    r.add_argument("--agent", default="scripted", choices=["scripted", "openai"])
    r.add_argument("--model", help="openai agent: the model name (or MEMLINEAGE_AGENTDOJO_MODEL)")
    r.add_argument(
        "--base-url",
        help="openai agent: an OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 "
        "(or MEMLINEAGE_AGENTDOJO_BASE_URL, OPENAI_BASE_URL)",
    )
    r.add_argument(
        "--api-key-env", default=None, help="openai agent: the variable holding the API key"
    )
    r.add_argument("--trust", help="a trust map file (default: the one shipped for the suite)")
    r.add_argument("--policy", help="a gate policy file (default: the one shipped for the suite)")
    r.add_argument("--benchmark-version", default=DEFAULT_BENCHMARK_VERSION)
    r.add_argument("--attack", default="important_instructions", help="an AgentDojo attack")
    r.add_argument("--user-tasks", type=_csv, help="a comma-separated subset of user tasks")
    r.add_argument("--injection-tasks", type=_csv, help="a subset of injection tasks")
    r.add_argument(
        "--out",
        default="results/agentdojo",
        help="where SUITE-AGENT-DEFENCE.json (and .md, the per-task explanation) go",
    )
    r.add_argument("--logdir", help="also write AgentDojo's trace of every run here")
    r.add_argument("--quiet", action="store_true", help="no progress on stderr")
    t = sub.add_parser("table", help="print the Markdown table of results files")
    t.add_argument("files", nargs="+", type=Path)
    e = sub.add_parser("explain", help="print the per-task explanation of a results file")
    e.add_argument("file", type=Path)
    e.add_argument("--task", help="only the runs of this user or injection task")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "table":
            print(table(args.files), end="")
            return 0
        if args.command == "explain":
            print(explain(args.file, args.task), end="")
            return 0
        return _run(args)
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    config = load_config(
        args.suite,
        trust=args.trust,
        policy=args.policy,
        benchmark_version=args.benchmark_version,
    )
    defences: list[DefenceName] = list(DEFENCES) if args.defence == "all" else [args.defence]
    written = []
    for defence in defences:
        agent = None
        label = "scripted"
        if args.agent == "openai":
            oc = OpenAIConfig.from_env(args.model, args.base_url, args.api_key_env)
            agent = openai_agent(oc)
            label = f"openai-{oc.model}"

        def progress(what: str, defence: str = defence, label: str = label) -> None:
            if not args.quiet:
                print(f"[{args.suite} {label} {defence}] {what}", file=sys.stderr, flush=True)

        results = run_suite(
            config,
            defence=defence,
            agent=agent,
            agent_label=label,
            attack=args.attack,
            user_tasks=args.user_tasks,
            injection_tasks=args.injection_tasks,
            logdir=Path(args.logdir) / defence if args.logdir else None,
            progress=progress,
        )
        path = results_path(args.out, args.suite, label, defence)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(results_json(results), encoding="utf-8")
        path.with_suffix(".md").write_text(explain(path), encoding="utf-8")
        written.append(path)
    print(table(written), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
