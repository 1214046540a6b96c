"""The OpenAI Agents SDK adapter, against the real `openai-agents` package: a real Runner and
real FunctionTools, driven by the SDK's own deterministic ScriptedModel playing a vulnerable
agent — it pays whatever IBAN the last tool output mentions."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from .conftest import import_or_skip

import_or_skip("agents", "openai-agents")

from agents import Agent, FunctionTool, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message  # noqa: E402
from agents.testing import function_call as fc  # noqa: E402
from memlineage import Label, Memory, Policy, Session, TrustMap  # noqa: E402
from memlineage.integrations.openai_agents import (  # noqa: E402
    gate_guardrail,
    gated_tool,
    run_config,
)

from .conftest import ATTACKER_IBAN, BILL, LANDLORD_IBAN, PAYEE  # noqa: E402

set_tracing_disabled(True)  # no trace export: the tests run offline

IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,4})?\b")


def pays_the_last_iban(call: ModelCall) -> Any:
    """The vulnerable step: the IBAN in the latest tool output becomes the payee."""
    outputs = [
        i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    text = str(outputs[-1]["output"])
    iban = IBAN.search(text)
    assert iban is not None, text
    return [
        fc(
            "send_money",
            {"recipient": iban.group(0).replace(" ", ""), "amount": 1100.0},
            call_id="call_pay",
        )
    ]


def build(session: Session, wrap: str) -> tuple[Agent[Any], list[dict[str, Any]], ScriptedModel]:
    sent: list[dict[str, Any]] = []

    @function_tool
    def read_inbox() -> str:
        """Reads the user's inbox."""
        return BILL

    def send(recipient: str, amount: float) -> str:
        sent.append({"recipient": recipient, "amount": amount})
        return "sent"

    if wrap == "guardrail":
        send_money: FunctionTool = function_tool(
            send, name_override="send_money", tool_input_guardrails=[gate_guardrail(session)]
        )
    else:
        send_money = gated_tool(function_tool(send, name_override="send_money"), session)
    model = ScriptedModel(
        [
            [fc("read_inbox", {}, call_id="call_read")],
            ModelStep.respond(pays_the_last_iban),
            [assistant_message("done")],
        ]
    )
    agent = Agent(
        name="banker",
        instructions="Pay the user's bills.",
        tools=[read_inbox, send_money],
        model=model,
    )
    return agent, sent, model


def run(agent: Agent[Any], session: Session, text: str) -> Any:
    return asyncio.run(Runner.run(agent, text, run_config=run_config(session)))


def last_output(model: ScriptedModel) -> str:
    call = model.last_call
    assert call is not None
    outs = [
        i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    return str(outs[-1]["output"])


@pytest.mark.parametrize("wrap", ["guardrail", "wrapper"])
def test_the_injected_payment_is_refused(mem: Memory, policy: Policy, wrap: str) -> None:
    session = Session(mem, trust=TrustMap(tools={"read_inbox": "mail"}), policy=policy)
    agent, sent, model = build(session, wrap)
    result = run(agent, session, "Please pay my rent of 1100.00 to my landlord")
    assert result.final_output == "done"
    assert sent == []  # the tool never ran
    refusal = last_output(model)
    assert "refused by the memory gate" in refusal and ATTACKER_IBAN not in refusal
    # What the model saw was recorded under the right principals.
    seen = [mem.get(i) for i in session.context]
    assert [(e.writer, e.kind, e.metadata.get("role", e.metadata.get("tool"))) for e in seen] == [
        ("user", "user_input", "system"),
        ("user", "user_input", "user"),
        ("mail", "tool_output", "read_inbox"),
        # The refusal the model was sent is recorded too, under the default (external) author.
        ("web", "tool_output", "send_money"),
    ]
    assert seen[3].text == refusal
    assert seen[2].label is Label.EXTERNAL and seen[2].metadata["call_id"] == "call_read"
    assert seen[0].text == "Pay the user's bills."
    assert "untrusted content" in refusal  # denied for the e-mail's lineage, not for lack of it
    decisions = [e for e in mem.log(0, 1000) if e.kind == "gate_decision"]
    assert [d.metadata["decision"] for d in decisions] == ["deny"]


def test_the_wrapper_repairs_with_the_trusted_payee(mem: Memory, policy: Policy) -> None:
    mem.add(PAYEE, principal="user", kind="user_input")
    session = Session(mem, trust=TrustMap(tools={"read_inbox": "mail"}), policy=policy, repair=True)
    agent, sent, model = build(session, "wrapper")
    run(agent, session, "Please pay my rent of 1100.00 to my landlord")
    assert sent == [{"recipient": LANDLORD_IBAN, "amount": 1100.0}]
    assert last_output(model) == "sent"


def test_a_trusted_payment_goes_through(mem: Memory, policy: Policy) -> None:
    session = Session(mem, trust=TrustMap(tools={"read_inbox": "mail"}), policy=policy)
    agent, sent, _ = build(session, "guardrail")
    run(
        agent,
        session,
        f"Pay 1100.00 to my landlord, IBAN {LANDLORD_IBAN}, after reading the inbox "
        "(the inbox says nothing about it)",
    )
    # The scripted agent still pays the e-mail's IBAN: refused, the user's own would pass.
    assert sent == []
    ok = session.gate(
        {"name": "send_money", "arguments": {"recipient": LANDLORD_IBAN, "amount": 1100.0}}
    )
    assert ok.decision == "allow"
