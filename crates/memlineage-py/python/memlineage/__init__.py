"""MemLineage for Python: signed, lineage-labelled memory for LLM agents, and a gate on their
sensitive tool calls (arXiv 2605.14421).

>>> from memlineage import Memory
>>> m = Memory.open("memory:")
>>> page = m.add("Pay rent to UK12 3456 7890 1234 5678 90", principal="web")
>>> note = m.add("New rent IBAN: UK12345678901234567890", parents=[(page, 0.9)])
>>> note.label
<Label.DERIVED_UNTRUSTED: 2>

See ``docs/python.md`` for the quick start, the :class:`Session` that captures lineage in an
agent loop, and the LangGraph and OpenAI Agents SDK adapters (``memlineage.integrations``).
"""

from __future__ import annotations

from ._native import version as _native_version
from ._types import (
    AuditReport,
    Checkpoint,
    Dropped,
    Entry,
    Explanation,
    KeyInfo,
    Lineage,
    LineageEdge,
    LineageNode,
    Parent,
    Principal,
    PrincipalChange,
    Problem,
    Recall,
    Recalled,
)
from .aio import AsyncMemory, AsyncPrincipals
from .errors import (
    ClosedError,
    ConflictError,
    Error,
    GateError,
    InputError,
    IntegrityError,
    InternalError,
    NotFoundError,
    PolicyError,
    RefusedError,
    StorageError,
    UnavailableError,
)
from .gate import Confirmation, Decision, Policy, Reason, Repair
from .labels import Label, TrustClass
from .memory import Memory, Principals
from .search import RejectedEmbedding, SearchMode, SearchModeLike, VectorIndexStatus
from .session import Session
from .trust import Part, ToolTrust, TrustMap

__version__ = _native_version()

__all__ = [
    "AsyncMemory",
    "AsyncPrincipals",
    "AuditReport",
    "Checkpoint",
    "ClosedError",
    "Confirmation",
    "ConflictError",
    "Decision",
    "Dropped",
    "Entry",
    "Error",
    "Explanation",
    "GateError",
    "InputError",
    "IntegrityError",
    "InternalError",
    "KeyInfo",
    "Label",
    "Lineage",
    "LineageEdge",
    "LineageNode",
    "Memory",
    "NotFoundError",
    "Parent",
    "Part",
    "Policy",
    "PolicyError",
    "Principal",
    "PrincipalChange",
    "Principals",
    "Problem",
    "Reason",
    "Recall",
    "Recalled",
    "RefusedError",
    "RejectedEmbedding",
    "Repair",
    "SearchMode",
    "SearchModeLike",
    "Session",
    "StorageError",
    "ToolTrust",
    "TrustClass",
    "TrustMap",
    "UnavailableError",
    "VectorIndexStatus",
]
