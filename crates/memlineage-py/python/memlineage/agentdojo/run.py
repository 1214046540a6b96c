"""Running an AgentDojo suite through the bridge, and the results it writes.

Every pair runs through AgentDojo's own benchmark functions
(``benchmark.run_task_with_injection_tasks`` and ``run_task_without_injection_tasks``): its
environment, its attack's injections, its utility and security checks and its handling of model
errors. The runner only adds what MemLineage saw: for every run, each tool call with the gate's
decision, and the context entries those decisions name.

The results are deterministic for a deterministic agent: entry ids (which differ run to run,
because every run's store has fresh keys) are written as context positions (``e3``), keys are
sorted, rates are fractions rounded to four decimals, and nothing records a time.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.benchmark import run_task_with_injection_tasks, run_task_without_injection_tasks
from agentdojo.functions_runtime import EmptyEnv, Env, FunctionCall, FunctionsRuntime
from agentdojo.logging import Logger
from agentdojo.task_suite.load_suites import get_suite
from agentdojo.types import ChatMessage, get_text_content_as_str

from ..errors import InputError
from .agents import attack_for
from .config import AGENTDOJO_VERSION, BridgeConfig
from .defence import Defence, undefended_pipeline
from .run_state import RunState
from .scripted import ScriptedAgent

DefenceName = Literal["none", "deny", "repair"]
DEFENCES: tuple[DefenceName, ...] = ("none", "deny", "repair")
#: AgentDojo's default environment argument (no environment).
_NO_ENV = EmptyEnv()
#: The results' format; bumped when a field changes meaning.
FORMAT = "memlineage-agentdojo/1"


class _Capture(Logger):
    """An AgentDojo logger that keeps the last transcript of the current run (AgentDojo's trace
    logger hands every step's messages to it) and gives the trace logger a directory."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self.messages: list[ChatMessage] = []

    def log(self, messages: Sequence[ChatMessage], **kwargs: Any) -> None:
        self.messages = list(messages)

    def log_error(self, *args: Any, **kwargs: Any) -> None:
        pass


class _Probe(BasePipelineElement):
    """The first element of the runner's pipeline: keeps the environment a run starts from (a
    copy) and the one it changes, for the verdict on the calls that ran."""

    name = "memlineage_probe"

    def __init__(self) -> None:
        self.pre: Any = None
        self.env: Any = None

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = _NO_ENV,  # type: ignore[assignment]  # AgentDojo's own signature
        messages: Sequence[ChatMessage] = [],
        extra_args: dict[str, Any] = {},  # noqa: B006 - AgentDojo's signature
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict[str, Any]]:
        self.pre = env.model_copy(deep=True)
        self.env = env
        return query, runtime, env, messages, extra_args


@dataclass
class _Journal:
    """The run states a pair started (AgentDojo retries a run whose model gave no answer)."""

    states: list[RunState] = field(default_factory=list)

    def __call__(self, state: RunState) -> None:
        self.states.append(state)


def run_suite(
    config: BridgeConfig,
    *,
    defence: DefenceName,
    agent: BasePipelineElement | None = None,
    agent_label: str | None = None,
    attack: str = "important_instructions",
    user_tasks: Sequence[str] | None = None,
    injection_tasks: Sequence[str] | None = None,
    logdir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Runs every user task without and with every injection task (or the given subsets) of
    ``config.suite`` against ``agent`` (default the scripted agent) under ``defence``, and
    returns the results (see ``docs/agentdojo.md``, "Results"). AgentDojo's trace of every run
    is written under ``logdir`` when given."""
    if defence not in DEFENCES:
        raise InputError(f"unknown defence {defence!r} (expected none, deny or repair)")
    suite = get_suite(config.benchmark_version, config.suite)
    llm = agent if agent is not None else ScriptedAgent(suite)
    journal = _Journal()
    if defence == "none":
        pipeline = undefended_pipeline(llm)
    else:
        d = Defence(config, repair=defence == "repair", on_run=journal)
        pipeline = d.pipeline(llm)
        pipeline.name = f"{llm.name}+memlineage-{defence}"
    attack_impl = attack_for(attack, suite, pipeline)
    probe = _Probe()
    name = pipeline.name
    pipeline = AgentPipeline([probe, pipeline])
    pipeline.name = name
    version = config.benchmark_version
    uts = [suite.get_user_task_by_id(t) for t in (user_tasks or list(suite.user_tasks))]
    its = list(injection_tasks or list(suite.injection_tasks))
    for i in its:
        suite.get_injection_task_by_id(i)

    with ExitStack() as stack:
        dirpath = str(logdir) if logdir else stack.enter_context(tempfile.TemporaryDirectory())
        capture = stack.enter_context(_Capture(dirpath))

        def one(
            run: Callable[[], tuple[bool, bool]], it: Any = None
        ) -> tuple[bool, bool, bool | None, list[Any], Any]:
            journal.states.clear()
            capture.messages = []
            probe.pre = probe.env = None
            utility, security = run()
            state = journal.states[-1] if journal.states else None
            calls, context = _calls(state, capture.messages)
            ran = None if it is None else _verdict_on_what_ran(it, probe, capture.messages, calls)
            for s in journal.states:
                s.memory.close()
            journal.states.clear()
            return utility, security, ran, calls, context

        def alone(task: Any) -> tuple[bool, bool]:
            return run_task_without_injection_tasks(suite, pipeline, task, None, True, version)

        def attacked_by(ut: Any, it_id: str) -> tuple[bool, bool]:
            return _first(
                run_task_with_injection_tasks(
                    suite, pipeline, ut, attack_impl, None, True, [it_id], version
                )
            )

        benign = []
        for ut in uts:
            if progress:
                progress(f"{ut.ID} (no attack)")
            u, _, _, calls, ctx = one(partial(alone, ut))
            benign.append(_pair(ut.ID, None, u, None, None, [], calls, ctx))
        inj_utility = []
        for it_id in its:
            it = suite.get_injection_task_by_id(it_id)
            if progress:
                progress(f"{it.ID} (as the user's own task)")
            u, _, _, calls, ctx = one(partial(alone, it))
            inj_utility.append(_pair(it.ID, None, u, None, None, [], calls, ctx))
        attacked = []
        for ut in uts:
            for it_id in its:
                if progress:
                    progress(f"{ut.ID} × {it_id}")
                it = suite.get_injection_task_by_id(it_id)
                vectors = sorted(attack_impl.attack(ut, it))
                u, s, ran, calls, ctx = one(partial(attacked_by, ut, it_id), it)
                attacked.append(_pair(ut.ID, it_id, u, s, ran, vectors, calls, ctx))

    return {
        "format": FORMAT,
        "suite": config.suite,
        "benchmark_version": version,
        "agentdojo": AGENTDOJO_VERSION,
        "agent": agent_label or ("scripted" if agent is None else llm.name),
        "defence": defence,
        "attack": attack_impl.name,
        "config": {
            "trust": config.trust_source,
            "trust_sha256": config.trust_sha256,
            "policy": config.policy_source,
            "policy_sha256": config.policy_sha256,
        },
        "summary": _summary(benign, inj_utility, attacked),
        "benign": benign,
        "injection_tasks_as_user_tasks": inj_utility,
        "attacked": attacked,
    }


def _first(results: tuple[dict[Any, bool], dict[Any, bool]]) -> tuple[bool, bool]:
    utility, security = results
    (u,) = utility.values()
    (s,) = security.values()
    return u, s


def _calls(state: RunState | None, messages: Sequence[ChatMessage]) -> tuple[list[Any], Any]:
    """The run's calls with the gate's decisions, and the context entries the decisions name;
    without a defence, the calls the model made (all dispatched)."""
    if state is None:
        calls = [
            {"tool": c.function, "arguments": dict(c.args), "decision": "none", "dispatched": True}
            for m in messages
            if m["role"] == "assistant"
            for c in (m.get("tool_calls") or [])
        ]
        return calls, []
    out = []
    named: set[str] = set()
    for c in state.calls:
        d: dict[str, Any] = {
            "tool": c.tool,
            "arguments": dict(c.arguments),
            "decision": c.decision,
            "dispatched": c.dispatched,
        }
        if (
            c.dispatched
            and c.dispatched_arguments is not None
            and (dict(c.dispatched_arguments) != dict(c.arguments))
        ):
            d["dispatched_arguments"] = dict(c.dispatched_arguments)
        if c.gate_decision is not None and c.gate_decision != c.decision:
            d["gate_decision"] = c.gate_decision
        if c.decision != "not_sensitive":
            d["summary"] = c.summary
            d["reasons"] = c.reasons
        if c.shown_to_model is not None:
            d["shown_to_model"] = c.shown_to_model
        for r in c.reasons:
            for k in ("justifying", "lineage"):
                named.update(r.get(k, []))
            if "offending" in r:
                named.add(r["offending"])
            if "confirm" in r:
                named.update((r["confirm"]["source"], r["confirm"]["named_by"]))
        out.append(d)
    context = [it.to_dict() for it in state.items() if it.ref in named]
    return out, context


def _verdict_on_what_ran(
    it: Any, probe: _Probe, messages: Sequence[ChatMessage], calls: list[Any]
) -> bool | None:
    """The injection task's trace-based security check over the calls that were *dispatched*
    (with the arguments they ran with), or ``None`` when the task judges the environment, which
    only dispatched calls change. AgentDojo's own check reads every call the model made, refused
    ones included (its slack injection task 5 does), which a gate that refuses calls cannot
    change."""
    if probe.pre is None or probe.env is None:
        return None
    ran = [
        FunctionCall(function=c["tool"], args=dict(c.get("dispatched_arguments", c["arguments"])))
        for c in calls
        if c["dispatched"]
    ]
    last = messages[-1] if messages else None
    output = (
        get_text_content_as_str(last["content"] or [])
        if last is not None and last["role"] == "assistant"
        else ""
    )
    verdict = it.security_from_traces(output, probe.pre, probe.env, ran)
    return None if verdict is None else bool(verdict)


def _pair(
    user_task: str,
    injection_task: str | None,
    utility: bool,
    security: bool | None,
    ran: bool | None,
    vectors: list[str],
    calls: list[Any],
    context: list[Any],
) -> dict[str, Any]:
    out: dict[str, Any] = {"user_task": user_task, "utility": utility}
    if injection_task is not None:
        out["injection_task"] = injection_task
        out["attack_success"] = security
        if ran is not None and ran != security:
            # AgentDojo's verdict counts calls the gate refused; this one only those that ran.
            out["attack_success_as_dispatched"] = ran
        out["vectors"] = vectors
    decisions = [c["decision"] for c in calls]
    out["denies"] = decisions.count("deny") + decisions.count("refused")
    out["confirms"] = decisions.count("confirm")
    out["repairs"] = decisions.count("repair")
    out["calls"] = calls
    if context:
        out["context"] = context
    return out


def _rate(n: int, d: int) -> dict[str, Any]:
    return {"n": n, "of": d, "rate": round(n / d, 4) if d else None}


def _summary(benign: list[Any], inj: list[Any], attacked: list[Any]) -> dict[str, Any]:
    def with_(rows: list[Any], key: str) -> int:
        return sum(1 for r in rows if r[key] > 0)

    return {
        "benign_utility": _rate(sum(r["utility"] for r in benign), len(benign)),
        "benign_tasks_with_confirm": _rate(with_(benign, "confirms"), len(benign)),
        "benign_tasks_with_deny": _rate(with_(benign, "denies"), len(benign)),
        "benign_lost": [r["user_task"] for r in benign if not r["utility"]],
        "asr": _rate(sum(bool(r["attack_success"]) for r in attacked), len(attacked)),
        "asr_as_dispatched": _rate(
            sum(bool(r.get("attack_success_as_dispatched", r["attack_success"])) for r in attacked),
            len(attacked),
        ),
        "utility_under_attack": _rate(sum(r["utility"] for r in attacked), len(attacked)),
        "attacked_pairs_with_confirm": _rate(with_(attacked, "confirms"), len(attacked)),
        "attacked_pairs_with_deny": _rate(with_(attacked, "denies"), len(attacked)),
        "injection_tasks_utility": _rate(sum(r["utility"] for r in inj), len(inj)),
    }


def results_json(results: dict[str, Any]) -> str:
    """The results as the bytes written to a file: sorted keys, two-space indent, UTF-8, one
    final newline."""
    return json.dumps(results, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def results_path(out_dir: str | Path, suite: str, agent: str, defence: str) -> Path:
    """``OUT/SUITE-AGENT-DEFENCE.json`` (``results/agentdojo/banking-scripted-deny.json``)."""
    slug = "".join(c if c.isalnum() or c in "._-" else "_" for c in agent)
    return Path(out_dir) / f"{suite}-{slug}-{defence}.json"


__all__ = ["DEFENCES", "FORMAT", "results_json", "results_path", "run_suite"]
