"""Who authored what an agent sees: the trust map of a :class:`~memlineage.Session`.

Principals are authors, not tools (``DESIGN.md``, "Integrations and scale"): a tool result can
hold text from several authors — in a bank statement the bank wrote the amounts and the
counterparties' IBANs, while each sender wrote the subject line. A :class:`ToolTrust` names the
author of a tool's results and, for structured results, the authors of particular fields, so
that a value the bank supplied stays trusted while text a sender supplied stays external.

Field paths are dot-separated keys of the result (parsed from JSON when it is a JSON string;
pydantic models, dataclasses, enums and dates are turned into JSON data first),
with ``*`` for any key or list item: ``"subject"``, ``"*.subject"`` (every item of a list),
``"transactions.*.subject"``, ``"*"`` (every top-level value).

A tool the map does not name is recorded under :attr:`TrustMap.default_tool` — by default the
external principal ``web``: what nobody vouched for is untrusted (fail closed).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._record import Record
from .errors import InputError

#: A JSON path element: a key, or an index into a list.
PathItem = str | int


@dataclass(frozen=True, slots=True)
class ToolTrust(Record):
    """The authors of one tool's results: ``author`` for the result, and ``fields`` mapping a
    field path (see the module docs) to the principal that authored the values there."""

    author: str
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Part(Record):
    """One authored part of a tool result: its author, its text, and the field path it was
    taken from (``None`` for the result itself, with the fields of other authors removed)."""

    author: str
    text: str
    path: str | None


@dataclass(frozen=True, slots=True)
class TrustMap(Record):
    """Principals for everything a session records.

    - ``user``: the person's messages (``user_input``; trusted).
    - ``system``: system and developer prompts (default: ``user``).
    - ``model``: what the model writes (its notes, its messages) and the signer of gate
      decisions; its entries are labelled from what it saw.
    - ``tools``: tool name → author principal, or a :class:`ToolTrust` for results with
      several authors.
    - ``default_tool``: the author of a tool the map does not name (default ``web``,
      external).
    """

    user: str = "user"
    model: str = "agent"
    system: str | None = None
    tools: Mapping[str, str | ToolTrust] = field(default_factory=dict)
    default_tool: str = "web"

    def tool(self, name: str) -> ToolTrust:
        """The trust of tool ``name``."""
        t = self.tools.get(name, self.default_tool)
        return t if isinstance(t, ToolTrust) else ToolTrust(t)

    def principals(self) -> set[str]:
        """Every principal the map names."""
        out = {self.user, self.model, self.default_tool, self.system or self.user}
        for t in self.tools.values():
            tt = t if isinstance(t, ToolTrust) else ToolTrust(t)
            out.add(tt.author)
            out.update(tt.fields.values())
        return out

    def parts(self, tool: str, result: Any) -> list[Part]:
        """Splits a tool result into the parts each author wrote (the result's author first,
        then the fields of other authors in document order). A value in a field of another
        author is removed from the author's part (replaced by ``"<by NAME>"``), so the result's
        author never vouches for text it did not write."""
        trust = self.tool(tool)
        if isinstance(result, (bytes, bytearray)):
            result = bytes(result).decode("utf-8", "replace")
        data: Any = _plain_data(result)
        if isinstance(result, str):
            if not trust.fields:
                return [Part(trust.author, result, None)]
            try:
                data = json.loads(result)
            except ValueError:
                return [Part(trust.author, result, None)]
        if not trust.fields:
            return [Part(trust.author, _text(data), None)]
        patterns = [(p.split("."), who) for p, who in trust.fields.items()]
        taken: list[Part] = []
        rest = _take(data, [], patterns, trust.author, taken)
        return [Part(trust.author, _text(rest), None), *taken]


def _plain_data(v: Any) -> Any:
    """Structured results as JSON data: pydantic models (``model_dump``), dataclasses, enums,
    dates and times, mappings and sequences, recursively; anything else as it is."""
    dump = getattr(v, "model_dump", None)
    if callable(dump) and not isinstance(v, type):
        return _plain_data(dump(mode="json"))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _plain_data(dataclasses.asdict(v))
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, Mapping):
        return {str(k): _plain_data(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain_data(x) for x in v]
    return v


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"a tool result must be text, bytes or JSON data: {e}") from e


def _matches(pattern: list[str], path: list[PathItem]) -> bool:
    return len(pattern) == len(path) and all(
        p in ("*", str(k)) for p, k in zip(pattern, path, strict=True)
    )


def _take(
    v: Any,
    path: list[PathItem],
    patterns: list[tuple[list[str], str]],
    author: str,
    out: list[Part],
) -> Any:
    """``v`` with the values at fields of other authors replaced, appending those to ``out``
    (the longest matching pattern decides; a field of the result's own author stays)."""
    if path:
        match = max(
            ((p, who) for p, who in patterns if _matches(p, path)),
            key=lambda pw: len(pw[0]),
            default=None,
        )
        if match is not None and match[1] != author:
            out.append(Part(match[1], _text(v), ".".join(str(k) for k in path)))
            return f"<by {match[1]}>"
    if isinstance(v, dict):
        return {k: _take(x, [*path, str(k)], patterns, author, out) for k, x in v.items()}
    if isinstance(v, list):
        return [_take(x, [*path, i], patterns, author, out) for i, x in enumerate(v)]
    return v


__all__ = ["Part", "ToolTrust", "TrustMap"]
