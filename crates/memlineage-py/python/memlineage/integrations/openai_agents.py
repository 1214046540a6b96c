"""The gate in the OpenAI Agents SDK (``pip install "memlineage[openai-agents]"``).

Lineage is captured where the SDK builds each model call: :func:`run_config` (or
:func:`capture` as your own ``RunConfig.call_model_input_filter``) records, before every call,
exactly what the model is sent — the instructions, the user's messages, every tool output
under the trust map's principals, the model's earlier messages — in a
:class:`~memlineage.Session`. Sensitive calls are then gated against that context, two ways:

- :func:`gate_guardrail` — a tool input guardrail for ``FunctionTool``\\ s
  (``tool_input_guardrails=[…]``). A denied call is not run; the model gets
  :meth:`Session.refusal <memlineage.Session.refusal>` instead. A guardrail cannot change
  arguments, so a call the gate would *repair* is refused too.
- :func:`gated_tool` — a ``FunctionTool`` with the same name and schema that gates each call
  and runs the original with the arguments the gate allows (the repaired ones for a repair).

A call the gate cannot judge (malformed; a value not of its type) is refused, never run. Without
the capture, the context holds only what you recorded yourself, and the gate judges against
that (values from nowhere are unjustified: refused under ``unjustified = "deny"``).

Example::

    session = Session(memory, trust=TrustMap(tools={"read_inbox": "mail"}), policy=policy)
    agent = Agent(name="banker", tools=[read_inbox, gated_tool(send_money, session)])
    await Runner.run(agent, "Pay my rent", run_config=run_config(session))
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from agents import FunctionTool, RunConfig, ToolGuardrailFunctionOutput, ToolInputGuardrail
from agents.run_config import CallModelData, CallModelInputFilter, ModelInputData
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData

from ..errors import GateError
from ..gate import Decision
from ..session import Session


def capture(session: Session) -> CallModelInputFilter:
    """A ``call_model_input_filter`` that records what each model call is sent (instructions
    and input items) in ``session``, and sends it unchanged."""

    async def record(data: CallModelData[Any]) -> ModelInputData:
        md = data.model_data

        def run() -> None:
            session.instructions(md.instructions)
            session.observe(list(md.input))

        await asyncio.to_thread(run)
        return md

    return record


def run_config(session: Session, **kwargs: Any) -> RunConfig:
    """A ``RunConfig`` (with ``kwargs``) whose model calls are recorded in ``session``."""
    return RunConfig(call_model_input_filter=capture(session), **kwargs)


async def _judge(session: Session, ctx: ToolContext[Any]) -> Decision:
    call = {
        "name": ctx.tool_name,
        "arguments": ctx.tool_arguments or "{}",
        "call_id": ctx.tool_call_id,
    }
    return await asyncio.to_thread(session.gate, call)


def _cannot_judge(e: GateError) -> str:
    return f"The call was refused by the memory gate: {e}"


def gate_guardrail(session: Session, *, name: str = "memlineage_gate") -> ToolInputGuardrail[Any]:
    """A tool input guardrail that gates every call of the tools it is attached to with the
    session's policy, against what the model has seen (``output_info`` is the decision's
    ``to_dict()``)."""

    async def check(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        try:
            d = await _judge(session, data.context)
        except GateError as e:
            return ToolGuardrailFunctionOutput.reject_content(_cannot_judge(e))
        # A guardrail can run a call as made or not at all: a repair (new arguments) is
        # refused here; in record mode every call runs as made and the decision is logged.
        if d.decision == "allow" or d.mode == "record":
            return ToolGuardrailFunctionOutput.allow(output_info=d.to_dict())
        return ToolGuardrailFunctionOutput.reject_content(
            Session.refusal(d), output_info=d.to_dict()
        )

    return ToolInputGuardrail(guardrail_function=check, name=name)


def gated_tool(tool: FunctionTool, session: Session) -> FunctionTool:
    """``tool`` behind the gate: each call is gated, and ``tool`` runs with the decision's
    arguments when it is allowed or repaired; otherwise the model gets the refusal (and
    ``tool`` does not run)."""
    inner = tool.on_invoke_tool

    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        try:
            d = await _judge(session, ctx)
        except GateError as e:
            return _cannot_judge(e)
        if not d.allowed:
            return Session.refusal(d)
        args = json.dumps(dict(d.arguments), ensure_ascii=False) if d.repaired else arguments
        return await inner(ctx, args)

    return dataclasses.replace(tool, on_invoke_tool=invoke)


__all__ = ["capture", "gate_guardrail", "gated_tool", "run_config"]
