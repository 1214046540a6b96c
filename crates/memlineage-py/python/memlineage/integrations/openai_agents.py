"""The gate in the OpenAI Agents SDK (``pip install "memlineage[openai-agents]"``).

Two ways in, both driven by a :class:`~memlineage.Session`:

- :func:`gate_guardrail` — a tool input guardrail to attach to ``FunctionTool``\\ s
  (``tool_input_guardrails=[…]``). Before a call runs it records the turn's input items (what
  the model saw: the user's messages, earlier tool outputs, under the trust map's principals)
  and gates the call against them. A denied call is not run; the model gets
  :meth:`Session.refusal <memlineage.Session.refusal>` instead. A guardrail cannot change
  arguments, so a call the gate would *repair* is refused too: use :func:`gated_tool` to
  repair.
- :func:`gated_tool` — a ``FunctionTool`` with the same name and schema whose invocation
  records, gates, and runs the original with the arguments the gate allows (the repaired ones
  for a repair).

A call the gate cannot judge (a malformed call; a value not of its type) is refused, never run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from agents import FunctionTool, ToolGuardrailFunctionOutput, ToolInputGuardrail
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData

from ..errors import GateError
from ..gate import Decision
from ..session import Session


async def _judge(session: Session, ctx: ToolContext[Any]) -> Decision:
    """Records what the model saw this turn, then gates the call against it."""

    def run() -> Decision:
        session.observe(list(ctx.turn_input))
        call = {"name": ctx.tool_name, "arguments": ctx.tool_arguments or "{}",
                "call_id": ctx.tool_call_id}
        return session.gate(call)

    return await asyncio.to_thread(run)


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
    """``tool`` behind the gate: each invocation records the turn's input, gates the call, and
    runs ``tool`` with the decision's arguments when it is allowed or repaired; otherwise the
    model gets the refusal (and ``tool`` does not run)."""
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


__all__ = ["gate_guardrail", "gated_tool"]
