"""The sensitive-action gate (paper §M6, ``docs/gate.md``): policies, tool calls in the shapes
the OpenAI and Anthropic SDKs produce, and the decision.

A decision is data, not code: :class:`Decision` and :class:`Reason` keep every field the gate
returns (``docs/gate.md``, "Reasons"), including fields a later version adds, in
:attr:`Decision.raw` / :attr:`Reason.raw`; outcomes and decisions are strings, so a new outcome
arrives as a new string, not as an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _native
from ._checked import checked
from ._record import Record
from .errors import GateError
from .labels import Label


class Policy:
    """A gate policy: which tools are sensitive and, per parameter, its type, the least trusted
    label that may justify it and what to do with a value nothing justifies. Parsed once (its
    regular expressions compiled once), then shared by every call and thread."""

    __slots__ = ("_native", "source")

    def __init__(self, native: _native.NativePolicy, source: str | None = None) -> None:
        self._native = native
        #: The file it was read from, if any.
        self.source = source

    @classmethod
    @checked
    def from_toml(cls, text_or_path: str | os.PathLike[str]) -> Policy:
        """Parses a policy from TOML text, or from a file when given a path (an
        ``os.PathLike``, or a one-line string naming an existing file). Raises
        :class:`~memlineage.PolicyError` naming the line and column of what is wrong."""
        if isinstance(text_or_path, os.PathLike) or _looks_like_path(text_or_path):
            path = Path(text_or_path)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as e:
                from .errors import PolicyError

                raise PolicyError(f"cannot read the policy {path}: {e}") from e
            return cls(_native.NativePolicy.parse(text, str(path)), str(path))
        return cls(_native.NativePolicy.parse(text_or_path))

    @classmethod
    @checked
    def from_text(cls, text: str, source: str | None = None) -> Policy:
        """Parses a policy from TOML ``text``; ``source`` names where it came from in error
        messages (a file name, a package resource)."""
        return cls(_native.NativePolicy.parse(text, source), source)

    @property
    def text(self) -> str:
        """The TOML text."""
        return self._native.text

    @property
    def mode(self) -> str:
        """``enforce`` (a denied call is not dispatched) or ``record`` (decide and log only)."""
        return self._native.mode

    @property
    def tools(self) -> list[str]:
        """The sensitive tools, sorted."""
        return self._native.tools()

    def is_sensitive(self, tool: str) -> bool:
        """Whether calls of ``tool`` are checked."""
        return self._native.is_sensitive(tool)

    def params(self) -> list[tuple[str, str, str]]:
        """Every checked parameter as ``(tool, param, type)``, sorted."""
        return self._native.params()

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source else ""
        return f"<Policy{where}: mode={self.mode}, tools={self.tools}>"


def _looks_like_path(s: str) -> bool:
    """A string with no line break, ``=``, ``[`` or ``#`` cannot hold a policy that checks anything:
    it names a file (an empty string is the empty policy)."""
    return bool(s.strip()) and not any(c in s for c in "\n=[#")


def _plain_call(call: Any) -> Any:
    """An SDK object as the dict it serialises to; a dict as it is."""
    if isinstance(call, Mapping):
        return dict(call)
    dump = getattr(call, "model_dump", None)
    if callable(dump):
        # pydantic models: openai's ChatCompletionMessageToolCall / ResponseFunctionToolCall,
        # anthropic's ToolUseBlock.
        return dump(mode="json", exclude_none=True)
    if hasattr(call, "name") and (hasattr(call, "arguments") or hasattr(call, "input")):
        out: dict[str, Any] = {"name": call.name}
        if hasattr(call, "arguments"):
            out["arguments"] = call.arguments
        else:
            out["input"] = call.input
        return out
    raise GateError(
        "cannot judge the call: malformed tool call: expected a dict or an OpenAI / Anthropic "
        f"tool call object with a name and arguments, found {type(call).__name__}"
    )


# Keys SDK objects carry beside the call itself: they say nothing about what is called.
_SDK_KEYS = ("status", "caller", "cache_control", "citations")


def call_json(call: Any) -> str:
    """A tool call as the JSON text the gate parses (``docs/gate.md``, "The tool call").

    Accepts ``{"name", "arguments"}`` (arguments an object, or a string holding one, as OpenAI
    sends it), OpenAI's ``{"id", "type": "function", "function": {…}}``, a Responses API
    ``function_call`` item, Anthropic's ``tool_use`` block (``input``), or the SDKs' objects
    for these. The gate itself checks the shape strictly (unknown keys, duplicate keys at any
    depth in argument strings, missing names)."""
    if isinstance(call, str):
        return call
    d = _plain_call(call)
    for k in _SDK_KEYS:
        d.pop(k, None)
    if d.get("type") == "tool_use":
        d.pop("type")
    if d.get("type") == "function_call":
        d.pop("type")
    try:
        return json.dumps(d, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise GateError(f"cannot judge the call: malformed tool call: {e}") from e


@dataclass(frozen=True, slots=True)
class Repair(Record):
    """One parameter the gate replaced with a value of trusted provenance."""

    param: str
    #: The value the model produced.
    old: Any
    #: The value that replaces it.
    new: Any
    #: The entry that supplies the new value, and its label.
    source: str
    source_label: Label


@dataclass(frozen=True, slots=True)
class Confirmation(Record):
    """Why one failing value of a ``confirm`` needs the user's approval (``docs/gate.md``,
    "Confirm"): it comes from a document the user's trusted request names."""

    #: The value's concrete path, as in its reason.
    param: str
    #: The untrusted context entry that carries the value.
    carrier: str
    #: The entry read from the document (the carrier, or where its value came from).
    source: str
    #: The document's name, as the integration recorded it.
    document: str
    #: The user's trusted request that names the document.
    named_by: str
    #: The lineage from the carrier to the source, the carrier first.
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reason(Record):
    """Why one checked parameter passed or failed (``docs/gate.md``, "Reasons")."""

    param: str
    #: ``justified``, ``unjustified_allowed``, ``unjustified_denied``, ``untrusted``,
    #: ``repaired``, ``absent``, ``unlisted`` (an argument no parameter path covers, under
    #: ``default = "deny"``) (or an outcome a later version adds).
    outcome: str
    #: ``citation``, ``value_match``, ``attribution`` or ``none``.
    via: str
    #: The entries that justify the value.
    justifying: tuple[str, ...]
    #: The label at which the value is justified.
    label: Label | None
    #: For a failing or repaired parameter: the decisive (least trusted) entry.
    offending: str | None
    #: The offending entry's lineage path to its untrusted root, the entry first.
    taint_path: tuple[str, ...]
    #: A sentence a person can read.
    message: str
    #: Every field as the gate returned it.
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def failed(self) -> bool:
        """Whether this parameter denies the call."""
        return self.outcome in ("unjustified_denied", "untrusted", "unlisted")


def _label(v: Any) -> Label | None:
    return Label[v] if isinstance(v, str) else None


def _reason(r: Mapping[str, Any]) -> Reason:
    return Reason(
        param=r.get("param", ""),
        outcome=r.get("outcome", ""),
        via=r.get("via", "none"),
        justifying=tuple(r.get("justifying") or ()),
        label=_label(r.get("label")),
        offending=r.get("offending"),
        taint_path=tuple(r.get("taint_path") or ()),
        message=r.get("message", ""),
        raw=r,
    )


@dataclass(frozen=True, slots=True)
class Decision(Record):
    """The gate's decision on one tool call, logged as a signed ``gate_decision`` entry
    (:attr:`record`) so that anyone can re-check it."""

    #: ``allow``, ``deny``, ``repair`` or ``confirm`` (or a decision a later version adds).
    decision: str
    tool: str
    #: The policy's mode: ``enforce`` or ``record``.
    mode: str
    #: Whether to dispatch the call: allow and repair in enforce mode (never a deny, and a
    #: confirm only once the user approved it); always in record mode.
    dispatched: bool
    #: One sentence summing up the decision.
    summary: str
    #: One reason per value the policy's parameter paths reach (``param`` is the concrete
    #: path: ``recipients[1]``, ``payee.iban``, ``body.url[0]``), in path order, then the
    #: unlisted arguments under ``default = "deny"``.
    reasons: tuple[Reason, ...]
    #: The arguments to dispatch: the repaired ones for a repair (JSON values).
    arguments: Mapping[str, Any]
    repairs: tuple[Repair, ...]
    #: Id of the signed ``gate_decision`` entry that holds this decision.
    record: str
    #: The decision exactly as the gate returned it (JSON data).
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    #: For a ``confirm``: per failing value, the document the user's request names that it
    #: comes from, and the lineage (empty otherwise).
    confirmations: tuple[Confirmation, ...] = ()

    @property
    def allowed(self) -> bool:
        """Whether the call may be dispatched (with :attr:`arguments`): the same as
        :attr:`dispatched`."""
        return self.dispatched

    @property
    def denied(self) -> bool:
        """Whether the gate denied the call (in record mode it is dispatched all the same)."""
        return self.decision == "deny"

    @property
    def needs_confirmation(self) -> bool:
        """Whether the call needs the user's approval (a ``confirm``): show the user the call
        and :attr:`confirmations`, and dispatch it only if they approve (``docs/gate.md``,
        "Confirm"). Not dispatched until then."""
        return self.decision == "confirm"

    @property
    def repaired(self) -> bool:
        """Whether the gate repaired the call: dispatch it with :attr:`arguments`."""
        return self.decision == "repair"

    @property
    def lineage_path(self) -> tuple[str, ...]:
        """The lineage path behind the decision: the taint path of the first failing (or
        repaired) parameter, from the offending entry up to its untrusted root; empty when no
        parameter failed."""
        for r in self.reasons:
            if r.taint_path and r.outcome not in ("justified", "unjustified_allowed", "absent"):
                return r.taint_path
        return ()

    @property
    def failing(self) -> tuple[Reason, ...]:
        """The parameters that deny the call."""
        return tuple(r for r in self.reasons if r.failed)

    def explain(self) -> str:
        """The decision as ``memlineage gate`` prints it: the verdict, one line per checked
        parameter, the repairs."""
        lines = [f"decision: {self.decision}"]
        lines += [f"  {r.param}: {r.message}" for r in self.reasons]
        lines += [
            f"  repaired {r.param}: {json.dumps(r.old)} -> {json.dumps(r.new)} "
            f"(from entry {r.source[:12]}, {r.source_label.name})"
            for r in self.repairs
        ]
        return "\n".join(lines)


def decision_from_native(d: Mapping[str, Any], record: str) -> Decision:
    """A :class:`Decision` from the gate's JSON (``docs/gate.md``) and its record id."""
    return Decision(
        decision=d["decision"],
        tool=d["tool"],
        mode=d["mode"],
        dispatched=d["dispatched"],
        summary=d.get("summary", ""),
        reasons=tuple(_reason(r) for r in d.get("reasons") or ()),
        arguments=d.get("arguments") or {},
        repairs=tuple(
            Repair(r["param"], r["old"], r["new"], r["source"], Label[r["source_label"]])
            for r in d.get("repairs") or ()
        ),
        record=record,
        raw=d,
        confirmations=tuple(
            Confirmation(
                c["param"],
                c["carrier"],
                c["source"],
                c["document"],
                c["named_by"],
                tuple(c.get("path") or ()),
            )
            for c in d.get("confirm") or ()
        ),
    )


__all__ = ["Confirmation", "Decision", "Policy", "Reason", "Repair", "call_json"]
