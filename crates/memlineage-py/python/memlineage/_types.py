"""The objects memlineage returns: entries, search results, lineage, audits, principals.

All are frozen dataclasses (``repr``, equality by value, :meth:`~memlineage._record.Record.to_dict`)
built from the plain tuples the native module returns; the tuple layouts are documented in
``src/convert.rs`` and change together with the ``_from_native`` constructors here.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ._record import Record, plain
from .errors import IntegrityError
from .labels import Label, TrustClass

_LABELS = tuple(Label)
_BP = 10_000


@dataclass(frozen=True, slots=True)
class Parent(Record):
    """A derivation edge: the parent entry and its attribution weight in [0, 1] (four
    decimals at most: weights are signed as basis points)."""

    id: str
    weight: float


@dataclass(frozen=True, slots=True)
class Entry(Record):
    """A signed entry of the log, with its content and labels (``memlineage get --json``)."""

    #: SHA-256 of the signed body, 64 hex digits.
    id: str
    #: Leaf index in the Merkle log.
    index: int
    #: ``user_input``, ``tool_output``, ``observation``, ``derived``, or a control kind.
    kind: str
    #: Namespace path (``tenant/agent/session``).
    scope: str
    #: The principal that signed it.
    writer: str
    #: Id of the key it was signed with.
    key_id: str
    #: Creation time, milliseconds since the Unix epoch.
    created_at_ms: int
    #: ``str`` when UTF-8, ``bytes`` otherwise, ``None`` once a tombstone erased it.
    content: str | bytes | None
    #: SHA-256 of the content (signed; the content itself is erasable).
    content_hash: str
    content_len: int
    #: h_src: SHA-256 of where the content came from.
    source_hash: str | None
    #: h_ctx: SHA-256 of exactly the rendered context the writer saw.
    context_hash: str | None
    parents: tuple[Parent, ...]
    #: The algorithm that weighed the parents (``coarse``, ``explicit``, …; ``none``).
    attribution: str
    #: τ the label was computed with: an edge is strong when its weight is above it.
    tau: float
    #: ``strict`` or ``permissive``.
    fallback: str
    #: The label as signed.
    label: Label
    #: The label after retroactive distrust (never below :attr:`label`).
    effective_label: Label
    #: The tombstone that forgot it, if any.
    forgotten_by: str | None
    metadata: Mapping[str, str]
    signature: str = field(repr=False)

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def text(self) -> str | None:
        """The content as text (non-UTF-8 bytes replaced), ``None`` once erased."""
        c = self.content
        if isinstance(c, bytes):
            return c.decode("utf-8", "replace")
        return c

    @property
    def created_at(self) -> datetime.datetime:
        """:attr:`created_at_ms` as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.created_at_ms / 1000, datetime.timezone.utc)

    @property
    def strong_parents(self) -> tuple[str, ...]:
        """The parents whose weight is strictly above τ: those that shape the label."""
        return tuple(p.id for p in self.parents if p.weight > self.tau)

    @property
    def forgotten(self) -> bool:
        """Whether a tombstone forgot it (retrieval never returns it)."""
        return self.forgotten_by is not None

    @property
    def erased(self) -> bool:
        """Whether its content bytes were erased (the leaf and its proofs still verify)."""
        return self.content is None


@dataclass(frozen=True, slots=True)
class Recalled(Entry):
    """An entry returned by retrieval: verified (signature, signer, inclusion in the signed
    checkpoint, label against its parents) before it was returned, and never forgotten.
    :attr:`rank` is its position in the result, best match first."""

    rank: int = 0


def _entry_args(t: tuple[Any, ...]) -> list[Any]:
    (
        eid,
        index,
        kind,
        scope,
        writer,
        key_id,
        created,
        content,
        chash,
        clen,
        src,
        ctx,
        parents,
        attribution,
        tau_bp,
        fallback,
        label,
        effective,
        forgotten,
        metadata,
        sig,
    ) = t
    return [
        eid,
        index,
        kind,
        scope,
        writer,
        key_id,
        created,
        content,
        chash,
        clen,
        src,
        ctx,
        tuple([Parent(p, w / _BP) for p, w in parents]),
        attribution,
        tau_bp / _BP,
        fallback,
        _LABELS[label],
        _LABELS[effective],
        forgotten,
        metadata,
        sig,
    ]


def entry_from_native(t: tuple[Any, ...]) -> Entry:
    """An :class:`Entry` from the native tuple."""
    return Entry(*_entry_args(t))


@dataclass(frozen=True, slots=True)
class Dropped(Record):
    """An entry retrieval left out because it failed verification (never rendered)."""

    id: str
    index: int
    reason: str


def _frozen(self: object, *args: object, **kwargs: object) -> NoReturn:
    """Refused: a :class:`Recall` is what was verified and rendered together."""
    raise dataclasses.FrozenInstanceError("a Recall cannot be changed (it is what was verified)")


class Recall(list[Recalled]):
    """The verified result of a search or recall: a list of :class:`Recalled` (best match
    first) that cannot be changed, the prompt rendering of exactly those entries
    (:meth:`render`), and its hash h_ctx (:attr:`context_hash`), to sign into whatever is
    derived from this context.

    Entries that failed verification are in :attr:`dropped`, never in the list."""

    __slots__ = ("checkpoint_size", "context_hash", "dropped", "rendered")
    rendered: str
    context_hash: str
    dropped: tuple[Dropped, ...]
    checkpoint_size: int | None

    def __init__(
        self,
        entries: Iterable[Recalled],
        rendered: str,
        context_hash: str,
        dropped: Iterable[Dropped] = (),
        checkpoint_size: int | None = None,
    ) -> None:
        list.__init__(self, entries)
        object.__setattr__(self, "rendered", rendered)
        object.__setattr__(self, "context_hash", context_hash)
        object.__setattr__(self, "dropped", tuple(dropped))
        object.__setattr__(self, "checkpoint_size", checkpoint_size)

    # What was verified and rendered together stays together.
    __setattr__ = __delattr__ = _frozen
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _frozen
    append = extend = insert = remove = pop = clear = sort = reverse = _frozen

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Recall):
            return list.__eq__(self, other) and (
                (self.rendered, self.context_hash, self.dropped)
                == (other.rendered, other.context_hash, other.dropped)
            )
        return list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self.context_hash)

    def __repr__(self) -> str:
        return (
            f"Recall({list.__repr__(self)}, context_hash={self.context_hash!r}, "
            f"dropped={self.dropped!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Recall,
            (list(self), self.rendered, self.context_hash, self.dropped, self.checkpoint_size),
        )

    def render(self) -> str:
        """The entries as structural ``<memory …>`` blocks with escaped content, for a prompt
        (``docs/rendering.md``)."""
        return self.rendered

    @property
    def ids(self) -> list[str]:
        """The ids of the entries, in order."""
        return [e.id for e in self]

    def to_dict(self) -> dict[str, Any]:
        """As ``memlineage search --json``: entries, dropped, rendered, context_hash."""
        return {
            "entries": [e.to_dict() for e in self],
            "dropped": [d.to_dict() for d in self.dropped],
            "rendered": self.rendered,
            "context_hash": self.context_hash,
            "checkpoint_size": self.checkpoint_size,
        }


def recall_from_native(t: tuple[Any, ...]) -> Recall:
    """A :class:`Recall` from the native tuple."""
    entries, dropped, rendered, ctx, checkpoint_size = t
    # (mypy cannot count the fields a list unpacks into: `rank` is the one after them.)
    recalled = [Recalled(*_entry_args(e), rank=i) for i, e in enumerate(entries)]  # type: ignore[misc]
    return Recall(recalled, rendered, ctx, [Dropped(*d) for d in dropped], checkpoint_size)


@dataclass(frozen=True, slots=True)
class LineageNode(Record):
    """An entry in a lineage graph."""

    id: str
    label: Label
    effective_label: Label
    writer: str
    kind: str
    #: The first 60 characters of the content, or ``(erased)``.
    snippet: str
    #: Whether a distrust record names this entry or its writer.
    distrusted: bool
    #: Whether it lies on the taint path.
    on_path: bool


@dataclass(frozen=True, slots=True)
class LineageEdge(Record):
    """A derivation edge from ``parent`` to ``child``."""

    parent: str
    child: str
    weight: float
    #: Whether the weight is strictly above the child's τ.
    strong: bool
    on_path: bool


@dataclass(frozen=True, slots=True)
class Explanation(Record):
    """Why the focus entry has its effective label."""

    label: Label
    #: From the focus up to the untrusted root where the taint starts; empty when trusted.
    path: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class Lineage(Record):
    """The lineage around one entry (its ancestors or its descendants), with the explanation of
    its label; :meth:`to_dot` and :meth:`to_mermaid` draw it, coloured by label."""

    focus: str
    #: ``ancestors`` or ``descendants``.
    direction: str
    nodes: tuple[LineageNode, ...]
    edges: tuple[LineageEdge, ...]
    explanation: Explanation | None
    #: Whether entries were left out (depth or size bound).
    truncated: bool
    text: str = field(repr=False)
    dot: str = field(repr=False)
    mermaid: str = field(repr=False)

    @property
    def path(self) -> tuple[str, ...]:
        """The taint path (focus first), empty when the focus is trusted."""
        return self.explanation.path if self.explanation else ()

    def node(self, entry_id: str) -> LineageNode | None:
        """The node of ``entry_id``, if the graph holds it."""
        return next((n for n in self.nodes if n.id == entry_id), None)

    def to_text(self) -> str:
        """An indented tree for a terminal, as ``memlineage lineage`` prints it."""
        return self.text

    def to_dot(self) -> str:
        """Graphviz DOT (``dot -Tsvg``)."""
        return self.dot

    def to_mermaid(self) -> str:
        """A Mermaid flowchart."""
        return self.mermaid


def lineage_from_native(t: tuple[Any, ...], direction: str) -> Lineage:
    """A :class:`Lineage` from the native tuple ``(json, text, dot, mermaid)``."""
    g, text, dot, mermaid = t
    x = g["explanation"]
    return Lineage(
        focus=g["focus"],
        direction=direction,
        nodes=tuple(
            LineageNode(
                n["id"],
                Label[n["label"]],
                Label[n["effective_label"]],
                n["writer"],
                n["kind"],
                n["snippet"],
                n["distrusted"],
                n["on_path"],
            )
            for n in g["nodes"]
        ),
        edges=tuple(
            LineageEdge(e["parent"], e["child"], float(e["weight"]), e["strong"], e["on_path"])
            for e in g["edges"]
        ),
        explanation=(
            Explanation(Label[x["label"]], tuple(x["path"]), x["text"]) if x is not None else None
        ),
        truncated=g["truncated"],
        text=text,
        dot=dot,
        mermaid=mermaid,
    )


@dataclass(frozen=True, slots=True)
class Problem(Record):
    """One problem an audit found (index and id when it concerns one entry)."""

    index: int | None
    id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class AuditReport(Record):
    """The result of :meth:`memlineage.Memory.verify` (``memlineage verify --json``)."""

    ok: bool
    location: str
    entries: int
    signatures: int
    principals: int
    #: The root hash of the whole log, hex.
    root: str
    #: Size of the latest signed checkpoint, when there is one.
    checkpoint_size: int | None
    problems: tuple[Problem, ...]
    problem_count: int

    def raise_for_problems(self) -> AuditReport:
        """Raises :class:`~memlineage.IntegrityError` when the audit found problems (with the
        CLI's message); returns the report otherwise."""
        if not self.ok:
            raise IntegrityError(
                f"verification failed: {self.problem_count} problem(s) found in {self.location}"
            )
        return self


def audit_from_native(d: dict[str, Any]) -> AuditReport:
    """An :class:`AuditReport` from the native dict."""
    return AuditReport(
        ok=d["ok"],
        location=d["location"],
        entries=d["entries"],
        signatures=d["signatures"],
        principals=d["principals"],
        root=d["root"],
        checkpoint_size=d["checkpoint_size"],
        problems=tuple(Problem(*p) for p in d["problems"]),
        problem_count=d["problem_count"],
    )


@dataclass(frozen=True, slots=True)
class Checkpoint(Record):
    """A signed checkpoint of the log (C2SP tlog-checkpoint in a signed note)."""

    origin: str
    size: int
    #: The root hash, hex.
    root: str
    #: The signed note, as standard transparency-log verifiers read it.
    note: str = field(repr=False)


def checkpoint_from_note(note: str) -> Checkpoint:
    """A :class:`Checkpoint` from its signed note (origin, size, base64 root lines)."""
    origin, size, root = note.split("\n", 3)[:3]
    return Checkpoint(origin, int(size), base64.b64decode(root).hex(), note)


@dataclass(frozen=True, slots=True)
class KeyInfo(Record):
    """One key a principal has held, with the log indices that added and retired it."""

    key_id: str
    added_at: int
    retired_at: int | None
    current: bool


@dataclass(frozen=True, slots=True)
class Principal(Record):
    """A principal as replayed from the log (``memlineage principal list --json``)."""

    name: str
    cls: TrustClass
    operator: bool
    revoked_at: int | None
    revoke_reason: str | None
    keys: tuple[KeyInfo, ...]
    #: Whether this process holds the current secret key.
    secret_key_here: bool

    @property
    def revoked(self) -> bool:
        """Whether the principal was revoked (it can sign nothing any more)."""
        return self.revoked_at is not None

    @property
    def trusted(self) -> bool:
        """Whether its class is ``trusted`` (its root entries are ``TRUSTED``)."""
        return self.cls is TrustClass.TRUSTED


def principal_from_native(t: tuple[Any, ...]) -> Principal:
    """A :class:`Principal` from the native tuple."""
    name, cls, op, revoked_at, reason, keys, here = t
    return Principal(
        name, TrustClass(cls), op, revoked_at, reason, tuple(KeyInfo(*k) for k in keys), here
    )


@dataclass(frozen=True, slots=True)
class PrincipalChange(Record):
    """A registry change: the signed record, and for a new key its id and file."""

    name: str
    #: Id of the signed registry record.
    record: str
    index: int
    key_id: str | None = None
    #: Where the secret key was saved (``None`` for a store in RAM).
    key_file: str | None = None


__all__ = [
    "AuditReport",
    "Checkpoint",
    "Dropped",
    "Entry",
    "Explanation",
    "KeyInfo",
    "Lineage",
    "LineageEdge",
    "LineageNode",
    "Parent",
    "Principal",
    "PrincipalChange",
    "Problem",
    "Recall",
    "Recalled",
    "plain",
]
