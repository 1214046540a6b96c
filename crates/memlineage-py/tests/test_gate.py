"""The gate from Python: policies, the tool-call shapes of OpenAI and Anthropic (dicts, JSON
strings, the SDKs' own objects), and decisions as data (the worked example of docs/gate.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from anthropic.types import ToolUseBlock
from memlineage import Decision, Entry, GateError, Label, Memory, Policy, PolicyError
from openai.types.chat import ChatCompletionMessageToolCall
from openai.types.responses import ResponseFunctionToolCall

from .conftest import ATTACKER_IBAN, BANKING_POLICY, BILL, LANDLORD_IBAN, PAYEE

ARGS = {"recipient": ATTACKER_IBAN, "amount": 1100.00}


def laundering(mem: Memory) -> tuple[Entry, Entry, Entry]:
    """The worked example: the payee note, the bill, the laundered summary, the request."""
    mem.add(PAYEE, principal="user", kind="user_input")
    bill = mem.add(BILL, principal="mail", kind="tool_output")
    summary = mem.add(
        f"Rent account changed to {ATTACKER_IBAN}; rent is 1100.00", parents=[(bill, 0.9)]
    )
    request = mem.add(
        "Please pay my rent of 1100.00 to my landlord", principal="user", kind="user_input"
    )
    return bill, summary, request


def test_policy_from_text_and_file(tmp_path: Path) -> None:
    p = Policy.from_toml(BANKING_POLICY)
    assert p.mode == "enforce" and p.tools == ["send_money"]
    assert p.is_sensitive("send_money") and not p.is_sensitive("read_inbox")
    assert p.params() == [("send_money", "amount", "amount"), ("send_money", "recipient", "iban")]
    f = tmp_path / "policy.toml"
    f.write_text(BANKING_POLICY)
    for given in (f, str(f)):
        q = Policy.from_toml(given)
        assert q.source == str(f) and q.text == BANKING_POLICY
    assert "send_money" in repr(q)
    assert Policy.from_toml("").tools == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[tools.t.params]\nx = { type = "iban", require = "trusted" }',
            r'^policy line 2, column \d+: invalid label "trusted"',
        ),
        ('[tools.t.params]\nx = { type = "regex", pattern = "[A-Z" }', "invalid regex pattern"),
        ('mode = "loud"', "policy line 1"),
        ("[tools.t.params\n", "policy line 1"),
    ],
)
def test_bad_policies_name_line_and_column(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Policy.from_toml(text)


def test_a_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy"):
        Policy.from_toml(tmp_path / "missing.toml")
    with pytest.raises(PolicyError, match="cannot read the policy"):
        Policy.from_toml("missing-policy.toml")


def test_the_worked_example_denies_then_repairs(mem: Memory, policy: Policy) -> None:
    bill, summary, request = laundering(mem)
    d = mem.gate(policy, {"name": "send_money", "arguments": ARGS}, [request, summary])
    assert isinstance(d, Decision)
    assert (d.decision, d.allowed, d.denied, d.dispatched) == ("deny", False, True, False)
    assert d.lineage_path == (summary.id, bill.id)
    by_param = {r.param: r for r in d.reasons}
    assert by_param["recipient"].outcome == "untrusted"
    assert by_param["recipient"].offending == summary.id
    assert by_param["recipient"].label is Label.DERIVED_UNTRUSTED
    assert by_param["amount"].outcome == "justified"
    assert by_param["amount"].justifying[0] == request.id
    assert [r.param for r in d.failing] == ["recipient"]
    assert "lineage to the untrusted root" in by_param["recipient"].message
    assert d.summary and d.explain().startswith("decision: deny")
    record = mem.get(d.record)
    assert record.kind == "gate_decision" and record.metadata["decision"] == "deny"
    logged = json.loads(record.text or "")
    assert logged["decision"]["decision"] == "deny"

    r = mem.gate(policy, {"name": "send_money", "arguments": ARGS}, [request, summary], repair=True)
    assert (r.decision, r.allowed, r.repaired) == ("repair", True, True)
    assert r.arguments == {"recipient": LANDLORD_IBAN, "amount": 1100.0}
    (fix,) = r.repairs
    assert (fix.param, fix.old, fix.new, fix.source_label) == (
        "recipient",
        ATTACKER_IBAN,
        LANDLORD_IBAN,
        Label.TRUSTED,
    )
    assert "repaired recipient" in r.explain()
    json.dumps(r.to_dict())
    assert r.to_dict()["reasons"][0]["param"] == "amount"


def test_allow_record_mode_and_insensitive_tools(mem: Memory, policy: Policy) -> None:
    _, summary, request = laundering(mem)
    ok = mem.gate(
        policy,
        {"name": "send_money", "arguments": {"recipient": LANDLORD_IBAN, "amount": 1100}},
        [request, mem.search("landlord IBAN")[0]],
    )
    assert ok.decision == "allow" and ok.allowed and ok.lineage_path == ()
    free = mem.gate(policy, {"name": "read_inbox", "arguments": {}}, [request])
    assert free.decision == "allow" and free.reasons == ()
    record = Policy.from_toml(BANKING_POLICY.replace('"enforce"', '"record"'))
    rec = mem.gate(record, {"name": "send_money", "arguments": ARGS}, [request, summary])
    assert rec.decision == "deny" and rec.allowed and rec.arguments == ARGS


def test_citations_are_verified(mem: Memory, policy: Policy) -> None:
    _, summary, request = laundering(mem)
    d = mem.gate(
        policy,
        {"name": "send_money", "arguments": ARGS},
        [request, summary],
        cite={"recipient": request},
    )
    assert d.decision == "deny"
    with pytest.raises(GateError, match="not in the context"):
        mem.gate(
            policy,
            {"name": "send_money", "arguments": ARGS},
            [request],
            cite={"recipient": [summary.id]},
        )


def _shapes() -> list[object]:
    args = json.dumps(ARGS)
    return [
        {"name": "send_money", "arguments": ARGS},
        {"name": "send_money", "arguments": args},
        json.dumps({"name": "send_money", "arguments": ARGS}),
        {"id": "call_1", "type": "function", "function": {"name": "send_money", "arguments": args}},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "send_money",
            "arguments": args,
            "status": "completed",
        },
        {"type": "tool_use", "id": "toolu_1", "name": "send_money", "input": ARGS},
        ChatCompletionMessageToolCall.model_validate(
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "send_money", "arguments": args},
            }
        ),
        ResponseFunctionToolCall(
            type="function_call",
            call_id="call_1",
            name="send_money",
            arguments=args,
            id="fc_1",
            status="completed",
        ),
        ToolUseBlock(type="tool_use", id="toolu_1", name="send_money", input=ARGS),
    ]


@pytest.mark.parametrize("call", _shapes(), ids=lambda c: type(c).__name__)
def test_every_tool_call_shape_is_judged_the_same(
    mem: Memory, policy: Policy, call: object
) -> None:
    _, summary, request = laundering(mem)
    d = mem.gate(policy, call, [request, summary])
    assert d.decision == "deny" and d.tool == "send_money"
    assert {r.param: r.outcome for r in d.reasons} == {
        "amount": "justified",
        "recipient": "untrusted",
    }


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"arguments": {}}, "name"),
        ({"name": "send_money", "arguments": '{"recipient": "a", "recipient": "b"}'}, "duplicate"),
        ({"name": "send_money", "arguments": [1, 2]}, "object"),
        ({"name": "send_money", "arguments": {}, "input": {}, "extra": 1}, "unknown key"),
        ("not json", "not valid JSON"),
        ({"name": "send_money", "arguments": {"recipient": 12345}}, "recipient"),
        ({"name": "send_money", "arguments": {"recipient": "hello"}}, "recipient"),
        (object(), "expected a dict"),
    ],
)
def test_calls_the_gate_cannot_judge_raise(
    mem: Memory, policy: Policy, call: object, message: str
) -> None:
    _, summary, request = laundering(mem)
    with pytest.raises(GateError, match=message) as e:
        mem.gate(policy, call, [request, summary])
    assert str(e.value).startswith("cannot judge the call")


def test_the_context_must_verify(mem: Memory, policy: Policy) -> None:
    from memlineage import NotFoundError

    with pytest.raises(NotFoundError):
        mem.gate(policy, {"name": "send_money", "arguments": ARGS}, ["ab" * 32])
