"""Confirm: a refused call whose untrusted values come only from a document the user's own
request names ("pay the bill in bill-december-2023.txt").

The gate denies such a call — the values are of untrusted provenance, and nothing trusted
vouches for them — and the bridge dispatches nothing. But refusing is not the right answer to
the user: they asked to act on that document, so the right answer is to show them the call and
where its values come from and let them approve it. The bridge tells such a call apart from
other denies, so that the model is told to ask the user, and the results count confirms apart
from denies (issue 15; ``docs/agentdojo.md``, "Confirm").

A deny is a confirm only when **every** failing parameter is ``untrusted`` (a value carried by
an entry of untrusted provenance; a value nothing supports stays a deny) and every tool result on
its lineage path was read from a document (the trust map's ``source`` argument, recorded as the
entry's ``source_ref``) whose name a trusted request of the user contains. Both the document and
the request are found in the recorded context, never declared by the caller.

This is a classification of the gate's signed ``deny``, made by the bridge: the gate itself has
no ``confirm`` outcome yet (its log holds ``deny``); see ``docs/agentdojo.md``, "Limits".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..gate import Decision
from .run_state import ContextItem, RunState

#: The shortest document name that counts as named by the user's text (a shorter one, such as
#: a one-letter channel, would be found in any sentence).
MIN_DOCUMENT_NAME = 3


@dataclass(frozen=True)
class Confirmation:
    """Why one parameter needs the user's confirmation."""

    param: str
    #: The document's name (the value of the tool's source argument).
    document: str
    #: The entry read from the document that carries the value.
    source: str
    #: The user's entry that names the document.
    named_by: str


def confirmations(decision: Decision, state: RunState) -> dict[str, Confirmation] | None:
    """Per failing parameter, why it needs the user's confirmation; ``None`` when the call is
    not a confirm (it was not denied, or some failing parameter is no value of a document the
    user's request names)."""
    if not decision.denied or not decision.failing:
        return None
    items = {it.id: it for it in state.items()}
    requests = [
        it
        for it in items.values()
        if it.kind == "user_input" and it.role == "user" and it.label == "TRUSTED"
    ]
    out: dict[str, Confirmation] = {}
    for r in decision.failing:
        if r.outcome != "untrusted" or r.offending is None:
            return None
        path = [r.offending, *(i for i in r.taint_path if i != r.offending)]
        found = _named_document(path, items, requests)
        if found is None:
            return None
        document, named_by = found
        out[r.param] = Confirmation(r.param, document, r.offending, named_by)
    return out


def _named_document(
    path: list[str], items: Mapping[str, ContextItem], requests: list[ContextItem]
) -> tuple[str, str] | None:
    """The one document every tool result on ``path`` was read from, and the user's request
    that names it; ``None`` if an entry on the path is no such tool result (the model's own
    text is followed through: its value came from what it read)."""
    document: str | None = None
    for entry_id in path:
        it = items.get(entry_id)
        if it is None:
            return None
        if it.kind == "derived":
            continue
        if it.kind != "tool_output" or not it.source_ref:
            return None
        if document is not None and it.source_ref != document:
            return None
        document = it.source_ref
    if document is None or len(document) < MIN_DOCUMENT_NAME:
        return None
    for req in requests:
        if document in req.text:
            return document, req.id
    return None


__all__ = ["MIN_DOCUMENT_NAME", "Confirmation", "confirmations"]
