"""Trust map files: a :class:`~memlineage.TrustMap` written as TOML (``docs/python.md``, "Trust
map files").

One format for every integration: the same file says who authored each tool's results for a
:class:`~memlineage.Session`, for the AgentDojo bridge (``docs/agentdojo.md``) and for your own
agent loop. It is read strictly: an unknown key, a value of the wrong type or an unknown trust
class is an error naming it, because a misspelt key silently ignored would leave a tool's
results under the wrong author.

.. code-block:: toml

    user = "user"                 # the person's messages (trusted)
    model = "agent"               # what the model writes (trusted)
    default_tool = "web"          # the author of any tool not named below

    [principals]                  # classes, for TrustMap.register
    user = "trusted"
    agent = "trusted"
    bank = "trusted"
    sender = "external"
    files = "external"
    web = "external"

    [tools]
    get_balance = "bank"          # every value of the result is the bank's

    [tools.get_most_recent_transactions]
    author = "bank"
    fields = { "*.subject" = "sender" }

    [tools.read_file]
    author = "files"
    source = "file_path"          # the result is the document this argument names
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .trust import ToolTrust, TrustMap

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_TOP = ("user", "model", "system", "default_tool", "principals", "tools")
_TOOL = ("author", "fields", "source")
_CLASSES = ("trusted", "external")


def parse_trust_toml(text_or_path: str | os.PathLike[str]) -> TrustMap:
    """Parses a trust map file (see the module docs)."""
    where = "trust map"
    if isinstance(text_or_path, os.PathLike) or _looks_like_path(text_or_path):
        path = Path(text_or_path)
        where = f"trust map {path}"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"cannot read the {where}: {e}") from e
    else:
        text = text_or_path
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{where}: {e}") from e
    return _trust_map(doc, where)


def _looks_like_path(s: str) -> bool:
    """A string with no line break, ``=``, ``[`` or ``#`` cannot hold a trust map that says
    anything: it names a file (as for policies)."""
    return bool(s.strip()) and not any(c in s for c in "\n=[#")


def _trust_map(doc: Mapping[str, Any], where: str) -> TrustMap:
    _only(doc, _TOP, where, "at the top level")
    names = {k: _str(doc, k, where) for k in ("user", "model", "system", "default_tool")}
    classes = _table(doc, "principals", where)
    for name, cls in classes.items():
        if cls not in _CLASSES:
            raise InputError(
                f'{where}: principal `{name}` has class {cls!r} (expected "trusted" or "external")'
            )
    tools: dict[str, str | ToolTrust] = {}
    raw_tools = doc.get("tools", {})
    if not isinstance(raw_tools, Mapping):
        raise InputError(f"{where}: `tools` must be a table of tool names")
    for tool, spec in raw_tools.items():
        if isinstance(spec, str):
            tools[tool] = spec
        elif isinstance(spec, Mapping):
            tools[tool] = _tool(tool, spec, where)
        else:
            raise InputError(
                f"{where}: tool `{tool}` must be an author's name or a table with `author`, "
                f"`fields` and `source`, found {type(spec).__name__}"
            )
    return TrustMap(
        user=names["user"] or "user",
        model=names["model"] or "agent",
        system=names["system"],
        tools=tools,
        default_tool=names["default_tool"] or "web",
        classes={str(k): str(v) for k, v in classes.items()},
    )


def _tool(tool: str, spec: Mapping[str, Any], where: str) -> ToolTrust:
    _only(spec, _TOOL, where, f"in tool `{tool}`")
    author = spec.get("author")
    if not isinstance(author, str) or not author:
        raise InputError(f"{where}: tool `{tool}` needs `author`, the principal of its results")
    fields = _table(spec, "fields", f"{where}: tool `{tool}`")
    for path in fields:
        if not path or any(not p for p in path.split(".")):
            raise InputError(f"{where}: tool `{tool}` has an empty field path in {path!r}")
    source = spec.get("source")
    if source is not None and (not isinstance(source, str) or not source):
        raise InputError(f"{where}: `source` of tool `{tool}` must name one of its arguments")
    return ToolTrust(author, dict(fields), source)


def _only(table: Mapping[str, Any], allowed: tuple[str, ...], where: str, at: str) -> None:
    for k in table:
        if k not in allowed:
            raise InputError(
                f"{where}: unknown key `{k}` {at} (expected one of {', '.join(allowed)})"
            )


def _str(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    v = doc.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise InputError(f"{where}: `{key}` must be a principal's name")
    return v


def _table(doc: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    v = doc.get(key, {})
    if not isinstance(v, Mapping) or not all(isinstance(x, str) for x in v.values()):
        raise InputError(f"{where}: `{key}` must be a table of names to names")
    return {str(k): str(x) for k, x in v.items()}


__all__ = ["parse_trust_toml"]
