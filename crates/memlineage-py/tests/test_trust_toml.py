"""Trust map files: the TOML form of a TrustMap, its strict reading, registering its principals,
and the source a tool result was read from."""

from __future__ import annotations

from pathlib import Path

import pytest
from memlineage import InputError, Label, Memory, RefusedError, Session, ToolTrust, TrustMap

BANK = """
user = "user"
model = "agent"
default_tool = "web"

[principals]
user = "trusted"
agent = "trusted"
bank = "trusted"
sender = "external"
files = "external"
web = "external"

[tools]
get_balance = "bank"

[tools.get_most_recent_transactions]
author = "bank"
fields = { "*.subject" = "sender" }

[tools.read_file]
author = "files"
source = "file_path"
"""


def test_a_trust_map_file_reads_into_the_same_trust_map() -> None:
    t = TrustMap.from_toml(BANK)
    assert t.user == "user" and t.model == "agent" and t.default_tool == "web"
    assert t.tool("get_balance") == ToolTrust("bank")
    assert t.tool("get_most_recent_transactions") == ToolTrust("bank", {"*.subject": "sender"})
    assert t.tool("read_file") == ToolTrust("files", {}, "file_path")
    assert t.tool("anything_else") == ToolTrust("web")
    assert t.classes["bank"] == "trusted" and t.classes["sender"] == "external"


def test_a_trust_map_file_is_read_from_a_path(tmp_path: Path) -> None:
    p = tmp_path / "trust.toml"
    p.write_text(BANK, encoding="utf-8")
    assert TrustMap.from_toml(p) == TrustMap.from_toml(str(p)) == TrustMap.from_toml(BANK)
    with pytest.raises(InputError, match="cannot read the trust map"):
        TrustMap.from_toml(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('usr = "user"', "unknown key `usr` at the top level"),
        ('[tools.t]\nauthor = "bank"\nfeilds = {}', "unknown key `feilds` in tool `t`"),
        ('[tools.t]\nsource = "x"', "tool `t` needs `author`"),
        ('[principals]\nbank = "trustworthy"', "principal `bank` has class 'trustworthy'"),
        ("[tools]\nt = 3", "tool `t` must be an author's name or a table"),
        ('[tools.t]\nauthor = "a"\nfields = { "a..b" = "x" }', "empty field path"),
        ('[tools.t]\nauthor = "a"\nsource = ""', "`source` of tool `t` must name"),
        ('user = "a"\nuser = "b"', "trust map"),
    ],
)
def test_a_bad_trust_map_file_names_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrustMap.from_toml(text + "\n")


def test_register_adds_the_principals_with_their_classes() -> None:
    m = Memory.open("memory:")
    t = TrustMap.from_toml(BANK)
    added = t.register(m)
    assert added == ["bank", "files", "sender", "user"]  # agent and web come with a new store
    assert m.principals["bank"].trusted and not m.principals["sender"].trusted
    assert t.register(m) == []


def test_register_never_changes_a_class() -> None:
    m = Memory.open("memory:")
    m.principals.add("bank", "external")
    with pytest.raises(RefusedError, match="registered as external, but the trust map says"):
        TrustMap.from_toml(BANK).register(m)


def test_register_refuses_a_principal_without_a_class() -> None:
    m = Memory.open("memory:")
    t = TrustMap(tools={"t": "nobody"})
    with pytest.raises(RefusedError, match="`nobody` is not registered"):
        t.register(m)


def test_a_result_records_the_document_it_was_read_from() -> None:
    m = Memory.open("memory:")
    t = TrustMap.from_toml(BANK)
    t.register(m)
    s = Session(m, trust=t)
    (bill,) = s.tool_result(
        "read_file", "IBAN: UK12345678901234567890", arguments={"file_path": "bill.txt"}
    )
    assert bill.writer == "files" and bill.label is Label.EXTERNAL
    assert bill.metadata["source_ref"] == "bill.txt"
    # No argument, a non-string one, or a tool with no source: nothing is recorded.
    (other,) = s.tool_result("read_file", "x", arguments={"file_path": 3})
    assert "source_ref" not in other.metadata
    (bal,) = s.tool_result("get_balance", 1810.0, arguments={"file_path": "bill.txt"})
    assert "source_ref" not in bal.metadata
