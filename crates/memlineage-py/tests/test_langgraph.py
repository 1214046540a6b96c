"""The LangGraph adapter, against the real `langgraph` package: the BaseStore operations, a
compiled graph that uses the store, and lineage kept through a Session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TypedDict

import pytest

from .conftest import import_or_skip

import_or_skip("langgraph", "langgraph")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, InvalidNamespaceError  # noqa: E402
from memlineage import InputError, Label, Memory, SearchMode, Session, TrustMap  # noqa: E402
from memlineage.integrations.langgraph import MemLineageStore  # noqa: E402

from .conftest import ATTACKER_IBAN, BILL  # noqa: E402


def test_put_get_search_delete_list(mem: Memory) -> None:
    store = MemLineageStore(mem)
    assert isinstance(store, BaseStore)
    ns = ("users", "u1", "memories")
    store.put(ns, "food", {"likes": "pizza", "rating": 5})
    store.put(ns, "city", {"lives_in": "Paris", "rating": 2})
    store.put(("users", "u2"), "food", {"likes": "sushi"})
    item = store.get(ns, "food")
    assert item is not None and item.value == {"likes": "pizza", "rating": 5}
    assert item.namespace == ns and item.key == "food"
    assert store.get(ns, "missing") is None

    e = store.entry(ns, "food")
    assert e is not None and e.scope == "langgraph/users/u1/memories"
    assert e.writer == "agent" and e.label is Label.TRUSTED

    found = store.search(("users",), query="pizza")
    assert [(i.namespace, i.key) for i in found] == [(ns, "food")]
    assert found[0].score is not None
    assert {i.key for i in store.search(("users", "u1"))} == {"food", "city"}
    assert [i.key for i in store.search(("users",), filter={"rating": {"$gt": 3}})] == ["food"]
    assert [i.key for i in store.search(("users",), filter={"likes": "sushi"})] == ["food"]
    assert len(store.search(("users",), limit=1)) == 1
    assert len(store.search(("users",), offset=2)) == 1

    assert store.list_namespaces() == [("users", "u1", "memories"), ("users", "u2")]
    assert store.list_namespaces(prefix=("users", "u2")) == [("users", "u2")]
    assert store.list_namespaces(suffix=("memories",)) == [ns]
    assert store.list_namespaces(max_depth=1) == [("users",)]

    # An update is a new signed version; the old one is forgotten, not rewritten.
    old = store.entry(ns, "food")
    store.put(ns, "food", {"likes": "pasta"})
    assert store.get(ns, "food").value == {"likes": "pasta"}  # type: ignore[union-attr]
    assert old is not None and mem.get(old.id).forgotten
    assert [i.key for i in store.search(("users",), query="pizza")] == []

    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert mem.verify().ok


def test_namespaces_with_any_characters_round_trip(mem: Memory) -> None:
    store = MemLineageStore(mem)
    ns = ("team a", "ü/ñ", "x@y")
    store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [ns]
    assert store.get(ns, "k").value == {"v": 1}  # type: ignore[union-attr]
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})


def test_another_store_on_the_same_file_sees_the_items(disk: Memory, store_path: Path) -> None:
    a = MemLineageStore(disk)
    a.put(("shared",), "k", {"v": 1})
    with Memory.open(store_path) as other:
        b = MemLineageStore(other)
        assert b.get(("shared",), "k").value == {"v": 1}  # type: ignore[union-attr]
        b.put(("shared",), "k", {"v": 2})
        b.delete(("shared",), "gone")  # deleting a missing key is a no-op
    assert a.get(("shared",), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_lineage_is_kept_through_a_session(mem: Memory) -> None:
    s = Session(mem, trust=TrustMap(tools={"read_inbox": "mail"}))
    s.user("Remember my landlord's details from the e-mail")
    (bill,) = s.tool_result("read_inbox", BILL)
    store = MemLineageStore(mem, session=s)
    store.put(("memories",), "landlord", {"iban": ATTACKER_IBAN})
    e = store.entry(("memories",), "landlord")
    assert e is not None and e.kind == "derived" and e.label is Label.DERIVED_UNTRUSTED
    assert bill.id in {p.id for p in e.parents} and e.context_hash is not None

    # Reading it back puts it in front of the model: it joins the session's context.
    fresh = Session(mem, trust=TrustMap(tools={"read_inbox": "mail"}))
    fresh.user("pay my landlord")
    MemLineageStore(mem, session=fresh).get(("memories",), "landlord")
    assert e.id in fresh.context


class State(TypedDict):
    query: str
    answer: str


def test_a_compiled_graph_uses_the_store(mem: Memory) -> None:
    store = MemLineageStore(mem)

    def remember(state: State, *, store: BaseStore) -> dict[str, str]:
        store.put(("notes",), "last", {"text": state["query"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, str]:
        hits = store.search(("notes",), query=state["query"].split()[0])
        return {"answer": json.dumps([h.value for h in hits])}

    g = StateGraph(State)
    g.add_node("remember", remember)
    g.add_node("recall", recall)
    g.add_edge(START, "remember")
    g.add_edge("remember", "recall")
    g.add_edge("recall", END)
    app = g.compile(store=store)
    out = app.invoke({"query": "pizza tonight", "answer": ""})
    assert json.loads(out["answer"]) == [{"text": "pizza tonight"}]
    e = store.entry(("notes",), "last")
    assert e is not None and e.writer == "agent"

    async def run_async() -> None:
        out = await app.ainvoke({"query": "sushi tomorrow", "answer": ""})
        assert json.loads(out["answer"]) == [{"text": "sushi tomorrow"}]
        assert (await store.aget(("notes",), "last")).value == {"text": "sushi tomorrow"}  # type: ignore[union-attr]

    asyncio.run(run_async())


def test_a_store_searches_by_meaning_in_its_search_mode(embedder: None) -> None:
    with Memory.open("memory:", embedder="default") as m:
        lexical, semantic = MemLineageStore(m), MemLineageStore(m, search_mode="semantic")
        assert semantic.search_mode is SearchMode.SEMANTIC
        ns = ("users", "u1")
        lexical.put(ns, "dentist", {"text": "Dr. Kowalski has been the family dentist since 2019."})
        lexical.put(ns, "wifi", {"text": "The cottage wifi password is hunter2-lakeside."})
        lexical.put(("users", "u2"), "dentist", {"text": "Dr. Novak fixes Eve's teeth."})
        query = "who takes care of my teeth"
        assert [i.key for i in lexical.search(ns, query=query)] == []
        found = semantic.search(ns, query=query, limit=1)
        assert [(i.namespace, i.key) for i in found] == [(ns, "dentist")]
        hybrid = MemLineageStore(m, search_mode="hybrid").search(("users",), query="hunter2")
        assert hybrid[0].key == "wifi"


def test_a_semantic_store_needs_the_model(mem: Memory) -> None:
    with pytest.raises(InputError, match='embedder="default"'):
        MemLineageStore(mem, search_mode="hybrid")
    with pytest.raises(InputError, match="unknown search mode"):
        MemLineageStore(mem, search_mode="fuzzy")  # type: ignore[arg-type]
