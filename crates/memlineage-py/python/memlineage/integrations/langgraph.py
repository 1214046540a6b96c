"""A LangGraph ``BaseStore`` over a MemLineage store (``pip install "memlineage[langgraph]"``).

Every item is a signed entry: ``put`` appends one (the value as JSON, the key in its
metadata), an update appends a new version and forgets the old one with a signed tombstone, and
``delete`` forgets the current version (history is never rewritten: ``Memory.history`` and
``memlineage log`` still show every version). ``get`` and ``search`` return only entries that
pass verification — signature, signer, inclusion in the signed checkpoint, label — so an
item edited behind the program's back never reaches a prompt.

Namespaces map to scopes: ``("users", "u1", "memories")`` is the scope
``langgraph/users/u1/memories`` (``prefix`` first; labels are kept as they are when they are
made of ``A-Z a-z 0-9 _ -``, other characters are written ``@XX`` per UTF-8 byte), so a
namespace is also a place in the store's scope tree (at most 7 labels deep).

Lineage is kept: with a :class:`~memlineage.Session`, what the graph ``put``\\ s is signed by
the session's model, derived from everything the model has seen (the session's context) with
its hash; what ``get`` and ``search`` return enters that context. Without one, items are root
entries of ``principal``. :meth:`MemLineageStore.entry` gives an item's entry and label.

Search by meaning: LangGraph's own stores search semantically when they are built with an
index; here the store is built with ``search_mode="semantic"`` or ``"hybrid"`` over a
``Memory`` opened with ``embedder="default"``, and ``search(..., query=...)`` ranks that way.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from .._types import Entry
from ..errors import InputError
from ..memory import Memory
from ..search import SearchMode, SearchModeLike, mode_name
from ..session import Session

try:  # langgraph >= 1.1 checks namespace labels of ops given to batch() directly
    from langgraph.store.base import validate_op_namespace
except ImportError:  # pragma: no cover - older langgraph

    def validate_op_namespace(op: Op) -> None:
        return None


_KEY = "langgraph.key"
_OP = "langgraph.op"
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SCAN = 1024
_MAX_LABELS = 7


def _encode_label(label: str) -> str:
    return "".join(c if c in _PLAIN else "".join(f"@{b:02X}" for b in c.encode()) for c in label)


def _decode_label(segment: str) -> str:
    out = bytearray()
    i = 0
    while i < len(segment):
        if segment[i] == "@":
            out.append(int(segment[i + 1 : i + 3], 16))
            i += 3
        else:
            out += segment[i].encode()
            i += 1
    return out.decode()


@dataclass
class _Current:
    """The live version of one item."""

    entry: str
    created_ms: int
    updated_ms: int


def _time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


def _matches(value: Any, want: Any) -> bool:
    """LangGraph's filter semantics: equality, nested objects, and the operators ``$eq``,
    ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``."""
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_compare(value, op, arg) for op, arg in want.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(want)
            and all(_matches(a, b) for a, b in zip(value, want, strict=True))
        )
    return bool(value == want)


def _compare(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if value is None:
        return False
    ordered = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    if op not in ordered:
        raise InputError(
            f"unsupported filter operator {op!r} (expected $eq, $ne, $gt, $gte, $lt or $lte)"
        )
    return bool(ordered[op](float(value), float(arg)))


class MemLineageStore(BaseStore):
    """A LangGraph store whose items are signed, verified, lineage-labelled entries.

    Example::

        store = MemLineageStore(Memory.open(), session=session)
        graph = builder.compile(store=store)

    ``search_mode`` ranks the ``query`` of :meth:`search`: ``"lexical"`` (BM25, the default),
    ``"semantic"`` or ``"hybrid"`` (these need ``memory`` opened with ``embedder=``; an
    :class:`~memlineage.InputError` here otherwise).
    """

    __slots__ = (
        "_current",
        "_lock",
        "_next",
        "memory",
        "prefix",
        "principal",
        "search_mode",
        "session",
    )

    # Items are signed entries; LangGraph's TTL sweeping would have to forget them behind the
    # caller's back, so it is not offered.
    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        session: Session | None = None,
        principal: str = "agent",
        prefix: str = "langgraph",
        search_mode: SearchModeLike = "lexical",
    ) -> None:
        try:
            mode = SearchMode(mode_name(search_mode))
        except ValueError:
            raise InputError(
                f"unknown search mode {search_mode!r}: expected 'lexical', 'semantic' or 'hybrid'"
            ) from None
        if mode is not SearchMode.LEXICAL and memory.embedding_model is None:
            raise InputError(
                f"search_mode={mode.value!r} needs the embedding model, and the Memory was "
                'opened without it: open it with Memory.open(..., embedder="default") (the model '
                "scripts/fetch-embedding-model.sh installs)"
            )
        #: How :meth:`search` ranks a query.
        self.search_mode = mode
        self.memory = memory
        self.session = session
        #: The writer of items when there is no session.
        self.principal = principal
        #: The scope every namespace lives under.
        self.prefix = prefix
        self._lock = threading.RLock()
        self._current: dict[tuple[str, ...], dict[str, _Current]] = {}
        self._next = 0

    # -- namespaces and the index of live items --------------------------------------------------

    def scope_of(self, namespace: tuple[str, ...]) -> str:
        """The scope a namespace lives in."""
        if len(namespace) > _MAX_LABELS:
            raise InputError(
                f"namespace {namespace!r} has {len(namespace)} labels; a MemLineage scope holds "
                f"at most {_MAX_LABELS} below the store's prefix"
            )
        return "/".join([self.prefix, *(_encode_label(label) for label in namespace)])

    def _namespace_of(self, scope: str) -> tuple[str, ...] | None:
        head, _, rest = scope.partition("/")
        if head != self.prefix or not rest:
            return None
        return tuple(_decode_label(s) for s in rest.split("/"))

    def _catch_up(self) -> None:
        """Reads the entries appended since the last call (by this process or another) into
        the index of live items: the latest ``put`` of a key is live unless a later ``delete``
        of it is newer."""
        while True:
            batch = self.memory.log(self._next, _SCAN)
            for e in batch:
                self._note(e)
            self._next += len(batch)
            if len(batch) < _SCAN:
                return

    def _note(self, e: Entry) -> None:
        key = e.metadata.get(_KEY)
        ns = self._namespace_of(e.scope) if key is not None else None
        if key is None or ns is None:
            return
        items = self._current.setdefault(ns, {})
        if e.metadata.get(_OP) == "delete":
            items.pop(key, None)
            if not items:
                del self._current[ns]
            return
        old = items.get(key)
        created = old.created_ms if old else e.created_at_ms
        items[key] = _Current(e.id, created, e.created_at_ms)

    def entry(self, namespace: tuple[str, ...], key: str) -> Entry | None:
        """The verified entry that holds an item (its writer, label, lineage), or ``None``."""
        with self._lock:
            self._catch_up()
            cur = self._current.get(tuple(namespace), {}).get(key)
        return self.memory.get(cur.entry) if cur else None

    # -- operations -----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs the operations in order (a ``put`` is visible to a later ``get`` of the same
        batch)."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        with self._lock:
            self._catch_up()
            return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the store's calls release the GIL)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise InputError(f"unknown store operation {type(op).__name__}")

    def _shown(self, entries: Iterable[Entry]) -> None:
        """What a read returns reaches the model: it joins the session's context."""
        if self.session is not None:
            shown = list(entries)
            if shown:
                self.session.see(shown)

    def _times(self, ns: tuple[str, ...], key: str) -> tuple[datetime.datetime, datetime.datetime]:
        cur = self._current[ns][key]
        return _time(cur.created_ms), _time(cur.updated_ms)

    def _get(self, op: GetOp) -> Item | None:
        ns = tuple(op.namespace)
        cur = self._current.get(ns, {}).get(op.key)
        if cur is None:
            return None
        r = self.memory.recall([cur.entry])
        if not len(r):
            return None
        self._shown(r)
        created, updated = self._times(ns, op.key)
        return Item(
            value=json.loads(r[0].text or "null"),
            key=op.key,
            namespace=ns,
            created_at=created,
            updated_at=updated,
        )

    @property
    def writer(self) -> str:
        """Who signs what the graph writes: the session's model, else :attr:`principal`."""
        return self.session.trust.model if self.session is not None else self.principal

    def _write(self, ns: tuple[str, ...], key: str, content: str, op: str) -> Entry:
        meta = {_KEY: key, _OP: op}
        scope = self.scope_of(ns)
        s = self.session
        if s is None or not s.context:
            return self.memory.add(content, principal=self.writer, scope=scope, metadata=meta)
        return self.memory.add(
            content,
            principal=s.trust.model,
            kind="derived",
            parents=s.context,
            scope=scope,
            metadata=meta,
            context_hash=s.context_hash,
        )

    def _put(self, op: PutOp) -> None:
        ns = tuple(op.namespace)
        if len(ns) == 0:
            raise InputError("a namespace has at least one label")
        old = self._current.get(ns, {}).get(op.key)
        if op.value is None:
            if old is not None:
                self.memory.delete(old.entry, reason="langgraph delete", signer=self.writer)
                self._note(self._write(ns, op.key, "null", "delete"))
            return
        content = json.dumps(op.value, ensure_ascii=False, sort_keys=True)
        e = self._write(ns, op.key, content, "put")
        if old is not None:
            self.memory.delete(
                old.entry, reason=f"langgraph put: replaced by {e.id}", signer=self.writer
            )
        self._note(e)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        live = {
            cur.entry: (ns, key)
            for ns, items in self._current.items()
            if ns[: len(prefix)] == prefix
            for key, cur in items.items()
        }
        if op.query:
            scope = self.scope_of(prefix) if prefix else self.prefix
            found = self.memory.search(op.query, scope=scope, limit=1000, mode=self.search_mode)
            hits = [e for e in found if e.id in live]
        else:
            ordered = sorted(live, key=lambda i: live[i])
            hits = list(self.memory.recall(ordered)) if ordered else []
        out: list[SearchItem] = []
        skipped = 0
        shown: list[Entry] = []
        for rank, e in enumerate(hits):
            ns, key = live[e.id]
            value = json.loads(e.text or "null")
            if op.filter and not all(_matches(value.get(k), v) for k, v in op.filter.items()):
                continue
            if skipped < op.offset:
                skipped += 1
                continue
            if len(out) >= op.limit:
                break
            # Results come best first (in the store's search mode); the score is their rank, as
            # a number that falls with it.
            score = 1.0 / (1 + rank) if op.query else None
            out.append(SearchItem(ns, key, value, *self._times(ns, key), score))
            shown.append(e)
        self._shown(shown)
        return out

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = list(self._current)
        for cond in op.match_conditions or ():
            path = tuple(cond.path)
            spaces = [ns for ns in spaces if _path_matches(ns, path, cond.match_type)]
        if op.max_depth is not None:
            spaces = list({ns[: op.max_depth] for ns in spaces})
        return sorted(spaces)[op.offset : op.offset + op.limit]


def _path_matches(ns: tuple[str, ...], path: tuple[str, ...], how: str) -> bool:
    if len(ns) < len(path):
        return False
    if how == "prefix":
        pairs = zip(ns, path, strict=False)
    elif how == "suffix":
        pairs = zip(reversed(ns), reversed(path), strict=False)
    else:
        raise InputError(f"unsupported namespace match type {how!r} (prefix or suffix)")
    return all(p in ("*", n) for n, p in pairs)


__all__ = ["MemLineageStore"]
