"""The base of every result object: frozen, compared by value, and turned into plain JSON-ready
data by :meth:`Record.to_dict`."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: records as dicts, labels by name, tuples as lists. Bytes
    (non-UTF-8 content) stay bytes: JSON has no bytes, encode them as you need."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.name if isinstance(value, int) else value.value
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Record:
    """Mixin of the frozen dataclasses returned by memlineage."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain data: labels by name (``"TRUSTED"``), nested objects as dicts,
        tuples as lists. Field names are those of the CLI's ``--json`` output where it has the
        same object."""
        return {
            f.name: plain(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        }
