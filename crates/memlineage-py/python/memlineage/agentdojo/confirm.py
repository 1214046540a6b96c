"""Confirm: a refused call whose untrusted values come only from a document the user's own
request names ("pay the bill in bill-december-2023.txt").

The gate decides it (``docs/gate.md``, "Confirm"): the session records, for every tool result,
the document it was read from (the trust map's ``source`` argument of the call that was made),
and passes those as the gate's ``sources``; the gate answers ``confirm`` — signed, with the
document, the user's request that names it and the lineage per value — when every failing
value comes from such a document and the policy allows it (``confirm = true``; a parameter's
``confirm = false`` never). The bridge dispatches nothing for a confirm: the model is told to
ask the user, and the results count confirms apart from denies (issue 15;
``docs/agentdojo.md``, "Confirm").
"""

from __future__ import annotations

from ..gate import Confirmation, Decision


def confirmations(decision: Decision) -> dict[str, Confirmation] | None:
    """Per failing parameter, why it needs the user's confirmation (the gate's); ``None``
    when the gate did not answer ``confirm``."""
    if not decision.needs_confirmation:
        return None
    return {c.param: c for c in decision.confirmations}


__all__ = ["Confirmation", "confirmations"]
