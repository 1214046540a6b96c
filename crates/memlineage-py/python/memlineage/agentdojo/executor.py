"""The defence: AgentDojo's tools executor with the MemLineage gate in front of every call.

:class:`GatedToolsExecutor` takes the place of AgentDojo's ``ToolsExecutor`` in a pipeline
(``ToolsExecutionLoop([GatedToolsExecutor(defence), llm])``). For each tool call of the model it

1. records everything the model was shown since the last call (:class:`RunState`), so the
   call's lineage is its whole context — captured, never declared;
2. gates a call of a sensitive tool (the policy names it) against that context;
3. dispatches an allowed call, and a repaired one *with the repaired arguments*; returns a tool
   error to the model for a denied call (why, with the lineage path) and for a call that needs
   the user's confirmation; never dispatches a call the gate cannot judge — nor, once
   something the model was shown could not be recorded, any later sensitive call of the run
   (the context the gate would judge it on is incomplete);
4. records each result under the principals that authored it (the trust map: fields of
   different authors become entries of their own).
"""

from __future__ import annotations

from ast import literal_eval
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import is_string_list, tool_result_to_str
from agentdojo.functions_runtime import (
    EmptyEnv,
    Env,
    FunctionCall,
    FunctionReturnType,
    FunctionsRuntime,
    TaskEnvironment,
)
from agentdojo.types import ChatMessage, ChatToolResultMessage, text_content_block_from_string

from ..errors import Error, RefusedError
from .confirm import confirmations
from .defence import Defence
from .explain import model_message, reasons_for_results, repair_note, without_ids
from .run_state import STATE_KEY, CallRecord, RunState

#: AgentDojo's default environment argument (no environment).
_NO_ENV = EmptyEnv()


class GatedToolsExecutor(BasePipelineElement):
    """Runs the model's tool calls as AgentDojo's ``ToolsExecutor`` does, each one first judged
    by the MemLineage gate (see the module docs)."""

    name = "memlineage_gated_tools_executor"

    def __init__(
        self,
        defence: Defence,
        tool_output_formatter: Callable[[FunctionReturnType], str] = tool_result_to_str,
    ) -> None:
        self.defence = defence
        self.output_formatter = tool_output_formatter

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = _NO_ENV,  # type: ignore[assignment]  # AgentDojo's own signature
        messages: Sequence[ChatMessage] = [],
        extra_args: dict[str, Any] = {},  # noqa: B006 - AgentDojo's signature
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict[str, Any]]:
        if not messages or messages[-1]["role"] != "assistant":
            return query, runtime, env, messages, extra_args
        calls = messages[-1].get("tool_calls") or []
        if not calls:
            return query, runtime, env, messages, extra_args
        state = extra_args.get(STATE_KEY)
        if not isinstance(state, RunState):
            state = self.defence.start_run()
            extra_args = {**extra_args, STATE_KEY: state}
        if state.broken is None:
            try:
                state.catch_up(messages)
            except Error as e:
                state.broken = f"what the model was shown could not be recorded: {e}"
        known = {f.name for f in runtime.functions.values()}
        results: list[ChatToolResultMessage] = []
        dispatched: list[tuple[str, Any, Mapping[str, Any], str | None]] = []
        for call in calls:
            msg, out = self._one(call, known, runtime, env, state)
            results.append(msg)
            if out is not None:
                dispatched.append(out)
        # Calls of one message were decided together, on the same context: their results join
        # the context only now, in order.
        for tool, result, args, error in dispatched:
            if state.broken is not None:
                break
            try:
                state.record_result(tool, result, args, error)
            except Error as e:
                state.broken = f"the result of `{tool}` could not be recorded: {e}"
        state.recorded = len(messages) + len(results)
        return query, runtime, env, [*messages, *results], extra_args

    def _one(
        self,
        call: FunctionCall,
        known: set[str],
        runtime: FunctionsRuntime,
        env: TaskEnvironment,
        state: RunState,
    ) -> tuple[ChatToolResultMessage, tuple[str, Any, Mapping[str, Any], str | None] | None]:
        if not call.function or call.function not in known:
            error = (
                "Empty function name provided. Provide a valid function name."
                if not call.function
                else f"Invalid tool {call.function} provided."
            )
            return _result(call, "", error), None
        args = _as_dispatched(call.args)
        policy = self.defence.config.policy
        if not policy.is_sensitive(call.function):
            state.calls.append(CallRecord(call.function, args, "not_sensitive", True, args))
            return self._dispatch(call, call.function, args, runtime, env)
        try:
            if state.broken is not None:
                raise RefusedError(state.broken)
            decision = state.session.gate(
                {"name": call.function, "arguments": args}, repair=self.defence.repair
            )
        except Error as e:
            # A call the gate cannot judge is never dispatched (fail closed).
            text = f"MemLineage gate: the call to `{call.function}` cannot be judged: {e}"
            state.calls.append(
                CallRecord(call.function, args, "refused", False, None, str(e), [], text)
            )
            return _result(call, "", text), None
        refs = state.refs()
        confirm = confirmations(decision)
        record = CallRecord(
            tool=call.function,
            arguments=args,
            decision=decision.decision,
            dispatched=decision.allowed,
            dispatched_arguments=dict(decision.arguments) if decision.allowed else None,
            summary=without_ids(decision.summary, refs),
            reasons=reasons_for_results(decision, refs, confirm),
            gate_decision=decision.decision,
        )
        state.calls.append(record)
        if not decision.allowed:
            message = model_message(decision, state, confirm)
            record.shown_to_model = without_ids(message, refs)
            return _result(call, "", record.shown_to_model), None
        note = None
        if decision.repairs:
            note = without_ids(repair_note(decision, state), refs)
            record.shown_to_model = note
        return self._dispatch(call, call.function, dict(decision.arguments), runtime, env, note)

    def _dispatch(
        self,
        call: FunctionCall,
        tool: str,
        args: dict[str, Any],
        runtime: FunctionsRuntime,
        env: TaskEnvironment,
        note: str | None = None,
    ) -> tuple[ChatToolResultMessage, tuple[str, Any, Mapping[str, Any], str | None]]:
        result, error = runtime.run_function(env, tool, args)
        ran = FunctionCall(function=tool, args=args, id=call.id)
        msg = _result(ran, self.output_formatter(result), error)
        if note:
            msg["content"] = [*msg["content"], text_content_block_from_string(note)]
        return msg, (tool, result, args, error)


def _as_dispatched(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as AgentDojo's ``ToolsExecutor`` would dispatch them (a string holding a
    Python list literal becomes the list), so that the gate judges exactly what runs."""
    out = dict(args)
    for k, v in out.items():
        if isinstance(v, str) and is_string_list(v):
            out[k] = literal_eval(v)
    return out


def _result(call: FunctionCall, content: str, error: str | None) -> ChatToolResultMessage:
    return ChatToolResultMessage(
        role="tool",
        content=[text_content_block_from_string(content)],
        tool_call_id=call.id,
        tool_call=call,
        error=error,
    )


__all__ = ["GatedToolsExecutor"]
