"""One agent run's lineage: the :class:`~memlineage.Session` that records what the model saw,
and the journal of every tool call and gate decision.

AgentDojo runs a pipeline once per task; everything a pipeline element wants to keep for the
rest of the run travels in ``extra_args``. The bridge keeps one :class:`RunState` there (under
:data:`STATE_KEY`): the first gated tool call of a run creates it, and from then on every
message the model was shown is recorded before any call is judged — the system prompt and the
user's request as trusted ``user_input`` entries, the model's own text as derived entries, and
each tool result under the principals that authored it (``docs/agentdojo.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdojo.types import ChatMessage, get_text_content_as_str

from .._types import Entry
from ..memory import Memory
from ..session import Session
from .config import BridgeConfig

#: The key of the run's state in AgentDojo's ``extra_args``.
STATE_KEY = "memlineage"


@dataclass(frozen=True)
class ContextItem:
    """One entry of the run's context, as the results describe it: its position (``e1`` is
    the first entry the model was shown), who wrote it and what it is."""

    ref: str
    id: str
    writer: str
    kind: str
    label: str
    tool: str | None
    field: str | None
    source_ref: str | None
    role: str | None
    #: The entry's text (not written into the results: the model saw it, the reader has the
    #: trace).
    text: str = dataclasses.field(default="", repr=False, compare=False)

    def describe(self) -> str:
        """A short phrase naming the entry for the model and for people."""
        if self.kind == "user_input":
            return "the system prompt" if self.role == "system" else "the user's request"
        if self.kind == "derived":
            return "your own earlier message"
        what = f"the result of `{self.tool}`" if self.tool else "a tool result"
        if self.source_ref:
            what += f" (the document {self.source_ref!r})"
        if self.field:
            what += f", field `{self.field}`"
        return f"{what}, written by `{self.writer}` ({self.label})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ref": self.ref,
            "writer": self.writer,
            "kind": self.kind,
            "label": self.label,
        }
        for k in ("role", "tool", "field", "source_ref"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


@dataclass
class CallRecord:
    """One tool call of the model and what became of it."""

    tool: str
    arguments: Mapping[str, Any]
    #: ``allow``, ``deny``, ``repair``, ``confirm`` (a call that needs the user's
    #: confirmation, :mod:`~memlineage.agentdojo.confirm`), or a later gate's decision;
    #: ``not_sensitive`` for a tool the policy does not name; ``refused`` for a call the gate
    #: could not judge (never dispatched).
    decision: str
    dispatched: bool
    dispatched_arguments: Mapping[str, Any] | None
    summary: str = ""
    reasons: list[dict[str, Any]] = field(default_factory=list)
    #: The error text the model was given instead of a result, if any.
    shown_to_model: str | None = None
    #: The decision the gate signed; ``None`` when it did not judge.
    gate_decision: str | None = None


class RunState:
    """The lineage of one agent run (one task): the session and the journal of calls."""

    def __init__(self, config: BridgeConfig, memory: Memory, scope: str) -> None:
        self.config = config
        self.memory = memory
        self.session = Session(memory, trust=config.trust, policy=config.policy, scope=scope)
        #: How many messages of the transcript are recorded in the session.
        self.recorded = 0
        self.calls: list[CallRecord] = []
        #: Why the session no longer holds everything the model saw (something it was shown
        #: could not be recorded), or ``None``. From then on the gate's context would be
        #: incomplete, so no sensitive call of the run can be judged (fail closed).
        self.broken: str | None = None
        self._items: dict[str, ContextItem] = {}

    # -- recording ----------------------------------------------------------------------------

    def catch_up(self, messages: Sequence[ChatMessage]) -> None:
        """Records every message of the transcript not recorded yet: what the model was shown
        before it made the calls of the last message (system prompt, user messages, its own
        text, tool results another element added)."""
        for m in messages[self.recorded :]:
            text = get_text_content_as_str(m["content"] or [])
            if m["role"] == "system":
                if text:
                    self.session.system(text)
            elif m["role"] == "user":
                if text:
                    self.session.user(text)
            elif m["role"] == "assistant":
                if text and self.session.context:
                    self.session.assistant(text)
            elif m["role"] == "tool":
                call = m["tool_call"]
                self.record_result(call.function, text, dict(call.args), m["error"])
        self.recorded = len(messages)

    def record_result(
        self,
        tool: str,
        result: Any,
        arguments: Mapping[str, Any],
        error: str | None,
    ) -> list[Entry]:
        """Records what a tool returned, under the principals that authored it. An error
        message is recorded under the map's default (untrusted) tool author: it is written
        from the call's own arguments, so a trusted tool's error text must not vouch for them."""
        if error:
            # `TOOL:error` is no tool's name, so the trust map gives it its default author.
            return self.session.tool_result(f"{tool}:error", error)
        if result is None or result == "" or result == []:
            return []
        return self.session.tool_result(tool, result, arguments=arguments)

    # -- describing entries --------------------------------------------------------------------

    def items(self) -> list[ContextItem]:
        """The context, in the order the model was shown it."""
        ids = self.session.context
        missing = [i for i in ids if i not in self._items]
        if missing:
            for e in self.memory.recall(missing):
                self._items[e.id] = _item(e, ids.index(e.id) + 1)
        return [self._items[i] for i in ids if i in self._items]

    def refs(self) -> Refs:
        """Names entry ids by their position in the context (``e3``)."""
        return Refs(self.items())

    def describe(self, entry_id: str) -> str:
        for it in self.items():
            if it.id == entry_id:
                return f"{it.describe()} [{it.ref}]"
        return "an earlier entry the model was not shown"


class Refs:
    """Entry ids (or their 12-digit prefixes, as the gate's messages print them) → context
    positions; ``e?`` for an entry outside the context (an ancestor the model never saw)."""

    def __init__(self, items: Sequence[ContextItem]) -> None:
        self._by_id = {it.id: it.ref for it in items}

    def __call__(self, entry_id: str) -> str:
        return self._by_id.get(entry_id, "e?")

    def by_prefix(self, prefix: str) -> str | None:
        hits = [r for i, r in self._by_id.items() if i.startswith(prefix)]
        return hits[0] if len(hits) == 1 else None


def _item(e: Any, position: int) -> ContextItem:
    meta = e.metadata or {}
    return ContextItem(
        ref=f"e{position}",
        id=e.id,
        writer=e.writer,
        kind=e.kind,
        label=e.effective_label.name,
        tool=meta.get("tool"),
        field=meta.get("field"),
        source_ref=meta.get("source_ref"),
        role=meta.get("role"),
        text=e.content if isinstance(e.content, str) else "",
    )


__all__ = ["STATE_KEY", "CallRecord", "ContextItem", "RunState"]
