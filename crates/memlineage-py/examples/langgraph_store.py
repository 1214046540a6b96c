"""A LangGraph graph whose long-term memory is a MemLineage store: every item is a signed
entry, reads are verified, and what the model writes is derived from what it saw.

    pip install "memlineage[langgraph]"; python examples/langgraph_store.py
"""

from __future__ import annotations

import sys
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from memlineage import Label, Memory, Session, TrustMap
from memlineage.integrations.langgraph import MemLineageStore


class State(TypedDict):
    message: str
    reply: str


def main() -> int:
    with Memory.open("memory:") as m:
        m.principals.add("user", "trusted")
        session = Session(m, trust=TrustMap(user="user", model="agent"))
        store = MemLineageStore(m, session=session)

        def listen(state: State, *, store: BaseStore) -> dict[str, str]:
            session.user(state["message"])  # the model is shown the user's message
            store.put(("profile", "u1"), "food", {"likes": state["message"].split()[-1]})
            return {}

        def answer(state: State, *, store: BaseStore) -> dict[str, str]:
            item = store.get(("profile", "u1"), "food")
            return {"reply": f"Noted: you like {item.value['likes'] if item else '?'}"}

        g = StateGraph(State)
        g.add_node("listen", listen)
        g.add_node("answer", answer)
        g.add_edge(START, "listen")
        g.add_edge("listen", "answer")
        g.add_edge("answer", END)
        out = g.compile(store=store).invoke({"message": "I like pizza", "reply": ""})
        print(out["reply"])
        e = store.entry(("profile", "u1"), "food")
        assert e is not None
        print(
            f"stored as entry {e.id[:12]} in scope {e.scope}: {e.label.name}, derived from "
            f"{len(e.parents)} entr{'y' if len(e.parents) == 1 else 'ies'} the model saw"
        )
        return 0 if e.label is Label.DERIVED_TRUSTED and m.verify().ok else 1


if __name__ == "__main__":
    sys.exit(main())
