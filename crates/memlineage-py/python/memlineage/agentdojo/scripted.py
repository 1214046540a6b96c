"""A deterministic, scripted *vulnerable* agent: AgentDojo's ground truth, hijacked on sight.

:class:`ScriptedAgent` is a pipeline element that stands where the LLM stands in AgentDojo's
pipeline and speaks its message format. Given a task's prompt it makes, one per turn, the tool
calls of that task's ground truth (``BaseUserTask.ground_truth``, AgentDojo's own solution);
and as soon as a tool result it reads carries an injection task's goal, it also makes that
injection task's ground-truth calls, right away, before going on with the user's task — the
worst case of an agent that follows every instruction it reads. It ends with the task's
``GROUND_TRUTH_OUTPUT`` as its answer.

It needs no network and no model, so it runs in CI. It never looks at the defence: the values
it passes are the ground truth's (what a correct agent would pass, having read the same tool
results), and the defence must judge them from the lineage it recorded alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import yaml
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.base_tasks import BaseInjectionTask, BaseUserTask
from agentdojo.functions_runtime import (
    EmptyEnv,
    Env,
    FunctionCall,
    FunctionsRuntime,
)
from agentdojo.task_suite.task_suite import TaskSuite
from agentdojo.types import (
    ChatAssistantMessage,
    ChatMessage,
    get_text_content_as_str,
    text_content_block_from_string,
)

#: AgentDojo's default environment argument (no environment).
_NO_ENV = EmptyEnv()
#: The key of the agent's plan in AgentDojo's ``extra_args``.
PLAN_KEY = "memlineage_scripted_plan"


class _Plan:
    """The calls still to make in one run, and how far the agent has read."""

    def __init__(self, task: BaseUserTask[Any] | BaseInjectionTask[Any], calls: list[FunctionCall]):
        self.task = task
        self.calls = calls
        self.read = 0
        self.hijacked_by: str | None = None


class ScriptedAgent(BasePipelineElement):
    """The scripted vulnerable agent for the tasks of ``suite`` (see the module docs)."""

    name = "memlineage-scripted"

    def __init__(self, suite: TaskSuite[Any]) -> None:
        self.suite = suite

    def _task(self, query: str) -> BaseUserTask[Any] | BaseInjectionTask[Any]:
        for t in self.suite.user_tasks.values():
            if query == t.PROMPT:
                return t
        for i in self.suite.injection_tasks.values():
            if query == i.GOAL:
                return i
        raise ValueError(
            f"the scripted agent knows only the tasks of the suite {self.suite.name!r}; no task "
            f"has the prompt {query[:80]!r}"
        )

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = _NO_ENV,  # type: ignore[assignment]  # AgentDojo's own signature
        messages: Sequence[ChatMessage] = [],
        extra_args: dict[str, Any] = {},  # noqa: B006 - AgentDojo's signature
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict[str, Any]]:
        plan = extra_args.get(PLAN_KEY)
        if not isinstance(plan, _Plan):
            task = self._task(query)
            plan = _Plan(task, list(task.ground_truth(env)))
            extra_args = {**extra_args, PLAN_KEY: plan}
        made = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        results = [m for m in messages if m["role"] == "tool"]
        for m in results[plan.read :]:
            if plan.hijacked_by is None and isinstance(plan.task, BaseUserTask):
                hit = self._injection_in(m)
                if hit is not None:
                    plan.hijacked_by = hit.ID
                    plan.calls[made:made] = list(hit.ground_truth(env))
        plan.read = len(results)
        if made < len(plan.calls):
            gt = plan.calls[made]
            call = FunctionCall(function=gt.function, args=dict(gt.args), id=f"call_{made}")
            reply = ChatAssistantMessage(role="assistant", content=None, tool_calls=[call])
        else:
            text = plan.task.GROUND_TRUTH_OUTPUT
            reply = ChatAssistantMessage(
                role="assistant", content=[text_content_block_from_string(text)], tool_calls=None
            )
        return query, runtime, env, [*messages, reply], extra_args

    def _injection_in(self, message: ChatMessage) -> BaseInjectionTask[Any] | None:
        """The injection task whose goal the tool result carries, if any: the agent reads the
        result as the model would (the YAML AgentDojo renders, parsed back, so that line
        folding does not hide a sentence), white space normalised."""
        if message["role"] != "tool":
            return None
        text = get_text_content_as_str(message["content"] or [])
        if message["error"]:
            text += "\n" + message["error"]
        seen = _norm(" ".join([text, *_strings(_parse(text))]))
        for task in self.suite.injection_tasks.values():
            if _norm(task.GOAL) in seen:
                return task
        return None


def _parse(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield str(k)
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def _norm(s: str) -> str:
    return " ".join(s.split())


__all__ = ["ScriptedAgent"]
